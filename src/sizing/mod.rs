//! SGLang's host-pool sizing rules, one selectable policy per version
//! ([`SglangVersion`] → [`Rules`]), and the per-step arithmetic each version performs:
//! reading available host memory (psutil / cgroup headroom variants), the per-rank
//! budget, host pool tokens, the admission guard and its exact refusal text, the booking
//! scope, argument resolution, and the two auto-size formulas. The start-up simulator
//! (`crate::startup`) orchestrates when ranks sample, the MIN all-reduce and pinning.
//!
//! Known deviations are listed in each item's doc comment.

mod args;
mod auto_size;
mod budget;
mod host_memory;
mod host_pool;
mod prefetch;
mod pyops;
mod version;

pub use args::{
    HicacheArgs, HostMemoryMode, ResolvedHicacheArgs, SizingArgError, resolve_hicache_args,
};
pub use auto_size::{
    ALLOCATION_SLACK_FRACTION, AUTO_HICACHE_MAX_RATIO, AUTO_HICACHE_MIN_RATIO, AutoHicachePlan,
    AutoSizeError, AutoSizePlan, auto_hicache_halve_on_pin_failure, auto_hicache_ratio,
    auto_size_budget, auto_size_hicache, auto_size_ratio, check_auto_size_ratio,
};
pub use budget::{
    AvailableRead, BudgetScope, HICACHE_HOST_MEMORY_RESERVE_BYTES, Refusal,
    explicit_snapshot_budget, guard, host_memory_budget_bytes, indexer_refusal_message,
    ranks_per_host, refusal_message, refusal_message_for, whole_headroom_budget,
};
pub use host_memory::{HostMemoryError, available_host_memory_bytes, cgroup_memory_headroom};
pub use host_pool::{
    HostPoolSize, HostPoolSizeArg, SmallHostCheck, check_small_host, host_pool_size,
};
pub use prefetch::prefetch_capacity_limit;
pub use pyops::{py_float_floordiv, py_floordiv, py_int, py_repr_float, py_round};
pub use version::{
    AutoSizeRule, AvailableReading, BudgetSplit, ExplicitPath, HeadroomVariant, PrefetchCapRule,
    Rules, SglangVersion, SmallHostRule, UnknownVersion,
};
