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

/// 0.5.23's rules, a 64-page device pool, write-through to a 200-page host pool over a
/// D2H link of 4 MiB/s at full efficiency and no run overhead (a 32-page backup of
/// 2 MiB takes 0.5 s), prefill and decode at 4,096 tokens/s, the prompt's pages only
/// (`decode_memory: prompt_only`), 1 KiB per token.
fn cfg() -> ReplayConfig {
    let rules = Sglang::from_id("0.5.23").unwrap().release_rules();
    let start = ReplayConfig::for_release(&rules);
    ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 64,
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
            decode_tokens_per_s: 4096.0,
            decode_memory: DecodeMemory::PromptOnly,
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

/// X (t = 0, 8,193 output tokens) prefills until 0.5 s and decodes until 2.5 s; its
/// backup runs 0.5–1.0 s. W (0.1 s, one output token) prefills 0.5–1.0 s and finishes;
/// its backup runs 1.0–1.5 s and pins its 32 pages until then. Y (1.1 s) finds X's 32
/// pages running and W's 32 pinned: no room, X running, so the batch is full. W's ack
/// at 1.5 s frees room, but the scheduler does not scan again until X leaves at 2.5 s:
/// Y prefills 2.5–3.0 s, TTFT 1.9 s (0.9 s, at the ack, if the scan ran on).
#[test]
fn a_full_batch_waits_for_a_running_request_to_leave() {
    let trace = vec![
        req(0, 0, 1000, 8193),
        req(1, 100, 2000, 1),
        req(2, 1100, 3000, 1),
    ];
    let (m, t) = replay_timed(&cfg(), trace, &[]).unwrap();
    let ttft: Vec<u64> = t.iter().map(|r| r.first_token_ns - r.arrival_ns).collect();
    assert_eq!(ttft, [500_000_000, 900_000_000, 1_900_000_000]);
    assert_eq!(m.requests, 3);
}
