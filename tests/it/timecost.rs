//! What a hit buys in time (issue #22): the compute-cost model against hand-computed
//! cases, and the three replayable published HiCache results of `tests/bench_corpus/`
//! (#04, #05, #08) replayed through the timed replay with closed-loop clients.
//!
//! Bounds: the corpus figures are asserted within the error the README table states
//! (the simulated values are printed by `cargo test --test it timecost -- --nocapture`).

use hicache_sim::cache::{PrefetchPolicy, WritePolicy};
use hicache_sim::model::{ModelQuery, catalogue, resolve};
use hicache_sim::runtime::cost::bench::{self, BenchResult, Multiturn};
use hicache_sim::runtime::cost::roofline::{ModelFacts, Roofline, gpu};
use hicache_sim::runtime::cost::{Compute, ComputeSource};
use hicache_sim::runtime::{ReplayConfig, Timing, replay};
use hicache_sim::units::{Bandwidth, GB};
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

fn base(page_size: u32, bytes_per_token: u64, layers: u32, compute: Compute) -> ReplayConfig {
    ReplayConfig {
        timing: Timing::On,
        page_size,
        bytes_per_token,
        num_layers: layers,
        compute,
        max_running_requests: 256,
        max_prefill_tokens: 16_384,
        write_policy: WritePolicy::WriteThrough,
        ..ReplayConfig::default()
    }
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
    c.max_prefill_tokens = 4096;
    let m = replay(&c, reqs(1)).unwrap();
    assert_eq!(m.ttft_p50_s, Some(0.2048));
    c.compute.source = ComputeSource::Table {
        node: "gb300".into(),
        model: "llama-3.1-70b".into(),
        quant: "bf16".into(),
        tp: 4,
    };
    let t = hicache_sim::runtime::cost::table::find("gb300", "llama-3.1-70b", "bf16", 4).unwrap();
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
                quant: "bf16".into(),
                tp: 4,
            },
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
        },
    );
    c.l1_pages = 130;
    c.l2_pages = 1000;
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
    let t =
        hicache_sim::runtime::cost::table::find("hgx-h100", "llama-3.1-70b", "bf16", 4).unwrap();
    let fwd = t.prefill_us(&[(64, 8192)]) * 1e3;
    // 128 pages · 64 tokens · 327 680 B = 2.684 GB at 55 GB/s · 0.85, + 80 runs · 6.67 µs.
    let load = 2_684_354_560.0 / (55e9 * 0.85) * 1e9 + 80.0 * 6670.0;
    let ttft = (times[2].first_token_ns - times[2].arrival_ns) as f64;
    assert!(
        ttft >= fwd.max(load) && ttft < fwd + load,
        "ttft {ttft} fwd {fwd} load {load}"
    );
    assert!(
        ttft < fwd.max(load) * 1.02,
        "one layer's slice at most: {ttft}"
    );
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
        },
    );
    // Device pool [EST]: 0.85 × 22.5 GiB − 13.8 GiB of weights per rank − ~1.3 GiB of
    // activations/graphs ≈ 4.0 GiB ÷ 80 KiB = 52 K tokens = 820 pages.
    c.l1_pages = 820;
    // PCIe Gen4 x16 to host [EST]; eRDMA 2 × 100 Gb/s per node shared by 2 ranks,
    // ~10 GB/s per rank achieved [EST].
    c.h2d_bandwidth = Bandwidth(25.0 * GB as f64);
    c.d2h_bandwidth = Bandwidth(25.0 * GB as f64);
    c.storage_read_bandwidth = Bandwidth(mooncake_gbs * GB as f64);
    c.storage_write_bandwidth = Bandwidth(mooncake_gbs * GB as f64);
    c.l2_pages = 0;
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
        c.l2_pages = 2 * c.l1_pages; // --hicache-ratio 2
    }
    if tiers == "mooncake" || tiers == "populated" {
        // 150 GB pool ÷ (2 ranks × 80 KiB per token) = 915 K tokens.
        c.l3_pages = Some(150_000_000_000 / (2 * u64::from(kv)) / 64);
        c.prefetch_policy = PrefetchPolicy::WaitComplete;
    }
    if tiers == "populated" {
        // Every client's whole conversation (its last round's pages hold the others).
        for client in 0..bench.clients {
            preload.extend(bench.pages(client, bench.rounds - 1, 64));
        }
    }
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
                quant: "bf16".into(),
                tp: 8,
            },
            // 80 GB < 160 GiB: handle_gpu_memory_settings → 8 192.
            chunked_prefill_size: 8192,
            compute_scale: 1.0,
        },
    );
    // Device pool [EST]: 0.79 × 79.6 GiB − 54.7 GiB of weights per rank ≈ 8.2 GiB ÷
    // 47 KiB = 183 K tokens = 2 860 pages.
    c.l1_pages = 2860;
    c.l2_pages = 0;
    // PCIe Gen5 host link (as hgx-h100); Mooncake over one 400 Gb/s RDMA NIC per GPU,
    // ~20 GB/s per rank achieved [EST].
    c.storage_read_bandwidth = Bandwidth(mooncake_gbs * GB as f64);
    c.storage_write_bandwidth = Bandwidth(mooncake_gbs * GB as f64);
    match tiers {
        "l2" => c.l2_pages = 30_000_000_000 / kv / 64, // --hicache-size 30 (GB per rank)
        "mooncake" => {
            c.l2_pages = 2 * c.l1_pages; // --hicache-ratio 2
            // 760 GB ÷ (8 ranks × 48 128 B) = 1.97 M tokens.
            c.l3_pages = Some(760_000_000_000 / (8 * kv) / 64);
            c.prefetch_policy = PrefetchPolicy::Timeout;
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
        },
    );
    c.max_running_requests = 32; // --max-running-requests 32
    // Device pool [EST]: 0.85 × 95.6 GiB − ~36 GiB of weights per rank ≈ 45 GiB: the
    // 512 K tokens of the run fit (no eviction).
    c.l1_pages = 45 * (1 << 30) / kv / 256;
    c.l2_pages = 0;
    let bench = Multiturn::fixed_concurrency(32, 16_000, 16, 8);
    let mut preload = Vec::new();
    if hit {
        c.l2_pages = 2 * c.l1_pages;
        c.l3_unbounded = true;
        // Published: 0.57 GB/s read, 0.16 GB/s write per rank (EIC, measured).
        c.storage_read_bandwidth = Bandwidth(0.57 * GB as f64);
        c.storage_write_bandwidth = Bandwidth(0.16 * GB as f64);
        // The hit pass waits for its L3 pages (EIC reads them straight to the GPU).
        c.prefetch_policy = PrefetchPolicy::WaitComplete;
        for p in 0..bench.clients {
            preload.extend(bench.pages(p, 0, 256));
        }
    }
    bench::run(&c, &bench, &preload, 200).unwrap()
}

/// `|sim/published − 1|`.
fn err(sim: f64, published: f64) -> f64 {
    (sim / published - 1.0).abs()
}

#[test]
fn corpus_05_qwen3_14b_a10_multiturn() {
    // Published (labelled bars): TTFT 7.78 / 5.27 / 2.35 / 1.87 s, input 4114 / 5809 /
    // 11994 / 14152 tok/s for GPU only / +L2 / +Mooncake / populated Mooncake.
    let g = corpus05("gpu_only", 10.0);
    let l2 = corpus05("l2", 10.0);
    for (n, r) in [("gpu_only", &g), ("l2", &l2)] {
        show(&format!("#05 {n}"), r);
    }
    // Mooncake's achieved bandwidth per rank is not published: nominal 10 GB/s
    // (2 × 100 Gb/s eRDMA per node, 2 ranks), and 1 GB/s for the sensitivity.
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
    }
    // Stated bounds (README table): input throughput within 10 %, TTFT within 45 %
    // (the sim is 38 % / 32 % slow: prefill-first chunks run back to back here), the
    // +L2 / GPU-only TTFT ratio within 10 % of 0.677 and throughput ratio of 1.412.
    assert!(err(g.input_tok_s, 4114.0) < 0.10, "{}", g.input_tok_s);
    assert!(err(l2.input_tok_s, 5809.0) < 0.10, "{}", l2.input_tok_s);
    assert!(err(g.ttft_mean_s, 7.78) < 0.45, "{}", g.ttft_mean_s);
    assert!(err(l2.ttft_mean_s, 5.27) < 0.45, "{}", l2.ttft_mean_s);
    assert!(err(l2.ttft_mean_s / g.ttft_mean_s, 0.677) < 0.10);
    assert!(err(l2.input_tok_s / g.input_tok_s, 1.412) < 0.10);
}

#[test]
fn corpus_04_qwen3_235b_h800_multiturn() {
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
}

#[test]
fn corpus_08_dsv4_flash_h20_eic() {
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
}
