//! Hand-worked cases for 0.5.23's host-tier rules (`tree: unified_0_5_23`) against the
//! V1 tree, page size 1 (pages = tokens).

use hicache_sim::cache::{
    DeviceEvictAmount, HiRadixTree, TreeConfig, TreeKind, TreeRules, Unified0523, V1, WritePolicy,
};

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
    // The next scheduler iteration acks the load-back (`loading_check`).
    t.finish_load_backs();
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

/// 0.5.23's rules with the loaded copies reclaimable at once (the replay's rule before
/// `LOAD_BACK_PENDING`): the same tree otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct NoLoadBackPending;

impl TreeRules for NoLoadBackPending {
    const KIND: TreeKind = TreeKind::Unified0523;
    const SPLIT_REFRESH_TAIL: bool = true;
    const MATCH_STAMPS_PATH: bool = true;
    const DEVICE_EVICT: Option<DeviceEvictAmount> = Some(DeviceEvictAmount::Shortfall);
    const HIT_ON_UNEVICT: bool = true;
    const CHAIN_ANCESTOR_BACKUPS: bool = true;
    const RECLAIM_HOST_DUPLICATES: bool = true;
    const EVICT_HOST_SHORTFALL: bool = true;
    const LOAD_BACK_PENDING: bool = false;
    const INSERT_HOST_REFILL: bool = true;
    const TOUCH_BEFORE_SPLIT: bool = false;
    const WRITE_BACK_STAGES_BACKUPS: bool = false;
    const LOAD_BACK_EVICTS_WHOLE_LOAD: bool = false;
    const REMATCH_AFTER_INSERT: bool = false;
}

/// write_back, L1 4, L2 2 (page size 1). A [1,2], B [3,4] fill the device; C [5,6]
/// demotes A, the LRU leaf (host: A, 2 of 2). Then one request [1,2,7,8]:
/// - load-back of A (host hit 2): the device is full (B, C), the LRU leaf B must go;
///   its backup needs 2 host pages, the host holds only A, pinned by the load → B is
///   dropped (`_drop_subtree_no_host`); A loads (device: A, C);
/// - the extend [7,8] needs 2 more pages: the only unlocked leaf is C; its backup
///   again needs 2 host pages, and the only host copy is A's, loaded by this very
///   request.
///   0.5.23 (`commit_load_back` → `load_back_pending_id` until `finish_load_back` at
///   the next iteration): A's copy cannot be reclaimed, C is dropped too; A keeps its
///   host copy. Reclaimable at once: `_reclaim_full_host_duplicates` frees A's copy
///   (A is locked by the request, so not a device leaf: pass 1 takes it), C is backed
///   up and demoted.
/// A last request [5,6] then misses in 0.5.23 (0 device, 0 host) and is a host hit of
/// 2 pages without the pending rule.
#[test]
fn write_back_load_back_pins_its_host_copies_until_the_next_iteration() {
    /// (the request [1,2,7,8], pages dropped and host-resident pages after it, then
    /// the request [5,6]).
    fn run<R: TreeRules>() -> ((u64, u64), u64, u64, (u64, u64)) {
        let mut t = tree::<R>(4, 2, WritePolicy::WriteBack);
        serve(&mut t, &[1, 2]);
        serve(&mut t, &[3, 4]);
        serve(&mut t, &[5, 6]);
        let d = serve(&mut t, &[1, 2, 7, 8]);
        let dropped = t.stats.dropped_pages_without_backup;
        let host_device_resident = t.host_device_resident_pages();
        let c = serve(&mut t, &[5, 6]);
        (d, dropped, host_device_resident, c)
    }
    let (d, dropped, resident, c) = run::<Unified0523>();
    assert_eq!(d, (0, 2));
    // B and C dropped (2 + 2); A on device and on host.
    assert_eq!((dropped, resident), (4, 2));
    assert_eq!(c, (0, 0), "0.5.23: C was dropped");
    let (d, dropped, resident, c) = run::<NoLoadBackPending>();
    assert_eq!(d, (0, 2));
    // B alone dropped; A's host copy gone (the host holds C).
    assert_eq!((dropped, resident), (2, 0));
    assert_eq!(c, (0, 2), "reclaimable at once: C was demoted to host");
}

/// The what-if of sglang PR 39395 (`--hicache-serialize-load-back`): write_back, L1 4,
/// L2 4, page size 1. A [1,2] and its child B [3,4] are demoted to host (B by X [5,6],
/// then A by Y [7,8]): the host is full (A, B), the device holds X and Y. Then
/// [1,2,3,4], a host hit of 4 pages over two nodes:
/// - batched (every release): the whole span is allocated at once; both evictions (X,
///   then Y) need host room, the host holds only the pinned chain → X and Y are dropped
///   without a host copy (4 pages);
/// - per node: A's step drops X the same way, but A is acked at once and becomes a
///   reclaimable duplicate; B's step evicts Y, whose backup reclaims A's host copy
///   (`_reclaim_full_host_duplicates`) → Y is demoted, not dropped (2 pages dropped).
///
/// Y is then a host hit of 2 pages under the PR and a miss under the release: the
/// usable capacity the PR's description claims, in the smallest tree that shows it.
#[test]
fn serialized_load_back_reclaims_its_own_acked_nodes_instead_of_dropping() {
    fn run(serialize: bool) -> ((u64, u64), u64, (u64, u64)) {
        let mut t = HiRadixTree::<Unified0523>::new(TreeConfig {
            l1_pages: 4,
            l2_pages: 4,
            page_size: 1,
            write_policy: WritePolicy::WriteBack,
            load_back_threshold: 1,
            serialize_load_back: serialize,
            debug_checks: true,
            ..TreeConfig::default()
        });
        serve(&mut t, &[1, 2]);
        serve(&mut t, &[1, 2, 3, 4]);
        serve(&mut t, &[5, 6]);
        serve(&mut t, &[7, 8]);
        assert_eq!(t.match_prefix(&[1, 2, 3, 4]).host_pages, 4);
        let chain = serve(&mut t, &[1, 2, 3, 4]);
        let dropped = t.stats.dropped_pages_without_backup;
        let y = serve(&mut t, &[7, 8]);
        (chain, dropped, y)
    }
    assert_eq!(run(false), ((0, 4), 4, (0, 0)), "batched: X and Y dropped");
    assert_eq!(
        run(true),
        ((0, 4), 2, (0, 2)),
        "per node: Y demoted to host"
    );
}

/// A per-node load that runs out of room part-way keeps what it loaded: PR 39395's
/// steps before the failing one stay on the device (acked), and the request recomputes
/// (0 returned). Every device page here is locked but the chain's own: L1 4, a request
/// holding [9,10] locked, host chain A [1,2] → B [3,4]: A's step fits (2 free pages), B's
/// cannot (no unlocked device leaf), so the load returns 0 and A is a device hit later.
#[test]
fn serialized_load_back_keeps_the_steps_before_a_failure() {
    let mut t = HiRadixTree::<Unified0523>::new(TreeConfig {
        l1_pages: 4,
        l2_pages: 8,
        page_size: 1,
        write_policy: WritePolicy::WriteThrough,
        load_back_threshold: 1,
        serialize_load_back: true,
        debug_checks: true,
        ..TreeConfig::default()
    });
    serve(&mut t, &[1, 2]);
    serve(&mut t, &[1, 2, 3, 4]);
    // Evict the chain to host (write-through: both backed up).
    assert_eq!(t.evict(4), 4);
    // A request holds 2 device pages locked.
    assert!(t.alloc_device(2));
    t.insert(&[9, 10], 2);
    let held = t.match_prefix(&[9, 10]);
    t.inc_lock_ref(held.last_node);
    let m = t.match_prefix(&[1, 2, 3, 4]);
    assert_eq!((m.device_pages, m.host_pages), (0, 4));
    assert_eq!(t.load_back(&m), 0, "B's step finds no room");
    let after = t.match_prefix(&[1, 2, 3, 4]);
    assert_eq!((after.device_pages, after.host_pages), (2, 2), "A stayed");
    assert_eq!(t.stats.load_back_pages, 2);
}
