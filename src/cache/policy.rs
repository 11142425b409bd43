//! Rules as data: every behaviour that SGLang changed between versions, or that a PR
//! proposed, is one enum value with a stable snake_case id (used in YAML, CLI flags,
//! CSV columns). The tree dispatches on these once per operation, never deep in a loop.
//! SGLang's own flag choices (write policy, eviction policy, prefetch policy, host
//! memory mode) are [`crate::domain`]'s.

use serde::{Deserialize, Serialize};

/// Which LRU the device tier runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LruMode {
    /// SGLang's radix tree: only leaves are evictable (`radix_cache.py: evict`).
    #[default]
    LeafOnly,
    /// Not SGLang: every page is its own entry and any page is evictable. For
    /// cross-checks against classic cache simulators (libCacheSim LRU).
    PlainPage,
}

/// Which host copies `evict_host` may reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvictHostRule {
    /// As shipped (`hiradix_cache.py: evict_host`, L1259, every version seen): only
    /// host-only leaves (evicted from device, no backed-up child, unpinned).
    #[default]
    EvictedOnly,
    /// #16909 what-if (closed, not merged): host copies of nodes still on the device
    /// are also reclaimable, in one priority order with the host-only leaves. A
    /// reclaimed device-resident node simply loses its backup.
    ReclaimDeviceResident,
    /// The idea of `benchmark/hicache/hicache_policy_simulator.py` policy
    /// `boundary_l1_l2`: first reclaim "duplicate" host leaves (device + host, no
    /// backed-up child), then host-only leaves; and at device eviction an unbacked
    /// leaf is demoted to host (backing itself up, and its unbacked device parent)
    /// instead of deleted when host room can be made.
    BoundaryL1L2,
}

/// Device-eviction code path (`hiradix_cache.py: evict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvictVersion {
    /// Before #28614: one loop; write_back writes the leaf to host and demotes it;
    /// if the host write fails nothing is freed for that node.
    V0,
    /// #28614 + #29817 (`_evict_write_through` / `_evict_write_back`): write_back
    /// drops the unprotected subtree without backup when the host is full.
    #[default]
    V1,
}

/// `prefetch_capacity_limit` (`managers/cache_controller.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrefetchCapacityRule {
    /// V0, before #28614: `max(0, int(0.8*(host - device)))` (cache_controller L466).
    #[serde(rename = "pre-28614")]
    Pre28614,
    /// V1, #28614 and later: `int(0.5*host)` (L484).
    #[default]
    #[serde(rename = "pr28614")]
    Pr28614,
    /// buffer_only mode (later versions): `int(0.9*host)`.
    BufferOnly,
    /// #16909 proposal (not merged): `0.8*(host-device)` if host > device else `0.5*host`.
    #[serde(rename = "pr16909")]
    Pr16909,
}

impl PrefetchCapacityRule {
    /// The limit in tokens, from pool sizes in tokens.
    pub fn limit_tokens(self, host_tokens: u64, device_tokens: u64) -> u64 {
        let h = host_tokens as f64;
        let d = device_tokens as f64;
        match self {
            PrefetchCapacityRule::Pre28614 => (0.8 * (h - d)).max(0.0) as u64,
            PrefetchCapacityRule::Pr28614 => (0.5 * h) as u64,
            PrefetchCapacityRule::BufferOnly => (0.9 * h) as u64,
            PrefetchCapacityRule::Pr16909 => {
                if host_tokens > device_tokens {
                    (0.8 * (h - d)) as u64
                } else {
                    (0.5 * h) as u64
                }
            }
        }
    }
}

/// How much `evict_from_tree_cache` (`mem_cache/common.py`) asks the tree to evict
/// when the device pool is short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceEvictAmount {
    /// V0/V1: `if available < num_tokens: tree_cache.evict(num_tokens)` — the whole
    /// request, not the shortfall.
    #[default]
    Requested,
    /// Newer `common.py`: `evict(num_tokens - available_size)` — only the shortfall.
    Shortfall,
}
