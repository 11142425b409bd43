//! Every request's fixed way through the server (`runtime.replay.request_overhead`,
//! `runtime::frontend`): a latency before the scheduler sees the request, its own part
//! of the TTFT breakdown, a scenario default under a modelled clock.

use hicache_sim::runtime::frontend::REQUEST_OVERHEAD_DEFAULT;
use hicache_sim::runtime::replay;
use hicache_sim::units::Duration;
use hicache_sim::workload::Request;
use serde_json::Value;

use crate::support::{code, repo, run, stderr, stdout};

fn req(id: u64, at_ms: u64, hashes: std::ops::Range<u64>) -> Request {
    let page_hashes: Vec<u64> = hashes.collect();
    Request {
        id,
        arrival_ns: at_ms * 1_000_000,
        input_tokens: page_hashes.len() as u32 * 64,
        output_tokens: 1,
        page_hashes,
    }
}

/// `replay_rules::ttft_breakdown_counts_the_queue`'s two requests with a 6 ms fixed way:
/// R0 (256 tokens at 10,000 tok/s: 25.6 ms) sent at 0, seen at 6, done at 31.6 ms; R1
/// (other pages) sent at 10, seen at 16, queued until 31.6, done at 57.2 ms. TTFT 31.6
/// and 47.2 ms: mean 39.4 = request overhead 6 + queue 7.8 + forward 25.6.
#[test]
fn the_fixed_way_delays_each_request_by_itself() {
    let mut cfg = crate::replay_rules::queue_case();
    cfg.frontend.request_overhead = Duration(6_000_000);
    let m = replay(&cfg, vec![req(0, 0, 1..5), req(1, 10, 11..15)]).unwrap();
    let b = m.ttft_breakdown.unwrap();
    assert_eq!(m.ttft_p99_s, Some(0.0472));
    assert!((b.mean_s - 0.0394).abs() < 1e-15, "{b:?}");
    assert!((b.request_overhead_s - 0.006).abs() < 1e-15, "{b:?}");
    assert!((b.queue_s - 0.0078).abs() < 1e-15, "{b:?}");
    assert!((b.forward_s - 0.0256).abs() < 1e-15, "{b:?}");
    assert_eq!(b.tokenize_s, 0.0);
    assert_eq!(b.shares()[1].0, "request overhead");

    // A latency, not a queue: two text requests sent together are encoded one after the
    // other (256 tokens at 1 µs: 0.256 ms each) and each then takes its own 6 ms, so the
    // second is seen at 6.512 ms, not 12.256.
    let mut text = cfg.clone();
    text.frontend.tokenize_per_token = Duration(1_000);
    let m = replay(&text, vec![req(0, 0, 1..5), req(1, 0, 11..15)]).unwrap();
    let b = m.ttft_breakdown.unwrap();
    assert!((b.tokenize_s - 0.000384).abs() < 1e-15, "{b:?}");
    assert!((b.request_overhead_s - 0.006).abs() < 1e-15, "{b:?}");
    // R0: 6.256 + 25.6 = 31.856 ms; R1 queued from 6.512 to 31.856, done at 57.456 ms.
    assert_eq!(m.ttft_p99_s, Some(0.057456));
}

/// A scenario with a modelled clock charges the default, 6 ms (`ClockDefaults`), says so
/// in `speeds` and the TTFT breakdown, and takes its own; fixed speeds charge none.
#[test]
fn a_modelled_clock_charges_the_default_and_fixed_speeds_none() {
    let json = |scenario: &str, sets: &[&str]| -> Value {
        let sc = repo(scenario);
        let mut args = vec!["replay", sc.to_str().unwrap(), "--format", "json"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = run(&args, &repo("."));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let v = json("scenarios/quickstart-timed.yaml", &[]);
    assert_eq!(
        v["speeds"]["request_overhead_ns"],
        REQUEST_OVERHEAD_DEFAULT.0
    );
    let part = |v: &Value| v["metrics"]["ttft_breakdown"]["request_overhead_s"].as_f64();
    assert!((part(&v).unwrap() - 0.006).abs() < 1e-12, "{v}");
    // The text says it on the speeds line and as a part of the TTFT.
    let o = run(
        &[
            "replay",
            repo("scenarios/quickstart-timed.yaml").to_str().unwrap(),
        ],
        &repo("."),
    );
    let t = stdout(&o);
    assert!(
        t.contains("; request overhead 6000000 ns per request;"),
        "{t}"
    );
    assert!(t.contains(" + request overhead 0.006 s (0.3 %) + "), "{t}");

    let v = json(
        "scenarios/quickstart-timed.yaml",
        &["runtime.replay.request_overhead=2ms"],
    );
    assert_eq!(v["speeds"]["request_overhead_ns"], 2_000_000);
    assert!((part(&v).unwrap() - 0.002).abs() < 1e-12, "{v}");

    let v = json("scenarios/quickstart.yaml", &["runtime.replay.timing=on"]);
    assert!(
        v["speeds"].get("request_overhead_ns").is_none(),
        "{}",
        v["speeds"]
    );
    assert_eq!(part(&v), None);
}

/// A value no server has, or a bare number, is refused with exit 2, naming the key.
#[test]
fn an_unreal_overhead_is_refused() {
    let sc = repo("scenarios/quickstart-timed.yaml");
    for (set, says) in [
        (
            "runtime.replay.request_overhead=20s",
            "20000000000 ns is more than 10 s: a request's fixed way through the server is milliseconds",
        ),
        (
            "runtime.replay.request_overhead=6",
            "field `runtime.replay.request_overhead`: 6 has no unit",
        ),
    ] {
        let o = run(&["replay", sc.to_str().unwrap(), "--set", set], &repo("."));
        assert_eq!(code(&o), 2, "{set}");
        assert!(stderr(&o).contains(says), "{set}: {}", stderr(&o));
    }
}
