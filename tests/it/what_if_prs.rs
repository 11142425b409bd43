//! The what-ifs of three open SGLang pull requests (`release::proposal`): `versions`
//! lists them, a replay under each says it is one (text and JSON, `unverified` with what
//! is assumed), and on `scenarios/what-if-prs.yaml` (the quickstart's GB300 pools,
//! write_back, a file L3) each changes what its rule changes and nothing else. The tree
//! rule of PR 39395 is hand-checked in `tree_unified_rules`.

use crate::support::{exit2, ok, repo, run, stdout};

fn replay(sglang: &str, extra: &[&str]) -> serde_json::Value {
    let sc = repo("scenarios/what-if-prs.yaml");
    let set = format!("sglang={sglang}");
    let mut args = vec![
        "replay",
        sc.to_str().unwrap(),
        "--set",
        &set,
        "--format",
        "json",
    ];
    args.extend(extra);
    let o = run(&args, &repo("."));
    ok(&o);
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn metric(v: &serde_json::Value, k: &str) -> f64 {
    v["metrics"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("metrics.{k}"))
}

#[test]
fn versions_lists_the_three_open_prs_with_their_addresses() {
    let o = run(&["versions"], &repo("."));
    ok(&o);
    let t = stdout(&o);
    for (id, pr) in [
        ("pr39395", "39395"),
        ("pr40576", "40576"),
        ("pr39845", "39845"),
    ] {
        assert!(t.contains(&format!("  {id} ")), "{id} listed");
        assert!(
            t.contains(&format!("https://github.com/sgl-project/sglang/pull/{pr}")),
            "{pr} cited"
        );
    }
    assert!(t.contains("Proposals (open upstream PRs' replay rules on 0.5.23"));
}

/// On the scenario's trace (3,993 requests, every one replayed):
/// - PR 39395 changes nothing: no load-back there runs out of host room part-way (the
///   per-node funding only differs when the batched load would have to drop a sole host
///   copy; `tree_unified_rules` shows the case);
/// - PR 40576 at 0.7 copies 31× the bytes to host (its duplicates are the first copies
///   0.5.23's `_reclaim_full_host_duplicates` frees under host pressure, so the
///   watermark writes them again each iteration) for −0.003 points of hit rate;
/// - PR 39845 writes 3.3 % fewer bytes to L3 (pages written as they leave host, less
///   those already there) for the same hits (the file tier here is unbounded, so
///   exclusivity cannot add capacity).
#[test]
fn each_pr_changes_what_its_rule_changes_on_the_what_if_scenario() {
    let base = replay("0.5.23", &[]);
    let s = replay("pr39395", &[]);
    let w = replay("pr40576", &[]);
    let x = replay("pr39845", &[]);
    assert_eq!(
        base["metrics"], s["metrics"],
        "39395: identical on this trace"
    );
    assert_eq!(
        metric(&base, "total_hit_rate"),
        metric(&x, "total_hit_rate")
    );
    assert_eq!(metric(&base, "backup_bytes"), metric(&x, "backup_bytes"));
    assert_eq!(metric(&base, "l3_write_bytes"), 998_531_193_600.0);
    assert_eq!(metric(&x, "l3_write_bytes"), 965_389_996_800.0);
    assert_eq!(metric(&base, "backup_bytes"), 1_824_020_524_800.0);
    assert_eq!(metric(&w, "backup_bytes"), 56_767_331_923_200.0);
    assert!((metric(&base, "total_hit_rate") - 0.650975).abs() < 5e-7);
    assert!((metric(&w, "total_hit_rate") - 0.650950).abs() < 5e-7);
    // Labelled in the JSON, with what is assumed; 0.5.23 is not.
    assert!(base.get("what_if").is_none());
    assert_eq!(w["what_if"]["status"], "unverified");
    assert_eq!(
        w["what_if"]["pull_request"],
        "https://github.com/sgl-project/sglang/pull/40576"
    );
    assert_eq!(w["config"]["write_back_threshold"], 0.7);
    assert_eq!(s["config"]["load_back"], "serialized_per_node");
    assert_eq!(x["config"]["l3_write"], "at_host_eviction");
    assert!(
        base["config"].get("load_back").is_none(),
        "0.5.23 writes no new key"
    );
}

/// The watermark is the scenario's under `pr40576` (1: every release's write_back, so
/// 0.5.23's bytes); any other selection has no such flag, as SGLang's argparse.
#[test]
fn the_write_back_threshold_is_pr_40576s_flag_only() {
    let one = replay(
        "pr40576",
        &["--set", "server.hicache_write_back_threshold=1"],
    );
    assert_eq!(metric(&one, "backup_bytes"), 1_824_020_524_800.0);
    let sc = repo("scenarios/what-if-prs.yaml");
    let o = run(
        &[
            "replay",
            sc.to_str().unwrap(),
            "--set",
            "server.hicache_write_back_threshold=0.5",
        ],
        &repo("."),
    );
    exit2(
        &o,
        &["server.hicache_write_back_threshold", "PR 40576", "pr40576"],
    );
    let o = run(
        &[
            "replay",
            sc.to_str().unwrap(),
            "--set",
            "sglang=pr40576",
            "--set",
            "server.hicache_write_back_threshold=1.5",
        ],
        &repo("."),
    );
    exit2(&o, &["server.hicache_write_back_threshold", "[0, 1]"]);
}
