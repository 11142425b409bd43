//! The catalogue's DeepSeek-V4, Gemma 4 and Step-3.7 entries: hand-computed
//! pools, DeepSeek-V4 weights with MXFP4 experts, and what `check` answers for them
//! release by release. SGLang's own figures for every DeepSeek-V4 and Gemma 4 build
//! are checked by `kv_bytes.rs`.

use assert_cmd::Command;
use hicache_sim::model::dsv4::{Dsv4Geometry, Dsv4Schedule};
use hicache_sim::model::{KvDtype, ModelQuery, ParallelLayout, resolve};

fn catalogue_model(id: &str) -> Result<hicache_sim::model::ResolvedModel, String> {
    resolve(&ModelQuery {
        name: Some(id),
        ..Default::default()
    })
    .map_err(|e| e.to_string())
}

fn dsv4(id: &str) -> Dsv4Geometry {
    let m = catalogue_model(id).unwrap();
    Dsv4Geometry::of(&m.preset.attention, m.preset.layers).expect("a DeepSeek-V4 geometry")
}

#[test]
fn deepseek_v4_flash_pools_by_hand() {
    // DeepSeek-V4-Flash (aiconfigurator-core 0.12.0): 43 layers, compress_ratios [0, 0,
    // then 4 / 128 alternating from layer 2, …, 4 | 0 for the MTP layer]: 21 ratio-4
    // layers (2, 4, …, 42), 20 ratio-128 (3, 5, …, 41), 2 window-only.
    let g = dsv4("deepseek-ai/DeepSeek-V4-Flash");
    // The configurator's cap mode (no ratio): DeepSeek-V4 does not reach it in
    // 0.5.21–0.5.23, whose override sets the ratio 0.1 and records it as explicit.
    let cap = Dsv4Schedule {
        operator_swa_full_tokens_ratio: None,
        ..Dsv4Schedule::sglang_default(8192)
    };
    let c = g.coefficients(&cap);
    assert_eq!((c.c4_layers, c.c128_layers), (21, 20));
    // SWA slot: paged V4 rows of 256 tokens, ceil(256 × 584 / 576) × 576 / 256 = 585 B
    // per layer × 43 + C4 compress state 8/256 × (2·2·512 + 2·2·128) × 4 B = 320 × 21:
    // 25,155 + 6,720 = 31,875.
    assert_eq!(c.bytes_per_swa_token, Some(31_875.0));
    // Full token in cap mode (no SWA share): ratio 4 (585 + 132) / 4 = 179.25 × 21 =
    // 3,764.25; ratio 128 ceil(2 × 584 / 576) × 576 / 2 / 128 = 6.75 × 20 = 135.
    assert_eq!(c.bytes_per_full_token, 3_899.25);
    // 100 GiB in cap mode: fixed C128 rings 33,152 rows × 2 × 512 × 4 B × 20 =
    // 2,715,811,840 plus the SWA cap 606,464 × 31,875 = 19,331,040,000; (107,374,182,400
    // − 22,046,851,840) / 3,899.25 = 21,883,010.98 → 21,882,880 (page 256), SGLang's
    // configurator's own figure.
    let p = g.pool_sizes(&cap, 100 << 30, None).unwrap();
    assert_eq!(p.full, 21_882_880);
    assert_eq!((p.swa, p.c4, p.c128), (606_464, 5_470_720, 170_960));
    // SGLang's default (ratio mode at 0.1): the SWA share joins the coefficient,
    // 3,187.5 + 3,899.25 = 7,086.75, and only the C128 rings are fixed.
    let d = Dsv4Schedule::sglang_default(8192);
    let c = g.coefficients(&d);
    assert_eq!(c.swa_cap_tokens, None);
    assert_eq!(c.bytes_per_full_token, 7_086.75);
    // 40 GiB: (42,949,672,960 − 2,715,811,840) / 7,086.75 = 5,677,336.2 → 5,677,312
    // (22,177 pages); SWA int(567,731.2) → 2,217 pages = 567,552.
    let p = g.pool_sizes(&d, 40 << 30, None).unwrap();
    assert_eq!((p.full, p.swa), (5_677_312, 567_552));
    // 100 GiB: 104,658,370,560 / 7,086.75 = 14,768,211.1 → 14,768,128 (57,688 pages);
    // SWA int(1,476,812.8) → 5,768 pages = 1,476,608; C4 / 4, C128 / 128.
    let p = g.pool_sizes(&d, 100 << 30, None).unwrap();
    assert_eq!(
        (p.full, p.swa, p.c4, p.c128),
        (14_768_128, 1_476_608, 3_692_032, 115_376)
    );
    // --max-total-tokens caps the full pool (page-aligned); the SWA pool follows it.
    let capped = g.pool_sizes(&d, 100 << 30, Some(1_000_100)).unwrap();
    assert_eq!((capped.full, capped.swa), (999_936, 99_840));
}

#[test]
fn deepseek_v4_kv_dtype_and_weights() {
    let m = catalogue_model("deepseek-ai/DeepSeek-V4-Pro").unwrap();
    // `_deepseek_v4_kv_cache_dtype`: auto is fp8_e4m3; fp16 fails SGLang's assert.
    assert_eq!(
        hicache_sim::model::resolve_kv_dtype(&m.preset, KvDtype::Auto, Some(9), false),
        Ok(KvDtype::Fp8)
    );
    assert_eq!(
        hicache_sim::model::resolve_kv_dtype(&m.preset, KvDtype::Fp16, Some(9), false),
        Err(hicache_sim::model::KvDtypeRefused::DeepseekV4(
            KvDtype::Fp16
        ))
    );
    assert!(
        hicache_sim::model::resolve_kv_dtype(&m.preset, KvDtype::Fp16, Some(9), false)
            .unwrap_err()
            .to_string()
            .contains("not supported for DeepseekV4ForCausalLM")
    );
    // `expert_dtype: fp4`: the routed experts are MXFP4 (`is_fp4_experts`): 384 experts
    // × 3 × 7168 × 3072 × 61 layers = 1,547,396,186,112 parameters at 1/2 B + one e8m0
    // scale per 32 = 773,698,093,056 + 48,356,130,816.
    let parts = m.part_bytes().unwrap();
    assert_eq!(parts.routed_experts, 822_054_223_872);
    // The sgl-project FP8 build has no expert_dtype: its experts are fp8 with 128×128
    // block scales, about twice the bytes.
    let fp8 = catalogue_model("sgl-project/DeepSeek-V4-Pro-FP8").unwrap();
    let e = fp8.part_bytes().unwrap().routed_experts;
    assert!(e > 1_547_396_186_112 && e < 1_560_000_000_000, "{e}");
    // Weights per rank at TP 8: within 2 % of the experts / 8 plus the rest / 8.
    let w = m.weights_per_rank(&ParallelLayout::tp(8)).unwrap();
    assert!(
        w > parts.routed_experts / 8 && w < parts.total() / 8 * 102 / 100,
        "{w}"
    );
    // `models/deepseek_v4.py: DeepseekV4Model.__init__`: `VocabParallelEmbedding(…,
    // enable_tp=not is_dp_attention_enabled())`. The embedding, 129,280 × 7,168 × 2 B =
    // 1,853,358,080, is whole on every rank under DP attention (not / attention-TP 8:
    // 231,669,760), and / TP 16 without it (115,834,880).
    assert_eq!(parts.embed, 1_853_358_080);
    let dp = ParallelLayout {
        dp_size: 2,
        enable_dp_attention: true,
        ..ParallelLayout::tp(16)
    };
    let sharded = hicache_sim::model::weights::PartBytes {
        embed_replicated_under_dp_attention: false,
        ..parts
    };
    assert_eq!(parts.per_rank(&dp) - sharded.per_rank(&dp), 1_621_688_320);
    let tp16 = ParallelLayout::tp(16);
    assert_eq!(parts.per_rank(&tp16), sharded.per_rank(&tp16));
}

#[test]
fn gemma4_pools_by_hand() {
    let pools = |id: &str, tp: u32, dtype: KvDtype| -> Vec<(&'static str, u64)> {
        catalogue_model(id)
            .unwrap()
            .preset
            .host_pools(&ParallelLayout::tp(tp), dtype)
            .into_iter()
            .map(|p| (p.name, p.bytes_per_token))
            .collect()
    };
    // gemma-4-26B-A4B: 5 full_attention layers of 2 global KV heads × 512
    // (global_head_dim) × 2 (K, V) × 2 B = 20,480; 25 sliding layers of 8 KV heads ×
    // 256 × 2 × 2 B = 204,800. TP 8: one head per rank (max(1, 2 // 8)) = 10,240 and
    // 25 × 1 × 256 × 2 × 2 = 25,600.
    assert_eq!(
        pools("google/gemma-4-26B-A4B", 1, KvDtype::Bf16),
        [("kv", 20_480), ("swa", 204_800)]
    );
    assert_eq!(
        pools("google/gemma-4-26B-A4B", 8, KvDtype::Bf16),
        [("kv", 10_240), ("swa", 25_600)]
    );
    // Gemma-4-31B-IT NVFP4 (FP8 KV declared): 10 full layers × 4 × 1024 × 1 B = 40,960,
    // 50 sliding × 16 × 512 × 1 B = 409,600.
    assert_eq!(
        pools("nvidia/Gemma-4-31B-IT-NVFP4", 1, KvDtype::Fp8),
        [("kv", 40_960), ("swa", 409_600)]
    );
}

#[test]
fn step_3_7_flash_is_refused_as_sglang_refuses_it() {
    let e = catalogue_model("stepfun-ai/Step-3.7-Flash").unwrap_err();
    assert!(
        e.contains("SGLang has no model class `Step3p7FlashForCausalLM`"),
        "{e}"
    );
}

#[test]
fn check_answers_deepseek_v4_per_release() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("v4.sh");
    std::fs::write(
        &f,
        "# hicache-sim: node=hgx-b200\npython -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 4 --enable-hierarchical-cache --hicache-ratio 2\n",
    )
    .unwrap();
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args([
            "check",
            "--sglang",
            "0.5.20,0.5.21,0.5.22,0.5.23",
            "--runs",
            "10",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    // 0.5.20: its own `DSV4PoolConfigurator` (the flat `kv_bytes` formula: 15,186,432
    // full tokens = 59,322 pages, see `deepseek_v4_device_pools_by_each_releases_formula`)
    // and the same six host pools (checked against 0.5.20's own by `dsv4_host`): 118,644
    // host pages at ratio 2, C128 asking 20 × 118,644 × 1,728 B = 4.10 GB; smaller pools,
    // so more margin than 0.5.21's.
    let row = text
        .lines()
        .find(|l| l.contains("v4.sh") && l.split_whitespace().nth(1) == Some("0.5.20"))
        .unwrap_or_else(|| panic!("0.5.20: {text}"));
    assert!(row.contains("ok") && row.contains("267.07 GB"), "{row}");
    // 0.5.21–0.5.23: the device pools as `DSV4PoolConfigurator` sizes them (ratio
    // mode) and the six host pools `build_deepseek_v4_hicache_stack` builds at ratio 2
    // at the default f 0.855 (41,236,730,204 B of weights per rank at TP 4: full
    // 16,512,256 tokens = 64,501 pages → 129,002 host pages; SWA 1,651,200 = 6,450 →
    // 12,900), each checked against the live per-rank budget: the binding pool is the
    // last one built (C128: 20 layers × 129,002 × 1,728 B = 4.46 GB), the least margin
    // over the ranks and runs 248.28 GB.
    for rel in ["0.5.21", "0.5.22", "0.5.23"] {
        let row = text
            .lines()
            .find(|l| l.contains("v4.sh") && l.split_whitespace().nth(1) == Some(rel))
            .unwrap_or_else(|| panic!("{rel}: {text}"));
        assert!(row.contains("ok") && row.contains("248.28 GB"), "{row}");
    }
    assert!(out.status.success(), "{text}");
}

/// DeepSeek-V4-Flash at TP 4 on an HGX B200, HiCache off, at the default f 0.855
/// (weights 41,236,730,204 B a rank; 188,271,527,199 B free before the load): the
/// budget `profile_max_num_token` leaves is 119,735,425,551 B, and each release's own
/// `DSV4PoolConfigurator` sizes it:
/// - 0.5.15–0.5.20 (`FlatKvBytes0518`, the same default fraction 0.855): 0.1 × 584 × 43 + ¼ × 584 × 21 + 584/128 × 20
///   + ¼ × 132 × 21 + 0.1 × 8/128 × (8,192 + 2,048) × 21 = 7,705.45 B a full token;
///   C128 rings 259 × 128 rows × 4,096 B × 20 layers = 2,715,811,840 B fixed;
///   117,019,613,711 / 7,705.45 = 15,186,540.7 → 15,186,432 (page 256); SWA
///   int(1,518,643.2) → 1,518,592;
/// - 0.5.21 (`Paged0521`): 16,512,256 / 1,651,200 (the paged V4 layout, 7,086.75 B);
/// - 0.5.14 (`C128PerSwaToken0514`): the C128 rings per SWA token, 0.1 × 128/128 ×
///   4,096 B × 20 = 8,192 B more a full token (15,897.45 B) and no fixed bytes:
///   119,735,425,551 / 15,897.45 = 7,531,737.8 → 7,531,520; SWA 753,152.
/// With HiCache on, 0.5.14–0.5.17 are `not_modelled`: their host-pool stack differs.
#[test]
fn deepseek_v4_device_pools_by_each_releases_formula() {
    let run = |rel: &str| {
        let out = Command::cargo_bin("hicache-sim")
            .unwrap()
            .args(["startup", "--format", "json", "--sglang", rel])
            .arg("scenarios/deepseek-v4-pro-host-pools.yaml")
            .args([
                "--set",
                "server.enable_hierarchical_cache=false",
                "--set",
                "server.tp_size=4",
                "--set",
                "model=deepseek-ai/DeepSeek-V4-Flash",
            ])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    for (rel, full, swa) in [
        ("0.5.14", 7_531_520u64, 753_152u64),
        ("0.5.15", 15_186_432, 1_518_592),
        ("0.5.17", 15_186_432, 1_518_592),
        ("0.5.18", 15_186_432, 1_518_592),
        ("0.5.19", 15_186_432, 1_518_592),
        ("0.5.20", 15_186_432, 1_518_592),
        ("0.5.21", 16_512_256, 1_651_200),
    ] {
        let (code, out, err) = run(rel);
        assert_eq!(code, Some(0), "{rel}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["device_pool_tokens"], full, "{rel}");
        assert_eq!(v["device_swa_pool_tokens"], swa, "{rel}");
        assert_eq!(v["status"], "ok", "{rel}");
    }
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args(["startup", "--sglang", "0.5.17"])
        .arg("scenarios/deepseek-v4-pro-host-pools.yaml")
        .args([
            "--set",
            "server.tp_size=4",
            "--set",
            "model=deepseek-ai/DeepSeek-V4-Flash",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("build_deepseek_v4_hicache_stack"), "{err}");
    assert!(
        err.contains("pick a release from 0.5.18 on, or HiCache off"),
        "{err}"
    );
    // Labelled as what it is, not as bad input.
    assert!(err.starts_with("not_modelled: "), "{err}");
}

#[test]
fn deepseek_v4_refuses_hicache_size_and_auto_size_as_sglang_does() {
    let dir = tempfile::tempdir().unwrap();
    let run = |flags: &str| {
        let f = dir.path().join("v4.sh");
        std::fs::write(
            &f,
            format!("# hicache-sim: node=hgx-b200\npython -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 4 --enable-hierarchical-cache {flags}\n"),
        )
        .unwrap();
        let out = Command::cargo_bin("hicache-sim")
            .unwrap()
            .args(["check", "--sglang", "0.5.23", "--runs", "10"])
            .arg(&f)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    };
    // `hybrid_pool_assembler.py: _deepseek_v4_num_host_pages`.
    let t = run("--hicache-size 100");
    assert!(
        t.contains("DeepSeek V4 HiCache currently does not support --hicache-size; use --hicache-ratio instead."),
        "{t}"
    );
    // `hicache_auto_size.py: _estimate_hicache_bytes` (no ratio, no size: auto-size).
    let t = run("");
    assert!(
        t.contains("HiCache auto-sizing does not support DeepSeekV4TokenToKVPool"),
        "{t}"
    );
}

/// A scenario from its YAML text.
fn v4_scenario(yaml: &str) -> hicache_sim::scenario::Scenario {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("v4.yaml");
    std::fs::write(&f, yaml).unwrap();
    hicache_sim::scenario::Scenario::load(f.to_str().unwrap(), &[]).unwrap()
}

/// A scenario from its YAML text, and its start-up plan.
fn v4_plan(
    yaml: &str,
) -> (
    hicache_sim::scenario::Scenario,
    hicache_sim::startup::StartupPlan,
) {
    let s = v4_scenario(yaml);
    let p = hicache_sim::startup::StartupPlan::new(&s).unwrap();
    (s, p)
}

/// Weights per rank as loaded for the two logged DeepSeek-V4 start-ups at TP 8 (no DP
/// attention, no MTP draft), derived by hand from the checkpoints' tensors and SGLang's
/// sharding (`weights::dsv4_replicated_params`, `weights::dsv4_rope_table_bytes`):
///
/// sgl-project/DeepSeek-V4-Flash-FP8 (the N05 / N06 logs' Flash-Base stand-in: hidden
/// 4,096, 43 layers, ratios 2 × 0, 21 × 4, 20 × 128, 3 hash layers; fp8 with an fp32
/// scale per 128 × 128 block):
/// - over TP 8: wq_b + wo_a + wo_b, 43 × (33,554,432 × 3) = 4,328,521,728 → 4,329,578,496
///   B / 8 = 541,197,312; routed + shared experts 43 × 257 × 3 × 4,096 × 2,048 →
///   277,093,023,744 + 1,082,394,624 B / 8 = 34,771,927,296; embedding and LM head
///   129,280 × 4,096 × 2 B / 8 each = 264,765,440;
/// - whole on every rank: fp8 `wqkv_a` 43 × 4,096 × 1,536 + C4 indexer `wq_b` 21 ×
///   1,024 × 8,192 = 446,693,376 → 446,802,432 B; bf16 compressors and `weights_proj`
///   21 × (8,388,608 + 262,144 + 2,097,152) + 20 × 4,194,304 = 309,592,064 → 619,184,128
///   B; bf16 routers 43 × 256 × 4,096 and norms 422,400 → 91,022,336 B; fp32 / int32
///   (hyper-connection mixers 43 × 786,486, sinks 43 × 64, biases 40 × 256, `tid2eid` 3
///   × 775,680, compressor `ape` + norms 21 × 5,760 + 20 × 66,048, `hc_head` 65,541) =
///   37,666,391 → 150,665,564 B: 1,307,674,460;
/// - 36,885,564,508 B of parameters + 43 × 4 MiB + the RoPE tables (a ratio-0 and a
///   compressed kind: 2 × (1,048,576 × 32 × 8 B + 1,048,576 × 64 × 4 B) = 1 GiB) =
///   38,139,661,404 B = 35.52 GiB. Derived from the logs: 36.60 GiB (−2.9 %; before
///   this count 33.42 GiB, −8.7 %).
///
/// deepseek-ai/DeepSeek-V4-Pro (case 05: hidden 7,168, 61 layers, ratios 30 × 4, 31 ×
/// 128, MXFP4 routed experts):
/// - over TP 8: attention 61 × (100,663,296 + 67,108,864 + 117,440,512) →
///   17,402,220,544 B / 8 = 2,175,277,568; routed experts 1,547,396,186,112 parameters
///   at ½ B + 1/32 B = 822,054,223,872 B, + shared 4,030,661,376 B, / 8 =
///   103,260,610,656; embedding and LM head 231,669,760 each;
/// - whole on every rank: fp8 `wqkv_a` + indexer `wq_b` 895,483,904 + 377,487,360 →
///   1,273,282,048 B; bf16 compressors and `weights_proj` 791,805,952 → 1,583,611,904
///   B; routers and norms 337,819,648 B; fp32 / int32 88,647,011 → 354,588,044 B:
///   3,549,301,644;
/// - 109,448,529,388 + 61 × 4 MiB + 512 MiB of RoPE tables (compressed layers only) =
///   110,241,252,844 B = 102.67 GiB against the logged 125.65 (−18.3 %; before 99.28,
///   −21.0 %): the rest is not a rule of 0.5.18–0.5.23 (see case 05).
#[test]
fn deepseek_v4_weights_on_the_logged_configurations() {
    let tp8 = ParallelLayout::tp(8);
    let flash = catalogue_model("sgl-project/DeepSeek-V4-Flash-FP8").unwrap();
    let parts = flash.part_bytes().unwrap();
    assert_eq!(parts.attention, 4_329_578_496);
    assert_eq!(parts.replicated, 1_307_674_460);
    assert_eq!(flash.weights_per_rank(&tp8), Some(36_885_564_508));
    assert_eq!(flash.weights_as_loaded(&tp8), Some(38_139_661_404));
    let pro = catalogue_model("deepseek-ai/DeepSeek-V4-Pro").unwrap();
    let parts = pro.part_bytes().unwrap();
    assert_eq!(parts.attention, 17_402_220_544);
    assert_eq!(parts.replicated, 3_549_301_644);
    assert_eq!(pro.weights_per_rank(&tp8), Some(109_448_529_388));
    assert_eq!(pro.weights_as_loaded(&tp8), Some(110_241_252_844));
    // The replicated parts do not shrink with TP: at TP 16 they are the same bytes.
    let tp16 = ParallelLayout::tp(16);
    let sharded_only = hicache_sim::model::weights::PartBytes {
        replicated: 0,
        ..parts
    };
    assert_eq!(
        parts.per_rank(&tp16) - sharded_only.per_rank(&tp16),
        3_549_301_644
    );
}

/// DeepSeek-V4-Pro TP16 DP2 with DP attention on two HGX H20, f 0.9, no other flag
/// (0.5.23): SGLang sizes it in ratio mode, and every rank holds the whole input
/// embedding (`enable_tp=not is_dp_attention_enabled()`).
#[test]
fn deepseek_v4_pro_tp16_dp2_on_two_h20() {
    let (s, p) = v4_plan(
        "sglang: 0.5.23\nnode: {preset: hgx-h20, gpu_reserved: 3.11GiB}\nmodel: deepseek-ai/DeepSeek-V4-Pro\nserver:\n  launch: python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Pro --tp 16 --dp 2 --enable-dp-attention --nnodes 2 --mem-fraction-static 0.9\n",
    );
    // The device memory gone before the load is given (3.11 GiB, the budget SGLang's
    // configurator was run on), so the figures below test the rules, not a preset's
    // estimate. Free: 97,871 MiB − 3.11 GiB = 102,625,181,696 − 3,339,337,073.
    let free = 99_285_844_623u64;
    assert_eq!(s.node.gpu_memory.0 - s.node.gpu_reserved_for(16), free);
    // The weights by part (`deepseek_v4_weights_on_the_logged_configurations` derives
    // them): wq_b / wo_a / wo_b over attention-TP 8, 17,402,220,544 / 8 = 2,175,277,568;
    // routed and shared experts over TP 16, 826,084,885,248 / 16 = 51,630,305,328; the
    // replicated parts 3,549,301,644; the whole 129,280 × 7,168 × 2 B = 1,853,358,080 B
    // embedding (not / attention-TP 8); the LM head / 16, 115,834,880: 59,324,077,500;
    // + 61 × 4 MiB + 512 MiB of RoPE tables = 60,116,800,956.
    let w = s.weights_per_rank().unwrap();
    assert_eq!(w, 60_116_800_956);
    // rest = (free − w) − free × (1 − 0.9) = 39,169,043,667 − 9,928,584,462.3 →
    // 29,240,459,204 B. Per attention-DP worker: 128 requests, C128 rings
    // ceil((129 × 128 + 129) / 128) × 128 = 16,768 rows × 2 × 512 × 4 B × 31 layers =
    // 2,129,133,568 B fixed; 27,111,325,636 / 10,115.25 = 2,680,242.8 → 10,469 pages =
    // 2,680,064; SWA int(268,006.4) → 1,046 pages = 267,776.
    assert_eq!(p.device_tokens, 2_680_064);
    assert_eq!(p.device_swa_tokens, Some(267_776));
    assert!(p.device_failure.is_none());
}

/// The schedule of DeepSeek-V4's pools under DP attention: `handle_data_parallelism`
/// divides the chunk by the DP width (H20: 8192 by GPU memory → 4096 at DP2), while the
/// mem-fraction default keeps reading 8192; requests divide per worker in the
/// configurator. Without DP attention the chunk stays.
#[test]
fn deepseek_v4_schedule_under_dp_attention() {
    let launch = |flags: &str| {
        format!(
            "sglang: 0.5.23\nnode: hgx-h20\nmodel: deepseek-ai/DeepSeek-V4-Pro\nserver:\n  launch: python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Pro {flags}\n"
        )
    };
    let sched = |flags: &str| {
        let s = v4_scenario(&launch(flags));
        let inp = hicache_sim::pools::PoolSetInputs {
            model: &s.model,
            layout: &s.layout,
            dtype: s.kv_dtype,
            rules: s.version.release_rules().pools,
            device: hicache_sim::model::DevicePoolInputs {
                free_before_load: 0,
                weights_per_rank: 0,
                mem_fraction_static: 0.9,
                cell_size: 0,
                page_size: 256,
                max_total_tokens: None,
            },
            draft: Default::default(),
            swa_full_tokens_ratio: 0.1,
            mamba_full_memory_ratio: 0.9,
            max_mamba_cache_size: None,
            enable_hierarchical_cache: false,
            pd_disaggregation: false,
        };
        hicache_sim::pools::dsv4_schedule(&inp, &s.server, s.node.gpu_memory.0)
    };
    let dp = sched("--tp 16 --dp 2 --enable-dp-attention --nnodes 2 --mem-fraction-static 0.9");
    assert_eq!(
        (
            dp.chunked_prefill_size,
            dp.attn_dp_size,
            dp.max_running_requests
        ),
        (4096, 2, 256)
    );
    assert_eq!(dp.operator_swa_full_tokens_ratio, Some(0.1));
    let given =
        sched("--tp 16 --dp 2 --enable-dp-attention --nnodes 2 --chunked-prefill-size 6000");
    assert_eq!(given.chunked_prefill_size, 3000);
    let tp = sched("--tp 8");
    assert_eq!((tp.chunked_prefill_size, tp.attn_dp_size), (8192, 1));
}

/// DeepSeek-V4-Flash TP8 on 8 × L20 (0.5.23, no flags): SGLang's default fraction without
/// the prefill graph it turns off for DeepSeek-V4, 0.826 (8,000 MiB reserved of 46,068),
/// and ratio mode: the start-up fits (cap mode refused it: "The DSV4 SWA pool cap
/// (598272 tokens, 17.76 GB) leaves no room"); the FP8-expert build does not.
#[test]
fn deepseek_v4_flash_tp8_on_l20_starts_at_sglangs_default_fraction() {
    let launch = |model: &str| {
        format!(
            "sglang: 0.5.23\nnode: l20x8\nmodel: {model}\nserver:\n  launch: python -m sglang.launch_server --model-path {model} --tp 8\n"
        )
    };
    let (s, p) = v4_plan(&launch("deepseek-ai/DeepSeek-V4-Flash"));
    assert_eq!(hicache_sim::pools::resolve_mem_fraction(&s).value, 0.826);
    // Free: 46,068 MiB − 1 GiB = 47,232,057,344 B; weights 21,899,250,780 B per rank
    // (`deepseek_v4_weights_on_the_logged_configurations` derives the parts: 20,645,153,884
    // B of parameters, 43 × 4 MiB, 1 GiB of RoPE tables).
    // rest = 25,332,806,564 − 47,232,057,344 × 0.174 (8,218,377,977.9) → 17,114,428,586
    // B; C128 rings (257 slots: 33,152 rows × 4 KiB × 20 layers) 2,715,811,840 fixed;
    // 14,398,616,746 / 7,086.75 = 2,031,765.9 → 7,936 pages = 2,031,616; SWA
    // int(203,161.6) → 793 pages = 203,008.
    assert_eq!(s.weights_per_rank().unwrap(), 21_899_250_780);
    assert_eq!(
        (p.device_tokens, p.device_swa_tokens),
        (2_031_616, Some(203_008))
    );
    assert!(p.device_failure.is_none());
    // The FP8-expert build (38,139,661,404 B per rank) does not start at the default
    // fraction: rest 47,232,057,344 − 38,139,661,404 − 8,218,377,977.9 = 874,017,962 B,
    // less than the C128 rings' 2,715,811,840.
    let (s, p) = v4_plan(&launch("sgl-project/DeepSeek-V4-Flash-FP8"));
    assert_eq!(s.weights_per_rank().unwrap(), 38_139_661_404);
    assert_eq!(p.device_tokens, 0);
    assert!(p.device_failure.is_some());
}

/// `--kv-cache-dtype` for DeepSeek-V4: SGLang asserts the spelling `fp8_e4m3` or
/// `bfloat16` after turning `auto` into `fp8_e4m3`, so the parser's `bf16` is refused (an
/// `invalid_args` row with its words), while `bfloat16` starts.
#[test]
fn deepseek_v4_refuses_bf16_spelled_bf16_as_sglang_does() {
    let dir = tempfile::tempdir().unwrap();
    let run = |dtype: &str| {
        let f = dir.path().join(format!("v4-{dtype}.sh"));
        std::fs::write(
            &f,
            format!("# hicache-sim: node=hgx-b200\npython -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 4 --kv-cache-dtype {dtype}\n"),
        )
        .unwrap();
        let out = Command::cargo_bin("hicache-sim")
            .unwrap()
            .args([
                "check",
                "--sglang",
                "0.5.21,0.5.23",
                "--runs",
                "5",
                "--format",
                "json",
            ])
            .arg(&f)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        (out.status.code(), v)
    };
    let (code, v) = run("bf16");
    assert_eq!(code, Some(1), "{v}");
    for row in v.as_array().unwrap() {
        assert_eq!(row["status"], "invalid_args", "{row}");
        assert!(
            row["message"]
                .as_str()
                .unwrap()
                .contains("bf16 is not supported for DeepseekV4ForCausalLM"),
            "{row}"
        );
    }
    let (_, v) = run("fp8_e5m2");
    assert_eq!(v[0]["status"], "invalid_args", "{v}");
    let (code, v) = run("bfloat16");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v[0]["status"], "ok", "{v}");
}

/// DeepSeek-V4 pools with no room are a failed start-up with SGLang's words (exit 1 in
/// `check`, not an error row). V4-Flash-FP8 TP8 on 8 × L20 (47,232,057,344 B free,
/// 38,139,661,404 B of weights per rank):
/// - f 0.7: the weights take 80.75 % of the free memory, `_profile_available_bytes`
///   raises before the configurator;
/// - f 0.815: rest 38,494,126,735 − 38,139,661,404 = 354,465,331 B, less than the C128
///   rings' 2,715,811,840: no full token, so `validate_swa_pool_size` refuses an SWA
///   pool of 0.
#[test]
fn deepseek_v4_without_room_is_a_failed_start_up_with_sglangs_words() {
    let dir = tempfile::tempdir().unwrap();
    let check = |f: &str| {
        let p = dir.path().join(format!("v4-{f}.sh"));
        std::fs::write(
            &p,
            format!("# hicache-sim: node=l20x8\npython -m sglang.launch_server --model-path sgl-project/DeepSeek-V4-Flash-FP8 --tp 8 --mem-fraction-static {f}\n"),
        )
        .unwrap();
        let out = Command::cargo_bin("hicache-sim")
            .unwrap()
            .args([
                "check", "--sglang", "0.5.23", "--runs", "5", "--format", "json",
            ])
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v[0]["outcome"], "failed", "{v}");
        assert_eq!(v[0]["status"], "failed", "{v}");
        v[0]["message"].as_str().unwrap().to_string()
    };
    assert_eq!(
        check("0.7"),
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.7. Raise --mem-fraction-static above 0.808 (minimum viable = 1 - available/pre = 0.8075). If using speculative decoding, draft weights are now counted. (what would help: the weights (38.14 GB per rank) take 80.7 % of the 47.23 GB free before the load: raise --mem-fraction-static above 0.807, or raise --tp (TP8 → TP16 halves the weights per rank))"
    );
    let m = check("0.815");
    assert!(
        m.starts_with("SWA pool (0 tokens) cannot hold even one request: the prefill admission floor is sliding_window_size (128) + page_size (256). Increase --swa-full-tokens-ratio or the total KV budget. (what would help: ")
            && m.contains("lower --max-running-requests"),
        "{m}"
    );
    // The startup report: every rank fails with the ValueError.
    let (_, p) = v4_plan(
        "sglang: 0.5.23\nnode: l20x8\nmodel: sgl-project/DeepSeek-V4-Flash-FP8\nserver:\n  launch: python -m sglang.launch_server --model-path sgl-project/DeepSeek-V4-Flash-FP8 --tp 8 --mem-fraction-static 0.815\n",
    );
    assert_eq!(p.device_tokens, 0);
    let f = p.device_failure.expect("a failed start-up");
    assert_eq!(f.kind.name(), "ValueError");
    // Cap mode's no-room (the configurator's path for a ratio nobody set; DeepSeek-V4
    // runs ratio mode) is its RuntimeError.
    let cap = hicache_sim::pools::PoolError::Dsv4(
        hicache_sim::model::dsv4::Dsv4Error::SwaCapLeavesNoRoom {
            cap_tokens: 598_272,
            cap_gb: 17.76,
            available_gb: 17.69,
        },
    );
    let f = hicache_sim::startup::plan::DeviceFailure::of_dsv4(
        &cap,
        21_899_250_780,
        47_232_057_344,
        0.818,
        8,
    )
    .unwrap();
    assert_eq!(f.kind.name(), "RuntimeError");
    assert!(
        f.message.starts_with(
            "The DSV4 SWA pool cap (598272 tokens, 17.76 GB) leaves no room for the full KV pool within the available 17.69 GB."
        ),
        "{}",
        f.message
    );
}

/// The N05 / N06 logs' budgets (DeepSeek-V4-Flash-Base, 8 × H20 TP8, `--disable-radix-cache`,
/// 45.78 and 19.58 GiB available per rank, logged by an early build whose own formula
/// gave 3,080,960 / 1,317,632) under the 0.5.21–0.5.23 configurator, the budget fed in
/// directly: ratio mode, 7,086.75 B per full token after the C128 rings' 2,715,811,840 B.
#[test]
fn deepseek_v4_flash_on_the_n05_n06_budgets() {
    let g = dsv4("deepseek-ai/DeepSeek-V4-Flash");
    let sched = Dsv4Schedule {
        disable_radix_cache: true,
        ..Dsv4Schedule::sglang_default(8192)
    };
    // int(45.78 × 2^30) = 49,155,900,702; − 2,715,811,840 = 46,440,088,862 / 7,086.75 =
    // 6,553,084.6 → 25,597 pages = 6,552,832; SWA int(655,283.2) → 2,559 pages = 655,104;
    // C4 / 4, C128 / 128, C4 state 2,559 × 8.
    let n05 = g
        .pool_sizes(&sched, 4578 * (1u64 << 30) / 100, None)
        .unwrap();
    assert_eq!(
        (n05.full, n05.swa, n05.c4, n05.c128, n05.c4_state),
        (6_552_832, 655_104, 1_638_208, 51_194, 20_472)
    );
    // int(19.58 × 2^30) = 21,023,864,913; 18,308,053,073 / 7,086.75 = 2,583,421.3 →
    // 10,091 pages = 2,583,296; SWA int(258,329.6) → 1,009 pages = 258,304.
    let n06 = g
        .pool_sizes(&sched, 1958 * (1u64 << 30) / 100, None)
        .unwrap();
    assert_eq!((n06.full, n06.swa), (2_583_296, 258_304));
}

/// DeepSeek-V4 with HiCache on under 0.5.17, whose host-pool stack is not modelled: not
/// a bad input (`error`) but a `not_modelled` row naming the rule, in every output — `check`'s
/// text, JSON and JUnit (a failure: exit 1, not 2), and a sweep's `status` column — while
/// the same recipe under 0.5.21 is answered.
#[test]
fn an_unmodelled_release_rule_is_a_not_modelled_row_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("v4.sh");
    std::fs::write(
        &f,
        "# hicache-sim: node=hgx-b200\npython -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 4 --enable-hierarchical-cache --hicache-ratio 2\n",
    )
    .unwrap();
    let check = |format: &str| {
        Command::cargo_bin("hicache-sim")
            .unwrap()
            .args([
                "check",
                "--sglang",
                "0.5.17,0.5.21",
                "--runs",
                "5",
                "--format",
                format,
            ])
            .arg(&f)
            .output()
            .unwrap()
    };
    let out = check("json");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["status"], "not_modelled");
    assert_eq!(rows[0]["passed"], false);
    assert!(
        rows[0]["message"]
            .as_str()
            .unwrap()
            .contains("build_deepseek_v4_hicache_stack`, whose pools differ"),
        "{rows}"
    );
    assert_eq!(rows[1]["status"], "ok");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("not modelled: "), "{err}");
    let junit = String::from_utf8_lossy(&check("junit").stdout).to_string();
    assert!(junit.contains("failures=\"1\" errors=\"0\""), "{junit}");
    // A sweep over the release: the 0.5.17 point's status says why it has no figures.
    let scen = dir.path().join("s.yaml");
    std::fs::write(
        &scen,
        "name: v4-sweep\nnode: hgx-b200\nruns: 5\nserver:\n  launch: python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 4 --enable-hierarchical-cache --hicache-ratio 2\nsweep:\n  axes:\n    sglang: ['0.5.17', '0.5.21']\n",
    )
    .unwrap();
    let outdir = dir.path().join("out");
    let o = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args([
            "sweep",
            scen.to_str().unwrap(),
            "--out",
            outdir.to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    let csv = std::fs::read_to_string(outdir.join("results.csv"))
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let mut rdr = csv::Reader::from_reader(csv.as_bytes());
    let h = rdr.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    let st: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (&r[col("sglang")], &r[col("status")]))
        .collect();
    assert_eq!(st, [("0.5.17", "not_modelled"), ("0.5.21", "ok")], "{csv}");
    assert!(rows[0][col("error")].contains("are not modelled"), "{csv}");
}

/// `SGLANG_DSV4_COMPRESS_STATE_DTYPE` in the launch command's environment
/// (`pool_configurator.py: _get_dsv4_compress_state_dtype_sizes`): DeepSeek-V4-Flash TP8
/// on an HGX H100 at f 0.85 with 64 running requests under 0.5.19 (FlatKvBytes0518):
/// fp32 (unset, or `FP32`) prices the C4 state rings at 7,705.45 B a full token with the
/// C128 rings' fixed bytes, bf16 at 7,033.45 B (the 21 C4 layers' `0.1 × 8/128 × (4·512 +
/// 4·128) × 4 B` halved: −672 B) with half the fixed bytes: 6,225,664 against 6,870,528
/// tokens (77.33 GiB free before the load: the preset's measured TP8 reserve). A spelling
/// SGLang does not take is its `ValueError`; with HiCache on the host copies of the
/// states are not checked under bf16: `unverified`, naming it.
#[test]
fn the_compress_state_dtype_comes_from_the_launch_environment() {
    let d = tempfile::tempdir().unwrap();
    let tokens = |env: &str, extra: &str| -> (i32, serde_json::Value) {
        let text = format!(
            "# hicache-sim: node=hgx-h100 sglang=0.5.19\n{env} sglang serve --model-path deepseek-ai/DeepSeek-V4-Flash --tp 8 --mem-fraction-static 0.85 --max-running-requests 64 {extra}\n"
        );
        std::fs::write(d.path().join("r.sh"), text).unwrap();
        let o = crate::support::run(&["startup", "r.sh", "--format", "json"], d.path());
        let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
        (o.status.code().unwrap(), v)
    };
    let (_, fp32) = tokens("", "");
    assert_eq!(fp32["device_pool_tokens"], 6_225_664);
    let (_, upper) = tokens("SGLANG_DSV4_COMPRESS_STATE_DTYPE=FP32", "");
    assert_eq!(upper["device_pool_tokens"], 6_225_664);
    let (_, bf16) = tokens("SGLANG_DSV4_COMPRESS_STATE_DTYPE=bf16", "");
    assert_eq!(bf16["device_pool_tokens"], 6_870_528);
    assert_eq!(
        bf16["launch"]["env"]["SGLANG_DSV4_COMPRESS_STATE_DTYPE"],
        "bf16"
    );
    let why = bf16["unverified"].to_string();
    assert!(
        !why.contains("SGLANG_DSV4"),
        "modelled on the device: {why}"
    );
    let (code, _) = tokens("SGLANG_DSV4_COMPRESS_STATE_DTYPE=half", "");
    assert_eq!(code, 2);
    let o = crate::support::run(&["startup", "r.sh"], d.path());
    assert!(
        crate::support::stderr(&o).contains(
            "Unsupported SGLANG_DSV4_COMPRESS_STATE_DTYPE='half'. Expected one of: float32, fp32, bfloat16, bf16."
        ),
        "{}",
        crate::support::stderr(&o)
    );
    let (_, host) = tokens(
        "SGLANG_DSV4_COMPRESS_STATE_DTYPE=bf16",
        "--enable-hierarchical-cache --hicache-ratio 2",
    );
    assert_eq!(host["status"], "unverified");
    assert!(
        host["unverified"]
            .to_string()
            .contains("SGLANG_DSV4_COMPRESS_STATE_DTYPE: the HiCache host pools"),
        "{}",
        host["unverified"]
    );
}
