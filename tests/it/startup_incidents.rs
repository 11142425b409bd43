//! The incidents the bundled scenarios (`scenarios/`) describe, reproduced with their
//! exact figures.

use hicache_sim::commands::startup_cmd::{load_scenario, plan_for};
use hicache_sim::startup::{self, MonteCarlo, Outcome};

fn run(path: &str, version: Option<&str>, runs: u64) -> MonteCarlo {
    let s = load_scenario(path, &[], version.map(|v| v.parse().unwrap())).expect("scenario loads");
    let plan = plan_for(&s).expect("plan builds");
    startup::run(&plan, s.seed, runs)
}

const MSG_HEAD: &str = "Not enough host memory available. Requesting ";
const MSG_TAIL: &str = " GB free. Please reduce the size of the hierarchical cache.";

#[test]
fn gb300_refused_under_40135_with_budgets_100_to_117_gb() {
    let mc = run("scenarios/gb300-glm52-135g.yaml", None, 1);
    assert_eq!(mc.first_run.len(), 4);
    // 135e9 // 44,928 = 3,004,807 tokens → 46,951 pages of 64 → 3,004,864 tokens.
    let requested = 46_951u64 * 64 * 44_928;
    assert_eq!(requested, 135_002_529_792);
    let mut budgets: Vec<i128> = Vec::new();
    for r in &mc.first_run {
        assert_eq!(r.outcome, Outcome::Refused, "rank {}", r.rank);
        assert_eq!(r.requested_bytes, Some(requested));
        let b = r.budget_bytes.unwrap();
        assert!(
            (100_000_000_000..=117_000_000_000).contains(&b),
            "budget {b}"
        );
        budgets.push(b);
    }
    // All four ranks loaded their shards: (900 GB − 60 GB − 420 GB − 10 GiB) // 4.
    let all_cache = (900_000_000_000i128 - 60_000_000_000 - 420_000_000_000 - 10 * (1 << 30)) / 4;
    assert_eq!(all_cache, 102_315_645_440); // prints 102.32
    assert!(budgets.contains(&all_cache), "{budgets:?}");
    let r = mc
        .first_run
        .iter()
        .find(|r| r.budget_bytes == Some(all_cache))
        .unwrap();
    assert_eq!(
        r.message.as_deref(),
        Some(
            "Not enough host memory available. Requesting 135.00 GB but only have 102.32 GB free. Please reduce the size of the hierarchical cache."
        )
    );
}

#[test]
fn gb300_with_60_gb_reclaimed_gives_117_32() {
    let s = load_scenario(
        "scenarios/gb300-glm52-135g.yaml",
        &[
            "startup.weight_load.reclaimed_before_sizing=60GB".into(),
            "startup.arrival.jitter={dist: none}".into(),
        ],
        None,
    )
    .unwrap();
    let mc = startup::run(&plan_for(&s).unwrap(), 0, 1);
    // The first rank to sample: (900 − 60 − (420 − 60) GB − 10 GiB) // 4 = 117.32 GB.
    let r0 = &mc.first_run[0];
    assert_eq!(r0.budget_bytes, Some(117_315_645_440));
    assert!(
        r0.message
            .as_deref()
            .unwrap()
            .contains("Requesting 135.00 GB but only have 117.32 GB free")
    );
    assert!(mc.first_run.iter().all(|r| r.outcome == Outcome::Refused));
}

#[test]
fn gb300_starts_with_page_cache_credit_and_kernel_reclaims_cache() {
    let mc = run(
        "scenarios/gb300-glm52-135g.yaml",
        Some("page-cache-credit"),
        1,
    );
    assert!(mc.first_run.iter().all(|r| r.outcome == Outcome::Started));
    // Crediting the clean cache: (900 − 60 GB − 10 GiB) // 4 = 207.32 GB for the ranks
    // that sample before any peer has pinned.
    assert!(
        mc.first_run
            .iter()
            .any(|r| r.budget_bytes == Some(207_315_645_440))
    );
    // Pinned: 4 × (135.00 GB KV + 8.33 GB indexer); the kernel reclaims exactly what
    // crosses memory.max: 60 + 4 × pools + 420 − 900 GB, and kills nobody.
    let pools: u64 = mc
        .first_run
        .iter()
        .flat_map(|r| r.pools.iter())
        .map(|p| p.requested_bytes)
        .sum();
    let reclaimed: u64 = mc.first_run.iter().map(|r| r.reclaimed_bytes).sum();
    assert_eq!(
        reclaimed,
        60_000_000_000 + pools + 420_000_000_000 - 900_000_000_000
    );
}

#[test]
fn gb300_starts_under_35540_on_usual_timing_but_races_with_stragglers() {
    let mc = run("scenarios/gb300-glm52-135g.yaml", Some("pr35540"), 2000);
    assert!(mc.first_run.iter().all(|r| r.outcome == Outcome::Started));
    // psutil counts the cache as available: (890 GB − 10 GiB) // 4 ≈ 219.82 GB for a KV
    // pool sampled before any peer has pinned.
    assert!(
        mc.first_run
            .iter()
            .any(|r| r.pools[0].budget_bytes == 219_815_645_440)
    );
    // 0.5.19 keeps GLM-5.2's index-K on all 78 layers with HiCache on: 46,951 pages × 64
    // × 78 × 132 = 30,938,079,744 B (30.94 GB) of indexer on top of the 135 GB.
    assert!(
        mc.first_run
            .iter()
            .all(|r| r.pools[1].requested_bytes == 30_938_079_744)
    );
    assert!(
        mc.refusal_probability > 0.0 && mc.refusal_probability < 0.2,
        "{}",
        mc.refusal_probability
    );
    assert_eq!(mc.oom_probability, 0.0);
    let under_40135 = run("scenarios/gb300-glm52-135g.yaml", None, 500);
    assert_eq!(under_40135.refusal_probability, 1.0);
}

#[test]
fn tp8_race_shows_the_exact_message_and_is_a_probability() {
    let mc = run("scenarios/tp8-startup-race.yaml", None, 2000);
    let refused: Vec<_> = mc
        .first_run
        .iter()
        .filter(|r| r.outcome == Outcome::Refused)
        .collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].rank, 7);
    assert_eq!(
        refused[0].message.as_deref(),
        Some(format!("{MSG_HEAD}24.77 GB but only have 22.74{MSG_TAIL}").as_str())
    );
    assert_eq!(refused[0].requested_bytes, Some(24_767_299_584));
    // 206.69 GB / 8 for every rank that sampled before any peer had pinned.
    assert!(
        mc.first_run
            .iter()
            .filter(|r| r.outcome == Outcome::Started)
            .all(|r| r.budget_bytes == Some(25_836_250_000))
    );
    assert_eq!(
        refused[0].budget_bytes,
        Some((206_690_000_000 - 24_767_299_584) / 8)
    );
    assert!(
        mc.refusal_probability > 0.0 && mc.refusal_probability < 1.0,
        "{}",
        mc.refusal_probability
    );
    for fixed in ["explicit-snapshot", "pr40135-whole-headroom"] {
        let mc = run("scenarios/tp8-startup-race.yaml", Some(fixed), 2000);
        assert_eq!(mc.refusal_probability, 0.0, "{fixed}");
        assert_eq!(mc.outcomes.started, 2000, "{fixed}");
    }
}

#[test]
fn tp8_1772gib_fails_intermittently_and_the_fixes_start() {
    let mc = run("scenarios/tp8-1772gib-176g.yaml", None, 2000);
    assert!(
        mc.refusal_probability > 0.0 && mc.refusal_probability < 1.0,
        "{}",
        mc.refusal_probability
    );
    // 176e9 // 40,016 = 4,398,240 → 68,723 pages of 64 → 4,398,272 tokens → 176.00 GB;
    // the indexer pool shares the slot count: 4,398,272 × 8,052 B.
    let r0 = &mc.first_run[0];
    assert_eq!(r0.pools[0].requested_bytes, 4_398_272 * 40_016);
    assert_eq!(r0.pools[1].requested_bytes, 4_398_272 * 8_052);
    for fixed in ["explicit-snapshot", "pr40135-whole-headroom"] {
        let mc = run("scenarios/tp8-1772gib-176g.yaml", Some(fixed), 2000);
        assert_eq!(mc.refusal_probability, 0.0, "{fixed}");
    }
}

#[test]
fn psutil_blind_to_the_cgroup_pins_into_an_oom_kill() {
    // #35540 reads psutil, which ignores memory.max: with a 560 GB job limit every rank
    // sees ~220 GB and pins 135 GB + 30.94 GB (0.5.19 keeps the indexer on all 78 layers
    // with HiCache on); the kernel reclaims the whole 420 GB of checkpoint cache and
    // then has to kill.
    let s = load_scenario(
        "scenarios/gb300-glm52-135g.yaml",
        &["memory.cgroup.max=560GB".into()],
        Some("pr35540".parse().unwrap()),
    )
    .unwrap();
    let mc = startup::run(&plan_for(&s).unwrap(), s.seed, 1);
    let killed: Vec<_> = mc
        .first_run
        .iter()
        .filter(|r| r.outcome == Outcome::OomKilled)
        .collect();
    assert!(!killed.is_empty());
    assert!(
        killed[0]
            .message
            .as_deref()
            .unwrap()
            .contains("OOM kill in cgroup /job"),
        "{:?}",
        killed[0].message
    );
    // The same limit under #40135 refuses instead of pinning: no kill.
    let mc = startup::run(
        &plan_for(
            &load_scenario(
                "scenarios/gb300-glm52-135g.yaml",
                &["memory.cgroup.max=560GB".into()],
                None,
            )
            .unwrap(),
        )
        .unwrap(),
        2,
        1,
    );
    assert!(mc.first_run.iter().all(|r| r.outcome == Outcome::Refused));
}

#[test]
fn tp8_over_two_trays_splits_four_ways_and_reduces_over_both_nodes() {
    // TP8 over two 4-GPU GB300 trays: ranks_per_host = 8 // 2 = 4; each tray has its own
    // memory and cgroup (420 GB of checkpoint cache on each: 840 GB / 2 nodes).
    let sets = [
        "server.tp_size=8".into(),
        "server.nnodes=2".into(),
        "startup.weight_load.bytes_per_node=420GB".into(),
        "startup.arrival.jitter={dist: none}".into(),
    ];
    let s = load_scenario(
        "scenarios/gb300-glm52-135g.yaml",
        &sets,
        Some("explicit-snapshot".parse().unwrap()),
    )
    .unwrap();
    let plan = plan_for(&s).unwrap();
    assert_eq!(
        (
            plan.world_size,
            plan.nnodes,
            plan.ranks_per_node,
            plan.ranks_per_host
        ),
        (8, 2, 4, 4)
    );
    let mc = startup::run(&plan, 0, 1);
    assert_eq!(mc.first_run.iter().filter(|r| r.node == 1).count(), 4);
    // One snapshot per rank, MIN over the world: every rank books against the same
    // (900 − 60 GB − 10 GiB) // 4 with the cache credited (variant E).
    assert!(mc.first_run.iter().all(|r| r.outcome == Outcome::Started));
    assert!(
        mc.first_run
            .iter()
            .all(|r| r.budget_bytes == Some(207_315_645_440)),
        "{:?}",
        mc.first_run
            .iter()
            .map(|r| r.budget_bytes)
            .collect::<Vec<_>>()
    );
}
