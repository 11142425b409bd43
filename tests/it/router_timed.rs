//! Engines behind the router, timed (`runtime::timed::fleet`): each engine on its own
//! clock, the router's load of an engine its requests in flight at each arrival.

use hicache_sim::runtime::router::{RouterPolicy, RouterSpec};
use hicache_sim::runtime::{ReplayConfig, Timing, replay_fleet_timed};
use hicache_sim::workload::Request;

use crate::support::{repo, run, stderr, stdout};

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
    let o = run(
        &[&args[..], &["--set", "runtime.router.policy=dynamo_kv"]].concat(),
        &repo("."),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("Dynamo's KV router is replayed untimed only"),
        "{}",
        stderr(&o)
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
