//! Property tests on random prefix-closed traces: invariants re-derived from scratch
//! after every tree operation (`debug_checks`), conservation of tokens, locks, the
//! unbounded-capacity hit rate, and plain page LRU against a reference LRU.

use proptest::prelude::*;

use hicache_sim::cache::{
    EvictHostRule, EvictVersion, EvictionPolicy, HiRadix, HiRadixTree, HostMemoryMode, LruMode,
    PrefetchPolicy, TreeConfig, TreeKind, TreeRules, Unified0523, V1, WritePolicy,
};
use hicache_sim::runtime::{
    CallPattern, Capacities, Measurement, Prefetch, ReplayConfig, Scheduler, Timing, TreePolicy,
    replay,
};
use hicache_sim::workload::Request;

/// (conversation, shared prefix length, private suffix length, suffix variant)
type Spec = (u64, u64, u64, u64);

fn trace(specs: &[Spec], ps: u32) -> Vec<Request> {
    specs
        .iter()
        .enumerate()
        .map(|(i, &(base, plen, slen, seed))| {
            let mut h: Vec<u64> = (0..plen).map(|j| base * 1000 + j).collect();
            h.extend((0..slen).map(|j| (1 << 50) ^ (base << 40) ^ (plen << 32) ^ (seed << 8) ^ j));
            Request {
                id: i as u64,
                arrival_ns: i as u64 * 3_000_000,
                input_tokens: h.len() as u32 * ps + (seed as u32 % 3),
                output_tokens: 1 + seed as u32,
                page_hashes: h,
            }
        })
        .collect()
}

fn specs() -> impl Strategy<Value = Vec<Spec>> {
    prop::collection::vec((0u64..4, 0u64..14, 0u64..5, 0u64..6), 1..60)
}

const WRITE: [WritePolicy; 3] = [
    WritePolicy::WriteThrough,
    WritePolicy::WriteThroughSelective,
    WritePolicy::WriteBack,
];
const EVICT: [EvictionPolicy; 7] = [
    EvictionPolicy::Lru,
    EvictionPolicy::Lfu,
    EvictionPolicy::Fifo,
    EvictionPolicy::Mru,
    EvictionPolicy::Filo,
    EvictionPolicy::Priority,
    EvictionPolicy::Slru,
];
/// Every property runs on both trees.
const TREES: [TreeKind; 3] = [TreeKind::V1, TreeKind::Unified0523, TreeKind::HiRadix];

const HOST_RULE: [EvictHostRule; 3] = [
    EvictHostRule::EvictedOnly,
    EvictHostRule::ReclaimDeviceResident,
    EvictHostRule::BoundaryL1L2,
];

proptest! {
    // 160 cases by default; PROPTEST_CASES=N for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(160),
        ..ProptestConfig::default()
    })]

    #[test]
    fn invariants_hold_on_random_traces(
        sp in specs(),
        l1 in 0u64..40,
        l2 in 0u64..40,
        w in 0usize..3,
        e in 0usize..7,
        r in 0usize..3,
        v0 in any::<bool>(),
        l3 in prop::option::of(0u64..60),
        timed in any::<bool>(),
        buffer in any::<bool>(),
        pp in 0usize..3,
        ps in prop::sample::select(vec![1u32, 4, 16]),
        tr in 0usize..3,
        sched in any::<bool>(),
    ) {
        let buffer = buffer && l3.is_some() && WRITE[w] != WritePolicy::WriteBack;
        let sched = sched && !timed && !buffer;
        // The 0.5.23 tree has its own host rules; the what-if rules are V1's.
        let (r, v0) = if TREES[tr] == TreeKind::Unified0523 { (0, false) } else { (r, v0) };
        let cfg = ReplayConfig {
capacities: Capacities {
page_size: ps,
l1_pages: l1,
l2_pages: l2,
l3_pages: l3,
bytes_per_token: 100,
..Default::default()
},
policy: TreePolicy {
tree: TREES[tr],
call_pattern: if sched { CallPattern::Scheduler0523 } else { CallPattern::Simulator },
write_policy: WRITE[w],
eviction_policy: EVICT[e],
evict_host_rule: HOST_RULE[r],
evict_version: if v0 { EvictVersion::V0 } else { EvictVersion::V1 },
host_memory_mode: if buffer { HostMemoryMode::BufferOnly } else { HostMemoryMode::Cache },
..Default::default()
},
prefetch: Prefetch {
prefetch_policy: [PrefetchPolicy::BestEffort, PrefetchPolicy::WaitComplete, PrefetchPolicy::Timeout][pp],
prefetch_threshold: 2 * ps,
..Default::default()
},
scheduler: Scheduler {
prefill_tokens_per_s: 1e5,
decode_tokens_per_s: 1e3,
max_running_requests: 4,
..Default::default()
},
measurement: Measurement {
timing: if timed { Timing::On } else { Timing::Off },
debug_checks: true,
timeline_samples: 4,
..Default::default()
},
..ReplayConfig::default()
};
        let t = trace(&sp, ps);
        let input: u64 = t.iter().map(|r| u64::from(r.input_tokens)).sum();
        let m = replay(&cfg, t).unwrap();
        prop_assert_eq!(m.requests, sp.len() as u64);
        prop_assert_eq!(m.input_tokens, input);
        prop_assert_eq!(
            m.device_hit_tokens + m.host_hit_tokens + m.storage_hit_tokens + m.miss_tokens,
            input
        );
        prop_assert!(m.peak_host_pages <= l2);
        prop_assert!(m.final_device_pages <= l1);
        if let Some(l3) = l3 {
            prop_assert!(m.final_storage_pages <= l3);
        }
        if buffer {
            prop_assert_eq!(m.peak_host_pages, 0);
        }
        prop_assert!(m.timeline.len() <= 8);
    }

    #[test]
    fn locked_path_is_never_evicted(sp in specs(), pick in 0usize..60, l2 in 0u64..30, w in 0usize..3, r in 0usize..3) {
        locked_path::<V1>(&sp, pick, l2, w, r)?;
        locked_path::<Unified0523>(&sp, pick, l2, w, 0)?;
        locked_path::<HiRadix>(&sp, pick, l2, w, r)?;
    }

    #[test]
    fn unbounded_capacity_hits_every_repeat(sp in specs(), w in 0usize..3, plain in any::<bool>(), tr in 0usize..3) {
        let cfg = ReplayConfig {
capacities: Capacities {
page_size: 1,
l1_pages: 100_000,
l2_pages: 100_000,
..Default::default()
},
policy: TreePolicy {
tree: TREES[tr],
write_policy: WRITE[w],
lru_mode: if plain { LruMode::PlainPage } else { LruMode::LeafOnly },
..Default::default()
},
measurement: Measurement {
debug_checks: true,
..Default::default()
},
..ReplayConfig::default()
};
        let t = trace(&sp, 1);
        let total: u64 = t.iter().map(|r| r.page_hashes.len() as u64).sum();
        let distinct: std::collections::BTreeSet<u64> =
            t.iter().flat_map(|r| r.page_hashes.iter().copied()).collect();
        let m = replay(&cfg, t).unwrap();
        let want = 1.0 - distinct.len() as f64 / total.max(1) as f64;
        let want = if total == 0 { 0.0 } else { want };
        prop_assert!((m.total_page_hit_rate - want).abs() < 1e-12, "{} vs {}", m.total_page_hit_rate, want);
        prop_assert_eq!(m.host_hit_tokens, 0);
    }

    #[test]
    fn plain_page_lru_matches_reference(sp in specs(), l1 in 0u64..40) {
        let cfg = ReplayConfig {
capacities: Capacities {
page_size: 1,
l1_pages: l1,
l2_pages: 0,
..Default::default()
},
policy: TreePolicy {
lru_mode: LruMode::PlainPage,
..Default::default()
},
..ReplayConfig::default()
};
        let t = trace(&sp, 1);
        // Reference: a Vec ordered LRU → MRU; touch every page in order; the hit count
        // is the leading run of pages already present.
        let mut lru: Vec<u64> = Vec::new();
        let mut hits = 0u64;
        let mut evictions = 0u64;
        for q in &t {
            let mut leading = true;
            for &p in &q.page_hashes {
                if let Some(pos) = lru.iter().position(|&x| x == p) {
                    lru.remove(pos);
                    if leading { hits += 1; }
                } else {
                    leading = false;
                }
                lru.push(p);
                if lru.len() as u64 > l1 {
                    lru.remove(0);
                    evictions += 1;
                }
            }
        }
        let m = replay(&cfg, t).unwrap();
        prop_assert_eq!(m.device_hit_tokens, hits);
        prop_assert_eq!(m.device_evicted_pages, evictions);
        prop_assert_eq!(m.final_device_pages, lru.len() as u64);
    }

    #[test]
    fn plain_page_two_level_lru_matches_reference(sp in specs(), l1 in 0u64..30, l2 in 0u64..30) {
        let cfg = ReplayConfig {
capacities: Capacities {
page_size: 1,
l1_pages: l1,
l2_pages: l2,
..Default::default()
},
policy: TreePolicy {
lru_mode: LruMode::PlainPage,
..Default::default()
},
..ReplayConfig::default()
};
        let t = trace(&sp, 1);
        // Reference: L1 and an exclusive L2, each a Vec ordered LRU → MRU. An L1 eviction
        // demotes to L2 (when L2 has room at all), an L2 hit moves the page back to L1;
        // hits are the leading run found in L1, then L2.
        let (mut a, mut b): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
        let (mut dev, mut host, mut dev_ev, mut host_ev) = (0u64, 0u64, 0u64, 0u64);
        for q in &t {
            let mut leading = true;
            for &p in &q.page_hashes {
                let in1 = a.iter().position(|&x| x == p);
                let in2 = if in1.is_none() { b.iter().position(|&x| x == p) } else { None };
                if let Some(i) = in2 { b.remove(i); }
                if leading {
                    if in1.is_some() { dev += 1; } else if in2.is_some() { host += 1; } else { leading = false; }
                }
                if let Some(i) = in1 { a.remove(i); }
                a.push(p);
                if a.len() as u64 > l1 {
                    let v = a.remove(0);
                    dev_ev += 1;
                    if l2 > 0 {
                        b.push(v);
                        if b.len() as u64 > l2 { b.remove(0); host_ev += 1; }
                    }
                }
            }
        }
        let m = replay(&cfg, t).unwrap();
        prop_assert_eq!(m.device_hit_tokens, dev);
        prop_assert_eq!(m.host_hit_tokens, host);
        prop_assert_eq!(m.device_evicted_pages, dev_ev);
        prop_assert_eq!(m.host_evicted_pages, host_ev);
        prop_assert_eq!(m.final_device_pages, a.len() as u64);
    }
}

/// Long enough for the lazy leaf heaps to compact (entries > 4 × live + 4096),
/// with every invariant re-derived after each operation.
#[test]
fn long_trace_with_heap_compaction_keeps_invariants() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let specs: Vec<Spec> = (0..12000)
        .map(|_| (next() % 6, next() % 14, next() % 4, next() % 5))
        .collect();
    for (w, r) in [(0, 0), (1, 1), (2, 2), (2, 0)] {
        let cfg = ReplayConfig {
            capacities: Capacities {
                page_size: 1,
                l1_pages: 40,
                l2_pages: 60,
                l3_pages: Some(200),
                ..Default::default()
            },
            policy: TreePolicy {
                write_policy: WRITE[w],
                evict_host_rule: HOST_RULE[r],
                ..Default::default()
            },
            measurement: Measurement {
                debug_checks: true,
                ..Default::default()
            },
            ..ReplayConfig::default()
        };
        let t = trace(&specs, 1);
        let input: u64 = t.iter().map(|r| u64::from(r.input_tokens)).sum();
        let m = replay(&cfg, t).unwrap();
        assert_eq!(
            m.device_hit_tokens + m.host_hit_tokens + m.storage_hit_tokens + m.miss_tokens,
            input
        );
        assert!(m.total_hit_tokens > 0 && m.device_evicted_pages > 1000);
    }
}

/// One case of `locked_path_is_never_evicted` on the tree with rules `R`.
fn locked_path<R: TreeRules>(
    sp: &[Spec],
    pick: usize,
    l2: u64,
    w: usize,
    r: usize,
) -> Result<(), TestCaseError> {
    let mut t = HiRadixTree::<R>::new(TreeConfig {
        l1_pages: 1000,
        l2_pages: l2,
        page_size: 1,
        write_policy: WRITE[w],
        evict_host_rule: HOST_RULE[r],
        debug_checks: true,
        ..TreeConfig::default()
    });
    let reqs = trace(sp, 1);
    let mut pages_of = Vec::new();
    for q in &reqs {
        let p: Vec<u64> = q.page_hashes.clone();
        let m = t.match_prefix(&p);
        t.inc_lock_ref(m.last_node);
        let loaded = t.load_back(&m);
        let need = p.len() as u64 - m.device_pages - loaded;
        prop_assert!(t.alloc_device(need));
        t.insert(&p, need);
        t.dec_lock_ref(m.last_node);
        let mut recs = Vec::new();
        t.take_backups(&mut recs);
        for rec in &recs {
            t.backup_acked(rec);
        }
        pages_of.push(p);
    }
    let p = &pages_of[pick % pages_of.len()];
    let m = t.match_prefix(p);
    t.inc_lock_ref(m.last_device_node);
    t.evict(u64::MAX);
    t.check();
    let m2 = t.match_prefix(p);
    prop_assert_eq!(m2.device_pages, m.device_pages);
    prop_assert_eq!(t.device_used(), m.device_pages);
    t.dec_lock_ref(m.last_device_node);
    t.evict(u64::MAX);
    prop_assert_eq!(t.device_used(), 0);
    t.check();
    Ok(())
}
