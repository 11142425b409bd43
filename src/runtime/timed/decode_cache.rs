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
//!
//! With HiCache on the decode server (`Scheduler.enable_decode_hicache`: the radix cache
//! and `--enable-hierarchical-cache` on its launch, `decode_hicache_mixin.py`, 0.5.14–
//! 0.5.23; `runtime.pd.decode_hicache`) the tree has the release's host tier behind it:
//! - The match's host pages after the device prefix (`l2_host_hit_length`) join the
//!   prefix the decode server promises (`decode_prefix_len = l1 + l2 + l3`); the
//!   admission and the eviction still count the prompt's pages after the device prefix
//!   (`_required_alloc_tokens(fill_len, prefix_len=l1)`), the preallocation takes those
//!   after the whole prefix (`delta_len`), and the host span is loaded back onto the
//!   device by the transfer queue (`_try_hicache_queue_load_back` → `init_load_back`,
//!   which allocates its pages): [`DecodeCache::restore`]. The request waits for that
//!   copy as for its transfer (`HiCacheRestoreGatedKVReceiver`).
//! - Inserts back nodes up to host as the release's write policy does
//!   (`_inc_hit_count`, or at eviction under write_back); the copies are the caller's
//!   to time ([`DecodeCache::take_backups`], [`DecodeCache::backup_acked`]).
//! - Its L3 (the storage query, the prefetch whose span goes into the prefix) is not
//!   modelled: the tree has no storage.

use crate::cache::{
    BackupRecord, HiRadix, HiRadixTree, NodeId, PageKey, TreeConfig, TreeKind, TreeRules,
    Unified0523, V1,
};
use crate::runtime::config::ReplayConfig;

/// A decode server's radix cache, in pages.
pub(super) trait DecodeCache {
    /// `_match_prefix_and_lock`: `pages`' longest cached prefix on the device and, with a
    /// host tier, on the host after it; the device node locked.
    fn match_lock(&mut self, pages: &[PageKey]) -> DecodeMatch;
    /// `init_load_back` of `pages`' host span after its device prefix (a rematch): the
    /// host pages loaded onto the device (all or none; their pages allocated, evicting
    /// as they need) and the nodes they span; the lock moves from `lock` onto the
    /// restored node.
    fn restore(&mut self, pages: &[PageKey], lock: NodeId) -> Restore;
    /// The host backups made since the last call (none without a host tier).
    fn take_backups(&mut self, out: &mut Vec<BackupRecord>);
    /// A backup's D2H copy ended (`writing_check`): its node unpinned.
    fn backup_acked(&mut self, rec: &BackupRecord);
    /// `dec_lock_ref`: a lock given back (a request that did not fit, or finished).
    fn unlock(&mut self, node: NodeId);
    /// Free pages plus the tree's evictable ones (the admission's room).
    fn room(&self) -> u64;
    /// Pages the requests hold: their own and their locked prefixes (a prefix two
    /// requests share counted once).
    fn in_use(&self) -> u64;
    /// `_pre_alloc`: evicts the shortfall of `need` pages (`required_alloc_tokens`) and
    /// allocates up to `take` (`delta_len`): the pages taken.
    fn alloc_prealloc(&mut self, need: u64, take: u64) -> u64;
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

/// What `_match_prefix_and_lock` found, pages.
#[derive(Debug, Clone, Copy)]
pub(super) struct DecodeMatch {
    /// On the device (`l1_prefix_len`).
    pub device: u64,
    /// On the host after it (`l2_host_hit_length`; 0 without a host tier).
    pub host: u64,
    /// The device node locked.
    pub lock: NodeId,
}

/// What a restore loaded.
#[derive(Debug, Clone, Copy)]
pub(super) struct Restore {
    /// Host pages now on the device (0: none, or the load failed).
    pub pages: u64,
    /// The nodes they span (one copy run each, per layer).
    pub nodes: u64,
    /// The node now locked.
    pub lock: NodeId,
}

impl<R: TreeRules> DecodeCache for HiRadixTree<R> {
    fn match_lock(&mut self, pages: &[PageKey]) -> DecodeMatch {
        let m = self.match_prefix(pages);
        self.inc_lock_ref(m.last_device_node);
        DecodeMatch {
            device: m.device_pages,
            host: m.host_pages,
            lock: m.last_device_node,
        }
    }

    fn restore(&mut self, pages: &[PageKey], lock: NodeId) -> Restore {
        let m = self.match_prefix(pages);
        let none = Restore {
            pages: 0,
            nodes: 0,
            lock,
        };
        if m.host_pages == 0 {
            return none;
        }
        self.inc_lock_ref(m.last_node);
        let loaded = self.load_back(&m);
        if loaded == 0 {
            self.dec_lock_ref(m.last_node);
            return none;
        }
        // `commit_load_back` is done by the time the request runs: the restore's copy
        // is waited for before it joins the running batch.
        self.finish_load_backs();
        let nodes = self.host_nodes(&m);
        self.dec_lock_ref(lock);
        Restore {
            pages: loaded,
            nodes,
            lock: m.last_node,
        }
    }

    fn take_backups(&mut self, out: &mut Vec<BackupRecord>) {
        HiRadixTree::take_backups(self, out);
    }

    fn backup_acked(&mut self, rec: &BackupRecord) {
        HiRadixTree::backup_acked(self, rec);
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

    fn alloc_prealloc(&mut self, need: u64, take: u64) -> u64 {
        let free = self.device_free();
        if free < need {
            self.evict(need - free);
        }
        self.reserve(take)
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
/// its allocator's eviction amount; with `host_pages` > 0 its HiCache host tier under
/// the scenario's write and host-eviction policies (no L3).
pub(super) fn decode_cache(
    cfg: &ReplayConfig,
    pool_pages: u64,
    host_pages: u64,
    page_size: u32,
) -> Box<dyn DecodeCache> {
    let host_tier = host_pages > 0;
    let tc = TreeConfig {
        l1_pages: pool_pages,
        l2_pages: host_pages,
        page_size,
        // Without a host tier no policy writes anything (the device-only tree keeps the
        // default's eviction path).
        write_policy: if host_tier {
            cfg.effective_write_policy()
        } else {
            TreeConfig::default().write_policy
        },
        eviction_policy: cfg.policy.eviction_policy,
        evict_host_rule: cfg.policy.evict_host_rule,
        evict_version: cfg.policy.evict_version,
        device_evict_amount: cfg.policy.device_evict_amount,
        host_tier,
        load_back_threshold: cfg.policy.load_back_threshold,
        debug_checks: cfg.measurement.debug_checks,
        ..TreeConfig::default()
    };
    match cfg.policy.tree {
        TreeKind::V1 => Box::new(HiRadixTree::<V1>::new(tc)),
        TreeKind::Unified0523 => Box::new(HiRadixTree::<Unified0523>::new(tc)),
        TreeKind::HiRadix => Box::new(HiRadixTree::<HiRadix>::new(tc)),
    }
}
