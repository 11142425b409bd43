//! Data-parallel ranks in the replay (`runtime::dp`): `--dp-size N` runs N schedulers,
//! each with its own tree and pools, and SGLang's `DataParallelController` sends request
//! i to rank i mod N (`round_robin_scheduler`, the default method). Hand-computed cases.

use crate::support::{exit2, ok, repo, run};

/// One Mooncake-trace line: sent at `t` ms, `n` prompt tokens, one output token, the
/// page hashes `ids` (comma-separated).
fn trace_line(t: u32, n: u32, ids: &str) -> String {
    format!(
        "{{\"timestamp\": {t}, \"input_length\": {n}, \"output_length\": 1, \"hash_ids\": [{ids}]}}\n"
    )
}

/// Five requests of one 2-page prefix (512-token pages), the last one a page longer:
/// - one tree: request 0 misses, 1–3 hit 1,024 tokens, 4 hits 1,024 of 1,536: 4,096;
/// - two ranks, round-robin: rank 0 gets requests 0, 2, 4 (0 + 1,024 + 1,024), rank 1
///   gets 1, 3 (0 + 1,024): 3,072 of 5,632 prompt tokens;
/// - `--warmup 1`: the trace's first request (rank 0's first) is warm-up: 4 measured,
///   the same 3,072 hit tokens.
#[test]
fn round_robin_ranks_each_with_their_own_tree() {
    let d = tempfile::tempdir().unwrap();
    let line = trace_line;
    let trace: String = (0..4)
        .map(|t| line(t, 1024, "1, 2"))
        .chain(std::iter::once(line(4, 1536, "1, 2, 3")))
        .collect();
    std::fs::write(d.path().join("t.jsonl"), trace).unwrap();
    let json = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "replay",
            "--trace",
            "t.jsonl",
            "--page-size",
            "512",
            "--l1-pages",
            "100",
            "--format",
            "json",
        ];
        args.extend(extra);
        let o = run(&args, d.path());
        ok(&o);
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["metrics"].clone()
    };
    let one = json(&[]);
    assert_eq!(one["device_hit_tokens"], 4096);
    assert!(one.get("ranks").is_none(), "one tree writes no ranks");
    let two = json(&["--config", "dp_ranks=2"]);
    assert_eq!(two["device_hit_tokens"], 3072);
    assert_eq!(two["input_tokens"], 5632);
    let ranks = two["ranks"].as_array().unwrap();
    assert_eq!(
        ranks
            .iter()
            .map(|r| (
                r["requests"].as_u64().unwrap(),
                r["device_hit_tokens"].as_u64().unwrap()
            ))
            .collect::<Vec<_>>(),
        [(3, 2048), (2, 1024)]
    );
    let warm = json(&["--config", "dp_ranks=2", "--warmup", "1"]);
    assert_eq!(warm["measured_requests"], 4);
    assert_eq!(warm["device_hit_tokens"], 3072);
    // the text says what one tree of the same pools would have hit
    let o = run(
        &[
            "replay",
            "--trace",
            "t.jsonl",
            "--page-size",
            "512",
            "--l1-pages",
            "100",
            "--config",
            "dp_ranks=2",
        ],
        d.path(),
    );
    ok(&o);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("data-parallel ranks: 2")
            && text.contains("one tree of these pools taking every request would hit 72.73 % in total: the split over 2 ranks changes it by -18.18 points"),
        "{text}"
    );
}

/// A scenario's `--dp-size` replays that many trees: the quickstart (GB300, GLM-5.2,
/// one rank's pools of 48,283 device and 51,611 host pages) with DP attention over 4
/// ranks hits 27.30 % of the synthetic trace's prompt tokens, one tree 34.00 %. A bench
/// and a timeline are refused, naming the key.
#[test]
fn a_scenarios_dp_size_replays_that_many_trees() {
    let dp = [
        "--set",
        "server.enable_dp_attention=true",
        "--set",
        "server.dp_size=4",
    ];
    let mut args = vec!["replay", "scenarios/quickstart.yaml", "--format", "json"];
    args.extend(dp);
    let o = run(&args, &repo(""));
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["dp_ranks"], 4);
    assert_eq!(v["metrics"]["total_hit_tokens"], 16704256);
    assert_eq!(v["metrics"]["input_tokens"], 61194628);
    assert_eq!(v["metrics"]["ranks"].as_array().unwrap().len(), 4);
    let o = run(
        &["replay", "scenarios/quickstart.yaml", "--format", "json"],
        &repo(""),
    );
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["config"].get("dp_ranks").is_none(),
        "dp_ranks 1 is not written"
    );
    assert_eq!(v["metrics"]["total_hit_tokens"], 20804800);

    let mut tl = vec![
        "replay",
        "scenarios/quickstart.yaml",
        "--set",
        "runtime.replay.timeline_samples=10",
    ];
    tl.extend(dp);
    exit2(
        &run(&tl, &repo("")),
        &["timeline_samples", "no timeline across their trees"],
    );
    let mut bench = vec![
        "replay",
        "scenarios/multiturn-tiers.yaml",
        "--set",
        "server.dp_size=2",
    ];
    bench.extend(["--set", "server.enable_dp_attention=true"]);
    exit2(&run(&bench, &repo("")), &["runtime.bench", "data-parallel"]);
}

/// The bundled DP-attention scenario (DeepSeek-V3.2, DP 8 over two GB300 trays,
/// `--hicache-size 100`): it starts (unverified: the GB300's GPU memory before the load
/// at world 8 is an estimate) and replays 8 trees, 21.13 % of the prompt tokens hit
/// (12,928,192), each rank's figures beside them.
#[test]
fn the_dp8_scenario_replays_eight_trees() {
    let o = run(
        &[
            "check",
            "scenarios/deepseek-v32-dp8-gb300.yaml",
            "--format",
            "json",
        ],
        &repo(""),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("\"unverified\""), "{text}");
    let o = run(
        &[
            "replay",
            "scenarios/deepseek-v32-dp8-gb300.yaml",
            "--format",
            "json",
        ],
        &repo(""),
    );
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["metrics"];
    assert_eq!(m["total_hit_tokens"], 12928192);
    let ranks = m["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8);
    let sum: u64 = ranks
        .iter()
        .map(|r| r["total_hit_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 12928192);
}

/// `--load-balance-method`: `round_robin` (and `auto`) is what the replay's DP ranks
/// model; a method that reads the schedulers' loads is refused by the replay, naming it,
/// not replayed as round-robin.
#[test]
fn a_load_reading_balance_method_runs_timed_and_is_refused_untimed() {
    let args = |m: &'static str, timing: &'static str| {
        vec![
            "replay",
            "scenarios/quickstart.yaml",
            "--set",
            "server.enable_dp_attention=true",
            "--set",
            "server.dp_size=2",
            "--set",
            m,
            "--set",
            timing,
        ]
    };
    // Untimed there are no loads to read: refused, never replayed as round-robin.
    exit2(
        &run(
            &args(
                "server.load_balance_method=total_requests",
                "runtime.replay.timing=off",
            ),
            &repo(""),
        ),
        &[
            "--load-balance-method total_requests reads the ranks' loads",
            "timing: on",
        ],
    );
    // A method the replay does not model is refused either way.
    exit2(
        &run(
            &args(
                "server.load_balance_method=follow_bootstrap_room",
                "runtime.replay.timing=on",
            ),
            &repo(""),
        ),
        &["--load-balance-method follow_bootstrap_room is not modelled"],
    );
    let o = run(
        &args(
            "server.load_balance_method=total_tokens",
            "runtime.replay.timing=on",
        ),
        &repo(""),
    );
    ok(&o);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("requests to the fewest KV + queued tokens (total_tokens_scheduler"));
    assert!(
        t.contains("round-robin over the same ranks would hit"),
        "{t}"
    );
    let o = run(
        &args(
            "server.load_balance_method=round_robin",
            "runtime.replay.timing=off",
        ),
        &repo(""),
    );
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("data-parallel ranks: 2"));
}

/// The timed replay runs DP-attention ranks in lockstep (`runtime::timed::lockstep`):
/// every forward ends when the slowest rank's does, and a rank that gets a request
/// during a step waits for the next. Fixed speeds (prefill 20,000 tok/s), one output
/// token (no decode), two ranks, round-robin:
/// - t = 0: r0 (1,000 tokens, rank 0: 50 ms) and r1 (200, rank 1: 10 ms) form one step,
///   which ends at 50 ms: r1's TTFT is 50 ms, 40 of them waiting for rank 0;
/// - r2 (400 tokens, rank 0) arrives at 20 ms, during that step: the next step (50–70
///   ms) runs it alone, TTFT 50 ms (30 queued);
/// - r3 (200 tokens, rank 1) arrives at 60 ms, its rank idle but the step (rank 0's) in
///   flight: it runs 70–80 ms, TTFT 20 ms (10 queued), where an engine of its own
///   would have taken 10 ms.
///
/// TTFTs 50, 50, 50, 20 ms: mean 42.5 = queue 10 + forward 22.5 + DP wait 10.
#[test]
fn dp_attention_ranks_run_their_forwards_in_lockstep() {
    use hicache_sim::runtime::replay;
    let req = |id: u64, at_ms: u64, tokens: u32| timed_req(id, at_ms, tokens, 1);
    let trace = || {
        vec![
            req(0, 0, 1000),
            req(1, 0, 200),
            req(2, 20, 400),
            req(3, 60, 200),
        ]
    };
    let cfg = timed_dp_cfg;
    let m = replay(&cfg(2), trace()).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert_eq!(m.ranks.len(), 2);
    assert!(close(m.makespan_s.unwrap(), 0.08), "{m:#?}");
    assert_eq!((m.ttft_p50_s, m.ttft_p99_s), (Some(0.05), Some(0.05)));
    let b = m.ttft_breakdown.unwrap();
    assert_eq!(b.requests, 4);
    assert!(close(b.mean_s, 0.0425), "{b:?}");
    assert!(close(b.queue_s, 0.01), "{b:?}");
    assert!(close(b.forward_s, 0.0225), "{b:?}");
    assert!(close(b.dp_wait_s, 0.01), "{b:?}");
    // Each rank's own figures: rank 1 had r1 (50 ms) and r3 (20 ms).
    assert_eq!(m.ranks[1].ttft_p99_s, Some(0.05));
    assert_eq!(m.ranks[1].ttft_p50_s, Some(0.02));
    assert!(close(m.ranks[1].ttft_breakdown.unwrap().dp_wait_s, 0.02));
    // Each rank's makespan is its own last event: rank 0's r2 ends at 70 ms.
    assert_eq!(m.ranks[0].makespan_s, Some(0.07));
    assert_eq!(m.ranks[1].makespan_s, Some(0.08));
    // One engine, the same trace: one batch at t = 0 (r0 + r1, 60 ms), then r2, r3.
    let one = replay(&cfg(1), trace()).unwrap();
    assert!(one.ranks.is_empty());
    assert_eq!(one.ttft_breakdown.unwrap().dp_wait_s, 0.0);
}

/// With a speculative draft, DP-attention ranks never mix prefill and decode in one
/// step (`Scheduler.get_next_batch_to_run`: the new prefill batch is MLP-synced first):
/// while any rank prefills, the others' decodes wait. Two ranks, fixed speeds (prefill
/// 20,000 tok/s, decode 50 tok/s: 20 ms a step), decode on the GPU's timeline:
/// - r0 (200 tokens, 3 output) on rank 0 at 0: prefill 0–10 ms, then 2 decode steps;
/// - r1 (1,000 tokens, 1 output) on rank 1 at 15 ms, during r0's first step (10–30).
///
/// Without a draft, at 30 ms rank 0 decodes (30–50) beside rank 1's prefill (30–80):
/// the step ends at 80 and r0 finishes there (TPOT (80 − 10) / 2 = 35 ms). With one,
/// rank 0's decode waits out the prefill step (30–80) and runs 80–100: r0 finishes at
/// 100 ms (TPOT 45 ms). r1's TTFT is 65 ms either way.
#[test]
fn with_a_speculative_draft_a_rank_decodes_only_when_no_rank_prefills() {
    use hicache_sim::runtime::{DecodeTimeline, replay};
    let trace = || vec![timed_req(0, 0, 200, 3), timed_req(1, 15, 1000, 1)];
    let cfg = |spec: bool| {
        let mut c = timed_dp_cfg(2);
        c.scheduler.decode_timeline = DecodeTimeline::Interleaved;
        c.scheduler.compute.speculative = spec.then(crate::support::mtp_draft);
        c
    };
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
    let plain = replay(&cfg(false), trace()).unwrap();
    assert!(close(plain.makespan_s, 0.08), "{plain:#?}");
    assert!(
        close(plain.ranks[0].tpot_mean_s, 0.035),
        "{:?}",
        plain.ranks[0]
    );
    assert!(close(plain.ranks[1].ttft_p50_s, 0.065));
    let spec = replay(&cfg(true), trace()).unwrap();
    assert!(close(spec.makespan_s, 0.1), "{spec:#?}");
    assert!(close(spec.ranks[0].makespan_s, 0.1));
    assert!(
        close(spec.ranks[0].tpot_mean_s, 0.045),
        "{:?}",
        spec.ranks[0]
    );
    assert!(close(spec.ranks[1].ttft_p50_s, 0.065));
    // The speeds say so.
    let sp = hicache_sim::runtime::Speeds::of(&cfg(true));
    assert!(
        sp.dp_attention
            .unwrap()
            .spec_sync
            .unwrap()
            .starts_with("with a speculative draft a step runs prefills or decodes")
    );
}

/// The load-reading methods in the timed replay (`DPBudget`, `refresh_load_budget`):
/// the controller reads the ranks' published loads at most every 20 ms and counts
/// each request it sends in between. Two ranks, fixed speeds, one output token:
/// - `total_requests`, requests at 0, 1, 2, 30, 31 ms (1,000 tokens each): 0 → rank 0,
///   1 → rank 1, 2 → rank 0 (a tie: the first); at 30 ms the refresh reads rank 1's
///   idle snapshot (0 requests, published at 0) and nothing from rank 0 (its prefill
///   has not ended): the budget is [2, 0], so 3 → rank 1 ([2, 1]), and at 31 ms (no
///   refresh) 4 → rank 1 ([2, 2]). Rank 0 gets 2 requests, rank 1 three; round-robin
///   3 and 2.
/// - `total_tokens`, 1,000 / 200 / 200 tokens at 0, 1, 2 ms: 0 → rank 0 (1,000 tokens),
///   1 → rank 1 (200), 2 → rank 1 (400 < 1,000); round-robin sends it to rank 0.
#[test]
fn total_requests_and_total_tokens_read_the_budget() {
    use hicache_sim::runtime::dp::DpBalance;
    use hicache_sim::runtime::replay;
    let req = |id: u64, at_ms: u64, tokens: u32| timed_req(id, at_ms, tokens, 1);
    let cfg = |b: DpBalance| {
        let mut c = timed_dp_cfg(2);
        c.capacities.dp_balance = b;
        c
    };
    let per_rank = |b: DpBalance, trace: Vec<hicache_sim::workload::Request>| -> Vec<u64> {
        let m = replay(&cfg(b), trace).unwrap();
        m.ranks.iter().map(|r| r.measured_requests).collect()
    };
    let five = || {
        [0, 1, 2, 30, 31]
            .iter()
            .enumerate()
            .map(|(i, &t)| req(i as u64, t, 1000))
            .collect::<Vec<_>>()
    };
    assert_eq!(per_rank(DpBalance::TotalRequests, five()), [2, 3]);
    assert_eq!(per_rank(DpBalance::RoundRobin, five()), [3, 2]);
    let three = || vec![req(0, 0, 1000), req(1, 1, 200), req(2, 2, 200)];
    assert_eq!(per_rank(DpBalance::TotalTokens, three()), [1, 2]);
    assert_eq!(per_rank(DpBalance::RoundRobin, three()), [2, 1]);
}

/// The figures the hit-rates chapter gives for the DP8 scenario, timed: round-robin
/// 21.15 %, `total_requests` 21.86 % of the prompt tokens.
#[test]
fn the_dp8_scenario_timed_under_each_method() {
    let rate = |m: &str| {
        let set = format!("server.load_balance_method={m}");
        let o = run(
            &[
                "replay",
                "scenarios/deepseek-v32-dp8-gb300.yaml",
                "--set",
                "runtime.replay.timing=on",
                "--set",
                &set,
                "--format",
                "json",
            ],
            &repo(""),
        );
        ok(&o);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["speeds"]["dp_attention"]["balance"], m);
        format!(
            "{:.2}",
            v["metrics"]["total_hit_rate"].as_f64().unwrap() * 100.0
        )
    };
    assert_eq!(rate("round_robin"), "21.15");
    assert_eq!(rate("total_requests"), "21.86");
}

/// The balance method is a sweep axis (its flag in the launch command): one row per
/// method, each with the hit rate its replay gives.
#[test]
fn the_balance_method_is_a_sweep_axis() {
    let d = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(repo("scenarios/deepseek-v32-dp8-gb300.yaml"))
        .unwrap()
        .replace("../traces/", &format!("{}/", repo("traces").display()))
        .replace(
            "--trust-remote-code",
            "--trust-remote-code --load-balance-method round_robin",
        );
    let sc = d.path().join("dp8.yaml");
    std::fs::write(
        &sc,
        format!(
            "{base}  replay:\n    timing: on\nsweep:\n  axes:\n    server.load_balance_method: [round_robin, total_requests]\n"
        ),
    )
    .unwrap();
    let o = run(&["sweep", sc.to_str().unwrap(), "--out", "out"], d.path());
    ok(&o);
    let mut rdr = csv::Reader::from_path(d.path().join("out/results.csv")).unwrap();
    let h = rdr.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let rows: Vec<(String, String)> = rdr
        .records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[col("server.load_balance_method")].to_string(),
                r[col("hit_rate_total")].to_string(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("round_robin".to_string(), "0.211548".to_string()),
            ("total_requests".to_string(), "0.218621".to_string())
        ]
    );
}

/// `replay --ranks-csv`: one row per DP rank and `all`, TTFT columns when timed, the
/// hit rates plotted beside it; refused without DP ranks. With 100 warm-up requests the
/// DP8 scenario's ranks measure 487 or 486 requests each (3,893 in all).
#[test]
fn ranks_csv_has_a_row_per_rank_and_the_whole() {
    let d = tempfile::tempdir().unwrap();
    let csv_path = d.path().join("ranks.csv");
    let o = run(
        &[
            "replay",
            "scenarios/deepseek-v32-dp8-gb300.yaml",
            "--set",
            "runtime.replay.timing=on",
            "--set",
            "runtime.replay.warmup_requests=100",
            "--ranks-csv",
            csv_path.to_str().unwrap(),
        ],
        &repo(""),
    );
    ok(&o);
    let text = std::fs::read_to_string(&csv_path).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[0][0], "rank");
    assert_eq!(
        rows[0][12..],
        [
            "ttft_p50_s",
            "ttft_p99_s",
            "dp_wait_mean_s",
            "makespan_s",
            "status",
            "unverified"
        ]
    );
    let measured: Vec<&str> = rows[1..].iter().map(|r| r[2]).collect();
    assert_eq!(
        measured,
        [
            "487", "486", "486", "486", "487", "487", "487", "487", "3893"
        ]
    );
    assert_eq!((rows[9][0], rows[9][1]), ("all", "3993"));
    assert!(d.path().join("ranks_hit_rates.png").exists());
    // One tree: nothing to write.
    let o = run(
        &[
            "replay",
            "scenarios/quickstart.yaml",
            "--ranks-csv",
            csv_path.to_str().unwrap(),
        ],
        &repo(""),
    );
    exit2(&o, &["--ranks-csv", "no data-parallel ranks"]);
}

/// The server's `--max-running-requests` is split over the DP-attention ranks
/// (`resolve_max_num_reqs`: `max(1, M // dp)`). M = 2 over two ranks: rank 0 runs one
/// request at a time. r0 (rank 0, 1,000 tokens, 2 output tokens) prefills 0–50 ms and
/// decodes until 70 ms beside the prefill; r2 (rank 0, 1,000 tokens) arrives at 1 ms.
/// Split, r2 waits for r0 to finish: 70–120 ms, TTFT 119 ms; unsplit (the replay's own
/// default is never split), it runs at the next step: 50–100 ms, TTFT 99 ms.
#[test]
fn the_servers_max_running_requests_is_split_over_the_ranks() {
    use hicache_sim::runtime::replay;
    let req = timed_req;
    let trace = || vec![req(0, 0, 1000, 2), req(1, 0, 64, 1), req(2, 1, 1000, 1)];
    let p99 = |split: bool| {
        let mut cfg = timed_dp_cfg(2);
        cfg.scheduler.max_running_requests = 2;
        cfg.scheduler.max_running_requests_split = split;
        replay(&cfg, trace()).unwrap().ttft_p99_s.unwrap()
    };
    assert!((p99(true) - 0.119).abs() < 1e-12, "{}", p99(true));
    assert!((p99(false) - 0.099).abs() < 1e-12, "{}", p99(false));
}

/// A load-reading method behind a router is refused untimed (the engines' ranks would
/// be dealt round-robin there); timed, each engine's controller reads its ranks' loads.
#[test]
fn a_load_reading_method_behind_a_router_is_refused_untimed() {
    let o = run(
        &[
            "replay",
            "scenarios/deepseek-v32-dp8-gb300.yaml",
            "--set",
            "server.load_balance_method=total_requests",
            "--set",
            "runtime.router.engines=2",
        ],
        &repo(""),
    );
    exit2(
        &o,
        &[
            "--load-balance-method total_requests behind a router reads the ranks' loads over time, which only the timed replay has",
        ],
    );
}

/// A request of `tokens` prompt tokens (its own pages: no prefix shared with another
/// request) sent at `at_ms`, with `out` output tokens.
fn timed_req(id: u64, at_ms: u64, tokens: u32, out: u32) -> hicache_sim::workload::Request {
    hicache_sim::workload::Request {
        id,
        arrival_ns: at_ms * 1_000_000,
        input_tokens: tokens,
        output_tokens: out,
        page_hashes: (0..u64::from(tokens / 64)).map(|p| id * 1000 + p).collect(),
    }
}

/// A timed replay over `ranks` DP-attention ranks at fixed speeds (prefill 20,000
/// tok/s, decode 50 tok/s), 1,000 device pages, no host tier, invariants checked.
pub(crate) fn timed_dp_cfg(ranks: u32) -> hicache_sim::runtime::ReplayConfig {
    use hicache_sim::runtime::{Capacities, Measurement, ReplayConfig, Timing};
    ReplayConfig {
        capacities: Capacities {
            l1_pages: 1000,
            l2_pages: 0,
            dp_ranks: ranks,
            ..Default::default()
        },
        measurement: Measurement {
            timing: Timing::On,
            debug_checks: true,
            ..Default::default()
        },
        ..ReplayConfig::default()
    }
}

/// The DP-attention ranks of a server read and write one L3 store, as SGLang's do (a
/// page's storage key has no DP rank in it: `runtime::l3_store`). Two ranks,
/// round-robin, write-through to host and L3, three requests of the same two 512-token
/// pages: rank 0 prefills request 0 and its backups put both pages in L3. Request 1, on
/// rank 1 (an empty tree), finds them in the shared store: 1,024 storage-hit tokens;
/// with one store per rank (`l3_scope: rank`) it misses them and writes them again.
/// Request 2 (rank 0) hits its device either way. The shared store's 2 pages are
/// counted once, on rank 0.
#[test]
fn dp_ranks_share_one_l3_store() {
    let d = tempfile::tempdir().unwrap();
    let trace: String = (0..3).map(|t| trace_line(t, 1024, "1, 2")).collect();
    std::fs::write(d.path().join("t.jsonl"), trace).unwrap();
    let json = |scope: &str| -> serde_json::Value {
        let o = run(
            &[
                "replay",
                "--trace",
                "t.jsonl",
                "--page-size",
                "512",
                "--l1-pages",
                "2",
                "--config",
                "l2_pages=2",
                "--config",
                "l3_unbounded=true",
                "--config",
                "write_policy=write_through",
                "--config",
                "dp_ranks=2",
                "--config",
                &format!("l3_scope={scope}"),
                "--format",
                "json",
            ],
            d.path(),
        );
        ok(&o);
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["metrics"].clone()
    };
    let per_rank = |m: &serde_json::Value, key: &str| -> Vec<u64> {
        m["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[key].as_u64().unwrap())
            .collect()
    };
    let shared = json("fleet");
    assert_eq!(per_rank(&shared, "storage_hit_tokens"), [0, 1024]);
    assert_eq!(per_rank(&shared, "device_hit_tokens"), [1024, 0]);
    assert_eq!(per_rank(&shared, "final_storage_pages"), [2, 0]);
    assert_eq!(shared["final_storage_pages"], 2);
    let own = json("rank");
    assert_eq!(per_rank(&own, "storage_hit_tokens"), [0, 0]);
    assert_eq!(per_rank(&own, "device_hit_tokens"), [1024, 0]);
    assert_eq!(per_rank(&own, "final_storage_pages"), [2, 2]);
    assert_eq!(own["final_storage_pages"], 4);
}

/// A page is in the shared L3 store once its write has ended, not when it is issued:
/// a `batch_exists` before that misses it. Two ranks, round-robin, timed at fixed speeds,
/// write-through, `wait_complete`, 1 KiB a token (a 512-token page is 512 KiB). Rank 0
/// prefills request 0 (1,024 tokens at 20,000 tok/s: 51.2 ms); its backup reaches the
/// host ~26 µs later and its 1 MiB L3 write then takes 1.048576 s at 1 MB/s, so the
/// pages are in the store from ~1.0998 s. Request 1 (rank 1, the same two pages) sent
/// at 1.090 s misses them and recomputes; sent at 1.110 s it fetches both (1,024
/// storage-hit tokens).
#[test]
fn an_l3_page_is_readable_once_its_write_ends() {
    let d = tempfile::tempdir().unwrap();
    let hits = |at_ms: u32| -> Vec<u64> {
        let line = |t: u32| trace_line(t, 1024, "1, 2");
        std::fs::write(d.path().join("t.jsonl"), line(0) + &line(at_ms)).unwrap();
        let mut args = vec![
            "replay",
            "--trace",
            "t.jsonl",
            "--page-size",
            "512",
            "--l1-pages",
            "2",
        ];
        for c in [
            "l2_pages=8",
            "l3_unbounded=true",
            "write_policy=write_through",
            "dp_ranks=2",
            "l3_scope=fleet",
            "timing=on",
            "bytes_per_token=1024",
            "prefetch_policy=wait_complete",
            "storage_write_bandwidth=1MB/s",
        ] {
            args.extend(["--config", c]);
        }
        args.extend(["--format", "json"]);
        let o = run(&args, d.path());
        ok(&o);
        let m = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["metrics"].clone();
        m["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["storage_hit_tokens"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(hits(1090), [0, 0]);
    assert_eq!(hits(1110), [0, 1024]);
}

/// The DP8 DeepSeek-V3.2 scenario with a Mooncake store: the eight ranks' shared store
/// takes the trace's hit rate from 22.22 % (one store per rank) to 47.83 %, 26.70 % of
/// it from L3; timed, 22.70 % → 52.30 % and the TTFT p50 from 3.517 to 2.048 s. A file
/// backend's store is a directory on each node (`l3_scope: node`): this server spans two
/// trays of four ranks each, two stores, 38.11 %.
#[test]
fn the_dp8_scenario_shares_its_l3_store() {
    let json = |set: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "replay",
            "scenarios/deepseek-v32-dp8-gb300.yaml",
            "--format",
            "json",
        ];
        for s in set {
            args.extend(["--set", s]);
        }
        let o = run(&args, &repo(""));
        ok(&o);
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let mc = "server.hicache_storage_backend=mooncake";
    let rank = "runtime.replay.l3_scope=rank";
    let timed = "runtime.replay.timing=on";
    let rate = |v: &serde_json::Value| {
        let m = &v["metrics"];
        (
            (m["total_hit_rate"].as_f64().unwrap() * 1e4).round() / 1e4,
            (m["storage_hit_rate"].as_f64().unwrap() * 1e4).round() / 1e4,
        )
    };
    assert_eq!(rate(&json(&[mc])), (0.4783, 0.2670));
    assert_eq!(rate(&json(&[mc, rank])), (0.2222, 0.0109));
    let t = json(&[mc, timed]);
    assert_eq!(rate(&t), (0.5230, 0.3117));
    assert_eq!(t["metrics"]["ttft_p50_s"].as_f64().unwrap(), 2.0476);
    let t = json(&[mc, timed, rank]);
    assert_eq!(rate(&t).0, 0.2270);
    assert_eq!(t["metrics"]["ttft_p50_s"].as_f64().unwrap(), 3.51745);
    // A file backend's directory is on each tray: ranks 0-3 share one, 4-7 the other.
    let file = json(&["server.hicache_storage_backend=file"]);
    assert_eq!(rate(&file), (0.3811, 0.1699));
    let stores: Vec<u64> = file["metrics"]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["final_storage_pages"].as_u64().unwrap())
        .collect();
    assert_eq!(stores, [207_735, 0, 0, 0, 213_665, 0, 0, 0]);
    for v in [file, json(&[mc])] {
        assert!(
            !v["unverified"]
                .as_array()
                .unwrap()
                .iter()
                .any(|u| u.as_str().unwrap().contains("store")),
            "{v}"
        );
    }
}
