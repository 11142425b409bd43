//! `Timing::On` with the SWA tree as the device tier (DeepSeek-V4's paged SWA pool,
//! sliding-window models): the requests of [`crate::runtime::swa_req`] overlapping on
//! one clock, as 0.5.23's scheduler runs them with `UnifiedRadixCache`'s SWA component.
//!
//! - **Arrival**: after the TokenizerManager (`runtime::frontend`), into a FIFO queue.
//! - **Scheduling** (`get_new_batch_prefill`, the GPU free): the queue's head is
//!   admitted while the running requests stay under `max_running_requests` and the
//!   batch's new tokens under `max_prefill_tokens` (one chunk with chunking; the first
//!   request always goes). Admission is [`swa_admit_prefill`]'s: the match of `input −
//!   1` tokens with the SWA validator, the lock, `alloc_paged_token_slots_extend`
//!   against both pools, each chunk's checkpoint (a chunked request's chunks run back
//!   to back). A request the pools cannot hold waits while others run; with nothing
//!   running it is SGLang's "Prefill out of memory" and the replay stops there.
//! - **Prefill** takes the cost model's forward (`CostModel::prefill_ns`) of the
//!   batch's `(new, cached)` shapes; TTFT = its end − the client's send.
//! - **Decode** runs beside the prefill (`decode_timeline: beside_prefill`): the
//!   prefill-to-decode checkpoint, then the decode's pages as [`swa_decode`] takes
//!   them (the out-of-window frees included) at once, held until the decode ends
//!   `CostModel::decode_ns(output − 1, running, input + 1)` later (with a speculative
//!   draft, `output − 1 ÷ accept_length` iterations), then `release_kv_cache`.
//!   SGLang takes a decode's pages a step at a time, admits a prefill only while the
//!   running requests' future decode tokens (`max_new_tokens` left × `new_token_ratio`)
//!   still fit, and retracts requests when a step does not fit: none of the three is
//!   modelled (a decode that does not fit stops the replay with "Decode out of
//!   memory"), which [`TIMED_SWA_UNMODELLED`] says in every answer. The waiting queue's
//!   prefix touch (`_touch_waiting_prefixes`, every 32nd `calc_priority` call) is taken
//!   on every 32nd admission attempt of this scheduler (one request at a time: the
//!   timing-off replay's once per 32 requests). A request whose chunks did not all fit
//!   frees what the tree does not hold and retries later, its hit the first attempt's.
//!
//! No host tier, no L3 (the SWA tree is the device tier alone). DP-attention ranks run
//! in `timed::lockstep` and engines behind a router in `timed::fleet`, this replay's
//! [`Sim`] one of their ranks or engines.

use std::collections::VecDeque;

use crate::cache::{PageKey, SwaRadixTree, SwaTreeConfig, Unified0523};
use crate::engine::EventQueue;
use crate::units::Nanos;
use crate::workload::Request;

use super::super::ReplayError;
use super::super::config::ReplayConfig;
use super::super::cost::CostModel;
use super::super::metrics::ReplayMetrics;
use super::super::session::{Hits, Session};
use super::super::swa_req::{SwaReq, swa_admit_prefill, swa_checkpoint, swa_decode, swa_release};
use super::{RequestTime, RunEnd, TtftSums, add_tpot};

/// What the timed replay with the SWA tree leaves out: a reason every such answer
/// carries.
pub const TIMED_SWA_UNMODELLED: &str = "the timed replay with the SWA tree takes a request's decode KV when its decode starts (all its output pages at once, the out-of-window frees included) and holds it to the decode's end, where SGLang takes a page per step; decode retraction is not modelled, nor admission's reserve for the running requests' future decode tokens (`PrefillAdder`'s `new_token_ratio` budget), and the decode runs beside the prefill (decode_timeline: beside_prefill): device occupancy during decode, admission and TPOT under memory pressure may be off";

#[derive(Debug, Clone, Copy)]
enum Ev {
    Arrival,
    BatchDone(u32),
    DecodeDone(u32),
}

#[derive(Debug)]
struct Waiting {
    index: u64,
    arrival: Nanos,
    seen: Nanos,
    input_tokens: u32,
    output_tokens: u32,
    pages: Vec<PageKey>,
    /// The device hit of an earlier admission attempt that did not fit: the retry's
    /// match also finds the chunks that attempt checkpointed, which are its own work,
    /// not a hit.
    first_hit: Option<u64>,
}

/// An admitted request, from its batch to its release.
struct Running {
    w: Waiting,
    /// Its row in the tree; `None` once released (a request ending at its prefill).
    req: Option<SwaReq>,
    cached: u64,
}

struct Batch {
    reqs: Vec<Running>,
    formed: Nanos,
    forward: Nanos,
    /// How long its forward waited for the other DP-attention ranks' (lockstep).
    dp_wait: Nanos,
}

pub(super) struct Sim<I: Iterator<Item = super::rank::Fed>> {
    cfg: ReplayConfig,
    t: SwaRadixTree,
    /// Hit counters and metrics; its own (full-attention) tree stays empty.
    s: Session<Unified0523>,
    q: EventQueue<Ev>,
    src: I,
    next: Option<(u64, Request)>,
    prev_arrival: Nanos,
    tokenizer_free: Nanos,
    waiting: VecDeque<Waiting>,
    running: u32,
    gpu_busy: bool,
    batches: Vec<Option<Batch>>,
    free_batches: Vec<u32>,
    decoding: Vec<Option<Running>>,
    free_decoding: Vec<u32>,
    cost: CostModel,
    chunk: u64,
    /// Requests decode their output in the tree (`SwaPool::decode`; not on a PD
    /// prefill server).
    decode_in_tree: bool,
    ttft: Vec<f64>,
    sums: TtftSums,
    tpot: (f64, u64),
    times: Option<Vec<RequestTime>>,
    last_event: Nanos,
    /// A DP-attention rank (`timed::lockstep`): the forward it forms waits in `pending`
    /// until every rank's is known.
    lockstep: bool,
    pending: Option<(Nanos, Ev)>,
    /// The running requests' prompt tokens (the load a snapshot reports).
    running_tokens: u64,
    /// The last load this rank published, for the DP controller's load-reading methods.
    snapshot: Option<crate::runtime::dp::LoadSnapshot>,
    /// Requests read (a lockstep rank's count).
    pulled: u64,
    /// Admission attempts (`calc_priority` calls: the waiting-prefix touch's count).
    attempts: u64,
    /// A PD prefill server (`timed::pd`): its transfers.
    pub(super) pd: Option<super::PdSend>,
}

/// Replays `requests` on the SWA tree with the clock (see the module's notes).
pub(crate) fn run<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
    times: bool,
) -> Result<(ReplayMetrics, Vec<RequestTime>), ReplayError> {
    let src = requests
        .into_iter()
        .enumerate()
        .map(|(i, r)| super::rank::Fed::own(i as u64, r));
    let mut sim = Sim::new(cfg, src, times, false)?;
    sim.pull()?;
    while let Some(ev) = sim.q.pop() {
        sim.last_event = sim.q.now();
        sim.handle(ev.event)?;
        sim.schedule()?;
    }
    Ok(sim.finish().figures())
}

impl<I: Iterator<Item = super::rank::Fed>> Sim<I> {
    /// A replay of `src` (requests with their trace positions); `lockstep`: a
    /// DP-attention rank of `timed::lockstep`.
    pub(super) fn new(
        cfg: &ReplayConfig,
        src: I,
        times: bool,
        lockstep: bool,
    ) -> Result<Self, ReplayError> {
        let pool = cfg.capacities.swa.expect("an SWA pool");
        let chunk = u64::from(cfg.scheduler.compute.chunked_prefill_size);
        super::super::swa_req::check_chunk(chunk, cfg.capacities.page_size)?;
        let cost = super::cost_model(cfg)?;
        Ok(Sim {
            cfg: cfg.clone(),
            t: SwaRadixTree::new(SwaTreeConfig {
                full_pages: cfg.capacities.l1_pages,
                swa_pages: pool.pages,
                page_size: cfg.capacities.page_size,
                window: pool.window,
            }),
            s: Session::<Unified0523>::new(cfg),
            q: EventQueue::new(),
            src,
            next: None,
            prev_arrival: 0,
            tokenizer_free: 0,
            waiting: VecDeque::new(),
            running: 0,
            gpu_busy: false,
            batches: Vec::new(),
            free_batches: Vec::new(),
            decoding: Vec::new(),
            free_decoding: Vec::new(),
            cost,
            chunk,
            decode_in_tree: pool.decode,
            ttft: Vec::new(),
            sums: TtftSums::new(cfg),
            tpot: (0.0, 0),
            times: times.then(Vec::new),
            last_event: 0,
            lockstep,
            pending: None,
            running_tokens: 0,
            snapshot: None,
            pulled: 0,
            attempts: 0,
            pd: None,
        })
    }

    /// Handles one event (the caller then lets the scheduler run).
    fn handle(&mut self, ev: Ev) -> Result<(), ReplayError> {
        match ev {
            Ev::Arrival => self.arrival(),
            Ev::BatchDone(b) => self.batch_done(b),
            Ev::DecodeDone(d) => {
                self.decode_done(d);
                Ok(())
            }
        }
    }

    /// Starts the formed prefill batch ending at `done`, or in lockstep keeps it for
    /// [`Sim::commit_step`].
    fn gpu_start(&mut self, done: Nanos, ev: Ev) {
        self.gpu_busy = true;
        if self.lockstep {
            self.pending = Some((done, ev));
        } else {
            self.q.schedule_at(done, ev);
        }
    }

    /// `Scheduler.publish_load_snapshot` (0.5.23), as the full tree's replay publishes
    /// it (`timed::Sim::publish`): running + waiting requests, and the running prompts'
    /// plus the waiting prompts' tokens.
    fn publish(&mut self, now: Nanos) {
        let waiting: u64 = self.waiting.iter().map(|w| u64::from(w.input_tokens)).sum();
        self.snapshot = Some(crate::runtime::dp::LoadSnapshot {
            at: now,
            requests: u64::from(self.running) + self.waiting.len() as u64,
            tokens: self.running_tokens + waiting,
        });
    }

    /// Reads the next request and schedules its arrival (streaming).
    fn pull(&mut self) -> Result<(), ReplayError> {
        self.next = None;
        if let Some(super::rank::Fed {
            index: i,
            req: r,
            seen,
        }) = self.src.next()
        {
            self.pulled += 1;
            let at = super::scheduler_sees(
                &self.cfg,
                i,
                &r,
                seen,
                &mut self.prev_arrival,
                &mut self.tokenizer_free,
            )?;
            self.q.schedule_at(at, Ev::Arrival);
            self.next = Some((i, r));
        }
        Ok(())
    }

    fn arrival(&mut self) -> Result<(), ReplayError> {
        let (index, req) = self.next.take().expect("arrival without a request");
        let max_new = self
            .cfg
            .scheduler
            .max_new_tokens
            .unwrap_or(req.output_tokens);
        self.waiting.push_back(Waiting {
            index,
            arrival: req.arrival_ns,
            seen: self.q.now(),
            input_tokens: req.input_tokens,
            output_tokens: req.output_tokens.min(max_new).max(1),
            pages: req.page_hashes,
            first_hit: None,
        });
        self.pull()
    }

    /// With the GPU free, forms and starts one prefill batch from the queue's head.
    fn schedule(&mut self) -> Result<(), ReplayError> {
        if self.gpu_busy || self.waiting.is_empty() {
            return Ok(());
        }
        let now = self.q.now();
        let ps = u64::from(self.cfg.capacities.page_size);
        let max_run = self.cfg.scheduler.max_running_requests;
        let max_tok = self
            .cost
            .batch_token_budget(u64::from(self.cfg.scheduler.max_prefill_tokens));
        let waiting_touch = self.cfg.policy.eviction_policy == crate::cache::EvictionPolicy::Lru;
        let mut reqs: Vec<Running> = Vec::new();
        let mut shapes: Vec<(u64, u64)> = Vec::new();
        let mut tokens = 0u64;
        while let Some(w) = self.waiting.front() {
            if self.running + reqs.len() as u32 >= max_run {
                break;
            }
            let input = u64::from(w.input_tokens);
            if !reqs.is_empty() {
                // Would it fit the token budget? (Estimate from a match of what
                // admission matches.)
                let max_prefix = (input.saturating_sub(1) / ps).min(w.pages.len() as u64);
                let m = self.t.match_prefix(&w.pages[..max_prefix as usize]);
                if tokens + input.saturating_sub(m.device_pages * ps) > max_tok {
                    break;
                }
            }
            let mut w = self.waiting.pop_front().expect("a head");
            // One `calc_priority` call per admission attempt of this scheduler.
            let touch = waiting_touch
                && self
                    .attempts
                    .is_multiple_of(super::super::untimed::WAITING_PREFIX_REFRESH_INTERVAL);
            self.attempts += 1;
            let r = match swa_admit_prefill(
                &mut self.t,
                &w.pages,
                w.input_tokens,
                w.index,
                touch,
                self.chunk,
            ) {
                Ok(r) => r,
                Err(hit) => {
                    if reqs.is_empty() && self.running == 0 {
                        return Err(ReplayError::InvalidConfig {
                            field: "swa",
                            message: format!(
                                "request #{} ({} input tokens) does not fit the pools after eviction with nothing running ({} full and {} SWA pages free): SGLang raises \"Prefill out of memory\"",
                                w.index,
                                w.input_tokens,
                                self.t.full_free(),
                                self.t.swa_free()
                            ),
                        });
                    }
                    // It waits for a running request's release.
                    w.first_hit.get_or_insert(hit);
                    self.waiting.push_front(w);
                    break;
                }
            };
            let device = r.m.device_pages;
            let hit = w.first_hit.unwrap_or(device).min(device);
            self.s.record(
                w.index,
                w.input_tokens,
                w.pages.len() as u64,
                Hits {
                    device: hit,
                    ..Hits::default()
                },
            );
            let cached = (device * ps).min(input);
            let new = input - cached;
            tokens += new;
            shapes.push((new, cached));
            reqs.push(Running {
                w,
                req: Some(r),
                cached,
            });
        }
        if reqs.is_empty() {
            return Ok(());
        }
        // A PD prefill server sends each chunk's pages after its forward.
        let forward = super::prefill_forward(&self.cost, self.pd.as_mut(), &shapes);
        self.running += reqs.len() as u32;
        self.running_tokens += reqs
            .iter()
            .map(|a| u64::from(a.w.input_tokens))
            .sum::<u64>();
        let batch = Batch {
            reqs,
            formed: now,
            forward,
            dp_wait: 0,
        };
        let id = super::put_slot(&mut self.batches, &mut self.free_batches, batch);
        self.gpu_start(now + forward, Ev::BatchDone(id));
        Ok(())
    }

    /// A prefill batch ended: each request's first token, its prefill-to-decode
    /// checkpoint and decode pages, and its decode beside the prefill (or its release
    /// when it ends at its prefill).
    fn batch_done(&mut self, b: u32) -> Result<(), ReplayError> {
        let now = self.q.now();
        let batch = self.batches[b as usize].take().expect("batch exists");
        self.free_batches.push(b);
        self.gpu_busy = false;
        let warmup = self.cfg.measurement.warmup_requests;
        if let Some(pd) = self.pd.as_mut() {
            // Every request's device-cached prefix went when the forward started, ahead
            // of the chunks' sends (`maybe_send_cached_prefix_chunk`; the SWA tree loads
            // nothing back).
            let ps = u64::from(self.cfg.capacities.page_size);
            for a in &batch.reqs {
                pd.send_cached_prefix(a.w.index, batch.formed, a.cached, ps);
            }
        }
        // Where each request's new tokens start among the batch's (its chunks').
        let mut offset = 0;
        for mut a in batch.reqs {
            let input = u64::from(a.w.input_tokens);
            let out = u64::from(a.w.output_tokens);
            let measured = a.w.index >= warmup;
            if measured {
                self.ttft.push((now - a.w.arrival) as f64 / 1e9);
                self.sums.add_parts(
                    a.w.arrival,
                    a.w.seen,
                    batch.formed,
                    0,
                    batch.formed,
                    batch.forward,
                    batch.dp_wait,
                    now,
                );
            }
            let mut r = a.req.take().expect("an admitted row");
            if let Some(pd) = self.pd.as_mut() {
                // A PD prefill server (`prefill.py: checkpoint_disagg_prefill` →
                // `checkpoint_kv_cache`): the prompt into the tree, the row and its lock
                // held until the transfer ends (`process_disagg_prefill_inflight_queue`
                // releases it on success).
                swa_checkpoint(&mut self.t, &a.w.pages, a.w.index, input, &mut r);
                a.req = Some(r);
                // Of the pages the decode server lacks, after the early send: each
                // chunk's full-attention pages after its forward, and with the last the
                // rest, the window's SWA pages and the request's state
                // (`_send_kv_chunk(last_chunk=True)`: `_swa_payload`).
                let end = pd.send_prompt(
                    a.w.index,
                    input,
                    a.cached,
                    offset,
                    u64::from(self.cfg.capacities.page_size),
                    now,
                );
                offset += input - a.cached;
                if let Some(t) = self.times.as_mut() {
                    t.push(RequestTime {
                        index: a.w.index,
                        arrival_ns: a.w.arrival,
                        first_token_ns: now,
                        finish_ns: end,
                        input_tokens: a.w.input_tokens,
                        output_tokens: a.w.output_tokens,
                        cached_tokens: a.cached,
                    });
                }
                let slot = super::put_slot(&mut self.decoding, &mut self.free_decoding, a);
                self.q.schedule_at(end, Ev::DecodeDone(slot));
                continue;
            }
            if self.decode_in_tree && out > 1 {
                swa_checkpoint(&mut self.t, &a.w.pages, a.w.index, input, &mut r);
                if !swa_decode(&mut self.t, &mut r, input, out) {
                    return Err(ReplayError::InvalidConfig {
                        field: "swa",
                        message: format!(
                            "request #{} ({} input, {} output tokens): its decode's pages do not fit the pools beside the {} other running requests ({} full and {} SWA pages free): SGLang would retract requests (`retract_decode`), which the timed replay with the SWA tree does not model",
                            a.w.index,
                            a.w.input_tokens,
                            a.w.output_tokens,
                            self.running - 1,
                            self.t.full_free(),
                            self.t.swa_free()
                        ),
                    });
                }
                a.req = Some(r);
            } else {
                // It ends at its prefill in the tree (`max_new_tokens` 1, or a PD
                // prefill server's request, which still decodes on the clock).
                swa_release(&mut self.t, &a.w.pages, a.w.index, input, r);
            }
            let decode = self
                .cost
                .decode_ns(out - 1, u64::from(self.running), input + 1);
            if measured {
                add_tpot(&mut self.tpot, decode, a.w.output_tokens);
            }
            if let Some(t) = self.times.as_mut() {
                t.push(RequestTime {
                    index: a.w.index,
                    arrival_ns: a.w.arrival,
                    first_token_ns: now,
                    finish_ns: now + decode,
                    input_tokens: a.w.input_tokens,
                    output_tokens: a.w.output_tokens,
                    cached_tokens: a.cached,
                });
            }
            let slot = super::put_slot(&mut self.decoding, &mut self.free_decoding, a);
            self.q.schedule_at(now + decode, Ev::DecodeDone(slot));
        }
        if self.cfg.measurement.debug_checks {
            self.t.check();
        }
        if self.lockstep {
            // A prefill's result always publishes (`force=forward_mode.is_extend()`).
            self.publish(now);
        }
        Ok(())
    }

    /// A decode ended: `release_kv_cache(checkpoint=True)` at `input + output − 1`
    /// committed tokens; its running slot frees.
    fn decode_done(&mut self, d: u32) {
        let a = self.decoding[d as usize].take().expect("decoding request");
        self.free_decoding.push(d);
        if let Some(r) = a.req {
            let committed = u64::from(a.w.input_tokens) + u64::from(a.w.output_tokens) - 1;
            swa_release(&mut self.t, &a.w.pages, a.w.index, committed, r);
        }
        self.running_tokens -= u64::from(a.w.input_tokens);
        crate::workload::recycle_pages(a.w.pages);
        self.running -= 1;
    }

    /// The replay's end: the session's metrics and what the time figures need.
    pub(super) fn finish(self) -> RunEnd {
        if self.cfg.measurement.debug_checks {
            // Every request released: the pools hold the tree's pages only.
            assert_eq!(
                self.t.tree_pages(),
                (self.t.full_used(), self.t.swa_used()),
                "pages held past every release"
            );
        }
        let st = self.t.stats;
        let mut m = self.s.finish();
        if self.lockstep {
            // Its requests carry trace positions, which the session's count would
            // read as the trace's.
            m.requests = self.pulled;
        }
        m.device_evicted_pages = st.full_evicted_pages;
        m.final_device_pages = self.t.full_used();
        RunEnd {
            m,
            ttft: self.ttft,
            sums: self.sums,
            tpot: self.tpot,
            times: self.times.unwrap_or_default(),
            end: self.last_event,
        }
    }
}

impl<I: Iterator<Item = super::rank::Fed>> super::rank::Rank for Sim<I> {
    fn next_time(&self) -> Option<Nanos> {
        self.q.peek_time()
    }

    fn handle_due(&mut self, t: Nanos) -> Result<(), ReplayError> {
        while self.q.peek_time() == Some(t) {
            let ev = self.q.pop().expect("peeked");
            self.last_event = t;
            self.handle(ev.event)?;
        }
        Ok(())
    }

    /// Its decode runs beside the prefill: only a prefill batch is formed.
    fn form(&mut self, t: Nanos, _hold_decode: bool) -> Result<(), ReplayError> {
        self.q.advance_to(t);
        self.last_event = self.last_event.max(t);
        self.schedule()
    }

    fn unhold_and_decode(&mut self, _decode: bool) {}

    fn pending_end(&self) -> Option<Nanos> {
        self.pending.map(|(done, _)| done)
    }

    fn commit_step(&mut self, step_end: Nanos) {
        let Some((done, ev)) = self.pending.take() else {
            return;
        };
        if let Ev::BatchDone(b) = ev
            && let Some(batch) = self.batches[b as usize].as_mut()
        {
            batch.dp_wait = step_end - done;
        }
        self.q.schedule_at(step_end, ev);
    }

    /// As `timed::Sim::publish_when_idle`: idle, at once; with requests but nothing to
    /// run, at most every 50 ms.
    fn publish_when_idle(&mut self, now: Nanos) {
        let idle = self.running == 0 && self.waiting.is_empty();
        let stale = self
            .snapshot
            .is_none_or(|s| now.saturating_sub(s.at) >= super::LOAD_STALL_REFRESH_NS);
        if idle || stale {
            self.publish(now);
        }
    }

    fn snapshot(&self) -> Option<crate::runtime::dp::LoadSnapshot> {
        self.snapshot
    }

    fn in_flight(&self) -> u32 {
        self.running + self.waiting.len() as u32 + u32::from(self.next.is_some())
    }

    fn feed(&mut self) -> Result<(), ReplayError> {
        if self.next.is_none() {
            self.pull()?;
        }
        Ok(())
    }

    fn pull(&mut self) -> Result<(), ReplayError> {
        Sim::pull(self)
    }

    fn finish(self) -> RunEnd {
        Sim::finish(self)
    }

    fn store_to_share(&self) -> Option<crate::runtime::l3_store::StoreHandle> {
        self.s.store_to_share()
    }

    fn share_store(&mut self, store: crate::runtime::l3_store::StoreHandle) {
        self.s.share_store(store)
    }
}
