//! The replay: requests through the tiers, with or without time. The replay owns time
//! and passes it in; the tree (`crate::cache`) never reads a clock.
//!
//! - [`config`]: `ReplayConfig` (the scenario's `runtime:` section);
//! - [`metrics`]: `ReplayMetrics` and the hit-rate [`definitions`];
//! - `untimed`: `Timing::Off` — each request = match, prefetch, load_back, insert, release;
//! - `timed`: `Timing::On` — arrivals, a FIFO scheduler, compute model, links;
//! - [`transfer`]: the SGLang-simulator effective-bandwidth cost model.

pub mod config;
pub mod metrics;
mod session;
mod timed;
pub mod transfer;
mod untimed;

pub use config::{ReplayConfig, Timing};
pub use metrics::{ReplayMetrics, TimelinePoint, definitions};

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
        "request #{index} (id {id}) arrives at {arrival_ns} ns, before the previous request ({previous_ns} ns): timing on needs arrivals in non-decreasing order (sort the trace by timestamp)"
    )]
    ArrivalOutOfOrder {
        index: u64,
        id: u64,
        arrival_ns: u64,
        previous_ns: u64,
    },
}

/// Replays `requests` through the tiers configured by `cfg`. Streaming: memory grows
/// with distinct pages (interned to dense ids), not with trace length.
pub fn replay<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
) -> Result<ReplayMetrics, ReplayError> {
    cfg.validate()?;
    match cfg.timing {
        Timing::Off => Ok(untimed::run(cfg, requests)),
        Timing::On => timed::run(cfg, requests),
    }
}
