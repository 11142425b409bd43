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
    /// `HiRadixCache` as the 0.5.15 – 0.5.18 wheels run it (`mem_cache/hiradix_cache.py`,
    /// `radix_cache.py`): the V1 tree with the split child stamped before
    /// `_split_node`, write_back victims staged on host until the eviction's flush,
    /// load-back that evicts the whole load when the device is short, and
    /// `cache_unfinished_req` matching the inserted key again. The tree of plain models
    /// in 0.5.14 – 0.5.18 (0.5.14 with `evict_version: v0`); checked against the 0.5.16
    /// and 0.5.18 wheels by `tests/golden/host/`.
    #[serde(rename = "hiradix")]
    HiRadix,
}

impl TreeKind {
    pub fn id(self) -> &'static str {
        match self {
            TreeKind::V1 => "v1",
            TreeKind::Unified0523 => "unified_0_5_23",
            TreeKind::HiRadix => "hiradix",
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
    /// Under write_back, the host copies a load-back reads stay pinned until its H2D
    /// ack: `unified_tree_core.py: commit_load_back` sets `load_back_pending_id` on
    /// every loaded node, `_can_reclaim_full_host_duplicate` refuses them, and only
    /// `finish_load_back` (run by `unified_radix_cache.py: loading_check`, at the next
    /// scheduler iteration) makes them tracked, reclaimable duplicates
    /// (`_update_duplicate_tracking`). 0.5.19–0.5.23. Without it the loaded copies
    /// are reclaimable duplicates at once, so the loading request's own `evict_host`
    /// can take them.
    const LOAD_BACK_PENDING: bool;
    /// `unified_tree_core.py: insert_host` (0.5.23): an L3 prefetch inserted under its
    /// anchor touches the anchor and every walked node; under write-through a walked
    /// node without a host copy is refilled from the fetched pages and only already
    /// backed-up pages are given back; under write_back every walked page is given back;
    /// a tail under a node without a host copy is dropped (write-through only).
    const INSERT_HOST_REFILL: bool;
    /// `hiradix_cache.py: _match_prefix_helper` and `insert` (0.5.14 – 0.5.18) stamp the
    /// walked child (`last_access_time = time.monotonic()`) *before* `_split_node`; the
    /// new parent, created after, is newer still and is not stamped again. Without it
    /// (the V1 reading) the split's head is stamped and the tail keeps its old time.
    const TOUCH_BEFORE_SPLIT: bool;
    /// `hiradix_cache.py: _evict_write_back` (0.5.15 – 0.5.18): a leaf backed up by the
    /// eviction is staged (`protect_host`) until `flush_staged` — before a drop that
    /// follows a failed backup, and at the end of the eviction — so the eviction's
    /// own `evict_host` calls cannot reclaim the copies it just made.
    const WRITE_BACK_STAGES_BACKUPS: bool;
    /// `hiradix_cache.py: load_back` (0.5.14 – 0.5.18): when the device cannot hold the
    /// load, `evict(len(host_indices))` — the whole load, whatever the allocator's own
    /// rule (`common.py: evict_from_tree_cache` asks only the shortfall from 0.5.17).
    const LOAD_BACK_EVICTS_WHOLE_LOAD: bool;
    /// `radix_cache.py: cache_unfinished_req` (0.5.14 – 0.5.18) matches the inserted key
    /// again (`match_prefix`, which stamps the path) to refresh the request's prefix;
    /// 0.5.23's `checkpoint` takes the insert's own result. Read by
    /// `call_pattern: scheduler_0_5_23`.
    const REMATCH_AFTER_INSERT: bool;
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
    const LOAD_BACK_PENDING: bool = false;
    const INSERT_HOST_REFILL: bool = false;
    const TOUCH_BEFORE_SPLIT: bool = false;
    const WRITE_BACK_STAGES_BACKUPS: bool = false;
    const LOAD_BACK_EVICTS_WHOLE_LOAD: bool = false;
    const REMATCH_AFTER_INSERT: bool = false;
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
    const LOAD_BACK_PENDING: bool = true;
    const INSERT_HOST_REFILL: bool = true;
    const TOUCH_BEFORE_SPLIT: bool = false;
    const WRITE_BACK_STAGES_BACKUPS: bool = false;
    const LOAD_BACK_EVICTS_WHOLE_LOAD: bool = false;
    const REMATCH_AFTER_INSERT: bool = false;
}

/// `HiRadixCache` of 0.5.15 – 0.5.18 (see [`TreeKind::HiRadix`]): V1's rules plus the
/// four the wheels show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HiRadix;

impl TreeRules for HiRadix {
    const KIND: TreeKind = TreeKind::HiRadix;
    const SPLIT_REFRESH_TAIL: bool = false;
    const MATCH_STAMPS_PATH: bool = false;
    const DEVICE_EVICT: Option<DeviceEvictAmount> = None;
    const HIT_ON_UNEVICT: bool = false;
    const CHAIN_ANCESTOR_BACKUPS: bool = false;
    const RECLAIM_HOST_DUPLICATES: bool = false;
    const EVICT_HOST_SHORTFALL: bool = false;
    const LOAD_BACK_PENDING: bool = false;
    const INSERT_HOST_REFILL: bool = false;
    const TOUCH_BEFORE_SPLIT: bool = true;
    const WRITE_BACK_STAGES_BACKUPS: bool = true;
    const LOAD_BACK_EVICTS_WHOLE_LOAD: bool = true;
    const REMATCH_AFTER_INSERT: bool = true;
}
