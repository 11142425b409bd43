//! `running_batch.batch_is_full` (`managers/scheduler.py`, 0.5.14–0.5.23) in the timed
//! replay: once an admission scan finds no KV room (`NO_TOKEN`) with a request running,
//! the scheduler skips the scan until a running request leaves, whatever frees room
//! meanwhile. Hand-computed.

use hicache_sim::cache::WritePolicy;
use hicache_sim::release::Sglang;
use hicache_sim::runtime::{
    Capacities, DecodeMemory, Links, Measurement, ReplayConfig, Scheduler, Timing, TreePolicy,
    replay_timed,
};
use hicache_sim::units::{Bandwidth, Duration};
use hicache_sim::workload::Request;

/// 32 pages of 64 tokens (2,048 tokens), page keys `first..first+32`.
fn req(id: u64, at_ms: u64, first: u64, out: u32) -> Request {
    Request {
        id,
        arrival_ns: at_ms * 1_000_000,
        input_tokens: 2048,
        output_tokens: out,
        page_hashes: (first..first + 32).collect(),
    }
}

/// 0.5.23's rules, a 70-page device pool, write-through to a 200-page host pool over a
/// D2H link of 4 MiB/s at full efficiency and no run overhead (a 32-page backup of
/// 2 MiB takes 0.5 s), prefill at 4,096 tokens/s and decode at 32, SGLang's decode KV
/// and admission budget (`decode_memory: sglang`), 1 KiB per token.
fn cfg() -> ReplayConfig {
    let rules = Sglang::from_id("0.5.23").unwrap().release_rules();
    let start = ReplayConfig::for_release(&rules);
    ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 70,
            l2_pages: 200,
            bytes_per_token: 1024,
            num_layers: 1,
            ..start.capacities
        },
        policy: TreePolicy {
            write_policy: WritePolicy::WriteThrough,
            ..start.policy
        },
        links: Links {
            d2h_bandwidth: Bandwidth(4_194_304.0),
            d2h_run_overhead: Duration(0),
            bandwidth_efficiency: 1.0,
            ..start.links
        },
        scheduler: Scheduler {
            prefill_tokens_per_s: 4096.0,
            decode_tokens_per_s: 32.0,
            decode_memory: DecodeMemory::Sglang,
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

/// X (t = 0, 65 output tokens) prefills until 0.5 s and decodes its other 64 until
/// 2.5 s (two pages of output); its backup runs 0.5–1.0 s. W (0.1 s, one output token)
/// prefills 0.5–1.0 s and finishes; its backup runs 1.0–1.5 s and pins its 32 pages
/// until then. Y (1.1 s) finds X's 34 pages running and W's 32 pinned: no room in the
/// budget (`NO_TOKEN`), X running, so the batch is full. W's ack at 1.5 s frees room,
/// but the scheduler does not scan again until X leaves at 2.5 s: Y prefills
/// 2.5–3.0 s, TTFT 1.9 s (0.9 s, at the ack, if the scan ran on).
#[test]
fn a_full_batch_waits_for_a_running_request_to_leave() {
    let trace = vec![
        req(0, 0, 1000, 65),
        req(1, 100, 2000, 1),
        req(2, 1100, 3000, 1),
    ];
    let (m, t) = replay_timed(&cfg(), trace, &[]).unwrap();
    let ttft: Vec<u64> = t.iter().map(|r| r.first_token_ns - r.arrival_ns).collect();
    assert_eq!(ttft, [500_000_000, 900_000_000, 1_900_000_000]);
    assert_eq!(m.requests, 3);
}

/// `budget_state`: the request just admitted leaves no room in `rem_total_tokens`, a
/// `NO_TOKEN` with it in the batch, so the batch is full (`schedule_policy.py:
/// add_one_req` → `budget_state`, 0.5.14–0.5.23). 0.5.23's rules on a 20-page
/// pool (1,280 tokens) with `ignore_eos` false: A (100 tokens, 1,100 to decode)
/// reserves its decode at the new-token ratio and leaves the budget below zero; B (one
/// page) sent 1 ms later waits for A's end instead of following A's prefill.
#[test]
fn a_budget_spent_by_the_last_admitted_request_fills_the_batch() {
    let mut c = cfg();
    c.capacities.l1_pages = 20;
    c.scheduler.ignore_eos = false;
    c.scheduler.decode_tokens_per_s = 100.0;
    let a = Request {
        id: 0,
        arrival_ns: 0,
        input_tokens: 100,
        output_tokens: 1100,
        page_hashes: vec![1],
    };
    let b = Request {
        id: 1,
        arrival_ns: 1_000_000,
        input_tokens: 64,
        output_tokens: 1,
        page_hashes: vec![2],
    };
    let (_, t) = replay_timed(&c, vec![a, b], &[]).unwrap();
    let ttft: Vec<u64> = t.iter().map(|r| r.first_token_ns - r.arrival_ns).collect();
    // A: 100 tokens at 4,096 tok/s (24.414063 ms), then 1,099 tokens at 100 tok/s: it
    // ends at 11.014414063 s. B is admitted then: 64 tokens (15.625 ms), its first
    // token at 11.030039063 s, TTFT 11.029039063 s (39 ms, after A's prefill, if the
    // scan ran on).
    assert_eq!(t[0].finish_ns, 11_014_414_063);
    assert_eq!(ttft, [24_414_063, 11_029_039_063]);
}
