//! A server's inbound path in the timed replay (`timed::rank::Inbound`): SGLang runs
//! one TokenizerManager per server, in front of its `DataParallelController`, so an
//! engine's DP-attention ranks share one encode queue and the controller dispatches a
//! request once it has taken its encode and its fixed way in; in a PD deployment the
//! decode server preallocates once its own scheduler has the request. Hand-computed on
//! the fixed speeds (20,000 prefill and 50 decode tokens/s, 64-token pages).

use hicache_sim::runtime::dp::DpBalance;
use hicache_sim::runtime::pd::{DecodeServer, PdSpec};
use hicache_sim::runtime::{ReplayConfig, Timing, replay, replay_pd};
use hicache_sim::units::{Bandwidth, Duration};
use hicache_sim::workload::Request;

/// A prompt of `tokens` tokens whose 64-token pages are `first..` (two requests with
/// the same `first` share their common pages), sent at `at_us` µs, one output token.
fn req(id: u64, at_us: u64, tokens: u32, first: u64) -> Request {
    Request {
        id,
        arrival_ns: at_us * 1_000,
        input_tokens: tokens,
        output_tokens: 1,
        page_hashes: (first..first + u64::from(tokens / 64)).collect(),
    }
}

/// Two DP-attention ranks on the fixed speeds (`dp_ranks::timed_dp_cfg`) under `balance`.
fn dp2(balance: DpBalance) -> ReplayConfig {
    let mut c = crate::dp_ranks::timed_dp_cfg(2);
    c.capacities.dp_balance = balance;
    c
}

/// Two 1,000-token text requests sent at once to two ranks (round-robin), encoded at
/// 1 µs a token by the server's one TokenizerManager: request 0 reaches rank 0 at 1 ms
/// and its 50 ms prefill starts the ranks' step (TTFT 51 ms); request 1 is encoded after
/// it and reaches rank 1 at 2 ms, during that step, so it prefills in the next: TTFT
/// 101 ms. Its encode took 2 ms of it (1 ms waiting for request 0's), and 49 ms was
/// the step it waited for. One encode queue per rank would have had both in the first
/// step (51 ms each).
#[test]
fn dp_ranks_share_one_tokenizer_manager() {
    let mut c = dp2(DpBalance::RoundRobin);
    c.frontend.tokenize_per_token = Duration(1_000);
    let m = replay(&c, vec![req(0, 0, 1000, 0), req(1, 0, 1000, 100)]).unwrap();
    let b = m.ttft_breakdown.as_ref().unwrap();
    assert!((b.mean_s - 0.076).abs() < 1e-12, "{b:?}");
    assert!((b.tokenize_s - 0.0015).abs() < 1e-12, "{b:?}");
    assert!((b.queue_s - 0.0245).abs() < 1e-12, "{b:?}");
    assert!((b.forward_s - 0.050).abs() < 1e-12, "{b:?}");
    assert_eq!(
        m.ranks
            .iter()
            .map(|r| r.measured_requests)
            .collect::<Vec<_>>(),
        [1, 1]
    );
}

/// The controller reads the ranks' loads when the request is in, not at its send
/// (`--load-balance-method total_requests`, a 6 ms fixed way in). Request 0 (1,024
/// tokens, sent at 0) reaches the controller at 6 ms: no rank has published a load,
/// so rank 0; its prefill ends at 57.2 ms and rank 0, idle, publishes 0 requests.
/// Request 1 (its 1,024 tokens and 512 more) is sent at 55 ms and reaches the
/// controller at 61 ms; the budget, refreshed (more than 20 ms since 6 ms), reads 0
/// and 0: rank 0, whose tree holds the 1,024 tokens. It prefills its 512 new tokens
/// in 25.6 ms: TTFT 31.6 ms. Read at its send (55 ms), rank 0 had published nothing
/// since it took request 0 (budget 1 against 0): rank 1, and no hit.
#[test]
fn the_dp_controller_reads_the_loads_once_the_request_is_in() {
    let mut c = dp2(DpBalance::TotalRequests);
    c.frontend.request_overhead = Duration(6_000_000);
    let m = replay(&c, vec![req(0, 0, 1024, 0), req(1, 55_000, 1536, 0)]).unwrap();
    assert_eq!(m.device_hit_tokens, 1024);
    assert_eq!(
        m.ranks
            .iter()
            .map(|r| r.measured_requests)
            .collect::<Vec<_>>(),
        [2, 0]
    );
    let b = m.ttft_breakdown.as_ref().unwrap();
    assert!((b.mean_s - (0.0572 + 0.0316) / 2.0).abs() < 1e-12, "{b:?}");
    assert!((b.request_overhead_s - 0.006).abs() < 1e-12, "{b:?}");
}

/// PD: the decode server's TokenizerManager encodes the request (256 tokens at 1 µs)
/// and its fixed way in (6 ms) ends before the decode server can preallocate: the
/// preallocation wait is 6.256 ms, the prefill server's part its 12.8 ms prefill alone
/// (its own inbound path ran meanwhile), and the TTFT adds the 3,355,443 ns transfer
/// (4 pages × 64 × 131,072 B at 10 GB/s): 22,411,443 ns.
#[test]
fn a_pd_decode_server_preallocates_once_its_scheduler_has_the_request() {
    let mut c = ReplayConfig::default();
    c.measurement.timing = Timing::On;
    c.frontend.tokenize_per_token = Duration(1_000);
    c.frontend.request_overhead = Duration(6_000_000);
    let spec = PdSpec {
        transfer_bandwidth: Bandwidth(10e9),
        decode: Some(DecodeServer::new(1 << 20, 64, None, None)),
        ..PdSpec::default()
    };
    let (m, _) = replay_pd(&c, &spec, None, vec![req(0, 0, 256, 0)]).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert!(
        (pd.prealloc_wait_mean_s - 0.006_256).abs() < 1e-12,
        "{pd:?}"
    );
    assert!((pd.prefill_mean_s - 0.0128).abs() < 1e-12, "{pd:?}");
    assert_eq!(m.ttft_p50_s, Some(0.022_411_443));
}

/// PD with two decode servers: a prefill server takes its requests in the order its
/// own TokenizerManager delivers them, whatever order the decode servers preallocate
/// them in. Two text requests sent at once (1 µs a token): r0 (4,096 tokens) goes to
/// decode server 0, r1 (128) to decode server 1, which preallocates it first (at
/// 0.128 ms; r0 at 4.096 ms). The prefill server encodes r0 first and receives it at
/// 4.096 ms, r1 at 4.224 ms: r0 prefills alone, 4.096 → 208.896 ms, then r1, → 215.296
/// ms. The prefill server's part (from each preallocation) averages (204.8 + 215.168) / 2
/// = 209.984 ms; the preallocation wait (4.096 + 0.128) / 2 = 2.112 ms. (Fed in the
/// order of their preallocations, r0 waited behind r1 and both prefilled in one batch
/// ending at 215.424 ms.)
#[test]
fn a_pd_prefill_server_takes_requests_in_its_own_receipt_order() {
    let mut c = ReplayConfig::default();
    c.measurement.timing = Timing::On;
    c.frontend.tokenize_per_token = Duration(1_000);
    let spec = PdSpec {
        transfer_bandwidth: Bandwidth(10e9),
        decode_engines: 2,
        decode: Some(DecodeServer::new(1 << 20, 64, None, None)),
        ..PdSpec::default()
    };
    let (m, _) = replay_pd(
        &c,
        &spec,
        None,
        vec![req(0, 0, 4096, 0), req(1, 0, 128, 1000)],
    )
    .unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert!((pd.prefill_mean_s - 0.209_984).abs() < 1e-12, "{pd:?}");
    assert!(
        (pd.prealloc_wait_mean_s - 0.002_112).abs() < 1e-12,
        "{pd:?}"
    );
}
