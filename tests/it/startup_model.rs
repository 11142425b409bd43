//! The start-up model on shapes the incidents did not use — per-node
//! memory, a cgroup tree of any depth, a pin limit with auto-HiCache's halving, and
//! SGLang's own log lines. Hand computations in the comments.

use hicache_sim::commands::startup_cmd::{load_scenario, plan_for};
use hicache_sim::hardware::{CgroupLimits, CgroupVersion, ChargeKind, HostMemory};
use hicache_sim::startup::{self, MonteCarlo, Outcome};

fn run(path: &str, version: Option<&str>, sets: &[&str]) -> MonteCarlo {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s =
        load_scenario(path, &sets, version.map(|v| v.parse().unwrap())).expect("scenario loads");
    let plan = plan_for(&s).expect("plan builds");
    startup::run(&plan, s.seed, 1)
}

const GIB: i128 = 1 << 30;

#[test]
fn two_trays_differ_and_the_world_min_follows_the_tighter() {
    let mc = run("scenarios/gb200-two-trays-auto-size.yaml", None, &[]);
    assert_eq!(mc.first_run.len(), 8);
    // Node 0: job usage 4 × 15 GB = 60 GB → headroom 840 GB; share (840 GB − 10 GiB) // 4.
    let share0 = (840_000_000_000i128 - 10 * GIB) / 4;
    assert_eq!(share0, 207_315_645_440);
    // Node 1: + 600 GB of warm cache charged to the job → 240 GB.
    let share1 = (240_000_000_000i128 - 10 * GIB) / 4;
    assert_eq!(share1, 57_315_645_440);
    // budget = int(share × 0.8)
    let (b0, b1) = (165_852_516_352i128, 45_852_516_352i128);
    assert_eq!(((share0 as f64) * 0.8) as i128, b0);
    assert_eq!(((share1 as f64) * 0.8) as i128, b1);
    // Device bytes = (447,936 + 64) slots × 70,272 B = 31,481,856,000 B; the MIN is
    // node 1's ratio b1 × 0.95 / 31,481,856,000 = 1.38365065…
    let ratio = b1 as f64 * 0.95 / 31_481_856_000f64;
    // Host tokens int(447,936 × ratio) = 619,786 → 619,786 // 64 + 1 = 9,685 pages
    // = 619,840 tokens × 70,272 B = 43,557,396,480 B on every rank.
    assert_eq!((447_936f64 * ratio) as u64, 619_786);
    for r in &mc.first_run {
        assert_eq!(r.outcome, Outcome::Started, "rank {}", r.rank);
        let (node, avail, budget) = if r.rank < 4 {
            (0, 840_000_000_000i128, b0)
        } else {
            (1, 240_000_000_000, b1)
        };
        assert_eq!(r.node, node);
        assert_eq!(r.available_bytes, Some(avail), "rank {}", r.rank);
        assert_eq!(r.budget_bytes, Some(budget), "rank {}", r.rank);
        assert_eq!(r.fitted_ratio, Some(ratio));
        assert_eq!(r.pools[0].tokens, 619_840);
        assert_eq!(r.requested_bytes, Some(43_557_396_480));
    }
    // psutil differs too: node 0 has 10 GB used outside the job: 960 − 10 − 60.
    assert_eq!(mc.first_run[0].psutil_available, Some(890_000_000_000));
    assert_eq!(mc.first_run[4].psutil_available, Some(900_000_000_000));
}

#[test]
fn psutil_available_is_a_direct_input_exclusive_with_host_other_used() {
    // psutil 700 GB before start → other_used = 960 − 700 = 260 GB; at sizing node 0
    // reads 700 − 60 = 640 GB.
    let mc = run(
        "scenarios/gb200-two-trays-auto-size.yaml",
        None,
        &[
            "memory.nodes=[{psutil_available: 700GB}, {cgroup: {preexisting: {inactive_file: 600GB}}}]",
        ],
    );
    assert_eq!(mc.first_run[0].psutil_available, Some(640_000_000_000));
    assert_eq!(mc.first_run[0].available_bytes, Some(640_000_000_000));
    let s = load_scenario(
        "scenarios/gb200-two-trays-auto-size.yaml",
        &["memory.nodes=[{psutil_available: 700GB, host_other_used: 1GB}]".into()],
        None,
    )
    .unwrap();
    let e = plan_for(&s).unwrap_err().to_string();
    assert!(e.contains("memory.nodes[0].psutil_available"), "{e}");
    assert!(e.contains("not both"), "{e}");
    let s = load_scenario(
        "scenarios/gb200-two-trays-auto-size.yaml",
        &["memory.nodes=[{}, {}, {}]".into()],
        None,
    )
    .unwrap();
    let e = plan_for(&s).unwrap_err().to_string();
    assert!(e.contains("3 per-node blocks for 2 node(s)"), "{e}");
}

#[test]
fn slurm_tree_headroom_under_each_release() {
    // Job usage 8 × 15 + 1 + 450 = 571 GB under memory.max 1000 GB.
    let per_rank = |headroom: i128| (headroom - 10 * GIB) / 8;
    for (v, headroom, outcome) in [
        ("0.5.21", 429_000_000_000i128, Outcome::Refused),
        ("0.5.22", 429_000_000_000, Outcome::Refused),
        ("0.5.23", 429_000_000_000, Outcome::Refused),
        ("page-cache-credit", 879_000_000_000, Outcome::Started),
        ("explicit-snapshot", 829_000_000_000, Outcome::Started),
    ] {
        let mc = run(
            "scenarios/slurm-step-task-protected-sibling.yaml",
            Some(v),
            &[],
        );
        for r in &mc.first_run {
            assert_eq!(r.outcome, outcome, "{v} rank {}", r.rank);
            assert_eq!(r.budget_bytes, Some(per_rank(headroom)), "{v}");
        }
    }
    assert_eq!(per_rank(429_000_000_000), 52_282_822_720); // prints 52.28 GB
    // Without the sibling's memory.min, 0.5.23 credits the cache again (879 GB).
    let mc = run(
        "scenarios/slurm-step-task-protected-sibling.yaml",
        Some("0.5.23"),
        &[
            "memory.cgroup.below=[{name: step_0, preexisting: {anon: 1GB}, siblings: [{name: step_batch, page_cache: 450GB}]}, {name: task_0}]",
        ],
    );
    assert_eq!(
        mc.first_run[0].budget_bytes,
        Some(per_rank(879_000_000_000))
    );
    assert_eq!(mc.first_run[0].outcome, Outcome::Started);
}

#[test]
fn memory_low_is_reclaimed_only_after_unprotected_cache() {
    // Parent max 100; a (low 40) holds 40 of cache, b holds 20, the engine 30 anon.
    // Charging 30 more needs 20 back: b's 20 goes, a keeps its 40 though it comes first.
    let mut m = HostMemory::new(CgroupVersion::V2, 1000);
    let p = m.add_cgroup(m.root(), "p", CgroupLimits::max(100)).unwrap();
    let a = m
        .add_cgroup(
            p,
            "a",
            CgroupLimits {
                low: 40,
                ..Default::default()
            },
        )
        .unwrap();
    let b = m.add_cgroup(p, "b", CgroupLimits::default()).unwrap();
    let e = m.add_cgroup(p, "e", CgroupLimits::default()).unwrap();
    m.charge(a, ChargeKind::PageCache, 40).unwrap();
    m.charge(b, ChargeKind::PageCache, 20).unwrap();
    m.charge(e, ChargeKind::Anon, 30).unwrap();
    assert_eq!(m.charge(e, ChargeKind::Anon, 30).unwrap().reclaimed, 20);
    assert_eq!(m.usage(a), 40);
    assert_eq!(m.usage(b), 0);
    // 10 more: nothing unprotected is left, so the second pass breaches a's low.
    assert_eq!(m.charge(e, ChargeKind::Anon, 10).unwrap().reclaimed, 10);
    assert_eq!(m.usage(a), 30);
    // With memory.min = 30 instead, a keeps 30 and the cgroup OOMs.
    m.set_limits(
        a,
        CgroupLimits {
            min: 30,
            low: 40,
            ..Default::default()
        },
    );
    assert!(m.charge(e, ChargeKind::Anon, 10).is_err());
    assert_eq!(m.usage(a), 30);
}

/// Device bytes of the halving scenarios: (200,000 + 64) slots × 70,272 B.
const DEVICE_BYTES: u64 = 200_064 * 70_272;
/// Host pool at ratio r: int(200,000 × r) // 64 + 1 pages of 64 tokens × 70,272 B.
fn host_bytes(ratio: u64) -> u64 {
    ((200_000 * ratio) / 64 + 1) * 64 * 70_272
}

#[test]
fn auto_hicache_halves_8_4_2_on_every_rank_together() {
    assert_eq!(DEVICE_BYTES, 14_058_897_408);
    assert_eq!(host_bytes(8), 112_439_697_408); // > 35 GB
    assert_eq!(host_bytes(4), 56_222_097_408); // > 35 GB
    assert_eq!(host_bytes(2), 28_113_297_408); // ≤ 35 GB
    // Budget: psutil 2000 − 20 − 8 × 15 = 1860 GB; share (1860 GB − 10 GiB) // 8 =
    // 231,157,822,720; int(× 0.8) = 184,926,258,176 → ratio min(8, 0.95 b / d) = 8.
    let budget = 184_926_258_176i128;
    assert!(budget as f64 * 0.95 / DEVICE_BYTES as f64 > 8.0);
    let mc = run("scenarios/auto-hicache-halving.yaml", None, &[]);
    for r in &mc.first_run {
        assert_eq!(r.outcome, Outcome::Started);
        assert!(!r.hicache_off);
        assert_eq!(r.fitted_ratio, Some(2.0));
        assert_eq!(r.requested_bytes, Some(host_bytes(2)));
        assert_eq!(r.budget_bytes, Some(budget));
    }
    let s = load_scenario("scenarios/auto-hicache-halving.yaml", &[], None).unwrap();
    let plan = plan_for(&s).unwrap();
    let rep = hicache_sim::report::startup::build(&s, &plan, &mc, s.seed);
    let log = &rep.ranks[5].log;
    assert_eq!(log.len(), 8, "{log:#?}");
    assert_eq!(
        log[2],
        "HiCache auto: host pools could not be pinned (8 rank(s) could not build their host pools); retrying at 4.00x."
    );
    assert_eq!(
        log[4],
        "HiCache host pools could not be built here: cudaHostRegister failed (rc=2, out of memory) at offset=0 size=56222097408 (total=56222097408, chunk_limit=274877079552); host buffer is not pinned and device transfers may silently return stale data."
    );
    // 184,926,258,176 B = 172.2 GiB; 35 GB = 32.6 GiB.
    assert_eq!(
        log[7],
        "HiCache auto: on, host tier 2.00x the device cache (budget 172.2 GiB per rank, 8 rank(s) on this host, memlock limit 32.6 GiB)."
    );
    // The chunk: g = 64 × 70,272 = 4,497,408 B; (256 GiB // g) × g.
    assert_eq!((256u64 << 30) / 4_497_408 * 4_497_408, 274_877_079_552);
}

#[test]
fn auto_hicache_ends_off_when_even_2x_cannot_be_pinned() {
    let mc = run("scenarios/auto-hicache-off.yaml", None, &[]);
    for r in &mc.first_run {
        assert_eq!(r.outcome, Outcome::Started);
        assert!(r.hicache_off, "rank {}", r.rank);
        assert_eq!(r.fitted_ratio, None);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "HiCache off: host pools could not be pinned (8 rank(s) could not build their host pools)"
            )
        );
    }
}

#[test]
fn the_attach_gate_agrees_world_wide_across_mixed_pin_limits() {
    // Two trays of 8: node 0 may pin 35 GB, node 1 60 GB. At 4x (56.22 GB) node 1
    // fits, node 0 does not: the SUM is 8 (node 0's ranks) and both nodes retry at 2x.
    let mc = run(
        "scenarios/auto-hicache-halving.yaml",
        None,
        &[
            "server.tp_size=16",
            "server.nnodes=2",
            "memory.nodes=[{pin_limit_per_rank: 35GB}, {pin_limit_per_rank: 60GB}]",
        ],
    );
    assert_eq!(mc.first_run.len(), 16);
    for r in &mc.first_run {
        assert_eq!(r.outcome, Outcome::Started);
        assert_eq!(r.fitted_ratio, Some(2.0), "rank {}", r.rank);
        assert_eq!(r.requested_bytes, Some(host_bytes(2)));
    }
}

#[test]
fn without_auto_hicache_the_pin_limit_fails_registration() {
    // 0.5.21 auto-size: ratio min(2.0, …) = 2.0 → 28,113,297,408 B > 26 GB.
    let sets = [
        "server.enable_hierarchical_cache=true",
        "memory.pin_limit_per_rank=26GB",
    ];
    let mc = run("scenarios/auto-hicache-halving.yaml", Some("0.5.21"), &sets);
    for r in &mc.first_run {
        assert_eq!(r.outcome, Outcome::PinFailed);
        assert_eq!(
            r.message.as_deref(),
            Some(
                "cudaHostRegister failed (rc=2, out of memory) at offset=0 size=28113297408 (total=28113297408, chunk_limit=274877079552); host buffer is not pinned and device transfers may silently return stale data."
            )
        );
    }
    // Before 0.5.19 one call for the whole buffer (SGLang prints its pointer); the rc
    // and error string are scenario fields.
    let mut sets17 = sets.to_vec();
    sets17.extend([
        "startup.pin.failure_rc=1",
        "startup.pin.failure_error=invalid argument",
    ]);
    let mc = run(
        "scenarios/auto-hicache-halving.yaml",
        Some("0.5.17"),
        &sets17,
    );
    let r = &mc.first_run[0];
    assert_eq!(r.outcome, Outcome::PinFailed);
    // 0.5.17 has no auto-size: the default ratio 2.0 is explicit, same bytes.
    assert_eq!(
        r.message.as_deref(),
        Some(
            "cudaHostRegister failed (rc=1, invalid argument) for ptr=0x7f0000000000 size=28113297408; host buffer is not pinned and device transfers may silently return stale data."
        )
    );
    // Without a pin limit the same release and pools start.
    let mc = run(
        "scenarios/auto-hicache-halving.yaml",
        Some("0.5.21"),
        &["server.enable_hierarchical_cache=true"],
    );
    assert!(mc.first_run.iter().all(|r| r.outcome == Outcome::Started));
}

#[test]
fn gb300_under_cgroup_v1_refused_by_0_5_21_started_by_0_5_22() {
    let sets = ["memory.cgroup.version=v1"];
    let mc = run("scenarios/gb300-glm52-135g.yaml", Some("0.5.21"), &sets);
    // (900 GB − 60 GB − 420 GB − 10 GiB) // 4 = 102,315,645,440 B (102.32 GB) < 135 GB.
    assert!(mc.first_run.iter().all(|r| r.outcome == Outcome::Refused));
    assert!(
        mc.first_run
            .iter()
            .any(|r| r.budget_bytes == Some(102_315_645_440))
    );
    let mc = run("scenarios/gb300-glm52-135g.yaml", Some("0.5.22"), &sets);
    assert!(mc.first_run.iter().all(|r| r.outcome == Outcome::Started));
}

#[test]
fn gb300_log_lines_under_0_5_21_golden() {
    let s = load_scenario(
        "scenarios/gb300-glm52-135g.yaml",
        &[],
        Some("0.5.21".parse().unwrap()),
    )
    .unwrap();
    let plan = plan_for(&s).unwrap();
    let mc = startup::run(&plan, s.seed, 1);
    let rep = hicache_sim::report::startup::build(&s, &plan, &mc, s.seed);
    let text = hicache_sim::report::startup::render_log(&rep);
    // Per rank: the headroom line (psutil 890 GB = 828.9 GiB; cgroup 900 − 60 − 420 =
    // 420 GB = 391.2 GiB) and the ValueError: 4 × 2 lines. No small-host warning: the
    // 3,004,864-token host pool exceeds the 2,669,056-token device pool (0.5.21 keeps
    // GLM-5.2's index-K on all 78 layers with HiCache on: 55,224 B/token, not 47,700).
    assert_eq!(text.lines().count(), 8);
    let path = "tests/golden/gb300-glm52-135g.0.5.21.log";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, &text).unwrap();
    }
    let want = std::fs::read_to_string(path).expect("golden log (UPDATE_GOLDEN=1)");
    for (i, (got, want)) in text.lines().zip(want.lines()).enumerate() {
        assert_eq!(got, want, "line {}", i + 1);
    }
    assert_eq!(text, want);
}

#[test]
fn b200_host_smaller_than_device_warns_and_a_larger_size_is_refused_under_40135() {
    // HGX B200, DeepSeek-V3 TP8 (70,272 B/token, 200,000 device tokens), job memory.max
    // 300 GB, 8 × 15 GB process memory (O_DIRECT load): headroom 180 GB = 167.6 GiB;
    // psutil 2000 − 20 − 120 = 1860 GB = 1732.3 GiB; per rank (180 GB − 10 GiB) // 8 =
    // 21,157,822,720 B (21.16 GB).
    let base = [
        "server.enable_hierarchical_cache=true",
        "memory.cgroup={version: v2, max: 300GB}",
    ];
    let log0 = |size: &str| {
        let mut sets: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        sets.push(format!("server.hicache_size={size}"));
        let s = load_scenario(
            "scenarios/auto-hicache-halving.yaml",
            &sets,
            Some("pr40135".parse().unwrap()),
        )
        .unwrap();
        let plan = plan_for(&s).unwrap();
        let mc = startup::run(&plan, s.seed, 1);
        let rep = hicache_sim::report::startup::build(&s, &plan, &mc, s.seed);
        (mc.first_run[0].outcome, rep.ranks[0].log.clone())
    };
    // --hicache-size 10: 10e9 // 70,272 = 142,303 → 2,223 pages + 1 → 142,336 tokens
    // ≤ 200,000: the warning; 142,336 × 70,272 = 10,002,235,392 B.
    let (outcome, log) = log0("10");
    assert_eq!(outcome, Outcome::Started);
    assert_eq!(
        log,
        [
            "HiCache kv host pool (142336 tokens) is smaller than the device pool (200000 tokens);L2 cache effectiveness is reduced.Consider increasing --hicache-ratio (or --hicache-size) for higher L2 cache hit rate.",
            "HiCache memory headroom: host 1732.3 GiB, cgroup 167.6 GiB",
            "Allocating kv hierarchical KV host pool: 142336 tokens, 10.00 GB host memory.",
        ]
    );
    // --hicache-size 25: 355,760 → 5,559 pages → 355,776 tokens = 25,001,091,072 B.
    let (outcome, log) = log0("25");
    assert_eq!(outcome, Outcome::Refused);
    assert_eq!(
        log[1],
        "ValueError: Not enough host memory available. Requesting 25.00 GB but only have 21.16 GB free. Please reduce the size of the hierarchical cache."
    );
}

#[test]
fn h200_under_a_cgroup_v1_limit_refused_by_0_5_21_started_by_0_5_22() {
    // HGX H200 (2 TB), DeepSeek-V3 TP8 with the NextN layer packed, `--hicache-size 150`,
    // the job's cgroup v1 `memory.limit_in_bytes` = 1400 GB. At sampling the cgroup holds
    // 8 × 15 GB process memory + the 688 GB fp8 checkpoint's page cache = 808 GB.
    // request: 150e9 // 71,424 = 2,100,134 → 2,100,160 tokens (page 64) × 71,424
    //   = 150,001,827,840 B.
    let sets = ["memory.cgroup.version=v1", "memory.cgroup.max=1400GB"];
    const REQUEST: u64 = 150_001_827_840;
    // 0.5.21 counts the page cache as used: headroom 1400 − 808 = 592 GB < psutil 1880 GB;
    // budget (592e9 − 10 GiB) // 8 = 72,657,822,720 B (72.66 GB) → refused.
    let mc = run(
        "scenarios/deepseek-v3-mtp-packed.yaml",
        Some("0.5.21"),
        &sets,
    );
    for r in &mc.first_run {
        assert_eq!(r.outcome, Outcome::Refused);
        assert_eq!(r.available_bytes, Some(592_000_000_000));
        assert_eq!(r.budget_bytes, Some(72_657_822_720));
        assert_eq!(r.requested_bytes, Some(REQUEST));
    }
    // 0.5.22 credits active + inactive file on v1 as well: 1400 − 120 = 1280 GB;
    // (1280e9 − 10 GiB) // 8 = 158,657,822,720 B ≥ the request → starts.
    let mc = run(
        "scenarios/deepseek-v3-mtp-packed.yaml",
        Some("0.5.22"),
        &sets,
    );
    for r in &mc.first_run {
        assert_eq!(r.outcome, Outcome::Started);
        assert_eq!(r.budget_bytes, Some(158_657_822_720));
    }
}
