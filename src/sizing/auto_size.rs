//! The two auto-size formulas: #40135's closed form (`mem_cache/hicache_auto_size.py:
//! auto_size_hicache`) and V5's auto-HiCache (`mem_cache/hicache_auto.py`).

use serde::Serialize;

use super::pyops::py_int;

/// `_ALLOCATION_SLACK_FRACTION = 0.05`: covers page rounding, metadata and staging.
pub const ALLOCATION_SLACK_FRACTION: f64 = 0.05;
/// V5 `AUTO_HICACHE_MAX_RATIO`.
pub const AUTO_HICACHE_MAX_RATIO: f64 = 8.0;
/// V5 `AUTO_HICACHE_MIN_RATIO`.
pub const AUTO_HICACHE_MIN_RATIO: f64 = 1.5;

/// #40135's plan on one rank: the budget every pool books against, and the ratio
/// (before the world MIN all-reduce).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AutoSizePlan {
    pub budget: i128,
    pub ratio: f64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AutoSizeError {
    #[error(
        "No host memory is left for HiCache after the 10 GiB reserve; set --hicache-ratio or --hicache-size explicitly."
    )]
    NoHostMemory,
    /// `_local_size`'s reason for leaving HiCache off: the auto ratio is below the
    /// minimum.
    #[error(
        "{:.1} GiB of host memory per rank holds only {ratio:.2}x the {:.1} GiB device cache (minimum {AUTO_HICACHE_MIN_RATIO}x)",
        *.budget as f64 / GIB,
        *.device_bytes as f64 / GIB
    )]
    BelowMinimumRatio {
        budget: i128,
        ratio: f64,
        device_bytes: u64,
    },
}

const GIB: f64 = (1u64 << 30) as f64;

/// `budget = int(host_memory_budget_bytes() * fraction)` (the per-rank share times the
/// fraction, truncated as Python's `int`).
pub fn auto_size_budget(per_rank_share: i128, fraction: f64) -> i128 {
    py_int(per_rank_share as f64 * fraction)
}

/// `ratio = min(requested, budget * (1 - 0.05) / device_bytes)`, in f64, in that order.
/// `device_bytes` = `_estimate_hicache_bytes` (device bytes of every host-mirrored pool).
pub fn auto_size_ratio(default_ratio: f64, budget: i128, device_bytes: u64) -> f64 {
    default_ratio.min(budget as f64 * (1.0 - ALLOCATION_SLACK_FRACTION) / device_bytes as f64)
}

/// After the world MIN all-reduce: `if ratio <= 0: raise ValueError(...)`.
pub fn check_auto_size_ratio(ratio: f64) -> Result<f64, AutoSizeError> {
    if ratio <= 0.0 {
        Err(AutoSizeError::NoHostMemory)
    } else {
        Ok(ratio)
    }
}

/// One rank's #40135 plan, for a single-rank world (no all-reduce): budget, ratio, and
/// the `ratio <= 0` error. Multi-rank callers use the three steps above around their MIN.
pub fn auto_size_hicache(
    per_rank_share: i128,
    fraction: f64,
    default_ratio: f64,
    device_bytes: u64,
) -> Result<AutoSizePlan, AutoSizeError> {
    let budget = auto_size_budget(per_rank_share, fraction);
    let ratio = check_auto_size_ratio(auto_size_ratio(default_ratio, budget, device_bytes))?;
    Ok(AutoSizePlan { budget, ratio })
}

/// V5's plan on one rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AutoHicachePlan {
    pub budget: i128,
    pub ratio: f64,
}

/// V5 `hicache_auto.py`: `budget = int(share * fraction)`,
/// `ratio = min(8.0, budget * 0.95 / max(device_bytes, 1))` (no cap at the 2.0 default);
/// below 1.5 HiCache stays off, with the reason SGLang logs (`_local_size`).
/// The caller MIN-all-reduces the ratio over the world (0 for a blocked rank; an agreed
/// 0 is "another rank cannot host the tier").
pub fn auto_hicache_ratio(
    per_rank_share: i128,
    fraction: f64,
    device_bytes: u64,
) -> Result<AutoHicachePlan, AutoSizeError> {
    let budget = auto_size_budget(per_rank_share, fraction);
    let ratio = AUTO_HICACHE_MAX_RATIO
        .min(budget as f64 * (1.0 - ALLOCATION_SLACK_FRACTION) / device_bytes.max(1) as f64);
    if ratio < AUTO_HICACHE_MIN_RATIO {
        return Err(AutoSizeError::BelowMinimumRatio {
            budget,
            ratio,
            device_bytes,
        });
    }
    Ok(AutoHicachePlan { budget, ratio })
}

/// V5 pin-failure retry: the ratio is halved while the half is ≥ 1.5 (and no explicit
/// `--hicache-size`); `None` = HiCache off. 8 → 4 → 2 → off.
pub fn auto_hicache_halve_on_pin_failure(ratio: f64) -> Option<f64> {
    let half = ratio / 2.0;
    (half >= AUTO_HICACHE_MIN_RATIO).then_some(half)
}
