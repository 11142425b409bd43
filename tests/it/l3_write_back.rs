//! The L3 write of a host backup (`write_backup_storage`) and the host pool's prefetch
//! budget, through the timed replay.
//!
//! 1. A node split between its D2H backup and the backup's ack still reaches L3 whole:
//!    SGLang writes the pre-split span (`mem_cache/hiradix_cache.py:
//!    write_backup_storage` / `_concat_split_chain`, 0.5.14–0.5.18; 0.5.23
//!    `unified_radix_cache.py: _finish_write_through_ack`, "Back up each fragment").
//! 2. Bench corpus #12 with a 2 000-page host pool: every page reaches L3, and the hit
//!    rates fall because SGLang refuses L3 prefetches once the prefetches in flight
//!    hold half the host pool (`managers/cache_controller.py: prefetch_rate_limited`,
//!    `prefetch_capacity_limit = int(0.5 * mem_pool_host.logical_size)` in cache mode).

use hicache_sim::cache::{PrefetchPolicy, WritePolicy};
use hicache_sim::runtime::cost::Compute;
use hicache_sim::runtime::cost::bench::{self, Multiturn};
use hicache_sim::runtime::{
    Capacities, Measurement, ReplayConfig, Scheduler, Timing, TreePolicy, replay_timed,
};
use hicache_sim::units::Bandwidth;
use hicache_sim::workload::Request;

fn cfg() -> ReplayConfig {
    ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            bytes_per_token: 1024,
            num_layers: 1,
            l3_unbounded: true,
            ..Default::default()
        },
        policy: TreePolicy {
            write_policy: WritePolicy::WriteThrough,
            ..Default::default()
        },
        scheduler: Scheduler {
            compute: Compute::default(),
            max_running_requests: 256,
            max_prefill_tokens: 16_384,
            ..Default::default()
        },
        measurement: Measurement {
            timing: Timing::On,
            ..Default::default()
        },
        ..ReplayConfig::default()
    }
}

fn req(id: u64, arrival_ns: u64, pages: &[u64]) -> Request {
    Request {
        id,
        arrival_ns,
        input_tokens: 64 * pages.len() as u32,
        output_tokens: 1,
        page_hashes: pages.to_vec(),
    }
}

/// A (pages 1 2 3 4) is prefilled at 256 / 20 000 tok/s = 12.8 ms and backed up to
/// host (write_through); its D2H copy is 256 tokens × 1 MB = 256 MB at 1 GB/s × 0.85 =
/// 301 ms, so it is acked at ≈ 314 ms. B (pages 1 2 9 10) arrives at 100 ms, inside that
/// window: its match splits A into [1 2] + [3 4], the backup record keeping the suffix
/// [3 4]. At the ack SGLang writes the span the backup moved, [1 2 3 4]; B's own
/// backup adds [9 10]: L3 holds 6 pages (6 × 64 × 1 MB = 393 216 000 bytes written).
/// Before the fix only the suffix [3 4] went to L3 (4 pages: 1 and 2 never reached it).
/// B arriving after the ack (1 s) splits a node already in L3: the same 6 pages.
#[test]
fn a_split_before_the_backup_ack_still_writes_the_whole_span_to_l3() {
    let mut c = cfg();
    c.capacities.bytes_per_token = 1_000_000;
    c.links.d2h_bandwidth = Bandwidth(1e9);
    for b_at in [100_000_000, 1_000_000_000] {
        let (m, _) = replay_timed(
            &c,
            [req(0, 0, &[1, 2, 3, 4]), req(1, b_at, &[1, 2, 9, 10])],
            &[],
        )
        .unwrap();
        assert_eq!(m.final_storage_pages, 6, "B at {b_at} ns: {m:#?}");
        assert_eq!(m.l3_write_bytes, 6 * 64 * 1_000_000, "B at {b_at} ns");
        assert_eq!(m.device_hit_tokens, 128, "B at {b_at} ns");
    }
}

/// Corpus #12 (`timecost.rs: corpus_12_mooncake_ssd_hit_rates_per_round`) with a
/// 2 000-page host pool instead of room for the run. The L3 write-back loses nothing:
/// L3 ends holding every page of the run, 20 clients × round 8's 36 872 / 64 = 576
/// pages = 11 520. The hit rates fall from round 2 because the prefetch budget is half
/// the host pool, 1 000 pages: a round-r prompt's L3 hit is about 64·r pages, so a few
/// prefetches in flight fill it and SGLang answers the next requests' storage queries
/// with 0 (`query_storage_hit_length` returns 0 while `prefetch_rate_limited()`):
/// they recompute. 75 of the 180 prefetches are refused here. SGLang's own behaviour,
/// pinned; the published run (full reuse) had a larger host pool (`--hicache-ratio 2`).
#[test]
fn corpus_12_small_host_pool_loses_hits_to_the_prefetch_budget_not_to_l3() {
    let mut c = cfg();
    c.capacities.l1_pages = 1000;
    c.capacities.l2_pages = 2000;
    c.prefetch.prefetch_policy = PrefetchPolicy::WaitComplete;
    let b = Multiturn {
        clients: 20,
        rounds: 9,
        request_len: 4096,
        output_len: 1,
        max_parallel: 20,
        request_rate: Some(16.0),
        round_barrier: true,
        random_ready: true,
        seed: 1,
    };
    let r = bench::run(&c, &b, &[], 100).unwrap();
    let total = (b.clients * b.rounds) as usize;
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by_key(|&i| (r.send_ns[i], i));
    let reqs: Vec<Request> = order
        .iter()
        .map(|&i| Request {
            id: i as u64,
            arrival_ns: r.send_ns[i],
            input_tokens: b.prompt_len(i as u32 / b.clients),
            output_tokens: 1,
            page_hashes: b.pages(i as u32 % b.clients, i as u32 / b.clients, 64),
        })
        .collect();
    let (m, _) = replay_timed(&c, reqs, &[]).unwrap();
    println!(
        "#12 host 2000: per-round {:?}\n{m:#?}",
        r.per_round_hit_rate
    );
    assert_eq!(m.final_storage_pages, 20 * 576);
    assert_eq!(m.prefetches_issued + m.prefetches_rate_limited, 180);
    assert_eq!(m.prefetches_rate_limited, 75);
    // Round 1 (0.499939) is whole: its 64-page L3 hits fit the budget.
    let want = [
        0.0, 0.499939, 0.466591, 0.374931, 0.319938, 0.291607, 0.385634, 0.212455, 0.311044,
    ];
    for (i, w) in want.iter().enumerate() {
        assert!(
            (r.per_round_hit_rate[i] - w).abs() < 5e-7,
            "round {i}: {:?}",
            r.per_round_hit_rate
        );
    }
}

/// `storage_latency` is paid once per storage operation (`runtime/timed.rs`: a prefetch's
/// read, a backup's write): one request whose 4 pages are only in L3 (a store an earlier
/// run populated), prefetched and waited for (`wait_complete`), gets its first token
/// exactly the latency later — 50 ms here — and a second run with twice the latency adds
/// twice that. The rest of its time (the read at the storage bandwidth, the load-back,
/// the prefill of the uncached tail) is the same in every run.
#[test]
fn storage_latency_is_paid_once_per_prefetch() {
    use hicache_sim::units::Duration;
    let mut c = cfg();
    c.capacities.l1_pages = 64;
    c.capacities.l2_pages = 128;
    c.prefetch.prefetch_policy = PrefetchPolicy::WaitComplete;
    let preload: Vec<_> = [1u64, 2, 3, 4].iter().map(|&p| p.into()).collect();
    let ttft = |latency_ms: u64| {
        let mut c = c.clone();
        c.links.storage_latency = Duration(latency_ms * 1_000_000);
        let (m, t) = replay_timed(&c, [req(0, 0, &[1, 2, 3, 4, 5])], &preload).unwrap();
        // The four stored pages are hit from storage, the fifth computed.
        assert_eq!(t[0].cached_tokens, 4 * 64, "{m:#?}");
        assert_eq!(m.prefetch_bytes, 4 * 64 * 1024, "{m:#?}");
        t[0].first_token_ns - t[0].arrival_ns
    };
    let (t0, t50, t100) = (ttft(0), ttft(50), ttft(100));
    assert_eq!(t50 - t0, 50_000_000, "ttft {t0} / {t50} ns");
    assert_eq!(t100 - t0, 100_000_000, "ttft {t0} / {t100} ns");
}

/// Many requests in flight (the multiturn scenario's 8 parallel clients, 32
/// conversations) against a 2 000-page host pool with storage: SGLang's prefetch budget
/// (`cache_controller.py: prefetch_rate_limited`, half the host pool: 1 000 pages of 64
/// = 64 000 tokens) binds, and `replay` says how often: 26 of 192 L3 prefetches refused
/// (18 before admission reserved room for the running requests' output tokens, which
/// keeps more requests waiting with their prefetches in flight). At TP 4 under 0.5.23's
/// `timeout` policy, the polls that find a prefetch unfinished while a forward is to
/// run vote with 3 blocking all-reduces of 0.5 ms (`prefetch_poll_all_reduces`).
/// With a 20 000-page host pool the budget never binds.
#[test]
fn the_replay_reports_prefetches_the_capacity_limit_refuses() {
    let run = |l2: &str| {
        let o = crate::support::run(
            &[
                "replay",
                "scenarios/multiturn-tiers.yaml",
                "--set",
                "server.hicache_storage_backend=file",
                "--set",
                &format!("runtime.replay.l2_pages={l2}"),
                "--set",
                "runtime.replay.l3_unbounded=true",
                // Without HiCache's per-step synchronisation (its own tests:
                // `step_sync.rs`) and the request's fixed way through the server (its
                // own: `request_overhead.rs`), the counts as before them.
                "--set",
                "runtime.replay.compute.hicache_step_sync=0ns",
                "--set",
                "runtime.replay.request_overhead=0ns",
            ],
            &crate::support::repo(""),
        );
        crate::support::ok(&o);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.starts_with("prefetches:"))
            .expect("a prefetch line with storage")
            .to_string()
    };
    assert_eq!(
        run("2000"),
        "prefetches: 166 issued, 26 refused by the prefetch capacity limit (64000 tokens), 0 retries; 3 all-reduces in admission polls and terminations (1 ms)"
    );
    let big = run("20000");
    assert!(
        big.contains(", 0 refused by the prefetch capacity limit (640000 tokens)"),
        "{big}"
    );
}

/// The blocking all-reduces of an L3 prefetch's admission polls, per tree
/// (`hicache_sim::release::step_sync::prefetch_poll_all_reduces`), at 0.5 ms each
/// (`compute.prefetch_poll_sync`). One request whose 4 pages are only in L3 (latency
/// 50 ms) arrives at an idle server: its first poll finds the prefetch unfinished (the
/// server spins idle, nothing waits on it: neither charged nor counted), the poll at the
/// prefetch's end admits it.
/// - `HiRadixCache` (0.5.14–0.5.18), `wait_complete`: MAX at both polls and MIN at the
///   termination: the last two (1 ms) before the prefill.
/// - `HiRadixCache`, `best_effort`: no vote; the MIN at the first poll: 0.5 ms.
/// - `UnifiedRadixCache` (0.5.19–0.5.23), `timeout`: MAX at the unfinished poll only:
///   none on the clock. `wait_complete`: none.
#[test]
fn prefetch_polls_all_reduce_as_each_tree_does() {
    use hicache_sim::cache::TreeKind;
    use hicache_sim::units::Duration;
    let preload: Vec<_> = [1u64, 2, 3, 4].iter().map(|&p| p.into()).collect();
    let run = |tree: TreeKind, policy: PrefetchPolicy, poll_ns: u64| {
        let mut c = cfg();
        c.capacities.l1_pages = 64;
        c.capacities.l2_pages = 128;
        c.policy.tree = tree;
        c.prefetch.prefetch_policy = policy;
        c.links.storage_latency = Duration(50_000_000);
        c.scheduler.compute.prefetch_poll_sync = Duration(poll_ns);
        let (m, t) = replay_timed(&c, [req(0, 0, &[1, 2, 3, 4, 5])], &preload).unwrap();
        (
            m.prefetch_poll_all_reduces,
            t[0].first_token_ns - t[0].arrival_ns,
        )
    };
    use PrefetchPolicy::*;
    for (tree, policy, count, on_clock_ns) in [
        (TreeKind::HiRadix, WaitComplete, 2, 1_000_000),
        (TreeKind::V1, Timeout, 2, 1_000_000),
        (TreeKind::HiRadix, BestEffort, 1, 500_000),
        (TreeKind::Unified0523, Timeout, 0, 0),
        (TreeKind::Unified0523, WaitComplete, 0, 0),
        (TreeKind::Unified0523, BestEffort, 0, 0),
    ] {
        let (n, with) = run(tree, policy, 500_000);
        let (n0, without) = run(tree, policy, 0);
        assert_eq!((n, n0), (count, 0), "{tree:?} {policy:?}");
        assert_eq!(with - without, on_clock_ns, "{tree:?} {policy:?}");
    }
}

/// The polls of a request waiting on its L3 prefetch run in every scheduler iteration,
/// so with another request decoding they lengthen its decode steps: A decodes 200 tokens
/// (at 100 tok/s, 10 ms a step, `interleaved`) while B, arriving at 1 ms, waits 50 ms
/// for its prefetch. Under `HiRadixCache`'s `wait_complete` each of A's steps in that
/// wait pays B's 0.5 ms vote; under `UnifiedRadixCache`'s `wait_complete` none does.
#[test]
fn prefetch_polls_lengthen_the_decode_steps_they_run_in() {
    use hicache_sim::cache::TreeKind;
    use hicache_sim::runtime::DecodeTimeline;
    use hicache_sim::units::Duration;
    let preload: Vec<_> = [1u64, 2, 3, 4].iter().map(|&p| p.into()).collect();
    let run = |tree: TreeKind, poll_ns: u64| {
        let mut c = cfg();
        c.capacities.l1_pages = 64;
        c.capacities.l2_pages = 128;
        c.policy.tree = tree;
        c.prefetch.prefetch_policy = PrefetchPolicy::WaitComplete;
        c.links.storage_latency = Duration(50_000_000);
        c.scheduler.decode_timeline = DecodeTimeline::Interleaved;
        c.scheduler.decode_tokens_per_s = 100.0;
        c.scheduler.compute.prefetch_poll_sync = Duration(poll_ns);
        let mut a = req(0, 0, &[10, 11]);
        a.output_tokens = 200;
        let b = req(1, 1_000_000, &[1, 2, 3, 4, 5]);
        let (m, t) = replay_timed(&c, [a, b], &preload).unwrap();
        (
            m.prefetch_poll_all_reduces,
            t[0].finish_ns,
            t[1].first_token_ns,
        )
    };
    // Without the votes: B's prefetch ends at 51.x ms, inside A's step of 46.4–56.4 ms;
    // B is admitted at 56.4 ms and prefilled by 59.6 ms; A ends at 1 999.6 ms.
    let without = (0, 1_999_612_277, 59_612_277);
    assert_eq!(run(TreeKind::HiRadix, 0), without);
    // HiRadixCache: the polls at 6.4, 16.9, 27.4, 37.9 and 48.4 ms find B unfinished
    // (0.5 ms each on A's step), the one at 58.9 ms admits it with its MAX and MIN
    // (1 ms before B's prefill): 7 all-reduces, 3.5 ms on both requests.
    assert_eq!(
        run(TreeKind::HiRadix, 500_000),
        (7, 1_999_612_277 + 3_500_000, 59_612_277 + 3_500_000)
    );
    assert_eq!(run(TreeKind::Unified0523, 500_000), without);
}
