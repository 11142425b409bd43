//! The `startup` and `versions` commands as a user runs them: exit codes, JSON fields,
//! determinism, and a clear error (file, line, field; exit 2) for each kind of bad input.

use crate::support::sim;
use predicates::prelude::*;

fn json(args: &[&str]) -> serde_json::Value {
    let out = sim().args(args).output().unwrap();
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn json_has_the_documented_fields() {
    let v = json(&[
        "startup",
        "scenarios/tp8-startup-race.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(v["sglang"], "pr35540");
    assert_eq!(v["runs"], 1);
    assert_eq!(v["outcomes"]["refused"], 1);
    assert_eq!(v["refusal_probability"], 1.0);
    let r7 = &v["ranks"][7];
    assert_eq!(r7["rank"], 7);
    assert_eq!(r7["outcome"], "refused");
    assert_eq!(r7["requested_bytes"], 24_767_299_584u64);
    assert!(r7["sampled_at_s"].as_f64().unwrap() > 6.5);
    assert_eq!(
        r7["message"],
        "Not enough host memory available. Requesting 24.77 GB but only have 22.74 GB free. Please reduce the size of the hierarchical cache."
    );
    assert_eq!(v["ranks"][0]["outcome"], "started");
    assert_eq!(v["ranks"][0]["budget_bytes"], 25_836_250_000u64);
}

#[test]
fn same_seed_same_bytes_for_any_thread_count() {
    // 3,000 runs span several Monte Carlo chunks, so two threads really interleave.
    let run = |extra: [&str; 2]| {
        let base = [
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--sglang",
            "pr35540",
            "--runs",
            "3000",
            "--format",
            "json",
        ];
        sim().args(base).args(extra).output().unwrap().stdout
    };
    let a = run(["--jobs", "1"]);
    assert_eq!(a, run(["--jobs", "2"]));
    assert_eq!(a, run(["--jobs", "1"]));
    assert_ne!(a, run(["--seed", "99"]));
}

#[test]
fn fail_on_refusal_exits_1() {
    sim()
        .args([
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--fail-on-refusal",
        ])
        .assert()
        .code(1);
    sim()
        .args([
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--fail-on-refusal",
            "--sglang",
            "page-cache-credit",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("all 4 ranks start"));
}

#[test]
fn versions_lists_every_id() {
    let out = sim().args(["versions"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for id in [
        "pre-28614",
        "pr28614",
        "pr35540",
        "pr40135",
        "pr40135-whole-headroom",
        "page-cache-credit",
        "page-cache-credit-clean",
        "explicit-snapshot",
        "auto-hicache",
        "0.5.14",
        "0.5.15.post1",
        "0.5.23",
        "latest",
    ] {
        assert!(text.lines().any(|l| l.trim_start().starts_with(id)), "{id}");
    }
    // 11 releases, `latest`, 9 what-ifs, 3 proposals.
    let v = json(&["versions", "--format", "json"]);
    assert_eq!(v.as_array().unwrap().len(), 24);
    assert_eq!(
        v.as_array()
            .unwrap()
            .iter()
            .filter(|x| x["kind"] == "proposal")
            .count(),
        3
    );
}

/// Writes `body` to a scenario file and runs `startup` on it; returns stderr.
fn bad(body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, body).unwrap();
    let out = sim()
        .args(["startup", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.yaml"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

const OK: &str = "node: gb300\nmodel: glm-5.2\nserver:\n  tp_size: 4\n  page_size: 64\n  enable_hierarchical_cache: true\n  hicache_size: 135\n";

#[test]
fn unknown_key_names_line_field_and_nearest() {
    let e = bad(&OK.replace("hicache_size: 135", "hicache_sise: 135"));
    assert!(e.contains("bad.yaml:7"), "{e}");
    assert!(e.contains("server.hicache_sise"), "{e}");
    assert!(e.contains("did you mean `hicache_size`"), "{e}");
}

#[test]
fn wrong_unit_and_negative_size() {
    let e = bad(&format!("{OK}memory:\n  host_other_used: 10 GBs\n"));
    assert!(
        e.contains("bad.yaml:9")
            && e.contains("memory.host_other_used")
            && e.contains("unknown unit"),
        "{e}"
    );
    let e = bad(&format!("{OK}memory:\n  host_other_used: -10GB\n"));
    assert!(e.contains("negative"), "{e}");
    let e = bad(&OK.replace("hicache_size: 135", "hicache_size: -5"));
    assert!(
        e.contains("bad.yaml:7") && e.contains("server.hicache_size"),
        "{e}"
    );
    let e = bad(&OK.replace("tp_size: 4", "tp_size: 0"));
    assert!(e.contains("bad.yaml:4") && e.contains("at least 1"), "{e}");
}

#[test]
fn fraction_outside_0_1_has_sglangs_message() {
    let body = "node: gb300\nmodel: glm-5.2\nserver:\n  tp_size: 4\n  enable_hierarchical_cache: true\n  hicache_host_memory_fraction: 1.5\n";
    let e = bad(body);
    assert!(
        e.contains("--hicache-host-memory-fraction must be in (0, 1]."),
        "{e}"
    );
    assert!(
        e.contains("bad.yaml:6") && e.contains("server.hicache_host_memory_fraction"),
        "{e}"
    );
}

#[test]
fn unknown_preset_lists_the_known_ones() {
    let e = bad(&OK.replace("node: gb300", "node: gb3000"));
    assert!(
        e.contains("bad.yaml:1") && e.contains("unknown node preset `gb3000`"),
        "{e}"
    );
    assert!(
        e.contains("did you mean `gb300`") && e.contains("hgx-h200"),
        "{e}"
    );
    let e = bad(&OK.replace("model: glm-5.2", "model: glm-9"));
    assert!(
        e.contains("unknown model `glm-9`")
            && e.contains("deepseek-v3")
            && e.contains("model: {config:"),
        "{e}"
    );
    let e = bad(&OK.replace("node: gb300", "node: {preset: gb300, host_ram: 1TB}"));
    assert!(
        e.contains("node.host_ram") && e.contains("did you mean `host_dram`"),
        "{e}"
    );
}

#[test]
fn launch_command_with_a_flag_sglang_does_not_have() {
    let body = "node: gb300\nmodel: glm-5.2\nserver:\n  launch: python -m sglang.launch_server --model-path m --tp 4 --enable-hierarchical-cache --hicache-sizes 135\n";
    let e = bad(body);
    assert!(
        e.contains("bad.yaml:4")
            && e.contains(
                "SGLang 0.5.23 has no flag --hicache-sizes (did you mean --hicache-size?)"
            ),
        "{e}"
    );
}

#[test]
fn unknown_version_and_missing_file() {
    let e = bad(&format!("sglang: pr99999\n{OK}"));
    assert!(e.contains("bad.yaml:1") && e.contains("pr35540"), "{e}");
    sim()
        .args(["startup", "no/such/file.yaml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no/such/file.yaml"));
    sim()
        .args([
            "startup",
            "scenarios/tp8-startup-race.yaml",
            "--set",
            "server.tp_size",
        ])
        .assert()
        .code(2);
}

#[test]
fn presets_lists_nodes_and_models() {
    let out = sim().args(["presets"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("gb300      4 x GB300 (277.5 GiB nvidia-smi)"),
        "{text}"
    );
    assert!(
        text.contains("glm-5.2          78 layers, kv bf16: kv 89856 B, indexer 2772 B"),
        "{text}"
    );
    let v = json(&["presets", "--format", "json"]);
    assert_eq!(v["nodes"]["hgx-h200"]["gpu_memory"], 150_754_820_096u64);
    assert_eq!(v["models"].as_object().unwrap().len(), 12);
}

#[test]
fn startup_csv_has_every_rank_and_its_plot() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("race.csv");
    sim()
        .args(["startup", "scenarios/tp8-startup-race.yaml", "--csv"])
        .arg(&csv)
        .assert()
        .success();
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 9);
    assert!(
        text.lines().nth(8).unwrap().starts_with("7,0,refused,"),
        "{text}"
    );
    assert!(
        text.contains(",22740337552,24767299584,-2026962032,"),
        "{text}"
    );
    let png = std::fs::read(dir.path().join("race_budget_vs_request.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}
