//! A PD decode server's radix cache (`--disaggregation-decode-enable-radix-cache`,
//! every modelled release, 0.5.14–0.5.23; `runtime.pd.decode_radix_cache`): the tree a
//! decode server keeps of the prompts it has received, so that a later prompt sharing
//! their prefix is not sent again.
//!
//! `disaggregation/decode.py: DecodePreallocQueue` (0.5.23), device tier only:
//! - `_match_prefix_and_lock`: the prompt (`origin_input_ids`, uncapped) is matched
//!   against the tree and the deepest device node locked; the match is the
//!   `decode_prefix_len` the decode server promises the prefill server, which then sends
//!   only the pages after it (`prefill.py: finalize_bootstrap` → `start_send_idx`,
//!   `_num_pages_to_send`).
//! - `_required_alloc_tokens`: the prompt's pages after the prefix are allocated
//!   (`get_num_new_pages`), the admission's room counts the tree's evictable pages as
//!   free (`_allocatable_token_budgets`: `available_size += _radix_full_evictable()`),
//!   and the allocation evicts from the tree as it needs (`evict_from_tree_cache`).
//! - When the request joins the running batch (`get_new_prebuilt_batch` →
//!   `process_prebuilt` → `checkpoint_kv_cache`, 0.5.23; `cache_unfinished_req` before)
//!   its prompt goes into the tree and its lock moves onto it: a request sharing that
//!   prefix finds it while the first is still decoding. At its finish
//!   (`release_kv_cache`) SGLang inserts its output too and unlocks; the replay unlocks
//!   and frees the rest: as on the prefill side (`runtime::timed`), a trace does not know
//!   its outputs' page hashes.
//! - Eviction: the preallocation evicts its shortfall (`_pre_alloc`: `evict` /
//!   `evict_for_alloc` of `required − available`, every release); a decode step first
//!   asks the tree for a page per running request (`alloc_paged_token_slots_decode` →
//!   `evict_from_tree_cache(batch × page_size)`, which evicts the whole amount or the
//!   shortfall as the release's allocator does, `cache::DeviceEvictAmount`).
//!
//! The tree is the release's (`cache::TreeKind`) with no host tier: a decode server's
//! HiCache (`--enable-hierarchical-cache` on it, `decode_hicache_mixin.py`) is not
//! modelled.

use crate::cache::{
    HiRadix, HiRadixTree, NodeId, PageKey, TreeConfig, TreeKind, TreeRules, Unified0523, V1,
};
use crate::runtime::config::ReplayConfig;

/// A decode server's radix cache, in pages.
pub(super) trait DecodeCache {
    /// `_match_prefix_and_lock`: the device pages of `pages`' longest cached prefix, and
    /// the node locked for it.
    fn match_lock(&mut self, pages: &[PageKey]) -> (u64, NodeId);
    /// `dec_lock_ref`: a lock given back (a request that did not fit, or finished).
    fn unlock(&mut self, node: NodeId);
    /// Free pages plus the tree's evictable ones (the admission's room).
    fn room(&self) -> u64;
    /// Pages the requests hold: their own and their locked prefixes (a prefix two
    /// requests share counted once).
    fn in_use(&self) -> u64;
    /// `_pre_alloc`: evicts the shortfall and allocates up to `pages`: the pages taken.
    fn alloc_prealloc(&mut self, pages: u64) -> u64;
    /// `evict_from_tree_cache` before a decode step's allocation, for `pages` pages.
    fn make_step_room(&mut self, pages: u64);
    /// Allocates up to `pages` free pages, evicting nothing: the pages taken.
    fn reserve(&mut self, pages: u64) -> u64;
    /// Frees pages a request held and the tree does not keep.
    fn free(&mut self, pages: u64);
    /// `checkpoint_kv_cache`: inserts `pages` (the request's own `reserved` pages after
    /// its prefix become the tree's, any already cached freed), locks the deepest node
    /// and unlocks `lock`: the node now locked.
    fn checkpoint(&mut self, pages: &[PageKey], reserved: u64, lock: NodeId) -> NodeId;
}

impl<R: TreeRules> DecodeCache for HiRadixTree<R> {
    fn match_lock(&mut self, pages: &[PageKey]) -> (u64, NodeId) {
        let m = self.match_prefix(pages);
        self.inc_lock_ref(m.last_device_node);
        (m.device_pages, m.last_device_node)
    }

    fn unlock(&mut self, node: NodeId) {
        self.dec_lock_ref(node);
    }

    fn room(&self) -> u64 {
        self.device_free() + self.device_evictable()
    }

    fn in_use(&self) -> u64 {
        self.config().l1_pages - self.room()
    }

    fn alloc_prealloc(&mut self, pages: u64) -> u64 {
        let free = self.device_free();
        if free < pages {
            self.evict(pages - free);
        }
        self.reserve(pages)
    }

    fn make_step_room(&mut self, pages: u64) {
        self.make_device_room(pages);
    }

    fn reserve(&mut self, pages: u64) -> u64 {
        let got = pages.min(self.device_free());
        self.reserve_device(got);
        got
    }

    fn free(&mut self, pages: u64) {
        self.free_device(pages);
    }

    fn checkpoint(&mut self, pages: &[PageKey], reserved: u64, lock: NodeId) -> NodeId {
        let node = self.insert(pages, reserved);
        self.inc_lock_ref(node);
        self.dec_lock_ref(lock);
        node
    }
}

/// The radix cache of a decode server of `pool_pages` pages, on the release's tree and
/// its allocator's eviction amount.
pub(super) fn decode_cache(
    cfg: &ReplayConfig,
    pool_pages: u64,
    page_size: u32,
) -> Box<dyn DecodeCache> {
    let tc = TreeConfig {
        l1_pages: pool_pages,
        l2_pages: 0,
        page_size,
        eviction_policy: cfg.policy.eviction_policy,
        evict_version: cfg.policy.evict_version,
        device_evict_amount: cfg.policy.device_evict_amount,
        host_tier: false,
        debug_checks: cfg.measurement.debug_checks,
        ..TreeConfig::default()
    };
    match cfg.policy.tree {
        TreeKind::V1 => Box::new(HiRadixTree::<V1>::new(tc)),
        TreeKind::Unified0523 => Box::new(HiRadixTree::<Unified0523>::new(tc)),
        TreeKind::HiRadix => Box::new(HiRadixTree::<HiRadix>::new(tc)),
    }
}
