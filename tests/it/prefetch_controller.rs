//! The release's HiCache controller in the timed replay: 0.5.23's prefetch timeout
//! clock (from the first blocked admission poll, budget over the requested span),
//! storage re-queries (every 8 scheduler iterations, up to 8), against the rules of
//! the releases before. Hand-computed.

use hicache_sim::cache::{PrefetchPolicy, WritePolicy};
use hicache_sim::release::Sglang;
use hicache_sim::runtime::{
    Capacities, DecodeMemory, Links, Measurement, Prefetch, ReplayConfig, ReplayMetrics, Scheduler,
    Timing, TreePolicy, replay,
};
use hicache_sim::units::Bandwidth;
use hicache_sim::workload::Request;

/// 64 pages of 64 tokens (4,096 tokens), page keys `first..first+64`.
fn req(id: u64, at_ms: u64, first: u64, out: u32) -> Request {
    let page_hashes: Vec<u64> = (first..first + 64).collect();
    Request {
        id,
        arrival_ns: at_ms * 1_000_000,
        input_tokens: 4096,
        output_tokens: out,
        page_hashes,
    }
}

/// The release's rules with a slow L3 (2 pages/s), prefill at 4,096 tokens/s (one
/// request a second), 1 KiB per token (a page is 65,536 B).
fn cfg(release: &str, l1: u64, l2: u64) -> ReplayConfig {
    let rules = Sglang::from_id(release).unwrap().release_rules();
    {
        let start = ReplayConfig::for_release(&rules);
        ReplayConfig {
            capacities: Capacities {
                page_size: 64,
                l1_pages: l1,
                l2_pages: l2,
                l3_unbounded: true,
                bytes_per_token: 1024,
                ..start.capacities
            },
            policy: TreePolicy {
                write_policy: WritePolicy::WriteThrough,
                ..start.policy
            },
            prefetch: Prefetch {
                prefetch_policy: PrefetchPolicy::Timeout,
                ..start.prefetch
            },
            links: Links {
                storage_read_bandwidth: Bandwidth(2.0 * 65_536.0),
                storage_write_bandwidth: Bandwidth(1e12),
                ..start.links
            },
            scheduler: Scheduler {
                prefill_tokens_per_s: 4096.0,
                decode_tokens_per_s: 4096.0,
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
}

fn run(c: &ReplayConfig, reqs: Vec<Request>) -> ReplayMetrics {
    replay(c, reqs).unwrap()
}

/// L1 64 pages (one request), L2 129 pages (two, plus SGLang's padding page); each
/// prefill takes 1 s. A (t = 0), B (1.5 s), C (3.0 s) take the device in turn, each
/// demoting the one before to host; C's backup (at 4.0 s) finds the host full of the
/// host-only A and B and evicts A (LRU): A survives only in L3 (written at its D2H ack).
/// X (4.5 s) takes the device (C demoted) and prefills until 5.5 s. A again (5.0 s):
/// nothing on device or host; its L3 prefetch (64 pages, 4,096 tokens) evicts B's host
/// copy and starts at 5.0 s, the pages arriving at 2 pages/s (until 37.0 s). The GPU
/// runs X until 5.5 s: no admission poll before.
/// - 0.5.23: the clock starts at the first blocked poll, 5.5 s; budget 1 s + 0.25 s ×
///   4,096 / 1,024 = 2 s; the poll after 7.5 s terminates it: 64 × (7.5 s + 1 ns −
///   5.0 s) / 32 s = 5 pages arrived = 320 tokens from storage. A is admitted then: 5
///   pages loaded back (one run per layer: 32 × 6,670 ns, + 327,680 B / (55e9 × 0.85)
///   B/s = 7,009 ns), 4,096 − 5 × 64 = 3,776 tokens prefilled (0.921875 s): its TTFT is
///   7.5 s + 1 ns + 220,449 ns + 921,875,000 ns − 5.0 s = 3.422095450 s.
/// - 0.5.22: the clock runs from the issue, 5.0 s, over the 64 fetched pages (the same
///   2 s): terminated at 7.0 s + 1 ns with 4 pages = 256 tokens; TTFT 2.0 s + 1 ns +
///   (213,440 + 5,607) ns + (4,096 − 256) / 4,096 s = 2.937719048 s.
/// The other four requests prefill in 1 s each (TTFT 1.0 s), so the TTFT p99 (the 5th
/// of 5) is A's, and p50 is 1.0 s.
#[test]
fn prefetch_timeout_clock_starts_at_the_first_blocked_poll_in_0_5_23() {
    let trace = || {
        vec![
            req(0, 0, 1000, 0),
            req(1, 1500, 2000, 0),
            req(2, 3000, 3000, 0),
            req(3, 4500, 4000, 0),
            req(4, 5000, 1000, 0),
        ]
    };
    let m23 = run(&cfg("0.5.23", 64, 129), trace());
    let m22 = run(&cfg("0.5.22", 64, 129), trace());
    assert_eq!(m23.host_evicted_pages, 64 + 64 + 64); // A (C's backup), B (A's fetch), C (X's backup)
    assert_eq!(m23.storage_hit_tokens, 320);
    assert_eq!(m22.storage_hit_tokens, 256);
    assert_eq!(m23.ttft_p50_s, Some(1.0));
    assert_eq!(m23.ttft_p99_s, Some(3.42209545));
    assert_eq!(m22.ttft_p99_s, Some(2.937719048));
}

/// Storage re-queries of waiting requests (0.5.20+: every 8 scheduler iterations, at
/// most 8; 0.5.19: interval 0, none). L1 64 pages: X (t = 0, 4,097 output tokens: the
/// prefill makes the first) prefills until 1.0 s and decodes the other 4,096 until
/// 2.0 s holding the whole device; Z (0.2 s)
/// and Y (0.4 s) wait for it. Every L3 lookup misses (no request repeats), and a miss
/// arms a re-query (`poll_miss`).
/// - Iteration 1 (t = 0): X is the queue head, its re-query is dropped; X admitted.
/// - No iteration while X prefills (the GPU is busy). Iteration 2 (1.0 s): Z is the
///   head, its re-query dropped; Y's is due at iteration 2 + 8 = 10. Z and Y wait for
///   the device, so the idle loop spins: one iteration per `scheduler_idle_poll`
///   (1 ms).
/// - Y re-queries at iterations 10, 19, 28, …, 73 (each miss re-arms; the next one is
///   due 8 iterations after the iteration that first sees it, 9 later in all): 8
///   attempts, the last at 1.0 s + 71 ms. At iteration 74 the cap drops the ninth.
/// Lookups: 3 on arrival + 8 re-queries = 11 (0.5.19: 3).
///
/// X holding the whole device while it decodes is the replay without decode KV
/// (`decode_memory: prompt_only`): with SGLang's, X's first decode step finds no page
/// in a pool its prompt fills and X, alone, is aborted at 1.0 s.
#[test]
fn storage_misses_are_re_queried_every_8_iterations_up_to_8_times() {
    let cfg = |release: &str, l1: u64, l2: u64| {
        let mut c = cfg(release, l1, l2);
        c.scheduler.decode_memory = DecodeMemory::PromptOnly;
        c
    };
    let trace = || {
        vec![
            req(0, 0, 1000, 4097),
            req(1, 200, 2000, 0),
            req(2, 400, 3000, 0),
        ]
    };
    let m23 = run(&cfg("0.5.23", 64, 129), trace());
    assert_eq!(m23.prefetch_retries, 8);
    assert_eq!(m23.prefetches_issued, 3 + 8);
    let m20 = run(&cfg("0.5.20", 64, 129), trace());
    assert_eq!(m20.prefetch_retries, 8);
    let m19 = run(&cfg("0.5.19", 64, 129), trace());
    assert_eq!((m19.prefetch_retries, m19.prefetches_issued), (0, 3));
    // Nothing was fetched either way: Z is admitted at 2.0 s; Y when Z's write-through
    // backup is acked and unpins Z's pages (the whole device): 3.0 s + 4,194,304 B /
    // (55e9 × 0.85) B/s + 4 µs = 3.0 s + 93,718 ns. TTFTs 1, 2.8 and 3.600093718 s.
    assert_eq!(m23.ttft_p99_s, Some(3.600093718));
    assert_eq!(m23.ttft_p99_s, m19.ttft_p99_s);
}

/// One request of 16 pages (1,024 tokens), page keys `1..=16`.
fn a16(id: u64) -> Request {
    Request {
        id,
        arrival_ns: id * 1_000_000_000,
        input_tokens: 1024,
        output_tokens: 0,
        page_hashes: (1..=16).collect(),
    }
}

/// `buffer_only` (a bounce buffer, no L2) with an unbounded L3, timing off, 1 KiB per
/// token: a page is 64 × 1,024 = 65,536 B.
fn buffer_cfg(release: &str, wp: WritePolicy) -> ReplayConfig {
    let rules = Sglang::from_id(release).unwrap().release_rules();
    {
        let start = ReplayConfig::for_release(&rules);
        ReplayConfig {
            capacities: Capacities {
                page_size: 64,
                l1_pages: 64,
                l2_pages: 64,
                l3_unbounded: true,
                bytes_per_token: 1024,
                ..start.capacities
            },
            policy: TreePolicy {
                host_memory_mode: hicache_sim::cache::HostMemoryMode::BufferOnly,
                write_policy: wp,
                ..start.policy
            },
            measurement: Measurement {
                timing: Timing::Off,
                debug_checks: true,
                ..start.measurement
            },
            ..start
        }
    }
}

/// The storage write gate of a `buffer_only` host (0.5.19+: what the tree would back
/// up, `_inc_hit_count_and_check` → `BufferModePipeline.enqueue_backup_intent`). The
/// same 16-page request three times on an L1 that keeps it:
/// - write_through (threshold 1): the first insert writes the 16 pages (1,048,576 B);
///   the later ones find them stored.
/// - write_through_selective (threshold 2): the first insert leaves hit_count 1 and
///   writes nothing; the second (hit_count 2) writes the 16 pages; the third's intent
///   finds them in storage (`StorageExistenceCache`): 1,048,576 B in all, none after
///   one request.
/// - the what-if `every_backup` gate writes what each insert adds: 16 pages at once.
#[test]
fn buffer_only_storage_writes_follow_the_write_threshold() {
    let page = 64 * 1024;
    let three = || vec![a16(0), a16(1), a16(2)];
    let one = || vec![a16(0)];
    let wt = replay(&buffer_cfg("0.5.23", WritePolicy::WriteThrough), three()).unwrap();
    assert_eq!(wt.l3_write_bytes, 16 * page);
    let sel = WritePolicy::WriteThroughSelective;
    let sel1 = replay(&buffer_cfg("0.5.23", sel), one()).unwrap();
    assert_eq!(sel1.l3_write_bytes, 0);
    let sel3 = replay(&buffer_cfg("0.5.23", sel), three()).unwrap();
    assert_eq!(sel3.l3_write_bytes, 16 * page);
    let every = {
        let start = buffer_cfg("0.5.23", sel);
        ReplayConfig {
            policy: TreePolicy {
                storage_write_gate: hicache_sim::release::StorageWriteGate::EveryBackup,
                ..start.policy
            },
            ..start
        }
    };
    assert_eq!(replay(&every, one()).unwrap().l3_write_bytes, 16 * page);
}

/// `buffer_only` + `write_back`: 0.5.21 refuses it (`hicache_hook.py`: ValueError);
/// 0.5.22+ runs it as write_through (the first insert writes the 16 pages).
#[test]
fn buffer_only_write_back_is_write_through_from_0_5_22() {
    let page = 64 * 1024;
    let m = replay(&buffer_cfg("0.5.22", WritePolicy::WriteBack), vec![a16(0)]).unwrap();
    assert_eq!(m.l3_write_bytes, 16 * page);
    let e = replay(&buffer_cfg("0.5.21", WritePolicy::WriteBack), vec![a16(0)]).unwrap_err();
    assert!(e.to_string().contains("write_back"), "{e}");
}
