//! Embedded presets parse, and bytes per token per rank match SGLang's
//! `get_size_per_token` (`mem_cache/pool_host/mha.py`, `mla.py`) by hand.

use hicache_sim::hardware::node_presets;
use hicache_sim::model::{KvDtype, ParallelLayout, model_preset, model_presets};

fn kv(model: &str, tp: u32, dtype: KvDtype) -> u64 {
    kv_layout(model, &ParallelLayout::tp(tp), dtype)
}

fn kv_layout(model: &str, l: &ParallelLayout, dtype: KvDtype) -> u64 {
    model_preset(model).unwrap().host_pools(l, dtype)[0].bytes_per_token
}

#[test]
fn embedded_presets_parse() {
    let m = model_presets();
    for id in [
        "deepseek-v3",
        "deepseek-v3.2",
        "kimi-k2",
        "kimi-k3",
        "glm-4.6",
        "glm-5",
        "glm-5.2",
        "qwen3-235b-a22b",
        "llama-3.1-70b",
        "llama-3.1-405b",
        "gpt-oss-120b",
    ] {
        assert!(m.contains_key(id), "missing model preset {id}");
    }
    let n = node_presets();
    for id in [
        "gb300", "gb200", "hgx-b300", "hgx-b200", "hgx-h200", "hgx-h100",
    ] {
        assert!(n.contains_key(id), "missing node preset {id}");
    }
    assert_eq!(n["gb300"].gpus_per_node, 4);
    assert_eq!(n["gb300"].gpu_memory.0, 284_208 << 20);
    assert_eq!(n["gb300"].host_dram.0, 960_000_000_000);
    assert_eq!(n["hgx-h200"].gpus_per_node, 8);
    assert_eq!(n["gb300"].pin_bandwidth.0, 3.8e9);
    assert_eq!(
        m["glm-5.2"].checkpoint_bytes(None).unwrap(),
        420_000_000_000
    );
}

#[test]
fn bytes_per_token_match_spec_table() {
    assert_eq!(kv("deepseek-v3", 1, KvDtype::Bf16), 70_272);
    assert_eq!(kv("deepseek-v3", 8, KvDtype::Bf16), 70_272); // MLA: same on every rank
    assert_eq!(kv("deepseek-v3", 1, KvDtype::Fp8), 35_136);
    assert_eq!(kv("deepseek-v3", 1, KvDtype::Fp8DsMla), 40_016);
    assert_eq!(kv("kimi-k2", 1, KvDtype::Bf16), 70_272);
    assert_eq!(kv("kimi-k3", 1, KvDtype::Bf16), 27_648);
    assert_eq!(kv("kimi-k3", 1, KvDtype::Fp8), 13_824);
    assert_eq!(kv("glm-4.6", 1, KvDtype::Bf16), 376_832);
    assert_eq!(kv("glm-4.6", 1, KvDtype::Fp8), 188_416);
    assert_eq!(kv("glm-4.6", 8, KvDtype::Fp8), 188_416 / 8);
    assert_eq!(kv("glm-4.5", 1, KvDtype::Fp8), 188_416); // alias
    assert_eq!(kv("glm-5", 1, KvDtype::Bf16), 89_856);
    assert_eq!(kv("glm-5.2", 4, KvDtype::Fp8), 44_928);
    assert_eq!(kv("glm-5.2", 1, KvDtype::Fp8DsMla), 51_168);
    assert_eq!(kv("qwen3-235b-a22b", 1, KvDtype::Bf16), 192_512);
    assert_eq!(kv("qwen3-235b-a22b", 8, KvDtype::Bf16), 48_128); // 4 KV heads replicated
    assert_eq!(kv("qwen3-235b-a22b", 1, KvDtype::Fp8), 96_256);
    assert_eq!(kv("llama-3.1-70b", 1, KvDtype::Bf16), 327_680);
    assert_eq!(kv("llama-3.1-70b", 1, KvDtype::Fp8), 163_840);
    assert_eq!(kv("llama-3.1-405b", 1, KvDtype::Bf16), 516_096);
    assert_eq!(kv("llama-3.1-405b", 1, KvDtype::Fp8), 258_048);
    assert_eq!(kv("llama-3.1-405b", 16, KvDtype::Bf16), 516_096 / 8); // TP16: 1 head each
    assert_eq!(kv("gpt-oss-120b", 1, KvDtype::Bf16), 36_864);
    assert_eq!(kv("gpt-oss-120b", 1, KvDtype::Fp8), 18_432);
}

#[test]
fn indexer_swa_and_draft_pools() {
    let l1 = ParallelLayout::tp(1);
    let v32 = model_preset("deepseek-v3.2")
        .unwrap()
        .host_pools(&l1, KvDtype::Bf16);
    assert_eq!(v32.len(), 2);
    assert_eq!((v32[1].name, v32[1].bytes_per_token), ("indexer", 8_052));
    let g5 = model_preset("glm-5").unwrap().host_pools(&l1, KvDtype::Fp8);
    assert_eq!(g5[1].bytes_per_token, 10_296);
    let g52 = model_preset("glm-5.2")
        .unwrap()
        .host_pools(&l1, KvDtype::Fp8);
    assert_eq!(g52[1].bytes_per_token, 2_772);
    let oss = model_preset("gpt-oss-120b")
        .unwrap()
        .host_pools(&l1, KvDtype::Bf16);
    assert_eq!((oss[1].name, oss[1].bytes_per_token), ("swa", 36_864));
    // MTP draft layer: DeepSeek-V3 with its draft = 71,424 B/token bf16 in total.
    let ds = model_preset("deepseek-v3").unwrap();
    assert_eq!(
        ds.mtp_draft_pool(&l1, KvDtype::Bf16)
            .unwrap()
            .bytes_per_token,
        1_152
    );
    assert_eq!(ds.cell_size(&l1, KvDtype::Bf16) + 1_152, 71_424);
    assert!(
        model_preset("kimi-k2")
            .unwrap()
            .mtp_draft_pool(&l1, KvDtype::Bf16)
            .is_none()
    );
    // PP: layers // pp.
    let pp2 = ParallelLayout { pp_size: 2, ..l1 };
    assert_eq!(
        ds.host_pools(&pp2, KvDtype::Bf16)[0].bytes_per_token,
        1_152 * 30
    );
    // DP attention: attn_tp = tp / dp; GLM-4.6 TP8 DP8 → all 8 heads per rank.
    let dpa = ParallelLayout {
        tp_size: 8,
        dp_size: 8,
        enable_dp_attention: true,
        ..l1
    };
    assert_eq!(kv_layout("glm-4.6", &dpa, KvDtype::Fp8), 188_416);
    assert_eq!(dpa.world_size(), 8);
}

#[test]
fn unknown_model_suggests() {
    let e = model_preset("glm-5.3").unwrap_err();
    // `glm-5.1` (glm-5's alias) and `glm-5.2` are one edit away: the tie goes to the first.
    assert_eq!(e.suggestion.as_deref(), Some("glm-5.1"));
    let e = e.to_string();
    assert!(e.contains("did you mean"), "{e}");
    assert!(e.contains("glm-5.2"), "{e}");
}
