//! `SwaRadixTree`: SGLang 0.5.23's `UnifiedRadixCache` with
//! `tree_components=(FULL, SWA)` on the device tier, with its
//! `SWATokenToKVPoolAllocator` (two paged pools, full and sliding-window), as an arena.
//!
//! Mirrors (paths relative to `sglang/srt/mem_cache/`, release 0.5.23):
//! `unified_cache/unified_tree_core.py` (the Python tree core: match, insert phases,
//! `_split_node`, `UnifiedLRUList`, evictable leaf sets, cascade eviction),
//! `unified_cache/components/full.py` and `components/swa.py` (the two components'
//! validators, locks, insert hooks and eviction walks), `unified_radix_cache.py`
//! (`evict_for_alloc`, `_evict_components`) and `allocator/swa.py`
//! (`evict_to_free_tokens`, `alloc_extend` in both pools). The rules, with line
//! numbers, are in `tests/golden/swa_tree/README.md`; `tests/it/swa_tree_golden.rs`
//! checks the tree against SGLang's own, request for request.
//!
//! Design. A separate tree, not optional state in [`HiRadixTree`](super::HiRadixTree):
//! the full-attention tree's behaviour (and every golden file it reproduces) stays
//! untouched, and this one carries only what the SWA component needs. Scope:
//! - Device tier only: no host value, no HiCache, no L3 (the replay refuses an SWA
//!   pool with `l2_pages > 0` or storage).
//! - LRU only (`last_access_time` priority for the FULL leaf walk).
//! - Values are not slot lists: a node always holds its Full value (device-only, a
//!   Full value only leaves with its node), and an SWA value or an SWA tombstone
//!   (`swa == false`). Pools are page counters. The full→SWA slot mapping only
//!   decides *which* slots are freed, never how many, so it is not modelled.
//! - A request finishing at its prefill unchunked never frees its own out-of-window
//!   SWA slots (`checkpoint_into_tree` skips `free_out_of_window_slots` for a finished
//!   request): its SWA frontier (`evicted_seqlen(SWA)`) is 0, its insert
//!   ([`insert`](SwaRadixTree::insert)) creates no tombstone and `_clip_to_window`
//!   never splits. A request frees them at each chunked-prefill chunk's checkpoint
//!   (`Scheduler.stash_chunked_request`), at the prefill-to-decode checkpoint and
//!   during decode; its inserts
//!   ([`insert_with_frontier`](SwaRadixTree::insert_with_frontier)) clip at its
//!   frontier.
//! - `last_access_time` is a logical tick as in the full tree ([`TICK`] units; 0.5.23's
//!   match stamps `cur_time - 1e-5` per level are `tick - depth`). Ties in the FULL
//!   leaf heap (equal stamps) are broken by node id.
//!
//! Lengths: node keys are whole pages; the window `W` and every window comparison are
//! in tokens (`pages * page_size`), as SGLang counts them.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use super::node::PageKey;

/// Arena index of a node of the SWA tree.
pub type SwaNodeId = u32;

const ROOT: SwaNodeId = 0;
/// Sentinels of the SWA LRU list (`UnifiedLRUList.head` = most recent end, `.tail`).
const HEAD: SwaNodeId = 1;
const TAIL: SwaNodeId = 2;
const NIL: SwaNodeId = u32::MAX;

/// One logical tick of `get_and_increase_time_counter` (see the full tree's `TICK`).
const TICK: u64 = 1 << 20;

/// The tree's sizes: the two pools in pages, the page size and the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwaTreeConfig {
    /// Full-attention pool, pages.
    pub full_pages: u64,
    /// Sliding-window pool, pages.
    pub swa_pages: u64,
    /// Tokens per page.
    pub page_size: u32,
    /// `W`: `params.swa_retain_window` in tokens (`components/swa.py:
    /// SWAComponent.__init__`, 0.5.23).
    pub window: u32,
}

/// Counters the tree keeps (pages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwaTreeStats {
    /// Full pages freed by eviction (leaves deleted).
    pub full_evicted_pages: u64,
    /// SWA pages freed by eviction (deleted leaves and internal tombstones).
    pub swa_evicted_pages: u64,
    /// SWA pages freed by tombstoning a node that keeps its Full value.
    pub swa_tombstoned_pages: u64,
    /// Pages of SWA tombstones an insert revived from the request's slots.
    pub swa_revived_pages: u64,
}

/// A match's result (`MatchResult`, device-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwaMatch {
    /// `device_prefix_len / page_size`: pages from the root to the best node.
    pub device_pages: u64,
    /// `full_kv_hit_length / page_size`: pages walked with matching keys.
    pub full_hit_pages: u64,
    /// `best_match_node` (= `last_device_node` device-only).
    pub best: SwaNodeId,
}

/// A lock's receipt (`IncLockRefResult`): the anchor and the SWA window boundary's
/// uuid (0 = the window reached the root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwaLock {
    pub node: SwaNodeId,
    pub swa_uuid: u64,
}

/// What an insert kept of the request's slots (pages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwaInsert {
    /// Pages of the new leaf (its Full value kept; its SWA value kept from the
    /// request's SWA frontier on, [`leaf_live_pages`](Self::leaf_live_pages)).
    pub leaf_pages: u64,
    /// Pages of the new leaf at or past the request's SWA frontier (live SWA; the
    /// older part is an SWA tombstone, the request's SWA slots there already freed).
    pub leaf_live_pages: u64,
    /// `result.last_device_node`: the new leaf, or the last walked node (the root
    /// for an empty key).
    pub last: SwaNodeId,
    /// Pages of revived SWA tombstones (the request's SWA slots kept, its full slots
    /// freed or swapped for the node's old ones).
    pub revived_pages: u64,
}

#[derive(Debug, Clone)]
struct SNode {
    parent: SwaNodeId,
    pages: Vec<PageKey>,
    n_children: u32,
    /// `component_data[FULL].lock_ref`.
    full_lock: u32,
    /// `component_data[SWA].lock_ref`.
    swa_lock: u32,
    /// `component_data[SWA].value is not None`.
    swa: bool,
    /// `component_data[SWA].metadata["uuid"]` (0 = none).
    swa_uuid: u64,
    last_access: u64,
    lru_prev: SwaNodeId,
    lru_next: SwaNodeId,
    in_lru: bool,
    /// Key under which the node sits in the evictable-leaf set, if it does.
    leaf_key: Option<u64>,
    alive: bool,
}

impl Default for SNode {
    fn default() -> Self {
        Self {
            parent: NIL,
            pages: Vec::new(),
            n_children: 0,
            full_lock: 0,
            swa_lock: 0,
            swa: false,
            swa_uuid: 0,
            last_access: 0,
            lru_prev: NIL,
            lru_next: NIL,
            in_lru: false,
            leaf_key: None,
            alive: false,
        }
    }
}

/// The tree and its two pools.
#[derive(Debug, Clone)]
pub struct SwaRadixTree {
    cfg: SwaTreeConfig,
    nodes: Vec<SNode>,
    free_ids: Vec<SwaNodeId>,
    /// `(parent, first page)` → child.
    child_map: FxHashMap<(SwaNodeId, PageKey), SwaNodeId>,
    /// `evictable_device_leaves`, ordered by `(last_access_time, id)`.
    leaves: BTreeSet<(u64, SwaNodeId)>,
    clock: u64,
    uuid_counter: u64,
    /// Free pages of the full pool.
    full_free: u64,
    /// Free pages of the SWA pool.
    swa_free: u64,
    pub stats: SwaTreeStats,
}

#[inline]
fn common_prefix(a: &[PageKey], b: &[PageKey]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl SwaRadixTree {
    /// An empty tree (the root and the LRU sentinels) over two empty pools.
    pub fn new(cfg: SwaTreeConfig) -> Self {
        assert!(cfg.page_size > 0 && cfg.window > 0);
        let root = SNode {
            alive: true,
            ..SNode::default()
        };
        let mut nodes = vec![root, SNode::default(), SNode::default()];
        nodes[HEAD as usize].lru_next = TAIL;
        nodes[TAIL as usize].lru_prev = HEAD;
        Self {
            cfg,
            nodes,
            free_ids: Vec::new(),
            child_map: FxHashMap::default(),
            leaves: BTreeSet::new(),
            clock: 0,
            uuid_counter: 0,
            full_free: cfg.full_pages,
            swa_free: cfg.swa_pages,
            stats: SwaTreeStats::default(),
        }
    }

    pub fn config(&self) -> &SwaTreeConfig {
        &self.cfg
    }
    /// Free pages of the full pool (`full_available_size() / page_size`).
    pub fn full_free(&self) -> u64 {
        self.full_free
    }
    /// Free pages of the SWA pool (`swa_available_size() / page_size`).
    pub fn swa_free(&self) -> u64 {
        self.swa_free
    }
    /// Full pages in use (tree and requests).
    pub fn full_used(&self) -> u64 {
        self.cfg.full_pages - self.full_free
    }
    /// SWA pages in use (tree and requests).
    pub fn swa_used(&self) -> u64 {
        self.cfg.swa_pages - self.swa_free
    }

    #[inline]
    fn tokens(&self, id: SwaNodeId) -> u64 {
        self.nodes[id as usize].pages.len() as u64 * u64::from(self.cfg.page_size)
    }

    #[inline]
    fn tick(&mut self) -> u64 {
        self.clock += TICK;
        self.clock
    }

    // ----- evictable leaf set ----------------------------------------------------------

    /// `unified_tree_core.py: _is_device_leaf` (0.5.23): not the root, Full value
    /// present (always, device-only), every component's `lock_ref == 0`, no child with
    /// a Full value (= no child, device-only).
    #[inline]
    fn is_leaf(&self, id: SwaNodeId) -> bool {
        let n = &self.nodes[id as usize];
        id != ROOT && n.alive && n.full_lock == 0 && n.swa_lock == 0 && n.n_children == 0
    }

    /// `_update_evictable_leaf_sets` (0.5.23), keyed by the LRU priority
    /// (`evict_policy.py: LRUStrategy.get_priority` = `last_access_time`) so the set is
    /// the FULL walk's heap (`full.py: _evict_device_start` heapifies the set with the
    /// keys of the moment; keys do not change during a walk).
    fn refresh_leaf(&mut self, id: SwaNodeId) {
        let want = self
            .is_leaf(id)
            .then_some(self.nodes[id as usize].last_access);
        let old = self.nodes[id as usize].leaf_key;
        if old == want {
            return;
        }
        if let Some(k) = old {
            self.leaves.remove(&(k, id));
        }
        if let Some(k) = want {
            self.leaves.insert((k, id));
        }
        self.nodes[id as usize].leaf_key = want;
    }

    /// `_touch_node` (0.5.23): `last_access_time = counter`; the SWA WALKDOWN hook is a
    /// no-op (`swa.py: refresh_lru`).
    fn touch(&mut self, id: SwaNodeId) {
        let t = self.tick();
        self.nodes[id as usize].last_access = t;
        if id != ROOT {
            self.refresh_leaf(id);
        }
    }

    // ----- SWA LRU list (`unified_tree_core.py: UnifiedLRUList`, no session partition) -

    fn lru_link_after(&mut self, prev: SwaNodeId, id: SwaNodeId) {
        let next = self.nodes[prev as usize].lru_next;
        let n = &mut self.nodes[id as usize];
        n.lru_prev = prev;
        n.lru_next = next;
        self.nodes[next as usize].lru_prev = id;
        self.nodes[prev as usize].lru_next = id;
    }

    fn lru_unlink(&mut self, id: SwaNodeId) {
        let (p, n) = {
            let x = &self.nodes[id as usize];
            (x.lru_prev, x.lru_next)
        };
        self.nodes[p as usize].lru_next = n;
        self.nodes[n as usize].lru_prev = p;
        let x = &mut self.nodes[id as usize];
        x.lru_prev = NIL;
        x.lru_next = NIL;
    }

    /// `UnifiedLRUList.insert_mru`.
    fn lru_insert_mru(&mut self, id: SwaNodeId) {
        debug_assert!(!self.nodes[id as usize].in_lru);
        self.nodes[id as usize].in_lru = true;
        self.lru_link_after(HEAD, id);
    }

    /// `UnifiedLRUList.insert_after(prev, node)`: `node` just older than `prev`.
    fn lru_insert_after(&mut self, prev: SwaNodeId, id: SwaNodeId) {
        debug_assert!(self.nodes[prev as usize].in_lru && !self.nodes[id as usize].in_lru);
        self.nodes[id as usize].in_lru = true;
        self.lru_link_after(prev, id);
    }

    /// `UnifiedLRUList.remove_node`.
    fn lru_remove(&mut self, id: SwaNodeId) {
        debug_assert!(self.nodes[id as usize].in_lru);
        self.nodes[id as usize].in_lru = false;
        self.lru_unlink(id);
    }

    /// `UnifiedLRUList.get_prev_no_lock` (0.5.23): the next node towards the MRU end
    /// from `id`, skipping nodes whose SWA `lock_ref > 0`; `None` at the head.
    fn lru_prev_no_lock(&self, id: SwaNodeId) -> Option<SwaNodeId> {
        let mut x = self.nodes[id as usize].lru_prev;
        while x != HEAD && self.nodes[x as usize].swa_lock > 0 {
            x = self.nodes[x as usize].lru_prev;
        }
        (x != HEAD).then_some(x)
    }

    /// `UnifiedLRUList.get_lru_no_lock`: the least recent SWA-unlocked node.
    fn lru_no_lock(&self) -> Option<SwaNodeId> {
        self.lru_prev_no_lock(TAIL)
    }

    /// `UnifiedLRUList.reset_node_and_window_ancestors_mru(node, root, W + P,
    /// node_has_component_data)` (0.5.23; called by `swa.py: refresh_lru` at
    /// MATCH_END and INSERT_END): from `id` upward while fewer than `W + P` tokens
    /// were visited, every node with an SWA value moves to the MRU end, deeper nodes
    /// more recent. Tombstones count towards the span but do not move.
    fn refresh_window_mru(&mut self, mut id: SwaNodeId) {
        let span = u64::from(self.cfg.window) + u64::from(self.cfg.page_size);
        let mut prev = HEAD;
        let mut acc = 0u64;
        while id != ROOT && acc < span {
            if self.nodes[id as usize].swa {
                self.lru_unlink(id);
                self.lru_link_after(prev, id);
                prev = id;
            }
            acc += self.tokens(id);
            id = self.nodes[id as usize].parent;
        }
    }

    /// `set_component_device_value` for SWA (0.5.23, via `swa.py: SWARebuild` or
    /// `RecoverSWAWithLockedFull`): the node gets its SWA value and goes to the MRU
    /// end of the SWA LRU.
    fn publish_swa(&mut self, id: SwaNodeId) {
        debug_assert!(!self.nodes[id as usize].swa);
        self.nodes[id as usize].swa = true;
        self.lru_insert_mru(id);
    }

    // ----- nodes -------------------------------------------------------------------------

    /// `_new_node` + linking under `parent` (the new node's `last_access_time` is a
    /// fresh counter, `UnifiedTreeNode.__init__`).
    fn alloc_node(&mut self, parent: SwaNodeId, pages: &[PageKey]) -> SwaNodeId {
        let t = self.tick();
        let id = if let Some(id) = self.free_ids.pop() {
            id
        } else {
            self.nodes.push(SNode::default());
            (self.nodes.len() - 1) as SwaNodeId
        };
        let n = &mut self.nodes[id as usize];
        n.parent = parent;
        n.pages.clear();
        n.pages.extend_from_slice(pages);
        n.n_children = 0;
        n.full_lock = 0;
        n.swa_lock = 0;
        n.swa = false;
        n.swa_uuid = 0;
        n.last_access = t;
        n.lru_prev = NIL;
        n.lru_next = NIL;
        n.in_lru = false;
        n.leaf_key = None;
        n.alive = true;
        self.child_map.insert((parent, pages[0]), id);
        self.nodes[parent as usize].n_children += 1;
        id
    }

    fn child(&self, parent: SwaNodeId, page: PageKey) -> Option<SwaNodeId> {
        self.child_map.get(&(parent, page)).copied()
    }

    /// `unified_tree_core.py: _split_node` (0.5.23): the first `at` pages of `child`
    /// become a new parent (fresh counter), which copies both components' `lock_ref`
    /// (`full.py` and `swa.py: redistribute_on_node_split`), takes its slice of the SWA
    /// value (a tombstone stays a tombstone on both sides) and the window-boundary
    /// uuid (the lock's older edge moves to the parent); if it has an SWA value it
    /// joins the SWA LRU just older than `child` (`insert_after(child)`); then
    /// `child.last_access_time` gets a fresh counter.
    fn split(&mut self, child: SwaNodeId, at: usize) -> SwaNodeId {
        let c = &self.nodes[child as usize];
        debug_assert!(at > 0 && at < c.pages.len());
        let parent = c.parent;
        let (full_lock, swa_lock, swa, uuid) = (c.full_lock, c.swa_lock, c.swa, c.swa_uuid);
        let first = c.pages[0];
        self.child_map.remove(&(parent, first));
        self.nodes[parent as usize].n_children -= 1;
        // The head pages go to the new node (reusing a freed node's buffer).
        let new = {
            let t = self.tick();
            let id = if let Some(id) = self.free_ids.pop() {
                id
            } else {
                self.nodes.push(SNode::default());
                (self.nodes.len() - 1) as SwaNodeId
            };
            let mut buf = std::mem::take(&mut self.nodes[id as usize].pages);
            buf.clear();
            buf.extend_from_slice(&self.nodes[child as usize].pages[..at]);
            let n = &mut self.nodes[id as usize];
            *n = SNode {
                parent,
                pages: buf,
                n_children: 1,
                full_lock,
                swa_lock,
                swa,
                swa_uuid: uuid,
                last_access: t,
                alive: true,
                ..SNode::default()
            };
            self.child_map.insert((parent, first), id);
            self.nodes[parent as usize].n_children += 1;
            id
        };
        let c = &mut self.nodes[child as usize];
        c.pages.drain(..at);
        c.parent = new;
        c.swa_uuid = 0;
        let cfirst = c.pages[0];
        self.child_map.insert((new, cfirst), child);
        if swa {
            self.lru_insert_after(child, new);
        }
        let t = self.tick();
        self.nodes[child as usize].last_access = t;
        self.refresh_leaf(new);
        self.refresh_leaf(child);
        new
    }

    /// Removes a device leaf: `_delete_unbacked_device_leaf` →
    /// `_release_all_component_layers` (0.5.23): Full slots and, if the node has an
    /// SWA value, its SWA peers are freed, the node leaves the SWA LRU and the tree,
    /// and the parent's leaf status is updated.
    fn delete_leaf(&mut self, id: SwaNodeId) {
        debug_assert!(self.is_leaf(id));
        let len = self.nodes[id as usize].pages.len() as u64;
        self.full_free += len;
        self.stats.full_evicted_pages += len;
        if self.nodes[id as usize].swa {
            self.swa_free += len;
            self.stats.swa_evicted_pages += len;
            self.nodes[id as usize].swa = false;
            self.lru_remove(id);
        }
        if let Some(k) = self.nodes[id as usize].leaf_key.take() {
            self.leaves.remove(&(k, id));
        }
        let parent = self.nodes[id as usize].parent;
        let first = self.nodes[id as usize].pages[0];
        self.child_map.remove(&(parent, first));
        self.nodes[parent as usize].n_children -= 1;
        let n = &mut self.nodes[id as usize];
        n.alive = false;
        n.pages.clear();
        self.free_ids.push(id);
        self.refresh_leaf(parent);
    }

    /// The SWA walk's internal victim (`swa.py: _evict_device_next_node` →
    /// `_evict_component_and_detach_lru` + `_cascade_evict`, 0.5.23): the SWA value is
    /// freed (`evict_component`), the node leaves the SWA LRU and keeps its Full value
    /// (internal priorities FULL 2 > SWA 1: no cascade to Full).
    fn tombstone(&mut self, id: SwaNodeId) {
        let len = self.nodes[id as usize].pages.len() as u64;
        self.nodes[id as usize].swa = false;
        self.lru_remove(id);
        self.swa_free += len;
        self.stats.swa_evicted_pages += len;
        self.stats.swa_tombstoned_pages += len;
    }

    // ----- match -------------------------------------------------------------------------

    /// `unified_tree_core.py: match_prefix` → `_match_prefix_helper` →
    /// `_match_post_processor` (0.5.23, device-only) of a page-aligned key:
    /// - walk from the root child by child; a partially matched child is split at
    ///   the match and the walk ends there;
    /// - every node reached (or the split fragment) is offered to both validators
    ///   (`full.py` / `swa.py: create_match_validator`): FULL accepts (a Full value is
    ///   always present here); SWA, stateful from `+inf`, rejects a tombstone and
    ///   restarts at 0, else adds `len(node.key)` and accepts iff the sum reaches `W`.
    ///   An accepted node is the best match;
    /// - MATCH_END: `refresh_window_mru(best)`; then `last_access_time` = one fresh
    ///   counter on the best node, 1e-5 less per level up to the root (nodes walked
    ///   past the best are not stamped).
    ///
    /// `full_hit_pages` is `full_kv_hit_length` (walked pages, valid or not), from
    /// which `swa.py: finalize_match_result_in_tree_core` derives the branching point.
    pub fn match_prefix(&mut self, key: &[PageKey]) -> SwaMatch {
        let w = u64::from(self.cfg.window);
        let mut node = ROOT;
        let mut i = 0usize;
        let mut best = ROOT;
        let mut best_pages = 0usize;
        let mut swa_len = u64::MAX;
        while i < key.len() {
            let Some(c) = self.child(node, key[i]) else {
                break;
            };
            let cl = self.nodes[c as usize].pages.len();
            let k = common_prefix(&self.nodes[c as usize].pages, &key[i..]);
            let c = if k < cl { self.split(c, k) } else { c };
            i += k;
            if self.nodes[c as usize].swa {
                swa_len = swa_len.saturating_add(self.tokens(c));
                if swa_len >= w {
                    best = c;
                    best_pages = i;
                }
            } else {
                swa_len = 0;
            }
            node = c;
            if k < cl {
                break;
            }
        }
        self.refresh_window_mru(best);
        let mut t = self.tick();
        let mut n = best;
        while n != ROOT {
            self.nodes[n as usize].last_access = t;
            self.refresh_leaf(n);
            t -= 1;
            n = self.nodes[n as usize].parent;
        }
        self.nodes[ROOT as usize].last_access = t;
        SwaMatch {
            device_pages: best_pages as u64,
            full_hit_pages: i as u64,
            best,
        }
    }

    // ----- locks -------------------------------------------------------------------------

    /// `unified_radix_cache.py: lock` → `inc_lock_ref` (0.5.23), FULL then SWA:
    /// - FULL (`full.py: acquire_component_lock`): every node from `id` to the root;
    /// - SWA (`swa.py: acquire_component_lock`): from `id` upward while fewer than `W`
    ///   tokens are covered, every node (tombstones included); the node that reaches
    ///   `W` is the boundary and carries a uuid (reused if present), kept in the
    ///   receipt; none if the root came first.
    pub fn lock(&mut self, id: SwaNodeId) -> SwaLock {
        let mut x = id;
        while x != ROOT {
            self.nodes[x as usize].full_lock += 1;
            self.refresh_leaf(x);
            x = self.nodes[x as usize].parent;
        }
        let w = u64::from(self.cfg.window);
        let mut covered = 0u64;
        let mut uuid = 0u64;
        let mut x = id;
        while x != ROOT && covered < w {
            self.nodes[x as usize].swa_lock += 1;
            covered += self.tokens(x);
            if covered >= w {
                if self.nodes[x as usize].swa_uuid == 0 {
                    self.uuid_counter += 1;
                    self.nodes[x as usize].swa_uuid = self.uuid_counter;
                }
                uuid = self.nodes[x as usize].swa_uuid;
            }
            self.refresh_leaf(x);
            x = self.nodes[x as usize].parent;
        }
        SwaLock {
            node: id,
            swa_uuid: uuid,
        }
    }

    /// `unified_radix_cache.py: unlock` → `dec_lock_ref` → `_release_components`
    /// (0.5.23), SWA then FULL: SWA (`swa.py: release_component_lock`) walks up
    /// decrementing until the node holding the receipt's uuid (or the root); FULL
    /// (`full.py: release_component_lock`) to the root. A node whose last lock goes
    /// may become an evictable leaf.
    pub fn unlock(&mut self, lock: SwaLock) {
        let mut x = lock.node;
        while x != ROOT {
            let n = &mut self.nodes[x as usize];
            assert!(n.swa_lock > 0, "SWA lock release below zero on node {x}");
            n.swa_lock -= 1;
            let stop = lock.swa_uuid != 0 && n.swa_uuid == lock.swa_uuid;
            let p = n.parent;
            self.refresh_leaf(x);
            if stop {
                break;
            }
            x = p;
        }
        let mut x = lock.node;
        while x != ROOT {
            let n = &mut self.nodes[x as usize];
            assert!(n.full_lock > 0, "FULL lock release below zero on node {x}");
            n.full_lock -= 1;
            let p = n.parent;
            self.refresh_leaf(x);
            x = p;
        }
    }

    // ----- allocation and eviction -------------------------------------------------------

    /// `allocator/swa.py: evict_to_free_tokens(tree, n)` (0.5.23) for `n = pages`
    /// pages in both pools: the shortfall of each pool is asked of
    /// `unified_radix_cache.py: evict_for_alloc`, whose `_evict_components` runs the
    /// FULL walk, then the SWA walk, each to "available ≥ n" ([`evict`](Self::evict)).
    pub fn make_room(&mut self, pages: u64) {
        let full_short = pages.saturating_sub(self.full_free);
        let swa_short = pages.saturating_sub(self.swa_free);
        if full_short > 0 || swa_short > 0 {
            self.evict(full_short, swa_short);
        }
    }

    /// `unified_radix_cache.py: _evict_components` (0.5.23) with availability targets
    /// (`evict_for_alloc`): each component with a non-zero request must reach
    /// `available_now + shortfall`, rechecked after every victim; frees reach the
    /// pools at once (`_apply_eviction_result`), so the FULL walk's SWA frees count
    /// for the SWA target.
    /// - FULL walk (`full.py: _evict_device_start` / `_evict_device_next_node`): the
    ///   least recent evictable leaf is deleted (its parent may become one);
    /// - SWA walk (`swa.py: _evict_device_start` / `_evict_device_next_node`): a cursor
    ///   from the least recent SWA-unlocked node of the SWA LRU towards the most
    ///   recent (`get_lru_no_lock`, `get_prev_no_lock` taken before the victim): an
    ///   evictable leaf is deleted whole like a FULL victim; any other node (internal,
    ///   or a childless node still locked in FULL) is SWA-tombstoned.
    pub fn evict(&mut self, full_short: u64, swa_short: u64) {
        // Both targets are set before the FULL walk (`available_size_targets`).
        let swa_target = self.swa_free + swa_short;
        if full_short > 0 {
            let target = self.full_free + full_short;
            while self.full_free < target {
                let Some(&(_, x)) = self.leaves.first() else {
                    break;
                };
                self.delete_leaf(x);
            }
        }
        if swa_short > 0 {
            let target = swa_target;
            let mut cursor = self.lru_no_lock();
            while self.swa_free < target {
                if let Some(c) = cursor
                    && !self.nodes[c as usize].in_lru
                {
                    cursor = self.lru_no_lock();
                }
                let Some(x) = cursor else {
                    break;
                };
                let prev = self.lru_prev_no_lock(x);
                if self.is_leaf(x) {
                    self.delete_leaf(x);
                } else {
                    self.tombstone(x);
                }
                cursor = prev;
            }
        }
    }

    /// `alloc_extend` of `pages` pages in both pools (`allocator/swa.py`, 0.5.23):
    /// false (SGLang: `None`, then "Prefill out of memory") if either pool is short.
    pub fn alloc(&mut self, pages: u64) -> bool {
        if self.full_free < pages || self.swa_free < pages {
            return false;
        }
        self.full_free -= pages;
        self.swa_free -= pages;
        true
    }

    /// Returns pages a request held and the tree did not take (`free_kv_row`, the
    /// insert's duplicate frees).
    pub fn free(&mut self, full: u64, swa: u64) {
        self.full_free += full;
        self.swa_free += swa;
        debug_assert!(self.full_free <= self.cfg.full_pages && self.swa_free <= self.cfg.swa_pages);
    }

    // ----- insert ------------------------------------------------------------------------

    /// `unified_radix_cache.py: insert` → `unified_tree_core.py: begin_insert` and its
    /// phases (0.5.23) for a request whose own matched prefix is `prev_prefix_pages`
    /// (`cache_protected_len`) and whose SWA frontier is 0:
    /// - the root is touched; WALK (`_insert_walk_step`): each walked child is touched,
    ///   then split on a partial match;
    /// - OVERLAP (`_insert_overlap_step` → `swa.py: update_component_on_insert_overlap`):
    ///   a node beyond the request's prefix that is an SWA tombstone is revived from
    ///   the request's slots (`_recover_from_incoming`: `SWARebuild`, or
    ///   `RecoverSWAWithLockedFull` when its Full is locked; either way the node gets
    ///   SWA and goes to the MRU end, and one set of full slots is freed); the
    ///   request's slots for the other overlapped nodes are freed (duplicates);
    /// - COMMIT (`_insert_commit_step`, `swa.py: commit_insert_component_data` →
    ///   `_populate_range`): the rest of the key becomes one leaf; a leaf longer than
    ///   `tail = ceil(W/P)*P` tokens is split so it keeps the last `tail`
    ///   (`_maybe_split_leaf_for_swa_lock`); SWA is published on the split-off parent,
    ///   then on the leaf (the leaf most recent);
    /// - TAIL (`_insert_tail_step`): `refresh_window_mru` from the target (the leaf, or
    ///   the last walked node).
    ///
    /// The request's pages the tree did not take are the caller's to free.
    pub fn insert(&mut self, key: &[PageKey], prev_prefix_pages: u64) -> SwaInsert {
        self.insert_with_frontier(key, prev_prefix_pages, 0)
    }

    /// [`insert`](Self::insert) for a request whose SWA frontier
    /// (`evicted_seqlen(SWA)`, `frontier_pages`) is past 0: a request that decodes, or
    /// the prefill-to-decode checkpoint (README §4.2, §4.3, §7). `_clip_to_window` with
    /// `window_start = frontier`: an overlapped SWA tombstone beyond the request's
    /// prefix that ends at or before the frontier stays a tombstone; one that starts
    /// before it is split at the frontier and only the part from the frontier on is
    /// revived. The new leaf is split at the frontier; its older part stays an SWA
    /// tombstone (Full kept), the rest gets the window-tail split and live SWA.
    pub fn insert_with_frontier(
        &mut self,
        key: &[PageKey],
        prev_prefix_pages: u64,
        frontier_pages: u64,
    ) -> SwaInsert {
        let mut out = SwaInsert::default();
        self.touch(ROOT);
        let mut node = ROOT;
        let mut i = 0usize;
        while i < key.len() {
            let Some(c) = self.child(node, key[i]) else {
                break;
            };
            self.touch(c);
            let cl = self.nodes[c as usize].pages.len();
            let k = common_prefix(&self.nodes[c as usize].pages, &key[i..]);
            let c = if k < cl { self.split(c, k) } else { c };
            let end = (i + k) as u64;
            if prev_prefix_pages < end && !self.nodes[c as usize].swa {
                // `_clip_to_window`: `live_start = max(start, window_start)`; nothing
                // if it reaches the end, else the older part is split off (it stays a
                // tombstone) and `[live_start, end)` is revived.
                let live_start = (i as u64).max(frontier_pages);
                if live_start < end {
                    if live_start > i as u64 {
                        self.split(c, (live_start - i as u64) as usize);
                    }
                    let n = end - live_start;
                    self.publish_swa(c);
                    out.revived_pages += n;
                    self.stats.swa_revived_pages += n;
                }
            }
            node = c;
            i += k;
        }
        let target = if i < key.len() {
            let leaf = self.alloc_node(node, &key[i..]);
            self.refresh_leaf(leaf);
            self.refresh_leaf(node);
            out.leaf_pages = (key.len() - i) as u64;
            // `_clip_to_window` at the frontier: a leaf wholly below it is a tombstone;
            // one that starts below it is split there, the older part a tombstone.
            let live_start = (i as u64).max(frontier_pages);
            if live_start < key.len() as u64 {
                if live_start > i as u64 {
                    self.split(leaf, (live_start - i as u64) as usize);
                }
                out.leaf_live_pages = key.len() as u64 - live_start;
                let tail_pages =
                    u64::from(self.cfg.window).div_ceil(u64::from(self.cfg.page_size)) as usize;
                let len = out.leaf_live_pages as usize;
                if len > tail_pages {
                    let parent = self.split(leaf, len - tail_pages);
                    self.publish_swa(parent);
                }
                self.publish_swa(leaf);
            }
            leaf
        } else {
            node
        };
        if target != ROOT {
            self.refresh_window_mru(target);
        }
        out.last = target;
        out
    }

    /// Re-derives the bookkeeping (tests): child counts, the leaf set, the LRU list
    /// and the pools (tree pages never exceed a pool).
    /// Pages the tree's nodes hold in each pool (full, SWA): with no request holding a
    /// row, the pools' whole use.
    pub fn tree_pages(&self) -> (u64, u64) {
        let mut full = 0u64;
        let mut swa = 0u64;
        for (id, n) in self.nodes.iter().enumerate() {
            let id = id as SwaNodeId;
            if id == HEAD || id == TAIL || !n.alive || id == ROOT {
                continue;
            }
            full += n.pages.len() as u64;
            if n.swa {
                swa += n.pages.len() as u64;
            }
        }
        (full, swa)
    }

    pub fn check(&self) {
        let (full_tree, swa_tree) = self.tree_pages();
        let mut in_lru = 0usize;
        for (id, n) in self.nodes.iter().enumerate() {
            let id = id as SwaNodeId;
            if id == HEAD || id == TAIL || !n.alive || id == ROOT {
                continue;
            }
            if n.swa {
                assert!(n.in_lru, "node {id}: SWA value outside the LRU");
                in_lru += 1;
            } else {
                assert!(!n.in_lru, "node {id}: tombstone in the LRU");
            }
            assert_eq!(
                self.child_map.get(&(n.parent, n.pages[0])),
                Some(&id),
                "node {id}: child map"
            );
            assert_eq!(
                n.leaf_key.is_some(),
                self.is_leaf(id),
                "node {id}: leaf set membership"
            );
        }
        let mut x = self.nodes[HEAD as usize].lru_next;
        let mut walked = 0usize;
        while x != TAIL {
            walked += 1;
            x = self.nodes[x as usize].lru_next;
        }
        assert_eq!(walked, in_lru, "SWA LRU length");
        assert_eq!(
            self.leaves.len(),
            self.nodes.iter().filter(|n| n.leaf_key.is_some()).count()
        );
        assert!(full_tree <= self.full_used(), "full pool");
        assert!(swa_tree <= self.swa_used(), "SWA pool");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `W = 128`, `P = 64`: the window is two pages.
    fn tree(full: u64, swa: u64) -> SwaRadixTree {
        SwaRadixTree::new(SwaTreeConfig {
            full_pages: full,
            swa_pages: swa,
            page_size: 64,
            window: 128,
        })
    }

    fn keys(r: std::ops::Range<u64>) -> Vec<PageKey> {
        r.collect()
    }

    /// Inserts `key` as a fresh request would (its pages allocated first).
    fn put(t: &mut SwaRadixTree, key: &[PageKey]) -> SwaInsert {
        let n = key.len() as u64;
        assert!(t.alloc(n));
        let k = t.insert(key, 0);
        t.free(n - k.leaf_pages, n - k.leaf_pages - k.revived_pages);
        k
    }

    /// The LRU list from the most recent node.
    fn lru(t: &SwaRadixTree) -> Vec<SwaNodeId> {
        let mut v = Vec::new();
        let mut x = t.nodes[HEAD as usize].lru_next;
        while x != TAIL {
            v.push(x);
            x = t.nodes[x as usize].lru_next;
        }
        v
    }

    #[test]
    fn a_fresh_leaf_keeps_one_window_and_its_head_is_published_first() {
        let mut t = tree(100, 100);
        let k = put(&mut t, &keys(0..5));
        assert_eq!(k.leaf_pages, 5);
        let m = t.match_prefix(&keys(0..5));
        let leaf = m.best;
        assert_eq!(t.nodes[leaf as usize].pages, vec![3, 4]);
        let head = t.nodes[leaf as usize].parent;
        assert_eq!(t.nodes[head as usize].pages, vec![0, 1, 2]);
        assert_eq!(lru(&t), vec![leaf, head]);
        assert_eq!((t.full_used(), t.swa_used()), (5, 5));
        t.check();
    }

    /// A request that decoded: its SWA frontier at page 6 of a 9-page key. The leaf
    /// is split at the frontier (pages 0..6 an SWA tombstone, Full kept), the live
    /// part keeps one window as its tail; only the last 3 pages hold SWA. A later
    /// insert of the same key with frontier 4 revives pages 4..6 only.
    #[test]
    fn an_insert_with_a_frontier_tombstones_below_it_and_revives_from_it() {
        let mut t = tree(100, 100);
        assert!(t.alloc(9));
        // The request's SWA slots below the frontier were freed before the insert.
        t.free(0, 6);
        let k = t.insert_with_frontier(&keys(0..9), 0, 6);
        assert_eq!(
            (k.leaf_pages, k.leaf_live_pages, k.revived_pages),
            (9, 3, 0)
        );
        assert_eq!((t.full_used(), t.swa_used()), (9, 3));
        assert_eq!(t.nodes[k.last as usize].pages, vec![7, 8]);
        let live_head = t.nodes[k.last as usize].parent;
        assert_eq!(t.nodes[live_head as usize].pages, vec![6]);
        let dead = t.nodes[live_head as usize].parent;
        assert_eq!(t.nodes[dead as usize].pages, keys(0..6));
        assert!(!t.nodes[dead as usize].swa);
        assert_eq!(lru(&t), vec![k.last, live_head]);
        t.check();
        // A match ending inside the tombstone fails the SWA validator.
        assert_eq!(t.match_prefix(&keys(0..6)).device_pages, 0);
        assert_eq!(t.match_prefix(&keys(0..9)).device_pages, 9);
        // Same key, frontier 4: the tombstone is split at 4 and 4..6 revived.
        assert!(t.alloc(9));
        t.free(0, 4);
        let k2 = t.insert_with_frontier(&keys(0..9), 0, 4);
        assert_eq!((k2.leaf_pages, k2.revived_pages), (0, 2));
        t.free(9, 5 - 2);
        assert_eq!((t.full_used(), t.swa_used()), (9, 5));
        assert_eq!(t.match_prefix(&keys(0..6)).device_pages, 6);
        assert_eq!(t.match_prefix(&keys(0..4)).device_pages, 0);
        t.check();
    }

    #[test]
    fn a_match_ends_where_the_window_after_the_last_tombstone_is_whole() {
        let mut t = tree(100, 100);
        put(&mut t, &keys(0..5));
        // Tombstone the head (3 pages): the leaf alone still covers the window.
        let best = t.match_prefix(&keys(0..5)).best;
        let head = t.nodes[best as usize].parent;
        t.tombstone(head);
        let m = t.match_prefix(&keys(0..5));
        assert_eq!((m.device_pages, m.full_hit_pages), (5, 5));
        // Only one page after the tombstone: no valid end beyond the root.
        let m = t.match_prefix(&keys(0..4));
        assert_eq!((m.device_pages, m.full_hit_pages, m.best), (0, 4, ROOT));
        t.check();
    }

    #[test]
    fn an_insert_revives_tombstones_beyond_the_request_s_prefix() {
        let mut t = tree(100, 100);
        put(&mut t, &keys(0..5));
        let best = t.match_prefix(&keys(0..5)).best;
        let head = t.nodes[best as usize].parent;
        t.tombstone(head);
        assert_eq!(t.swa_used(), 2);
        let k = put(&mut t, &keys(0..5));
        assert_eq!((k.leaf_pages, k.revived_pages), (0, 3));
        assert_eq!((t.full_used(), t.swa_used()), (5, 5));
        // Revived at the MRU end, then the tail refresh (W + P from the target).
        let leaf = t.match_prefix(&keys(0..5)).best;
        assert_eq!(lru(&t), vec![leaf, head]);
        t.check();
    }

    #[test]
    fn a_window_lock_keeps_a_childless_node_out_of_the_leaf_set_and_the_swa_walk() {
        let mut t = tree(100, 100);
        put(&mut t, &keys(0..5));
        let m = t.match_prefix(&keys(0..5));
        let lock = t.lock(m.best);
        let head = t.nodes[m.best as usize].parent;
        // The window (two pages) is the leaf: FULL locks the path, SWA the leaf only.
        assert_eq!(t.nodes[m.best as usize].swa_lock, 1);
        assert_eq!(t.nodes[head as usize].swa_lock, 0);
        assert!(t.leaves.is_empty());
        // The SWA walk skips the locked leaf and tombstones the head.
        t.evict(0, 3);
        assert!(!t.nodes[head as usize].swa && t.nodes[m.best as usize].swa);
        assert_eq!((t.full_used(), t.swa_used()), (5, 2));
        t.unlock(lock);
        assert_eq!(t.leaves.len(), 1);
        t.check();
    }

    #[test]
    fn a_split_parent_sits_just_older_than_its_child_in_the_swa_lru() {
        let mut t = tree(100, 100);
        put(&mut t, &keys(0..2));
        put(&mut t, &keys(10..12));
        // Splitting the older leaf: its head goes right behind it, not to the MRU end
        // (a match would then refresh it: the validator starts at +inf, so the head is
        // a valid end).
        let tail = t.child(ROOT, 0).unwrap();
        let head = t.split(tail, 1);
        let other = t.child(ROOT, 10).unwrap();
        assert_eq!(lru(&t), vec![other, tail, head]);
        t.check();
    }

    #[test]
    fn the_full_walk_runs_before_the_swa_walk_and_deletes_leaves_whole() {
        let mut t = tree(4, 100);
        put(&mut t, &keys(0..2));
        put(&mut t, &keys(10..12));
        t.make_room(2);
        // The least recent leaf goes with its SWA pages.
        assert_eq!(t.child(ROOT, 0), None);
        assert_eq!((t.full_used(), t.swa_used()), (2, 2));
        assert_eq!(t.stats.full_evicted_pages, 2);
        t.check();
    }
}
