//! An evictable-leaf set ordered by `(priority key, node id)`: a binary heap with lazy
//! deletion, like SGLang's `heapq` of leaves rebuilt per `evict` call but kept
//! incrementally. An entry is live iff the node still sits in the set under that key
//! (`Node::{dev,host,dup}_key`); stale entries are dropped when they reach the top,
//! and the set is compacted when stale entries outnumber live ones three to one (amortised O(1) per push).
//!
//! Why two queues: under LRU almost every entry is pushed with the newest clock tick
//! (`touch`), i.e. in ascending order. Those go to a sorted FIFO (`VecDeque`, O(1) push
//! and pop, sequential memory); only out-of-order pushes (a node that becomes a leaf
//! again with an old stamp, LFU keys, ...) go to the binary heap. The smallest entry is
//! the smaller of the two fronts, so the order — and every eviction — is exactly the
//! heap's (in a profile, heap sift was 23 % of an untimed replay).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

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

type Entry = (PrioKey, NodeId);

#[derive(Debug, Clone)]
pub(crate) struct LeafHeap {
    /// Entries pushed in ascending order, ascending (front is the smallest).
    fifo: VecDeque<Entry>,
    /// Entries pushed out of order.
    heap: BinaryHeap<Reverse<Entry>>,
    live: usize,
    set: LeafSet,
}

/// Where the smallest entry is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Top {
    Fifo,
    Heap,
}

impl LeafHeap {
    pub fn new(set: LeafSet) -> Self {
        Self {
            fifo: VecDeque::new(),
            heap: BinaryHeap::new(),
            live: 0,
            set,
        }
    }

    #[inline]
    fn push(&mut self, e: Entry) {
        match self.fifo.back() {
            Some(&b) if e < b => self.heap.push(Reverse(e)),
            _ => self.fifo.push_back(e),
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
                self.push((k, id));
            }
            (true, Some(k)) => self.push((k, id)),
            (true, None) => self.live -= 1,
            (false, None) => {}
        }
        if self.fifo.len() + self.heap.len() > 4 * self.live + 4096 {
            self.compact(nodes);
        }
    }

    fn valid(&self, nodes: &[Node], k: PrioKey, id: NodeId) -> bool {
        let n = &nodes[id as usize];
        n.alive && self.set.key(n) == Some(k)
    }

    /// The smallest entry, live or stale, and which queue holds it. Equal entries in
    /// both queues are the same `(key, id)`: either may go first.
    #[inline]
    fn top(&self) -> Option<(Entry, Top)> {
        match (self.fifo.front(), self.heap.peek()) {
            (Some(&f), Some(&Reverse(h))) => Some(if h < f {
                (h, Top::Heap)
            } else {
                (f, Top::Fifo)
            }),
            (Some(&f), None) => Some((f, Top::Fifo)),
            (None, Some(&Reverse(h))) => Some((h, Top::Heap)),
            (None, None) => None,
        }
    }

    #[inline]
    fn pop_from(&mut self, t: Top) {
        match t {
            Top::Fifo => {
                self.fifo.pop_front();
            }
            Top::Heap => {
                self.heap.pop();
            }
        }
    }

    /// The smallest live entry.
    pub fn peek(&mut self, nodes: &[Node]) -> Option<(PrioKey, NodeId)> {
        while let Some(((k, id), t)) = self.top() {
            if self.valid(nodes, k, id) {
                return Some((k, id));
            }
            self.pop_from(t);
        }
        None
    }

    /// Removes the top entry (after [`peek`](Self::peek) returned it). The caller takes
    /// the node out of the set (clears its key), which makes any duplicate stale.
    pub fn pop_top(&mut self) {
        if let Some((_, t)) = self.top() {
            self.pop_from(t);
        }
    }

    /// The smallest live entry whose node is not in `skip`, leaving the set intact.
    pub fn first_except(&mut self, nodes: &[Node], skip: &[NodeId]) -> Option<(PrioKey, NodeId)> {
        let top = self.peek(nodes)?;
        if !skip.contains(&top.1) {
            return Some(top);
        }
        let mut held = Vec::new();
        let mut found = None;
        while let Some(((k, id), t)) = self.top() {
            self.pop_from(t);
            if !self.valid(nodes, k, id) {
                continue;
            }
            held.push((k, id));
            if !skip.contains(&id) {
                found = Some((k, id));
                break;
            }
        }
        // Every held entry was the smallest left when taken, so in reverse order each
        // goes in front of the FIFO and keeps it sorted.
        for e in held.into_iter().rev() {
            self.fifo.push_front(e);
        }
        found
    }

    /// Drops stale entries and re-heapifies in O(n). Rare duplicate live entries (a node
    /// that left and re-entered under the same key) are kept: popping one takes the
    /// node out of the set, which makes the other stale.
    fn compact(&mut self, nodes: &[Node]) {
        let mut fifo = std::mem::take(&mut self.fifo);
        fifo.retain(|&(k, id)| self.valid(nodes, k, id));
        self.fifo = fifo;
        let mut v = std::mem::take(&mut self.heap).into_vec();
        v.retain(|Reverse((k, id))| self.valid(nodes, *k, *id));
        self.heap = BinaryHeap::from(v);
    }

    /// Live entries, deduplicated (debug checks).
    pub fn live_set(&self, nodes: &[Node]) -> BTreeSet<(PrioKey, NodeId)> {
        self.heap
            .iter()
            .map(|Reverse(e)| e)
            .chain(self.fifo.iter())
            .filter(|(k, id)| self.valid(nodes, *k, *id))
            .copied()
            .collect()
    }

    pub fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(k: PrioKey) -> Node {
        Node {
            alive: true,
            dev_key: Some(k),
            ..Node::default()
        }
    }

    /// Pops in `(key, id)` order whatever queue an entry went to: ascending pushes go to
    /// the FIFO, the out-of-order ones ((3,0) after (5,0), (1,0) after (4,0)) to the
    /// heap; a re-keyed node leaves a stale entry that is skipped.
    #[test]
    fn pops_in_key_order_across_both_queues() {
        let keys = [(2, 0), (5, 0), (3, 0), (4, 0), (1, 0)];
        let mut nodes: Vec<Node> = keys.iter().map(|&k| node(k)).collect();
        let mut h = LeafHeap::new(LeafSet::Device);
        for (i, &k) in keys.iter().enumerate() {
            h.update(&nodes, i as NodeId, None, Some(k));
        }
        assert_eq!(h.fifo.len(), 2); // (2,0) then (5,0)
        assert_eq!(h.heap.len(), 3);
        // node 1 re-keyed (5,0) → (6,0): its (5,0) entry goes stale.
        nodes[1].dev_key = Some((6, 0));
        h.update(&nodes, 1, Some((5, 0)), Some((6, 0)));
        // first_except skipping node 4 (key (1,0)) finds node 0 and keeps node 4.
        assert_eq!(h.first_except(&nodes, &[4]), Some(((2, 0), 0)));
        let mut order = Vec::new();
        while let Some((k, id)) = h.peek(&nodes) {
            h.pop_top();
            nodes[id as usize].dev_key = None;
            h.update(&nodes, id, Some(k), None);
            order.push(id);
        }
        assert_eq!(order, vec![4, 0, 2, 3, 1]);
        assert_eq!(h.live(), 0);
    }
}
