//! `Timing::Off`: requests replayed instantly in trace order. Each request is SGLang's
//! path with every transfer completing at once: `_prefetch_kvcache` on arrival (and
//! its termination, all pages arrived), `match_prefix`, `init_load_back`, device
//! allocation, `insert` (`cache_unfinished_req`), D2H acks and L3 backups, release.

use crate::cache::{
    EvictionPolicy, HiRadix, HostMemoryMode, KeyedLru, LruMode, PageKey, SwaRadixTree,
    SwaTreeConfig, TreeKind, TreeRules, Unified0523, V1,
};
use std::collections::VecDeque;

use crate::workload::Request;

use super::config::{CallPattern, ReplayConfig};
use super::metrics::ReplayMetrics;
use super::prefetch::Admission;
use super::session::{Hits, Session};
use super::swa_req::{swa_admit_prefill, swa_checkpoint, swa_decode, swa_release};
use super::{ReplayError, RequestHits, check_request};

pub(crate) fn run<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
) -> Result<ReplayMetrics, ReplayError> {
    if cfg.policy.lru_mode == LruMode::PlainPage {
        return run_plain(cfg, requests);
    }
    run_with(cfg, requests, &mut |_, _| {})
}

/// [`run`] for a tree replay, calling `on_hits(index, hits)` after every request.
pub(crate) fn run_with<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
    on_hits: &mut dyn FnMut(u64, &RequestHits),
) -> Result<ReplayMetrics, ReplayError> {
    if cfg.capacities.swa.is_some() {
        return run_swa(cfg, requests, on_hits);
    }
    // The one place the tree's rule set is chosen (monomorphised below).
    match cfg.policy.tree {
        TreeKind::V1 => run_tree::<V1, _>(cfg, requests, on_hits),
        TreeKind::Unified0523 => run_tree::<Unified0523, _>(cfg, requests, on_hits),
        TreeKind::HiRadix => run_tree::<HiRadix, _>(cfg, requests, on_hits),
    }
}

fn run_tree<R: TreeRules, I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
    on_hits: &mut dyn FnMut(u64, &RequestHits),
) -> Result<ReplayMetrics, ReplayError> {
    let mut s = Session::<R>::new(cfg);
    let mut recs = Vec::new();
    let scheduler = cfg.policy.call_pattern == CallPattern::Scheduler0523;
    for (index, req) in requests.into_iter().enumerate() {
        let index = index as u64;
        check_request(cfg, index, &req)?;
        let pages = &req.page_hashes;
        let h = if scheduler {
            process_scheduler(&mut s, pages, req.input_tokens, &mut recs)
        } else {
            process(&mut s, pages, &mut recs)
        };
        on_hits(
            index,
            &RequestHits {
                device: h.device,
                host: h.host,
                storage: h.storage,
                fetched: h.fetched,
                host_used: s.tree.host_used(),
                device_used: s.tree.device_used(),
            },
        );
        s.record(index, req.input_tokens, req.page_hashes.len() as u64, h);
        crate::workload::recycle_pages(req.page_hashes);
        s.sample(index, 0);
    }
    Ok(s.finish())
}

/// Whether [`run_side_by_side`] replays `cfg`'s schedulers: the leaf-only LRU tree
/// without an SWA pool (the plain-page and SWA replays run one scheduler at a time).
pub(crate) fn runs_side_by_side(cfg: &ReplayConfig) -> bool {
    cfg.policy.lru_mode == LruMode::LeafOnly && cfg.capacities.swa.is_none()
}

/// Several schedulers side by side without time (DP-attention ranks, engines, `ranks`
/// of each, engine-major): scheduler `k` replays with `cfgs[k]` (its own tree and
/// pools, its own warm-up) the requests `slot` gives it, in trace order, so that the L3
/// stores their `l3_scope` makes them share ([`super::l3_store`]) hold every page
/// written before a read. Each scheduler's figures, in order; [`runs_side_by_side`] configurations
/// only.
pub(crate) fn run_side_by_side<I: IntoIterator<Item = Request>>(
    cfgs: &[ReplayConfig],
    ranks: usize,
    requests: I,
    slot: &mut dyn FnMut(u64) -> Option<usize>,
) -> Result<Vec<ReplayMetrics>, ReplayError> {
    let Some(first) = cfgs.first() else {
        return Ok(Vec::new());
    };
    for c in cfgs {
        c.validate()?;
    }
    match first.policy.tree {
        TreeKind::V1 => side_by_side::<V1, _>(cfgs, ranks, requests, slot),
        TreeKind::Unified0523 => side_by_side::<Unified0523, _>(cfgs, ranks, requests, slot),
        TreeKind::HiRadix => side_by_side::<HiRadix, _>(cfgs, ranks, requests, slot),
    }
}

fn side_by_side<R: TreeRules, I: IntoIterator<Item = Request>>(
    cfgs: &[ReplayConfig],
    ranks: usize,
    requests: I,
    slot: &mut dyn FnMut(u64) -> Option<usize>,
) -> Result<Vec<ReplayMetrics>, ReplayError> {
    let mut sessions: Vec<Session<R>> = cfgs.iter().map(Session::<R>::new).collect();
    Session::share_stores(&mut sessions, ranks);
    let n = sessions.len();
    let mut recs: Vec<Vec<crate::cache::BackupRecord>> = vec![Vec::new(); n];
    // Each scheduler's own request count (its warm-up counts its own requests).
    let mut local = vec![0u64; n];
    let scheduler = cfgs[0].policy.call_pattern == CallPattern::Scheduler0523;
    for (index, req) in requests.into_iter().enumerate() {
        check_request(&cfgs[0], index as u64, &req)?;
        // A request no scheduler takes (`None`) is not replayed.
        let Some(k) = slot(index as u64).filter(|&k| k < n) else {
            continue;
        };
        let s = &mut sessions[k];
        let h = if scheduler {
            process_scheduler(s, &req.page_hashes, req.input_tokens, &mut recs[k])
        } else {
            process(s, &req.page_hashes, &mut recs[k])
        };
        s.record(local[k], req.input_tokens, req.page_hashes.len() as u64, h);
        local[k] += 1;
        crate::workload::recycle_pages(req.page_hashes);
    }
    Ok(sessions.into_iter().map(Session::finish).collect())
}

/// Engines side by side, one tree each (`cfg` is one engine's), for a router fed by
/// their KV events (`runtime::router::dynamo_kv`): before each request, every engine's
/// tiers of its pages as the events publish them ([`crate::cache::HiRadixTree::peek_tiers`]:
/// device prefix, then host-only pages), `route` picks the engine, and that engine
/// replays the request as [`run`] does. Only the routing is kept: each engine's figures
/// come from replaying its share again.
pub(crate) fn route_by_engine_state<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    engines: usize,
    ranks: usize,
    requests: I,
    route: &mut dyn FnMut(&Request, &[(u64, u64)]) -> u16,
) -> Result<(), ReplayError> {
    cfg.validate()?;
    match cfg.policy.tree {
        TreeKind::V1 => route_tree::<V1, _>(cfg, engines, ranks, requests, route),
        TreeKind::Unified0523 => route_tree::<Unified0523, _>(cfg, engines, ranks, requests, route),
        TreeKind::HiRadix => route_tree::<HiRadix, _>(cfg, engines, ranks, requests, route),
    }
}

fn route_tree<R: TreeRules, I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    engines: usize,
    ranks: usize,
    requests: I,
    route: &mut dyn FnMut(&Request, &[(u64, u64)]) -> u16,
) -> Result<(), ReplayError> {
    let mut sessions: Vec<Session<R>> = (0..engines).map(|_| Session::<R>::new(cfg)).collect();
    // The L3 stores the workers share, as the figures' replay shares them
    // (`run_side_by_side`): `engines` workers, `ranks` to an engine.
    Session::share_stores(&mut sessions, ranks);
    let mut recs: Vec<Vec<crate::cache::BackupRecord>> = vec![Vec::new(); engines];
    let mut tiers = Vec::with_capacity(engines);
    let scheduler = cfg.policy.call_pattern == CallPattern::Scheduler0523;
    for (index, req) in requests.into_iter().enumerate() {
        check_request(cfg, index as u64, &req)?;
        tiers.clear();
        tiers.extend(sessions.iter().map(|s| s.tree.peek_tiers(&req.page_hashes)));
        let e = usize::from(route(&req, &tiers)).min(engines - 1);
        let s = &mut sessions[e];
        if scheduler {
            process_scheduler(s, &req.page_hashes, req.input_tokens, &mut recs[e]);
        } else {
            process(s, &req.page_hashes, &mut recs[e]);
        }
        crate::workload::recycle_pages(req.page_hashes);
    }
    Ok(())
}

/// One request through the tree with instant transfers.
pub(crate) fn process<R: TreeRules>(
    s: &mut Session<R>,
    pages: &[PageKey],
    recs: &mut Vec<crate::cache::BackupRecord>,
) -> Hits {
    let mut m = s.tree.match_prefix(pages);
    let mut staged = 0u64; // buffer_only: L3 pages staged straight to the device
    let mut fetched = 0u64; // cache mode: L3 pages inserted as host-only nodes
    if s.storage.is_some()
        && let Admission::Admitted(a) = s.admit_prefetch(pages, &m)
    {
        match s.cfg.policy.host_memory_mode {
            HostMemoryMode::Cache => {
                // The fetched pages go under the (pinned) anchor as host-only nodes.
                let span = &pages[a.span_start..a.span_start + a.pages as usize];
                s.tree.insert_host_only(a.anchor, span, a.pages);
                s.tree.release_host(a.anchor);
                fetched = a.pages;
                m = s.tree.match_prefix(pages);
            }
            // Staged in op-owned host slots, then spliced into the device tree at
            // admission.
            HostMemoryMode::BufferOnly => staged = a.pages,
        }
    }
    s.tree.inc_lock_ref(m.last_node);
    let loaded = s.tree.load_back(&m);
    if loaded == 0 {
        s.tree.stats.load_back_skipped_pages += m.host_pages;
    }
    let on_dev = m.device_pages + loaded;
    let want = pages.len() as u64;
    let need = want - on_dev;
    let (reserved, upto) = if s.tree.alloc_device(need) {
        (need, want)
    } else {
        // Not enough unpinned device pages: cache what fits.
        let avail = s.tree.device_free().min(need);
        let ok = s.tree.alloc_device(avail);
        assert!(ok);
        s.m.insert_truncated_requests += 1;
        (avail, on_dev + avail)
    };
    s.tree.insert(&pages[..upto as usize], reserved);
    s.tree.dec_lock_ref(m.last_node);
    if s.cfg.policy.host_memory_mode == HostMemoryMode::BufferOnly {
        // Storage writes through the bounce buffer (D2H then L3 write).
        let lo = (on_dev + staged).min(upto) as usize;
        let mut out = Vec::new();
        s.buffer_writes(&pages[lo..upto as usize], &mut out);
        if !out.is_empty() {
            s.m.backup_bytes += s.bytes(out.len() as u64);
            s.write_storage(&out);
        }
    }
    next_iteration(s, recs);
    // Hit split: L3-fetched pages are the tail of the loaded host span.
    let storage = if loaded > 0 { fetched.min(loaded) } else { 0 } + staged.min(upto - on_dev);
    Hits {
        device: m.device_pages,
        host: loaded - if loaded > 0 { fetched.min(loaded) } else { 0 },
        storage,
        fetched,
    }
}

/// One request as 0.5.23's scheduler drives the tree ([`CallPattern::Scheduler0523`]),
/// instant transfers, one request per batch, requests far apart (every transfer of a
/// request is acked before the next arrives):
/// - arrival, with L3 (`managers/scheduler.py: _prefetch_kvcache`): a match, then
///   [`prefetch_0_5_23`], which runs to completion;
/// - admission: the match is limited to `input_len − 1` tokens
///   (`Req._compute_max_prefix_len`); the host hit is loaded back
///   (`init_load_back`); `evict_to_free_tokens` is asked for the extend plus one page
///   (`mem_cache/allocation.py: alloc_paged_token_slots_extend`: `extend + page_size`
///   tokens, then `mem_cache/common.py: evict_from_tree_cache`); the request holds
///   `ceil(input / P) − prefix` pages; the tree takes the whole pages
///   (`checkpoint`, duplicates freed) and the partial last page is freed;
/// - next iteration (`check_hicache_events`): D2H acks and the L3 writes they start,
///   H2D acks (`loading_check`), L3 write acks.
pub(crate) fn process_scheduler<R: TreeRules>(
    s: &mut Session<R>,
    pages: &[PageKey],
    input_tokens: u32,
    recs: &mut Vec<crate::cache::BackupRecord>,
) -> Hits {
    let input = u64::from(input_tokens);
    let max_prefix = (input.saturating_sub(1) / s.ps).min(pages.len() as u64);
    let key = &pages[..max_prefix as usize];
    let fetched = if s.storage.is_some() {
        prefetch_0_5_23(s, key)
    } else {
        0
    };
    let m = s.tree.match_prefix(key);
    // `PrefillAdder.add_one_req`: the device match is locked while the request is
    // admitted and its host hit loaded back (`init_load_back` pins the host part
    // itself); the request then holds `req.lock` on its last device node, which is
    // the deepest match only if the load-back succeeded. A failed load-back leaves
    // the host part unlocked: host leaves again for the request's own evictions.
    s.tree.inc_lock_ref(m.last_device_node);
    let loaded = s.tree.load_back(&m);
    if loaded == 0 {
        s.tree.stats.load_back_skipped_pages += m.host_pages;
    }
    let last = if loaded > 0 {
        m.last_node
    } else {
        m.last_device_node
    };
    s.tree.inc_lock_ref(last);
    s.tree.dec_lock_ref(m.last_device_node);
    let on_dev = m.device_pages + loaded;
    let need = input.div_ceil(s.ps) - on_dev;
    let free = s.tree.make_device_room(need + 1);
    let got = need.min(free);
    if got < need {
        s.m.insert_truncated_requests += 1;
    }
    s.tree.reserve_device(got);
    let upto = (on_dev + got).min(pages.len() as u64);
    let reserved = upto - on_dev;
    // The partial last page (and pages past the listed ids) go back to the pool.
    s.tree.free_device(got - reserved);
    s.tree.insert(&pages[..upto as usize], reserved);
    if R::REMATCH_AFTER_INSERT {
        // `radix_cache.py: cache_unfinished_req`: the inserted key matched again.
        s.tree.match_prefix(&pages[..upto as usize]);
    }
    s.tree.dec_lock_ref(last);
    next_iteration(s, recs);
    // Host hits loaded back: the L3-fetched pages are the tail of the host span.
    let storage = fetched.min(loaded);
    Hits {
        device: m.device_pages,
        host: loaded - storage,
        storage,
        fetched,
    }
}

/// A sliding-window model's replay ([`crate::runtime::SwaPool`]): 0.5.23's tree with
/// the SWA component over the full and the SWA pool ([`SwaRadixTree`]), every request
/// through [`process_scheduler_swa`]. `ReplayConfig::validate` admits an SWA pool only
/// with `call_pattern: scheduler_0_5_23`, `tree: unified_0_5_23`, LRU, no host tier,
/// no L3 and one rank; this refuses any other combination again.
fn run_swa<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
    on_hits: &mut dyn FnMut(u64, &RequestHits),
) -> Result<ReplayMetrics, ReplayError> {
    let pool = cfg.capacities.swa.expect("an SWA pool");
    if cfg.policy.call_pattern != CallPattern::Scheduler0523
        || cfg.policy.tree != TreeKind::Unified0523
        || cfg.capacities.l2_pages != 0
        || cfg.has_storage()
    {
        return Err(ReplayError::InvalidConfig {
            field: "swa",
            message: "an SWA pool is modelled with call_pattern: scheduler_0_5_23, tree: unified_0_5_23, l2_pages: 0 and no L3 only".into(),
        });
    }
    // Hit counters and metrics; its own (full-attention) tree stays empty.
    let mut s = Session::<Unified0523>::new(cfg);
    let mut t = SwaRadixTree::new(SwaTreeConfig {
        full_pages: cfg.capacities.l1_pages,
        swa_pages: pool.pages,
        page_size: cfg.capacities.page_size,
        window: pool.window,
    });
    let waiting_touch = cfg.policy.eviction_policy == EvictionPolicy::Lru;
    // `--chunked-prefill-size` (0 = none).
    let chunk = u64::from(cfg.scheduler.compute.chunked_prefill_size);
    super::swa_req::check_chunk(chunk, cfg.capacities.page_size)?;
    for (index, req) in requests.into_iter().enumerate() {
        let index = index as u64;
        check_request(cfg, index, &req)?;
        let touch = waiting_touch && index.is_multiple_of(WAITING_PREFIX_REFRESH_INTERVAL);
        let output = if pool.decode { req.output_tokens } else { 1 };
        let h = process_scheduler_swa(&mut t, &req.page_hashes, req.input_tokens, output, index, touch, chunk)
            .ok_or_else(|| ReplayError::InvalidConfig {
                field: "swa",
                message: format!(
                    "request #{index} (id {}): {} input tokens (and {output} output tokens) do not fit the pools after eviction ({} full and {} SWA pages free): SGLang raises \"Prefill out of memory\" (or \"Decode out of memory\" for a decode slot)",
                    req.id,
                    req.input_tokens,
                    t.full_free(),
                    t.swa_free()
                ),
            })?;
        if cfg.measurement.debug_checks {
            t.check();
        }
        on_hits(
            index,
            &RequestHits {
                device: h.device,
                host: 0,
                storage: 0,
                fetched: 0,
                host_used: 0,
                device_used: t.full_used(),
            },
        );
        s.record(index, req.input_tokens, req.page_hashes.len() as u64, h);
        crate::workload::recycle_pages(req.page_hashes);
    }
    let st = t.stats;
    let mut m = s.finish();
    m.device_evicted_pages = st.full_evicted_pages;
    m.final_device_pages = t.full_used();
    Ok(m)
}

/// `managers/schedule_policy.py: WAITING_PREFIX_REFRESH_INTERVAL` (0.5.23): the
/// waiting queue's prompts are touched on every 32nd `calc_priority` call.
pub(crate) const WAITING_PREFIX_REFRESH_INTERVAL: u64 = 32;

/// One request of a sliding-window model as 0.5.23's scheduler drives the tree with
/// the SWA component (`tests/golden/swa_tree/README.md` §8), one request per batch.
/// Its prefill, chunked when `chunk > 0` (`--chunked-prefill-size`), is
/// [`swa_admit_prefill`]'s. A request with two or more output tokens (only with
/// `capacities.swa.decode`) goes on to [`process_scheduler_swa_decode`]; one finishing
/// at its prefill (one output token):
/// - `release_kv_cache(checkpoint=True)` ([`swa_release`]): the insert of the
///   page-aligned prompt, or only up to `swa_branching_seqlen` when the match was cut
///   short by the SWA validator and no chunk checkpoint took that branch
///   (`swa.py: prepare_for_caching_req`; no next checkpoint takes the rest), with
///   `prev_prefix_len = cache_protected_len` and the request's SWA frontier (0
///   unless a chunk checkpoint moved it); `free_kv_row` of what the tree did not
///   take; `unlock`.
///
/// `None`: the pools cannot hold the request after eviction (SGLang:
/// `RuntimeError("Prefill out of memory")`).
fn process_scheduler_swa(
    t: &mut SwaRadixTree,
    pages: &[PageKey],
    input_tokens: u32,
    output_tokens: u32,
    index: u64,
    touch: bool,
    chunk: u64,
) -> Option<Hits> {
    if output_tokens > 1 {
        return process_scheduler_swa_decode(
            t,
            pages,
            input_tokens,
            output_tokens,
            index,
            touch,
            chunk,
        );
    }
    let r = swa_admit_prefill(t, pages, input_tokens, index, touch, chunk).ok()?;
    let device = r.m.device_pages;
    swa_release(t, pages, index, u64::from(input_tokens), r);
    Some(Hits {
        device,
        ..Hits::default()
    })
}

/// One request that decodes `output_tokens >= 2` tokens, alone in its batches
/// (`tests/golden/swa_tree/README.md` §4.5, §7; the golden driver's `--decode 1`):
/// - its prefill as [`process_scheduler_swa`]'s ([`swa_admit_prefill`]: touch, match
///   of `input_len − 1`, lock, the chunks and their checkpoints,
///   `alloc_paged_token_slots_extend`);
/// - `process_batch_result_prefill` → `checkpoint_kv_cache` of the unfinished
///   request up to the prompt ([`swa_checkpoint`]);
/// - decode step `j = 1 .. output − 1` (`prepare_for_decode` → `alloc_for_decode`):
///   `maybe_evict_swa` from the second step on (`decode_batch_idx >= 1`) when
///   `seqlen − 1 − W >= evicted_seqlen + 128`, then
///   `alloc_paged_token_slots_decode`: `evict_to_free_tokens(page_size)` (one page
///   against both pools) and a new page in both pools when the KV length is
///   page-aligned (`alloc_decode`; `None` = "Decode out of memory");
/// - `release_kv_cache(checkpoint=True)` at `input + output − 1` committed tokens
///   ([`swa_release`]): the insert of the page-aligned prompt + output with the
///   request's frontier, `free_kv_row` of the rest, `unlock`.
fn process_scheduler_swa_decode(
    t: &mut SwaRadixTree,
    pages: &[PageKey],
    input_tokens: u32,
    output_tokens: u32,
    index: u64,
    touch: bool,
    chunk: u64,
) -> Option<Hits> {
    let ps = u64::from(t.config().page_size);
    let input = u64::from(input_tokens);
    let mut r = swa_admit_prefill(t, pages, input_tokens, index, touch, chunk).ok()?;
    let device = r.m.device_pages;

    // Prefill -> decode checkpoint (unfinished request).
    swa_checkpoint(t, pages, index, input, &mut r);

    // Decode steps.
    let out = u64::from(output_tokens);
    if !swa_decode(t, &mut r, input, out) {
        return None;
    }

    // Finish: release_kv_cache(checkpoint=True).
    let committed = input + out - 1;
    debug_assert_eq!(r.alloc_pages, committed.div_ceil(ps));
    swa_release(t, pages, index, committed, r);
    Some(Hits {
        device,
        ..Hits::default()
    })
}

/// An L3 prefetch at arrival as 0.5.23 issues and completes it, all pages arriving
/// (`_prefetch_kvcache` → `unified_radix_cache.py: prefetch_from_storage`, the
/// controller's hit query, `_drain_storage_control_queues_impl` →
/// `allocate_storage_hit`, then `_handle_prefetch_result`):
/// - the arrival's own match (`init_next_round_input`) of `key` (the pages below
///   `input_len − 1`); the anchor is the deepest matched node (`last_host_node` =
///   `best_match_node`), which must be backed up or the root;
/// - the span after the match, if at least `max(prefetch_threshold, page_size)`
///   tokens and the prefetch budget is not spent (`prefetch_rate_limited`), is
///   looked up; the leading pages present in storage are the hit;
/// - a hit under the threshold is revoked; otherwise host pages are allocated for it
///   (`evict_host(hit)` once when short, else the page-aligned free part if it
///   reaches the threshold), and the fetched pages are inserted under the anchor
///   (`insert_host`), which stays host-pinned meanwhile.
///
/// Returns the fetched pages kept on the host (`loaded_from_storage`).
fn prefetch_0_5_23<R: TreeRules>(s: &mut Session<R>, key: &[PageKey]) -> u64 {
    let m = s.tree.match_prefix(key);
    let Admission::Admitted(a) = s.admit_prefetch(key, &m) else {
        return 0;
    };
    let span = &key[a.span_start..a.span_start + a.pages as usize];
    let kept = s.tree.insert_host_only(a.anchor, span, a.pages);
    s.tree.release_host(a.anchor);
    kept
}

/// The next scheduler iteration's `check_hicache_events` for a finished request: D2H
/// acks (`writing_check`) and the L3 writes they start, H2D acks (`loading_check`),
/// then the L3 write acks that unpin host copies.
fn next_iteration<R: TreeRules>(s: &mut Session<R>, recs: &mut Vec<crate::cache::BackupRecord>) {
    if let Some(t) = s.cfg.policy.write_back_threshold {
        // The what-if of sglang PR 40576: the watermark's backups join this iteration's.
        s.tree.write_back_to_watermark(t);
    }
    drain_backups(s, recs);
    s.tree.finish_load_backs();
    s.tree.release_storage_pins();
    if s.tree.config().l3_at_host_eviction {
        s.write_host_evictions();
    }
}

/// D2H acks (instant) and the L3 backups they start.
fn drain_backups<R: TreeRules>(s: &mut Session<R>, recs: &mut Vec<crate::cache::BackupRecord>) {
    recs.clear();
    s.tree.take_backups(recs);
    for r in recs.iter() {
        s.tree.backup_acked(r);
        if let Some(st) = s.storage.as_ref() {
            // `write_backup_storage`: nothing when the host copy is gone by the ack;
            // else every page the backup moved, split fragments included.
            if !s.tree.config().l3_at_host_eviction
                && s.tree.backup_span(r, &mut s.span)
                && s.tree.node(r.node).backed_up
            {
                let new = st.get().write(&s.span);
                s.m.l3_write_bytes += new * s.ps * s.cfg.capacities.bytes_per_token;
            }
        }
    }
}

/// Requests read ahead of the one replayed by [`run_plain`], and the pages of each whose
/// table lines are prefetched.
const PREFETCH_AHEAD: usize = 8;
const PREFETCH_PAGES: usize = 16;

/// `lru_mode: plain_page`: every page its own LRU entry; L1 evictions demote to an
/// exclusive L2 LRU (when `l2_pages > 0`), L2 hits move back to L1. Hits are
/// longest-prefix: the leading run of pages found in L1, then L2.
fn run_plain<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
) -> Result<ReplayMetrics, ReplayError> {
    let mut s = Session::<V1>::new(cfg);
    let mut l1 = KeyedLru::new(cfg.capacities.l1_pages);
    let mut l2 = KeyedLru::new(cfg.capacities.l2_pages);
    // The requests a few ahead are read before their turn and their pages' table lines
    // fetched (a hint: the contents are untouched), so the cache misses of a large LRU
    // overlap instead of coming one after another. Each request is checked as it is
    // read: the reader never goes past a request the replay refuses, as before.
    let prefetch = |l1: &KeyedLru, l2: &KeyedLru, req: &Request| {
        for &p in req.page_hashes.iter().take(PREFETCH_PAGES) {
            l1.prefetch(p);
            if !l2.is_empty() {
                l2.prefetch(p);
            }
        }
    };
    // Fused: never asked again once it has ended.
    let mut requests = requests.into_iter().fuse();
    let mut ahead: VecDeque<Request> = VecDeque::with_capacity(PREFETCH_AHEAD + 1);
    let mut read = 0u64;
    let mut index = 0u64;
    loop {
        while ahead.len() <= PREFETCH_AHEAD
            && let Some(r) = requests.next()
        {
            check_request(cfg, read, &r)?;
            read += 1;
            prefetch(&l1, &l2, &r);
            ahead.push_back(r);
        }
        let Some(req) = ahead.pop_front() else {
            break;
        };
        let index = {
            index += 1;
            index - 1
        };
        let mut h = Hits::default();
        let mut leading = true;
        for &p in &req.page_hashes {
            // L1 first (a hit is final); on a miss the L2 copy is taken out before the
            // page L1 evicted (which may be `p` itself at capacity 0) is demoted.
            let evicted = match l1.access(p) {
                Ok(()) => {
                    h.device += leading as u64;
                    continue;
                }
                Err(evicted) => evicted,
            };
            if l2.remove(p) {
                h.host += leading as u64;
            } else {
                leading = false;
            }
            if let Some(v) = evicted {
                s.m.device_evicted_pages += 1;
                if cfg.capacities.l2_pages > 0 {
                    s.m.backup_bytes += s.bytes(1);
                    if l2.insert(v).is_some() {
                        s.m.host_evicted_pages += 1;
                    }
                }
            }
        }
        s.m.load_back_bytes += s.bytes(h.host);
        s.record(index, req.input_tokens, req.page_hashes.len() as u64, h);
        crate::workload::recycle_pages(req.page_hashes);
        s.sample(index, 0);
    }
    let (de, he, bb, lb) = (
        s.m.device_evicted_pages,
        s.m.host_evicted_pages,
        s.m.backup_bytes,
        s.m.load_back_bytes,
    );
    let mut m = s.finish();
    m.device_evicted_pages = de;
    m.host_evicted_pages = he;
    m.backup_bytes = bb;
    m.load_back_bytes = lb;
    m.final_device_pages = l1.len();
    m.final_host_only_pages = l2.len();
    Ok(m)
}
