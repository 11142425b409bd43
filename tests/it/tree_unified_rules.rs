//! Hand-worked cases for 0.5.23's host-tier rules (`tree: unified_0_5_23`) against the
//! V1 tree, page size 1 (pages = tokens).

use hicache_sim::cache::{HiRadixTree, TreeConfig, TreeRules, Unified0523, V1, WritePolicy};

fn tree<R: TreeRules>(l1: u64, l2: u64, wp: WritePolicy) -> HiRadixTree<R> {
    HiRadixTree::<R>::new(TreeConfig {
        l1_pages: l1,
        l2_pages: l2,
        page_size: 1,
        write_policy: wp,
        load_back_threshold: 1,
        debug_checks: true,
        ..TreeConfig::default()
    })
}

/// The untimed replay's request: match, lock, load_back, allocate, insert, unlock,
/// instant acks. Returns (device hit, host hit loaded).
fn serve<R: TreeRules>(t: &mut HiRadixTree<R>, pages: &[u64]) -> (u64, u64) {
    let m = t.match_prefix(pages);
    t.inc_lock_ref(m.last_node);
    let loaded = t.load_back(&m);
    let need = pages.len() as u64 - m.device_pages - loaded;
    assert!(t.alloc_device(need));
    t.insert(pages, need);
    t.dec_lock_ref(m.last_node);
    let mut recs = Vec::new();
    t.take_backups(&mut recs);
    for r in &recs {
        t.backup_acked(r);
    }
    (m.device_pages, loaded)
}

/// write_back, L1 4, L2 2. A [1,2] and B [3,4] fill the device; C [5,6] demotes A (the
/// LRU leaf) to host; A comes back (host hit 2, loaded after B is dropped: the host is
/// full and holds only A, pinned by its load). A is now on device *and* on host. D
/// [7,8] must evict C: its backup finds the host full.
/// - 0.5.23: `_reclaim_full_host_duplicates` frees A's host copy (pass 2: A is an
///   evictable device leaf), C is backed up and demoted — C is a host hit later.
/// - V1: `evict_host` sees no host-only leaf, the backup fails and C is dropped
///   without a host copy (`_drop_subtree_no_host`).
#[test]
fn write_back_reclaims_host_duplicates_in_0_5_23_only() {
    fn run<R: TreeRules>() -> (HiRadixTree<R>, (u64, u64)) {
        let mut t = tree::<R>(4, 2, WritePolicy::WriteBack);
        serve(&mut t, &[1, 2]);
        serve(&mut t, &[3, 4]);
        serve(&mut t, &[5, 6]);
        assert_eq!(serve(&mut t, &[1, 2]), (0, 2));
        serve(&mut t, &[7, 8]);
        let c = serve(&mut t, &[5, 6]);
        (t, c)
    }
    let (mut u, c_unified) = run::<Unified0523>();
    let (mut v, c_v1) = run::<V1>();
    assert_eq!(c_unified, (0, 2), "0.5.23: C comes back from host");
    assert_eq!(c_v1, (0, 0), "V1: C was dropped");
    // V1 drops B, then C. 0.5.23 drops B, then A (unbacked since its copy was
    // reclaimed) when C's load-back needs the device and the host holds only C.
    assert_eq!(v.stats.dropped_pages_without_backup, 4);
    assert_eq!(u.stats.dropped_pages_without_backup, 4);
    assert_eq!(u.match_prefix(&[1, 2]).matched_pages(), 0);
    assert_eq!(v.match_prefix(&[1, 2]).host_pages, 2);
}
