//! Parameters of a model by part, from its `config.json`, and the bytes of weights each
//! rank holds.
//!
//! The count follows the module shapes of SGLang's model files (`models/llama.py`,
//! `qwen2.py`, `qwen3_moe.py`, `deepseek_v2.py`, `gpt_oss.py`, …): per decoder layer the
//! attention projections (GQA: q/k/v/o; MLA: q_a/q_b or q, kv_a, kv_b, o, plus the DSA
//! indexer), a dense MLP (gate/up/down) or a MoE block (router, routed experts, shared
//! experts), two norms; the embedding and the LM head (none when tied); MTP layers
//! (one decoder layer plus `eh_proj` each). Biases and small tensors (norms, rotary
//! tables, expert-score corrections) are a few MB at most and not all counted: when the
//! checkpoint's `model.safetensors.index.json` is at hand its `metadata.total_size` is
//! the exact total and the counts only split it into parts.

use serde::Serialize;
use serde_json::Value;

use super::geometry::Attention;
use super::parallel::ParallelLayout;
use super::quant::{Quantization, WeightFormat};

/// Parameters (elements, not bytes) of one model, by part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ParamCounts {
    pub embed: u64,
    /// 0 when `tie_word_embeddings`.
    pub lm_head: u64,
    /// Attention of all decoder layers (projections; linear-attention / SSM mixers).
    pub attention: u64,
    /// Dense MLPs (layers before `first_k_dense_replace`, or every layer of a dense model).
    pub dense_mlp: u64,
    pub routed_experts: u64,
    pub shared_experts: u64,
    /// MoE routers (`gate`): kept in bf16 by every quantisation.
    pub router: u64,
    /// RMSNorm weights.
    pub norms: u64,
    /// MTP / NextN layers (loaded by the draft worker only).
    pub mtp: u64,
}

impl ParamCounts {
    pub fn total(&self) -> u64 {
        self.embed
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.router
            + self.norms
            + self.mtp
    }

    /// Counts from a config (the text config of a multimodal model; vision towers are
    /// not counted).
    pub fn from_config(
        root: &Value,
        text: &Value,
        attention: &Attention,
        layers: u32,
        mtp_layers: u32,
    ) -> ParamCounts {
        let g = |k: &str| text.get(k).and_then(Value::as_u64);
        let hidden = g("hidden_size").unwrap_or(0);
        let vocab = g("vocab_size").unwrap_or(0);
        let heads = g("num_attention_heads").unwrap_or(0);
        let tied = text
            .get("tie_word_embeddings")
            .or_else(|| root.get("tie_word_embeddings"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let per_layer_attn = attention_params(text, attention, hidden, heads);
        // MoE layout.
        let experts = g("n_routed_experts")
            .or_else(|| g("num_experts"))
            .or_else(|| g("num_local_experts"))
            .unwrap_or(0);
        let inter = g("intermediate_size").unwrap_or(0);
        let moe_inter = g("moe_intermediate_size").unwrap_or(inter);
        let shared_inter = g("shared_expert_intermediate_size")
            .unwrap_or_else(|| g("n_shared_experts").unwrap_or(0) * moe_inter);
        let first_dense = g("first_k_dense_replace").unwrap_or(0);
        let mlp_only: Vec<u64> = text
            .get("mlp_only_layers")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let sparse_step = g("decoder_sparse_step").unwrap_or(1).max(1);
        let is_moe_layer = |l: u64| {
            experts > 0 && l >= first_dense && !mlp_only.contains(&l) && (l + 1) % sparse_step == 0
        };
        let mut p = ParamCounts {
            embed: vocab * hidden,
            lm_head: if tied { 0 } else { vocab * hidden },
            norms: hidden, // final norm
            ..Default::default()
        };
        for l in 0..layers as u64 {
            p.attention += per_layer_attn;
            p.norms += 2 * hidden;
            if is_moe_layer(l) {
                p.routed_experts += experts * 3 * hidden * moe_inter;
                p.shared_experts += 3 * hidden * shared_inter;
                p.router += experts * hidden;
            } else {
                p.dense_mlp += 3 * hidden * inter;
            }
        }
        // An MTP layer: a MoE decoder layer (as the model's last) + eh_proj (2h → h) +
        // its norms.
        let mtp_layer = per_layer_attn
            + if experts > 0 {
                experts * 3 * hidden * moe_inter + 3 * hidden * shared_inter + experts * hidden
            } else {
                3 * hidden * inter
            }
            + 2 * hidden * hidden
            + 4 * hidden;
        p.mtp = mtp_layers as u64 * mtp_layer;
        p
    }

    /// Bytes of the checkpoint under `quant`: Linear layers in the quantised format
    /// unless excluded; embeddings, LM head, norms and routers in bf16 (SGLang's
    /// quantised linear methods: `layers/quantization/*`, every format leaves
    /// `VocabParallelEmbedding`, `ParallelLMHead`, `RMSNorm` and the MoE `gate` alone).
    /// ModelOpt / compressed-tensors / mxfp4 exclusions are matched on the part names
    /// `self_attn`, `shared_experts`, `mlp`, `experts` (`lm_head` and `embed_tokens` are
    /// bf16 anyway). W4AFP8: routed experts int4 (group 128), the rest fp8.
    pub fn bytes(&self, quant: &Quantization) -> PartBytes {
        let f = quant.format;
        let excluded = |part: &str| quant.exclude.iter().any(|p| pattern_names(p, part));
        let q = |n: u64, part: &str| {
            if f == WeightFormat::Bf16 || excluded(part) {
                2 * n
            } else {
                f.bytes(n)
            }
        };
        let experts = match f {
            WeightFormat::W4aFp8 => {
                WeightFormat::Int4 { group_size: 128 }.bytes(self.routed_experts)
            }
            // gpt-oss (mxfp4) quantises the experts only (`modules_to_not_convert`:
            // attention, router, embeddings, LM head).
            _ => q(self.routed_experts, "experts"),
        };
        let attn = match f {
            WeightFormat::Mxfp4 => 2 * self.attention,
            _ => q(self.attention, "self_attn"),
        };
        let dense = match f {
            WeightFormat::Mxfp4 => 2 * self.dense_mlp,
            _ => q(self.dense_mlp, "mlp"),
        };
        let shared = match f {
            WeightFormat::Mxfp4 => 2 * self.shared_experts,
            _ => q(self.shared_experts, "shared_experts"),
        };
        PartBytes {
            embed: 2 * self.embed,
            lm_head: 2 * self.lm_head,
            attention: attn,
            dense_mlp: dense,
            routed_experts: experts,
            shared_experts: shared,
            replicated: 2 * (self.router + self.norms),
            mtp: if f == WeightFormat::Bf16 {
                2 * self.mtp
            } else {
                f.bytes(self.mtp)
            },
        }
    }
}

/// Whether an exclusion pattern names every module of a part (`*self_attn*`,
/// `re:.*self_attn.*`, `model.layers.*.self_attn`). Per-layer patterns
/// (`model.layers.0*`) name a few layers, not the part, and are not counted.
fn pattern_names(pattern: &str, part: &str) -> bool {
    let p = pattern.trim_start_matches("re:");
    let generic = !p.chars().any(|c| c.is_ascii_digit());
    generic
        && match part {
            "self_attn" => p.contains("self_attn") || p.contains("attention"),
            "shared_experts" => p.contains("shared_expert"),
            "experts" => p.contains(".experts") && !p.contains("shared"),
            "mlp" => p.contains("mlp") && !p.contains("expert") && !p.contains("gate."),
            _ => false,
        }
}

/// Bytes of a checkpoint by part (see [`ParamCounts::bytes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PartBytes {
    pub embed: u64,
    pub lm_head: u64,
    pub attention: u64,
    pub dense_mlp: u64,
    pub routed_experts: u64,
    pub shared_experts: u64,
    /// Norms and routers (replicated on every rank).
    pub replicated: u64,
    pub mtp: u64,
}

impl PartBytes {
    /// The target model's bytes (MTP layers excluded: they load with a NextN draft).
    pub fn target(&self) -> u64 {
        self.embed
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.replicated
    }

    pub fn total(&self) -> u64 {
        self.target() + self.mtp
    }

    /// Scales every part so they add up to `total` (the safetensors index's
    /// `metadata.total_size`, MTP included): the exact checkpoint split like the count.
    pub fn scaled_to(&self, total: u64) -> PartBytes {
        let sum = self.total().max(1) as u128;
        let s = |x: u64| (x as u128 * total as u128 / sum) as u64;
        PartBytes {
            embed: s(self.embed),
            lm_head: s(self.lm_head),
            attention: s(self.attention),
            dense_mlp: s(self.dense_mlp),
            routed_experts: s(self.routed_experts),
            shared_experts: s(self.shared_experts),
            replicated: s(self.replicated),
            mtp: s(self.mtp),
        }
    }

    /// Bytes of weights one rank holds after loading, without the MTP draft.
    ///
    /// SGLang's sharding (`layers/linear.py`, `layers/vocab_parallel_embedding.py`,
    /// `layers/moe/fused_moe_triton/layer.py`, `layers/dp_attention.py`):
    /// - attention projections split over the attention TP group, `attn_tp_size = tp /
    ///   dp` with `--enable-dp-attention` (so DP attention replicates them `dp` times);
    /// - routed experts split over the whole TP group, as EP (`--ep-size`) or TP, and
    ///   shared experts / dense MLPs over TP (`--moe-dense-tp-size` unset);
    /// - the embedding and LM head vocab-parallel over TP (`VocabParallelEmbedding`,
    ///   `ParallelLMHead`);
    /// - norms and routers replicated.
    ///
    /// PP divides the layers (`pp_size`): every part but the embedding (first stage)
    /// and LM head (last stage) is divided by `pp_size`; the largest stage is taken.
    pub fn per_rank(&self, layout: &ParallelLayout) -> u64 {
        let tp = layout.tp_size.max(1) as u64;
        let attn_tp = layout.attn_tp_size().max(1);
        let pp = layout.pp_size.max(1) as u64;
        let layers = self.attention.div_ceil(attn_tp)
            + (self.routed_experts + self.shared_experts + self.dense_mlp).div_ceil(tp)
            + self.replicated;
        let vocab = (self.embed + self.lm_head).div_ceil(tp);
        if pp == 1 {
            layers + vocab
        } else {
            layers.div_ceil(pp) + self.embed.max(self.lm_head).div_ceil(tp)
        }
    }
}

/// Attention parameters of one decoder layer (GQA q/k/v/o; MLA; linear mixers use the
/// layer's own projections, counted as GQA here).
fn attention_params(text: &Value, attention: &Attention, hidden: u64, heads: u64) -> u64 {
    let g = |k: &str| text.get(k).and_then(Value::as_u64);
    match attention {
        Attention::Mla { .. } | Attention::MlaDsa { .. } | Attention::HybridMla { .. } => {
            let rank = g("kv_lora_rank").unwrap_or(0);
            let rope = g("qk_rope_head_dim").unwrap_or(0);
            let nope = g("qk_nope_head_dim").unwrap_or(0);
            let v = g("v_head_dim").unwrap_or(nope);
            let qk = nope + rope;
            let q = match g("q_lora_rank") {
                Some(r) => hidden * r + r * heads * qk,
                None => hidden * heads * qk,
            };
            let indexer = match (g("index_head_dim"), g("index_n_heads")) {
                (Some(d), Some(n)) => {
                    g("q_lora_rank").unwrap_or(hidden) * n * d + hidden * d + hidden * n
                }
                _ => 0,
            };
            q + hidden * (rank + rope) + rank * heads * (nope + v) + heads * v * hidden + indexer
        }
        _ => {
            let hd = g("head_dim").unwrap_or(if heads > 0 { hidden / heads } else { 0 });
            let kv = g("num_key_value_heads").unwrap_or(heads);
            hidden * heads * hd + 2 * hidden * kv * hd + heads * hd * hidden
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Llama-3.1-8B (meta-llama/Meta-Llama-3.1-8B config.json): hidden 4096, 32 layers,
    /// 32 heads, 8 KV heads, head_dim 128, intermediate 14336, vocab 128256, untied.
    #[test]
    fn llama_8b_parameters() {
        let c = json!({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
            "tie_word_embeddings": false});
        let a = Attention::Gqa {
            kv_heads: 8,
            head_dim: 128,
            v_head_dim: None,
        };
        let p = ParamCounts::from_config(&c, &c, &a, 32, 0);
        // attention per layer: 4096×4096 (q) + 2×4096×1024 (k, v) + 4096×4096 (o)
        //   = 41,943,040; × 32 = 1,342,177,280.
        assert_eq!(p.attention, 1_342_177_280);
        // MLP: 3 × 4096 × 14336 × 32 = 5,637,144,576.
        assert_eq!(p.dense_mlp, 5_637_144_576);
        // embed = lm_head = 128256 × 4096 = 525,336,576; norms 4096 × 65 = 266,240.
        assert_eq!(p.embed, 525_336_576);
        assert_eq!(p.norms, 266_240);
        // 8,030,261,248 parameters: the published "8.03B".
        assert_eq!(p.total(), 8_030_261_248);
        let b = p.bytes(&Quantization::none());
        assert_eq!(b.total(), 16_060_522_496);
        // TP 4: attention and MLP / 4, vocab / 4, norms replicated:
        // 671,088,640 + 2,818,572,288 + 525,336,576 + 532,480 = 4,015,529,984.
        assert_eq!(b.per_rank(&ParallelLayout::tp(4)), 4_015_529_984);
    }
}
