//! Device pools of one rank: the full-attention KV pool, the SWA pool of a
//! sliding-window model, the Mamba (linear-attention) state pool of a hybrid model.

use crate::model::{DevicePoolInputs, KvDtype, ModelPreset, ParallelLayout};
use crate::release::{MambaSlotFormula, PoolRules};
use crate::sizing::{py_float_floordiv, py_int};

const GIB: f64 = (1u64 << 30) as f64;

/// The speculative draft a scenario asks for, as the host pools see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpecDraft {
    /// MTP (NextN) draft layers whose KV the host mirrors (0: no draft).
    pub mtp_layers: u32,
}

/// Everything the pools of a rank depend on.
#[derive(Debug, Clone, Copy)]
pub struct PoolSetInputs<'a> {
    pub model: &'a ModelPreset,
    pub layout: &'a ParallelLayout,
    pub dtype: KvDtype,
    pub rules: PoolRules,
    /// The profile inputs (`cell_size` is ignored: it is derived here per pool kind).
    pub device: DevicePoolInputs,
    pub draft: SpecDraft,
    /// `--swa-full-tokens-ratio` (SGLang's default 0.8).
    pub swa_full_tokens_ratio: f64,
    /// `--mamba-full-memory-ratio` (SGLang's default 0.9).
    pub mamba_full_memory_ratio: f64,
    /// `--max-mamba-cache-size`, if given.
    pub max_mamba_cache_size: Option<u64>,
}

/// The device pools of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePools {
    /// `max_total_num_tokens`: the full-attention (or only) KV pool, in tokens.
    pub full_tokens: u64,
    /// The SWA pool (`swa_max_total_num_tokens`) of a sliding-window model.
    pub swa_tokens: Option<u64>,
    /// The Mamba state pool's slots (`max_mamba_cache_size`) of a hybrid model.
    pub state_slots: Option<u64>,
}

/// The Mamba state pool's slots and the rest left for KV (GiB).
///
/// Mirrors `kv_cache_configurator.py: _handle_max_mamba_cache` (0.5.16+; in 0.5.14–0.5.15
/// `model_runner_kv_cache_mixin.py: handle_max_mamba_cache`), without speculative
/// decoding: an explicit `--max-mamba-cache-size` (`// attn_dp_size`), else
/// `mamba_budget = rest * ratio / (1 + ratio)` split per the release's
/// [`MambaSlotFormula`]; then `rest -= state memory`.
fn mamba_slots(
    rest_gib: f64,
    per_slot: u64,
    inp: &PoolSetInputs<'_>,
) -> Result<(u64, f64), String> {
    let ps = per_slot.max(1) as f64;
    let dp = if inp.layout.enable_dp_attention {
        inp.layout.dp_size.max(1) as i128
    } else {
        1
    };
    let k: i128 = match inp.max_mamba_cache_size {
        Some(m) => m as i128 / dp,
        None => {
            let r = inp.mamba_full_memory_ratio;
            let budget_bytes = rest_gib * r / (1.0 + r) * GIB;
            match inp.rules.mamba_slots {
                MambaSlotFormula::Floor => py_int(py_float_floordiv(budget_bytes, ps)),
                MambaSlotFormula::PaddingSlot => py_int(py_float_floordiv(budget_bytes - ps, ps)),
            }
        }
    };
    if k <= 0 {
        return Err(format!(
            "Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size={k} (total_rest_memory={rest_gib:.2} GB, mamba_cache_per_req={:.2} MB)",
            per_slot as f64 / (1u64 << 20) as f64
        ));
    }
    let k = k as u64;
    let held = match inp.rules.mamba_slots {
        MambaSlotFormula::Floor => k,
        MambaSlotFormula::PaddingSlot => k + 1,
    };
    Ok((k, rest_gib - held as f64 * ps / GIB))
}

/// The device pools of `inp`; errors carry SGLang's own messages.
///
/// Full-attention tokens: `int(rest * 2^30 // cell_size)` with `cell_size` the bytes per
/// token of every per-token pool — for a sliding-window model `full + swa_full_tokens_ratio
/// × swa` (`pool_configurator.py: HybridSWAPoolConfigurator._recompute_cell_size`,
/// 0.5.15–0.5.23) — capped by `--max-total-tokens`, page-aligned; SWA tokens
/// `align(int(full * swa_full_tokens_ratio))` (`_solve_pool_sizes`), checked against the
/// admission floor from 0.5.20 (`validate_swa_pool_size`).
pub fn device_pools(inp: &PoolSetInputs<'_>) -> Result<DevicePools, String> {
    let m = inp.model;
    if matches!(m.attention, crate::model::Attention::Dsv4 { .. }) {
        // Sized by `dsv4_device_pools` (it needs the schedule, not a cell size).
        return Err("DeepSeek-V4's pools are sized by dsv4_device_pools".into());
    }
    let geo = m.host_pools(inp.layout, inp.dtype);
    let page = inp.device.page_size.max(1);
    let mut rest = crate::model::profile_rest_gib(&inp.device);
    let state_slots = match m.attention.state_bytes_per_slot(inp.layout) {
        Some(per_slot) => {
            let (k, r) = mamba_slots(rest, per_slot, inp)?;
            rest = r;
            Some(k)
        }
        None => None,
    };
    let swa = geo
        .iter()
        .find(|p| p.name == "swa")
        .map(|p| p.bytes_per_token);
    let cell: f64 = match swa {
        Some(swa_bpt) => {
            let full: u64 = geo
                .iter()
                .filter(|p| p.name != "swa")
                .map(|p| p.bytes_per_token)
                .sum();
            full as f64 + inp.swa_full_tokens_ratio * swa_bpt as f64
        }
        None => geo.iter().map(|p| p.bytes_per_token).sum::<u64>() as f64,
    };
    let full_tokens =
        crate::model::tokens_from_rest(rest, cell.max(1.0), inp.device.max_total_tokens, page);
    let swa_tokens = swa.map(|_| {
        let t = py_int(full_tokens as f64 * inp.swa_full_tokens_ratio).max(0) as u64;
        t / page * page
    });
    if let (Some(t), Some(window), true) = (
        swa_tokens,
        m.attention.sliding_window(),
        inp.rules.swa_floor_check,
    ) && window as u64 + page >= t
        && full_tokens > 0
    {
        return Err(format!(
            "SWA pool ({t} tokens) cannot hold even one request: the prefill admission floor is sliding_window_size ({window}) + page_size ({page}). Increase --swa-full-tokens-ratio or the total KV budget."
        ));
    }
    Ok(DevicePools {
        full_tokens,
        swa_tokens,
        state_slots,
    })
}

/// DeepSeek-V4's device pools (`model_executor/pool_configurator.py:
/// DSV4PoolConfigurator.calculate_pool_sizes`, see [`crate::model::dsv4`]) for the
/// release's [`Dsv4Pools`](crate::release::Dsv4Pools) rule.
///
/// The schedule is SGLang's after its DeepSeek-V4 hooks: `page_size` 256
/// (`model_overrides/deepseek_v4.py` overrides any `--page-size`),
/// `--max-running-requests` 256 unless given (`deepseek_v4_hook.py:
/// apply_deepseek_v4_defaults`), `--chunked-prefill-size` by GPU memory unless given
/// (`memory_hook.py: _handle_gpu_memory_settings`), an operator `--swa-full-tokens-ratio`
/// selects ratio mode. The budget is `profile_max_num_token`'s rest in bytes.
pub fn dsv4_device_pools(
    inp: &PoolSetInputs<'_>,
    server: &crate::scenario::ServerArgs,
    gpu_memory: u64,
) -> Result<crate::model::dsv4::Dsv4PoolSizes, String> {
    use crate::model::dsv4::{
        DSV4_DEFAULT_MAX_RUNNING_REQUESTS, DSV4_PAGE_SIZE, Dsv4Geometry, Dsv4Schedule,
        default_chunked_prefill_size,
    };
    use crate::release::Dsv4Pools;
    let geo = Dsv4Geometry::of(&inp.model.attention, inp.model.layers)
        .ok_or("not a DeepSeek-V4 model")?;
    if inp.rules.dsv4_pools == Dsv4Pools::NotModelled {
        return Err("DeepSeek-V4's pools in this release (its own `pool_configurator.py: DSV4PoolConfigurator`) are not modelled: the simulator's DeepSeek-V4 sizing is checked against SGLang 0.5.21–0.5.23 only; use --sglang-version 0.5.21 or later".into());
    }
    let dp = if inp.layout.enable_dp_attention {
        inp.layout.dp_size.max(1) as u64
    } else {
        1
    };
    let sched = Dsv4Schedule {
        page_size: DSV4_PAGE_SIZE,
        max_running_requests: server
            .max_running_requests
            .map(u64::from)
            .unwrap_or(DSV4_DEFAULT_MAX_RUNNING_REQUESTS),
        chunked_prefill_size: server
            .chunked_prefill_size
            .map(i64::from)
            .unwrap_or_else(|| default_chunked_prefill_size(gpu_memory)),
        operator_swa_full_tokens_ratio: server.swa_full_tokens_ratio,
        attn_dp_size: dp,
        disable_radix_cache: server.disable_radix_cache,
        disable_overlap_schedule: false,
    };
    let rest = crate::model::profile_rest_gib(&inp.device);
    let available = py_int(rest * GIB).max(0) as u64;
    geo.pool_sizes(&sched, available, inp.device.max_total_tokens)
}
