//! The attention backend SGLang picks when `--attention-backend` is not given and the page
//! size it keeps (`model::resolve_page_size`), against SGLang's own functions run on a CPU
//! (`tools/models/page_size_golden.py` → tests/golden/page_size/, every modelled release):
//! `get_default_attn_backend` and `_mla_backend_page_constraints` /
//! `_fa4_page_constraint` on Hopper, SM100 and SM120, for plain attention (equal and
//! unequal K/V widths) and MLA, with and without speculative decoding, for each
//! `--page-size` and `--attention-backend`.

use hicache_sim::model::{Attention, BackendInputs, resolve_page_size};
use hicache_sim::release::Sglang;
use serde_json::Value;

#[test]
fn page_size_and_backend_match_sglang_in_every_release() {
    let mha = Attention::Gqa {
        kv_heads: 8,
        head_dim: 128,
        v_head_dim: None,
    };
    let asymmetric = Attention::Gqa {
        kv_heads: 8,
        head_dim: 192,
        v_head_dim: Some(128),
    };
    let mla = Attention::Mla {
        kv_lora_rank: 512,
        qk_rope_head_dim: 64,
    };
    let (mut backends, mut pages) = (0usize, 0usize);
    let mut failures = Vec::new();
    for n in 14..=23 {
        let rel = format!("0.5.{n}");
        let flags = Sglang::from_id(&rel).unwrap().release_rules().flags;
        let path = format!("tests/golden/page_size/{rel}.jsonl");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in text.lines() {
            let g: Value = serde_json::from_str(line).unwrap();
            let attention = match g["kind"].as_str().unwrap() {
                "mha" => &mha,
                "mha_asymmetric" => &asymmetric,
                _ => &mla,
            };
            let i = BackendInputs {
                attention,
                // Not DeepSeek-V3: its SM100 trtllm_mla is a model override, not these
                // functions'.
                architecture: "LlamaForCausalLM",
                attention_backend: g["attention_backend"].as_str(),
                page_size: g["page_size"].as_u64().unwrap_or(1) as u32,
                speculative: g["speculative"].is_string(),
                eagle_topk: g["eagle_topk"].as_u64().map(|k| k as u32),
                sm_major: g["sm"].as_u64().map(|s| s as u32),
            };
            let p = resolve_page_size(&i, flags.sm100_attention, flags.dsa_page);
            if p.backend != g["backend"].as_str() {
                failures.push(format!("{rel}: backend {:?}, SGLang {line}", p.backend));
            }
            backends += 1;
            // "not run": 0.5.14's constraints live inside a larger ServerArgs method.
            if g["page"] != "not run" {
                let want = g["page"].as_u64().unwrap_or(1) as u32;
                if p.page_size != want {
                    failures.push(format!("{rel}: page {}, SGLang {line}", p.page_size));
                }
                pages += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    assert_eq!((backends, pages), (16_200, 14_580));
}
