//! Models from their config: hand-computed KV bytes for a few catalogue
//! models, the presets against the catalogue's configs, quantisation read from the
//! model, weights per rank, and scenarios that describe their model by `--model-path`,
//! `model: {config: FILE}` or a catalogue name.

use assert_cmd::Command;
use hicache_sim::model::catalogue::catalogue;
use hicache_sim::model::{
    Attention, KvDtype, ModelQuery, ModelSource, ParallelLayout, model_preset, resolve,
    resolve_kv_dtype,
};
use hicache_sim::scenario::Scenario;

fn catalogue_model(id: &str) -> hicache_sim::model::ResolvedModel {
    resolve(&ModelQuery {
        name: Some(id),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{id}: {e}"))
}

fn pools(id: &str, tp: u32, dtype: KvDtype) -> Vec<(&'static str, u64)> {
    let m = catalogue_model(id);
    m.preset
        .host_pools(&ParallelLayout::tp(tp), dtype)
        .into_iter()
        .map(|p| (p.name, p.bytes_per_token))
        .collect()
}

#[test]
fn hand_computed_kv_bytes() {
    // Qwen3-32B: 64 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 262,144 at TP 1;
    // TP 8: one KV head per rank, 32,768.
    assert_eq!(pools("Qwen/Qwen3-32B", 1, KvDtype::Bf16), [("kv", 262_144)]);
    assert_eq!(pools("Qwen/Qwen3-32B", 8, KvDtype::Bf16), [("kv", 32_768)]);
    // Qwen2.5-7B has 4 KV heads: at TP 8 each rank keeps one (get_num_kv_heads: max(1,
    // 4 // 8)): 28 layers × 1 × 128 × 2 × 2 B = 14,336.
    assert_eq!(pools("Qwen/Qwen2.5-7B", 8, KvDtype::Bf16), [("kv", 14_336)]);
    // gpt-oss-120b: 18 full + 18 sliding layers of 8 KV heads × 64: 18 × 8 × 64 × 2 × 2
    // = 36,864 each; TP 8: 18 × 1 × 64 × 2 × 2 = 4,608.
    assert_eq!(
        pools("openai/gpt-oss-120b", 8, KvDtype::Bf16),
        [("kv", 4_608), ("swa", 4_608)]
    );
    // MiMo-V2-Flash: 9 full layers of 4 KV heads × (192 K + 128 V) × 2 B = 23,040; 39
    // sliding layers of 8 KV heads (swa_num_key_value_heads) × (192 + 128) × 2 B =
    // 199,680.
    assert_eq!(
        pools("XiaomiMiMo/MiMo-V2-Flash", 1, KvDtype::Bf16),
        [("kv", 23_040), ("swa", 199_680)]
    );
    // GLM-5.2: 78 MLA layers; the indexer on the 21 layers that compute their own top-k
    // (indexer_types "full": layers 0-2 and every fourth from 6) × 132 B = 2,772.
    // fp8 stored raw on Blackwell (trtllm): 78 × 576 = 44,928.
    assert_eq!(
        pools("zai-org/GLM-5.2", 4, KvDtype::Fp8),
        [("kv", 44_928), ("indexer", 2_772)]
    );
    // DeepSeek-V3.2 fp8 on Hopper (flashmla_kv): 512 + 512 / 128 × 4 + 64 × 2 = 656 B per
    // layer × 61 = 40,016; indexer 132 × 61 = 8,052.
    assert_eq!(
        pools("deepseek-ai/DeepSeek-V3.2", 8, KvDtype::Fp8DsMla),
        [("kv", 40_016), ("indexer", 8_052)]
    );
}

#[test]
fn hand_computed_state_bytes() {
    let state = |id: &str, tp: u32| {
        catalogue_model(id)
            .preset
            .attention
            .state_bytes_per_slot(&ParallelLayout::tp(tp))
            .unwrap()
    };
    // Qwen3-Next: 36 GDN layers; conv_dim = 128 × 32 + 2 × 16 × 128 = 8,192, conv state
    // 8,192 × 3 × 2 B = 49,152; temporal 32 × 128 × 128 × 4 B = 2,097,152; per layer
    // 2,146,304 × 36 = 77,266,944.
    assert_eq!(state("Qwen/Qwen3-Next-80B-A3B-Thinking", 1), 77_266_944);
    // Kimi-K3: 69 KDA layers of 96 heads × 128; conv 3 × (3 × 12,288) × 2 B = 221,184,
    // temporal 96 × 128 × 128 × 4 B = 6,291,456: 6,512,640 × 69 = 449,372,160.
    assert_eq!(state("moonshotai/Kimi-K3", 1), 449_372_160);
    // Nemotron-H-56B: 54 Mamba2 layers; intermediate 256 × 64 = 16,384, conv_dim 16,384 +
    // 2 × 8 × 256 = 20,480 → 20,480 × 3 × 2 B = 122,880; temporal 256 × 64 × 256 × 4 B
    // = 16,777,216: 16,900,096 × 54 = 912,605,184.
    assert_eq!(state("nvidia/Nemotron-H-56B-Base-8K", 1), 912_605_184);
}

/// The presets' hand-typed geometries equal the sourced configs' (the presets keep
/// their incidents' checkpoint sizes).
#[test]
fn presets_match_their_catalogue_configs() {
    for (preset, id) in [
        ("deepseek-v3", "deepseek-ai/DeepSeek-V3"),
        ("deepseek-v3.2", "deepseek-ai/DeepSeek-V3.2"),
        ("kimi-k2", "moonshotai/Kimi-K2-Instruct"),
        ("glm-5", "zai-org/GLM-5"),
        ("glm-5.2", "zai-org/GLM-5.2"),
        ("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"),
        ("llama-3.1-70b", "meta-llama/Meta-Llama-3.1-70B"),
        ("llama-3.1-405b", "meta-llama/Meta-Llama-3.1-405B"),
        ("gpt-oss-120b", "openai/gpt-oss-120b"),
        ("qwen3-next-80b-a3b", "Qwen/Qwen3-Next-80B-A3B-Thinking"),
        ("kimi-k3", "moonshotai/Kimi-K3"),
        ("glm-4.6", "zai-org/GLM-4.7-FP8"),
    ] {
        let p = model_preset(preset).unwrap();
        let c = catalogue_model(id).preset;
        for tp in [1, 2, 4, 8] {
            for d in [KvDtype::Bf16, KvDtype::Fp8] {
                let l = ParallelLayout::tp(tp);
                assert_eq!(
                    p.host_pools(&l, d),
                    c.host_pools(&l, d),
                    "{preset} vs {id} tp{tp} {d:?}"
                );
            }
        }
        assert_eq!(p.layers, c.layers, "{preset}");
        // The aiconfigurator copies of Qwen3-Next-Thinking and GLM-4.7-FP8 carry no MTP
        // key (`num_nextn_predict_layers` / `mtp_num_hidden_layers`); the presets' one
        // MTP layer is the published models'.
        if !["qwen3-next-80b-a3b", "glm-4.6"].contains(&preset) {
            assert_eq!(p.mtp_layers, c.mtp_layers, "{preset}");
        }
    }
    // Kimi-K3's preset has no state pool (the incident's figures); SGLang builds one.
    assert!(
        model_preset("kimi-k3")
            .unwrap()
            .attention
            .state_bytes_per_slot(&ParallelLayout::tp(8))
            .is_none()
    );
}

#[test]
fn dsa_kv_dtype_follows_the_gpu() {
    let glm = model_preset("glm-5.2").unwrap();
    let bpt = |req: KvDtype, sm: u32| {
        let d = resolve_kv_dtype(glm, req, Some(sm), true).unwrap();
        glm.host_pools(&ParallelLayout::tp(4), d)[0].bytes_per_token
    };
    // auto on GB300 (SM100): fp8, raw latent: 78 × 576 = 44,928 (was bf16: 89,856).
    assert_eq!(bpt(KvDtype::Auto, 10), 44_928);
    // auto on H200 (SM90): bf16, 78 × 1,152 = 89,856.
    assert_eq!(bpt(KvDtype::Auto, 9), 89_856);
    // fp8_e4m3 on H200: FlashMLA's layout, 78 × 656 = 51,168 (was 44,928).
    assert_eq!(bpt(KvDtype::Fp8, 9), 51_168);
}

#[test]
fn quantisation_is_read_from_the_model() {
    // Every catalogue entry keeps its source.
    assert!(
        catalogue()
            .iter()
            .all(|e| e.config_source.sha256.len() == 64)
    );
    let q = |id: &str| catalogue_model(id).preset.default_quant;
    assert_eq!(
        q("Qwen/Qwen3-32B-FP8"),
        hicache_sim::model::quant::CheckpointQuant::Fp8
    );
    assert_eq!(
        q("nvidia/GLM-5.2-NVFP4"),
        hicache_sim::model::quant::CheckpointQuant::Nvfp4
    );
    assert_eq!(
        q("openai/gpt-oss-120b"),
        hicache_sim::model::quant::CheckpointQuant::Mxfp4
    );
    assert_eq!(
        q("moonshotai/Kimi-K2.5"),
        hicache_sim::model::quant::CheckpointQuant::Int4
    );
    assert_eq!(
        q("Qwen/Qwen3-32B"),
        hicache_sim::model::quant::CheckpointQuant::Bf16
    );
    // Name suffixes: the base architecture plus that quantisation.
    assert_eq!(
        q("Qwen/Qwen2.5-72B-Instruct-AWQ"),
        hicache_sim::model::quant::CheckpointQuant::Int4
    );
    assert_eq!(
        q("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4"),
        hicache_sim::model::quant::CheckpointQuant::Int4
    );
    assert_eq!(
        q("Qwen/Qwen3-8B-FP8"),
        hicache_sim::model::quant::CheckpointQuant::Fp8
    );
    // A ModelOpt checkpoint with kv_cache_quant_algo FP8: `auto` KV is fp8.
    assert_eq!(
        catalogue_model("nvidia/Llama-3.1-70B-Instruct-FP8")
            .preset
            .default_kv_dtype,
        KvDtype::Fp8
    );
}

#[test]
fn weights_per_rank_by_part() {
    let m = catalogue_model("meta-llama/Meta-Llama-3.1-70B");
    let parts = m.part_bytes().unwrap();
    // 70.55 B parameters in bf16.
    assert_eq!(parts.total(), 141_107_412_992);
    let tp8 = m.weights_per_rank(&ParallelLayout::tp(8)).unwrap();
    // Everything but the norms divides by 8: within 0.1 % of a plain 1/8.
    assert!(
        (tp8 as f64 / (parts.total() as f64 / 8.0) - 1.0).abs() < 1e-3,
        "{tp8}"
    );
    // DeepSeek-V3 TP 8 with DP attention 8: attention, the input embedding and the bf16
    // `w_kc` / `w_vc` copies of `kv_b_proj` (`post_load_weights`: 2 B × 512 × 128 × 256 ×
    // 61 = 2,046,820,352 B) replicated on every rank (attention-TP group of 1), the LM
    // head and experts still split by 8.
    let ds = catalogue_model("deepseek-ai/DeepSeek-V3");
    let p = ds.part_bytes().unwrap();
    let dp = ParallelLayout {
        tp_size: 8,
        dp_size: 8,
        enable_dp_attention: true,
        ..ParallelLayout::tp(8)
    };
    let plain = ds.weights_per_rank(&ParallelLayout::tp(8)).unwrap();
    let with_dp = ds.weights_per_rank(&dp).unwrap();
    assert_eq!(
        with_dp - plain,
        (p.attention - p.attention.div_ceil(8))
            + (p.embed - p.embed.div_ceil(8))
            + (p.mla_absorbed - p.mla_absorbed.div_ceil(8))
    );
    // 2,046,820,352 − 255,852,544 = 1,790,967,808 of the 13,401,838,618 B difference.
    assert_eq!(p.mla_absorbed, 2_046_820_352);
    assert_eq!(with_dp - plain, 13_401_838_618);
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn scenarios_describe_models_by_path_config_or_name() {
    let dir = tempfile::tempdir().unwrap();
    // A catalogue model picked from --model-path (no `model:`).
    let a = write(
        dir.path(),
        "a.yaml",
        "node: hgx-h200\nserver:\n  launch: python -m sglang.launch_server --model-path Qwen/Qwen2.5-72B-Instruct-AWQ --tp 4\n",
    );
    let s = Scenario::load(a.to_str().unwrap(), &[]).unwrap();
    assert_eq!(
        s.model.default_quant,
        hicache_sim::model::quant::CheckpointQuant::Int4
    );
    assert!(matches!(
        s.resolved_model.source,
        ModelSource::Catalogue { ref hf_id, .. } if hf_id == "Qwen/Qwen2.5-72B"
    ));
    // 80 layers × 8 KV heads / TP 4 = 2 per rank × 128 × 2 × 2 B = 81,920.
    assert_eq!(s.model.cell_size(&s.layout, s.kv_dtype), 81_920);
    // A local checkpoint folder: config.json and the safetensors index's total size.
    let ckpt = dir.path().join("my-finetune");
    std::fs::create_dir(&ckpt).unwrap();
    let cfg = &catalogue()
        .iter()
        .find(|e| e.hf_id == "Qwen/Qwen3-8B")
        .unwrap()
        .config;
    std::fs::write(ckpt.join("config.json"), cfg.to_string()).unwrap();
    std::fs::write(
        ckpt.join("model.safetensors.index.json"),
        r#"{"metadata": {"total_size": 16381470720}, "weight_map": {}}"#,
    )
    .unwrap();
    let b = write(
        dir.path(),
        "b.yaml",
        &format!(
            "node: hgx-h200\nserver:\n  launch: python -m sglang.launch_server --model-path {} --tp 2\n",
            ckpt.display()
        ),
    );
    let s = Scenario::load(b.to_str().unwrap(), &[]).unwrap();
    assert_eq!(s.model_name, "my-finetune");
    assert_eq!(s.model.checkpoint_bytes(None).unwrap(), 16_381_470_720);
    // `model: {config: FILE}` relative to the scenario's folder.
    let c = write(
        dir.path(),
        "c.yaml",
        "node: hgx-h200\nmodel: {config: my-finetune/config.json}\nserver:\n  tp_size: 1\n",
    );
    let s = Scenario::load(c.to_str().unwrap(), &[]).unwrap();
    // Qwen3-8B: 36 layers × 8 × 128 × 2 × 2 B = 147,456.
    assert_eq!(s.model.cell_size(&s.layout, s.kv_dtype), 147_456);
    assert!(matches!(
        s.model.attention,
        Attention::Gqa { kv_heads: 8, .. }
    ));
    // A preset picked by --model-path takes the path's format when it has a size for it
    // (the FP8 checkpoint: 73 GB, not the preset's bf16 141 GB).
    let e = write(
        dir.path(),
        "e.yaml",
        "node: hgx-h200\nserver:\n  launch: python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct-FP8 --tp 4\n",
    );
    let s = Scenario::load(e.to_str().unwrap(), &[]).unwrap();
    assert_eq!(s.model_name, "llama-3.1-70b");
    assert_eq!(
        s.model.default_quant,
        hicache_sim::model::quant::CheckpointQuant::Fp8
    );
    assert_eq!(s.model.checkpoint_bytes(None).unwrap(), 73_000_000_000);
    let f = write(
        dir.path(),
        "f.yaml",
        "node: hgx-h200\nserver:\n  launch: python -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B-AWQ --tp 8\n",
    );
    // The preset has no int4 size: the catalogue's Qwen3-235B-A22B config in AWQ int4.
    let s = Scenario::load(f.to_str().unwrap(), &[]).unwrap();
    assert_eq!(s.model_name, "Qwen/Qwen3-235B-A22B");
    assert_eq!(
        s.model.default_quant,
        hicache_sim::model::quant::CheckpointQuant::Int4
    );
    // An unknown model: exit 2, the path named, the ways to describe it.
    let d = write(
        dir.path(),
        "d.yaml",
        "node: hgx-h200\nserver:\n  launch: python -m sglang.launch_server --model-path /models/ft-7 --tp 4\n",
    );
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args(["startup", d.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("d.yaml:3")
            && e.contains("`/models/ft-7`")
            && e.contains("model: {config:")
            && e.contains("--model-path"),
        "{e}"
    );
}

/// `startup.weight_load.quantization` is a typed checkpoint format: a spelling that is
/// none is a located loader error with the nearest one; a format the preset has no size
/// for names the formats it has; a format it has changes the weights per rank.
#[test]
fn weight_load_quantization_is_a_typed_choice() {
    use crate::support::{exit2, run};
    let dir = tempfile::tempdir().unwrap();
    let base = "node: gb300\nmodel: glm-5.2\nserver:\n  tp_size: 4\nstartup:\n  weight_load:\n    quantization: ";
    write(dir.path(), "typo.yaml", &format!("{base}fp4\n"));
    exit2(
        &run(&["startup", "typo.yaml"], dir.path()),
        &[
            "typo.yaml:7",
            "startup.weight_load.quantization",
            "invalid choice `fp4` (did you mean `fp8`?)",
        ],
    );
    write(dir.path(), "int4.yaml", &format!("{base}int4\n"));
    exit2(
        &run(&["startup", "int4.yaml"], dir.path()),
        &[
            "startup.weight_load.quantization",
            "no checkpoint size for quantisation `int4`: expected one of bf16, fp8, nvfp4",
        ],
    );
    // glm-5.2's checkpoints: bf16 1.51 TB, nvfp4 420 GB (models.yaml); TP4: ÷ 4.
    let w = |q: &str| {
        let p = write(dir.path(), "q.yaml", &format!("{base}{q}\n"));
        Scenario::load(p.to_str().unwrap(), &[])
            .unwrap()
            .weights_per_rank()
            .unwrap()
    };
    assert_eq!(w("bf16"), 1_510_000_000_000 / 4);
    assert_eq!(w("nvfp4"), 420_000_000_000 / 4);
}
