//! `ReplayConfig`: everything one replay needs, in six groups (capacities, tree policy,
//! prefetch, links, scheduler and compute, measurement). Its text form is one flat map,
//! a scenario's `runtime.replay` keys (names = CLI flags without dashes), read and
//! written through `ReplayFields` in the order outputs have always had.

use serde::{Deserialize, Serialize};

use crate::cache::{
    DeviceEvictAmount, EvictHostRule, EvictVersion, EvictionPolicy, HostMemoryMode, LruMode,
    PrefetchPolicy, TreeKind, WritePolicy,
};
use crate::domain::StorageBackend;
use crate::release::proposal::{L3WriteRule, LoadBackMode};
use crate::release::{
    BufferOnlyWriteBack, PrefetchTimeoutClock, PrefetchTimeoutTokens, StorageWriteGate,
};
use crate::sizing::PrefetchCapRule;
use crate::units::{Bandwidth, Duration, GB, NS_PER_MS, NS_PER_S, NS_PER_US};

use super::ReplayError;

/// Whether the replay models time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Pure cache replay: requests one after another in trace order, each = match,
    /// load_back, insert, release; transfers complete instantly.
    #[default]
    Off,
    /// Discrete-event replay: arrivals, a FIFO scheduler with a compute model, and
    /// transfers that occupy links.
    On,
}

/// How the timing-off replay drives the tree for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPattern {
    /// The simulator's: match the whole pages, lock, allocate the missing pages
    /// (evicting when short), cache what fits, insert, unlock.
    #[default]
    Simulator,
    /// 0.5.23's scheduler: match limited to `input_len − 1` tokens
    /// (`managers/schedule_batch.py: Req._compute_max_prefix_len`), demand
    /// `extend + 1 page` through `evict_to_free_tokens`
    /// (`mem_cache/allocation.py: alloc_paged_token_slots_extend`), allocate
    /// `ceil(input / P) − prefix` pages, insert the whole pages
    /// (`cache_unfinished_req`), free the partial last page, unlock.
    #[serde(rename = "scheduler_0_5_23")]
    Scheduler0523,
}

/// Where a timed replay's decode runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeTimeline {
    /// Decode beside the prefill timeline: a request decodes for
    /// `(output − 1) × step(running, context)` from its first token and never delays a
    /// prefill (every figure made before this policy).
    #[default]
    BesidePrefill,
    /// Decode steps occupy the GPU between prefill batches, as SGLang's scheduler
    /// interleaves them (`managers/scheduler.py: Scheduler.get_next_batch_to_run`: a new
    /// prefill batch when one can be formed, else one decode step of the running batch;
    /// 0.5.14-0.5.23, no mixed chunks): each step decodes one token of every decoding
    /// request in `step(batch, mean context)`, so TTFT under load includes decode time.
    Interleaved,
}

/// The order in which a timed replay's scheduler scans its waiting queue before each
/// prefill batch (`--schedule-policy`, `managers/schedule_policy.py:
/// SchedulePolicy.calc_priority`, 0.5.14–0.5.23). A replay without a clock admits each
/// request alone at its arrival, so no policy reorders anything there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulePolicy {
    /// First come, first served (SGLang's default; every cache-aware policy with the
    /// radix cache off).
    #[default]
    Fcfs,
    /// Longest prefix match ([`crate::runtime::timed::lpm`]): with at most 128 waiting
    /// requests, the queue sorted by each one's cached prefix (device and host), the
    /// ones whose prefix another waiting request already brings (in-batch prefix
    /// caching) last; above 128, FCFS.
    Lpm,
}

fn is_fcfs(p: &SchedulePolicy) -> bool {
    *p == SchedulePolicy::Fcfs
}

/// Whether a timed replay's decoding requests hold KV in the device pool, and what
/// admission and decode do about it (`runtime::timed::kv_budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeMemory {
    /// SGLang's rules (0.5.14-0.5.23): a decoding request takes one more KV slot per
    /// output token (a page when its length crosses a page boundary); `PrefillAdder`
    /// admits against the free + evictable pool minus the running requests' reserved
    /// future tokens (`new_token_ratio`) and the new request's `max_new_tokens`; a decode
    /// step that cannot get its pages retracts requests (`retract_decode`).
    #[default]
    Sglang,
    /// The replay before these rules: a request holds its prompt's pages only, admission
    /// asks for the prompt's missing pages, nothing is retracted.
    PromptOnly,
}

/// One replay's configuration, in the groups the replay reads it by. Its text form (a
/// scenario's `runtime.replay` keys, a sweep's `runtime.replay.*` axes, the `config` of a
/// replay's JSON output) is one flat map, key for key and in the order it always had
/// ([`ReplayFields`]): the groups are the code's, not the YAML's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(from = "ReplayFields", into = "ReplayFields")]
pub struct ReplayConfig {
    /// The tiers' sizes: pages of `page_size` tokens, and the KV bytes a token carries.
    pub capacities: Capacities,
    /// How the radix tree backs up, evicts and loads back: SGLang's HiCache policies, and
    /// the tree and controller rules of the release.
    pub policy: TreePolicy,
    /// Storage (L3) prefetch: the cache-mode capacity rule, the termination policy, the
    /// timeout formula and the re-queries.
    pub prefetch: Prefetch,
    /// The copy links: host <-> device, storage, and what one transfer costs on them.
    pub links: Links,
    /// The timed replay's scheduler and compute model: forward speeds or cost model, batch
    /// limits, idle polling.
    pub scheduler: Scheduler,
    /// Whether time is modelled, and what the replay measures and checks.
    pub measurement: Measurement,
    /// The TokenizerManager a text request passes before the scheduler (timed replay).
    pub frontend: super::frontend::Frontend,
}

/// The tiers' sizes: pages of `page_size` tokens, and the KV bytes a token carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacities {
    /// Tokens per page (SGLang `--page-size`; HiCache commonly 64).
    pub page_size: u32,
    /// Device (L1) KV pool, pages.
    pub l1_pages: u64,
    /// Host (L2) pool, pages (0 = no host tier).
    pub l2_pages: u64,
    /// Storage (L3) capacity in pages; `None` = no L3 unless `l3_unbounded`.
    pub l3_pages: Option<u64>,
    /// L3 present with unbounded capacity (overrides `l3_pages`).
    pub l3_unbounded: bool,
    /// KV bytes per token, all layers (for transfer sizes and byte counters).
    pub bytes_per_token: u64,
    /// Layers (H2D is issued layer by layer: one run overhead per layer).
    pub num_layers: u32,
    /// Data-parallel ranks, each with its own scheduler, radix tree and pools of the
    /// sizes above (`--dp-size` with `--enable-dp-attention`: a scenario refuses DP
    /// without it); requests go to them round-robin ([`super::dp`]), and the timed
    /// replay runs their forwards in lockstep (`timed::lockstep`). 1: one tree.
    pub dp_ranks: u32,
    /// How the `DataParallelController` picks a rank (`--load-balance-method`); the
    /// load-reading methods run in the timed replay only.
    pub dp_balance: super::dp::DpBalance,
    /// Which of a deployment's schedulers (DP-attention ranks, engines) share one L3
    /// store ([`super::l3_store::L3Scope`]; default `fleet`, every one).
    pub l3_scope: super::l3_store::L3Scope,
    /// The nodes each engine spans (`--nnodes`), its DP-attention ranks split evenly
    /// over them in order: which ranks share a node's store under `l3_scope: node`. 1:
    /// one node.
    pub nodes: u32,
    /// A sliding-window model's SWA pool (`SWATokenToKVPoolAllocator`'s second pool)
    /// and window: the tree then runs 0.5.23's SWA component
    /// ([`crate::cache::SwaRadixTree`]). `None`: one full-attention pool (every output
    /// as before). Only the timing-off replay with `call_pattern: scheduler_0_5_23`,
    /// `tree: unified_0_5_23`, LRU, no host tier and no L3 runs it; anything else with
    /// an SWA pool is refused.
    pub swa: Option<SwaPool>,
}

/// The SWA pool of a hybrid sliding-window model (SGLang 0.5.23:
/// `mem_cache/allocator/swa.py: SWATokenToKVPoolAllocator`, `swa_attn_allocator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwaPool {
    /// SWA pool, pages of `page_size` tokens.
    pub pages: u64,
    /// The tree's window in tokens (`swa_retain_window = max(sliding_window_size,
    /// draft_swa_window)`, `components/swa.py: SWAComponent.__init__`).
    pub window: u32,
    /// Requests decode their trace's output tokens on the SWA tree (the
    /// prefill-to-decode checkpoint, `maybe_evict_swa`, one decode slot per token,
    /// the final insert of prompt and output); false (the default, not written): every
    /// request ends at its prefill, one output token.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decode: bool,
}

impl Default for Capacities {
    fn default() -> Self {
        Self {
            page_size: 64,
            l1_pages: 4096,
            l2_pages: 8192,
            l3_pages: None,
            l3_unbounded: false,
            // Llama-3-8B-like bf16 MHA: 2 * 8 heads * 128 dim * 2 B * 32 layers.
            bytes_per_token: 131_072,
            num_layers: 32,
            dp_ranks: 1,
            dp_balance: super::dp::DpBalance::RoundRobin,
            l3_scope: super::l3_store::L3Scope::Fleet,
            nodes: 1,
            swa: None,
        }
    }
}

/// How the radix tree backs up, evicts and loads back: SGLang's HiCache policies, and
/// the tree and controller rules of the release.
#[derive(Debug, Clone, PartialEq)]
pub struct TreePolicy {
    pub write_policy: WritePolicy,
    /// Every strategy but `tlru` (not modelled: the tree keeps no T-LRU history).
    pub eviction_policy: EvictionPolicy,
    pub lru_mode: LruMode,
    pub evict_host_rule: EvictHostRule,
    pub evict_version: EvictVersion,
    /// How much the tree is asked to evict when the device pool is short.
    pub device_evict_amount: DeviceEvictAmount,
    /// Which radix tree: `v1` (HiRadixCache) or `unified_0_5_23` (0.5.23's
    /// UnifiedRadixCache, which always evicts the shortfall).
    pub tree: TreeKind,
    /// How the timing-off replay drives the tree (`simulator` or `scheduler_0_5_23`).
    pub call_pattern: CallPattern,
    /// Host hits shorter than this many tokens are not loaded back (SGLang: 10).
    pub load_back_threshold: u32,
    pub host_memory_mode: HostMemoryMode,
    /// What a `buffer_only` host writes to storage (`every_backup`, or from 0.5.19
    /// `write_threshold`: what the tree backs up).
    pub storage_write_gate: StorageWriteGate,
    /// `buffer_only` with `write_back`: an error (≤ 0.5.21) or run as `write_through`
    /// (0.5.22+ `arg_groups/hicache_hook.py`).
    pub buffer_only_write_back: BufferOnlyWriteBack,
    /// How a host hit is loaded back ([`LoadBackMode`]; per node only under the what-if
    /// of sglang PR 39395).
    pub load_back: LoadBackMode,
    /// The write-back watermark of the what-if of sglang PR 40576 (`None`: write_back
    /// copies at eviction only, as every release).
    pub write_back_threshold: Option<f64>,
    /// When cache mode writes L3 ([`L3WriteRule`]; at host eviction only under the what-if
    /// of sglang PR 39845).
    pub l3_write: L3WriteRule,
}

impl Default for TreePolicy {
    fn default() -> Self {
        Self {
            write_policy: WritePolicy::default(),
            eviction_policy: EvictionPolicy::default(),
            lru_mode: LruMode::default(),
            evict_host_rule: EvictHostRule::default(),
            evict_version: EvictVersion::default(),
            device_evict_amount: DeviceEvictAmount::default(),
            tree: TreeKind::default(),
            call_pattern: CallPattern::default(),
            load_back_threshold: 10,
            host_memory_mode: HostMemoryMode::default(),
            storage_write_gate: StorageWriteGate::EveryBackup,
            buffer_only_write_back: BufferOnlyWriteBack::Error,
            load_back: LoadBackMode::Batched,
            write_back_threshold: None,
            l3_write: L3WriteRule::AtHostAdmission,
        }
    }
}

/// Storage (L3) prefetch: the cache-mode capacity rule, the termination policy, the
/// timeout formula and the re-queries.
#[derive(Debug, Clone, PartialEq)]
pub struct Prefetch {
    /// The cache-mode rule; buffer_only mode caps staging at its own
    /// ([`PrefetchCapRule::in_mode`]) whatever this names.
    pub prefetch_capacity_rule: PrefetchCapRule,
    pub prefetch_policy: PrefetchPolicy,
    /// `--hicache-storage-prefetch-threshold`-like floor in tokens; the effective
    /// threshold is `max(prefetch_threshold, page_size)` (default 256).
    pub prefetch_threshold: u32,
    /// Prefetch timeout policy: base, per 1024 tokens, and cap (2 s, 0.1 s, 30 s).
    pub prefetch_timeout_base: Duration,
    pub prefetch_timeout_per_ki_token: Duration,
    pub prefetch_timeout_max: Duration,
    /// When the prefetch timeout clock starts (`issue`, or 0.5.23's
    /// `first_blocked_poll`).
    pub prefetch_timeout_clock: PrefetchTimeoutClock,
    /// Which tokens the timeout counts (`fetched` pages, or 0.5.23's `requested` span).
    pub prefetch_timeout_tokens: PrefetchTimeoutTokens,
    /// Scheduler iterations between L3 re-queries of a waiting request whose prefetch
    /// missed (`--hicache-storage-prefetch-retry-poll-interval`; 0 = no retries).
    pub prefetch_retry_poll_interval: u32,
    /// Re-queries per request (`--hicache-storage-prefetch-retry-max-attempts`).
    pub prefetch_retry_max_attempts: u32,
}

impl Default for Prefetch {
    fn default() -> Self {
        Self {
            prefetch_capacity_rule: PrefetchCapRule::default(),
            prefetch_policy: PrefetchPolicy::default(),
            prefetch_threshold: 256,
            prefetch_timeout_base: Duration(2 * NS_PER_S),
            prefetch_timeout_per_ki_token: Duration(100 * NS_PER_MS),
            prefetch_timeout_max: Duration(30 * NS_PER_S),
            prefetch_timeout_clock: PrefetchTimeoutClock::Issue,
            prefetch_timeout_tokens: PrefetchTimeoutTokens::Fetched,
            prefetch_retry_poll_interval: 0,
            prefetch_retry_max_attempts: 0,
        }
    }
}

/// The copy links: host <-> device, storage, and what one transfer costs on them.
#[derive(Debug, Clone, PartialEq)]
pub struct Links {
    pub h2d_bandwidth: Bandwidth,
    /// Host DRAM read bandwidth one rank's load-back can have when the node's ranks
    /// load together: the node's `host_memory_bandwidth` ÷ the ranks loading at once
    /// (all TP ranks of a load-back read their share of the same pages at the same
    /// time: `managers/cache_controller.py: HiCacheController.start_loading`, every
    /// release). The H2D rate is `min(h2d_bandwidth, this)`. Unset: each rank's H2D
    /// link is the only limit (outputs made before it keep their bytes).
    pub host_read_share: Option<Bandwidth>,
    /// The SM copy kernel of a `--hicache-io-backend kernel` load-back
    /// ([`crate::release::copy_kernel::LoadBackKernel`]: `register_2cta` 0.5.14–0.5.20,
    /// `tma_4cta` 0.5.21+): a load-back takes the longer of its link time and the
    /// kernel's. Unset (`direct`, or a config built by hand): the link alone (outputs
    /// made before it keep their bytes).
    pub load_back_kernel: Option<crate::release::copy_kernel::LoadBackKernel>,
    pub d2h_bandwidth: Bandwidth,
    pub storage_read_bandwidth: Bandwidth,
    pub storage_write_bandwidth: Bandwidth,
    /// A storage backend preset (`src/runtime/storage_backends.yaml`, SGLang's
    /// `--hicache-storage-backend` names): its read / write bandwidth and latency fill
    /// the three storage fields a scenario does not set itself
    /// ([`super::storage_backend`]). Not written while unset (outputs made before it
    /// keep their bytes).
    pub storage_backend: Option<StorageBackend>,
    /// Fixed cost of one storage operation (one prefetch's read, one write), added to
    /// its `bytes ÷ bandwidth` on the storage link. Not written while 0.
    pub storage_latency: Duration,
    /// Fraction of the link bandwidth reached (SGLang simulator: 0.85).
    pub bandwidth_efficiency: f64,
    /// Fixed cost per H2D run (SGLang simulator: 6.67 µs).
    pub h2d_run_overhead: Duration,
    /// Fixed cost per D2H run (SGLang simulator: 4 µs).
    pub d2h_run_overhead: Duration,
}

impl Default for Links {
    fn default() -> Self {
        Self {
            h2d_bandwidth: Bandwidth(55.0 * GB as f64),
            host_read_share: None,
            load_back_kernel: None,
            d2h_bandwidth: Bandwidth(55.0 * GB as f64),
            storage_read_bandwidth: Bandwidth(10.0 * GB as f64),
            storage_write_bandwidth: Bandwidth(5.0 * GB as f64),
            storage_backend: None,
            storage_latency: Duration(0),
            bandwidth_efficiency: 0.85,
            h2d_run_overhead: Duration(6_670),
            d2h_run_overhead: Duration(4 * NS_PER_US),
        }
    }
}

/// The timed replay's scheduler and compute model: forward speeds or cost model, batch
/// limits, idle polling.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduler {
    /// Compute model: prefill throughput of the engine, tokens/s (new tokens only).
    pub prefill_tokens_per_s: f64,
    /// Compute model: decode speed of one request, tokens/s.
    pub decode_tokens_per_s: f64,
    /// Compute-time model of the timed replay (`source: fixed` = the two speeds
    /// above; `table` / `roofline`: `runtime::cost`).
    pub compute: super::cost::Compute,
    /// Whether decode steps take GPU time between prefill batches
    /// (`beside_prefill`, the default, or `interleaved`). Not written while default.
    pub decode_timeline: DecodeTimeline,
    /// Requests running (prefill or decode) at once.
    pub max_running_requests: u32,
    /// `max_running_requests` is the server's (`--max-running-requests`, or the
    /// speculative reset): each DP-attention rank runs `max(1, it // dp_ranks)`
    /// (`resolve_max_num_reqs`). False: the replay's own default, not divided.
    pub max_running_requests_split: bool,
    /// Tokens admitted into one prefill batch (at least one request always goes).
    pub max_prefill_tokens: u32,
    /// KV growth during decode, the admission reservation for output tokens, and
    /// retraction (`sglang`, the default) or the prompt's pages only (`prompt_only`).
    /// Not written while default.
    pub decode_memory: DecodeMemory,
    /// `--schedule-conservativeness` (default 1.0): scales `new_token_ratio`'s start
    /// (`SGLANG_INIT_NEW_TOKEN_RATIO` 0.7 × it, at most 1). Not written while 1.
    pub schedule_conservativeness: f64,
    /// `--schedule-policy` as the timed replay runs it. Not written while FCFS.
    pub schedule_policy: SchedulePolicy,
    /// The `max_new_tokens` sampling parameter every request sends (what admission
    /// reserves). Unset (the default): each request's own output length, as benchmark
    /// clients send `max_tokens = output_len`. A request whose trace output is longer
    /// stops at it (`FINISH_LENGTH`). Not written while unset.
    pub max_new_tokens: Option<u32>,
    /// The requests' `ignore_eos` sampling parameter (default true: `bench_serving`
    /// sends `ignore_eos = not --disable-ignore-eos`, `benchmark/serving.py`, so a
    /// request makes exactly its trace output). With it, admission reserves a running
    /// request's whole remaining output (0.5.23 `_get_running_request_total_token_offset`:
    /// ratio 1, 0.5.22+); false: `new_token_ratio` × it, as 0.5.14–0.5.21 do either way
    /// ([`Scheduler::running_offset`]). Not written while true.
    pub ignore_eos: bool,
    /// Whether an `ignore_eos` running request reserves its whole remaining output
    /// (0.5.22+) or `new_token_ratio` of it (0.5.14–0.5.21): the release's rule
    /// ([`crate::release::RunningOffset`], set by [`ReplayConfig::with_release`]; not a
    /// `runtime.replay` key, the release names it).
    pub running_offset: crate::release::RunningOffset,
    /// Which requests a PD decode server's HiCache restore holds back: the release's rule
    /// ([`crate::release::DecodeRestoreGate`], set by [`ReplayConfig::with_release`]).
    pub decode_restore_gate: crate::release::DecodeRestoreGate,
    /// While the GPU is idle but requests wait, SGLang's scheduler loop spins
    /// (`Scheduler.on_idle`: `time.sleep(0)`); the timed replay counts one iteration
    /// (one admission poll, one retry step) per this interval. Not an SGLang figure.
    pub scheduler_idle_poll: Duration,
}

impl Default for Scheduler {
    fn default() -> Self {
        Self {
            prefill_tokens_per_s: 20_000.0,
            decode_tokens_per_s: 50.0,
            compute: super::cost::Compute::default(),
            decode_timeline: DecodeTimeline::BesidePrefill,
            max_running_requests: 64,
            max_running_requests_split: false,
            max_prefill_tokens: 16_384,
            decode_memory: DecodeMemory::Sglang,
            schedule_conservativeness: 1.0,
            schedule_policy: SchedulePolicy::Fcfs,
            max_new_tokens: None,
            ignore_eos: true,
            running_offset: crate::release::RunningOffset::WholeUnderIgnoreEos,
            decode_restore_gate: crate::release::DecodeRestoreGate::LatestCopy,
            scheduler_idle_poll: Duration(NS_PER_MS),
        }
    }
}

/// Whether time is modelled, and what the replay measures and checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub timing: Timing,
    /// Requests excluded from hit metrics at the start (still replayed).
    pub warmup_requests: u64,
    /// Points in the `timeline` series (0 = none).
    pub timeline_samples: u32,
    /// Re-derive leaf sets and invariants after every operation (slow; tests).
    pub debug_checks: bool,
}

impl Default for Measurement {
    fn default() -> Self {
        Self {
            timing: Timing::Off,
            warmup_requests: 0,
            timeline_samples: 0,
            debug_checks: false,
        }
    }
}

/// [`ReplayConfig`] as text: one flat map whose keys are the CLI flags without dashes,
/// in this order (the order a replay's JSON `config` is written in). Its serde
/// attributes are the text form's: defaults, unknown keys refused, fields left out while
/// they hold their default, the eviction policies the tree models.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ReplayFields {
    page_size: u32,
    l1_pages: u64,
    l2_pages: u64,
    l3_pages: Option<u64>,
    l3_unbounded: bool,
    write_policy: WritePolicy,
    #[serde(deserialize_with = "modelled_eviction_policy")]
    eviction_policy: EvictionPolicy,
    lru_mode: LruMode,
    evict_host_rule: EvictHostRule,
    evict_version: EvictVersion,
    device_evict_amount: DeviceEvictAmount,
    tree: TreeKind,
    call_pattern: CallPattern,
    prefetch_capacity_rule: PrefetchCapRule,
    prefetch_policy: PrefetchPolicy,
    prefetch_threshold: u32,
    load_back_threshold: u32,
    host_memory_mode: HostMemoryMode,
    timing: Timing,
    bytes_per_token: u64,
    num_layers: u32,
    h2d_bandwidth: Bandwidth,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host_read_share: Option<Bandwidth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    load_back_kernel: Option<crate::release::copy_kernel::LoadBackKernel>,
    d2h_bandwidth: Bandwidth,
    storage_read_bandwidth: Bandwidth,
    storage_write_bandwidth: Bandwidth,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::storage_backend::deserialize_opt"
    )]
    storage_backend: Option<StorageBackend>,
    #[serde(skip_serializing_if = "is_zero_duration")]
    storage_latency: Duration,
    bandwidth_efficiency: f64,
    h2d_run_overhead: Duration,
    d2h_run_overhead: Duration,
    prefill_tokens_per_s: f64,
    decode_tokens_per_s: f64,
    #[serde(skip_serializing_if = "super::cost::Compute::is_fixed")]
    compute: super::cost::Compute,
    #[serde(skip_serializing_if = "is_beside_prefill")]
    decode_timeline: DecodeTimeline,
    #[serde(
        skip_serializing_if = "is_zero_duration",
        deserialize_with = "crate::units::duration_with_unit"
    )]
    tokenize_per_token: Duration,
    #[serde(
        skip_serializing_if = "is_zero_duration",
        deserialize_with = "crate::units::duration_with_unit"
    )]
    request_overhead: Duration,
    max_running_requests: u32,
    /// Not written while false (every output as before).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    max_running_requests_split: bool,
    max_prefill_tokens: u32,
    #[serde(default, skip_serializing_if = "is_sglang_decode_memory")]
    decode_memory: DecodeMemory,
    #[serde(default = "one_f64", skip_serializing_if = "is_one_f64")]
    schedule_conservativeness: f64,
    #[serde(default, skip_serializing_if = "is_fcfs")]
    schedule_policy: SchedulePolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_new_tokens: Option<u32>,
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    ignore_eos: bool,
    prefetch_timeout_base: Duration,
    prefetch_timeout_per_ki_token: Duration,
    prefetch_timeout_max: Duration,
    prefetch_timeout_clock: PrefetchTimeoutClock,
    prefetch_timeout_tokens: PrefetchTimeoutTokens,
    prefetch_retry_poll_interval: u32,
    prefetch_retry_max_attempts: u32,
    scheduler_idle_poll: Duration,
    storage_write_gate: StorageWriteGate,
    buffer_only_write_back: BufferOnlyWriteBack,
    warmup_requests: u64,
    timeline_samples: u32,
    debug_checks: bool,
    /// Not written while 1 (one tree: every output as before).
    #[serde(skip_serializing_if = "is_one")]
    dp_ranks: u32,
    /// Not written while round-robin (SGLang's default: every output as before).
    #[serde(default, skip_serializing_if = "is_round_robin")]
    dp_balance: super::dp::DpBalance,
    /// Not written while `fleet` (every scheduler shares one store).
    #[serde(default, skip_serializing_if = "is_fleet")]
    l3_scope: super::l3_store::L3Scope,
    /// Not written while 1.
    #[serde(default = "one_u32", skip_serializing_if = "is_one")]
    nodes: u32,
    /// Not written while absent (no SWA pool: every output as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    swa: Option<SwaPool>,
    /// The what-ifs of open SGLang PRs ([`crate::release::proposal`]): not written while
    /// they hold every release's rule.
    #[serde(skip_serializing_if = "is_batched")]
    load_back: LoadBackMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    write_back_threshold: Option<f64>,
    #[serde(skip_serializing_if = "is_at_host_admission")]
    l3_write: L3WriteRule,
}

fn is_batched(m: &LoadBackMode) -> bool {
    *m == LoadBackMode::Batched
}

fn is_at_host_admission(r: &L3WriteRule) -> bool {
    *r == L3WriteRule::AtHostAdmission
}

fn is_fleet(s: &super::l3_store::L3Scope) -> bool {
    *s == super::l3_store::L3Scope::Fleet
}

fn one_u32() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Default for ReplayFields {
    fn default() -> Self {
        ReplayConfig::default().into()
    }
}

impl From<ReplayFields> for ReplayConfig {
    fn from(f: ReplayFields) -> Self {
        Self {
            capacities: Capacities {
                page_size: f.page_size,
                l1_pages: f.l1_pages,
                l2_pages: f.l2_pages,
                l3_pages: f.l3_pages,
                l3_unbounded: f.l3_unbounded,
                bytes_per_token: f.bytes_per_token,
                num_layers: f.num_layers,
                dp_ranks: f.dp_ranks,
                dp_balance: f.dp_balance,
                l3_scope: f.l3_scope,
                nodes: f.nodes,
                swa: f.swa,
            },
            policy: TreePolicy {
                write_policy: f.write_policy,
                eviction_policy: f.eviction_policy,
                lru_mode: f.lru_mode,
                evict_host_rule: f.evict_host_rule,
                evict_version: f.evict_version,
                device_evict_amount: f.device_evict_amount,
                tree: f.tree,
                call_pattern: f.call_pattern,
                load_back_threshold: f.load_back_threshold,
                host_memory_mode: f.host_memory_mode,
                storage_write_gate: f.storage_write_gate,
                buffer_only_write_back: f.buffer_only_write_back,
                load_back: f.load_back,
                write_back_threshold: f.write_back_threshold,
                l3_write: f.l3_write,
            },
            prefetch: Prefetch {
                prefetch_capacity_rule: f.prefetch_capacity_rule,
                prefetch_policy: f.prefetch_policy,
                prefetch_threshold: f.prefetch_threshold,
                prefetch_timeout_base: f.prefetch_timeout_base,
                prefetch_timeout_per_ki_token: f.prefetch_timeout_per_ki_token,
                prefetch_timeout_max: f.prefetch_timeout_max,
                prefetch_timeout_clock: f.prefetch_timeout_clock,
                prefetch_timeout_tokens: f.prefetch_timeout_tokens,
                prefetch_retry_poll_interval: f.prefetch_retry_poll_interval,
                prefetch_retry_max_attempts: f.prefetch_retry_max_attempts,
            },
            links: Links {
                h2d_bandwidth: f.h2d_bandwidth,
                host_read_share: f.host_read_share,
                load_back_kernel: f.load_back_kernel,
                d2h_bandwidth: f.d2h_bandwidth,
                storage_read_bandwidth: f.storage_read_bandwidth,
                storage_write_bandwidth: f.storage_write_bandwidth,
                storage_backend: f.storage_backend,
                storage_latency: f.storage_latency,
                bandwidth_efficiency: f.bandwidth_efficiency,
                h2d_run_overhead: f.h2d_run_overhead,
                d2h_run_overhead: f.d2h_run_overhead,
            },
            scheduler: Scheduler {
                prefill_tokens_per_s: f.prefill_tokens_per_s,
                decode_tokens_per_s: f.decode_tokens_per_s,
                compute: f.compute,
                decode_timeline: f.decode_timeline,
                max_running_requests: f.max_running_requests,
                max_running_requests_split: f.max_running_requests_split,
                max_prefill_tokens: f.max_prefill_tokens,
                decode_memory: f.decode_memory,
                schedule_conservativeness: f.schedule_conservativeness,
                schedule_policy: f.schedule_policy,
                max_new_tokens: f.max_new_tokens,
                ignore_eos: f.ignore_eos,
                // Not in the text form: the release's ([`ReplayConfig::with_release`]).
                running_offset: crate::release::RunningOffset::default(),
                decode_restore_gate: crate::release::DecodeRestoreGate::default(),
                scheduler_idle_poll: f.scheduler_idle_poll,
            },
            measurement: Measurement {
                timing: f.timing,
                warmup_requests: f.warmup_requests,
                timeline_samples: f.timeline_samples,
                debug_checks: f.debug_checks,
            },
            frontend: super::frontend::Frontend {
                tokenize_per_token: f.tokenize_per_token,
                request_overhead: f.request_overhead,
            },
        }
    }
}

impl From<ReplayConfig> for ReplayFields {
    fn from(c: ReplayConfig) -> Self {
        let ReplayConfig {
            capacities,
            policy,
            prefetch,
            links,
            scheduler,
            measurement,
            frontend,
        } = c;
        Self {
            page_size: capacities.page_size,
            l1_pages: capacities.l1_pages,
            l2_pages: capacities.l2_pages,
            l3_pages: capacities.l3_pages,
            l3_unbounded: capacities.l3_unbounded,
            write_policy: policy.write_policy,
            eviction_policy: policy.eviction_policy,
            lru_mode: policy.lru_mode,
            evict_host_rule: policy.evict_host_rule,
            evict_version: policy.evict_version,
            device_evict_amount: policy.device_evict_amount,
            tree: policy.tree,
            call_pattern: policy.call_pattern,
            prefetch_capacity_rule: prefetch.prefetch_capacity_rule,
            prefetch_policy: prefetch.prefetch_policy,
            prefetch_threshold: prefetch.prefetch_threshold,
            load_back_threshold: policy.load_back_threshold,
            host_memory_mode: policy.host_memory_mode,
            timing: measurement.timing,
            bytes_per_token: capacities.bytes_per_token,
            num_layers: capacities.num_layers,
            h2d_bandwidth: links.h2d_bandwidth,
            host_read_share: links.host_read_share,
            load_back_kernel: links.load_back_kernel,
            d2h_bandwidth: links.d2h_bandwidth,
            storage_read_bandwidth: links.storage_read_bandwidth,
            storage_write_bandwidth: links.storage_write_bandwidth,
            storage_backend: links.storage_backend,
            storage_latency: links.storage_latency,
            bandwidth_efficiency: links.bandwidth_efficiency,
            h2d_run_overhead: links.h2d_run_overhead,
            d2h_run_overhead: links.d2h_run_overhead,
            prefill_tokens_per_s: scheduler.prefill_tokens_per_s,
            decode_tokens_per_s: scheduler.decode_tokens_per_s,
            compute: scheduler.compute,
            decode_timeline: scheduler.decode_timeline,
            tokenize_per_token: frontend.tokenize_per_token,
            request_overhead: frontend.request_overhead,
            max_running_requests: scheduler.max_running_requests,
            max_running_requests_split: scheduler.max_running_requests_split,
            max_prefill_tokens: scheduler.max_prefill_tokens,
            decode_memory: scheduler.decode_memory,
            schedule_conservativeness: scheduler.schedule_conservativeness,
            schedule_policy: scheduler.schedule_policy,
            max_new_tokens: scheduler.max_new_tokens,
            ignore_eos: scheduler.ignore_eos,
            prefetch_timeout_base: prefetch.prefetch_timeout_base,
            prefetch_timeout_per_ki_token: prefetch.prefetch_timeout_per_ki_token,
            prefetch_timeout_max: prefetch.prefetch_timeout_max,
            prefetch_timeout_clock: prefetch.prefetch_timeout_clock,
            prefetch_timeout_tokens: prefetch.prefetch_timeout_tokens,
            prefetch_retry_poll_interval: prefetch.prefetch_retry_poll_interval,
            prefetch_retry_max_attempts: prefetch.prefetch_retry_max_attempts,
            scheduler_idle_poll: scheduler.scheduler_idle_poll,
            storage_write_gate: policy.storage_write_gate,
            buffer_only_write_back: policy.buffer_only_write_back,
            warmup_requests: measurement.warmup_requests,
            timeline_samples: measurement.timeline_samples,
            debug_checks: measurement.debug_checks,
            dp_ranks: capacities.dp_ranks,
            dp_balance: capacities.dp_balance,
            l3_scope: capacities.l3_scope,
            nodes: capacities.nodes,
            swa: capacities.swa,
            load_back: policy.load_back,
            write_back_threshold: policy.write_back_threshold,
            l3_write: policy.l3_write,
        }
    }
}

impl ReplayConfig {
    /// The H2D rate one rank's load-back reaches: its own link, or its share of the
    /// node's host DRAM bandwidth when that is lower.
    pub fn load_back_bandwidth(&self) -> f64 {
        self.links.load_back_bandwidth()
    }
}

impl Links {
    /// The H2D rate a load-back reaches: the link's, under the rank's share of the
    /// host's DRAM bandwidth when one is set.
    pub fn load_back_bandwidth(&self) -> f64 {
        match self.host_read_share {
            Some(b) => self.h2d_bandwidth.0.min(b.0),
            None => self.h2d_bandwidth.0,
        }
    }

    /// A load-back of `bytes` in `per_layer_runs` runs (a run per node and layer,
    /// `HiCacheController.start_loading`): the link's time, or the SM copy kernel's
    /// where it is slower (`release::copy_kernel`: `--hicache-io-backend kernel`).
    pub fn load_back_ns(&self, bytes: u64, per_layer_runs: u64) -> crate::units::Nanos {
        super::transfer::run_time_ns(
            bytes,
            per_layer_runs,
            self.load_back_bandwidth(),
            self.bandwidth_efficiency,
            self.h2d_run_overhead.0,
        )
        .max(
            self.load_back_kernel
                .map_or(0, |k| k.time_ns(bytes, per_layer_runs)),
        )
    }

    /// A backup of `bytes` in `runs` runs (a run per node) on the D2H link.
    pub fn backup_ns(&self, bytes: u64, runs: u64) -> crate::units::Nanos {
        super::transfer::run_time_ns(
            bytes,
            runs,
            self.d2h_bandwidth.0,
            self.bandwidth_efficiency,
            self.d2h_run_overhead.0,
        )
    }
}

/// Per-rank share of a node's host DRAM bandwidth when `ranks` ranks read at once.
pub fn host_read_share(host_memory_bandwidth: Bandwidth, ranks: u32) -> Bandwidth {
    Bandwidth(host_memory_bandwidth.0 / f64::from(ranks.max(1)))
}

fn is_round_robin(b: &super::dp::DpBalance) -> bool {
    *b == super::dp::DpBalance::RoundRobin
}

fn is_sglang_decode_memory(d: &DecodeMemory) -> bool {
    *d == DecodeMemory::Sglang
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn one_f64() -> f64 {
    1.0
}

fn is_one_f64(x: &f64) -> bool {
    *x == 1.0
}

fn is_beside_prefill(d: &DecodeTimeline) -> bool {
    *d == DecodeTimeline::BesidePrefill
}

fn is_zero_duration(d: &Duration) -> bool {
    d.0 == 0
}

/// `eviction_policy` of a replay: the strategies the tree models, with serde's own
/// messages ("unknown variant `tlru`, expected one of `lru`, …").
fn modelled_eviction_policy<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<EvictionPolicy, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Modelled {
        Lru,
        Lfu,
        Fifo,
        Mru,
        Filo,
        Priority,
        Slru,
    }
    Ok(match Modelled::deserialize(d)? {
        Modelled::Lru => EvictionPolicy::Lru,
        Modelled::Lfu => EvictionPolicy::Lfu,
        Modelled::Fifo => EvictionPolicy::Fifo,
        Modelled::Mru => EvictionPolicy::Mru,
        Modelled::Filo => EvictionPolicy::Filo,
        Modelled::Priority => EvictionPolicy::Priority,
        Modelled::Slru => EvictionPolicy::Slru,
    })
}

/// The eviction policies the replay models, in [`EvictionPolicy`]'s order: the list
/// serde's message gives (`modelled_eviction_policy`'s variants; a unit test holds them
/// to each other).
const MODELLED_EVICTION_POLICIES: &[&str] =
    &["lru", "lfu", "fifo", "mru", "filo", "priority", "slru"];

/// An eviction policy SGLang has but the replay's tree does not model (`tlru`), in
/// serde's own words ("unknown variant `tlru`, expected one of `lru`, …"): those a
/// deserialized `eviction_policy` meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", unknown_variant(.0))]
pub struct EvictionPolicyNotModelled(pub EvictionPolicy);

fn unknown_variant(p: &EvictionPolicy) -> serde::de::value::Error {
    use crate::domain::Choice;
    use serde::de::Error as _;
    serde::de::value::Error::unknown_variant(p.id(), MODELLED_EVICTION_POLICIES)
}

/// `p` if the replay models it, else the refusal a deserialized `eviction_policy` meets,
/// for a policy set typed from a scenario's server arguments: one wording either way.
pub fn modelled(p: EvictionPolicy) -> Result<EvictionPolicy, EvictionPolicyNotModelled> {
    use crate::domain::Choice;
    if MODELLED_EVICTION_POLICIES.contains(&p.id()) {
        Ok(p)
    } else {
        Err(EvictionPolicyNotModelled(p))
    }
}

/// How an uncapped prefetch timeout (0.5.19+) is held in `prefetch_timeout_max`: the
/// longest duration a scenario may hold (116 days, `units::MAX_DURATION_NS`), so it
/// survives the config's text round trip and `issued + timeout` cannot overflow.
pub const PREFETCH_TIMEOUT_UNCAPPED: Duration = Duration(crate::units::MAX_DURATION_NS);

impl ReplayConfig {
    /// The tree a release runs (`ReleaseRules::tree`): `HiRadixCache` up to 0.5.18
    /// (`tree: hiradix`), `UnifiedRadixCache` from 0.5.19 (`tree: unified_0_5_23`).
    /// The one mapping from a release to the replay's rules: the tree it runs
    /// and the controller it ships, both read from its `ReleaseRules`. Every replay a
    /// release drives (scenario pipeline, `replay --sglang`, the golden tests) starts
    /// from here.
    pub fn for_release(rules: &crate::release::ReleaseRules) -> Self {
        Self::default()
            .with_release(&rules.controller)
            .with_tree(rules.tree)
    }

    pub fn with_tree(mut self, t: TreeKind) -> Self {
        self.policy.tree = t;
        self
    }

    /// The controller a release ships (`release::ControllerRules`): device eviction
    /// amount and code path, prefetch capacity rule (cache mode), the prefetch timeout
    /// formula and its clock, storage re-queries, the `buffer_only` storage write gate
    /// and its `write_back` rule.
    pub fn with_release(mut self, c: &crate::release::ControllerRules) -> Self {
        self.policy.evict_version = c.evict_version;
        self.policy.device_evict_amount = c.device_evict;
        self.prefetch.prefetch_capacity_rule = c.prefetch_cap;
        let t = c.prefetch_timeout;
        self.prefetch.prefetch_timeout_base = Duration(t.base_ms * NS_PER_MS);
        self.prefetch.prefetch_timeout_per_ki_token = Duration(t.per_ki_token_ms * NS_PER_MS);
        self.prefetch.prefetch_timeout_max = t
            .max_ms
            .map_or(PREFETCH_TIMEOUT_UNCAPPED, |m| Duration(m * NS_PER_MS));
        self.prefetch.prefetch_timeout_tokens = t.tokens;
        self.prefetch.prefetch_timeout_clock = c.prefetch_timeout_clock;
        self.prefetch.prefetch_retry_poll_interval = c.prefetch_retries.poll_interval;
        self.prefetch.prefetch_retry_max_attempts = c.prefetch_retries.max_attempts;
        self.policy.storage_write_gate = c.storage_write_gate;
        self.policy.buffer_only_write_back = c.buffer_only_write_back;
        self.scheduler.running_offset = c.running_offset;
        self.scheduler.decode_restore_gate = c.decode_restore_gate;
        self.policy.load_back = c.load_back;
        self.policy.l3_write = c.l3_write;
        self.policy.write_back_threshold = match c.write_back_trigger {
            crate::release::proposal::WriteBackTrigger::AtEviction => None,
            crate::release::proposal::WriteBackTrigger::Watermark => {
                Some(crate::release::proposal::DEFAULT_WRITE_BACK_THRESHOLD)
            }
        };
        self
    }

    /// The storage backend preset of `b` applied (`storage_backends.yaml`): its read /
    /// write bandwidth and latency replace this config's, those it has no figure for
    /// stay. For library callers; a scenario's own storage figures win over the preset
    /// (`apply_overrides`).
    pub fn with_storage_backend(mut self, b: StorageBackend) -> Self {
        let p = super::storage_backend::preset(b);
        if let Some(b) = p.read {
            self.links.storage_read_bandwidth = b;
        }
        if let Some(b) = p.write {
            self.links.storage_write_bandwidth = b;
        }
        if let Some(d) = p.latency {
            self.links.storage_latency = d;
        }
        self.links.storage_backend = Some(b);
        self
    }

    /// Whether load-backs run one node at a time: the what-if of sglang PR 39395, which
    /// changes UnifiedRadixCache only and is off without a host tier
    /// (`serialize_load_back = flag and cache_controller is not None and buffer_pipeline
    /// is None`).
    pub fn serializes_load_back(&self) -> bool {
        self.policy.load_back == LoadBackMode::SerializedPerNode
            && self.policy.host_memory_mode == HostMemoryMode::Cache
            && self.policy.tree == TreeKind::Unified0523
    }

    /// HiCache's per-step synchronisation charged per scheduler iteration, ns
    /// (`compute.hicache_step_sync`): 0 without a host tier, where SGLang runs no
    /// `check_hicache_events` (`crate::release::step_sync`).
    pub fn hicache_step_sync_ns(&self) -> crate::units::Nanos {
        if self.capacities.l2_pages > 0 {
            self.scheduler.compute.hicache_step_sync.0
        } else {
            0
        }
    }

    /// One admission-poll all-reduce of an L3 prefetch, ns (`compute.prefetch_poll_sync`):
    /// 0 without a host tier or an L3 tier, where SGLang polls no prefetch.
    pub fn prefetch_poll_sync_ns(&self) -> crate::units::Nanos {
        if self.capacities.l2_pages > 0 && self.has_storage() {
            self.scheduler.compute.prefetch_poll_sync.0
        } else {
            0
        }
    }

    /// Whether an L3 tier exists.
    pub fn has_storage(&self) -> bool {
        self.capacities.l3_unbounded || self.capacities.l3_pages.is_some()
    }

    /// L3 capacity in pages (`u64::MAX` when unbounded, 0 when absent).
    pub fn l3_capacity(&self) -> u64 {
        if self.capacities.l3_unbounded {
            u64::MAX
        } else {
            self.capacities.l3_pages.unwrap_or(0)
        }
    }

    /// The write policy the replay runs: `write_back` under `buffer_only` becomes
    /// `write_through` where the release coerces it (0.5.22+
    /// `arg_groups/hicache_hook.py`; `buffer_only_write_back: coerce_write_through`).
    pub fn effective_write_policy(&self) -> WritePolicy {
        if self.policy.host_memory_mode == HostMemoryMode::BufferOnly
            && self.policy.write_policy == WritePolicy::WriteBack
            && self.policy.buffer_only_write_back == BufferOnlyWriteBack::CoerceWriteThrough
        {
            WritePolicy::WriteThrough
        } else {
            self.policy.write_policy
        }
    }

    /// `max(prefetch_threshold, page_size)` in tokens (`managers/cache_controller.py:
    /// HiCacheController.__init__`, where the storage backend is set up).
    pub fn effective_prefetch_threshold(&self) -> u64 {
        u64::from(
            self.prefetch
                .prefetch_threshold
                .max(self.capacities.page_size),
        )
    }

    /// `prefetch_capacity_limit` in tokens, under the host memory mode.
    pub fn prefetch_capacity_limit_tokens(&self) -> u64 {
        let ps = u64::from(self.capacities.page_size);
        self.prefetch
            .prefetch_capacity_rule
            .in_mode(self.policy.host_memory_mode)
            .limit_tokens(self.capacities.l2_pages * ps, self.capacities.l1_pages * ps)
    }

    /// Rejects impossible combinations with a message naming the field.
    pub fn validate(&self) -> Result<(), ReplayError> {
        let bad = |field: &'static str, message: String| {
            Err(ReplayError::InvalidConfig { field, message })
        };
        if self.capacities.page_size == 0 {
            return bad("page_size", "must be at least 1 token".into());
        }
        if !(1..=super::dp::MAX_DP_RANKS).contains(&self.capacities.dp_ranks) {
            return bad(
                "dp_ranks",
                format!("must be from 1 to {}", super::dp::MAX_DP_RANKS),
            );
        }
        if let Some(swa) = self.capacities.swa {
            // The SWA tree (`crate::cache::SwaRadixTree`) is 0.5.23's device tier under
            // the scheduler's call pattern, LRU, untimed or on one clock
            // (`timed::swa`); nothing else models the pool. DP ranks are each a tree of
            // their own, split before the untimed replay (`pipeline::run_replay`) or on
            // the timed one's lockstep clock (`timed::lockstep`); engines behind a router
            // are each a tree, untimed.
            let why = if swa.pages == 0 || swa.window == 0 {
                Some("the SWA pool needs at least one page and a window of at least one token")
            } else if self.measurement.timing == Timing::On
                && self.scheduler.decode_timeline == DecodeTimeline::Interleaved
            {
                Some(
                    "the timed replay with an SWA pool decodes beside the prefill only (decode_timeline: beside_prefill)",
                )
            } else if self.policy.call_pattern != CallPattern::Scheduler0523 {
                Some("an SWA pool is modelled under call_pattern: scheduler_0_5_23 only")
            } else if self.policy.tree != TreeKind::Unified0523 {
                Some(
                    "an SWA pool is modelled by tree: unified_0_5_23 only (SGLang 0.5.23's SWA component)",
                )
            } else if self.capacities.l2_pages > 0 || self.has_storage() {
                Some(
                    "an SWA pool is modelled on the device tier only: set l2_pages: 0 and no l3_pages / l3_unbounded",
                )
            } else if self.policy.eviction_policy != EvictionPolicy::Lru
                || self.policy.lru_mode != LruMode::LeafOnly
            {
                Some(
                    "an SWA pool is modelled with eviction_policy: lru and lru_mode: leaf_only only",
                )
            } else {
                None
            };
            if let Some(why) = why {
                return bad("swa", why.into());
            }
        }
        if self.policy.eviction_policy == EvictionPolicy::Tlru {
            return bad(
                "eviction_policy",
                "tlru is not modelled by the replay (the tree keeps no T-LRU history)".into(),
            );
        }
        if self.policy.host_memory_mode == HostMemoryMode::BufferOnly && !self.has_storage() {
            return bad(
                "host_memory_mode",
                "buffer_only requires storage (set l3_pages or l3_unbounded)".into(),
            );
        }
        if self.policy.host_memory_mode == HostMemoryMode::BufferOnly
            && self.policy.write_policy == WritePolicy::WriteBack
            && self.policy.buffer_only_write_back == BufferOnlyWriteBack::Error
        {
            return bad(
                "write_policy",
                "buffer_only does not support write_back (SGLang up to 0.5.21 rejects it; 0.5.22+ runs write_through)".into(),
            );
        }
        if self.policy.tree == TreeKind::Unified0523
            && (self.policy.evict_host_rule != EvictHostRule::EvictedOnly
                || self.policy.evict_version != EvictVersion::V1)
        {
            return bad(
                "tree",
                "unified_0_5_23 has 0.5.23's own host rules (duplicate reclaim, ancestor chaining, shortfall evict_host): evict_host_rule must be evicted_only and evict_version v1 (those what-ifs apply to tree: v1)".into(),
            );
        }
        // With an SWA pool the timed replay drives the SWA tree as the scheduler does
        // (`timed::swa`); the full-attention tree's timed replay has its own pattern.
        if self.policy.call_pattern == CallPattern::Scheduler0523
            && ((self.measurement.timing == Timing::On && self.capacities.swa.is_none())
                || self.policy.host_memory_mode == HostMemoryMode::BufferOnly
                || self.policy.lru_mode == LruMode::PlainPage)
        {
            return bad(
                "call_pattern",
                "scheduler_0_5_23 is a timing-off pattern for the tree's tiers in cache mode (no buffer_only, no plain_page); use call_pattern: simulator".into(),
            );
        }
        if self.policy.lru_mode == LruMode::PlainPage && self.measurement.timing == Timing::On {
            return bad(
                "lru_mode",
                "plain_page is a timing-off cross-check mode; use timing: off".into(),
            );
        }
        if self.policy.lru_mode == LruMode::PlainPage && self.has_storage() {
            return bad(
                "lru_mode",
                "plain_page models L1 and L2 only; remove l3_pages / l3_unbounded".into(),
            );
        }
        // Ranges a real setup lies far inside; past them a product of rates, sizes and
        // times leaves the nanosecond clock's range (TTFTs near 1.8e10 s were printed).
        if !(self.links.bandwidth_efficiency >= 0.01 && self.links.bandwidth_efficiency <= 1.0) {
            return bad(
                "bandwidth_efficiency",
                format!(
                    "{} must be in [0.01, 1] (the share of a link's nominal rate a copy reaches)",
                    crate::units::fmt_num(self.links.bandwidth_efficiency)
                ),
            );
        }
        if self.frontend.tokenize_per_token.0 > 1_000_000 {
            return bad(
                "tokenize_per_token",
                format!(
                    "{} ns a token is more than 1 ms: an encode that slow (1,000 tokens/s) is no tokenizer's; write the unit (`6756ns`)",
                    self.frontend.tokenize_per_token.0
                ),
            );
        }
        if self.frontend.request_overhead.0 > 10_000_000_000 {
            return bad(
                "request_overhead",
                format!(
                    "{} ns is more than 10 s: a request's fixed way through the server is milliseconds; write the unit (`6ms`)",
                    self.frontend.request_overhead.0
                ),
            );
        }
        if self.measurement.timing == Timing::On {
            for (field, rate) in [
                ("prefill_tokens_per_s", self.scheduler.prefill_tokens_per_s),
                ("decode_tokens_per_s", self.scheduler.decode_tokens_per_s),
            ] {
                if !(1e-3..=1e12).contains(&rate) {
                    return bad(
                        field,
                        format!(
                            "{} must be from 0.001 to 1e12 tokens/s",
                            crate::units::fmt_num(rate)
                        ),
                    );
                }
            }
            if self.scheduler.max_running_requests == 0 {
                return bad("max_running_requests", "must be at least 1".into());
            }
            let c = self.scheduler.schedule_conservativeness;
            if !(c.is_finite() && c >= 0.0) {
                // `validation_hook.py`: "schedule_conservativeness must be non-negative".
                return bad(
                    "schedule_conservativeness",
                    format!("{c} must be a non-negative number (SGLang's default is 1.0)"),
                );
            }
            if self.scheduler.max_new_tokens == Some(0) {
                return bad(
                    "max_new_tokens",
                    "must be at least 1 (unset: each request's output length)".into(),
                );
            }
            if let Err(e) = super::cost::CostModel::new(
                &self.scheduler.compute,
                self.scheduler.prefill_tokens_per_s,
                self.scheduler.decode_tokens_per_s,
            ) {
                return bad("compute", e.to_string());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod text_form_tests {
    use super::*;

    /// The groups and the flat text form hold the same values: a config written and read
    /// back is the config, and its keys are the flat names in their order.
    #[test]
    fn groups_round_trip_through_the_flat_map() {
        let rules = crate::release::Sglang::from_id("0.5.23")
            .unwrap()
            .release_rules();
        let mut c = ReplayConfig::for_release(&rules).with_storage_backend(StorageBackend::Eic);
        c.capacities.l3_pages = Some(7);
        c.policy.eviction_policy = EvictionPolicy::Slru;
        c.links.host_read_share = Some(Bandwidth(6.25e9));
        c.scheduler.decode_timeline = DecodeTimeline::Interleaved;
        c.measurement.warmup_requests = 3;
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            serde_json::from_value::<ReplayConfig>(v.clone()).unwrap(),
            c
        );
        // Written as a string, the keys keep the flat order.
        let text = serde_json::to_string(&c).unwrap();
        assert!(
            text.starts_with(r#"{"page_size":64,"l1_pages":4096,"l2_pages":8192,"l3_pages":7,"l3_unbounded":false,"write_policy":"write_through","eviction_policy":"slru","#),
            "{text}"
        );
        assert_eq!(v["storage_backend"], "eic");
        assert_eq!(v["warmup_requests"], 3);
    }
}

#[cfg(test)]
mod modelled_tests {
    use super::*;
    use crate::domain::Choice;

    /// A typed `tlru` and a deserialized one meet one refusal, word for word; every other
    /// policy passes both ways.
    #[test]
    fn typed_and_deserialized_eviction_policies_agree() {
        for &p in EvictionPolicy::ALL {
            let de = modelled_eviction_policy(serde_json::Value::from(p.id()))
                .map_err(|e| e.to_string());
            assert_eq!(modelled(p).map_err(|e| e.to_string()), de, "{p}");
        }
        assert_eq!(
            modelled(EvictionPolicy::Tlru).unwrap_err().to_string(),
            "unknown variant `tlru`, expected one of `lru`, `lfu`, `fifo`, `mru`, `filo`, `priority`, `slru`"
        );
    }
}

#[cfg(test)]
mod host_share_tests {
    use super::*;
    use crate::hardware::node_preset;

    #[test]
    fn host_dram_share_binds_only_below_the_link() {
        // hgx-h200: 2 x 8 ch DDR5-4800 = 2 x 8 x 4.8e9 x 8 B = 614.4 GB/s; TP8 share
        // 76.8 GB/s > the 55 GB/s H2D link: the link still binds.
        let n = node_preset("hgx-h200").unwrap();
        let host = n.host_memory_bandwidth.unwrap();
        assert_eq!(host.0, 614.4e9);
        let mut c = ReplayConfig::default();
        c.links.h2d_bandwidth = n.h2d_bandwidth;
        c.links.host_read_share = Some(host_read_share(host, 8));
        assert_eq!(c.load_back_bandwidth(), 55e9);
        // SGLang's implied ~50 GB/s for 8 ranks (corpus #10): 6.25 GB/s each.
        c.links.host_read_share = Some(host_read_share(Bandwidth(50e9), 8));
        assert_eq!(c.load_back_bandwidth(), 6.25e9);
        c.links.host_read_share = None;
        assert_eq!(c.load_back_bandwidth(), 55e9);
        // No preset's host DRAM share falls under its link at full TP.
        for id in [
            "gb300",
            "gb200",
            "hgx-b300",
            "hgx-b200",
            "hgx-h100",
            "hgx-h20",
            "hgx-a100-80g",
        ] {
            let n = node_preset(id).unwrap();
            let share = host_read_share(n.host_memory_bandwidth.unwrap(), n.gpus_per_node);
            assert!(share.0 > n.h2d_bandwidth.0, "{id}");
        }
    }
}
