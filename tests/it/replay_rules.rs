//! Replay-level hand-worked cases: L3 prefetch threshold and capacity limit,
//! buffer_only, a timing-on case with hand-computed transfer times, input errors.

use hicache_sim::cache::{HostMemoryMode, WritePolicy};
use hicache_sim::runtime::{
    Capacities, Links, Measurement, Prefetch, ReplayConfig, ReplayError, Scheduler, Timing,
    TreePolicy, replay,
};
use hicache_sim::sizing::PrefetchCapRule;
use hicache_sim::units::Bandwidth;
use hicache_sim::workload::Request;

fn req(id: u64, at_ms: u64, hashes: std::ops::Range<u64>, ps: u32, out: u32) -> Request {
    let page_hashes: Vec<u64> = hashes.collect();
    Request {
        id,
        arrival_ns: at_ms * 1_000_000,
        input_tokens: page_hashes.len() as u32 * ps,
        output_tokens: out,
        page_hashes,
    }
}

/// P(6) Q(8) Q'(8) P X(3) on L1 8 / L2 16 pages of 64 tokens, unbounded L3.
fn prefetch_trace() -> Vec<Request> {
    vec![
        req(0, 0, 100..106, 64, 1),
        req(1, 0, 200..208, 64, 1),
        req(2, 0, 300..308, 64, 1),
        req(3, 0, 100..106, 64, 1),
        req(4, 0, 400..403, 64, 1),
    ]
}

fn l3_cfg() -> ReplayConfig {
    ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 8,
            l2_pages: 16,
            l3_unbounded: true,
            bytes_per_token: 1,
            ..Default::default()
        },
        measurement: Measurement {
            debug_checks: true,
            ..Default::default()
        },
        ..ReplayConfig::default()
    }
}

#[test]
fn capacity_limit_rules() {
    let (h, d) = (16 * 64, 8 * 64);
    assert_eq!(PrefetchCapRule::ExcessOverDevice.limit_tokens(h, d), 409); // 0.8*512
    assert_eq!(PrefetchCapRule::HalfHost.limit_tokens(h, d), 512);
    assert_eq!(PrefetchCapRule::BufferOnly.limit_tokens(h, d), 921);
    assert_eq!(PrefetchCapRule::Pr16909Proposal.limit_tokens(h, d), 409);
    // host <= device: zero before #28614, half the host in the #16909 proposal.
    assert_eq!(PrefetchCapRule::ExcessOverDevice.limit_tokens(d, d), 0);
    assert_eq!(PrefetchCapRule::ExcessOverDevice.limit_tokens(d / 2, d), 0);
    assert_eq!(PrefetchCapRule::Pr16909Proposal.limit_tokens(d, d), 256);
}

#[test]
fn l3_prefetch_brings_back_a_prefix_dropped_from_both_tiers() {
    let m = replay(&l3_cfg(), prefetch_trace()).unwrap();
    // R1..R4 miss ≥ 256 tokens beyond device+host: issued; R5 misses 192: not issued.
    assert_eq!(m.prefetches_issued, 4);
    assert_eq!(m.prefetches_rate_limited, 0);
    // R4: P was evicted from device (R2) and host (R3's evict_host); L3 serves 6 pages.
    assert_eq!(m.storage_hit_tokens, 384);
    assert_eq!(m.prefetch_bytes, 384);
    assert_eq!(m.device_hit_tokens, 0);
    assert_eq!(m.host_hit_tokens, 0);
    assert_eq!(m.input_tokens, 31 * 64);
    assert_eq!(m.miss_tokens, 31 * 64 - 384);
    // Every computed page was written to L3 once: P, Q, Q', X.
    assert_eq!(m.l3_write_bytes, (6 + 8 + 8 + 3) * 64);
    assert_eq!(m.final_storage_pages, 25);
    assert!((m.storage_hit_rate - 384.0 / 1984.0).abs() < 1e-12);
}

#[test]
fn pre_28614_limit_is_zero_when_host_not_larger_than_device() {
    let cfg = {
        let start = l3_cfg();
        ReplayConfig {
            capacities: Capacities {
                l2_pages: 8,
                ..start.capacities
            },
            prefetch: Prefetch {
                prefetch_capacity_rule: PrefetchCapRule::ExcessOverDevice,
                ..start.prefetch
            },
            ..start
        }
    };
    let m = replay(&cfg, prefetch_trace()).unwrap();
    assert_eq!(m.prefetches_issued, 0);
    assert_eq!(m.prefetches_rate_limited, 4);
    assert_eq!(m.storage_hit_tokens, 0);
    let cfg = ReplayConfig {
        prefetch: Prefetch {
            prefetch_capacity_rule: PrefetchCapRule::Pr16909Proposal,
            ..cfg.prefetch
        },
        ..cfg
    };
    let m = replay(&cfg, prefetch_trace()).unwrap();
    assert_eq!(m.prefetches_rate_limited, 0);
    assert_eq!(m.prefetches_issued, 4);
}

#[test]
fn buffer_only_stages_l3_hits_without_host_values() {
    let cfg = {
        let start = l3_cfg();
        ReplayConfig {
            capacities: Capacities {
                l2_pages: 10,
                ..start.capacities
            },
            policy: TreePolicy {
                host_memory_mode: HostMemoryMode::BufferOnly,
                ..start.policy
            },
            ..start
        }
    };
    let trace = vec![
        req(0, 0, 100..106, 64, 1),
        req(1, 0, 200..208, 64, 1),
        req(2, 0, 100..106, 64, 1),
    ];
    let m = replay(&cfg, trace).unwrap();
    assert_eq!(m.storage_hit_tokens, 384);
    assert_eq!(m.host_hit_tokens, 0);
    assert_eq!(m.peak_host_pages, 0);
    assert_eq!(
        m.final_host_only_pages + m.final_host_device_resident_pages,
        0
    );
    assert_eq!(m.l3_write_bytes, 14 * 64);
    assert_eq!(m.backup_bytes, 14 * 64);
    assert_eq!(m.prefetch_bytes, 6 * 64);
    // buffer_only needs storage.
    let bad = ReplayConfig {
        capacities: Capacities {
            l3_unbounded: false,
            ..cfg.capacities
        },
        ..cfg
    };
    assert!(matches!(
        replay(&bad, Vec::new()),
        Err(ReplayError::InvalidConfig {
            field: "host_memory_mode",
            ..
        })
    ));
}

#[test]
fn timing_on_hand_computed_transfers() {
    let cfg = ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 6,
            l2_pages: 100,
            bytes_per_token: 1000,
            num_layers: 2,
            ..Default::default()
        },
        links: Links {
            h2d_bandwidth: Bandwidth(10e9),
            d2h_bandwidth: Bandwidth(10e9),
            ..Default::default()
        },
        scheduler: Scheduler {
            prefill_tokens_per_s: 10_000.0,
            decode_tokens_per_s: 100.0,
            ..Default::default()
        },
        measurement: Measurement {
            timing: Timing::On,
            debug_checks: true,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    let trace = vec![
        req(0, 0, 1..5, 64, 10),     // P, 256 tokens: prefill 25.6 ms
        req(1, 200, 11..17, 64, 10), // Q, 384 tokens: 38.4 ms, evicts P to host
        req(2, 400, 1..5, 64, 10),   // P: 4 host pages loaded back, nothing to compute
    ];
    let m = replay(&cfg, trace).unwrap();
    assert_eq!(m.host_hit_tokens, 256);
    assert_eq!(m.load_back_bytes, 256_000);
    // D2H: P 256 kB + Q 384 kB.
    assert_eq!(m.backup_bytes, 640_000);
    // H2D of P: 2 layers x 1 run x 6.67 µs + 256000 B / (0.85 x 10 GB/s)
    //         = 13_340 + 30_118 = 43_458 ns; no new tokens to prefill.
    let h2d = 43_458e-9;
    // TTFTs: 25.6 ms, 38.4 ms, 43.458 µs (nearest-rank percentiles).
    assert_eq!(m.ttft_p50_s, Some(0.0256));
    assert_eq!(m.ttft_p90_s, Some(0.0384));
    assert_eq!(m.ttft_p99_s, Some(0.0384));
    // Last event: P's decode ends 9 / 100 tok/s = 0.09 s after its prefill (the
    // prefill made the first of its 10 tokens).
    let end = m.makespan_s.unwrap();
    assert!((end - (0.4 + h2d + 0.09)).abs() < 1e-12, "{end}");
    assert_eq!(m.load_back_skipped_tokens, 0);
    // Q's backup: 384000 B / 8.5 GB/s + 4 µs; P's was acked long before.
    assert_eq!(m.final_host_device_resident_pages, 4);
    assert_eq!(m.final_host_only_pages, 6);
    // Where the TTFT went: token ids (no encode), an idle GPU at each arrival (no
    // queue), the forwards 25.6 + 38.4 + 0 ms, P's load-back (not overlapped at fixed
    // speeds) 43.458 µs: means over 3 requests.
    let b = m.ttft_breakdown.unwrap();
    assert_eq!(b.requests, 3);
    assert_eq!((b.tokenize_s, b.queue_s, b.hit_cost_s), (0.0, 0.0, 0.0));
    assert!((b.forward_s - 0.064 / 3.0).abs() < 1e-15, "{b:?}");
    assert!((b.load_back_s - h2d / 3.0).abs() < 1e-15, "{b:?}");
    assert!((b.mean_s - (0.064 + h2d) / 3.0).abs() < 1e-15, "{b:?}");
}

/// The timed configuration of [`ttft_breakdown_counts_the_queue`]: 64-token pages,
/// 10,000 prefill tokens/s, the debug checks on.
pub(crate) fn queue_case() -> ReplayConfig {
    ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 100,
            l2_pages: 200,
            bytes_per_token: 1000,
            num_layers: 2,
            ..Default::default()
        },
        scheduler: Scheduler {
            prefill_tokens_per_s: 10_000.0,
            decode_tokens_per_s: 100.0,
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

/// A request that arrives while the GPU runs another's prefill waits in the queue:
/// R0 (256 tokens at 10,000 tok/s: 25.6 ms) at 0, R1 (other pages, 256 tokens) at 10
/// ms, formed into a batch when R0's ends at 25.6 ms (15.6 ms queued), done at 51.2 ms.
/// TTFT 25.6 and 41.2 ms: mean 33.4 = queue 7.8 + forward 25.6. The timing-off replay
/// has no breakdown.
#[test]
fn ttft_breakdown_counts_the_queue() {
    let mut cfg = queue_case();
    let trace = || vec![req(0, 0, 1..5, 64, 1), req(1, 10, 11..15, 64, 1)];
    let m = replay(&cfg, trace()).unwrap();
    let b = m.ttft_breakdown.unwrap();
    assert_eq!(m.ttft_p99_s, Some(0.0412));
    assert!((b.queue_s - 0.0078).abs() < 1e-15, "{b:?}");
    assert!((b.forward_s - 0.0256).abs() < 1e-15, "{b:?}");
    assert!((b.mean_s - 0.0334).abs() < 1e-15, "{b:?}");
    let shares = b.shares();
    assert_eq!(shares[2].0, "queue");
    assert!((shares[2].2 - 0.0078 / 0.0334).abs() < 1e-12);
    // No fixed way through the server configured: that part is 0.
    assert_eq!((shares[1].0, shares[1].1), ("request overhead", 0.0));
    cfg.measurement.timing = Timing::Off;
    assert_eq!(replay(&cfg, trace()).unwrap().ttft_breakdown, None);
}

#[test]
fn timing_on_rejects_out_of_order_arrivals() {
    let cfg = ReplayConfig {
        measurement: Measurement {
            timing: Timing::On,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    let trace = vec![req(7, 5, 1..3, 64, 1), req(8, 4, 1..3, 64, 1)];
    let e = replay(&cfg, trace).unwrap_err();
    assert_eq!(
        e,
        ReplayError::ArrivalOutOfOrder {
            index: 1,
            id: 8,
            arrival_ns: 4_000_000,
            previous_ns: 5_000_000
        }
    );
    assert!(e.to_string().contains("request #1"));
}

#[test]
fn config_deserializes_from_yaml_with_sglang_names() {
    let y = "page_size: 64\nl1_pages: 1000\nl2_pages: 3000\nl3_pages: 100000\n\
             write_policy: write_through_selective\neviction_policy: lfu\n\
             evict_host_rule: boundary_l1_l2\nprefetch_capacity_rule: pre-28614\n\
             prefetch_policy: timeout\nhost_memory_mode: cache\ntiming: on\n\
             h2d_bandwidth: 50GB/s\nprefetch_timeout_base: 2s\n";
    let c: ReplayConfig = serde_saphyr::from_str(y).unwrap();
    assert_eq!(c.policy.write_policy, WritePolicy::WriteThroughSelective);
    assert_eq!(
        c.prefetch.prefetch_capacity_rule,
        PrefetchCapRule::ExcessOverDevice
    );
    assert_eq!(c.capacities.l3_pages, Some(100_000));
    assert_eq!(c.measurement.timing, Timing::On);
    assert_eq!(c.links.h2d_bandwidth, Bandwidth(50e9));
    assert_eq!(c.capacities.l2_pages, 3000);
    let e = serde_saphyr::from_str::<ReplayConfig>("l1_page: 3\n");
    assert!(e.is_err());
}

#[test]
fn timing_on_prefetch_policies() {
    // P, Q, Q' as in the untimed case, 100 ms apart; then P again at 300 ms. P's 6
    // pages (384 kB) stream from L3 at 1 GB/s: 384 µs.
    let base = ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 8,
            l2_pages: 16,
            l3_unbounded: true,
            bytes_per_token: 1000,
            num_layers: 1,
            ..Default::default()
        },
        links: Links {
            h2d_bandwidth: Bandwidth(10e9),
            storage_read_bandwidth: Bandwidth(1e9),
            storage_write_bandwidth: Bandwidth(1e9),
            ..Default::default()
        },
        scheduler: Scheduler {
            prefill_tokens_per_s: 10_000.0,
            decode_tokens_per_s: 1e9,
            ..Default::default()
        },
        measurement: Measurement {
            timing: Timing::On,
            warmup_requests: 3,
            debug_checks: true,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    let trace = || {
        vec![
            req(0, 0, 100..106, 64, 1),
            req(1, 100, 200..208, 64, 1),
            req(2, 200, 300..308, 64, 1),
            req(3, 300, 100..106, 64, 1),
        ]
    };
    use hicache_sim::cache::PrefetchPolicy;
    // best_effort: terminated at once with nothing arrived: recompute 384 tokens.
    let m = replay(
        &{
            let start = base.clone();
            ReplayConfig {
                prefetch: Prefetch {
                    prefetch_policy: PrefetchPolicy::BestEffort,
                    ..start.prefetch
                },
                ..start
            }
        },
        trace(),
    )
    .unwrap();
    assert_eq!(m.storage_hit_tokens, 0);
    assert_eq!(m.ttft_p50_s, Some(0.0384));
    // wait_complete / timeout (2 s + 0.1 s × 384/1024 ≫ 384 µs): all 6 pages, then an
    // H2D load of 6670 ns + 384000 / 8.5e9 s = 51 846 ns, no compute.
    for policy in [PrefetchPolicy::WaitComplete, PrefetchPolicy::Timeout] {
        let m = replay(
            &{
                let start = base.clone();
                ReplayConfig {
                    prefetch: Prefetch {
                        prefetch_policy: policy,
                        ..start.prefetch
                    },
                    ..start
                }
            },
            trace(),
        )
        .unwrap();
        assert_eq!(m.storage_hit_tokens, 384, "{policy:?}");
        assert_eq!(
            m.ttft_p50_s,
            Some((384_000 + 51_846) as f64 / 1e9),
            "{policy:?}"
        );
    }
}

#[test]
fn pages_beyond_the_prompt_are_rejected() {
    let mut r = req(5, 0, 1..4, 64, 1);
    r.input_tokens = 100;
    let e = replay(&ReplayConfig::default(), vec![r]).unwrap_err();
    assert!(matches!(
        e,
        ReplayError::PagesExceedInput {
            index: 0,
            id: 5,
            need: 192,
            ..
        }
    ));
}

#[test]
fn plain_page_reads_no_request_past_a_refused_one() {
    // The plain-page replay reads a few requests ahead: it checks each as it is read,
    // so it stops at the refused one (index 2) as the one-at-a-time replay does.
    let mut bad = req(2, 0, 1..4, 64, 1);
    bad.input_tokens = 100;
    let trace = vec![
        req(0, 0, 1..4, 64, 1),
        req(1, 0, 5..9, 64, 1),
        bad,
        req(3, 0, 1..4, 64, 1),
        req(4, 0, 1..4, 64, 1),
    ];
    let cfg = ReplayConfig {
        policy: TreePolicy {
            lru_mode: hicache_sim::cache::LruMode::PlainPage,
            ..Default::default()
        },
        measurement: Measurement {
            timing: Timing::Off,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    let read = std::cell::Cell::new(0);
    let e = replay(
        &cfg,
        trace.into_iter().inspect(|_| read.set(read.get() + 1)),
    )
    .unwrap_err();
    assert!(matches!(
        e,
        ReplayError::PagesExceedInput {
            index: 2,
            id: 2,
            ..
        }
    ));
    assert_eq!(read.get(), 3);
}

#[test]
fn warmup_and_timeline() {
    let cfg = ReplayConfig {
        measurement: Measurement {
            warmup_requests: 2,
            timeline_samples: 2,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    let trace: Vec<Request> = (0..10).map(|i| req(i, 0, 1..5, 64, 1)).collect();
    let m = replay(&cfg, trace).unwrap();
    assert_eq!(m.requests, 10);
    assert_eq!(m.measured_requests, 8);
    assert_eq!(m.input_tokens, 8 * 256);
    assert_eq!(m.device_hit_tokens, 8 * 256);
    assert_eq!(m.device_hit_rate, 1.0);
    assert_eq!(m.total_page_hit_rate, 1.0);
    assert!((2..=4).contains(&m.timeline.len()), "{}", m.timeline.len());
    assert!(
        m.timeline
            .windows(2)
            .all(|w| w[0].request_index < w[1].request_index)
    );
    let last = m.timeline.last().unwrap();
    assert_eq!(last.total_hit_rate, 1.0);
    assert_eq!(last.host_device_resident_pages, 4);
    let json = serde_json::to_value(&m).unwrap();
    for k in [
        "device_hit_tokens",
        "host_hit_rate",
        "total_page_hit_rate",
        "failed_backups",
        "tokens_dropped_without_backup",
        "peak_host_only_pages",
        "ttft_p99_s",
        "timeline",
    ] {
        assert!(json.get(k).is_some(), "{k}");
    }
    assert!(hicache_sim::runtime::definitions().contains("longest-prefix"));
}

#[test]
fn config_round_trips_through_json_and_yaml() {
    let c = ReplayConfig {
        capacities: Capacities {
            l3_pages: Some(77),
            ..Default::default()
        },
        policy: TreePolicy {
            host_memory_mode: HostMemoryMode::BufferOnly,
            ..Default::default()
        },
        prefetch: Prefetch {
            prefetch_capacity_rule: PrefetchCapRule::Pr16909Proposal,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    let j = serde_json::to_string(&c).unwrap();
    let back: ReplayConfig = serde_json::from_str(&j).unwrap();
    assert_eq!(back, c);
    assert!(j.contains("\"prefetch_capacity_rule\":\"pr16909\""), "{j}");
    assert!(j.contains("\"write_policy\":\"write_through\""));
}

#[test]
fn incident_c_host_smaller_than_device() {
    // L1 4 pages, L2 2 pages of 16 tokens; A, B, C (2 pages each), then A again.
    let trace = || {
        vec![
            req(0, 0, 1..3, 16, 1),
            req(1, 0, 11..13, 16, 1),
            req(2, 0, 21..23, 16, 1),
            req(3, 0, 1..3, 16, 1),
        ]
    };
    let base = ReplayConfig {
        capacities: Capacities {
            page_size: 16,
            l1_pages: 4,
            l2_pages: 2,
            ..Default::default()
        },
        measurement: Measurement {
            debug_checks: true,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    // write_through: A's copy fills the host; B's backup fails (A is device-resident,
    // evict_host may not take it); C evicts A to host and then reclaims it; A misses,
    // evicts B, and its own backup fails against C's device-resident copy.
    let m = replay(&base, trace()).unwrap();
    assert_eq!(m.failed_backups, 2);
    assert_eq!(m.host_hit_tokens, 0);
    assert_eq!(m.host_evicted_pages, 2);
    assert_eq!(m.total_hit_tokens, 0);
    // write_back: A is backed up when C evicts it; A's load-back evicts B, whose backup
    // fails (A's copy is pinned by the load-back), so B is dropped without backup.
    let m = replay(
        &ReplayConfig {
            policy: TreePolicy {
                write_policy: WritePolicy::WriteBack,
                ..base.policy
            },
            ..base
        },
        trace(),
    )
    .unwrap();
    assert_eq!(m.host_hit_tokens, 32);
    assert_eq!(m.failed_backups, 1);
    assert_eq!(m.tokens_dropped_without_backup, 32);
    assert_eq!(m.load_back_bytes, 32 * 131_072);
}
