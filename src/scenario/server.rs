//! SGLang's server arguments, under SGLang's own (underscored) names, as far as they
//! matter to HiCache sizing and runtime. Defaults are SGLang's (`server_args.py`,
//! `arg_groups/fields/memory.py`) unless a comment says otherwise.

use serde::{Deserialize, Serialize};

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
    /// `--mem-fraction-static`; `None` = SGLang's automatic choice, modelled as 0.85 here
    /// (the automatic value depends on GPU memory and parallelism; set it from your log).
    pub mem_fraction_static: Option<f64>,
    /// `--max-total-tokens`: caps the device KV pool; set it to `max_total_num_tokens`
    /// from your server log to use the real device pool size.
    pub max_total_tokens: Option<u64>,
    /// `--kv-cache-dtype` (`auto`, `bf16`, `fp8_e4m3`, `fp8_e5m2`, …).
    pub kv_cache_dtype: String,
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
    pub hicache_write_policy: String,
    /// `--hicache-host-memory-mode`: `cache` or `buffer_only`.
    pub hicache_host_memory_mode: String,
    /// `--hicache-io-backend`.
    pub hicache_io_backend: String,
    /// `--hicache-mem-layout`.
    pub hicache_mem_layout: String,
    /// `--hicache-storage-backend` (L3); `None` = no L3.
    pub hicache_storage_backend: Option<String>,
    /// `--hicache-storage-prefetch-policy`.
    pub hicache_storage_prefetch_policy: String,
    /// `--radix-eviction-policy`.
    pub radix_eviction_policy: String,
    /// `--disable-radix-cache` (mutually exclusive with HiCache).
    pub disable_radix_cache: bool,
    /// `--max-running-requests`.
    pub max_running_requests: Option<u32>,
    /// `--chunked-prefill-size`.
    pub chunked_prefill_size: Option<u32>,
    /// `--max-prefill-tokens`.
    pub max_prefill_tokens: u32,
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
            kv_cache_dtype: "auto".into(),
            enable_hierarchical_cache: None,
            hicache_ratio: None,
            hicache_size: 0.0,
            hicache_host_memory_fraction: Some(0.8),
            hicache_write_policy: "write_through".into(),
            hicache_host_memory_mode: "cache".into(),
            hicache_io_backend: "kernel".into(),
            hicache_mem_layout: "page_first".into(),
            hicache_storage_backend: None,
            hicache_storage_prefetch_policy: "timeout".into(),
            radix_eviction_policy: "lru".into(),
            disable_radix_cache: false,
            max_running_requests: None,
            chunked_prefill_size: None,
            max_prefill_tokens: 16384,
        }
    }
}

impl ServerArgs {
    /// Whether the user turned HiCache on (explicitly).
    pub fn hicache_enabled(&self) -> bool {
        self.enable_hierarchical_cache == Some(true)
    }
}
