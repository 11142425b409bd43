//! `replay`, `trace gen` and `trace stats` as a user runs them.

use crate::support::{sim, succeeded};

fn stdout(args: &[&str]) -> String {
    let out = sim().args(args).output().unwrap();
    succeeded(&out);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn policy_simulator_engine_gives_the_tools_numbers() {
    // SGLang's hicache_policy_simulator.py on the Mooncake synthetic trace, L1 6000 /
    // L2 12000 pages of one 512-token block: 31.20 % / 46.74 % (write-through) and
    // 52.70 % (boundary), as the Python tool prints them.
    let wt = stdout(&[
        "replay",
        "--trace",
        "traces/synthetic_trace.jsonl",
        "--engine",
        "policy-simulator",
        "--l1-pages",
        "6000",
        "--l2-pages",
        "12000",
    ]);
    assert!(
        wt.contains("main_write_through  3993      121877    31.20%    46.74%"),
        "{wt}"
    );
    let b = stdout(&[
        "replay",
        "--trace",
        "traces/synthetic_trace.jsonl",
        "--write-policy",
        "boundary_l1_l2",
        "--l1-pages",
        "6000",
        "--l2-pages",
        "12000",
    ]);
    assert!(
        b.contains("boundary_l1_l2  3993      121877    31.20%    52.70%"),
        "{b}"
    );
    // boundary_l1_l2 is not a HiRadixCache write policy.
    sim()
        .args([
            "replay",
            "--trace",
            "traces/synthetic_trace.jsonl",
            "--engine",
            "hiradix",
            "--write-policy",
            "boundary_l1_l2",
        ])
        .assert()
        .code(2);
}

#[test]
fn hiradix_replay_json_conserves_tokens() {
    let out = stdout(&[
        "replay",
        "--trace",
        "traces/synthetic_trace.jsonl",
        "--page-size",
        "512",
        "--l1-pages",
        "6000",
        "--l2-pages",
        "12000",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let m = &v["metrics"];
    assert_eq!(m["requests"], 3993);
    assert_eq!(m["input_tokens"], 61_194_628u64);
    let sum = [
        "device_hit_tokens",
        "host_hit_tokens",
        "storage_hit_tokens",
        "miss_tokens",
    ]
    .iter()
    .map(|k| m[k].as_u64().unwrap())
    .sum::<u64>();
    assert_eq!(sum, 61_194_628);
    assert!(m["host_hit_rate"].as_f64().unwrap() > 0.1);
    assert!(
        v["definitions"]
            .as_str()
            .unwrap()
            .contains("longest-prefix")
    );
}

#[test]
fn trace_gen_is_deterministic_and_stats_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    let c = dir.path().join("c.jsonl");
    for (p, seed) in [(&a, "7"), (&b, "7"), (&c, "8")] {
        sim()
            .args(["trace", "gen", "--requests", "200", "--seed", seed, "-o"])
            .arg(p)
            .assert()
            .success();
    }
    let (a, b, c) = (
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        std::fs::read(&c).unwrap(),
    );
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.iter().filter(|&&x| x == b'\n').count(), 200);
    let stats = stdout(&[
        "trace",
        "stats",
        "traces/synthetic_trace.jsonl",
        "--output-format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(v["requests"], 3993);
    assert_eq!(v["distinct_pages"], 40_148); // whole 512-token pages (43,924 distinct blocks incl. partial ones)
}
