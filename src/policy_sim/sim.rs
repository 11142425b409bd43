//! `HiCachePolicySimulator` of SGLang's `benchmark/hicache/hicache_policy_simulator.py`
//! (upstream commit 110816e7, the version PR #29049 added), ported function by function.
//! Python method `_foo` is `foo` here; every heap push happens exactly where the tool
//! pushes, because which candidates are in a heap (not only which are valid) decides
//! the victims.

use super::hash_id::HashId;
use super::tree::{CandidateHeap, HeapEntry, NodeId, ROOT, Tree};
use super::{PolicyMetrics, PolicySimError, SimPolicy};

/// Which of the tool's three heaps (named after them, hence the common suffix).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeapKind {
    /// `_l1_leaf_heap`: D nodes without a D child.
    L1Leaf,
    /// `_h_only_leaf_heap`: H-only nodes without an H child.
    HOnlyLeaf,
    /// `_duplicate_h_leaf_heap`: D+H nodes without an H child.
    DuplicateHLeaf,
}

/// One simulator: one policy, one pair of capacities (`HiCachePolicySimulator`).
#[derive(Debug)]
pub struct Simulator {
    pub(crate) policy: SimPolicy,
    pub(crate) l1_pages: u64,
    pub(crate) l2_pages: u64,
    pub(crate) write_through_threshold: u64,
    pub(crate) tree: Tree,
    pub(crate) d_pages: u64,
    pub(crate) h_pages: u64,
    pub(crate) clock: u64,
    pub(crate) metrics: PolicyMetrics,
    heap_counter: u64,
    l1_leaf_heap: CandidateHeap,
    h_only_leaf_heap: CandidateHeap,
    duplicate_h_leaf_heap: CandidateHeap,
    /// The current `protected_nodes` set, as marks: node is protected iff
    /// `protect_mark[node] == protect_epoch` (only one set is live at a time).
    protect_mark: Vec<u64>,
    protect_epoch: u64,
    /// Reused buffers (no allocation per request).
    path_buf: Vec<NodeId>,
    sym_buf: Vec<u32>,
    skipped: Vec<HeapEntry>,
    stack: Vec<NodeId>,
}

impl Simulator {
    /// `HiCachePolicySimulator.__init__`. Capacities are unsigned here, so the tool's
    /// "must be non-negative" check is the type; the threshold must be positive.
    pub fn new(
        policy: SimPolicy,
        l1_pages: u64,
        l2_pages: u64,
        write_through_threshold: u64,
    ) -> Result<Self, PolicySimError> {
        if write_through_threshold == 0 {
            return Err(PolicySimError::Config(
                "write_through_threshold must be positive".into(),
            ));
        }
        Ok(Simulator {
            policy,
            l1_pages,
            l2_pages,
            write_through_threshold,
            tree: Tree::new(),
            d_pages: 0,
            h_pages: 0,
            clock: 0,
            metrics: PolicyMetrics::new(policy),
            heap_counter: 0,
            l1_leaf_heap: CandidateHeap::default(),
            h_only_leaf_heap: CandidateHeap::default(),
            duplicate_h_leaf_heap: CandidateHeap::default(),
            protect_mark: vec![0],
            protect_epoch: 0,
            path_buf: Vec::new(),
            sym_buf: Vec::new(),
            skipped: Vec::new(),
            stack: Vec::new(),
        })
    }

    pub fn metrics(&self) -> &PolicyMetrics {
        &self.metrics
    }

    /// Pages now on L1 (`d_pages`) and on L2 (`h_pages`).
    pub fn residency(&self) -> (u64, u64) {
        (self.d_pages, self.h_pages)
    }

    /// `(has_d, has_h)` of the node at this path of block ids, if it exists
    /// (`sim.root.children[a].children[b]` in the tool's tests).
    pub fn node_state(&self, path: &[HashId]) -> Option<(bool, bool)> {
        self.lookup(path)
            .map(|n| (self.tree.n(n).has_d, self.tree.n(n).has_h))
    }

    pub(crate) fn lookup(&self, path: &[HashId]) -> Option<NodeId> {
        let mut node = ROOT;
        for b in path {
            node = self.tree.child(node, self.tree.sym(b)?)?;
        }
        Some(node)
    }

    fn is_boundary_policy(&self) -> bool {
        self.policy == SimPolicy::BoundaryL1L2
    }

    /// `process_request`: one request's blocks. The clock advances once; every node on
    /// the path gets that clock. `validate` runs the full `sanity_check` afterwards.
    pub fn process_request(
        &mut self,
        blocks: &[HashId],
        validate: bool,
    ) -> Result<(), PolicySimError> {
        let mut syms = std::mem::take(&mut self.sym_buf);
        syms.clear();
        syms.extend(blocks.iter().map(|b| self.tree.intern(b)));
        let r = self.process_syms(&syms, validate);
        self.sym_buf = syms;
        r
    }

    pub(crate) fn process_syms(
        &mut self,
        syms: &[u32],
        validate: bool,
    ) -> Result<(), PolicySimError> {
        self.clock += 1;
        let (l1_hits, l2_hits) = self.match_request(syms);
        let n = syms.len() as u64;
        self.metrics.requests += 1;
        self.metrics.total_input_pages += n;
        self.metrics.l1_hit_pages += l1_hits;
        self.metrics.l2_hit_pages += l2_hits;
        self.metrics.miss_pages += n - l1_hits - l2_hits;

        let mut path = std::mem::take(&mut self.path_buf);
        self.get_or_create_path(syms, &mut path);
        for &node in &path {
            self.tree.n_mut(node).last_access = self.clock;
            self.ensure_d(node);
            self.queue_candidate_and_parent(node);
        }
        let r = match self.policy {
            SimPolicy::MainWriteThrough => {
                self.write_through_touch(&path);
                Ok(())
            }
            SimPolicy::BoundaryL1L2 => self.boundary_write_through_touch(&path).map(|_| ()),
        };
        self.path_buf = path;
        r?;
        self.evict_l1_until_capacity()?;
        if validate {
            self.sanity_check()?;
        }
        Ok(())
    }

    /// `sanity_check`: recount D/H pages, check capacities and the policy invariant.
    pub fn sanity_check(&self) -> Result<(), PolicySimError> {
        let mut d_count = 0;
        let mut h_count = 0;
        let mut stack: Vec<NodeId> = self.tree.n(ROOT).children.clone();
        while let Some(node) = stack.pop() {
            let n = self.tree.n(node);
            d_count += u64::from(n.has_d);
            h_count += u64::from(n.has_h);
            match self.policy {
                SimPolicy::BoundaryL1L2 => self.check_boundary_node(node)?,
                SimPolicy::MainWriteThrough => self.check_write_through_node(node)?,
            }
            stack.extend_from_slice(&n.children);
        }
        let inv = |m: String| Err(PolicySimError::Invariant(m));
        if d_count != self.d_pages {
            return inv(format!(
                "d_pages mismatch: self.d_pages={} d_count={d_count}",
                self.d_pages
            ));
        }
        if h_count != self.h_pages {
            return inv(format!(
                "h_pages mismatch: self.h_pages={} h_count={h_count}",
                self.h_pages
            ));
        }
        if self.d_pages > self.l1_pages {
            return inv(format!(
                "L1 over capacity: {}>{}",
                self.d_pages, self.l1_pages
            ));
        }
        if self.h_pages > self.l2_pages {
            return inv(format!(
                "L2 over capacity: {}>{}",
                self.h_pages, self.l2_pages
            ));
        }
        Ok(())
    }

    fn check_write_through_node(&self, node: NodeId) -> Result<(), PolicySimError> {
        let n = self.tree.n(node);
        if node == ROOT || !n.has_h {
            return Ok(());
        }
        if n.parent != ROOT && !self.tree.n(n.parent).has_h {
            return Err(PolicySimError::Invariant(format!(
                "write-through H residency is not prefix-closed: {} -> {}",
                self.tree.path_repr(n.parent),
                self.tree.path_repr(node)
            )));
        }
        Ok(())
    }

    // the condition is written as the tool writes it
    #[allow(clippy::nonminimal_bool)]
    fn check_boundary_node(&self, node: NodeId) -> Result<(), PolicySimError> {
        let n = self.tree.n(node);
        if node == ROOT || !(n.has_h && !n.has_d) {
            return Ok(());
        }
        if n.parent == ROOT {
            return Ok(());
        }
        if !self.tree.n(n.parent).has_h {
            return Err(PolicySimError::Invariant(format!(
                "boundary invariant violation: D-only parent has H-only child {} -> {}",
                self.tree.path_repr(n.parent),
                self.tree.path_repr(node)
            )));
        }
        Ok(())
    }

    /// `_match_request`: walk from the root; a page counts as an L1 hit if on D, an L2
    /// hit if only on H; stop at the first page missing or on neither.
    fn match_request(&mut self, syms: &[u32]) -> (u64, u64) {
        let mut node = ROOT;
        let (mut l1, mut l2) = (0, 0);
        for &s in syms {
            let Some(child) = self.tree.child(node, s) else {
                break;
            };
            let c = self.tree.n_mut(child);
            if c.has_d {
                l1 += 1;
            } else if c.has_h {
                l2 += 1;
            } else {
                break;
            }
            c.last_access = self.clock;
            self.queue_candidate_and_parent(child);
            node = child;
        }
        (l1, l2)
    }

    /// `_get_or_create_path`.
    pub(crate) fn get_or_create_path(&mut self, syms: &[u32], path: &mut Vec<NodeId>) {
        path.clear();
        let mut node = ROOT;
        for &s in syms {
            let child = match self.tree.child(node, s) {
                Some(c) => c,
                None => {
                    let c = self.tree.add_child(node, s);
                    self.protect_mark.push(0);
                    c
                }
            };
            path.push(child);
            node = child;
        }
    }

    /// `_write_through_touch`: count a hit on every node of the path; back up a node to
    /// H once it reached the threshold and its parent (unless the root) is on H.
    fn write_through_touch(&mut self, path: &[NodeId]) {
        for &node in path {
            let n = self.tree.n_mut(node);
            n.hit_count += 1;
            if n.has_h || n.hit_count < self.write_through_threshold {
                continue;
            }
            let parent = n.parent;
            if parent != ROOT && !self.tree.n(parent).has_h {
                continue;
            }
            self.try_ensure_h(node);
        }
    }

    /// `_boundary_write_through_touch`: reserve H for the whole path, protecting it.
    fn boundary_write_through_touch(&mut self, path: &[NodeId]) -> Result<bool, PolicySimError> {
        self.begin_protect();
        for &n in path {
            self.protect(n);
        }
        Ok(self.try_reserve_h_slots(path))
    }

    /// `_ensure_d`.
    pub(crate) fn ensure_d(&mut self, node: NodeId) {
        let n = self.tree.n_mut(node);
        if !n.has_d {
            n.has_d = true;
            self.d_pages += 1;
            self.queue_candidate_and_parent(node);
        }
    }

    /// `_try_ensure_h(node)` = `_try_reserve_h_slots([node])` protecting only `node`.
    pub(crate) fn try_ensure_h(&mut self, node: NodeId) -> bool {
        self.begin_protect();
        self.try_reserve_h_slots(&[node])
    }

    fn begin_protect(&mut self) {
        self.protect_epoch += 1;
    }

    fn protect(&mut self, node: NodeId) {
        self.protect_mark[node as usize] = self.protect_epoch;
    }

    fn is_protected(&self, node: NodeId) -> bool {
        self.protect_mark[node as usize] == self.protect_epoch
    }

    /// `_try_reserve_h_slots(nodes, protected_nodes)`: the caller has opened the
    /// protected set (`begin_protect` + `protect`); `nodes` join it. All-or-nothing:
    /// evict L2 until the missing nodes fit, or count one failed allocation.
    fn try_reserve_h_slots(&mut self, nodes: &[NodeId]) -> bool {
        let mut missing = 0u64;
        for &n in nodes {
            self.protect(n);
            if !self.tree.n(n).has_h {
                missing += 1;
            }
        }
        if missing == 0 {
            return true;
        }
        if missing > self.l2_pages {
            self.metrics.failed_h_allocations += 1;
            return false;
        }
        while self.h_pages + missing > self.l2_pages {
            if !self.evict_l2_one(true) {
                self.metrics.failed_h_allocations += 1;
                return false;
            }
        }
        for &n in nodes {
            if !self.tree.n(n).has_h {
                self.tree.n_mut(n).has_h = true;
                self.h_pages += 1;
                self.queue_candidate_and_parent(n);
            }
        }
        true
    }

    /// `_evict_l1_until_capacity`.
    fn evict_l1_until_capacity(&mut self) -> Result<(), PolicySimError> {
        while self.d_pages > self.l1_pages {
            let Some(victim) = self.select_l1_victim() else {
                return Err(PolicySimError::Invariant(
                    "L1 over capacity but no D leaf victim exists".into(),
                ));
            };
            if self.is_boundary_policy() {
                self.boundary_evict_l1_node(victim)?;
            } else {
                self.write_through_evict_l1_node(victim)?;
            }
        }
        Ok(())
    }

    /// `_write_through_evict_l1_node`: drop the D copy if backed up, else delete.
    fn write_through_evict_l1_node(&mut self, node: NodeId) -> Result<(), PolicySimError> {
        if self.tree.n(node).has_h {
            self.clear_d(node);
        } else {
            self.delete_d_only_leaf(node)?;
        }
        self.metrics.l1_evictions += 1;
        Ok(())
    }

    /// `_boundary_evict_l1_node`.
    fn boundary_evict_l1_node(&mut self, node: NodeId) -> Result<(), PolicySimError> {
        if self.tree.n(node).has_h {
            if self.try_ensure_boundary_parent_before_h_only(node) {
                self.clear_d(node);
            } else if !self.has_h_descendant(node) {
                self.clear_h(node);
                self.metrics.l2_evictions += 1;
                self.metrics.h_to_deleted_evictions += 1;
                self.delete_d_only_leaf(node)?;
            } else {
                return Err(PolicySimError::Invariant(
                    "Cannot evict D+H node without breaking boundary".into(),
                ));
            }
            self.metrics.l1_evictions += 1;
            return Ok(());
        }
        if self.try_ensure_h_for_demote(node) {
            self.clear_d(node);
            self.metrics.d_to_h_demotions += 1;
        } else {
            self.delete_d_only_leaf(node)?;
        }
        self.metrics.l1_evictions += 1;
        Ok(())
    }

    /// `_try_ensure_h_for_demote`: the node, and first its parent if that is D-only.
    fn try_ensure_h_for_demote(&mut self, node: NodeId) -> bool {
        let parent = self.tree.n(node).parent;
        self.begin_protect();
        let p = self.tree.n(parent);
        if parent != ROOT && p.has_d && !p.has_h {
            self.try_reserve_h_slots(&[parent, node])
        } else {
            self.try_reserve_h_slots(&[node])
        }
    }

    /// `_try_ensure_boundary_parent_before_h_only`.
    fn try_ensure_boundary_parent_before_h_only(&mut self, node: NodeId) -> bool {
        let parent = self.tree.n(node).parent;
        if node == ROOT || parent == ROOT {
            return true;
        }
        let p = self.tree.n(parent);
        if p.has_d && !p.has_h {
            self.begin_protect();
            self.protect(node);
            return self.try_reserve_h_slots(&[parent]);
        }
        true
    }

    fn clear_d(&mut self, node: NodeId) {
        let n = self.tree.n_mut(node);
        if n.has_d {
            n.has_d = false;
            self.d_pages -= 1;
            self.queue_candidate_and_parent(node);
        }
    }

    fn clear_h(&mut self, node: NodeId) {
        let n = self.tree.n_mut(node);
        if n.has_h {
            n.has_h = false;
            self.h_pages -= 1;
            self.queue_candidate_and_parent(node);
        }
    }

    /// `_delete_d_only_leaf`.
    fn delete_d_only_leaf(&mut self, node: NodeId) -> Result<(), PolicySimError> {
        if self.tree.n(node).has_h || self.has_d_child(node) || self.has_h_descendant(node) {
            return Err(PolicySimError::Invariant(
                "Refusing to delete a non-D-only leaf".into(),
            ));
        }
        self.clear_d(node);
        self.detach_if_empty(node);
        Ok(())
    }

    /// `_evict_l2_one(protected_nodes)`; `protected` says whether the current protected
    /// set applies (the tool passes `None` from its tests).
    pub(crate) fn evict_l2_one(&mut self, protected: bool) -> bool {
        if self.is_boundary_policy()
            && let Some(dup) = self.pop_valid_candidate(HeapKind::DuplicateHLeaf, protected)
        {
            self.clear_h(dup);
            self.metrics.l2_evictions += 1;
            self.metrics.dh_to_d_l2_dedup_evictions += 1;
            return true;
        }
        match self.pop_valid_candidate(HeapKind::HOnlyLeaf, protected) {
            Some(leaf) => {
                self.delete_h_only_leaf(leaf);
                true
            }
            None => false,
        }
    }

    /// `_delete_h_only_leaf` (the tool's guard never fires for a popped valid victim).
    fn delete_h_only_leaf(&mut self, node: NodeId) {
        assert!(!self.tree.n(node).has_d && self.tree.n(node).has_h);
        self.clear_h(node);
        self.metrics.l2_evictions += 1;
        self.metrics.h_to_deleted_evictions += 1;
        self.detach_if_empty(node);
    }

    /// `_detach_if_empty`: remove empty nodes bottom-up, re-queueing each parent.
    fn detach_if_empty(&mut self, mut node: NodeId) {
        loop {
            let n = self.tree.n(node);
            if node == ROOT || n.has_d || n.has_h || !n.children.is_empty() {
                return;
            }
            let parent = n.parent;
            self.tree.detach(node);
            self.queue_candidate(parent);
            node = parent;
        }
    }

    fn select_l1_victim(&mut self) -> Option<NodeId> {
        self.pop_valid_candidate(HeapKind::L1Leaf, false)
    }

    /// `_queue_candidate`: push `(last_access, path_key, counter, node)` onto each heap
    /// whose victim test the node passes now.
    fn queue_candidate(&mut self, node: NodeId) {
        if node == ROOT {
            return;
        }
        let entry = HeapEntry {
            last_access: self.tree.n(node).last_access,
            counter: self.heap_counter,
            node,
        };
        self.heap_counter += 1;
        if self.is_l1_leaf_victim(node) {
            self.l1_leaf_heap.push(&self.tree, entry);
        }
        if self.is_h_only_leaf_victim(node) {
            self.h_only_leaf_heap.push(&self.tree, entry);
        }
        if self.is_duplicate_h_leaf_victim(node) {
            self.duplicate_h_leaf_heap.push(&self.tree, entry);
        }
    }

    fn queue_candidate_and_parent(&mut self, node: NodeId) {
        self.queue_candidate(node);
        let parent = self.tree.n(node).parent;
        if node != ROOT {
            self.queue_candidate(parent);
        }
    }

    /// `_pop_valid_candidate`: pop until an entry is current (same `last_access`) and
    /// its node still passes the heap's test; protected victims are set aside and
    /// pushed back afterwards.
    pub(crate) fn pop_valid_candidate(
        &mut self,
        kind: HeapKind,
        use_protected: bool,
    ) -> Option<NodeId> {
        let mut skipped = std::mem::take(&mut self.skipped);
        skipped.clear();
        let mut found = None;
        loop {
            let tree = &self.tree;
            let heap = match kind {
                HeapKind::L1Leaf => &mut self.l1_leaf_heap,
                HeapKind::HOnlyLeaf => &mut self.h_only_leaf_heap,
                HeapKind::DuplicateHLeaf => &mut self.duplicate_h_leaf_heap,
            };
            let Some(entry) = heap.pop(tree) else { break };
            let node = entry.node;
            if tree.n(node).last_access == entry.last_access && self.is_valid(kind, node) {
                if use_protected && self.is_protected(node) {
                    skipped.push(entry);
                    continue;
                }
                found = Some(node);
                break;
            }
        }
        for e in skipped.drain(..) {
            let tree = &self.tree;
            match kind {
                HeapKind::L1Leaf => self.l1_leaf_heap.push(tree, e),
                HeapKind::HOnlyLeaf => self.h_only_leaf_heap.push(tree, e),
                HeapKind::DuplicateHLeaf => self.duplicate_h_leaf_heap.push(tree, e),
            }
        }
        self.skipped = skipped;
        found
    }

    fn is_valid(&self, kind: HeapKind, node: NodeId) -> bool {
        match kind {
            HeapKind::L1Leaf => self.is_l1_leaf_victim(node),
            HeapKind::HOnlyLeaf => self.is_h_only_leaf_victim(node),
            HeapKind::DuplicateHLeaf => self.is_duplicate_h_leaf_victim(node),
        }
    }

    fn is_l1_leaf_victim(&self, node: NodeId) -> bool {
        self.tree.n(node).has_d && !self.has_d_child(node)
    }

    fn is_h_only_leaf_victim(&self, node: NodeId) -> bool {
        let n = self.tree.n(node);
        n.has_h && !n.has_d && !self.has_h_child(node)
    }

    fn is_duplicate_h_leaf_victim(&self, node: NodeId) -> bool {
        let n = self.tree.n(node);
        n.has_d && n.has_h && !self.has_h_child(node)
    }

    fn has_d_child(&self, node: NodeId) -> bool {
        self.tree
            .n(node)
            .children
            .iter()
            .any(|&c| self.tree.n(c).has_d)
    }

    fn has_h_child(&self, node: NodeId) -> bool {
        self.tree
            .n(node)
            .children
            .iter()
            .any(|&c| self.tree.n(c).has_h)
    }

    /// `_has_h_descendant`: depth-first over the whole subtree.
    fn has_h_descendant(&mut self, node: NodeId) -> bool {
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.extend_from_slice(&self.tree.n(node).children);
        let mut found = false;
        while let Some(c) = stack.pop() {
            let n = self.tree.n(c);
            if n.has_h {
                found = true;
                break;
            }
            stack.extend_from_slice(&n.children);
        }
        self.stack = stack;
        found
    }

    /// `_refresh_final_residency_metrics`.
    pub fn refresh_final_residency_metrics(&mut self) {
        let (mut d, mut h, mut dh) = (0u64, 0u64, 0u64);
        let mut stack: Vec<NodeId> = self.tree.n(ROOT).children.clone();
        while let Some(node) = stack.pop() {
            let n = self.tree.n(node);
            d += u64::from(n.has_d);
            h += u64::from(n.has_h);
            dh += u64::from(n.has_d && n.has_h);
            stack.extend_from_slice(&n.children);
        }
        let m = &mut self.metrics;
        m.d_pages = d;
        m.h_pages = h;
        m.dh_pages = dh;
        m.unique_cached_pages = d + h - dh;
        m.duplicate_ratio = if h == 0 { 0.0 } else { dh as f64 / h as f64 };
        m.refresh_rates();
    }

    #[cfg(test)]
    pub(crate) fn heap_len(&mut self, kind: HeapKind) -> usize {
        match kind {
            HeapKind::L1Leaf => self.l1_leaf_heap.len(),
            HeapKind::HOnlyLeaf => self.h_only_leaf_heap.len(),
            HeapKind::DuplicateHLeaf => self.duplicate_h_leaf_heap.len(),
        }
    }

    /// Open a protected set holding just `node` (the tool's tests pass `{node}`).
    #[cfg(test)]
    pub(crate) fn begin_protect_for_test(&mut self, node: NodeId) {
        self.begin_protect();
        self.protect(node);
    }

    #[cfg(test)]
    pub(crate) fn requeue_for_test(&mut self, node: NodeId) {
        self.queue_candidate(node);
    }
}
