//! A timed replay whose cost table was profiled on another engine than the scenario's
//! says so (`pipeline::replay_config_unverified`): another TP size, another GPU, or a
//! pipeline-parallel engine, whose stages SGLang runs as a pipeline of micro-batches.
//! Before, the quickstart at TP2 replayed with its TP4 table and a plain status.

use crate::support::{ok, repo, run};

/// `replay scenarios/quickstart-timed.yaml --format json` over its first 50 requests,
/// with `sets`: the reasons for `unverified` that name the clock's shape.
fn shape_reasons(sets: &[&str]) -> Vec<String> {
    let d = tempfile::tempdir().unwrap();
    let q = repo("scenarios/quickstart-timed.yaml");
    let mut args = vec![
        "replay",
        q.to_str().unwrap(),
        "--format",
        "json",
        "--set",
        "runtime.max_requests=50",
    ];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = run(&args, d.path());
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["unverified"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str())
        .filter(|r| r.contains(" profiled ") || r.starts_with("pipeline parallelism"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_cost_table_of_another_tp_gpu_or_a_pipeline_is_named() {
    // The quickstart's own engine: GB300, TP4, as its table.
    assert!(shape_reasons(&[]).is_empty());
    assert_eq!(
        shape_reasons(&["server.tp_size=2"]),
        [
            "the compute cost table was profiled at TP4 (glm-5.2 on gb300), the scenario runs TP2: its forward times stand in for this TP's"
        ]
    );
    let r = shape_reasons(&[
        "node=hgx-b200",
        "server.tp_size=8",
        "runtime.replay.compute.compute_scale=1.3",
    ]);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(
        r[1],
        "the compute cost table was profiled on GB300 (gb300), the scenario's GPUs are B200: its forward times stand in, scaled by compute_scale 1.3"
    );
    let r = shape_reasons(&["server.tp_size=2", "server.pp_size=2"]);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(
        r[1].starts_with("pipeline parallelism (--pp-size 2) is not in the clock"),
        "{r:?}"
    );
}

/// DP attention runs attention at a smaller TP than the tables were profiled at.
#[test]
fn dp_attention_under_a_tp_table_is_named() {
    let r = shape_reasons(&["server.enable_dp_attention=true", "server.dp_size=4"]);
    assert_eq!(
        r,
        [
            "the compute cost tables are profiled without DP attention (attention at TP4), the scenario runs attention at TP1 on 4 DP ranks: its forward times stand in"
        ]
    );
}

/// A Qwen3-VL scenario on an H100 (SM90, 80 GB) under `sglang`, timed, whose launch
/// command ends in `extra`: the reasons for `unverified` that name the interval.
fn qwen3_vl_interval(sglang: &str, node: &str, extra: &str) -> Vec<String> {
    let d = tempfile::tempdir().unwrap();
    let text = format!(
        "name: qwen3-vl-hopper
sglang: \"{sglang}\"
node: {node}
server:
  launch: python -m sglang.launch_server --model-path Qwen/Qwen3-VL-32B-Instruct --mem-fraction-static 0.9 {extra}
startup:
  gpu_reserved: 1GiB
runtime:
  trace: {}
  max_requests: 20
  replay: {{timing: on}}
",
        repo("traces/synthetic_trace.jsonl").display()
    );
    let p = d.path().join("s.yaml");
    std::fs::write(&p, text).unwrap();
    let o = run(
        &["replay", p.to_str().unwrap(), "--format", "json"],
        d.path(),
    );
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // No reasons at all: no `unverified` key (status ok).
    let none = Vec::new();
    v["unverified"]
        .as_array()
        .unwrap_or(&none)
        .iter()
        .filter_map(|r| r.as_str())
        .filter(|r| r.contains("--prefill-decode-interval"))
        .map(str::to_string)
        .collect()
}

/// SGLang 0.5.20+ gives Qwen3-VL on a large Hopper GPU `--prefill-decode-interval 22`
/// when the flag is unset (`model_overrides/qwen3_vl.py`); the timed replay, which
/// prefills first, says so. Not before 0.5.20, not on Blackwell, not when the launch
/// gives the flag.
#[test]
fn qwen3_vls_automatic_interval_on_hopper_is_named() {
    let r = qwen3_vl_interval("0.5.23", "hgx-h100", "");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(
        r[0].starts_with("SGLang 0.5.23 runs Qwen3-VL on a large Hopper GPU (H100) with --prefill-decode-interval 22"),
        "{r:?}"
    );
    assert!(qwen3_vl_interval("0.5.19", "hgx-h100", "").is_empty());
    assert!(qwen3_vl_interval("0.5.23", "hgx-b200", "").is_empty());
    assert!(qwen3_vl_interval("0.5.23", "hgx-h100", "--prefill-decode-interval 0").is_empty());
}
