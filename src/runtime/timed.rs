//! `Timing::On`: a discrete-event replay. The replay owns virtual time; the tree is
//! only told what happens.
//!
//! Model (documented simplifications of SGLang's scheduler):
//! - **Tokenization** (`runtime::frontend`): a text request reaches the scheduler
//!   after the TokenizerManager's encode (`tokenize_per_token` × its prompt, one
//!   request at a time; 0, the default, for token ids). TTFT runs from the send.
//! - **Arrival** (`scheduler._add_request_to_queue` → `_prefetch_kvcache`): match the
//!   prefix; with storage, issue an L3 prefetch of the missing span when it is at least
//!   `max(prefetch_threshold, page_size)` tokens and `prefetch_tokens_occupied <
//!   prefetch_capacity_limit`. The existence query is instant; the hit pages get host
//!   slots at once (SGLang allocates them a scheduler tick later) and stream from
//!   storage on the storage-read link, arriving linearly over the transfer.
//! - **Scheduling** (one prefill batch at a time, FIFO with skips like
//!   `get_new_batch_prefill`): a waiting request whose prefetch may not terminate yet
//!   (`can_terminate_prefetch`: best_effort / wait_complete / timeout) is skipped; on
//!   termination the arrived pages are inserted as host-only nodes. Then `match_prefix`,
//!   `load_back` of the host hit (H2D on the H2D link), device allocation of the
//!   rest. A batch holds at most `max_prefill_tokens` new tokens (one request always
//!   fits) and the engine runs at most `max_running_requests`. A request the device
//!   cannot hold waits while requests run (the batch is then full, `batch_is_full`:
//!   until one of them leaves) or, with nothing running, while a write-through backup
//!   still pins device pages until its ack; only when nothing will free pages is it
//!   cached as far as it fits.
//! - **Prefill** takes `H2D time + new tokens / prefill_tokens_per_s` (the SGLang
//!   simulator's non-overlap clock), or with `compute: {source: table | roofline}` the
//!   forward's cost from `runtime::cost` with the load-back layer-pipelined; an opt-in
//!   `compute.hit_cost_per_cached_token` (not an SGLang rule, default 0) delays the
//!   batch's start by that much per cached token. At its end the request's pages are inserted
//!   (`cache_unfinished_req`), write-through backups go onto the D2H link and stay
//!   pinned until their ack; after the ack an L3 backup goes onto the storage-write
//!   link with the node's host copy pinned until the storage ack. TTFT = end of
//!   prefill − arrival.
//! - **Decode**: the prefill makes the first output token
//!   (`managers/scheduler_components/batch_result_processor.py:
//!   process_batch_result_prefill` appends it to `req.output_ids`, 0.5.23);
//!   the other `output − 1` come from decode steps. The request keeps running (its
//!   prefix locked) for `(output − 1) × step` beside the prefill timeline (`decode_timeline: beside_prefill`,
//!   the default: decode does not block prefill), or with `decode_timeline:
//!   interleaved` one decode step of every decoding request at a time on the prefill's
//!   GPU whenever no prefill batch forms. Output tokens are not inserted into the tree.
//! - **Decode KV** (`decode_memory: sglang`, the default; `timed::kv_budget`): a
//!   decoding request takes a device page whenever its KV crosses a page boundary and
//!   frees them at its finish; admission is `PrefillAdder`'s budget (the free and
//!   evictable pool minus the running requests' `max_new_tokens` left × the
//!   `new_token_ratio`, minus each admitted request's `max_new_tokens`); a decode step
//!   whose pages do not fit retracts requests (`retract_decode`), which go back to the
//!   queue and prefill their prompt and outputs again (their TTFT is their first
//!   token's, streamed before; their TPOT carries the redo). `prompt_only` is the
//!   replay before it.

mod decode_cache;
pub(crate) mod fleet;
pub(crate) mod kv_budget;
pub(crate) mod lockstep;
mod lpm;
pub(crate) mod pd;
mod rank;
mod swa;

pub use swa::TIMED_SWA_UNMODELLED;

use std::collections::VecDeque;

use crate::cache::{BackupRecord, HostMemoryMode, NodeId, PageKey, PrefetchPolicy};
use crate::engine::EventQueue;
use crate::release::{PrefetchTimeoutClock, PrefetchTimeoutTokens, step_sync};
use crate::units::Nanos;
use crate::workload::Request;

use super::ReplayError;
use super::config::{DecodeMemory, DecodeTimeline, ReplayConfig};
use super::cost::{CostModel, layer_pipelined_end};
use super::metrics::ReplayMetrics;
use super::prefetch::Admission;
use super::session::{Hits, Session};
use super::transfer::{Link, run_time_ns, storage_time_ns};
use crate::cache::{HiRadix, TreeKind, TreeRules, Unified0523, V1};
use kv_budget::{NewTokenRatio, RETRACT_DECODE_STEPS, pages_for};

#[derive(Debug, Clone, Copy)]
enum Ev {
    Arrival,
    Tick,
    BatchDone(u32),
    Finish {
        last: NodeId,
        /// Its prompt tokens (the running requests' load).
        tokens: u32,
        /// Its trace position.
        index: u64,
    },
    D2hAck(u32),
    StorageAck {
        node: NodeId,
    },
    /// An L3 write ended: its pages (`writes`, this slot) are in the store from now on,
    /// for every reader of it.
    StorageWritten(u32),
    /// One decode step of every decoding request ended (`decode_timeline: interleaved`).
    DecodeStep,
    /// A request's decode beside the prefill ended (`decode_memory: sglang`): the
    /// request's trace position and its retraction count (a retracted request's
    /// earlier end is stale).
    DecodeDone {
        index: u64,
        retractions: u32,
    },
    /// A PD prefill server's KV transfer of the request at this trace position ended
    /// (`timed::pd`): its KV is released.
    TransferDone {
        index: u64,
    },
}

/// A PD prefill server's sending side (`timed::pd`): each request's KV goes out on
/// `link` after its prefill and stays held until the transfer ends.
#[derive(Debug, Default)]
pub(crate) struct PdSend {
    pub link: Link,
    /// Bytes/s one rank's transfer reaches.
    pub bandwidth: f64,
    /// Fixed cost of one request's transfer, ns.
    pub latency: Nanos,
    /// Requests whose transfer was queued since the driver last looked: the trace
    /// position, the end of its prefill and the end of its transfer.
    pub sent: Vec<(u64, Nanos, Nanos)>,
    /// Requests waiting for their transfer to end (`decode_memory: sglang`): the
    /// disaggregated prefill's inflight queue, holding their KV.
    inflight: Vec<Decoding>,
    /// Bytes per token of the pools every prompt token's KV is in, sent whole.
    pub full_bytes_per_token: u64,
    /// A sliding-window model's SWA pools, bytes per token: only the window's pages of
    /// them are sent (the rest of a prompt's SWA KV is out of the window).
    pub swa_bytes_per_token: u64,
    /// The window, tokens (0: no SWA pool).
    pub window: u64,
    /// Request-scoped state a transfer sends besides the pages (DeepSeek-V4's C128
    /// compress state), unless the prompt is a whole number of `state_period` tokens.
    pub state_bytes: u64,
    pub state_period: u64,
    /// The prefix each request's decode server already holds (`decode_prefix_len`,
    /// tokens, whole pages; `timed::decode_cache`), by trace position: not sent.
    pub decode_prefix: std::collections::BTreeMap<u64, u64>,
    /// The batch on the GPU: each forward's end from the forward's start (ns), and the
    /// new tokens a forward takes (0: one forward).
    forward_ends: Vec<Nanos>,
    chunk: u64,
    /// Where each request's early send of its device-cached prefix ended, tokens, by
    /// trace position ([`PdSend::send_cached_prefix`]), until its other sends.
    early: std::collections::BTreeMap<u64, u64>,
}

impl PdSend {
    /// The bytes a prompt of `input` tokens sends when its decode server holds its first
    /// `prefix` tokens (whole pages; 0 without a decode radix cache)
    /// (`disaggregation/prefill.py: send_kv_chunk` from `start_send_idx`,
    /// `_num_pages_to_send` and `_request_state_payload`, 0.5.23): the pages of the
    /// per-token pools after the prefix, of the SWA pools only the pages holding its last
    /// `window` tokens and none of the prefix's
    /// (`ceil(L / P) − floor(max(prefix, L − W) / P)`), and the request-scoped state.
    pub(crate) fn bytes(&self, input: u64, prefix: u64, page_size: u64) -> u64 {
        let ps = page_size.max(1);
        let pages = input.div_ceil(ps);
        let skipped = (prefix / ps).min(pages);
        let full = self.full_bytes_per_token;
        let swa_pages = if self.window == 0 {
            0
        } else {
            pages - (input.saturating_sub(self.window).max(prefix) / ps).min(pages)
        };
        let state = if self.state_period > 0 && !input.is_multiple_of(self.state_period) {
            self.state_bytes
        } else {
            0
        };
        (pages - skipped) * ps * full + swa_pages * ps * self.swa_bytes_per_token + state
    }

    /// Queues a transfer of `bytes` at `now` (a prefill's end) for the request at trace
    /// position `index`: its end (the link's time, then the fixed latency, which does not
    /// hold the link).
    pub(crate) fn send(&mut self, index: u64, bytes: u64, now: Nanos) -> Nanos {
        let end = self.link.transfer(now, self.link_ns(bytes)) + self.latency;
        self.sent.push((index, now, end));
        end
    }

    /// `maybe_send_cached_prefix_chunk` (0.5.23, `SGLANG_DISAGG_PREFILL_EARLY_SEND_CACHED_PREFIX`
    /// on by default): before a batch's forward (`run_batch`, every request of the batch
    /// in turn, ahead of any chunk's send) the request at trace position `index` sends
    /// its device-cached prefix (`device` tokens, whole pages) after its decode server's,
    /// at `at`, the forward's start; not in a batch that loads back from the host.
    pub(crate) fn send_cached_prefix(
        &mut self,
        index: u64,
        at: Nanos,
        device: u64,
        page_size: u64,
    ) {
        let ps = page_size.max(1);
        let prefix = self.decode_prefix.get(&index).copied().unwrap_or(0);
        let device = device / ps * ps;
        if device > prefix {
            let dur = self.link_ns((device - prefix) * self.full_bytes_per_token);
            self.link.transfer(at, dur);
            self.early.insert(index, device);
        }
    }

    /// The batch's forward (`cost.prefill_ns`), its chunks' ends kept for
    /// [`Self::send_prompt`].
    fn forwards(&mut self, cost: &CostModel, shapes: &[(u64, u64)]) -> Nanos {
        self.forward_ends.clear();
        self.chunk = cost.chunk_tokens();
        cost.prefill_forward_ends(shapes, Some(&mut self.forward_ends))
    }

    fn link_ns(&self, bytes: u64) -> Nanos {
        (bytes as f64 / self.bandwidth * 1e9).round() as Nanos
    }

    /// Sends the KV of the prompt of `input` tokens at trace position `index`, its first
    /// `cached` cached on the prefill server and its new tokens starting at `offset`
    /// among its batch's, whose forward ended at `end` (`forward_ends` its forwards'):
    /// each chunk's whole pages after that chunk's forward (`prefill.py: send_kv_chunk`
    /// with `last_chunk=False`: from `start_send_idx` to the page-floored end of what is
    /// computed), the rest with the SWA window and the request state after the last
    /// (`last_chunk=True`), none of the decode server's prefix nor what its early send
    /// ([`Self::send_cached_prefix`]) took. Returns the last transfer's end.
    ///
    /// Under DP attention `end` is the lockstep step's end, so the step's wait for the
    /// other ranks falls before the first chunk's send (SGLang syncs each chunk's
    /// forward: its chunk ends lie between the rank's own and these).
    pub(crate) fn send_prompt(
        &mut self,
        index: u64,
        input: u64,
        cached: u64,
        offset: u64,
        page_size: u64,
        end: Nanos,
    ) -> Nanos {
        let ps = page_size.max(1);
        let prefix = self.decode_prefix.remove(&index).unwrap_or(0);
        let new = input.saturating_sub(cached);
        let forward = self.forward_ends.last().copied().unwrap_or(0);
        let mut start = self.early.remove(&index).unwrap_or(prefix);
        if self.chunk > 0 {
            for k in 0..self.forward_ends.len() {
                let boundary = (k as u64 + 1) * self.chunk;
                if boundary <= offset {
                    continue;
                }
                if boundary >= offset + new {
                    break;
                }
                let end_idx = (cached + boundary - offset) / ps * ps;
                if end_idx > start {
                    let at = end - (forward - self.forward_ends[k]);
                    let dur = self.link_ns((end_idx - start) * self.full_bytes_per_token);
                    self.link.transfer(at, dur);
                    start = end_idx;
                }
            }
        }
        let rest = self.bytes(input, prefix, ps) - (start - prefix) * self.full_bytes_per_token;
        self.send(index, rest, end)
    }
}

/// A prefill batch's forward (`runtime::cost`): on a PD prefill server, with each
/// chunk's end kept for its sends (`send_kv_chunk`).
pub(super) fn prefill_forward(
    cost: &CostModel,
    pd: Option<&mut PdSend>,
    shapes: &[(u64, u64)],
) -> Nanos {
    match pd {
        Some(pd) => pd.forwards(cost, shapes),
        None => cost.prefill_ns(shapes),
    }
}

/// A request in its decode phase on the GPU timeline (`decode_timeline: interleaved`).
#[derive(Debug)]
struct Decoding {
    /// Tokens still to decode.
    remaining: u32,
    /// Its context now (prompt + decoded tokens).
    ctx: u64,
    /// The fraction of a token carried to the next iteration (a speculative draft's
    /// mean acceptance is not whole; 0 without one).
    carry: f64,
    last: NodeId,
    /// Its entry in `times`, when kept.
    time: Option<usize>,
    /// Its first token (the end of its prefill), for its TPOT.
    first_token: Nanos,
    output_tokens: u32,
    /// Counted in the metrics (after the warm-up).
    measured: bool,
    // What `decode_memory: sglang` reads (`kv_budget`).
    index: u64,
    arrival: Nanos,
    input_tokens: u32,
    /// Its `max_new_tokens`.
    max_new: u32,
    /// Its prompt's whole pages (in the tree, locked by it).
    prompt_pages: u64,
    /// Device pages it owns beyond them (its partial prompt page, its outputs' KV).
    held: u64,
    pages: Vec<PageKey>,
    /// Times it was retracted.
    retractions: u32,
    /// Admission order (`running_batch.reqs` order: ties of the retraction sort).
    seq: u64,
    /// Beside the prefill: its decode started at `start` with `start_out` output tokens,
    /// one more every `step` ns.
    start: Nanos,
    start_out: u32,
    step: f64,
}

#[derive(Debug)]
struct Prefetch {
    anchor: NodeId,
    span_start: usize,
    /// Pages with host slots (cache mode) or staged (buffer_only).
    pages: u64,
    span_tokens: u64,
    charged: u64,
    issued: Nanos,
    start: Nanos,
    end: Nanos,
    /// The first admission poll that found it unfinished (0.5.23 `PollTimer`).
    first_poll: Option<Nanos>,
    /// A poll let it end: SGLang's `check_prefetch_progress` terminated it then (the
    /// request left `ongoing_prefetch`), so later polls, while the request still waits
    /// for the batch's token budget, make no all-reduce.
    ended: bool,
}

/// What `_prefetch_kvcache` did for a request.
enum Issue {
    Issued(Prefetch),
    /// Nothing to fetch: no storage, an anchor without a host copy, a span under the
    /// threshold.
    Declined,
    /// Looked up but nothing kept: rate-limited, a hit under the threshold, no host
    /// room — `storage_prefetch_retries.poll_miss` (0.5.20+ re-queries it later).
    Missed,
}

/// A pending L3 re-query (`mem_cache/storage_prefetch.py: _StoragePrefetchRetry`, the
/// non-immediate kind): due `poll_interval` scheduler iterations after it is first
/// seen.
#[derive(Debug, Clone, Copy)]
struct Retry {
    due_step: Option<u64>,
}

#[derive(Debug)]
struct Waiting {
    index: u64,
    /// The client's send (TTFT runs from it); the scheduler saw it at the arrival event,
    /// after the TokenizerManager.
    arrival: Nanos,
    /// When the scheduler saw it (after the TokenizerManager).
    seen: Nanos,
    input_tokens: u32,
    output_tokens: u32,
    pages: Vec<PageKey>,
    prefetch: Option<Prefetch>,
    retry: Option<Retry>,
    /// `req.storage_prefetch_retry_attempts`.
    attempts: u32,
    /// Host pages an admission attempt loaded back before the device turned out too
    /// full for the rest (it then waited): already on the device, their copy is
    /// charged, and they count as host hits, when the request is admitted
    /// (SGLang's `PrefillAdder` checks the room before any load-back).
    preloaded: u64,
    /// What an earlier attempt's prefetch termination brought (pages fetched into host,
    /// pages staged), kept for the attempt that admits it.
    carried: (u64, u64),
    /// Its `max_new_tokens` (`kv_budget`).
    max_new: u32,
    /// Output tokens it made before a retraction (`len(output_ids)`, kept), 0 otherwise.
    out: u32,
    /// Times it was retracted: its TTFT and hits were counted at its first prefill.
    retractions: u32,
    /// Its first token (a retracted request's), for its TPOT.
    first_token: Nanos,
    /// Its entry in `times` (a retracted request's).
    time: Option<usize>,
}

#[derive(Debug)]
struct Admitted {
    w: Waiting,
    lock: NodeId,
    reserved: u64,
    upto: u64,
    on_dev: u64,
    staged: u64,
    /// Prompt tokens served from a cache (device, host or storage), SGLang's
    /// `cached_tokens`.
    cached: u64,
    /// Device pages it owns beyond its prompt's whole pages (`kv_budget`).
    held: u64,
    /// Its prefix on the device when admitted, tokens (`prefix_len − host_hit_length`).
    device_prefix: u64,
}

/// A prefill batch in flight: its requests and its clock, for the TTFT breakdown.
#[derive(Debug)]
struct Batch {
    reqs: Vec<Admitted>,
    /// When the scheduler formed it.
    formed: Nanos,
    /// HiCache's per-step synchronisation of its iterations (one per forward), charged
    /// from `formed`, before the opt-in hit cost.
    sync: Nanos,
    /// When its load-back and forward could start (after the opt-in hit cost).
    start: Nanos,
    /// Its forward's duration.
    forward: Nanos,
    /// How long its forward waited for the other DP-attention ranks' (lockstep).
    dp_wait: Nanos,
    /// It loads KV back from the host (`hicache_consumer_index >= 0`).
    loads_back: bool,
    /// It ran in more than one forward (a chunked prefill).
    chunked: bool,
}

/// Sums over the measured requests of where their TTFT went, in ns
/// ([`super::metrics::TtftBreakdown`]).
#[derive(Debug, Default)]
struct TtftSums {
    /// Every request's fixed way through the server (`Frontend::request_overhead`),
    /// part of its `seen − arrival`: counted as its own part, not the encode's.
    fixed: Nanos,
    requests: u64,
    total: u128,
    tokenize: u128,
    request_overhead: u128,
    queue: u128,
    hit_cost: u128,
    hicache_sync: u128,
    load_back: u128,
    forward: u128,
    dp_wait: u128,
}

impl TtftSums {
    /// Sums for a scheduler whose requests each take `cfg`'s fixed way
    /// (`request_overhead`) before it sees them.
    fn new(cfg: &ReplayConfig) -> Self {
        TtftSums {
            fixed: cfg.frontend.request_overhead.0,
            ..TtftSums::default()
        }
    }

    /// Adds one request: `arrival ≤ seen ≤ formed ≤ formed + sync ≤ start ≤ done −
    /// dp_wait`, `forward ≤ done − dp_wait − start`; the eight parts sum to `done −
    /// arrival` exactly.
    fn add(&mut self, w: &Waiting, b: &Batch, done: Nanos) {
        self.add_parts(
            w.arrival, w.seen, b.formed, b.sync, b.start, b.forward, b.dp_wait, done,
        );
    }

    /// [`TtftSums::add`] from the request's and its batch's times.
    #[allow(clippy::too_many_arguments)]
    fn add_parts(
        &mut self,
        arrival: Nanos,
        seen: Nanos,
        formed: Nanos,
        sync: Nanos,
        start: Nanos,
        forward: Nanos,
        dp_wait: Nanos,
        done: Nanos,
    ) {
        // The rank's own forward ended `dp_wait` before the step did.
        let own = done - dp_wait;
        let exposed_load_back = (own - start).saturating_sub(forward);
        self.requests += 1;
        self.total += u128::from(done - arrival);
        let fixed = self.fixed.min(seen - arrival);
        self.request_overhead += u128::from(fixed);
        self.tokenize += u128::from(seen - arrival - fixed);
        self.queue += u128::from(formed - seen);
        self.hicache_sync += u128::from(sync);
        self.hit_cost += u128::from(start - formed - sync);
        self.load_back += u128::from(exposed_load_back);
        self.forward += u128::from((own - start).min(forward));
        self.dp_wait += u128::from(dp_wait);
    }

    /// Adds another rank's sums.
    fn merge(&mut self, o: &TtftSums) {
        self.requests += o.requests;
        self.total += o.total;
        self.tokenize += o.tokenize;
        self.request_overhead += o.request_overhead;
        self.queue += o.queue;
        self.hit_cost += o.hit_cost;
        self.hicache_sync += o.hicache_sync;
        self.load_back += o.load_back;
        self.forward += o.forward;
        self.dp_wait += o.dp_wait;
    }

    fn finish(&self) -> Option<super::metrics::TtftBreakdown> {
        if self.requests == 0 {
            return None;
        }
        let mean = |x: u128| x as f64 / self.requests as f64 / 1e9;
        Some(super::metrics::TtftBreakdown {
            requests: self.requests,
            mean_s: mean(self.total),
            tokenize_s: mean(self.tokenize),
            request_overhead_s: mean(self.request_overhead),
            queue_s: mean(self.queue),
            hit_cost_s: mean(self.hit_cost),
            hicache_sync_s: mean(self.hicache_sync),
            load_back_s: mean(self.load_back),
            forward_s: mean(self.forward),
            dp_wait_s: mean(self.dp_wait),
        })
    }
}

/// `--load-snapshot-publish-interval`'s default (0.5.23 `arg_groups/fields/
/// observability.py`): a rank publishes its load every 15 decode iterations.
const LOAD_SNAPSHOT_PUBLISH_INTERVAL: u32 = 15;

/// `scheduler.py: LOAD_STALL_REFRESH_S` (0.05 s, 0.5.23): a scheduler with requests but
/// no batch to run re-publishes its load that often.
const LOAD_STALL_REFRESH_NS: Nanos = 50_000_000;

/// One request's times and cache use (timed replay), for per-request figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestTime {
    /// Position in the trace.
    pub index: u64,
    pub arrival_ns: Nanos,
    /// End of its prefill (first token).
    pub first_token_ns: Nanos,
    /// End of its decode.
    pub finish_ns: Nanos,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub cached_tokens: u64,
}

struct Sim<I: Iterator<Item = rank::Fed>, R: TreeRules> {
    s: Session<R>,
    q: EventQueue<Ev>,
    /// The requests with their position in the trace.
    src: I,
    next: Option<(u64, Request)>,
    prev_arrival: Nanos,
    /// When the TokenizerManager finishes its current encode (`runtime::frontend`).
    tokenizer_free: Nanos,
    waiting: VecDeque<Waiting>,
    running: u32,
    /// `running_batch.batch_is_full` (`managers/scheduler.py`, 0.5.14–0.5.23): set when
    /// an admission scan stops at the running cap or on `NO_TOKEN` (a request the KV
    /// budget cannot take, with others admitted or running); while set the scheduler
    /// skips the scan (`get_new_batch_prefill` returns at once: no admission, no
    /// prefetch polls) until a running request leaves (a finish or a retraction) or the
    /// running batch is empty. A PD prefill server clears it every iteration
    /// (`disaggregation/prefill.py`: "we never enter update_running_batch"), and so does
    /// a hybrid SWA server (`is_hybrid_swa`), which the SWA replay (`timed::swa`) runs.
    batch_is_full: bool,
    /// `--schedule-policy lpm`'s buffers (`timed::lpm`).
    lpm: lpm::Scratch,
    gpu_busy: bool,
    batches: Vec<Option<Batch>>,
    free_batches: Vec<u32>,
    acks: Vec<Option<Vec<BackupRecord>>>,
    free_acks: Vec<u32>,
    h2d: Link,
    d2h: Link,
    sread: Link,
    swrite: Link,
    ttft: Vec<f64>,
    ttft_sums: TtftSums,
    /// Sum and count of the measured requests' TPOT (2+ output tokens), seconds.
    tpot: (f64, u64),
    cost: CostModel,
    /// HiCache's per-step synchronisation, ns a scheduler iteration
    /// (`ReplayConfig::hicache_step_sync_ns`; 0 without a host tier).
    step_sync: Nanos,
    /// One admission-poll all-reduce of an L3 prefetch, ns
    /// (`ReplayConfig::prefetch_poll_sync_ns`; 0 without an L3 tier or at one rank).
    poll_sync: Nanos,
    /// The poll all-reduces of an iteration that formed no prefill batch (count): its
    /// decode step pays them (`start_decode_step`).
    pub(super) poll_sync_due: u64,
    times: Option<Vec<RequestTime>>,
    recs: Vec<BackupRecord>,
    scratch: Vec<PageKey>,
    /// The pages of the L3 writes in flight, by slot (`Ev::StorageWritten`), and the
    /// free slots (their vectors kept for reuse).
    writes: Vec<Vec<PageKey>>,
    free_writes: Vec<u32>,
    /// Scheduler iterations (`StoragePrefetchRetries._step`).
    step: u64,
    /// Requests with a pending retry.
    pending_retries: usize,
    /// Decoding requests (`decode_timeline: interleaved`).
    decoding: Vec<Decoding>,
    /// A DP-attention rank (`timed::lockstep`): a forward it forms is not scheduled
    /// but kept in `pending` until every rank's is known ([`Sim::commit_step`]).
    lockstep: bool,
    /// The forward formed this step (lockstep): its own end and its completion.
    pending: Option<(Nanos, Ev)>,
    /// The running requests' prompt tokens (the load a snapshot reports).
    running_tokens: u64,
    /// The last load this rank published (`publish_load_snapshot`), for the DP
    /// controller's load-reading methods.
    snapshot: Option<crate::runtime::dp::LoadSnapshot>,
    /// Decode iterations since the last publish.
    decode_publish: u32,
    /// Lockstep with a speculative draft: this step may form a prefill only (its
    /// decode waits for [`Sim::decode_now`] when no rank prefills).
    pub(crate) hold_decode: bool,
    /// The time of the last event this replay handled: its makespan (a lockstep
    /// rank's clock also moves at the steps other ranks start).
    last_event: Nanos,
    /// Requests read: a lockstep rank's count (its requests carry trace positions,
    /// which the session's count, the largest position + 1, would read as the trace's).
    pulled: u64,
    /// `decode_memory: sglang` (`kv_budget`).
    kv: bool,
    /// `new_token_ratio`.
    ratio: NewTokenRatio,
    /// Requests decoding beside the prefill (`decode_memory: sglang`).
    beside: Vec<Decoding>,
    /// Beside the prefill: the decode-step clock the ratio decays by.
    decay_anchor: Nanos,
    /// Admissions so far (`Decoding::seq`).
    admitted: u64,
    /// Scratch for the retraction order and the pages each request needs.
    order: Vec<usize>,
    needs: Vec<u64>,
    /// A PD prefill server (`timed::pd`): its transfers.
    pub(crate) pd: Option<PdSend>,
    /// For a router that tracks each request (Dynamo's KV router): the requests' first
    /// tokens and ends since the driver last drained it; `None`: not kept.
    pub(crate) progress: Option<Vec<(u64, Progress)>>,
}

/// A request's step a router hears of: its first token streamed back, its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    FirstToken,
    Finished,
}

/// What a finished replay leaves for its figures: its metrics before the time figures,
/// the measured TTFTs (s), the TTFT breakdown's sums, the TPOT sum and count, the
/// per-request times and the last event's time.
pub(crate) struct RunEnd {
    pub m: ReplayMetrics,
    pub ttft: Vec<f64>,
    sums: TtftSums,
    pub tpot: (f64, u64),
    pub times: Vec<RequestTime>,
    pub end: Nanos,
}

impl RunEnd {
    /// The time figures of `m` from the rest: TTFT percentiles (nearest rank), the
    /// breakdown, the makespan, the TPOT mean.
    pub fn figures(mut self) -> (ReplayMetrics, Vec<RequestTime>) {
        let mut m = self.m;
        set_time_figures(&mut m, &mut self.ttft, &self.sums, self.tpot, self.end);
        (m, self.times)
    }
}

/// Writes the time figures into `m` (see [`RunEnd::figures`]); sorts `ttft`.
fn set_time_figures(
    m: &mut ReplayMetrics,
    ttft: &mut [f64],
    sums: &TtftSums,
    tpot: (f64, u64),
    end: Nanos,
) {
    if !ttft.is_empty() {
        ttft.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            let i = ((p * ttft.len() as f64).ceil() as usize).clamp(1, ttft.len()) - 1;
            ttft[i]
        };
        m.ttft_p50_s = Some(pct(0.50));
        m.ttft_p90_s = Some(pct(0.90));
        m.ttft_p99_s = Some(pct(0.99));
    }
    m.ttft_breakdown = sums.finish();
    m.makespan_s = Some(end as f64 / 1e9);
    m.tpot_mean_s = (tpot.1 > 0).then(|| tpot.0 / tpot.1 as f64);
}

/// The deployment's time figures from its DP ranks' ends (lockstep ranks share one
/// clock, so the TTFTs pool and the makespan is the last rank's): the ranks' counters
/// merged by [`super::dp::merge`], each rank's own figures kept in `ranks`.
pub(crate) fn merge_ranks(ends: Vec<RunEnd>) -> ReplayMetrics {
    merge_ends(ends).figures().0
}

/// One engine's end from its DP-attention ranks' (one clock): their counters merged by
/// [`super::dp::merge`] (each rank's figures kept in `ranks`), their TTFTs pooled, for
/// a fleet that merges engines in turn.
pub(crate) fn merge_ends(ends: Vec<RunEnd>) -> RunEnd {
    let mut ttft = Vec::new();
    let mut sums = TtftSums::default();
    let (mut tpot, mut end) = ((0.0, 0u64), 0);
    let mut times = Vec::new();
    let mut ranks = Vec::with_capacity(ends.len());
    for e in ends {
        ttft.extend_from_slice(&e.ttft);
        sums.merge(&e.sums);
        tpot = (tpot.0 + e.tpot.0, tpot.1 + e.tpot.1);
        end = end.max(e.end);
        let (m, t) = e.figures();
        times.extend(t);
        ranks.push(m);
    }
    RunEnd {
        m: super::dp::merge(ranks),
        ttft,
        sums,
        tpot,
        times,
        end,
    }
}

pub(crate) fn run<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
) -> Result<ReplayMetrics, ReplayError> {
    Ok(run_detailed(cfg, requests, &[], false)?.0)
}

/// [`run`], with `preload` pages written to L3 before the first arrival (a storage
/// populated by an earlier run) and, with `times`, every request's [`RequestTime`].
pub(crate) fn run_detailed<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
    preload: &[PageKey],
    times: bool,
) -> Result<(ReplayMetrics, Vec<RequestTime>), ReplayError> {
    if cfg.capacities.swa.is_some() {
        if !preload.is_empty() {
            return Err(ReplayError::InvalidConfig {
                field: "swa",
                message: "the SWA tree has no L3 to preload".into(),
            });
        }
        return swa::run(cfg, requests, times);
    }
    // The one place the tree's rule set is chosen (monomorphised below).
    match cfg.policy.tree {
        TreeKind::V1 => run_tree::<V1, _>(cfg, requests, preload, times),
        TreeKind::Unified0523 => run_tree::<Unified0523, _>(cfg, requests, preload, times),
        TreeKind::HiRadix => run_tree::<HiRadix, _>(cfg, requests, preload, times),
    }
}

fn run_tree<R: TreeRules, I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
    preload: &[PageKey],
    times: bool,
) -> Result<(ReplayMetrics, Vec<RequestTime>), ReplayError> {
    let src = requests
        .into_iter()
        .enumerate()
        .map(|(i, r)| rank::Fed::own(i as u64, r));
    let mut sim = Sim::<_, R>::new(cfg, src, times, false)?;
    if !preload.is_empty() {
        sim.s.write_storage(preload);
    }
    sim.pull()?;
    while let Some(ev) = sim.q.pop() {
        sim.handle(ev.event)?;
        sim.schedule();
    }
    Ok(sim.finish().figures())
}

/// The cost model of `cfg`'s compute (a bad `compute` is the config's error).
fn cost_model(cfg: &ReplayConfig) -> Result<CostModel, ReplayError> {
    CostModel::new(
        &cfg.scheduler.compute,
        cfg.scheduler.prefill_tokens_per_s,
        cfg.scheduler.decode_tokens_per_s,
    )
    .map_err(|e| ReplayError::InvalidConfig {
        field: "compute",
        message: e.to_string(),
    })
}

/// Checks request `i` of the trace (its pages, its arrival not before the previous one)
/// and returns when the scheduler sees it: when the driver's front end delivered it
/// (`seen`), else once this scheduler's TokenizerManager has encoded it (at once for
/// token ids) and its fixed way in is done; its TTFT still runs from the client's send.
fn scheduler_sees(
    cfg: &ReplayConfig,
    i: u64,
    r: &Request,
    seen: Option<Nanos>,
    prev_arrival: &mut Nanos,
    tokenizer_free: &mut Nanos,
) -> Result<Nanos, ReplayError> {
    super::check_request(cfg, i, r)?;
    if r.arrival_ns < *prev_arrival {
        return Err(ReplayError::ArrivalOutOfOrder {
            index: i,
            id: r.id,
            arrival_ns: r.arrival_ns,
            previous_ns: *prev_arrival,
        });
    }
    *prev_arrival = r.arrival_ns;
    Ok(seen.unwrap_or_else(|| {
        cfg.frontend
            .deliver(r.arrival_ns, r.input_tokens, tokenizer_free)
    }))
}

/// Puts `x` in a free slot of `slots` (one `free` lists) or a new one; its index (the
/// event that takes it back carries it).
fn put_slot<T>(slots: &mut Vec<Option<T>>, free: &mut Vec<u32>, x: T) -> u32 {
    match free.pop() {
        Some(i) => {
            slots[i as usize] = Some(x);
            i
        }
        None => {
            slots.push(Some(x));
            (slots.len() - 1) as u32
        }
    }
}

/// Adds one request's TPOT (its decode time over its output tokens after the first)
/// when it has two or more (`bench_serving`'s TPOT, as `runtime::rounds` computes it).
fn add_tpot(acc: &mut (f64, u64), decode: Nanos, output_tokens: u32) {
    if output_tokens > 1 {
        acc.0 += decode as f64 / 1e9 / f64::from(output_tokens - 1);
        acc.1 += 1;
    }
}

impl<I: Iterator<Item = rank::Fed>, R: TreeRules> Sim<I, R> {
    pub(crate) fn new(
        cfg: &ReplayConfig,
        src: I,
        times: bool,
        lockstep: bool,
    ) -> Result<Self, ReplayError> {
        let cost = cost_model(cfg)?;
        Ok(Sim {
            s: Session::<R>::new(cfg),
            q: EventQueue::new(),
            src,
            next: None,
            prev_arrival: 0,
            tokenizer_free: 0,
            waiting: VecDeque::new(),
            lpm: lpm::Scratch::default(),
            running: 0,
            gpu_busy: false,
            batches: Vec::new(),
            free_batches: Vec::new(),
            acks: Vec::new(),
            free_acks: Vec::new(),
            h2d: Link::default(),
            d2h: Link::default(),
            sread: Link::default(),
            swrite: Link::default(),
            ttft: Vec::new(),
            ttft_sums: TtftSums::new(cfg),
            tpot: (0.0, 0),
            cost,
            step_sync: cfg.hicache_step_sync_ns(),
            poll_sync: cfg.prefetch_poll_sync_ns(),
            poll_sync_due: 0,
            batch_is_full: false,
            times: times.then(Vec::new),
            recs: Vec::new(),
            scratch: Vec::new(),
            writes: Vec::new(),
            free_writes: Vec::new(),
            step: 0,
            pending_retries: 0,
            decoding: Vec::new(),
            lockstep,
            pending: None,
            running_tokens: 0,
            snapshot: None,
            decode_publish: 0,
            hold_decode: false,
            last_event: 0,
            pulled: 0,
            kv: cfg.scheduler.decode_memory == DecodeMemory::Sglang,
            ratio: NewTokenRatio::new(cfg.scheduler.schedule_conservativeness),
            beside: Vec::new(),
            decay_anchor: 0,
            admitted: 0,
            order: Vec::new(),
            needs: Vec::new(),
            pd: None,
            progress: None,
        })
    }

    /// Handles one event (the caller then lets the scheduler run).
    pub(crate) fn handle(&mut self, ev: Ev) -> Result<(), ReplayError> {
        self.last_event = self.q.now();
        match ev {
            Ev::Arrival => self.arrival()?,
            Ev::Tick => {}
            Ev::BatchDone(b) => self.batch_done(b),
            Ev::Finish {
                last,
                tokens,
                index,
            } => {
                self.s.tree.dec_lock_ref(last);
                self.running -= 1;
                // The running batch shrank (`filter_batch`).
                self.batch_is_full = false;
                self.running_tokens -= u64::from(tokens);
                self.progressed(index, Progress::Finished);
            }
            Ev::D2hAck(a) => self.d2h_ack(a),
            Ev::StorageAck { node } => self.s.tree.release_host(node),
            Ev::StorageWritten(w) => {
                let pages = std::mem::take(&mut self.writes[w as usize]);
                self.s.write_storage(&pages);
                self.writes[w as usize] = pages;
                self.free_writes.push(w);
            }
            Ev::DecodeStep => self.decode_step_done(),
            Ev::DecodeDone { index, retractions } => self.decode_done(index, retractions),
            Ev::TransferDone { index } => self.transfer_done(index),
        }
        Ok(())
    }

    /// The replay's end: the session's metrics and what the time figures need.
    pub(crate) fn finish(self) -> RunEnd {
        let end = self.last_event;
        let mut m = self.s.finish();
        if self.lockstep {
            m.requests = self.pulled;
        }
        RunEnd {
            m,
            ttft: self.ttft,
            sums: self.ttft_sums,
            tpot: self.tpot,
            times: self.times.unwrap_or_default(),
            end,
        }
    }

    /// Starts the formed forward (a prefill batch or a decode step) ending at `done`,
    /// or in lockstep keeps it for [`Sim::commit_step`].
    fn gpu_start(&mut self, done: Nanos, ev: Ev) {
        self.gpu_busy = true;
        if self.lockstep {
            self.pending = Some((done, ev));
        } else {
            self.q.schedule_at(done, ev);
        }
    }

    /// Lockstep with a speculative draft, when no rank formed a prefill this step: the
    /// decode step it held (`hold_decode`), if it has requests decoding.
    pub(crate) fn decode_now(&mut self) {
        self.hold_decode = false;
        let now = self.q.now();
        self.start_decode_step(now);
    }

    /// The end of this rank's forward formed this step, if it formed one (lockstep).
    pub(crate) fn pending_end(&self) -> Option<Nanos> {
        self.pending.map(|(done, _)| done)
    }

    /// Lockstep: every rank's forward of this step ends at `step_end`, the slowest
    /// rank's end (DP attention synchronises each forward); a prefill batch's wait
    /// for the others is kept for its TTFT breakdown.
    pub(crate) fn commit_step(&mut self, step_end: Nanos) {
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

    /// `Scheduler.publish_load_snapshot` (0.5.23): the rank's load as the DP controller
    /// reads it (`load_inquirer.py: get_loads`): running + waiting requests, and tokens:
    /// the running requests' prompts (SGLang counts the KV pool's used tokens, a shared
    /// prefix once) plus the waiting prompts.
    pub(crate) fn publish(&mut self, now: Nanos) {
        let waiting: u64 = self.waiting.iter().map(|w| u64::from(w.input_tokens)).sum();
        // Every publish restarts the decode count (`publish_counter = 0`).
        self.decode_publish = 0;
        self.snapshot = Some(crate::runtime::dp::LoadSnapshot {
            at: now,
            requests: u64::from(self.running) + self.waiting.len() as u64,
            tokens: self.running_tokens + waiting,
        });
    }

    /// A lockstep rank that formed no forward this step: fully idle, it publishes at
    /// once (the idle loop's forced publish); with requests but nothing to run (a
    /// queue that cannot be scheduled, or, with decode beside the prefill, requests
    /// decoding off the timeline) at most every 50 ms (`LOAD_STALL_REFRESH_S`).
    pub(crate) fn publish_when_idle(&mut self, now: Nanos) {
        let idle = self.running == 0 && self.waiting.is_empty();
        let stale = self
            .snapshot
            .is_none_or(|s| now.saturating_sub(s.at) >= LOAD_STALL_REFRESH_NS);
        if idle || stale {
            self.publish(now);
        }
    }

    /// Reads the next request when none is pending (a rank fed by the DP controller).
    pub(crate) fn feed(&mut self) -> Result<(), ReplayError> {
        if self.next.is_none() {
            self.pull()?;
        }
        Ok(())
    }

    /// Reads the next request and schedules its arrival (streaming).
    fn pull(&mut self) -> Result<(), ReplayError> {
        self.next = None;
        if let Some(rank::Fed {
            index: i,
            req: r,
            seen,
        }) = self.src.next()
        {
            self.pulled += 1;
            let at = scheduler_sees(
                &self.s.cfg,
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
        let now = self.q.now();
        let pages = req.page_hashes;
        let (prefetch, retry) = match self.issue_prefetch(&pages, now) {
            Issue::Issued(p) => (Some(p), None),
            Issue::Declined => (None, None),
            Issue::Missed => (None, self.poll_miss()),
        };
        // The `max_new_tokens` the client sent: a longer trace output stops at it.
        let max_new = self
            .s
            .cfg
            .scheduler
            .max_new_tokens
            .unwrap_or(req.output_tokens);
        self.waiting.push_back(Waiting {
            index,
            arrival: req.arrival_ns,
            seen: now,
            input_tokens: req.input_tokens,
            output_tokens: req.output_tokens.min(max_new),
            pages,
            prefetch,
            retry,
            attempts: 0,
            preloaded: 0,
            carried: (0, 0),
            max_new,
            out: 0,
            retractions: 0,
            first_token: 0,
            time: None,
        });
        self.s.sample(index, now);
        self.pull()
    }

    /// `storage_prefetch_retries.poll_miss`: a re-query is armed when the release
    /// retries (`prefetch_retry_poll_interval` > 0, 0.5.20+).
    fn poll_miss(&mut self) -> Option<Retry> {
        if self.s.cfg.prefetch.prefetch_retry_poll_interval == 0 {
            return None;
        }
        self.pending_retries += 1;
        Some(Retry { due_step: None })
    }

    /// `_prefetch_kvcache` + `prefetch_from_storage` + the hit query and allocation.
    fn issue_prefetch(&mut self, pages: &[PageKey], now: Nanos) -> Issue {
        if self.s.storage.is_none() {
            return Issue::Declined;
        }
        let s = &mut self.s;
        let m = s.tree.match_prefix(pages);
        let a = match s.admit_prefetch(pages, &m) {
            Admission::Admitted(a) => a,
            Admission::Declined => return Issue::Declined,
            Admission::RateLimited | Admission::Revoked => return Issue::Missed,
        };
        s.prefetch_occupied += a.charge_tokens;
        let bytes = s.bytes(a.pages);
        let dur = storage_time_ns(bytes, s.cfg.links.storage_read_bandwidth.0)
            + s.cfg.links.storage_latency.0;
        let end = self.sread.transfer(now, dur);
        Issue::Issued(Prefetch {
            anchor: a.anchor,
            span_start: a.span_start,
            pages: a.pages,
            span_tokens: a.span_tokens,
            charged: a.charge_tokens,
            issued: now,
            start: end - dur,
            end,
            first_poll: None,
            ended: false,
        })
    }

    /// Pages of a prefetch arrived by `now` (linear over the transfer).
    fn completed(p: &Prefetch, now: Nanos) -> u64 {
        if now >= p.end {
            p.pages
        } else if now <= p.start {
            0
        } else {
            (u128::from(p.pages) * u128::from(now - p.start) / u128::from(p.end - p.start)) as u64
        }
    }

    /// The prefetch timeout in ns: `base + tokens / 1024 × per_ki`, capped, over the
    /// fetched pages (≤ 0.5.22 `_prefetch_timeout_check_linear_func`:
    /// `len(operation.hash_value)`) or the requested span (0.5.23
    /// `_start_storage_prefetch_wait`: `stats_requested_tokens // page_size ×
    /// per_page`, `per_page = page_size / 1024 × per_ki`).
    fn prefetch_timeout(c: &ReplayConfig, p: &Prefetch) -> Nanos {
        let tokens = match c.prefetch.prefetch_timeout_tokens {
            PrefetchTimeoutTokens::Fetched => p.pages * u64::from(c.capacities.page_size),
            PrefetchTimeoutTokens::Requested => p.span_tokens,
        };
        (c.prefetch.prefetch_timeout_base.0
            + (u128::from(c.prefetch.prefetch_timeout_per_ki_token.0) * u128::from(tokens) / 1024)
                as u64)
            .min(c.prefetch.prefetch_timeout_max.0)
    }

    /// One admission poll of a prefetch at `now` (`check_prefetch_progress` →
    /// `can_terminate_prefetch`); on "not yet", the time worth re-checking. The
    /// timeout clock runs from the issue (`operation.start_time`) or, in 0.5.23, from
    /// the first poll that finds the prefetch unfinished (`PollTimer.observe`).
    fn can_terminate(cfg: &ReplayConfig, p: &mut Prefetch, now: Nanos) -> Result<(), Nanos> {
        match cfg.prefetch.prefetch_policy {
            PrefetchPolicy::BestEffort => Ok(()),
            PrefetchPolicy::WaitComplete => {
                if now >= p.end {
                    Ok(())
                } else {
                    Err(p.end)
                }
            }
            PrefetchPolicy::Timeout => {
                if now >= p.end {
                    return Ok(());
                }
                let t = Self::prefetch_timeout(cfg, p);
                let from = match cfg.prefetch.prefetch_timeout_clock {
                    PrefetchTimeoutClock::Issue => p.issued,
                    PrefetchTimeoutClock::FirstBlockedPoll => *p.first_poll.get_or_insert(now),
                };
                if now - from > t {
                    Ok(())
                } else {
                    Err(p.end.min(from + t + 1))
                }
            }
        }
    }

    /// One scheduler iteration's `_process_storage_prefetch_retries`
    /// (`storage_prefetch.py: StoragePrefetchRetries.pop_ready`): the step counts up; the
    /// queue head's pending retry is dropped ("a speculative miss must never delay
    /// the queue head"); every other pending retry is due `poll_interval` steps after
    /// it is first seen and then re-issues the request's prefetch
    /// (`_retry_storage_prefetch`), unless the request used `max_attempts`.
    fn retry_step(&mut self, now: Nanos) {
        self.step += 1;
        if self.pending_retries == 0 || self.waiting.is_empty() {
            return;
        }
        let interval = u64::from(self.s.cfg.prefetch.prefetch_retry_poll_interval);
        let max = self.s.cfg.prefetch.prefetch_retry_max_attempts;
        if self.waiting[0].retry.take().is_some() {
            self.pending_retries -= 1;
        }
        for j in 0..self.waiting.len() {
            let w = &mut self.waiting[j];
            let Some(r) = w.retry.as_mut() else {
                continue;
            };
            if w.attempts >= max || interval == 0 {
                w.retry = None;
                self.pending_retries -= 1;
                continue;
            }
            let due = *r.due_step.get_or_insert(self.step + interval);
            if due > self.step {
                continue;
            }
            self.waiting[j].retry = None;
            self.pending_retries -= 1;
            self.waiting[j].attempts += 1;
            self.s.m.prefetch_retries += 1;
            let pages = std::mem::take(&mut self.waiting[j].pages);
            match self.issue_prefetch(&pages, now) {
                Issue::Issued(p) => self.waiting[j].prefetch = Some(p),
                Issue::Declined => {}
                Issue::Missed => self.waiting[j].retry = self.poll_miss(),
            }
            self.waiting[j].pages = pages;
        }
    }

    fn schedule(&mut self) {
        if self.gpu_busy {
            return;
        }
        let now = self.q.now();
        self.retry_step(now);
        if self.kv && self.s.cfg.scheduler.decode_timeline == DecodeTimeline::BesidePrefill {
            self.decode_memory(now, false);
        }
        if self.waiting.is_empty() {
            self.idle_reset();
            self.start_decode_step(now);
            return;
        }
        if self.pd.is_some() || self.running == 0 {
            // A PD prefill server's reset every iteration; an empty running batch has
            // no request left to leave (0.5.22 and 0.5.23 clear it explicitly; before,
            // only a shrinking batch did, which is how a batch gets empty).
            self.batch_is_full = false;
        }
        // `PrefillAdder`'s `rem_total_token_offset` (`kv_budget::prefill_adder_fits`):
        // the running requests' reserved future tokens.
        let kv = self.kv;
        let mut offset = if kv { self.running_offset(now) } else { 0.0 };
        let max_run = self.s.cfg.scheduler.max_running_requests;
        let max_tok = self
            .cost
            .batch_token_budget(u64::from(self.s.cfg.scheduler.max_prefill_tokens));
        let mut batch: Vec<Admitted> = Vec::new();
        let mut tokens = 0u64;
        let mut h2d_bytes = 0u64;
        let mut h2d_runs = 0u64;
        let mut shapes: Vec<(u64, u64)> = Vec::new();
        let mut wake: Option<Nanos> = None;
        // The blocking all-reduces this iteration's prefetch polls make
        // (`crate::release::step_sync::prefetch_poll_all_reduces`), when they cost.
        let mut polls = 0u64;
        // Of them, those of requests left waiting: SGLang polls them again before each
        // chunk of a chunked batch.
        let mut unfinished = 0u64;
        let mut j = 0;
        // While the batch is full `get_new_batch_prefill` returns before its scan: no
        // waiting request is polled or admitted, and the iteration runs as one without
        // a prefill batch (the decode step; the idle loop's next spin for a retry).
        let scan = !self.batch_is_full;
        // `calc_priority`, after `get_new_batch_prefill`'s early returns (a full batch,
        // no request slot left).
        if scan
            && self.running < max_run
            && self.s.cfg.scheduler.schedule_policy == crate::runtime::SchedulePolicy::Lpm
        {
            let (waiting, tree) = (&mut self.waiting, &mut self.s.tree);
            lpm::sort(
                waiting,
                self.s.ps,
                &mut self.lpm,
                |w| &w.pages,
                // `origin_input_ids + output_ids`: a retracted request's outputs too.
                |w| u64::from(w.input_tokens) + u64::from(w.out),
                |w| {
                    let m = tree.match_prefix(&w.pages);
                    lpm::Matched {
                        device_pages: m.device_pages,
                        hit_pages: m.device_pages + m.host_pages,
                    }
                },
            );
        }
        while scan && j < self.waiting.len() {
            if self.running + batch.len() as u32 >= max_run {
                // `get_num_allocatable_reqs` spent.
                self.batch_is_full = true;
                break;
            }
            if let Some(p) = self.waiting[j].prefetch.as_mut()
                && !p.ended
            {
                let c = &self.s.cfg;
                let (tree, policy) = (c.policy.tree, c.prefetch.prefetch_policy);
                let vote = u64::from(step_sync::prefetch_poll_all_reduces(
                    tree,
                    policy,
                    now >= p.end,
                ));
                polls += vote;
                if let Err(t) = Self::can_terminate(c, p, now) {
                    unfinished += vote;
                    wake = Some(wake.map_or(t, |w| w.min(t)));
                    j += 1;
                    continue;
                }
                p.ended = true;
                polls += u64::from(step_sync::prefetch_finalise_all_reduces(tree));
            }
            // Would it fit the token budget? (Estimate from a fresh match.)
            let m0 = self.s.tree.match_prefix(&self.waiting[j].pages);
            let new_tokens = u64::from(self.waiting[j].input_tokens)
                .saturating_sub(m0.matched_pages() * self.s.ps);
            if !batch.is_empty() && tokens + new_tokens > max_tok {
                break;
            }
            let mut w = self.waiting.remove(j).expect("index in range");
            // Admitted: `retries.cancel(req.rid)`.
            if w.retry.take().is_some() {
                self.pending_retries -= 1;
            }
            let (fetched, staged) = self.terminate_prefetch(&mut w, now);
            let (fetched, staged) = {
                let (f, st) = std::mem::take(&mut w.carried);
                (fetched + f, staged + st)
            };
            let d2h_in_flight = self.d2h_in_flight();
            let s = &mut self.s;
            let m = s.tree.match_prefix(&w.pages);
            s.tree.inc_lock_ref(m.last_node);
            // What it prefills: its prompt, and a retracted request's outputs so far.
            let fill = u64::from(w.input_tokens) + u64::from(w.out);
            if kv {
                // `add_one_req` → `check_prefill`: `extend + min(max_new_tokens −
                // len(output_ids), CLIP) + page < rem_total_tokens`, its prefix locked.
                // Alone with nothing running (nothing will free pages) it goes, as
                // SGLang clips `max_new_tokens` to the empty pool.
                let extend = fill.saturating_sub(m.device_pages * s.ps);
                let max_new = u64::from(w.max_new.saturating_sub(w.out));
                let rem = Self::rem_total_tokens(s, offset);
                if !kv_budget::prefill_adder_fits(extend, max_new, s.ps, rem)
                    && !(batch.is_empty() && self.running == 0 && !d2h_in_flight)
                {
                    s.tree.dec_lock_ref(m.last_node);
                    w.carried = (fetched, staged);
                    self.waiting.insert(j, w);
                    self.no_token(!batch.is_empty());
                    break;
                }
            }
            let loaded = s.tree.load_back(&m);
            // One run per loaded node.
            let runs = if loaded > 0 { s.tree.host_nodes(&m) } else { 0 };
            let on_dev = m.device_pages + loaded;
            let want = w.pages.len() as u64;
            let need = want - on_dev;
            // Its own pages beyond the prompt's whole pages: the partial last page and
            // a retracted request's outputs (`decode_memory: sglang`).
            let extra = if kv {
                pages_for(fill, s.ps).saturating_sub(want)
            } else {
                0
            };
            let (reserved, upto, held) = if s.tree.alloc_device(need + extra) {
                (need, want, extra)
            } else if batch.is_empty() && self.running == 0 && !d2h_in_flight {
                // Nothing will free device pages (no request runs, no write-through
                // backup holds pages until its ack): cache what fits.
                let avail = s.tree.device_free().min(need);
                s.tree.alloc_device(avail);
                s.m.insert_truncated_requests += 1;
                (avail, on_dev + avail, 0)
            } else {
                // Wait for running requests to release their pages; the pages this
                // attempt loaded back are charged when it is admitted.
                s.tree.dec_lock_ref(m.last_node);
                w.preloaded += loaded;
                w.carried = (fetched, staged);
                self.waiting.insert(j, w);
                // No device room: SGLang's budget counts the same free and evictable
                // pages.
                self.no_token(!batch.is_empty());
                break;
            };
            // Loaded by an earlier attempt and still on the device: copied now.
            // (Pages evicted meanwhile and loaded again are in `loaded`, not here.)
            let pre = std::mem::take(&mut w.preloaded)
                .saturating_sub(loaded)
                .min(m.device_pages);
            if loaded + pre > 0 {
                h2d_bytes += s.bytes(loaded + pre);
                h2d_runs += runs + u64::from(pre > 0);
            }
            if loaded == 0 {
                s.tree.stats.load_back_skipped_pages += m.host_pages;
            }
            let fetched_hit = fetched.min(loaded + pre);
            let h = Hits {
                device: m.device_pages - pre,
                host: loaded + pre - fetched_hit,
                storage: fetched_hit + staged.min(upto - on_dev),
                fetched,
            };
            if w.retractions == 0 {
                // A retracted request's hits were counted once (`retracted_stain`).
                s.record(w.index, w.input_tokens, want, h);
            }
            // Prefill computes what is neither on the device (`on_dev` includes the
            // pages loaded back, L3-fetched ones too) nor staged from L3 (buffer_only).
            let staged_hit = staged.min(upto - on_dev);
            let new = fill.saturating_sub((on_dev + staged_hit) * s.ps);
            tokens += new;
            shapes.push((new, fill - new));
            if kv {
                // `_update_prefill_budget` → `reserve`: `ceil_page(extend) + page +
                // min(max_new_tokens, CLIP)`; the replay allocated the extend's pages
                // already (`need + extra` = `ceil_page(extend)` / page).
                offset += kv_budget::prefill_adder_reserve(s.ps, u64::from(w.max_new));
            }
            batch.push(Admitted {
                cached: fill - new,
                w,
                lock: m.last_node,
                reserved,
                upto,
                on_dev,
                staged,
                held,
                device_prefix: (m.device_pages - pre) * s.ps,
            });
            // `budget_state`: no room left in `rem_total_tokens` ends the batch, a
            // `NO_TOKEN` with a request admitted: the batch is full.
            if kv && Self::rem_total_tokens(&self.s, offset) <= 0.0 {
                self.batch_is_full = true;
                break;
            }
        }
        if self.poll_sync == 0 {
            (polls, unfinished) = (0, 0);
        }
        if batch.is_empty() {
            self.idle_reset();
            // The decode step this iteration runs instead pays its polls; with no step
            // to run the scheduler spins idle and the polls delay nothing modelled (nor
            // are they counted).
            self.poll_sync_due = polls;
            if self.pending_retries > 0 {
                // The idle loop spins (`on_idle`: `time.sleep(0)`): the next
                // iterations come one `scheduler_idle_poll` apart.
                let t = now + self.s.cfg.scheduler.scheduler_idle_poll.0.max(1);
                wake = Some(wake.map_or(t, |w| w.min(t)));
            }
            if let Some(t) = wake {
                self.q.schedule_at(t, Ev::Tick);
            }
            self.start_decode_step(now);
            return;
        }
        let c = &self.s.cfg;
        let per_layer_runs = h2d_runs * u64::from(c.capacities.num_layers.max(1));
        let h2d_time = c.links.load_back_ns(h2d_bytes, per_layer_runs);
        assert_eq!(tokens, shapes.iter().map(|s| s.0).sum::<u64>());
        let forward = prefill_forward(&self.cost, self.pd.as_mut(), &shapes);
        // `compute.hit_cost_per_cached_token` (not an SGLang rule; 0 by default): the
        // batch starts that long per cached token (every tier's) after it is
        // scheduled. It sits on the GPU's timeline (`gpu_busy` holds through it, so
        // what queues behind waits too) and before the load-back and the forward, so it
        // adds to a host hit's copy instead of hiding under it: corpus #19's L2 hit is
        // its L1 hit plus about the copy (0.213 − 0.159 = 0.054 s at 16 384 tokens,
        // 0.372 − 0.251 = 0.121 s at 32 512; the replay's copies take 0.05 / 0.10 s).
        // #20's L2 hit equals its L1 hit instead (the copy hidden), which a charge
        // overlapped with the load-back would fit: the two sources disagree, and this is
        // the simpler of the two placements (a scheduling-time cost, as the name says).
        // HiCache's per-step synchronisation (`crate::release::step_sync`): each of the
        // batch's forwards (a chunk each) is a scheduler iteration whose
        // `check_hicache_events` all-reduces run before the forward is launched. The
        // chunks' are charged together up front (the sum is exact for the batch's end;
        // SGLang pays each before its chunk).
        // The iteration's prefetch polls run in `get_new_batch_prefill`, before the
        // batch's first forward; a chunked batch's later chunks each poll the requests
        // still waiting again (`chunked_req` skips the early returns).
        let forwards = self.cost.prefill_forwards(&shapes);
        let polls = polls + unfinished * forwards.saturating_sub(1);
        self.s.m.prefetch_poll_all_reduces += polls;
        let sync = self.step_sync * forwards + polls * self.poll_sync;
        let start = now
            + sync
            + c.scheduler
                .compute
                .hit_cost_ns(shapes.iter().map(|s| s.1).sum());
        let loaded_at = if h2d_time > 0 {
            self.h2d.transfer(start, h2d_time)
        } else {
            start
        };
        // A serialized load-back (the what-if of sglang PR 39395) copies and acks each
        // node inside admission (`_drain_serialized_load_back` synchronises on it): the
        // forward starts after the last copy, with no layer-wise overlap.
        let done = if self.cost.pipelined() && !self.s.tree.config().serialize_load_back {
            layer_pipelined_end(
                start,
                forward,
                loaded_at - h2d_time,
                h2d_time,
                c.capacities.num_layers,
            )
        } else {
            loaded_at + forward
        };
        self.running += batch.len() as u32;
        self.running_tokens += batch
            .iter()
            .map(|a| u64::from(a.w.input_tokens))
            .sum::<u64>();
        let batch = Batch {
            reqs: batch,
            formed: now,
            sync,
            start,
            forward,
            dp_wait: 0,
            loads_back: h2d_bytes > 0,
            chunked: forwards > 1,
        };
        let id = put_slot(&mut self.batches, &mut self.free_batches, batch);
        self.gpu_start(done, Ev::BatchDone(id));
    }

    /// `AddReqResult.NO_TOKEN` in the admission scan (`managers/scheduler.py:
    /// _get_new_batch_prefill_raw`, 0.5.14–0.5.23): the batch is full "after making
    /// sure there are requests that can be served" — one admitted in this scan
    /// (`admitted`) or one running.
    fn no_token(&mut self, admitted: bool) {
        self.batch_is_full = admitted || self.running > 0;
    }

    /// A write-through backup is on the D2H link: its device pages stay pinned until
    /// its ack (`d2h_ack`), which frees them for the waiting requests (with a request
    /// running, only once one leaves: `batch_is_full`).
    fn d2h_in_flight(&self) -> bool {
        self.acks.len() > self.free_acks.len()
    }

    /// Prefetch termination: insert the arrived span as host-only nodes (cache mode),
    /// free the unused tail, release the anchor, return the budget. Returns
    /// (pages fetched into host, pages staged for the device in buffer_only).
    fn terminate_prefetch(&mut self, w: &mut Waiting, now: Nanos) -> (u64, u64) {
        let Some(p) = w.prefetch.take() else {
            return (0, 0);
        };
        let done = Self::completed(&p, now);
        let s = &mut self.s;
        s.prefetch_occupied -= p.charged;
        if s.cfg.policy.host_memory_mode == HostMemoryMode::BufferOnly {
            return (0, done);
        }
        s.tree.unreserve_host(p.pages - done);
        let mut fetched = 0;
        if done > 0 {
            let span = &w.pages[p.span_start..p.span_start + done as usize];
            let anchor_alive = s.tree.node(p.anchor).alive;
            if anchor_alive {
                fetched = s.tree.insert_host_only(p.anchor, span, done);
            } else {
                s.tree.unreserve_host(done);
            }
        }
        s.tree.release_host(p.anchor);
        (fetched, 0)
    }

    fn batch_done(&mut self, b: u32) {
        let now = self.q.now();
        let mut batch = self.batches[b as usize].take().expect("batch exists");
        let reqs = std::mem::take(&mut batch.reqs);
        self.free_batches.push(b);
        self.gpu_busy = false;
        if batch.chunked {
            // After each chunk but the last the chunked request leaves `last_batch`
            // (`filter_batch` shrinks it: the flag clears) and the next chunk's
            // iteration scans again (`chunked_req` skips the early return). The replay
            // scans once for the whole batch, so its flag is cleared at the batch's end
            // and the next scan decides, as the last chunk's would have.
            self.batch_is_full = false;
        }
        // The batch's H2D load-backs finished before its forward: `loading_check`
        // acks them (`finish_load_back`).
        self.s.tree.finish_load_backs();
        // `maybe_send_cached_prefix_chunk` (0.5.23,
        // `SGLANG_DISAGG_PREFILL_EARLY_SEND_CACHED_PREFIX` on by default): every
        // request's device-cached prefix went when the forward started, ahead of the
        // chunks' sends, unless the batch loads back from the host.
        if let Some(pd) = self.pd.as_mut()
            && !batch.loads_back
        {
            for a in &reqs {
                pd.send_cached_prefix(a.w.index, batch.start, a.device_prefix, self.s.ps);
            }
        }
        // Where each request's new tokens start among the batch's (its chunks').
        let mut offset = 0;
        for a in reqs {
            let new = u64::from(a.w.input_tokens).saturating_sub(a.cached);
            let batch_offset = offset;
            offset += new;
            let s = &mut self.s;
            let last = s.tree.insert(&a.w.pages[..a.upto as usize], a.reserved);
            s.tree.inc_lock_ref(last);
            s.tree.dec_lock_ref(a.lock);
            if s.cfg.policy.host_memory_mode == HostMemoryMode::BufferOnly {
                let lo = (a.on_dev + a.staged).min(a.upto) as usize;
                let mut new = std::mem::take(&mut self.scratch);
                s.buffer_writes(&a.w.pages[lo..a.upto as usize], &mut new);
                let bytes = s.bytes(new.len() as u64);
                s.m.backup_bytes += bytes;
                let d = run_time_ns(
                    bytes,
                    1,
                    s.cfg.links.d2h_bandwidth.0,
                    s.cfg.links.bandwidth_efficiency,
                    s.cfg.links.d2h_run_overhead.0,
                );
                let wt = storage_time_ns(bytes, s.cfg.links.storage_write_bandwidth.0)
                    + s.cfg.links.storage_latency.0;
                if !new.is_empty() {
                    let t = self.d2h.transfer(now, d);
                    let end = self.swrite.transfer(t, wt);
                    self.store_at(end, &new);
                }
                self.scratch = new;
            }
            let measured = a.w.index >= self.s.cfg.measurement.warmup_requests;
            if a.w.retractions == 0 {
                self.progressed(a.w.index, Progress::FirstToken);
            }
            if measured && a.w.retractions == 0 {
                // A retracted request's first token was streamed at its first prefill.
                self.ttft.push((now - a.w.arrival) as f64 / 1e9);
                self.ttft_sums.add(&a.w, &batch, now);
            }
            if self.pd.is_some() {
                self.send_kv(a, last, now, measured, batch_offset);
                continue;
            }
            if self.kv {
                self.start_decode(a, last, now, measured);
                continue;
            }
            // The prefill makes the first output token; the decode makes the rest
            // (`output_tokens - 1` steps, as SGLang's scheduler runs them).
            let decode_tokens = a.w.output_tokens.saturating_sub(1);
            if self.s.cfg.scheduler.decode_timeline == DecodeTimeline::Interleaved
                && decode_tokens > 0
            {
                // Its tokens come one decode step at a time (`decode_step_done`).
                let d = self.new_decoding(a, last, now, measured);
                self.decoding.push(d);
                continue;
            }
            let decode = self.decode_ns(
                u64::from(decode_tokens),
                u64::from(self.running),
                u64::from(a.w.input_tokens) + 1,
            );
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
            self.q.schedule_at(
                now + decode,
                Ev::Finish {
                    last,
                    tokens: a.w.input_tokens,
                    index: a.w.index,
                },
            );
        }
        if let Some(t) = self.s.cfg.policy.write_back_threshold {
            // The what-if of sglang PR 40576: the watermark's backups go with this
            // iteration's D2H copies.
            self.s.tree.write_back_to_watermark(t);
        }
        self.flush_backups(now);
        if self.s.tree.config().l3_at_host_eviction {
            self.write_host_evictions(now);
        }
        if self.lockstep {
            // A prefill's result always publishes (`force=forward_mode.is_extend()`).
            self.publish(now);
        }
    }

    /// A request's decode state after its prefill (which made one output token).
    fn new_decoding(&mut self, a: Admitted, last: NodeId, now: Nanos, measured: bool) -> Decoding {
        let w = a.w;
        let out = w.out + 1;
        let time = match w.time {
            Some(k) => Some(k),
            None => self.times.as_mut().map(|t| {
                t.push(RequestTime {
                    index: w.index,
                    arrival_ns: w.arrival,
                    first_token_ns: now,
                    finish_ns: now,
                    input_tokens: w.input_tokens,
                    output_tokens: w.output_tokens,
                    cached_tokens: a.cached,
                });
                t.len() - 1
            }),
        };
        self.admitted += 1;
        Decoding {
            remaining: w.output_tokens.saturating_sub(out),
            ctx: u64::from(w.input_tokens) + u64::from(out),
            carry: 0.0,
            last,
            time,
            first_token: if w.retractions > 0 {
                w.first_token
            } else {
                now
            },
            output_tokens: w.output_tokens,
            measured,
            index: w.index,
            arrival: w.arrival,
            input_tokens: w.input_tokens,
            max_new: w.max_new,
            prompt_pages: w.pages.len() as u64,
            held: a.held,
            pages: w.pages,
            retractions: w.retractions,
            seq: self.admitted,
            start: now,
            start_out: out,
            step: 0.0,
        }
    }

    /// `decode_memory: sglang`: the request decodes on the step timeline
    /// (`interleaved`) or beside the prefill until its `DecodeDone`.
    fn start_decode(&mut self, a: Admitted, last: NodeId, now: Nanos, measured: bool) {
        let mut d = self.new_decoding(a, last, now, measured);
        if d.remaining == 0 {
            self.finish_decoding(d, now);
            return;
        }
        if self.s.cfg.scheduler.decode_timeline == DecodeTimeline::Interleaved {
            self.decoding.push(d);
            return;
        }
        let decode = self.decode_ns(
            u64::from(d.remaining),
            u64::from(self.running),
            u64::from(d.input_tokens) + u64::from(d.start_out),
        );
        d.step = decode as f64 / f64::from(d.remaining);
        if let (Some(t), Some(k)) = (self.times.as_mut(), d.time) {
            t[k].finish_ns = now + decode;
        }
        self.q.schedule_at(
            now + decode,
            Ev::DecodeDone {
                index: d.index,
                retractions: d.retractions,
            },
        );
        self.beside.push(d);
    }

    /// A PD prefill server's request after its prefill
    /// (`disaggregation/prefill.py: process_batch_result_disagg_prefill`, 0.5.23): its
    /// prompt is in the tree (inserted above); of the prompt pages its decode server
    /// lacks, the device-cached prefix went when the forward started, each
    /// chunk's pages after its forward, and `send_kv_chunk(last_chunk=True)` queues the
    /// rest ([`PdSend::send_prompt`], `offset`: where its new tokens start among the
    /// batch's) on the sending link. It waits in the inflight queue with its KV held
    /// until the transfer ends (`process_disagg_prefill_inflight_queue` releases it on
    /// `KVPoll.Success`). Its one output token is the prefill's (`max_new_tokens` = 1).
    fn send_kv(&mut self, a: Admitted, last: NodeId, now: Nanos, measured: bool, offset: u64) {
        let ps = self.s.ps;
        let pd = self.pd.as_mut().expect("a PD prefill server");
        let end = pd.send_prompt(
            a.w.index,
            u64::from(a.w.input_tokens),
            a.cached,
            offset,
            ps,
            now,
        );
        let index = a.w.index;
        if self.kv {
            let d = self.new_decoding(a, last, now, measured);
            if let (Some(t), Some(k)) = (self.times.as_mut(), d.time) {
                t[k].finish_ns = end;
            }
            self.pd.as_mut().expect("checked").inflight.push(d);
            self.q.schedule_at(end, Ev::TransferDone { index });
            return;
        }
        if let Some(t) = self.times.as_mut() {
            t.push(RequestTime {
                index,
                arrival_ns: a.w.arrival,
                first_token_ns: now,
                finish_ns: end,
                input_tokens: a.w.input_tokens,
                output_tokens: a.w.output_tokens,
                cached_tokens: a.cached,
            });
        }
        self.q.schedule_at(
            end,
            Ev::Finish {
                last,
                tokens: a.w.input_tokens,
                index,
            },
        );
    }

    /// A PD prefill server's transfer ended: the request's KV is released.
    fn transfer_done(&mut self, index: u64) {
        let now = self.q.now();
        let inflight = &mut self.pd.as_mut().expect("a PD prefill server").inflight;
        if let Some(i) = inflight.iter().position(|d| d.index == index) {
            let d = inflight.swap_remove(i);
            self.finish_decoding(d, now);
        }
    }

    /// A request's last token: its TPOT (from its first token, a retraction's redo
    /// included), its own pages freed, its prefix unlocked, its running slot freed.
    fn finish_decoding(&mut self, d: Decoding, now: Nanos) {
        self.progressed(d.index, Progress::Finished);
        if d.measured {
            add_tpot(&mut self.tpot, now - d.first_token, d.output_tokens);
        }
        if let (Some(t), Some(k)) = (self.times.as_mut(), d.time) {
            t[k].finish_ns = now;
        }
        self.release(&d);
    }

    /// A decode beside the prefill ended (stale after a retraction: ignored).
    fn decode_done(&mut self, index: u64, retractions: u32) {
        let now = self.q.now();
        if let Some(i) = self
            .beside
            .iter()
            .position(|d| d.index == index && d.retractions == retractions)
        {
            let d = self.beside.swap_remove(i);
            self.finish_decoding(d, now);
        }
    }

    /// `PrefillAdder`'s `rem_total_tokens`: the free and evictable device pool, in
    /// tokens, less the reserved `offset`.
    fn rem_total_tokens(s: &Session<R>, offset: f64) -> f64 {
        ((s.tree.device_free() + s.tree.device_evictable()) * s.ps) as f64 - offset
    }

    /// `Scheduler.on_idle` → `new_token_ratio_tracker.reset()`: no batch to run.
    fn idle_reset(&mut self) {
        if self.kv && self.decoding.is_empty() && self.beside.is_empty() {
            self.ratio.reset();
        }
    }

    /// Output tokens a decoding request has made by `now` (`len(output_ids)`).
    fn out_now(d: &Decoding, now: Nanos) -> u32 {
        if d.step <= 0.0 {
            // On the step timeline: counted by the steps.
            return d.output_tokens - d.remaining;
        }
        let steps = ((now.saturating_sub(d.start)) as f64 / d.step).floor() as u64;
        (u64::from(d.start_out) + steps).min(u64::from(d.output_tokens)) as u32
    }

    /// `PrefillAdder.__init__`'s offset: Σ over the running requests of
    /// `min(max_new_tokens − len(output_ids), CLIP) × ratio` (ratio 1 with `ignore_eos`
    /// from 0.5.22: [`crate::release::RunningOffset`]).
    fn running_offset(&self, now: Nanos) -> f64 {
        let sc = &self.s.cfg.scheduler;
        let ratio = match (sc.ignore_eos, sc.running_offset) {
            (true, crate::release::RunningOffset::WholeUnderIgnoreEos) => 1.0,
            _ => self.ratio.current,
        };
        self.decoding
            .iter()
            .chain(self.beside.iter())
            .map(|d| kv_budget::running_request_offset(d.max_new, Self::out_now(d, now), ratio))
            .sum()
    }

    /// `update_running_batch` for the decoding requests (`interleaved`: before a step;
    /// beside the prefill: at the scheduler's iterations, for the steps made since):
    /// each takes the pages its next token's KV needs (`new_tokens_required_next_decode`);
    /// when they do not fit after eviction (`check_decode_mem`), `retract_decode`
    /// (`kv_budget::retract_decode_key`); else the ratio decays once per decode step.
    fn decode_memory(&mut self, now: Nanos, interleaved: bool) {
        let mut live = std::mem::take(if interleaved {
            &mut self.decoding
        } else {
            &mut self.beside
        });
        if live.is_empty() {
            self.decay_anchor = now;
            self.put_live(live, interleaved);
            return;
        }
        let ps = self.s.ps;
        let gain = (self.cost.tokens_per_iteration().ceil() as u64).max(1);
        let steps = if interleaved {
            1
        } else {
            let ctx = live.iter().map(|d| d.ctx).sum::<u64>() / live.len() as u64;
            let iter = self.decode_iteration_ns(live.len() as u64, ctx).max(1);
            let n = now.saturating_sub(self.decay_anchor) / iter;
            self.decay_anchor += n * iter;
            n
        };
        let mut needs = std::mem::take(&mut self.needs);
        needs.clear();
        let mut total = 0u64;
        for d in &live {
            let out = Self::out_now(d, now);
            let n = if out >= d.output_tokens {
                0
            } else {
                // The next step writes the KV of its latest token(s): `prompt + out +
                // gain − 1` slots, at most `prompt + output − 1`.
                let last = u64::from(d.input_tokens) + u64::from(d.output_tokens) - 1;
                let t = (u64::from(d.input_tokens) + u64::from(out) + gain - 1).min(last);
                pages_for(t, ps).saturating_sub(d.prompt_pages + d.held)
            };
            needs.push(n);
            total += n;
        }
        if total == 0 || self.s.tree.make_device_room(total) >= total {
            for (d, &n) in live.iter_mut().zip(&needs) {
                self.s.tree.reserve_device(n);
                d.held += n;
            }
            self.ratio.decay_steps(steps);
            self.needs = needs;
            self.put_live(live, interleaved);
            return;
        }
        // `retract_decode`: by `(len(output_ids), −len(origin_input_ids))` descending
        // (batch order among equals), popped from the end.
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..live.len());
        order.sort_by_key(|&i| {
            let d = &live[i];
            kv_budget::retract_decode_key(Self::out_now(d, now), d.input_tokens, d.seq)
        });
        let mut gone: Vec<(usize, bool)> = Vec::new();
        let mut kept_need = total;
        let mut first = true;
        loop {
            if !first && self.s.tree.make_device_room(kept_need) >= kept_need {
                break;
            }
            if order.len() == 1 {
                break;
            }
            first = false;
            let i = order.pop().expect("two or more");
            kept_need -= needs[i];
            self.release(&live[i]);
            // `evict_from_tree_cache(remaining × SGLANG_RETRACT_DECODE_STEPS)`.
            self.s
                .tree
                .make_device_room(pages_for(order.len() as u64 * RETRACT_DECODE_STEPS, ps));
            gone.push((i, true));
        }
        self.s.m.retraction_steps += 1;
        if self.s.tree.make_device_room(kept_need) < kept_need {
            // "Out of memory even after retracting all other requests": the last one
            // is aborted.
            let i = order.pop().expect("one kept");
            self.release(&live[i]);
            self.progressed(live[i].index, Progress::Finished);
            self.s.m.decode_oom_aborts += 1;
            gone.push((i, false));
        }
        for &i in &order {
            self.s.tree.reserve_device(needs[i]);
            live[i].held += needs[i];
        }
        let (mut decoded, mut max_new) = (0u64, 0u64);
        for &i in &order {
            decoded += u64::from(Self::out_now(&live[i], now));
            max_new += u64::from(live[i].max_new);
        }
        self.ratio.current = NewTokenRatio::after_retract(decoded, max_new, order.len() as u64);
        // Out of the batch, latest index first (so `swap_remove` keeps the others').
        gone.sort_unstable_by(|a, b| b.0.cmp(&a.0));
        let mut requeue = Vec::new();
        for &(i, retracted) in &gone {
            let d = live.swap_remove(i);
            if retracted {
                requeue.push(d);
            } else {
                if let (Some(t), Some(k)) = (self.times.as_mut(), d.time) {
                    t[k].finish_ns = now;
                }
            }
        }
        // Back of the queue in retraction order.
        requeue.sort_by_key(|d| {
            kv_budget::retract_decode_key(Self::out_now(d, now), d.input_tokens, d.seq)
        });
        for d in requeue.into_iter().rev() {
            self.requeue(d, now);
        }
        self.order = order;
        self.needs = needs;
        self.put_live(live, interleaved);
    }

    fn put_live(&mut self, live: Vec<Decoding>, interleaved: bool) {
        if interleaved {
            self.decoding = live;
        } else {
            self.beside = live;
        }
    }

    /// Notes a request's step for the router, when kept.
    fn progressed(&mut self, index: u64, step: Progress) {
        if let Some(p) = self.progress.as_mut() {
            p.push((index, step));
        }
    }

    /// `release_kv_cache(req, checkpoint=False)`: its own pages freed, its prompt's
    /// nodes unlocked (left in the tree, evictable), its running slot freed.
    fn release(&mut self, d: &Decoding) {
        self.s.tree.free_device(d.held);
        self.s.tree.dec_lock_ref(d.last);
        self.running -= 1;
        // The running batch shrank (a finish, or `retract_decode`).
        self.batch_is_full = false;
        self.running_tokens -= u64::from(d.input_tokens);
    }

    /// `_add_request_to_queue(req, is_retracted=True)`: back of the waiting queue with
    /// its outputs so far, its prefetch issued again (`_prefetch_kvcache`).
    fn requeue(&mut self, d: Decoding, now: Nanos) {
        self.s.m.retracted_requests += 1;
        let out = Self::out_now(&d, now);
        let (prefetch, retry) = match self.issue_prefetch(&d.pages, now) {
            Issue::Issued(p) => (Some(p), None),
            Issue::Declined => (None, None),
            Issue::Missed => (None, self.poll_miss()),
        };
        self.waiting.push_back(Waiting {
            index: d.index,
            arrival: d.arrival,
            seen: now,
            input_tokens: d.input_tokens,
            output_tokens: d.output_tokens,
            pages: d.pages,
            prefetch,
            retry,
            attempts: 0,
            preloaded: 0,
            carried: (0, 0),
            max_new: d.max_new,
            out,
            retractions: d.retractions + 1,
            first_token: d.first_token,
            time: d.time,
        });
    }

    /// The what-if of sglang PR 39845: the host copies freed since the last call go to
    /// L3 on the storage-write link (written as they leave: no host pin is modelled).
    fn write_host_evictions(&mut self, now: Nanos) {
        let mut pages = std::mem::take(&mut self.scratch);
        pages.clear();
        self.s.tree.take_host_evictions(&mut pages);
        if !pages.is_empty() {
            let new = self.s.write_storage(&pages);
            let bytes = self.s.bytes(new);
            let d = storage_time_ns(bytes, self.s.cfg.links.storage_write_bandwidth.0)
                + self.s.cfg.links.storage_latency.0;
            self.swrite.transfer(now, d);
        }
        self.scratch = pages;
    }

    /// A request's decode of `output` tokens (`CostModel::decode_ns`) with HiCache's
    /// per-step synchronisation of each of its iterations (`output ÷` the tokens an
    /// iteration makes, rounded up).
    fn decode_ns(&self, output: u64, batch: u64, ctx: u64) -> Nanos {
        let iterations = (output as f64 / self.cost.tokens_per_iteration()).ceil() as u64;
        self.cost.decode_ns(output, batch, ctx) + self.step_sync * iterations
    }

    /// One decode iteration (`CostModel::decode_iteration_ns`) with HiCache's per-step
    /// synchronisation (`check_hicache_events` runs every iteration, decode too).
    fn decode_iteration_ns(&self, batch: u64, ctx: u64) -> Nanos {
        self.cost.decode_iteration_ns(batch, ctx) + self.step_sync
    }

    /// With the GPU free and no prefill batch to run, one decode step of every decoding
    /// request (`decode_timeline: interleaved`; `get_next_batch_to_run` runs the
    /// decode batch when no prefill batch forms): `step(batch, mean context)`.
    fn start_decode_step(&mut self, now: Nanos) {
        if self.hold_decode {
            // A speculative draft's prefill-first step: the step it holds pays the polls.
            return;
        }
        // The prefetch polls of the iteration that found no prefill batch (none from
        // any other caller).
        let polls = std::mem::take(&mut self.poll_sync_due);
        if self.gpu_busy || self.decoding.is_empty() {
            return;
        }
        if self.kv {
            // `update_running_batch` → `check_decode_mem` before the step.
            self.decode_memory(now, true);
            if self.decoding.is_empty() {
                // The last request was aborted: the scheduler's next iteration sees
                // the queue with the device free.
                self.q.schedule_at(now, Ev::Tick);
                return;
            }
        }
        let b = self.decoding.len() as u64;
        let ctx = self.decoding.iter().map(|d| d.ctx).sum::<u64>() / b;
        self.s.m.prefetch_poll_all_reduces += polls;
        let dur = (self.decode_iteration_ns(b, ctx) + polls * self.poll_sync).max(1);
        self.gpu_start(now + dur, Ev::DecodeStep);
    }

    /// A decode step ended: every decoding request has one more token (with a
    /// speculative draft, its mean acceptance, the fraction carried); those done finish
    /// (their prefix unlocked, their slot in the running batch freed).
    fn decode_step_done(&mut self) {
        let now = self.q.now();
        self.gpu_busy = false;
        if self.lockstep {
            // Every `--load-snapshot-publish-interval` (15) decode iterations.
            self.decode_publish += 1;
            if self.decode_publish >= LOAD_SNAPSHOT_PUBLISH_INTERVAL {
                self.publish(now);
            }
        }
        let gain = self.cost.tokens_per_iteration();
        let mut i = 0;
        while i < self.decoding.len() {
            let d = &mut self.decoding[i];
            let t = d.carry + gain;
            let n = t.floor();
            d.carry = t - n;
            let n = (n as u32).min(d.remaining);
            d.remaining -= n;
            d.ctx += u64::from(n);
            if d.remaining == 0 {
                let d = self.decoding.swap_remove(i);
                self.finish_decoding(d, now);
            } else {
                i += 1;
            }
        }
    }

    /// Puts the backups made since the last call on the D2H link as one op
    /// (`start_writing` merges queued writes; one run per node).
    fn flush_backups(&mut self, now: Nanos) {
        self.recs.clear();
        self.s.tree.take_backups(&mut self.recs);
        if self.recs.is_empty() {
            return;
        }
        let pages: u64 = self.recs.iter().map(|r| r.pages).sum();
        let d = self
            .s
            .cfg
            .links
            .backup_ns(self.s.bytes(pages), self.recs.len() as u64);
        let t = self.d2h.transfer(now, d);
        // write_back backups are not pinned on device; their L3 write is issued now,
        // after the blocking flush (`writing_check(write_back=True)`), on the
        // storage-write link, and the host copy the eviction pinned for it
        // (`TreeConfig::storage_backup_pins`) is released at the storage ack.
        if self.s.storage.is_some() {
            let mut pins = self.s.tree.take_storage_pins();
            for i in 0..self.recs.len() {
                let r = self.recs[i];
                if r.locked || self.s.tree.config().l3_at_host_eviction {
                    continue;
                }
                let end = self.storage_backup(&r, t, false);
                if let Some(k) = pins.iter().position(|&x| x == r.node) {
                    pins.swap_remove(k);
                    match end {
                        Some(end) => self.q.schedule_at(end, Ev::StorageAck { node: r.node }),
                        None => self.s.tree.release_host(r.node),
                    }
                }
            }
            for x in pins {
                self.s.tree.release_host(x);
            }
        }
        let recs = std::mem::take(&mut self.recs);
        let id = match self.free_acks.pop() {
            Some(id) => {
                self.acks[id as usize] = Some(recs);
                id
            }
            None => {
                self.acks.push(Some(recs));
                (self.acks.len() - 1) as u32
            }
        };
        self.q.schedule_at(t, Ev::D2hAck(id));
    }

    /// `writing_check`: unpin the nodes; start their L3 backups.
    fn d2h_ack(&mut self, a: u32) {
        let now = self.q.now();
        let recs = self.acks[a as usize].take().expect("ack exists");
        self.free_acks.push(a);
        for r in &recs {
            self.s.tree.backup_acked(r);
            if r.locked && self.s.storage.is_some() && !self.s.tree.config().l3_at_host_eviction {
                self.storage_backup(r, now, true);
            }
        }
        self.recs = recs;
        self.recs.clear();
        // Backups made by evictions outside a batch end.
        self.flush_backups(now);
    }

    /// `pages` written to L3 by a write that ends at `end`: in the store from then on, at
    /// once when it has ended. The backup thread's `batch_set_v1` puts the keys as the
    /// write completes (`managers/cache_controller.py: _page_backup`, 0.5.14–0.5.23), so
    /// a `batch_exists` before that misses them, the writer's as any other reader's of
    /// a shared store.
    fn store_at(&mut self, end: Nanos, pages: &[PageKey]) {
        if end <= self.q.now() {
            self.s.write_storage(pages);
            return;
        }
        let w = match self.free_writes.pop() {
            Some(w) => w,
            None => {
                self.writes.push(Vec::new());
                (self.writes.len() - 1) as u32
            }
        };
        let slot = &mut self.writes[w as usize];
        slot.clear();
        slot.extend_from_slice(pages);
        self.q.schedule_at(end, Ev::StorageWritten(w));
    }

    /// `write_backup_storage`: the backup's pages go to L3 on the storage-write link —
    /// all of them, the head fragments of a node split since the backup included
    /// ([`HiRadixTree::backup_span`](crate::cache::HiRadixTree::backup_span)); with
    /// `pin`, the node's host copy is protected until the storage ack.
    fn storage_backup(
        &mut self,
        rec: &crate::cache::BackupRecord,
        at: Nanos,
        pin: bool,
    ) -> Option<Nanos> {
        let node = rec.node;
        let mut pages = std::mem::take(&mut self.scratch);
        if !self.s.tree.backup_span(rec, &mut pages) {
            self.scratch = pages;
            return None;
        }
        let bytes = self.s.bytes(pages.len() as u64);
        let d = storage_time_ns(bytes, self.s.cfg.links.storage_write_bandwidth.0)
            + self.s.cfg.links.storage_latency.0;
        let t = self.swrite.transfer(at, d);
        self.store_at(t, &pages);
        if pin && self.s.tree.node(node).backed_up {
            self.s.tree.protect_host(node);
            self.q.schedule_at(t, Ev::StorageAck { node });
        }
        self.scratch = pages;
        Some(t)
    }
}
