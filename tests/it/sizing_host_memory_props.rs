//! Invariants of `HostMemory` under random charge sequences (proptest, 128 cases).

use hicache_sim::hardware::*;
use proptest::prelude::*;

const KINDS: [ChargeKind; 6] = [
    ChargeKind::Anon,
    ChargeKind::Shmem,
    ChargeKind::PageCache,
    ChargeKind::PageCacheActive,
    ChargeKind::PageCacheDirty,
    ChargeKind::PageCacheWriteback,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn limits_hold_and_usage_is_the_sum(ops in prop::collection::vec((0usize..3, 0usize..6, 0u64..400, any::<bool>()), 1..60)) {
        let mut m = HostMemory::new(CgroupVersion::V2, 3000);
        m.other_used = 200;
        let job = m.add_cgroup(m.root(), "job", CgroupLimits::max(2000)).unwrap();
        let a = m.add_cgroup(job, "a", CgroupLimits::max(1200)).unwrap();
        let b = m.add_cgroup(job, "b", CgroupLimits { min: 300, ..Default::default() }).unwrap();
        let cgs = [job, a, b];
        for (c, k, bytes, uncharge) in ops {
            let (cg, kind) = (cgs[c], KINDS[k]);
            let before_pinned = m.charges(m.root()).anon + m.charges(m.root()).shmem;
            if uncharge {
                let got = m.uncharge(cg, kind, bytes);
                prop_assert!(got <= bytes);
            } else {
                match m.charge(cg, kind, bytes) {
                    Ok(_) => {}
                    Err(oom) => prop_assert!(oom.reclaimed <= 3000),
                }
            }
            // Anon and shmem are never reclaimed.
            let pinned = m.charges(m.root()).anon + m.charges(m.root()).shmem;
            prop_assert!(uncharge || pinned >= before_pinned);
            prop_assert!(m.usage(job) <= 2000);
            prop_assert!(m.usage(a) <= 1200);
            prop_assert_eq!(m.usage(job), m.usage(a) + m.usage(b) + m.own_charges(job).total());
            prop_assert!(m.host_used() <= m.mem_total);
            prop_assert!(m.psutil_available() <= m.mem_total);
            prop_assert_eq!(m.psutil_available(), m.mem_free() + m.charges(m.root()).file_lru());
        }
    }
}
