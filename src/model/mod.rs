//! Model KV-cache geometry: presets for the models the incidents involve, models read
//! from their Hugging Face `config.json` (a bundled catalogue, `model: {config: FILE}`,
//! a local `--model-path`), bytes per token per rank as SGLang's pools compute them
//! (`mem_cache/pool_host/mha.py` / `mla.py: get_size_per_token`,
//! `model_executor/pool_configurator.py`), the parallel layout, weights per rank, and
//! the device KV pool size (`model_executor/model_runner.py: profile_max_num_token`).
//!
//! Units: every byte count here is an integer; the presets carry `ByteSize` so a user can
//! write `420GB` in a scenario.

mod attention_backend;
pub mod catalogue;
mod device_pool;
mod draft;
pub mod dsv4;
mod dtype;
mod geometry;
pub mod hf_config;
mod kv_default;
pub mod multimodal;
pub mod offload;
pub mod offload_llama;
mod parallel;
mod presets;
pub mod quant;
mod resolve;
pub mod weights;

pub use device_pool::{
    DevicePoolInputs, MemFractionDefault, MemFractionInputs, device_pool_bytes, device_pool_tokens,
    mem_fraction_static_default, prefill_cuda_graph_batch_count, profile_rest_gib,
    tokens_from_rest,
};
pub use draft::{DraftNote, mtp_draft};

/// The model data bundled in the binary (presets, the catalogue of configs), by name:
/// part of the fingerprint of any result computed from it.
pub fn bundled_data() -> [(&'static str, &'static str); 2] {
    [
        ("models.yaml", presets::MODELS_YAML),
        ("catalogue.json", catalogue::CATALOGUE_JSON),
    ]
}
pub use attention_backend::{
    BackendInputs, BackendUnmodelled, DsaPage, PageSize, Sm100Attention, resolve_page_size,
};
pub use dtype::{KvDtype, KvDtypeRefused};
pub use geometry::{Attention, IndexKLayers, LinearState, PoolGeometry};
pub use hf_config::{ConfigFiles, HfModel, read_model};
pub use kv_default::{resolve_kv_dtype, sm_major};
pub use parallel::ParallelLayout;
pub use presets::{ModelPreset, NoCheckpointSize, model_preset, model_presets};
pub use resolve::{
    LOAD_BYTES_PER_LAYER, ModelError, ModelQuery, ModelSource, ResolvedModel, catalogue_model,
    preset_for_path, preset_from_config, resolve,
};
