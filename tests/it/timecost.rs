//! What a hit buys in time: the compute-cost model against hand-computed
//! cases, and the replayable published HiCache results of `tests/bench_corpus/` (#04,
//! #05, #06, #07, #08, #09, #10, #11, #17, #18, #19, #20) replayed through the timed replay with
//! closed-loop clients. Cases outside 20 % of the published figure are asserted where
//! they are (so a model change shows), with the reason next to the assertion.
//!
//! Bounds: the corpus figures are asserted within the error the docs table states
//! (the simulated values are printed by `cargo test --test it timecost -- --nocapture`);
//! `bench_corpus_table_in_the_docs` writes that table, "Published results replayed" of
//! `docs/src/fidelity/time-costs.md`, from the same runs.

use hicache_sim::cache::{PrefetchPolicy, WritePolicy};
use hicache_sim::model::{ModelQuery, catalogue, resolve};
use hicache_sim::pipeline::ClockDefaults;
use hicache_sim::release::copy_kernel::LoadBackKernel;
use hicache_sim::runtime::cost::bench::{self, BenchResult, Multiturn};
use hicache_sim::runtime::cost::roofline::{ModelFacts, Roofline, gpu};
use hicache_sim::runtime::cost::{Compute, ComputeSource};
use hicache_sim::runtime::frontend::{Frontend, REQUEST_OVERHEAD_DEFAULT};
use hicache_sim::runtime::{
    Capacities, DecodeTimeline, Measurement, ReplayConfig, Scheduler, Timing, TreePolicy, replay,
};
use hicache_sim::units::{Bandwidth, Duration, GB};
use hicache_sim::wheel::Release;
use hicache_sim::workload::Request;

fn roofline(
    hf_id: &str,
    gpu_name: &str,
    tp: u32,
    low_precision: bool,
    weight_bytes: f64,
    kv_rank: f64,
) -> Roofline {
    let m = resolve(&ModelQuery {
        name: Some(hf_id),
        ..Default::default()
    })
    .unwrap();
    let hf = m.hf.expect("a catalogue model");
    let cfg = &catalogue::find(hf_id).unwrap().entry.config;
    let facts = ModelFacts::from_config(cfg, &hf.params, low_precision, weight_bytes, kv_rank);
    Roofline::derive(&facts, gpu(gpu_name).unwrap(), tp)
}

thread_local! {
    /// `compute.hit_cost_per_cached_token` (ns) that [`base`] gives every config built
    /// on this thread: 0 (the corpus as published in the docs table) unless
    /// [`with_hit_cost`] runs the builders under the sensitivity (each `#[test]` runs on
    /// its own thread, so no other test sees it).
    static HIT_COST_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Percent of the measured encode rate [`tokenize`] gives (100; the sensitivity runs
    /// ±25 %), and whether the clients the sources leave unknown (#06, #07) are taken to
    /// send text (`bench_serving`'s random dataset, its default) instead of token ids.
    static TOKENIZE_PCT: std::cell::Cell<u64> = const { std::cell::Cell::new(100) };
    static UNKNOWN_SENDS_TEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// `request_overhead` (ns) that [`base`] gives every config built on this thread:
    /// the scenario default, `runtime::frontend::REQUEST_OVERHEAD_DEFAULT`, unless
    /// [`with_request_overhead`] runs the builders with another (0: the corpus before
    /// the term).
    static REQUEST_OVERHEAD_NS: std::cell::Cell<u64> =
        const { std::cell::Cell::new(REQUEST_OVERHEAD_DEFAULT.0) };
}

/// `f` with every corpus config built by [`base`] charging `ns` of fixed way a request.
fn with_request_overhead<T>(ns: u64, f: impl FnOnce() -> T) -> T {
    let before = REQUEST_OVERHEAD_NS.with(|h| h.replace(ns));
    let out = f();
    REQUEST_OVERHEAD_NS.with(|h| h.set(before));
    out
}

/// `f` with [`tokenize`] at `pct` % of the measured rates, and #06 / #07's clients
/// sending text when `unknown_text`.
fn with_tokenizer<T>(pct: u64, unknown_text: bool, f: impl FnOnce() -> T) -> T {
    let p = TOKENIZE_PCT.with(|h| h.replace(pct));
    let u = UNKNOWN_SENDS_TEXT.with(|h| h.replace(unknown_text));
    let out = f();
    TOKENIZE_PCT.with(|h| h.set(p));
    UNKNOWN_SENDS_TEXT.with(|h| h.set(u));
    out
}

/// The TokenizerManager's encode time per prompt token of the text a corpus client
/// sends (`runtime::frontend`): `tools/costs/tokenize_rate.py`'s measurement with
/// Qwen3's tokenizer and SGLang 0.5.23's `tokenizers` pin (`tokenize_rate.json`, the
/// 32 512-token row of `text`: `probe` = #19 / #20's random single-token words in the
/// chat template, `consecutive_ids` = `bench_multiturn --disable-random-sample` of the
/// text era, `random_ids` = `bench_serving`'s random ids decoded).
fn tokenize(text: &str) -> Duration {
    let m: serde_json::Value =
        serde_json::from_str(include_str!("../../tools/costs/tokenize_rate.json")).unwrap();
    let row = m["texts"][text]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["sent_tokens"] == 32_512)
        .unwrap();
    let ns = row["ns_per_token"].as_u64().unwrap();
    Duration(ns * TOKENIZE_PCT.with(|h| h.get()) / 100)
}

/// #06 / #07: the issue names no client; token ids unless the sensitivity says text.
fn unknown_client() -> Duration {
    if UNKNOWN_SENDS_TEXT.with(|h| h.get()) {
        tokenize("random_ids")
    } else {
        Duration(0)
    }
}

/// `f` with every corpus config built by [`base`] charging `ns` per cached token.
fn with_hit_cost<T>(ns: u64, f: impl FnOnce() -> T) -> T {
    let before = HIT_COST_NS.with(|h| h.replace(ns));
    let out = f();
    HIT_COST_NS.with(|h| h.set(before));
    out
}

/// A timed corpus config. With a modelled clock each request takes the fixed way
/// through the server a scenario charges (`request_overhead`, 6 ms: the scenario
/// pipeline's `ClockDefaults`), HiCache or not, at any TP.
fn base(page_size: u32, bytes_per_token: u64, layers: u32, compute: Compute) -> ReplayConfig {
    let compute = Compute {
        hit_cost_per_cached_token: Duration(HIT_COST_NS.with(|h| h.get())),
        ..compute
    };
    ReplayConfig {
        frontend: Frontend {
            // Under fixed speeds (end-to-end rates) a scenario charges none.
            request_overhead: if matches!(compute.source, ComputeSource::Fixed) {
                Duration(0)
            } else {
                Duration(REQUEST_OVERHEAD_NS.with(|h| h.get()))
            },
            ..Frontend::default()
        },
        capacities: Capacities {
            page_size,
            bytes_per_token,
            num_layers: layers,
            ..Default::default()
        },
        policy: TreePolicy {
            write_policy: WritePolicy::WriteThrough,
            ..Default::default()
        },
        scheduler: Scheduler {
            compute,
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

/// `c`, its tiers set, with HiCache's per-step synchronisation as a scenario sets it
/// (`compute.hicache_step_sync`, `pipeline::ClockDefaults`, `release::step_sync`): a
/// server of `release` whose HiCache counts are reduced over `attn_tp` ranks. 0.5 ms ×
/// the release's all-reduces per scheduler iteration with a host tier, a modelled clock
/// and more than one rank; nothing without a host tier (SGLang runs no
/// `check_hicache_events` without HiCache), so the arms without HiCache keep their
/// figures. An entry whose source states no modelled release takes
/// [`Release::LATEST`], as a scenario without `sglang:` does (one all-reduce a step;
/// 0.5.14–0.5.16 make two, three with L3: the PR branches of B09–B11 predate the merge
/// of sglang PR 30511, so 1 ms a step would be theirs if they ran those rules).
fn step_sync(c: ReplayConfig, release: Release, attn_tp: u32) -> ReplayConfig {
    let overhead = c.frontend.request_overhead;
    let mut c = ClockDefaults::new(release, false, attn_tp).fill(c, &serde_json::Map::new());
    // [`base`]'s (the same default, or a sensitivity's).
    c.frontend.request_overhead = overhead;
    c
}

fn show(name: &str, r: &BenchResult) {
    println!(
        "{name}: ttft mean {:.3} s p50 {:.3} p99 {:.3}, input {:.0} tok/s, hit {:.3}, duration {:.1} s, passes {}\n  per-round ttft {:?}\n  per-round hit {:?}",
        r.ttft_mean_s,
        r.ttft_p50_s,
        r.ttft_p99_s,
        r.input_tok_s,
        r.cache_hit_rate,
        r.duration_s,
        r.passes,
        r.per_round_ttft_mean_s
            .iter()
            .map(|x| (x * 100.0).round() / 100.0)
            .collect::<Vec<_>>(),
        r.per_round_hit_rate
            .iter()
            .map(|x| (x * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>()
    );
}

#[test]
fn fixed_compute_is_unchanged_and_a_table_changes_ttft() {
    // Two 4 096-token requests, no cache: the fixed clock gives 4096/20000 = 204.8 ms
    // for the first TTFT; the GB300 Llama-3.1-70B bf16 TP4 table gives its own.
    let reqs = |n: u64| {
        (0..n)
            .map(|i| Request {
                id: i,
                arrival_ns: 0,
                input_tokens: 4096,
                output_tokens: 1,
                page_hashes: (0..64).map(|j| ((i << 32) | j) + 1).collect(),
            })
            .collect::<Vec<_>>()
    };
    let mut c = base(64, 327_680, 80, Compute::default());
    c.scheduler.max_prefill_tokens = 4096;
    let m = replay(&c, reqs(1)).unwrap();
    assert_eq!(m.ttft_p50_s, Some(0.2048));
    c.scheduler.compute.source = ComputeSource::Table {
        node: "gb300".into(),
        model: "llama-3.1-70b".into(),
        quant: hicache_sim::model::quant::CheckpointQuant::Bf16,
        tp: 4,
    };
    let t = hicache_sim::runtime::cost::table::find(
        "gb300",
        "llama-3.1-70b",
        hicache_sim::model::quant::CheckpointQuant::Bf16,
        4,
    )
    .unwrap();
    let want = (t.prefill_us(&[(4096, 0)]) * 1e3).round() / 1e9;
    let m = replay(&c, reqs(1)).unwrap();
    assert_eq!(m.ttft_p50_s, Some(want));
    // Not the fixed figure: the table's 4K prefill on GB300 is faster than 20K tok/s.
    assert!(want < 0.2048, "{want}");
}

#[test]
fn a_host_hit_costs_its_load_pipelined_with_the_extend() {
    // A 8 192-token prompt whose first 8 128 tokens are a host hit (its device copy
    // evicted by a second prompt), then 64 new tokens: the batch takes
    // max(forward, load) plus one layer's slice, not load + forward.
    // Cheap: asserted through layer_pipelined_end's algebra in the unit tests; here
    // the replay's TTFT of the hit must sit between max(load, forward) and their sum.
    let pages = |tag: u64, n: u64| (0..n).map(|j| ((tag << 32) | j) + 1).collect::<Vec<_>>();
    let mut c = base(
        64,
        327_680,
        80,
        Compute {
            source: ComputeSource::Table {
                node: "hgx-h100".into(),
                model: "llama-3.1-70b".into(),
                quant: hicache_sim::model::quant::CheckpointQuant::Bf16,
                tp: 4,
            },
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    c.capacities.l1_pages = 130;
    c.capacities.l2_pages = 1000;
    let mut a = pages(1, 128);
    let b = pages(2, 128);
    let reqs = vec![
        Request {
            id: 0,
            arrival_ns: 0,
            input_tokens: 8192,
            output_tokens: 1,
            page_hashes: a.clone(),
        },
        Request {
            id: 1,
            arrival_ns: 10_000_000_000,
            input_tokens: 8192,
            output_tokens: 1,
            page_hashes: b,
        },
        Request {
            id: 2,
            arrival_ns: 20_000_000_000,
            input_tokens: 8256,
            output_tokens: 1,
            page_hashes: {
                a.push(((1 << 32) | 128) + 1);
                a
            },
        },
    ];
    let (m, times) = hicache_sim::runtime::replay_timed(&c, reqs, &[]).unwrap();
    assert_eq!(m.host_hit_tokens, 8192, "{m:?}");
    let t = hicache_sim::runtime::cost::table::find(
        "hgx-h100",
        "llama-3.1-70b",
        hicache_sim::model::quant::CheckpointQuant::Bf16,
        4,
    )
    .unwrap();
    let fwd = t.prefill_us(&[(64, 8192)]) * 1e3;
    // 128 pages · 64 tokens · 327 680 B = 2.684 GB at 55 GB/s · 0.85, + 80 runs · 6.67 µs.
    let load = 2_684_354_560.0 / (55e9 * 0.85) * 1e9 + 80.0 * 6670.0;
    // Less the request's fixed way through the server (6 ms).
    let ttft = (times[2].first_token_ns - times[2].arrival_ns - REQUEST_OVERHEAD_DEFAULT.0) as f64;
    assert!(
        ttft >= fwd.max(load) && ttft < fwd + load,
        "ttft {ttft} fwd {fwd} load {load}"
    );
    assert!(
        ttft < fwd.max(load) * 1.02,
        "one layer's slice at most: {ttft}"
    );
}

#[test]
fn a_kernel_load_back_is_bound_by_its_ctas_on_a_c2c_link() {
    // GB300's host link (211.5 GB/s × 0.85) outruns the register copy kernel at 2 CTAs
    // (`release::copy_kernel`, PR #40278: 98.86 GB/s + 8.13 µs per layer launch), not
    // the TMA kernel at 4 CTAs (202.2 GB/s + 8.73 µs). A host hit of 8 192 tokens ×
    // 327 680 B = 2 684 354 560 B over 80 layers, fixed compute (load-back, then the
    // 64 new tokens at 20 000 tok/s = 3.2 ms):
    //   link      80 × 6 670 + 2 684 354 560 / 179.775e9 s = 533 600 + 14 931 746 = 15 465 346 ns
    //   register  80 × 8 130 + 2 684 354 560 / 98.86e9 s   = 650 400 + 27 153 091 = 27 803 491 ns
    //   TMA       80 × 8 730 + 2 684 354 560 / 202.2e9 s   = 698 400 + 13 275 740 = 13 974 140 ns (< link)
    let pages = |tag: u64, n: u64| (0..n).map(|j| ((tag << 32) | j) + 1).collect::<Vec<_>>();
    let mut c = base(64, 327_680, 80, Compute::default());
    c.links.h2d_bandwidth = Bandwidth(211.5 * GB as f64);
    c.capacities.l1_pages = 130;
    c.capacities.l2_pages = 1000;
    let mut again = pages(1, 128);
    again.push(((1 << 32) | 128) + 1);
    let reqs = vec![
        Request {
            id: 0,
            arrival_ns: 0,
            input_tokens: 8192,
            output_tokens: 1,
            page_hashes: pages(1, 128),
        },
        Request {
            id: 1,
            arrival_ns: 10_000_000_000,
            input_tokens: 8192,
            output_tokens: 1,
            page_hashes: pages(2, 128),
        },
        Request {
            id: 2,
            arrival_ns: 20_000_000_000,
            input_tokens: 8256,
            output_tokens: 1,
            page_hashes: again,
        },
    ];
    let ttft = |k: Option<LoadBackKernel>| {
        let mut c = c.clone();
        c.links.load_back_kernel = k;
        let (m, t) = hicache_sim::runtime::replay_timed(&c, reqs.clone(), &[]).unwrap();
        assert_eq!(m.host_hit_tokens, 8192);
        t[2].first_token_ns - t[2].arrival_ns
    };
    assert_eq!(ttft(None), 15_465_346 + 3_200_000);
    assert_eq!(
        ttft(Some(LoadBackKernel::Register2Cta)),
        27_803_491 + 3_200_000
    );
    assert_eq!(ttft(Some(LoadBackKernel::Tma4Cta)), 15_465_346 + 3_200_000);
}

#[test]
fn a_scenario_loads_back_through_its_release_kernel() {
    // `--hicache-io-backend kernel` (the default) on an NVIDIA GPU: the release's kernel
    // (TMA from 0.5.21, register before); `direct`, or `page_first_direct` which forces
    // it, copies at the link rate (no kernel). Recorded in the replay's speeds.
    let d = tempfile::tempdir().unwrap();
    let run = |version: &str, extra: &str| {
        let sc = d.path().join("s.yaml");
        std::fs::write(
            &sc,
            format!(
                "name: k\nsglang: \"{version}\"\nseed: 1\nruns: 2\nnode: gb300\nmodel: glm-5.2\n\
                 server:\n  tp_size: 4\n  page_size: 64\n  kv_cache_dtype: fp8_e4m3\n  \
                 enable_hierarchical_cache: true\n{extra}\
                 runtime:\n  bench: {{clients: 2, rounds: 2, request_length: 1024, output_length: 4, max_parallel: 2}}\n  \
                 replay:\n    timing: on\n"
            ),
        )
        .unwrap();
        let o = std::process::Command::new(super::support::BIN)
            .arg("replay")
            .arg(&sc)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["speeds"]["load_back_kernel"].clone()
    };
    // The override key takes the same names (a sweep axis can compare them).
    for (id, k) in [
        ("register_2cta", Some(LoadBackKernel::Register2Cta)),
        ("tma_4cta", Some(LoadBackKernel::Tma4Cta)),
    ] {
        let mut o = serde_json::Map::new();
        o.insert("load_back_kernel".into(), serde_json::json!(id));
        let c = hicache_sim::pipeline::apply_overrides(ReplayConfig::default(), &o).unwrap();
        assert_eq!(c.links.load_back_kernel, k);
    }
    assert_eq!(run("0.5.23", ""), "tma_4cta");
    assert_eq!(run("0.5.21", ""), "tma_4cta");
    assert_eq!(run("0.5.20", ""), "register_2cta");
    assert!(run("0.5.23", "  hicache_io_backend: direct\n").is_null());
    assert!(run("0.5.23", "  hicache_mem_layout: page_first_direct\n").is_null());
}

// ------------------------------------------------------------------ corpus #05

/// Corpus #05: Qwen3-14B, TP2 on 2×A10, bench_multiturn 20 clients × 10 rounds,
/// 2 048 + 16 tokens, 4 in flight, rate 20, no barrier, seed 42. Roofline (no
/// A10 data in aiconfigurator-core): A10 BF16 125 TFLOPS, 600 GB/s, PCIe all-reduce.
fn corpus05(tiers: &str, mooncake_gbs: f64) -> BenchResult {
    // KV per token per rank: 40 layers × 4 KV heads (8 / TP2) × 128 × 2 (K, V) × 2 B.
    let kv: u32 = 40 * 4 * 128 * 2 * 2;
    let r = roofline("Qwen/Qwen3-14B", "A10", 2, false, 2.0, f64::from(kv));
    let mut c = base(
        64,
        u64::from(kv),
        40,
        Compute {
            source: ComputeSource::Roofline(r),
            // A10 (22.5 GiB) < 60 GiB: handle_gpu_memory_settings → 4 096.
            chunked_prefill_size: 4096,
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    // Device pool [EST]: 0.85 × 22.5 GiB − 13.8 GiB of weights per rank − ~1.3 GiB of
    // activations/graphs ≈ 4.0 GiB ÷ 80 KiB = 52 K tokens = 820 pages.
    c.capacities.l1_pages = 820;
    // PCIe Gen4 x16 to host [EST]; eRDMA 2 × 100 Gb/s per node shared by 2 ranks,
    // ~10 GB/s per rank achieved [EST].
    c.links.h2d_bandwidth = Bandwidth(25.0 * GB as f64);
    c.links.d2h_bandwidth = Bandwidth(25.0 * GB as f64);
    c.links.storage_read_bandwidth = Bandwidth(mooncake_gbs * GB as f64);
    c.links.storage_write_bandwidth = Bandwidth(mooncake_gbs * GB as f64);
    c.capacities.l2_pages = 0;
    // bench_multiturn of 2025-09 sends `"text"`: runs of consecutive vocabulary ids
    // decoded (`--disable-random-sample`), re-tokenized by the server every round.
    c.frontend.tokenize_per_token = tokenize("consecutive_ids");
    let bench = Multiturn {
        clients: 20,
        rounds: 10,
        request_len: 2048,
        output_len: 16,
        max_parallel: 4,
        request_rate: Some(20.0),
        round_barrier: false,
        random_ready: true,
        seed: 42,
    };
    let mut preload = Vec::new();
    if tiers != "gpu_only" {
        c.capacities.l2_pages = 2 * c.capacities.l1_pages; // --hicache-ratio 2
    }
    if tiers == "mooncake" || tiers == "populated" {
        // 150 GB pool ÷ (2 ranks × 80 KiB per token) = 915 K tokens.
        c.capacities.l3_pages = Some(150_000_000_000 / (2 * u64::from(kv)) / 64);
        c.prefetch.prefetch_policy = PrefetchPolicy::WaitComplete;
    }
    if tiers == "populated" {
        // Every client's whole conversation (its last round's pages hold the others).
        for client in 0..bench.clients {
            preload.extend(bench.pages(client, bench.rounds - 1, 64));
        }
    }
    // TP2, the release not stated.
    let c = step_sync(c, Release::LATEST, 2);
    bench::run(&c, &bench, &preload, 400).unwrap()
}

// ------------------------------------------------------------------ corpus #04

/// Corpus #04: Qwen3-235B-A22B bf16, TP8 on 8×H800, bench_multiturn 80 clients × 10
/// rounds, 2 048 + 1 tokens, 4 in flight, rate 16, round barrier, random ready queue.
/// Cost table: hgx-h100 qwen3-235b-a22b bf16 TP8 (the H800 is the H100 die; its
/// 400 GB/s NVLink is not in the table).
fn corpus04(tiers: &str, mooncake_gbs: f64) -> BenchResult {
    // KV per token per rank: 94 layers × 1 KV head (4 heads replicated over TP8) ×
    // 128 × 2 × 2 B = 48 128 B.
    let kv: u64 = 94 * 128 * 2 * 2;
    let mut c = base(
        64,
        kv,
        94,
        Compute {
            source: ComputeSource::Table {
                node: "hgx-h100".into(),
                model: "qwen3-235b-a22b".into(),
                quant: hicache_sim::model::quant::CheckpointQuant::Bf16,
                tp: 8,
            },
            // 80 GB < 160 GiB: handle_gpu_memory_settings → 8 192.
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    // Device pool [EST]: 0.79 × 79.6 GiB − 54.7 GiB of weights per rank ≈ 8.2 GiB ÷
    // 47 KiB = 183 K tokens = 2 860 pages.
    c.capacities.l1_pages = 2860;
    c.capacities.l2_pages = 0;
    // PCIe Gen5 host link (as hgx-h100); Mooncake over one 400 Gb/s RDMA NIC per GPU,
    // ~20 GB/s per rank achieved [EST].
    c.links.storage_read_bandwidth = Bandwidth(mooncake_gbs * GB as f64);
    c.links.storage_write_bandwidth = Bandwidth(mooncake_gbs * GB as f64);
    // As #05: bench_multiturn's text era, consecutive-id runs decoded.
    c.frontend.tokenize_per_token = tokenize("consecutive_ids");
    match tiers {
        "l2" => c.capacities.l2_pages = 30_000_000_000 / kv / 64, // --hicache-size 30 (GB per rank)
        "mooncake" => {
            c.capacities.l2_pages = 2 * c.capacities.l1_pages; // --hicache-ratio 2
            // 760 GB ÷ (8 ranks × 48 128 B) = 1.97 M tokens.
            c.capacities.l3_pages = Some(760_000_000_000 / (8 * kv) / 64);
            c.prefetch.prefetch_policy = PrefetchPolicy::Timeout;
        }
        _ => {}
    }
    let bench = Multiturn {
        clients: 80,
        rounds: 10,
        request_len: 2048,
        output_len: 1,
        max_parallel: 4,
        request_rate: Some(16.0),
        round_barrier: true,
        random_ready: true,
        seed: 1,
    };
    // TP8, the release not stated.
    let c = step_sync(c, Release::LATEST, 8);
    bench::run(&c, &bench, &[], 1000).unwrap()
}

// ------------------------------------------------------------------ corpus #08

/// Corpus #08 case B: DeepSeek-V4-Flash FP8, TP8 on 8×H20, 32 × 16 000-token prompts,
/// 16 out, concurrency 8, all sent at once; EIC off (recompute) vs an EIC hit (the
/// same prompts after a device + host flush: every page in L3). Roofline (no H20 data).
fn corpus08(hit: bool) -> BenchResult {
    // Published page: 9 158 208 B per 256-token page per rank = 35 774 B per token.
    let kv = 9_158_208 / 256;
    // The model module does not read DeepSeek-V4 configs (compressed sparse attention
    // is not modelled), so the roofline's inputs are set from its config.json by hand:
    // 43 layers, hidden 4 096, 64 heads of 512 (one latent KV head: d_qk = d_v = 512),
    // index top-k 512 + sliding window 128 attended per token; 13 B active
    // parameters (DeepSeek's model card; 6 of 256 experts + 1 shared), FP8.
    let facts = ModelFacts {
        layers: 43,
        hidden: 4096.0,
        active_matmul_params: 13e9,
        heads: 64.0,
        d_qk: 512.0,
        d_v: 512.0,
        attn_context_cap: Some(512 + 128),
        moe: true,
        low_precision: true,
        weight_bytes_per_param: 1.0,
        kv_bytes_per_token_rank: kv as f64,
    };
    let r = Roofline::derive(&facts, gpu("H20").unwrap(), 8);
    let mut c = base(
        256,
        kv,
        43,
        Compute {
            source: ComputeSource::Roofline(r),
            chunked_prefill_size: 16_384, // --chunked-prefill-size 16384
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    c.scheduler.max_running_requests = 32; // --max-running-requests 32
    // `bench_serving --dataset-name random-ids` without `--tokenize-prompt`: random ids
    // decoded to text (the page: "re-tokenized by the server"); Qwen3's tokenizer's
    // rate stands in for DeepSeek-V4's.
    c.frontend.tokenize_per_token = tokenize("random_ids");
    // Device pool [EST]: 0.85 × 95.6 GiB − ~36 GiB of weights per rank ≈ 45 GiB: the
    // 512 K tokens of the run fit (no eviction).
    c.capacities.l1_pages = 45 * (1 << 30) / kv / 256;
    c.capacities.l2_pages = 0;
    let bench = Multiturn::fixed_concurrency(32, 16_000, 16, 8);
    let mut preload = Vec::new();
    if hit {
        c.capacities.l2_pages = 2 * c.capacities.l1_pages;
        c.capacities.l3_unbounded = true;
        // Published: 0.57 GB/s read, 0.16 GB/s write per rank (EIC, measured).
        c.links.storage_read_bandwidth = Bandwidth(0.57 * GB as f64);
        c.links.storage_write_bandwidth = Bandwidth(0.16 * GB as f64);
        // The hit pass waits for its L3 pages (EIC reads them straight to the GPU).
        c.prefetch.prefetch_policy = PrefetchPolicy::WaitComplete;
        for p in 0..bench.clients {
            preload.extend(bench.pages(p, 0, 256));
        }
    }
    // TP8, a 0.5.19 nightly image.
    let c = step_sync(c, Release::V0_5_19, 8);
    bench::run(&c, &bench, &preload, 200).unwrap()
}

/// `|sim/published − 1|`.
fn err(sim: f64, published: f64) -> f64 {
    (sim / published - 1.0).abs()
}

// ------------------------------------------------------------------ the docs table: rows and their cells

/// One row of the "Published results replayed" table of `docs/src/fidelity/time-costs.md`
/// (`bench_corpus_table_in_the_docs` writes it): the entry, its fixed description
/// (model, GPUs, cost model, client; or the load on the entry's second row), the arm,
/// and the published → simulated cells, built from the figures the case computed.
struct BenchRow {
    entry: &'static str,
    setup: String,
    config: String,
    ttft: String,
    tput: String,
    ratio: String,
    verdict: Verdict,
}

/// What the "within 20 %" column says of a row.
enum Verdict {
    /// No with / without ratio on this row.
    None,
    /// A sensitivity run (another setting than the case's): shown, not counted.
    Sensitivity,
    /// The with / without ratios the row counts: (published, simulated).
    Counted(Vec<(f64, f64)>),
}

/// A counted ratio is within 20 % of the published one.
fn within_20(published: f64, simulated: f64) -> bool {
    (simulated / published - 1.0).abs() < 0.20
}

impl BenchRow {
    fn new(entry: &'static str, setup: &str, config: &str) -> Self {
        BenchRow {
            entry,
            setup: setup.into(),
            config: config.into(),
            ttft: "—".into(),
            tput: "—".into(),
            ratio: "—".into(),
            verdict: Verdict::None,
        }
    }
    fn ttft(mut self, s: String) -> Self {
        self.ttft = s;
        self
    }
    fn tput(mut self, s: String) -> Self {
        self.tput = s;
        self
    }
    /// The ratio cell and the ratios it counts.
    fn ratio(mut self, s: String, counted: Vec<(f64, f64)>) -> Self {
        self.ratio = s;
        self.verdict = Verdict::Counted(counted);
        self
    }
    /// The ratio cell of a sensitivity run.
    fn sensitivity(mut self, s: String) -> Self {
        self.ratio = s;
        self.verdict = Verdict::Sensitivity;
        self
    }
    fn markdown(&self) -> String {
        let verdict = match &self.verdict {
            Verdict::None => String::new(),
            Verdict::Sensitivity => "(sensitivity)".into(),
            Verdict::Counted(v) => v
                .iter()
                .map(|&(p, s)| if within_20(p, s) { "yes" } else { "no" })
                .collect::<Vec<_>>()
                .join("; "),
        };
        let cells = [
            self.entry,
            &self.setup,
            &self.config,
            &self.ttft,
            &self.tput,
            &self.ratio,
            &verdict,
        ];
        let mut line = String::from("|");
        for c in cells {
            if c.is_empty() {
                line.push_str(" |");
            } else {
                line.push_str(&format!(" {c} |"));
            }
        }
        line + "\n"
    }
}

/// A published figure as the source prints it ("14 163", "~1.34", "0.40"): its value.
fn published(p: &str) -> f64 {
    p.trim_start_matches('~')
        .replace(' ', "")
        .parse()
        .unwrap_or_else(|e| panic!("published figure {p:?}: {e}"))
}

/// Decimals of a published figure as printed.
fn decimals(p: &str) -> usize {
    p.split_once('.').map_or(0, |(_, d)| d.len())
}

/// A simulated figure next to a published one printed with `dec` decimals: as many
/// decimals, and at least three significant digits; integers of four digits and more
/// in groups of three ("14 520").
fn sim(x: f64, dec: usize) -> String {
    let sig = (2 - x.abs().log10().floor() as i64).max(0) as usize;
    let d = dec.max(sig);
    if d > 0 {
        return format!("{x:.d$}");
    }
    let digits = format!("{x:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// An error `simulated ÷ published − 1` in percent: one decimal under 10 % and next to
/// the 20 % line, none otherwise.
fn pct(e: f64) -> String {
    let p = e * 100.0;
    let d = if p.abs() < 9.95 || (19.5..20.5).contains(&p.abs()) {
        1
    } else {
        0
    };
    let s = format!("{:.d$}", p.abs());
    let sign = if s.chars().all(|c| c == '0' || c == '.') {
        ""
    } else if p < 0.0 {
        "−"
    } else {
        "+"
    };
    format!("{sign}{s} %")
}

/// "published → simulated{unit}".
fn arrow(p: &str, s: f64, unit: &str) -> String {
    format!("{p} → {}{unit}", sim(s, decimals(p)))
}

/// "published → simulated{unit} (error)".
fn arrow_err(p: &str, s: f64, unit: &str) -> String {
    format!("{} ({})", arrow(p, s, unit), pct(s / published(p) - 1.0))
}

/// "p₁ / p₂ / … → s₁ / s₂ / …{unit}"; a published "—" is a figure the source does not
/// give (its simulated one takes the decimals of the first published figure).
fn arrows(ps: &[&str], ss: &[f64], unit: &str) -> String {
    assert_eq!(ps.len(), ss.len());
    let first = ps.iter().find(|p| **p != "—").map_or(3, |p| decimals(p));
    let sims: Vec<String> = ps
        .iter()
        .zip(ss)
        .map(|(p, &s)| sim(s, if *p == "—" { first } else { decimals(p) }))
        .collect();
    format!("{} → {}{unit}", ps.join(" / "), sims.join(" / "))
}

/// A counted ratio's cell text and its (published, simulated) pair.
fn counted(p: &str, s: f64) -> (String, (f64, f64)) {
    (arrow_err(p, s, ""), (published(p), s))
}

#[test]
fn corpus_05_qwen3_14b_a10_multiturn() {
    corpus05_rows();
}

/// #05's rows of the docs table, its bounds asserted.
fn corpus05_rows() -> Vec<BenchRow> {
    // Published (labelled bars): TTFT 7.78 / 5.27 / 2.35 / 1.87 s, input 4114 / 5809 /
    // 11994 / 14152 tok/s for GPU only / +L2 / +Mooncake / populated Mooncake.
    let g = corpus05("gpu_only", 10.0);
    let l2 = corpus05("l2", 10.0);
    for (n, r) in [("gpu_only", &g), ("l2", &l2)] {
        show(&format!("#05 {n}"), r);
    }
    // Mooncake's achieved bandwidth per rank is not published: nominal 10 GB/s
    // (2 × 100 Gb/s eRDMA per node, 2 ranks), and 1 GB/s for the sensitivity.
    let mut runs = Vec::new();
    for bw in [10.0, 1.0] {
        let mc = corpus05("mooncake", bw);
        let pop = corpus05("populated", bw);
        show(&format!("#05 mooncake {bw} GB/s"), &mc);
        show(&format!("#05 populated {bw} GB/s"), &pop);
        println!(
            "#05 ratios at {bw} GB/s: l2/gpu {:.3} (0.677), mooncake/gpu {:.3} (0.302), populated/gpu {:.3} (0.240); tput {:.3} (1.412) {:.3} (2.915) {:.3} (3.440)",
            l2.ttft_mean_s / g.ttft_mean_s,
            mc.ttft_mean_s / g.ttft_mean_s,
            pop.ttft_mean_s / g.ttft_mean_s,
            l2.input_tok_s / g.input_tok_s,
            mc.input_tok_s / g.input_tok_s,
            pop.input_tok_s / g.input_tok_s,
        );
        if bw == 10.0 {
            // Tiers order as published.
            assert!(g.ttft_mean_s > l2.ttft_mean_s && l2.ttft_mean_s > mc.ttft_mean_s);
            assert!(mc.ttft_mean_s > pop.ttft_mean_s);
            assert!(pop.cache_hit_rate > mc.cache_hit_rate);
        }
        runs.push((mc, pop));
    }
    // Stated bounds (docs table): input throughput within 10 %, TTFT within 45 %
    // (the sim is 38 % / 32 % slow: prefill-first chunks run back to back here), the
    // +L2 / GPU-only TTFT ratio within 10 % of 0.677 and throughput ratio of 1.412.
    assert!(err(g.input_tok_s, 4114.0) < 0.10, "{}", g.input_tok_s);
    assert!(err(l2.input_tok_s, 5809.0) < 0.10, "{}", l2.input_tok_s);
    assert!(err(g.ttft_mean_s, 7.78) < 0.45, "{}", g.ttft_mean_s);
    assert!(err(l2.ttft_mean_s, 5.27) < 0.45, "{}", l2.ttft_mean_s);
    assert!(err(l2.ttft_mean_s / g.ttft_mean_s, 0.677) < 0.10);
    assert!(err(l2.input_tok_s / g.input_tok_s, 1.412) < 0.10);

    let ((mc, pop), (mc1, pop1)) = (&runs[0], &runs[1]);
    let tr = |r: &BenchResult| r.ttft_mean_s / g.ttft_mean_s;
    let ir = |r: &BenchResult| r.input_tok_s / g.input_tok_s;
    // (TTFT ratio; throughput ratio), both counted.
    let pair = |pt: &str, pi: &str, r: &BenchResult| {
        let (a, x) = counted(pt, tr(r));
        let (b, y) = counted(pi, ir(r));
        (format!("{a}; tput {b}"), vec![x, y])
    };
    let (l2c, l2v) = pair("0.677", "1.412", &l2);
    let (mcc, mcv) = pair("0.302", "2.915", mc);
    let (_, popv) = pair("0.240", "3.440", pop);
    // Populated at 10 / 1 GB/s: counted at 10.
    let two = |p: &str, a: f64, b: f64, unit: &str| {
        format!("{} / {}{unit}", arrow_err(p, a, ""), sim(b, decimals(p)))
    };
    vec![
        BenchRow::new(
            "05",
            "Qwen3-14B, 2×A10 TP2, roofline, text prompts (consecutive-ids rate)",
            "GPU only",
        )
        .ttft(arrow_err("7.78", g.ttft_mean_s, " s"))
        .tput(arrow_err("4 114", g.input_tok_s, "")),
        BenchRow::new("05", "20 clients × 10 rounds", "+L2")
            .ttft(arrow_err("5.27", l2.ttft_mean_s, " s"))
            .tput(arrow_err("5 809", l2.input_tok_s, ""))
            .ratio(l2c, l2v),
        BenchRow::new("05", "", "+Mooncake, 10 GB/s/rank [EST]")
            .ttft(arrow_err("2.35", mc.ttft_mean_s, " s"))
            .tput(arrow_err("11 994", mc.input_tok_s, ""))
            .ratio(mcc, mcv),
        BenchRow::new("05", "", "+Mooncake, 1 GB/s/rank")
            .ttft(arrow("2.35", mc1.ttft_mean_s, " s"))
            .tput(arrow("11 994", mc1.input_tok_s, ""))
            .sensitivity(format!(
                "{}; tput {}",
                arrow("0.302", tr(mc1), ""),
                arrow("2.915", ir(mc1), "")
            )),
        BenchRow::new("05", "", "populated Mooncake, 10 / 1 GB/s")
            .ttft(two("1.87", pop.ttft_mean_s, pop1.ttft_mean_s, " s"))
            .tput(two("14 152", pop.input_tok_s, pop1.input_tok_s, ""))
            .ratio(
                format!(
                    "{}; tput {}",
                    two("0.240", tr(pop), tr(pop1), ""),
                    two("3.440", ir(pop), ir(pop1), "")
                ),
                popv,
            ),
    ]
}

/// #04's rows of the docs table and its per-round hit rates (published → simulated),
/// its bounds asserted. Slow (seconds): `bench_corpus_table_in_the_docs` is its test.
fn corpus04_rows() -> (Vec<BenchRow>, String) {
    let g = corpus04("gpu_only", 20.0);
    let l2 = corpus04("l2", 20.0);
    for (n, r) in [("gpu_only", &g), ("l2", &l2)] {
        show(&format!("#04 {n}"), r);
    }
    let mut mc20 = None;
    for bw in [20.0, 1.0] {
        let mc = corpus04("mooncake", bw);
        show(&format!("#04 mooncake {bw} GB/s"), &mc);
        if bw == 20.0 {
            mc20 = Some(mc);
        }
    }
    let mc = mc20.unwrap();
    // Published, read off the plot: cache hit rate per round — GPU only round 1 0.175;
    // +L2 rounds 1–3 0.49 / 0.66 / 0.635; +Mooncake rounds 1–2 0.49 / 0.66 (same as L2).
    assert!(
        (g.per_round_hit_rate[1] - 0.175).abs() < 0.03,
        "{:?}",
        g.per_round_hit_rate
    );
    for (r, want) in [(1, 0.49), (2, 0.66), (3, 0.635)] {
        assert!(
            (l2.per_round_hit_rate[r] - want).abs() < 0.08,
            "{:?}",
            l2.per_round_hit_rate
        );
    }
    assert!((mc.per_round_hit_rate[1] - 0.49).abs() < 0.03);
    // TTFT: the sim is ~2× fast in absolute terms (H100 kernels of SGLang 0.5.14 for a
    // 2025 H800 run); the +L2 / GPU-only ratio at round 9 (published 4.17 / 4.46 = 0.93)
    // within 5 %.
    let r9 = l2.per_round_ttft_mean_s[9] / g.per_round_ttft_mean_s[9];
    assert!(err(r9, 0.935) < 0.05, "{r9}");
    assert!(mc.per_round_ttft_mean_s[9] < l2.per_round_ttft_mean_s[9]);

    let t = |r: &BenchResult, i: usize| r.per_round_ttft_mean_s[i];
    let (r9c, r9v) = counted("0.935", r9);
    let (r4c, r4v) = counted("0.68", t(&l2, 4) / t(&g, 4));
    let (mcc, mcv) = counted("0.184", t(&mc, 9) / t(&g, 9));
    let rows = vec![
        BenchRow::new(
            "04",
            "Qwen3-235B bf16, 8×H800 TP8, hgx-h100 table, text prompts (consecutive-ids rate)",
            "GPU only, round 0 / 4 / 9",
        )
        .ttft(arrows(
            &["0.40", "—", "4.46"],
            &[t(&g, 0), t(&g, 4), t(&g, 9)],
            " s",
        )),
        BenchRow::new(
            "04",
            "80 clients × 10 rounds, barrier",
            "+L2 (30 GB/rank), round 9",
        )
        .ttft(arrow_err("4.17", t(&l2, 9), " s"))
        .ratio(format!("round 9: {r9c}"), vec![r9v]),
        BenchRow::new("04", "", "+L2, round 4")
            .ratio(format!("{r4c}; 0.68 is a plot read-off"), vec![r4v]),
        BenchRow::new("04", "", "+Mooncake 20 GB/s/rank [EST], round 9")
            .ttft(arrow("0.82", t(&mc, 9), " s"))
            .ratio(
                format!(
                    "round 9: {mcc}; the encode rate moves it most (“The TokenizerManager”, below)"
                ),
                vec![mcv],
            ),
    ];
    let h = |r: &BenchResult, i: usize| r.per_round_hit_rate[i];
    let hits = format!(
        "B04 GPU only round 1 {}; +L2 rounds 1–4 {} (plot read-offs)",
        arrow("0.175", h(&g, 1), ""),
        arrows(
            &["0.49", "0.66", "0.635", "0.335"],
            &[h(&l2, 1), h(&l2, 2), h(&l2, 3), h(&l2, 4)],
            ""
        )
    );
    (rows, hits)
}

#[test]
fn corpus_08_dsv4_flash_h20_eic() {
    corpus08_rows();
}

/// #08's rows of the docs table, its bounds asserted.
fn corpus08_rows() -> Vec<BenchRow> {
    let off = corpus08(false);
    let hit = corpus08(true);
    show("#08 eic_off", &off);
    show("#08 eic_hit", &hit);
    println!(
        "#08 ratio hit/off ttft {:.3} (0.892), tput {:.3} (1.108)",
        hit.ttft_mean_s / off.ttft_mean_s,
        hit.input_tok_s / off.input_tok_s
    );
    // Published: EIC off TTFT mean 8019 ms, 14163 tok/s; EIC hit 7151 ms, 15692 tok/s,
    // 99.1 % storage hits. Within 5 % each, ratios within 3 %.
    assert!(err(off.ttft_mean_s, 8.019) < 0.05, "{}", off.ttft_mean_s);
    assert!(err(off.input_tok_s, 14163.0) < 0.05, "{}", off.input_tok_s);
    assert!(err(hit.ttft_mean_s, 7.151) < 0.05, "{}", hit.ttft_mean_s);
    assert!(err(hit.input_tok_s, 15692.0) < 0.05, "{}", hit.input_tok_s);
    assert!(err(hit.ttft_mean_s / off.ttft_mean_s, 0.892) < 0.03);
    assert!(err(hit.input_tok_s / off.input_tok_s, 1.108) < 0.03);
    assert!(hit.cache_hit_rate > 0.98, "{}", hit.cache_hit_rate);
    let (a, x) = counted("0.892", hit.ttft_mean_s / off.ttft_mean_s);
    let (b, y) = counted("1.108", hit.input_tok_s / off.input_tok_s);
    vec![
        BenchRow::new(
            "08",
            "DeepSeek-V4-Flash FP8, 8×H20 TP8, roofline, text prompts (random-ids rate)",
            "EIC off (recompute)",
        )
        .ttft(arrow_err("8.019", off.ttft_mean_s, " s"))
        .tput(arrow_err("14 163", off.input_tok_s, "")),
        BenchRow::new("08", "32 × 16 000 in, c 8", "EIC hit (L3, 0.57 GB/s/rank)")
            .ttft(arrow_err("7.151", hit.ttft_mean_s, " s"))
            .tput(arrow_err("15 692", hit.input_tok_s, ""))
            .ratio(format!("{a}; tput {b}"), vec![x, y]),
    ]
}

#[test]
fn scenario_runtime_replay_takes_compute() {
    // `runtime.replay.compute` in a scenario reaches the replay config; a table that
    // does not exist is refused with the tables that do.
    let mut o = serde_json::Map::new();
    o.insert("timing".into(), serde_json::json!("on"));
    o.insert(
        "compute".into(),
        serde_json::json!({
            "source": {"kind": "table", "node": "gb300", "model": "glm-5.2", "quant": "nvfp4", "tp": 4},
            "chunked_prefill_size": 16384
        }),
    );
    let c = hicache_sim::pipeline::apply_overrides(ReplayConfig::default(), &o).unwrap();
    assert_eq!(c.scheduler.compute.chunked_prefill_size, 16384);
    assert!(matches!(
        c.scheduler.compute.source,
        ComputeSource::Table { tp: 4, .. }
    ));
    o.insert(
        "compute".into(),
        serde_json::json!({"source": {"kind": "table", "node": "gb300", "model": "glm-5.2", "quant": "bf16", "tp": 4}}),
    );
    let e = hicache_sim::pipeline::apply_overrides(ReplayConfig::default(), &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no cost table") && e.contains("glm-5.2 nvfp4 tp4"),
        "{e}"
    );
}

// ------------------------------------------------------------------ corpus #06 / #07

/// A roofline's (cold, hit) TTFT pair for a fixed-concurrency load whose prompts are
/// `hit` cached in L1 by a warm-up pass (`bench::run_warmed`), as issue #26305's
/// "HBM Hit … with a 90% hit rate" arm; "Full Recompute" is the same load with no
/// warm-up and no host tier (HiCache off, nothing cached). `attn_tp`: the assumed TP
/// (the HiCache arm's per-step synchronisation, [`step_sync`]; 0.5.10, the issue's
/// release, is not modelled: [`Release::LATEST`]'s count).
fn hbm_hit_pair(
    c: &ReplayConfig,
    attn_tp: u32,
    prompts: u32,
    input: u32,
    output: u32,
    concurrency: u32,
    hit: f64,
) -> (BenchResult, BenchResult) {
    let b = Multiturn::fixed_concurrency(prompts, input, output, concurrency);
    let mut off = c.clone();
    off.capacities.l2_pages = 0;
    let cold = bench::run(&off, &b, &[], 200).unwrap();
    let mut on = c.clone();
    on.capacities.l2_pages = 2 * on.capacities.l1_pages; // --hicache-ratio 2 (the default)
    let on = step_sync(on, Release::LATEST, attn_tp);
    let warm = (f64::from(input) * hit) as u32;
    let hot = bench::run_warmed(&on, &b, warm, &[], 200).unwrap();
    (cold, hot)
}

/// Corpus #06: MiniMax-M2.7 (FP8, 62 layers, 8 KV heads of 128), SGLang 0.5.10. The
/// issue does not give the GPU: a 131 072-token cold prefill in 5.12 s needs about
/// 3 PFLOP/s achieved (attention alone is 131 072² / 2 pairs × 1.52 MFLOP), which an
/// H20 node (8 × 148 TFLOPS) cannot give and an 8 × H200 node can: 8 × H200, TP8 is the
/// stated assumption, Hopper efficiencies as every roofline here.
fn corpus06_cfg() -> ReplayConfig {
    // KV per token per rank: 62 layers × 1 KV head (8 / TP8) × 128 × 2 (K, V) × 2 B.
    let kv: u64 = 62 * 128 * 2 * 2;
    let r = roofline("MiniMaxAI/MiniMax-M2.7", "H200", 8, true, 1.0, kv as f64);
    let mut c = base(
        64,
        kv,
        62,
        Compute {
            source: ComputeSource::Roofline(r),
            // 141 GB ≥ 120 GiB: handle_gpu_memory_settings → 8 192 (0.5.10).
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    c.frontend.tokenize_per_token = unknown_client();
    // Device pool [EST]: 0.85 × 141 GB − 29 GB of weights per rank − ~5 GB ≈ 86 GB ÷
    // 31 744 B = 2.7 M tokens: every warm prefix of these runs stays in L1.
    c.capacities.l1_pages = 2_700_000 / 64;
    c
}

#[test]
fn corpus_06_minimax_m27_hbm_hit() {
    corpus06_rows();
}

/// #06's rows of the docs table, its bounds asserted.
fn corpus06_rows() -> Vec<BenchRow> {
    let c = corpus06_cfg();
    // 131 072 in, 512 out, concurrency 1 (4 prompts: at concurrency 1 each is alone).
    let (cold, hot) = hbm_hit_pair(&c, 8, 4, 131_072, 512, 1, 0.9);
    show("#06 128K c1 recompute", &cold);
    show("#06 128K c1 hbm hit", &hot);
    let r128 = hot.ttft_mean_s / cold.ttft_mean_s;
    // 8 192 in, 512 out, concurrency 16; the prompt count is not stated: 64 (4 waves).
    let (cold8, hot8) = hbm_hit_pair(&c, 8, 64, 8192, 512, 16, 0.9);
    show("#06 8K c16 recompute", &cold8);
    show("#06 8K c16 hbm hit", &hot8);
    let r8 = hot8.ttft_mean_s / cold8.ttft_mean_s;
    println!("#06 ratios hit/recompute: 128K c1 {r128:.3} (0.201), 8K c16 {r8:.3} (0.279)");
    // `decode_timeline: interleaved` (SGLang's scheduler: a decode step of the running
    // batch whenever no prefill batch forms). 128K c1 is one request at a time: the
    // same figures. 8K c16: the TTFTs come closer to the published (recompute 0.78 s,
    // hit 0.12 s against 1.73 / 0.48), the ratio moves away (0.157 against 0.279).
    let mut ci = c.clone();
    ci.scheduler.decode_timeline = hicache_sim::runtime::DecodeTimeline::Interleaved;
    let (ic, ih) = hbm_hit_pair(&ci, 8, 4, 131_072, 512, 1, 0.9);
    assert_eq!(ic.ttft_mean_s, cold.ttft_mean_s);
    assert_eq!(ih.ttft_mean_s, hot.ttft_mean_s);
    let (ic8, ih8) = hbm_hit_pair(&ci, 8, 64, 8192, 512, 16, 0.9);
    show("#06 8K c16 recompute, interleaved", &ic8);
    show("#06 8K c16 hbm hit, interleaved", &ih8);
    let ri8 = ih8.ttft_mean_s / ic8.ttft_mean_s;
    println!("#06 8K c16 interleaved ratio {ri8:.3} (0.279)");
    assert!(
        (0.70..0.85).contains(&ic8.ttft_mean_s),
        "{}",
        ic8.ttft_mean_s
    );
    assert!(
        (0.10..0.14).contains(&ih8.ttft_mean_s),
        "{}",
        ih8.ttft_mean_s
    );
    assert!((-0.50..-0.40).contains(&(ri8 / 0.279 - 1.0)), "{ri8}");
    // The long prefix: the hit's extend (13 120 new tokens over 117 952 cached, two
    // 8 192-token chunks) against the profiled SGLang attention of aiconfigurator-core
    // (hgx-h200 table, Qwen3-235B-A22B bf16 TP8, GQA 128-dim heads like MiniMax's): the
    // table's attention is linear in the prefix — the time added from p = 65 536 to
    // 131 072 at n = 8 192 is 325.9 ms, from 16 384 to 65 536 245.7 ms, the same
    // 4.97 / 5.00 ns per (new × cached) pair — and implies an attention MFU of
    // 4 · 94 layers · 8 heads · 128 · 8 192 · 65 536 ÷ (0.3259 s · 989 TFLOPS) = 0.64,
    // the roofline's 0.63. So the roofline's extend cost is the table's; the −20 % of
    // the 128K ratio is not the attention at long context (docs page).
    let t = hicache_sim::runtime::cost::table::find(
        "hgx-h200",
        "qwen3-235b-a22b",
        hicache_sim::model::quant::CheckpointQuant::Bf16,
        8,
    )
    .unwrap();
    let d_hi = t.prefill_us(&[(8192, 131_072)]) - t.prefill_us(&[(8192, 65_536)]);
    let d_lo = t.prefill_us(&[(8192, 65_536)]) - t.prefill_us(&[(8192, 16_384)]);
    let per_pair = |d: f64, dp: f64| d / (8192.0 * dp);
    assert!(
        (per_pair(d_hi, 65_536.0) / per_pair(d_lo, 49_152.0) - 1.0).abs() < 0.02,
        "{d_hi} {d_lo}"
    );
    let mfu = 4.0 * 94.0 * 8.0 * 128.0 * 8192.0 * 65_536.0 / (d_hi * 1e-6 * 989e12);
    assert!((mfu - 0.63).abs() < 0.03, "{mfu}");
    // Published (table "GQA model"): 128K c1 recompute 5 117.95 ms, HBM hit 1 027.18 ms
    // (ratio 0.201); 8K c16 recompute 1 725.09 ms, HBM hit 481.69 ms (ratio 0.279).
    // 128K c1: the simulated ratio is 0.162, 19.4 % under — just within 20 % (docs
    // table) with the request's fixed way through the server (6 ms an arm; 0.1606,
    // −20.1 %, without): the hit's 13 120 new tokens cost 0.63 s here against 1.03 s
    // published; cold is 23 % fast (3.94 s). Asserted where it is, so a change to the
    // model shows.
    assert!((-0.25..-0.15).contains(&(r128 / 0.201 - 1.0)), "{r128}");
    assert!(err(cold.ttft_mean_s, 5.118) < 0.30, "{}", cold.ttft_mean_s);
    assert!(hot.cache_hit_rate > 0.89, "{}", hot.cache_hit_rate);
    // 8K c16: the ratio within 5 % (0.292); absolute TTFT is a sixth of the published
    // one (0.27 vs 1.73 s): decode does not hold the GPU here, and at c16 with 512
    // output tokens every new prompt waits behind 15 decoding requests in SGLang.
    assert!(err(r8, 0.279) < 0.05, "{r8}");
    assert!(cold8.ttft_mean_s < 0.25 * 1.725, "{}", cold8.ttft_mean_s);
    let (c128, v128) = counted("0.201", r128);
    let (c8, v8) = counted("0.279", r8);
    vec![
        BenchRow::new(
            "06",
            "MiniMax-M2.7 FP8, 8×H200 TP8 [assumed], roofline",
            "131 072 in, c 1: recompute",
        )
        .ttft(arrow_err("5.118", cold.ttft_mean_s, " s")),
        BenchRow::new("06", "", "90 % HBM hit")
            .ttft(arrow_err("1.027", hot.ttft_mean_s, " s"))
            .ratio(c128, vec![v128]),
        BenchRow::new("06", "", "8 192 in, 512 out, c 16: recompute").ttft(arrow_err(
            "1.725",
            cold8.ttft_mean_s,
            " s",
        )),
        BenchRow::new("06", "", "90 % HBM hit")
            .ttft(arrow_err("0.482", hot8.ttft_mean_s, " s"))
            .ratio(c8, vec![v8]),
        interleaved_row(
            "06",
            "8 192 in, c 16, `decode_timeline: interleaved`: recompute / hit",
            ["1.725", "0.482", "0.279"],
            (&ic8, &ih8),
        ),
    ]
}

/// The sensitivity row of #06 / #07's 8K c16 load with `decode_timeline: interleaved`:
/// published (recompute, hit, ratio) against the (recompute, hit) runs.
fn interleaved_row(
    entry: &'static str,
    config: &str,
    p: [&str; 3],
    (cold, hot): (&BenchResult, &BenchResult),
) -> BenchRow {
    let (c, h) = (cold.ttft_mean_s, hot.ttft_mean_s);
    BenchRow::new(entry, "", config)
        .ttft(format!(
            "{} ({} / {})",
            arrows(&p[..2], &[c, h], " s"),
            pct(c / published(p[0]) - 1.0),
            pct(h / published(p[1]) - 1.0)
        ))
        .sensitivity(arrow_err(p[2], h / c, ""))
}

/// Corpus #07: GLM-4.7-Flash (MLA, 47 layers, bf16), same issue and (assumed) node as
/// #06; 20 heads do not divide by 8, so TP4 is assumed.
fn corpus07_cfg() -> ReplayConfig {
    // KV per token per rank (MLA, replicated): 47 × (512 + 64) × 2 B = 54 144 B.
    let kv: u64 = 47 * (512 + 64) * 2;
    let r = roofline("zai-org/GLM-4.7-Flash", "H200", 4, false, 2.0, kv as f64);
    let mut c = base(
        64,
        kv,
        47,
        Compute {
            source: ComputeSource::Roofline(r),
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    c.frontend.tokenize_per_token = unknown_client();
    // Device pool [EST]: 0.85 × 141 GB − 15 GB of weights − ~5 GB ≈ 100 GB ÷ 54 144 B.
    c.capacities.l1_pages = 1_800_000 / 64;
    c
}

#[test]
fn corpus_07_glm47_flash_hbm_hit() {
    corpus07_rows();
}

/// #07's rows of the docs table, its bounds asserted.
fn corpus07_rows() -> Vec<BenchRow> {
    let c = corpus07_cfg();
    let (cold, hot) = hbm_hit_pair(&c, 4, 64, 8192, 512, 16, 0.9);
    show("#07 8K c16 recompute", &cold);
    show("#07 8K c16 hbm hit", &hot);
    let r = hot.ttft_mean_s / cold.ttft_mean_s;
    println!("#07 ratio hit/recompute {r:.3} (0.377)");
    // Interleaved decode (as #06 8K): TTFTs closer (0.53 / 0.10 s against 1.11 /
    // 0.42), the ratio further (0.179 against 0.377).
    let mut ci = c.clone();
    ci.scheduler.decode_timeline = hicache_sim::runtime::DecodeTimeline::Interleaved;
    let (ic, ih) = hbm_hit_pair(&ci, 4, 64, 8192, 512, 16, 0.9);
    show("#07 8K c16 recompute, interleaved", &ic);
    show("#07 8K c16 hbm hit, interleaved", &ih);
    let ri = ih.ttft_mean_s / ic.ttft_mean_s;
    println!("#07 interleaved ratio {ri:.3} (0.377)");
    assert!((0.48..0.58).contains(&ic.ttft_mean_s), "{}", ic.ttft_mean_s);
    assert!((0.07..0.10).contains(&ih.ttft_mean_s), "{}", ih.ttft_mean_s);
    assert!((-0.60..-0.50).contains(&(ri / 0.377 - 1.0)), "{ri}");
    // Published: recompute 1 114.29 ms, HBM hit 420.55 ms (0.377). Simulated 0.322,
    // 15 % under — within 20 % (docs page) with the request's fixed way through the
    // server (6 ms on both arms, a tenth of the 59 ms hit; 0.299, −21 %, without). As
    // #06 8K, absolute TTFT is a sixth of the published (decode not on the GPU
    // timeline), and the constant decode wait that both arms pay in SGLang weighs more
    // in the ratio than for MiniMax.
    assert!((-0.20..-0.10).contains(&(r / 0.377 - 1.0)), "{r}");
    assert!(cold.ttft_mean_s < 0.25 * 1.114, "{}", cold.ttft_mean_s);
    let (cr, vr) = counted("0.377", r);
    vec![
        BenchRow::new(
            "07",
            "GLM-4.7-Flash bf16, H200 TP4 [assumed], roofline",
            "8 192 in, c 16: recompute",
        )
        .ttft(arrow_err("1.114", cold.ttft_mean_s, " s")),
        BenchRow::new("07", "", "90 % HBM hit")
            .ttft(arrow_err("0.421", hot.ttft_mean_s, " s"))
            .ratio(cr, vec![vr]),
        interleaved_row(
            "07",
            "`decode_timeline: interleaved`: recompute / hit",
            ["1.114", "0.421", "0.377"],
            (&ic, &ih),
        ),
    ]
}

// ------------------------------------------------------------------ corpus #11

/// GLM-5.2-FP8 on 8 × H20(-3e), TP8: the roofline (no H20 data in aiconfigurator-core).
/// KV per token per rank (`--kv-cache-dtype fp8_e4m3`, DSA): 78 layers × (656 B of
/// latent — 512 fp8 + 16 B of scales + 64 bf16 rope — + 132 B of indexer key).
fn glm52_h20(low_bits_weight_bytes: f64) -> (ReplayConfig, u64) {
    let kv: u64 = 78 * (656 + 132);
    let r = roofline(
        "zai-org/GLM-5.2-FP8",
        "H20",
        8,
        true,
        low_bits_weight_bytes,
        kv as f64,
    );
    let c = base(
        64,
        kv,
        78,
        Compute {
            source: ComputeSource::Roofline(r),
            chunked_prefill_size: 8192, // --chunked-prefill-size 8192
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    (c, kv)
}

/// #11's client: `python3 -m sglang.benchmark.serving` (flags not shown) sends text
/// unless `--tokenize-prompt`: random ids decoded, Qwen3's rate standing in for GLM's.
fn corpus11_client() -> Duration {
    tokenize("random_ids")
}

/// #11's 100K L2 restore: a 100 000-token prompt, evicted to host by another, then
/// sent again (plus one 64-token page); request 2's TTFT over request 0's is the ratio.
fn corpus11_restore() -> (ReplayConfig, Vec<Request>) {
    let (mut c, _) = glm52_h20(1.0);
    c.frontend.tokenize_per_token = corpus11_client();
    let pages = |tag: u64, n: u64| (0..n).map(|j| ((tag << 32) | j) + 1).collect::<Vec<_>>();
    let n = 100_000 / 64;
    c.capacities.l1_pages = n + n / 2;
    c.capacities.l2_pages = 4 * n;
    let mut again = pages(1, n);
    again.push(((1u64 << 32) | n) + 1);
    let reqs = vec![
        hicache_sim::workload::Request {
            id: 0,
            arrival_ns: 0,
            input_tokens: (n * 64) as u32,
            output_tokens: 1,
            page_hashes: pages(1, n),
        },
        hicache_sim::workload::Request {
            id: 1,
            arrival_ns: 100_000_000_000,
            input_tokens: (n * 64) as u32,
            output_tokens: 1,
            page_hashes: pages(2, n),
        },
        hicache_sim::workload::Request {
            id: 2,
            arrival_ns: 200_000_000_000,
            input_tokens: (n * 64 + 64) as u32,
            output_tokens: 1,
            page_hashes: again,
        },
    ];
    // TP8 (the CP8 group reduces the same counts), the PR branch's release not stated.
    (step_sync(c, Release::LATEST, 8), reqs)
}

#[test]
fn corpus_11_glm52_fp8_h20_prefill_and_l2_restore() {
    corpus11_rows();
}

/// #11's rows of the docs table, its bounds asserted.
fn corpus11_rows() -> Vec<BenchRow> {
    let (mut c, _) = glm52_h20(1.0);
    c.frontend.tokenize_per_token = corpus11_client();
    c.capacities.l1_pages = 1_200_000 / 64; // --max-total-tokens 1200000
    // Cold prefill of one request (CP8 is not modelled: TP8 spreads the same FLOPs).
    let mut sims = Vec::new();
    for (len, published_ms) in [
        (4096u32, 399.87),
        (32_768, 2891.98),
        (65_536, 5869.68),
        (131_072, 12_331.04),
        (262_144, 27_087.90),
    ] {
        let b = Multiturn::fixed_concurrency(1, len, 1, 1);
        let r = bench::run(&c, &b, &[], 50).unwrap();
        println!(
            "#11 cold {len}: {:.1} ms (published {published_ms}) err {:+.3}",
            r.ttft_mean_s * 1e3,
            r.ttft_mean_s * 1e3 / published_ms - 1.0
        );
        sims.push((len, r.ttft_mean_s, published_ms));
    }
    // Outside: the roofline is 2.1–2.4× slow at every length (docs page; 2.0–2.4× without
    // the encode of the text prompt, 0.03–1.6 s at 4 K–256 K tokens). The Hopper
    // MoE-FP8 linear MFU (0.18, fitted on the H100/H200 tables) is too low for the
    // compute-poor H20 on GLM-5.2's 40 B-active GEMMs; the same set gives #08
    // (DeepSeek-V4-Flash, 13 B active, H20) within 5 %. Not tuned per case.
    for (len, sim, published_ms) in &sims {
        let e = sim * 1e3 / published_ms - 1.0;
        assert!((0.9..1.45).contains(&e), "{len}: {e}");
    }
    // The 100K L2 restore: a 100 000-token prompt, evicted to host by another, then
    // sent again (plus one 64-token page): its TTFT over its cold TTFT.
    let (c, reqs) = corpus11_restore();
    let (m, t) = hicache_sim::runtime::replay_timed(&c, reqs.clone(), &[]).unwrap();
    // Either SM copy kernel leaves the restore at the link's time (as #10): per layer
    // 99 968 × 788 B = 78.8 MB in 8.1 + 797 µs (register) or 8.7 + 390 µs (TMA)
    // against 6.67 + 1 685 µs on the H20's PCIe link.
    for kern in [LoadBackKernel::Register2Cta, LoadBackKernel::Tma4Cta] {
        let mut ck = c.clone();
        ck.links.load_back_kernel = Some(kern);
        let (_, tk) = hicache_sim::runtime::replay_timed(&ck, reqs.clone(), &[]).unwrap();
        assert_eq!(tk, t, "{kern:?}");
    }
    let ttft = |i: usize| (t[i].first_token_ns - t[i].arrival_ns) as f64 / 1e9;
    println!(
        "#11 100K restore: cold {:.3} s, host hit {:.3} s, ratio {:.3} (0.073); host hit tokens {}",
        ttft(0),
        ttft(2),
        ttft(2) / ttft(0),
        m.host_hit_tokens
    );
    // Published: "reduces latency by 92.67 %" (0.073). Simulated 0.006: outside — the
    // cold side is 2.2× slow (above) and the restore (6.1 GB per rank — 99 968 × 61 464 B — at 46.75 GB/s,
    // layer-pipelined) 0.13 s against ~0.7 s implied; ranks sharing host DRAM and the
    // CP arm's own restore path are not modelled.
    assert_eq!(m.host_hit_tokens, 99_968);
    assert!(ttft(2) / ttft(0) < 0.5 * 0.073);
    // Token ids (no encode), for the table.
    let mut ids = c.clone();
    ids.frontend.tokenize_per_token = Duration(0);
    let (_, t0) = hicache_sim::runtime::replay_timed(&ids, reqs, &[]).unwrap();
    let ttft0 = |i: usize| (t0[i].first_token_ns - t0[i].arrival_ns) as f64 / 1e9;

    let ps: Vec<String> = sims
        .iter()
        .map(|(_, _, ms)| format!("{:.2}", ms / 1e3))
        .collect();
    let ps: Vec<&str> = ps.iter().map(String::as_str).collect();
    let ss: Vec<f64> = sims.iter().map(|s| s.1).collect();
    let errs: Vec<f64> = sims.iter().map(|(_, s, ms)| s * 1e3 / ms - 1.0).collect();
    let lo = errs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = errs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lens: Vec<String> = sims.iter().map(|s| format!("{} K", s.0 / 1024)).collect();
    let (cr, vr) = counted("0.073", ttft(2) / ttft(0));
    vec![
        BenchRow::new(
            "11",
            "GLM-5.2 FP8, 8×H20 TP8 (CP8 not modelled), roofline, text prompts (random-ids rate)",
            &format!("cold {}", lens.join(" / ")),
        )
        .ttft(format!(
            "{} ({} … {})",
            arrows(&ps, &ss, " s"),
            pct(lo),
            pct(hi)
        )),
        BenchRow::new(
            "11",
            "",
            "100 K L2 restore (the same with either copy kernel)",
        )
        .ratio(
            format!("{cr}; token ids: {}", sim(ttft0(2) / ttft0(0), 3)),
            vec![vr],
        ),
    ]
}

// ------------------------------------------------------------------ corpus #09

/// Corpus #09 (PR #27010): bench_multiturn 128 clients × 10 rounds with the script's
/// default 512-token questions and 64-token answers (the printed hit rates fix them:
/// round 1's 0.470588 = 512 / (2·512 + 64)), round barrier, random ready queue,
/// `--request-rate 1` and `--max-total-tokens 262144`, as the PR author's same-shape
/// run in PR #31668 (3 104-token mean prompt = the mean of 512(r+1) + 64r). The model
/// and GPU are that run's: GLM-5.2-W4AFP8, TP8 on 8 × H20 (PP, the PR's subject, is not
/// modelled: it changes the stages' timing, not which pages hit).
fn corpus09(l2: bool) -> BenchResult {
    let (mut c, _) = glm52_h20(0.55);
    c.capacities.l1_pages = 262_144 / 64; // --max-total-tokens 262144
    c.capacities.l2_pages = if l2 { 2 * c.capacities.l1_pages } else { 0 }; // --hicache-ratio 2
    let b = Multiturn {
        clients: 128,
        rounds: 10,
        request_len: 512,
        output_len: 64,
        max_parallel: 128,
        request_rate: Some(1.0),
        round_barrier: true,
        random_ready: true,
        seed: 1,
    };
    // TP8 [assumed], the PR branch's release not stated.
    let c = step_sync(c, Release::LATEST, 8);
    bench::run(&c, &b, &[], 400).unwrap()
}

#[test]
fn corpus_09_pp_l1_vs_l2_per_round() {
    corpus09_rows();
}

/// #09's rows of the docs table and its per-round hit rates (published → simulated),
/// its bounds asserted.
fn corpus09_rows() -> (Vec<BenchRow>, String) {
    let l1 = corpus09(false);
    let l2 = corpus09(true);
    show("#09 L1", &l1);
    show("#09 L2", &l2);
    let r3 = l2.per_round_ttft_mean_s[3] / l1.per_round_ttft_mean_s[3];
    let r4 = l2.per_round_ttft_mean_s[4] / l1.per_round_ttft_mean_s[4];
    println!("#09 round 3 ratio {r3:.3} (0.731), round 4 ratio {r4:.3} (0.234)");
    // Published per-round hit rates (printed to 6 digits). L2 keeps the whole history
    // (rounds 1–4 within 0.001); L1 collapses once 128 conversations outgrow the
    // 262 144-token pool (rounds 1–4 within 0.03, later rounds within 0.06).
    let l1_pub = [
        0.0, 0.470588, 0.653846, 0.630580, 0.363459, 0.239976, 0.146925,
    ];
    let l2_pub = [0.0, 0.470588, 0.653846, 0.742857, 0.795455];
    for (r, want) in l1_pub.iter().enumerate() {
        let tol = if r <= 4 { 0.03 } else { 0.06 };
        assert!(
            (l1.per_round_hit_rate[r] - want).abs() < tol,
            "L1 round {r}: {:?}",
            l1.per_round_hit_rate
        );
    }
    for (r, want) in l2_pub.iter().enumerate() {
        assert!(
            (l2.per_round_hit_rate[r] - want).abs() < 0.001,
            "L2 round {r}: {:?}",
            l2.per_round_hit_rate
        );
    }
    // TTFT ratio L2 / L1: round 4 0.18 / 0.77 = 0.234 → +8 %; round 3 0.19 / 0.26 =
    // 0.731 → −13 %.
    assert!(err(r4, 0.234) < 0.15, "{r4}");
    assert!(err(r3, 0.731) < 0.20, "{r3}");
    // Absolute: round 0 0.14 s published; L1 round 4 0.77 s.
    assert!(err(l1.per_round_ttft_mean_s[0], 0.14) < 0.30);
    assert!(err(l1.per_round_ttft_mean_s[4], 0.77) < 0.40);

    let t = |r: &BenchResult, i: usize| r.per_round_ttft_mean_s[i];
    let (c3, v3) = counted("0.731", r3);
    let (c4, v4) = counted("0.234", r4);
    let rows = vec![
        BenchRow::new(
            "09",
            "GLM-5.2-W4AFP8, 8×H20 TP8 [assumed], roofline",
            "L1 only, round 3 / 4 / 9",
        )
        .ttft(arrows(
            &["0.26", "0.77", "8.92"],
            &[t(&l1, 3), t(&l1, 4), t(&l1, 9)],
            " s",
        )),
        BenchRow::new(
            "09",
            "128 clients × 10 rounds, 262 144-token pool",
            "+L2, round 3 / 4",
        )
        .ttft(arrows(&["0.19", "0.18"], &[t(&l2, 3), t(&l2, 4)], " s"))
        .ratio(format!("round 3: {c3}; round 4: {c4}"), vec![v3, v4]),
    ];
    let h = |r: &BenchResult, i: usize| r.per_round_hit_rate[i];
    let hits = format!(
        "B09 L2 rounds 1–4 {}; B09 L1 rounds 3–6 {} (the pool collapse once 128 conversations outgrow 262 144 tokens)",
        arrows(
            &["0.470588", "0.653846", "0.742857", "0.795455"],
            &[h(&l2, 1), h(&l2, 2), h(&l2, 3), h(&l2, 4)],
            ""
        ),
        arrows(
            &["0.630580", "0.363459", "0.239976", "0.146925"],
            &[h(&l1, 3), h(&l1, 4), h(&l1, 5), h(&l1, 6)],
            ""
        )
    );
    (rows, hits)
}

// ------------------------------------------------------------------ corpus #10

/// #10's prompts: 15 040 tokens (235 pages), set A sent cold, the junk set B, set A again.
const C10_PAGES: u64 = 15_040 / 64;
const C10_SET_A: u64 = 8;
const C10_JUNK: u64 = 16;

/// #10's config and requests (set A cold, B, A again with one new page; 100 s apart).
fn corpus10() -> (ReplayConfig, Vec<Request>) {
    // KV per token per rank (MLA bf16, replicated): 61 × 576 × 2 B = 70 272 B.
    let kv: u64 = 61 * 576 * 2;
    let mut c = base(
        64,
        kv,
        61,
        Compute {
            source: ComputeSource::Table {
                node: "hgx-h200".into(),
                model: "deepseek-v3".into(),
                quant: hicache_sim::model::quant::CheckpointQuant::Fp8,
                tp: 8,
            },
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    // The PR's prompts are words ("~2200 words ≈ 15k tokens"), sent as text: the
    // probe text's rate (random words) stands in.
    c.frontend.tokenize_per_token = tokenize("probe");
    let (a, junk, n) = (C10_SET_A, C10_JUNK, C10_PAGES);
    c.capacities.l1_pages = 12 * n;
    c.capacities.l2_pages = 64 * n;
    let pages = |tag: u64| (0..n).map(|j| ((tag << 32) | j) + 1).collect::<Vec<_>>();
    let mut reqs = Vec::new();
    let mut t = 0u64;
    let mut push = |tag: u64, tail: bool| {
        let mut p = pages(tag);
        if tail {
            p.push(((tag << 32) | n) + 1);
        }
        reqs.push(hicache_sim::workload::Request {
            id: reqs.len() as u64,
            arrival_ns: t,
            input_tokens: (p.len() as u64 * 64) as u32,
            output_tokens: 1,
            page_hashes: p,
        });
        t += 100_000_000_000; // 100 s apart: one at a time
    };
    for i in 0..a {
        push(1 + i, false);
    }
    for i in 0..junk {
        push(1000 + i, false);
    }
    for i in 0..a {
        push(1 + i, true);
    }
    // TP8, the PR branch's release not stated.
    (step_sync(c, Release::LATEST, 8), reqs)
}

/// #10's (cold, L2 hit) mean TTFT, s: set A's first and second sends.
fn corpus10_ttfts(times: &[hicache_sim::runtime::RequestTime]) -> (f64, f64) {
    let ttft = |i: usize| (times[i].first_token_ns - times[i].arrival_ns) as f64 / 1e9;
    let k = C10_SET_A as usize;
    let cold: f64 = (0..k).map(ttft).sum::<f64>() / k as f64;
    let b = k + C10_JUNK as usize;
    let hot: f64 = (b..b + k).map(ttft).sum::<f64>() / k as f64;
    (cold, hot)
}

/// Corpus #10 (PR #28027): an MLA model at TP8, ~15 K-token prompts written cold (step
/// 1), evicted from L1 by a junk set (step 2), re-read from L2 (step 3); the re-read's
/// TTFT is 174 ms, "a ~7.7× speedup over cold". The model and GPU are not in what we
/// could read: DeepSeek-V3 (the first MLA family the PR names) FP8 on 8 × H200 is the
/// stated assumption (hgx-h200 table); its cold 15 K TTFT checks it against 7.7 × 174 ms
/// = 1.34 s. Sent one at a time (the PR's TTFT is per request, load-back dominated).
#[test]
fn corpus_10_mla_l2_hit_vs_cold() {
    corpus10_rows();
}

/// #10's rows of the docs table, its bounds asserted.
fn corpus10_rows() -> Vec<BenchRow> {
    let (c, reqs) = corpus10();
    let (m, times) = hicache_sim::runtime::replay_timed(&c, reqs.clone(), &[]).unwrap();
    // The SM copy kernel of `--hicache-io-backend kernel` (`release::copy_kernel`, PR
    // #40278's rates) does not bind on a PCIe node: per layer 15 040 × 1 152 B =
    // 17.3 MB take 8.1 + 175 µs (register, 2 CTAs) or 8.7 + 86 µs (TMA, 4 CTAs)
    // against the link's 6.67 + 371 µs. Every TTFT is the link-only one.
    for kern in [LoadBackKernel::Register2Cta, LoadBackKernel::Tma4Cta] {
        let mut ck = c.clone();
        ck.links.load_back_kernel = Some(kern);
        let (_, tk) = hicache_sim::runtime::replay_timed(&ck, reqs.clone(), &[]).unwrap();
        assert_eq!(tk, times, "{kern:?}");
    }
    let (cold, hot) = corpus10_ttfts(&times);
    println!(
        "#10 cold {:.3} s (1.34), L2 hit {:.3} s (0.174), ratio {:.3} (0.130), host hit tokens {}",
        cold,
        hot,
        hot / cold,
        m.host_hit_tokens
    );
    // Within 20 % (docs page): 0.138 / 0.977 = 0.141 against 0.130 (+8.6 %; +4.5 %
    // without the request's fixed way through the server, 6 ms an arm). Both arms
    // start with the TokenizerManager's encode of ~15 K tokens of text (the probe
    // text's 6.8 µs per token: ~0.10 s), which SGLang pays hit or miss. Cold is 28 %
    // fast (0.98 vs ~1.34 s, if the model is DeepSeek-V3 on H200 — the assumption);
    // the L2 hit 21 %: 1.06 GB per rank loads in 23 ms at the host link's 46.75 GB/s
    // here (each TTFT includes its prefill chunks' HiCache per-step synchronisation,
    // 0.5 ms each). Without the encode (token ids) the ratio would be 0.034 (−74 %).
    assert_eq!(m.host_hit_tokens, C10_SET_A * C10_PAGES * 64);
    assert!(err(cold, 1.34) < 0.35, "{cold}");
    assert!(err(hot / cold, 0.130) < 0.10, "{}", hot / cold);
    let mut ids = c.clone();
    ids.frontend.tokenize_per_token = Duration(0);
    let (_, t0) = hicache_sim::runtime::replay_timed(&ids, reqs, &[]).unwrap();
    let (cold0, hot0) = corpus10_ttfts(&t0);
    assert!(hot0 / cold0 < 0.5 * 0.130, "{}", hot0 / cold0);
    let (cr, vr) = counted("0.130", hot / cold);
    vec![
        BenchRow::new(
            "10",
            "MLA, 8×H200 TP8 [assumed DeepSeek-V3], hgx-h200 table, text prompts (probe rate)",
            "~15 K in, cold",
        )
        .ttft(arrow_err("~1.34", cold, " s")),
        BenchRow::new(
            "10",
            "",
            "L2 hit (load-back; the same with either copy kernel)",
        )
        .ttft(arrow_err("0.174", hot, " s"))
        .ratio(
            format!(
                "{cr}; token ids: {} ({})",
                sim(hot0 / cold0, 3),
                pct(hot0 / cold0 / 0.130 - 1.0)
            ),
            vec![vr],
        ),
    ]
}

// ------------------------------------------------------------------ corpus #12

/// Corpus #12 (issue #33984): L1 + L2 + an SSD-backed Mooncake store large enough to
/// hold everything, bench_multiturn 20 clients, rounds 0–8, per-round hit rates printed
/// to 6 digits. Only the hit rates are replayed: the issue gives no model, GPU or rate,
/// so the clock is the fixed one. The lengths come from round 1's 0.499939 =
/// 4096 / (2 · 4096 + 1): 4 096-token questions, 1-token answers; pages of 64.
#[test]
fn corpus_12_mooncake_ssd_hit_rates_per_round() {
    corpus12_rounds();
}

/// #12's (published, simulated) hit rate of every round, each asserted within 5e-7.
fn corpus12_rounds() -> Vec<(f64, f64)> {
    let mut c = base(64, 1024, 1, Compute::default());
    // Pool sizes are not given; the published rates are full reuse, whichever tier
    // served it. L1 + L2 hold the run here. With a 2 000-page host pool every page
    // still reaches L3, but the prefetch budget (half the host pool,
    // `cache_controller.py: prefetch_rate_limited`) refuses L3 prefetches under this
    // churn and the rates fall (`l3_write_back.rs`): the issue's `--hicache-ratio 2`
    // host pool was larger.
    c.capacities.l1_pages = 1000;
    c.capacities.l2_pages = 20_000;
    c.capacities.l3_unbounded = true;
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
    show("#12", &r);
    // Round r's prompt is 4096(r+1) + r tokens; its hit is the previous prompt's whole
    // pages: round 2 = 8 192 / 12 290 = 0.666558, round 8 = 32 768 / 36 872 = 0.888696.
    let published = [
        0.0, 0.499939, 0.666558, 0.749863, 0.799844, 0.833164, 0.856964, 0.874813, 0.888696,
    ];
    for (i, want) in published.iter().enumerate() {
        assert!(
            (r.per_round_hit_rate[i] - want).abs() < 5e-7,
            "round {i}: {:?}",
            r.per_round_hit_rate
        );
    }
    published
        .iter()
        .zip(&r.per_round_hit_rate)
        .map(|(&p, &s)| (p, s))
        .collect()
}

// ------------------------------------------------------------------ corpus #17 / #18

/// Qwen3-32B bf16 on one GPU (TP1), the setup of SGLang's `benchmark/hf3fs/bensh.sh`
/// (#17) and `benchmark/hicache/disk.sh` (#18). Neither file names the GPU; both print
/// a throughput that implies about 1.9 K new prompt tokens/s (#17 without 3FS: 0.45
/// req/s × ~4 160-token prompts mostly recomputed), ~120 TFLOPS achieved at 2 × 32.8 G
/// FLOPs per token: an eighth of an H100/H200's 989 TFLOPS, within an H20's 148. The
/// H20 (96 GB, `hgx-h20` preset; the 3FS backend's authors benchmark on H20, PR #8673)
/// is the stated assumption; the Hopper roofline efficiencies as every roofline here,
/// nothing fitted.
fn qwen3_32b_h20_tp1() -> ReplayConfig {
    // KV per token: 64 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 262 144 B.
    let kv: u64 = 64 * 8 * 128 * 2 * 2;
    let r = roofline("Qwen/Qwen3-32B", "H20", 1, false, 2.0, kv as f64);
    let mut c = base(
        64, // --page-size 64
        kv,
        64,
        Compute {
            source: ComputeSource::Roofline(r),
            // The 2025 releases these scripts ran: 8 192 on a ≥ 80 GB GPU.
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    // Device pool [EST]: 95.6 GiB − 61.0 GiB of weights − 0.12 × 95.6 GiB (TP1's
    // mem_fraction_static 0.88) − ~1 GiB of context ≈ 22 GiB ÷ 256 KiB = 90 K tokens.
    c.capacities.l1_pages = 90_000 / 64;
    c.capacities.l2_pages = 0;
    // SGLang runs a prefill batch whenever one forms and decodes between them
    // (`scheduler.py: get_next_batch_to_run`): with a queue that never empties the
    // 64-token answers wait behind the prefills (published latency − TTFT: 5.7–7.1 s).
    c.scheduler.decode_timeline = DecodeTimeline::Interleaved;
    c.policy.write_policy = WritePolicy::WriteThrough; // --hicache-write-policy write_through
    // bench_multiturn of 2025 sends `"text"`: ShareGPT prompts cut or repeated to length
    // (not rebuildable offline): the probe text's rate stands in.
    c.frontend.tokenize_per_token = tokenize("probe");
    c
}

/// Corpus #17 (`benchmark/hf3fs/bensh.sh`): bench_multiturn 512 clients × 3 rounds,
/// 2 048-token questions, 64-token answers (printed: 3 145 728 input and 98 304 output
/// tokens over 1 536 requests), 8 in flight, rate 16 (the auto-run's first rate),
/// random ready queue (the script's default), L1 + L2 (`--hicache-ratio 2`) with and
/// without the 3FS backend.
fn corpus17(hf3fs: bool) -> BenchResult {
    let mut c = qwen3_32b_h20_tp1();
    c.capacities.l2_pages = 2 * c.capacities.l1_pages; // --hicache-ratio 2 --hicache-size 0
    if hf3fs {
        // 1 TiB 3FS file (hf3fs.json "file_size": 1099511627776): holds the run
        // (512 × 6 272 tokens × 256 KiB = 842 GB).
        c.capacities.l3_unbounded = true;
        // The `hf3fs` backend preset: 5.37 GB/s read per rank (3FS's 42.95 GB/s per
        // client node ÷ 8); no write figure: the hgx-h20 preset's 10 GB/s.
        c.links.storage_read_bandwidth = Bandwidth(5.37 * GB as f64);
        c.links.storage_write_bandwidth = Bandwidth(10.0 * GB as f64);
    }
    let b = Multiturn {
        clients: 512,
        rounds: 3,
        request_len: 2048,
        output_len: 64,
        max_parallel: 8,
        request_rate: Some(16.0),
        round_barrier: false,
        random_ready: true,
        seed: 1,
    };
    bench::run(&c, &b, &[], 400).unwrap()
}

/// #17's rows of the docs table, its bounds asserted. Slow (seconds):
/// `bench_corpus_table_in_the_docs` is its test.
fn corpus17_rows() -> Vec<BenchRow> {
    let off = corpus17(false);
    let on = corpus17(true);
    show("#17 L1+L2", &off);
    show("#17 L1+L2+3FS", &on);
    let rps = |r: &BenchResult| 1536.0 / r.duration_s;
    println!(
        "#17 req/s {:.3} (0.45) → {:.3} (0.63); ratio ttft {:.3} (0.634), req/s {:.3} (1.400)",
        rps(&off),
        rps(&on),
        on.ttft_mean_s / off.ttft_mean_s,
        rps(&on) / rps(&off)
    );
    // Published: L1+L2 TTFT 10.62 s, 0.45 req/s; +3FS 6.73 s, 0.63 req/s. The ratios
    // hold: TTFT 0.672 / 0.634 = +6 %, req/s 1.578 / 1.400 = +13 %.
    let r_ttft = on.ttft_mean_s / off.ttft_mean_s;
    let r_rps = rps(&on) / rps(&off);
    assert!(err(r_ttft, 6.73 / 10.62) < 0.10, "{r_ttft}");
    assert!(err(r_rps, 0.63 / 0.45) < 0.16, "{r_rps}");
    // Absolute: the H20 roofline is slow for this GPU, the same factor in both arms
    // (req/s 0.274 / 0.45 = 0.61, 0.432 / 0.63 = 0.69; TTFT +46 %, +55 %), as #18's.
    // Either the GPU is faster than the assumed H20 or the H20 reaches a higher MFU
    // than the Hopper fit (#11's finding); asserted where it is.
    for (sim, publ) in [(rps(&off), 0.45), (rps(&on), 0.63)] {
        assert!((0.55..0.75).contains(&(sim / publ)), "{sim} vs {publ}");
    }
    for (sim, publ) in [(off.ttft_mean_s, 10.62), (on.ttft_mean_s, 6.73)] {
        assert!((1.35..1.65).contains(&(sim / publ)), "{sim} vs {publ}");
    }
    // 3FS holds every page: the hit rate nears the most a run can reach,
    // (2 112 + 4 224) / 12 480 = 0.508, less the pages still being written or
    // prefetched when a client's next round comes; without it almost nothing is hit
    // (512 conversations × ≤ 6 272 tokens against a 90 K + 180 K-token L1 + L2).
    assert!(
        (0.40..0.508).contains(&on.cache_hit_rate),
        "{}",
        on.cache_hit_rate
    );
    assert!(off.cache_hit_rate < 0.10, "{}", off.cache_hit_rate);
    let (a, x) = counted("0.634", r_ttft);
    let (b, y) = counted("1.400", r_rps);
    vec![
        BenchRow::new(
            "17",
            "Qwen3-32B bf16, 1×H20 TP1 [assumed], roofline, text prompts (probe rate)",
            "L1+L2 (`--hicache-ratio 2`)",
        )
        .ttft(arrow_err("10.62", off.ttft_mean_s, " s"))
        .tput(arrow_err("0.45", rps(&off), " req/s")),
        BenchRow::new(
            "17",
            "512 clients × 3 rounds, 2 048 + 64, 8 in flight",
            "+3FS (5.37 GB/s/rank, preset)",
        )
        .ttft(arrow_err("6.73", on.ttft_mean_s, " s"))
        .tput(arrow_err("0.63", rps(&on), " req/s"))
        .ratio(format!("{a}; req/s {b}"), vec![x, y]),
    ]
}

/// Corpus #18 (`benchmark/hicache/disk.sh`): bench_multiturn with the script's defaults
/// of the time (`--request-length 512`, `--output-length 64`, `--num-rounds 5`: 1 280
/// requests printed for 256 clients), `--num-clients 256 --max-parallel 32`, rate 16
/// (the auto-run's first), random ready queue; L1 + a 50 GB host pool
/// (`--hicache-size 50`) with and without the pre-release local-disk tier
/// (`--hicache-use-disk --hicache-disk-size 200`), replayed as an L3 of 200 GB on the
/// node's local NVMe (the `file` backend's rule: the hgx-h20 preset's 20 / 10 GB/s).
fn corpus18(disk: bool) -> BenchResult {
    let mut c = qwen3_32b_h20_tp1();
    let kv = c.capacities.bytes_per_token;
    c.capacities.l2_pages = 50_000_000_000 / kv / 64; // --hicache-size 50 (GB)
    if disk {
        c.capacities.l3_pages = Some(200_000_000_000 / kv / 64); // --hicache-disk-size 200 (GB)
        c.links.storage_read_bandwidth = Bandwidth(20.0 * GB as f64);
        c.links.storage_write_bandwidth = Bandwidth(10.0 * GB as f64);
    }
    let b = Multiturn {
        clients: 256,
        rounds: 5,
        request_len: 512,
        output_len: 64,
        max_parallel: 32,
        request_rate: Some(16.0),
        round_barrier: false,
        random_ready: true,
        seed: 1,
    };
    bench::run(&c, &b, &[], 400).unwrap()
}

#[test]
fn corpus_18_qwen3_32b_local_disk_multiturn() {
    corpus18_rows();
}

/// #18's rows of the docs table, its bounds asserted.
fn corpus18_rows() -> Vec<BenchRow> {
    let off = corpus18(false);
    let on = corpus18(true);
    show("#18 L1+L2", &off);
    show("#18 L1+L2+disk", &on);
    let rps = |r: &BenchResult| 1280.0 / r.duration_s;
    println!(
        "#18 req/s {:.3} (1.73) → {:.3} (2.78); hit {:.3} (0.382) → {:.3} (0.661); ratio ttft {:.3} (0.573), req/s {:.3} (1.607)",
        rps(&off),
        rps(&on),
        off.cache_hit_rate,
        on.cache_hit_rate,
        on.ttft_mean_s / off.ttft_mean_s,
        rps(&on) / rps(&off)
    );
    // Published hit rates (printed to 16 digits): 0.3817 without the disk, 0.6615 with
    // it (the most a run can hit: 5 760 / 8 320 = 0.692); simulated 0.374 and 0.653.
    assert!(
        (off.cache_hit_rate - 0.381675786824275).abs() < 0.015,
        "{}",
        off.cache_hit_rate
    );
    assert!(
        (on.cache_hit_rate - 0.6614896363279186).abs() < 0.015,
        "{}",
        on.cache_hit_rate
    );
    // Ratios: TTFT 0.626 / 0.573 = +9 %, req/s 1.678 / 1.607 = +4 %.
    let r_ttft = on.ttft_mean_s / off.ttft_mean_s;
    let r_rps = rps(&on) / rps(&off);
    assert!(err(r_ttft, 5.18 / 9.04) < 0.12, "{r_ttft}");
    assert!(err(r_rps, 2.78 / 1.73) < 0.08, "{r_rps}");
    // Absolute, as #17: req/s 0.61 and 0.63 of the published, TTFT +66 % and +81 %.
    for (sim, publ) in [(rps(&off), 1.73), (rps(&on), 2.78)] {
        assert!((0.55..0.70).contains(&(sim / publ)), "{sim} vs {publ}");
    }
    for (sim, publ) in [(off.ttft_mean_s, 9.04), (on.ttft_mean_s, 5.18)] {
        assert!((1.5..1.95).contains(&(sim / publ)), "{sim} vs {publ}");
    }
    let (a, x) = counted("0.573", r_ttft);
    let (b, y) = counted("1.607", r_rps);
    vec![
        BenchRow::new(
            "18",
            "Qwen3-32B bf16, 1×H20 TP1 [assumed], roofline, text prompts (probe rate)",
            &format!(
                "L1 + 50 GB L2, hit {}",
                arrow("0.382", off.cache_hit_rate, "")
            ),
        )
        .ttft(arrow_err("9.04", off.ttft_mean_s, " s"))
        .tput(arrow_err("1.73", rps(&off), " req/s")),
        BenchRow::new(
            "18",
            "256 clients × 5 rounds, 512 + 64, 32 in flight",
            &format!(
                "+200 GB local disk (L3, 20 GB/s [EST]), hit {}",
                arrow("0.661", on.cache_hit_rate, "")
            ),
        )
        .ttft(arrow_err("5.18", on.ttft_mean_s, " s"))
        .tput(arrow_err("2.78", rps(&on), " req/s"))
        .ratio(format!("{a}; req/s {b}"), vec![x, y]),
    ]
}

// ------------------------------------------------------------------ corpus #19 / #20

/// Which tier a single-probe TTFT is measured on (the `hicache_eval` campaigns' Exp 1).
#[derive(Clone, Copy, Debug)]
enum Probe {
    Recompute,
    /// Its first `n − 1` pages written once, then the probe: an L1 hit.
    L1,
    L2,
    L3,
}

/// One probe of `n` pages sent alone on an idle server, after the state its tier needs
/// (the campaigns' Exp 1, `hicache_eval/scripts/exp1.py`: "single in-flight probe,
/// idle server", every probe a full hit on the intended tier): `Recompute` = the first
/// send of a fresh prompt; `L2` = its first `n − 1` pages written once, then pushed out of L1 by other
/// prompts of `n` pages (written through to L2, which still holds it); `L3` = the same,
/// pushed out of L1 and L2 (written through to an L3 that holds everything), read back
/// with `wait_complete`. The probe's last page is its own: SGLang never caches a
/// prompt's trailing page, so a hit is `L − 64` tokens (the campaigns: "≥ L − 64",
/// 4032 of 4096). The pools are the campaign's (`l1`, `l2` pages). Requests are 100 s
/// apart, one in flight. Returns the probe's TTFT (s) and the run's metrics.
fn tier_probe(
    c: &ReplayConfig,
    l1: u64,
    l2: u64,
    n: u64,
    probe: Probe,
) -> (f64, hicache_sim::runtime::ReplayMetrics) {
    let mut c = c.clone();
    c.capacities.l1_pages = l1;
    c.capacities.l2_pages = l2; // the same HiCache server for every probe
    c.capacities.l3_unbounded = matches!(probe, Probe::L3);
    c.prefetch.prefetch_policy = PrefetchPolicy::WaitComplete; // --hicache-storage-prefetch-policy
    // Enough other prompts to push the primed prefix out of L1 (L2 probe) or out of
    // L1 and L2 (L3 probe).
    let junk = match probe {
        Probe::Recompute | Probe::L1 => 0,
        Probe::L2 => l1 / n + 2,
        Probe::L3 => (l1 + l2) / n + 2,
    };
    let pages = |tag: u64, k: u64| (0..k).map(|j| ((tag << 32) | j) + 1).collect::<Vec<_>>();
    let mut reqs = Vec::new();
    let mut t = 0u64;
    let mut push = |p: Vec<u64>| {
        reqs.push(Request {
            id: reqs.len() as u64,
            arrival_ns: t,
            input_tokens: (p.len() as u64 * 64) as u32,
            output_tokens: 1,
            page_hashes: p,
        });
        t += 100_000_000_000;
    };
    if !matches!(probe, Probe::Recompute) {
        push(pages(1, n - 1));
        for i in 0..junk {
            push(pages(100 + i, n));
        }
    }
    push(pages(1, n));
    let (m, times) = hicache_sim::runtime::replay_timed(&c, reqs, &[]).unwrap();
    let last = times.last().unwrap();
    ((last.first_token_ns - last.arrival_ns) as f64 / 1e9, m)
}

/// The three probes of one length: (recompute, L2 hit, L3 hit) TTFT in s, each hit
/// checked to be the whole primed prefix on its tier.
fn tier_curve(c: &ReplayConfig, l1: u64, l2: u64, len: u64) -> (f64, f64, f64) {
    let n = len / 64;
    let hit = (n - 1) * 64;
    let (rc, m) = tier_probe(c, l1, l2, n, Probe::Recompute);
    assert_eq!(m.total_hit_tokens, 0);
    let (h2, m) = tier_probe(c, l1, l2, n, Probe::L2);
    assert_eq!((m.host_hit_tokens, m.device_hit_tokens), (hit, 0));
    let (h3, m) = tier_probe(c, l1, l2, n, Probe::L3);
    assert_eq!((m.storage_hit_tokens, m.host_hit_tokens), (hit, 0));
    (rc, h2, h3)
}

/// Corpus #19 (`WanHaoRan/sglang` `hicache_eval/results/20260907_203035/REPORT.md`,
/// campaign 1): Qwen3-8B bf16 on one H100 PCIe 80 GB (the `H100-PCIe` roofline: the
/// data sheet's 756 TFLOPS BF16 dense, 2.0 TB/s; Hopper efficiencies as every
/// roofline here), KV 147 456 B per token (36 layers × 8 KV heads × 128 × 2 × 2 B, the
/// report's own figure), `--page-size 64`, write_through, `wait_complete`, the nixl L3
/// on the VM's virtio disk. Pools as printed: L1 374 784 tokens, L2 678 208.
fn corpus19_cfg() -> ReplayConfig {
    let kv: u64 = 36 * 8 * 128 * 2 * 2;
    let r = roofline("Qwen/Qwen3-8B", "H100-PCIe", 1, false, 2.0, kv as f64);
    let mut c = base(
        64,
        kv,
        36,
        Compute {
            source: ComputeSource::Roofline(r),
            chunked_prefill_size: 8192, // ≥ 80 GB GPU
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    // The report's fio of that disk: 9 MiB O_DIRECT reads at queue depth 1 (nixl reads
    // O_DIRECT, the engine issues one prefetch at a time) 6.19 GB/s; sequential O_DIRECT
    // writes at QD1 1.15 GB/s. Host link: the default 55 GB/s (PCIe Gen5 x16).
    c.links.storage_read_bandwidth = Bandwidth(6.19 * GB as f64);
    c.links.storage_write_bandwidth = Bandwidth(1.15 * GB as f64);
    // probe.py streams `/v1/chat/completions` with text: every probe, hit or miss, is
    // encoded by the TokenizerManager first (the probe text, measured).
    c.frontend.tokenize_per_token = tokenize("probe");
    c
}

/// Corpus #20 (same repository, `hicache_eval/results/20260921_h200_nebius_32b70b_fp8kv/`,
/// campaign 6): Qwen3-32B-FP8 (native FP8 through DeepGEMM), fp8_e5m2 KV (64 layers ×
/// 8 × 128 × 2 × 1 B = 131 072 B per token, the report's `b`) on one H200, the nixl L3
/// on an attached SSD that "sustains 1.88 GiB/s". Pools as printed: L1 705 856 tokens,
/// L2 1 220 736.
fn corpus20_cfg() -> ReplayConfig {
    let kv: u64 = 64 * 8 * 128 * 2;
    let r = roofline("Qwen/Qwen3-32B-FP8", "H200", 1, true, 1.0, kv as f64);
    let mut c = base(
        64,
        kv,
        64,
        Compute {
            source: ComputeSource::Roofline(r),
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
            ..Compute::default()
        },
    );
    let ssd = 1.88 * (1u64 << 30) as f64; // 1.88 GiB/s, read and write
    c.links.storage_read_bandwidth = Bandwidth(ssd);
    c.links.storage_write_bandwidth = Bandwidth(ssd);
    c.frontend.tokenize_per_token = tokenize("probe"); // the same probe as #19
    c
}

/// Published medians (s) at L = 16 384 and 32 512: (recompute, L2 hit, L3 hit).
const C19_PUBLISHED: [(u64, f64, f64, f64); 2] =
    [(16384, 0.920, 0.213, 1.072), (32512, 2.219, 0.372, 1.459)];
const C20_PUBLISHED: [(u64, f64, f64, f64); 2] = [
    (16384, 2.8421, 0.1478, 0.8278),
    (32512, 10.1300, 0.2804, 1.4253),
];

fn show_curve(
    name: &str,
    c: &ReplayConfig,
    l1: u64,
    l2: u64,
    published: &[(u64, f64, f64, f64)],
) -> Vec<(f64, f64, f64)> {
    let mut out = Vec::new();
    for &(len, prc, p2, p3) in published {
        let (rc, h2, h3) = tier_curve(c, l1, l2, len);
        println!(
            "{name} L={len}: recompute {rc:.3} ({prc}), L2 {h2:.3} ({p2}), L3 {h3:.3} ({p3}); \
             L2/recompute {:.3} ({:.3}), L3/recompute {:.3} ({:.3})",
            h2 / rc,
            p2 / prc,
            h3 / rc,
            p3 / prc
        );
        out.push((rc, h2, h3));
    }
    out
}

/// Published L1-hit medians (s) at 16 384 and 32 512 tokens: a hit that moves nothing.
const C19_L1: [f64; 2] = [0.159, 0.251];
const C20_L1: [f64; 2] = [0.1559, 0.2811];

/// `sim ÷ published` for the (L2 ÷ recompute, L3 ÷ recompute) ratios at each length.
fn ratio_errors(sim: &[(f64, f64, f64)], published: &[(u64, f64, f64, f64)]) -> Vec<(f64, f64)> {
    sim.iter()
        .zip(published)
        .map(|(&(rc, h2, h3), &(_, prc, p2, p3))| ((h2 / rc) / (p2 / prc), (h3 / rc) / (p3 / prc)))
        .collect()
}

#[test]
fn corpus_19_qwen3_8b_h100_pcie_tier_probes() {
    corpus19_rows();
}

/// #19's rows of the docs table, its bounds asserted.
fn corpus19_rows() -> Vec<BenchRow> {
    let sim = show_curve(
        "#19",
        &corpus19_cfg(),
        374_784 / 64,
        678_208 / 64,
        &C19_PUBLISHED,
    );
    // Recompute within 10 %: 0.856 vs 0.920 s (−7 %), 2.023 vs 2.219 s (−9 %); each
    // probe starts with the TokenizerManager's encode of its text (6.8 µs per token, 0.11
    // / 0.22 s, `tools/costs/tokenize_rate.json`), hit or miss.
    for (&(rc, _, _), &(_, prc, _, _)) in sim.iter().zip(&C19_PUBLISHED) {
        assert!((0.88..0.96).contains(&(rc / prc)), "{rc} vs {prc}");
    }
    // L2 ÷ recompute within 20 % at both lengths: 0.190 vs 0.232 (×0.82), 0.159 vs 0.168
    // (×0.95). L3 ÷ recompute within 20 % at 32 512 (0.541 vs 0.658, ×0.82), not at
    // 16 384 (0.644 vs 1.165, ×0.55): nixl's fixed ~0.19 s per L3 hit (the report's
    // intercept) is not modelled, and it weighs most on the short probe.
    let e = ratio_errors(&sim, &C19_PUBLISHED);
    let want = [(0.82, 0.55), (0.95, 0.82)];
    for (&(e2, e3), &(w2, w3)) in e.iter().zip(&want) {
        assert!((e2 / w2 - 1.0).abs() < 0.05, "L2 ratio ×{e2} (×{w2})");
        assert!((e3 / w3 - 1.0).abs() < 0.05, "L3 ratio ×{e3} (×{w3})");
    }
    without_the_encode_the_hits_are_too_cheap(&corpus19_cfg(), 374_784 / 64, 678_208 / 64, C19_L1);
    probe_rows(
        "19",
        [
            &format!(
                "Qwen3-8B bf16, 1×H100 PCIe TP1, roofline (`H100-PCIe`), text prompts (probe rate, {} ns/token)",
                self::sim(tokenize("probe").0 as f64, 0)
            ),
            "single probe, idle server (hicache_eval Exp 1)",
            "nixl L3 hit (6.19 GB/s, the source's fio)",
        ],
        &corpus19_cfg(),
        (374_784 / 64, 678_208 / 64),
        &sim,
        &C19_PUBLISHED,
        C19_L1,
    )
}

/// The rows of a single-probe entry (#19, #20): recompute, L1, L2 and L3 hits at
/// 16 384 and 32 512 tokens; the L2 and L3 ratios are counted at 32 512 (the source's
/// longest). `text` = the entry's setup, the second row's setup, the L3 arm.
fn probe_rows(
    entry: &'static str,
    text: [&str; 3],
    c: &ReplayConfig,
    (l1, l2): (u64, u64),
    curve: &[(f64, f64, f64)],
    published: &[(u64, f64, f64, f64)],
    published_l1: [f64; 2],
) -> Vec<BenchRow> {
    let l1_sim: Vec<f64> = [16_384u64, 32_512]
        .iter()
        .map(|len| tier_probe(c, l1, l2, len / 64, Probe::L1).0)
        .collect();
    let p3 = |x: f64| format!("{x:.3}");
    let col = |f: fn(&(f64, f64, f64)) -> f64| curve.iter().map(f).collect::<Vec<_>>();
    let pcol = |f: fn(&(u64, f64, f64, f64)) -> f64| {
        published.iter().map(|p| p3(f(p))).collect::<Vec<_>>()
    };
    let two = |ps: Vec<String>, ss: Vec<f64>| {
        let ps: Vec<&str> = ps.iter().map(String::as_str).collect();
        arrows(&ps, &ss, " s")
    };
    // A published ratio to three significant digits, as the table prints it.
    let sig3 = |x: f64| sim(x, 0);
    let ratio = |hit: fn(&(u64, f64, f64, f64)) -> f64, s: fn(&(f64, f64, f64)) -> f64| {
        let r = |i: usize| {
            (
                hit(&published[i]) / published[i].1,
                s(&curve[i]) / curve[i].0,
            )
        };
        let (p16, s16) = r(0);
        let (p32, s32) = r(1);
        let (c, v) = counted(&sig3(p32), s32);
        (
            format!("32 512: {c} (16 384: {})", arrow(&sig3(p16), s16, "")),
            vec![v],
        )
    };
    let rc = col(|x| x.0);
    let prc = published.iter().map(|p| p.1).collect::<Vec<_>>();
    let (r2, v2) = ratio(|p| p.2, |x| x.1);
    let (r3, v3) = ratio(|p| p.3, |x| x.2);
    vec![
        BenchRow::new(entry, text[0], "recompute, 16 384 / 32 512 tokens").ttft(format!(
            "{} ({}, {})",
            two(pcol(|p| p.1), rc.clone()),
            pct(rc[0] / prc[0] - 1.0),
            pct(rc[1] / prc[1] - 1.0)
        )),
        BenchRow::new(entry, text[1], "L1 hit (the encode + a 64-token extend)")
            .ttft(two(published_l1.iter().map(|&x| p3(x)).collect(), l1_sim)),
        BenchRow::new(entry, "", "L2 hit, 16 384 / 32 512")
            .ttft(two(pcol(|p| p.2), col(|x| x.1)))
            .ratio(r2, v2),
        BenchRow::new(entry, "", text[2])
            .ttft(two(pcol(|p| p.3), col(|x| x.2)))
            .ratio(r3, v3),
    ]
}

/// Token ids instead of text (no TokenizerManager encode): the replay's L2 hit (the
/// layer-pipelined copy alone) is under 0.7 × SGLang's L1 hit, which moves nothing —
/// the gap the encode closes (docs page: the L2 ratios were −66 % / −24 % without it).
fn without_the_encode_the_hits_are_too_cheap(c: &ReplayConfig, l1: u64, l2: u64, pl1: [f64; 2]) {
    let mut ids = c.clone();
    ids.frontend.tokenize_per_token = Duration(0);
    for (len, p) in [16_384u64, 32_512].into_iter().zip(pl1) {
        let (_, h2, _) = tier_curve(&ids, l1, l2, len);
        assert!(
            h2 < 0.7 * p,
            "simulated L2 hit {h2} vs published L1 hit {p}"
        );
    }
}

/// The L1 probes (a hit that moves no KV) against the published ones: the encode plus
/// a 64-token extend. The published slope between 16 384 and 32 512 tokens is the
/// encode's (#19: 5.7 µs per token, #20: 7.8; the measured rate 6.8); the fixed part,
/// the report's ~30–36 ms intercept, is 6 ms in the replay (`request_overhead`: HTTP,
/// the three ZMQ hops through the scheduler and the detokenizer, as a mocked-GPU
/// SGLang measured them), and 21–43 ms of it is left.
#[test]
fn the_l1_probes_are_the_encode_and_a_short_extend() {
    for (name, c, l1, l2, published, want) in [
        (
            "#19",
            corpus19_cfg(),
            374_784 / 64,
            678_208 / 64,
            C19_L1,
            [0.1202, 0.2305],
        ),
        (
            "#20",
            corpus20_cfg(),
            705_856 / 64,
            1_220_736 / 64,
            C20_L1,
            [0.1253, 0.2377],
        ),
    ] {
        let mut sim = [0.0; 2];
        for (i, len) in [16_384u64, 32_512].into_iter().enumerate() {
            let (t, m) = tier_probe(&c, l1, l2, len / 64, Probe::L1);
            assert_eq!(m.device_hit_tokens, len - 64);
            println!("{name} L1 {len}: {t:.4} s (published {})", published[i]);
            assert!((t / want[i] - 1.0).abs() < 0.002, "{name} {len}: {t}");
            sim[i] = t;
        }
        let slope = |x: [f64; 2]| (x[1] - x[0]) / 16_128.0 * 1e6;
        println!(
            "{name} L1 slope: {:.2} us/token (published {:.2})",
            slope(sim),
            slope(published)
        );
        // The fixed part still missing: 21–43 ms (#19 39 / 21 ms, #20 31 / 43 ms).
        for (s, p) in sim.iter().zip(published) {
            assert!((0.013..0.044).contains(&(p - s)), "{name}: {p} - {s}");
        }
    }
}

#[test]
fn corpus_20_qwen3_32b_fp8_h200_tier_probes() {
    corpus20_rows();
}

/// #20's rows of the docs table, its bounds asserted.
fn corpus20_rows() -> Vec<BenchRow> {
    let sim = show_curve(
        "#20",
        &corpus20_cfg(),
        705_856 / 64,
        1_220_736 / 64,
        &C20_PUBLISHED,
    );
    // Recompute is 1.5× / 2.2× fast (1.855 vs 2.842 s, 4.563 vs 10.130 s): the run's
    // triton attention over an fp8_e5m2 KV is far below the Hopper attention MFU at
    // 16–32 K tokens (its recompute time grows 3.6× from 16 K to 32 K; the roofline's 2.5×).
    for (&(rc, _, _), (&(_, prc, _, _), want)) in
        sim.iter().zip(C20_PUBLISHED.iter().zip([0.65, 0.45]))
    {
        assert!((rc / prc / want - 1.0).abs() < 0.05, "{rc} vs {prc}");
    }
    // The hits themselves come close (L2 0.163 / 0.317 s vs 0.148 / 0.280; the encode is
    // most of them), but they are divided by that fast recompute: L2 ÷ recompute 0.088
    // vs 0.052 (×1.69), 0.069 vs 0.028 (×2.48). L3 at the SSD's sustained 1.88 GiB/s is
    // slower than SGLang read it (2.42 vs 1.43 s at 32 512; the report's own L3 fit,
    // 2.99 GiB/s, exceeds that figure): L3 ÷ recompute 0.657 vs 0.291 (×2.26), 0.531 vs
    // 0.141 (×3.77).
    for (&(_, h2, _), &(_, _, p2, _)) in sim.iter().zip(&C20_PUBLISHED) {
        assert!(err(h2, p2) < 0.14, "L2 hit {h2} vs {p2}");
    }
    let e = ratio_errors(&sim, &C20_PUBLISHED);
    let want = [(1.69, 2.26), (2.48, 3.77)];
    for (&(e2, e3), &(w2, w3)) in e.iter().zip(&want) {
        assert!((e2 / w2 - 1.0).abs() < 0.05, "L2 ratio ×{e2} (×{w2})");
        assert!((e3 / w3 - 1.0).abs() < 0.05, "L3 ratio ×{e3} (×{w3})");
    }
    without_the_encode_the_hits_are_too_cheap(
        &corpus20_cfg(),
        705_856 / 64,
        1_220_736 / 64,
        C20_L1,
    );
    probe_rows(
        "20",
        [
            "Qwen3-32B-FP8, fp8 KV, 1×H200 TP1, roofline, text prompts (probe rate)",
            "single probe, idle server",
            "nixl L3 hit (SSD's 1.88 GiB/s, the source's)",
        ],
        &corpus20_cfg(),
        (705_856 / 64, 1_220_736 / 64),
        &sim,
        &C20_PUBLISHED,
        C20_L1,
    )
}

// ------------------------------------------------------------------ hit-cost sensitivity

#[test]
fn a_hit_cost_delays_the_batch_and_what_queues_behind() {
    // `runtime.replay.compute.hit_cost_per_cached_token: 8us` from a scenario, on the
    // fixed clock (20 000 new tokens/s). Request 0: 4 096 cold tokens, TTFT 0.2048 s.
    // 100 s later request 1 (the same 64 pages + one: 4 096 cached, 64 new) and
    // request 2 (one fresh page) arrive together; one request per batch
    // (`max_prefill_tokens` 64). Request 1: 4 096 × 8 µs + 64 / 20 000 = 32.768 +
    // 3.2 = 35.968 ms. Request 2 waits for it: 35.968 + 3.2 = 39.168 ms.
    let mut o = serde_json::Map::new();
    o.insert("timing".into(), serde_json::json!("on"));
    o.insert(
        "compute".into(),
        serde_json::json!({"hit_cost_per_cached_token": "8us"}),
    );
    let mut c =
        hicache_sim::pipeline::apply_overrides(base(64, 1024, 1, Compute::default()), &o).unwrap();
    assert_eq!(
        c.scheduler.compute.hit_cost_per_cached_token,
        Duration(8_000)
    );
    c.scheduler.max_prefill_tokens = 64;
    let pages = |tag: u64, k: u64| (0..k).map(|j| ((tag << 32) | j) + 1).collect::<Vec<_>>();
    let req = |id: u64, at: u64, p: Vec<u64>| Request {
        id,
        arrival_ns: at,
        input_tokens: p.len() as u32 * 64,
        output_tokens: 1,
        page_hashes: p,
    };
    let reqs = vec![
        req(0, 0, pages(1, 64)),
        req(1, 100_000_000_000, pages(1, 65)),
        req(2, 100_000_000_000, pages(2, 1)),
    ];
    let (_, t) = hicache_sim::runtime::replay_timed(&c, reqs.clone(), &[]).unwrap();
    let ttft: Vec<u64> = t.iter().map(|r| r.first_token_ns - r.arrival_ns).collect();
    assert_eq!(ttft, [204_800_000, 35_968_000, 39_168_000]);
    assert_eq!(t[1].cached_tokens, 4096);
    // Recorded with the speeds.
    let s = hicache_sim::runtime::Speeds::of(&c);
    assert_eq!(s.hit_cost_per_cached_token_ns, Some(8_000));
    assert!(
        s.line().contains("; hit cost 8000 ns per cached token;"),
        "{}",
        s.line()
    );
    // 0 (the default) is the replay without it: 3.2 ms and 6.4 ms.
    c.scheduler.compute.hit_cost_per_cached_token = Duration(0);
    let (_, t) = hicache_sim::runtime::replay_timed(&c, reqs, &[]).unwrap();
    let ttft: Vec<u64> = t.iter().map(|r| r.first_token_ns - r.arrival_ns).collect();
    assert_eq!(ttft, [204_800_000, 3_200_000, 6_400_000]);
}

/// The 26 with / without ratios the docs table counts ("within 20 %" column), under
/// the hit cost of this thread ([`with_hit_cost`]): (entry, ratio, published,
/// simulated). Published as the docs table prints them.
fn corpus_ratios() -> Vec<(&'static str, &'static str, f64, f64)> {
    let mut out = Vec::new();
    let off = corpus08(false);
    let hit = corpus08(true);
    out.push((
        "08",
        "EIC hit / off, TTFT",
        0.892,
        hit.ttft_mean_s / off.ttft_mean_s,
    ));
    out.push((
        "08",
        "EIC hit / off, tput",
        1.108,
        hit.input_tok_s / off.input_tok_s,
    ));
    let g = corpus05("gpu_only", 10.0);
    let l2 = corpus05("l2", 10.0);
    let mc = corpus05("mooncake", 10.0);
    let pop = corpus05("populated", 10.0);
    for (what, r, pt, pi) in [
        (("+L2, TTFT", "+L2, tput"), &l2, 0.677, 1.412),
        (
            ("+Mooncake 10 GB/s, TTFT", "+Mooncake 10 GB/s, tput"),
            &mc,
            0.302,
            2.915,
        ),
        (
            ("populated Mooncake, TTFT", "populated Mooncake, tput"),
            &pop,
            0.240,
            3.440,
        ),
    ] {
        out.push(("05", what.0, pt, r.ttft_mean_s / g.ttft_mean_s));
        out.push(("05", what.1, pi, r.input_tok_s / g.input_tok_s));
    }
    let g = corpus04("gpu_only", 20.0);
    let l2 = corpus04("l2", 20.0);
    let mc = corpus04("mooncake", 20.0);
    let round = |r: &BenchResult, i: usize| r.per_round_ttft_mean_s[i] / g.per_round_ttft_mean_s[i];
    out.push(("04", "+L2 round 9", 0.935, round(&l2, 9)));
    out.push(("04", "+L2 round 4", 0.68, round(&l2, 4)));
    out.push(("04", "+Mooncake 20 GB/s round 9", 0.184, round(&mc, 9)));
    let c = corpus06_cfg();
    let (cold, hot) = hbm_hit_pair(&c, 8, 4, 131_072, 512, 1, 0.9);
    out.push((
        "06",
        "128K c1 90 % HBM hit",
        0.201,
        hot.ttft_mean_s / cold.ttft_mean_s,
    ));
    let (cold, hot) = hbm_hit_pair(&c, 8, 64, 8192, 512, 16, 0.9);
    out.push((
        "06",
        "8K c16 90 % HBM hit",
        0.279,
        hot.ttft_mean_s / cold.ttft_mean_s,
    ));
    let (cold, hot) = hbm_hit_pair(&corpus07_cfg(), 4, 64, 8192, 512, 16, 0.9);
    out.push((
        "07",
        "8K c16 90 % HBM hit",
        0.377,
        hot.ttft_mean_s / cold.ttft_mean_s,
    ));
    let l1 = corpus09(false);
    let l2 = corpus09(true);
    for (i, p) in [(3, 0.731), (4, 0.234)] {
        let what = if i == 3 { "+L2 round 3" } else { "+L2 round 4" };
        out.push((
            "09",
            what,
            p,
            l2.per_round_ttft_mean_s[i] / l1.per_round_ttft_mean_s[i],
        ));
    }
    let (c, reqs) = corpus10();
    let (_, t) = hicache_sim::runtime::replay_timed(&c, reqs, &[]).unwrap();
    let (cold, hot) = corpus10_ttfts(&t);
    out.push(("10", "L2 hit / cold", 0.130, hot / cold));
    let (c, reqs) = corpus11_restore();
    let (_, t) = hicache_sim::runtime::replay_timed(&c, reqs, &[]).unwrap();
    let ttft = |i: usize| (t[i].first_token_ns - t[i].arrival_ns) as f64;
    out.push(("11", "100K L2 restore / cold", 0.073, ttft(2) / ttft(0)));
    for (e, run, reqs, pt, pr) in [
        (
            "17",
            corpus17 as fn(bool) -> BenchResult,
            1536.0,
            0.634,
            1.400,
        ),
        ("18", corpus18, 1280.0, 0.573, 1.607),
    ] {
        let off = run(false);
        let on = run(true);
        out.push((e, "+L3, TTFT", pt, on.ttft_mean_s / off.ttft_mean_s));
        out.push((
            e,
            "+L3, req/s",
            pr,
            (reqs / on.duration_s) / (reqs / off.duration_s),
        ));
    }
    for (e, c, l1, l2, p2, p3) in [
        (
            "19",
            corpus19_cfg(),
            374_784 / 64,
            678_208 / 64,
            0.168,
            0.658,
        ),
        (
            "20",
            corpus20_cfg(),
            705_856 / 64,
            1_220_736 / 64,
            0.0277,
            0.141,
        ),
    ] {
        let (rc, h2, h3) = tier_curve(&c, l1, l2, 32_512);
        out.push((e, "L2 hit / recompute, 32 512", p2, h2 / rc));
        out.push((e, "L3 hit / recompute, 32 512", p3, h3 / rc));
    }
    out
}

/// The sensitivity's one value, ns per cached token: least squares through the origin
/// of (published L1-hit TTFT − the replay's L1-hit TTFT) over the cached tokens x of
/// #19's and #20's four L1 probes (derived and checked in
/// `hit_cost_sensitivity_over_the_corpus`). A probe of L tokens hits x = L − 64; the
/// replay's L1 hit is the TokenizerManager's encode of the text, the request's fixed way
/// (6 ms) and an extend of 64:
///
/// | probe | x | published | replay (encode + 6 ms + extend of 64) | difference |
/// |---|---|---|---|---|
/// | #19 16 384 | 16 320 | 0.159 s | 0.120248 s | 0.038752 s |
/// | #19 32 512 | 32 448 | 0.251 s | 0.230487 s | 0.020513 s |
/// | #20 16 384 | 16 320 | 0.1559 s | 0.125261 s | 0.030639 s |
/// | #20 32 512 | 32 448 | 0.2811 s | 0.237696 s | 0.043404 s |
///
/// Σ x·d = 16 320 × (0.038752 + 0.030639) + 32 448 × (0.020513 + 0.043404)
///       = 1 132.5 + 2 074.0 = 3 206.4 s·token;
/// Σ x² = 2 × 16 320² + 2 × 32 448² = 2 638 430 208;
/// h = 3 206.4 / 2 638 430 208 = 1.215 µs per cached token (the four points alone:
/// 2.37, 0.63, 1.88, 1.34 µs: falling with length, the mark of a fixed cost per request,
/// the report's ~30 ms intercept less the replay's 6 ms `request_overhead`, spread over
/// tokens). Before the request's fixed way was charged the same fit gave 1.437 µs, and
/// before the encode was modelled (token ids) 8.209 µs.
const L1_PROBE_HIT_COST_NS: u64 = 1_215;

/// Simulated (without, with the hit cost) for each row of [`corpus_ratios`], to 4
/// significant digits.
const SENSITIVITY: [(f64, f64); 26] = [
    (0.90794, 0.90856),
    (1.0994, 1.0988),
    (0.65078, 0.65243),
    (1.4923, 1.4891),
    (0.15630, 0.15986),
    (4.6886, 4.6171),
    (0.030164, 0.031885),
    (10.243, 10.058),
    (0.94553, 0.94772),
    (0.58946, 0.60238),
    (0.25883, 0.25903),
    (0.16192, 0.19832),
    (0.29234, 0.55966),
    (0.32176, 0.65617),
    (0.64381, 0.64854),
    (0.26153, 0.26665),
    (0.14113, 0.15984),
    (0.034451, 0.040122),
    (0.67300, 0.67356),
    (1.5785, 1.5771),
    (0.62614, 0.62657),
    (1.6802, 1.6787),
    (0.16184, 0.18127),
    (0.54279, 0.56222),
    (0.069431, 0.078059),
    (0.53054, 0.53917),
];

/// Each request's fixed 6 ms way through the server (`request_overhead`, the scenario
/// default the corpus runs with) against none: 18 of the 26 counted ratios within 20 %
/// with it, 16 without; it brings B06 128K (−20.1 → −19.4 %) and B07 (−20.7 → −14.6 %)
/// in and takes none out.
#[test]
fn the_fixed_way_of_a_request_over_the_corpus() {
    let with = corpus_ratios();
    let without = with_request_overhead(0, corpus_ratios);
    let within = |sim: f64, p: f64| (sim / p - 1.0).abs() < 0.20;
    let count = |rows: &[(&str, &str, f64, f64)]| rows.iter().filter(|r| within(r.3, r.2)).count();
    assert_eq!((count(&with), count(&without)), (18, 16));
    let moved: Vec<(&str, &str, f64, f64)> = with
        .iter()
        .zip(&without)
        .filter(|(a, b)| within(a.3, a.2) != within(b.3, b.2))
        .map(|(a, b)| (a.0, a.1, b.3 / b.2 - 1.0, a.3 / a.2 - 1.0))
        .collect();
    assert_eq!(moved.len(), 2, "{moved:?}");
    for ((e, what, before, after), want) in moved.iter().zip([
        ("06", "128K c1 90 % HBM hit", -0.201, -0.194),
        ("07", "8K c16 90 % HBM hit", -0.207, -0.146),
    ]) {
        assert_eq!((*e, *what), (want.0, want.1));
        assert!((before - want.2).abs() < 0.002, "{e} {before}");
        assert!((after - want.3).abs() < 0.002, "{e} {after}");
    }
}

#[test]
fn hit_cost_sensitivity_over_the_corpus() {
    // 1. The value, from #19 / #20's L1 hits only (not from any ratio it is tried on).
    let probes = [
        ("#19", corpus19_cfg(), 374_784 / 64, 678_208 / 64, C19_L1),
        ("#20", corpus20_cfg(), 705_856 / 64, 1_220_736 / 64, C20_L1),
    ];
    let (mut sxy, mut sxx) = (0.0, 0.0);
    let mut points = Vec::new();
    for (name, c, l1, l2, published) in &probes {
        for (len, p) in [16_384u64, 32_512].into_iter().zip(published) {
            let n = len / 64;
            let (s, m) = tier_probe(c, *l1, *l2, n, Probe::L1);
            let x = (n - 1) * 64;
            assert_eq!((m.device_hit_tokens, m.host_hit_tokens), (x, 0));
            println!(
                "{name} L={len}: L1 hit published {p} s, simulated {s:.6} s, cached {x}: {:.3} us per cached token",
                (p - s) / x as f64 * 1e6
            );
            sxy += x as f64 * (p - s);
            sxx += (x * x) as f64;
            points.push((c.clone(), *l1, *l2, n, s, x));
        }
    }
    let h = sxy / sxx;
    println!(
        "least squares: {sxy:.3} / {sxx:.4e} = {:.1} ns per cached token",
        h * 1e9
    );
    assert_eq!((h * 1e9).round() as u64, L1_PROBE_HIT_COST_NS);
    // With it, each L1 probe (alone on an idle GPU) is its old TTFT + h × cached.
    for (c, l1, l2, n, s, x) in points {
        let mut c = c;
        c.scheduler.compute.hit_cost_per_cached_token = Duration(L1_PROBE_HIT_COST_NS);
        let (t, _) = tier_probe(&c, l1, l2, n, Probe::L1);
        let want = s + (x * L1_PROBE_HIT_COST_NS) as f64 / 1e9;
        assert!((t - want).abs() < 1e-9, "{t} vs {want}");
    }

    // 2. That one value, unchanged, over every counted ratio of the corpus.
    let without = with_hit_cost(0, corpus_ratios);
    let with = with_hit_cost(L1_PROBE_HIT_COST_NS, corpus_ratios);
    assert_eq!(without.len(), 26);
    let within = |sim: f64, p: f64| (sim / p - 1.0).abs() < 0.20;
    let (mut n0, mut n1) = (0, 0);
    println!(
        "| # | ratio | published | simulated without | with {L1_PROBE_HIT_COST_NS} ns / cached token |"
    );
    println!("|---|---|---|---|---|");
    for (a, b) in without.iter().zip(&with) {
        let (e, what, p, s0) = *a;
        let s1 = b.3;
        n0 += usize::from(within(s0, p));
        n1 += usize::from(within(s1, p));
        let mark = |s: f64| if within(s, p) { " ✓" } else { "" };
        // Four significant digits.
        let sig = |x: f64| format!("{x:.*}", (3 - x.log10().floor() as i32).max(0) as usize);
        println!(
            "| {e} | {what} | {p} | {} ({:+.0} %){} | {} ({:+.0} %){} |",
            sig(s0),
            (s0 / p - 1.0) * 100.0,
            mark(s0),
            sig(s1),
            (s1 / p - 1.0) * 100.0,
            mark(s1)
        );
    }
    println!("within 20 %: {n0} of 26 without, {n1} of 26 with");
    for ((a, b), &(w0, w1)) in without.iter().zip(&with).zip(&SENSITIVITY) {
        for (sim, want) in [(a.3, w0), (b.3, w1)] {
            assert!(
                (sim / want - 1.0).abs() < 0.002,
                "#{} {}: {sim} (expected {want})",
                a.0,
                a.1
            );
        }
    }
    // 18 without (the docs table), 15 with: it takes #06 8K (+5 → +101 %), #07 (−15 →
    // +74 %) and #10 (+9 → +23 %) out; #06 128K (−19 → −1 %) was in already.
    assert_eq!((n0, n1), (18, 15));
    // Why #06 8K and #07 go the wrong way. A 90 % hit of an 8 192-token prompt is 7 360
    // cached tokens (115 pages): 8.9 ms at 1.215 µs each, 0.09 × the replay's whole
    // cold prefill of that prompt on the assumed 8 × H200 TP8 (#06, 97.9 ms with the
    // request's fixed 6 ms) and 0.13 × on 4 × H200 TP4 (#07, 67.9 ms). But hits batch:
    // with 832 new tokens each, up to nine hit requests share one 8 192-token prefill
    // batch and each gets its first token when all their hit costs are paid, where cold
    // prompts go one per batch. With one request per batch (`max_prefill_tokens` 1 000)
    // the hit arm's mean TTFT falls from 0.151 to 0.066 s (#06) and from 0.121 to 0.057 s
    // (#07), against 0.079 / 0.059 s without the charge (the hit arm's HiCache per-step
    // synchronisation, 0.5 ms a scheduler iteration, in all of them).
    for (cfg, tp, name, cold_alone, batched, single) in [
        (
            corpus06_cfg as fn() -> ReplayConfig,
            8,
            "#06",
            0.09786,
            0.1512,
            0.0659,
        ),
        (corpus07_cfg, 4, "#07", 0.06787, 0.1207, 0.0570),
    ] {
        let b = Multiturn::fixed_concurrency(1, 8192, 1, 1);
        let cold = bench::run(&cfg(), &b, &[], 50).unwrap().ttft_mean_s;
        let hot = |budget: u32| {
            with_hit_cost(L1_PROBE_HIT_COST_NS, || {
                let mut c = cfg();
                c.scheduler.max_prefill_tokens = budget;
                hbm_hit_pair(&c, tp, 64, 8192, 512, 16, 0.9).1.ttft_mean_s
            })
        };
        let (h_batched, h_single) = (hot(16_384), hot(1000));
        println!(
            "{name}: cold 8 192-token prefill alone {cold:.4} s; hit arm TTFT {h_batched:.4} s, {h_single:.4} s with one request per batch"
        );
        for (sim, want) in [(cold, cold_alone), (h_batched, batched), (h_single, single)] {
            assert!((sim / want - 1.0).abs() < 0.002, "{name}: {sim} vs {want}");
        }
    }
}

// ------------------------------------------------------------------ tokenizer sensitivity

/// The docs page the tokenizer sensitivity is written to, and its two blocks' names:
/// the table (in "The TokenizerManager") and the counts after the bench-corpus table.
const TOKENIZER_DOC: (&str, &str, &str) = (
    "docs/src/fidelity/time-costs.md",
    "tokenizer sensitivity",
    "tokenizer counts",
);

/// An error `simulated ÷ published − 1` in whole percent, signed ("+4 %", "−23 %").
fn whole_pct(e: f64) -> String {
    format!("{:+.0} %", e * 100.0).replace('-', "−")
}

/// "B10 L2 hit / cold, B19 L2 hit / recompute, 32 512 and …" for rows of [`corpus_ratios`].
fn ratio_names(rows: &[&(&str, &str, f64, f64)]) -> String {
    let names: Vec<String> = rows.iter().map(|r| format!("B{} {}", r.0, r.1)).collect();
    and_list(&names)
}

/// The corpus's 26 ratios with the TokenizerManager's encode (`runtime::frontend`) at
/// the measured rates (the docs table), without it (every client sending token ids,
/// each request's fixed way through the server still charged), at 75 % and 125 % of the measured rates
/// (the measurement's run-to-run spread on this 2-core machine was 5.8–7.2 µs per
/// probe token at 32 512), and with B06 / B07's unnamed client taken to send text
/// (`bench_serving`'s default). Writes the table and its counts to
/// `docs/src/fidelity/time-costs.md` (`UPDATE_DOCS=1`; otherwise a block that differs
/// fails, `support::check_doc`); `-- --nocapture` prints them.
#[test]
fn tokenizer_sensitivity_over_the_corpus() {
    let runs = [
        ("measured", 100, false),
        ("token ids", 0, false),
        ("75 %", 75, false),
        ("125 %", 125, false),
        ("B06/B07 text", 100, true),
    ];
    // The five runs are independent (the settings are thread-local): one thread each.
    let all: Vec<Vec<(&'static str, &'static str, f64, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .iter()
            .map(|&(_, pct, unknown)| s.spawn(move || with_tokenizer(pct, unknown, corpus_ratios)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (measured, ids, r75, r125) = (&all[0], &all[1], &all[2], &all[3]);
    let within = |x: &(&str, &str, f64, f64)| within_20(x.2, x.3);

    let mut table = format!(
        "| # | ratio | published | {} |\n|---|---|---|{}\n",
        runs.map(|r| r.0).join(" | "),
        "---|".repeat(runs.len())
    );
    for i in 0..measured.len() {
        let (e, what, p, _) = measured[i];
        let cells: Vec<String> = all
            .iter()
            .map(|r| {
                assert_eq!((r[i].0, r[i].1), (e, what));
                let mark = if within(&r[i]) { " ✓" } else { "" };
                format!("{}{mark}", whole_pct(r[i].3 / p - 1.0))
            })
            .collect();
        table.push_str(&format!("| {e} | {what} | {p} | {} |\n", cells.join(" | ")));
    }
    let counts: Vec<usize> = all
        .iter()
        .map(|r| r.iter().filter(|x| within(x)).count())
        .collect();
    // The ratios whose verdict the rate moves within ±25 % of the measured one.
    let swung: Vec<usize> = (0..measured.len())
        .filter(|&i| {
            let v = [within(&r75[i]), within(&measured[i]), within(&r125[i])];
            v.contains(&true) && v.contains(&false)
        })
        .collect();
    let swings: Vec<String> = swung
        .iter()
        .map(|&i| {
            let e: Vec<String> = [r75, measured, r125]
                .iter()
                .map(|r| whole_pct(r[i].3 / r[i].2 - 1.0))
                .collect();
            format!(
                "B{} {} ({} at 75 / 100 / 125 %)",
                measured[i].0,
                measured[i].1,
                e.join(" / ")
            )
        })
        .collect();
    table.push_str(&format!(
        "\nWithin 20 %: {} of {} (the columns in order). Across ±25 % of the measured rates \
         the verdict changes for {}.\n",
        counts
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" / "),
        measured.len(),
        and_list(&swings),
    ));

    // The counts after the bench-corpus table: what the encode brought in and took out.
    let came_in: Vec<_> = measured
        .iter()
        .zip(ids)
        .filter(|(m, t)| within(m) && !within(t))
        .map(|(m, _)| m)
        .collect();
    let went_out: Vec<_> = measured
        .iter()
        .zip(ids)
        .filter(|(m, t)| !within(m) && within(t))
        .map(|(m, _)| m)
        .collect();
    let mut moved = format!("{} come in with it", ratio_names(&came_in));
    if !went_out.is_empty() {
        moved.push_str(&format!(", {} go out", ratio_names(&went_out)));
    }
    let (lo, hi) = (
        counts[0].min(counts[2]).min(counts[3]),
        counts[0].max(counts[2]).max(counts[3]),
    );
    let note = format!(
        "The count of ratios within 20 % at other encode rates (\"The TokenizerManager\", \
         below): {} of {} with token ids (each request's fixed way still charged; 13 before \
         it), before the TokenizerManager's encode was modelled \
         ({moved}); {lo}–{hi} across ±25 % of the measured rate.\n",
        counts[1],
        measured.len(),
    );
    print!("{table}\n{note}");

    // The default, 18 (with the request's fixed way through the server, 6 ms): B19 L2
    // and L3 and B10 come in against token ids (−64 → −4 %, −26 → −18 %, −69 → +9 %),
    // B20 L2 goes out (−19 → +151 %). Token ids everywhere: 16 (13 before the fixed way
    // was charged). 19 at 75 % of the rates (B04 Mooncake round 9 comes in: it swings
    // −20 / +5 / +41 / +77 % at 0 / 75 / 100 / 125 %, its 80 round-9 prompts of ~20 K
    // tokens queueing at the one tokenizer once Mooncake makes the GPU side fast), 17 at
    // 125 % (B10 leaves, +25 %). B06 / B07 sending text: 15, B06 128K, B06 8K and B07
    // leave (+50 %, +79 %, +78 %).
    assert_eq!(counts, [18, 16, 19, 17, 15]);
    let key = |r: &(&'static str, &'static str, f64, f64)| (r.0, r.1);
    assert_eq!(
        came_in.iter().map(|r| key(r)).collect::<Vec<_>>(),
        [
            ("10", "L2 hit / cold"),
            ("19", "L2 hit / recompute, 32 512"),
            ("19", "L3 hit / recompute, 32 512"),
        ]
    );
    assert_eq!(
        went_out.iter().map(|r| key(r)).collect::<Vec<_>>(),
        [("20", "L2 hit / recompute, 32 512")]
    );
    assert_eq!(
        swung.iter().map(|&i| key(&measured[i])).collect::<Vec<_>>(),
        [("04", "+Mooncake 20 GB/s round 9"), ("10", "L2 hit / cold")]
    );
    crate::support::check_doc(TOKENIZER_DOC.0, TOKENIZER_DOC.1, &table).unwrap();
    crate::support::check_doc(TOKENIZER_DOC.0, TOKENIZER_DOC.2, &note).unwrap();
}

/// The tokenizer sensitivity's block in the docs fails the check when a cell is edited
/// by hand (a copy of the page with one error changed), and passes as written.
#[test]
fn a_hand_edited_tokenizer_sensitivity_cell_is_stale() {
    let page = std::fs::read_to_string(crate::support::repo(TOKENIZER_DOC.0)).unwrap();
    let begin = format!("<!-- BEGIN generated: {} -->\n", TOKENIZER_DOC.1);
    let end = format!("<!-- END generated: {} -->", TOKENIZER_DOC.1);
    let a = page.find(&begin).expect("the begin marker") + begin.len();
    let b = a + page[a..].find(&end).expect("the end marker");
    let block = &page[a..b];
    // B04 Mooncake round 9's row, its "measured" cell changed.
    let row = block
        .lines()
        .find(|l| l.starts_with("| 04 | +Mooncake"))
        .expect("a B04 Mooncake row");
    let edited = {
        let mut cells: Vec<&str> = row.split(" | ").collect();
        let c = format!("{}0", cells[3]);
        cells[3] = &c;
        cells.join(" | ")
    };
    assert_ne!(row, edited);
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("time-costs.md");
    std::fs::write(&p, &page).unwrap();
    let rel = p.to_str().unwrap();
    assert!(crate::support::check_doc(rel, TOKENIZER_DOC.1, block).is_ok());
    std::fs::write(&p, page.replacen(row, &edited, 1)).unwrap();
    if std::env::var_os("UPDATE_DOCS").is_none() {
        let e = crate::support::check_doc(rel, TOKENIZER_DOC.1, block).unwrap_err();
        assert!(e.contains("stale or was edited by hand"), "{e}");
    }
}

// ------------------------------------------------------------------ the docs table

/// The docs page the corpus table is written to, and its block's name.
const BENCH_DOC: (&str, &str) = ("docs/src/fidelity/time-costs.md", "bench corpus");

/// "a", "a and b", "a, b and c".
fn and_list(v: &[String]) -> String {
    match v {
        [] => String::new(),
        [a] => a.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The "Published results replayed" table of `docs/src/fidelity/time-costs.md`, with
/// its counts, written from the cases' own runs (every case's bounds asserted on the
/// way: #04 and #17, the slow ones, are run only here). `UPDATE_DOCS=1` writes it;
/// otherwise a table that differs fails (`support::check_doc`).
#[test]
fn bench_corpus_table_in_the_docs() {
    let (rows, notes) = std::thread::scope(|s| {
        let c04 = s.spawn(corpus04_rows);
        let c17 = s.spawn(corpus17_rows);
        let (r09, h09) = corpus09_rows();
        let (r04, h04) = c04.join().unwrap();
        let rows: Vec<BenchRow> = [
            corpus08_rows(),
            corpus05_rows(),
            r04,
            corpus06_rows(),
            corpus07_rows(),
            r09,
            corpus10_rows(),
            corpus11_rows(),
            c17.join().unwrap(),
            corpus18_rows(),
            corpus19_rows(),
            corpus20_rows(),
        ]
        .into_iter()
        .flatten()
        .collect();
        (rows, [h04, h09])
    });
    let rounds12 = corpus12_rounds();

    let mut timed: Vec<&str> = rows.iter().map(|r| r.entry).collect();
    timed.sort();
    timed.dedup();
    let assumed: Vec<String> = timed
        .iter()
        .filter(|e| {
            rows.iter()
                .any(|r| r.entry == **e && r.setup.contains("[assumed"))
        })
        .map(|e| format!("B{e}"))
        .collect();
    let timed: Vec<String> = timed.iter().map(|e| format!("B{e}")).collect();
    let entries = std::fs::read_dir(crate::support::repo("tests/bench_corpus"))
        .unwrap()
        .filter(|f| {
            f.as_ref()
                .unwrap()
                .file_name()
                .to_str()
                .unwrap()
                .ends_with(".yaml")
        })
        .count();
    // #12 is replayed for its hit rates only (no model or GPU: no time).
    let replayed = timed.len() + 1;
    let exact12 = rounds12
        .iter()
        .filter(|(p, s)| (p - s).abs() < 5e-7)
        .count();
    let ratios: Vec<(f64, f64)> = rows
        .iter()
        .flat_map(|r| match &r.verdict {
            Verdict::Counted(v) => v.clone(),
            _ => Vec::new(),
        })
        .collect();
    let within = ratios.iter().filter(|&&(p, s)| within_20(p, s)).count();
    // The counted ratios are `corpus_ratios`' 26, in its order: the sensitivities'
    // "without" column.
    assert_eq!(ratios.len(), SENSITIVITY.len());
    for (&(_, s), &(w, _)) in ratios.iter().zip(&SENSITIVITY) {
        assert!((s / w - 1.0).abs() < 0.002, "{s} (expected {w})");
    }

    let mut out = format!(
        "{replayed} of the {entries} entries are replayed: {} timed ({}; {} under a stated \
         model/GPU assumption, since their sources do not give one) and B12's per-round hit \
         rates ({exact12} of {} rounds equal to the printed six digits). **{within} of {} \
         with/without ratios are within 20 %**. The other {} cannot be replayed (below).\n\n",
        timed.len(),
        timed.join(", "),
        and_list(&assumed),
        rounds12.len(),
        ratios.len(),
        entries - replayed,
    );
    out.push_str(
        "| # | model, GPUs, cost | config | TTFT published → simulated | input tok/s published → simulated | ratio published → simulated | within 20 % |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in &rows {
        out.push_str(&r.markdown());
    }
    out.push_str(&format!(
        "\nPer-round cache hit rates (published → simulated): {}.\n",
        notes.join("; ")
    ));
    print!("{out}");
    // What the docs' prose says of the table: every case is replayed, #12's rounds are
    // exact, and the count of ratios within 20 %.
    assert_eq!((replayed, entries, exact12), (13, 34, 9));
    assert_eq!((within, ratios.len()), (18, 26));
    crate::support::check_doc(BENCH_DOC.0, BENCH_DOC.1, &out).unwrap();
}

/// The corpus table's block in the docs fails the check when a cell is edited by hand
/// (a copy of the page with one simulated figure changed), and passes as written.
#[test]
fn a_hand_edited_bench_corpus_cell_is_stale() {
    let page = std::fs::read_to_string(crate::support::repo(BENCH_DOC.0)).unwrap();
    let begin = format!("<!-- BEGIN generated: {} -->\n", BENCH_DOC.1);
    let end = format!("<!-- END generated: {} -->", BENCH_DOC.1);
    let a = page.find(&begin).expect("the begin marker") + begin.len();
    let b = a + page[a..].find(&end).expect("the end marker");
    let block = &page[a..b];
    // One cell of the table: the first row's TTFT, its simulated figure changed.
    let row = block
        .lines()
        .find(|l| l.starts_with("| 08 |"))
        .expect("a B08 row");
    let cell = row.split(" | ").nth(3).unwrap();
    let edited = cell.replacen(" → ", " → 9", 1);
    assert_ne!(cell, edited);
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("time-costs.md");
    std::fs::write(&p, &page).unwrap();
    let rel = p.to_str().unwrap();
    assert!(crate::support::check_doc(rel, BENCH_DOC.1, block).is_ok());
    std::fs::write(&p, page.replacen(cell, &edited, 1)).unwrap();
    if std::env::var_os("UPDATE_DOCS").is_none() {
        let e = crate::support::check_doc(rel, BENCH_DOC.1, block).unwrap_err();
        assert!(e.contains("stale or was edited by hand"), "{e}");
    }
}

/// The speeds line of `replay scenarios/quickstart-timed.yaml` with `sets`.
fn quickstart_timed_speeds(sets: &[&str]) -> std::process::Output {
    let mut args = vec!["replay", "scenarios/quickstart-timed.yaml"];
    for s in sets {
        args.extend(["--set", s]);
    }
    crate::support::run(&args, &crate::support::repo(""))
}

/// The timed replay cuts prefill batches at the scheduler's chunk: the launch flag, else
/// the GPU tier's default (GB300, 279 GiB > 160 GiB: 16 384), floor-divided per DP worker
/// under DP attention (16 384 // 4 = 4 096), as `handle_gpu_memory_settings` and
/// `handle_data_parallelism` set it. A `runtime.replay` chunk that contradicts the flag
/// is exit 2 naming both; a `compute:` map that sets only its source keeps the chunk.
#[test]
fn the_replay_chunks_at_the_schedulers_chunked_prefill_size() {
    let speeds = |o: &std::process::Output| {
        let t = String::from_utf8_lossy(&o.stdout).to_string();
        t.lines()
            .find(|l| l.starts_with("speeds:"))
            .unwrap_or_else(|| panic!("{t}{}", String::from_utf8_lossy(&o.stderr)))
            .to_string()
    };
    let o = quickstart_timed_speeds(&[]);
    assert!(speeds(&o).contains("; chunk 16384;"), "{}", speeds(&o));
    let o = quickstart_timed_speeds(&["server.chunked_prefill_size=4096"]);
    assert!(speeds(&o).contains("; chunk 4096;"), "{}", speeds(&o));
    // DP ranks run in lockstep, each chunking at the per-worker chunk.
    let o = quickstart_timed_speeds(&["server.enable_dp_attention=true", "server.dp_size=4"]);
    assert!(speeds(&o).contains("; chunk 4096;"), "{}", speeds(&o));
    assert!(
        speeds(&o).contains("; DP attention 4 ranks round_robin lockstep: every forward ends"),
        "{}",
        speeds(&o)
    );
    let o = crate::support::run(
        &[
            "replay",
            "scenarios/quickstart-timed.yaml",
            "--set",
            "server.enable_dp_attention=true",
            "--set",
            "server.dp_size=4",
            "--set",
            "runtime.replay.timing=off",
            "--format",
            "json",
        ],
        &crate::support::repo(""),
    );
    crate::support::ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["compute"]["chunked_prefill_size"], 4096);
    assert_eq!(v["config"]["dp_ranks"], 4);
    assert_eq!(v["metrics"]["ranks"].as_array().unwrap().len(), 4);
    // -1 (or 0): no chunking
    let o = quickstart_timed_speeds(&["server.chunked_prefill_size=-1"]);
    assert!(speeds(&o).contains("; chunk 0;"), "{}", speeds(&o));
    let o = quickstart_timed_speeds(&[
        "server.chunked_prefill_size=4096",
        "runtime.replay.compute.chunked_prefill_size=8192",
    ]);
    crate::support::exit2(
        &o,
        &[
            "runtime.replay.compute.chunked_prefill_size",
            "8192 contradicts server.chunked_prefill_size 4096",
        ],
    );
    // agreeing is fine
    let o = quickstart_timed_speeds(&[
        "server.chunked_prefill_size=4096",
        "runtime.replay.compute.chunked_prefill_size=4096",
    ]);
    assert!(speeds(&o).contains("; chunk 4096;"));
}
