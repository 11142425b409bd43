//! The page tree of SGLang's policy simulator (`SimNode` in
//! `benchmark/hicache/hicache_policy_simulator.py`, upstream commit 110816e7): an arena of
//! nodes, one per trace block on a path, with D (L1) / H (L2) residency flags, plus the
//! candidate heaps ordered exactly like the tool's `heapq` entries
//! `(last_access, path_key, counter, node)`.

use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use super::hash_id::HashId;

pub(crate) type NodeId = u32;
pub(crate) const ROOT: NodeId = 0;
const NO_SYM: u32 = u32::MAX;

/// `SimNode`. Nodes are never reused once detached, so a stale heap entry can never
/// name a different node (the tool keeps the detached Python object alive in its heap).
#[derive(Debug, Clone)]
pub(crate) struct SimNode {
    /// Interned block id (`block_id`); `NO_SYM` for the root.
    pub sym: u32,
    pub parent: NodeId,
    pub depth: u32,
    /// Skew-binary jump pointer (Myers 1983): an ancestor whose depth depends only on
    /// this node's depth, so that an ancestor at any depth, and the point where two
    /// paths part, are found in O(log depth) steps instead of one step per level.
    pub jump: NodeId,
    /// Children in no particular order; only ever scanned for "any child has D/H".
    pub children: Vec<NodeId>,
    pub has_d: bool,
    pub has_h: bool,
    pub hit_count: u64,
    pub last_access: u64,
}

/// Arena plus the `(parent, block) -> child` index that stands for `children: dict`.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub nodes: Vec<SimNode>,
    child_index: FxHashMap<(NodeId, u32), NodeId>,
    sym_of: FxHashMap<HashId, u32>,
    /// `repr(block)` of each interned id: the elements of the tool's `path_key`.
    pub reprs: Vec<String>,
    pub syms: Vec<HashId>,
}

impl Tree {
    pub fn new() -> Self {
        let mut t = Tree::default();
        t.nodes.push(SimNode {
            sym: NO_SYM,
            parent: ROOT,
            depth: 0,
            jump: ROOT,
            children: Vec::new(),
            has_d: false,
            has_h: false,
            hit_count: 0,
            last_access: 0,
        });
        t
    }

    pub fn intern(&mut self, id: &HashId) -> u32 {
        if let Some(&s) = self.sym_of.get(id) {
            return s;
        }
        let s = self.syms.len() as u32;
        self.syms.push(id.clone());
        self.reprs.push(id.repr());
        self.sym_of.insert(id.clone(), s);
        s
    }

    /// The interned id of `id`, if it was ever seen (lookups only).
    pub fn sym(&self, id: &HashId) -> Option<u32> {
        self.sym_of.get(id).copied()
    }

    pub fn child(&self, parent: NodeId, sym: u32) -> Option<NodeId> {
        self.child_index.get(&(parent, sym)).copied()
    }

    pub fn add_child(&mut self, parent: NodeId, sym: u32) -> NodeId {
        let id = self.nodes.len() as NodeId;
        let depth = self.nodes[parent as usize].depth + 1;
        let jump = {
            let p = self.n(parent);
            let j = self.n(p.jump);
            if p.depth - j.depth == j.depth - self.n(j.jump).depth {
                j.jump
            } else {
                parent
            }
        };
        self.nodes.push(SimNode {
            sym,
            parent,
            depth,
            jump,
            children: Vec::new(),
            has_d: false,
            has_h: false,
            hit_count: 0,
            last_access: 0,
        });
        self.nodes[parent as usize].children.push(id);
        self.child_index.insert((parent, sym), id);
        id
    }

    /// `parent.children.pop(node.block_id)`.
    pub fn detach(&mut self, node: NodeId) {
        let (parent, sym) = {
            let n = &self.nodes[node as usize];
            (n.parent, n.sym)
        };
        self.child_index.remove(&(parent, sym));
        let ch = &mut self.nodes[parent as usize].children;
        if let Some(pos) = ch.iter().position(|&c| c == node) {
            ch.swap_remove(pos);
        }
    }

    #[inline]
    pub fn n(&self, id: NodeId) -> &SimNode {
        &self.nodes[id as usize]
    }

    #[inline]
    pub fn n_mut(&mut self, id: NodeId) -> &mut SimNode {
        &mut self.nodes[id as usize]
    }

    /// The ancestor of `node` at `depth` (at most the node's own depth): jump while the
    /// jump does not overshoot, else one step up.
    fn ancestor_at(&self, mut node: NodeId, depth: u32) -> NodeId {
        while self.n(node).depth > depth {
            let n = self.n(node);
            node = if self.n(n.jump).depth >= depth {
                n.jump
            } else {
                n.parent
            };
        }
        node
    }

    /// Python's comparison of two `path_key` tuples of `repr` strings: a proper prefix
    /// sorts first; otherwise the first differing element decides (string order).
    ///
    /// Same answer as walking both paths up level by level (`path_cmp_walk`, kept for
    /// the tests), in O(log depth): with the walk, every heap comparison between two
    /// nodes of one long request cost its depth, which made the port quadratic in the
    /// request length.
    pub fn path_cmp(&self, a: NodeId, b: NodeId) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        let (da, db) = (self.n(a).depth, self.n(b).depth);
        let d = da.min(db);
        let mut x = self.ancestor_at(a, d);
        let mut y = self.ancestor_at(b, d);
        if x == y {
            // one is an ancestor of the other: the shorter tuple is its prefix
            return da.cmp(&db);
        }
        // x and y are at one depth, so are their jumps: climb to the two children of
        // the deepest common ancestor
        while self.n(x).parent != self.n(y).parent {
            let (jx, jy) = (self.n(x).jump, self.n(y).jump);
            if jx != jy {
                x = jx;
                y = jy;
            } else {
                x = self.n(x).parent;
                y = self.n(y).parent;
            }
        }
        let (sx, sy) = (self.n(x).sym, self.n(y).sym);
        if sx == sy {
            // a detached node and its re-created twin share a path: equal keys
            return Ordering::Equal;
        }
        self.reprs[sx as usize].cmp(&self.reprs[sy as usize])
    }

    /// The level-by-level walk `path_cmp` replaces (the reference for its tests).
    #[cfg(test)]
    pub fn path_cmp_walk(&self, a: NodeId, b: NodeId) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        let (mut x, mut y) = (a, b);
        while self.n(x).depth > self.n(y).depth {
            x = self.n(x).parent;
        }
        while self.n(y).depth > self.n(x).depth {
            y = self.n(y).parent;
        }
        if x == y {
            return self.n(a).depth.cmp(&self.n(b).depth);
        }
        while self.n(x).parent != self.n(y).parent {
            x = self.n(x).parent;
            y = self.n(y).parent;
        }
        let (sx, sy) = (self.n(x).sym, self.n(y).sym);
        if sx == sy {
            return Ordering::Equal;
        }
        self.reprs[sx as usize].cmp(&self.reprs[sy as usize])
    }

    /// `repr(self._path_tuple(node))`: the path as Python prints the tuple.
    pub fn path_repr(&self, node: NodeId) -> String {
        let ids = self.path_tuple(node);
        let parts: Vec<String> = ids.iter().map(HashId::repr).collect();
        if parts.len() == 1 {
            format!("({},)", parts[0])
        } else {
            format!("({})", parts.join(", "))
        }
    }

    /// The block ids from the root to `node` (`_path_tuple`).
    pub fn path_tuple(&self, mut node: NodeId) -> Vec<HashId> {
        let mut out = Vec::new();
        while node != ROOT {
            out.push(self.syms[self.n(node).sym as usize].clone());
            node = self.n(node).parent;
        }
        out.reverse();
        out
    }
}

/// A heap entry `(last_access, path_key, counter, node)`; the path key is derived from
/// the node when compared (a node's path never changes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeapEntry {
    pub last_access: u64,
    pub counter: u64,
    pub node: NodeId,
}

fn entry_less(tree: &Tree, a: &HeapEntry, b: &HeapEntry) -> bool {
    a.last_access
        .cmp(&b.last_access)
        .then_with(|| tree.path_cmp(a.node, b.node))
        .then_with(|| a.counter.cmp(&b.counter))
        == Ordering::Less
}

/// A binary min-heap like Python's `heapq` under the order above. The order is total
/// (the counter is unique), so the pop sequence equals `heapq`'s for the same pushes.
#[derive(Debug, Default)]
pub(crate) struct CandidateHeap {
    pub items: Vec<HeapEntry>,
}

impl CandidateHeap {
    pub fn push(&mut self, tree: &Tree, e: HeapEntry) {
        self.items.push(e);
        let mut i = self.items.len() - 1;
        while i > 0 {
            let p = (i - 1) / 2;
            if entry_less(tree, &self.items[i], &self.items[p]) {
                self.items.swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    pub fn pop(&mut self, tree: &Tree) -> Option<HeapEntry> {
        let n = self.items.len();
        if n == 0 {
            return None;
        }
        self.items.swap(0, n - 1);
        let top = self.items.pop();
        let n = self.items.len();
        let mut i = 0;
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && entry_less(tree, &self.items[r], &self.items[l]) {
                r
            } else {
                l
            };
            if entry_less(tree, &self.items[c], &self.items[i]) {
                self.items.swap(c, i);
                i = c;
            } else {
                break;
            }
        }
        top
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.items.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_order_is_repr_tuple_order() {
        let mut t = Tree::new();
        let s9 = t.intern(&HashId::Int(9));
        let s10 = t.intern(&HashId::Int(10));
        let s1 = t.intern(&HashId::Int(1));
        let n9 = t.add_child(ROOT, s9);
        let n10 = t.add_child(ROOT, s10);
        let n9_1 = t.add_child(n9, s1);
        let n10_1 = t.add_child(n10, s1);
        // ("10",) < ("9",)
        assert_eq!(t.path_cmp(n10, n9), Ordering::Less);
        // ("9",) < ("9","1") (prefix first)
        assert_eq!(t.path_cmp(n9, n9_1), Ordering::Less);
        // ("10","1") < ("9",)
        assert_eq!(t.path_cmp(n10_1, n9), Ordering::Less);
        assert_eq!(t.path_cmp(n9_1, n10_1), Ordering::Greater);
    }

    #[test]
    fn heap_pops_in_order() {
        let mut t = Tree::new();
        let ids: Vec<NodeId> = (0..5u64)
            .map(|i| {
                let s = t.intern(&HashId::from(i));
                t.add_child(ROOT, s)
            })
            .collect();
        let mut h = CandidateHeap::default();
        for (k, &n) in ids.iter().enumerate().rev() {
            h.push(
                &t,
                HeapEntry {
                    last_access: (k % 2) as u64,
                    counter: k as u64,
                    node: n,
                },
            );
        }
        let order: Vec<NodeId> = std::iter::from_fn(|| h.pop(&t).map(|e| e.node)).collect();
        // last_access 0: blocks 0,2,4 ; then 1: blocks 1,3
        assert_eq!(order, vec![ids[0], ids[2], ids[4], ids[1], ids[3]]);
    }

    /// The O(log depth) comparison answers as the level-by-level walk on every pair of
    /// a random tree with long chains, shared prefixes and same-id siblings of
    /// different parents (fixed seed, a plain LCG: no test-order dependence).
    #[test]
    fn fast_path_cmp_equals_the_walk() {
        let mut t = Tree::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        let syms: Vec<u32> = (0..12u64).map(|i| t.intern(&HashId::from(i))).collect();
        let mut nodes = vec![ROOT];
        for _ in 0..3000 {
            // mostly extend a recent node (deep chains), sometimes branch anywhere
            let parent = if next(64) == 0 {
                nodes[next(nodes.len() as u64) as usize]
            } else {
                nodes[nodes.len() - 1]
            };
            let sym = syms[next(syms.len() as u64) as usize];
            let node = t
                .child(parent, sym)
                .unwrap_or_else(|| t.add_child(parent, sym));
            nodes.push(node);
        }
        let max_depth = nodes.iter().map(|&n| t.n(n).depth).max().unwrap();
        assert!(
            max_depth > 300,
            "the tree must hold long chains ({max_depth})"
        );
        for _ in 0..200_000 {
            let a = nodes[next(nodes.len() as u64) as usize];
            let b = nodes[next(nodes.len() as u64) as usize];
            assert_eq!(t.path_cmp(a, b), t.path_cmp_walk(a, b), "{a} vs {b}");
        }
        // every node against its own ancestors at every depth
        let deep = *nodes.iter().max_by_key(|&&n| t.n(n).depth).unwrap();
        let mut x = deep;
        while x != ROOT {
            assert_eq!(t.path_cmp(x, deep), t.path_cmp_walk(x, deep));
            assert_eq!(t.ancestor_at(deep, t.n(x).depth), x);
            x = t.n(x).parent;
        }
    }
}
