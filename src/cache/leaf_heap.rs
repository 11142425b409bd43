//! An evictable-leaf set ordered by `(priority key, node id)`: a binary heap with lazy
//! deletion, like SGLang's `heapq` of leaves rebuilt per `evict` call but kept
//! incrementally. An entry is live iff the node still sits in the set under that key
//! (`Node::{dev,host,dup}_key`); stale entries are dropped when they reach the top,
//! and the heap is compacted when stale entries outnumber live ones three to one (amortised O(1) per push).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use super::node::{Node, NodeId, PrioKey};

/// Which set a heap holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeafSet {
    Device,
    Host,
    Dup,
}

impl LeafSet {
    #[inline]
    fn key(self, n: &Node) -> Option<PrioKey> {
        match self {
            LeafSet::Device => n.dev_key,
            LeafSet::Host => n.host_key,
            LeafSet::Dup => n.dup_key,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct LeafHeap {
    heap: BinaryHeap<Reverse<(PrioKey, NodeId)>>,
    live: usize,
    set: LeafSet,
}

impl LeafHeap {
    pub fn new(set: LeafSet) -> Self {
        Self {
            heap: BinaryHeap::new(),
            live: 0,
            set,
        }
    }

    /// Records a membership change `old → new` of node `id` (keys already stored).
    #[inline]
    pub fn update(
        &mut self,
        nodes: &[Node],
        id: NodeId,
        old: Option<PrioKey>,
        new: Option<PrioKey>,
    ) {
        match (old.is_some(), new) {
            (false, Some(k)) => {
                self.live += 1;
                self.heap.push(Reverse((k, id)));
            }
            (true, Some(k)) => self.heap.push(Reverse((k, id))),
            (true, None) => self.live -= 1,
            (false, None) => {}
        }
        if self.heap.len() > 4 * self.live + 4096 {
            self.compact(nodes);
        }
    }

    fn valid(&self, nodes: &[Node], k: PrioKey, id: NodeId) -> bool {
        let n = &nodes[id as usize];
        n.alive && self.set.key(n) == Some(k)
    }

    /// The smallest live entry.
    pub fn peek(&mut self, nodes: &[Node]) -> Option<(PrioKey, NodeId)> {
        while let Some(&Reverse((k, id))) = self.heap.peek() {
            if self.valid(nodes, k, id) {
                return Some((k, id));
            }
            self.heap.pop();
        }
        None
    }

    /// Removes the top entry (after [`peek`](Self::peek) returned it). The caller takes
    /// the node out of the set (clears its key), which makes any duplicate stale.
    pub fn pop_top(&mut self) {
        self.heap.pop();
    }

    /// The smallest live entry whose node is not in `skip`, leaving the heap intact.
    pub fn first_except(&mut self, nodes: &[Node], skip: &[NodeId]) -> Option<(PrioKey, NodeId)> {
        let top = self.peek(nodes)?;
        if !skip.contains(&top.1) {
            return Some(top);
        }
        let mut held = Vec::new();
        let mut found = None;
        while let Some(Reverse((k, id))) = self.heap.pop() {
            if !self.valid(nodes, k, id) {
                continue;
            }
            held.push(Reverse((k, id)));
            if !skip.contains(&id) {
                found = Some((k, id));
                break;
            }
        }
        self.heap.extend(held);
        found
    }

    /// Drops stale entries and re-heapifies in O(n). Rare duplicate live entries (a node
    /// that left and re-entered under the same key) are kept: popping one takes the
    /// node out of the set, which makes the other stale.
    fn compact(&mut self, nodes: &[Node]) {
        let mut v = std::mem::take(&mut self.heap).into_vec();
        v.retain(|Reverse((k, id))| self.valid(nodes, *k, *id));
        self.heap = BinaryHeap::from(v);
    }

    /// Live entries, deduplicated (debug checks).
    pub fn live_set(&self, nodes: &[Node]) -> BTreeSet<(PrioKey, NodeId)> {
        self.heap
            .iter()
            .filter(|Reverse((k, id))| self.valid(nodes, *k, *id))
            .map(|Reverse(e)| *e)
            .collect()
    }

    pub fn live(&self) -> usize {
        self.live
    }
}
