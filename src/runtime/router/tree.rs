//! The router's approximate radix tree: sglang-router 0.3.2 `src/policies/tree.rs`
//! (`Tree::insert`, `Tree::prefix_match_with_counts`), the part cache-aware routing
//! reads. The router keeps one tree for all workers ("tenants"); every node records the
//! tenants whose requests ran through it, and `last_tenant`, the tenant a match ending at
//! the node returns. `last_tenant` is set when an insert *creates* the node (a split copies
//! it to the new prefix node) and is not moved by later inserts through the node, so a
//! match returns the engine whose request first created the edge holding the last
//! matched character, even when other engines were sent the same prefix since.
//!
//! The text is the router's routing text: for `/generate` with `input_ids`, the ids as
//! decimal numbers joined by single spaces (`protocols/generate.rs:
//! extract_text_for_routing`), so ASCII: one byte is one Rust `char`, and the router's
//! character counts are byte counts here.
//!
//! Not modelled: eviction (`evict_tenant_by_size`, run by a thread every
//! `--eviction-interval-secs`, 60 s of wall clock, once a tenant holds more than
//! `--max-tree-size` characters). The untimed replay has no clock; [`ApproxTree`] counts
//! each tenant's characters as the router does (`tenant_char_count`) so that a replay
//! past that size is refused instead of replayed without eviction. Also not modelled:
//! `tenant_last_access_time` (read only by eviction and by the fallback after a tenant
//! was removed, which never happens without eviction or removed workers).

/// No node.
const NONE: u32 = u32::MAX;
/// The root (empty text; every tenant joins it when added: `tree.insert("", url)`).
const ROOT: u32 = 0;

/// One radix edge: `text[start .. start + len]`, its children as a sibling list keyed by
/// their first byte (at most 11 distinct: digits and the space).
#[derive(Debug, Clone, Copy)]
struct Node {
    start: u64,
    len: u32,
    /// `last_tenant`: the engine whose insert created this edge.
    creator: u16,
    /// The engines whose requests ran through this edge (bit per engine).
    tenants: u64,
    first_child: u32,
    next_sibling: u32,
}

/// The most engines a tree tells apart (one bit each in [`Node::tenants`]).
pub const MAX_TENANTS: u32 = 64;

/// The router's tree over routing texts, as an arena (the text of every edge is a range
/// of one byte buffer holding each inserted suffix once).
#[derive(Debug, Clone)]
pub struct ApproxTree {
    nodes: Vec<Node>,
    text: Vec<u8>,
    /// `tenant_char_count`: characters of the edges each tenant has joined.
    char_count: Vec<u64>,
}

/// What `prefix_match_with_counts` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixMatch {
    /// The engine of the deepest matched edge (`None`: nothing matched, the root).
    pub tenant: Option<u16>,
    pub matched_chars: u64,
    pub input_chars: u64,
}

impl ApproxTree {
    /// A tree with `tenants` engines added (each joins the root).
    pub fn new(tenants: u32) -> Self {
        let tenants = tenants.min(MAX_TENANTS);
        let mask = if tenants == 64 {
            u64::MAX
        } else {
            (1u64 << tenants) - 1
        };
        Self {
            nodes: vec![Node {
                start: 0,
                len: 0,
                creator: 0,
                tenants: mask,
                first_child: NONE,
                next_sibling: NONE,
            }],
            text: Vec::new(),
            char_count: vec![0; tenants as usize],
        }
    }

    /// Characters of the edges `tenant` has joined (`tenant_char_count`).
    pub fn tenant_chars(&self, tenant: u16) -> u64 {
        self.char_count
            .get(usize::from(tenant))
            .copied()
            .unwrap_or(0)
    }

    fn edge(&self, n: u32) -> &[u8] {
        let n = &self.nodes[n as usize];
        &self.text[n.start as usize..n.start as usize + n.len as usize]
    }

    fn child(&self, parent: u32, first: u8) -> Option<u32> {
        let mut c = self.nodes[parent as usize].first_child;
        while c != NONE {
            let n = &self.nodes[c as usize];
            if self.text[n.start as usize] == first {
                return Some(c);
            }
            c = n.next_sibling;
        }
        None
    }

    /// `Tree::prefix_match_with_counts`: walk the edges while they match whole; a
    /// partial match inside an edge counts its characters and ends at that edge.
    pub fn prefix_match_with_counts(&self, key: &[u8]) -> PrefixMatch {
        let (mut node, mut pos, mut matched) = (ROOT, 0usize, 0u64);
        while pos < key.len() {
            let Some(c) = self.child(node, key[pos]) else {
                break;
            };
            let edge = self.edge(c);
            let shared = shared_prefix(&key[pos..], edge);
            matched += shared as u64;
            node = c;
            if shared < edge.len() {
                break;
            }
            pos += shared;
        }
        PrefixMatch {
            tenant: (node != ROOT).then(|| self.nodes[node as usize].creator),
            matched_chars: matched,
            input_chars: key.len() as u64,
        }
    }

    /// `Tree::insert(text, tenant)`: walk down, splitting the edge where the text leaves
    /// it (both halves keep the edge's creator), join `tenant` to every edge on the path
    /// (adding its characters to the tenant's count) and hang the rest of the text as a
    /// new edge created by `tenant`.
    pub fn insert(&mut self, key: &[u8], tenant: u16) {
        let bit = 1u64 << tenant;
        let (mut node, mut pos) = (ROOT, 0usize);
        while pos < key.len() {
            let Some(c) = self.child(node, key[pos]) else {
                let start = self.text.len() as u64;
                self.text.extend_from_slice(&key[pos..]);
                let leaf = self.nodes.len() as u32;
                let parent = &mut self.nodes[node as usize];
                let next_sibling = parent.first_child;
                parent.first_child = leaf;
                self.nodes.push(Node {
                    start,
                    len: (key.len() - pos) as u32,
                    creator: tenant,
                    tenants: bit,
                    first_child: NONE,
                    next_sibling,
                });
                self.char_count[usize::from(tenant)] += (key.len() - pos) as u64;
                return;
            };
            let shared = shared_prefix(&key[pos..], self.edge(c));
            let n = self.nodes[c as usize];
            if shared < n.len as usize {
                // Split: `c` keeps its place among its siblings as the prefix; the rest
                // of its edge moves to a new node that takes its children. Same creator
                // and tenants on both halves (the router copies `last_tenant` and the
                // access times to the new prefix node).
                let suffix = self.nodes.len() as u32;
                self.nodes.push(Node {
                    start: n.start + shared as u64,
                    len: n.len - shared as u32,
                    creator: n.creator,
                    tenants: n.tenants,
                    first_child: n.first_child,
                    next_sibling: NONE,
                });
                let p = &mut self.nodes[c as usize];
                p.len = shared as u32;
                p.first_child = suffix;
            }
            let p = &mut self.nodes[c as usize];
            if p.tenants & bit == 0 {
                p.tenants |= bit;
                self.char_count[usize::from(tenant)] += u64::from(p.len);
            }
            pos += shared;
            node = c;
        }
    }
}

/// Length of the common prefix of `a` and `b` (`shared_prefix_count`, in chars).
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_creator_of_the_deepest_edge_is_returned() {
        let mut t = ApproxTree::new(2);
        assert_eq!(t.prefix_match_with_counts(b"1 2").tenant, None);
        t.insert(b"1 2 3", 0);
        // engine 1 runs the same prefix through engine 0's edge and adds " 9" after it
        t.insert(b"1 2 9", 1);
        // "1 2 " was created by engine 0 (split keeps the creator), "9" by engine 1
        let m = t.prefix_match_with_counts(b"1 2 5");
        assert_eq!((m.tenant, m.matched_chars, m.input_chars), (Some(0), 4, 5));
        let m = t.prefix_match_with_counts(b"1 2 9 7");
        assert_eq!((m.tenant, m.matched_chars), (Some(1), 5));
        // a partial match inside an edge: "1 2 3" vs "1 2 34": 5 chars, engine 0's edge
        let m = t.prefix_match_with_counts(b"1 2 34");
        assert_eq!((m.tenant, m.matched_chars), (Some(0), 5));
        // character counts: engine 0 joined "1 2 " and "3" (5); engine 1 "1 2 " and "9"
        assert_eq!((t.tenant_chars(0), t.tenant_chars(1)), (5, 5));
        t.insert(b"1 2 3", 1);
        assert_eq!(t.tenant_chars(1), 6);
        // engine 1 now shares "3", but the edge's creator is still engine 0
        assert_eq!(t.prefix_match_with_counts(b"1 2 3").tenant, Some(0));
    }

    #[test]
    fn a_text_ending_inside_an_edge_splits_it() {
        let mut t = ApproxTree::new(2);
        t.insert(b"10 20 30", 1);
        t.insert(b"10 2", 0);
        // the split prefix "10 2" keeps engine 1 as its creator
        let m = t.prefix_match_with_counts(b"10 2");
        assert_eq!((m.tenant, m.matched_chars), (Some(1), 4));
        let m = t.prefix_match_with_counts(b"10 20 30 40");
        assert_eq!((m.tenant, m.matched_chars), (Some(1), 8));
        assert_eq!((t.tenant_chars(0), t.tenant_chars(1)), (4, 8));
    }
}
