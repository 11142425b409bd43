//! `runtime.slowdown_factor` / `replay --slowdown-factor`: the trace's arrival gaps
//! multiplied about its first arrival, as SGLang's `bench_serving
//! --mooncake-slowdown-factor` sends a Mooncake trace (`workload::slowdown`).

use std::path::Path;

use serde_json::Value;

use super::support::{code, repo, run, stderr, stdout};

/// Three 512-token requests (one Mooncake block each, no shared prefix) at 0, 1 and 3 s.
const SPREAD: &str = "\
{\"timestamp\": 0, \"input_length\": 512, \"output_length\": 2, \"hash_ids\": [1]}
{\"timestamp\": 1000, \"input_length\": 512, \"output_length\": 2, \"hash_ids\": [2]}
{\"timestamp\": 3000, \"input_length\": 512, \"output_length\": 2, \"hash_ids\": [3]}
";

/// Two 512-token requests 10 ms apart: the second waits for the first's prefill.
const CLOSE: &str = "\
{\"timestamp\": 0, \"input_length\": 512, \"output_length\": 2, \"hash_ids\": [1]}
{\"timestamp\": 10, \"input_length\": 512, \"output_length\": 2, \"hash_ids\": [2]}
";

/// `replay --timing on --format json` of `trace` at fixed speeds (20 000 / 50 tok/s).
fn timed(dir: &Path, trace: &str, extra: &[&str]) -> Value {
    std::fs::write(dir.join("t.jsonl"), trace).unwrap();
    let mut args = vec![
        "replay",
        "--trace",
        "t.jsonl",
        "--l1-pages",
        "1000",
        "--l2-pages",
        "0",
        "--timing",
        "on",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let o = run(&args, dir);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn fig(v: &Value, k: &str) -> f64 {
    v["metrics"][k].as_f64().unwrap()
}

#[test]
fn arrivals_stretch_by_the_factor_through_the_timed_replay() {
    let d = tempfile::tempdir().unwrap();
    // Each prefill: 512 new tokens / 20 000 tok/s = 25.6 ms (the first of 2 output
    // tokens); decode: the second at 50 tok/s = 20 ms. Arrivals 0, 1, 3 s never queue: TTFT 25.6 ms each; the makespan is the
    // last arrival + 45.6 ms: 3.0456 s at factor 1, and at factor 2 (arrivals 0, 2, 6 s)
    // 6.0456 s.
    let one = timed(d.path(), SPREAD, &[]);
    let two = timed(d.path(), SPREAD, &["--slowdown-factor", "2"]);
    assert!((fig(&one, "makespan_s") - 3.0456).abs() < 1e-9);
    assert!((fig(&two, "makespan_s") - 6.0456).abs() < 1e-9);
    assert!((fig(&two, "ttft_p99_s") - 0.0256).abs() < 1e-9);
    // Recorded when not 1, absent at the default (outputs unchanged).
    assert_eq!(two["slowdown_factor"].as_f64(), Some(2.0));
    assert!(one.get("slowdown_factor").is_none());
    // `--slowdown-factor 1` is the default, byte for byte.
    let explicit = timed(d.path(), SPREAD, &["--slowdown-factor", "1"]);
    assert_eq!(explicit, one);

    // 10 ms apart: the second request waits 25.6 − 10 = 15.6 ms, TTFT 41.2 ms; at factor
    // 3 it arrives at 30 ms, after the first prefill ends: TTFT 25.6 ms, makespan
    // 30 + 45.6 = 75.6 ms.
    let close = timed(d.path(), CLOSE, &[]);
    assert!((fig(&close, "ttft_p99_s") - 0.0412).abs() < 1e-9);
    let three = timed(d.path(), CLOSE, &["--slowdown-factor", "3"]);
    assert!((fig(&three, "ttft_p99_s") - 0.0256).abs() < 1e-9);
    assert!((fig(&three, "makespan_s") - 0.0756).abs() < 1e-9);
}

#[test]
fn bad_factors_are_located_errors() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("t.jsonl"), SPREAD).unwrap();
    for f in ["0", "-1", "NaN", "inf"] {
        let flag = format!("--slowdown-factor={f}");
        let o = run(&["replay", "--trace", "t.jsonl", &flag], d.path());
        assert_eq!(code(&o), 2, "{f}");
        assert!(stderr(&o).contains("--slowdown-factor"), "{}", stderr(&o));
    }
    let q = repo("scenarios/quickstart.yaml");
    let o = run(
        &[
            "replay",
            q.to_str().unwrap(),
            "--set",
            "runtime.slowdown_factor=0",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains(
            "field `runtime.slowdown_factor`: 0: the slowdown factor must be from 1e-6 to 1e6"
        ),
        "{}",
        stderr(&o)
    );
}

/// The quickstart timed at a slowdown of 2 (`scenarios/quickstart-timed.yaml`): one GB300
/// tray keeps up. Figures of this build (README, "The quickstart, timed"), with the
/// scenario's 0.5 ms of HiCache's per-step synchronisation a scheduler iteration (TP4)
/// and each request's 6 ms fixed way through the server; without both
/// (`compute.hicache_step_sync=0ns`, `request_overhead=0ns`) TTFT p50 1.203 s, p99
/// 10.133 s.
#[test]
fn quickstart_timed_at_slowdown_two() {
    let q = repo("scenarios/quickstart-timed.yaml");
    let o = run(
        &["replay", q.to_str().unwrap(), "--format", "json"],
        &repo("."),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["slowdown_factor"].as_f64(), Some(2.0));
    assert_eq!(v["speeds"]["table"], "gb300/glm-5.2/nvfp4/tp4");
    assert_eq!(v["metrics"]["requests"], 3993);
    let r = |k: &str| (fig(&v, k) * 1e3).round() / 1e3;
    assert_eq!(r("ttft_p50_s"), 1.215);
    assert_eq!(r("ttft_p99_s"), 10.166);
}
