//! DeepSeek-V4's replay: SGLang 0.5.23's tree with its SWA component over the pools
//! `DSV4PoolConfigurator` sizes (`pipeline::swa_pool`, `pipeline::adopt_swa_tree`), and
//! a refusal naming what stands in the way wherever that tree does not run.

use crate::support::{code, repo, run, stderr, stdout};

fn replay(extra: &[&str]) -> std::process::Output {
    let sc = repo("scenarios/deepseek-v4-flash-device-tree.yaml");
    let mut a = vec!["replay", sc.to_str().unwrap()];
    a.extend_from_slice(extra);
    run(&a, &repo("."))
}

/// DeepSeek-V4-Flash at TP2 on an HGX H200, HiCache off: a full pool of 28,073 pages of
/// 256 tokens and an SWA pool of 2,807 (SGLang's 0.1 ratio), window 128, chunked prefill
/// at 8,192 tokens (220 of the 300 prompts are longer). On chat_agentic_mix (3,980,639
/// prompt tokens) the SWA tree hits 3,413,504 tokens (85.75 %), every request ending at
/// its prefill 86.11 %, the full tree alone 86.20 %: SGLang's tree's answer, `ok`. At
/// 1,000 full pages (`--l1-pages`) the SWA pool scales to 99 pages and the window's
/// evictions show: 2,291,200 (57.56 %), against 31.40 % prefill-only and 68.53 % for
/// the full tree alone. A 32,768-token chunk moves DeepSeek-V4's pools
/// (`DSV4PoolConfigurator`: 7,190 full pages) and cuts no prompt: 3,389,440 (85.15 %).
#[test]
fn deepseek_v4_replays_sglangs_tree_with_its_swa_component() {
    let o = replay(&["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "ok", "{}", v["unverified"]);
    let c = &v["config"];
    assert_eq!(
        (
            c["page_size"].as_u64(),
            c["l1_pages"].as_u64(),
            c["l2_pages"].as_u64(),
            c["compute"]["chunked_prefill_size"].as_u64()
        ),
        (Some(256), Some(28_073), Some(0), Some(8192))
    );
    assert_eq!(
        c["swa"],
        serde_json::json!({"pages": 2807, "window": 128, "decode": true})
    );
    let input = v["metrics"]["input_tokens"].as_f64().unwrap();
    assert_eq!(input, 3_980_639.0);
    let tokens = |x: &serde_json::Value| (x.as_f64().unwrap() * input).round() as u64;
    assert_eq!(tokens(&v["metrics"]["device_hit_rate"]), 3_413_504);
    let t = stdout(&replay(&[]));
    assert!(t.contains("device          3413504    85.75 %"), "{t}");
    assert!(!t.contains("status: unverified"), "{t}");
    assert!(t.contains("beside it (two more replays): device 86.11 % of prompt tokens with every request ending at its prefill (a PD prefill server); 86.20 % for a full-attention tree without the SWA component"), "{t}");

    let t = stdout(&replay(&["--set", "server.chunked_prefill_size=32768"]));
    assert!(
        t.contains("with its SWA component: 719 SWA pages, window 128, requests decoding their output, one request at a time, chunked prefill at 32768 tokens"),
        "{t}"
    );
    assert!(t.contains("device          3389440    85.15 %"), "{t}");

    let t = stdout(&replay(&["--l1-pages", "1000"]));
    assert!(
        t.contains("with its SWA component: 99 SWA pages, window 128"),
        "{t}"
    );
    assert!(t.contains("device          2291200    57.56 %"), "{t}");
    assert!(t.contains("device 31.40 % of prompt tokens with every request ending at its prefill (a PD prefill server); 68.53 % for a full-attention tree"), "{t}");
}

/// Timed, the SWA tree runs the requests overlapping on one clock (`timing=on`): at the
/// fixed speeds the chat_agentic_mix trace's requests queue (TTFT p50 2.705 s, TPOT 20
/// ms: 50 decode tokens/s) and a request batched beside the one it shares a prefix with
/// misses it, so the device tier hits 3,395,072 tokens (85.29 %) against the timing-off
/// 85.75 %. `unverified`: the decode's KV is taken at once (no retraction).
#[test]
fn deepseek_v4_replays_the_swa_tree_with_time() {
    let o = replay(&["--config", "timing=on", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "unverified");
    assert!(
        v["unverified"]
            .to_string()
            .contains("the timed replay with the SWA tree takes a request's decode KV"),
        "{}",
        v["unverified"]
    );
    let t = stdout(&replay(&["--config", "timing=on"]));
    assert!(t.contains("requests overlapping on the clock"), "{t}");
    assert!(t.contains("device          3395072    85.29 %"), "{t}");
    assert!(
        t.contains("TTFT: p50 2.705 s, p90 4.297 s, p99 4.914 s; makespan 46.7 s"),
        "{t}"
    );
    assert!(t.contains("TPOT mean 20.00 ms"), "{t}");
}

/// DeepSeek-V4-Pro at TP8 with its MTP draft, timed (`scenarios/deepseek-v4-pro-mtp-timed.yaml`):
/// hit rates, TTFT and TPOT with the acceptance length used (the assumed 2.105, with its
/// source), `unverified` naming the stand-in cost table (DeepSeek-V3.2's), the SWA
/// tree's decode under a draft and the timed SWA tree's decode KV.
#[test]
fn deepseek_v4_pro_with_mtp_prints_ttft_and_tpot_with_its_acceptance() {
    let sc = repo("scenarios/deepseek-v4-pro-mtp-timed.yaml");
    let o = run(&["replay", sc.to_str().unwrap()], &repo("."));
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "status: unverified: with a speculative draft the SWA tree's decode is not SGLang's",
        "the compute cost table is deepseek-ai/DeepSeek-V3.2's (deepseek-v3.2 fp8 TP8 on hgx-b200), not deepseek-ai/DeepSeek-V4-Pro's",
        "with its SWA component: 1449 SWA pages, window 128, requests decoding their output, requests overlapping on the clock",
        "device          3388160    85.12 %",
        "TTFT: p50 1.371 s, p90 2.741 s, p99 3.136 s",
        "+ request overhead 0.006 s (0.4 %) +",
        "TPOT mean 21.31 ms",
        "speculative EAGLE 3 steps x 1 MTP layer(s) / 4 draft tokens / accept length 2.105 (assumed",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
}

/// DeepSeek-V4-Pro with DP attention over 8 ranks, timed (`timing=on`): the ranks step
/// together on one clock (`timed::lockstep`), each its own SWA tree, so the
/// `DataParallelController`'s load-reading methods run too. On the Mooncake trace at
/// the fixed speeds: round-robin 13,643,520 device hit tokens (22.30 %), the fewest
/// requests 13,344,256 (21.81 %), the fewest tokens 14,008,832 (22.89 %); one JSON entry
/// per rank.
#[test]
fn deepseek_v4_pro_dp8_replays_timed_with_each_balance_method() {
    let sc = repo("scenarios/deepseek-v4-pro-dp8-gb300.yaml");
    for (method, hits, line) in [
        ("round_robin", 13_643_520u64, "requests round-robin"),
        ("total_requests", 13_344_256, "total_requests_scheduler"),
        ("total_tokens", 14_008_832, "total_tokens_scheduler"),
    ] {
        let set = format!("server.load_balance_method={method}");
        let args = [
            "replay",
            sc.to_str().unwrap(),
            "--config",
            "timing=on",
            "--set",
            &set,
        ];
        let o = run(&[&args[..], &["--format", "json"]].concat(), &repo("."));
        assert!(o.status.success(), "{method}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let m = &v["metrics"];
        assert_eq!(m["ranks"].as_array().unwrap().len(), 8, "{method}");
        let input = m["input_tokens"].as_f64().unwrap();
        let dev = (m["device_hit_rate"].as_f64().unwrap() * input).round() as u64;
        assert_eq!(dev, hits, "{method}");
        assert!(m["ttft_p50_s"].as_f64().unwrap() > 0.0, "{method}");
        assert!(
            v["unverified"]
                .to_string()
                .contains("the timed replay with the SWA tree takes a request's decode KV"),
            "{method}"
        );
        let t = stdout(&run(&args, &repo(".")));
        assert!(t.contains("data-parallel ranks: 8"), "{t}");
        assert!(t.contains(line), "{t}");
    }
}

/// Where the SWA tree does not run, a DeepSeek-V4 replay is refused (exit 2) saying
/// why, never answered by the full tree: timed with decode steps interleaved, with
/// HiCache's host tier, behind Dynamo's KV router, the policy simulator.
#[test]
fn deepseek_v4_is_refused_where_the_swa_tree_does_not_run() {
    let o = replay(&[
        "--config",
        "timing=on",
        "--config",
        "decode_timeline=interleaved",
    ]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("DeepSeek-V4's replay runs SGLang 0.5.23's tree with its SWA component"),
        "{e}"
    );
    assert!(
        e.contains("the timed replay with an SWA pool decodes beside the prefill only"),
        "{e}"
    );

    let o = run(
        &[
            "replay",
            repo("scenarios/deepseek-v4-pro-host-pools.yaml")
                .to_str()
                .unwrap(),
            "--trace",
            repo("traces/generated_chat_agentic_mix.jsonl")
                .to_str()
                .unwrap(),
        ],
        &repo("."),
    );
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("an SWA pool is modelled on the device tier only"),
        "{}",
        stderr(&o)
    );

    // Dynamo's router is fed from the full tree's events only.
    let o = replay(&[
        "--set",
        "runtime.router.engines=2",
        "--set",
        "runtime.router.policy=dynamo_kv",
    ]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains(
            "a sliding-window model's engines behind Dynamo's KV router are not modelled"
        ),
        "{}",
        stderr(&o)
    );

    let o = replay(&["--engine", "policy-simulator"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("the policy simulator has one full-attention tree"),
        "{}",
        stderr(&o)
    );
}

/// A sweep of DeepSeek-V4 rows with a chunk no prompt passes: each started row replays
/// the SWA tree, `ok` (39.55 % and 85.15 % of the prompt tokens at 1,000 and 28,073
/// full pages, the SWA pool scaled from the start-up's 719 of 7,190).
#[test]
fn sweep_rows_replay_the_swa_tree_on_the_device_tier() {
    let d = tempfile::tempdir().unwrap();
    let v4 = std::fs::read_to_string(repo("scenarios/deepseek-v4-flash-device-tree.yaml"))
        .unwrap()
        .replace(
            "../traces/generated_chat_agentic_mix.jsonl",
            repo("traces/generated_chat_agentic_mix.jsonl")
                .to_str()
                .unwrap(),
        )
        .replace("--tp 2", "--tp 2 --chunked-prefill-size 32768");
    let spec = format!("{v4}sweep:\n  axes:\n    runtime.replay.l1_pages: [1000, 28073]\n");
    std::fs::write(d.path().join("s.yaml"), spec).unwrap();
    let o = run(&["sweep", "s.yaml", "--out", "o", "--quiet"], d.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let mut r = csv::Reader::from_path(d.path().join("o/results.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (st, un, dev) = (col("status"), col("unverified"), col("hit_rate_device"));
    let rows: Vec<(String, String, String)> = r
        .records()
        .map(|x| {
            let x = x.unwrap();
            (x[st].to_string(), x[un].to_string(), x[dev].to_string())
        })
        .collect();
    assert_eq!(rows.len(), 2);
    for (s, u, _) in &rows {
        assert_eq!((s.as_str(), u.as_str()), ("ok", ""));
    }
    assert_eq!(
        (rows[0].2.as_str(), rows[1].2.as_str()),
        ("0.395514", "0.851481"),
        "{rows:?}"
    );
}

/// DeepSeek-V4-Pro with DP attention over 8 ranks on two GB300 trays, HiCache off: each
/// rank its own SWA tree over its own pools (48,171 full pages of 256 tokens, 4,817 SWA
/// pages, the chunk 16,384 / 8 = 2,048 tokens a DP worker). Dealt round-robin (SGLang's
/// default method) the synthetic trace's 61,194,628 prompt tokens hit 13,645,568
/// (22.30 %), rank 4 the most (29.30 %), rank 7 the least (16.71 %); one tree of these
/// pools would hit 45.81 %. The router's cache_aware picking the rank (`--dp-aware`)
/// hits 39,610,624 (64.73 %), and the text says it is +42.43 points against
/// round-robin.
#[test]
fn deepseek_v4_pro_dp8_replays_a_swa_tree_per_rank() {
    let sc = repo("scenarios/deepseek-v4-pro-dp8-gb300.yaml");
    let go = |extra: &[&str]| {
        let mut a = vec!["replay", sc.to_str().unwrap()];
        a.extend_from_slice(extra);
        let o = run(&a, &repo("."));
        assert!(o.status.success(), "{}", stderr(&o));
        o
    };
    let v: serde_json::Value = serde_json::from_slice(&go(&["--format", "json"]).stdout).unwrap();
    let m = &v["metrics"];
    assert_eq!(v["config"]["swa"]["pages"], 4817);
    assert_eq!(v["config"]["swa"]["window"], 128);
    assert_eq!(v["config"]["l1_pages"], 48171);
    assert_eq!(m["input_tokens"], 61_194_628);
    assert_eq!(m["device_hit_tokens"], 13_645_568);
    let ranks = m["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8);
    let sum: u64 = ranks
        .iter()
        .map(|r| r["device_hit_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 13_645_568);
    assert_eq!(ranks[4]["device_hit_tokens"], 2_295_040);
    assert!(
        ranks
            .iter()
            .all(|r| r["host_hit_tokens"] == 0 && r["storage_hit_tokens"] == 0)
    );
    // The SWA component is the answer's tree: not a reason for `unverified`.
    assert!(
        !v["unverified"].to_string().contains("SWA component"),
        "{}",
        v["unverified"]
    );

    let t = stdout(&go(&["--set", "runtime.router.dp_aware=true"]));
    assert!(t.contains("total          39610624    64.73 %"), "{t}");
    assert!(
        t.contains("under round_robin the same engines would hit 22.30 % in total (13645568 hit tokens): cache_aware is +42.43 points against it"),
        "{t}"
    );
}

/// With an EAGLE draft of its MTP layer DeepSeek-V4-Flash's pools shrink (23,728 full
/// and 2,372 SWA pages at TP2 on an HGX H200, `DSV4PoolConfigurator` with the draft);
/// the SWA tree still answers (85.75 %: no prompt is evicted at this size), but
/// `unverified`: the draft's verify steps are not in the tree's decode.
#[test]
fn a_draft_leaves_the_swa_tree_s_decode_unverified() {
    let o = replay(&[
        "--set",
        "server.launch=python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 2 --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 3",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["l1_pages"], 23728);
    assert_eq!(v["config"]["swa"]["pages"], 2372);
    assert_eq!(v["metrics"]["device_hit_tokens"], 3_413_504);
    assert_eq!(v["status"], "unverified");
    assert!(
        v["unverified"]
            .to_string()
            .contains("with a speculative draft the SWA tree's decode is not SGLang's"),
        "{}",
        v["unverified"]
    );
}
