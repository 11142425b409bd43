//! Model KV-cache geometry: presets for the models the incidents involve, bytes per token
//! per rank as SGLang's host pools compute them (`mem_cache/pool_host/mha.py` /
//! `mla.py: get_size_per_token`), the parallel layout, and the device KV pool size
//! (`model_executor/model_runner.py: profile_max_num_token`).
//!
//! Units: every byte count here is an integer; the presets carry `ByteSize` so a user can
//! write `420GB` in a scenario.

mod device_pool;
mod dtype;
mod geometry;
mod parallel;
mod presets;

pub use device_pool::{
    DevicePoolInputs, MemFractionDefault, MemFractionInputs, device_pool_bytes, device_pool_tokens,
    mem_fraction_static_default, prefill_cuda_graph_batch_count, profile_rest_gib,
    tokens_from_rest,
};
pub use dtype::KvDtype;
pub use geometry::{Attention, PoolGeometry};
pub use parallel::ParallelLayout;
pub use presets::{ModelPreset, model_preset, model_presets};
