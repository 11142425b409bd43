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

/// The docs page the engines' hit-rate table is written to, and its block's name.
const HIT_RATES_DOC: (&str, &str) = (
    "docs/src/fidelity/hit-rates.md",
    "engines on the synthetic trace",
);

/// The table at the top of `docs/src/fidelity/hit-rates.md`: the policy simulator's two
/// policies and the runtime engine's two trees on the bundled synthetic trace, L1 6000 /
/// L2 12000 pages of 512 tokens, each from the replay a user runs (`--format json`).
/// `UPDATE_DOCS=1` writes it; otherwise a table that differs fails (`support::check_doc`).
#[test]
fn engines_hit_rate_table_in_the_docs() {
    let replay = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "replay",
            "--trace",
            "traces/synthetic_trace.jsonl",
            "--l1-pages",
            "6000",
            "--l2-pages",
            "12000",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        serde_json::from_str(&stdout(&args)).unwrap()
    };
    let pct = |x: &serde_json::Value| format!("{:.2} %", x.as_f64().unwrap() * 100.0);
    let mut rows = Vec::new();
    // The simulator's `main_write_through` is the CLI's `write_through`.
    for (flag, policy) in [
        ("write_through", "main_write_through"),
        ("boundary_l1_l2", "boundary_l1_l2"),
    ] {
        let v = replay(&["--engine", "policy-simulator", "--write-policy", flag]);
        assert_eq!(v["policy"], policy);
        assert_eq!(v["requests"], 3993);
        rows.push((
            "policy-simulator".to_string(),
            policy,
            pct(&v["l1_hit_rate"]),
            pct(&v["l1_l2_hit_rate"]),
        ));
    }
    // The V1 tree evicts what a request asks for (`requested`, as 0.5.14–0.5.16 run
    // it); under the default release's `shortfall` it gives the 0.5.23 tree's figures.
    for (config, name) in [
        (&["tree=v1", "device_evict_amount=requested"][..], "V1 tree"),
        (&["tree=unified_0_5_23"][..], "0.5.23 tree"),
    ] {
        let mut args = vec![
            "--engine",
            "hiradix",
            "--page-size",
            "512",
            "--write-policy",
            "write_through",
        ];
        for c in config {
            args.extend(["--config", c]);
        }
        let m = &replay(&args)["metrics"];
        assert_eq!(m["requests"], 3993);
        let flags: Vec<String> = config.iter().map(|c| format!("--config {c}")).collect();
        rows.push((
            format!(
                "hiradix, {name} (`{}`) (whole pages only, page-counted)",
                flags.join(" ")
            ),
            "write_through",
            pct(&m["device_page_hit_rate"]),
            pct(&m["total_page_hit_rate"]),
        ));
    }
    let mut table =
        String::from("| engine | policy | L1 hit | L1+L2 hit |\n| --- | --- | --- | --- |\n");
    for (engine, policy, l1, l2) in &rows {
        table.push_str(&format!("| {engine} | `{policy}` | {l1} | {l2} |\n"));
    }
    print!("{table}");
    let figures: Vec<(&str, &str)> = rows.iter().map(|r| (&*r.2, &*r.3)).collect();
    // The tool's own figures (`policy_sim_synthetic` checks every counter), then the
    // runtime engine's: the two trees differ on the device tier only.
    assert_eq!(
        figures,
        [
            ("31.20 %", "46.74 %"),
            ("31.20 %", "52.70 %"),
            ("32.64 %", "49.13 %"),
            ("32.80 %", "49.13 %"),
        ]
    );
    crate::support::check_doc(HIT_RATES_DOC.0, HIT_RATES_DOC.1, &table).unwrap();
}

/// The replay of a scenario whose start-up leaves a rank refused (the 8-GPU race: rank 6
/// asks 24.77 GB of 22.74) says SGLang would not serve, instead of announcing the
/// started ranks' pools as the deployment's.
#[test]
fn a_replay_after_a_refused_rank_says_the_server_would_not_start() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = sim()
        .current_dir(root)
        .args([
            "replay",
            "scenarios/tp8-startup-race.yaml",
            "--trace",
            "traces/synthetic_trace.jsonl",
        ])
        .output()
        .unwrap();
    succeeded(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "did not start 1 of 8 ranks (refused or killed: SGLang would not serve); replaying one started rank's pools anyway"
        ),
        "{out}"
    );
}
