//! Attention geometry and bytes per token per rank of each host-mirrored pool.

use serde::{Deserialize, Serialize};

use super::dtype::{FP8_DS_MLA_BYTES_PER_LAYER, KvDtype};
use super::parallel::ParallelLayout;

/// How a model stores per-token KV. Tagged by `kind` in YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Attention {
    /// GQA (or MHA with `kv_heads` = query heads): K and V per KV head.
    #[serde(alias = "mha")]
    Gqa { kv_heads: u32, head_dim: u32 },
    /// MLA: one latent of `kv_lora_rank + qk_rope_head_dim` elements per layer, the same
    /// on every TP rank (not split by heads).
    Mla {
        kv_lora_rank: u32,
        qk_rope_head_dim: u32,
    },
    /// MLA plus a DSA (DeepSeek sparse attention) indexer: the indexer keys are a separate
    /// pool (`DSAIndexerPoolHost`) of `indexer_bytes_per_token_layer` (128 fp8 + one fp32
    /// scale = 132 B) on each of `indexer_layers` layers (fewer than `layers` when the
    /// indexer is shared, as in GLM-5.2).
    MlaDsa {
        kv_lora_rank: u32,
        qk_rope_head_dim: u32,
        indexer_layers: u32,
        indexer_bytes_per_token_layer: u64,
    },
    /// Hybrid MLA + linear attention (Kimi-K3): only `mla_layers` hold per-token KV; the
    /// linear layers hold a per-sequence state (`state_bytes_per_seq`, for reference;
    /// not a per-token pool).
    HybridMla {
        kv_lora_rank: u32,
        qk_rope_head_dim: u32,
        mla_layers: u32,
        #[serde(default)]
        state_bytes_per_seq: crate::units::ByteSize,
    },
    /// gpt-oss: GQA with alternating sliding-window (`swa_layers`, `window` tokens) and
    /// full-attention layers (`full_layers`); SGLang keeps two pools (`SWAKVPool`).
    GqaSwa {
        kv_heads: u32,
        head_dim: u32,
        full_layers: u32,
        swa_layers: u32,
        window: u32,
    },
    /// Qwen3-Next: GQA on `full_layers` (every `full_attention_interval`-th layer), Gated
    /// DeltaNet linear attention on `linear_layers`, whose per-request state lives in a
    /// Mamba pool (`MambaPool`: one slot per request, not per token). Field names are the
    /// model's `config.json` keys.
    GqaLinear {
        kv_heads: u32,
        head_dim: u32,
        full_layers: u32,
        linear_layers: u32,
        linear_num_key_heads: u32,
        linear_num_value_heads: u32,
        linear_key_head_dim: u32,
        linear_value_head_dim: u32,
        linear_conv_kernel_dim: u32,
    },
}

/// One host-mirrored pool of a model on one rank: `"kv"` (full attention / MLA latent),
/// `"indexer"` (DSA indexer keys), `"swa"` (sliding-window layers), `"draft"` (MTP draft).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PoolGeometry {
    pub name: &'static str,
    pub bytes_per_token: u64,
}

impl Attention {
    /// Whether `dtype` can be used with this attention kind (`fp8_ds_mla` is MLA-only).
    pub fn check_dtype(&self, dtype: KvDtype) -> Result<(), String> {
        match (self, dtype) {
            (
                Attention::Gqa { .. } | Attention::GqaSwa { .. } | Attention::GqaLinear { .. },
                KvDtype::Fp8DsMla,
            ) => Err(
                "kv dtype `fp8_ds_mla` is an MLA cache layout; this model uses GQA: expected auto, bf16, fp16 or fp8"
                    .into(),
            ),
            _ => Ok(()),
        }
    }

    /// Bytes per token of one layer of the main KV pool on one rank.
    ///
    /// Mirrors `mem_cache/pool_host/mha.py: get_size_per_token` (MHA:
    /// `head_dim * head_num * itemsize * 2`, with `head_num` the per-rank KV heads
    /// `max(kv_heads // attn_tp_size, 1)` as in `model_config.get_num_kv_heads`) and
    /// `mem_cache/pool_host/mla.py: get_size_per_token` (MLA:
    /// `(kv_lora_rank + qk_rope_head_dim) * itemsize`, replicated on every TP rank).
    /// All versions (V0–V5).
    pub fn kv_bytes_per_token_layer(&self, layout: &ParallelLayout, dtype: KvDtype) -> u64 {
        let gqa = |kv_heads: u32, head_dim: u32| {
            let heads = (kv_heads as u64 / layout.attn_tp_size()).max(1);
            head_dim as u64 * heads * dtype.itemsize() * 2
        };
        let mla = |rank: u32, rope: u32| match dtype {
            KvDtype::Fp8DsMla => FP8_DS_MLA_BYTES_PER_LAYER,
            _ => (rank as u64 + rope as u64) * dtype.itemsize(),
        };
        match *self {
            Attention::Gqa { kv_heads, head_dim } => gqa(kv_heads, head_dim),
            Attention::GqaSwa {
                kv_heads, head_dim, ..
            }
            | Attention::GqaLinear {
                kv_heads, head_dim, ..
            } => gqa(kv_heads, head_dim),
            Attention::Mla {
                kv_lora_rank,
                qk_rope_head_dim,
            }
            | Attention::MlaDsa {
                kv_lora_rank,
                qk_rope_head_dim,
                ..
            }
            | Attention::HybridMla {
                kv_lora_rank,
                qk_rope_head_dim,
                ..
            } => mla(kv_lora_rank, qk_rope_head_dim),
        }
    }

    /// Per-token host pools of this geometry for a model of `layers` layers, on one rank.
    ///
    /// Layers per stage = `layers // pp_size` (as the SGLang simulator's
    /// `calc_kv_cache_cell_elems`; SGLang's `get_pp_indices` can give the first stages one
    /// layer more — not modelled). MTP draft layers are *not* included: the draft model
    /// has its own pool (see `ModelPreset::mtp_draft_pool`).
    pub fn host_pools(
        &self,
        layers: u32,
        layout: &ParallelLayout,
        dtype: KvDtype,
    ) -> Vec<PoolGeometry> {
        let pp = layout.pp_size.max(1) as u64;
        let per_layer = self.kv_bytes_per_token_layer(layout, dtype);
        let stage = |l: u32| l as u64 / pp;
        match *self {
            Attention::Gqa { .. } | Attention::Mla { .. } => vec![PoolGeometry {
                name: "kv",
                bytes_per_token: per_layer * stage(layers),
            }],
            Attention::MlaDsa {
                indexer_layers,
                indexer_bytes_per_token_layer,
                ..
            } => vec![
                PoolGeometry {
                    name: "kv",
                    bytes_per_token: per_layer * stage(layers),
                },
                PoolGeometry {
                    name: "indexer",
                    bytes_per_token: indexer_bytes_per_token_layer * stage(indexer_layers),
                },
            ],
            Attention::HybridMla { mla_layers, .. } => vec![PoolGeometry {
                name: "kv",
                bytes_per_token: per_layer * stage(mla_layers),
            }],
            Attention::GqaLinear { full_layers, .. } => vec![PoolGeometry {
                name: "kv",
                bytes_per_token: per_layer * stage(full_layers),
            }],
            Attention::GqaSwa {
                full_layers,
                swa_layers,
                ..
            } => vec![
                PoolGeometry {
                    name: "kv",
                    bytes_per_token: per_layer * stage(full_layers),
                },
                PoolGeometry {
                    name: "swa",
                    bytes_per_token: per_layer * stage(swa_layers),
                },
            ],
        }
    }
}

impl Attention {
    /// Bytes of one request's linear-attention state on one rank (one Mamba pool slot),
    /// for models with such a pool (`None` otherwise).
    ///
    /// Mirrors `configs/qwen3_next.py: mamba2_cache_params` → `configs/mamba_utils.py:
    /// Mamba2StateShape.create` (0.5.14–0.5.23): `conv_dim = intermediate_size + 2 *
    /// n_groups * state_size` with `intermediate_size = linear_value_head_dim *
    /// linear_num_value_heads`, `n_groups = linear_num_key_heads`, `state_size =
    /// linear_key_head_dim`; conv state `(conv_dim / tp, conv_kernel - 1)` in the model
    /// dtype (bf16), temporal state `(num_value_heads / tp, value_head_dim, key_head_dim)`
    /// in `mamba2_state_dtype` (fp32 by default); and `pool_host/mamba.py:
    /// get_size_per_token` = (conv + temporal) × layers. Layers per stage `// pp_size`.
    pub fn state_bytes_per_slot(&self, layout: &ParallelLayout) -> Option<u64> {
        let Attention::GqaLinear {
            linear_layers,
            linear_num_key_heads,
            linear_num_value_heads,
            linear_key_head_dim,
            linear_value_head_dim,
            linear_conv_kernel_dim,
            ..
        } = *self
        else {
            return None;
        };
        let tp = layout.attn_tp_size().max(1);
        let pp = layout.pp_size.max(1) as u64;
        let conv_dim = linear_value_head_dim as u64 * linear_num_value_heads as u64
            + 2 * linear_num_key_heads as u64 * linear_key_head_dim as u64;
        const CONV_ITEMSIZE: u64 = 2; // bf16
        const TEMPORAL_ITEMSIZE: u64 = 4; // fp32 (SGLANG_MAMBA_SSM_DTYPE default)
        let conv =
            conv_dim / tp * (linear_conv_kernel_dim as u64).saturating_sub(1) * CONV_ITEMSIZE;
        let temporal = linear_num_value_heads as u64 / tp
            * linear_value_head_dim as u64
            * linear_key_head_dim as u64
            * TEMPORAL_ITEMSIZE;
        Some((conv + temporal) * (linear_layers as u64 / pp))
    }

    /// The sliding window of an SWA model (`sliding_window_size`), if any.
    pub fn sliding_window(&self) -> Option<u32> {
        match *self {
            Attention::GqaSwa { window, .. } => Some(window),
            _ => None,
        }
    }
}
