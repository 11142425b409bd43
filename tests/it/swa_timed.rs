//! The timed replay on the SWA tree (`runtime::timed::swa`): requests overlapping on the
//! clock in SGLang 0.5.23's tree with its SWA component.
//!
//! - Spaced so that no two overlap, it is the timing-off replay request by request, so
//!   it reproduces every SWA golden file of SGLang's own tree;
//! - overlapping, a request admitted in the same batch as an identical prompt misses
//!   (the first is not in the tree yet), and one that waits for a free running slot
//!   starts when the decode ahead of it ends: figures worked out by hand below.

use hicache_sim::runtime::{
    DecodeTimeline, ReplayConfig, RequestTime, Timing, replay, replay_timed,
};
use hicache_sim::workload::Request;

use crate::support::{bundled_trace, golden_txt_files, swa_golden, swa_replay_config};

/// `cfg` timed, with the fixed speeds (20,000 prefill tokens/s, 50 decode tokens/s)
/// and no chunked prefill unless given.
fn timed(mut cfg: ReplayConfig) -> ReplayConfig {
    cfg.measurement.timing = Timing::On;
    cfg
}

/// Requests `i` at `i × 1000 s`: longer apart than any bundled request's prefill and
/// decode at the fixed speeds, so none overlaps the next.
fn spaced(reqs: Vec<Request>) -> Vec<Request> {
    reqs.into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            r.arrival_ns = i as u64 * 1_000_000_000_000;
            r
        })
        .collect()
}

#[test]
fn spaced_out_requests_reproduce_every_swa_golden_file() {
    let files = golden_txt_files("swa_tree");
    assert_eq!(files.len(), 40);
    let mut bad = Vec::new();
    for p in &files {
        let g = swa_golden(p);
        let cfg = timed(g.cfg.clone());
        let reqs = spaced(bundled_trace(&g.trace, g.block, cfg.capacities.page_size));
        let (_, mut times) = replay_timed(&cfg, reqs, &[]).unwrap();
        times.sort_by_key(|t| t.index);
        assert_eq!(times.len(), g.pages.len(), "{}", g.name);
        let ps = u64::from(cfg.capacities.page_size);
        if let Some((i, t)) = times
            .iter()
            .enumerate()
            .find(|(i, t)| t.cached_tokens / ps != g.pages[*i])
        {
            bad.push(format!(
                "{}: request {i}: {} cached tokens, SGLang {} pages",
                g.name, t.cached_tokens, g.pages[i]
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Overlapping on the clock at their own arrivals, under every golden point's pools and
/// chunk (requests waiting for room, chunked admissions retried), every page is the
/// tree's once all requests are released (checked at the end with `debug_checks`: a
/// row's page leaked on any path panics).
///
/// Where a decode's pages do not fit beside the running requests (no retraction in the
/// model) the replay stops saying so; the prefill-only points (no decode KV) all run.
#[test]
fn overlapping_requests_leave_only_the_trees_pages() {
    let (mut ran, mut prefill_only) = (0, 0);
    for p in &golden_txt_files("swa_tree") {
        let g = swa_golden(p);
        let cfg = timed(g.cfg.clone());
        let decode = cfg.capacities.swa.unwrap().decode;
        let reqs = bundled_trace(&g.trace, g.block, cfg.capacities.page_size);
        match replay_timed(&cfg, reqs, &[]) {
            Ok((m, times)) => {
                assert_eq!(times.len(), g.pages.len(), "{}", g.name);
                assert!(m.device_hit_tokens < m.input_tokens, "{}", g.name);
                ran += 1;
                prefill_only += u32::from(!decode);
            }
            Err(e) => {
                let e = e.to_string();
                assert!(decode && e.contains("retract_decode"), "{}: {e}", g.name);
            }
        }
    }
    assert_eq!(prefill_only, 20);
    assert!(ran >= 20, "{ran}");
}

/// 256-token pages, window 128, 100 full and 20 SWA pages: room for every request here.
fn small() -> ReplayConfig {
    let mut c = timed(swa_replay_config(256, 100, 20, 128, true, true));
    c.scheduler.compute.chunked_prefill_size = 0;
    c
}

/// A request of `input` tokens whose pages are `first ..` (`input / 256` of them).
fn req_at(id: u64, at_s: f64, first: u64, input: u32, output: u32) -> Request {
    Request {
        id,
        arrival_ns: (at_s * 1e9) as u64,
        input_tokens: input,
        output_tokens: output,
        page_hashes: (first..first + u64::from(input / 256)).collect(),
    }
}

/// A request of the one shared prompt (pages `1 ..`).
fn req(id: u64, at_s: f64, input: u32, output: u32) -> Request {
    req_at(id, at_s, 1, input, output)
}

fn by_index(mut t: Vec<RequestTime>) -> Vec<RequestTime> {
    t.sort_by_key(|t| t.index);
    t
}

/// A, a 2,048-token prompt of its own, prefills from 0 to 102.4 ms (2,048 / 20,000
/// s). B and C, the same 1,024-token prompt, arrive at 10 ms, wait, and are admitted
/// together into the next batch, before B is inserted: C misses B's prefix. Their batch
/// takes 2,048 / 20,000 s: both first tokens at 204.8 ms. D, the same prompt at 1 s,
/// hits the 3 whole pages under its `input − 1` tokens (768 tokens) and prefills 256:
/// 12.8 ms. Timing off (one request at a time), C would have hit too.
#[test]
fn a_request_batched_with_its_prefix_misses_it() {
    let reqs = vec![
        req_at(0, 0.0, 1000, 2048, 1),
        req(1, 0.01, 1024, 1),
        req(2, 0.01, 1024, 1),
        req(3, 1.0, 1024, 1),
    ];
    let cfg = small();
    let (m, t) = replay_timed(&cfg, reqs.clone(), &[]).unwrap();
    let t = by_index(t);
    assert_eq!(
        t.iter().map(|t| t.cached_tokens).collect::<Vec<_>>(),
        [0, 0, 0, 768]
    );
    assert_eq!(t[0].first_token_ns, 102_400_000);
    assert_eq!(t[1].first_token_ns, 204_800_000);
    assert_eq!(t[2].first_token_ns, 204_800_000);
    assert_eq!(t[3].first_token_ns - t[3].arrival_ns, 12_800_000);
    assert_eq!(m.device_hit_tokens, 768);
    // TTFTs 0.1024, 0.1948, 0.1948, 0.0128 s: the median (nearest rank) is the second.
    assert_eq!(m.ttft_p50_s, Some(0.1024));

    let mut off = cfg.clone();
    off.measurement.timing = Timing::Off;
    assert_eq!(replay(&off, reqs).unwrap().device_hit_tokens, 2 * 768);
}

/// With one running slot, B waits for A's whole decode: A prefills 1,024 tokens (51.2
/// ms) and decodes 10 more tokens at 50 tokens/s (200 ms: TPOT 20 ms); B, admitted at
/// A's release (251.2 ms), hits A's 3 pages and prefills 256 tokens (12.8 ms): TTFT
/// 264 ms.
#[test]
fn a_request_waits_for_the_running_slot_and_then_hits() {
    let mut cfg = small();
    cfg.scheduler.max_running_requests = 1;
    let (m, t) =
        replay_timed(&cfg, vec![req(0, 0.0, 1024, 11), req(1, 0.0, 1024, 1)], &[]).unwrap();
    let t = by_index(t);
    assert_eq!(t[0].first_token_ns, 51_200_000);
    assert_eq!(t[0].finish_ns, 251_200_000);
    assert_eq!(t[1].cached_tokens, 768);
    assert_eq!(t[1].first_token_ns, 264_000_000);
    assert!((m.tpot_mean_s.unwrap() - 0.020).abs() < 1e-12);
    assert_eq!(m.ttft_p99_s, Some(0.264));
}

/// A request the pools cannot hold with nothing running is SGLang's "Prefill out of
/// memory"; decode steps interleaved with the prefill are refused, naming why.
#[test]
fn what_the_timed_swa_tree_cannot_run_is_refused() {
    let cfg = small();
    let e = replay(&cfg, vec![req(0, 0.0, 256 * 101, 1)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("Prefill out of memory"), "{e}");
    let mut c = small();
    c.scheduler.decode_timeline = DecodeTimeline::Interleaved;
    let e = replay(&c, vec![req(0, 0.0, 1024, 1)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("runtime.swa"), "{e}");
    assert!(e.contains("decodes beside the prefill only"), "{e}");
    let mut c = small();
    c.scheduler.compute.chunked_prefill_size = 128;
    let e = replay(&c, vec![req(0, 0.0, 1024, 1)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("is under one page (256 tokens)"), "{e}");
}

/// DP-attention ranks on one clock (`timed::lockstep`), each its own SWA tree: spaced
/// out, two ranks hit what the two round-robin shares hit replayed alone, timing off.
#[test]
fn dp_ranks_in_lockstep_hit_what_their_shares_hit_alone() {
    let g = swa_golden(&golden_txt_files("swa_tree")[0]);
    let reqs = spaced(bundled_trace(&g.trace, g.block, g.cfg.capacities.page_size));
    let mut cfg = timed(g.cfg.clone());
    cfg.capacities.dp_ranks = 2;
    let m = replay(&cfg, reqs.clone()).unwrap();
    let mut alone = 0;
    for r in 0..2 {
        let mut c = g.cfg.clone();
        c.measurement.timing = Timing::Off;
        let share: Vec<Request> = reqs
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 2 == r)
            .map(|(_, q)| q.clone())
            .collect();
        alone += replay(&c, share).unwrap().device_hit_tokens;
    }
    assert!(alone > 0);
    assert_eq!(m.device_hit_tokens, alone);
    assert_eq!(m.ranks.len(), 2);
}

/// Two ranks' forwards end together: A (2,048 tokens, rank 0) and B (1,024 tokens,
/// rank 1) arrive at 0 and form one step, which ends when A's forward does (102.4 ms);
/// B's own forward took 51.2 ms and it waited 51.2 ms for A's (its TTFT 102.4 ms).
#[test]
fn dp_ranks_step_together() {
    let mut cfg = small();
    cfg.capacities.dp_ranks = 2;
    let m = replay(
        &cfg,
        vec![req_at(0, 0.0, 1000, 2048, 1), req(1, 0.0, 1024, 1)],
    )
    .unwrap();
    assert_eq!(m.ttft_p99_s, Some(0.1024));
    assert_eq!(m.ttft_p50_s, Some(0.1024));
    let b = m.ttft_breakdown.unwrap();
    assert!((b.dp_wait_s - 0.0256).abs() < 1e-12, "{b:?}");
    assert!((b.forward_s - 0.0768).abs() < 1e-12, "{b:?}");
}
