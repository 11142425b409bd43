//! `Timing::On` (being written): falls back to instant replay after checking order.

use crate::workload::Request;

use super::ReplayError;
use super::config::ReplayConfig;
use super::metrics::ReplayMetrics;

pub(crate) fn run<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
) -> Result<ReplayMetrics, ReplayError> {
    let mut prev = 0u64;
    let mut v = Vec::new();
    for (i, r) in requests.into_iter().enumerate() {
        if r.arrival_ns < prev {
            return Err(ReplayError::ArrivalOutOfOrder {
                index: i as u64,
                id: r.id,
                arrival_ns: r.arrival_ns,
                previous_ns: prev,
            });
        }
        prev = r.arrival_ns;
        v.push(r);
    }
    Ok(super::untimed::run(cfg, v))
}
