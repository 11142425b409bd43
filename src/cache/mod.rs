//! The runtime tiers' data structure: SGLang's HiRadixCache radix tree at page
//! granularity (`mem_cache/radix_cache.py`, `mem_cache/hiradix_cache.py`), its
//! eviction priorities (`mem_cache/evict_policy.py`), the rules that changed between
//! versions as selectable enums, a plain page LRU for cross-checks, and the L3 store.
//! The tree never reads a clock: the replay (`crate::runtime`) owns time.

mod check;
mod evict;
pub mod keyed_lru;
mod leaf_heap;
mod node;
mod policy;
mod rules;
pub mod storage;
mod swa_tree;
mod tree;

pub use crate::domain::{EvictionPolicy, HostMemoryMode, PrefetchPolicy, WritePolicy};
pub use keyed_lru::KeyedLru;
pub use node::{Node, NodeId, PageKey, PrioKey, ROOT};
pub use policy::{DeviceEvictAmount, EvictHostRule, EvictVersion, LruMode};
pub use rules::{HiRadix, TreeKind, TreeRules, Unified0523, V1};
pub use storage::Storage;
pub use swa_tree::{
    SwaInsert, SwaLock, SwaMatch, SwaNodeId, SwaRadixTree, SwaTreeConfig, SwaTreeStats,
};
pub use tree::{BackupRecord, HiRadixTree, MatchResult, TreeConfig, TreeStats, UnifiedRadixTree};
