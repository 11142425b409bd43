//! the pools a release builds for a model — the SWA split, the hybrid state
//! pool, packed or separate MTP drafts — with sizes hand-computed from SGLang's own
//! formulas (each test names the function and the releases).

use hicache_sim::commands::startup_cmd::{load_scenario, plan_for};
use hicache_sim::model::{DevicePoolInputs, KvDtype, ParallelLayout, model_preset};
use hicache_sim::pools::{
    HostPoolSpec, HostSizing, PoolSetInputs, PoolUnit, SpecDraft, device_pools, host_pool_counts,
    host_pool_specs, split_hicache_size,
};
use hicache_sim::release::{HicacheSizeSplit, MambaSlotFormula, MtpDraftHost, Release};
use hicache_sim::sizing::HostPoolSizeArg;
use hicache_sim::startup::{self, Outcome, RankResult, StartupPlan};

const SWA: &str = "scenarios/gpt-oss-swa-split.yaml";
const QWEN: &str = "scenarios/qwen3-next-state-pool.yaml";
const DSV3: &str = "scenarios/deepseek-v3-mtp-packed.yaml";

/// The scenarios of these tests with the device profile's inputs pinned to what the
/// hand computations below use — `--mem-fraction-static 0.85` and 1 GiB gone before the
/// load — so they test the pools, not the release's fraction default or the preset's
/// measured free memory (those have their own tests: `model::device_pool`,
/// `log_corpus`).
fn load(
    path: &str,
    sets: &[String],
    version: Option<&str>,
) -> Result<hicache_sim::scenario::Scenario, hicache_sim::error::InputError> {
    let mut all = vec![
        "server.mem_fraction_static=0.85".to_string(),
        "startup.gpu_reserved=1GiB".to_string(),
    ];
    if path == DSV3 {
        all.clear();
    }
    all.extend(sets.iter().cloned());
    load_scenario(path, &all, version.map(|v| v.parse().unwrap()))
}

fn plan(path: &str, sets: &[&str], version: Option<&str>) -> StartupPlan {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = load(path, &sets, version).expect("scenario loads");
    plan_for(&s).expect("plan builds")
}

/// Rank 0 of one run without jitter.
fn rank0(path: &str, sets: &[&str], version: Option<&str>) -> (StartupPlan, RankResult) {
    let p = plan(path, sets, version);
    let mc = startup::run(&p, 0, 1);
    let r = mc.first_run[0].clone();
    (p, r)
}

fn pools(r: &RankResult) -> Vec<(&'static str, u64, u64)> {
    r.pools
        .iter()
        .map(|p| (p.name, p.tokens, p.requested_bytes))
        .collect()
}

#[test]
fn bytes_per_token_and_per_slot_from_the_configs() {
    let l = |tp| ParallelLayout::tp(tp);
    // gpt-oss-120b config.json: num_key_value_heads 8, head_dim 64, 36 layers alternating
    // sliding_attention / full_attention → 18 each; bf16: 8 × 64 × 2 B × 2 (K, V) = 2,048
    // B per layer × 18 = 36,864 B/token per pool; TP2: 4 heads → 18,432.
    let oss = model_preset("gpt-oss-120b").unwrap();
    for (tp, bpt) in [(1, 36_864), (2, 18_432)] {
        let p = oss.host_pools(&l(tp), KvDtype::Bf16);
        assert_eq!(
            p.iter()
                .map(|g| (g.name, g.bytes_per_token))
                .collect::<Vec<_>>(),
            [("kv", bpt), ("swa", bpt)]
        );
    }
    // Qwen3-Next-80B-A3B config.json: 48 layers, full_attention_interval 4 → 12 GQA
    // layers of 2 KV heads × head_dim 256: 2 × 256 × 2 B × 2 = 2,048 B × 12 = 24,576;
    // TP4: max(2 // 4, 1) = 1 head → 12,288 (`model_config.get_num_kv_heads`).
    let q = model_preset("qwen3-next-80b-a3b").unwrap();
    assert_eq!(
        q.host_pools(&l(1), KvDtype::Bf16)[0].bytes_per_token,
        24_576
    );
    assert_eq!(
        q.host_pools(&l(4), KvDtype::Bf16)[0].bytes_per_token,
        12_288
    );
    // 36 Gated DeltaNet layers (`Mamba2StateShape.create`): conv_dim = 128 × 32 + 2 × 16
    // × 128 = 8,192; conv (8,192, 3) bf16 = 49,152 B; temporal (32, 128, 128) fp32 =
    // 2,097,152 B; (49,152 + 2,097,152) × 36 = 77,266,944 B per slot. TP4: conv 12,288 +
    // temporal 524,288 = 536,576 × 36 = 19,316,736.
    assert_eq!(q.attention.state_bytes_per_slot(&l(1)), Some(77_266_944));
    assert_eq!(q.attention.state_bytes_per_slot(&l(4)), Some(19_316_736));
    assert_eq!(
        model_preset("deepseek-v3")
            .unwrap()
            .attention
            .state_bytes_per_slot(&l(1)),
        None
    );
}

#[test]
fn split_hicache_size_matches_sglangs_python() {
    // `hybrid_pool_assembler.py: _split_hicache_size` (0.5.17–0.5.23):
    // `hicache_size * size_bytes / total` — here 100 × 21,822,308,352 / 39,279,919,104
    // and 100 × 17,457,610,752 / 39,279,919,104, as Python prints them.
    let s = split_hicache_size(100.0, &[21_822_308_352, 17_457_610_752]);
    assert_eq!(s, [55.555889242597154, 44.444110757402846]);
    // 60 GB over KV (1,580,416 + 64) × 12,288 and state 601 × 19,316,736.
    let s = split_hicache_size(60.0, &[19_420_938_240, 11_609_358_336]);
    assert_eq!(s, [37.552212610860224, 22.447787389139776]);
}

#[test]
fn host_counts_per_pool_kind() {
    let spec = |name, unit, bpu, cap, page, dev, sizing| HostPoolSpec {
        name,
        unit,
        bytes_per_unit: bpu,
        device_capacity: cap,
        page_size: page,
        device_bytes: dev,
        sizing,
    };
    let kv = spec(
        "kv",
        PoolUnit::Tokens,
        12_288,
        1_580_416,
        64,
        19_420_938_240,
        HostSizing::Own,
    );
    let st = spec(
        "state",
        PoolUnit::Slots,
        19_316_736,
        600,
        1,
        11_609_358_336,
        HostSizing::Own,
    );
    // Ratio 2: int(1,580,416 × 2) = 3,160,832 → 49,388 + 1 pages → 3,160,896; state
    // int(600 × 2) = 1,200 → page size 1 → 1,201 (`MambaPoolHost.__init__`).
    let both = [kv, st];
    let r = host_pool_counts(
        &both,
        HostPoolSizeArg::Ratio(2.0),
        HicacheSizeSplit::ByDeviceBytes,
    );
    assert_eq!(r, [3_160_896, 1_201]);
    // 60 GB split: int(37.5522e9 // 12,288) = 3,056,006 → 47,750 + 1 pages = 3,056,064;
    // int(22.4478e9 // 19,316,736) = 1,162 → 1,163.
    let r = host_pool_counts(
        &both,
        HostPoolSizeArg::SizeGb(60.0),
        HicacheSizeSplit::ByDeviceBytes,
    );
    assert_eq!(r, [3_056_064, 1_163]);
    // Before 0.5.17 each pool takes the whole 60 GB: 60e9 // 12,288 = 4,882,812 → 76,294
    // pages → 4,882,816; 60e9 // 19,316,736 = 3,106 → 3,107.
    let r = host_pool_counts(
        &both,
        HostPoolSizeArg::SizeGb(60.0),
        HicacheSizeSplit::WholeSizeEachPool,
    );
    assert_eq!(r, [4_882_816, 3_107]);
    // The ≤ 0.5.17 draft pool: ratio = 2,134,592 / 586,688, int(586,688 × ratio) =
    // 2,134,592 → 33,353 + 1 pages = 2,134,656 (`maybe_register_hicache_draft`).
    let kv = spec(
        "kv",
        PoolUnit::Tokens,
        70_272,
        586_688,
        64,
        0,
        HostSizing::Own,
    );
    let dr = spec(
        "draft",
        PoolUnit::Tokens,
        1_152,
        586_688,
        64,
        0,
        HostSizing::DraftRatio,
    );
    let r = host_pool_counts(
        &[kv, dr],
        HostPoolSizeArg::SizeGb(150.0),
        HicacheSizeSplit::ByDeviceBytes,
    );
    assert_eq!(r, [2_134_592, 2_134_656]);
}

#[test]
fn pool_rules_per_release() {
    use Release as R;
    let p = |r: R| r.rules().pools;
    // `_split_hicache_size` first ships in 0.5.17 (absent from the 0.5.14–0.5.16 wheels).
    for r in [R::V0_5_14, R::V0_5_15, R::V0_5_16] {
        assert_eq!(
            p(r).hicache_size_split,
            HicacheSizeSplit::WholeSizeEachPool,
            "{r}"
        );
        assert_eq!(p(r).mamba_slots, MambaSlotFormula::Floor, "{r}");
    }
    for r in [R::V0_5_17, R::V0_5_18, R::V0_5_19, R::V0_5_23] {
        assert_eq!(
            p(r).hicache_size_split,
            HicacheSizeSplit::ByDeviceBytes,
            "{r}"
        );
        assert_eq!(p(r).mamba_slots, MambaSlotFormula::PaddingSlot, "{r}");
    }
    assert_eq!(p(R::V0_5_17).mtp_draft_host, MtpDraftHost::SeparatePool);
    assert_eq!(
        p(R::V0_5_18).mtp_draft_host,
        MtpDraftHost::PackedUnifiedTreeOnly
    );
    assert_eq!(p(R::V0_5_19).mtp_draft_host, MtpDraftHost::Packed);
    // `validate_swa_pool_size` first ships in 0.5.20.
    assert!(!p(R::V0_5_19).swa_floor_check);
    assert!(p(R::V0_5_20).swa_floor_check);
    assert_eq!(R::V0_5_18.same_as(), None);
}

#[test]
fn gpt_oss_swa_split_under_0_5_23() {
    let (p, r) = rank0(SWA, &[], None);
    // profile_max_num_token: before = 81,559 MiB − 1 GiB = 84,447,068,160 B; weights
    // 65e9 / 2; rest = 51,947,068,160 − 0.15 × 84,447,068,160 = 39,280,007,936 B;
    // cell = 18,432 + 0.8 × 18,432 = 33,177.6 → 1,183,928 → 18,498 pages = 1,183,872;
    // SWA int(1,183,872 × 0.8) = 947,097 → 947,072 (`HybridSWAPoolConfigurator`).
    assert_eq!(p.device_tokens, 1_183_872);
    assert_eq!(p.device_swa_tokens, Some(947_072));
    assert_eq!(p.device_bytes, 39_279_919_104);
    assert_eq!(r.outcome, Outcome::Started);
    // Split by device bytes (see split_hicache_size_matches_sglangs_python):
    // 55.5559e9 // 18,432 = 3,014,099 → 47,096 pages; 44.4441e9 // 18,432 = 2,411,247 →
    // 37,676 pages.
    assert_eq!(
        pools(&r),
        [
            ("kv", 3_014_144, 3_014_144 * 18_432),
            ("swa", 2_411_264, 2_411_264 * 18_432)
        ]
    );
    // 3,014,144 × 18,432 = 55,556,702,208 B (55.56 GB) and 2,411,264 × 18,432 =
    // 44,444,418,048 B (44.44 GB): the log lines asserted in
    // `pool_labels_and_the_mamba_line_follow_each_release`.
}

#[test]
fn gpt_oss_every_pool_takes_the_whole_size_under_0_5_15() {
    let (p, r) = rank0(SWA, &[], Some("0.5.15"));
    assert_eq!(
        (p.device_tokens, p.device_swa_tokens),
        (1_183_872, Some(947_072))
    );
    // 100e9 // 18,432 = 5,425,347 → 84,772 pages = 5,425,408 tokens, in each pool.
    let t = 5_425_408u64;
    assert_eq!(pools(&r), [("kv", t, t * 18_432), ("swa", t, t * 18_432)]);
    // 2 × t × 18,432 = 200,002,240,512 B: about 200 GB requested in all.
}

#[test]
fn swa_floor_refuses_from_0_5_20() {
    // --max-total-tokens 192: full 192, SWA int(153.6) = 153 → 128 ≤ window 128 + page 64.
    let sets = ["server.max_total_tokens=192"];
    let s = load(SWA, &sets.map(String::from), Some("0.5.20")).unwrap();
    let e = plan_for(&s).unwrap_err();
    assert_eq!(
        e.message,
        "SWA pool (128 tokens) cannot hold even one request: the prefill admission floor is sliding_window_size (128) + page_size (64). Increase --swa-full-tokens-ratio or the total KV budget."
    );
    let p = plan(SWA, &sets, Some("0.5.19"));
    assert_eq!((p.device_tokens, p.device_swa_tokens), (192, Some(128)));
}

#[test]
fn qwen3_next_state_pool_split_and_ratio() {
    // --max-mamba-cache-size 600 (TP4): KV rest = 31,030,007,936 − 601 × 19,316,736 B →
    // // 12,288 = 1,580,456 → 1,580,416 tokens (page 64).
    let (p, r) = rank0(QWEN, &[], None);
    assert_eq!(p.device_tokens, 1_580_416);
    assert_eq!(p.device_state_slots, Some(600));
    assert_eq!(r.outcome, Outcome::Started);
    assert_eq!(
        pools(&r),
        [
            ("kv", 3_056_064, 3_056_064 * 12_288),
            ("state", 1_163, 1_163 * 19_316_736)
        ]
    );
    let (_, r) = rank0(
        QWEN,
        &["server.hicache_size=0", "server.hicache_ratio=2"],
        None,
    );
    assert_eq!(
        pools(&r),
        [
            ("kv", 3_160_896, 3_160_896 * 12_288),
            ("state", 1_201, 1_201 * 19_316_736)
        ]
    );
}

#[test]
fn qwen3_next_device_state_slots_per_release() {
    // No --max-mamba-cache-size: mamba_budget = rest × 0.9 / 1.9 with rest =
    // 28.89894688 GiB → 14,698,424,811.8 B. 0.5.17+: int((B − 19,316,736) // 19,316,736)
    // = 759, holding 760 slots; 0.5.15: int(B // 19,316,736) = 760, holding 760. Both
    // leave 31,030,007,936 − 760 × 19,316,736 B → // 12,288 = 1,330,508 → 1,330,496.
    let sets = ["server.max_mamba_cache_size=null"];
    let p = plan(QWEN, &sets, None);
    assert_eq!(
        (p.device_tokens, p.device_state_slots),
        (1_330_496, Some(759))
    );
    let p = plan(QWEN, &sets, Some("0.5.15"));
    assert_eq!(
        (p.device_tokens, p.device_state_slots),
        (1_330_496, Some(760))
    );
}

#[test]
fn qwen3_next_state_pool_is_checked_and_refused_like_kv() {
    // 300 GB host, ratio 2: the KV pool (38.84 GB) books first; the state pool's 23.20 GB
    // is refused against what is left, with `MambaPoolHost.__init__`'s own text.
    let sets = [
        "node.host_dram=300GB",
        "server.hicache_size=0",
        "server.hicache_ratio=2",
    ];
    let (_, r) = rank0(QWEN, &sets, None);
    assert_eq!(r.outcome, Outcome::Refused);
    assert_eq!(r.pools.last().unwrap().name, "state");
    assert_eq!(
        r.message.as_deref(),
        Some(
            "Not enough host memory available. Requesting 23.20 GB but only have 22.12 GB free. Please reduce the size of the hierarchical cache."
        )
    );
}

#[test]
fn deepseek_v3_mtp_packed_or_separate() {
    // DeepSeek-V3 config.json: kv_lora_rank 512, qk_rope_head_dim 64 → (512 + 64) × 2 B
    // = 1,152 B per layer (MLA, every rank); num_hidden_layers 61,
    // num_nextn_predict_layers 1.
    // 0.5.19+: layer_num = 61 + 1 → 62 × 1,152 = 71,424 B/token; 150e9 // 71,424 =
    // 2,100,134 → 32,815 pages = 2,100,160 tokens.
    let (p, r) = rank0(DSV3, &[], None);
    assert_eq!(p.pools.len(), 1);
    assert_eq!(p.pools[0].bytes_per_token, 71_424);
    assert_eq!(pools(&r), [("kv", 2_100_160, 2_100_160 * 71_424)]);
    // 0.5.17: KV 150e9 // 70,272 = 2,134,562 → 33,353 pages = 2,134,592; the draft pool
    // mirrors that slot count plus its own padding page: 2,134,656 × 1,152 B.
    let (_, r) = rank0(DSV3, &[], Some("0.5.17"));
    assert_eq!(
        pools(&r),
        [
            ("kv", 2_134_592, 2_134_592 * 70_272),
            ("draft", 2_134_656, 2_134_656 * 1_152)
        ]
    );
    // 0.5.18: PACKED plan, HiRadixCache host pool without the draft layer.
    let (_, r) = rank0(DSV3, &[], Some("0.5.18"));
    assert_eq!(pools(&r), [("kv", 2_134_592, 2_134_592 * 70_272)]);
    // No speculative decoding: no draft in any release.
    let (_, r) = rank0(DSV3, &["server.speculative_algorithm=null"], Some("0.5.17"));
    assert_eq!(pools(&r), [("kv", 2_134_592, 2_134_592 * 70_272)]);
}

#[test]
fn deepseek_v3_2_packs_an_indexer_layer_per_draft() {
    // `pool_host/dsa.py`: layer_num = 61 + 1 → KV 62 × 1,152 = 71,424 and indexer
    // (61 + 1) × 132 = 8,184 B/token; the indexer mirrors the KV pool's slots.
    let m = model_preset("deepseek-v3.2").unwrap();
    let layout = ParallelLayout::tp(8);
    let inp = PoolSetInputs {
        model: m,
        layout: &layout,
        dtype: KvDtype::Bf16,
        rules: Release::V0_5_23.rules().pools,
        device: DevicePoolInputs {
            free_before_load: 140 << 30,
            weights_per_rank: 86_000_000_000,
            mem_fraction_static: 0.85,
            cell_size: 0,
            page_size: 64,
            max_total_tokens: None,
        },
        draft: SpecDraft { mtp_layers: 1 },
        swa_full_tokens_ratio: 0.8,
        mamba_full_memory_ratio: 0.9,
        max_mamba_cache_size: None,
        enable_hierarchical_cache: false,
        pd_disaggregation: false,
    };
    let dev = device_pools(&inp).unwrap();
    let specs = host_pool_specs(&inp, &dev);
    let got: Vec<_> = specs
        .iter()
        .map(|x| (x.name, x.bytes_per_unit, x.sizing))
        .collect();
    assert_eq!(
        got,
        [
            ("kv", 71_424, HostSizing::Own),
            ("indexer", 8_184, HostSizing::MirrorFirst)
        ]
    );
}

#[test]
fn spec_flags_read_from_the_launch_command() {
    let s = load_scenario(DSV3, &[], None).unwrap();
    assert_eq!(
        s.server
            .speculative_algorithm
            .as_ref()
            .map(|a| a.as_written()),
        Some("EAGLE")
    );
    assert_eq!(s.server.speculative_num_steps, Some(3));
    assert_eq!(s.server.speculative_eagle_topk, Some(1));
    assert_eq!(s.server.speculative_num_draft_tokens, Some(4));
    let s = load(SWA, &[], None).unwrap();
    assert_eq!(s.server.swa_full_tokens_ratio, Some(0.8));
    let s = load(QWEN, &[], None).unwrap();
    assert_eq!(s.server.max_mamba_cache_size, Some(600));
    // EAGLE3 with its own draft model: no MTP layers mirrored.
    let mut srv = s.server.clone();
    srv.speculative_algorithm = Some("EAGLE3".into());
    assert_eq!(srv.mtp_draft_layers(1), 0);
    srv.speculative_algorithm = Some("NEXTN".into());
    assert_eq!(srv.mtp_draft_layers(1), 1);
    srv.speculative_draft_model_path = Some("other/draft".into());
    assert_eq!(srv.mtp_draft_layers(1), 0);
}

#[test]
fn speculative_notes_say_what_is_mirrored_and_what_is_left_out() {
    let s = load_scenario(DSV3, &[], None).unwrap();
    assert!(
        s.notes.iter().any(|n| n.starts_with(
            "--speculative-algorithm EAGLE: 1 MTP draft layer(s) mirrored on the host"
        )),
        "{:?}",
        s.notes
    );
    // Qwen3-Next has an MTP layer, but hybrid drafts (state slots) are left out: the host
    // pools stay the target's, with a warning.
    let sets = ["server.speculative_algorithm=NEXTN".to_string()];
    let s = load(QWEN, &sets, None).unwrap();
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("MTP drafts of sliding-window / hybrid models are not modelled")),
        "{:?}",
        s.notes
    );
    let p = plan_for(&s).unwrap();
    let got: Vec<_> = p
        .pools
        .iter()
        .map(|x| (x.name, x.bytes_per_token))
        .collect();
    assert_eq!(got, [("kv", 12_288), ("state", 19_316_736)]);
}

#[test]
fn report_shows_each_pool_with_its_unit_and_the_total() {
    use hicache_sim::report::startup::build;
    let s = load(QWEN, &[], None).unwrap();
    let p = plan_for(&s).unwrap();
    let mc = startup::run(&p, s.seed, 1);
    let rep = build(&s, &p, &mc, s.seed);
    let v = serde_json::to_value(&rep).unwrap();
    assert_eq!(v["device_state_slots"], 600);
    assert_eq!(v["host_pools"][1]["bytes_per_slot"], 19_316_736u64);
    assert!(v["host_pools"][1].get("bytes_per_token").is_none());
    let r0 = &v["ranks"][0];
    assert_eq!(r0["pools"][0]["tokens"], 3_056_064u64);
    assert_eq!(r0["pools"][1]["slots"], 1_163u64);
    assert!(r0["pools"][1].get("tokens").is_none());
    // 3,056,064 × 12,288 + 1,163 × 19,316,736 = 37,552,914,432 + 22,465,363,968.
    assert_eq!(r0["requested_total_bytes"], 60_018_278_400u64);
    // Sliding-window: the SWA device pool next to the full one; plain models get neither
    // field (the golden files keep their shape).
    let s = load(SWA, &[], None).unwrap();
    let p = plan_for(&s).unwrap();
    let mc = startup::run(&p, s.seed, 1);
    let v = serde_json::to_value(build(&s, &p, &mc, s.seed)).unwrap();
    assert_eq!(v["device_swa_pool_tokens"], 947_072u64);
    assert!(v.get("device_state_slots").is_none());
    // 55,556,702,208 + 44,444,418,048.
    assert_eq!(v["ranks"][0]["requested_total_bytes"], 100_001_120_256u64);
}

#[test]
fn swa_ratio_out_of_range_is_refused_like_sglang() {
    // `kv_cache_hook.py` (0.5.21+; `server_args.py` before): `0 < ratio <= 1.0`.
    let e = load(SWA, &["server.swa_full_tokens_ratio=1.5".to_string()], None).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("server.swa_full_tokens_ratio"));
    assert_eq!(
        e.message,
        "1.5: --swa-full-tokens-ratio should be in range (0, 1.0]."
    );
    // A smaller ratio shrinks the SWA pool and grows the full one: cell = 18,432 × 1.5 =
    // 27,648 → 39,280,007,936 // 27,648 = 1,420,718 → 1,420,672; SWA int(710,336) →
    // 710,336 (11,099 pages).
    let p = plan(SWA, &["server.swa_full_tokens_ratio=0.5"], None);
    assert_eq!(
        (p.device_tokens, p.device_swa_tokens),
        (1_420_672, Some(710_336))
    );
}

/// The log lines of each pool kind under the release's formats.
fn rank0_log(path: &str, sets: &[&str], version: Option<&str>) -> Vec<String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = load(path, &sets, version).expect("scenario loads");
    let p = plan_for(&s).expect("plan builds");
    let mc = startup::run(&p, 0, 1);
    let rep = hicache_sim::report::startup::build(&s, &p, &mc, 0);
    rep.ranks[0].log.clone()
}

#[test]
fn pool_labels_and_the_mamba_line_follow_each_release() {
    // `hybrid_pool_assembler.py: build_hybrid_swa_stack` labels the SWA model's pools
    // `full` and `swa` (0.5.17+); bytes 3,014,144 × 18,432 = 55.56 GB and
    // 2,411,264 × 18,432 = 44.44 GB.
    assert_eq!(
        rank0_log(SWA, &[], None),
        [
            "Allocating full hierarchical KV host pool: 3014144 tokens, 55.56 GB host memory.",
            "Allocating swa hierarchical KV host pool: 2411264 tokens, 44.44 GB host memory.",
        ]
    );
    // `pool_host/mamba.py: MambaPoolHost.__init__`: the state pool has its own line,
    // with the slot count from 0.5.23 only; 1,163 × 19,316,736 B = 22.47 GB. The KV pool
    // of a hybrid linear-attention model keeps the default label `kv`.
    let l23 = rank0_log(QWEN, &[], None);
    assert_eq!(
        l23[1],
        "Allocating 22.47 GB host memory for hierarchical Mamba cache (1163 state slots, layout=page_first)."
    );
    assert!(l23[0].starts_with("Allocating kv hierarchical KV host pool: 3056064 tokens"));
    let l21 = rank0_log(QWEN, &[], Some("0.5.21"));
    assert!(
        l21.iter().any(|l| l
            == "Allocating 22.47 GB host memory for hierarchical Mamba cache (layout=page_first)."),
        "{l21:#?}"
    );
}

/// The page size SGLang runs, not `--page-size`'s default 1 (`model::resolve_page_size`):
/// Qwen3-32B on a GB300 without `--page-size` runs `trtllm_mha`'s 64-token pages (the
/// device pool a whole number of them: 3,841,907 → 3,841,856) and says SGLang's line;
/// on an H200 (fa3) it keeps page 1; GLM-5.2 (DSA) runs 64 on either; gpt-oss (a
/// sliding-window model, whose Blackwell backend is model-specific) is `unverified`.
#[test]
fn the_page_size_is_the_one_sglangs_attention_backend_runs() {
    let d = tempfile::tempdir().unwrap();
    let run = |node: &str, model: &str| {
        let f = d
            .path()
            .join(format!("{node}-{}.sh", model.replace('/', "-")));
        std::fs::write(
            &f,
            format!("# hicache-sim: node={node} sglang=0.5.23\npython -m sglang.launch_server --model-path {model} --tp 4\n"),
        )
        .unwrap();
        let o = crate::support::run(
            &["startup", f.to_str().unwrap(), "--format", "json"],
            d.path(),
        );
        assert_eq!(
            crate::support::code(&o),
            0,
            "{}",
            crate::support::stderr(&o)
        );
        serde_json::from_str::<serde_json::Value>(&crate::support::stdout(&o)).unwrap()
    };
    let notes = |v: &serde_json::Value| {
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let v = run("gb300", "Qwen/Qwen3-32B");
    assert_eq!(v["device_pool_tokens"], 3_841_856);
    assert!(notes(&v).contains("page size 64: SGLang's trtllm_mha attention backend: \"TensorRT-LLM MHA only supports page_size of 16, 32, 64 or 128, changing page_size from None to 64.\""), "{}", notes(&v));
    // (`unverified` for the GB300 preset's estimated TP4 reserve only.)
    assert!(
        !v["unverified"].to_string().contains("attention backend"),
        "{v}"
    );
    let v = run("hgx-h200", "Qwen/Qwen3-32B");
    assert!(!notes(&v).contains("page size"), "{}", notes(&v));
    for node in ["gb300", "hgx-h200"] {
        let v = run(node, "zai-org/GLM-5.2-FP8");
        assert_eq!(v["device_pool_tokens"].as_u64().unwrap() % 64, 0, "{node}");
        assert!(
            notes(&v).contains("Setting page size to 64 for DeepSeek DSA."),
            "{node}"
        );
    }
    let v = run("gb300", "openai/gpt-oss-120b");
    assert_eq!(v["status"], "unverified");
    assert!(
        v["unverified"].to_string().contains("attention backend"),
        "{v}"
    );
}

/// `--chunked-prefill-size` not a whole number of pages is SGLang's `AssertionError` at
/// launch (`validation_hook.py`, `server_args.py` before 0.5.19; every modelled
/// release), checked against the page size the hooks leave (64 here): 8,100 is refused,
/// 8,000 (125 pages) and -1 (chunking off) are not.
#[test]
fn a_chunk_of_part_pages_is_refused_like_sglang() {
    let e = load(
        "scenarios/quickstart.yaml",
        &["server.chunked_prefill_size=8100".to_string()],
        None,
    )
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("server.chunked_prefill_size"));
    assert_eq!(
        e.message,
        "8100 is not a multiple of the page size 64: SGLang's launch fails with `AssertionError: chunked_prefill_size must be divisible by page_size`"
    );
    for ok in ["8000", "-1"] {
        assert!(
            load(
                "scenarios/quickstart.yaml",
                &[format!("server.chunked_prefill_size={ok}")],
                None
            )
            .is_ok(),
            "{ok}"
        );
    }
}
