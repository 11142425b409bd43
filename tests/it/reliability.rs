//! Hostile input and faults: a test per defect, through the real binary.
//! Each asserts the exit code and the words of the message a user would see.

use std::path::Path;
use std::process::Command;

use crate::support::{BIN, SWEEP_SCENARIO, code, ok, run, stderr, trace_workdir};

/// A small sweep with a trace beside it: GB300, page-cache-credit, 2 × 2 points.
const SCENARIO: &str = SWEEP_SCENARIO;

/// A temp folder with `s.yaml` and a 300-request slice of the bundled synthetic trace.
fn workdir() -> tempfile::TempDir {
    let d = trace_workdir();
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    d
}

// 1. --resume and merge refuse another scenario, naming what differs.
#[test]
fn resume_refuses_each_kind_of_change_by_name() {
    let d = workdir();
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let base = SCENARIO.to_string();
    // (what changes, the scenario text, the words the refusal must carry)
    let changes: Vec<(&str, String, &str)> = vec![
        (
            "version",
            base.replace("sglang: page-cache-credit", "sglang: pr40135"),
            "sglang",
        ),
        (
            "host DRAM",
            base.replace("node: gb300", "node: {preset: gb300, host_dram: 800GB}"),
            "node.host_dram",
        ),
        (
            "cgroup max",
            base.replace("max: 900GB", "max: 880GB"),
            "memory.cgroup.max",
        ),
        ("runs", base.replace("runs: 20", "runs: 21"), "runs"),
        (
            "timing",
            base.replace("timing: off", "timing: on"),
            "runtime.replay.timing",
        ),
        (
            "model",
            base.replace("model: glm-5.2", "model: glm-5"),
            "model",
        ),
        (
            "axis values",
            base.replace("[0.5, 1.0]", "[0.5, 0.9]"),
            "axis values or seeds",
        ),
        (
            "seeds",
            format!("{base}  seeds: 2\n"),
            "sweep axes or seeds",
        ),
    ];
    for (what, text, words) in &changes {
        std::fs::write(d.path().join("b.yaml"), text).unwrap();
        let o = run(
            &["sweep", "b.yaml", "--out", "o", "--quiet", "--resume"],
            d.path(),
        );
        assert_eq!(code(&o), 2, "{what}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("--resume refused") && e.contains(words),
            "{what}: {e}"
        );
    }
    // The trace's content under the same name.
    let t = d.path().join("trace.jsonl");
    let text = std::fs::read_to_string(&t).unwrap();
    let fewer: String = text.lines().take(299).map(|l| format!("{l}\n")).collect();
    std::fs::write(&t, fewer).unwrap();
    let o = run(
        &["sweep", "s.yaml", "--out", "o", "--quiet", "--resume"],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("trace content trace.jsonl"),
        "{}",
        stderr(&o)
    );
    std::fs::write(&t, text).unwrap();
    // --set on resume.
    let o = run(
        &[
            "sweep",
            "s.yaml",
            "--out",
            "o",
            "--quiet",
            "--resume",
            "--set",
            "server.mem_fraction_static=0.8",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("server.mem_fraction_static"),
        "{}",
        stderr(&o)
    );
    // The unchanged scenario still resumes.
    let o = run(
        &["sweep", "s.yaml", "--out", "o", "--quiet", "--resume"],
        d.path(),
    );
    ok(&o);
    assert!(stderr(&o).contains("4 resumed"), "{}", stderr(&o));
}

#[test]
fn merge_refuses_shards_of_different_scenarios() {
    let d = workdir();
    std::fs::write(
        d.path().join("b.yaml"),
        SCENARIO.replace("max: 900GB", "max: 880GB"),
    )
    .unwrap();
    ok(&run(
        &["sweep", "s.yaml", "--out", "a", "--quiet", "--shard", "1/2"],
        d.path(),
    ));
    ok(&run(
        &["sweep", "b.yaml", "--out", "b", "--quiet", "--shard", "2/2"],
        d.path(),
    ));
    let o = run(
        &[
            "merge",
            "a/results.shard-1-of-2.csv",
            "b/results.shard-2-of-2.csv",
            "-o",
            "m.csv",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("different sweeps") && stderr(&o).contains("memory.cgroup.max"),
        "{}",
        stderr(&o)
    );
    assert!(!d.path().join("m.csv").exists());
}

// 2. An output that is an input is refused before anything is written.
#[test]
fn outputs_never_overwrite_inputs() {
    let d = workdir();
    let before = std::fs::read(d.path().join("s.yaml")).unwrap();
    let o = run(&["startup", "s.yaml", "--csv", "s.yaml"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("scenario"), "{}", stderr(&o));
    assert_eq!(std::fs::read(d.path().join("s.yaml")).unwrap(), before);
    let trace = std::fs::read(d.path().join("trace.jsonl")).unwrap();
    let o = run(
        &[
            "replay",
            "--trace",
            "trace.jsonl",
            "--l1-pages",
            "100",
            "--timeline",
            "./trace.jsonl",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("trace"), "{}", stderr(&o));
    assert_eq!(std::fs::read(d.path().join("trace.jsonl")).unwrap(), trace);
    // merge -o one of its inputs
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let o = run(&["merge", "o/results.csv", "-o", "o/results.csv"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

// 3. merge -o through a symlink writes its target; a device is written in place.
#[test]
fn merge_writes_through_links_and_never_renames_over_a_device() {
    let d = workdir();
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let target = d.path().join("target.csv");
    std::fs::write(&target, "old").unwrap();
    std::os::unix::fs::symlink(&target, d.path().join("link.csv")).unwrap();
    ok(&run(
        &["merge", "o/results.csv", "-o", "link.csv"],
        d.path(),
    ));
    let meta = std::fs::symlink_metadata(d.path().join("link.csv")).unwrap();
    assert!(meta.file_type().is_symlink());
    assert_eq!(
        std::fs::read(&target).unwrap(),
        std::fs::read(d.path().join("o/results.csv")).unwrap()
    );
    if Path::new("/dev/full").exists() {
        let o = run(&["merge", "o/results.csv", "-o", "/dev/full"], d.path());
        assert_eq!(code(&o), 3, "{}", stderr(&o));
        assert!(stderr(&o).contains("/dev/full"), "{}", stderr(&o));
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::metadata("/dev/full")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
}

// 4. Two sweeps into one folder: the second fails at once, naming the first.
#[test]
fn second_sweep_into_a_held_folder_fails_naming_the_holder() {
    let d = workdir();
    std::fs::create_dir(d.path().join("o")).unwrap();
    // Hold the lock the way a running sweep does.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(d.path().join("o/.hicache-sim.lock"))
        .unwrap();
    f.try_lock().unwrap();
    std::fs::write(
        d.path().join("o/.hicache-sim.lock"),
        "pid 1: hicache-sim sweep a.yaml",
    )
    .unwrap();
    let o = run(&["sweep", "s.yaml", "--out", "o", "--quiet"], d.path());
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("another hicache-sim run") && stderr(&o).contains("a.yaml"),
        "{}",
        stderr(&o)
    );
    assert!(!d.path().join("o/results.csv").exists());
    drop(f);
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
}

// 5. Failed points: every row kept, exit non-zero with how many and why.
#[test]
fn sweep_with_failed_points_exits_non_zero_and_keeps_rows() {
    let d = workdir();
    let text = SCENARIO.replace(
        "    server.hicache_ratio: [null, 2.0]\n",
        "    server.hicache_ratio: [null, 2.0]\n    runtime.trace: [trace.jsonl, bad.jsonl]\n",
    );
    std::fs::write(d.path().join("f.yaml"), text).unwrap();
    let trace = std::fs::read_to_string(d.path().join("trace.jsonl")).unwrap();
    let bad: String = trace
        .lines()
        .take(5)
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + "{not json\n";
    std::fs::write(d.path().join("bad.jsonl"), bad).unwrap();
    let o = run(&["sweep", "f.yaml", "--out", "o", "--quiet"], d.path());
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("points failed") && e.contains("bad.jsonl:6"),
        "{e}"
    );
    let csv = std::fs::read_to_string(d.path().join("o/results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 8, "{csv}");
}

// 6. Nothing to measure is said, not reported as 100 % miss.
#[test]
fn zero_measured_requests_is_an_error() {
    let d = workdir();
    std::fs::write(d.path().join("empty.jsonl"), "").unwrap();
    let o = run(
        &[
            "replay",
            "--trace",
            "empty.jsonl",
            "--trace-format",
            "mooncake",
            "--l1-pages",
            "100",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to measure"), "{}", stderr(&o));
    let o = run(
        &[
            "replay",
            "--trace",
            "trace.jsonl",
            "--l1-pages",
            "100",
            "--warmup",
            "300",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nothing to measure") && stderr(&o).contains("warm-up"),
        "{}",
        stderr(&o)
    );
    let o = run(
        &[
            "replay",
            "--trace",
            "empty.jsonl",
            "--trace-format",
            "mooncake",
            "--l1-pages",
            "100",
            "--engine",
            "policy-simulator",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

// 7. The storage backend takes SGLang's choices only.
#[test]
fn storage_backend_must_be_a_choice() {
    let d = workdir();
    for bad in ["''", "none", "floppy"] {
        let o = run(
            &[
                "startup",
                "s.yaml",
                "--set",
                &format!("server.hicache_storage_backend={bad}"),
            ],
            d.path(),
        );
        assert_eq!(code(&o), 2, "{bad}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("hicache_storage_backend"),
            "{}",
            stderr(&o)
        );
    }
    ok(&run(
        &[
            "startup",
            "s.yaml",
            "--set",
            "server.hicache_storage_backend=mooncake",
        ],
        d.path(),
    ));
}

// 8. --set on the sweep is refused; --set server.launch is applied.
#[test]
fn set_sweep_is_refused_and_set_launch_is_applied() {
    let d = workdir();
    for s in ["sweep={}", "sweep.seeds=3"] {
        let o = run(&["sweep", "s.yaml", "--out", "o", "--set", s], d.path());
        assert_eq!(code(&o), 2, "{s}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--set cannot change the sweep"),
            "{}",
            stderr(&o)
        );
    }
    let text = SCENARIO.replace("  tp_size: 4\n", "");
    std::fs::write(d.path().join("l.yaml"), text).unwrap();
    let o = run(
        &[
            "startup",
            "l.yaml",
            "--format",
            "json",
            "--set",
            "server.launch=python -m sglang.launch_server --model-path m --tp 2",
        ],
        d.path(),
    );
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ranks = v.pointer("/ranks").and_then(|r| r.as_array()).unwrap();
    assert_eq!(ranks.len(), 2, "{v}");
}

// 9. Durations past any meaning are refused; the trace resolves from the scenario's folder.
#[test]
fn huge_durations_are_refused_and_trace_paths_follow_the_scenario() {
    let d = workdir();
    let o = run(
        &["startup", "s.yaml", "--set", "startup.post_load=1e30s"],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("116 days"), "{}", stderr(&o));
    let o = run(
        &[
            "startup",
            "s.yaml",
            "--set",
            "startup.arrival.jitter={dist: log_normal, median: 1s, sigma: 1e300}",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    // A trace of the same name in the working directory is not read: the scenario's is.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("trace.jsonl"), "{not a trace\n").unwrap();
    let scen = d.path().join("s.yaml");
    let o = run(
        &["replay", scen.to_str().unwrap(), "--l1-pages", "100"],
        other.path(),
    );
    ok(&o);
}

#[test]
fn trace_gen_refuses_what_cannot_be_meant() {
    let d = workdir();
    let base = r#"{"requests": 10, "arrivals": {"process": "poisson", "rate_per_s": 1.0},
 "system_prompts": {"count": 1, "zipf_s": 1.0, "tokens": {"min": MIN, "max": 100}},
 "sessions": [{"kind": "chat", "weight": 1.0, "turns": {"min": 1, "max": 2},
   "user_tokens": {"min": 5, "max": 10}, "output_tokens": {"min": 5, "max": 10}, "think_time_s": THINK}]}"#;
    for (min, think, words) in [
        ("200", "1.0", "larger than max"),
        ("5", "1e308", "think_time_s"),
    ] {
        std::fs::write(
            d.path().join("g.json"),
            base.replace("MIN", min).replace("THINK", think),
        )
        .unwrap();
        let o = run(
            &["trace", "gen", "--config", "g.json", "-o", "t.jsonl"],
            d.path(),
        );
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains(words), "{}", stderr(&o));
    }
}

// 10. plot refuses a column that is not numbers.
#[test]
fn plot_refuses_non_numeric_columns() {
    let d = workdir();
    std::fs::write(
        d.path().join("r.csv"),
        "point,x,name,nan,empty\n0,1,a,NaN,\n1,2,b,NaN,\n",
    )
    .unwrap();
    for col in ["name", "nan", "empty"] {
        let o = run(&["plot", "r.csv", "--x", "x", "--y", col], d.path());
        assert_eq!(code(&o), 2, "{col}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("`{col}`")), "{}", stderr(&o));
        assert!(!d.path().join(format!("{col}_vs_x.png")).exists());
    }
}

// 11. A closed or full stdout.
#[test]
fn closed_pipe_is_quiet_and_full_disk_is_exit_3() {
    // The reader is gone before the command starts: its first write meets EPIPE.
    let (r, w) = std::io::pipe().unwrap();
    drop(r);
    let o = Command::new(BIN)
        .args(["presets"])
        .stdout(w)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    if Path::new("/dev/full").exists() {
        let o = Command::new(BIN)
            .args(["presets"])
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(code(&o), 3, "{}", stderr(&o));
        assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
    }
}

// 15. --jobs beyond the cores is clamped (the run succeeds, identical output).
#[test]
fn absurd_jobs_are_clamped() {
    let d = workdir();
    let a = run(
        &[
            "startup",
            "s.yaml",
            "--runs",
            "50",
            "--jobs",
            "18446744073709551615",
            "--format",
            "json",
        ],
        d.path(),
    );
    ok(&a);
    let b = run(
        &[
            "startup", "s.yaml", "--runs", "50", "--jobs", "1", "--format", "json",
        ],
        d.path(),
    );
    assert_eq!(a.stdout, b.stdout);
    let o = run(
        &["startup", "s.yaml", "--runs", "9223372036854775808"],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

// 12. Sweep sizes that overflow, and merge point ids from a file, are refused.
#[test]
fn oversized_sweeps_and_absurd_point_ids_are_refused() {
    let d = workdir();
    let seeds = format!("{SCENARIO}  seeds: 18446744073709551615\n");
    std::fs::write(d.path().join("seeds.yaml"), seeds).unwrap();
    let o = run(&["sweep", "seeds.yaml", "--out", "o", "--quiet"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("more than 10000000"), "{}", stderr(&o));
    // Eight axes of 256 values: 2^64 points, which wraps to 0 in u64.
    let vals: Vec<String> = (0..256).map(|i| format!("{}", i + 1)).collect();
    let list = format!("[{}]", vals.join(", "));
    let mut text = SCENARIO.split("sweep:").next().unwrap().to_string();
    text.push_str("sweep:\n  axes:\n");
    for f in [
        "server.hicache_size",
        "server.page_size",
        "seed",
        "runs",
        "server.tp_size",
        "memory.host_other_used",
        "startup.process_memory",
        "server.mem_fraction_static",
    ] {
        text.push_str(&format!("    {f}: {list}\n"));
    }
    std::fs::write(d.path().join("wide.yaml"), text).unwrap();
    let o = run(&["sweep", "wide.yaml", "--out", "o", "--quiet"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!d.path().join("o/results.csv").exists());
    // merge: point ids past any sweep
    for id in ["18446744073709551615", "999999999999"] {
        std::fs::write(
            d.path().join("m.csv"),
            format!("point,x,seed,error\n0,1,2,\n{id},1,2,\n"),
        )
        .unwrap();
        let o = run(&["merge", "m.csv", "-o", "out.csv"], d.path());
        assert_eq!(code(&o), 2, "{id}: {}", stderr(&o));
    }
}

// 14. A line without end is cut at the cap, naming the file and line.
#[test]
fn endless_trace_lines_are_capped() {
    let d = workdir();
    let mut text = std::fs::read_to_string(d.path().join("trace.jsonl")).unwrap();
    text.push_str(&"x".repeat(5000));
    std::fs::write(d.path().join("long.jsonl"), text).unwrap();
    let o = Command::new(BIN)
        .args([
            "replay",
            "--trace",
            "long.jsonl",
            "--trace-format",
            "mooncake",
            "--l1-pages",
            "100",
        ])
        .env("HICACHE_SIM_MAX_LINE_BYTES", "4096")
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("long.jsonl:301") && stderr(&o).contains("longer than 4096 bytes"),
        "{}",
        stderr(&o)
    );
}

// 16. Values no one can mean are bounded.
#[test]
fn pin_steps_are_bounded() {
    let d = workdir();
    let o = run(
        &["startup", "s.yaml", "--set", "startup.pin.steps=4000000000"],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--set startup.pin.steps"),
        "{}",
        stderr(&o)
    );
}

// 18–20. Messages: --sglang names the flag; sweep YAML errors say `line` once; a BOM
// is not a different header; more hash ids than the prompt holds are refused.
#[test]
fn messages_name_the_right_place() {
    let d = workdir();
    let o = run(&["startup", "s.yaml", "--sglang", "0.0.1-nope"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: --sglang 0.0.1-nope"),
        "{}",
        stderr(&o)
    );
    std::fs::write(
        d.path().join("y.yaml"),
        SCENARIO.replace(
            "    server.hicache_ratio: [null, 2.0]\n",
            "    server.hicache_ratio: 2\n",
        ),
    )
    .unwrap();
    let o = run(&["sweep", "y.yaml", "--out", "o"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!stderr(&o).contains("error: line"), "{}", stderr(&o));
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let csv = std::fs::read(d.path().join("o/results.csv")).unwrap();
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend(&csv);
    std::fs::write(d.path().join("bom.csv"), bom).unwrap();
    ok(&run(
        &[
            "plot",
            "bom.csv",
            "--x",
            "server.hicache_host_memory_fraction",
            "--y",
            "hit_rate_total",
            "--out",
            "p",
        ],
        d.path(),
    ));
    std::fs::write(
        d.path().join("ids.jsonl"),
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n",
    )
    .unwrap();
    for engine in ["hiradix", "policy-simulator"] {
        let o = run(
            &[
                "replay",
                "--trace",
                "ids.jsonl",
                "--l1-pages",
                "10",
                "--engine",
                engine,
            ],
            d.path(),
        );
        assert_eq!(code(&o), 2, "{engine}: {}", stderr(&o));
        assert!(stderr(&o).contains("ids.jsonl:1"), "{}", stderr(&o));
    }
}

// 16 (trace gen). Rates, segment lengths and request counts no one can mean.
#[test]
fn trace_gen_sizes_are_bounded() {
    let d = workdir();
    let cfg = |rate: &str, max: &str| {
        format!(
            r#"{{"requests": 10, "arrivals": {{"process": "poisson", "rate_per_s": {rate}}},
 "system_prompts": {{"count": 1, "zipf_s": 1.0, "tokens": {{"min": 5, "max": {max}}}}},
 "sessions": [{{"kind": "chat", "weight": 1.0, "turns": {{"min": 1, "max": 2}},
   "user_tokens": {{"min": 5, "max": 10}}, "output_tokens": {{"min": 5, "max": 10}}, "think_time_s": 1.0}}]}}"#
        )
    };
    for (text, words) in [
        (cfg("1e-300", "100"), "rate_per_s"),
        (cfg("1.0", "4000000000"), "no prompt segment is that long"),
    ] {
        std::fs::write(d.path().join("g.json"), text).unwrap();
        let o = run(
            &["trace", "gen", "--config", "g.json", "-o", "t.jsonl"],
            d.path(),
        );
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains(words), "{}", stderr(&o));
    }
    let o = run(
        &["trace", "gen", "--requests", "1000000000", "-o", "t.jsonl"],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("requests"), "{}", stderr(&o));
}

// 18. runtime.* errors name the scenario's file and line.
#[test]
fn runtime_errors_name_the_scenario_line() {
    let d = workdir();
    let text = SCENARIO.replace("  trace: trace.jsonl\n", "");
    std::fs::write(d.path().join("n.yaml"), text).unwrap();
    let o = run(&["replay", "n.yaml"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("n.yaml:27: field `runtime.trace`"),
        "{}",
        stderr(&o)
    );
    let text = SCENARIO.replace("    timing: off\n", "    timing: off\n    l1_pagez: 5\n");
    std::fs::write(d.path().join("k.yaml"), text).unwrap();
    let o = run(&["replay", "k.yaml"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("k.yaml:") && stderr(&o).contains("did you mean `l1_pages`"),
        "{}",
        stderr(&o)
    );
}

// 19. A plot that cannot be written is exit 3 with the path.
#[test]
fn plot_write_failure_is_exit_3_with_the_path() {
    let d = workdir();
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    std::fs::write(d.path().join("afile"), "x").unwrap();
    let o = run(&["plot", "o/results.csv", "--out", "afile/sub"], d.path());
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(stderr(&o).contains("afile/sub"), "{}", stderr(&o));
}

// 20. A journal torn inside its header is recovered; a spliced entry is refused.
#[test]
fn torn_journal_header_recovers_and_spliced_entries_are_refused() {
    let d = workdir();
    std::fs::create_dir(d.path().join("o")).unwrap();
    std::fs::write(
        d.path().join("o/results.journal.jsonl"),
        "{\"hicache_sim_journal\": 2, \"fingerp",
    )
    .unwrap();
    let o = run(
        &["sweep", "s.yaml", "--out", "o", "--quiet", "--resume"],
        d.path(),
    );
    ok(&o);
    assert!(stderr(&o).contains("4 computed"), "{}", stderr(&o));
    // Swap the points of two entries: each row now sits under another point's id.
    let j = d.path().join("o/results.journal.jsonl");
    let text = std::fs::read_to_string(&j).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let swap = |l: &str, from: &str, to: &str| l.replacen(from, to, 1);
    let a = lines
        .iter()
        .position(|l| l.starts_with("{\"point\":0,"))
        .unwrap();
    let b = lines
        .iter()
        .position(|l| l.starts_with("{\"point\":1,"))
        .unwrap();
    lines[a] = swap(&lines[a], "{\"point\":0,", "{\"point\":1,");
    lines[b] = swap(&lines[b], "{\"point\":1,", "{\"point\":0,");
    std::fs::write(&j, lines.join("\n") + "\n").unwrap();
    let o = run(
        &["sweep", "s.yaml", "--out", "o", "--quiet", "--resume"],
        d.path(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("does not hold that point's row"),
        "{}",
        stderr(&o)
    );
}
