//! Prefill-decode disaggregation, timed (SGLang 0.5.23's path, with the default
//! `--disaggregation-decode-allocation-policy early` and no optimistic prefill): prefill
//! servers (the scenario's server, one or more behind the router of `runtime.router`)
//! and decode servers (`runtime.pd.decode_engines`) on one clock.
//!
//! A request's life:
//! 1. The router sends it to a prefill server (its policy, as `timed::fleet`) and to a
//!    decode server (round-robin).
//! 2. The decode server preallocates its KV (`disaggregation/decode.py:
//!    DecodePreallocQueue.pop_preallocated`, FIFO, stopping at the first that does not
//!    fit) at its next loop iteration — at once when it is idle, else at the end of its
//!    decode step. Only then does the prefill server queue it (`prefill.py:
//!    pop_bootstrapped` waits for the sender's `WaitingForInput`, which the decode
//!    side's page indices set).
//! 3. The prefill server prefills it with `max_new_tokens` = 1, sends its KV — each
//!    chunk's pages after that chunk's forward, the rest after the last
//!    (`timed::PdSend::send_prompt`) — and holds it until the transfer ends.
//! 4. At the transfer's end the decode server takes it at its next loop iteration, which
//!    streams the prefill's token (`process_batch_result_prebuilt`, before any decode
//!    forward): the client's first token. It then decodes the rest in the decode
//!    server's batch (`runtime::cost`'s step for the batch and its mean context) and
//!    frees its KV.
//!
//! The decode admission (`pop_preallocated` → `_allocatable_token_budgets`,
//! `_required_admission_tokens`), per decode server: a request slot free (running +
//! in transfer + transferred < `max_running_requests` + extra slots), and
//! max(its prompt pages + 512, prompt + min(max_new_tokens, 4096) − retractable) ≤ the
//! pool's free tokens − max(512 × active requests, the largest running request's
//! prompt + min(max_new_tokens, 4096) − retractable), where retractable is the running
//! requests' prompt + output tokens.
//!
//! DP attention: a prefill server's ranks run in lockstep (`timed::lockstep`), each
//! request to the rank of the bootstrap room the router draws for it
//! (`follow_bootstrap_room`); each decode rank has its own pool and queue, dealt
//! round-robin. A sliding-window model's prefill servers run the SWA tree
//! (`timed::swa`).
//!
//! Not here (`runtime::pd::PD_UNMODELLED`, in every answer's status): the bootstrap
//! handshake's own time (`runtime.pd.transfer_latency`), a decode
//! server's retraction and overlap scheduler, its HiCache's L3. Its radix cache
//! (`--disaggregation-decode-enable-radix-cache`) and the HiCache host tier behind it
//! are `timed::decode_cache`; the host tier's copies (a restore's H2D before the request
//! may run, the backups' D2H) go on the decode rank's own links ([`HostLinks`]).

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::rc::Rc;

use rand::RngExt;

use crate::cache::{HiRadix, TreeKind, TreeRules, Unified0523, V1};
use crate::runtime::ReplayError;
use crate::runtime::config::ReplayConfig;
use crate::runtime::cost::CostModel;
use crate::runtime::metrics::ReplayMetrics;
use crate::runtime::pd::{CLIP_MAX_NEW_TOKENS, DecodeServer, PdFigures, PdSpec};
use crate::runtime::router::{Router, RouterFigures, RouterSpec, RoutingText};
use crate::runtime::transfer::Link;
use crate::units::Nanos;
use crate::workload::Request;

use super::decode_cache::{DecodeCache, decode_cache};
use super::fleet::FleetError;
use super::lockstep::Lockstep;
use super::rank::{Dispatch, Fed, Inbound, Rank, RankFeed, check_arrival, first_delivery};
use super::{PdSend, Sim};
use crate::cache::BackupRecord;

/// Replays `requests` on the PD deployment: the prefill servers' figures (each engine's
/// in `engines` when there are several) with the client's times, the deployment's in
/// `pd`, and the router's figures when a router spreads the prefill servers.
pub fn run<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    pd: &PdSpec,
    router: Option<&RouterSpec>,
    requests: I,
) -> Result<(ReplayMetrics, Option<RouterFigures>), FleetError> {
    let invalid = |message: &str| ReplayError::InvalidConfig {
        field: "pd",
        message: message.into(),
    };
    let Some(server) = pd.decode else {
        return Err(invalid(
            "the decode server is not sized: a runtime.pd section is replayed from its scenario",
        )
        .into());
    };
    let requests = requests.into_iter();
    if cfg.capacities.swa.is_some() {
        // The SWA tree's prefill servers (`timed::swa`).
        return run_deployment(cfg, pd, server, router, requests, |c, feed, ls| {
            super::swa::Sim::new(c, feed, false, ls)
        });
    }
    match cfg.policy.tree {
        TreeKind::V1 => run_deployment(cfg, pd, server, router, requests, |c, feed, ls| {
            Sim::<_, V1>::new(c, feed, false, ls)
        }),
        TreeKind::Unified0523 => {
            run_deployment(cfg, pd, server, router, requests, |c, feed, ls| {
                Sim::<_, Unified0523>::new(c, feed, false, ls)
            })
        }
        TreeKind::HiRadix => run_deployment(cfg, pd, server, router, requests, |c, feed, ls| {
            Sim::<_, HiRadix>::new(c, feed, false, ls)
        }),
    }
}

/// A prefill server's replay as the PD driver runs it: a [`Rank`] with its sending
/// side.
pub(super) trait PdPrefill: Rank {
    fn pd(&mut self) -> &mut Option<PdSend>;
}

impl<I: Iterator<Item = super::rank::Fed>, R: TreeRules> PdPrefill for Sim<I, R> {
    fn pd(&mut self) -> &mut Option<PdSend> {
        &mut self.pd
    }
}

impl<I: Iterator<Item = super::rank::Fed>> PdPrefill for super::swa::Sim<I> {
    fn pd(&mut self) -> &mut Option<PdSend> {
        &mut self.pd
    }
}

/// What the driver keeps of a request from its arrival to its last token.
#[derive(Debug, Clone, Copy)]
struct Track {
    arrival: Nanos,
    prefill: usize,
    /// Its decode rank (server-major).
    decode: usize,
    /// Its bootstrap room.
    room: u64,
    measured: bool,
    /// When its prefill server's scheduler sees it (that server's TokenizerManager).
    prefill_seen: Nanos,
    prealloc: Nanos,
    prefill_end: Nanos,
    transfer_end: Nanos,
}

/// Sums of the measured requests' phases (ns) and their count.
#[derive(Debug, Default)]
struct Phases {
    prealloc: u128,
    prefill: u128,
    transfer: u128,
    first_wait: u128,
    n: u64,
    /// Prompt tokens, those the decode servers already held, and of them those
    /// restored from their host tier.
    prompt: u64,
    decode_prefix: u64,
    decode_host_prefix: u64,
}

/// One prefill server: one scheduler, or its DP-attention ranks in lockstep.
enum Prefill<S> {
    One(S),
    Dp(Lockstep<S>),
}

impl<S: PdPrefill> Prefill<S> {
    fn next_time(&self) -> Option<Nanos> {
        match self {
            Prefill::One(s) => s.next_time(),
            Prefill::Dp(g) => g.next_time(),
        }
    }

    fn advance(&mut self, t: Nanos) -> Result<(), ReplayError> {
        match self {
            Prefill::One(s) => {
                s.handle_due(t)?;
                s.form(t, false)
            }
            Prefill::Dp(g) => g.advance(t),
        }
    }

    fn in_flight(&self) -> u32 {
        match self {
            Prefill::One(s) => s.in_flight(),
            Prefill::Dp(g) => g.in_flight(),
        }
    }

    /// The rank its controller sends a request to (`room`: its bootstrap room).
    fn rank_for(&mut self, now: Nanos, input_tokens: u32, room: u64) -> usize {
        match self {
            Prefill::One(_) => 0,
            Prefill::Dp(g) => g.pick(now, input_tokens, Some(room)),
        }
    }

    fn sims(&mut self) -> &mut [S] {
        match self {
            Prefill::One(s) => std::slice::from_mut(s),
            Prefill::Dp(g) => &mut g.sims,
        }
    }

    fn finish(self) -> super::RunEnd {
        match self {
            Prefill::One(s) => Rank::finish(s),
            Prefill::Dp(g) => super::merge_ends(g.finish()),
        }
    }
}

fn run_deployment<I: Iterator<Item = Request>, S: PdPrefill>(
    cfg: &ReplayConfig,
    pd: &PdSpec,
    server: DecodeServer,
    router: Option<&RouterSpec>,
    requests: I,
    make: impl Fn(&ReplayConfig, RankFeed<I>, bool) -> Result<S, ReplayError>,
) -> Result<(ReplayMetrics, Option<RouterFigures>), FleetError> {
    let n = router.map_or(1, |r| r.engines.max(1)) as usize;
    let ranks = cfg.capacities.dp_ranks.max(1) as usize;
    // The bytes a transfer sends per token: the deployment's (the start-up's pools), or
    // without them (a configuration built in code) the replay's bytes per token.
    let (full, swa) = match (pd.full_bytes_per_token, pd.swa_bytes_per_token) {
        (0, 0) => (cfg.capacities.bytes_per_token, 0),
        x => x,
    };
    // One feed per rank of every prefill server (server-major).
    let d = Rc::new(RefCell::new(Dispatch::<I>::driven(n * ranks)));
    // A prefill server's requests end at their first token (`max_new_tokens` = 1:
    // `PrefillBootstrapQueue._process_req`).
    let mut pcfg = cfg.clone();
    pcfg.scheduler.max_new_tokens = Some(1);
    let rank_cfg = if ranks > 1 {
        super::lockstep::rank_config(&pcfg)
    } else {
        let mut c = pcfg.clone();
        c.capacities.dp_ranks = 1;
        c
    };
    let mut all = Vec::with_capacity(n);
    for e in 0..n {
        let mut sims = Vec::with_capacity(ranks);
        for r in 0..ranks {
            let feed = RankFeed {
                d: Rc::clone(&d),
                rank: e * ranks + r,
            };
            let mut s = make(&rank_cfg, feed, ranks > 1)?;
            *s.pd() = Some(PdSend {
                bandwidth: pd.transfer_bandwidth.0,
                latency: pd.transfer_latency.0,
                full_bytes_per_token: full,
                swa_bytes_per_token: swa,
                window: match pd.window {
                    0 => cfg.capacities.swa.map_or(0, |p| u64::from(p.window)),
                    w => w,
                },
                state_bytes: pd.state_bytes_per_request,
                state_period: pd.state_period,
                ..PdSend::default()
            });
            sims.push(s);
        }
        all.push(sims);
    }
    // The prefill servers' L3 (`runtime.replay.l3_scope`).
    {
        let mut each: Vec<&mut [S]> = all.iter_mut().map(Vec::as_mut_slice).collect();
        super::rank::share_stores(&cfg.capacities, &mut each);
    }
    let mut prefill: Vec<_> = all
        .into_iter()
        .map(|mut sims| {
            if ranks > 1 {
                Prefill::Dp(Lockstep::new(&pcfg, sims))
            } else {
                Prefill::One(sims.pop().expect("one rank"))
            }
        })
        .collect();

    // Each decode server's DP-attention ranks (the same launch's `--dp`), each with its
    // own pool and preallocation queue, server-major; the server's controller deals its
    // requests round-robin (a PD decode server's `auto`).
    let servers = pd.decode_engines.max(1) as usize;
    let mut decode = Vec::with_capacity(servers * ranks);
    let ps = server.page_size.max(1);
    let host_pages = if pd.decode_hicache_on {
        pd.decode_host_tokens / u64::from(ps)
    } else {
        0
    };
    for _ in 0..servers * ranks {
        let cache = pd
            .decode_radix_cache
            .then(|| decode_cache(cfg, server.pool_tokens / u64::from(ps), host_pages, ps));
        let links = (host_pages > 0).then(|| HostLinks::new(cfg, full, ps));
        let gate = cfg.scheduler.decode_restore_gate;
        decode.push(DecodeEngine::new(
            server,
            pd.num_reserved_decode_tokens,
            super::cost_model(cfg)?,
            cache,
            links,
            gate,
        ));
    }
    let mut dealt = vec![0u64; servers];
    // The bootstrap rooms the router draws (`follow_bootstrap_room` reads them).
    let mut rooms = crate::engine::stream(pd.seed, 0xB007_0000);
    let mut router = router.map(Router::new);
    let mut text = RoutingText::default();
    let mut loads = vec![0u32; n];
    // Requests routed to each prefill server and waiting for their preallocation.
    let mut awaiting = vec![0u32; n];
    let mut sent = vec![0u64; n];
    let mut assigned = vec![0u64; servers];
    let mut tracks: BTreeMap<u64, Track> = BTreeMap::new();
    let (mut released, mut events, mut outbox) = (Vec::new(), Vec::new(), Vec::new());
    let mut ttft = Vec::new();
    let mut tpot = (0.0f64, 0u64);
    let mut phases = Phases::default();
    let mut last = 0;
    let mut prev_arrival = 0;
    let warmup = cfg.measurement.warmup_requests;
    let max_new = cfg.scheduler.max_new_tokens;
    let mut src = requests.enumerate().peekable();
    // The router sends each request to both servers at once, and each server's
    // TokenizerManager hands it to its scheduler (`Inbound`): the decode server
    // preallocates once its scheduler sees it, and the prefill server's bootstrap
    // queue holds it from then until that preallocation (`prefill.py:
    // pop_bootstrapped`). A decode server's requests wait here for its scheduler, in
    // the order its TokenizerManager delivers them.
    let mut prefill_in = vec![Inbound::new(cfg.frontend); n];
    let mut decode_in = vec![Inbound::new(cfg.frontend); servers];
    let mut held: Vec<VecDeque<(Nanos, (usize, Pending))>> =
        (0..servers).map(|_| VecDeque::new()).collect();
    // Preallocated requests whose prefill server's scheduler has not received them yet:
    // (when it does, trace position), and the requests by position.
    let mut bootstrapped: BinaryHeap<Reverse<(Nanos, u64)>> = BinaryHeap::new();
    let mut ready: BTreeMap<u64, Pending> = BTreeMap::new();
    // The driver's clock: the time of what it handled last.
    let mut now: Nanos;
    loop {
        let next_event = prefill
            .iter()
            .filter_map(Prefill::next_time)
            .chain(decode.iter().filter_map(DecodeEngine::next_time))
            .min();
        let arrival = src.peek().map(|(_, r)| r.arrival_ns);
        let due = first_delivery(&held);
        let boot = bootstrapped.peek().map(|&Reverse((b, _))| b);
        if let Some(b) = boot
            && due.is_none_or(|(at, _)| b <= at)
            && arrival.is_none_or(|a| b <= a)
            && next_event.is_none_or(|t| b <= t)
        {
            // A prefill server's scheduler receives a preallocated request (fed below).
            now = b;
        } else if let Some((at, x)) = due
            && arrival.is_none_or(|a| at <= a)
            && next_event.is_none_or(|t| at <= t)
        {
            // A decode server's scheduler receives a request (`DecodePreallocQueue`).
            now = at;
            let (_, (k, pending)) = held[x].pop_front().expect("due");
            decode[k].queue.push_back(pending);
            if decode[k].idle() {
                decode[k].prealloc(now, &mut released);
            }
        } else if let Some(a) = arrival
            && next_event.is_none_or(|t| a <= t)
        {
            let (i, r) = src.next().expect("peeked");
            let i = i as u64;
            check_arrival(i, &r, &mut prev_arrival)?;
            now = a;
            let e = match router.as_mut() {
                Some(router) => {
                    text.set(&r.page_hashes)?;
                    let q = d.borrow();
                    for (e, l) in loads.iter_mut().enumerate() {
                        *l = prefill[e].in_flight() + q.queued(e, ranks) + awaiting[e];
                    }
                    usize::from(router.route_with_loads(&text.text, &loads)?)
                }
                None => 0,
            };
            // sgl-router's room: a random non-negative 63-bit id per request.
            let room = rooms.random::<u64>() >> 1;
            let server_k = (i % servers as u64) as usize;
            assigned[server_k] += 1;
            let k = server_k * ranks
                + crate::runtime::dp::round_robin_rank(dealt[server_k], ranks as u32) as usize;
            dealt[server_k] += 1;
            awaiting[e] += 1;
            tracks.insert(
                i,
                Track {
                    arrival: now,
                    prefill: e,
                    decode: k,
                    room,
                    measured: i >= warmup,
                    prefill_seen: prefill_in[e].deliver(&r),
                    prealloc: 0,
                    prefill_end: 0,
                    transfer_end: 0,
                },
            );
            // The `max_new_tokens` the client sent (the admission reserves for it) and
            // the tokens it makes (a longer trace output stops at it).
            let max_new_tokens = max_new.unwrap_or(r.output_tokens);
            let at = decode_in[server_k].deliver(&r);
            held[server_k].push_back((
                at,
                (
                    k,
                    Pending {
                        index: i,
                        input: r.input_tokens,
                        output: r.output_tokens.min(max_new_tokens),
                        max_new: max_new_tokens,
                        decode_prefix: 0,
                        restored: 0,
                        req: r,
                    },
                ),
            ));
        } else {
            let Some(t) = next_event else { break };
            now = t;
            last = last.max(t);
            for x in &mut decode {
                if x.next_time() == Some(t) {
                    x.handle(t, &mut released, &mut events);
                }
            }
            for ev in events.drain(..) {
                let tr = tracks.get_mut(&ev.index).expect("tracked");
                match ev.kind {
                    DecodeEventKind::FirstToken => {
                        if tr.measured {
                            ttft.push((t - tr.arrival) as f64 / 1e9);
                            phases.prealloc += u128::from(tr.prealloc - tr.arrival);
                            phases.prefill += u128::from(tr.prefill_end - tr.prealloc);
                            phases.transfer += u128::from(tr.transfer_end - tr.prefill_end);
                            phases.first_wait += u128::from(t - tr.transfer_end);
                            phases.n += 1;
                        }
                    }
                    DecodeEventKind::Finished {
                        since_first,
                        output,
                    } => {
                        if tr.measured && output > 1 {
                            tpot.0 += since_first as f64 / 1e9 / f64::from(output - 1);
                            tpot.1 += 1;
                        }
                        tracks.remove(&ev.index);
                    }
                }
            }
            for p in &mut prefill {
                if p.next_time() == Some(t) {
                    p.advance(t)?;
                    for s in p.sims() {
                        outbox.extend(s.pd().as_mut().expect("a prefill server").sent.drain(..));
                    }
                }
            }
            for (index, end, transfer_end) in outbox.drain(..) {
                let tr = tracks.get_mut(&index).expect("tracked");
                tr.prefill_end = end;
                tr.transfer_end = transfer_end;
                decode[tr.decode]
                    .arrivals
                    .push(Reverse((transfer_end, index)));
            }
        }
        // Preallocated requests leave the bootstrap queue of their prefill server (the
        // decode side's page indices are in) once that server's scheduler has them too:
        // until then they wait here, the earliest first.
        for p in released.drain(..) {
            let tr = tracks.get_mut(&p.index).expect("tracked");
            tr.prealloc = now;
            if tr.measured {
                phases.prompt += u64::from(p.input);
                phases.decode_prefix += p.decode_prefix;
                phases.decode_host_prefix += p.restored;
            }
            bootstrapped.push(Reverse((now.max(tr.prefill_seen), p.index)));
            ready.insert(p.index, p);
        }
        // Each goes to the rank its server's controller picks.
        while let Some(&Reverse((at, index))) = bootstrapped.peek()
            && at <= now
        {
            bootstrapped.pop();
            let p = ready.remove(&index).expect("bootstrapped");
            let tr = &tracks[&index];
            let e = tr.prefill;
            awaiting[e] -= 1;
            sent[e] += 1;
            let k = prefill[e].rank_for(now, p.input, tr.room);
            // Its prefill server's own clock starts here (its TTFT, its order).
            let mut req = p.req;
            req.arrival_ns = now;
            d.borrow_mut().queues[e * ranks + k].push_back(Fed {
                index,
                req,
                seen: Some(now),
            });
            let sim = &mut prefill[e].sims()[k];
            if p.decode_prefix > 0 {
                sim.pd()
                    .as_mut()
                    .expect("a prefill server")
                    .decode_prefix
                    .insert(index, p.decode_prefix);
            }
            sim.feed()?;
        }
    }
    if let Some((k, p)) = decode
        .iter()
        .enumerate()
        .find_map(|(k, x)| x.queue.front().map(|p| (k, p)))
    {
        return Err(ReplayError::InvalidConfig {
            field: "pd",
            message: format!(
                "request {} ({} prompt tokens, {} to generate) never fits decode server {}'s pool of {} tokens with nothing else on it (the admission needs the prompt's pages + {} and prompt + min(max_new_tokens, {CLIP_MAX_NEW_TOKENS})): SGLang would hold it in the preallocation queue for ever",
                p.index,
                p.input,
                p.output,
                k / ranks,
                server.pool_tokens,
                decode[k].reserved,
            ),
        }
        .into());
    }
    // The prefill servers' figures (hits, their own TTFT), then the client's.
    let ends: Vec<_> = prefill
        .into_iter()
        .zip(&sent)
        .map(|(p, &k)| {
            let mut end = p.finish();
            end.m.requests = k;
            end
        })
        .collect();
    let mut m = if n > 1 {
        let mut m = super::merge_ranks(ends);
        m.engines = std::mem::take(&mut m.ranks);
        m
    } else {
        ends.into_iter().next().expect("one engine").figures().0
    };
    let prefill_ttft_p50_s = m.ttft_p50_s;
    m.ttft_p50_s = None;
    m.ttft_p90_s = None;
    m.ttft_p99_s = None;
    super::set_time_figures(&mut m, &mut ttft, &super::TtftSums::default(), tpot, last);
    m.ttft_breakdown = None;
    let mean = |x: u128| {
        if phases.n == 0 {
            0.0
        } else {
            x as f64 / phases.n as f64 / 1e9
        }
    };
    let (steps, batch_sum, peak, overflow) = decode.iter().fold((0, 0, 0, 0), |a, x| {
        (
            a.0 + x.steps,
            a.1 + x.batch_sum,
            a.2.max(x.peak),
            a.3 + x.overflow_steps,
        )
    });
    let restore_failed = decode.iter().map(|x| x.restore_failed).sum();
    let backup_pages = decode
        .iter()
        .filter_map(|x| x.links.as_ref())
        .map(|l| l.backup_pages)
        .sum();
    m.pd = Some(PdFigures {
        prefill_engines: n as u32,
        decode_engines: servers as u32,
        dp_ranks: ranks as u32,
        decode: Some(server),
        transfer_bandwidth: pd.transfer_bandwidth.0,
        prealloc_wait_mean_s: mean(phases.prealloc),
        prefill_mean_s: mean(phases.prefill),
        transfer_mean_s: mean(phases.transfer),
        first_token_wait_mean_s: mean(phases.first_wait),
        prefill_ttft_p50_s,
        decode_steps: steps,
        decode_batch_mean: if steps == 0 {
            0.0
        } else {
            batch_sum as f64 / steps as f64
        },
        decode_peak_tokens: peak,
        decode_overflow_steps: overflow,
        decode_assigned: assigned,
        decode_radix_cache: pd.decode_radix_cache,
        decode_prompt_tokens: phases.prompt,
        decode_prefix_tokens: phases.decode_prefix,
        decode_hicache: pd.decode_hicache_on,
        decode_host_prefix_tokens: phases.decode_host_prefix,
        decode_restore_failed: restore_failed,
        decode_backup_pages: backup_pages,
    });
    let figures = router.map(|r| {
        let mut f = r.figures();
        f.clock_loads = true;
        f
    });
    Ok((m, figures))
}

/// A request routed to a decode server and not yet preallocated.
struct Pending {
    index: u64,
    input: u32,
    /// The tokens it makes.
    output: u32,
    /// Its `max_new_tokens`.
    max_new: u32,
    /// The prefix its decode server holds, tokens (set at its preallocation).
    decode_prefix: u64,
    /// Of it, the tokens restored from the decode server's host tier.
    restored: u64,
    req: Request,
}

/// A request on a decode server: preallocated, transferred or decoding.
#[derive(Debug, Clone, Copy)]
struct Dec {
    index: u64,
    input: u32,
    output: u32,
    max_new: u32,
    /// Decode tokens made (a speculative draft's mean acceptance is not whole).
    made: f64,
    /// KV tokens it holds (whole pages).
    alloc: u64,
    first_token: Nanos,
    /// When its host-tier restore's copy ends (0: none): it runs after both that and
    /// its transfer.
    ready: Nanos,
}

impl Dec {
    /// `len(origin_input_ids) + len(output_ids)`: the prompt, the prefill's token and
    /// the decoded ones.
    fn len(&self) -> u64 {
        u64::from(self.input) + 1 + self.made.floor() as u64
    }
}

#[derive(Debug, Clone, Copy)]
enum DecodeEventKind {
    FirstToken,
    Finished { since_first: Nanos, output: u32 },
}

#[derive(Debug, Clone, Copy)]
struct DecodeEvent {
    index: u64,
    kind: DecodeEventKind,
}

/// What a request holds in its decode server's radix cache, from its preallocation to
/// its finish.
struct Held {
    /// Its prompt's whole pages.
    pages: Vec<crate::cache::PageKey>,
    /// The matched prefix's node, locked.
    lock: crate::cache::NodeId,
    /// The matched prefix, pages.
    prefix_pages: u64,
    /// Pages allocated to it and not in the tree (its prompt after the prefix until it
    /// joins the running batch, its partial last page, its decode's growth).
    pages_held: u64,
    /// Pages its decode's growth did not get (a pool SGLang would retract in).
    owed: u64,
}

/// A decode rank's copies between its device and its HiCache host tier: a restore's
/// load-back (`init_load_back`, H2D, layer by layer as the prefill side's load-back:
/// the link's time or the release's copy kernel's, [`crate::runtime::config::Links::load_back_ns`])
/// and the backups' write (`start_writing`, D2H), each on its own link, one run per node.
struct HostLinks {
    h2d: Link,
    d2h: Link,
    /// The scenario's links (the decode node is the prefill node's model).
    links: crate::runtime::config::Links,
    /// Bytes a page moves (the rank's share of a page's KV).
    page_bytes: u64,
    layers: u64,
    /// Backups in flight: (their copy's end, sequence), and their records.
    acks: BinaryHeap<Reverse<(Nanos, u64)>>,
    records: BTreeMap<u64, Vec<BackupRecord>>,
    seq: u64,
    /// Pages backed up to host.
    backup_pages: u64,
}

impl HostLinks {
    fn new(cfg: &ReplayConfig, bytes_per_token: u64, page_size: u32) -> Self {
        HostLinks {
            h2d: Link::default(),
            d2h: Link::default(),
            links: cfg.links.clone(),
            page_bytes: bytes_per_token * u64::from(page_size),
            layers: u64::from(cfg.capacities.num_layers.max(1)),
            acks: BinaryHeap::new(),
            records: BTreeMap::new(),
            seq: 0,
            backup_pages: 0,
        }
    }

    /// A restore of `pages` pages over `nodes` nodes issued at `now`: its copy's end.
    fn restore(&mut self, now: Nanos, pages: u64, nodes: u64) -> Nanos {
        let d = self
            .links
            .load_back_ns(pages * self.page_bytes, nodes * self.layers);
        self.h2d.transfer(now, d)
    }

    /// `records`' backups put on the D2H link at `now` as one op.
    fn backup(&mut self, now: Nanos, records: Vec<BackupRecord>) {
        let pages: u64 = records.iter().map(|r| r.pages).sum();
        self.backup_pages += pages;
        let d = self
            .links
            .backup_ns(pages * self.page_bytes, records.len() as u64);
        let end = self.d2h.transfer(now, d);
        self.seq += 1;
        self.acks.push(Reverse((end, self.seq)));
        self.records.insert(self.seq, records);
    }

    fn next_ack(&self) -> Option<Nanos> {
        self.acks.peek().map(|Reverse((t, _))| *t)
    }
}

/// One decode server (`--disaggregation-mode decode`), its radix cache off (SGLang's
/// default) or on (`timed::decode_cache`), with or without HiCache behind it.
struct DecodeEngine {
    server: DecodeServer,
    /// Its radix cache, which then owns the pool's pages.
    cache: Option<Box<dyn DecodeCache>>,
    /// Its HiCache host tier's links (with a radix cache on a host tier).
    links: Option<HostLinks>,
    /// Which requests its restores hold back (the release's).
    gate: crate::release::DecodeRestoreGate,
    /// Restores whose load-back failed (no device room, or under `load_back_threshold`:
    /// SGLang fails the request; here the prefill server sent those pages).
    restore_failed: u64,
    /// Each request's share of the radix cache, by trace position.
    held: BTreeMap<u64, Held>,
    /// The pages the running requests' growth did not get, summed: not room.
    owed: u64,
    /// `--num-reserved-decode-tokens`.
    reserved: u64,
    cost: CostModel,
    /// Tokens one decode iteration makes per request.
    per_step: f64,
    queue: VecDeque<Pending>,
    /// Preallocated, their KV in transfer (`transfer_queue`).
    in_transfer: BTreeMap<u64, Dec>,
    /// Transfers' ends: (time, trace position).
    arrivals: BinaryHeap<Reverse<(Nanos, u64)>>,
    /// Transferred, waiting for room in the running batch (`waiting_queue`).
    waiting: VecDeque<Dec>,
    running: Vec<Dec>,
    /// The requests the last step finished: freed, but still in `running_batch.reqs`
    /// at the next preallocation (`update_running_batch` filters them after it).
    just_finished: Vec<Dec>,
    /// KV tokens allocated.
    used: u64,
    step_end: Option<Nanos>,
    steps: u64,
    batch_sum: u64,
    peak: u64,
    overflow_steps: u64,
}

impl DecodeEngine {
    fn new(
        server: DecodeServer,
        reserved: u64,
        cost: CostModel,
        cache: Option<Box<dyn DecodeCache>>,
        links: Option<HostLinks>,
        gate: crate::release::DecodeRestoreGate,
    ) -> Self {
        let per_step = cost.tokens_per_iteration();
        DecodeEngine {
            server,
            cache,
            links,
            gate,
            restore_failed: 0,
            held: BTreeMap::new(),
            owed: 0,
            reserved,
            cost,
            per_step,
            queue: VecDeque::new(),
            in_transfer: BTreeMap::new(),
            arrivals: BinaryHeap::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            just_finished: Vec::new(),
            used: 0,
            step_end: None,
            steps: 0,
            batch_sum: 0,
            peak: 0,
            overflow_steps: 0,
        }
    }

    fn next_time(&self) -> Option<Nanos> {
        let arrival = self.arrivals.peek().map(|Reverse((t, _))| *t);
        let ack = self.links.as_ref().and_then(HostLinks::next_ack);
        [self.step_end, arrival, ack].into_iter().flatten().min()
    }

    /// The backups the tree made since the last call, on the D2H link.
    fn flush_backups(&mut self, now: Nanos) {
        let (Some(c), Some(l)) = (self.cache.as_mut(), self.links.as_mut()) else {
            return;
        };
        let mut recs = Vec::new();
        c.take_backups(&mut recs);
        if !recs.is_empty() {
            l.backup(now, recs);
        }
    }

    /// No decode step running: its loop iterates at once.
    fn idle(&self) -> bool {
        self.step_end.is_none()
    }

    fn pages(&self, tokens: u64) -> u64 {
        let ps = u64::from(self.server.page_size.max(1));
        tokens.div_ceil(ps) * ps
    }

    /// KV tokens the requests hold (with a radix cache, their locked prefixes counted
    /// once).
    fn in_use(&self) -> u64 {
        match &self.cache {
            Some(c) => c.in_use() * u64::from(self.server.page_size.max(1)),
            None => self.used,
        }
    }

    /// Request slots in use: running, in transfer and transferred (a finished request's
    /// slot is already free).
    fn slots_used(&self) -> usize {
        self.running.len() + self.in_transfer.len() + self.waiting.len()
    }

    /// `pop_preallocated`: FIFO, stopping at the first request without a request slot, a
    /// metadata buffer or room. `_active_req_count` reads `running_batch.reqs`, the
    /// requests the last step finished included. With a radix cache the prompt is
    /// matched and its prefix locked first (`_match_prefix_and_lock`), only the pages
    /// after it are allocated and needed, the tree's evictable pages count as free, and
    /// a request that does not fit gives its lock back.
    fn prealloc(&mut self, now: Nanos, out: &mut Vec<Pending>) {
        let in_batch = || self.running.iter().chain(&self.just_finished);
        let retractable: i64 = in_batch().map(|d| d.len() as i64).sum();
        let clip = |max_new: u32| u64::from(max_new).min(CLIP_MAX_NEW_TOKENS) as i64;
        // `_need_space_for_single_req`.
        let single = in_batch()
            .map(|d| clip(d.max_new) + i64::from(d.input) - retractable)
            .max()
            .unwrap_or(0);
        let finished = self.just_finished.len();
        // `req_to_metadata_buffer_idx_allocator`: 2 × the request pool's
        // `max_running_requests` buffers, each held from the preallocation to
        // `pop_transferred`.
        let buffers = 2 * self.server.max_running_requests as usize;
        while let Some(p) = self.queue.front() {
            if self.in_transfer.len() >= buffers
                || self.slots_used() >= self.server.req_slots as usize
            {
                break;
            }
            let ps = u64::from(self.server.page_size.max(1));
            let whole = self.pages(u64::from(p.input));
            // The device prefix (`l1_prefix_len`), and with HiCache the host pages after
            // it (`l2_host_hit_length`).
            let (prefix, host, lock) = match self.cache.as_mut() {
                Some(c) => {
                    let m = c.match_lock(&p.req.page_hashes);
                    let prefix = (m.device * ps).min(whole);
                    (prefix, (m.host * ps).min(whole - prefix), m.lock)
                }
                None => (0, 0, crate::cache::ROOT),
            };
            let free = match &self.cache {
                Some(c) => (c.room().saturating_sub(self.owed) * ps) as i64,
                None => self.server.pool_tokens.saturating_sub(self.used) as i64,
            };
            let active = (self.slots_used() + finished) as u64;
            let allocatable = free - ((self.reserved * active) as i64).max(single);
            // `_required_alloc_tokens`: the prompt's pages after the prefix.
            let alloc = whole - prefix;
            let admission = ((alloc + self.reserved) as i64)
                .max(i64::from(p.input) - prefix as i64 + clip(p.max_new) - retractable);
            if admission > allocatable {
                if let Some(c) = self.cache.as_mut() {
                    c.unlock(lock);
                }
                break;
            }
            let mut p = self.queue.pop_front().expect("front");
            p.decode_prefix = prefix;
            let mut ready = 0;
            if let Some(c) = self.cache.as_mut() {
                // `_pre_alloc`: room for the pages after the device prefix, those after
                // the whole prefix taken (`delta_len`); the host span's come with its
                // restore, issued by the transfer queue in the same loop iteration.
                let take = (alloc - host) / ps;
                let mut pages_held = c.alloc_prealloc(alloc / ps, take);
                let mut owed = take - pages_held;
                let mut lock = lock;
                if host > 0 {
                    let end = (prefix + host) / ps;
                    let r = c.restore(&p.req.page_hashes[..end as usize], lock);
                    if r.pages > 0 {
                        lock = r.lock;
                        p.restored = r.pages * ps;
                        p.decode_prefix += p.restored;
                        let l = self.links.as_mut().expect("a host tier has links");
                        ready = l.restore(now, r.pages, r.nodes);
                    } else {
                        // No device room, or a host span under `load_back_threshold`:
                        // SGLang fails the request (`HiCacheRestoreResult.FAILED`); the
                        // replay has the prefill server send those pages instead.
                        self.restore_failed += 1;
                        let got = c.reserve(host / ps);
                        pages_held += got;
                        owed += host / ps - got;
                    }
                }
                if let (Some(l), crate::release::DecodeRestoreGate::LatestCopy) =
                    (self.links.as_ref(), self.gate)
                {
                    // 0.5.23 binds every pending request to the newest load event:
                    // it runs after the copies in flight when it is queued.
                    ready = ready.max(l.h2d.busy_until);
                }
                if owed > 0 {
                    self.overflow_steps += 1;
                    self.owed += owed;
                }
                self.held.insert(
                    p.index,
                    Held {
                        pages: p.req.page_hashes.clone(),
                        lock,
                        prefix_pages: p.decode_prefix / ps,
                        pages_held,
                        owed,
                    },
                );
            }
            self.used += whole;
            self.peak = self.peak.max(self.in_use());
            self.in_transfer.insert(
                p.index,
                Dec {
                    index: p.index,
                    input: p.input,
                    output: p.output,
                    max_new: p.max_new,
                    made: 0.0,
                    alloc: whole,
                    first_token: 0,
                    ready,
                },
            );
            out.push(p);
        }
        self.flush_backups(now);
    }

    /// Its events due at `t`: transfers ending, the step ending; then, with the GPU
    /// free, one loop iteration.
    fn handle(&mut self, t: Nanos, out: &mut Vec<Pending>, events: &mut Vec<DecodeEvent>) {
        // Backups whose copy ended: `writing_check` unpins their nodes.
        if let (Some(c), Some(l)) = (self.cache.as_mut(), self.links.as_mut()) {
            while let Some(&Reverse((at, seq))) = l.acks.peek()
                && at == t
            {
                l.acks.pop();
                for r in l.records.remove(&seq).expect("in flight") {
                    c.backup_acked(&r);
                }
            }
        }
        while let Some(&Reverse((at, index))) = self.arrivals.peek()
            && at == t
        {
            self.arrivals.pop();
            let d = self.in_transfer.get(&index).expect("preallocated");
            if d.ready > t {
                // Transferred, its restore still copying.
                self.arrivals.push(Reverse((d.ready, index)));
                continue;
            }
            let d = self.in_transfer.remove(&index).expect("preallocated");
            self.waiting.push_back(d);
        }
        if self.step_end == Some(t) {
            self.step_done(t, events);
        }
        if self.step_end.is_none() {
            self.iterate(t, out, events);
        }
        self.flush_backups(t);
    }

    /// One loop iteration with the GPU free (`event_loop_*_disagg_decode`):
    /// `process_decode_queue` (preallocation, the transferred requests), the prebuilt
    /// batch (`_get_new_prebuilt_batch`: the transferred requests the running batch has
    /// room for under `max_running_requests`) whose first tokens it streams, then the
    /// decode step of every running request.
    fn iterate(&mut self, now: Nanos, out: &mut Vec<Pending>, events: &mut Vec<DecodeEvent>) {
        self.prealloc(now, out);
        let room = (self.server.max_running_requests as usize)
            .saturating_sub(self.running.len() + self.just_finished.len());
        let mut freed = !self.just_finished.is_empty();
        self.just_finished.clear();
        for _ in 0..room.min(self.waiting.len()) {
            let mut d = self.waiting.pop_front().expect("counted");
            self.checkpoint(d.index);
            d.first_token = now;
            events.push(DecodeEvent {
                index: d.index,
                kind: DecodeEventKind::FirstToken,
            });
            if d.output <= 1 {
                self.finish(d, now, events);
                freed = true;
            } else {
                self.running.push(d);
            }
        }
        if self.running.is_empty() {
            if freed {
                // Nothing to run: the loop's next iteration comes at once, with the
                // finished requests filtered out, and the freed KV may admit more.
                self.prealloc(now, out);
            }
            return;
        }
        let batch = self.running.len() as u64;
        let ctx = self.running.iter().map(Dec::len).sum::<u64>() / batch;
        self.step_end = Some(now + self.cost.decode_iteration_ns(batch, ctx));
        self.steps += 1;
        self.batch_sum += batch;
    }

    /// A decode step ended: each running request's tokens and its KV grown to its pages
    /// (a pool outgrown is a step SGLang would have retracted in), then the finished
    /// ones freed.
    fn step_done(&mut self, now: Nanos, events: &mut Vec<DecodeEvent>) {
        self.step_end = None;
        let ps = u64::from(self.server.page_size.max(1));
        let mut short = false;
        if let Some(c) = self.cache.as_mut() {
            // A page per running request, asked of the tree before the step's
            // allocation (`alloc_paged_token_slots_decode`).
            c.make_step_room(self.running.len() as u64);
        }
        for d in &mut self.running {
            d.made = (d.made + self.per_step).min(f64::from(d.output - 1));
            let kv = u64::from(d.input) + d.made.floor() as u64;
            let alloc = kv.div_ceil(ps) * ps;
            let grow = alloc.saturating_sub(d.alloc);
            self.used += grow;
            d.alloc = d.alloc.max(alloc);
            if let (Some(c), true) = (self.cache.as_mut(), grow > 0) {
                let got = c.reserve(grow / ps);
                let h = self.held.get_mut(&d.index).expect("held");
                h.pages_held += got;
                if got < grow / ps {
                    short = true;
                    h.owed += grow / ps - got;
                    self.owed += grow / ps - got;
                }
            }
        }
        self.peak = self.peak.max(self.in_use());
        let over = match self.cache {
            Some(_) => short,
            None => self.used > self.server.pool_tokens,
        };
        if over {
            self.overflow_steps += 1;
        }
        let mut i = 0;
        while i < self.running.len() {
            if self.running[i].made >= f64::from(self.running[i].output - 1) {
                let d = self.running.remove(i);
                self.finish(d, now, events);
                self.just_finished.push(d);
            } else {
                i += 1;
            }
        }
    }

    /// With a radix cache, a request joining the running batch: its prompt's whole pages
    /// go into the tree (`process_prebuilt` → `checkpoint_kv_cache`), its lock onto
    /// their deepest node.
    fn checkpoint(&mut self, index: u64) {
        let (Some(c), Some(h)) = (self.cache.as_mut(), self.held.get_mut(&index)) else {
            return;
        };
        let own = (h.pages.len() as u64)
            .saturating_sub(h.prefix_pages)
            .min(h.pages_held);
        h.lock = c.checkpoint(&h.pages[..(h.prefix_pages + own) as usize], own, h.lock);
        h.prefix_pages += own;
        h.pages_held -= own;
    }

    /// A request finished: its KV freed, or with a radix cache its lock on the tree
    /// given back (`release_kv_cache`; its output, which SGLang inserts, is freed here)
    /// and the rest freed.
    fn finish(&mut self, d: Dec, now: Nanos, events: &mut Vec<DecodeEvent>) {
        self.used -= d.alloc;
        if let Some(c) = self.cache.as_mut() {
            let h = self.held.remove(&d.index).expect("held");
            c.unlock(h.lock);
            c.free(h.pages_held);
            self.owed -= h.owed;
        }
        events.push(DecodeEvent {
            index: d.index,
            kind: DecodeEventKind::Finished {
                since_first: now - d.first_token,
                output: d.output,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::PdSend;

    /// A transfer sends every page of the full-attention pools and, of the SWA pools,
    /// the pages the window covers (the window's pages + 1, at most the prompt's).
    #[test]
    fn a_transfer_sends_the_windows_swa_pages() {
        let pd = PdSend {
            full_bytes_per_token: 100,
            swa_bytes_per_token: 10,
            window: 128,
            ..PdSend::default()
        };
        // 1,000 tokens: 16 pages of 64; SWA: tokens 872..1000 on pages 13..15 (3).
        assert_eq!(pd.bytes(1000, 0, 64), 16 * 64 * 100 + 3 * 64 * 10);
        // 1,024 tokens: the window 896..1024 on 2 whole pages.
        assert_eq!(pd.bytes(1024, 0, 64), 16 * 64 * 100 + 2 * 64 * 10);
        // Request state, unless the prompt is a whole number of 128-token blocks.
        let state = PdSend {
            full_bytes_per_token: 100,
            state_bytes: 7,
            state_period: 128,
            ..PdSend::default()
        };
        assert_eq!(state.bytes(1000, 0, 64), 16 * 64 * 100 + 7);
        assert_eq!(state.bytes(1024, 0, 64), 16 * 64 * 100);
        // 100 tokens: 2 pages, both in the window.
        assert_eq!(pd.bytes(100, 0, 64), 2 * 64 * 100 + 2 * 64 * 10);
        // No SWA pool: the full pages only.
        let full = PdSend {
            full_bytes_per_token: 100,
            ..PdSend::default()
        };
        assert_eq!(full.bytes(1000, 0, 64), 16 * 64 * 100);
        // A decode server holding the first 640 tokens (10 pages): the 6 pages after
        // them; the window's 3 SWA pages are all after the prefix.
        assert_eq!(pd.bytes(1000, 640, 64), 6 * 64 * 100 + 3 * 64 * 10);
        // Holding 960 (15 pages): one page of each, none of the prefix's SWA pages.
        assert_eq!(pd.bytes(1000, 960, 64), 64 * 100 + 64 * 10);
        // The whole prompt held (1,024 tokens, 16 whole pages): nothing is sent.
        assert_eq!(pd.bytes(1024, 1024, 64), 0);
    }

    /// A sliding-window model's chunked prefill (the SWA tree's prefill server, as
    /// `_send_kv_chunk` does for any model): the chunks' full-attention pages go after
    /// their forwards as above (to 960 at 1 ms, to 1,984 at 2 ms), and the last send
    /// carries the rest of them with the window's SWA pages (`_swa_payload`: tokens
    /// 2,372..2,500 on pages 37..39, 3 × 64 × 10 B): 57,600 + 1,920 B after 3 ms.
    #[test]
    fn a_sliding_window_prompt_sends_its_window_with_the_last_chunk() {
        let mut pd = PdSend {
            bandwidth: 1e9,
            full_bytes_per_token: 100,
            swa_bytes_per_token: 10,
            window: 128,
            forward_ends: vec![1_000_000, 2_000_000, 3_000_000],
            chunk: 1000,
            ..PdSend::default()
        };
        assert_eq!(
            pd.send_prompt(0, 2500, 0, 0, 64, 3_000_000),
            3_000_000 + 57_600 + 1_920
        );
    }

    /// A chunked prefill sends each chunk's whole pages after its forward: 2,500 tokens
    /// in 1,000-token forwards ending at 1, 2 and 3 ms, 100 B a token at 1 GB/s. Pages up
    /// to 960 go at 1 ms (96 µs), up to 1,984 at 2 ms (102.4 µs), the last 8 pages' 51,200
    /// B and the partial page's 6,400 B after the last forward: done at 3.0576 ms, where
    /// the whole prompt after the last forward takes until 3.256 ms. At 0.1 GB/s the
    /// chunks back up: 1.96, 3.024, then 3.6 ms. A decode server holding 1,024 tokens
    /// takes the first chunk's pages itself.
    #[test]
    fn a_chunked_prefill_sends_each_chunk_after_its_forward() {
        let chunked = |bandwidth: f64| PdSend {
            bandwidth,
            full_bytes_per_token: 100,
            forward_ends: vec![1_000_000, 2_000_000, 3_000_000],
            chunk: 1000,
            ..PdSend::default()
        };
        let mut pd = chunked(1e9);
        assert_eq!(pd.send_prompt(0, 2500, 0, 0, 64, 3_000_000), 3_057_600);
        let mut whole = PdSend {
            bandwidth: 1e9,
            full_bytes_per_token: 100,
            ..PdSend::default()
        };
        assert_eq!(whole.send_prompt(0, 2500, 0, 0, 64, 3_000_000), 3_256_000);
        let mut slow = chunked(1e8);
        assert_eq!(slow.send_prompt(0, 2500, 0, 0, 64, 3_000_000), 3_600_000);
        let mut held = chunked(1e9);
        held.decode_prefix.insert(7, 1024);
        assert_eq!(held.send_prompt(7, 2500, 0, 0, 64, 3_000_000), 3_057_600);
        assert_eq!(held.link.busy_until, 3_057_600);
        // A request whose new tokens start at 1,500 among the batch's (the boundary at
        // 2,000 falls 500 into them) over 200 cached: pages to 640 at 2 ms, the other
        // 9 pages' 57,600 B after the last forward.
        let mut second = chunked(1e9);
        assert_eq!(
            second.send_prompt(0, 1200, 200, 1500, 64, 3_000_000),
            3_057_600
        );
        assert_eq!(second.link.busy_until, 3_057_600);
        // A prompt whose first 1,984 tokens are on the prefill server's device, in a
        // batch of one forward ending at 1 ms that loads nothing back: the cached
        // prefix (198,400 B) goes when the forward starts, at 0.5 ms; the rest (57,600 B)
        // after it: 1.0576 ms, where all of it after the forward ends at 1.256 ms.
        let one = |early: bool| {
            let mut pd = PdSend {
                bandwidth: 1e9,
                full_bytes_per_token: 100,
                forward_ends: vec![1_000_000],
                chunk: 1000,
                ..PdSend::default()
            };
            if early {
                pd.send_cached_prefix(0, 500_000, 1984, 64);
            }
            pd.send_prompt(0, 2500, 1984, 0, 64, 1_000_000)
        };
        assert_eq!(one(true), 1_057_600);
        assert_eq!(one(false), 1_256_000);
        // Two such requests in one batch: both early sends go at the forward's start,
        // ahead of either one's last send (198,400 B each from 0.5 ms: 0.6984 and
        // 0.8968 ms), then the two rests after the forward: 1.0576 and 1.1152 ms.
        let mut two = PdSend {
            bandwidth: 1e9,
            full_bytes_per_token: 100,
            forward_ends: vec![1_000_000],
            chunk: 1000,
            ..PdSend::default()
        };
        two.send_cached_prefix(0, 500_000, 1984, 64);
        two.send_cached_prefix(1, 500_000, 1984, 64);
        assert_eq!(two.link.busy_until, 896_800);
        assert_eq!(two.send_prompt(0, 2500, 1984, 0, 64, 1_000_000), 1_057_600);
        assert_eq!(
            two.send_prompt(1, 2500, 1984, 516, 64, 1_000_000),
            1_115_200
        );
    }

    /// At the fixed speeds a batch is one forward (no chunking): its one end is the
    /// batch's forward, so the whole prompt goes after it.
    #[test]
    fn a_fixed_speed_batch_is_one_forward() {
        use crate::runtime::cost::CostModel;
        let fixed = CostModel::Fixed {
            prefill_tokens_per_s: 20_000.0,
            decode_tokens_per_s: 50.0,
        };
        let mut ends = Vec::new();
        assert_eq!(
            fixed.prefill_forward_ends(&[(2000, 0)], Some(&mut ends)),
            100_000_000
        );
        assert_eq!(ends, [100_000_000]);
    }
}
