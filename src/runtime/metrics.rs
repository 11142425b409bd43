//! `ReplayMetrics`: the outcome of one replay. Field names are used verbatim as JSON
//! keys and CSV columns.

use serde::Serialize;

/// The hit-rate definitions, for the CLI to print next to any figure.
pub fn definitions() -> &'static str {
    "hit tokens are longest-prefix, per request, at page granularity: a request's prompt \
pages are matched from the start of the prompt; the matched device pages are `device` hits, \
the following evicted-but-backed-up pages are `host` hits (loaded back only if at least \
load_back_threshold tokens), the following pages fetched from L3 are `storage` hits; \
everything after is a miss; a trailing partial page is always a miss. \
hit_rate = hit tokens / input tokens (token-weighted over all measured requests); \
page_hit_rate = hit pages / whole prompt pages; total = device + host + storage. \
Only requests after warmup_requests are counted. Tree eviction is SGLang's leaf-only \
LRU unless lru_mode = plain_page."
}

/// One timeline point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelinePoint {
    /// Request index (timing off) or the number of requests that arrived (timing on).
    pub request_index: u64,
    /// Virtual time, ns (0 with timing off).
    pub time_ns: u64,
    /// Host pages holding copies of device-resident nodes.
    pub host_device_resident_pages: u64,
    /// Host pages of host-only nodes.
    pub host_only_pages: u64,
    pub device_pages: u64,
    /// Cumulative hit rates (token-weighted) since warm-up.
    pub device_hit_rate: f64,
    pub host_hit_rate: f64,
    pub storage_hit_rate: f64,
    pub total_hit_rate: f64,
}

/// Where the measured requests' time to first token went in the timed replay, as means
/// in seconds over `requests`; the parts add up to `mean_s` (each request's TTFT
/// splits exactly into them, in integer nanoseconds; the means agree to rounding):
/// - `tokenize_s`: from the client's send until the TokenizerManager has encoded the
///   request (its encode and its queue, `runtime::frontend`);
/// - `request_overhead_s`: the request's fixed way through the server until the
///   scheduler sees it (`request_overhead`, `runtime::frontend`);
/// - `queue_s`: waiting in the scheduler's queue until a prefill batch takes it (the GPU
///   busy with an earlier batch, `--max-running-requests`, the batch's token budget, no
///   device room, an L3 prefetch not yet allowed to end);
/// - `hit_cost_s`: `compute.hit_cost_per_cached_token` (opt-in, not an SGLang rule);
/// - `hicache_sync_s`: HiCache's per-step synchronisation of the batch's scheduler
///   iterations (`compute.hicache_step_sync`, `crate::release::step_sync`) and the
///   all-reduces of the L3 prefetch polls of the iteration that formed it
///   (`compute.prefetch_poll_sync`);
/// - `load_back_s`: the host→device load-back not hidden under the forward (the copy
///   and its link's queue, minus what the layer pipeline overlaps);
/// - `forward_s`: the batch's prefill forward;
/// - `dp_wait_s`: with DP attention, the wait for the slowest rank's forward.
///
/// Fixed per-iteration costs (the scheduler's loop, CUDA-graph launch) and HiCache's own
/// bookkeeping (its tree's work) are not in the time model: they are in no part.
/// HiCache's per-step synchronisation is (`hicache_sync_s`), and so is the fixed
/// per-request way where it is charged (`request_overhead_s`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct TtftBreakdown {
    pub requests: u64,
    pub mean_s: f64,
    pub tokenize_s: f64,
    /// Every request's fixed way through the server (`request_overhead`); 0, and not
    /// written, without it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub request_overhead_s: f64,
    pub queue_s: f64,
    pub hit_cost_s: f64,
    /// HiCache's per-step synchronisation; 0, and not written, without it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hicache_sync_s: f64,
    pub load_back_s: f64,
    pub forward_s: f64,
    /// DP attention: the wait for the other ranks' forwards (every forward ends with
    /// the slowest rank's); 0, and not written, with one rank.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dp_wait_s: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

impl TtftBreakdown {
    /// The parts, named as the text output names them, with their share of the mean.
    pub fn shares(&self) -> [(&'static str, f64, f64); 8] {
        let share = |x: f64| {
            if self.mean_s > 0.0 {
                x / self.mean_s
            } else {
                0.0
            }
        };
        [
            ("tokenize", self.tokenize_s, share(self.tokenize_s)),
            (
                "request overhead",
                self.request_overhead_s,
                share(self.request_overhead_s),
            ),
            ("queue", self.queue_s, share(self.queue_s)),
            ("hit cost", self.hit_cost_s, share(self.hit_cost_s)),
            (
                "HiCache sync",
                self.hicache_sync_s,
                share(self.hicache_sync_s),
            ),
            ("load-back", self.load_back_s, share(self.load_back_s)),
            ("prefill forward", self.forward_s, share(self.forward_s)),
            ("DP wait", self.dp_wait_s, share(self.dp_wait_s)),
        ]
    }
}

/// Outcome of a replay.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ReplayMetrics {
    /// Requests replayed (including warm-up).
    pub requests: u64,
    /// Requests counted in the hit metrics (after warm-up).
    pub measured_requests: u64,
    /// Prompt tokens of measured requests.
    pub input_tokens: u64,
    /// Whole prompt pages of measured requests.
    pub input_pages: u64,
    pub device_hit_tokens: u64,
    pub host_hit_tokens: u64,
    pub storage_hit_tokens: u64,
    pub miss_tokens: u64,
    pub total_hit_tokens: u64,
    pub device_hit_rate: f64,
    pub host_hit_rate: f64,
    pub storage_hit_rate: f64,
    pub total_hit_rate: f64,
    pub device_page_hit_rate: f64,
    pub host_page_hit_rate: f64,
    pub storage_page_hit_rate: f64,
    pub total_page_hit_rate: f64,
    /// Host hits too short to load back (under load_back_threshold), counted as misses.
    pub load_back_skipped_tokens: u64,
    /// Bytes moved host → device.
    pub load_back_bytes: u64,
    /// Bytes moved device → host (write_backup).
    pub backup_bytes: u64,
    /// Bytes moved storage → host.
    pub prefetch_bytes: u64,
    /// Bytes written host → storage.
    pub l3_write_bytes: u64,
    /// Prefetches issued / dropped by the capacity limit / under the threshold.
    pub prefetches_issued: u64,
    pub prefetches_rate_limited: u64,
    /// L3 re-queries of waiting requests whose prefetch missed (0.5.20+ retries).
    pub prefetch_retries: u64,
    /// Timed replay: the blocking all-reduces of L3 prefetches' admission polls and
    /// terminations, charged at `compute.prefetch_poll_sync` each
    /// (`crate::release::step_sync::prefetch_poll_all_reduces`); 0, and not written,
    /// when none is charged.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub prefetch_poll_all_reduces: u64,
    /// Device pages freed by eviction (demoted or deleted).
    pub device_evicted_pages: u64,
    /// Host pages freed by evict_host.
    pub host_evicted_pages: u64,
    /// L3 pages evicted (bounded L3).
    pub storage_evicted_pages: u64,
    /// write_backup calls that found no host room even after evict_host.
    pub failed_backups: u64,
    /// Tokens freed from the device without any host copy under write_back (V1 drop).
    pub tokens_dropped_without_backup: u64,
    /// Requests whose pages could not all be cached on the device (too few free pages).
    pub insert_truncated_requests: u64,
    /// Timed replay: requests retracted from a decode step that could not get its KV
    /// pages (`retract_decode`, `runtime::timed::kv_budget`), each counted per
    /// retraction; 0, and not written, when none was.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub retracted_requests: u64,
    /// Timed replay: decode steps that retracted requests.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub retraction_steps: u64,
    /// Timed replay: the last request of a decode batch aborted because even alone its
    /// next step found no KV page ("Out of memory even after retracting all other
    /// requests").
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub decode_oom_aborts: u64,
    pub final_device_pages: u64,
    pub final_host_device_resident_pages: u64,
    pub final_host_only_pages: u64,
    pub peak_host_device_resident_pages: u64,
    pub peak_host_only_pages: u64,
    pub peak_host_pages: u64,
    pub final_storage_pages: u64,
    /// TTFT percentiles in seconds (timing on only).
    pub ttft_p50_s: Option<f64>,
    pub ttft_p90_s: Option<f64>,
    pub ttft_p99_s: Option<f64>,
    /// Virtual time at the end (timing on), seconds.
    pub makespan_s: Option<f64>,
    /// Mean time per output token after the first over the measured requests with two
    /// or more output tokens, seconds (timing on; not written otherwise, and not when
    /// no request decodes). The prefill makes the first token; the decode the other
    /// `output - 1` (`runtime::timed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_mean_s: Option<f64>,
    /// Where the measured requests' TTFT went (timing on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_breakdown: Option<TtftBreakdown>,
    /// Per-round figures of a `runtime.bench` run (empty otherwise, and not written).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<super::rounds::RoundFigures>,
    /// Whole-run figures of a `runtime.bench` run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<super::rounds::BenchFigures>,
    /// Time series for plots (not a CSV column).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelinePoint>,
    /// With data-parallel ranks (`dp_ranks` > 1), each rank's own figures in rank order;
    /// the fields above are then the deployment's ([`super::dp::merge`]). Empty (and
    /// not written) for one tree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<ReplayMetrics>,
    /// With engines behind a router (`runtime.router.engines` > 1), each engine's own
    /// figures in the router's worker order; the fields above are then the fleet's
    /// (`runtime::router`). Empty (and not written) for one engine.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<ReplayMetrics>,
    /// The router's figures with engines behind it (not written for one engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<super::router::RouterFigures>,
    /// A prefill-decode disaggregated deployment's figures (`runtime.pd`; not written
    /// otherwise). The fields above are then the prefill servers' hits with the
    /// client's times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pd: Option<super::pd::PdFigures>,
}

impl ReplayMetrics {
    /// Fills the rate fields from the counters (hit pages per tier for page rates).
    pub fn finish_rates(&mut self, device_pages: u64, host_pages: u64, storage_pages: u64) {
        let r = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        self.total_hit_tokens =
            self.device_hit_tokens + self.host_hit_tokens + self.storage_hit_tokens;
        self.device_hit_rate = r(self.device_hit_tokens, self.input_tokens);
        self.host_hit_rate = r(self.host_hit_tokens, self.input_tokens);
        self.storage_hit_rate = r(self.storage_hit_tokens, self.input_tokens);
        self.total_hit_rate = r(self.total_hit_tokens, self.input_tokens);
        self.device_page_hit_rate = r(device_pages, self.input_pages);
        self.host_page_hit_rate = r(host_pages, self.input_pages);
        self.storage_page_hit_rate = r(storage_pages, self.input_pages);
        self.total_page_hit_rate = r(device_pages + host_pages + storage_pages, self.input_pages);
    }
}
