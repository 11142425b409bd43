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

use std::collections::{BTreeMap, BTreeSet};

use hicache_sim::model::catalogue::catalogue;
use hicache_sim::model::dsv4::{Dsv4Geometry, Dsv4Schedule};
use hicache_sim::model::{
    ConfigFiles, KvDtype, ParallelLayout, preset_from_config, read_model, resolve_kv_dtype,
};
use hicache_sim::pools::dsa_index_k_layers;
use hicache_sim::release::Sglang;
use serde_json::Value;

const RELEASES: [&str; 3] = ["0.5.21", "0.5.22", "0.5.23"];

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
            let sm = g.get("sm").and_then(Value::as_u64).unwrap_or(90) as u32 / 10;
            let hicache = g["hicache"]
                .as_bool()
                .unwrap_or_else(|| panic!("{path}: a case without `hicache`: {line}"));
            let quant = hf.quantization.clone();
            let preset = preset_from_config(&hf, &quant, id.to_string());
            let want_method = g["quantization"].as_str();
            let ctx = format!(
                "{rel} {id} tp{tp} kv={} sm{sm} hicache={hicache}",
                g["kv_cache_dtype_arg"].as_str().unwrap()
            );
            if quant.method.as_deref() != want_method {
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
                for c in cases {
                    failures.extend(dsv4_case(rel, &geo, c, &ctx));
                    dsv4_checked += 1;
                }
                checked += 1;
                continue;
            }
            let fp8 = g["store_dtype"].as_str().unwrap().starts_with("float8");
            if fp8 != matches!(dtype, KvDtype::Fp8 | KvDtype::Fp8DsMla) {
                failures.push(format!(
                    "{ctx}: dtype {dtype:?}, SGLang stores {}",
                    g["store_dtype"]
                ));
            }
            let layout = ParallelLayout::tp(tp);
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
        }
    }
    if let Some(p) = std::env::var_os("KV_BYTES_FAILURES") {
        std::fs::write(p, failures.join("\n")).unwrap();
    }
    let expected: BTreeSet<String> = NOT_MODELLED.iter().map(|s| s.to_string()).collect();
    assert_eq!(unread, expected, "catalogue models the reader refuses");
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from SGLang:\n{}",
        failures.len(),
        checked + failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
    // 4 DeepSeek-V4 builds × 12 cases × 6 schedules × 2 HiCache switches × 3 releases.
    assert_eq!(dsv4_checked, 1728, "DeepSeek-V4 schedules compared");
    // The host indexer of the 14 DSA builds (GLM-5, 5.1, 5.2, 5.3 and DeepSeek-V3.2 with
    // their FP8 / NVFP4 checkpoints) with HiCache on: 14 × 4 TP × 3 dtypes × 2 SM = 336
    // per release.
    assert_eq!(host_indexer_checked, 3 * 336, "host indexer cases compared");
    // 3 releases, every modelled catalogue model, HiCache off and on: at least 7,000
    // cases compared.
    assert!(
        checked >= 7000,
        "only {checked} cases compared ({sglang_errors} SGLang errors)"
    );
}

/// One DeepSeek-V4 schedule of a golden line (its SWA ratio as
/// [`crate::dsv4_host::golden_operator_ratio`] reads it): the coefficients
/// (`bytes_per_full_token`, `bytes_per_swa_token` as Python's `repr`, `kv_bytes`, the
/// SWA cap) and `calculate_pool_sizes` at each available budget must be SGLang's.
fn dsv4_case(rel: &str, geo: &Dsv4Geometry, c: &Value, ctx: &str) -> Vec<String> {
    let mut out = Vec::new();
    let sched = Dsv4Schedule {
        page_size: 256,
        max_running_requests: c["max_running_requests"].as_u64().unwrap(),
        chunked_prefill_size: c["chunked_prefill_size"].as_i64().unwrap(),
        operator_swa_full_tokens_ratio: crate::dsv4_host::golden_operator_ratio(rel, c),
        attn_dp_size: 1,
        disable_radix_cache: false,
        disable_overlap_schedule: false,
    };
    let ctx = format!(
        "{ctx} mrr={} chunk={} ratio={:?}",
        sched.max_running_requests,
        sched.chunked_prefill_size,
        sched.operator_swa_full_tokens_ratio
    );
    let co = geo.coefficients(&sched);
    let f = |k: &str| c[k].as_str().unwrap().parse::<f64>().unwrap();
    if co.kv_bytes != c["kv_bytes"].as_u64().unwrap()
        || co.bytes_per_full_token != f("bytes_per_full_token")
        || co.bytes_per_swa_token != f("bytes_per_swa_token")
        || co.swa_cap_tokens != c["swa_cap_tokens"].as_u64()
    {
        out.push(format!("{ctx}: simulator {co:?}, SGLang {c}"));
    }
    for (gib, want) in c["sizes"].as_object().unwrap() {
        let avail = gib.parse::<u64>().unwrap() << 30;
        match geo.pool_sizes(&sched, avail, None) {
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
