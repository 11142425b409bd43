//! `replay --sensitivity`: each cost term of the time model 25 % dearer on its own, one
//! more timed replay per term with a cost, ranked by how far it moves the mean TTFT
//! (`runtime::sensitivity`, `pipeline::sensitivity`).

use crate::support::{code, repo, run, stderr, stdout};

fn replay(scenario: &str, extra: &[&str]) -> std::process::Output {
    let sc = repo(scenario);
    let mut a = vec!["replay", sc.to_str().unwrap(), "--sensitivity"];
    a.extend_from_slice(extra);
    run(&a, &repo("."))
}

/// The quickstart's timed replay (GLM-5.2 on a GB300 tray, the synthetic trace at half
/// its rate; TP4 with HiCache: 0.5 ms of HiCache's per-step synchronisation a scheduler
/// iteration; each request's fixed 6 ms way through the server): mean TTFT 1.903 s,
/// three quarters of it queueing. A forward 25 % longer makes it 9.479 s (+398.1 %: the
/// GPU is near saturation, so the queue grows far more than the forward) and the TPOT
/// +34.2 %; the sync 25 % longer +0.1 % (TPOT +1.6 %), the fixed way 25 % longer +0.1 %;
/// the links and their run overheads move nothing (the load-back is layer-pipelined
/// under the forward, write-through copies never compete with compute). No storage, no
/// tokenizer cost, no draft: no rows.
#[test]
fn the_quickstart_s_ttft_is_its_compute_s() {
    let o = replay("scenarios/quickstart-timed.yaml", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains("sensitivity (7 more timed replays, each term 25 % dearer on its own; here TTFT mean 1.903 s, p99 10.166 s, TPOT mean 9.17 ms, makespan 2044.8 s):"),
        "{t}"
    );
    let rows: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.starts_with("term "))
        .skip(1)
        .take(7)
        .collect();
    assert!(
        rows[0].starts_with(
            "compute              +398.1 %   +346.6 %    +34.2 %     +0.0 %  compute_scale 1 → 1.25"
        ),
        "{t}"
    );
    assert!(
        rows[1].starts_with(
            "hicache_sync           +0.1 %     +0.1 %     +1.6 %     +0.0 %  hicache_step_sync 500000 → 625000 ns"
        ),
        "{t}"
    );
    assert!(
        rows[2].starts_with(
            "request_overhead       +0.1 %     +0.0 %     +0.0 %     +0.0 %  request_overhead 6000000 → 7500000 ns"
        ),
        "{t}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("d2h                    +0.0 %     +0.0 %     +0.0 %     +0.0 %  d2h_bandwidth 193.50 → 154.80 GB/s")),
        "{t}"
    );
    // The fixed per-request way is charged: only the per-iteration costs are left out.
    assert!(
        t.contains("fixed per-iteration costs (the scheduler's loop, CUDA-graph launch; HiCache's per-step synchronisation is in the model: hicache_sync) and HiCache's own bookkeeping are not in the time model"),
        "{t}"
    );

    let o = replay("scenarios/quickstart-timed.yaml", &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["sensitivity"];
    assert_eq!(s["step"], 1.25);
    let terms: Vec<&str> = s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["term"].as_str().unwrap())
        .collect();
    assert_eq!(terms[0], "compute");
    let mut sorted = terms.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "compute",
            "d2h",
            "d2h_run_overhead",
            "h2d",
            "h2d_run_overhead",
            "hicache_sync",
            "request_overhead"
        ]
    );
    let base = s["base"]["ttft_mean_s"].as_f64().unwrap();
    let compute = s["rows"][0]["ttft_mean_s"].as_f64().unwrap();
    assert!((base - 1.9032).abs() < 1e-4, "{base}");
    assert!((compute - 9.4794).abs() < 1e-4, "{compute}");
}

/// DeepSeek-V3 with its MTP draft in the clock: the acceptance is a term (the assumed
/// 2.105 tokens an iteration made 1.684); with decode interleaved with prefill the
/// TPOT moves +2.7 %, the forward's cost +106.0 %. Without HiCache's per-step
/// synchronisation (`compute.hicache_step_sync` 0: its own effect is in `step_sync.rs`),
/// so the figures isolate the draft.
#[test]
fn a_draft_s_acceptance_is_a_term() {
    let o = replay(
        "scenarios/deepseek-v3-mtp-timed.yaml",
        &["--set", "runtime.replay.compute.hicache_step_sync=0ns"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains("acceptance             +0.0 %     +0.0 %     +2.7 %     +0.0 %  accept_length 2.105 → 1.684"),
        "{t}"
    );
    assert!(
        t.contains(
            "compute               +46.2 %    +34.4 %   +106.0 %     +0.0 %  compute_scale 1 → 1.25"
        ),
        "{t}"
    );
}

/// Untimed, no cost term moves anything: refused (exit 2) saying so.
#[test]
fn an_untimed_replay_has_no_sensitivity() {
    let o = replay("scenarios/quickstart.yaml", &[]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o)
            .contains("--sensitivity: the cost terms move times only: the replay must be timed"),
        "{}",
        stderr(&o)
    );
}
