//! The L3 prefetch capacity limit (`mem_cache/hiradix_cache.py: HiRadixCache.__init__`,
//! `prefetch_capacity_limit`), per version, for the runtime.

use super::version::PrefetchCapRule;

/// Host tokens L3 prefetches may hold at once.
/// - V0 (`ExcessOverDevice`): `max(0, int(0.8 * (host - device)))` — zero whenever
///   host ≤ device;
/// - #28614+ (`HalfHost`): `int(0.5 * host)`, or `int(0.9 * host)` in buffer-only mode
///   (newest `hiradix_cache.py`);
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
