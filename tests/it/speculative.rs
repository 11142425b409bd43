//! Speculative decoding in the timed replay (`runtime::cost::speculative`): the clock's
//! terms by hand on a profiled table, the launch command's flags as SGLang resolves
//! them, the acceptance printed with its source, and every draft the clock does not
//! model labelled rather than timed as if it were.

use hicache_sim::model::quant::CheckpointQuant;
use hicache_sim::runtime::cost::{Compute, ComputeSource, CostModel, Speculative, table};
use serde_json::Value;

use crate::support::{exit2, ok, repo, run, stdout};

const SCENARIO: &str = "scenarios/deepseek-v3-mtp-timed.yaml";

fn mtp() -> Speculative {
    crate::support::mtp_draft()
}

fn h200_v3(spec: Option<Speculative>) -> CostModel {
    let c = Compute {
        source: ComputeSource::Table {
            node: "hgx-h200".into(),
            model: "deepseek-v3".into(),
            quant: CheckpointQuant::Fp8,
            tp: 8,
        },
        speculative: spec,
        ..Compute::default()
    };
    CostModel::new(&c, 20_000.0, 50.0).unwrap()
}

/// 100 output tokens of a request at context 2 000 among 8: 100 / 2.105 iterations, each
/// the table's step of 8 × 4 = 32 tokens at context 2 050, times 64 / 61 (three passes
/// of the one MTP layer on 61 layers). The prefill runs the draft over the prompt too:
/// × 62 / 61.
#[test]
fn the_clock_by_hand_on_the_h200_table() {
    let t = table::find("hgx-h200", "deepseek-v3", CheckpointQuant::Fp8, 8).unwrap();
    let m = h200_v3(Some(mtp()));
    let want = 100.0 / 2.105 * (t.decode_step_us(32, 2050) * (64.0 / 61.0)) * 1e3;
    assert_eq!(m.decode_ns(100, 8, 2000), want.round() as u64);
    assert_eq!(m.tokens_per_iteration(), 2.105);
    let want = t.decode_step_us(32, 2000) * (64.0 / 61.0) * 1e3;
    assert_eq!(m.decode_iteration_ns(8, 2000), want.round() as u64);
    let plain = h200_v3(None);
    let want = t.prefill_us(&[(4096, 0)]) * (62.0 / 61.0) * 1e3;
    assert_eq!(m.prefill_ns(&[(4096, 0)]), want.round() as u64);
    // Without a draft: the step of 8, one token an iteration.
    assert_eq!(
        plain.decode_ns(100, 8, 2000),
        (100.0 * t.decode_step_us(8, 2050) * 1e3).round() as u64
    );
    // A verify batch past the table's largest profiled batch (256): the largest step,
    // linear in the tokens (128 requests x 4 = 512 tokens = 2 x 256), not the clamp.
    assert_eq!(t.decode_max_batch(), 256);
    let want = t.decode_step_us(256, 4096) * 2.0 * (64.0 / 61.0) * 1e3;
    assert_eq!(m.decode_iteration_ns(128, 4096), want.round() as u64);
    // So is a plain decode batch past it (384 requests: 1.5 x the step of 256), where
    // the grid alone would clamp to the step of 256.
    let want = t.decode_step_us(256, 4096) * 1.5 * 1e3;
    assert_eq!(plain.decode_iteration_ns(384, 4096), want.round() as u64);
    assert_eq!(t.decode_step_us(384, 4096), t.decode_step_us(256, 4096));
    // At batch 1 and context 1 000 the table's verify of 4 tokens costs 1.34 steps:
    // 2.105 tokens for 1.41 steps' time is 1.49x the decode speed (SGLang's docs report
    // 1.8x at batch 1 for DeepSeek-V3 MTP on H200 TP8, at an acceptance they do not
    // give).
    let speedup =
        2.105 * plain.decode_iteration_ns(1, 1000) as f64 / m.decode_iteration_ns(1, 1000) as f64;
    assert!((speedup - 1.49).abs() < 0.01, "{speedup}");
    // Fixed speeds are end-to-end rates: no draft in them.
    let fixed = CostModel::new(
        &Compute {
            speculative: Some(mtp()),
            ..Compute::default()
        },
        20_000.0,
        50.0,
    )
    .unwrap();
    assert_eq!(fixed.decode_ns(100, 8, 2000), 2_000_000_000);
    assert_eq!(fixed.tokens_per_iteration(), 1.0);
}

fn replay_json(scenario: &std::path::Path, set: &[&str]) -> Value {
    // The figures below are the replay's without HiCache's per-step synchronisation
    // (`compute.hicache_step_sync`, set to 0): the term's own effect is asserted in
    // `step_sync.rs`.
    let mut args = vec![
        "replay",
        scenario.to_str().unwrap(),
        "--format",
        "json",
        "--set",
        "runtime.replay.compute.hicache_step_sync=0ns",
    ];
    for s in set {
        args.extend(["--set", s]);
    }
    let o = run(&args, &repo("."));
    ok(&o);
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// The scenario's flags resolve as SGLang resolves them; the JSON records the draft, the
/// acceptance used and where it came from; a measured acceptance shortens TPOT; the same
/// deployment without the draft decodes slower at a light load.
#[test]
fn the_scenario_prints_its_acceptance_and_tpot() {
    let light = "runtime.slowdown_factor=200";
    let v = replay_json(&repo(SCENARIO), &[light]);
    let sp = &v["speeds"]["speculative"];
    assert_eq!(sp["algorithm"], "EAGLE");
    assert_eq!(sp["num_steps"], 3);
    assert_eq!(sp["num_draft_tokens"], 4);
    assert_eq!(sp["draft_layers"], 1);
    assert_eq!(sp["in_clock"], true);
    assert_eq!(sp["accept_length"], 2.105);
    assert!(
        sp["source"]
            .as_str()
            .unwrap()
            .starts_with("assumed: aiconfigurator 0.12.0")
    );
    assert_eq!(v["config"]["compute"]["speculative"]["target_layers"], 61);
    // SGLang resets an unset --max-running-requests to 48 under speculative decoding.
    assert_eq!(v["config"]["max_running_requests"], 48);
    let tpot_default = v["metrics"]["tpot_mean_s"].as_f64().unwrap();

    let v = replay_json(
        &repo(SCENARIO),
        &[
            light,
            "runtime.replay.compute.speculative.accept_length=2.8",
        ],
    );
    assert_eq!(v["speeds"]["speculative"]["accept_length"], 2.8);
    assert_eq!(
        v["speeds"]["speculative"]["source"],
        "the scenario's runtime.replay.compute.speculative.accept_length"
    );
    let tpot_measured = v["metrics"]["tpot_mean_s"].as_f64().unwrap();
    assert!(
        tpot_measured < tpot_default,
        "{tpot_measured} vs {tpot_default}"
    );

    // The same deployment without the four --speculative flags.
    let text = std::fs::read_to_string(repo(SCENARIO)).unwrap();
    let plain = text
        .replace(
            "    --speculative-algorithm EAGLE --speculative-num-steps 3\n",
            "",
        )
        .replace(
            "    --speculative-eagle-topk 1 --speculative-num-draft-tokens 4\n",
            "",
        )
        .replace("../traces/", &format!("{}/", repo("traces").display()));
    assert!(!plain.contains("speculative-"));
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("plain.yaml");
    std::fs::write(&path, plain).unwrap();
    let v = replay_json(&path, &[light]);
    assert!(v["speeds"].get("speculative").is_none());
    let tpot_plain = v["metrics"]["tpot_mean_s"].as_f64().unwrap();
    // The figures the time-model page (its figures without HiCache's per-step
    // synchronisation; 11.36 / 12.99 ms with it) and the CHANGELOG give.
    let ms = |s: f64| format!("{:.2}", s * 1e3);
    assert_eq!(
        (ms(tpot_default), ms(tpot_plain)),
        ("11.09".into(), "12.48".into())
    );
}

/// The text names the acceptance in the speeds line and prints TPOT.
#[test]
fn the_text_names_the_acceptance() {
    let o = run(&["replay", SCENARIO], &repo("."));
    ok(&o);
    let t = stdout(&o);
    assert!(t.contains("; speculative EAGLE 3 steps x 1 MTP layer(s) / 4 draft tokens / accept length 2.105 (assumed: aiconfigurator"), "{t}");
    assert!(t.lines().any(|l| l.starts_with("TPOT mean ")), "{t}");
    let speeds = t.lines().find(|l| l.starts_with("speeds: ")).unwrap();
    assert!(
        !speeds.contains(','),
        "the CSV's speeds cell has no commas: {speeds}"
    );
}

/// Drafts the clock does not model are labelled in the speeds record (decode runs
/// without speculation), never timed as a chain.
#[test]
fn unmodelled_drafts_are_labelled() {
    let v = replay_json(
        &repo(SCENARIO),
        &[
            "server.speculative_eagle_topk=4",
            "server.speculative_num_draft_tokens=8",
        ],
    );
    let sp = &v["speeds"]["speculative"];
    assert_eq!(sp["in_clock"], false);
    assert!(sp.get("accept_length").is_none());
    assert!(
        sp["source"]
            .as_str()
            .unwrap()
            .contains("only a chain (top-k 1"),
        "{sp}"
    );
    // Fixed speeds: the user's decode speed is taken as the speed with speculation.
    let v = replay_json(
        &repo(SCENARIO),
        &["runtime.replay.compute.source.kind=fixed"],
    );
    let sp = &v["speeds"]["speculative"];
    assert_eq!(sp["in_clock"], false);
    assert!(
        sp["source"]
            .as_str()
            .unwrap()
            .starts_with("fixed speeds are end-to-end rates")
    );
}

/// An acceptance beyond the verify width, or one without a draft, is refused (exit 2).
#[test]
fn bad_acceptance_is_refused() {
    let o = run(
        &[
            "replay",
            SCENARIO,
            "--set",
            "runtime.replay.compute.speculative.accept_length=4.5",
        ],
        &repo("."),
    );
    exit2(
        &o,
        &[
            "accept_length must be from 1 to num_draft_tokens (4)",
            "got 4.5",
        ],
    );
    let o = run(
        &[
            "replay",
            "scenarios/quickstart-timed.yaml",
            "--set",
            "runtime.replay.compute.speculative.accept_length=2",
        ],
        &repo("."),
    );
    exit2(&o, &["sets no --speculative-algorithm"]);
    // With top-k 1 SGLang makes the draft tokens steps + 1; steps are bounded.
    for (set, words) in [
        (
            "runtime.replay.compute.speculative.num_draft_tokens=1",
            &["num_draft_tokens 1 with eagle_topk 1", "num_steps + 1 (4)"][..],
        ),
        (
            "server.speculative_num_steps=4294967295",
            &["num_steps must be from 1 to 64"][..],
        ),
    ] {
        let o = run(&["replay", SCENARIO, "--set", set], &repo("."));
        exit2(&o, words);
    }
}
