//! KV growth during decode, `PrefillAdder`'s reservation for output tokens and
//! `retract_decode` in the timed replay (`runtime::timed::kv_budget`), hand-computed on
//! pools of a few 4-token pages with fixed speeds: prefill 1,000 tokens/s (8 prompt
//! tokens: 8 ms), decode 100 tokens/s (10 ms a step). No host tier (`l2_pages: 0`: a
//! node evicted from the device is gone).

use hicache_sim::runtime::{
    Capacities, DecodeMemory, DecodeTimeline, Measurement, ReplayConfig, Scheduler, Timing, replay,
    replay_timed,
};
use hicache_sim::workload::Request;
use proptest::prelude::*;

/// A prompt of `pages` whole 4-token pages (keys `first..`) and `extra` tokens more.
fn req(id: u64, at_ms: u64, first: u64, pages: u64, extra: u32, out: u32) -> Request {
    Request {
        id,
        arrival_ns: at_ms * 1_000_000,
        input_tokens: pages as u32 * 4 + extra,
        output_tokens: out,
        page_hashes: (first..first + pages).collect(),
    }
}

fn cfg(l1_pages: u64, timeline: DecodeTimeline) -> ReplayConfig {
    ReplayConfig {
        capacities: Capacities {
            page_size: 4,
            l1_pages,
            l2_pages: 0,
            bytes_per_token: 1,
            ..Default::default()
        },
        scheduler: Scheduler {
            prefill_tokens_per_s: 1000.0,
            decode_tokens_per_s: 100.0,
            decode_timeline: timeline,
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

/// Two requests of 8 prompt tokens (2 pages) and 20 output tokens on 11 pages,
/// `decode_timeline: interleaved`, `ignore_eos: false` and `schedule_conservativeness:
/// 0` (so `new_token_ratio` is 0 and a running request reserves nothing).
/// - t = 0: R0 is admitted (`8 + 20 + 4 = 32 < 44` free tokens); its reservation leaves
///   `9 × 4 − 24 = 12 > 0`. Prefill 0-8 ms.
/// - t = 8 ms: R1 (arrived at 1 ms) is admitted (`32 < 9 × 4`, R0 reserving `19 × 0`);
///   prefill 8-16 ms. 7 pages free.
/// - From 16 ms both decode, one step per 10 ms; a request takes a page when its KV
///   length `8 + out` crosses a page boundary (`out` = 1, 5, 9, 13, 17): free 5, 3, 1;
///   at out = 13 (step 13, starting at 16 + 120 = 136 ms) the step needs 2 pages with 1
///   free and nothing evictable: `retract_decode` pops the last of the length order —
///   equal outputs and prompts, so the later admitted, R1 — freeing its 3 decode pages,
///   then `evict_from_tree_cache(1 × 20 tokens = 5 pages)` evicts R1's unlocked prompt
///   (2 pages): 6 free, R0's page fits. One retraction; the ratio becomes
///   `min(1, (13 + 20) / (20 + 1)) = 1`.
/// - R1 waits (`(8 + 13) + 7 + 4 = 32` against at most 20 − (20 − out) tokens) until
///   R0's last step ends at 16 + 19 × 10 = 206 ms; then it prefills its prompt and its
///   13 outputs (21 tokens, 206-227 ms; the prompt was evicted) and decodes the last 6
///   tokens until 287 ms.
/// TTFT: 8 and 15 ms (R1's first token came at 16 ms, before its retraction). TPOT:
/// (206 − 8) / 19 and (287 − 16) / 19 ms.
#[test]
fn two_long_outputs_on_a_small_pool_retract_one_request_at_step_13() {
    let mut c = cfg(11, DecodeTimeline::Interleaved);
    c.scheduler.ignore_eos = false;
    c.scheduler.schedule_conservativeness = 0.0;
    let trace = vec![req(0, 0, 100, 2, 0, 20), req(1, 1, 200, 2, 0, 20)];
    let (m, times) = replay_timed(&c, trace.clone(), &[]).unwrap();
    assert_eq!((m.retracted_requests, m.retraction_steps), (1, 1));
    assert_eq!(m.decode_oom_aborts, 0);
    assert_eq!(m.ttft_p50_s, Some(0.008));
    assert_eq!(m.ttft_p99_s, Some(0.015));
    assert_eq!(m.makespan_s, Some(0.287));
    let finish: Vec<(u64, u64)> = times.iter().map(|t| (t.index, t.finish_ns)).collect();
    assert_eq!(finish, vec![(0, 206_000_000), (1, 287_000_000)]);
    let tpot = (198.0 / 19.0 + 271.0 / 19.0) / 2.0 / 1e3;
    assert!(
        (m.tpot_mean_s.unwrap() - tpot).abs() < 1e-12,
        "{:?}",
        m.tpot_mean_s
    );
    // The hits are counted once: 16 prompt tokens, all missed.
    assert_eq!((m.input_tokens, m.miss_tokens), (16, 16));
    // The old figure: nothing grows, nothing is retracted; both decode from 16 ms, 19
    // steps: 206 ms.
    c.scheduler.decode_memory = DecodeMemory::PromptOnly;
    let old = replay(&c, trace).unwrap();
    assert_eq!(old.retracted_requests, 0);
    assert_eq!(old.makespan_s, Some(0.206));
}

/// Admission reserves the running requests' future tokens. 20 pages; R0 (8 prompt
/// tokens, 40 output) at 0, R1 (8 prompt tokens, 20 output) at 1 ms, decode beside the
/// prefill. At 8 ms R0 has its first token and holds one decode page (its KV reaches 9
/// tokens at its first step): 17 pages free, 68 tokens, nothing evictable. R1 asks for
/// `8 + 20 + 4 = 32` tokens against `68 − 39 × ratio`:
/// - `ignore_eos` (the default: ratio 1): `68 − 39 = 29` — refused; it waits for R0's
///   decode to end at 8 + 39 × 10 = 398 ms, prefills until 406 ms: TTFT 405 ms;
/// - `ignore_eos: false`, ratio 0.7 (`SGLANG_INIT_NEW_TOKEN_RATIO`):
///   `68 − 27.3 = 40.7` — admitted at 8 ms: TTFT 15 ms;
/// - `ignore_eos: false`, `schedule_conservativeness: 2` (ratio min(1.4, 1) = 1):
///   refused, TTFT 405 ms;
/// - `decode_memory: prompt_only`: admitted at 8 ms, TTFT 15 ms.
#[test]
fn the_reservation_refuses_a_request_by_the_new_token_ratio() {
    let trace = || vec![req(0, 0, 100, 2, 0, 40), req(1, 1, 200, 2, 0, 20)];
    let ttft_r1 = |c: &ReplayConfig| replay(c, trace()).unwrap().ttft_p99_s.unwrap();
    let base = cfg(20, DecodeTimeline::BesidePrefill);
    assert_eq!(ttft_r1(&base), 0.405);
    let mut c = base.clone();
    c.scheduler.ignore_eos = false;
    assert_eq!(ttft_r1(&c), 0.015);
    c.scheduler.schedule_conservativeness = 2.0;
    assert_eq!(ttft_r1(&c), 0.405);
    let mut c = base.clone();
    c.scheduler.decode_memory = DecodeMemory::PromptOnly;
    assert_eq!(ttft_r1(&c), 0.015);
    // 0.5.14–0.5.21 reserve `new_token_ratio` of an `ignore_eos` request's remaining
    // output too (`release::RunningOffset`): admitted at 8 ms under 0.5.21's rules,
    // refused under 0.5.22's.
    for (r, ttft) in [
        (hicache_sim::release::Release::V0_5_21, 0.015),
        (hicache_sim::release::Release::V0_5_22, 0.405),
    ] {
        let mut c = base.clone().with_release(&r.rules().controller);
        c.scheduler.ignore_eos = true;
        assert_eq!(ttft_r1(&c), ttft, "{r:?}");
    }
}

/// A `max_new_tokens` below a request's trace output stops it there (`FINISH_LENGTH`);
/// 0 and a negative `schedule_conservativeness` are refused.
#[test]
fn max_new_tokens_caps_the_output_and_bad_values_are_refused() {
    let mut c = cfg(20, DecodeTimeline::BesidePrefill);
    c.scheduler.max_new_tokens = Some(11);
    // 8 ms prefill + 10 decode steps of 10 ms.
    let m = replay(&c, vec![req(0, 0, 100, 2, 0, 40)]).unwrap();
    assert_eq!(m.makespan_s, Some(0.108));
    c.scheduler.max_new_tokens = Some(0);
    let e = replay(&c, Vec::new()).unwrap_err().to_string();
    assert!(e.contains("max_new_tokens"), "{e}");
    c.scheduler.max_new_tokens = None;
    c.scheduler.schedule_conservativeness = -1.0;
    let e = replay(&c, Vec::new()).unwrap_err().to_string();
    assert!(e.contains("schedule_conservativeness"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On any small pool, both timelines: every request finishes once, after its first
    /// token, and the device never holds more pages than the pool (the tree's debug
    /// checks re-derive `device_used <= l1_pages` after every operation).
    #[test]
    fn device_pages_never_exceed_the_pool(
        l1 in 6u64..40,
        interleaved in any::<bool>(),
        ignore_eos in any::<bool>(),
        reqs in prop::collection::vec((0u64..30, 0u64..5, 1u64..5, 0u32..4, 1u32..60), 1..12),
    ) {
        let timeline = if interleaved { DecodeTimeline::Interleaved } else { DecodeTimeline::BesidePrefill };
        let mut c = cfg(l1, timeline);
        c.scheduler.ignore_eos = ignore_eos;
        let mut at = 0;
        let trace: Vec<Request> = reqs
            .iter()
            .enumerate()
            .map(|(i, &(gap, key, pages, extra, out))| {
                at += gap;
                req(i as u64, at, key * 100, pages, extra, out)
            })
            .collect();
        let (m, times) = replay_timed(&c, trace.clone(), &[]).unwrap();
        prop_assert_eq!(times.len(), trace.len());
        for t in &times {
            prop_assert!(t.finish_ns >= t.first_token_ns);
        }
        prop_assert!(m.final_device_pages <= l1);
    }
}
