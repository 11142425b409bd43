//! `HiRadixTree`: SGLang's HiRadixCache radix tree at page granularity, as an arena.
//!
//! Mirrors `mem_cache/radix_cache.py` (TreeNode, `_split_node`, `inc_lock_ref`,
//! `dec_lock_ref`, `_update_leaf_status`) and `mem_cache/hiradix_cache.py` (V1,
//! upstream 2026-07-20: `HiRadixCache.match_prefix`, `_insert_helper`,
//! `_update_host_leaf_status`). Keys are the trace's chained page hashes (`u64`),
//! one per page, used directly: a lookup costs one hash probe per node, not per page; a node holds a run of pages. Device and host values are flags: the tree
//! counts pages, it does not hand out slot indices.
//!
//! Known deviations (documented, deliberate):
//! - `last_access_time` is a strictly increasing logical tick (one per touch), which
//!   orders exactly like `time.monotonic()` without reading a clock.
//! - Ties in the eviction key are broken by node id (SGLang: heap order of
//!   `TreeNode.__lt__`), so long runs of equal keys may evict in another order.

use rustc_hash::FxHashMap;

use super::leaf_heap::{LeafHeap, LeafSet};
use super::node::{NIL, Node, NodeId, PageKey, PrioKey, ROOT};
use super::policy::{DeviceEvictAmount, EvictHostRule, EvictVersion};
use super::rules::{TreeRules, Unified0523, V1};
use crate::domain::{EvictionPolicy, WritePolicy};

/// One logical clock tick in `last_access` units. A tick is `2^20` units so that
/// 0.5.23's match stamp (`cur_time - 1e-5` per level towards the root, see
/// [`TreeRules::MATCH_STAMPS_PATH`]) is `tick - depth`: same order, integers only.
pub(crate) const TICK: u64 = 1 << 20;

/// Tree-level configuration (pages, not bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct TreeConfig {
    pub l1_pages: u64,
    pub l2_pages: u64,
    pub page_size: u32,
    pub write_policy: WritePolicy,
    pub eviction_policy: EvictionPolicy,
    pub evict_host_rule: EvictHostRule,
    pub evict_version: EvictVersion,
    pub device_evict_amount: DeviceEvictAmount,
    /// False in `buffer_only` mode: the tree never holds a host value.
    pub host_tier: bool,
    /// `load_back_threshold` in tokens (SGLang: 10).
    pub load_back_threshold: u32,
    /// An L3 tier exists: a write_back eviction's backup is also written to storage,
    /// which pins the node's host copy until the storage ack
    /// (`unified_radix_cache.py: _finish_write_through_ack` → `write_backup_storage`:
    /// `inc_host_lock_ref`, released by `_drain_backup`); see
    /// [`release_storage_pins`](HiRadixTree::release_storage_pins).
    pub storage_backup_pins: bool,
    /// `buffer_only` with storage, `storage_write_gate: write_threshold`: a backup the
    /// tree would make is recorded as a storage write intent instead
    /// ([`take_storage_intents`](HiRadixTree::take_storage_intents)).
    pub buffer_storage_intents: bool,
    /// The what-if of sglang PR 39395: load-backs one node at a time
    /// ([`crate::release::proposal::LoadBackMode::SerializedPerNode`]).
    pub serialize_load_back: bool,
    /// The what-if of sglang PR 39845: every host copy the tree frees is recorded
    /// ([`take_host_evictions`](HiRadixTree::take_host_evictions)) for an L3 write.
    pub l3_at_host_eviction: bool,
    /// Re-derive every invariant after each public operation (tests).
    pub debug_checks: bool,
}

impl Default for TreeConfig {
    fn default() -> Self {
        Self {
            l1_pages: 1024,
            l2_pages: 2048,
            page_size: 1,
            write_policy: WritePolicy::WriteThrough,
            eviction_policy: EvictionPolicy::Lru,
            evict_host_rule: EvictHostRule::EvictedOnly,
            evict_version: EvictVersion::V1,
            device_evict_amount: DeviceEvictAmount::Requested,
            host_tier: true,
            load_back_threshold: 10,
            storage_backup_pins: false,
            buffer_storage_intents: false,
            serialize_load_back: false,
            l3_at_host_eviction: false,
            debug_checks: false,
        }
    }
}

/// Counters the tree keeps (pages unless named otherwise).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Device pages freed by `evict` (demoted or deleted).
    pub device_evicted_pages: u64,
    /// Host pages freed by `evict_host` (or dropped with a subtree).
    pub host_evicted_pages: u64,
    /// `write_backup` calls that found no host room even after `evict_host`.
    pub failed_backups: u64,
    /// Device pages freed with no host copy under write_back (V1 `_drop_subtree_no_host`).
    pub dropped_pages_without_backup: u64,
    /// Pages written device → host.
    pub backup_pages: u64,
    /// Pages loaded host → device.
    pub load_back_pages: u64,
    /// Host-hit pages not loaded back (under `load_back_threshold` or no device room).
    pub load_back_skipped_pages: u64,
    /// Peaks of host occupancy.
    pub peak_host_device_resident: u64,
    pub peak_host_only: u64,
    pub peak_host_used: u64,
}

/// Result of `match_prefix` (`hiradix_cache.py: HiRadixCache.match_prefix`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MatchResult {
    /// Pages on the device (`len(device_indices)`), a prefix of the request.
    pub device_pages: u64,
    /// Pages of the trailing evicted-but-backed-up nodes (`host_hit_length`).
    pub host_pages: u64,
    /// First non-evicted node walking up from the deepest match.
    pub last_device_node: NodeId,
    /// Deepest backed-up node on the path (root counts as backed up).
    pub last_host_node: NodeId,
    /// Deepest matched node.
    pub last_node: NodeId,
}

impl MatchResult {
    pub fn matched_pages(&self) -> u64 {
        self.device_pages + self.host_pages
    }
}

/// A write to host done by `write_backup`, for the runtime to time (D2H) and to
/// follow with an L3 write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupRecord {
    pub node: NodeId,
    pub pages: u64,
    /// True when the node was pinned on device until the D2H ack (write-through family).
    pub locked: bool,
}

/// The tree. All sizes in pages. `R` is the rule set ([`V1`] HiRadixCache, or
/// [`Unified0523`], 0.5.23's UnifiedRadixCache: [`UnifiedRadixTree`]).
#[derive(Debug, Clone)]
pub struct HiRadixTree<R: TreeRules = V1> {
    pub(crate) cfg: TreeConfig,
    pub(crate) nodes: Vec<Node>,
    pub(crate) free: Vec<NodeId>,
    /// `(parent, first page)` → child.
    pub(crate) child_map: FxHashMap<(NodeId, PageKey), NodeId>,
    pub(crate) dev_leaves: LeafHeap,
    pub(crate) host_leaves: LeafHeap,
    /// Backed-up device-resident leaves of the host tree; kept only for
    /// `reclaim_device_resident` / `boundary_l1_l2`.
    pub(crate) dup_leaves: LeafHeap,
    pub(crate) clock: u64,
    /// Device pages in use: tree pages on device plus pages reserved by requests.
    pub(crate) device_used: u64,
    /// Host pages holding backups in the tree.
    pub(crate) host_used: u64,
    /// Host pages reserved outside the tree (in-flight prefetch).
    pub(crate) host_reserved: u64,
    /// Backed-up pages that are also on device.
    pub(crate) host_device_resident: u64,
    /// Device pages of unlocked nodes (`radix_cache.py: evictable_size_`: a node's
    /// pages move to `protected_size_` while its `lock_ref` is positive).
    pub(crate) device_evictable: u64,
    pub stats: TreeStats,
    pub(crate) backups: Vec<BackupRecord>,
    pub(crate) scratch: Vec<NodeId>,
    /// 0.5.23 `full_host_duplicates` (a dict: insertion order, lazy stale entries):
    /// `(node, ticket)`, live while `nodes[node].dup_seq == ticket`.
    pub(crate) dup_order: Vec<(NodeId, u64)>,
    pub(crate) dup_live: usize,
    pub(crate) dup_ticket: u64,
    /// Anchors of load-backs not acked yet (`ongoing_load_back`), in issue order
    /// ([`TreeRules::LOAD_BACK_PENDING`]).
    pub(crate) pending_load_backs: Vec<NodeId>,
    /// Nodes whose host copy is pinned by an L3 write not acked yet
    /// (`unified_radix_cache.py: write_backup_storage` → `ongoing_backup`).
    pub(crate) storage_pins: Vec<NodeId>,
    /// write_back backups staged by the running eviction
    /// ([`TreeRules::WRITE_BACK_STAGES_BACKUPS`]).
    pub(crate) staged: Vec<NodeId>,
    /// buffer_only storage write intents since the last drain.
    pub(crate) storage_intents: Vec<NodeId>,
    /// Pages whose host copy was freed, for the runtime to write to L3 when cache-mode L3
    /// is written at host eviction ([`TreeConfig::l3_at_host_eviction`]).
    pub(crate) host_evictions: Vec<PageKey>,
    pub(crate) _rules: std::marker::PhantomData<R>,
}

/// 0.5.23's `UnifiedRadixCache` tree (`mem_cache/unified_radix_cache.py`,
/// `unified_cache/unified_tree_core.py`).
pub type UnifiedRadixTree = HiRadixTree<Unified0523>;

#[inline]
fn ckey(parent: NodeId, page: PageKey) -> (NodeId, PageKey) {
    (parent, page)
}

impl<R: TreeRules> HiRadixTree<R> {
    /// An empty tree (the root only).
    ///
    /// # Panics
    /// With `eviction_policy: tlru`: T-LRU needs per-node history lengths this tree does
    /// not keep (`ReplayConfig::validate` refuses it before a replay builds a tree).
    pub fn new(cfg: TreeConfig) -> Self {
        assert!(
            cfg.eviction_policy != EvictionPolicy::Tlru,
            "radix eviction policy tlru is not modelled by the tree"
        );
        let root = Node {
            parent: NIL,
            on_device: true,
            backed_up: true,
            alive: true,
            // The root is never evictable: a permanent pin.
            lock_ref: 1,
            ..Node::default()
        };
        Self {
            cfg,
            nodes: vec![root],
            free: Vec::new(),
            child_map: FxHashMap::default(),
            dev_leaves: LeafHeap::new(LeafSet::Device),
            host_leaves: LeafHeap::new(LeafSet::Host),
            dup_leaves: LeafHeap::new(LeafSet::Dup),
            clock: 0,
            device_used: 0,
            host_used: 0,
            host_reserved: 0,
            host_device_resident: 0,
            device_evictable: 0,
            stats: TreeStats::default(),
            backups: Vec::new(),
            scratch: Vec::new(),
            dup_order: Vec::new(),
            dup_live: 0,
            dup_ticket: 0,
            pending_load_backs: Vec::new(),
            storage_pins: Vec::new(),
            staged: Vec::new(),
            storage_intents: Vec::new(),
            host_evictions: Vec::new(),
            _rules: std::marker::PhantomData,
        }
    }

    pub fn config(&self) -> &TreeConfig {
        &self.cfg
    }
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }
    /// Device pages in use (tree + request reservations).
    pub fn device_used(&self) -> u64 {
        self.device_used
    }
    /// Host pages in use (tree backups + prefetch reservations).
    pub fn host_used(&self) -> u64 {
        self.host_used + self.host_reserved
    }
    /// Host pages holding copies of device-resident nodes.
    pub fn host_device_resident_pages(&self) -> u64 {
        self.host_device_resident
    }
    /// Host pages of host-only (evicted) nodes.
    pub fn host_only_pages(&self) -> u64 {
        self.host_used - self.host_device_resident
    }
    pub fn host_free(&self) -> u64 {
        self.cfg.l2_pages.saturating_sub(self.host_used())
    }
    pub fn device_free(&self) -> u64 {
        self.cfg.l1_pages.saturating_sub(self.device_used)
    }
    /// Device pages an eviction could free: the unlocked nodes' (SGLang's
    /// `evictable_size()`, which `PrefillAdder`'s `rem_total_tokens` adds to the free
    /// pool).
    pub fn device_evictable(&self) -> u64 {
        self.device_evictable
    }
    /// Live nodes, root included.
    pub fn node_count(&self) -> usize {
        self.nodes.len() - self.free.len()
    }
    /// Drains the backups made since the last call.
    pub fn take_backups(&mut self, out: &mut Vec<BackupRecord>) {
        out.append(&mut self.backups);
    }

    /// The pages `rec`'s backup copied, parent-first, into `out` (cleared first): the
    /// node's own pages plus, when an insert or match split the node between the backup
    /// and its ack (`_split_node` moves the head pages into a new parent, the record
    /// keeps the suffix), the head fragments up the split chain until `rec.pages` are
    /// recovered. Mirrors `mem_cache/hiradix_cache.py: write_backup_storage` /
    /// `_concat_split_chain` ("Recover pre-split data via walk-and-concat if node was
    /// split", 0.5.14–0.5.18) and 0.5.23 `unified_radix_cache.py:
    /// _finish_write_through_ack` ("Back up each fragment: after a split, lock_node only
    /// holds the suffix; the prefix fragment must be persisted as well"): the L3 write of
    /// a backup covers every page the backup moved. Returns false (nothing collected)
    /// when the node is gone.
    pub fn backup_span(&self, rec: &BackupRecord, out: &mut Vec<PageKey>) -> bool {
        out.clear();
        if !self.nodes[rec.node as usize].alive {
            return false;
        }
        let mut x = rec.node;
        let mut got = 0u64;
        while x != ROOT && got < rec.pages {
            let node = &self.nodes[x as usize];
            // Walked bottom-up: prepend each fragment.
            out.splice(0..0, node.pages.iter().copied());
            got += node.len();
            x = node.parent;
        }
        // `_concat_split_chain` asserts the chain adds up; a split never cuts above the
        // record's span, so it does.
        debug_assert_eq!(got, rec.pages, "backup chain length mismatch");
        true
    }

    /// Drains the pages whose host copies were freed since the last call
    /// ([`TreeConfig::l3_at_host_eviction`]) into `out` (appended).
    pub fn take_host_evictions(&mut self, out: &mut Vec<PageKey>) {
        out.append(&mut self.host_evictions);
    }

    /// Drains the buffer_only storage write intents since the last call
    /// ([`TreeConfig::buffer_storage_intents`]), appending to `out` the pages of each
    /// intent's path from the root (the node and its ancestors, root first).
    pub fn take_storage_intents(&mut self, out: &mut Vec<PageKey>) {
        let intents = std::mem::take(&mut self.storage_intents);
        for &id in &intents {
            if !self.nodes[id as usize].alive {
                continue;
            }
            let start = out.len();
            let mut x = id;
            while x != ROOT {
                out.extend(self.nodes[x as usize].pages.iter().rev());
                x = self.nodes[x as usize].parent;
            }
            out[start..].reverse();
        }
        self.storage_intents = intents;
        self.storage_intents.clear();
    }

    // ----- priority keys and leaf sets -------------------------------------------------

    /// `evict_policy.py: *Strategy.get_priority` (V1).
    fn prio(&self, n: &Node) -> PrioKey {
        let la = n.last_access as i64;
        match self.cfg.eviction_policy {
            EvictionPolicy::Lru => (la, 0),
            EvictionPolicy::Lfu => (i64::from(n.hit_count), la),
            EvictionPolicy::Fifo => (n.creation as i64, 0),
            EvictionPolicy::Mru => (-la, 0),
            EvictionPolicy::Filo => (-(n.creation as i64), 0),
            EvictionPolicy::Priority => (n.priority, la),
            EvictionPolicy::Slru => (i64::from(n.hit_count >= 2), la),
            EvictionPolicy::Tlru => unreachable!("refused by HiRadixTree::new"),
        }
    }

    /// Device leaf: `radix_cache._update_leaf_status` — not evicted, `lock_ref == 0`,
    /// no non-evicted child.
    pub(crate) fn is_dev_leaf(n: &Node) -> bool {
        n.alive && n.on_device && n.lock_ref == 0 && n.n_device_children == 0
    }
    /// Host leaf: `hiradix_cache._update_host_leaf_status` (after sglang PR 23537) — evicted,
    /// `lock_ref == 0`, no backed-up child; unpinned on host (checked at pop in SGLang).
    pub(crate) fn is_host_leaf(n: &Node) -> bool {
        n.alive
            && !n.on_device
            && n.backed_up
            && n.lock_ref == 0
            && n.host_ref == 0
            && n.n_backed_children == 0
    }
    /// Duplicate leaf (what-if rules only): on device and on host, unpinned, no
    /// backed-up child.
    pub(crate) fn is_dup_leaf(n: &Node) -> bool {
        n.alive
            && n.on_device
            && n.backed_up
            && n.lock_ref == 0
            && n.host_ref == 0
            && n.n_backed_children == 0
    }

    /// Recomputes `id`'s membership and key in every evictable set.
    pub(crate) fn refresh(&mut self, id: NodeId) {
        if id == ROOT {
            return;
        }
        let n = &self.nodes[id as usize];
        let key = self.prio(n);
        let want_dev = Self::is_dev_leaf(n).then_some(key);
        let want_host = Self::is_host_leaf(n).then_some(key);
        let want_dup = (self.cfg.evict_host_rule != EvictHostRule::EvictedOnly
            && Self::is_dup_leaf(n))
        .then_some(key);
        let (old_dev, old_host, old_dup) = (n.dev_key, n.host_key, n.dup_key);
        if old_dev == want_dev && old_host == want_host && old_dup == want_dup {
            return;
        }
        let n = &mut self.nodes[id as usize];
        n.dev_key = want_dev;
        n.host_key = want_host;
        n.dup_key = want_dup;
        if old_dev != want_dev {
            self.dev_leaves.update(&self.nodes, id, old_dev, want_dev);
        }
        if old_host != want_host {
            self.host_leaves
                .update(&self.nodes, id, old_host, want_host);
        }
        if old_dup != want_dup {
            self.dup_leaves.update(&self.nodes, id, old_dup, want_dup);
        }
    }

    pub(crate) fn touch(&mut self, id: NodeId) {
        self.clock += TICK;
        self.nodes[id as usize].last_access = self.clock;
        self.refresh(id);
    }

    // ----- node state changes (keep parent counters and occupancy in step) ------------

    pub(crate) fn set_on_device(&mut self, id: NodeId, on: bool) {
        let n = &mut self.nodes[id as usize];
        if n.on_device == on {
            return;
        }
        n.on_device = on;
        let len = n.len();
        let backed = n.backed_up;
        let parent = n.parent;
        if n.lock_ref == 0 {
            if on {
                self.device_evictable += len;
            } else {
                self.device_evictable -= len;
            }
        }
        if on {
            self.device_used += len;
            if backed {
                self.host_device_resident += len;
            }
            self.nodes[parent as usize].n_device_children += 1;
        } else {
            self.device_used -= len;
            if backed {
                self.host_device_resident -= len;
            }
            self.nodes[parent as usize].n_device_children -= 1;
        }
        self.refresh(id);
        self.refresh(parent);
    }

    pub(crate) fn set_backed_up(&mut self, id: NodeId, on: bool) {
        let n = &mut self.nodes[id as usize];
        if n.backed_up == on {
            return;
        }
        n.backed_up = on;
        let len = n.len();
        let dev = n.on_device;
        let parent = n.parent;
        if on {
            self.host_used += len;
            if dev {
                self.host_device_resident += len;
            }
            self.nodes[parent as usize].n_backed_children += 1;
            self.note_host_peak();
        } else {
            self.host_used -= len;
            if dev {
                self.host_device_resident -= len;
            }
            self.nodes[parent as usize].n_backed_children -= 1;
        }
        self.refresh(id);
        self.refresh(parent);
    }

    pub(crate) fn note_host_peak(&mut self) {
        let s = &mut self.stats;
        s.peak_host_device_resident = s.peak_host_device_resident.max(self.host_device_resident);
        s.peak_host_only = s
            .peak_host_only
            .max(self.host_used - self.host_device_resident);
        s.peak_host_used = s.peak_host_used.max(self.host_used + self.host_reserved);
    }

    fn alloc_node(&mut self, parent: NodeId, pages: &[PageKey]) -> NodeId {
        self.clock += TICK;
        let clock = self.clock;
        let id = if let Some(id) = self.free.pop() {
            id
        } else {
            self.nodes.push(Node::default());
            (self.nodes.len() - 1) as NodeId
        };
        let n = &mut self.nodes[id as usize];
        n.parent = parent;
        n.pages.clear();
        n.pages.extend_from_slice(pages);
        n.first = pages[0];
        n.children.clear();
        n.on_device = false;
        n.backed_up = false;
        n.lock_ref = 0;
        n.host_ref = 0;
        n.hit_count = 0;
        n.last_access = clock;
        n.creation = clock;
        n.priority = 0;
        n.n_device_children = 0;
        n.n_backed_children = 0;
        n.alive = true;
        n.dev_key = None;
        n.host_key = None;
        n.dup_key = None;
        n.dup_seq = 0;
        n.load_back_pending = NIL;
        self.child_map.insert(ckey(parent, pages[0]), id);
        self.link_child(parent, id);
        id
    }

    fn link_child(&mut self, parent: NodeId, id: NodeId) {
        let ch = &mut self.nodes[parent as usize].children;
        let pos = ch.len() as u32;
        ch.push(id);
        self.nodes[id as usize].pos_in_parent = pos;
    }

    fn unlink_child(&mut self, parent: NodeId, id: NodeId) {
        let pos = self.nodes[id as usize].pos_in_parent as usize;
        let ch = &mut self.nodes[parent as usize].children;
        assert_eq!(ch[pos], id);
        ch.swap_remove(pos);
        if let Some(&moved) = ch.get(pos) {
            self.nodes[moved as usize].pos_in_parent = pos as u32;
        }
    }

    /// Unlinks a node that holds neither a device nor a host value and has no children.
    pub(crate) fn delete_node(&mut self, id: NodeId) {
        assert!(id != ROOT);
        let n = &self.nodes[id as usize];
        assert!(!n.on_device && !n.backed_up && n.children.is_empty());
        assert!(n.host_ref == 0, "deleting host-pinned node {id}");
        let parent = n.parent;
        let first = n.first;
        self.child_map.remove(&ckey(parent, first));
        self.unlink_child(parent, id);
        // Flags are all off, so refresh takes it out of every set.
        self.refresh(id);
        // `_remove_leaf_from_parent`: deleted nodes leave `full_host_duplicates`.
        self.untrack_duplicate(id);
        let n = &mut self.nodes[id as usize];
        n.alive = false;
        n.pages.clear();
        self.free.push(id);
        self.refresh(parent);
    }

    /// `_split_node`: the first `at` pages become a new parent of `child`. The new
    /// node copies `lock_ref` (a count over the subtree, so it stays right) and
    /// `hit_count`, and both values split. `host_ref` is not copied: host pins are per
    /// node and are released on the node that was pinned (the lower part keeps its id).
    fn split_node(&mut self, child: NodeId, at: usize) -> NodeId {
        let c = &self.nodes[child as usize];
        let parent = c.parent;
        let (on_dev, backed, lock_ref, hit, prio, creation) = (
            c.on_device,
            c.backed_up,
            c.lock_ref,
            c.hit_count,
            c.priority,
            c.creation,
        );
        let pending = c.load_back_pending;
        let first = c.pages[0];
        // Move the head pages into a new node.
        let head: Vec<PageKey> = c.pages[..at].to_vec();
        self.child_map.remove(&ckey(parent, first));
        self.unlink_child(parent, child);
        let new = self.alloc_node(parent, &head);
        {
            let n = &mut self.nodes[new as usize];
            n.on_device = on_dev;
            n.backed_up = backed;
            n.lock_ref = lock_ref;
            n.hit_count = hit;
            n.priority = prio;
            n.children.push(child);
            n.n_device_children = u32::from(on_dev);
            n.n_backed_children = u32::from(backed);
            // 0.5.19+ `_split_node`: "Split fragments stay on the anchor's root path
            // for the ack's walk" (`load_back_pending_id` copied).
            n.load_back_pending = pending;
            if R::SPLIT_REFRESH_TAIL {
                // 0.5.23 `_split_node`: `new_node.creation_time = child.creation_time`.
                n.creation = creation;
            }
        }
        // The parent's counters are unchanged: `new` replaces `child` with equal flags.
        let c = &mut self.nodes[child as usize];
        c.pages.drain(..at);
        c.parent = new;
        c.pos_in_parent = 0;
        let cfirst = c.pages[0];
        c.first = cfirst;
        self.child_map.insert(ckey(new, cfirst), child);
        if R::SPLIT_REFRESH_TAIL {
            // 0.5.23 `_split_node`: `child.last_access_time = get_and_increase_time_counter()`
            // after the new parent was created: the unmatched tail keeps a fresh time.
            self.clock += TICK;
            self.nodes[child as usize].last_access = self.clock;
        }
        self.refresh(child);
        self.refresh(new);
        if R::RECLAIM_HOST_DUPLICATES {
            self.track_duplicate(new);
        }
        new
    }

    fn child(&self, parent: NodeId, page: PageKey) -> Option<NodeId> {
        self.child_map.get(&ckey(parent, page)).copied()
    }

    // ----- match_prefix ----------------------------------------------------------------

    /// `match_prefix` (`hiradix_cache.py: HiRadixCache.match_prefix`, V1): walks the pages, splitting a node
    /// on a partial match and refreshing `last_access_time` along the path.
    pub fn match_prefix(&mut self, pages: &[PageKey]) -> MatchResult {
        if R::MATCH_STAMPS_PATH {
            return self.match_prefix_stamped(pages);
        }
        let mut node = ROOT;
        let mut i = 0usize;
        self.touch_root();
        while i < pages.len() {
            let Some(c) = self.child(node, pages[i]) else {
                break;
            };
            let cl = self.nodes[c as usize].pages.len();
            let rest = &pages[i..];
            let k = common_prefix(&self.nodes[c as usize].pages, rest);
            let c = if R::TOUCH_BEFORE_SPLIT {
                // The child first, then the split's new head (created newer).
                self.touch(c);
                if k < cl { self.split_node(c, k) } else { c }
            } else {
                let c = if k < cl { self.split_node(c, k) } else { c };
                self.touch(c);
                c
            };
            node = c;
            i += k;
            if k < cl {
                break;
            }
        }
        self.result_for(node)
    }

    /// What the engine's KV events tell a router of `pages`, read without touching the
    /// tree (no split, no access time): the pages of the longest prefix held on the
    /// device (the `GPU` medium's blocks), then the pages right after them held on the
    /// host only (`CPU_TIER1`: evicted from the device, backed up), as Dynamo's router
    /// counts them (`dynamo-kv-router` 1.6.1, `indexer/lower_tier.rs`: the host tier is
    /// matched on from each worker's device frontier). A partly matched node counts its
    /// matched pages.
    pub fn peek_tiers(&self, pages: &[PageKey]) -> (u64, u64) {
        let (mut device, mut host) = (0u64, 0u64);
        let mut node = ROOT;
        let mut i = 0usize;
        while i < pages.len() {
            let Some(c) = self.child(node, pages[i]) else {
                break;
            };
            let n = &self.nodes[c as usize];
            let k = common_prefix(&n.pages, &pages[i..]);
            if n.on_device && host == 0 {
                device += k as u64;
            } else if n.backed_up {
                host += k as u64;
            } else {
                break;
            }
            if k < n.pages.len() {
                break;
            }
            node = c;
            i += k;
        }
        (device, host)
    }

    /// 0.5.23 `unified_tree_core.py: _match_prefix_helper` + `_match_post_processor`:
    /// walk without touching, stop at a dead node (evicted, not backed up), split a
    /// partially matched node (which refreshes the tail), then stamp the best match
    /// and every ancestor with one fresh time, `1e-5` older per level upwards.
    fn match_prefix_stamped(&mut self, pages: &[PageKey]) -> MatchResult {
        let mut node = ROOT;
        let mut i = 0usize;
        while i < pages.len() {
            let Some(c) = self.child(node, pages[i]) else {
                break;
            };
            let cn = &self.nodes[c as usize];
            if !cn.on_device && !cn.backed_up {
                break;
            }
            let cl = cn.pages.len();
            let k = common_prefix(&cn.pages, &pages[i..]);
            if k < cl {
                node = self.split_node(c, k);
                break;
            }
            node = c;
            i += k;
        }
        self.clock += TICK;
        let mut t = self.clock;
        let mut n = node;
        while n != ROOT {
            self.nodes[n as usize].last_access = t;
            self.refresh(n);
            t -= 1;
            n = self.nodes[n as usize].parent;
        }
        self.nodes[ROOT as usize].last_access = t;
        self.result_for(node)
    }

    fn touch_root(&mut self) {
        self.clock += TICK;
        self.nodes[ROOT as usize].last_access = self.clock;
    }

    /// Device/host split of the path ending at `last`.
    pub(crate) fn result_for(&self, last: NodeId) -> MatchResult {
        let mut host_pages = 0;
        let mut n = last;
        while !self.nodes[n as usize].on_device {
            host_pages += self.nodes[n as usize].len();
            n = self.nodes[n as usize].parent;
        }
        let last_device_node = n;
        let mut device_pages = 0;
        while n != ROOT {
            device_pages += self.nodes[n as usize].len();
            n = self.nodes[n as usize].parent;
        }
        let mut h = last;
        while !self.nodes[h as usize].backed_up {
            h = self.nodes[h as usize].parent;
        }
        MatchResult {
            device_pages,
            host_pages,
            last_device_node,
            last_host_node: h,
            last_node: last,
        }
    }

    // ----- locks -----------------------------------------------------------------------

    /// `inc_lock_ref`: pins `id` and its ancestors on the device.
    pub fn inc_lock_ref(&mut self, mut id: NodeId) {
        while id != ROOT {
            let n = &mut self.nodes[id as usize];
            n.lock_ref += 1;
            let p = n.parent;
            if n.lock_ref == 1 {
                if n.on_device {
                    self.device_evictable -= n.len();
                }
                self.refresh(id);
            }
            id = p;
        }
    }

    /// `dec_lock_ref`.
    pub fn dec_lock_ref(&mut self, mut id: NodeId) {
        while id != ROOT {
            let n = &mut self.nodes[id as usize];
            assert!(n.lock_ref > 0, "dec_lock_ref below zero");
            n.lock_ref -= 1;
            let p = n.parent;
            if n.lock_ref == 0 {
                if n.on_device {
                    self.device_evictable += n.len();
                }
                self.refresh(id);
            }
            id = p;
        }
    }

    /// `protect_host`: pins the node's host copy (prefetch anchor, L3 backup, load-back).
    pub fn protect_host(&mut self, id: NodeId) {
        if id == ROOT {
            return;
        }
        assert!(
            self.nodes[id as usize].alive,
            "protect_host on dead node {id}"
        );
        self.nodes[id as usize].host_ref += 1;
        self.refresh(id);
    }

    /// `release_host`.
    pub fn release_host(&mut self, id: NodeId) {
        if id == ROOT {
            return;
        }
        let n = &mut self.nodes[id as usize];
        assert!(n.host_ref > 0);
        n.host_ref -= 1;
        self.refresh(id);
    }

    // ----- device allocation -------------------------------------------------------------

    /// `alloc_token_slots` for `n` pages: when short, `evict_from_tree_cache` asks the
    /// tree to evict (the whole request in V1, the shortfall in newer code), then the
    /// allocation succeeds or fails. On success the pages are reserved until
    /// [`insert`](Self::insert) consumes them or [`free_device`](Self::free_device).
    pub fn alloc_device(&mut self, n: u64) -> bool {
        if n == 0 {
            return true;
        }
        self.make_device_room(n);
        if self.device_free() >= n {
            self.device_used += n;
            true
        } else {
            false
        }
    }

    /// `evict_from_tree_cache(n)`: when fewer than `n` device pages are free, asks the
    /// tree to evict — the whole `n` (V1 with `device_evict_amount: requested`) or the
    /// shortfall (0.5.23 `allocator/base.py: evict_to_free_tokens`, and V1 with
    /// `shortfall`). Returns the free pages afterwards.
    pub fn make_device_room(&mut self, n: u64) -> u64 {
        let avail = self.device_free();
        if avail < n {
            let amount = R::DEVICE_EVICT.unwrap_or(self.cfg.device_evict_amount);
            self.evict(amount.to_evict(n, avail));
        }
        self.device_free()
    }

    /// Reserves `n` free device pages without evicting (`n <= device_free()`).
    pub fn reserve_device(&mut self, n: u64) {
        assert!(n <= self.device_free());
        self.device_used += n;
    }

    /// Returns reserved device pages that were not inserted.
    pub fn free_device(&mut self, n: u64) {
        self.device_used -= n;
    }

    // ----- insert ------------------------------------------------------------------------

    /// `insert` / `_insert_helper` (`hiradix_cache.py: HiRadixCache._insert_helper`, V1) of a request's pages,
    /// whose device pages beyond the matched prefix were reserved with
    /// [`alloc_device`](Self::alloc_device) (`reserved` pages). Fully matched device
    /// nodes get `_inc_hit_count`; evicted nodes on the path get their device value back
    /// (recompute); the new leaf gets `_inc_hit_count` unless write_back. Reserved pages
    /// not needed (already cached) are freed. Returns the deepest node.
    pub fn insert(&mut self, pages: &[PageKey], reserved: u64) -> NodeId {
        self.device_used -= reserved;
        let mut node = ROOT;
        let mut i = 0usize;
        self.touch_root();
        while i < pages.len() {
            let Some(c) = self.child(node, pages[i]) else {
                break;
            };
            let cl = self.nodes[c as usize].pages.len();
            let k = common_prefix(&self.nodes[c as usize].pages, &pages[i..]);
            let c = if R::SPLIT_REFRESH_TAIL || R::TOUCH_BEFORE_SPLIT {
                // 0.5.23 `_insert_walk_step`: `_touch_node(child)` before the split;
                // `hiradix_cache.py: insert` the same (the new head is newer).
                self.touch(c);
                if k < cl { self.split_node(c, k) } else { c }
            } else {
                let c = if k < cl { self.split_node(c, k) } else { c };
                self.touch(c);
                c
            };
            if self.nodes[c as usize].on_device {
                self.inc_hit_count(c);
            } else {
                // Recompute: the evicted node gets the freshly computed device value.
                self.set_on_device(c, true);
                if R::RECLAIM_HOST_DUPLICATES {
                    // `_unevict_node_on_insert`: a backed-up node is a duplicate at once.
                    self.track_duplicate(c);
                }
                if R::HIT_ON_UNEVICT {
                    self.inc_hit_count(c);
                }
            }
            node = c;
            i += k;
        }
        if i < pages.len() {
            let new = self.alloc_node(node, &pages[i..]);
            self.set_on_device(new, true);
            if !R::MATCH_STAMPS_PATH {
                self.touch(new);
            }
            if self.cfg.write_policy != WritePolicy::WriteBack {
                self.inc_hit_count(new);
            }
            node = new;
        }
        if self.cfg.debug_checks {
            self.check();
        }
        node
    }

    /// `_inc_hit_count`: `hit_count += 1`; write-through family backs the node up once
    /// it reaches `write_through_threshold`. Skipped entirely under write_back.
    fn inc_hit_count(&mut self, id: NodeId) {
        if self.cfg.write_policy == WritePolicy::WriteBack {
            return;
        }
        let n = &mut self.nodes[id as usize];
        n.hit_count = n.hit_count.saturating_add(1);
        let hit = n.hit_count;
        let backed = n.backed_up;
        self.refresh(id);
        if !backed && hit >= self.cfg.write_policy.write_through_threshold() {
            self.write_backup(id, false);
        }
    }

    /// Sets a node's `priority` (the `priority` eviction policy).
    pub fn set_priority(&mut self, id: NodeId, priority: i64) {
        self.nodes[id as usize].priority = priority;
        self.refresh(id);
    }

    /// Prefetch termination: inserts `pages` (fetched from L3 into `reserved` host
    /// pages reserved by [`reserve_host`](Self::reserve_host)) below `anchor` as
    /// host-only nodes; pages the tree already holds give their host pages back.
    /// Returns the fetched pages kept on the host (0.5.23: `loaded_from_storage`).
    /// The rule set picks the release's function ([`TreeRules::INSERT_HOST_REFILL`]).
    pub fn insert_host_only(&mut self, anchor: NodeId, pages: &[PageKey], reserved: u64) -> u64 {
        if R::INSERT_HOST_REFILL {
            self.insert_host_refill(anchor, pages, reserved)
        } else {
            self.insert_host_v1(anchor, pages, reserved)
        }
    }

    /// 0.5.23 `unified_tree_core.py: insert_host`, called by `unified_radix_cache.py:
    /// _handle_prefetch_result`: `_touch_node` on the anchor and on every walked node
    /// (before a split, as insert does); under write-through a walked node without a
    /// host copy takes its slice of the fetched pages (refill), and only pages of nodes
    /// already backed up are given back (`host_prefix_len`); under write_back every
    /// walked page is given back (`matched_length`). The rest becomes a new host-only
    /// leaf, unless (write-through) the last walked node has no host copy: then the
    /// whole fetch is dropped (`host_insert_dropped`). Returns
    /// `completed - prefix_len` (0 when dropped).
    fn insert_host_refill(&mut self, anchor: NodeId, pages: &[PageKey], reserved: u64) -> u64 {
        self.host_reserved -= reserved;
        let write_back = self.cfg.write_policy == WritePolicy::WriteBack;
        self.touch(anchor);
        let mut node = anchor;
        let mut i = 0usize;
        let mut given_back = 0u64;
        while i < pages.len() {
            let Some(c) = self.child(node, pages[i]) else {
                break;
            };
            self.touch(c);
            let cl = self.nodes[c as usize].pages.len();
            let k = common_prefix(&self.nodes[c as usize].pages, &pages[i..]);
            let c = if k < cl { self.split_node(c, k) } else { c };
            if write_back {
                given_back += k as u64;
            } else if !self.nodes[c as usize].backed_up {
                self.set_backed_up(c, true);
                self.track_duplicate(c);
            } else {
                given_back += k as u64;
            }
            node = c;
            i += k;
        }
        let mut kept = pages.len() as u64 - given_back;
        if i < pages.len() {
            if node != ROOT && !self.nodes[node as usize].backed_up && !write_back {
                // `host_insert_dropped`: the whole fetch goes back to the pool.
                kept = 0;
            } else {
                let new = self.alloc_node(node, &pages[i..]);
                self.set_backed_up(new, true);
            }
        }
        if self.cfg.debug_checks {
            self.check();
        }
        kept
    }

    /// `_insert_helper_host` (`hiradix_cache.py`, prefetch termination, V1): pages the
    /// tree already holds are not duplicated (their reserved host pages are freed); a
    /// device-only node keeps the fetched copy as its backup only if its parent is
    /// backed up. Returns the number of new host pages.
    fn insert_host_v1(&mut self, anchor: NodeId, pages: &[PageKey], reserved: u64) -> u64 {
        self.host_reserved -= reserved;
        let mut node = anchor;
        let mut i = 0usize;
        while i < pages.len() {
            let Some(c) = self.child(node, pages[i]) else {
                break;
            };
            let cl = self.nodes[c as usize].pages.len();
            let k = common_prefix(&self.nodes[c as usize].pages, &pages[i..]);
            let c = if k < cl { self.split_node(c, k) } else { c };
            if !self.nodes[c as usize].backed_up {
                // Device-only node already there: keep the fetched copy as its backup
                // only if its parent chain is backed up (prefix-closed backups).
                let p = self.nodes[c as usize].parent;
                if p == ROOT || self.nodes[p as usize].backed_up {
                    self.set_backed_up(c, true);
                }
            }
            self.touch(c);
            node = c;
            i += k;
        }
        let mut added = 0;
        if i < pages.len() && self.nodes[node as usize].backed_up {
            let new = self.alloc_node(node, &pages[i..]);
            self.set_backed_up(new, true);
            self.touch(new);
            added = (pages.len() - i) as u64;
        }
        if self.cfg.debug_checks {
            self.check();
        }
        added
    }

    /// Reserves `n` host pages outside the tree (prefetch), calling `evict_host` once
    /// and retrying when short (`_drain_and_alloc_storage_hit`). Returns pages reserved:
    /// `n`, or the page-aligned fallback `min(n, free)` if that is at least
    /// `min_fallback`, else 0.
    pub fn reserve_host(&mut self, n: u64, min_fallback: u64) -> u64 {
        if !self.cfg.host_tier || n == 0 {
            return 0;
        }
        if self.host_free() < n {
            self.evict_host(n);
        }
        let got = if self.host_free() >= n {
            n
        } else {
            let f = self.host_free();
            if f >= min_fallback && f > 0 { f } else { 0 }
        };
        self.host_reserved += got;
        self.note_host_peak();
        got
    }

    /// Releases host pages reserved by [`reserve_host`](Self::reserve_host).
    pub fn unreserve_host(&mut self, n: u64) {
        self.host_reserved -= n;
    }
}

#[inline]
fn common_prefix(a: &[PageKey], b: &[PageKey]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl<R: TreeRules> HiRadixTree<R> {
    /// 0.5.23 `unified_tree_core.py: _update_duplicate_tracking`: a node on device and
    /// on host joins `full_host_duplicates` (keeping its old place if already there,
    /// `dict.setdefault`); any other node leaves it. Only kept under write_back, the
    /// one policy that reads it (`drive_host_eviction`).
    pub(crate) fn track_duplicate(&mut self, id: NodeId) {
        if !R::RECLAIM_HOST_DUPLICATES || self.cfg.write_policy != WritePolicy::WriteBack {
            return;
        }
        let n = &self.nodes[id as usize];
        // `_is_settled_full_host_duplicate`: on both tiers, no in-flight load-back.
        if id != ROOT && n.on_device && n.backed_up && n.load_back_pending == NIL {
            if n.dup_seq == 0 {
                if self.dup_order.len() > 64 && self.dup_order.len() > 4 * self.dup_live {
                    let nodes = &self.nodes;
                    self.dup_order
                        .retain(|&(x, t)| nodes[x as usize].dup_seq == t);
                }
                self.dup_ticket += 1;
                let t = self.dup_ticket;
                self.nodes[id as usize].dup_seq = t;
                self.dup_order.push((id, t));
                self.dup_live += 1;
            }
        } else {
            self.untrack_duplicate(id);
        }
    }

    /// `full_host_duplicates.pop(node.id)`.
    pub(crate) fn untrack_duplicate(&mut self, id: NodeId) {
        if !R::RECLAIM_HOST_DUPLICATES {
            return;
        }
        let n = &mut self.nodes[id as usize];
        if n.dup_seq != 0 {
            n.dup_seq = 0;
            self.dup_live -= 1;
        }
    }
}
