//! The L3 prefetch capacity limit (`managers/cache_controller.py:
//! HiCacheController.__init__`, `prefetch_capacity_limit`), per version, for the runtime.

use super::version::PrefetchCapRule;

/// Host tokens L3 prefetches may hold at once.
/// - V0 (`ExcessOverDevice`): `int(0.8 * (host - device))`. SGLang does not clamp it,
///   but V0 asserts host > device so it is positive there; applied as a what-if to a
///   smaller host it is floored at 0 here (a negative limit blocks every prefetch, as 0
///   does);
/// - #28614+ (`HalfHost`): `int(0.5 * host)`, or
///   `int(HICACHE_LOAD_POOL_USAGE_FRACTION * host)` = `int(0.9 * host)` in buffer-only
///   mode (newest `cache_controller.py`);
/// - #16909 proposal: `0.8 * (host - device)` if host > device else `0.5 * host`.
pub fn prefetch_capacity_limit(
    rule: PrefetchCapRule,
    host_tokens: u64,
    device_tokens: u64,
    buffer_only: bool,
) -> u64 {
    let h = host_tokens as f64;
    let excess = host_tokens as f64 - device_tokens as f64;
    let v = match rule {
        PrefetchCapRule::ExcessOverDevice => (0.8 * excess).trunc(),
        PrefetchCapRule::HalfHost if buffer_only => (0.9 * h).trunc(),
        PrefetchCapRule::HalfHost => (0.5 * h).trunc(),
        PrefetchCapRule::Pr16909Proposal if host_tokens > device_tokens => (0.8 * excess).trunc(),
        PrefetchCapRule::Pr16909Proposal => (0.5 * h).trunc(),
    };
    v.max(0.0) as u64
}
