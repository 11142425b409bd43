//! Debug checks: re-derive every counter and evictable set from scratch and compare
//! with the incremental state. Used by tests (`debug_checks`) — slow, O(tree).

use std::collections::BTreeSet;

use super::node::{NodeId, ROOT};
use super::policy::EvictHostRule;
use super::rules::TreeRules;
use super::tree::HiRadixTree;
use crate::domain::WritePolicy;

/// The first broken invariant [`HiRadixTree::try_check`] finds, described.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvariantBroken(pub String);

impl<R: TreeRules> HiRadixTree<R> {
    /// Panics with a description of the first broken invariant.
    pub fn check(&self) {
        if let Err(e) = self.try_check() {
            panic!("HiRadixTree invariant broken: {e}");
        }
    }

    /// Re-derives leaf sets, occupancy and structural invariants.
    pub fn try_check(&self) -> Result<(), InvariantBroken> {
        let mut dev = BTreeSet::new();
        let mut host = BTreeSet::new();
        let mut dup = BTreeSet::new();
        let (mut d_used, mut h_used, mut h_dev) = (0u64, 0u64, 0u64);
        let mut d_evictable = 0u64;
        let mut stack: Vec<NodeId> = vec![ROOT];
        let mut seen = 0usize;
        while let Some(id) = stack.pop() {
            seen += 1;
            let n = &self.nodes[id as usize];
            if !n.alive {
                return Err(InvariantBroken(format!("dead node {id} reachable")));
            }
            let (mut ndc, mut nbc) = (0u32, 0u32);
            for &c in &n.children {
                let cn = &self.nodes[c as usize];
                if cn.parent != id {
                    return Err(InvariantBroken(format!(
                        "node {c} parent {} != {id}",
                        cn.parent
                    )));
                }
                if self.child_map.get(&(id, cn.pages[0])) != Some(&c)
                    || cn.first != cn.pages[0]
                    || n.children.get(cn.pos_in_parent as usize) != Some(&c)
                {
                    return Err(InvariantBroken(format!("child map misses {c}")));
                }
                ndc += u32::from(cn.on_device);
                nbc += u32::from(cn.backed_up);
                stack.push(c);
            }
            if ndc != n.n_device_children || nbc != n.n_backed_children {
                return Err(InvariantBroken(format!("child counters of {id} wrong")));
            }
            if id == ROOT {
                continue;
            }
            if n.pages.is_empty() {
                return Err(InvariantBroken(format!("empty node {id}")));
            }
            if !n.on_device && !n.backed_up {
                return Err(InvariantBroken(format!(
                    "node {id} holds neither device nor host value"
                )));
            }
            if self.cfg.host_tier && !n.on_device && !self.nodes[n.parent as usize].on_device {
                // fine: evicted nodes form a suffix
            }
            if n.on_device && !self.nodes[n.parent as usize].on_device {
                return Err(InvariantBroken(format!(
                    "device node {id} under evicted parent"
                )));
            }
            if !self.cfg.host_tier && n.backed_up {
                return Err(InvariantBroken(format!(
                    "buffer_only tree holds a host value at {id}"
                )));
            }
            // Write-through family (shipped evict_host): backups are prefix-closed.
            if self.cfg.write_policy != WritePolicy::WriteBack
                && self.cfg.evict_host_rule == EvictHostRule::EvictedOnly
                && n.backed_up
                && n.parent != ROOT
                && !self.nodes[n.parent as usize].backed_up
            {
                return Err(InvariantBroken(format!("backup of {id} not prefix-closed")));
            }
            let len = n.len();
            if n.on_device {
                d_used += len;
                if n.lock_ref == 0 {
                    d_evictable += len;
                }
            }
            if n.backed_up {
                h_used += len;
                if n.on_device {
                    h_dev += len;
                }
            }
            let k = (n.dev_key, n.host_key, n.dup_key);
            let want_dev = Self::is_dev_leaf(n);
            let want_host = Self::is_host_leaf(n);
            let want_dup =
                self.cfg.evict_host_rule != EvictHostRule::EvictedOnly && Self::is_dup_leaf(n);
            if want_dev != k.0.is_some() || want_host != k.1.is_some() || want_dup != k.2.is_some()
            {
                return Err(InvariantBroken(format!(
                    "leaf-set membership of {id} wrong: dev {want_dev} host {want_host} dup {want_dup}, have {k:?}"
                )));
            }
            if let Some(kk) = k.0 {
                dev.insert((kk, id));
            }
            if let Some(kk) = k.1 {
                host.insert((kk, id));
            }
            if let Some(kk) = k.2 {
                dup.insert((kk, id));
            }
        }
        if seen != self.node_count() {
            return Err(InvariantBroken(format!(
                "{} live nodes, {seen} reachable",
                self.node_count()
            )));
        }
        if dev != self.dev_leaves.live_set(&self.nodes)
            || host != self.host_leaves.live_set(&self.nodes)
            || dup != self.dup_leaves.live_set(&self.nodes)
            || dev.len() != self.dev_leaves.live()
            || host.len() != self.host_leaves.live()
            || dup.len() != self.dup_leaves.live()
        {
            return Err(InvariantBroken(
                "evictable sets differ from a fresh derivation".to_string(),
            ));
        }
        if h_used != self.host_used || h_dev != self.host_device_resident {
            return Err(InvariantBroken(format!(
                "host occupancy {} / {} but derived {h_used} / {h_dev}",
                self.host_used, self.host_device_resident
            )));
        }
        if d_evictable != self.device_evictable {
            return Err(InvariantBroken(format!(
                "evictable device pages {} but derived {d_evictable}",
                self.device_evictable
            )));
        }
        if d_used > self.device_used {
            return Err(InvariantBroken(format!(
                "device pages in tree {d_used} exceed device_used {}",
                self.device_used
            )));
        }
        if self.device_used > self.cfg.l1_pages {
            return Err(InvariantBroken(format!(
                "device over capacity: {}",
                self.device_used
            )));
        }
        if self.host_used + self.host_reserved > self.cfg.l2_pages {
            return Err(InvariantBroken(format!(
                "host over capacity: {}",
                self.host_used + self.host_reserved
            )));
        }
        Ok(())
    }

    /// Device pages held by tree nodes (O(tree)).
    pub fn device_pages_in_tree(&self) -> u64 {
        self.nodes
            .iter()
            .skip(1)
            .filter(|n| n.alive && n.on_device)
            .map(|n| n.len())
            .sum()
    }
}
