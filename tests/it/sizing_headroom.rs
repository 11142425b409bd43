//! `test_host_memory.py` (newest, upstream `2b484a51`): every
//! cgroup headroom row, with the variant (A raw, B v1-inactive, C active+inactive credit,
//! D clean credit, E protected sibling) each row needs. Membership `/task/engine`.

use hicache_sim::hardware::*;
use hicache_sim::sizing::{
    AvailableReading, HeadroomVariant as HV, available_host_memory_bytes, cgroup_memory_headroom,
};

fn lvl(max: Option<u64>, high: Option<u64>, usage: u64) -> CgroupLevel {
    CgroupLevel {
        max,
        high,
        usage: Some(usage),
        stat: Some(MemStat::default()),
        ..Default::default()
    }
}

fn view(host: u64, version: CgroupVersion, levels: &[CgroupLevel]) -> HostMemoryView {
    HostMemoryView {
        psutil_available: host,
        cgroup: CgroupRead::Found(CgroupChain::from_levels(version, levels)),
    }
}

const BIG: u64 = 1 << 50;

fn headroom(v: &HostMemoryView, var: HV) -> Option<u64> {
    cgroup_memory_headroom(v, var).unwrap()
}

#[test]
fn v2_parent_and_high_limits() {
    let engine = lvl(None, None, 100);
    let root = lvl(None, None, 5_000); // the v2 root has no limit files
    let rows = [
        (Some(1000), None, 300, Some(700)),
        (Some(1000), Some(600), 300, Some(300)),
        (None, Some(600), 700, Some(0)),
        (None, None, 300, None),
    ];
    for (max, high, usage, want) in rows {
        let v = view(
            BIG,
            CgroupVersion::V2,
            &[engine, lvl(max, high, usage), root],
        );
        for var in [
            HV::Raw,
            HV::ActiveInactiveCredit,
            HV::CleanCredit,
            HV::ProtectedSibling,
        ] {
            assert_eq!(headroom(&v, var), want, "{max:?} {high:?} {usage} {var:?}");
        }
    }
    // No limit anywhere: available is the host figure.
    let v = view(4_242, CgroupVersion::V2, &[engine, lvl(None, None, 300)]);
    assert_eq!(
        available_host_memory_bytes(&v, AvailableReading::CgroupMin(HV::ProtectedSibling), false),
        Ok(4_242)
    );
    // task (max 1000, usage 100), engine (max 250, usage 100) → 150.
    let v = view(
        BIG,
        CgroupVersion::V2,
        &[lvl(Some(250), None, 100), lvl(Some(1000), None, 100)],
    );
    assert_eq!(headroom(&v, HV::ProtectedSibling), Some(150));
    assert_eq!(headroom(&v, HV::Raw), Some(150));
}

#[test]
fn mount_subtree_and_namespace() {
    // engine (usage 100, max 900) below the mount root /host/task (usage 300, max 1000):
    // the walk stops at the mount root, whatever the membership spelling.
    let v = view(
        BIG,
        CgroupVersion::V2,
        &[lvl(Some(900), None, 100), lvl(Some(1000), None, 300)],
    );
    assert_eq!(headroom(&v, HV::ProtectedSibling), Some(700));
    assert_eq!(headroom(&v, HV::Raw), Some(700));
}

#[test]
fn v1_sentinel_is_unlimited() {
    let v = view(
        BIG,
        CgroupVersion::V1,
        &[
            lvl(Some(V1_UNLIMITED), None, 100),
            lvl(Some(1000), None, 400),
        ],
    );
    assert_eq!(headroom(&v, HV::Raw), Some(600));
    assert_eq!(headroom(&v, HV::ProtectedSibling), Some(600));
    // Only the sentinel: SGLang (0.5.21–0.5.23 `_cgroup_memory_headroom`) compares it
    // as a number, `2^63 - 4096 - usage`, which never binds against psutil.
    let v = view(
        BIG,
        CgroupVersion::V1,
        &[lvl(Some(V1_UNLIMITED), None, 100)],
    );
    assert_eq!(headroom(&v, HV::Raw), Some(V1_UNLIMITED - 100));
    assert_eq!(
        available_host_memory_bytes(&v, AvailableReading::CgroupMin(HV::Raw), false),
        Ok(BIG as i128)
    );
    // ... and so reads that level's usage file: a missing one raises.
    let mut l = lvl(Some(V1_UNLIMITED), None, 100);
    l.usage = None;
    let v = view(BIG, CgroupVersion::V1, &[l]);
    assert!(cgroup_memory_headroom(&v, HV::Raw).is_err());
}

fn cache_level(usage: u64) -> CgroupLevel {
    CgroupLevel {
        max: Some(1000),
        usage: Some(usage),
        // v2 keys; on v1 the same numbers are the `total_*` keys (the unprefixed
        // active_file/inactive_file = 0 of the test are not read).
        stat: Some(MemStat {
            file: 700,
            shmem: 200,
            active_file: 200,
            inactive_file: 300,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn reclaimable_page_cache_credit() {
    let v2 = view(BIG, CgroupVersion::V2, &[cache_level(900)]);
    let v1 = view(BIG, CgroupVersion::V1, &[cache_level(900)]);
    for v in [&v2, &v1] {
        assert_eq!(headroom(v, HV::ActiveInactiveCredit), Some(600));
        assert_eq!(headroom(v, HV::CleanCredit), Some(600));
        assert_eq!(headroom(v, HV::ProtectedSibling), Some(600));
        // Variant A (#40135): page cache counted as used → 1000 − 900.
        assert_eq!(headroom(v, HV::Raw), Some(100));
    }
    // Variant B credits inactive only, and only on v1.
    assert_eq!(headroom(&v1, HV::InactiveV1Only), Some(400));
    assert_eq!(headroom(&v2, HV::InactiveV1Only), Some(100));
    // v1, usage 400 trailing the counters: usage_eff floors at 0 → 1000.
    let v1_low = view(BIG, CgroupVersion::V1, &[cache_level(400)]);
    assert_eq!(headroom(&v1_low, HV::ActiveInactiveCredit), Some(1000));
    assert_eq!(headroom(&v1_low, HV::ProtectedSibling), Some(1000));
    // Variant D keeps dirty/writeback pages charged: 100 dirty + 50 writeback.
    let mut l = cache_level(900);
    if let Some(s) = l.stat.as_mut() {
        s.file_dirty = 100;
        s.file_writeback = 50;
    }
    let vd = view(BIG, CgroupVersion::V2, &[l]);
    assert_eq!(headroom(&vd, HV::CleanCredit), Some(450));
    assert_eq!(headroom(&vd, HV::ActiveInactiveCredit), Some(600));
}

/// Built through `HostMemory`, so the protected-sibling figure comes from the model:
/// task (usage 850, max 900, inactive 600), engine (250, max 1000), sibling (600 inactive).
#[test]
fn protected_sibling_cache() {
    let mut m = HostMemory::new(CgroupVersion::V2, 1 << 40);
    let task = m
        .add_cgroup(m.root(), "task", CgroupLimits::max(900))
        .unwrap();
    let engine = m
        .add_cgroup(task, "engine", CgroupLimits::max(1000))
        .unwrap();
    let sibling = m
        .add_cgroup(task, "sibling", CgroupLimits::default())
        .unwrap();
    m.charge(engine, ChargeKind::Anon, 250).unwrap();
    m.charge(sibling, ChargeKind::PageCache, 600).unwrap();
    assert_eq!(m.usage(task), 850);
    assert_eq!(m.stat(task).inactive_file, 600);
    let v = m.snapshot(engine);
    assert_eq!(headroom(&v, HV::ProtectedSibling), Some(650));
    m.set_limits(
        sibling,
        CgroupLimits {
            min: 600,
            ..Default::default()
        },
    );
    let v = m.snapshot(engine);
    assert_eq!(headroom(&v, HV::ProtectedSibling), Some(50));
    // Variant C does not know about memory.min.
    assert_eq!(headroom(&v, HV::ActiveInactiveCredit), Some(650));
}

#[test]
fn independent_engines() {
    for (usage, want) in [(300, 700), (600, 400)] {
        let v = view(
            2000,
            CgroupVersion::V2,
            &[lvl(None, None, usage), lvl(Some(1000), None, usage)],
        );
        assert_eq!(
            available_host_memory_bytes(
                &v,
                AvailableReading::CgroupMin(HV::ProtectedSibling),
                false
            ),
            Ok(want)
        );
    }
}

#[test]
fn host_bound() {
    let rows = [
        (None, false, 100),
        (Some(200), false, 100),
        (Some(50), false, 50),
        (Some(50), true, 50),
    ];
    for (limit, fallback, want) in rows {
        let v = view(100, CgroupVersion::V2, &[lvl(limit, None, 0)]);
        assert_eq!(
            available_host_memory_bytes(
                &v,
                AvailableReading::CgroupMin(HV::ProtectedSibling),
                fallback
            ),
            Ok(want),
            "{limit:?} {fallback}"
        );
    }
    // psutil-only versions ignore the cgroup.
    let v = view(100, CgroupVersion::V2, &[lvl(Some(50), None, 0)]);
    assert_eq!(
        available_host_memory_bytes(&v, AvailableReading::PsutilOnly, false),
        Ok(100)
    );
}

#[test]
fn missing_cgroupfs() {
    let reading = AvailableReading::CgroupMin(HV::ProtectedSibling);
    let v = HostMemoryView {
        psutil_available: 5000,
        cgroup: CgroupRead::NotFound,
    };
    let e = available_host_memory_bytes(&v, reading, false).unwrap_err();
    assert!(e.to_string().contains("set --hicache-size"), "{e}");
    assert_eq!(available_host_memory_bytes(&v, reading, true), Ok(5000));
    // Variant A: the older message, no fallback.
    let e =
        available_host_memory_bytes(&v, AvailableReading::CgroupMin(HV::Raw), true).unwrap_err();
    assert!(
        e.to_string()
            .contains("Cannot locate the process memory cgroup"),
        "{e}"
    );
    // Through HostMemory, v1 and v2.
    for ver in [CgroupVersion::V1, CgroupVersion::V2] {
        let mut m = HostMemory::new(ver, 10_000);
        m.cgroupfs_mounted = false;
        let v = m.snapshot(m.root());
        assert!(available_host_memory_bytes(&v, reading, false).is_err());
        assert_eq!(available_host_memory_bytes(&v, reading, true), Ok(10_000));
    }
    // Variant D (upstream 049da31f) has no fallback parameter.
    let d = AvailableReading::CgroupMin(HV::CleanCredit);
    let e = available_host_memory_bytes(&v, d, true).unwrap_err();
    assert!(
        e.to_string()
            .contains("Cannot locate the process memory cgroup"),
        "{e}"
    );
    // Auto-size reads never fall back, even where explicit reads do.
    let rules = hicache_sim::sizing::SglangVersion::AutoHicache.rules();
    assert_eq!(rules.explicit_budget(&v, 1), Ok(5000 - (10i128 << 30)));
    assert!(rules.per_rank_share(&v, 1).is_err());
    // No procfs at all (not Linux): no bound.
    let v = HostMemoryView {
        psutil_available: 5000,
        cgroup: CgroupRead::NoProcfs,
    };
    assert_eq!(available_host_memory_bytes(&v, reading, false), Ok(5000));
}

#[test]
fn missing_usage_or_stat_for_a_known_limit() {
    let reading = AvailableReading::CgroupMin(HV::ProtectedSibling);
    let no_usage = CgroupLevel {
        usage: None,
        ..lvl(Some(1000), None, 0)
    };
    let no_stat = CgroupLevel {
        stat: None,
        ..lvl(Some(1000), None, 0)
    };
    for l in [no_usage, no_stat] {
        let v = view(5000, CgroupVersion::V2, &[l]);
        let e = available_host_memory_bytes(&v, reading, false).unwrap_err();
        assert!(e.to_string().contains("set --hicache-size"), "{e}");
        assert_eq!(available_host_memory_bytes(&v, reading, true), Ok(5000));
    }
    // Variant D: a missing memory.stat means raw usage.
    let v = view(
        5000,
        CgroupVersion::V2,
        &[CgroupLevel {
            usage: Some(300),
            ..no_stat
        }],
    );
    assert_eq!(headroom(&v, HV::CleanCredit), Some(700));
    // Variant A raises on a missing usage file, naming it.
    let v = view(5000, CgroupVersion::V2, &[no_usage]);
    let e = cgroup_memory_headroom(&v, HV::Raw).unwrap_err();
    assert!(e.to_string().contains("memory.current"), "{e}");
    // A level without limits needs no files.
    let v = view(5000, CgroupVersion::V2, &[CgroupLevel::default()]);
    assert_eq!(available_host_memory_bytes(&v, reading, false), Ok(5000));
}
