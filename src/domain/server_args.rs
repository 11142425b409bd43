//! SGLang's server arguments, under SGLang's own (underscored) names, as far as they
//! matter to HiCache sizing and runtime. Defaults are SGLang's (`server_args.py`,
//! `arg_groups/fields/memory.py`) unless a comment says otherwise. Choices are typed
//! ([`super::choices`]); a scenario field holding something SGLang does not spell is an
//! "invalid choice" naming the nearest spelling.

use serde::{Deserialize, Serialize};

use super::choices::{
    DisaggregationMode, EvictionPolicy, HostMemoryMode, IoBackend, KvCacheDtype, MemLayout,
    PrefetchPolicy, SpecAlgorithm, SpeculativeAlgorithm, StorageBackend, WritePolicy, flag,
    flag_opt,
};

/// The `server:` section of a scenario: SGLang flags with dashes turned to underscores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerArgs {
    /// A pasted SGLang launch command; its flags fill the fields not given explicitly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<String>,
    /// `--model-path`; informational (the model geometry comes from `model:`).
    pub model_path: Option<String>,
    /// `--tp-size` / `--tp`.
    pub tp_size: u32,
    /// `--pp-size`.
    pub pp_size: u32,
    /// `--dp-size` / `--dp`.
    pub dp_size: u32,
    /// `--enable-dp-attention`.
    pub enable_dp_attention: bool,
    /// `--nnodes`.
    pub nnodes: u32,
    /// `--page-size`. SGLang's default resolves to 1; HiCache recipes use 64.
    pub page_size: u32,
    /// `--mem-fraction-static`; `None` = the release's default, computed as SGLang does
    /// from the node's nvidia-smi total, TP, DP attention and CUDA-graph settings
    /// ([`crate::pools::resolve_mem_fraction`]).
    pub mem_fraction_static: Option<f64>,
    /// `--max-total-tokens`: caps the device KV pool; set it to `max_total_num_tokens`
    /// from your server log to use the real device pool size.
    pub max_total_tokens: Option<u64>,
    /// `--kv-cache-dtype` (`auto`, `bf16`, `fp8_e4m3`, `fp8_e5m2`, …).
    #[serde(deserialize_with = "KvCacheDtype::deserialize_field")]
    pub kv_cache_dtype: KvCacheDtype,
    /// `--enable-hierarchical-cache`. `None` only matters for `auto-hicache` (V5: unset
    /// means "auto"); every other version treats it as off.
    pub enable_hierarchical_cache: Option<bool>,
    /// `--hicache-ratio` (host tokens = device tokens × ratio). `None` = SGLang resolves
    /// the default (2.0 cache mode, 1.2 buffer_only).
    pub hicache_ratio: Option<f64>,
    /// `--hicache-size` in GB (10^9 bytes) per rank per pool; 0 = unset.
    pub hicache_size: f64,
    /// `--hicache-host-memory-fraction` (#40135, default 0.8): applies only when neither a
    /// ratio nor a size is given.
    pub hicache_host_memory_fraction: Option<f64>,
    /// `--hicache-write-policy`.
    #[serde(deserialize_with = "flag")]
    pub hicache_write_policy: WritePolicy,
    /// `--hicache-host-memory-mode`: `cache` or `buffer_only`.
    #[serde(deserialize_with = "flag")]
    pub hicache_host_memory_mode: HostMemoryMode,
    /// `--hicache-io-backend`.
    #[serde(deserialize_with = "flag")]
    pub hicache_io_backend: IoBackend,
    /// `--hicache-mem-layout`.
    #[serde(deserialize_with = "flag")]
    pub hicache_mem_layout: MemLayout,
    /// `--hicache-storage-backend` (L3); `None` = no L3. The release's own list is
    /// checked by `release::check_server`.
    #[serde(deserialize_with = "flag_opt")]
    pub hicache_storage_backend: Option<StorageBackend>,
    /// `--hicache-storage-prefetch-policy`.
    #[serde(deserialize_with = "flag")]
    pub hicache_storage_prefetch_policy: PrefetchPolicy,
    /// `--radix-eviction-policy`. The release's own list is checked by
    /// `release::check_server`.
    #[serde(deserialize_with = "flag")]
    pub radix_eviction_policy: EvictionPolicy,
    /// `--disable-radix-cache` (mutually exclusive with HiCache).
    pub disable_radix_cache: bool,
    /// `--max-running-requests`.
    pub max_running_requests: Option<u32>,
    /// `--chunked-prefill-size` (SGLang's `int`: `-1`, or any value ≤ 0, disables
    /// chunked prefill, as `model_executor/pool_configurator.py` reads it,
    /// `chunked_prefill_size is None or chunked_prefill_size <= 0`; the flag's type in
    /// every release 0.5.14–0.5.23, `src/flags/sglang_flags.json`).
    pub chunked_prefill_size: Option<i64>,
    /// `--max-prefill-tokens`.
    pub max_prefill_tokens: u32,
    /// `--schedule-conservativeness` (SGLang's default 1.0 when unset): it scales the
    /// decode reserve of the running requests at admission (`new_token_ratio_tracker.py:
    /// NewTokenRatioTracker`, 0.5.14–0.5.23),
    /// which the timed replay models (`runtime.replay.schedule_conservativeness`, which
    /// wins when the scenario gives both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_conservativeness: Option<f64>,
    /// `--schedule-policy` (SGLang's default `fcfs` when unset), as written: a timed
    /// replay runs `fcfs` and `lpm` (`runtime::SchedulePolicy`) and names the others;
    /// SGLang's scheduler refuses `priority`, and `shortest-prefill-first` with the
    /// radix cache off (`scenario::launch_schedule::policy_refusal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_policy: Option<String>,
    /// `--speculative-algorithm` (`EAGLE`, `NEXTN` = EAGLE with the model's own MTP
    /// layers, `EAGLE3`, `STANDALONE`, `NGRAM`, …). Only NextN/EAGLE MTP drafts of a
    /// model with MTP layers change the host pools here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative_algorithm: Option<SpeculativeAlgorithm>,
    /// `--speculative-draft-model-path` (an MTP draft is the target's own layers: unset,
    /// or the same path as `--model-path`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative_draft_model_path: Option<String>,
    /// `--speculative-num-steps` (informational: the draft KV per token does not depend
    /// on it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative_num_steps: Option<u32>,
    /// `--speculative-eagle-topk` (informational).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative_eagle_topk: Option<u32>,
    /// `--speculative-num-draft-tokens` (informational).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative_num_draft_tokens: Option<u32>,
    /// `--swa-full-tokens-ratio`: SWA pool tokens / full pool tokens (SGLang's default
    /// 0.8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swa_full_tokens_ratio: Option<f64>,
    /// `--mamba-full-memory-ratio`: Mamba state memory / KV memory (SGLang's default 0.9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mamba_full_memory_ratio: Option<f64>,
    /// `--max-mamba-cache-size`: the device state pool's slots, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_mamba_cache_size: Option<u64>,
    /// `--cpu-offload-gb` (an `int`, GiB per rank: OffloaderV1 takes
    /// `cpu_offload_gb × 1024³` bytes of decoder-layer parameters; 0 or less: off).
    #[serde(skip_serializing_if = "is_zero")]
    pub cpu_offload_gb: i64,
    /// `--offload-group-size` (OffloaderV2; -1 or less: off).
    #[serde(skip_serializing_if = "is_minus_one")]
    pub offload_group_size: i64,
    /// `--offload-num-in-group`: the last N layers of each group are offloaded.
    #[serde(skip_serializing_if = "is_one")]
    pub offload_num_in_group: i64,
    /// `--offload-prefetch-step`: offloaded layers onloaded ahead.
    #[serde(skip_serializing_if = "is_one")]
    pub offload_prefetch_step: i64,
    /// `--offload-mode` (`cpu`, `meta`, `shm_cpu`, `sharded_gpu`; no argparse choices).
    #[serde(skip_serializing_if = "is_cpu")]
    pub offload_mode: String,
    /// `--disable-shared-experts-fusion` (the offloaded experts of a DeepSeek-V3 / GLM-5
    /// layer include the fused shared expert unless given).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disable_shared_experts_fusion: bool,
    /// `--cuda-graph-max-bs` (`--cuda-graph-max-bs-decode`): the decode graph's largest batch, which the default
    /// `--mem-fraction-static` reserves for (`max_bs × 2` MiB; with DP attention more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_graph_max_bs_decode: Option<u32>,
    /// `--disable-cuda-graph`: no graph reserve in the default fraction.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disable_cuda_graph: bool,
    /// `--moe-a2a-backend` (`none`, `deepep`, …; no argparse choices here, SGLang's
    /// parser checks them): DeepEP's buffers are reserved in the default fraction
    /// (0.5.15+).
    #[serde(skip_serializing_if = "is_none_backend")]
    pub moe_a2a_backend: String,
    /// `--enable-multimodal` (None: SGLang's per-architecture default,
    /// `model::multimodal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_multimodal: Option<bool>,
    /// `--language-only`: a language-only worker of an encoder-disaggregated server (no
    /// vision headroom in the default fraction).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub language_only: bool,
    /// `--language-model-only` (0.5.18+): the language model served alone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub language_model_only: bool,
    /// `--attention-backend` (None: the release's default for the model and GPU). Read
    /// for ROCm's `aiter` fraction scaling only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attention_backend: Option<String>,
    /// `--load-balance-method` (None: `auto`, which is `round_robin` outside PD prefill:
    /// `arg_groups/serving_hook.py: handle_load_balance_method`). The replay's
    /// data-parallel ranks model `round_robin`, and in the timed replay
    /// `total_requests` and `total_tokens` ([`crate::runtime::dp`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balance_method: Option<String>,
    /// `--disaggregation-mode`: `null` (a colocated engine), `prefill` or `decode` (one
    /// side of a PD deployment).
    #[serde(
        deserialize_with = "flag",
        skip_serializing_if = "DisaggregationMode::is_null"
    )]
    pub disaggregation_mode: DisaggregationMode,
    /// `--disaggregation-decode-enable-radix-cache`: a decode server keeps its radix
    /// cache (off by default: `pd_disaggregation_hook.py: handle_pd_disaggregation`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disaggregation_decode_enable_radix_cache: bool,
    /// `--hicache-write-back-threshold` of sglang PR 40576 (open, in no release): taken
    /// only under `sglang: pr40576` (None: that what-if's default,
    /// [`crate::release::proposal::DEFAULT_WRITE_BACK_THRESHOLD`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hicache_write_back_threshold: Option<f64>,
    /// SGLang environment variables the simulator models (`server.env`; a launch
    /// command's environment fills it). Not a flag: SGLang reads them from its
    /// environment (`environ.py`).
    #[serde(skip_serializing_if = "SglangEnv::is_default")]
    pub env: SglangEnv,
}

/// The SGLang environment variables that change what the simulator computes, under
/// their own names (`server.env.SGLANG_…`). Others that move memory are named as not
/// modelled (`scenario::launch_env`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SglangEnv {
    /// `SGLANG_DSV4_COMPRESS_STATE_DTYPE` (`float32` unset): the dtype of DeepSeek-V4's
    /// compress-state rings (`pool_configurator.py: _get_dsv4_compress_state_dtype_sizes`,
    /// 0.5.14–0.5.23).
    #[serde(
        rename = "SGLANG_DSV4_COMPRESS_STATE_DTYPE",
        skip_serializing_if = "Option::is_none"
    )]
    pub dsv4_compress_state_dtype: Option<String>,
}

impl SglangEnv {
    pub fn is_default(&self) -> bool {
        *self == SglangEnv::default()
    }

    /// Bytes an element of DeepSeek-V4's compress-state rings, as
    /// `_get_dsv4_compress_state_dtype_sizes` reads the variable (stripped, lower case):
    /// `Err` with SGLang's `ValueError` text for another spelling.
    pub fn dsv4_compress_state_itemsize(&self) -> Result<u64, String> {
        let Some(v) = &self.dsv4_compress_state_dtype else {
            return Ok(4);
        };
        match v.trim().to_ascii_lowercase().as_str() {
            "float32" | "fp32" => Ok(4),
            "bfloat16" | "bf16" => Ok(2),
            other => Err(format!(
                "Unsupported SGLANG_DSV4_COMPRESS_STATE_DTYPE='{other}'. Expected one of: float32, fp32, bfloat16, bf16."
            )),
        }
    }
}

// The offload fields are left out of the serialized arguments at SGLang's defaults, so
// scenarios without offload serialize (fingerprints, sweep journals) as before.
fn is_zero(x: &i64) -> bool {
    *x == 0
}
fn is_one(x: &i64) -> bool {
    *x == 1
}
fn is_minus_one(x: &i64) -> bool {
    *x == -1
}
fn is_cpu(x: &str) -> bool {
    x == "cpu"
}
fn is_none_backend(x: &str) -> bool {
    x == "none"
}

impl Default for ServerArgs {
    fn default() -> Self {
        Self {
            launch: None,
            model_path: None,
            tp_size: 1,
            pp_size: 1,
            dp_size: 1,
            enable_dp_attention: false,
            nnodes: 1,
            page_size: 1,
            mem_fraction_static: None,
            max_total_tokens: None,
            kv_cache_dtype: KvCacheDtype::Auto,
            enable_hierarchical_cache: None,
            hicache_ratio: None,
            hicache_size: 0.0,
            hicache_host_memory_fraction: Some(0.8),
            hicache_write_policy: WritePolicy::WriteThrough,
            hicache_host_memory_mode: HostMemoryMode::Cache,
            hicache_io_backend: IoBackend::Kernel,
            hicache_mem_layout: MemLayout::PageFirst,
            hicache_storage_backend: None,
            hicache_storage_prefetch_policy: PrefetchPolicy::Timeout,
            radix_eviction_policy: EvictionPolicy::Lru,
            disable_radix_cache: false,
            max_running_requests: None,
            chunked_prefill_size: None,
            max_prefill_tokens: 16384,
            schedule_conservativeness: None,
            schedule_policy: None,
            speculative_algorithm: None,
            speculative_draft_model_path: None,
            speculative_num_steps: None,
            speculative_eagle_topk: None,
            speculative_num_draft_tokens: None,
            swa_full_tokens_ratio: None,
            mamba_full_memory_ratio: None,
            max_mamba_cache_size: None,
            cpu_offload_gb: 0,
            offload_group_size: -1,
            offload_num_in_group: 1,
            offload_prefetch_step: 1,
            offload_mode: "cpu".into(),
            disable_shared_experts_fusion: false,
            cuda_graph_max_bs_decode: None,
            disable_cuda_graph: false,
            moe_a2a_backend: "none".into(),
            enable_multimodal: None,
            language_only: false,
            language_model_only: false,
            attention_backend: None,
            load_balance_method: None,
            disaggregation_mode: DisaggregationMode::Null,
            disaggregation_decode_enable_radix_cache: false,
            hicache_write_back_threshold: None,
            env: SglangEnv::default(),
        }
    }
}

impl ServerArgs {
    /// `--swa-full-tokens-ratio` as SGLang resolves it: 0.8 (`runtime_context.py` in
    /// 0.5.15, `arg_groups/fields/schedule.py` in 0.5.23).
    pub fn swa_full_tokens_ratio(&self) -> f64 {
        self.swa_full_tokens_ratio.unwrap_or(0.8)
    }

    /// `--mamba-full-memory-ratio` as SGLang resolves it (fallback 0.9).
    pub fn mamba_full_memory_ratio(&self) -> f64 {
        self.mamba_full_memory_ratio.unwrap_or(0.9)
    }

    /// MTP draft layers whose KV the host pools carry: `--speculative-algorithm` EAGLE
    /// or NEXTN (SGLang turns NEXTN into EAGLE) with the model's own MTP layers as the
    /// draft (`speculative/base_spec_worker.py: _can_pack_hicache_mtp`, 0.5.18–0.5.23:
    /// EAGLE, not EAGLE3, every draft runner with `num_nextn_predict_layers`), else 0.
    pub fn mtp_draft_layers(&self, model_mtp_layers: u32) -> u32 {
        let mtp_algo = self
            .speculative_algorithm
            .as_ref()
            .is_some_and(|a| matches!(a.algorithm(), SpecAlgorithm::Eagle | SpecAlgorithm::Nextn));
        let own_layers = match (&self.speculative_draft_model_path, &self.model_path) {
            (None, _) => true,
            (Some(d), Some(m)) => d == m,
            (Some(_), None) => false,
        };
        if mtp_algo && own_layers {
            model_mtp_layers
        } else {
            0
        }
    }

    /// Whether the user turned HiCache on (explicitly).
    pub fn hicache_enabled(&self) -> bool {
        self.enable_hierarchical_cache == Some(true)
    }
}
