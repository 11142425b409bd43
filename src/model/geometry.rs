//! Attention geometry and bytes per token per rank of each host-mirrored pool.

use serde::{Deserialize, Serialize};

use super::dtype::{FP8_DS_MLA_BYTES_PER_LAYER, KvDtype};
use super::parallel::ParallelLayout;

fn one() -> u32 {
    1
}

fn is_one(x: &u32) -> bool {
    *x == 1
}

/// How a model stores per-token KV. Tagged by `kind` in YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Attention {
    /// GQA (or MHA with `kv_heads` = query heads): K and V per KV head. `v_head_dim`
    /// when V's head dim differs from K's (`model_config.py: _derive_model_shapes`:
    /// `v_head_dim` defaults to `head_dim`).
    #[serde(alias = "mha")]
    Gqa {
        kv_heads: u32,
        head_dim: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        v_head_dim: Option<u32>,
    },
    /// MLA: one latent of `kv_lora_rank + qk_rope_head_dim` elements per layer, the same
    /// on every TP rank (not split by heads).
    Mla {
        kv_lora_rank: u32,
        qk_rope_head_dim: u32,
    },
    /// MLA plus a DSA (DeepSeek sparse attention) indexer: the indexer keys (index-K) are
    /// a separate pool (`DSAIndexerPoolHost`) of `indexer_bytes_per_token_layer` (128 fp8
    /// + one fp32 scale = 132 B) per layer. `indexer_layers` counts the layers that own
    /// their keys (fewer than `layers` when the indexer is shared, as in GLM-5.2: 21 of
    /// 78); whether a pool holds only those or every layer is the release's
    /// ([`IndexKLayers`], `crate::release::DsaIndexK`).
    MlaDsa {
        kv_lora_rank: u32,
        qk_rope_head_dim: u32,
        indexer_layers: u32,
        indexer_bytes_per_token_layer: u64,
        /// `index_kpool` (`model_config.py: get_dsa_index_kpool`, 1 unless the config
        /// says): index keys pooled over this many tokens; from 0.5.22 a page holds
        /// `64 × index_kpool` tokens so that a prefix hit never ends inside a group.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        index_kpool: u32,
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
        /// The KDA state pool as SGLang sizes it (read from `config.json`); `None` in the
        /// incident preset, which keeps its hand-set reference figure only.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<LinearState>,
    },
    /// gpt-oss: GQA with alternating sliding-window (`swa_layers`, `window` tokens) and
    /// full-attention layers (`full_layers`); SGLang keeps two pools (`SWAKVPool`).
    GqaSwa {
        kv_heads: u32,
        head_dim: u32,
        full_layers: u32,
        swa_layers: u32,
        window: u32,
        /// V head dim of the full layers when it differs from `head_dim` (MiMo-V2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        v_head_dim: Option<u32>,
        /// KV heads of the sliding-window layers when they differ
        /// (`swa_num_key_value_heads`, `model_config.py: get_swa_num_kv_heads`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        swa_kv_heads: Option<u32>,
        /// K / V head dims of the sliding-window layers when they differ (`swa_head_dim`,
        /// `swa_v_head_dim`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        swa_head_dim: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        swa_v_head_dim: Option<u32>,
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
    /// GQA on `full_layers` plus a per-request recurrent state (Mamba2 / GDN / KDA) on
    /// the other layers, held in a Mamba pool (`MambaPool`), as read from a config
    /// (Nemotron-H, Qwen3.5, …).
    GqaState {
        kv_heads: u32,
        head_dim: u32,
        full_layers: u32,
        state: LinearState,
    },
    /// DeepSeek-V4's compressed sparse attention: a sliding window of `sliding_window`
    /// latents per layer plus, per `compress_ratios[layer]`, one latent per 4 tokens
    /// (with C4 indexer keys of `index_head_dim`) or per 128 tokens. Sized by
    /// [`crate::model::dsv4`] (`pool_configurator.py: DSV4PoolConfigurator`), not by a
    /// per-token cell size; its HiCache host pools are not modelled.
    Dsv4 {
        head_dim: u32,
        qk_rope_head_dim: u32,
        index_head_dim: u32,
        sliding_window: u32,
        compress_ratios: Vec<u32>,
    },
}

/// The per-request state of a model's linear-attention / SSM layers, as SGLang shapes it
/// (`configs/mamba_utils.py`). Bytes per slot: [`LinearState::bytes_per_slot`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LinearState {
    /// `Mamba2StateShape.create` (Mamba2 layers; GDN with `n_groups` = key heads,
    /// `num_heads` = value heads, `head_dim` = value head dim, `state_size` = key head
    /// dim).
    Mamba2 {
        intermediate_size: u32,
        n_groups: u32,
        num_heads: u32,
        head_dim: u32,
        state_size: u32,
        conv_kernel: u32,
        layers: u32,
        /// Bytes per element of the temporal (SSM) state: `mamba2_state_dtype`, fp32
        /// unless the config's `mamba_ssm_dtype` says otherwise.
        temporal_itemsize: u32,
    },
    /// `KimiLinearStateShape.create` (KDA layers of Kimi linear models).
    Kda {
        num_heads: u32,
        head_dim: u32,
        conv_kernel: u32,
        layers: u32,
        temporal_itemsize: u32,
    },
}

impl LinearState {
    /// Bytes of one request's state on one rank.
    ///
    /// Mirrors `configs/mamba_utils.py: BaseLinearStateParams.mamba_cache_per_req`:
    /// `(conv elements × conv itemsize + temporal elements × temporal itemsize) ×
    /// layers`, the conv state in bf16 (`SGLANG_MAMBA_CONV_DTYPE` default).
    /// `Mamba2StateShape.create`: `n_groups` grows by `extra_groups_for_head_shards`
    /// when TP does not divide it, conv `(conv_dim // tp, kernel - 1)` with `conv_dim =
    /// intermediate + 2 × n_groups × state_size`, temporal `(num_heads // tp, head_dim,
    /// state_size)`. `KimiLinearStateShape.create`: conv `(kernel - 1, 3 × heads ×
    /// head_dim // tp)`, temporal `(heads // tp, head_dim, head_dim)`. 0.5.21–0.5.23.
    /// Layers per PP stage `// pp` (SGLang takes the largest stage share).
    pub fn bytes_per_slot(&self, tp: u64, pp: u64) -> u64 {
        const CONV_ITEMSIZE: u64 = 2;
        let tp = tp.max(1);
        let pp = pp.max(1);
        match *self {
            LinearState::Mamba2 {
                intermediate_size,
                n_groups,
                num_heads,
                head_dim,
                state_size,
                conv_kernel,
                layers,
                temporal_itemsize,
            } => {
                let mut groups = n_groups as u64;
                if !groups.is_multiple_of(tp) {
                    // `extra_groups_for_head_shards`: 0 when divisible, else tp - groups
                    // (SGLang asserts groups == 1 in that case).
                    groups += tp.saturating_sub(groups);
                }
                let conv_dim = intermediate_size as u64 + 2 * groups * state_size as u64;
                let conv = conv_dim / tp * (conv_kernel as u64).saturating_sub(1);
                let temporal = num_heads as u64 / tp * head_dim as u64 * state_size as u64;
                (conv * CONV_ITEMSIZE + temporal * temporal_itemsize as u64) * (layers as u64 / pp)
            }
            LinearState::Kda {
                num_heads,
                head_dim,
                conv_kernel,
                layers,
                temporal_itemsize,
            } => {
                let proj = num_heads as u64 * head_dim as u64;
                let conv = (conv_kernel as u64).saturating_sub(1) * (3 * (proj / tp));
                let temporal = num_heads as u64 / tp * head_dim as u64 * head_dim as u64;
                (conv * CONV_ITEMSIZE + temporal * temporal_itemsize as u64) * (layers as u64 / pp)
            }
        }
    }
}

/// Which layers of a DSA model hold index-K (the indexer keys) in a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexKLayers {
    /// Only the layers that compute their own top-k (`indexer_layers`, the layers
    /// `model_config.py: dsa_layer_skips_topk` does not skip): the elided layout.
    Owned,
    /// Every decoder layer: index-K not elided.
    All,
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
    pub fn check_dtype(&self, dtype: KvDtype) -> Result<(), super::dtype::KvDtypeRefused> {
        match (self, dtype) {
            (
                Attention::Gqa { .. }
                | Attention::GqaSwa { .. }
                | Attention::GqaLinear { .. }
                | Attention::GqaState { .. },
                KvDtype::Fp8DsMla,
            ) => Err(super::dtype::KvDtypeRefused::MlaLayoutOnGqa),
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
        let gqa = |kv_heads: u32, head_dim: u32| gqa_layer(kv_heads, head_dim, None, layout, dtype);
        let mla = |rank: u32, rope: u32| match dtype {
            KvDtype::Fp8DsMla => FP8_DS_MLA_BYTES_PER_LAYER,
            _ => (rank as u64 + rope as u64) * dtype.itemsize(),
        };
        match *self {
            Attention::Gqa {
                kv_heads,
                head_dim,
                v_head_dim,
            }
            | Attention::GqaSwa {
                kv_heads,
                head_dim,
                v_head_dim,
                ..
            } => gqa_layer(kv_heads, head_dim, v_head_dim, layout, dtype),
            Attention::GqaLinear {
                kv_heads, head_dim, ..
            }
            | Attention::GqaState {
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
            // One FlashMLA-layout latent slot (`DSV4PoolConfigurator.kv_bytes`).
            Attention::Dsv4 {
                head_dim,
                qk_rope_head_dim,
                ..
            } => (head_dim - qk_rope_head_dim) as u64 + 2 * qk_rope_head_dim as u64 + 8,
        }
    }

    /// Per-token host pools of this geometry for a model of `layers` layers, on one rank,
    /// a DSA model's index-K on its owned layers ([`IndexKLayers::Owned`], as 0.5.22+
    /// builds both pools): [`Self::pools_per_token`].
    pub fn host_pools(
        &self,
        layers: u32,
        layout: &ParallelLayout,
        dtype: KvDtype,
    ) -> Vec<PoolGeometry> {
        self.pools_per_token(layers, layout, dtype, IndexKLayers::Owned)
    }

    /// Per-token pools of this geometry for a model of `layers` layers, on one rank, a
    /// DSA model's `indexer` pool on the `index_k` layers (which ones a release keeps,
    /// device and host: `crate::pools::dsa_index_k_layers`).
    ///
    /// Layers per stage = `layers // pp_size` (as the SGLang simulator's
    /// `calc_kv_cache_cell_elems`; SGLang's `get_pp_indices` can give the first stages one
    /// layer more — not modelled). MTP draft layers are *not* included: the draft model
    /// has its own pool (see `ModelPreset::mtp_draft_pool`).
    pub fn pools_per_token(
        &self,
        layers: u32,
        layout: &ParallelLayout,
        dtype: KvDtype,
        index_k: IndexKLayers,
    ) -> Vec<PoolGeometry> {
        let pp = layout.pp_size.max(1) as u64;
        let per_layer = self.kv_bytes_per_token_layer(layout, dtype);
        let stage = |l: u32| l as u64 / pp;
        match *self {
            // No per-token cell: `crate::model::dsv4` sizes the device pools, and the
            // HiCache host pools (`hybrid_pool_assembler.py: DeepSeekV4PagedHostPool`
            // per SWA / C4 / C128 pool, `DeepSeekV4StateHostPool`) are not modelled.
            Attention::Dsv4 { .. } => vec![],
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
                    bytes_per_token: indexer_bytes_per_token_layer
                        * stage(match index_k {
                            IndexKLayers::Owned => indexer_layers,
                            IndexKLayers::All => layers,
                        }),
                },
            ],
            Attention::HybridMla { mla_layers, .. } => vec![PoolGeometry {
                name: "kv",
                bytes_per_token: per_layer * stage(mla_layers),
            }],
            Attention::GqaLinear { full_layers, .. } | Attention::GqaState { full_layers, .. } => {
                vec![PoolGeometry {
                    name: "kv",
                    bytes_per_token: per_layer * stage(full_layers),
                }]
            }
            Attention::GqaSwa {
                kv_heads,
                head_dim,
                full_layers,
                swa_layers,
                swa_kv_heads,
                swa_head_dim,
                swa_v_head_dim,
                ..
            } => {
                // `pool_configurator.py: HybridSWAPoolConfigurator`: `_swa_per_token =
                // get_swa_num_kv_heads(tp) * (swa_head_dim + swa_v_head_dim) * kv_size`.
                let swa_k = swa_head_dim.unwrap_or(head_dim);
                let swa_per_layer = gqa_layer(
                    swa_kv_heads.unwrap_or(kv_heads),
                    swa_k,
                    Some(swa_v_head_dim.unwrap_or(swa_k)),
                    layout,
                    dtype,
                );
                vec![
                    PoolGeometry {
                        name: "kv",
                        bytes_per_token: per_layer * stage(full_layers),
                    },
                    PoolGeometry {
                        name: "swa",
                        bytes_per_token: swa_per_layer * stage(swa_layers),
                    },
                ]
            }
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
        let state = self.linear_state()?;
        Some(state.bytes_per_slot(layout.attn_tp_size().max(1), layout.pp_size.max(1) as u64))
    }

    /// The per-request state of the linear layers, if the model has a state pool. A
    /// `gqa_linear` (Gated DeltaNet) geometry is a Mamba2 state shape
    /// (`configs/qwen3_next.py: mamba2_cache_params`: `intermediate_size =
    /// linear_value_head_dim * linear_num_value_heads`, `n_groups =
    /// linear_num_key_heads`, `num_heads = linear_num_value_heads`, `head_dim =
    /// linear_value_head_dim`, `state_size = linear_key_head_dim`), fp32 SSM state.
    pub fn linear_state(&self) -> Option<LinearState> {
        match *self {
            Attention::GqaState { ref state, .. }
            | Attention::HybridMla {
                state: Some(ref state),
                ..
            } => Some(state.clone()),
            Attention::GqaLinear {
                linear_layers,
                linear_num_key_heads,
                linear_num_value_heads,
                linear_key_head_dim,
                linear_value_head_dim,
                linear_conv_kernel_dim,
                ..
            } => Some(LinearState::Mamba2 {
                intermediate_size: linear_value_head_dim * linear_num_value_heads,
                n_groups: linear_num_key_heads,
                num_heads: linear_num_value_heads,
                head_dim: linear_value_head_dim,
                state_size: linear_key_head_dim,
                conv_kernel: linear_conv_kernel_dim,
                layers: linear_layers,
                temporal_itemsize: 4,
            }),
            _ => None,
        }
    }

    /// The sliding window of an SWA model (`sliding_window_size`), if any.
    pub fn sliding_window(&self) -> Option<u32> {
        match *self {
            Attention::GqaSwa { window, .. } => Some(window),
            Attention::Dsv4 { sliding_window, .. } => Some(sliding_window),
            _ => None,
        }
    }
}

/// Bytes per token of one GQA layer on one rank, `get_num_kv_heads(attn_tp) × (head_dim
/// plus v_head_dim) × itemsize` (`pool_configurator.py: DefaultPoolConfigurator.
/// _compute_cell_size`), with `model_config.py: get_num_kv_heads` = `max(1, kv_heads //
/// attn_tp)`: KV heads are replicated when TP exceeds them. 0.5.14–0.5.23.
fn gqa_layer(
    kv_heads: u32,
    head_dim: u32,
    v_head_dim: Option<u32>,
    layout: &ParallelLayout,
    dtype: KvDtype,
) -> u64 {
    let heads = (kv_heads as u64 / layout.attn_tp_size()).max(1);
    heads * (head_dim as u64 + v_head_dim.unwrap_or(head_dim) as u64) * dtype.itemsize()
}

impl Attention {
    /// Whether layer `l` is a full-attention layer (not a linear / SSM mixer) of a model
    /// whose config is `text`: Qwen3-Next / 3.5 `(l + 1) % full_attention_interval == 0`,
    /// Kimi linear: not in `linear_attn_config.kda_layers` (1-based). Every layer of a
    /// model without linear layers.
    pub fn is_full_attention_layer(&self, text: &serde_json::Value, l: u32) -> bool {
        match self {
            Attention::GqaLinear { .. } => {
                let i = text
                    .get("full_attention_interval")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(1)
                    .max(1);
                (l as u64 + 1).is_multiple_of(i)
            }
            Attention::HybridMla { state: Some(_), .. } => !text
                .pointer("/linear_attn_config/kda_layers")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|k| k.iter().any(|x| x.as_u64() == Some(l as u64 + 1))),
            _ => true,
        }
    }

    /// Whether SGLang builds a Mamba (linear-attention / SSM state) pool for this model.
    pub fn has_state_pool(&self) -> bool {
        matches!(
            self,
            Attention::GqaLinear { .. }
                | Attention::GqaState { .. }
                | Attention::HybridMla { state: Some(_), .. }
        )
    }
}
