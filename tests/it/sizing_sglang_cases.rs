//! SGLang's own unit-test cases (`test_mem_pool_host.py`, `test_hicache_auto_size.py`,
//! the explicit-size snapshot) with the same
//! inputs and exact expected numbers, plus argument resolution, versions and the
//! prefetch capacity rules.

use hicache_sim::model::{Attention, KvDtype, ParallelLayout, device_pool_bytes};
use hicache_sim::sizing::*;
use hicache_sim::units::GIB;

const GIB_I: i128 = GIB as i128;

/// The `test_mem_pool_host.py` / `test_hicache_auto_size.py` device pool: MHA, fp16, 2 KV heads, head_dim 4, 2 layers.
fn mha_bytes_per_token() -> u64 {
    Attention::Gqa {
        kv_heads: 2,
        head_dim: 4,
        v_head_dim: None,
    }
    .host_pools(2, &ParallelLayout::default(), KvDtype::Fp16)[0]
        .bytes_per_token
}

// ---- test_mem_pool_host.py ----

#[test]
fn s7_1_host_kv_cache_geometry() {
    assert_eq!(mha_bytes_per_token(), 64);
    // size 4, ratio 2.0 → int(8) → page_num 8//2+1 = 5 → 10 tokens.
    let p = host_pool_size(4, HostPoolSizeArg::Ratio(2.0), 2, 64);
    assert_eq!(p.page_num, 5);
    assert_eq!(p.tokens, 10);
    assert_eq!(p.requested_bytes, 640);
}

#[test]
fn s7_1_host_memory_budget() {
    let available = 10 * GIB_I + 64 * GIB_I;
    let b4 = host_memory_budget_bytes(available, 4, BudgetSplit::PerRank);
    assert_eq!(b4, 16 * GIB_I);
    assert_eq!(b4, 17_179_869_184);
    let b1 = host_memory_budget_bytes(available, 1, BudgetSplit::PerRank);
    assert_eq!(b4, b1 / 4);
    let b8 = host_memory_budget_bytes(available, 8, BudgetSplit::PerRank);
    assert_eq!(b8, 8 * GIB_I);
    assert!(b8 * 8 <= available - HICACHE_HOST_MEMORY_RESERVE_BYTES);
    assert_eq!(ranks_per_host(16, 2), 8);
    assert_eq!(ranks_per_host(1, 2), 1);
    assert_eq!(ranks_per_host(4, 8), 1);
    assert_eq!(
        ParallelLayout {
            tp_size: 8,
            pp_size: 2,
            nnodes: 2,
            ..Default::default()
        }
        .ranks_per_host(),
        8
    );
    // V0/V1: not split.
    assert_eq!(
        host_memory_budget_bytes(available, 8, BudgetSplit::Whole),
        64 * GIB_I
    );
}

#[test]
fn negative_budget_floors_and_keeps_its_sign() {
    let b = host_memory_budget_bytes(10 * GIB_I - 2_000_000_000, 4, BudgetSplit::PerRank);
    assert_eq!(b, -500_000_000);
    assert_eq!(
        refusal_message(1_000_000_000, b),
        "Not enough host memory available. Requesting 1.00 GB but only have -0.50 GB free. Please reduce the size of the hierarchical cache."
    );
    // Python floor division of -1 by 4 is -1, not 0.
    assert_eq!(
        host_memory_budget_bytes(10 * GIB_I - 1, 4, BudgetSplit::PerRank),
        -1
    );
    assert_eq!(whole_headroom_budget(10 * GIB_I - 1), 0);
}

// ---- test_hicache_auto_size.py (first version) ----

#[test]
fn s7_2_auto_size_end_to_end() {
    let bpt = mha_bytes_per_token();
    let device_bytes = device_pool_bytes(128, 2, bpt);
    assert_eq!(device_bytes, 8_320);
    let host_free = 10 * GIB_I + 4 * 10_000;
    let share = host_memory_budget_bytes(host_free, 4, BudgetSplit::PerRank);
    assert_eq!(share, 10_000);
    let args = resolve_hicache_args(&HicacheArgs::default()).unwrap();
    assert_eq!(args.fraction, Some(0.8));
    assert_eq!(args.ratio, Some(2.0));
    let budget = auto_size_budget(share, args.fraction.unwrap());
    assert_eq!(budget, 8_000);
    let ratio = auto_size_ratio(args.ratio.unwrap(), budget, device_bytes);
    assert_eq!(ratio, 8_000.0 * 0.95 / 8_320.0);
    assert!((ratio - 0.913462).abs() < 1e-6);
    assert!(ratio < 2.0);
    let plan = auto_size_hicache(share, 0.8, 2.0, device_bytes).unwrap();
    assert_eq!(plan, AutoSizePlan { budget, ratio });
    // host size int(128 * 0.913…) = 116 → 59 pages → 118 tokens × 64 B = 7,552 B.
    let p = host_pool_size(128, HostPoolSizeArg::Ratio(ratio), 2, bpt);
    assert_eq!((p.page_num, p.tokens, p.requested_bytes), (59, 118, 7_552));
    assert!(p.requested_bytes as f64 <= 0.8 * 10_000.0);
    let mut scope = BudgetScope::new(budget);
    assert_eq!(scope.book(p.requested_bytes), Ok(()));
    assert_eq!(scope.remaining(), 448);
    // A second identical pool is refused against the 448 B left.
    let refused = scope.admit(p.requested_bytes).unwrap_err();
    assert_eq!(refused.budget, 448);
    assert_eq!(
        refused.to_string(),
        "Not enough host memory available. Requesting 0.00 GB but only have 0.00 GB free. Please reduce the size of the hierarchical cache."
    );
    assert_eq!(scope.remaining(), 448, "a refusal books nothing");
    // An explicit ratio resolves the fraction to None.
    let explicit = resolve_hicache_args(&HicacheArgs {
        ratio: Some(2.0),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(explicit.fraction, None);
    assert!(explicit.is_explicit());
    assert!(explicit.fraction_note.is_some());
}

#[test]
fn auto_size_ratio_capped_by_default_and_errors_at_zero() {
    assert_eq!(auto_size_ratio(2.0, 1 << 40, 8_320), 2.0);
    assert_eq!(auto_size_ratio(1.2, 1 << 40, 8_320), 1.2);
    // No floor below 1: host smaller than device is legal since #28614.
    assert!(auto_size_hicache(1_000, 0.8, 2.0, 8_320).unwrap().ratio < 0.1);
    let e = auto_size_hicache(-5, 0.8, 2.0, 8_320).unwrap_err();
    assert!(
        e.to_string()
            .contains("set --hicache-ratio or --hicache-size")
    );
    assert_eq!(check_auto_size_ratio(0.0), Err(AutoSizeError::NoHostMemory));
}

// ---- test_hicache_auto_size.py, newest version: auto-HiCache ----

#[test]
fn s7_2_auto_hicache_ratio() {
    let bpt = mha_bytes_per_token();
    let d = device_pool_bytes(65_536, 2, bpt);
    assert_eq!(d, 4_194_432);
    // _plan(budget): ranks 1, host_free = 10 GiB + budget.
    let share = |b: i128| host_memory_budget_bytes(10 * GIB_I + b, 1, BudgetSplit::PerRank);
    let budget_for = |r: f64| (r * d as f64 / 0.95 / 0.8) as i128;
    let p = auto_hicache_ratio(share(budget_for(3.5)), 0.8, d).unwrap();
    assert!((p.ratio - 3.5).abs() < 0.005, "{}", p.ratio);
    let p = auto_hicache_ratio(share(budget_for(20.0)), 0.8, d).unwrap();
    assert_eq!(p.ratio, 8.0);
    let low = (1.2 * d as f64 / 0.8) as i128;
    let why = auto_hicache_ratio(share(low), 0.8, d)
        .unwrap_err()
        .to_string();
    assert!(why.contains("minimum"), "{why}");
    assert_eq!(
        why,
        "0.0 GiB of host memory per rank holds only 1.14x the 0.0 GiB device cache (minimum 1.5x)"
    );
    // Halving on pin failure: 8 → 4 → 2 → off.
    assert_eq!(auto_hicache_halve_on_pin_failure(8.0), Some(4.0));
    assert_eq!(auto_hicache_halve_on_pin_failure(4.0), Some(2.0));
    assert_eq!(auto_hicache_halve_on_pin_failure(2.0), None);
}

// ---- explicit-size snapshot ----

#[test]
fn s7_4_explicit_snapshot() {
    let bpt = mha_bytes_per_token();
    let pool = host_pool_size(128, HostPoolSizeArg::Ratio(2.0), 2, bpt);
    assert_eq!(pool.tokens, 258);
    assert_eq!(pool.requested_bytes, 16_512);
    let whole_host = 10 * GIB_I + py_int(4.0 * 16_512.0 * 1.2);
    assert_eq!(whole_host, 10 * GIB_I + 79_257);
    let after_peers = whole_host - 3 * 16_512;
    assert_eq!(after_peers, 10 * GIB_I + 29_721);
    // Live sampling (the bug): 29,721 // 4 = 7,430 < 16,512 → refused.
    let live = host_memory_budget_bytes(after_peers, 4, BudgetSplit::PerRank);
    assert_eq!(live, 7_430);
    let e = guard(pool.requested_bytes, live).unwrap_err();
    assert!(e.to_string().starts_with("Not enough host memory"));
    // Shared snapshot taken before any peer pinned: 79,257 // 4 = 19,814 → builds.
    let snap = host_memory_budget_bytes(whole_host, 4, BudgetSplit::PerRank);
    assert_eq!(snap, 19_814);
    let agreed = explicit_snapshot_budget(&[snap, snap, snap, snap]).unwrap();
    let mut scope = BudgetScope::new(agreed);
    assert!(scope.admit(pool.requested_bytes).is_ok());
    assert_eq!(scope.remaining(), 19_814 - 16_512);
    // A peer that sampled 1: the MIN is 1 and the build is refused.
    let agreed = explicit_snapshot_budget(&[snap, 1, snap, snap]).unwrap();
    assert_eq!(agreed, 1);
    assert!(
        BudgetScope::new(agreed)
            .admit(pool.requested_bytes)
            .is_err()
    );
}

// ---- arguments ----

#[test]
fn argument_resolution() {
    let bad = resolve_hicache_args(&HicacheArgs {
        fraction: Some(0.0),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        bad.to_string(),
        "--hicache-host-memory-fraction must be in (0, 1]."
    );
    assert!(
        resolve_hicache_args(&HicacheArgs {
            fraction: Some(1.5),
            ..Default::default()
        })
        .is_err()
    );
    assert!(
        resolve_hicache_args(&HicacheArgs {
            fraction: Some(1.0),
            ..Default::default()
        })
        .is_ok()
    );
    let bo = HicacheArgs {
        mode: HostMemoryMode::BufferOnly,
        storage_backend: true,
        ..Default::default()
    };
    assert_eq!(resolve_hicache_args(&bo).unwrap().ratio, Some(1.2));
    assert!(
        resolve_hicache_args(&HicacheArgs {
            storage_backend: false,
            ..bo.clone()
        })
        .unwrap_err()
        .to_string()
        .contains("--hicache-storage-backend")
    );
    assert!(
        resolve_hicache_args(&HicacheArgs {
            write_back: true,
            ..bo.clone()
        })
        .unwrap_err()
        .to_string()
        .contains("write_back")
    );
    let sized = resolve_hicache_args(&HicacheArgs {
        size_gb: 135.0,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(sized.fraction, None);
    assert!(sized.is_explicit());
    assert!(sized.fraction_note.unwrap().contains("--hicache-size"));
    // Only a decode server may leave the pool unsized.
    let decode = resolve_hicache_args(&HicacheArgs {
        is_decode: true,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(decode.ratio, None);
}

// ---- versions ----

#[test]
fn versions_ids_roundtrip_and_unknown_lists_ids() {
    for v in SglangVersion::ALL {
        assert_eq!(SglangVersion::from_id(v.id()).unwrap(), v);
        assert!(!v.summary().is_empty());
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(json, format!("\"{}\"", v.id()));
    }
    assert_eq!(
        SglangVersion::from_id("v2").unwrap(),
        SglangVersion::Pr35540
    );
    assert_eq!(
        SglangVersion::from_id("#40135").unwrap(),
        SglangVersion::Pr40135
    );
    let e = SglangVersion::from_id("pr4135").unwrap_err().to_string();
    assert!(e.contains("pre-28614") && e.contains("auto-hicache"), "{e}");
    assert!(e.contains("did you mean `pr40135`"), "{e}");
}

#[test]
fn version_rules_table() {
    use SglangVersion as V;
    let r = V::Pre28614.rules();
    assert_eq!(r.available, AvailableReading::PsutilOnly);
    assert_eq!(r.budget_split, BudgetSplit::Whole);
    assert_eq!(r.small_host, SmallHostRule::AssertLarger);
    assert_eq!(r.prefetch_cap, PrefetchCapRule::ExcessOverDevice);
    assert_eq!(V::Pr28614.rules().small_host, SmallHostRule::Warn);
    assert_eq!(V::Pr35540.rules().budget_split, BudgetSplit::PerRank);
    assert_eq!(V::Pr35540.rules().available, AvailableReading::PsutilOnly);
    let r = V::Pr40135.rules();
    assert_eq!(
        r.available,
        AvailableReading::CgroupMin(HeadroomVariant::Raw)
    );
    assert_eq!(r.explicit_path, ExplicitPath::LivePerPool);
    assert_eq!(r.auto_size, AutoSizeRule::Pr40135);
    assert_eq!(
        V::Pr40135WholeHeadroom.rules().explicit_path,
        ExplicitPath::LiveWholeHeadroom
    );
    assert_eq!(
        V::PageCacheCredit.rules().available,
        AvailableReading::CgroupMin(HeadroomVariant::ActiveInactiveCredit)
    );
    assert_eq!(
        V::PageCacheCreditClean.rules().available,
        AvailableReading::CgroupMin(HeadroomVariant::CleanCredit)
    );
    assert_eq!(
        V::ExplicitSnapshot.rules().explicit_path,
        ExplicitPath::SnapshotMinAllReduce
    );
    let r = V::AutoHicache.rules();
    assert_eq!(r.auto_size, AutoSizeRule::AutoHicache);
    assert!(r.allow_cgroup_fallback);
    assert_eq!(r.explicit_path, ExplicitPath::LivePerPool);
    assert!(V::PageCacheCredit.rules().allow_cgroup_fallback);
    assert!(!V::PageCacheCreditClean.rules().allow_cgroup_fallback);
    assert!(!V::Pr40135.rules().allow_cgroup_fallback);
}

#[test]
fn small_host_and_prefetch_rules() {
    assert_eq!(
        check_small_host(SmallHostRule::Warn, 10, 4),
        SmallHostCheck::Ok
    );
    assert!(matches!(
        check_small_host(SmallHostRule::AssertLarger, 4, 4),
        SmallHostCheck::AssertionFailed(_)
    ));
    assert!(matches!(
        check_small_host(SmallHostRule::Warn, 3, 4),
        SmallHostCheck::Warning
    ));
    // host 1000, device 600.
    assert_eq!(
        prefetch_capacity_limit(PrefetchCapRule::ExcessOverDevice, 1000, 600, false),
        320
    );
    assert_eq!(
        prefetch_capacity_limit(PrefetchCapRule::ExcessOverDevice, 500, 600, false),
        0
    );
    assert_eq!(
        prefetch_capacity_limit(PrefetchCapRule::HalfHost, 1000, 600, false),
        500
    );
    assert_eq!(
        prefetch_capacity_limit(PrefetchCapRule::HalfHost, 1000, 600, true),
        900
    );
    assert_eq!(
        prefetch_capacity_limit(PrefetchCapRule::Pr16909Proposal, 1000, 600, false),
        320
    );
    assert_eq!(
        prefetch_capacity_limit(PrefetchCapRule::Pr16909Proposal, 500, 600, false),
        250
    );
}

#[test]
fn indexer_pool_has_its_own_refusal_text() {
    assert_eq!(
        refusal_message_for("indexer", 2_500_000_000, 1_000_000_000),
        "Not enough host memory for DSA indexer hierarchical cache. Requesting 2.50 GB but only have 1.00 GB free."
    );
    assert_eq!(
        refusal_message_for("kv", 2_500_000_000, 1_000_000_000),
        refusal_message(2_500_000_000, 1_000_000_000)
    );
}
