//! The incident figures (the bundled `scenarios/`) and hand-computed `HostMemory` cases.

use hicache_sim::hardware::*;
use hicache_sim::model::{
    DevicePoolInputs, KvDtype, ParallelLayout, device_pool_tokens, model_preset,
};
use hicache_sim::sizing::*;
use hicache_sim::units::{GB, GIB, fmt_gb};

const G: u64 = GB;

/// GB300 tray of incident B: job cgroup memory.max = 900 GB, four ranks with 15 GB of
/// process memory each, a 420 GB checkpoint read through the page cache; 10 GB used on
/// the host outside the job, so psutil sees 890 GB.
fn gb300_tray() -> (HostMemory, CgroupId, [CgroupId; 4]) {
    let mut m = HostMemory::new(CgroupVersion::V2, 960 * G);
    m.other_used = 10 * G;
    let job = m
        .add_cgroup(m.root(), "job", CgroupLimits::max(900 * G))
        .unwrap();
    let ranks = [0, 1, 2, 3].map(|i| {
        m.add_cgroup(job, &format!("rank{i}"), CgroupLimits::default())
            .unwrap()
    });
    for r in ranks {
        m.charge(r, ChargeKind::Anon, 15 * G).unwrap();
    }
    m.charge(job, ChargeKind::PageCache, 420 * G).unwrap();
    (m, job, ranks)
}

fn budget(m: &HostMemory, cg: CgroupId, v: SglangVersion) -> i128 {
    let rules = v.rules();
    let avail = available_host_memory_bytes(
        &m.snapshot(cg),
        rules.available,
        rules.allow_cgroup_fallback,
    )
    .unwrap();
    host_memory_budget_bytes(avail, 4, rules.budget_split)
}

#[test]
fn glm52_hicache_size_135() {
    let bpt = model_preset("glm-5.2")
        .unwrap()
        .host_pools(&ParallelLayout::tp(4), KvDtype::Fp8)[0]
        .bytes_per_token;
    assert_eq!(bpt, 44_928);
    let p = host_pool_size(0, HostPoolSizeArg::SizeGb(135.0), 64, bpt);
    assert_eq!(p.page_num, 46_951);
    assert_eq!(p.tokens, 46_951 * 64);
    assert_eq!(p.requested_bytes, 135_002_529_792);
    assert_eq!(fmt_gb(p.requested_bytes as i128), "135.00");
}

#[test]
fn gb300_135gb_refusal() {
    let (mut m, job, ranks) = gb300_tray();
    assert_eq!(m.usage(job), 480 * G);
    assert_eq!(m.psutil_available(), 890 * G);
    let req = host_pool_size(0, HostPoolSizeArg::SizeGb(135.0), 64, 44_928).requested_bytes;

    // #40135: page cache counted as used → (420 GB − 10 GiB) // 4 = 102.32 GB: refused.
    let b = budget(&m, ranks[0], SglangVersion::Pr40135);
    assert_eq!(b, ((420 * G - 10 * GIB) / 4) as i128);
    assert_eq!(fmt_gb(b), "102.32");
    assert_eq!(
        guard(req, b).unwrap_err().to_string(),
        "Not enough host memory available. Requesting 135.00 GB but only have 102.32 GB free. Please reduce the size of the hierarchical cache."
    );
    // Page-cache credit: (840 GB − 10 GiB) // 4 = 207.32 GB: all start.
    for v in [
        SglangVersion::PageCacheCredit,
        SglangVersion::PageCacheCreditClean,
        SglangVersion::ExplicitSnapshot,
    ] {
        let b = budget(&m, ranks[0], v);
        assert_eq!(fmt_gb(b), "207.32", "{v}");
        assert!(guard(req, b).is_ok());
    }
    // Older image (#35540): psutil counts the cache as available: (890 GB − 10 GiB) // 4.
    let b = budget(&m, ranks[0], SglangVersion::Pr35540);
    assert_eq!(fmt_gb(b), "219.82");

    // With 60 GB of the cache already reclaimed: 117.32 GB, still refused.
    let mut aged = m.clone();
    assert_eq!(aged.drop_page_cache(job, 60 * G), 60 * G);
    let b = budget(&aged, ranks[0], SglangVersion::Pr40135);
    assert_eq!(fmt_gb(b), "117.32");
    assert!(guard(req, b).is_err());

    // Pinning 4 × 135 GB (cudaHostRegister: anon) makes the kernel reclaim 120 GB of
    // cache, no OOM kill.
    let mut reclaimed = 0;
    for r in ranks {
        reclaimed += m.charge(r, ChargeKind::Anon, 135 * G).unwrap().reclaimed;
    }
    assert_eq!(reclaimed, 120 * G);
    assert_eq!(m.usage(job), 900 * G);
    assert_eq!(m.charges(job).clean_cache(), 300 * G);
    // Beyond: 300 GB of cache left, so 301 GB more is an OOM kill in the job cgroup.
    let oom = m.charge(ranks[0], ChargeKind::Anon, 301 * G).unwrap_err();
    assert_eq!(oom.cgroup, Some(job));
    assert!(oom.to_string().contains("/job"), "{oom}");
    assert_eq!(
        m.charges(job).clean_cache(),
        0,
        "the kernel reclaimed all it could"
    );
}

#[test]
fn gb300_older_image_race() {
    // #35540: a rank sampling after three peers pinned 135 GB sees (485 GB − 10 GiB) // 4.
    let (mut m, _job, ranks) = gb300_tray();
    for r in &ranks[..3] {
        let out = m.charge(*r, ChargeKind::Anon, 135 * G).unwrap();
        assert_eq!(out.reclaimed, 0);
    }
    assert_eq!(m.psutil_available(), 485 * G);
    let b = budget(&m, ranks[3], SglangVersion::Pr35540);
    assert_eq!(fmt_gb(b), "118.57");
    let req = host_pool_size(0, HostPoolSizeArg::SizeGb(135.0), 64, 44_928).requested_bytes;
    assert!(guard(req, b).is_err());
}

#[test]
fn startup_race_8_gpus() {
    // Incident A: 8 ranks, pools printing 24.77 GB; headroom − 10 GiB = 206.69 GB when
    // the first rank samples, 181.92 GB after one peer pinned.
    let pool: u64 = 24_770_000_000;
    let first = (206_690_000_000 + 10 * GIB) as i128;
    let b = host_memory_budget_bytes(first, 8, BudgetSplit::PerRank);
    assert_eq!(fmt_gb(b), "25.84");
    assert!(guard(pool, b).is_ok());
    let after_one = first - pool as i128;
    assert_eq!(
        after_one - HICACHE_HOST_MEMORY_RESERVE_BYTES,
        181_920_000_000
    );
    let b = host_memory_budget_bytes(after_one, 8, BudgetSplit::PerRank);
    assert_eq!(fmt_gb(b), "22.74");
    let e = guard(pool, b).unwrap_err().to_string();
    assert!(
        e.contains("Requesting 24.77 GB but only have 22.74 GB free"),
        "{e}"
    );
    // All eight fit: 8 × 24.77 = 198.16 ≤ 206.69.
    assert_eq!(fmt_gb(8 * pool as i128), "198.16");
    // The whole-headroom layer admits every rank whatever the order.
    for k in 0..8 {
        let live = first - k * pool as i128;
        assert!(guard(pool, whole_headroom_budget(live)).is_ok(), "peer {k}");
    }
    // The snapshot fix: every rank samples before pinning, MIN agrees, pools book.
    let snap = host_memory_budget_bytes(first, 8, BudgetSplit::PerRank);
    let mut scope = BudgetScope::new(explicit_snapshot_budget(&[snap; 8]).unwrap());
    assert!(scope.admit(pool).is_ok());
}

#[test]
fn psutil_counts_clean_cache_not_shmem_or_anon() {
    let mut m = HostMemory::new(CgroupVersion::V2, 1000);
    m.other_used = 100;
    let cg = m
        .add_cgroup(m.root(), "job", CgroupLimits::default())
        .unwrap();
    m.charge(cg, ChargeKind::PageCache, 300).unwrap();
    assert_eq!(m.psutil_available(), 900);
    m.charge(cg, ChargeKind::Shmem, 200).unwrap();
    m.charge(cg, ChargeKind::Anon, 50).unwrap();
    assert_eq!(m.psutil_available(), 650);
    assert_eq!(m.mem_free(), 350);
    let s = m.stat(cg);
    assert_eq!(
        (s.file, s.shmem, s.inactive_file, s.anon),
        (500, 200, 300, 50)
    );
    // Low watermark term: min(pagecache/2, wmark_low).
    m.low_watermark = 40;
    assert_eq!(m.psutil_available(), 610);
}

#[test]
fn reclaim_order_protection_and_host_oom() {
    let mut m = HostMemory::new(CgroupVersion::V2, 10_000);
    let job = m
        .add_cgroup(m.root(), "job", CgroupLimits::max(1000))
        .unwrap();
    let a = m.add_cgroup(job, "a", CgroupLimits::default()).unwrap();
    let b = m.add_cgroup(job, "b", CgroupLimits::default()).unwrap();
    m.charge(a, ChargeKind::PageCache, 300).unwrap();
    m.charge(a, ChargeKind::PageCacheActive, 300).unwrap();
    m.charge(b, ChargeKind::PageCacheDirty, 100).unwrap();
    // 700 used; 500 anon needs 200 reclaimed: inactive first.
    let out = m.charge(b, ChargeKind::Anon, 500).unwrap();
    assert_eq!(out.reclaimed, 200);
    assert_eq!(m.own_charges(a).inactive_clean, 100);
    assert_eq!(m.own_charges(a).active_clean, 300);
    // 300 more: 100 inactive then 200 active.
    assert_eq!(m.charge(b, ChargeKind::Shmem, 300).unwrap().reclaimed, 300);
    assert_eq!(m.own_charges(a).active_clean, 100);
    // Dirty pages are not reclaimable: 100 clean left, 200 asked → OOM, cache gone.
    let oom = m.charge(b, ChargeKind::Anon, 200).unwrap_err();
    assert_eq!(oom.cgroup, Some(job));
    assert_eq!(oom.reclaimed, 100);
    assert_eq!(m.usage(job), 900);
    // Writeback done: dirty becomes clean and can be reclaimed.
    assert_eq!(m.clean_page_cache(b, 100), 100);
    assert!(m.charge(b, ChargeKind::Anon, 200).is_ok());
    // memory.min protects a's cache from reclaim rooted at the job.
    let mut m = HostMemory::new(CgroupVersion::V2, 10_000);
    let job = m
        .add_cgroup(m.root(), "job", CgroupLimits::max(1000))
        .unwrap();
    let a = m
        .add_cgroup(
            job,
            "a",
            CgroupLimits {
                min: 400,
                ..Default::default()
            },
        )
        .unwrap();
    let b = m.add_cgroup(job, "b", CgroupLimits::default()).unwrap();
    m.charge(a, ChargeKind::PageCache, 600).unwrap();
    assert_eq!(m.charge(b, ChargeKind::Anon, 600).unwrap().reclaimed, 200);
    assert!(m.charge(b, ChargeKind::Anon, 1).is_err());
    assert_eq!(m.usage(a), 400);
    // Host RAM: reclaims cache outside the cgroups first, then a host OOM.
    let mut m = HostMemory::new(CgroupVersion::V2, 1000);
    m.other_cache = 300;
    let cg = m
        .add_cgroup(m.root(), "job", CgroupLimits::default())
        .unwrap();
    m.charge(cg, ChargeKind::Anon, 600).unwrap();
    assert_eq!(m.charge(cg, ChargeKind::Anon, 200).unwrap().reclaimed, 100);
    assert_eq!(m.other_cache, 200);
    let oom = m.charge(cg, ChargeKind::Anon, 500).unwrap_err();
    assert_eq!(oom.cgroup, None);
    assert_eq!(oom.where_, "host");
    // uncharge returns what was freed.
    assert_eq!(m.uncharge(cg, ChargeKind::Anon, 10_000), 800);
    assert_eq!(m.usage(cg), 0);
}

#[test]
fn memory_high_reclaims_without_oom_and_v1_snapshot() {
    let mut m = HostMemory::new(CgroupVersion::V2, 10_000);
    let job = m
        .add_cgroup(
            m.root(),
            "job",
            CgroupLimits {
                high: Some(500),
                ..Default::default()
            },
        )
        .unwrap();
    m.charge(job, ChargeKind::PageCache, 400).unwrap();
    assert_eq!(m.charge(job, ChargeKind::Anon, 300).unwrap().reclaimed, 200);
    assert!(
        m.charge(job, ChargeKind::Anon, 1000).is_ok(),
        "memory.high never kills"
    );
    // v1: unlimited reads as the sentinel; stat carries total_* values.
    let mut m = HostMemory::new(CgroupVersion::V1, 10_000);
    let job = m
        .add_cgroup(m.root(), "job", CgroupLimits::max(1000))
        .unwrap();
    let eng = m
        .add_cgroup(job, "engine", CgroupLimits::default())
        .unwrap();
    m.charge(eng, ChargeKind::Anon, 400).unwrap();
    let v = m.snapshot(eng);
    let CgroupRead::Found(chain) = v.cgroup else {
        panic!("{v:?}")
    };
    let levels = chain.levels();
    assert_eq!(levels.len(), 3);
    assert_eq!(levels[0].max, Some(V1_UNLIMITED));
    assert_eq!(levels[1].max, Some(1000));
    assert_eq!(levels[1].usage, Some(400));
    assert_eq!(
        cgroup_memory_headroom(&v, HeadroomVariant::Raw),
        Ok(Some(600))
    );
    assert_eq!(m.path(eng), "/job/engine");
}

#[test]
fn device_pool_tokens_profile() {
    // 80 GiB free before load, 40 GiB of weights, mem_fraction_static 0.9:
    // rest = 40 − 80 × 0.1 = 32 GiB → 32 GiB // 1024 B = 33,554,432 tokens.
    let inp = DevicePoolInputs {
        free_before_load: 80 * GIB,
        weights_per_rank: 40 * GIB,
        mem_fraction_static: 0.9,
        cell_size: 1024,
        page_size: 64,
        max_total_tokens: None,
    };
    assert_eq!(device_pool_tokens(&inp), 33_554_432);
    assert_eq!(
        device_pool_tokens(&DevicePoolInputs {
            max_total_tokens: Some(1000),
            ..inp
        }),
        960
    );
    assert_eq!(
        device_pool_tokens(&DevicePoolInputs {
            weights_per_rank: 79 * GIB,
            ..inp
        }),
        0
    );
    // Weights per rank = checkpoint / (tp * pp).
    let glm = model_preset("glm-5.2").unwrap();
    assert_eq!(
        glm.weights_per_rank(&ParallelLayout::tp(4), None).unwrap(),
        105 * G
    );
}

#[test]
fn rules_helpers_per_version() {
    let (m, _job, ranks) = gb300_tray();
    let v = m.snapshot(ranks[0]);
    let whole = SglangVersion::Pr40135WholeHeadroom.rules();
    // Explicit path against the whole headroom: max(0, 420 GB − 10 GiB).
    assert_eq!(
        whole.explicit_budget(&v, 4).unwrap(),
        (420 * G - 10 * GIB) as i128
    );
    // Its auto-size keeps the per-rank share.
    assert_eq!(fmt_gb(whole.per_rank_share(&v, 4).unwrap()), "102.32");
    let v0 = SglangVersion::Pre28614.rules();
    assert_eq!(
        v0.explicit_budget(&v, 4).unwrap(),
        (890 * G - 10 * GIB) as i128
    );
    assert_eq!(
        SglangVersion::ExplicitSnapshot
            .rules()
            .explicit_budget(&v, 4)
            .unwrap(),
        ((840 * G - 10 * GIB) / 4) as i128
    );
}

#[test]
fn reset_to_restores_a_template() {
    let (template, job, ranks) = gb300_tray();
    let mut m = template.clone();
    m.charge(ranks[0], ChargeKind::Anon, 135 * G).unwrap();
    m.drop_page_cache(job, 10 * G);
    m.set_limits(job, CgroupLimits::max(1));
    m.reset_to(&template);
    assert_eq!(m.usage(job), 480 * G);
    assert_eq!(m.limits(job), CgroupLimits::max(900 * G));
    assert_eq!(m.snapshot(ranks[1]), template.snapshot(ranks[1]));
    // A different tree: falls back to a clone.
    let mut other = HostMemory::new(CgroupVersion::V1, 1);
    other.reset_to(&template);
    assert_eq!(other.usage(job), 480 * G);
    assert_eq!(other.version, CgroupVersion::V2);
}
