//! `--schedule-policy lpm` in the timed replay (`runtime::timed::lpm`, SGLang's
//! `SchedulePolicy.calc_priority`, 0.5.14–0.5.23): before each admission scan the
//! waiting queue is sorted by each request's cached prefix. Hand-computed.

use hicache_sim::release::Sglang;
use hicache_sim::runtime::{
    Capacities, DecodeMemory, Measurement, ReplayConfig, SchedulePolicy, Scheduler, Timing,
    replay_timed,
};
use hicache_sim::workload::Request;

/// `pages` pages of 64 tokens from key `first`, sent at `at_ms`.
fn req(id: u64, at_ms: u64, first: u64, pages: u64, out: u32) -> Request {
    Request {
        id,
        arrival_ns: at_ms * 1_000_000,
        input_tokens: (pages * 64) as u32,
        output_tokens: out,
        page_hashes: (first..first + pages).collect(),
    }
}

/// 0.5.23's rules, a 1,000-page device pool, no host tier, one request running at a
/// time, prefill at 4,096 tokens/s and decode at 32.
fn cfg(policy: SchedulePolicy) -> ReplayConfig {
    let rules = Sglang::from_id("0.5.23").unwrap().release_rules();
    let start = ReplayConfig::for_release(&rules);
    ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 1000,
            l2_pages: 0,
            bytes_per_token: 1024,
            num_layers: 1,
            ..start.capacities
        },
        scheduler: Scheduler {
            prefill_tokens_per_s: 4096.0,
            decode_tokens_per_s: 32.0,
            decode_memory: DecodeMemory::Sglang,
            max_running_requests: 1,
            schedule_policy: policy,
            ..start.scheduler
        },
        measurement: Measurement {
            timing: Timing::On,
            debug_checks: true,
            ..start.measurement
        },
        ..start
    }
}

/// A (t = 0, 32 pages, 33 output tokens) prefills until 0.5 s and decodes until 1.5 s;
/// B (0.1 s, 32 new pages) and C (0.2 s, A's 32 pages and 8 more) wait for the one
/// running slot. At 1.5 s FCFS admits B (0.5 s of prefill, first token at 2.0 s) and
/// then C (512 new tokens, 0.125 s: 2.125 s); LPM sorts C first (2,048 tokens cached)
/// and admits it (1.625 s), then B (2.125 s).
#[test]
fn lpm_admits_the_request_with_the_longest_cached_prefix_first() {
    let trace = || {
        vec![
            req(0, 0, 1000, 32, 33),
            req(1, 100, 2000, 32, 1),
            req(2, 200, 1000, 40, 1),
        ]
    };
    let ttft = |p| {
        let (_, mut t) = replay_timed(&cfg(p), trace(), &[]).unwrap();
        t.sort_by_key(|r| r.index);
        t.iter()
            .map(|r| r.first_token_ns - r.arrival_ns)
            .collect::<Vec<u64>>()
    };
    assert_eq!(
        ttft(SchedulePolicy::Fcfs),
        [500_000_000, 1_900_000_000, 1_925_000_000]
    );
    assert_eq!(
        ttft(SchedulePolicy::Lpm),
        [500_000_000, 2_025_000_000, 1_425_000_000]
    );
}

/// In-batch prefix caching: of two waiting requests with the same uncached first page,
/// the second goes after a third that shares nothing (`temporary_deprioritized`), so
/// that the first's prefill caches the page for it. Two requests a batch (4,096 tokens,
/// any number running): A (t = 0) prefills 0–0.5 s while B (0.1 s) and C (0.2 s), which
/// share their first page, and D (0.3 s) arrive. FCFS batches B and C (1.0 s: both
/// first tokens at 1.5 s), then D (2.0 s). LPM batches B and D (1.5 s), then C, whose
/// first page B's prefill cached (1,984 new tokens, 0.484375 s: 1.984375 s).
#[test]
fn lpm_puts_a_request_whose_prefix_another_waiting_one_brings_last() {
    let trace = || {
        let mut c = req(2, 200, 3000, 32, 1);
        c.page_hashes[0] = 2000;
        vec![
            req(0, 0, 1000, 32, 1),
            req(1, 100, 2000, 32, 1),
            c,
            req(3, 300, 4000, 32, 1),
        ]
    };
    let first = |p| {
        let mut c = cfg(p);
        c.scheduler.max_running_requests = 8;
        c.scheduler.max_prefill_tokens = 4096;
        let (_, mut t) = replay_timed(&c, trace(), &[]).unwrap();
        t.sort_by_key(|r| r.index);
        t.iter().map(|r| r.first_token_ns).collect::<Vec<u64>>()
    };
    assert_eq!(
        first(SchedulePolicy::Fcfs),
        [500_000_000, 1_500_000_000, 1_500_000_000, 2_000_000_000]
    );
    assert_eq!(
        first(SchedulePolicy::Lpm),
        [500_000_000, 1_500_000_000, 1_984_375_000, 1_500_000_000]
    );
}

/// What the timed quickstart under lpm says it leaves out: the in-batch check on its
/// Mooncake trace's 512-token blocks, and the sort once per chunked batch (its cost
/// table chunks prefill). Its TTFT p50 moves with the policy.
#[test]
fn the_timed_quickstart_under_lpm_says_what_it_leaves_out() {
    use crate::support::{ok, repo, run};
    let d = tempfile::tempdir().unwrap();
    let q = repo("scenarios/quickstart-timed.yaml");
    let json = |policy: &str| {
        let o = run(
            &[
                "replay",
                q.to_str().unwrap(),
                "--format",
                "json",
                "--set",
                "runtime.max_requests=400",
                "--set",
                &format!("server.schedule_policy={policy}"),
            ],
            d.path(),
        );
        ok(&o);
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let v = json("lpm");
    let lpm: Vec<&str> = v["unverified"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str())
        .filter(|r| r.starts_with("--schedule-policy lpm"))
        .collect();
    assert_eq!(lpm.len(), 2, "{lpm:?}");
    assert!(lpm[0].contains("pages and blocks (512 tokens)"), "{lpm:?}");
    assert!(
        lpm[1].starts_with("--schedule-policy lpm with chunked prefill"),
        "{lpm:?}"
    );
    assert_eq!(v["config"]["schedule_policy"], "lpm");
    let fcfs = json("fcfs");
    assert!(fcfs["config"].get("schedule_policy").is_none());
    assert_ne!(v["metrics"], fcfs["metrics"]);
}
