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
    /// As shipped (`hiradix_cache.py: HiRadixCache.evict_host`, every version seen): only
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

impl EvictVersion {
    /// Serialized as `true` for [`Self::V0`] (the release rule tables' `evict_v0`).
    pub fn serialize_is_v0<S: serde::Serializer>(v: &Self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(*v == EvictVersion::V0)
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
    /// Newer `common.py`: `evict(num_tokens - available_size)` — only the shortfall
    /// (0.5.17+ `allocator/base.py: evict_to_free_tokens`).
    Shortfall,
}

impl DeviceEvictAmount {
    /// Pages to ask the tree for when `wanted` are needed and `free` are free (`free <
    /// wanted`).
    pub fn to_evict(self, wanted: u64, free: u64) -> u64 {
        match self {
            DeviceEvictAmount::Requested => wanted,
            DeviceEvictAmount::Shortfall => wanted - free,
        }
    }

    /// Serialized as `true` for [`Self::Shortfall`] (the release rule tables'
    /// `device_evict_shortfall`).
    pub fn serialize_is_shortfall<S: serde::Serializer>(a: &Self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(*a == DeviceEvictAmount::Shortfall)
    }
}
