//! Which schedulers read and write one L3 store.
//!
//! SGLang's storage key of a page is its token hash chain and the backend's layout
//! suffix, with no DP rank, instance or engine in it (0.5.14–0.5.23,
//! `managers/cache_controller.py: _generate_storage_config` gives a backend the
//! attention-TP rank under DP attention; `mem_cache/hicache_storage.py: HiCacheFile`
//! keys `{hash}_{model}[_{tp_rank}_{tp_size}]`, MLA without the rank;
//! `storage/mooncake_store/mooncake_store.py` `[{tag}_{model}_]{hash}_{rank}_k`, MLA
//! `{hash}__k`). So every DP-attention rank of a server, and every server of the same
//! launch pointed at the same store, writes and finds the same keys: a page one of them
//! wrote is an L3 hit for the others, and a page already stored is not written again
//! (`batch_set_v1` / `HiCacheFile.set` skip existing keys). A file backend's store is a
//! directory (`SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR`, default `/tmp/hicache`): the
//! ranks of one node share it, servers on other nodes do not unless it is a shared path.
//! 3FS with its local metadata client keeps each process's index in memory: nothing is
//! shared.
//!
//! In the timed replay a page is in the store once its write has ended on the writer's
//! storage-write link (`runtime::timed`: `Sim::store_at`), for the writer and every
//! other reader alike; the untimed replay, which has no clock, writes at once.

use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::cache::Storage;

/// `runtime.replay.l3_scope`: which schedulers of a replayed deployment share one L3
/// store. Only a deployment of several schedulers (DP-attention ranks, engines) is
/// affected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum L3Scope {
    /// One store for every engine and rank: Mooncake, 3FS with its metadata server,
    /// EIC, AIBrix, a file backend on a shared path.
    #[default]
    Fleet,
    /// One store per node, shared by the DP-attention ranks of an engine on that node
    /// (`capacities.nodes`: an engine's ranks split evenly over its nodes, in order):
    /// a file backend's directory on each node's local disk, NIXL's file plugins.
    Node,
    /// One store per scheduler: the `sim` backend (its keys in each process), 3FS with
    /// its local metadata client.
    Rank,
}

impl L3Scope {
    pub fn id(self) -> &'static str {
        match self {
            L3Scope::Fleet => "fleet",
            L3Scope::Node => "node",
            L3Scope::Rank => "rank",
        }
    }
}

/// A scheduler's handle on its L3 store, its own or one it shares. The figures of a
/// shared store (its pages, its evictions) are reported once, by the handle that made
/// it, so that summing the ranks' figures counts each store once.
pub(crate) struct StoreHandle {
    store: Rc<RefCell<Storage>>,
    reports: bool,
}

impl StoreHandle {
    /// A new store of `capacity` pages (`u64::MAX`: unbounded), reported by this handle.
    pub fn new(capacity: u64) -> Self {
        StoreHandle {
            store: Rc::new(RefCell::new(Storage::new(capacity))),
            reports: true,
        }
    }

    /// Another scheduler's handle on the same store; it does not report its figures.
    pub fn share(&self) -> Self {
        StoreHandle {
            store: Rc::clone(&self.store),
            reports: false,
        }
    }

    pub fn get(&self) -> RefMut<'_, Storage> {
        self.store.borrow_mut()
    }

    pub fn peek(&self) -> Ref<'_, Storage> {
        self.store.borrow()
    }

    /// Whether this handle reports the store's figures.
    pub fn reports(&self) -> bool {
        self.reports
    }
}

/// Gives the schedulers of `engines` (each its ranks) the stores `scope` says they share:
/// under [`L3Scope::Fleet`] the first rank's store goes to every other, under
/// [`L3Scope::Node`] each node's first rank's store to the engine's other ranks on that
/// node (`nodes` per engine, its ranks split evenly over them in order: rank `r` of `n`
/// on node `r × nodes / n`). `store` and `share` reach a scheduler's handle (`None`: no
/// L3).
pub(crate) fn share_stores<S>(
    scope: L3Scope,
    nodes: u32,
    engines: &mut [&mut [S]],
    store: impl Fn(&S) -> Option<StoreHandle>,
    share: impl Fn(&mut S, StoreHandle),
) {
    let mut fleet: Option<StoreHandle> = None;
    for ranks in engines.iter_mut() {
        let n = ranks.len().max(1);
        let nodes = (nodes.max(1) as usize).min(n);
        // The store of each node of this engine, once its first rank is met.
        let mut node: Vec<Option<StoreHandle>> = (0..nodes).map(|_| None).collect();
        for (r, s) in ranks.iter_mut().enumerate() {
            let k = r * nodes / n;
            let from = match scope {
                L3Scope::Rank => None,
                L3Scope::Node => node[k].as_ref(),
                L3Scope::Fleet => fleet.as_ref(),
            };
            if let Some(h) = from {
                share(s, h.share());
                continue;
            }
            // The first scheduler of its node (fleet) keeps its own store.
            let Some(own) = store(s) else { return };
            node[k] = Some(own.share());
            if fleet.is_none() {
                fleet = Some(own);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each scheduler's store, as a pointer to compare which share.
    fn ptrs(v: &[Vec<Option<StoreHandle>>]) -> Vec<Vec<*const RefCell<Storage>>> {
        v.iter()
            .map(|e| {
                e.iter()
                    .map(|h| Rc::as_ptr(&h.as_ref().unwrap().store))
                    .collect()
            })
            .collect()
    }

    fn deployment() -> Vec<Vec<Option<StoreHandle>>> {
        (0..2)
            .map(|_| (0..2).map(|_| Some(StoreHandle::new(u64::MAX))).collect())
            .collect()
    }

    fn run(scope: L3Scope) -> Vec<Vec<Option<StoreHandle>>> {
        run_on(scope, 1)
    }

    fn run_on(scope: L3Scope, nodes: u32) -> Vec<Vec<Option<StoreHandle>>> {
        let mut d = deployment();
        let mut engines: Vec<&mut [Option<StoreHandle>]> =
            d.iter_mut().map(Vec::as_mut_slice).collect();
        share_stores(
            scope,
            nodes,
            &mut engines,
            |h| h.as_ref().map(StoreHandle::share),
            |h, s| *h = Some(s),
        );
        d
    }

    #[test]
    fn each_scope_shares_as_it_says() {
        let f = ptrs(&run(L3Scope::Fleet));
        assert!(f.iter().flatten().all(|&p| p == f[0][0]));
        let e = ptrs(&run(L3Scope::Node));
        assert_eq!(e[0][0], e[0][1]);
        assert_eq!(e[1][0], e[1][1]);
        assert_ne!(e[0][0], e[1][0]);
        let r = ptrs(&run(L3Scope::Rank));
        assert_ne!(r[0][0], r[0][1]);
        // Two nodes an engine: its two ranks on one each.
        let n = ptrs(&run_on(L3Scope::Node, 2));
        assert_ne!(n[0][0], n[0][1]);
        assert_ne!(n[0][0], n[1][0]);
        // Fleet ignores the nodes.
        let f = ptrs(&run_on(L3Scope::Fleet, 2));
        assert!(f.iter().flatten().all(|&p| p == f[0][0]));
    }

    #[test]
    fn a_shared_store_is_reported_once() {
        let reporting = |d: Vec<Vec<Option<StoreHandle>>>| {
            d.iter()
                .flatten()
                .filter(|h| h.as_ref().unwrap().reports())
                .count()
        };
        assert_eq!(reporting(run(L3Scope::Fleet)), 1);
        assert_eq!(reporting(run(L3Scope::Node)), 2);
    }

    #[test]
    fn a_page_one_writes_the_other_finds() {
        let a = StoreHandle::new(u64::MAX);
        let b = a.share();
        assert_eq!(a.get().write(&[1u64.into(), 2u64.into()]), 2);
        assert_eq!(b.get().hit_run(&[1u64.into(), 2u64.into(), 3u64.into()]), 2);
        // Already stored: not written again.
        assert_eq!(b.get().write(&[2u64.into(), 3u64.into()]), 1);
        assert_eq!(a.peek().len(), 3);
    }
}
