//! A prefill-decode disaggregated deployment, timed (`runtime::timed::pd`): the decode
//! server's preallocation gating the prefill server's queue, each request's KV held on
//! the prefill server until its transfer ends, the first token streamed at the decode
//! server's next loop iteration. Hand-worked on the fixed speeds (20,000 prefill and 50
//! decode tokens/s, 64-token pages, 131,072 KV bytes a token).

use hicache_sim::runtime::pd::{DecodeServer, PdSpec};
use hicache_sim::runtime::{ReplayConfig, Timing, replay_pd};
use hicache_sim::units::Bandwidth;
use hicache_sim::workload::Request;

use crate::support::{exit2, repo, run, stderr, stdout};

fn cfg() -> ReplayConfig {
    let mut c = ReplayConfig::default();
    c.measurement.timing = Timing::On;
    c
}

/// One decode server of `pool` tokens (2048 running), transfers at 10 GB/s a rank.
fn spec(pool: u64) -> PdSpec {
    PdSpec {
        transfer_bandwidth: Bandwidth(10e9),
        decode: Some(DecodeServer::new(pool, 64, None, None)),
        ..PdSpec::default()
    }
}

/// A prompt of 4 pages of its own (256 tokens) at `at_ms`, with `output` tokens.
fn req(id: u64, at_ms: f64, first: u64, output: u32) -> Request {
    Request {
        id,
        arrival_ns: (at_ms * 1e6).round() as u64,
        input_tokens: 256,
        output_tokens: output,
        page_hashes: (first..first + 4).collect(),
    }
}

/// 256 prompt tokens: a 12.8 ms prefill; 4 pages × 64 × 131,072 B = 33,554,432 B sent
/// at 10 GB/s: 3,355,443 ns (the clock's whole ns). The idle decode server streams the
/// first token at the transfer's end (TTFT 16,155,443 ns) and makes the other two in 20 ms steps.
#[test]
fn ttft_is_prefill_plus_transfer_on_idle_servers() {
    let (m, router) = replay_pd(&cfg(), &spec(1 << 20), None, vec![req(0, 0.0, 100, 3)]).unwrap();
    assert!(router.is_none());
    let pd = m.pd.as_ref().unwrap();
    assert_eq!(m.ttft_p50_s, Some(0.016_155_443));
    assert!((m.tpot_mean_s.unwrap() - 0.020).abs() < 1e-12);
    assert!((pd.prefill_mean_s - 0.0128).abs() < 1e-12);
    assert!((pd.transfer_mean_s - 0.003_355_443).abs() < 1e-12);
    assert_eq!(pd.prealloc_wait_mean_s, 0.0);
    assert_eq!(pd.first_token_wait_mean_s, 0.0);
    // The prefill server's own TTFT ends at its prefill: max_new_tokens = 1.
    assert_eq!(pd.prefill_ttft_p50_s, Some(0.0128));
    assert_eq!(pd.decode_steps, 2);
    // The prompt's 4 pages, then its first decoded token's KV opens a fifth.
    assert_eq!(pd.decode_peak_tokens, 320);
    assert_eq!(m.makespan_s, Some(0.056_155_443));
}

/// A decode pool of 1,024 tokens: A (256 tokens, 101 out) is admitted (768 =
/// its 256 + 512 reserved ≤ 1,024); B at 1 ms needs 768 but finds 1,024 − 256 held
/// − 512 reserved for A = 256: it waits, in the decode server's queue and not in the
/// prefill server's, until A's 100 decode steps end at 2,016,155,443 ns. B's TTFT is
/// then its own prefill and transfer after that: 2,031,310,886 ns from its send.
#[test]
fn the_decode_pool_gates_the_prefill_queue() {
    let reqs = vec![req(0, 0.0, 100, 101), req(1, 1.0, 200, 2)];
    let (m, _) = replay_pd(&cfg(), &spec(1024), None, reqs).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert_eq!(m.ttft_p50_s, Some(0.016_155_443));
    assert_eq!(m.ttft_p99_s, Some(2.031_310_886));
    // B's wait for the preallocation, averaged over the two requests.
    assert!((pd.prealloc_wait_mean_s - 2.015_155_443 / 2.0).abs() < 1e-9);
    assert!((pd.prefill_mean_s - 0.0128).abs() < 1e-12);
    assert_eq!(pd.decode_overflow_steps, 0);
    // Alone, the same two requests overlap.
    let (m, _) = replay_pd(
        &cfg(),
        &spec(1 << 20),
        None,
        vec![req(0, 0.0, 100, 101), req(1, 1.0, 200, 2)],
    )
    .unwrap();
    assert_eq!(m.pd.unwrap().prealloc_wait_mean_s, 0.0);
}

/// With a decode step running, the decode server's loop sees a new request at the
/// step's end: B at 1 s is preallocated at 1,016,155,443 ns (A's steps run every 20 ms
/// from 16,155,443 ns), prefilled and sent by 1,032,310,886 ns, and its first token
/// goes out at the next step's end, 1,036,155,443 ns: TTFT 36,155,443 ns.
#[test]
fn a_busy_decode_server_answers_at_its_next_loop_iteration() {
    let reqs = vec![req(0, 0.0, 100, 1001), req(1, 1000.0, 200, 2)];
    let (m, _) = replay_pd(&cfg(), &spec(1 << 20), None, reqs).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert_eq!(m.ttft_p99_s, Some(0.036_155_443));
    assert!((pd.prealloc_wait_mean_s - 0.016_155_443 / 2.0).abs() < 1e-12);
    assert!((pd.first_token_wait_mean_s - 0.003_844_557 / 2.0).abs() < 1e-12);
    // Both decode in one batch from B's first token on.
    assert!(pd.decode_batch_mean > 1.0);
}

/// The prefill server holds a request's KV until its transfer ends: at 0.1 GB/s a
/// 33.5 MB transfer takes 335.54432 ms, and a second request that needs A's pages
/// cannot evict them meanwhile — its device pool of 4 pages holds only A's.
#[test]
fn the_prefill_server_holds_the_kv_until_the_transfer_ends() {
    let mut c = cfg();
    c.capacities.l1_pages = 4;
    let mut s = spec(1 << 20);
    s.transfer_bandwidth = Bandwidth(0.1e9);
    let reqs = vec![req(0, 0.0, 100, 2), req(1, 1.0, 200, 2)];
    let (m, _) = replay_pd(&c, &s, None, reqs).unwrap();
    let pd = m.pd.as_ref().unwrap();
    // B's prefill starts when A's transfer frees the pool: 12.8 + 335.54432 ms.
    assert_eq!(pd.prefill_ttft_p50_s, Some(0.0128));
    let b_prefill_end = 0.0128 + 0.335_544_32 + 0.0128;
    let b_ttft = b_prefill_end + 0.335_544_32 - 0.001;
    assert!(
        (m.ttft_p99_s.unwrap() - b_ttft).abs() < 1e-9,
        "{:?}",
        m.ttft_p99_s
    );
}

/// A request the decode pool can never hold is an error naming it, not a hang.
#[test]
fn a_request_no_decode_pool_holds_is_refused() {
    let e = replay_pd(&cfg(), &spec(512), None, vec![req(0, 0.0, 100, 2)]).unwrap_err();
    assert!(e.to_string().contains("never fits decode server 0"), "{e}");
}

/// Timing off, the SWA tree and a section read without its scenario are refused.
#[test]
fn untimed_and_unsized_are_refused() {
    let e = replay_pd(
        &ReplayConfig::default(),
        &spec(1 << 20),
        None,
        vec![req(0, 0.0, 1, 2)],
    )
    .unwrap_err();
    assert!(e.to_string().contains("on the clock"), "{e}");
    let e = replay_pd(&cfg(), &PdSpec::default(), None, vec![req(0, 0.0, 1, 2)]).unwrap_err();
    assert!(e.to_string().contains("not sized"), "{e}");
}

/// `scenarios/pd-deepseek-v3-h200.yaml`: two DeepSeek-V3 TP8 prefill servers with
/// HiCache behind cache_aware, two decode servers (each sized as SGLang sizes a decode
/// server: 724,992 tokens a rank on an H200 under 0.5.23, 256 running), Mooncake
/// trace at half speed. The text says where the client's TTFT goes; the status names
/// what the PD replay leaves out instead of the prefill server's own reason.
#[test]
fn the_pd_scenario_replays_with_its_ttft_split() {
    let o = run(
        &["replay", "scenarios/pd-deepseek-v3-h200.yaml"],
        &repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "PD: 2 prefill server(s), 2 decode server(s) (pool 724992 tokens per rank, max_running_requests 256, 256 request slots); requests per decode server [1997, 1996]",
        "PD TTFT mean 96.066 s = decode preallocation wait 71.532 s (74.5 %) + prefill server 24.471 s (25.5 %) + KV transfer 0.060 s (0.1 %; 23.75 GB/s per rank) + first-token wait 0.003 s (0.0 %)",
        "TTFT: p50 26.135 s, p90 313.426 s, p99 381.138 s",
        "total          17179264    28.07 %",
        "status: unverified: PD replay: the KV transfer runs at runtime.pd.transfer_bandwidth per rank",
        "an engine's TTFT is its prefill server's",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
    assert!(!t.contains("not modelled are its admission waiting"), "{t}");
    let o = run(
        &[
            "replay",
            "scenarios/pd-deepseek-v3-h200.yaml",
            "--format",
            "json",
        ],
        &repo("."),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "unverified");
    assert_eq!(v["metrics"]["pd"]["decode"]["pool_tokens"], 724_992);
    assert_eq!(v["metrics"]["pd"]["decode_overflow_steps"], 0);
}

/// `runtime.pd` on a server that is not a PD prefill server is refused, naming the
/// flag; with timing off, naming the clock.
#[test]
fn runtime_pd_needs_a_prefill_server_on_the_clock() {
    let d = tempfile::tempdir().unwrap();
    let trace = repo("traces/synthetic_trace.jsonl");
    let write = |flags: &str, timing: &str| {
        let text = format!(
            "name: pd\nsglang: 0.5.23\nnode: hgx-h200\nmodel: deepseek-v3\nserver:\n  launch: python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 {flags}\nmemory:\n  host_other_used: 0GB\nruntime:\n  trace: {}\n  max_requests: 20\n  pd: {{decode_engines: 1}}\n  replay: {{timing: {timing}}}\n",
            trace.display()
        );
        std::fs::write(d.path().join("s.yaml"), text).unwrap();
    };
    write("", "on");
    let o = run(&["replay", "s.yaml"], d.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--disaggregation-mode prefill"),
        "{}",
        stderr(&o)
    );
    write("--disaggregation-mode prefill", "off");
    let o = run(&["replay", "s.yaml"], d.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("timing: on"), "{}", stderr(&o));
    write("--disaggregation-mode prefill", "on");
    let o = run(&["replay", "s.yaml"], d.path());
    assert!(o.status.success(), "{}", stderr(&o));
    // No flag: SGLang's estimate from DeepSeek-V3's context length (163,840).
    let t = stdout(&o);
    assert!(
        t.contains("max_running_requests 2265, 2265 request slots"),
        "{t}"
    );
    assert!(!t.contains("estimate's floor"), "{t}");
}

/// The decode server's `max_running_requests` (`resolve_max_num_reqs`) and request
/// slots (`_get_num_req_slots` with the PD hook's extra slots), and the context length
/// SGLang reads from a config (`get_context_length`).
#[test]
fn decode_server_slots_and_context_length() {
    // 724,992 / 163,840 × 512 = 2,265.6 → 2,265 (within 2,048–4,096).
    let d = DecodeServer::new(724_992, 64, None, Some(163_840));
    assert_eq!((d.max_running_requests, d.req_slots), (2265, 2265));
    // No context length: the estimate's floor.
    assert_eq!(
        DecodeServer::new(724_992, 64, None, None).max_running_requests,
        2048
    );
    // A small pool: half of it.
    assert_eq!(
        DecodeServer::new(1024, 64, None, None).max_running_requests,
        512
    );
    // 32 or fewer per worker: twice as many extra slots for requests in transfer.
    let d = DecodeServer::new(724_992, 64, Some(32), None);
    assert_eq!((d.max_running_requests, d.req_slots), (32, 96));
    let d = DecodeServer::new(724_992, 64, Some(256), None);
    assert_eq!((d.max_running_requests, d.req_slots), (256, 256));
    use hicache_sim::runtime::pd::hf_context_length;
    let v3 = serde_json::json!({"max_position_embeddings": 163840,
        "rope_scaling": {"factor": 40, "original_max_position_embeddings": 4096, "type": "yarn"}});
    assert_eq!(hf_context_length(&v3), 163_840);
    let scaled = serde_json::json!({"max_position_embeddings": 32768,
        "rope_scaling": {"factor": 4.0, "type": "yarn"}});
    assert_eq!(hf_context_length(&scaled), 131_072);
    let llama = serde_json::json!({"max_position_embeddings": 131072,
        "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}});
    assert_eq!(hf_context_length(&llama), 131_072);
    let both = serde_json::json!({"seq_length": 8192, "max_position_embeddings": 4096});
    assert_eq!(hf_context_length(&both), 8192);
    assert_eq!(hf_context_length(&serde_json::json!({})), 2048);
}

/// The requests a decode step finished still count in the next preallocation's
/// reserve (`running_batch.reqs` is filtered after `pop_preallocated`). A pool of 1,600
/// tokens: A (256 in, 3 out) and C (256 in, 501 out) are preallocated at 0 (C: 1,600 −
/// 256 − 512 = 832 ≥ 768), prefilled in one batch (25.6 ms) and sent one after the
/// other; B (256 in, 2 out) at 1 ms waits. A's second decode step ends at 68,955,443 ns
/// with A finished: that iteration still counts A (1,600 − 320 held − 2 × 512 = 256 <
/// 768); the next, one step later at 88,955,443 ns, does not (1,600 − 320 − 512 = 768):
/// B is preallocated then, prefilled and sent by 105,110,886 ns, and its first token
/// goes out at C's next step end, 108,955,443 ns: TTFT 107,955,443 ns.
#[test]
fn finished_requests_count_at_the_next_preallocation() {
    let reqs = vec![
        req(0, 0.0, 100, 3),
        req(1, 0.0, 300, 501),
        req(2, 1.0, 200, 2),
    ];
    let (m, _) = replay_pd(&cfg(), &spec(1600), None, reqs).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert_eq!(m.ttft_p99_s, Some(0.107_955_443));
    assert!(
        (pd.prealloc_wait_mean_s - 0.087_955_443 / 3.0).abs() < 1e-12,
        "{pd:?}"
    );
    assert_eq!(pd.decode_overflow_steps, 0);
}

/// DP attention on both sides: each decode rank has its own pool and preallocation
/// queue. Two requests at once into decode pools of 1,024 tokens: one rank holds one
/// (B waits for A, as above); two ranks take one each at once (round-robin), and the
/// two prefill ranks (round-robin here) prefill them in one lockstep step: both TTFTs
/// are 16,155,443 ns.
#[test]
fn dp_ranks_each_have_their_own_decode_pool() {
    use hicache_sim::runtime::dp::DpBalance;
    let reqs = || vec![req(0, 0.0, 100, 2), req(1, 0.0, 200, 2)];
    let (m, _) = replay_pd(&cfg(), &spec(1024), None, reqs()).unwrap();
    assert!(m.ttft_p99_s.unwrap() > 0.05, "{:?}", m.ttft_p99_s);
    let mut c = cfg();
    c.capacities.dp_ranks = 2;
    c.capacities.dp_balance = DpBalance::RoundRobin;
    let (m, _) = replay_pd(&c, &spec(1024), None, reqs()).unwrap();
    assert_eq!(m.ttft_p50_s, Some(0.016_155_443));
    assert_eq!(m.ttft_p99_s, Some(0.016_155_443));
    let pd = m.pd.unwrap();
    assert_eq!(pd.dp_ranks, 2);
    assert_eq!(pd.prealloc_wait_mean_s, 0.0);
    assert_eq!(m.ranks.len(), 2);
    assert_eq!(
        m.ranks.iter().map(|r| r.requests).collect::<Vec<_>>(),
        [1, 1]
    );
}

/// A PD prefill server's `auto` is `follow_bootstrap_room`: the rank of the room the
/// router draws for each request (a seeded draw: the same seed, the same ranks).
/// Outside a PD replay the method is refused: there are no rooms.
#[test]
fn follow_bootstrap_room_spreads_requests_by_their_rooms() {
    use hicache_sim::runtime::dp::DpBalance;
    let mut c = cfg();
    c.capacities.dp_ranks = 4;
    c.capacities.dp_balance = DpBalance::FollowBootstrapRoom;
    let reqs: Vec<Request> = (0..200)
        .map(|i| req(i, i as f64 * 50.0, 10 * i, 2))
        .collect();
    let mut s = spec(1 << 20);
    s.seed = 7;
    let (a, _) = replay_pd(&c, &s, None, reqs.clone()).unwrap();
    let (b, _) = replay_pd(&c, &s, None, reqs.clone()).unwrap();
    let counts: Vec<u64> = a.ranks.iter().map(|r| r.requests).collect();
    assert_eq!(
        counts,
        b.ranks.iter().map(|r| r.requests).collect::<Vec<_>>()
    );
    assert_eq!(counts.iter().sum::<u64>(), 200);
    assert!(counts.iter().all(|&k| (25..=75).contains(&k)), "{counts:?}");
    s.seed = 8;
    let (other, _) = replay_pd(&c, &s, None, reqs.clone()).unwrap();
    assert_ne!(
        counts,
        other.ranks.iter().map(|r| r.requests).collect::<Vec<_>>()
    );
    let e = hicache_sim::runtime::replay(&c, reqs).unwrap_err();
    assert!(
        e.to_string().contains("only a PD deployment's replay"),
        "{e}"
    );
}

/// The PD scenario with DP attention 8 on both sides (`--dp 8
/// --enable-dp-attention`): each decode rank its share of the pool (349,376 tokens) and
/// of `--max-running-requests` 256 (32, so 64 extra slots), the prefill ranks chosen by
/// the rooms; the status names the decode ranks' independent steps.
#[test]
fn the_pd_scenario_with_dp_attention() {
    let o = run(
        &[
            "replay",
            "scenarios/pd-deepseek-v3-h200.yaml",
            "--set",
            "server.dp_size=8",
            "--set",
            "server.enable_dp_attention=true",
        ],
        &repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "PD: 2 prefill server(s), 2 decode server(s), each of 8 DP-attention ranks (pool 349376 tokens per rank, max_running_requests 32, 96 request slots)",
        "a decode server's DP ranks step independently",
        "each engine has 8 data-parallel ranks",
        "by --load-balance-method follow_bootstrap_room",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
}

/// `scenarios/pd-deepseek-v4-flash-h200.yaml`: DeepSeek-V4-Flash PD, two TP2 prefill
/// servers running SGLang's tree with its SWA component behind cache_aware, two TP2
/// decode servers. Each prompt's transfer sends its compressed KV pages (each chunk's
/// after its forward, a device-cached prefix when the forward starts), its window's
/// SWA pages and its C128 state with the last: the mean transfer 0.002 s (0.006 s when
/// the whole prompt went after the last chunk); the status names the SWA simplifications of the PD replay
/// and not the timed SWA tree's decode ones (a prefill server decodes nothing).
#[test]
fn the_deepseek_v4_pd_scenario() {
    let o = run(
        &["replay", "scenarios/pd-deepseek-v4-flash-h200.yaml"],
        &repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        // DeepSeek-V4's argument hook sets --max-running-requests 256 on a decode server too.
        "PD: 2 prefill server(s), 2 decode server(s) (pool 7665152 tokens per rank, max_running_requests 256, 256 request slots); requests per decode server [150, 150]",
        "KV transfer 0.002 s",
        "all          300        3980639        3399424              0              0    85.40 %    0.099 s    1.633 s",
        "PD replay of a sliding-window model: the decode server's admission counts its full pool only",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
    assert!(
        !t.contains("takes a request's decode KV when its decode starts"),
        "{t}"
    );
    // Its prefill servers send each chunk's pages as computed, as the others do.
    assert!(
        !t.contains("sends the whole prompt after its last chunk"),
        "{t}"
    );
}

/// A decode server's radix cache (`--disaggregation-decode-enable-radix-cache`,
/// `runtime.pd.decode_radix_cache`): A (4 pages, 2 out) finishes on the decode server,
/// which keeps its prompt's 4 pages in its tree. B at 1 s extends A's prompt by 4 pages
/// (512 tokens): its decode server matches A's 4 pages (`decode_prefix_len` 256), so
/// the prefill server — which prefills B's 256 new tokens over its own cached 256 in
/// 12.8 ms — sends only the last 4 pages, 33,554,432 ns at 1 GB/s. Without the cache it
/// sends all 8: A's 4, on its device, when the forward starts
/// (`maybe_send_cached_prefix_chunk`), its own 4 after them, done 67,108,864 ns after
/// the forward's start.
#[test]
fn a_decode_radix_cache_sends_only_what_the_decode_server_lacks() {
    let b = Request {
        id: 1,
        arrival_ns: 1_000_000_000,
        input_tokens: 512,
        output_tokens: 2,
        page_hashes: (100..108).collect(),
    };
    let reqs = || vec![req(0, 0.0, 100, 2), b.clone()];
    let slow = |radix: bool| {
        let mut s = spec(1 << 20);
        s.transfer_bandwidth = Bandwidth(1e9);
        s.decode_radix_cache = radix;
        s
    };
    let (m, _) = replay_pd(&cfg(), &slow(true), None, reqs()).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert!(pd.decode_radix_cache);
    assert_eq!(
        (pd.decode_prefix_tokens, pd.decode_prompt_tokens),
        (256, 768)
    );
    // Both transfers are 4 pages after the prefill; both TTFTs 12.8 + 33.554432 ms.
    assert!((pd.transfer_mean_s - 0.033_554_432).abs() < 1e-12);
    assert_eq!(m.ttft_p99_s, Some(0.046_354_432));
    // B's KV on the decode server: A's 4 cached pages (locked) and its own 4, then a
    // ninth page for its decoded token: 576 tokens at the peak.
    assert_eq!(pd.decode_peak_tokens, 576);
    let (m, _) = replay_pd(&cfg(), &slow(false), None, reqs()).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert!(!pd.decode_radix_cache);
    assert_eq!((pd.decode_prefix_tokens, pd.decode_prompt_tokens), (0, 768));
    // B's transfer ends 67.108864 ms after its forward's start: 54.308864 ms after its
    // prefill.
    assert!((pd.transfer_mean_s - (0.033_554_432 + 0.054_308_864) / 2.0).abs() < 1e-12);
    assert_eq!(m.ttft_p99_s, Some(0.067_108_864));
}

/// The decode radix cache's pages are the pool's: on a decode pool of 1,024 tokens
/// (16 pages) A's 4 finished pages stay cached, and C (4 pages of its own, 600 out),
/// growing to 14 pages (256 + 599 tokens), evicts them when it needs its 13th instead
/// of outgrowing the pool. B, back at 20 s for A's prefix, finds it gone and is sent
/// whole.
#[test]
fn the_decode_radix_cache_gives_its_pages_to_running_requests() {
    let b = Request {
        id: 2,
        arrival_ns: 20_000_000_000,
        input_tokens: 256,
        output_tokens: 2,
        page_hashes: (100..104).collect(),
    };
    let mut on = spec(1024);
    on.decode_radix_cache = true;
    let reqs = vec![req(0, 0.0, 100, 2), req(1, 1000.0, 200, 600), b];
    let (m, _) = replay_pd(&cfg(), &on, None, reqs).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert_eq!(pd.decode_prefix_tokens, 0);
    assert_eq!(pd.decode_overflow_steps, 0);
    assert_eq!(pd.decode_peak_tokens, 896);
}

/// `replay scenarios/pd-deepseek-v3-h200.yaml` with `--set` each of `sets`.
fn pd_v3(sets: &[&str]) -> std::process::Output {
    let mut args = vec!["replay", "scenarios/pd-deepseek-v3-h200.yaml"];
    for s in sets {
        args.extend(["--set", s]);
    }
    run(&args, &repo("."))
}

/// `scenarios/pd-deepseek-v3-h200.yaml` with the decode servers' radix cache and no
/// HiCache on them: the text says how much of the prompts' KV the decode servers
/// already held (this Mooncake trace at half speed keeps the decode pools nearly full
/// of running requests, so little: 2.65 %), and the status says what the decode tree
/// leaves out. With the launch's HiCache on them too (the default: the launch is theirs
/// too) their host tier holds what their pools lose: 16.75 % is not sent, 11.44 points
/// of it restored from host. DeepSeek-V4's decode tree is refused, naming the key, and
/// so is HiCache without the radix cache.
#[test]
fn the_pd_scenario_with_a_decode_radix_cache() {
    let o = pd_v3(&[
        "runtime.pd.decode_radix_cache=true",
        "runtime.pd.decode_hicache=false",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "PD decode radix cache: 1621824 of 61194628 prompt tokens (2.65 %) already on their decode server, not sent",
        "KV transfer 0.051 s",
        "PD decode: 290864 steps, mean batch 2.03, peak KV 715072 tokens per rank, 0 steps over the pool",
        "PD replay with the decode servers' radix cache: a request's prompt pages go into its decode server's tree when it joins the running batch, its output's never",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
    assert!(!t.contains("PD decode HiCache"), "{t}");
    let o = pd_v3(&["runtime.pd.decode_radix_cache=true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "PD decode radix cache: 10251264 of 61194628 prompt tokens (16.75 %) already on their decode server, not sent",
        "PD decode HiCache: 7001024 of them restored from the decode servers' host tier; 745055 pages backed up to it; 0 restores SGLang would fail (sent by the prefill server instead)",
        "KV transfer 0.026 s",
        "PD replay with HiCache on the decode servers: their host tier is modelled",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
    let o = pd_v3(&["runtime.pd.decode_hicache=true"]);
    exit2(
        &o,
        &[
            "runtime.pd.decode_hicache",
            "needs the decode servers' radix cache",
        ],
    );
    // Without --hicache-ratio on a 600 GB host, the decode server's start-up auto-sizes
    // its host pool (0.5.21+: ratio 2 cut to 0.875, 634,368 tokens a rank), and its host
    // tier holds less than at ratio 2.
    let o = pd_v3(&[
        "runtime.pd.decode_radix_cache=true",
        "server.hicache_ratio=null",
        "node.host_dram=600GB",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    let want = "PD decode radix cache: 5753024 of 61194628 prompt tokens (9.40 %)";
    assert!(t.contains(want), "missing {want:?} in\n{t}");
    // buffer_only on a decode server: SGLang's ValueError from 0.5.21.
    let o = pd_v3(&[
        "runtime.pd.decode_radix_cache=true",
        "server.hicache_host_memory_mode=buffer_only",
        "server.hicache_storage_backend=file",
    ]);
    exit2(
        &o,
        &[
            "runtime.pd.decode_hicache",
            "buffer_only is not supported on decode instances",
        ],
    );
    let o = run(
        &[
            "replay",
            "scenarios/pd-deepseek-v4-flash-h200.yaml",
            "--set",
            "runtime.pd.decode_radix_cache=true",
        ],
        &repo("."),
    );
    exit2(
        &o,
        &[
            "runtime.pd.decode_radix_cache",
            "SGLang 0.5.23 raises ValueError: \"--disaggregation-decode-enable-radix-cache with DeepSeek-V4 requires the unified KV layout",
        ],
    );
}

/// A request's prompt goes into its decode server's tree when it joins the running batch
/// (`process_prebuilt` → `checkpoint_kv_cache`), not at its finish: B at 1 s, extending
/// the prompt of A, which decodes for 20 s, finds A's 4 pages and is sent its own 4.
#[test]
fn the_decode_tree_holds_a_running_requests_prompt() {
    let b = Request {
        id: 1,
        arrival_ns: 1_000_000_000,
        input_tokens: 512,
        output_tokens: 2,
        page_hashes: (100..108).collect(),
    };
    let mut on = spec(1 << 20);
    on.decode_radix_cache = true;
    let (m, _) = replay_pd(&cfg(), &on, None, vec![req(0, 0.0, 100, 1000), b]).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert_eq!(
        (pd.decode_prefix_tokens, pd.decode_prompt_tokens),
        (256, 768)
    );
    assert!((pd.transfer_mean_s - 0.003_355_443).abs() < 1e-12);
}

/// What SGLang refuses or the decode tree does not model, with the decode radix cache:
/// a speculative algorithm by release (0.5.21 takes only DSPARK; 0.5.23 takes NEXTN, as
/// EAGLE), a sliding-window model's and a hybrid Mamba model's decode tree.
#[test]
fn the_decode_radix_cache_refusals() {
    let d = tempfile::tempdir().unwrap();
    let trace = repo("traces/synthetic_trace.jsonl");
    let write = |model: &str, flags: &str, sglang: &str| {
        let text = format!(
            "name: pd\nsglang: {sglang}\nnode: hgx-h200\nmodel: {model}\nserver:\n  launch: python -m sglang.launch_server --model-path {model} --tp 8 --disaggregation-mode prefill {flags}\nmemory:\n  host_other_used: 0GB\nruntime:\n  trace: {}\n  max_requests: 20\n  pd: {{decode_engines: 1, decode_radix_cache: true}}\n  replay: {{timing: on}}\n",
            trace.display()
        );
        std::fs::write(d.path().join("s.yaml"), text).unwrap();
    };
    let nextn = "--speculative-algorithm NEXTN";
    write("deepseek-ai/DeepSeek-V3", nextn, "0.5.21");
    exit2(
        &run(&["replay", "s.yaml"], d.path()),
        &[
            "runtime.pd.decode_radix_cache",
            "SGLang 0.5.21 raises ValueError: \"--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding (--speculative-algorithm NEXTN)\"",
        ],
    );
    write("deepseek-ai/DeepSeek-V3", nextn, "0.5.23");
    let o = run(&["replay", "s.yaml"], d.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("PD decode radix cache: "),
        "{}",
        stdout(&o)
    );
    for (model, component) in [
        (
            "openai/gpt-oss-120b",
            "a sliding-window model's SWA component",
        ),
        (
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "a hybrid model's Mamba component",
        ),
    ] {
        write(model, "", "0.5.23");
        exit2(
            &run(&["replay", "s.yaml"], d.path()),
            &[
                "runtime.pd.decode_radix_cache",
                &format!("a decode server's radix cache with {component} is not modelled"),
            ],
        );
    }
    // What SGLang itself refuses, by release (`kv_cache_builder.py`).
    for (model, flags, sglang, says) in [
        (
            "openai/gpt-oss-120b",
            "",
            "0.5.18",
            "is incompatible with sliding window attention (SWA) models",
        ),
        (
            "openai/gpt-oss-120b",
            "",
            "0.5.20",
            "requires the unified radix tree (set SGLANG_ENABLE_UNIFIED_RADIX_TREE=1)",
        ),
        (
            "openai/gpt-oss-120b",
            "--enable-hierarchical-cache",
            "0.5.23",
            "currently supports only device-resident cache and is incompatible with --enable-hierarchical-cache",
        ),
        (
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "",
            "0.5.20",
            "is incompatible with Mamba/SSM models",
        ),
    ] {
        write(model, flags, sglang);
        let o = run(&["replay", "s.yaml"], d.path());
        exit2(
            &o,
            &[
                "runtime.pd.decode_radix_cache",
                &format!("SGLang {sglang} raises ValueError"),
                says,
            ],
        );
        assert!(!stderr(&o).contains("not modelled"), "{}", stderr(&o));
    }
}

/// A long prompt's KV goes chunk by chunk (`send_kv_chunk`): the Mooncake trace's first
/// request (40,160 tokens, five 8,192-token chunks on DeepSeek-V3's H200 table) at 1 GB/s
/// a rank waits 0.522 s after its 4.068 s prefill (the request's fixed 6 ms way
/// through the server is before, in the decode server's preallocation wait) for the last chunk's pages, where the
/// whole prompt after the last chunk took 2.824 s.
#[test]
fn a_long_prompt_is_sent_chunk_by_chunk() {
    let o = run(
        &[
            "replay",
            "scenarios/pd-deepseek-v3-h200.yaml",
            "--set",
            "runtime.max_requests=1",
            "--set",
            "runtime.pd.transfer_bandwidth=1GB/s",
        ],
        &repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains(
            "decode preallocation wait 0.006 s (0.1 %) + prefill server 4.068 s (88.5 %) + KV transfer 0.522 s (11.4 %; 1.00 GB/s per rank)"
        ),
        "{t}"
    );
}

/// HiCache on the decode server (`enable_decode_hicache`): the decode tree of
/// `the_decode_radix_cache_gives_its_pages_to_running_requests` with a 4,096-token host
/// tier behind it. A's 4 pages are backed up to host when A joins the running batch
/// (write_through); C's growth evicts them from the device to the host. B at 20 s,
/// extending A's prompt (8 pages), finds A's 4 on the host: they are promised to the
/// prefill server (`decode_prefix_len` = l1 + l2), which sends only B's own 4 (TTFT
/// 12.8 + 33.554432 ms at 1 GB/s, as with a device hit), and loaded back onto the decode
/// device meanwhile (33,554,432 B at 55 GB/s × 0.85, 717,742 ns, plus 32 layers × a
/// 6.67 µs run: 931,182 ns, long over before the transfer). Without the host tier B is
/// sent whole (67.108864 ms). At 0.2 GB/s H2D the restore (197,379,012 + 213,440 ns)
/// outlasts the transfer, and B runs when it ends: TTFT 197,592,452 ns from its
/// preallocation at its arrival. 12 pages backed up: A's, C's and B's own 4.
#[test]
fn a_decode_servers_hicache_restores_what_its_device_lost() {
    let b = Request {
        id: 2,
        arrival_ns: 20_000_000_000,
        input_tokens: 512,
        output_tokens: 2,
        page_hashes: (100..108).collect(),
    };
    let reqs = || vec![req(0, 0.0, 100, 2), req(1, 1000.0, 200, 600), b.clone()];
    let mut on = spec(1024);
    on.transfer_bandwidth = Bandwidth(1e9);
    on.decode_radix_cache = true;
    on.decode_hicache_on = true;
    on.decode_host_tokens = 4096;
    let (m, _) = replay_pd(&cfg(), &on, None, reqs()).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert!(pd.decode_hicache);
    assert_eq!(
        (
            pd.decode_prefix_tokens,
            pd.decode_host_prefix_tokens,
            pd.decode_prompt_tokens
        ),
        (256, 256, 1024)
    );
    assert_eq!((pd.decode_backup_pages, pd.decode_restore_failed), (12, 0));
    assert_eq!(pd.decode_overflow_steps, 0);
    assert_eq!(m.ttft_p99_s, Some(0.046_354_432));
    assert!((pd.transfer_mean_s - 0.033_554_432).abs() < 1e-12);

    let mut off = on.clone();
    off.decode_hicache_on = false;
    let (m, _) = replay_pd(&cfg(), &off, None, reqs()).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert!(!pd.decode_hicache);
    assert_eq!((pd.decode_prefix_tokens, pd.decode_backup_pages), (0, 0));
    assert_eq!(m.ttft_p99_s, Some(0.067_108_864));

    let mut slow = cfg();
    slow.links.h2d_bandwidth = Bandwidth(0.2e9);
    let (m, _) = replay_pd(&slow, &on, None, reqs()).unwrap();
    let pd = m.pd.as_ref().unwrap();
    assert_eq!(pd.decode_host_prefix_tokens, 256);
    assert_eq!(m.ttft_p99_s, Some(0.197_592_452));
    // B waited 197,592,452 − 46,354,432 ns past its transfer's end.
    assert!((pd.first_token_wait_mean_s - (0.197_592_452 - 0.046_354_432) / 3.0).abs() < 1e-12);
}

/// Which requests a decode server's restore holds back, by release
/// (`_process_hicache_local_restores`). A 2,048-token decode pool: C (1,700 out) grows
/// to 31 pages and evicts A's 4 to the host; B at 40 s restores them at 0.2 GB/s H2D
/// (197,592,452 ns, as above). D at 40.001 s, 4 pages nothing holds, is prefilled after
/// B (12.8 → 25.6 ms) and its transfer queued behind B's (46.354432 → 79.908864 ms):
/// TTFT 78.908864 ms where a request waits for its own restore only (0.5.14–0.5.22);
/// 0.5.23 binds every pending request to the newest load event, B's restore, which
/// ends at 40.197592452 s: D's TTFT 196.592452 ms.
#[test]
fn a_decode_restore_holds_back_the_requests_behind_it_in_0_5_23() {
    use hicache_sim::release::DecodeRestoreGate;
    let b = Request {
        id: 2,
        arrival_ns: 40_000_000_000,
        input_tokens: 512,
        output_tokens: 2,
        page_hashes: (100..108).collect(),
    };
    let reqs = vec![
        req(0, 0.0, 100, 2),
        req(1, 1000.0, 200, 1700),
        b,
        req(3, 40_001.0, 300, 2),
    ];
    let mut on = spec(2048);
    on.transfer_bandwidth = Bandwidth(1e9);
    on.decode_radix_cache = true;
    on.decode_hicache_on = true;
    on.decode_host_tokens = 4096;
    // The mean wait from a transfer's end to the first token, over the four: B's
    // 197.592452 − 46.354432 ms, and D's 196.592452 − 78.908864 ms under 0.5.23's gate.
    let first_wait = |gate| {
        let mut c = cfg();
        c.links.h2d_bandwidth = Bandwidth(0.2e9);
        c.scheduler.decode_restore_gate = gate;
        let (m, _) = replay_pd(&c, &on, None, reqs.clone()).unwrap();
        let pd = m.pd.unwrap();
        assert_eq!(pd.decode_host_prefix_tokens, 256);
        assert_eq!(m.ttft_p99_s, Some(0.197_592_452));
        pd.first_token_wait_mean_s
    };
    let b = 0.197_592_452 - 0.046_354_432;
    let d = 0.196_592_452 - 0.078_908_864;
    assert!((first_wait(DecodeRestoreGate::OwnCopy) - b / 4.0).abs() < 1e-12);
    assert!((first_wait(DecodeRestoreGate::LatestCopy) - (b + d) / 4.0).abs() < 1e-12);
}
