//! SGLang's weight offload at start-up: which decoder-layer parameters `--cpu-offload-gb`
//! (OffloaderV1) and `--offload-group-size` / `--offload-num-in-group` /
//! `--offload-prefetch-step` / `--offload-mode` (OffloaderV2) move to pinned host memory,
//! the host bytes that takes on each rank and the GPU bytes it frees before
//! `Load weight end` is measured (so before the device KV pool is sized).
//!
//! Everything here is per rank: the offloader is a process-wide singleton
//! (`utils/offloader.py: _instance`, 0.5.14–0.5.23), one per rank process. Modelled:
//! DeepSeek-V2-family checkpoints (`DeepseekV2Model`: DeepSeek-V2/V3/V3.2, Kimi-K2,
//! GLM-5.x, Mistral-Large-3) whose experts are bf16 or fp8, PP 1, EP 1; OffloaderV1 also
//! for the dense Llama-style decoders (`super::offload_llama`).

use serde::Serialize;
use serde_json::Value;

use super::parallel::ParallelLayout;
use super::quant::WeightFormat;

/// Host bytes a pinned tensor of `bytes` takes: PyTorch's pinned-host allocator
/// (`aten/src/ATen/core/CachingHostAllocator.h: CachingHostAllocatorImpl::allocate`,
/// `roundSize = c10::llvm::PowerOf2Ceil(size)`) rounds every allocation up to a power of
/// two, with `cudaHostAlloc` (default) or malloc + `cudaHostRegister`
/// (`PYTORCH_CUDA_ALLOC_CONF=pinned_use_cuda_host_register:True`) behind it. SGLang's
/// offloaders pin with `torch.empty_strided(..., pin_memory=True)`
/// (`utils/offloader.py: _create_cpu_data`, `OffloaderV1.maybe_offload_to_cpu`,
/// 0.5.14–0.5.23), one allocation per parameter.
pub fn pinned_size(bytes: u64) -> u64 {
    if bytes == 0 {
        0
    } else {
        bytes.checked_next_power_of_two().unwrap_or(bytes)
    }
}

/// `--offload-mode` (`utils/offloader.py: _BaseParamOffloader.create`, 0.5.14–0.5.23;
/// no argparse `choices`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OffloadMode {
    /// `_CpuParamOffloader`: the parameter moves to pinned host memory.
    Cpu,
    /// `_MetaParamOffloader` (debugging): the parameter goes to the meta device; no host
    /// memory.
    Meta,
    /// `_ShmCpuParamOffloader`: one `/dev/shm` copy per DP group (TP 1 only).
    ShmCpu,
    /// `_ShardedGpuParamOffloader`: 1/dp of each parameter on every GPU (TP 1 only).
    ShardedGpu,
}

impl OffloadMode {
    pub const CHOICES: &'static str = "cpu, meta, shm_cpu, sharded_gpu";

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "cpu" => OffloadMode::Cpu,
            "meta" => OffloadMode::Meta,
            "shm_cpu" => OffloadMode::ShmCpu,
            "sharded_gpu" => OffloadMode::ShardedGpu,
            _ => return None,
        })
    }

    pub fn id(self) -> &'static str {
        match self {
            OffloadMode::Cpu => "cpu",
            OffloadMode::Meta => "meta",
            OffloadMode::ShmCpu => "shm_cpu",
            OffloadMode::ShardedGpu => "sharded_gpu",
        }
    }
}

/// The offload flags as SGLang's parser holds them (all `int` but the mode).
#[derive(Debug, Clone, PartialEq)]
pub struct OffloadArgs<'a> {
    pub cpu_offload_gb: i64,
    pub group_size: i64,
    pub num_in_group: i64,
    pub prefetch_step: i64,
    pub mode: &'a str,
}

impl<'a> OffloadArgs<'a> {
    /// The offload flags of a server's arguments, as SGLang's parser holds them.
    pub fn of(s: &'a crate::domain::ServerArgs) -> OffloadArgs<'a> {
        OffloadArgs {
            cpu_offload_gb: s.cpu_offload_gb,
            group_size: s.offload_group_size,
            num_in_group: s.offload_num_in_group,
            prefetch_step: s.offload_prefetch_step,
            mode: &s.offload_mode,
        }
    }
}

/// The offloader `create_offloader` builds on every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "offloader", rename_all = "snake_case")]
pub enum Offloader {
    /// `NoopOffloader`.
    Noop,
    /// `OffloaderV1(cpu_offload_max_bytes=int(cpu_offload_gb * 1024**3))`.
    V1 { max_bytes: u64 },
    /// `OffloaderV2(group_size, num_in_group, prefetch_step, mode)`.
    V2 {
        group_size: i64,
        num_in_group: i64,
        prefetch_step: i64,
        mode: OffloadMode,
    },
}

/// Offload arguments SGLang cannot start with: the `server.` field and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadArgError {
    pub field: &'static str,
    pub message: String,
}

/// `utils/offloader.py: create_offloader` (0.5.19–0.5.23; `create_offloader_from_server_args`
/// 0.5.14–0.5.18, the same selection): `cpu_offload_gb > 0` gives V1 (checked first, so
/// the V2 flags are then ignored), else `offload_group_size > 0` gives V2, else no
/// offload. The V2 arguments SGLang cannot start with are errors here:
/// - an unknown mode: `_BaseParamOffloader.create` raises `KeyError` while the model is
///   built;
/// - `shm_cpu` / `sharded_gpu` with TP ≠ 1: `OffloaderV2.__init__` asserts `not yet
///   support tp_size!=1`;
/// - `--offload-num-in-group` < 1: no layer is offloaded, and `OffloaderV2.post_init`
///   indexes `self.offloaders[0]` (`IndexError`);
/// - `--offload-prefetch-step` < 1: nothing is onloaded before the first offloaded
///   module's first forward, whose `wait_and_get_device_tensors` asserts
///   `self._device_tensors is not None` (CUDA graph capture).
///
/// `--offload-num-in-group` > `--offload-group-size` is not an error in SGLang
/// (`module_index % G >= G - N` holds for every layer): every layer is offloaded.
pub fn offloader(a: &OffloadArgs, tp_size: u32) -> Result<Offloader, OffloadArgError> {
    if a.cpu_offload_gb > 0 {
        return Ok(Offloader::V1 {
            max_bytes: (a.cpu_offload_gb as u64).saturating_mul(1 << 30),
        });
    }
    if a.group_size <= 0 {
        return Ok(Offloader::Noop);
    }
    let mode = OffloadMode::parse(a.mode).ok_or_else(|| OffloadArgError {
        field: "server.offload_mode",
        message: format!(
            "`{}` is not an offload mode SGLang knows ({}): `utils/offloader.py: _BaseParamOffloader.create` raises KeyError: '{}' while the model is built",
            a.mode,
            OffloadMode::CHOICES,
            a.mode
        ),
    })?;
    if matches!(mode, OffloadMode::ShmCpu | OffloadMode::ShardedGpu) && tp_size != 1 {
        return Err(OffloadArgError {
            field: "server.offload_mode",
            message: format!(
                "--offload-mode {} needs --tp-size 1 (this is TP{tp_size}): `OffloaderV2.__init__` asserts `not yet support tp_size!=1`",
                mode.id()
            ),
        });
    }
    if a.num_in_group < 1 {
        return Err(OffloadArgError {
            field: "server.offload_num_in_group",
            message: format!(
                "--offload-num-in-group {} offloads no layer: `OffloaderV2.post_init` then raises IndexError (list index out of range) prefetching `offloaders[0]`; give 1 or more",
                a.num_in_group
            ),
        });
    }
    if a.prefetch_step < 1 {
        return Err(OffloadArgError {
            field: "server.offload_prefetch_step",
            message: format!(
                "--offload-prefetch-step {} onloads nothing ahead: the first offloaded layer's forward asserts `self._device_tensors is not None` (`_ModuleOffloader.wait_and_get_device_tensors`); give 1 or more",
                a.prefetch_step
            ),
        });
    }
    Ok(Offloader::V2 {
        group_size: a.group_size,
        num_in_group: a.num_in_group,
        prefetch_step: a.prefetch_step,
        mode,
    })
}

/// The module indices (within the PP stage, from 0) OffloaderV2 offloads out of `layers`:
/// `module_index % G >= G - N` (`utils/offloader.py: OffloaderV2.wrap_modules`,
/// 0.5.14–0.5.23), the last N of each group of G.
pub fn v2_offloaded_indices(layers: u32, group_size: i64, num_in_group: i64) -> Vec<u32> {
    (0..layers)
        .filter(|&i| (i as i64) % group_size >= group_size - num_in_group)
        .collect()
}

pub use crate::release::CpuOffloadResident;

/// Architectures whose decoder layers `DeepseekV2Model` builds with the offloader's
/// `submodule_accessor` and `whitelist_param_names_creator` (`models/deepseek_v2.py:
/// DeepseekV2Model.__init__`, `make_layers(..., offloader_kwargs=...)`, 0.5.14–0.5.23):
/// `DeepseekV2/V3/V32ForCausalLM`, `GlmMoeDsaForCausalLM` (`glm4_moe.py`, a subclass),
/// `MistralLarge3ForCausalLM`, `KimiK25ForConditionalGeneration` (its language model is a
/// `DeepseekV3ForCausalLM`). Every other model calls `make_layers` without them.
pub const DEEPSEEK_V2_FAMILY: &[&str] = &[
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "GlmMoeDsaForCausalLM",
    "MistralLarge3ForCausalLM",
    "KimiK25ForConditionalGeneration",
];

/// SGLang's error when OffloaderV2 reaches its first offloaded layer of a model outside
/// [`DEEPSEEK_V2_FAMILY`]: `submodule_accessor` is `None`, and `wrap_modules` calls it.
pub const V2_TYPE_ERROR: &str = "'NoneType' object is not callable";

/// The decoder layers of a DeepSeek-V2-family checkpoint, as `DeepseekV2DecoderLayer`
/// builds them (from the text config).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeepseekLayers {
    pub architecture: String,
    pub hidden: u64,
    pub heads: u64,
    pub q_lora_rank: Option<u64>,
    pub kv_lora_rank: u64,
    pub qk_nope_head_dim: u64,
    pub qk_rope_head_dim: u64,
    pub v_head_dim: u64,
    /// DSA indexer `(index_n_heads, index_head_dim)`.
    pub indexer: Option<(u64, u64)>,
    /// Layers that build their own indexer (`configs/model_config.py:
    /// dsa_layer_skips_topk`: `indexer_types[l] == "shared"` skips).
    pub indexer_layers: Vec<bool>,
    /// `DeepseekV2DecoderLayer._is_layer_sparse`: `l >= first_k_dense_replace` and
    /// `l % moe_layer_freq == 0`.
    pub moe_layers: Vec<bool>,
    pub routed_experts: u64,
    pub shared_experts: u64,
    pub moe_intermediate: u64,
    pub intermediate: u64,
    /// `MoEGate.weight` in fp32 (`moe_router_dtype: float32`), else the model dtype.
    pub router_fp32: bool,
    /// `MoEGate.e_score_correction_bias` (`topk_method: noaux_tc`), fp32.
    pub correction_bias: bool,
}

impl DeepseekLayers {
    /// The layers of `arch` from its text config; `None` outside [`DEEPSEEK_V2_FAMILY`].
    pub fn from_config(text: &Value, arch: &str, layers: u32) -> Option<Self> {
        if !DEEPSEEK_V2_FAMILY.contains(&arch) {
            return None;
        }
        let g = |k: &str| text.get(k).and_then(Value::as_u64);
        let experts = g("n_routed_experts").unwrap_or(0);
        let first_dense = g("first_k_dense_replace").unwrap_or(0);
        let freq = g("moe_layer_freq").unwrap_or(1).max(1);
        let types = text.get("indexer_types").and_then(Value::as_array);
        let indexer = match (g("index_n_heads"), g("index_head_dim"), g("index_topk")) {
            (Some(n), Some(d), Some(_)) => Some((n, d)),
            _ => None,
        };
        let nope = g("qk_nope_head_dim").unwrap_or(0);
        Some(DeepseekLayers {
            architecture: arch.to_string(),
            hidden: g("hidden_size").unwrap_or(0),
            heads: g("num_attention_heads").unwrap_or(0),
            q_lora_rank: g("q_lora_rank"),
            kv_lora_rank: g("kv_lora_rank").unwrap_or(0),
            qk_nope_head_dim: nope,
            qk_rope_head_dim: g("qk_rope_head_dim").unwrap_or(0),
            v_head_dim: g("v_head_dim").unwrap_or(nope),
            indexer,
            indexer_layers: (0..layers as usize)
                .map(|l| {
                    indexer.is_some()
                        && types
                            .and_then(|t| t.get(l))
                            .and_then(Value::as_str)
                            .is_none_or(|t| t != "shared")
                })
                .collect(),
            moe_layers: (0..layers as u64)
                .map(|l| experts > 0 && l >= first_dense && l % freq == 0)
                .collect(),
            routed_experts: experts,
            shared_experts: g("n_shared_experts").unwrap_or(0),
            moe_intermediate: g("moe_intermediate_size").unwrap_or(0),
            intermediate: g("intermediate_size").unwrap_or(0),
            router_fp32: text.get("moe_router_dtype").and_then(Value::as_str) == Some("float32"),
            correction_bias: text.get("topk_method").and_then(Value::as_str) == Some("noaux_tc"),
        })
    }

    /// Shared experts fused into the routed `FusedMoE` as extra experts
    /// (`models/deepseek_v2.py: determine_num_fused_shared_experts` 0.5.14–0.5.22,
    /// `shared_experts_fusion_disable_reason` + `layers/moe/utils.py:
    /// resolve_shared_experts_config` 0.5.23): `n_shared_experts` when the architecture
    /// is the class's `fused_shared_experts_architecture` (`DeepseekV3ForCausalLM`;
    /// `GlmMoeDsaForCausalLM` for GLM-5), 256 routed experts and 1 shared, CUDA SM 8.0+,
    /// EP 1, not W4AFP8, and `--disable-shared-experts-fusion` not given; else 0. Not
    /// modelled: the 384-expert Quark path, SBO/TBO and DeepEP (all off by default),
    /// `--enforce-shared-experts-fusion`.
    pub fn fused_shared_experts(
        &self,
        sm_major: Option<u32>,
        format: WeightFormat,
        disabled: bool,
    ) -> u64 {
        let arch_ok = matches!(
            self.architecture.as_str(),
            "DeepseekV3ForCausalLM" | "GlmMoeDsaForCausalLM"
        );
        if !disabled
            && arch_ok
            && self.routed_experts == 256
            && self.shared_experts == 1
            && sm_major.is_some_and(|s| s >= 8)
            && format != WeightFormat::W4aFp8
        {
            self.shared_experts
        } else {
            0
        }
    }

    /// Per rank: the `FusedMoE` of a MoE layer's `w13_weight` (`[E, 2·I, H]`) and
    /// `w2_weight` (`[E, H, I]`) bytes, with `E` the routed experts plus `fused` shared
    /// ones and `I = moe_intermediate_size / tp` (EP 1:
    /// `layers/quantization/fp8.py: Fp8MoEMethod.create_fp8_moe_weight_`,
    /// `unquant.py: UnquantizedFusedMoEMethod.create_weights`; no padding on CUDA).
    fn expert_weights(&self, tp: u64, fused: u64, elem: u64) -> (u64, u64) {
        let e = self.routed_experts + fused;
        let i = self.moe_intermediate / tp.max(1);
        (e * 2 * i * self.hidden * elem, e * self.hidden * i * elem)
    }
}

/// Bytes per element of a `FusedMoE`'s `w13_weight` / `w2_weight` for `format`: bf16 2,
/// fp8 1. `None`: a format whose expert tensors are not modelled here (packed 4-bit,
/// int8, W4AFP8: other MoE methods, other parameter names).
pub fn expert_elem_bytes(format: WeightFormat) -> Option<u64> {
    match format {
        WeightFormat::Bf16 => Some(2),
        WeightFormat::Fp8Block | WeightFormat::Fp8PerTensor => Some(1),
        _ => None,
    }
}

/// What the offload does to one rank, before the device pool is sized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OffloadFigures {
    /// `v1` (`--cpu-offload-gb`) or `v2` (`--offload-group-size`).
    pub offloader: &'static str,
    pub mode: OffloadMode,
    /// Layers (global ids) whose parameters moved, in order.
    pub layers: Vec<u32>,
    /// Parameters moved to the host.
    pub tensors: u64,
    /// Their bytes (`numel × element_size`).
    pub host_logical_bytes: u64,
    /// What they pin ([`pinned_size`] per tensor); 0 for the `meta` mode.
    pub host_pinned_bytes: u64,
    /// The GPU copies dropped (`host_logical_bytes`).
    pub gpu_offloaded_bytes: u64,
    /// Bytes V2's `post_init` onloads back before `Load weight end` (the first
    /// `--offload-prefetch-step` offloaded modules); 0 for V1.
    pub gpu_prefetched_bytes: u64,
}

impl OffloadFigures {
    /// What the device pool gains: offloaded less prefetched.
    pub fn gpu_freed_bytes(&self) -> u64 {
        self.gpu_offloaded_bytes - self.gpu_prefetched_bytes
    }
}

/// Why a modelled offload cannot start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffloadFailure {
    /// Bad for every rank, found from the arguments and the layer count (a `server.`
    /// field): SGLang raises before any pool is sized.
    Args(OffloadArgError),
}

/// OffloaderV2 on one rank of a PP-1 DeepSeek-V2-family model (`mode` `cpu` or `meta`):
/// the MoE layers among [`v2_offloaded_indices`] move `w13_weight` and `w2_weight` (the
/// `whitelist_param_names_creator` of `DeepseekV2Model`; an offloaded dense layer takes
/// a slot and moves nothing; block scales, attention, router and an unfused shared
/// expert stay), then `OffloaderV2.post_init` (`utils/offloader.py`, run by
/// `model_runner.py: load_model` before `Load weight end … avail mem=`) onloads the
/// first `prefetch_step` slots again: those copies are live when the free memory is
/// measured. A `prefetch_step` beyond the slots is SGLang's `IndexError`.
pub fn v2_figures(
    d: &DeepseekLayers,
    layout: &ParallelLayout,
    fused: u64,
    elem: u64,
    group_size: i64,
    num_in_group: i64,
    prefetch_step: i64,
    mode: OffloadMode,
) -> Result<OffloadFigures, OffloadArgError> {
    let slots = v2_offloaded_indices(d.moe_layers.len() as u32, group_size, num_in_group);
    if prefetch_step as u64 > slots.len() as u64 {
        return Err(OffloadArgError {
            field: "server.offload_prefetch_step",
            message: format!(
                "--offload-prefetch-step {prefetch_step} is more than the {} layers offloaded: `OffloaderV2.post_init` raises IndexError (list index out of range)",
                slots.len()
            ),
        });
    }
    let (w13, w2) = d.expert_weights(layout.tp_size as u64, fused, elem);
    let moves = |l: u32| d.moe_layers[l as usize];
    let moved: Vec<u32> = slots.iter().copied().filter(|&l| moves(l)).collect();
    let n = moved.len() as u64;
    let logical = n * (w13 + w2);
    let prefetched = slots
        .iter()
        .take(prefetch_step as usize)
        .filter(|&&l| moves(l))
        .count() as u64
        * (w13 + w2);
    Ok(OffloadFigures {
        offloader: "v2",
        mode,
        layers: moved,
        tensors: 2 * n,
        host_logical_bytes: logical,
        host_pinned_bytes: match mode {
            OffloadMode::Meta => 0,
            _ => n * (pinned_size(w13) + pinned_size(w2)),
        },
        gpu_offloaded_bytes: logical,
        gpu_prefetched_bytes: prefetched,
    })
}

/// One parameter of a decoder layer: its bytes, and whether it is MLA's `kv_b_proj`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Param {
    pub(crate) bytes: u64,
    pub(crate) kv_b: bool,
}

/// A linear layer's parameters `[out, in]` in `format`: the weight, then (fp8 block) its
/// `weight_scale_inv` of `⌈out/128⌉ × ⌈in/128⌉` fp32 (`layers/quantization/fp8.py:
/// Fp8LinearMethod.create_weights`).
pub(crate) fn linear(out: u64, inp: u64, format: WeightFormat, kv_b: bool, to: &mut Vec<Param>) {
    let (w, scale) = match format {
        WeightFormat::Fp8Block => (out * inp, out.div_ceil(128) * inp.div_ceil(128) * 4),
        WeightFormat::Fp8PerTensor => (out * inp, 4),
        _ => (2 * out * inp, 0),
    };
    to.push(Param { bytes: w, kv_b });
    if scale > 0 {
        to.push(Param { bytes: scale, kv_b });
    }
}

/// The parameters of decoder layer `l` on one rank in `module.parameters()` order
/// (`models/deepseek_v2.py`, 0.5.23's registration order, the same modules in
/// 0.5.14–0.5.22): `self_attn` (`DeepseekV2AttentionMLA`: `fused_qkv_a_proj_with_mqa`
/// replicated, `q_a_layernorm`, `q_b_proj` — or `q_proj` and `kv_a_proj_with_mqa` —, the
/// DSA `indexer`'s replicated `wq_b`, `wk`, bf16 `weights_proj` and fp32 `k_norm`,
/// `kv_b_proj`, `o_proj`, `kv_a_layernorm`), `mlp` (`DeepseekV2MoE`: the router `gate`
/// and its correction bias, the experts' `w13_weight`, `w2_weight` and their fp8 block
/// scales, an unfused `shared_experts` MLP; or the dense `DeepseekV2MLP`), then the two
/// RMSNorms. Attention over the attention-TP group, MLPs over TP (EP 1). Every linear is
/// in the checkpoint's format (a `modules_to_not_convert` list is not applied).
fn layer_params(
    d: &DeepseekLayers,
    l: usize,
    layout: &ParallelLayout,
    format: WeightFormat,
    fused: u64,
) -> Vec<Param> {
    let a = layout.attn_tp_size().max(1);
    let tp = layout.tp_size.max(1) as u64;
    let h = d.hidden;
    let qk = d.qk_nope_head_dim + d.qk_rope_head_dim;
    let heads = d.heads / a;
    let norm = |n: u64, to: &mut Vec<Param>| {
        to.push(Param {
            bytes: 2 * n,
            kv_b: false,
        })
    };
    let mut p = Vec::new();
    match d.q_lora_rank {
        Some(r) => {
            linear(
                r + d.kv_lora_rank + d.qk_rope_head_dim,
                h,
                format,
                false,
                &mut p,
            );
            norm(r, &mut p);
            linear(heads * qk, r, format, false, &mut p);
        }
        None => {
            linear(heads * qk, h, format, false, &mut p);
            linear(
                d.kv_lora_rank + d.qk_rope_head_dim,
                h,
                format,
                false,
                &mut p,
            );
        }
    }
    if let (Some((n, dim)), true) = (d.indexer, d.indexer_layers[l]) {
        let q_in = d.q_lora_rank.unwrap_or(h);
        linear(n * dim, q_in, format, false, &mut p);
        linear(dim, h, format, false, &mut p);
        linear(n, h, WeightFormat::Bf16, false, &mut p);
        // LayerNorm weight and bias, fp32.
        p.push(Param {
            bytes: 4 * dim,
            kv_b: false,
        });
        p.push(Param {
            bytes: 4 * dim,
            kv_b: false,
        });
    }
    linear(
        heads * (d.qk_nope_head_dim + d.v_head_dim),
        d.kv_lora_rank,
        format,
        true,
        &mut p,
    );
    linear(h, heads * d.v_head_dim, format, false, &mut p);
    norm(d.kv_lora_rank, &mut p);
    if d.moe_layers[l] {
        let e = d.routed_experts;
        let router = if d.router_fp32 { 4 } else { 2 };
        p.push(Param {
            bytes: router * e * h,
            kv_b: false,
        });
        if d.correction_bias {
            p.push(Param {
                bytes: 4 * e,
                kv_b: false,
            });
        }
        let elem = expert_elem_bytes(format).unwrap_or(2);
        let (w13, w2) = d.expert_weights(tp, fused, elem);
        p.push(Param {
            bytes: w13,
            kv_b: false,
        });
        p.push(Param {
            bytes: w2,
            kv_b: false,
        });
        if format == WeightFormat::Fp8Block {
            let (el, i) = (e + fused, d.moe_intermediate / tp);
            p.push(Param {
                bytes: el * (2 * i).div_ceil(128) * h.div_ceil(128) * 4,
                kv_b: false,
            });
            p.push(Param {
                bytes: el * h.div_ceil(128) * i.div_ceil(128) * 4,
                kv_b: false,
            });
        }
        if fused == 0 && d.shared_experts > 0 {
            let is = d.shared_experts * d.moe_intermediate / tp;
            linear(2 * is, h, format, false, &mut p);
            linear(h, is, format, false, &mut p);
        }
    } else {
        let i = d.intermediate / tp;
        linear(2 * i, h, format, false, &mut p);
        linear(h, i, format, false, &mut p);
    }
    norm(h, &mut p);
    norm(h, &mut p);
    p
}

/// OffloaderV1 on one rank of a PP-1 DeepSeek-V2-family model
/// (`utils/offloader.py: OffloaderV1.maybe_offload_to_cpu`, 0.5.14–0.5.23): see
/// [`v1_walk`], over `DeepseekV2DecoderLayer`'s parameters.
pub fn v1_figures(
    d: &DeepseekLayers,
    layout: &ParallelLayout,
    format: WeightFormat,
    fused: u64,
    max_bytes: u64,
    resident: CpuOffloadResident,
) -> OffloadFigures {
    v1_walk(
        (0..d.moe_layers.len()).map(|l| layer_params(d, l, layout, format, fused)),
        max_bytes,
        resident,
    )
}

/// OffloaderV1 over a stage's decoder layers, each given as its parameters in
/// `module.parameters()` order (`utils/offloader.py: OffloaderV1.maybe_offload_to_cpu`,
/// 0.5.14–0.5.23, called by `utils/common.py: make_layers` for every layer it builds):
/// layer by layer from the first, every parameter in order (those `resident` keeps
/// skipped) while fewer than `max_bytes` are offloaded — the check comes before each
/// parameter, so the budget is overshot by at most one — each into its own pinned
/// tensor. No prefetch: the GPU keeps none of them at `Load weight end`, and the GPU
/// gains each one's bytes plus, for a tensor above 1 MiB, the 1 MiB of allocator rounding
/// the load charges it ([`V1_ROUNDING_PER_LARGE_TENSOR`]).
pub(crate) fn v1_walk(
    layers: impl Iterator<Item = Vec<Param>>,
    max_bytes: u64,
    resident: CpuOffloadResident,
) -> OffloadFigures {
    let mut f = OffloadFigures {
        offloader: "v1",
        mode: OffloadMode::Cpu,
        layers: Vec::new(),
        tensors: 0,
        host_logical_bytes: 0,
        host_pinned_bytes: 0,
        gpu_offloaded_bytes: 0,
        gpu_prefetched_bytes: 0,
    };
    'layers: for (l, params) in layers.enumerate() {
        if f.host_logical_bytes >= max_bytes {
            break;
        }
        let mut moved = false;
        for p in params {
            if p.kv_b && resident == CpuOffloadResident::MlaKvB {
                continue;
            }
            if f.host_logical_bytes >= max_bytes {
                if moved {
                    f.layers.push(l as u32);
                }
                break 'layers;
            }
            f.host_logical_bytes += p.bytes;
            f.host_pinned_bytes += pinned_size(p.bytes);
            f.tensors += 1;
            if p.bytes > 1 << 20 {
                f.gpu_offloaded_bytes += V1_ROUNDING_PER_LARGE_TENSOR;
            }
            moved = true;
        }
        if moved {
            f.layers.push(l as u32);
        }
    }
    f.gpu_offloaded_bytes += f.host_logical_bytes;
    f
}

/// The device memory the load charges a tensor above 1 MiB beyond its bytes
/// ([`super::LOAD_BYTES_PER_LAYER`]: the caching allocator's 2 MiB rounding, 1 MiB on
/// average, four such tensors a layer), which leaves the GPU with the tensor when
/// OffloaderV1 moves it: V1 moves each parameter as the layer is built (`p.data =
/// cpu_data`), so its block is free when `load_model`'s `empty_cache` runs. (V2 moves
/// experts after the load; its figures count their bytes only.)
pub const V1_ROUNDING_PER_LARGE_TENSOR: u64 = super::LOAD_BYTES_PER_LAYER / 4;

/// What a scenario's offload flags do at start-up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OffloadEffect {
    /// No offloader (`NoopOffloader`).
    #[default]
    Off,
    /// Modelled: the same figures on every rank.
    Modelled(OffloadFigures),
    /// Every rank raises while its model is built, before the weights are read: SGLang's
    /// exception class and message.
    Fails {
        error: &'static str,
        message: String,
    },
    /// Asked for but not modelled: what is left out (a warning in the notes).
    NotModelled(String),
}

impl OffloadEffect {
    /// The modelled figures, if any.
    pub fn figures(&self) -> Option<&OffloadFigures> {
        match self {
            OffloadEffect::Modelled(f) => Some(f),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pinned_sizes_round_up_to_a_power_of_two() {
        assert_eq!(pinned_size(0), 0);
        assert_eq!(pinned_size(1), 1);
        assert_eq!(pinned_size(4096), 4096);
        assert_eq!(pinned_size(4097), 8192);
        // GLM-5.2-FP8 TP8: w13 808,452,096 B → 1 GiB, w2 404,226,048 B → 512 MiB.
        assert_eq!(pinned_size(808_452_096), 1 << 30);
        assert_eq!(pinned_size(404_226_048), 1 << 29);
    }

    #[test]
    fn selection_and_the_arguments_sglang_cannot_start_with() {
        let a = |gb, g, n, p, mode| OffloadArgs {
            cpu_offload_gb: gb,
            group_size: g,
            num_in_group: n,
            prefetch_step: p,
            mode,
        };
        assert_eq!(offloader(&a(0, -1, 1, 1, "cpu"), 8), Ok(Offloader::Noop));
        // V1 first: 3 GiB = 3,221,225,472 B, the V2 flags ignored.
        assert_eq!(
            offloader(&a(3, 5, 2, 1, "nope"), 8),
            Ok(Offloader::V1 {
                max_bytes: 3_221_225_472
            })
        );
        // A negative budget is no offload (`cpu_offload_gb > 0` fails).
        assert_eq!(offloader(&a(-2, -1, 1, 1, "cpu"), 8), Ok(Offloader::Noop));
        let e = offloader(&a(0, 5, 2, 1, "gpu"), 8).unwrap_err();
        assert_eq!(e.field, "server.offload_mode");
        assert!(e.message.contains("KeyError: 'gpu'"), "{}", e.message);
        let e = offloader(&a(0, 5, 2, 1, "shm_cpu"), 8).unwrap_err();
        assert_eq!(e.field, "server.offload_mode");
        assert!(e.message.contains("this is TP8"), "{}", e.message);
        assert!(offloader(&a(0, 5, 2, 1, "shm_cpu"), 1).is_ok());
        assert_eq!(
            offloader(&a(0, 5, 0, 1, "cpu"), 8).unwrap_err().field,
            "server.offload_num_in_group"
        );
        assert_eq!(
            offloader(&a(0, 5, 2, 0, "cpu"), 8).unwrap_err().field,
            "server.offload_prefetch_step"
        );
        // N > G offloads every layer (no error in SGLang).
        assert_eq!(v2_offloaded_indices(4, 2, 3), vec![0, 1, 2, 3]);
        assert_eq!(v2_offloaded_indices(12, 5, 2), vec![3, 4, 8, 9]);
    }

    /// A two-layer MLA model (one dense, one MoE) whose parameters are easy to count.
    fn tiny() -> DeepseekLayers {
        let c = json!({"hidden_size": 256, "num_attention_heads": 2, "kv_lora_rank": 128,
            "qk_nope_head_dim": 64, "qk_rope_head_dim": 64, "v_head_dim": 64,
            "n_routed_experts": 4, "n_shared_experts": 1, "moe_intermediate_size": 128,
            "intermediate_size": 512, "first_k_dense_replace": 1});
        DeepseekLayers::from_config(&c, "DeepseekV2ForCausalLM", 2).unwrap()
    }

    /// bf16, TP1, no q_lora. Layer 0 (dense), in order: q_proj (2 heads × 128) × 256 × 2 B
    /// = 131,072; kv_a_proj_with_mqa 192 × 256 × 2 = 98,304; kv_b_proj (2 × 128) × 128 × 2
    /// = 65,536; o_proj 256 × 128 × 2 = 65,536; kv_a_layernorm 128 × 2 = 256; gate_up_proj
    /// 1024 × 256 × 2 = 524,288; down_proj 256 × 512 × 2 = 262,144; two norms of 512.
    #[test]
    fn v1_takes_whole_parameters_in_order_and_keeps_kv_b_from_0_5_21() {
        let d = tiny();
        let tp1 = ParallelLayout::tp(1);
        let layer0: u64 = 131_072 + 98_304 + 65_536 + 65_536 + 256 + 524_288 + 262_144 + 1024;
        let p: Vec<u64> = layer_params(&d, 0, &tp1, WeightFormat::Bf16, 0)
            .iter()
            .map(|p| p.bytes)
            .collect();
        assert_eq!(
            p,
            [
                131_072, 98_304, 65_536, 65_536, 256, 524_288, 262_144, 512, 512
            ]
        );
        assert_eq!(p.iter().sum::<u64>(), layer0);
        // A budget of 200,000 B: q_proj (131,072), then kv_a (98,304) is taken because
        // 131,072 < 200,000: 229,376 B, one parameter over.
        let f = v1_figures(
            &d,
            &tp1,
            WeightFormat::Bf16,
            0,
            200_000,
            CpuOffloadResident::Nothing,
        );
        assert_eq!(f.host_logical_bytes, 229_376);
        assert_eq!(f.tensors, 2);
        assert_eq!(f.layers, vec![0]);
        // Pinned: 131,072 = 2^17 as is; 98,304 → 131,072.
        assert_eq!(f.host_pinned_bytes, 262_144);
        assert_eq!(f.gpu_freed_bytes(), 229_376);
        // 0.5.21+: with a budget of 300,000 the kv_b_proj (65,536) stays: q_proj, kv_a,
        // o_proj = 294,912 < 300,000, then kv_a_layernorm (256): 295,168, then gate_up
        // (524,288): 819,456.
        let f = v1_figures(
            &d,
            &tp1,
            WeightFormat::Bf16,
            0,
            300_000,
            CpuOffloadResident::MlaKvB,
        );
        assert_eq!(f.host_logical_bytes, 819_456);
        let f = v1_figures(
            &d,
            &tp1,
            WeightFormat::Bf16,
            0,
            300_000,
            CpuOffloadResident::Nothing,
        );
        // Before: kv_b_proj counts: 131,072 + 98,304 + 65,536 = 294,912, + o_proj 65,536
        // = 360,448.
        assert_eq!(f.host_logical_bytes, 360_448);
    }
}
