//! The device (GPU) KV pool size, as SGLang profiles it at start-up.

use serde::{Deserialize, Serialize};

/// Inputs of [`device_pool_tokens`]. All bytes per rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicePoolInputs {
    /// Free GPU memory before the model load (`pre_model_load_memory` /
    /// `total_gpu_memory` in SGLang): the nvidia-smi capacity minus the CUDA context and
    /// NCCL buffers.
    pub free_before_load: u64,
    /// Weights resident on this rank (checkpoint bytes / (tp*pp) unless overridden).
    pub weights_per_rank: u64,
    /// `--mem-fraction-static`.
    pub mem_fraction_static: f64,
    /// Bytes per token summed over the device pools (`cell_size`).
    pub cell_size: u64,
    /// `--page-size`.
    pub page_size: u64,
    /// `--max-total-tokens`, if given.
    pub max_total_tokens: Option<u64>,
}

/// Tokens of the device KV pool (its usable `size`).
///
/// Mirrors `model_executor/model_runner.py: profile_max_num_token` (all versions):
/// `rest = available_after_load - total_before_load * (1 - mem_fraction_static)` in GiB
/// floats, `max_num_token = int(rest * (1 << 30) // cell_size)`; then
/// `init_memory_pool`: `min(max_total_tokens, profiled)` if the user gave one, and page
/// alignment `tokens // page_size * page_size`. A negative rest gives 0 (SGLang then
/// raises "Not enough memory"; the caller decides what to report).
pub fn device_pool_tokens(inp: &DevicePoolInputs) -> u64 {
    tokens_from_rest(
        profile_rest_gib(inp),
        inp.cell_size.max(1) as f64,
        inp.max_total_tokens,
        inp.page_size,
    )
}

/// `rest = available_after_load - total_before_load * (1 - mem_fraction_static)` in GiB
/// floats (`profile_max_num_token`, every modelled release).
pub fn profile_rest_gib(inp: &DevicePoolInputs) -> f64 {
    const GIB: f64 = (1u64 << 30) as f64;
    let before = inp.free_before_load as f64 / GIB;
    let after = inp.free_before_load.saturating_sub(inp.weights_per_rank) as f64 / GIB;
    after - before * (1.0 - inp.mem_fraction_static)
}

/// `int(rest * (1 << 30) // cell_size)` (0 when negative), capped by `--max-total-tokens`
/// and page-aligned: the tail of [`device_pool_tokens`] for a rest and a cell size the
/// caller worked out (a hybrid model's rest after its state pool, a sliding-window
/// model's cell).
pub fn tokens_from_rest(rest_gib: f64, cell: f64, max_total_tokens: Option<u64>, page: u64) -> u64 {
    const GIB: f64 = (1u64 << 30) as f64;
    let profiled = crate::sizing::py_float_floordiv(rest_gib * GIB, cell);
    let mut tokens = if profiled > 0.0 { profiled as u64 } else { 0 };
    if let Some(m) = max_total_tokens {
        tokens = tokens.min(m);
    }
    let page = page.max(1);
    tokens / page * page
}

/// Bytes of one device pool as `get_kv_size_bytes` reports them: the buffers hold
/// `size + page_size` rows (one padding page, `mem_cache/memory_pool.py`).
pub fn device_pool_bytes(tokens: u64, page_size: u64, bytes_per_token: u64) -> u64 {
    (tokens + page_size) * bytes_per_token
}
