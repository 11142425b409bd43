//! KV bytes per token per rank of every catalogue model, against SGLang's own code.
//!
//! `tests/golden/kv_bytes/<release>.jsonl` (written by `tools/models/kv_bytes_golden.py`,
//! which runs each release's `ModelConfig`, DSA dtype/backend hooks,
//! `configure_kv_cache_dtype`, pool configurators and DSA host indexer pool on a CPU)
//! holds one line per model × TP (1, 2, 4, 8) × `--kv-cache-dtype` (auto, bfloat16,
//! fp8_e4m3) × `--enable-hierarchical-cache` off / on [× SM90 / SM100 for DSA models].
//! Every line is checked here: the catalogue model read by `model::read_model`, the dtype
//! by `model::resolve_kv_dtype`, the pools by `ModelPreset::pools_per_token` (a DSA
//! model's index-K on the layers the release keeps for that HiCache switch,
//! `pools::dsa_index_k_layers`) and `Attention::state_bytes_per_slot` must give SGLang's
//! figure exactly: the full-attention KV pool, the DSA indexer on the device and (HiCache
//! on) in the host indexer pool, the sliding-window pool and the Mamba state per slot, and
//! the quantisation method SGLang reads.
//!
//! Lines with a `case` go further than plain TP:
//! - `dp_attention`: the same pools under `--enable-dp-attention` (dp = tp, and tp / 2
//!   from TP 4), through `ParallelLayout { enable_dp_attention, dp_size }`;
//! - `draft`: a NextN draft of a checkpoint's own MTP head ([`draft_case`]);
//! - `profile`: `max_total_num_tokens` from given memory figures ([`profile_case`]).
//!
//! Where the simulator is known to differ, the model (and the releases) are named in
//! [`KNOWN_DRAFT_DIFFERENCES`] / [`KNOWN_PROFILE_DIFFERENCES`] with the reason.

use std::collections::{BTreeMap, BTreeSet};

use hicache_sim::domain::ServerArgs;
use hicache_sim::domain::choices::SpeculativeAlgorithm;
use hicache_sim::model::catalogue::catalogue;
use hicache_sim::model::dsv4::{Dsv4Formula, Dsv4Geometry, Dsv4Schedule};
use hicache_sim::model::{Attention, DevicePoolInputs, ModelPreset};
use hicache_sim::model::{
    ConfigFiles, KvDtype, ParallelLayout, preset_from_config, read_model, resolve_kv_dtype,
};
use hicache_sim::pools::{
    PoolError, PoolSetInputs, SpecDraft, device_pools, dsa_index_k_layers, spec_draft,
};
use hicache_sim::release::Sglang;
use hicache_sim::startup::plan::DeviceFailure;
use serde_json::Value;

const RELEASES: [&str; 6] = ["0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"];

/// Catalogue models this simulator does not read, and why (the reader's own error says
/// so; the test fails if the set changes).
const NOT_MODELLED: &[&str] = &[
    "MiniMaxAI/MiniMax-M3",
    "XiaomiMiMo/MiMo-7B-Base",
    "nvidia/Llama-3_3-Nemotron-Super-49B-v1",
    "nvidia/MiniMax-M3-NVFP4",
    "stepfun-ai/Step-3.7-Flash",
    "stepfun-ai/Step-3.7-Flash-FP8",
];

fn kv_arg(s: &str) -> KvDtype {
    match s {
        "auto" => KvDtype::Auto,
        "bfloat16" => KvDtype::Bf16,
        "fp8_e4m3" => KvDtype::Fp8,
        other => panic!("golden kv dtype {other}"),
    }
}

#[test]
fn kv_bytes_match_sglang_for_every_catalogue_model() {
    let models: BTreeMap<&str, _> = catalogue().iter().map(|e| (e.hf_id.as_str(), e)).collect();
    let mut checked = 0usize;
    let mut sglang_errors = 0usize;
    let mut dsv4_checked = 0usize;
    let mut host_indexer_checked = 0usize;
    let mut dp_checked = 0usize;
    let mut draft_checked = 0usize;
    let mut profile_checked = 0usize;
    let mut known: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut unread: BTreeSet<String> = BTreeSet::new();
    let mut failures: Vec<String> = Vec::new();
    for rel in RELEASES {
        let pool_rules = Sglang::from_id(rel).unwrap().release_rules().pools;
        let path = format!("tests/golden/kv_bytes/{rel}.jsonl");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // Every catalogue model has its cases in every release's golden: a model added
        // to the catalogue without rerunning tools/models/kv_bytes_golden.py fails here.
        let in_golden: BTreeSet<&str> = text
            .lines()
            .map(|l| {
                let g: Value = serde_json::from_str(l).unwrap();
                models
                    .get_key_value(g["model"].as_str().unwrap())
                    .map(|(k, _)| *k)
                    .unwrap_or_else(|| panic!("{path}: {} is not in the catalogue", g["model"]))
            })
            .collect();
        let missing: Vec<&&str> = models.keys().filter(|k| !in_golden.contains(*k)).collect();
        assert!(
            missing.is_empty(),
            "{path}: no SGLang cases for {missing:?}"
        );
        for line in text.lines() {
            let g: Value = serde_json::from_str(line).unwrap();
            let id = g["model"].as_str().unwrap();
            let e = models
                .get(id)
                .unwrap_or_else(|| panic!("{path}: {id} is not in the catalogue"));
            let files = ConfigFiles {
                config: e.config.clone(),
                hf_quant_config: e.hf_quant_config.clone(),
                safetensors_total_size: None,
            };
            let hf = match read_model(&files) {
                Ok(m) => m,
                Err(_) => {
                    unread.insert(id.to_string());
                    continue;
                }
            };
            if g.get("error").is_some() {
                // SGLang itself could not size this case here (a ModelConfig it cannot
                // build offline, a quant config it rejects): nothing to compare.
                sglang_errors += 1;
                continue;
            }
            let tp = g["tp"].as_u64().unwrap() as u32;
            let case = g.get("case").and_then(Value::as_str);
            // `--enable-dp-attention --dp-size dp` (attention TP tp / dp); 1: plain TP.
            let dp = g.get("dp").and_then(Value::as_u64).unwrap_or(1) as u32;
            let layout = if dp > 1 {
                ParallelLayout {
                    tp_size: tp,
                    dp_size: dp,
                    enable_dp_attention: true,
                    ..ParallelLayout::default()
                }
            } else {
                ParallelLayout::tp(tp)
            };
            let sm = g.get("sm").and_then(Value::as_u64).unwrap_or(90) as u32 / 10;
            let hicache = g["hicache"]
                .as_bool()
                .unwrap_or_else(|| panic!("{path}: a case without `hicache`: {line}"));
            let quant = hf.quantization.clone();
            let preset = preset_from_config(&hf, &quant, id.to_string());
            let want_method = g["quantization"].as_str();
            let ctx = format!(
                "{rel} {id} {} tp{tp} dp{dp} kv={} sm{sm} hicache={hicache}",
                case.unwrap_or("tp"),
                g["kv_cache_dtype_arg"].as_str().unwrap()
            );
            if g.get("quantization").is_some() && quant.method.as_deref() != want_method {
                failures.push(format!(
                    "{ctx}: quantization {:?}, SGLang {want_method:?}",
                    quant.method
                ));
            }
            let dtype = match resolve_kv_dtype(
                &preset,
                kv_arg(g["kv_cache_dtype_arg"].as_str().unwrap()),
                Some(sm),
                hf.glm_dsa,
            ) {
                Ok(d) => d,
                Err(m) => {
                    failures.push(format!("{ctx}: {m}"));
                    continue;
                }
            };
            let base = |draft: SpecDraft, device: DevicePoolInputs| PoolSetInputs {
                model: &preset,
                layout: &layout,
                dtype,
                rules: pool_rules,
                device,
                draft,
                swa_full_tokens_ratio: 0.8,
                mamba_full_memory_ratio: 0.9,
                max_mamba_cache_size: None,
                enable_hierarchical_cache: hicache,
                pd_disaggregation: false,
            };
            match case {
                Some("draft") => {
                    let (out, k) = draft_case(rel, &preset, &g, &ctx, |d| base(d, NO_MEMORY));
                    failures.extend(out);
                    if let Some(k) = k {
                        *known.entry(k).or_default() += 1;
                    }
                    draft_checked += 1;
                    continue;
                }
                Some("profile") => {
                    let (out, n, k) = profile_case(rel, &preset, &g, &ctx, |dev| {
                        base(SpecDraft::default(), dev)
                    });
                    failures.extend(out);
                    if let Some(k) = k {
                        *known.entry(k).or_default() += 1;
                    }
                    profile_checked += n;
                    continue;
                }
                Some("dp_attention") => {}
                None => {}
                Some(other) => panic!("{path}: unknown case {other}: {line}"),
            }
            if let Some(cases) = g.get("dsv4").and_then(Value::as_array) {
                // DeepSeek-V4: SGLang's DSV4PoolConfigurator, per schedule.
                let want_dtype = g["kv_cache_dtype"].as_str().unwrap();
                let got_dtype = if dtype == KvDtype::Fp8 {
                    "fp8_e4m3"
                } else {
                    "bfloat16"
                };
                if got_dtype != want_dtype {
                    failures.push(format!("{ctx}: dtype {got_dtype}, SGLang {want_dtype}"));
                }
                let geo = Dsv4Geometry::of(&hf.attention, hf.layers).expect("a DSV4 geometry");
                let formula = Dsv4Formula::of(pool_rules.dsv4_pools);
                for c in cases {
                    let ratio = crate::dsv4_host::golden_operator_ratio(rel, c);
                    failures.extend(dsv4_case(formula, ratio, &geo, c, &ctx, dp as u64));
                    dsv4_checked += 1;
                }
                checked += 1;
                dp_checked += usize::from(case.is_some());
                continue;
            }
            let fp8 = g["store_dtype"].as_str().unwrap().starts_with("float8");
            if fp8 != matches!(dtype, KvDtype::Fp8 | KvDtype::Fp8DsMla) {
                failures.push(format!(
                    "{ctx}: dtype {dtype:?}, SGLang stores {}",
                    g["store_dtype"]
                ));
            }
            // PD disaggregation off, as the worker's `get_disagg`.
            let index_k = dsa_index_k_layers(pool_rules.dsa_index_k, hicache, false);
            let mut got: BTreeMap<String, u64> = preset
                .pools_per_token(&layout, dtype, index_k.device)
                .into_iter()
                .map(|p| (p.name.to_string(), p.bytes_per_token))
                .collect();
            if hicache
                && let Some(h) = preset
                    .pools_per_token(&layout, dtype, index_k.host)
                    .into_iter()
                    .find(|p| p.name == "indexer")
            {
                // `DSAIndexerPoolHost.size_per_token` (no packed drafts).
                got.insert("host_indexer".into(), h.bytes_per_token);
            }
            if let Some(s) = preset.attention.state_bytes_per_slot(&layout) {
                got.insert("state_per_slot".into(), s);
            }
            let want: BTreeMap<String, u64> = g["pools"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect();
            if got != want {
                failures.push(format!("{ctx}: simulator {got:?}, SGLang {want:?}"));
            }
            host_indexer_checked += usize::from(want.contains_key("host_indexer"));
            checked += 1;
            dp_checked += usize::from(case.is_some());
        }
    }
    if let Some(p) = std::env::var_os("KV_BYTES_FAILURES") {
        std::fs::write(p, failures.join("\n")).unwrap();
    }
    let expected: BTreeSet<String> = NOT_MODELLED.iter().map(|s| s.to_string()).collect();
    assert_eq!(unread, expected, "catalogue models the reader refuses");
    eprintln!(
        "kv_bytes: {checked} cases ({dp_checked} DP attention, {draft_checked} MTP drafts, \
         {profile_checked} profiled budgets); known differences: {known:?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from SGLang:\n{}",
        failures.len(),
        checked + failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
    // 4 DeepSeek-V4 builds × 12 cases × 8 schedules (two of them with
    // `SGLANG_DSV4_COMPRESS_STATE_DTYPE=bf16`) × 2 HiCache switches × 6 releases (4,608),
    // and × 5 DP-attention layouts × 8 schedules × 6 releases (960): 0.5.18–0.5.20 by
    // their flat `kv_bytes` formula, 0.5.21–0.5.23 by the paged one.
    assert_eq!(dsv4_checked, 4608 + 960, "DeepSeek-V4 schedules compared");
    // DP attention: 5 layouts (TP2/DP2, TP4/DP4, TP4/DP2, TP8/DP8, TP8/DP4) of every
    // model SGLang sizes (DeepSeek-V4's lines count once each): 1,435 in 0.5.21–0.5.23,
    // 475 in each of 0.5.18–0.5.20.
    assert_eq!(dp_checked, 1435 + 3 * 475, "DP-attention cases compared");
    // NextN drafts of the checkpoints with an MTP head, 12 cases each (TP1, TP8,
    // TP8/DP8 × auto / fp8_e4m3 × HiCache off / on) where SGLang sizes them, 396 per
    // release, the known differences among them.
    assert_eq!(draft_checked, 6 * 396, "MTP draft cases compared");
    // Nemotron-H MTP drafts: 5 checkpoints SGLang sizes × 12 cases × 4 releases (0.5.20+).
    assert_eq!(
        known.values().sum::<usize>(),
        240,
        "known-difference cases (Nemotron-H MTP drafts)"
    );
    // 12 budgets (4 memory figures × 3 schedules) × TP1 / TP8 of every non-V4 model:
    // 2,184 per release to 0.5.21, 2,208 in 0.5.22 and 0.5.23.
    assert_eq!(
        profile_checked,
        4 * 2184 + 2 * 2208,
        "profiled budgets compared"
    );
    // The host indexer of the 14 DSA builds (GLM-5, 5.1, 5.2, 5.3 and DeepSeek-V3.2 with
    // their FP8 / NVFP4 checkpoints) with HiCache on: 14 × 4 TP × 3 dtypes × 2 SM = 336
    // per release.
    assert_eq!(host_indexer_checked, 6 * 336, "host indexer cases compared");
    // 6 releases, every modelled catalogue model, HiCache off and on: at least 18,000
    // cases compared.
    assert!(
        checked >= 18000,
        "only {checked} cases compared ({sglang_errors} SGLang errors)"
    );
}

/// DeepSeek-V4's device pools under 0.5.14–0.5.17, whose `DSV4PoolConfigurator` reads a
/// `ModelRunner` or an early `KVCacheConfigurator` the KV worker does not build:
/// `tools/models/dsv4_early_golden.py` runs the class itself on SGLang's `ModelConfig`
/// (tests/golden/dsv4_early/), per layout (TP, attention DP) and schedule, at 40 and
/// 100 GiB. 0.5.14 prices the C128 state rings per SWA token: DeepSeek-V4-Flash's full
/// token is 15,897.45 B there against 7,705.45 B in 0.5.15–0.5.17.
#[test]
fn dsv4_pools_match_sglang_0_5_14_to_0_5_17() {
    let models: BTreeMap<&str, _> = catalogue().iter().map(|e| (e.hf_id.as_str(), e)).collect();
    let (mut checked, mut sglang_errors) = (0usize, 0usize);
    let mut failures = Vec::new();
    let mut flash_coefficient = BTreeMap::new();
    for rel in ["0.5.14", "0.5.15", "0.5.16", "0.5.17"] {
        let formula = Dsv4Formula::of(
            Sglang::from_id(rel)
                .unwrap()
                .release_rules()
                .pools
                .dsv4_pools,
        );
        let path = format!("tests/golden/dsv4_early/{rel}.jsonl");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in text.lines() {
            let g: Value = serde_json::from_str(line).unwrap();
            let id = g["model"].as_str().unwrap();
            if g.get("error").is_some() {
                sglang_errors += 1;
                continue;
            }
            let e = models
                .get(id)
                .unwrap_or_else(|| panic!("{path}: {id} not in the catalogue"));
            let files = ConfigFiles {
                config: e.config.clone(),
                hf_quant_config: e.hf_quant_config.clone(),
                safetensors_total_size: None,
            };
            let hf = read_model(&files).unwrap();
            let geo = Dsv4Geometry::of(&hf.attention, hf.layers).expect("a DSV4 geometry");
            assert_eq!(g["layers"].as_u64(), Some(hf.layers as u64), "{path}: {id}");
            let dp = g["dp"].as_u64().unwrap();
            let ctx = format!("{rel} {id} tp={} dp={dp}", g["tp"]);
            for c in g["dsv4"].as_array().unwrap() {
                let ratio = crate::dsv4_host::golden_operator_ratio(rel, c);
                failures.extend(dsv4_case(formula, ratio, &geo, c, &ctx, dp));
                checked += 1;
                if id == "deepseek-ai/DeepSeek-V4-Flash"
                    && dp == 1
                    && c["swa_full_tokens_ratio"] == 0.1
                {
                    let state = if c.get("compress_state_dtype").is_some() {
                        "bf16"
                    } else {
                        "fp32"
                    };
                    flash_coefficient.insert(
                        (rel, state),
                        c["bytes_per_full_token"].as_str().unwrap().to_string(),
                    );
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // 4 releases x 4 models x 7 layouts x 8 schedules (two with bf16 compress state); the
    // two sgl-project FP8 configs
    // (`model_type: deepseek_ref`) are ones SGLang's ModelConfig cannot build offline.
    assert_eq!((checked, sglang_errors), (896, 8));
    // bf16 state rings halve the state terms: 0.5.14's C4 and C128 ones (−4,768 B),
    // 0.5.15–0.5.17's C4 ones (−672 B).
    assert_eq!(flash_coefficient[&("0.5.14", "fp32")], "15897.45");
    assert_eq!(flash_coefficient[&("0.5.14", "bf16")], "11129.45");
    for rel in ["0.5.15", "0.5.16", "0.5.17"] {
        assert_eq!(
            flash_coefficient[&(rel, "fp32")],
            "7705.450000000001",
            "{rel}"
        );
        assert_eq!(
            flash_coefficient[&(rel, "bf16")],
            "7033.450000000001",
            "{rel}"
        );
    }
}

/// One DeepSeek-V4 schedule of a golden line (`ratio`: its operator SWA ratio, as
/// [`crate::dsv4_host::golden_operator_ratio`] reads it): the coefficients
/// (`bytes_per_full_token`, `bytes_per_swa_token` as Python's `repr`, `kv_bytes`, the
/// SWA cap) and `calculate_pool_sizes` at each available budget must be SGLang's.
pub(crate) fn dsv4_case(
    formula: Dsv4Formula,
    ratio: Option<f64>,
    geo: &Dsv4Geometry,
    c: &Value,
    ctx: &str,
    dp: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    let sched = Dsv4Schedule {
        page_size: 256,
        max_running_requests: c["max_running_requests"].as_u64().unwrap(),
        chunked_prefill_size: c["chunked_prefill_size"].as_i64().unwrap(),
        operator_swa_full_tokens_ratio: ratio,
        attn_dp_size: dp,
        disable_radix_cache: false,
        disable_overlap_schedule: false,
        // `SGLANG_DSV4_COMPRESS_STATE_DTYPE` as the worker set it (unset: fp32).
        compress_state_itemsize: match c["compress_state_dtype"].as_str() {
            None => 4,
            Some("bf16") => 2,
            Some(o) => panic!("compress_state_dtype {o}"),
        },
        // `tests/it/dsv4_spec.rs` puts its line's draft tokens on each schedule.
        speculative_num_draft_tokens: c
            .get("speculative_num_draft_tokens")
            .and_then(Value::as_u64),
    };
    let ctx = format!(
        "{ctx} mrr={} chunk={} ratio={:?} state item {}",
        sched.max_running_requests,
        sched.chunked_prefill_size,
        sched.operator_swa_full_tokens_ratio,
        sched.compress_state_itemsize
    );
    let co = geo.coefficients_for(formula, &sched);
    // `None`: a release's configurator without the figure (0.5.14–0.5.20 keep
    // `kv_bytes` a local and have no SWA-slot price).
    let f = |k: &str| c[k].as_str().unwrap().parse::<f64>().ok();
    let kv_bytes = match formula {
        Dsv4Formula::FlatKvBytes0518 { .. } | Dsv4Formula::C128PerSwaToken0514 => None,
        Dsv4Formula::Paged0521 => Some(co.kv_bytes),
    };
    if kv_bytes != c["kv_bytes"].as_u64()
        || Some(co.bytes_per_full_token) != f("bytes_per_full_token")
        || co.bytes_per_swa_token != f("bytes_per_swa_token")
        || co.swa_cap_tokens != c["swa_cap_tokens"].as_u64()
    {
        out.push(format!("{ctx}: simulator {co:?}, SGLang {c}"));
    }
    for (gib, want) in c["sizes"].as_object().unwrap() {
        let avail = gib.parse::<u64>().unwrap() << 30;
        match geo.pool_sizes_for(formula, &sched, avail, None) {
            Ok(p) => {
                let got = [p.full, p.swa, p.c4, p.c128, p.c4_state];
                let w: Vec<u64> = ["full", "swa", "c4", "c128", "c4_state"]
                    .iter()
                    .map(|k| want[k].as_u64().unwrap())
                    .collect();
                if got[..] != w[..] {
                    out.push(format!("{ctx} {gib} GiB: simulator {got:?}, SGLang {w:?}"));
                }
            }
            Err(e) => out.push(format!(
                "{ctx} {gib} GiB: simulator refuses ({e}), SGLang {want}"
            )),
        }
    }
    out
}

/// The pool inputs of a per-token comparison: no memory figures.
const NO_MEMORY: DevicePoolInputs = DevicePoolInputs {
    free_before_load: 0,
    weights_per_rank: 0,
    mem_fraction_static: 0.9,
    cell_size: 0,
    page_size: 1,
    max_total_tokens: None,
};

/// Where the simulator is known to differ from SGLang's draft sizing, the releases, and
/// why; a case listed here is checked to still differ (a fix must take its entry out).
const KNOWN_DRAFT_DIFFERENCES: &[(&str, &[&str], &str)] = &[
    (
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
        NEMOTRON_H_MTP_RELEASES,
        NEMOTRON_H_MTP,
    ),
    (
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
        NEMOTRON_H_MTP_RELEASES,
        NEMOTRON_H_MTP,
    ),
    (
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        NEMOTRON_H_MTP_RELEASES,
        NEMOTRON_H_MTP,
    ),
    (
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8",
        NEMOTRON_H_MTP_RELEASES,
        NEMOTRON_H_MTP,
    ),
    (
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4",
        NEMOTRON_H_MTP_RELEASES,
        NEMOTRON_H_MTP,
    ),
    (
        "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4",
        NEMOTRON_H_MTP_RELEASES,
        NEMOTRON_H_MTP,
    ),
];

const NEMOTRON_H_MTP: &str = "Nemotron-H MTP: SGLang charges the draft's attention layer to the target cell (eagle_draft_num_layers = 1, int(cell / attention layers) more: Super TP1 bf16 4,096 -> 4,608 B per token); model/draft.rs models no draft of a hybrid (Mamba) model (its NotModelled note)";

/// 0.5.20+: `spec_aux_hidden_state.py: _resolve_eagle_aux_hidden_state` falls back to the
/// target's config for a draft without `--speculative-draft-model-path`. 0.5.18–0.5.19
/// read the draft layers only from that path, which `speculative_hook.py:
/// _handle_eagle_family` sets for its DeepSeek / GLM / Bailing / Mistral / HYV3 list, not
/// for Nemotron-H: no draft layer in the target cell, as the simulator says.
const NEMOTRON_H_MTP_RELEASES: &[&str] = &["0.5.20", "0.5.21", "0.5.22", "0.5.23"];

/// Where the simulator is known to differ from SGLang's `max_total_num_tokens`, the
/// releases, and why.
const KNOWN_PROFILE_DIFFERENCES: &[(&str, &[&str], &str)] = &[];

fn known(list: &[(&str, &[&str], &'static str)], id: &str, rel: &str) -> Option<&'static str> {
    list.iter()
        .find(|(m, rels, _)| *m == id && rels.contains(&rel))
        .map(|(_, _, why)| *why)
}

/// One MTP draft line (`--speculative-algorithm NEXTN`, the model's own MTP head): the
/// draft layers SGLang charges to the target's cell (`eagle_draft_num_layers`) against
/// [`spec_draft`]'s, the target's cell with them (`DefaultPoolConfigurator._cell_size`)
/// against [`PoolSetInputs::device_cell_size`], and the draft worker's own pool (its
/// layers, KV and DSA indexer bytes per token) against [`ModelPreset::mtp_draft_pool`]
/// and the indexer's per-layer bytes × MTP layers.
fn draft_case<'a>(
    rel: &str,
    preset: &'a ModelPreset,
    g: &Value,
    ctx: &str,
    inputs: impl Fn(SpecDraft) -> PoolSetInputs<'a>,
) -> (Vec<String>, Option<&'static str>) {
    let mut out = Vec::new();
    let server = ServerArgs {
        speculative_algorithm: Some(SpeculativeAlgorithm::new("NEXTN")),
        ..ServerArgs::default()
    };
    let (draft, _) = spec_draft(&server, preset);
    let want_layers = g["draft_layers"].as_u64().unwrap_or(0);
    if u64::from(draft.mtp_layers) != want_layers {
        out.push(format!(
            "{ctx}: draft layers in the target cell: simulator {}, SGLang {want_layers}",
            draft.mtp_layers
        ));
    }
    let inp = inputs(draft);
    if let Some(want) = g.get("target_cell").and_then(Value::as_u64) {
        match inp.device_cell_size() {
            Some(c) if c == want => {}
            got => out.push(format!(
                "{ctx}: target cell with the draft: simulator {got:?}, SGLang {want}"
            )),
        }
    }
    if let Some(want) = g.get("target") {
        // A sliding-window target: its full and SWA pools (the simulator charges no
        // draft there).
        let got: BTreeMap<String, u64> = inp
            .device_geometry()
            .into_iter()
            .map(|p| (p.name.to_string(), p.bytes_per_token))
            .collect();
        let w: BTreeMap<String, u64> = want
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        if got != w {
            out.push(format!(
                "{ctx}: target pools with the draft: simulator {got:?}, SGLang {w:?}"
            ));
        }
    }
    if let Some(want) = g.get("draft_pool") {
        let layers = g["draft_worker_layers"].as_u64().unwrap();
        if layers != u64::from(preset.mtp_layers) {
            out.push(format!(
                "{ctx}: draft worker layers: simulator {}, SGLang {layers}",
                preset.mtp_layers
            ));
        }
        let kv = preset
            .mtp_draft_pool(inp.layout, inp.dtype)
            .map(|p| p.bytes_per_token)
            .unwrap_or(0);
        let indexer = match &preset.attention {
            Attention::MlaDsa {
                indexer_bytes_per_token_layer,
                ..
            } => indexer_bytes_per_token_layer * u64::from(preset.mtp_layers),
            _ => 0,
        };
        let w = |k: &str| want.get(k).and_then(Value::as_u64).unwrap_or(0);
        if (kv, indexer) != (w("kv"), w("indexer")) {
            out.push(format!(
                "{ctx}: draft pool (kv, indexer): simulator {:?}, SGLang {:?}",
                (kv, indexer),
                (w("kv"), w("indexer"))
            ));
        }
    }
    let id = g["model"].as_str().unwrap();
    match known(KNOWN_DRAFT_DIFFERENCES, id, rel) {
        Some(why) if out.is_empty() => (
            vec![format!(
                "{ctx}: listed as a known difference ({why}) but agrees: take it out of KNOWN_DRAFT_DIFFERENCES"
            )],
            None,
        ),
        Some(why) => (Vec::new(), Some(why)),
        None => (out, None),
    }
}

/// One profiling line: for each (free memory before the load, weights, fraction, page
/// size, `--max-total-tokens`) SGLang's `_profile_available_bytes` + `config_from_budget`
/// (`max_total_num_tokens`, the SWA pool's tokens, the Mamba state slots, or its
/// error) against [`device_pools`]. Returns the failures and the budgets compared.
fn profile_case<'a>(
    rel: &str,
    preset: &ModelPreset,
    g: &Value,
    ctx: &str,
    inputs: impl Fn(DevicePoolInputs) -> PoolSetInputs<'a>,
) -> (Vec<String>, usize, Option<&'static str>) {
    let mut out = Vec::new();
    let tp = g["tp"].as_u64().unwrap() as u32;
    if g["is_multimodal"].as_bool() != Some(preset.multimodal) {
        out.push(format!(
            "{ctx}: multimodal: simulator {}, SGLang {}",
            preset.multimodal, g["is_multimodal"]
        ));
    }
    let entries = g["profile"].as_array().unwrap();
    for e in entries {
        let i = e["in"].as_array().unwrap();
        let dev = DevicePoolInputs {
            free_before_load: i[0].as_u64().unwrap(),
            weights_per_rank: i[1].as_u64().unwrap(),
            mem_fraction_static: i[2].as_f64().unwrap(),
            cell_size: 0,
            page_size: i[3].as_u64().unwrap(),
            max_total_tokens: i[4].as_u64(),
        };
        let ctx = format!("{ctx} {:?}", i);
        let inp = inputs(dev);
        let pools = device_pools(&inp);
        if let (Ok(p), None) = (&pools, e.get("tokens")) {
            // No tokens: start-up's failure (`DeviceFailure::of`: the load's
            // out-of-memory error, `_profile_available_bytes`' ValueError or
            // `MemoryPoolConfig`'s RuntimeError) must be SGLang's.
            let want = e["error"].as_str().unwrap();
            let f = DeviceFailure::of(
                dev.weights_per_rank,
                dev.free_before_load,
                dev.mem_fraction_static,
                tp,
            );
            let got = format!("{}: {}", f.kind.name(), f.message);
            if p.full_tokens != 0 || !got.starts_with(want) {
                out.push(format!("{ctx}: simulator {p:?} ({got:?}), SGLang {want:?}"));
            }
            continue;
        }
        match (pools, e.get("tokens").and_then(Value::as_u64)) {
            (Ok(p), Some(t)) => {
                let got = (p.full_tokens, p.swa_tokens, p.state_slots);
                let want = (
                    t,
                    e.get("swa_tokens").and_then(Value::as_u64),
                    e.get("state_slots").and_then(Value::as_u64),
                );
                if got != want {
                    out.push(format!(
                        "{ctx}: simulator (tokens, swa, state) {got:?}, SGLang {want:?}"
                    ));
                }
            }
            (Err(err), None) => {
                // SGLang's message, cut at 160 characters, must open the simulator's.
                let want = e["error"].as_str().unwrap();
                let got = format!("ValueError: {err}");
                let got_rt = format!("RuntimeError: {err}");
                if !got.starts_with(want) && !got_rt.starts_with(want) {
                    out.push(format!(
                        "{ctx}: simulator refuses with {got:?}, SGLang {want:?}"
                    ));
                }
                if !matches!(
                    err,
                    PoolError::WeightsLeaveNoKvRoom { .. } | PoolError::NoMambaRoom { .. }
                ) {
                    out.push(format!("{ctx}: simulator refuses with {err:?}"));
                }
            }
            (Ok(p), None) => out.push(format!("{ctx}: simulator {p:?}, SGLang {}", e["error"])),
            (Err(err), Some(t)) => out.push(format!(
                "{ctx}: simulator refuses ({err}), SGLang {t} tokens"
            )),
        }
    }
    let id = g["model"].as_str().unwrap();
    match known(KNOWN_PROFILE_DIFFERENCES, id, rel) {
        Some(why) if out.is_empty() => (
            vec![format!(
                "{ctx}: listed as a known difference ({why}) but agrees: take it out of KNOWN_PROFILE_DIFFERENCES"
            )],
            0,
            None,
        ),
        Some(why) => (Vec::new(), 0, Some(why)),
        None => (out, entries.len(), None),
    }
}
