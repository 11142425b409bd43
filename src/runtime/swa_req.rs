//! One request's life in the SWA tree as 0.5.23's scheduler drives it (`managers/
//! schedule_batch.py: Req` with `UnifiedRadixCache`'s SWA component): admission and
//! chunked prefill, the chunk and prefill-to-decode checkpoints, the decode steps with
//! their out-of-window frees, and the release. Shared by the timing-off replay (one
//! request at a time) and the timed one (requests overlapping on the clock).

use crate::cache::{PageKey, SwaRadixTree};

use super::ReplayError;

/// Refuses a `--chunked-prefill-size` under one page: SGLang never admits a chunk of a
/// longer prompt (`managers/schedule_policy.py: _select_prefill_admission`, 0.5.23:
/// `extend_len <= 0` → `OTHER`). 0 is no chunking.
pub(crate) fn check_chunk(chunk: u64, page_size: u32) -> Result<(), ReplayError> {
    if chunk > 0 && chunk < u64::from(page_size) {
        return Err(ReplayError::InvalidConfig {
            field: "swa",
            message: format!(
                "chunked_prefill_size {chunk} is under one page ({page_size} tokens): SGLang never admits a chunk of a longer prompt"
            ),
        });
    }
    Ok(())
}

/// A request between its admission and its release in the SWA tree (`managers/
/// schedule_batch.py: Req` and its `ReqKvInfo`, 0.5.23); lengths in tokens unless
/// named pages.
pub(crate) struct SwaReq {
    /// The admission's match (`init_next_round_input` → `match_kv_cache`).
    pub(crate) m: crate::cache::SwaMatch,
    /// `req.lock`: on the match's best node, then on each checkpoint's last node.
    pub(crate) lock: crate::cache::SwaLock,
    /// Row pages allocated in both pools (`ceil(kv_allocated_len / P)`, the
    /// tree-owned prefix included).
    pub(crate) alloc_pages: u64,
    /// `req.kv.cache_protected_len`: the tree-owned prefix of the row.
    pub(crate) prot: u64,
    /// `req.kv.get_evicted_seqlen(SWA)`: the request's SWA slots below it are freed.
    pub(crate) ev: u64,
    /// `req.swa_branching_seqlen` (`swa.py: finalize_match_result_in_tree_core`: the
    /// page-floored full hit when it exceeds the device prefix); cleared once an
    /// insert took it.
    pub(crate) branch: Option<u64>,
}

/// A request's prefill as the scheduler admits and runs it in the SWA tree (both call
/// paths above; 0.5.23):
/// - `calc_priority` (fcfs, LRU): `_touch_waiting_prefixes` matches the whole prompt
///   (`common.py: touch_waiting_prefix` → `touch_prefix`, no `input_len − 1` cap) on
///   every 32nd call (`touch`: one call per request);
/// - `Req.init_next_round_input` → `match_kv_cache` of the first `input_len − 1`
///   tokens, page-aligned; the device hit is the match's `device_prefix_len`
///   (`cache_protected_len` = `prefix_len`), and `swa_branching_seqlen` the
///   page-aligned full hit when it goes further;
/// - `PrefillAdder._commit_prefill_admission`: `lock(last_node)`. Without chunking
///   (`chunk == 0`) or when the extend fits (`ceil_P(extend) <= chunk`), the whole
///   prompt is one extend; otherwise `managers/schedule_policy.py:
///   _select_prefill_admission` cuts the first chunk at
///   `floor_P(prefix + floor_P(chunk))` (its `chunk_tokens_limit` is the chunk: the
///   admission budget's SWA cap only shrinks a chunk for a request the SWA pool can
///   never hold, and that request is SGLang's out of memory here);
/// - per extend, `mem_cache/allocation.py: alloc_paged_token_slots_extend`:
///   `evict_to_free_tokens(extend + P)` against both pools, then
///   `ceil(end / P) − ceil(prefix / P)` pages in each (`alloc_extend`);
/// - after every chunk but the last, the next scheduler step's
///   `managers/scheduler.py: Scheduler.stash_chunked_request` →
///   `mem_cache/common.py: checkpoint_kv_cache` ([`swa_checkpoint`] of the unfinished
///   request up to the chunk's end; `req.prefix_len` = that end); then
///   `get_new_batch_prefill` → `chunked_req.init_next_round_input()` (no match) and
///   `PrefillAdder.add_chunked_req`: the next chunk ends at
///   `prefix_len + min(remaining, chunk)` (`available_chunk_tokens` and `fit_chunk`
///   leave the chunk whole while both pools, evictable included, hold a chunk and a
///   page more: the request alone holds one window of SWA between chunks; the golden
///   driver counts any shortening and saw none).
///
/// `Err(device hit pages of the match)`: the pools cannot hold the next extend
/// (SGLang's "Prefill out of memory" when nothing else will free pages); the row's
/// pages the tree does not own (the chunks' checkpoints keep theirs in it) are freed and
/// the lock released, so the timed replay can retry the request later.
pub(crate) fn swa_admit_prefill(
    t: &mut SwaRadixTree,
    pages: &[PageKey],
    input_tokens: u32,
    index: u64,
    touch: bool,
    chunk: u64,
) -> Result<SwaReq, u64> {
    let ps = u64::from(t.config().page_size);
    let input = u64::from(input_tokens);
    if touch {
        t.match_prefix(pages);
    }
    let max_prefix = (input.saturating_sub(1) / ps).min(pages.len() as u64);
    let m = t.match_prefix(&pages[..max_prefix as usize]);
    let lock = t.lock(m.best);
    let mut r = SwaReq {
        m,
        lock,
        alloc_pages: m.device_pages,
        prot: m.device_pages * ps,
        ev: 0,
        branch: (m.full_hit_pages > m.device_pages).then_some(m.full_hit_pages * ps),
    };
    // `req.prefix_len` and `req.extend_end`.
    let mut prefix = r.prot;
    let mut end = if chunk > 0 && (input - prefix).div_ceil(ps) * ps > chunk {
        (prefix + chunk / ps * ps) / ps * ps
    } else {
        input
    };
    loop {
        t.make_room((end - prefix + ps).div_ceil(ps));
        let new_pages = end.div_ceil(ps) - prefix.div_ceil(ps);
        if !t.alloc(new_pages) {
            // `free_kv_row` of what the tree does not hold: past the checkpointed
            // prefix, and for SWA past the request's out-of-window frontier too.
            let owned = r.prot / ps;
            t.free(r.alloc_pages - owned, r.alloc_pages - owned.max(r.ev / ps));
            t.unlock(r.lock);
            return Err(r.m.device_pages);
        }
        r.alloc_pages += new_pages;
        if end >= input {
            return Ok(r);
        }
        swa_checkpoint(t, pages, index, end, &mut r);
        prefix = end;
        end = prefix + (input - prefix).min(chunk);
    }
}

/// `managers/schedule_batch.py: ScheduleBatch.maybe_evict_swa`'s interval
/// (`SGLANG_SWA_EVICTION_INTERVAL`, `environ.py`, 0.5.23 default 128 tokens).
pub(crate) const SWA_EVICTION_INTERVAL: u64 = 128;

/// Key of page `idx` of a request: the prompt's whole pages, then pages holding output
/// tokens (a prompt's partial last page with its first outputs, or outputs only), or
/// prompt tokens past the listed ids: unique to the request, so they never match
/// another's (bit 63 set, the request's position and the page index below it).
pub(crate) fn swa_page_key(pages: &[PageKey], index: u64, idx: usize) -> PageKey {
    if idx < pages.len() {
        pages[idx]
    } else {
        (1 << 63) | (index << 24) | idx as u64
    }
}

/// A request's own SWA frontier: `common.py: free_swa_out_of_window_slots` (0.5.23)
/// with prefix sharing, no retain floor and `eviction_interval = 1` (both callers
/// here: `checkpoint_into_tree` and `evict_sliding_windows` from `maybe_evict_swa`).
/// Tokens throughout; `prot` is `cache_protected_len` (= `swa_dead_lo`, no eviction
/// shield), `ev` the request's `evicted_seqlen(SWA)`. The SWA pages of row positions
/// `[ev, new)` go back to the SWA pool (the request holds them: they lie past its
/// tree-owned prefix).
pub(crate) fn free_swa_out_of_window(t: &mut SwaRadixTree, pre_len: u64, prot: u64, ev: &mut u64) {
    let w = u64::from(t.config().window);
    let ps = u64::from(t.config().page_size);
    if pre_len < w + *ev + 1 {
        return;
    }
    *ev = (*ev).max(prot);
    let keep = w.max(ps).div_ceil(ps) * ps;
    let new = (*ev).max(pre_len.saturating_sub(keep)) / ps * ps;
    if new > *ev {
        t.free(0, (new - *ev) / ps);
        *ev = new;
    }
}

/// `unified_radix_cache.py: insert` of the request's first `key_pages` pages with
/// `prev_prefix_len = prot` and its SWA frontier `ev` (tokens), then the insert's
/// frees of the request's slots in `[prot, key)` the tree did not take (duplicates;
/// full only below the frontier, where its SWA is already freed).
pub(crate) fn swa_insert(
    t: &mut SwaRadixTree,
    pages: &[PageKey],
    index: u64,
    key_pages: u64,
    prot: u64,
    ev: u64,
) -> crate::cache::SwaInsert {
    let ps = u64::from(t.config().page_size);
    let key: Vec<PageKey> = (0..key_pages as usize)
        .map(|i| swa_page_key(pages, index, i))
        .collect();
    let kept = t.insert_with_frontier(&key, prot / ps, ev / ps);
    let held_full = key_pages - prot / ps;
    let held_swa = key_pages.saturating_sub(prot.max(ev) / ps);
    t.free(
        held_full - kept.leaf_pages,
        held_swa - kept.leaf_live_pages - kept.revived_pages,
    );
    kept
}

/// `unified_radix_cache.py: checkpoint_into_tree` (0.5.23) of an unfinished request
/// up to `up_to` tokens (`checkpoint_kv_cache`, `up_to = req.extend_end`: a chunk's
/// end from `Scheduler.stash_chunked_request`, or the prompt at the prefill-to-decode
/// checkpoint):
/// - `swa.py: prepare_for_caching_req`: the key is `[0, up_to)`, or only up to
///   `swa_branching_seqlen` when that lies in `(cache_protected_len, up_to]`;
/// - `free_out_of_window_slots(len(key) − 1)` before the insert
///   (`SGLANG_OPT_UNIFIED_CACHE_FREE_OUT_OF_WINDOW_SLOTS`, default on);
/// - the insert of the page-aligned key with the request's frontier (tombstones below
///   it, README §4.3), its duplicates freed; the row re-pointed at the tree's slots;
///   the lock moved to the insert's last node (unlock, lock); `cache_protected_len` =
///   the inserted length;
/// - `swa.py: cleanup_after_caching_req`: after a branch insert,
///   `swa_branching_seqlen` is cleared and the out-of-window slots are freed again
///   with the forward key (`len(req.get_fill_ids()) − 1 = up_to − 1`).
pub(crate) fn swa_checkpoint(
    t: &mut SwaRadixTree,
    pages: &[PageKey],
    index: u64,
    up_to: u64,
    r: &mut SwaReq,
) {
    let ps = u64::from(t.config().page_size);
    let branch = r.branch.filter(|&b| b > r.prot && b <= up_to);
    let eff = branch.unwrap_or(up_to);
    free_swa_out_of_window(t, eff - 1, r.prot, &mut r.ev);
    let key_pages = eff / ps;
    if key_pages > 0 {
        let kept = swa_insert(t, pages, index, key_pages, r.prot, r.ev);
        t.unlock(r.lock);
        r.lock = t.lock(kept.last);
        r.prot = key_pages * ps;
    }
    if branch.is_some() {
        r.branch = None;
        free_swa_out_of_window(t, up_to - 1, r.prot, &mut r.ev);
    }
}

/// `mem_cache/common.py: release_kv_cache(checkpoint=True)` (0.5.23) of a finished
/// request with `committed` tokens (`owned_kv_len`): `checkpoint_into_tree` of a
/// finished request (no out-of-window free; the key is `[0, committed)`, or only up to
/// a `swa_branching_seqlen` no earlier insert took, `prepare_for_caching_req`), the
/// insert of the page-aligned key with the request's frontier and `prev_prefix_len =
/// cache_protected_len`; `free_kv_row` of the row past the key (full only below the
/// frontier); `unlock`.
pub(crate) fn swa_release(
    t: &mut SwaRadixTree,
    pages: &[PageKey],
    index: u64,
    committed: u64,
    r: SwaReq,
) {
    let ps = u64::from(t.config().page_size);
    let eff = r
        .branch
        .filter(|&b| b > r.prot && b <= committed)
        .unwrap_or(committed);
    let key_pages = eff / ps;
    let held_swa_from = r.prot.max(r.ev) / ps;
    swa_insert(t, pages, index, key_pages, r.prot, r.ev);
    t.free(
        r.alloc_pages - key_pages,
        r.alloc_pages - key_pages.max(held_swa_from),
    );
    t.unlock(r.lock);
}

/// The decode steps `j = 1 .. out − 1` of a request whose prefill-to-decode checkpoint
/// is done (`prepare_for_decode` → `alloc_for_decode`, 0.5.23): `maybe_evict_swa` from
/// the second step on (`decode_batch_idx >= 1`) when `seqlen − 1 − W >=
/// evicted_seqlen + 128`, then `alloc_paged_token_slots_decode`:
/// `evict_to_free_tokens(page_size)` (one page against both pools) and a new page in
/// both pools when the KV length is page-aligned (`alloc_decode`). `false` (the lock
/// released): SGLang's "Decode out of memory".
pub(crate) fn swa_decode(t: &mut SwaRadixTree, r: &mut SwaReq, input: u64, out: u64) -> bool {
    let ps = u64::from(t.config().page_size);
    let w = u64::from(t.config().window);
    for j in 1..out {
        let seqlen = input + j;
        if j >= 2 && seqlen - 1 >= w + r.ev + SWA_EVICTION_INTERVAL {
            free_swa_out_of_window(t, seqlen - 1, r.prot, &mut r.ev);
        }
        let cur = input + j - 1;
        t.make_room(1);
        if cur.is_multiple_of(ps) {
            if !t.alloc(1) {
                t.unlock(r.lock);
                return false;
            }
            r.alloc_pages += 1;
        }
    }
    true
}
