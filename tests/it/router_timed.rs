//! Engines behind the router, timed (`runtime::timed::fleet`): each engine on its own
//! clock, the router's load of an engine its requests in flight at each arrival.

use hicache_sim::runtime::router::{RouterPolicy, RouterSpec};
use hicache_sim::runtime::{ReplayConfig, Timing, replay_fleet_timed};
use hicache_sim::workload::Request;

use crate::support::{exit2, repo, run, stderr, stdout};

/// 64-token pages, the fixed speeds (20,000 prefill and 50 decode tokens/s), timed.
fn cfg() -> ReplayConfig {
    let mut c = ReplayConfig::default();
    c.measurement.timing = Timing::On;
    c
}

/// A prompt of 4 pages of its own (`first ..`), arriving at `at_s`, with `output`
/// tokens.
fn req(id: u64, at_s: f64, first: u64, output: u32) -> Request {
    Request {
        id,
        arrival_ns: (at_s * 1e9) as u64,
        input_tokens: 256,
        output_tokens: output,
        page_hashes: (first..first + 4).collect(),
    }
}

/// Three distinct prompts (no router-tree match: cache_aware's least load): A at 0
/// decodes 1,000 tokens (20 s at 50 tokens/s) on engine 0; B at 1 ms finds engine 0
/// loaded and goes to engine 1, where it ends at its prefill (12.8 ms); C at 1 s finds
/// A still in flight and engine 1 idle: engine 1. The untimed completion window (16 in
/// flight) would count B as in flight and send C to engine 0.
#[test]
fn cache_aware_reads_the_requests_in_flight_on_the_clock() {
    let spec = RouterSpec {
        engines: 2,
        policy: RouterPolicy::CacheAware,
        ..RouterSpec::default()
    };
    let reqs = vec![
        req(0, 0.0, 100, 1001),
        req(1, 0.001, 200, 1),
        req(2, 1.0, 300, 1),
    ];
    let (m, f) = replay_fleet_timed(&cfg(), &spec, reqs.clone()).unwrap();
    assert_eq!(f.assigned, [1, 2]);
    assert_eq!(f.cache_misses, 3);
    assert!(f.clock_loads);
    assert_eq!(m.engines.len(), 2);
    assert_eq!(
        m.engines.iter().map(|e| e.requests).collect::<Vec<_>>(),
        [1, 2]
    );
    // A's decode: 1,000 tokens after its first at 50 tokens/s.
    assert!((m.tpot_mean_s.unwrap() - 0.020).abs() < 1e-12);
    assert_eq!(m.ttft_p99_s, Some(0.0128));

    let (e, _) = hicache_sim::runtime::router::assign(&spec, reqs).unwrap();
    assert_eq!(e, [0, 1, 0], "the completion window's choice");
}

/// Round-robin deals in turn whatever the loads: 0, 1, 0.
#[test]
fn round_robin_deals_in_turn() {
    let spec = RouterSpec {
        engines: 2,
        policy: RouterPolicy::RoundRobin,
        ..RouterSpec::default()
    };
    let reqs = vec![
        req(0, 0.0, 100, 1001),
        req(1, 0.001, 200, 1),
        req(2, 1.0, 300, 1),
    ];
    let (_, f) = replay_fleet_timed(&cfg(), &spec, reqs).unwrap();
    assert_eq!(f.assigned, [2, 1]);
}

/// `scenarios/router-4-engines.yaml` timed: GLM-5.2 on four GB300 trays behind
/// cache_aware, the Mooncake trace: 62.18 % of the prompt tokens hit (37,408,576 device
/// and 643,584 host tokens; TTFT p50 30 ms), against 27.28 % under round_robin (TTFT
/// p50 0.792 s); per-engine entries with their TTFTs, the router's loads on the clock. Dynamo's KV router and DP ranks in the engines stay
/// untimed, refused naming why.
#[test]
fn the_router_scenario_replays_timed() {
    let sc = repo("scenarios/router-4-engines.yaml");
    let args = ["replay", sc.to_str().unwrap(), "--config", "timing=on"];
    let o = run(&[&args[..], &["--format", "json"]].concat(), &repo("."));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["metrics"];
    assert_eq!(m["engines"].as_array().unwrap().len(), 4);
    assert_eq!(m["router"]["clock_loads"], true);
    assert_eq!(
        m["router"]["assigned"],
        serde_json::json!([1162, 1012, 925, 894])
    );
    let t = stdout(&run(&args, &repo(".")));
    for want in [
        "each on its own clock, the router's load of an engine its requests in flight",
        "all         3993       61194628       37408576         643584              0    62.18 %",
        "under round_robin the same engines would hit 27.28 % in total",
        // Each engine's TTFT, and against round_robin: queues where the misses pile up.
        "62.18 %    0.030 s    3.907 s",
        "cache_aware is +34.90 points against it; TTFT p50 0.030 s against 0.792 s",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    // `--engines-csv`: each engine's TTFT too.
    let d = tempfile::tempdir().unwrap();
    let csv = d.path().join("engines.csv");
    let o = run(
        &[&args[..], &["--engines-csv", csv.to_str().unwrap()]].concat(),
        &repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().contains(",ttft_p50_s,ttft_p99_s,"));
    let all = lines.find(|l| l.starts_with("all,")).unwrap();
    assert!(all.contains(",0.030000,3.907450,"), "{all}");
    // Behind Dynamo's KV router, timed (refused before): the loads it tracks itself.
    let o = run(
        &[&args[..], &["--set", "runtime.router.policy=dynamo_kv"]].concat(),
        &repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "Dynamo's load of an engine (of a rank, when it routes ranks), tracked by the router itself",
        "all         3993       61194628       30049536         598016              0    50.08 %    0.041 s    2.756 s",
        "under cache_aware the same engines would hit 62.18 % in total",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    // In front of PD prefill servers it is refused (the PD replay's router is
    // sgl-router's), never replayed as another policy.
    let o = run(
        &[
            "replay",
            "scenarios/pd-deepseek-v3-h200.yaml",
            "--set",
            "runtime.router.policy=dynamo_kv",
        ],
        &repo("."),
    );
    exit2(
        &o,
        &["Dynamo's KV router in front of PD prefill servers is not modelled"],
    );
}

/// Four distinct prompts sent at the same instant: each engine's load counts what it
/// holds and what waits in its feed (A on engine 0, B on 1, C on 0 behind A, then D
/// sees loads 2 and 1 and goes to engine 1): 2 and 2.
#[test]
fn simultaneous_sends_count_what_waits_in_the_feed() {
    let spec = RouterSpec {
        engines: 2,
        policy: RouterPolicy::CacheAware,
        ..RouterSpec::default()
    };
    let reqs = (0..4)
        .map(|i| req(i, 0.0, 100 * (i + 1), 1))
        .collect::<Vec<_>>();
    let (_, f) = replay_fleet_timed(&cfg(), &spec, reqs).unwrap();
    assert_eq!(f.assigned, [2, 2]);
}

/// One engine with two DP-attention ranks behind the router replays exactly what the
/// engine alone replays (`timed::lockstep`): the router always picks it, its
/// controller picks the rank, round-robin or by the ranks' published loads.
#[test]
fn an_engine_with_dp_ranks_behind_the_router_is_the_engine_alone() {
    use hicache_sim::runtime::dp::DpBalance;
    let spec = RouterSpec {
        engines: 1,
        policy: RouterPolicy::RoundRobin,
        ..RouterSpec::default()
    };
    // Distinct and shared prompts, overlapping in time.
    let reqs: Vec<Request> = (0..24)
        .map(|i| req(i, i as f64 * 0.004, 100 * (i % 5), 3 + (i % 4) as u32 * 40))
        .collect();
    for method in [
        DpBalance::RoundRobin,
        DpBalance::TotalRequests,
        DpBalance::TotalTokens,
    ] {
        let mut c = cfg();
        c.capacities.dp_ranks = 2;
        c.capacities.dp_balance = method;
        let alone = hicache_sim::runtime::replay(&c, reqs.clone()).unwrap();
        let (fleet, _) = replay_fleet_timed(&c, &spec, reqs.clone()).unwrap();
        assert_eq!(fleet.engines.len(), 1);
        let e = &fleet.engines[0];
        assert_eq!(e.ranks.len(), 2, "{method:?}");
        for (a, b) in alone.ranks.iter().zip(&e.ranks) {
            assert_eq!(a.requests, b.requests, "{method:?}");
            assert_eq!(a.device_hit_tokens, b.device_hit_tokens, "{method:?}");
        }
        assert_eq!(
            alone.device_hit_tokens, fleet.device_hit_tokens,
            "{method:?}"
        );
        assert_eq!(alone.ttft_p50_s, fleet.ttft_p50_s, "{method:?}");
        assert_eq!(alone.ttft_p99_s, fleet.ttft_p99_s, "{method:?}");
        assert_eq!(alone.tpot_mean_s, fleet.tpot_mean_s, "{method:?}");
        assert_eq!(alone.makespan_s, fleet.makespan_s, "{method:?}");
    }
}

/// `scenarios/deepseek-v32-dp8-gb300.yaml` as two engines behind cache_aware, timed,
/// each engine's eight ranks by `total_requests`: the fleet runs (it was refused), each
/// engine's controller reading its own ranks' loads.
#[test]
fn engines_with_dp_ranks_run_timed_behind_the_router() {
    let args = [
        "replay",
        "scenarios/deepseek-v32-dp8-gb300.yaml",
        "--set",
        "runtime.router.engines=2",
        "--set",
        "runtime.replay.timing=on",
        "--set",
        "server.load_balance_method=total_requests",
    ];
    let o = run(&args, &repo("."));
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "each engine has 8 data-parallel ranks, each its own tree and pools: the router picks the engine, the engine's DataParallelController its rank by --load-balance-method total_requests",
        "0           1996       30097478        6808768",
        "1           1997       31097150        7557184",
        "all         3993       61194628       14365952              0              0    23.48 %    1.921 s   10.465 s",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    let o = run(&[&args[..], &["--format", "json"]].concat(), &repo("."));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let engines = v["metrics"]["engines"].as_array().unwrap();
    assert_eq!(engines.len(), 2);
    assert_eq!(engines[0]["ranks"].as_array().unwrap().len(), 8);
    assert_eq!(v["metrics"]["router"]["dp_balance"], "total_requests");
}

/// `--dp-aware`, timed: the router's workers are the ranks and the rank it picks is the
/// one the request runs on, past the engine's balance method
/// (`maybe_external_dp_rank_routing`). One engine of two ranks behind a round-robin
/// router deals request i to rank i mod 2 under any method: the engine alone under
/// round_robin, request for request, though its method here is `total_requests`.
#[test]
fn dp_aware_sends_to_the_routers_rank_past_the_method() {
    use hicache_sim::runtime::dp::DpBalance;
    let spec = RouterSpec {
        engines: 1,
        policy: RouterPolicy::RoundRobin,
        dp_aware: true,
        ..RouterSpec::default()
    };
    let reqs: Vec<Request> = (0..24)
        .map(|i| req(i, i as f64 * 0.004, 100 * (i % 5), 3 + (i % 4) as u32 * 40))
        .collect();
    let mut c = cfg();
    c.capacities.dp_ranks = 2;
    c.capacities.dp_balance = DpBalance::RoundRobin;
    let alone = hicache_sim::runtime::replay(&c, reqs.clone()).unwrap();
    c.capacities.dp_balance = DpBalance::TotalRequests;
    let by_load = hicache_sim::runtime::replay(&c, reqs.clone()).unwrap();
    let (fleet, figures) = replay_fleet_timed(&c, &spec, reqs).unwrap();
    assert_eq!(figures.assigned, [12, 12]);
    let e = &fleet.engines[0];
    for (a, b) in alone.ranks.iter().zip(&e.ranks) {
        assert_eq!((a.requests, a.input_tokens), (12, 12 * 256));
        assert_eq!(a.requests, b.requests);
        assert_eq!(a.device_hit_tokens, b.device_hit_tokens);
    }
    assert_eq!(alone.ttft_p50_s, fleet.ttft_p50_s);
    assert_eq!(alone.ttft_p99_s, fleet.ttft_p99_s);
    assert_eq!(alone.makespan_s, fleet.makespan_s);
    // The engine's own method would have dealt them otherwise.
    assert_ne!(
        by_load
            .ranks
            .iter()
            .map(|r| r.device_hit_tokens)
            .collect::<Vec<_>>(),
        e.ranks
            .iter()
            .map(|r| r.device_hit_tokens)
            .collect::<Vec<_>>()
    );
}

/// `scenarios/deepseek-v32-dp8-gb300.yaml` as two engines behind cache_aware, timed,
/// with `--dp-aware` (refused before): the router's 16 workers are the ranks, its tree
/// sends each prefix to the rank that holds it, and the text says by how much that beats
/// the engines' controllers round-robining their ranks. A PD deployment's prefill ranks
/// follow the bootstrap room: `--dp-aware` there stays refused.
#[test]
fn dp_aware_runs_timed_behind_the_router() {
    let args = [
        "replay",
        "scenarios/deepseek-v32-dp8-gb300.yaml",
        "--set",
        "runtime.router.engines=2",
        "--set",
        "runtime.replay.timing=on",
        "--set",
        "runtime.router.dp_aware=true",
    ];
    let o = run(&args, &repo("."));
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "the router picks the rank (--dp-aware: 16 workers, engine-major; the request's data_parallel_rank)",
        "all         3993       61194628       39845952              0              0    65.11 %    0.170 s    4.590 s",
        "the same ranks would hit 22.90 % in total (14014720 hit tokens): --dp-aware cache_aware is +42.21 points against it",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    // The engines' own method, a load-reading one, is what the comparison runs (and
    // says); the router's ranks are the same whatever it is.
    let o = run(
        &[
            &args[..],
            &["--set", "server.load_balance_method=total_requests"],
        ]
        .concat(),
        &repo("."),
    );
    let t = stdout(&o);
    for want in [
        "all         3993       61194628       39845952              0              0    65.11 %    0.170 s    4.590 s",
        "each engine's DataParallelController picks its rank by --load-balance-method total_requests) the same ranks would hit 23.48 % in total",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    let o = run(&[&args[..], &["--format", "json"]].concat(), &repo("."));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["metrics"]["router"];
    assert_eq!(r["dp_aware"], true);
    assert_eq!(r["assigned"].as_array().unwrap().len(), 16);
    assert!(r.get("dp_balance").is_none_or(|b| b.is_null()), "{r}");
    let o = run(
        &[
            "replay",
            "scenarios/pd-deepseek-v3-h200.yaml",
            "--set",
            "server.dp_size=8",
            "--set",
            "server.enable_dp_attention=true",
            "--set",
            "runtime.router.dp_aware=true",
        ],
        &repo("."),
    );
    exit2(
        &o,
        &[
            "--dp-aware in front of PD prefill servers is not modelled: sgl-router 0.3.2's PD router sends to the worker's URL",
        ],
    );
}

/// Dynamo's KV router, timed: at each arrival it reads the engines' trees and the loads
/// it tracks (the prompt tokens not cached of requests whose first token has not come
/// back; the blocks of those not finished). Blocks of 64 tokens, default weights, fixed
/// speeds. A (pages 100–103, 1,000 output tokens: decoding for 20 s) at 0: both engines
/// cost 4 + 4 = 8, a drawn tie, engine X. B (pages 0–3, one token) at 1 ms: X costs
/// (256 + 256) / 64 = 8 prefill blocks + 4 active + 4 new = 16, the other engine Y 8: Y.
/// C (pages 0–7, 512 tokens) at 1 s: X 8 + 4 + 8 = 20; Y holds B's four pages (B has
/// finished): (256 + 256) / 64 − 4 credit = 4, + 0 active + 8 new = 12: Y, 256 tokens hit.
/// D (pages 200–203) at 2 s: X 4 + 4 + 4 = 12, Y 4 + 0 + 4 = 8: Y — a router that never
/// freed finished requests' blocks would count B's and C's eight on Y (16) and send D to X.
#[test]
fn dynamo_kv_runs_timed_on_the_loads_it_tracks() {
    let spec = RouterSpec {
        engines: 2,
        policy: RouterPolicy::DynamoKv,
        ..RouterSpec::default()
    };
    let mut c = req(2, 1.0, 0, 1);
    c.input_tokens = 512;
    c.page_hashes = (0..8).collect();
    let reqs = vec![
        req(0, 0.0, 100, 1000),
        req(1, 0.001, 0, 1),
        c,
        req(3, 2.0, 200, 1),
    ];
    let (m, f) = replay_fleet_timed(&cfg(), &spec, reqs).unwrap();
    let mut assigned = f.assigned.clone();
    assigned.sort_unstable();
    assert_eq!(assigned, [1, 3]);
    assert_eq!(f.tie_draws, 1);
    assert_eq!(f.overlap_routed, 1);
    assert!(f.clock_loads);
    assert_eq!(m.device_hit_tokens, 256);
    let y = f.assigned.iter().position(|&k| k == 3).unwrap();
    assert_eq!(m.engines[y].device_hit_tokens, 256);
}

/// Dynamo's KV router in front of an engine with DP-attention ranks scores every rank
/// as its own worker (each rank publishes its own KV events) and sends the request to
/// the rank it picks (`data_parallel_rank`). One engine of two ranks: A (pages 100–103,
/// one token) at 0 costs 4 + 4 on both ranks, a drawn tie; B, the same prompt at 1 s,
/// costs (256 − 256 + 256) / 64 − 4 credit + 4 new = 4 on A's rank against 8 on the
/// other: A's rank, 256 tokens hit. The engine alone deals B to the other rank by
/// round-robin and hits nothing.
#[test]
fn dynamo_kv_picks_the_dp_rank() {
    let spec = RouterSpec {
        engines: 1,
        policy: RouterPolicy::DynamoKv,
        ..RouterSpec::default()
    };
    let reqs = vec![req(0, 0.0, 100, 1), req(1, 1.0, 100, 1)];
    let mut c = cfg();
    c.capacities.dp_ranks = 2;
    let (m, f) = replay_fleet_timed(&c, &spec, reqs.clone()).unwrap();
    let mut assigned = f.assigned.clone();
    assigned.sort_unstable();
    assert_eq!(assigned, [0, 2]);
    assert_eq!((f.tie_draws, f.overlap_routed), (1, 1));
    assert_eq!(m.device_hit_tokens, 256);
    let rank = f.assigned.iter().position(|&k| k == 2).unwrap();
    assert_eq!(m.engines[0].ranks[rank].device_hit_tokens, 256);
    let alone = hicache_sim::runtime::replay(&c, reqs).unwrap();
    assert_eq!(alone.device_hit_tokens, 0);
}

/// `scenarios/deepseek-v32-dp8-gb300.yaml` as two engines behind Dynamo's KV router
/// (DP ranks behind it refused before), untimed and timed: its 16 workers are the
/// ranks, and the text says so.
#[test]
fn dynamo_kv_routes_the_ranks_of_dp_engines() {
    let args = [
        "replay",
        "scenarios/deepseek-v32-dp8-gb300.yaml",
        "--set",
        "runtime.router.engines=2",
        "--set",
        "runtime.router.policy=dynamo_kv",
    ];
    let ranks = "the router picks the rank (Dynamo scores every (worker, dp_rank) from that rank's KV events: 16 workers, engine-major; the request's data_parallel_rank)";
    let o = run(&args, &repo("."));
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        ranks,
        "all         3993       61194628       35097536              0              0    57.35 %",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    let o = run(
        &[&args[..], &["--set", "runtime.replay.timing=on"]].concat(),
        &repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        ranks,
        "all         3993       61194628       36354176              0              0    59.41 %    0.402 s    4.716 s",
        "under cache_aware the same engines would hit 22.90 % in total",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    // One engine of eight ranks behind Dynamo is a fleet of its ranks, not the engine
    // alone (its controller's round-robin, timed: 21.15 %).
    let o = run(
        &[
            "replay",
            "scenarios/deepseek-v32-dp8-gb300.yaml",
            "--set",
            "runtime.router.policy=dynamo_kv",
            "--set",
            "runtime.replay.timing=on",
        ],
        &repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "8 workers, engine-major",
        "all         3993       61194628       33025088              0              0    53.97 %    1.717 s    8.626 s",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
}
