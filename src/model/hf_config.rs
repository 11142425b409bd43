//! A model read from its Hugging Face `config.json` (and `hf_quant_config.json`) the way
//! SGLang's `configs/model_config.py: ModelConfig` reads it: architecture → attention
//! kind, head dims, KV heads, layers, the DSA indexer, sliding-window and linear-attention
//! layers with their state, NextN/MTP layers, the model dtype and the quantisation.
//!
//! Every rule names the SGLang function it mirrors; all of them are the same in
//! 0.5.21–0.5.23 (checked by `tests/it/kv_bytes.rs` against the goldens written by
//! `tools/models/kv_bytes_golden.py`, which runs those releases' own code).

use serde_json::Value;

use super::geometry::{Attention, LinearState};
use super::quant::{Quantization, read_quantization};
use super::weights::ParamCounts;

/// The files that describe a model: `config.json`, and when present
/// `hf_quant_config.json` (ModelOpt) and `model.safetensors.index.json`'s
/// `metadata.total_size`.
#[derive(Debug, Clone, Default)]
pub struct ConfigFiles {
    pub config: Value,
    pub hf_quant_config: Option<Value>,
    /// `model.safetensors.index.json` → `metadata.total_size` (bytes of all tensors).
    pub safetensors_total_size: Option<u64>,
}

/// What a `config.json` says about a model, as SGLang reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct HfModel {
    /// `architectures[0]`.
    pub architecture: String,
    pub model_type: String,
    pub attention: Attention,
    /// `num_hidden_layers` of the text config.
    pub layers: u32,
    /// MTP / NextN draft layers: `num_nextn_predict_layers`, else `mtp_num_hidden_layers`.
    pub mtp_layers: u32,
    /// SGLang's DSA hooks apply (`arg_groups/overrides.py: _DEEPSEEK_FAMILY_ARCHS` and
    /// `model_config.py: is_deepseek_dsa`): the default KV dtype and layout depend on
    /// the GPU.
    pub dsa: bool,
    /// `GlmMoeDsaForCausalLM` (`is_glm_sm12_fp8` picks another DSA backend on SM12x).
    pub glm_dsa: bool,
    pub quantization: Quantization,
    /// Parameter counts by part, from the config.
    pub params: ParamCounts,
    pub safetensors_total_size: Option<u64>,
    /// The decoder layers as `DeepseekV2Model` builds them, for the weight offload
    /// (`super::offload`); `None` outside the DeepSeek-V2 family.
    pub deepseek_layers: Option<super::offload::DeepseekLayers>,
    /// The decoder layers of a Llama-style checkpoint (`--cpu-offload-gb`).
    pub llama_layers: Option<super::offload_llama::LlamaLayers>,
    /// What the multimodal rules read (`super::multimodal`).
    pub multimodal: super::multimodal::MultimodalFacts,
    /// `num_key_value_heads` of the text config (ROCm's MLA backend choice reads it).
    pub num_key_value_heads: Option<u32>,
}

/// A config that is not read: which key, what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadError {
    #[error("expected a JSON object (a Hugging Face config.json)")]
    NotAnObject,
    /// A key (`head_dim`, `linear_attn_config.kda_layers`) that is not there, and what
    /// it should hold when the message says so.
    #[error("`{key}` is missing{}", .expected.map(|e| format!(": expected {e}")).unwrap_or_default())]
    Missing {
        key: String,
        expected: Option<&'static str>,
    },
    /// A key whose value is not a whole number (`compress_ratios`: one of its entries).
    #[error("`{key}`: expected {}, found {found}", if *.list { "whole numbers" } else { "a whole number" })]
    NotWhole {
        key: String,
        found: Value,
        list: bool,
    },
    #[error("`num_attention_heads` is 0")]
    ZeroHeads,
    /// A number SGLang's `ModelConfig` would compute with that is of the wrong type or
    /// out of any real model's range (a string `"8"`, `-1`, `4294967296` layers, a
    /// `head_dim` of 0): read as it is, it would size a model that is not the one meant.
    #[error("`{key}`: expected {expected}, found {found}")]
    OutOfRange {
        key: String,
        found: Value,
        expected: String,
    },
    /// An architecture whose pools are known not to be modelled, and why;
    /// `sglang_loads`: SGLang itself would load it (false: SGLang has no model class).
    #[error("{arch}: {why}")]
    NotModelled {
        arch: String,
        why: &'static str,
        sglang_loads: bool,
    },
    #[error(
        "architecture `{arch}` is not one this simulator reads: supported are {} (MLA), the GQA family ({}), gpt-oss, MiMo-V2, Llama 4, Qwen3-Next / Qwen3.5, Kimi linear, Nemotron-H",
        MLA_ARCHS.join(", "),
        GQA_ARCHS.join(", ")
    )]
    UnknownArchitecture { arch: String },
    #[error(transparent)]
    Dsv4(#[from] super::dsv4::Dsv4Error),
}

fn missing(key: &str, expected: Option<&'static str>) -> ReadError {
    ReadError::Missing {
        key: key.to_string(),
        expected,
    }
}

/// Reads the text config's view of a config: the sub-config SGLang's
/// `utils/hf_transformers/common.py: get_hf_text_config` picks (`thinker_config` >
/// `llm_config` > `language_config` > `text_config`), else the root.
fn text_config(root: &Value) -> &Value {
    for k in ["thinker_config", "llm_config", "language_config"] {
        if let Some(v) = root.get(k).filter(|v| v.is_object()) {
            if k == "thinker_config"
                && let Some(t) = v.get("text_config").filter(|t| t.is_object())
            {
                return t;
            }
            return v;
        }
    }
    match root.get("text_config") {
        Some(t) if t.is_object() && t.get("num_attention_heads").is_some() => t,
        _ => root,
    }
}

struct Cfg<'a> {
    root: &'a Value,
    text: &'a Value,
}

impl<'a> Cfg<'a> {
    fn get(&self, k: &str) -> Option<&'a Value> {
        self.text.get(k).filter(|v| !v.is_null())
    }
    fn u32_opt(&self, k: &str) -> Option<u32> {
        self.get(k)
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
    }
    fn u32(&self, k: &str) -> Result<u32, ReadError> {
        match self.get(k) {
            Some(v) => v
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| ReadError::NotWhole {
                    key: k.to_string(),
                    found: v.clone(),
                    list: false,
                }),
            None => Err(missing(k, None)),
        }
    }
    fn str(&self, k: &str) -> Option<&'a str> {
        self.get(k).and_then(Value::as_str)
    }
}

/// `model_config.py: _derive_model_shapes` — architectures whose KV is an MLA latent.
const MLA_ARCHS: &[&str] = &[
    "DeepseekV2ForCausalLM",
    "DeepseekV32ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV3ForCausalLMNextN",
    "Glm4MoeLiteForCausalLM",
    "Glm4MoeLiteForCausalLMNextN",
    "GlmMoeDsaForCausalLM",
    "GlmMoeDsaForCausalLMNextN",
    "MistralLarge3ForCausalLM",
    "KimiK25ForConditionalGeneration",
];

/// `model_config.py: is_deepseek_dsa` (with `index_topk` set) ∩
/// `arg_groups/overrides.py: _DEEPSEEK_FAMILY_ARCHS`.
const DSA_ARCHS: &[&str] = &[
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "MistralLarge3ForCausalLM",
    "GlmMoeDsaForCausalLM",
];

/// Plain MHA/GQA decoder architectures read here (`_derive_model_shapes`' default
/// branch: `head_dim` from the config or `hidden_size // num_attention_heads`).
const GQA_ARCHS: &[&str] = &[
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "Glm4MoeForCausalLM",
    "Glm4ForCausalLM",
    "MiniMaxM2ForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Phi3ForCausalLM",
];

/// Architectures SGLang sizes with a layout this simulator does not model (yet), and why;
/// with whether SGLang loads them at all.
fn not_modelled(arch: &str) -> Option<(&'static str, bool)> {
    if arch == "Step3p7FlashForCausalLM" {
        return Some((
            "SGLang has no model class `Step3p7FlashForCausalLM` in any release 0.5.14–0.5.23 (`models/step3p7.py` registers `Step3p7ForConditionalGeneration` only): SGLang refuses to load this checkpoint",
            false,
        ));
    }
    let why = match arch {
        "MiniMaxM3SparseForCausalLM" | "MiniMaxM3SparseForConditionalGeneration" => {
            "MiniMax-M3's sparse attention pool (`MiniMaxSparseKVPool`) is not modelled"
        }
        "Step3p5ForCausalLM" | "Step3p7ForConditionalGeneration" => {
            "Step-3.x's attention layout is not modelled"
        }
        "DeciLMForCausalLM" => {
            "variable-GQA Nemotron-NAS (`block_configs`) is not modelled (SGLang refuses VGQA too)"
        }
        _ => return None,
    };
    Some((why, true))
}

/// Reads a model. Errors name the key and what was expected.
pub fn read_model(files: &ConfigFiles) -> Result<HfModel, ReadError> {
    let root = &files.config;
    if !root.is_object() {
        return Err(ReadError::NotAnObject);
    }
    let arch = root
        .get("architectures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .ok_or_else(|| missing("architectures", Some("a list naming the model class")))?
        .to_string();
    let model_type = root
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some((why, sglang_loads)) = not_modelled(&arch) {
        return Err(ReadError::NotModelled {
            arch,
            why,
            sglang_loads,
        });
    }
    let c = Cfg {
        root,
        text: text_config(root),
    };
    let layers = num_hidden_layers(&c, &arch)?;
    let mtp_layers = c
        .u32_opt("num_nextn_predict_layers")
        .or_else(|| c.u32_opt("mtp_num_hidden_layers"))
        .unwrap_or(0);
    let dsa = DSA_ARCHS.contains(&arch.as_str()) && c.get("index_topk").is_some();
    let attention = attention(&c, &arch, layers, dsa)?;
    // After the architecture is known to be read (an unknown one is named as such),
    // before any figure is derived from the numbers.
    check_numbers(root, c.text)?;
    let quantization = read_quantization(root, files.hf_quant_config.as_ref());
    let params = ParamCounts::from_config(root, c.text, &attention, layers, mtp_layers);
    let deepseek_layers = super::offload::DeepseekLayers::from_config(c.text, &arch, layers);
    let llama_layers = super::offload_llama::LlamaLayers::from_config(c.text, &arch, layers);
    Ok(HfModel {
        deepseek_layers,
        llama_layers,
        multimodal: super::multimodal::MultimodalFacts::from_config(root),
        num_key_value_heads: c.u32_opt("num_key_value_heads"),
        glm_dsa: dsa && arch == "GlmMoeDsaForCausalLM",
        architecture: arch,
        model_type,
        attention,
        layers,
        mtp_layers,
        dsa,
        quantization,
        params,
        safetensors_total_size: files.safetensors_total_size,
    })
}

/// The dimensions and counts every sizing rule multiplies, with the range a real model's
/// can take: `(key, least, most)`. Checked wherever present (and not `null`: absent and
/// `null` are the same to transformers' config classes and to `getattr(config, k,
/// None)`), in the root, the text config and `vision_config`. Real models' values lie
/// well inside (the largest catalogue model: 128 K hidden, 160 K vocabulary, 384
/// experts, 128 layers); the bounds keep products far from u64's range.
const NUMBER_RANGES: &[(&str, u64, u64)] = &[
    ("num_hidden_layers", 1, 10_000),
    ("hidden_size", 1, 1 << 20),
    ("intermediate_size", 1, 1 << 22),
    ("moe_intermediate_size", 1, 1 << 22),
    ("shared_expert_intermediate_size", 0, 1 << 22),
    ("num_attention_heads", 1, 1 << 16),
    ("num_key_value_heads", 1, 1 << 16),
    ("num_kv_heads", 1, 1 << 16),
    ("n_head_kv", 1, 1 << 16),
    ("multi_query_group_num", 1, 1 << 16),
    ("head_dim", 1, 1 << 16),
    ("v_head_dim", 0, 1 << 16),
    ("kv_lora_rank", 1, 1 << 20),
    ("q_lora_rank", 1, 1 << 20),
    ("qk_rope_head_dim", 1, 1 << 16),
    ("qk_nope_head_dim", 0, 1 << 16),
    ("index_head_dim", 1, 1 << 16),
    ("index_n_heads", 1, 1 << 16),
    ("vocab_size", 1, 100_000_000),
    ("n_routed_experts", 1, 1 << 20),
    ("num_experts", 1, 1 << 20),
    ("num_local_experts", 1, 1 << 20),
    ("n_shared_experts", 0, 1 << 10),
    ("num_experts_per_tok", 1, 1 << 16),
    ("num_nextn_predict_layers", 0, 1_000),
    ("mtp_num_hidden_layers", 0, 1_000),
    ("first_k_dense_replace", 0, 10_000),
];

/// Checks [`NUMBER_RANGES`]: a value of the wrong type, negative, fractional or out of
/// range is an error naming the key, never a default (a `"8"` read as absent gave 8×
/// the KV bytes) nor a wrapped integer (2^32 layers read as 0).
fn check_numbers(root: &Value, text: &Value) -> Result<(), ReadError> {
    let mut scopes = vec![("", root)];
    if !std::ptr::eq(text, root) {
        scopes.push(("", text));
    }
    if let Some(v) = root.get("vision_config").filter(|v| v.is_object()) {
        scopes.push(("vision_config.", v));
    }
    for (scope, cfg) in scopes {
        for &(key, least, most) in NUMBER_RANGES {
            let Some(v) = cfg.get(key).filter(|v| !v.is_null()) else {
                continue;
            };
            in_range(&format!("{scope}{key}"), v, least, most)?;
        }
    }
    Ok(())
}

/// `num_hidden_layers` (Nemotron-H: the length of its layer pattern,
/// `configs/nemotron_h.py: num_hidden_layers`).
fn num_hidden_layers(c: &Cfg<'_>, arch: &str) -> Result<u32, ReadError> {
    if arch == "NemotronHForCausalLM"
        && let Some(p) = nemotron_pattern(c)
    {
        return Ok(p.len() as u32);
    }
    // Range-checked here, before any per-layer scan runs over it (2^32 - 1 layers would
    // scan for minutes): the rest of the numbers are checked once the architecture is
    // known to be read.
    let n = c.u32("num_hidden_layers")?;
    let &(key, least, most) = NUMBER_RANGES
        .iter()
        .find(|r| r.0 == "num_hidden_layers")
        .expect("listed");
    in_range(key, &Value::from(n), least, most)?;
    Ok(n)
}

/// `v` is a whole number from `least` to `most`, or the error naming `key`.
fn in_range(key: &str, v: &Value, least: u64, most: u64) -> Result<(), ReadError> {
    match v.as_u64() {
        Some(x) if (least..=most).contains(&x) => Ok(()),
        _ => Err(ReadError::OutOfRange {
            key: key.to_string(),
            found: v.clone(),
            expected: format!("a whole number from {least} to {most}"),
        }),
    }
}

/// `model_config.py: get_total_num_kv_heads`: the first of `n_head_kv`, `num_kv_heads`,
/// `num_key_value_heads`, `multi_query_group_num`, `num_attention_groups`, else
/// `num_attention_heads` (1 for `multi_query`).
fn total_kv_heads(c: &Cfg<'_>) -> Result<u32, ReadError> {
    if c.get("multi_query").and_then(Value::as_bool) == Some(true) {
        return Ok(1);
    }
    for k in [
        "n_head_kv",
        "num_kv_heads",
        "num_key_value_heads",
        "multi_query_group_num",
        "num_attention_groups",
    ] {
        if let Some(v) = c.u32_opt(k) {
            return Ok(v);
        }
    }
    c.u32("num_attention_heads")
}

/// `_derive_model_shapes`: `head_dim` from the config, else `hidden_size //
/// num_attention_heads`; `v_head_dim` defaults to `head_dim`.
fn head_dims(c: &Cfg<'_>) -> Result<(u32, Option<u32>), ReadError> {
    let head_dim = match c.u32_opt("head_dim") {
        Some(h) => h,
        None => {
            let heads = c.u32("num_attention_heads")?;
            if heads == 0 {
                return Err(ReadError::ZeroHeads);
            }
            c.u32("hidden_size")? / heads
        }
    };
    let v = c.u32_opt("v_head_dim").filter(|&v| v != 0 && v != head_dim);
    Ok((head_dim, v))
}

fn attention(c: &Cfg<'_>, arch: &str, layers: u32, dsa: bool) -> Result<Attention, ReadError> {
    match arch {
        a if MLA_ARCHS.contains(&a) => mla(c, layers, dsa),
        "KimiLinearForCausalLM" | "KimiK3LinearForCausalLM" | "KimiK3ForConditionalGeneration" => {
            kimi_linear(c, layers)
        }
        "GptOssForCausalLM" => swa_from_layer_types(c),
        "MiMoV2FlashForCausalLM" | "MiMoV2ForCausalLM" => mimo_v2(c, layers),
        "Llama4ForConditionalGeneration" => llama4(c, layers),
        "Qwen3NextForCausalLM"
        | "Qwen3_5ForConditionalGeneration"
        | "Qwen3_5MoeForConditionalGeneration"
        | "Qwen3_5ForCausalLM"
        | "Qwen3_5MoeForCausalLM" => gated_delta_net(c, layers),
        "NemotronHForCausalLM" => nemotron_h(c),
        "DeepseekV4ForCausalLM" => deepseek_v4(c, layers),
        "Gemma4ForCausalLM" | "Gemma4ForConditionalGeneration" => gemma4(c),
        a if GQA_ARCHS.contains(&a) => {
            let (head_dim, v_head_dim) = head_dims(c)?;
            Ok(Attention::Gqa {
                kv_heads: total_kv_heads(c)?,
                head_dim,
                v_head_dim,
            })
        }
        other => Err(ReadError::UnknownArchitecture {
            arch: other.to_string(),
        }),
    }
}

/// Gemma 4 (`model_config.py: _apply_gemma4_attention_overrides`, a hybrid SWA model,
/// 0.5.21–0.5.23): the `full_attention` layers of `layer_types` keep
/// `num_global_key_value_heads` heads of `global_head_dim` for K and for V (the
/// `attention_k_eq_v` checkpoints still get both buffers), the `sliding_attention`
/// layers `num_key_value_heads` of `head_dim`, window `sliding_window`
/// (`HybridSWAPoolConfigurator`: `_full_per_token`, `_swa_per_token`).
fn gemma4(c: &Cfg<'_>) -> Result<Attention, ReadError> {
    let types = c
        .get("layer_types")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            missing(
                "layer_types",
                Some("sliding_attention / full_attention per layer"),
            )
        })?;
    let full = types
        .iter()
        .filter(|t| t.as_str() == Some("full_attention"))
        .count() as u32;
    let swa = types.len() as u32 - full;
    let head_dim = c.u32("head_dim")?;
    Ok(Attention::GqaSwa {
        kv_heads: c
            .u32_opt("num_global_key_value_heads")
            .map_or_else(|| c.u32("num_key_value_heads"), Ok)?,
        head_dim: c.u32_opt("global_head_dim").unwrap_or(head_dim),
        full_layers: full,
        swa_layers: swa,
        window: c.u32("sliding_window")?,
        v_head_dim: None,
        swa_kv_heads: Some(c.u32("num_key_value_heads")?),
        swa_head_dim: Some(head_dim),
        swa_v_head_dim: Some(head_dim),
    })
}

/// DeepSeek-V4 (`model_config.py: _derive_model_shapes`, the `DeepseekV4ForCausalLM`
/// branch, 0.5.21–0.5.23): `qk_rope_head_dim`, `qk_nope_head_dim = head_dim -
/// qk_rope_head_dim`, `window_size = sliding_window`, `index_head_dim`,
/// `compress_ratios` — read as they are; sized by `crate::model::dsv4`.
fn deepseek_v4(c: &Cfg<'_>, layers: u32) -> Result<Attention, ReadError> {
    let compress_ratios: Vec<u32> = c
        .get("compress_ratios")
        .and_then(Value::as_array)
        .ok_or_else(|| missing("compress_ratios", Some("one compression ratio per layer")))?
        .iter()
        .map(|v| {
            v.as_u64()
                .map(|x| x as u32)
                .ok_or_else(|| ReadError::NotWhole {
                    key: "compress_ratios".into(),
                    found: v.clone(),
                    list: true,
                })
        })
        .collect::<Result<_, _>>()?;
    let a = Attention::Dsv4 {
        head_dim: c.u32("head_dim")?,
        qk_rope_head_dim: c.u32("qk_rope_head_dim")?,
        index_head_dim: c.u32("index_head_dim")?,
        sliding_window: c.u32("sliding_window")?,
        compress_ratios,
    };
    if let Some(g) = super::dsv4::Dsv4Geometry::of(&a, layers) {
        g.check()?;
    }
    Ok(a)
}

/// MLA: one latent of `kv_lora_rank + qk_rope_head_dim` per layer
/// (`mem_cache/kv_cache_configurator.py: calculate_mla_kv_cache_dim`), plus for DSA
/// models the indexer keys: `ceil(index_head_dim + index_head_dim // 128 * 4,
/// index_kpool)` bytes per token (`DSATokenToKVPool.quant_block_size` 128, uint8
/// `index_k_with_scale_buffer_dtype`; 132 B in every release 0.5.14–0.5.23) per layer,
/// and the count of layers that compute their own top-k (`indexer_layers`, the ones
/// `pool_configurator.py: _compute_dsa_indexer_cell_size` keeps when
/// `_should_elide_dsa_index_k` elides; whether a release elides is
/// `crate::release::DsaIndexK`'s).
fn mla(c: &Cfg<'_>, layers: u32, dsa: bool) -> Result<Attention, ReadError> {
    let kv_lora_rank = c.u32("kv_lora_rank")?;
    let qk_rope_head_dim = c.u32("qk_rope_head_dim")?;
    if !dsa {
        return Ok(Attention::Mla {
            kv_lora_rank,
            qk_rope_head_dim,
        });
    }
    let index_head_dim = c.u32("index_head_dim")? as u64;
    let kpool = c.u32_opt("index_kpool").unwrap_or(1).max(1) as u64;
    let per_layer = (index_head_dim + index_head_dim / 128 * 4).div_ceil(kpool);
    let indexer_layers = (0..layers).filter(|&l| !dsa_layer_skips_topk(c, l)).count() as u32;
    Ok(Attention::MlaDsa {
        kv_lora_rank,
        qk_rope_head_dim,
        indexer_layers,
        indexer_bytes_per_token_layer: per_layer,
        index_kpool: kpool as u32,
    })
}

/// `model_config.py: dsa_layer_skips_topk`: whether a DSA layer reuses the previous
/// layer's top-k (and so owns no indexer keys): `indexer_types[l] == "shared"`, else
/// `cli_factor`, else `index_topk_pattern[l] == "S"`, else `index_topk_freq` with
/// `index_skip_topk_offset`.
fn dsa_layer_skips_topk(c: &Cfg<'_>, layer: u32) -> bool {
    let l = layer as i64;
    if let Some(types) = c.get("indexer_types").and_then(Value::as_array) {
        return (layer as usize) < types.len() && types[layer as usize].as_str() == Some("shared");
    }
    let cli = c.u32_opt("cli_factor").unwrap_or(1).max(1) as i64;
    if cli > 1 {
        return l % cli != 0;
    }
    if let Some(p) = c.get("index_topk_pattern").and_then(Value::as_str) {
        return p.as_bytes().get(layer as usize) == Some(&b'S');
    }
    if let Some(p) = c.get("index_topk_pattern").and_then(Value::as_array) {
        return p.get(layer as usize).and_then(Value::as_str) == Some("S");
    }
    let freq = c.u32_opt("index_topk_freq").unwrap_or(1).max(1) as i64;
    match c.u32_opt("index_skip_topk_offset") {
        Some(off) => (l - off as i64 + 1).max(0) % freq != 0,
        None => (l - 1).max(0) % freq != 0,
    }
}

/// `configs/kimi_linear.py`: layers listed (1-based) in `linear_attn_config.kda_layers`
/// are KDA (state), the others MLA; the KDA state shape from
/// `linear_attn_config.{num_heads, head_dim, short_conv_kernel_size}`
/// (`KimiLinearStateShape.create`).
fn kimi_linear(c: &Cfg<'_>, layers: u32) -> Result<Attention, ReadError> {
    let lin = c
        .get("linear_attn_config")
        .filter(|v| v.is_object())
        .ok_or_else(|| missing("linear_attn_config", None))?;
    let kda: Vec<u64> = lin
        .get("kda_layers")
        .and_then(Value::as_array)
        .ok_or_else(|| missing("linear_attn_config.kda_layers", None))?
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    let kda_layers = (0..layers as u64)
        .filter(|i| kda.contains(&(i + 1)))
        .count() as u32;
    let num = |k: &str| {
        lin.get(k)
            .and_then(Value::as_u64)
            .map(|v| v as u32)
            .ok_or_else(|| missing(&format!("linear_attn_config.{k}"), None))
    };
    Ok(Attention::HybridMla {
        kv_lora_rank: c.u32("kv_lora_rank")?,
        qk_rope_head_dim: c.u32("qk_rope_head_dim")?,
        mla_layers: layers - kda_layers,
        state_bytes_per_seq: crate::units::ByteSize(0),
        state: Some(LinearState::Kda {
            num_heads: num("num_heads")?,
            head_dim: num("head_dim")?,
            conv_kernel: lin
                .get("short_conv_kernel_size")
                .and_then(Value::as_u64)
                .unwrap_or(4) as u32,
            layers: kda_layers,
            temporal_itemsize: ssm_itemsize(c),
        }),
    })
}

/// `configs/mamba_utils.py: mamba2_state_dtype`: fp32 unless `mamba_ssm_dtype` names
/// bfloat16 / float16.
fn ssm_itemsize(c: &Cfg<'_>) -> u32 {
    match c
        .str("mamba_ssm_dtype")
        .or_else(|| c.root.get("mamba_ssm_dtype").and_then(Value::as_str))
    {
        Some("bfloat16") | Some("float16") => 2,
        _ => 4,
    }
}

/// `_get_sliding_window_size`: the first of `sliding_window_size`, `sliding_window`,
/// `window_size`.
fn sliding_window(c: &Cfg<'_>) -> u32 {
    ["sliding_window_size", "sliding_window", "window_size"]
        .iter()
        .find_map(|k| c.u32_opt(k))
        .unwrap_or(0)
}

/// gpt-oss (`SWA_SINK_ARCHS`): `get_hybrid_layer_ids` splits `layer_types` into
/// `sliding_attention` and `full_attention` layers.
fn swa_from_layer_types(c: &Cfg<'_>) -> Result<Attention, ReadError> {
    let types = c
        .get("layer_types")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            missing(
                "layer_types",
                Some("sliding_attention / full_attention per layer"),
            )
        })?;
    let count = |t: &str| types.iter().filter(|x| x.as_str() == Some(t)).count() as u32;
    let (head_dim, v_head_dim) = head_dims(c)?;
    Ok(Attention::GqaSwa {
        kv_heads: total_kv_heads(c)?,
        head_dim,
        full_layers: count("full_attention"),
        swa_layers: count("sliding_attention"),
        window: sliding_window(c),
        v_head_dim,
        swa_kv_heads: None,
        swa_head_dim: None,
        swa_v_head_dim: None,
    })
}

/// MiMo-V2 (`MIMO_V2_MODEL_ARCHS`): `hybrid_layer_pattern[i] == 1` is a sliding-window
/// layer; those layers have their own `swa_num_key_value_heads`, `swa_head_dim`,
/// `swa_v_head_dim` (`get_swa_num_kv_heads`, `_derive_model_shapes`).
fn mimo_v2(c: &Cfg<'_>, layers: u32) -> Result<Attention, ReadError> {
    let pattern = c
        .get("hybrid_layer_pattern")
        .and_then(Value::as_array)
        .ok_or_else(|| missing("hybrid_layer_pattern", None))?;
    let swa = (0..layers as usize)
        .filter(|&i| pattern.get(i).and_then(Value::as_u64) == Some(1))
        .count() as u32;
    let full = (0..layers as usize)
        .filter(|&i| pattern.get(i).and_then(Value::as_u64) == Some(0))
        .count() as u32;
    let (head_dim, v_head_dim) = head_dims(c)?;
    let v = v_head_dim.unwrap_or(head_dim);
    let swa_head_dim = c.u32_opt("swa_head_dim").unwrap_or(head_dim);
    let swa_v = c.u32_opt("swa_v_head_dim").unwrap_or(swa_head_dim);
    Ok(Attention::GqaSwa {
        kv_heads: total_kv_heads(c)?,
        head_dim,
        full_layers: full,
        swa_layers: swa,
        window: sliding_window(c),
        v_head_dim: (v != head_dim).then_some(v),
        swa_kv_heads: c.u32_opt("swa_num_key_value_heads"),
        swa_head_dim: Some(swa_head_dim),
        swa_v_head_dim: Some(swa_v),
    })
}

/// Llama 4 (`get_hybrid_layer_ids`): every fourth layer (`(i + 1) % 4 == 0`) is a
/// full-attention layer, the others chunked-local (the SWA pool).
fn llama4(c: &Cfg<'_>, layers: u32) -> Result<Attention, ReadError> {
    let full = (0..layers).filter(|i| (i + 1) % 4 == 0).count() as u32;
    let (head_dim, v_head_dim) = head_dims(c)?;
    Ok(Attention::GqaSwa {
        kv_heads: total_kv_heads(c)?,
        head_dim,
        full_layers: full,
        swa_layers: layers - full,
        window: sliding_window(c),
        v_head_dim,
        swa_kv_heads: None,
        swa_head_dim: None,
        swa_v_head_dim: None,
    })
}

/// Qwen3-Next / Qwen3.5 (`configs/qwen3_next.py: layers_block_type`): layer `l` is full
/// attention when `(l + 1) % full_attention_interval == 0`, else Gated DeltaNet, whose
/// state is `mamba2_cache_params`' Mamba2 shape.
fn gated_delta_net(c: &Cfg<'_>, layers: u32) -> Result<Attention, ReadError> {
    let interval = c.u32("full_attention_interval")?.max(1);
    let full = (0..layers).filter(|l| (l + 1) % interval == 0).count() as u32;
    let (head_dim, _) = head_dims(c)?;
    Ok(Attention::GqaLinear {
        kv_heads: total_kv_heads(c)?,
        head_dim,
        full_layers: full,
        linear_layers: layers - full,
        linear_num_key_heads: c.u32("linear_num_key_heads")?,
        linear_num_value_heads: c.u32("linear_num_value_heads")?,
        linear_key_head_dim: c.u32("linear_key_head_dim")?,
        linear_value_head_dim: c.u32("linear_value_head_dim")?,
        linear_conv_kernel_dim: c.u32("linear_conv_kernel_dim")?,
    })
}

/// Nemotron-H's layer pattern: `layers_block_type`, else `hybrid_override_pattern`
/// (`M` Mamba2, `*` attention, `-` MLP, `E` MoE; `configs/nemotron_h.py`).
fn nemotron_pattern(c: &Cfg<'_>) -> Option<Vec<char>> {
    if let Some(list) = c.get("layers_block_type").and_then(Value::as_array) {
        return Some(
            list.iter()
                .map(|v| match v.as_str() {
                    Some("mamba") => 'M',
                    Some("attention") => '*',
                    Some("moe") => 'E',
                    _ => '-',
                })
                .collect(),
        );
    }
    c.str("hybrid_override_pattern")
        .map(|p| p.chars().collect())
}

/// Nemotron-H: attention on the `*` layers (`attention_head_dim` / `head_dim`), Mamba2
/// state on the `M` layers (`configs/nemotron_h.py: mamba2_cache_params`:
/// `intermediate_size = mamba_num_heads * mamba_head_dim`, `n_groups`, `ssm_state_size`,
/// `conv_kernel`).
fn nemotron_h(c: &Cfg<'_>) -> Result<Attention, ReadError> {
    let p = nemotron_pattern(c).ok_or_else(|| missing("hybrid_override_pattern", None))?;
    let count = |ch: char| p.iter().filter(|&&x| x == ch).count() as u32;
    let heads = c.u32("mamba_num_heads")?;
    let hd = c.u32("mamba_head_dim")?;
    let head_dim = c
        .u32_opt("head_dim")
        .or_else(|| c.u32_opt("attention_head_dim"))
        .unwrap_or(128);
    Ok(Attention::GqaState {
        kv_heads: total_kv_heads(c)?,
        head_dim,
        full_layers: count('*'),
        state: LinearState::Mamba2 {
            intermediate_size: heads * hd,
            n_groups: c.u32("n_groups")?,
            num_heads: heads,
            head_dim: hd,
            state_size: c.u32("ssm_state_size")?,
            conv_kernel: c.u32("conv_kernel")?,
            layers: count('M'),
            temporal_itemsize: ssm_itemsize(c),
        },
    })
}
