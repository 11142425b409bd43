//! The tree's rule sets: which SGLang radix tree the replay runs. Each rule set is a
//! zero-sized type implementing [`TreeRules`]; the tree ([`HiRadixTree<R>`]) and the
//! replay session are generic over it, so a rule is a compile-time constant in the
//! monomorphised code, never a run-time `if` in a hot loop. The replay picks the
//! rule set once, from [`TreeKind`], where it starts (`runtime::replay`).
//!
//! [`HiRadixTree<R>`]: super::HiRadixTree

use serde::{Deserialize, Serialize};

use super::policy::DeviceEvictAmount;

/// The `tree` key of the replay configuration (`--config tree=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum TreeKind {
    /// `HiRadixCache` as modelled since the project began (upstream 2026-07-20,
    /// `mem_cache/hiradix_cache.py`): the tree of 0.5.14–0.5.18 for plain models (with
    /// `device_evict_amount: requested` up to 0.5.16, `shortfall` from 0.5.17). Those
    /// wheels already refresh the split child before `_split_node`; this tree does not
    /// (a known deviation).
    #[default]
    #[serde(rename = "v1")]
    V1,
    /// 0.5.23's `UnifiedRadixCache` (`mem_cache/unified_radix_cache.py`,
    /// `mem_cache/unified_cache/unified_tree_core.py`): split-tail refresh, match
    /// stamps the path once, shortfall eviction, and the 0.5.23 host-tier rules. The
    /// tree of 0.5.19–0.5.23 (every HiCache path); the device tier is checked against
    /// SGLang 0.5.23's own tree by `tests/golden/tree/`.
    #[serde(rename = "unified_0_5_23")]
    Unified0523,
}

impl TreeKind {
    pub fn id(self) -> &'static str {
        match self {
            TreeKind::V1 => "v1",
            TreeKind::Unified0523 => "unified_0_5_23",
        }
    }
}

/// A rule set. Every constant names the SGLang function it mirrors.
pub trait TreeRules: Copy + Default + std::fmt::Debug + Send + Sync + 'static {
    const KIND: TreeKind;
    /// `_split_node` refreshes `last_access_time` on the child (the unmatched tail)
    /// after creating the new parent, and insert touches the walked child *before*
    /// splitting it (0.5.23 `unified_tree_core.py: _split_node`, `_insert_walk_step`).
    const SPLIT_REFRESH_TAIL: bool;
    /// `match_prefix` does not touch nodes while walking; it stops at a dead node
    /// (evicted and not backed up), and stamps the best match and every ancestor with
    /// one fresh time, decreasing by 1e-5 per level towards the root
    /// (0.5.23 `unified_tree_core.py: _match_prefix_helper`, `_match_post_processor`).
    const MATCH_STAMPS_PATH: bool;
    /// How much device eviction asks for, when the tree has its own rule (0.5.23
    /// `allocator/base.py: evict_to_free_tokens`: the shortfall); `None`: the replay
    /// configuration's `device_evict_amount`.
    const DEVICE_EVICT: Option<DeviceEvictAmount>;
    /// Insert counts a hit on an evicted node it restores from fresh KV
    /// (0.5.23 `unified_tree_core.py: _finish_insert_walk_node`).
    const HIT_ON_UNEVICT: bool;
    /// Write-through backs up a node's unbacked ancestors first, top-down, stopping at
    /// the first failure (0.5.23 `unified_tree_core.py: _build_backup_kv_action`),
    /// instead of refusing the backup.
    const CHAIN_ANCESTOR_BACKUPS: bool;
    /// Under write_back, a backup that finds the host full first reclaims host copies
    /// of device-resident nodes (0.5.23 `unified_tree_core.py:
    /// _reclaim_full_host_duplicates`).
    const RECLAIM_HOST_DUPLICATES: bool;
    /// A full host evicts only the shortfall (0.5.23 `evict_host(needed)`), not the
    /// whole backup length.
    const EVICT_HOST_SHORTFALL: bool;
}

/// The V1 HiRadixCache rules (see [`TreeKind::V1`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct V1;

impl TreeRules for V1 {
    const KIND: TreeKind = TreeKind::V1;
    const SPLIT_REFRESH_TAIL: bool = false;
    const MATCH_STAMPS_PATH: bool = false;
    const DEVICE_EVICT: Option<DeviceEvictAmount> = None;
    const HIT_ON_UNEVICT: bool = false;
    const CHAIN_ANCESTOR_BACKUPS: bool = false;
    const RECLAIM_HOST_DUPLICATES: bool = false;
    const EVICT_HOST_SHORTFALL: bool = false;
}

/// 0.5.23's UnifiedRadixCache rules (see [`TreeKind::Unified0523`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unified0523;

impl TreeRules for Unified0523 {
    const KIND: TreeKind = TreeKind::Unified0523;
    const SPLIT_REFRESH_TAIL: bool = true;
    const MATCH_STAMPS_PATH: bool = true;
    const DEVICE_EVICT: Option<DeviceEvictAmount> = Some(DeviceEvictAmount::Shortfall);
    const HIT_ON_UNEVICT: bool = true;
    const CHAIN_ANCESTOR_BACKUPS: bool = true;
    const RECLAIM_HOST_DUPLICATES: bool = true;
    const EVICT_HOST_SHORTFALL: bool = true;
}
