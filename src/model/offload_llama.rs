//! `--cpu-offload-gb` (OffloaderV1) on the Llama-style decoders: the parameters of
//! `LlamaDecoderLayer`, `Qwen2DecoderLayer`, `Qwen3DecoderLayer` and
//! `Qwen3MoeDecoderLayer` in the order `module.parameters()` yields them, so
//! [`super::offload::v1_walk`] stops where SGLang's budget check stops. Every one of
//! these models builds its layers through `utils/common.py: make_layers`, which hands
//! each to the offloader (0.5.14–0.5.23).

use serde::Serialize;
use serde_json::Value;

use super::offload::{CpuOffloadResident, OffloadFigures, Param, linear, v1_walk};
use super::parallel::ParallelLayout;
use super::quant::WeightFormat;

/// The decoder layers of a Llama-style checkpoint, as its SGLang model file builds
/// them (from the text config).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlamaLayers {
    pub architecture: String,
    pub layers: u32,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub intermediate: u64,
    /// `qkv_proj` has a bias (`Qwen2Attention`: always; Llama: `attention_bias` or
    /// `bias`; Qwen3: `attention_bias`).
    pub qkv_bias: bool,
    /// `o_proj` has a bias (Llama and Qwen3: the same flag as `qkv_proj`; Qwen2: never).
    pub o_bias: bool,
    /// `Qwen3Attention.q_norm` / `k_norm` (RMSNorm over `head_dim`): registered first
    /// (Qwen3) or after `o_proj` ([`Self::qk_norm_last`], Qwen3-MoE).
    pub qk_norm: bool,
    /// The attention's linears split over the attention-TP group (`Qwen3Attention`:
    /// `parallel_group="attn_tp"`); Llama and Qwen2 split theirs over the whole TP group
    /// (no `parallel_group`: `layers/linear.py: _resolve_linear_group` → `"tp"`).
    pub attn_over_attn_tp: bool,
    /// The attention's `RadixAttention` gets the quantisation config (Llama, Qwen2; not
    /// Qwen3), so an fp8 checkpoint registers its fp32 `k_scale` and `v_scale` after
    /// `o_proj` (`layers/quantization/kv_cache.py: BaseKVCacheMethod.create_weights`).
    pub attn_kv_scales: bool,
    /// `Qwen3MoeAttention` registers `q_norm` / `k_norm` after `o_proj`, not first.
    pub qk_norm_last: bool,
    /// `Qwen3MoeSparseMoeBlock` in every layer (0.5.23 `Qwen3MoeDecoderLayer.stage_facts`:
    /// "all layers are sparse"): `(experts, moe_intermediate_size)`.
    pub moe: Option<(u64, u64)>,
}

/// Architectures read here and the model file that builds them (0.5.14–0.5.23):
/// `models/llama.py` (`MistralForCausalLM` in `mistral.py` is a subclass),
/// `models/qwen2.py`, `models/qwen3.py`, `models/qwen3_moe.py`.
pub const LLAMA_STYLE_FAMILY: &[&str] = &[
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
];

impl LlamaLayers {
    /// The layers of `arch` from its text config; `None` outside [`LLAMA_STYLE_FAMILY`]
    /// or when a dimension is missing.
    pub fn from_config(text: &Value, arch: &str, layers: u32) -> Option<Self> {
        if !LLAMA_STYLE_FAMILY.contains(&arch) {
            return None;
        }
        let g = |k: &str| text.get(k).and_then(Value::as_u64);
        let flag = |k: &str| text.get(k).and_then(Value::as_bool).unwrap_or(false);
        let hidden = g("hidden_size")?;
        let heads = g("num_attention_heads")?;
        let kv_heads = g("num_key_value_heads").unwrap_or(heads);
        let head_dim = g("head_dim").unwrap_or(hidden / heads.max(1));
        let (qkv_bias, o_bias, qk_norm) = match arch {
            "Qwen2ForCausalLM" => (true, false, false),
            "Qwen3ForCausalLM" | "Qwen3MoeForCausalLM" => {
                (flag("attention_bias"), flag("attention_bias"), true)
            }
            _ => {
                let b = flag("attention_bias") || flag("bias");
                (b, b, false)
            }
        };
        let qwen3_moe = arch == "Qwen3MoeForCausalLM";
        let qwen3 = arch == "Qwen3ForCausalLM" || qwen3_moe;
        let moe = if qwen3_moe {
            Some((g("num_experts")?, g("moe_intermediate_size")?))
        } else {
            None
        };
        Some(LlamaLayers {
            architecture: arch.to_string(),
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim,
            // Qwen3-MoE's layers are all sparse: its dense MLP size is never read.
            intermediate: match moe {
                Some(_) => g("intermediate_size").unwrap_or(0),
                None => g("intermediate_size")?,
            },
            qkv_bias,
            o_bias,
            qk_norm,
            attn_over_attn_tp: qwen3,
            attn_kv_scales: !qwen3,
            qk_norm_last: qwen3_moe,
            moe,
        })
    }

    /// One decoder layer's parameters on one rank, in registration order: (Qwen3)
    /// `q_norm`, `k_norm`; `qkv_proj` (`QKVParallelLinear`: `heads/tp` query and
    /// `max(1, kv_heads/tp)` key and value heads) weight then bias; `o_proj` weight then
    /// its bias (whole on every rank); an fp8 checkpoint's `attn.k_scale` and
    /// `attn.v_scale` (Llama, Qwen2: one fp32 each); (Qwen3-MoE) `q_norm`, `k_norm`;
    /// `mlp.gate_up_proj`, `mlp.down_proj`, or Qwen3-MoE's experts and router;
    /// `input_layernorm`, `post_attention_layernorm`. Norms and biases in the model
    /// dtype (2 B).
    fn layer_params(&self, layout: &ParallelLayout, format: WeightFormat) -> Vec<Param> {
        let tp = layout.tp_size.max(1) as u64;
        let a = if self.attn_over_attn_tp {
            layout.attn_tp_size().max(1)
        } else {
            tp
        };
        let (h, d) = (self.hidden, self.head_dim);
        let q = self.heads / a * d;
        let kv = (self.kv_heads / a).max(1) * d;
        let i = self.intermediate / tp;
        let mut p = Vec::new();
        let small = |n: u64, p: &mut Vec<Param>| {
            p.push(Param {
                bytes: 2 * n,
                kv_b: false,
            })
        };
        if self.qk_norm && !self.qk_norm_last {
            small(d, &mut p);
            small(d, &mut p);
        }
        linear(q + 2 * kv, h, format, false, &mut p);
        if self.qkv_bias {
            small(q + 2 * kv, &mut p);
        }
        linear(h, q, format, false, &mut p);
        if self.o_bias {
            small(h, &mut p);
        }
        if self.attn_kv_scales && format != WeightFormat::Bf16 {
            for _ in 0..2 {
                p.push(Param {
                    bytes: 4,
                    kv_b: false,
                });
            }
        }
        if self.qk_norm && self.qk_norm_last {
            small(d, &mut p);
            small(d, &mut p);
        }
        match self.moe {
            // `Qwen3MoeSparseMoeBlock`: `experts` (`FusedMoE`, EP 1: `w13_weight`
            // `[E, 2·I/tp, H]`, `w2_weight` `[E, H, I/tp]`, then an fp8 checkpoint's block
            // scales), then the router `gate` (`ReplicatedLinear`, unquantised).
            Some((e, moe_i)) => {
                let i = moe_i / tp;
                let elem = if format == WeightFormat::Bf16 { 2 } else { 1 };
                p.push(Param {
                    bytes: e * 2 * i * h * elem,
                    kv_b: false,
                });
                p.push(Param {
                    bytes: e * h * i * elem,
                    kv_b: false,
                });
                if format == WeightFormat::Fp8Block {
                    p.push(Param {
                        bytes: e * (2 * i).div_ceil(128) * h.div_ceil(128) * 4,
                        kv_b: false,
                    });
                    p.push(Param {
                        bytes: e * h.div_ceil(128) * i.div_ceil(128) * 4,
                        kv_b: false,
                    });
                }
                linear(e, h, WeightFormat::Bf16, false, &mut p);
            }
            None => {
                linear(2 * i, h, format, false, &mut p);
                linear(h, i, format, false, &mut p);
            }
        }
        small(h, &mut p);
        small(h, &mut p);
        p
    }
}

/// OffloaderV1 on one rank of a PP-1 Llama-style model: [`v1_walk`] over its
/// layers. They have no MLA `kv_b_proj`, so 0.5.21's resident rule keeps nothing.
pub fn v1_llama_figures(
    d: &LlamaLayers,
    layout: &ParallelLayout,
    format: WeightFormat,
    max_bytes: u64,
    resident: CpuOffloadResident,
) -> OffloadFigures {
    v1_walk(
        (0..d.layers).map(|_| d.layer_params(layout, format)),
        max_bytes,
        resident,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen3_14b() -> LlamaLayers {
        let cfg = serde_json::json!({
            "hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 8,
            "head_dim": 128, "intermediate_size": 17408, "attention_bias": false
        });
        LlamaLayers::from_config(&cfg, "Qwen3ForCausalLM", 40).unwrap()
    }

    /// Qwen3-14B at TP2, by hand: q_norm, k_norm 256 B each; qkv (20 + 2 × 4 heads) ×
    /// 128 = 3,584 × 5,120 × 2 B = 36,700,160; o 5,120 × 2,560 × 2 = 26,214,400;
    /// gate_up 17,408 × 5,120 × 2 = 178,257,920; down 5,120 × 8,704 × 2 = 89,128,960;
    /// two norms 10,240 each: 330,322,432 B a layer, 8 tensors.
    #[test]
    fn qwen3_layer_by_hand() {
        let layout = ParallelLayout::tp(2);
        let p = qwen3_14b().layer_params(&layout, WeightFormat::Bf16);
        let bytes: Vec<u64> = p.iter().map(|p| p.bytes).collect();
        assert_eq!(
            bytes,
            [
                256,
                256,
                36_700_160,
                26_214_400,
                178_257_920,
                89_128_960,
                10_240,
                10_240
            ]
        );
        assert_eq!(bytes.iter().sum::<u64>(), 330_322_432);
    }

    /// A budget beyond the layers moves all 40 (320 tensors); 1 GiB stops inside layer
    /// 3: three layers are 990,967,296 B, then the check passes before its q_norm, k_norm,
    /// qkv (to 1,027,667,968 B), o_proj (to 1,053,882,368 B, still below 2^30) and
    /// gate_up, which overshoots to 1,232,140,288 B; down_proj is not moved.
    #[test]
    fn v1_walk_stops_after_the_parameter_that_crosses_the_budget() {
        let layout = ParallelLayout::tp(2);
        let d = qwen3_14b();
        let all = v1_llama_figures(
            &d,
            &layout,
            WeightFormat::Bf16,
            48 << 30,
            CpuOffloadResident::Nothing,
        );
        assert_eq!(all.layers.len(), 40);
        assert_eq!(all.tensors, 320);
        assert_eq!(all.host_logical_bytes, 40 * 330_322_432);
        let one = v1_llama_figures(
            &d,
            &layout,
            WeightFormat::Bf16,
            1 << 30,
            CpuOffloadResident::Nothing,
        );
        assert_eq!(one.layers, [0, 1, 2, 3]);
        assert_eq!(one.tensors, 3 * 8 + 5);
        assert_eq!(one.host_logical_bytes, 1_232_140_288);
    }

    /// Llama-3.1-8B-class fp8 (block scales) at TP2 with DP attention 2: the attention
    /// stays split over the whole TP group (16 query and 4 KV heads a rank, not 32 and 8),
    /// and `k_scale`, `v_scale` follow `o_proj`: qkv 3,072 × 4,096 B + its 24 × 32 fp32
    /// scales; o 4,096 × 2,048 + 32 × 16 × 4; two 4-byte scales; gate_up 14,336 × 4,096 +
    /// 112 × 32 × 4; down 4,096 × 7,168 + 32 × 56 × 4; two norms of 8,192 B.
    #[test]
    fn llama_fp8_keeps_its_attention_on_the_tp_group_and_registers_kv_scales() {
        let cfg = serde_json::json!({
            "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "intermediate_size": 14336
        });
        let d = LlamaLayers::from_config(&cfg, "LlamaForCausalLM", 32).unwrap();
        let mut layout = ParallelLayout::tp(2);
        layout.dp_size = 2;
        layout.enable_dp_attention = true;
        assert_eq!(layout.attn_tp_size(), 1);
        let p = d.layer_params(&layout, WeightFormat::Fp8Block);
        let bytes: Vec<u64> = p.iter().map(|p| p.bytes).collect();
        assert_eq!(
            bytes,
            [
                12_582_912, 3_072, 8_388_608, 2_048, 4, 4, 58_720_256, 14_336, 29_360_128, 7_168,
                8_192, 8_192
            ]
        );
    }

    /// Qwen3-30B-A3B at TP4 (hidden 2,048, 32 heads and 4 KV heads of 128, 128 experts
    /// of 768, bf16): qkv (8 + 2 × 1) × 128 = 1,280 × 2,048 × 2 = 5,242,880; o 2,048 ×
    /// 1,024 × 2 = 4,194,304; q_norm, k_norm 256 each (after o_proj); w13 128 × 384 ×
    /// 2,048 × 2 = 201,326,592; w2 100,663,296; the router 128 × 2,048 × 2 = 524,288; two
    /// norms of 4,096.
    #[test]
    fn qwen3_moe_layer_by_hand() {
        let cfg = serde_json::json!({
            "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 4,
            "head_dim": 128, "intermediate_size": 6144, "num_experts": 128,
            "moe_intermediate_size": 768
        });
        let d = LlamaLayers::from_config(&cfg, "Qwen3MoeForCausalLM", 48).unwrap();
        let p = d.layer_params(&ParallelLayout::tp(4), WeightFormat::Bf16);
        let bytes: Vec<u64> = p.iter().map(|p| p.bytes).collect();
        assert_eq!(
            bytes,
            [
                5_242_880,
                4_194_304,
                256,
                256,
                201_326_592,
                100_663_296,
                524_288,
                4_096,
                4_096
            ]
        );
    }
}
