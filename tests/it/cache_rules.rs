//! Hand-worked cases, one per rule, with exact pages per tier. Page size 1 unless
//! stated, so pages = tokens and page ids are the numbers written.

use hicache_sim::cache::{EvictHostRule, EvictVersion, HiRadixTree, TreeConfig, V1, WritePolicy};

fn tree(l1: u64, l2: u64, wp: WritePolicy) -> HiRadixTree {
    HiRadixTree::<V1>::new(TreeConfig {
        l1_pages: l1,
        l2_pages: l2,
        page_size: 1,
        write_policy: wp,
        debug_checks: true,
        ..TreeConfig::default()
    })
}

/// One request as the untimed replay runs it: match, lock, load_back, allocate,
/// insert, release, instant D2H acks. Returns (device hit, host hit loaded).
fn serve(t: &mut HiRadixTree, pages: &[u64]) -> (u64, u64) {
    let m = t.match_prefix(pages);
    t.inc_lock_ref(m.last_node);
    let loaded = t.load_back(&m);
    if loaded == 0 {
        t.stats.load_back_skipped_pages += m.host_pages;
    }
    let on_dev = m.device_pages + loaded;
    let need = pages.len() as u64 - on_dev;
    assert!(
        t.alloc_device(need),
        "device allocation of {need} pages failed"
    );
    t.insert(pages, need);
    t.dec_lock_ref(m.last_node);
    let mut recs = Vec::new();
    t.take_backups(&mut recs);
    for r in &recs {
        t.backup_acked(r);
    }
    t.check();
    (m.device_pages, loaded)
}

#[test]
fn split_on_partial_match() {
    let mut t = tree(100, 100, WritePolicy::WriteThrough);
    serve(&mut t, &[1, 2, 3, 4]);
    assert_eq!(t.node_count(), 2); // root + [1,2,3,4]
    let m = t.match_prefix(&[1, 2, 9]);
    assert_eq!((m.device_pages, m.host_pages), (2, 0));
    assert_eq!(t.node_count(), 3); // [1,2] -> [3,4]
    assert_eq!(t.node(m.last_node).pages, vec![1, 2]);
    serve(&mut t, &[1, 2, 9]);
    assert_eq!(t.node_count(), 4);
    assert_eq!(t.device_used(), 5);
    // Backups split with the node: [1,2] and [3,4] stay backed, [9] is new and backed.
    assert_eq!(t.host_used(), 5);
    t.check();
}

#[test]
fn leaf_only_lru_eviction_order() {
    // No host: write_through backups fail (host pool of 0 pages).
    let mut t = tree(6, 0, WritePolicy::WriteThrough);
    serve(&mut t, &[1, 2, 3]); // [1,2,3]: backup fails (1)
    serve(&mut t, &[1, 2, 4, 5]); // split; [1,2] hit_count 2 -> backup fails (2);
    // new leaf [4,5]: parent [1,2] not backed -> write_backup returns 0, no failure.
    assert_eq!(t.stats.failed_backups, 2);
    assert_eq!(t.device_used(), 5);
    t.match_prefix(&[1, 2, 3]); // [3] is now more recent than [4,5]
    // evict(1) takes the whole LRU leaf [4,5] (2 pages), not its interior parent.
    assert_eq!(t.evict(1), 2);
    assert_eq!(t.match_prefix(&[1, 2, 4, 5]).device_pages, 2);
    assert_eq!(t.evict(1), 1); // [3]
    assert_eq!(t.evict(1), 2); // now [1,2] is a leaf
    assert_eq!(t.device_used(), 0);
    assert_eq!(t.node_count(), 1);
    assert_eq!(t.stats.device_evicted_pages, 5);
}

#[test]
fn write_through_vs_selective_vs_write_back() {
    let mut wt = tree(100, 100, WritePolicy::WriteThrough);
    let mut sel = tree(100, 100, WritePolicy::WriteThroughSelective);
    let mut wb = tree(100, 100, WritePolicy::WriteBack);
    for t in [&mut wt, &mut sel, &mut wb] {
        serve(t, &[1, 2, 3]);
    }
    assert_eq!(wt.host_used(), 3);
    assert_eq!(sel.host_used(), 0);
    assert_eq!(wb.host_used(), 0);
    for t in [&mut wt, &mut sel, &mut wb] {
        serve(t, &[1, 2, 3]);
    }
    assert_eq!(wt.stats.backup_pages, 3);
    assert_eq!(sel.stats.backup_pages, 3); // second touch: hit_count 2
    assert_eq!(wb.stats.backup_pages, 0);
    // write_back backs up at device eviction and demotes the node.
    assert_eq!(wb.evict(3), 3);
    assert_eq!(wb.stats.backup_pages, 3);
    assert_eq!((wb.device_used(), wb.host_used()), (0, 3));
    assert_eq!(wb.host_only_pages(), 3);
    // 3 tokens < load_back_threshold (10): not loaded back, recomputed instead; the
    // recomputed node is on device again and keeps its host copy.
    assert_eq!(serve(&mut wb, &[1, 2, 3]), (0, 0));
    assert_eq!(wb.stats.load_back_skipped_pages, 3);
    assert_eq!(wb.stats.load_back_pages, 0);
    assert_eq!(wb.host_device_resident_pages(), 3);
    // 10 tokens load back.
    let ten: Vec<u64> = (20..30).collect();
    serve(&mut wb, &ten);
    // evict(10) pops whole leaves until 10 pages: [1,2,3] (LRU, 3) then the ten.
    assert_eq!(wb.evict(10), 13);
    assert_eq!(serve(&mut wb, &ten), (0, 10));
    assert_eq!(wb.stats.load_back_pages, 10);
}

#[test]
fn evict_host_skips_device_resident_copies() {
    let mut t = tree(4, 4, WritePolicy::WriteThrough);
    serve(&mut t, &[1, 2]); // A, backed
    serve(&mut t, &[3, 4]); // B, backed; host full
    t.match_prefix(&[3, 4]);
    assert_eq!(t.evict(1), 2); // A demoted to host-only
    assert_eq!(
        (t.host_device_resident_pages(), t.host_only_pages()),
        (2, 2)
    );
    serve(&mut t, &[5, 6]); // C: backup needs 2 -> evict_host frees A (host-only)
    assert_eq!(t.stats.failed_backups, 0);
    assert_eq!(t.stats.host_evicted_pages, 2);
    assert_eq!(t.match_prefix(&[1, 2]).matched_pages(), 0); // A gone from both tiers
    assert_eq!(
        (t.host_device_resident_pages(), t.host_only_pages()),
        (4, 0)
    );
    // D: device full -> evict(2) demotes B (LRU); backup of D -> evict_host frees B.
    serve(&mut t, &[7, 8]);
    assert_eq!(t.stats.failed_backups, 0);
    assert_eq!(t.stats.host_evicted_pages, 4);
    assert_eq!(t.host_device_resident_pages(), 4); // C and D
}

#[test]
fn full_host_of_device_resident_backups_fails_backup() {
    let mut t = tree(4, 2, WritePolicy::WriteThrough);
    serve(&mut t, &[1, 2]); // A backed; host full of a device-resident copy
    serve(&mut t, &[3, 4]); // B: evict_host finds nothing -> failed, B device-only
    assert_eq!(t.stats.failed_backups, 1);
    assert_eq!(t.host_used(), 2);
    assert_eq!(t.stats.host_evicted_pages, 0);
    // Evicting B (unbacked) deletes it outright: no host copy to fall back to.
    t.match_prefix(&[1, 2]);
    assert_eq!(t.evict(1), 2);
    assert_eq!(t.match_prefix(&[3, 4]).matched_pages(), 0);

    // #16909 what-if: the host copy of device-resident A is reclaimed instead.
    let mut r = HiRadixTree::<V1>::new(TreeConfig {
        l1_pages: 4,
        l2_pages: 2,
        page_size: 1,
        evict_host_rule: EvictHostRule::ReclaimDeviceResident,
        debug_checks: true,
        ..TreeConfig::default()
    });
    serve(&mut r, &[1, 2]);
    serve(&mut r, &[3, 4]);
    assert_eq!(r.stats.failed_backups, 0);
    assert_eq!(r.stats.host_evicted_pages, 2);
    let a = r.match_prefix(&[1, 2]).last_node;
    assert!(!r.node(a).backed_up && r.node(a).on_device);
    let b = r.match_prefix(&[3, 4]).last_node;
    assert!(r.node(b).backed_up);
}

#[test]
fn boundary_rule_demotes_unbacked_leaf() {
    // write_through with a host of 2: A is backed, B fails. Under boundary_l1_l2,
    // B's backup reclaims A's duplicate host copy; evicting A later re-backs it.
    let mut t = HiRadixTree::<V1>::new(TreeConfig {
        l1_pages: 4,
        l2_pages: 2,
        page_size: 1,
        evict_host_rule: EvictHostRule::BoundaryL1L2,
        debug_checks: true,
        ..TreeConfig::default()
    });
    serve(&mut t, &[1, 2]);
    serve(&mut t, &[3, 4]);
    assert_eq!(t.stats.failed_backups, 0);
    let b = t.match_prefix(&[3, 4]).last_node;
    assert!(t.node(b).backed_up);
    // C: device full; A ([1,2], unbacked, LRU) is demoted rather than deleted: its
    // backup reclaims B's duplicate copy. Then C's own write-through backup needs the
    // host: no duplicate is left, so the host-only A goes.
    serve(&mut t, &[5, 6]);
    assert_eq!(t.stats.failed_backups, 0);
    assert_eq!(t.stats.host_evicted_pages, 6); // A dup, B dup, A host-only
    assert_eq!(t.match_prefix(&[1, 2]).matched_pages(), 0);
    let b = t.match_prefix(&[3, 4]).last_node;
    assert!(t.node(b).on_device && !t.node(b).backed_up);
    let c = t.match_prefix(&[5, 6]).last_node;
    assert!(t.node(c).on_device && t.node(c).backed_up);
}

#[test]
fn write_back_drops_subtree_without_backup_v1_and_frees_nothing_v0() {
    for (version, dropped, failed) in [(EvictVersion::V1, 2, 1), (EvictVersion::V0, 0, 2)] {
        let mut t = HiRadixTree::<V1>::new(TreeConfig {
            l1_pages: 4,
            l2_pages: 1,
            page_size: 1,
            write_policy: WritePolicy::WriteBack,
            evict_version: version,
            debug_checks: true,
            ..TreeConfig::default()
        });
        serve(&mut t, &[1, 2]);
        serve(&mut t, &[3, 4]);
        let m = t.match_prefix(&[5, 6]);
        assert_eq!(m.matched_pages(), 0);
        let ok = t.alloc_device(2);
        // V1: A cannot be backed up (2 pages > 1-page host) -> dropped, 2 pages free.
        // V0: the failed write frees nothing, and neither does B's -> allocation fails.
        assert_eq!(ok, version == EvictVersion::V1);
        assert_eq!(t.stats.dropped_pages_without_backup, dropped);
        assert_eq!(t.stats.failed_backups, failed);
        // V1: B plus the 2 reserved pages; V0: A and B still there.
        assert_eq!(t.device_used(), 4);
        t.check();
    }
}
