//! Moving KV between tiers inside the tree: `write_backup`, `evict`, `evict_host`,
//! `load_back` (`mem_cache/hiradix_cache.py`, V1 line numbers unless noted).

use super::node::{NIL, NodeId, ROOT};
use super::policy::{EvictHostRule, EvictVersion};
use super::rules::TreeRules;
use super::tree::{BackupRecord, HiRadixTree, MatchResult};
use crate::domain::WritePolicy;

impl<R: TreeRules> HiRadixTree<R> {
    /// `write_backup(node, write_back)` (`hiradix_cache.py: HiRadixCache.write_backup`, V1). Write-through family: the parent
    /// must be the root or backed up (backups stay a prefix from the root). The host
    /// allocation retries once after `evict_host(len)`; if it still fails the node stays
    /// device-only and a failed backup is counted. On success (not write_back) the node
    /// is pinned on device until its D2H ack ([`backup_acked`](Self::backup_acked)).
    /// Returns the pages backed up (0 on failure).
    pub fn write_backup(&mut self, id: NodeId, write_back: bool) -> u64 {
        if !self.cfg.host_tier {
            if self.cfg.buffer_storage_intents && !write_back {
                // `BufferModePipeline.enqueue_backup_intent` for the node and (nothing
                // is host-backed in buffer mode) every ancestor.
                self.storage_intents.push(id);
            }
            return 0;
        }
        if R::CHAIN_ANCESTOR_BACKUPS && !write_back {
            return self.write_backup_chain(id);
        }
        let n = &self.nodes[id as usize];
        let parent = n.parent;
        if !write_back && parent != ROOT && !self.nodes[parent as usize].backed_up {
            return 0;
        }
        self.write_backup_one(id, write_back)
    }

    /// 0.5.23 `unified_tree_core.py: _build_backup_kv_action` +
    /// `unified_radix_cache.py: _execute_and_commit_kv_backup` (write-through family):
    /// the node's unbacked ancestors are backed up first, top-down; the chain stops at
    /// the first failure (0 returned). Returns the last node's pages.
    fn write_backup_chain(&mut self, id: NodeId) -> u64 {
        let mut chain = std::mem::take(&mut self.scratch);
        chain.clear();
        chain.push(id);
        let mut a = self.nodes[id as usize].parent;
        while a != ROOT && !self.nodes[a as usize].backed_up {
            chain.push(a);
            a = self.nodes[a as usize].parent;
        }
        let mut written = 0;
        for &x in chain.iter().rev() {
            if self.nodes[x as usize].backed_up {
                continue;
            }
            written = self.write_backup_one(x, false);
            if written == 0 {
                break;
            }
        }
        self.scratch = chain;
        written
    }

    /// One node's backup (no parent rule): host room, then the copy.
    fn write_backup_one(&mut self, id: NodeId, write_back: bool) -> u64 {
        let n = &self.nodes[id as usize];
        let len = n.len();
        let parent = n.parent;
        if self.host_free() < len {
            if R::EVICT_HOST_SHORTFALL {
                // 0.5.23 `_execute_kv_backup`: `needed = kv_tokens - host_avail`;
                // `if self.evict_host(needed) < needed: return None`.
                let needed = len - self.host_free();
                if self.evict_host(needed) < needed || self.host_free() < len {
                    self.stats.failed_backups += 1;
                    return 0;
                }
            } else {
                self.evict_host_protect(len, [parent, id]);
                if self.host_free() < len {
                    self.stats.failed_backups += 1;
                    return 0;
                }
            }
        }
        self.set_backed_up(id, true);
        self.stats.backup_pages += len;
        let locked = !write_back;
        if locked {
            self.inc_lock_ref(id);
        }
        self.backups.push(BackupRecord {
            node: id,
            pages: len,
            locked,
        });
        len
    }

    /// The D2H ack of a backup (`hiradix_cache.py: HiRadixCache.writing_check`): unpins the
    /// node.
    pub fn backup_acked(&mut self, rec: &BackupRecord) {
        if rec.locked {
            self.dec_lock_ref(rec.node);
        }
        // 0.5.23 `finish_write_through`: the copy becomes a tracked duplicate now. A
        // write_back backup (not locked) was acked by the eviction that made it
        // (`writing_check(write_back=True)`, see `evict_one`): acking it again here
        // would drop the stale entry SGLang keeps for the demoted node.
        if R::RECLAIM_HOST_DUPLICATES && rec.locked && self.nodes[rec.node as usize].alive {
            self.track_duplicate(rec.node);
        }
    }

    /// `evict(num_tokens)` (`hiradix_cache.py: HiRadixCache.evict`) in pages: pops device leaves by priority until
    /// `num` pages are freed or none is left. Returns pages freed.
    pub fn evict(&mut self, num: u64) -> u64 {
        let mut evicted = 0u64;
        // Nodes popped but kept (V0 write_back failure, protected subtree): out of the
        // candidate set for the rest of this call, as SGLang's popped heap entries are.
        let mut skipped: Vec<NodeId> = std::mem::take(&mut self.scratch);
        skipped.clear();
        while evicted < num {
            let Some(x) = self.pop_dev_leaf() else {
                break;
            };
            let freed = self.evict_one(x);
            if freed == 0 {
                // Kept: take it out of the candidates for the rest of this call.
                if let Some(k2) = self.nodes[x as usize].dev_key.take() {
                    self.dev_leaves.update(&self.nodes, x, Some(k2), None);
                }
                skipped.push(x);
            }
            evicted += freed;
        }
        for &x in &skipped {
            self.refresh(x);
        }
        self.scratch = skipped;
        if R::WRITE_BACK_STAGES_BACKUPS {
            self.flush_staged();
        }
        self.stats.device_evicted_pages += evicted;
        if self.cfg.debug_checks {
            self.check();
        }
        evicted
    }

    /// The next device leaf in eviction order, taken out of the candidate set while it is
    /// processed (a later `refresh` may put it back).
    fn pop_dev_leaf(&mut self) -> Option<NodeId> {
        let (k, x) = self.dev_leaves.peek(&self.nodes)?;
        self.dev_leaves.pop_top();
        self.dev_leaves.update(&self.nodes, x, Some(k), None);
        self.nodes[x as usize].dev_key = None;
        Some(x)
    }

    /// One device leaf, per write policy, version and evict_host rule.
    fn evict_one(&mut self, x: NodeId) -> u64 {
        let len = self.nodes[x as usize].len();
        if self.nodes[x as usize].backed_up {
            if self.cfg.evict_host_rule == EvictHostRule::BoundaryL1L2 {
                return self.boundary_evict_backed(x);
            }
            // `_evict_backuped`: free device slots, keep the node as host-only.
            self.set_on_device(x, false);
            return len;
        }
        if self.cfg.evict_host_rule == EvictHostRule::BoundaryL1L2 {
            return self.boundary_evict_unbacked(x);
        }
        match (self.cfg.write_policy, self.cfg.evict_version) {
            (WritePolicy::WriteBack, EvictVersion::V1) => {
                // `_evict_write_back` (after sglang PRs 28614 and 29817): back up then demote, else
                // drop the subtree without a host copy unless it is host-protected.
                if self.write_backup(x, true) > 0 {
                    if R::RECLAIM_HOST_DUPLICATES {
                        // 0.5.23: `writing_check(write_back=True)` acks the copy (a
                        // duplicate, registered) before `_demote` (left stale).
                        self.track_duplicate(x);
                    }
                    if self.cfg.storage_backup_pins {
                        // The ack's L3 write pins the host copy until its own ack.
                        self.protect_host(x);
                        self.storage_pins.push(x);
                    }
                    if R::WRITE_BACK_STAGES_BACKUPS {
                        // `_evict_write_back`: `x.protect_host()`, staged.
                        self.protect_host(x);
                        self.staged.push(x);
                    }
                    self.set_on_device(x, false);
                    len
                } else {
                    if R::WRITE_BACK_STAGES_BACKUPS {
                        self.flush_staged();
                    }
                    self.drop_subtree_no_host(x)
                }
            }
            (WritePolicy::WriteBack, EvictVersion::V0) => {
                // V0: write, then `_evict_backuped`; a failed write frees nothing.
                if self.write_backup(x, true) > 0 {
                    self.set_on_device(x, false);
                    len
                } else {
                    0
                }
            }
            _ => {
                // `_evict_regular`: free device slots and delete the leaf.
                self.delete_unbacked_leaf(x)
            }
        }
    }

    /// `_evict_regular` on an unbacked device leaf. Any evicted descendants (possible
    /// only off the write-through invariant) go with it.
    fn delete_unbacked_leaf(&mut self, x: NodeId) -> u64 {
        if self.nodes[x as usize].children.is_empty() {
            let len = self.nodes[x as usize].len();
            self.set_on_device(x, false);
            self.delete_node(x);
            len
        } else {
            self.free_subtree(x).0
        }
    }

    /// `_drop_subtree_no_host` (V1 write_back): if any node of the subtree is pinned on
    /// host, nothing happens; otherwise the whole subtree's device and host copies are
    /// freed and it is unlinked. Counts the device tokens dropped without backup.
    fn drop_subtree_no_host(&mut self, x: NodeId) -> u64 {
        let mut stack = vec![x];
        while let Some(n) = stack.pop() {
            let node = &self.nodes[n as usize];
            if node.host_ref > 0 || (n != x && node.lock_ref > 0) {
                return 0;
            }
            stack.extend_from_slice(&node.children);
        }
        let (dev, _host) = self.free_subtree(x);
        self.stats.dropped_pages_without_backup += dev;
        dev
    }

    /// Frees device and host copies of the subtree at `x` and unlinks it, deepest first.
    /// Returns (device pages, host pages) freed.
    fn free_subtree(&mut self, x: NodeId) -> (u64, u64) {
        let mut order = Vec::new();
        let mut stack = vec![x];
        while let Some(n) = stack.pop() {
            order.push(n);
            stack.extend_from_slice(&self.nodes[n as usize].children);
        }
        let (mut dev, mut host) = (0, 0);
        for &n in order.iter().rev() {
            let len = self.nodes[n as usize].len();
            if self.nodes[n as usize].on_device {
                dev += len;
                self.set_on_device(n, false);
            }
            if self.nodes[n as usize].backed_up {
                host += len;
                self.set_backed_up(n, false);
            }
            self.delete_node(n);
        }
        self.stats.host_evicted_pages += host;
        (dev, host)
    }

    /// `boundary_l1_l2` (policy simulator `_boundary_evict_l1_node`) for a backed-up
    /// device leaf: demote it once its parent is not device-only; back up a device-only
    /// parent first; if that fails and the node has no backed-up descendant, delete it.
    fn boundary_evict_backed(&mut self, x: NodeId) -> u64 {
        let len = self.nodes[x as usize].len();
        let p = self.nodes[x as usize].parent;
        let parent_ok = p == ROOT
            || !self.nodes[p as usize].on_device
            || self.nodes[p as usize].backed_up
            || self.boundary_backup(p, x) > 0;
        // The backup of `p` may not take `x`'s own copy (protected), so `x` is still
        // backed up here.
        if parent_ok {
            self.set_on_device(x, false);
            return len;
        }
        if self.nodes[x as usize].n_backed_children == 0 && self.nodes[x as usize].host_ref == 0 {
            self.stats.host_evicted_pages += len;
            self.set_backed_up(x, false);
            return self.delete_unbacked_leaf(x);
        }
        0
    }

    /// `boundary_l1_l2` for an unbacked device leaf (`_try_ensure_h_for_demote`): back up
    /// its device-only parent (if any) and itself, then demote; else delete it.
    fn boundary_evict_unbacked(&mut self, x: NodeId) -> u64 {
        let len = self.nodes[x as usize].len();
        let p = self.nodes[x as usize].parent;
        let need_parent =
            p != ROOT && self.nodes[p as usize].on_device && !self.nodes[p as usize].backed_up;
        let need = len
            + if need_parent {
                self.nodes[p as usize].len()
            } else {
                0
            };
        if self.host_free() < need {
            self.evict_host_protect(need, [p, x]);
        }
        if self.host_free() >= need {
            if need_parent {
                self.boundary_backup(p, x);
            }
            self.write_backup(x, true);
            self.set_on_device(x, false);
            len
        } else {
            self.stats.failed_backups += 1;
            self.delete_unbacked_leaf(x)
        }
    }

    /// A boundary-rule backup of `p` (protecting `x`): no parent constraint, no pin.
    fn boundary_backup(&mut self, p: NodeId, x: NodeId) -> u64 {
        let len = self.nodes[p as usize].len();
        if self.host_free() < len {
            self.evict_host_protect(len, [p, x]);
            if self.host_free() < len {
                self.stats.failed_backups += 1;
                return 0;
            }
        }
        self.write_backup(p, true)
    }

    /// `evict_host(num_tokens)` (`hiradix_cache.py: HiRadixCache.evict_host`, every version
    /// seen) in pages. Shipped rule: pops
    /// host leaves (evicted, unpinned, no backed-up child), frees their host copy and
    /// removes them from the tree; host copies of device-resident nodes are never
    /// reclaimed. What-if rules per [`EvictHostRule`]. Returns pages freed; 0 without a
    /// host tier (buffer_only).
    pub fn evict_host(&mut self, num: u64) -> u64 {
        self.evict_host_protect(num, [NIL, NIL])
    }

    /// [`evict_host`](Self::evict_host) that never reclaims the `protect` nodes (the
    /// node being backed up and its parent, whose copies the what-if rules could
    /// otherwise take).
    pub(crate) fn evict_host_protect(&mut self, num: u64, protect: [NodeId; 2]) -> u64 {
        if !self.cfg.host_tier {
            return 0;
        }
        let mut freed = 0u64;
        if R::RECLAIM_HOST_DUPLICATES && self.cfg.write_policy == WritePolicy::WriteBack {
            freed += self.reclaim_host_duplicates(num);
        }
        while freed < num {
            let host = self.host_leaves.peek(&self.nodes);
            let dup = if self.cfg.evict_host_rule == EvictHostRule::EvictedOnly {
                None
            } else {
                self.dup_leaves.first_except(&self.nodes, &protect)
            };
            let pick = match self.cfg.evict_host_rule {
                EvictHostRule::EvictedOnly => host.map(|h| (h, false)),
                EvictHostRule::ReclaimDeviceResident => match (host, dup) {
                    (Some(h), Some(d)) => Some(if d < h { (d, true) } else { (h, false) }),
                    (Some(h), None) => Some((h, false)),
                    (None, Some(d)) => Some((d, true)),
                    (None, None) => None,
                },
                EvictHostRule::BoundaryL1L2 => dup.map(|d| (d, true)).or(host.map(|h| (h, false))),
            };
            let Some(((_, x), is_dup)) = pick else {
                break;
            };
            let len = self.nodes[x as usize].len();
            if self.cfg.l3_at_host_eviction {
                // The what-if of sglang PR 39845: the coldest host pages go to L3 as
                // they leave the host tier.
                let pages = &self.nodes[x as usize].pages;
                self.host_evictions.extend_from_slice(pages);
            }
            if is_dup {
                // The node keeps its device copy and loses its backup.
                self.set_backed_up(x, false);
            } else {
                self.set_backed_up(x, false);
                // A host leaf has no backed-up child, and an evicted node has no device
                // child, so it has no children; `free_subtree` is a safety net.
                assert!(self.nodes[x as usize].children.is_empty());
                if self.nodes[x as usize].children.is_empty() {
                    self.delete_node(x);
                } else {
                    self.free_subtree(x);
                }
            }
            freed += len;
        }
        self.stats.host_evicted_pages += freed;
        freed
    }

    /// The nodes between `m`'s deepest match and its deepest device node: those a
    /// `load_back` of `m` copies, one copy run each (per layer).
    pub fn host_nodes(&self, m: &MatchResult) -> u64 {
        let mut n = 0;
        let mut x = m.last_node;
        while x != m.last_device_node {
            n += 1;
            x = self.nodes[x as usize].parent;
        }
        n
    }

    /// `load_back` (`hiradix_cache.py: HiRadixCache.load_back`) from `m` (a fresh `match_prefix`): loads the trailing host
    /// pages to the device, all or nothing. Skipped (returns 0) below
    /// `load_back_threshold` tokens or when the device cannot make room after `evict`.
    /// The host copies are kept (the nodes become device + host). The loaded nodes are
    /// returned pinned through `m.last_node`'s lock, which the caller holds. Skips are
    /// counted by the caller (`TreeStats::load_back_skipped_pages`) once the request is
    /// admitted, so a retried admission does not count twice.
    pub fn load_back(&mut self, m: &MatchResult) -> u64 {
        let n = m.host_pages;
        if n == 0 {
            return 0;
        }
        if n * u64::from(self.cfg.page_size) < u64::from(self.cfg.load_back_threshold) {
            return 0;
        }
        if self.cfg.serialize_load_back {
            return self.load_back_per_node(m);
        }
        // `inc_lock_ref(ancestor)` + `protect_host` of the loaded nodes while allocating.
        self.inc_lock_ref(m.last_device_node);
        let mut x = m.last_node;
        while x != m.last_device_node {
            self.protect_host(x);
            x = self.nodes[x as usize].parent;
        }
        let ok = if R::LOAD_BACK_EVICTS_WHOLE_LOAD {
            // `hiradix_cache.py: load_back`: `cache_controller.load` fails, then
            // `evict(len(host_indices))`, then `load` again.
            if self.device_free() < n {
                self.evict(n);
            }
            self.device_free() >= n && {
                self.device_used += n;
                true
            }
        } else {
            self.alloc_device(n)
        };
        let mut x = m.last_node;
        while x != m.last_device_node {
            self.release_host(x);
            x = self.nodes[x as usize].parent;
        }
        self.dec_lock_ref(m.last_device_node);
        if !ok {
            return 0;
        }
        self.device_used -= n;
        let mut x = m.last_node;
        while x != m.last_device_node {
            self.set_on_device(x, true);
            if R::LOAD_BACK_PENDING {
                // `commit_load_back`: pinned (write_back) until `finish_load_back`.
                if self.cfg.write_policy == WritePolicy::WriteBack {
                    self.nodes[x as usize].load_back_pending = m.last_node;
                }
            } else if R::RECLAIM_HOST_DUPLICATES {
                self.track_duplicate(x);
            }
            x = self.nodes[x as usize].parent;
        }
        if R::LOAD_BACK_PENDING {
            self.pending_load_backs.push(m.last_node);
        }
        self.stats.load_back_pages += n;
        if self.cfg.debug_checks {
            self.check();
        }
        n
    }

    /// The what-if of sglang PR 40576 (`--hicache-write-back-threshold`, open; its code is
    /// not in the stored sources, its test shows the shape: `_write_back_budget`, then
    /// `_write_back_proactively` copies device KV to host, the nodes stay on the device,
    /// and a later eviction of them frees slots with no synchronous write). Under
    /// write_back, when the device pages without a host copy exceed `threshold` × the
    /// device pool, device leaves are backed up in eviction order (least recently used
    /// first; a leaf already backed up or locked is passed over) until the excess is
    /// covered or no leaf is left; each stays on the device, a host duplicate. The hook
    /// (once per scheduler iteration), the occupancy read and the order are this
    /// simulator's reading ([`crate::release::proposal::Proposal::assumptions`]).
    /// Returns the pages backed up.
    pub fn write_back_to_watermark(&mut self, threshold: f64) -> u64 {
        if !self.cfg.host_tier || self.cfg.write_policy != WritePolicy::WriteBack {
            return 0;
        }
        let dirty = self.device_used.saturating_sub(self.host_device_resident);
        let limit = (threshold.clamp(0.0, 1.0) * self.cfg.l1_pages as f64).floor() as u64;
        if dirty <= limit {
            return 0;
        }
        let budget = dirty - limit;
        let mut written = 0u64;
        let mut popped: Vec<NodeId> = std::mem::take(&mut self.scratch);
        popped.clear();
        while written < budget {
            let Some(x) = self.pop_dev_leaf() else {
                break;
            };
            popped.push(x);
            if self.nodes[x as usize].backed_up {
                continue;
            }
            let n = self.write_backup(x, true);
            if n == 0 {
                break; // the host has no room: eviction stays the fallback
            }
            // Acked with the iteration's other D2H copies: a settled duplicate.
            self.track_duplicate(x);
            if self.cfg.storage_backup_pins {
                // The ack's L3 write pins the host copy until its own ack, as an
                // eviction's write_back backup does.
                self.protect_host(x);
                self.storage_pins.push(x);
            }
            written += n;
        }
        for &x in &popped {
            self.refresh(x);
        }
        self.scratch = popped;
        if self.cfg.debug_checks {
            self.check();
        }
        written
    }

    /// The what-if of sglang PR 39395 (`--hicache-serialize-load-back`, open;
    /// `unified_radix_cache.py: _load_back_per_node` as stored at sglang f6984249): the
    /// host span of `m` is loaded one radix node at a time, root-first. Each step evicts
    /// only its own shortfall (`_evict_for_load_back`), is copied and acked at once
    /// (`_drain_serialized_load_back` → `finish_load_back`: under write_back the node is
    /// a tracked, reclaimable duplicate before the next step evicts) and stays
    /// device-locked until the loop ends; the anchor's host copy is pinned throughout.
    /// A step that finds no room ends the load: the request recomputes (0 returned) and
    /// the steps before it stay on the device. The whole-span threshold test comes first,
    /// as in the batched path ([`load_back`](Self::load_back)).
    fn load_back_per_node(&mut self, m: &MatchResult) -> u64 {
        self.inc_lock_ref(m.last_device_node);
        self.protect_host(m.last_node);
        // The chain, root-first (`split_full_load_back_spec`: one step per node).
        let mut chain = std::mem::take(&mut self.scratch);
        chain.clear();
        let mut x = m.last_node;
        while x != m.last_device_node {
            chain.push(x);
            x = self.nodes[x as usize].parent;
        }
        let mut loaded = 0u64;
        let mut steps = 0usize;
        let mut ok = true;
        for i in (0..chain.len()).rev() {
            let x = chain[i];
            let len = self.nodes[x as usize].len();
            // `inc_host_lock_ref(step_id)` while the step allocates.
            self.protect_host(x);
            let room = self.alloc_device(len);
            self.release_host(x);
            if !room {
                ok = false;
                break;
            }
            self.device_used -= len;
            self.set_on_device(x, true);
            // Acked now (`loading_check(finish_count=1)`): a settled duplicate.
            self.track_duplicate(x);
            // `loaded_locks`: held until the loop ends.
            self.inc_lock_ref(x);
            loaded += len;
            steps += 1;
        }
        for i in 0..steps {
            let x = chain[chain.len() - 1 - i];
            self.dec_lock_ref(x);
        }
        self.scratch = chain;
        self.release_host(m.last_node);
        self.dec_lock_ref(m.last_device_node);
        self.stats.load_back_pages += loaded;
        if self.cfg.debug_checks {
            self.check();
        }
        if ok { loaded } else { 0 }
    }

    /// `hiradix_cache.py: _evict_write_back: flush_staged`: the staged write_back
    /// backups are acked and their host pins released
    /// ([`TreeRules::WRITE_BACK_STAGES_BACKUPS`]).
    fn flush_staged(&mut self) {
        let staged = std::mem::take(&mut self.staged);
        for &x in &staged {
            self.release_host(x);
        }
        self.staged = staged;
        self.staged.clear();
    }

    /// The storage acks of the L3 writes that pinned host copies
    /// ([`TreeConfig::storage_backup_pins`]): the pins are released.
    ///
    /// [`TreeConfig::storage_backup_pins`]: super::TreeConfig::storage_backup_pins
    pub fn release_storage_pins(&mut self) {
        let pins = std::mem::take(&mut self.storage_pins);
        for &x in &pins {
            self.release_host(x);
        }
        self.storage_pins = pins;
        self.storage_pins.clear();
    }

    /// Hands the pins of [`release_storage_pins`](Self::release_storage_pins) to the
    /// caller, who releases each with [`release_host`](Self::release_host) at its
    /// storage ack (timed replay).
    pub fn take_storage_pins(&mut self) -> Vec<NodeId> {
        std::mem::take(&mut self.storage_pins)
    }

    /// The H2D acks of every load-back since the last call (`unified_radix_cache.py:
    /// loading_check` → `unified_tree_core.py: finish_load_back`, at the next scheduler
    /// iteration): walking from each anchor to the root, the nodes it pinned are
    /// unpinned and become tracked duplicates (write_back). See
    /// [`TreeRules::LOAD_BACK_PENDING`].
    pub fn finish_load_backs(&mut self) {
        if !R::LOAD_BACK_PENDING {
            return;
        }
        let anchors = std::mem::take(&mut self.pending_load_backs);
        for &anchor in &anchors {
            let mut x = anchor;
            while x != ROOT {
                if self.nodes[x as usize].load_back_pending == anchor {
                    self.nodes[x as usize].load_back_pending = NIL;
                    self.track_duplicate(x);
                }
                x = self.nodes[x as usize].parent;
            }
        }
        self.pending_load_backs = anchors;
        self.pending_load_backs.clear();
    }

    /// 0.5.23 `unified_tree_core.py: _reclaim_full_host_duplicates` (write_back, before
    /// host leaves): walks `full_host_duplicates` in insertion order, freeing the host
    /// copy of device-resident nodes (no in-flight DMA, no host pin) until `num` pages
    /// are freed; pass 1 spares evictable device leaves (their eviction would demote
    /// onto that copy), pass 2 takes them. Stale entries are swept. Off in SGLang with
    /// `SGLANG_HICACHE_SKIP_HOST_DUPLICATE_RECLAIM=1` (not modelled).
    fn reclaim_host_duplicates(&mut self, num: u64) -> u64 {
        let mut freed = 0u64;
        for spare_leaves in [true, false] {
            if freed >= num {
                break;
            }
            let mut i = 0;
            while i < self.dup_order.len() && freed < num {
                let (x, t) = self.dup_order[i];
                i += 1;
                let n = &self.nodes[x as usize];
                if n.dup_seq != t {
                    continue;
                }
                if !n.on_device || !n.backed_up {
                    self.untrack_duplicate(x); // stale entry, swept
                    continue;
                }
                if spare_leaves && Self::is_dev_leaf(n) {
                    continue;
                }
                // `_can_reclaim_full_host_duplicate`: no in-flight load-back, no host pin.
                if n.host_ref > 0 || n.load_back_pending != NIL {
                    continue;
                }
                let len = n.len();
                if self.cfg.l3_at_host_eviction {
                    let pages = &self.nodes[x as usize].pages;
                    self.host_evictions.extend_from_slice(pages);
                }
                self.set_backed_up(x, false);
                self.untrack_duplicate(x);
                freed += len;
            }
        }
        freed
    }
}
