//! The replay: requests through the tiers, with or without time. The replay owns time
//! and passes it in; the tree (`crate::cache`) never reads a clock.
//!
//! - [`config`]: `ReplayConfig` (the scenario's `runtime:` section);
//! - [`metrics`]: `ReplayMetrics` and the hit-rate [`definitions`];
//! - `untimed`: `Timing::Off` — each request = match, prefetch, load_back, insert, release;
//! - `timed`: `Timing::On` — arrivals, a FIFO scheduler, compute model, links;
//! - [`frontend`]: the TokenizerManager a text request passes before the scheduler;
//! - [`transfer`]: the SGLang-simulator effective-bandwidth cost model.
//!
//! Known deviations from SGLang (deliberate, each small):
//! - Prefetch is issued only when the deepest matched node is backed up (or is the
//!   root). SGLang's `_prefetch_kvcache` anchors at `last_host_node` but keys the fetch
//!   from `len(device) + host_hit`, so with device-only nodes between the two it would
//!   insert host nodes under the wrong parent; we skip that case instead.
//! - The storage existence query (`batch_exists`, 128 pages per call) is instant, and
//!   host slots for the hits are allocated at issue time (SGLang: the next tick).
//! - One H2D/D2H run per tree node (SGLang splits runs by index contiguity).
//! - Output tokens are not inserted and do not occupy device pages.
//! - The `priority` eviction policy sees priority 0 for every node (requests carry no
//!   priority), so it orders like LRU.
//! - `alloc_extend`'s extra page per request in the eviction request is modelled only by
//!   `call_pattern: scheduler_0_5_23` (timing off).
//! - Prefetch termination in buffer_only mode stages the arrived pages straight to the
//!   device (the op-owned host slots are counted in the prefetch budget only).

pub mod config;
pub mod cost;
pub mod dp;
pub mod frontend;
pub mod l3_store;
pub mod metrics;
mod overrides;
pub mod pd;
mod prefetch;
pub mod rounds;
pub mod router;
pub mod sensitivity;
mod session;
pub mod speeds;
pub mod storage_backend;
mod swa_req;
mod timed;
pub mod transfer;
mod untimed;
pub(crate) use untimed::route_by_engine_state;

pub use config::{
    CallPattern, Capacities, DecodeMemory, DecodeTimeline, Links, Measurement, Prefetch,
    ReplayConfig, SchedulePolicy, Scheduler, SwaPool, Timing, TreePolicy,
};
pub use metrics::{ReplayMetrics, TimelinePoint, definitions};
pub use overrides::{apply_overrides, full_value};
pub use speeds::Speeds;
pub use timed::fleet::FleetError;
pub use timed::{RequestTime, TIMED_SWA_UNMODELLED};

use crate::workload::Request;

/// Why a replay could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("runtime.{field}: {message}")]
    InvalidConfig {
        field: &'static str,
        message: String,
    },
    #[error(
        "request #{index} (id {id}): {pages} whole pages of {page_size} tokens need at least {need} input tokens, but input_tokens is {input_tokens}"
    )]
    PagesExceedInput {
        index: u64,
        id: u64,
        pages: u64,
        page_size: u32,
        need: u64,
        input_tokens: u32,
    },
    #[error(
        "request #{index} (id {id}) arrives at {arrival_ns} ns, before the previous request ({previous_ns} ns): timing on needs arrivals in non-decreasing order (sort the trace by timestamp)"
    )]
    ArrivalOutOfOrder {
        index: u64,
        id: u64,
        arrival_ns: u64,
        previous_ns: u64,
    },
}

/// Rejects a request whose whole pages cover more tokens than its prompt.
pub(crate) fn check_request(
    cfg: &ReplayConfig,
    index: u64,
    r: &Request,
) -> Result<(), ReplayError> {
    let need = r.page_hashes.len() as u64 * u64::from(cfg.capacities.page_size);
    if need > u64::from(r.input_tokens) {
        return Err(ReplayError::PagesExceedInput {
            index,
            id: r.id,
            pages: r.page_hashes.len() as u64,
            page_size: cfg.capacities.page_size,
            need,
            input_tokens: r.input_tokens,
        });
    }
    Ok(())
}

/// One request's hits in pages, per tier (longest prefix: device, then host, then
/// storage), and the pools after it (golden-file comparisons).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestHits {
    pub device: u64,
    pub host: u64,
    pub storage: u64,
    /// Pages the request's L3 prefetch added to the host tier (`loaded_from_storage`
    /// of `unified_radix_cache.py: _handle_prefetch_result`), loaded back or not.
    pub fetched: u64,
    /// Host pages in use after the request and its transfers' acks.
    pub host_used: u64,
    /// Device pages in use after the request.
    pub device_used: u64,
}

/// A timing-off tree replay (`timing: off`, `lru_mode: leaf_only`) that also returns
/// every request's hits, in trace order (golden-file comparisons).
pub fn replay_hits<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
) -> Result<(ReplayMetrics, Vec<RequestHits>), ReplayError> {
    cfg.validate()?;
    if cfg.measurement.timing != Timing::Off
        || cfg.policy.lru_mode != crate::cache::LruMode::LeafOnly
    {
        return Err(ReplayError::InvalidConfig {
            field: "timing",
            message: "per-request hits need timing: off and lru_mode: leaf_only".into(),
        });
    }
    let mut hits = Vec::new();
    let m = untimed::run_with(cfg, requests, &mut |_, h| hits.push(*h))?;
    Ok((m, hits))
}

/// Replays `requests` through the tiers configured by `cfg`. Streaming: memory grows
/// with distinct pages (interned to dense ids), not with trace length.
pub fn replay<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
) -> Result<ReplayMetrics, ReplayError> {
    cfg.validate()?;
    match cfg.measurement.timing {
        Timing::Off => untimed::run(cfg, requests),
        // DP-attention ranks share every forward: one clock for all (`timed::lockstep`).
        Timing::On if cfg.capacities.dp_ranks > 1 => timed::lockstep::run(cfg, requests),
        Timing::On => timed::run(cfg, requests),
    }
}

/// Several schedulers (DP-attention ranks, engines of `ranks` ranks each, engine-major)
/// side by side without time, in trace order: scheduler `k` replays with `cfgs[k]` the
/// requests `slot` gives it, their L3 stores shared as their `l3_scope` says
/// (`runtime::l3_store`).
/// Each scheduler's figures, in order; `None` where the configuration replays one
/// scheduler at a time only (the plain-page LRU, an SWA pool): replay each share apart.
pub fn replay_side_by_side<I: IntoIterator<Item = Request>>(
    cfgs: &[ReplayConfig],
    ranks: usize,
    requests: I,
    slot: &mut dyn FnMut(u64) -> Option<usize>,
) -> Option<Result<Vec<ReplayMetrics>, ReplayError>> {
    let first = cfgs.first()?;
    if !side_by_side_ok(first) {
        return None;
    }
    Some(untimed::run_side_by_side(cfgs, ranks, requests, slot))
}

/// Whether [`replay_side_by_side`] replays `cfg`'s schedulers (untimed, the leaf-only
/// LRU tree, no SWA pool).
pub fn side_by_side_ok(cfg: &ReplayConfig) -> bool {
    cfg.measurement.timing == Timing::Off && untimed::runs_side_by_side(cfg)
}

/// Engines behind SGLang's router, timed (`timing: on`; `runtime::timed::fleet`): the
/// fleet's figures, each engine's in `engines`, and the router's.
pub fn replay_fleet_timed<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    spec: &router::RouterSpec,
    requests: I,
) -> Result<(ReplayMetrics, router::RouterFigures), timed::fleet::FleetError> {
    cfg.validate()?;
    timed::fleet::run(cfg, spec, requests)
}

/// A prefill-decode disaggregated deployment, timed (`runtime::timed::pd`): the prefill
/// servers' figures with the client's times, the deployment's in `pd`, and the
/// router's figures when it spreads the prefill servers.
pub fn replay_pd<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    pd: &pd::PdSpec,
    router: Option<&router::RouterSpec>,
    requests: I,
) -> Result<(ReplayMetrics, Option<router::RouterFigures>), timed::fleet::FleetError> {
    cfg.validate()?;
    if cfg.measurement.timing != Timing::On {
        return Err(ReplayError::InvalidConfig {
            field: "pd",
            message: "a PD deployment is replayed on the clock: set runtime.replay.timing: on (or remove runtime.pd to replay the prefill server alone)".into(),
        }
        .into());
    }
    timed::pd::run(cfg, pd, router, requests)
}

/// A timed replay (`timing: on`) that also returns every request's times and cached
/// tokens (in completion-of-prefill order), with `preload` pages written to L3 first —
/// a storage an earlier run populated (`runtime::cost::bench`).
pub fn replay_timed<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
    preload: &[crate::cache::PageKey],
) -> Result<(ReplayMetrics, Vec<RequestTime>), ReplayError> {
    cfg.validate()?;
    if cfg.measurement.timing != Timing::On {
        return Err(ReplayError::InvalidConfig {
            field: "timing",
            message: "per-request times need timing: on".into(),
        });
    }
    timed::run_detailed(cfg, requests, preload, true)
}
