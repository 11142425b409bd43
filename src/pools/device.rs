//! Device pools of one rank: the full-attention KV pool, the SWA pool of a
//! sliding-window model, the Mamba (linear-attention) state pool of a hybrid model.

use crate::model::Attention;
use crate::model::{
    DevicePoolInputs, IndexKLayers, KvDtype, ModelPreset, ParallelLayout, PoolGeometry,
};
use crate::release::{DraftCell, DsaIndexK, MambaSlotFormula, PoolRules};
use crate::sizing::{py_float_floordiv, py_int};

/// Why SGLang would not build the device pools (its own messages), or why the simulator
/// does not size them (a path it does not model).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PoolError {
    #[error(
        "Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size={slots} (total_rest_memory={rest_gib:.2} GB, mamba_cache_per_req={per_slot_mib:.2} MB)"
    )]
    NoMambaRoom {
        slots: i128,
        rest_gib: f64,
        per_slot_mib: f64,
    },
    #[error(
        "SWA pool ({tokens} tokens) cannot hold even one request: the prefill admission floor is sliding_window_size ({window}) + page_size ({page}). Increase --swa-full-tokens-ratio or the total KV budget."
    )]
    SwaBelowFloor { tokens: u64, window: u32, page: u64 },
    /// `device_pools` was asked for a DeepSeek-V4 model.
    #[error("DeepSeek-V4's pools are sized by dsv4_device_pools")]
    SizedByDsv4,
    /// `dsv4_device_pools` was asked for another model.
    #[error("not a DeepSeek-V4 model")]
    NotDsv4,
    /// The weights leave no memory under the fraction: `rest_memory <= 0` in
    /// `mem_cache/kv_cache_configurator.py: _profile_available_bytes` (0.5.16–0.5.23;
    /// `model_executor/model_runner_kv_cache_mixin.py` in 0.5.14–0.5.15, the same text),
    /// raised before any pool configurator runs. `minimum` is `1 - available / pre`
    /// (free memory after / before the load).
    #[error(
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={}. Raise --mem-fraction-static above {:.3} (minimum viable = 1 - available/pre = {:.4}). If using speculative decoding, draft weights are now counted.",
        crate::sizing::py_repr_float(*.mem_fraction_static),
        (.minimum * 1000.0).ceil() / 1000.0,
        .minimum
    )]
    WeightsLeaveNoKvRoom {
        mem_fraction_static: f64,
        minimum: f64,
    },
    /// A DeepSeek-V4 draft the simulator does not size: the `--speculative-algorithm`
    /// given and why (DSpark's draft, a draft without `--speculative-num-steps`).
    #[error("DeepSeek-V4 with --speculative-algorithm {0}: {1}")]
    Dsv4Speculative(String, &'static str),
    #[error(transparent)]
    Dsv4(#[from] crate::model::dsv4::Dsv4Error),
}

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
    /// `--enable-hierarchical-cache` (`get_memory().enable_hierarchical_cache`, which
    /// `_should_elide_dsa_index_k` reads in 0.5.18–0.5.21).
    pub enable_hierarchical_cache: bool,
    /// `--disaggregation-mode` other than `null` (a PD prefill or decode server). PD is
    /// not modelled (start-up warns and simulates a colocated engine): false there.
    pub pd_disaggregation: bool,
}

/// The layers of a DSA model whose index-K the device pool (and so the cell size) and the
/// host indexer pool hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DsaIndexKPlacement {
    pub device: IndexKLayers,
    pub host: IndexKLayers,
}

/// Where a release keeps a DSA model's index-K (its [`DsaIndexK`] rule), for a target
/// worker without HiSparse or an external linker (neither is modelled).
///
/// Mirrors `mem_cache/kv_cache_configurator.py: _should_elide_dsa_index_k` (0.5.18+; no
/// such gate before), which `_build_dsa_kv_pool` (`skip_topk_layers`) and
/// `pool_configurator.py: _compute_dsa_indexer_cell_size` read, and the host pool's
/// layer count: `DSAIndexerPoolHost.__init__` takes `device_pool.layer_num` (every
/// layer, ≤ 0.5.21: `memory_pool_host.py` ≤ 0.5.18, `pool_host/dsa.py` 0.5.19–0.5.21),
/// `pool_host/dsa.py: make_dsa_indexer_pool_decl` the owned layers (0.5.22+).
pub fn dsa_index_k_layers(
    rule: DsaIndexK,
    enable_hierarchical_cache: bool,
    pd_disaggregation: bool,
) -> DsaIndexKPlacement {
    use IndexKLayers::{All, Owned};
    let both = |l| DsaIndexKPlacement { device: l, host: l };
    match rule {
        DsaIndexK::AllLayers => both(All),
        DsaIndexK::ElideUnlessHicacheOrPd if enable_hierarchical_cache || pd_disaggregation => {
            both(All)
        }
        // HiCache off: no host pool is built; were it, it would mirror the device.
        DsaIndexK::ElideUnlessHicacheOrPd => both(Owned),
        DsaIndexK::ElideOwned => both(Owned),
    }
}

impl PoolSetInputs<'_> {
    /// [`dsa_index_k_layers`] of these inputs.
    pub fn index_k(&self) -> DsaIndexKPlacement {
        dsa_index_k_layers(
            self.rules.dsa_index_k,
            self.enable_hierarchical_cache,
            self.pd_disaggregation,
        )
    }

    /// The per-token device pools of one rank (their sum is the cell size before any
    /// draft): a DSA model's index-K on the layers the release keeps on the device.
    pub fn device_geometry(&self) -> Vec<PoolGeometry> {
        self.model
            .pools_per_token(self.layout, self.dtype, self.index_k().device)
    }

    /// The target's `cell_size` of a model without a sliding-window pool: the bytes per
    /// token of every per-token device pool, an EAGLE / NextN draft's KV included per
    /// the release's [`DraftCell`] — the divisor of `model_executor/pool_configurator.py:
    /// DefaultPoolConfigurator.calculate_pool_sizes` (0.5.14–0.5.23). `None` for a
    /// sliding-window model (its cell is `full + ratio × swa`, see [`device_pools`]).
    pub fn device_cell_size(&self) -> Option<u64> {
        let geo = self.device_geometry();
        if geo.iter().any(|p| p.name == "swa") {
            return None;
        }
        Some(draft_cell(
            geo.iter().map(|p| p.bytes_per_token).sum(),
            self,
        ))
    }

    /// The per-token host pools of one rank (their `size_per_token` before packed drafts):
    /// a DSA model's indexer on the layers the release's host pool keeps.
    pub fn host_geometry(&self) -> Vec<PoolGeometry> {
        self.model
            .pools_per_token(self.layout, self.dtype, self.index_k().host)
    }
}

/// `_profile_available_bytes`' rest in GiB before any state pool: free memory after the
/// load minus free before it × (1 − `--mem-fraction-static`)
/// ([`crate::model::profile_rest_gib`]), minus a multimodal model's reservation under
/// the release's [`crate::release::MmReservation`]
/// (`kv_cache_configurator.py: mm_runtime_reservation_gb`, 0.5.18+).
pub fn profile_rest_gib(inp: &PoolSetInputs<'_>) -> f64 {
    crate::model::profile_rest_gib(&inp.device) - inp.rules.mm_reservation.gib(inp.model.multimodal)
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
) -> Result<(u64, f64), PoolError> {
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
        return Err(PoolError::NoMambaRoom {
            slots: k,
            rest_gib,
            per_slot_mib: per_slot as f64 / (1u64 << 20) as f64,
        });
    }
    let k = k as u64;
    let held = match inp.rules.mamba_slots {
        MambaSlotFormula::Floor => k,
        MambaSlotFormula::PaddingSlot => k + 1,
    };
    Ok((k, rest_gib - held as f64 * ps / GIB))
}

/// The target's `cell_size` of a plain MHA / MLA / DSA model with its EAGLE / NextN
/// draft (`model_executor/pool_configurator.py: DefaultPoolConfigurator.__init__`,
/// every modelled release: the draft's KV lives in a pool of the target's slot count, so
/// it is charged per token of the target), per the release's [`DraftCell`]. `cell` is
/// the target's bytes per token (its DSA index-K on the layers [`PoolSetInputs::
/// device_geometry`] keeps: `_compute_dsa_indexer_cell_size(num_layers)`).
fn draft_cell(cell: u64, inp: &PoolSetInputs<'_>) -> u64 {
    let d = inp.draft.mtp_layers as u64;
    let m = inp.model;
    let n = m.layers as u64 / inp.layout.pp_size.max(1) as u64;
    if d == 0 || n == 0 {
        return cell;
    }
    let scale = || py_int(cell as f64 * (1.0 + d as f64 / n as f64)) as u64;
    match (inp.rules.draft_cell, &m.attention) {
        (
            DraftCell::DsaAddPerLayer | DraftCell::AddPerLayer,
            Attention::MlaDsa {
                indexer_bytes_per_token_layer,
                ..
            },
        ) => {
            let target_indexer: u64 = inp
                .device_geometry()
                .iter()
                .filter(|p| p.name == "indexer")
                .map(|p| p.bytes_per_token)
                .sum();
            let kv = cell - target_indexer;
            cell + kv * d / n + indexer_bytes_per_token_layer * d
        }
        (DraftCell::AddPerLayer, _) => cell + cell * d / n,
        (DraftCell::DsaAddPerLayer | DraftCell::Scale, _) => scale(),
    }
}

/// The device pools of `inp`; errors carry SGLang's own messages.
///
/// Full-attention tokens: `int(rest * 2^30 // cell_size)` (`rest` from
/// [`profile_rest_gib`]) with `cell_size` the bytes per
/// token of every per-token pool — for a sliding-window model `full + swa_full_tokens_ratio
/// × swa` (`pool_configurator.py: HybridSWAPoolConfigurator._recompute_cell_size`,
/// 0.5.15–0.5.23) — capped by `--max-total-tokens`, page-aligned; SWA tokens
/// `align(int(full * swa_full_tokens_ratio))` (`_solve_pool_sizes`), checked against the
/// admission floor from 0.5.20 (`validate_swa_pool_size`).
pub fn device_pools(inp: &PoolSetInputs<'_>) -> Result<DevicePools, PoolError> {
    let m = inp.model;
    if matches!(m.attention, crate::model::Attention::Dsv4 { .. }) {
        // Sized by `dsv4_device_pools` (it needs the schedule, not a cell size).
        return Err(PoolError::SizedByDsv4);
    }
    let geo = inp.device_geometry();
    let page = inp.device.page_size.max(1);
    let mut rest = profile_rest_gib(inp);
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
        None => draft_cell(geo.iter().map(|p| p.bytes_per_token).sum::<u64>(), inp) as f64,
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
        return Err(PoolError::SwaBelowFloor {
            tokens: t,
            window,
            page,
        });
    }
    Ok(DevicePools {
        full_tokens,
        swa_tokens,
        state_slots,
    })
}

/// The schedule DeepSeek-V4's pools are sized under, as SGLang resolves it after its
/// DeepSeek-V4 hooks (0.5.21–0.5.23):
/// - `page_size` 256 (`model_overrides/deepseek_v4.py: _deepseek_v4_overrides` overrides
///   any `--page-size`);
/// - `--max-running-requests` 256 unless given (`deepseek_v4_hook.py:
///   apply_deepseek_v4_defaults`), divided per attention-DP worker by the configurator;
/// - `--chunked-prefill-size` by GPU memory unless given (`memory_hook.py:
///   handle_gpu_memory_settings`), then floor-divided by the DP width under DP attention
///   (`arg_groups/parallel_hook.py: handle_data_parallelism`: `// dp_size` in 0.5.21,
///   `// attn_dp_size` in 0.5.22–0.5.23, the same width here), which runs after the
///   `--mem-fraction-static` default has read the undivided value; only cap mode reads
///   it;
/// - the SWA ratio as the release's rule resolves it
///   ([`Dsv4Pools::operator_swa_full_tokens_ratio`](crate::release::Dsv4Pools::operator_swa_full_tokens_ratio):
///   ratio mode at 0.1 unless given);
/// - the speculative draft tokens ([`dsv4_draft_tokens`]; `None` when that draft is not
///   sized).
pub fn dsv4_schedule(
    inp: &PoolSetInputs<'_>,
    server: &crate::domain::ServerArgs,
    gpu_memory: u64,
) -> crate::model::dsv4::Dsv4Schedule {
    use crate::model::dsv4::{
        DSV4_DEFAULT_MAX_RUNNING_REQUESTS, DSV4_PAGE_SIZE, Dsv4Schedule,
        default_chunked_prefill_size,
    };
    let dp = if inp.layout.enable_dp_attention {
        inp.layout.dp_size.max(1) as u64
    } else {
        1
    };
    let chunk = server
        .chunked_prefill_size
        .unwrap_or_else(|| default_chunked_prefill_size(gpu_memory));
    Dsv4Schedule {
        page_size: DSV4_PAGE_SIZE,
        max_running_requests: server
            .max_running_requests
            .map(u64::from)
            .unwrap_or(DSV4_DEFAULT_MAX_RUNNING_REQUESTS),
        // Python's `//` (floor).
        chunked_prefill_size: chunk.div_euclid(dp as i64),
        operator_swa_full_tokens_ratio: inp
            .rules
            .dsv4_pools
            .operator_swa_full_tokens_ratio(server.swa_full_tokens_ratio),
        attn_dp_size: dp,
        disable_radix_cache: server.disable_radix_cache,
        disable_overlap_schedule: false,
        // A spelling SGLang refuses is refused when the scenario is read
        // (`scenario::resolve::check_server`).
        compress_state_itemsize: server
            .env
            .dsv4_compress_state_itemsize()
            .unwrap_or(crate::model::dsv4::STATE_ITEMSIZE),
        speculative_num_draft_tokens: dsv4_draft_tokens(server).ok().flatten(),
    }
}

/// The speculative draft tokens DeepSeek-V4's configurator sizes for (`Ok(None)`: no
/// `--speculative-algorithm`). SGLang admits EAGLE (spelled so; `NEXTN` and other
/// spellings are refused before the pools, `release::dsv4_speculative_refusal`) with
/// `--speculative-eagle-topk 1` and `--speculative-num-steps S`, whose draft tokens
/// `speculative_hook.py: _handle_eagle_family` makes `S + 1` whatever
/// `--speculative-num-draft-tokens` says (every release 0.5.14–0.5.23). DSpark's
/// draft (0.5.16+) and a draft SGLang would not have resolved are not sized.
pub fn dsv4_draft_tokens(server: &crate::domain::ServerArgs) -> Result<Option<u64>, PoolError> {
    use crate::domain::SpecAlgorithm;
    let Some(algo) = &server.speculative_algorithm else {
        return Ok(None);
    };
    if algo.algorithm() != SpecAlgorithm::Eagle {
        return Err(PoolError::Dsv4Speculative(
            algo.to_string(),
            "only EAGLE drafts of the checkpoint's MTP layer are sized (DSpark's draft and its bf16 ring are not modelled)",
        ));
    }
    match (server.speculative_num_steps, server.speculative_eagle_topk) {
        (Some(steps), Some(1)) => Ok(Some(u64::from(steps) + 1)),
        _ => Err(PoolError::Dsv4Speculative(
            algo.to_string(),
            "the draft is sized for --speculative-eagle-topk 1 with --speculative-num-steps given (what SGLang admits for DeepSeek-V4)",
        )),
    }
}

/// DeepSeek-V4's device pools (`model_executor/pool_configurator.py:
/// DSV4PoolConfigurator.calculate_pool_sizes`, see [`crate::model::dsv4`]) for the
/// release's [`Dsv4Pools`](crate::release::Dsv4Pools) rule, under [`dsv4_schedule`].
/// The budget is `profile_max_num_token`'s rest in bytes (`_profile_available_bytes`);
/// a rest of 0 or less is that function's ValueError
/// ([`PoolError::WeightsLeaveNoKvRoom`]), before the configurator runs.
pub fn dsv4_device_pools(
    inp: &PoolSetInputs<'_>,
    server: &crate::domain::ServerArgs,
    gpu_memory: u64,
) -> Result<crate::model::dsv4::Dsv4PoolSizes, PoolError> {
    use crate::model::dsv4::Dsv4Geometry;
    let geo = Dsv4Geometry::of(&inp.model.attention, inp.model.layers).ok_or(PoolError::NotDsv4)?;
    let formula = crate::model::dsv4::Dsv4Formula::of(inp.rules.dsv4_pools);
    // An EAGLE draft of the MTP layer: 16 / 256-row rings, the (T + 1) / T inflation.
    dsv4_draft_tokens(server)?;
    let sched = dsv4_schedule(inp, server, gpu_memory);
    let rest = profile_rest_gib(inp);
    if rest <= 0.0 {
        let d = &inp.device;
        let before = d.free_before_load as f64 / GIB;
        let after = d.free_before_load.saturating_sub(d.weights_per_rank) as f64 / GIB;
        return Err(PoolError::WeightsLeaveNoKvRoom {
            mem_fraction_static: d.mem_fraction_static,
            minimum: 1.0 - after / before,
        });
    }
    let available = py_int(rest * GIB).max(0) as u64;
    // `DSV4PoolConfigurator.__init__` bounds the draft tokens before it sizes (0.5.18+).
    geo.check_draft_tokens(inp.rules.dsv4_draft_token_bound, &sched)?;
    Ok(geo.pool_sizes_for(formula, &sched, available, inp.device.max_total_tokens)?)
}

/// Whether the attention backend on a ROCm node is `aiter`: `--attention-backend` when
/// given; else a DSA model's `dsa` (`model_overrides/deepseek_v2.py`, `nsa` before) and
/// DeepSeek-V4's `dsv4` are not; an MLA model is when its KV heads per TP rank are 16 or
/// 128 (`get_default_attn_backend`'s "current aiter only support head number 16 or 128",
/// else `triton`; a preset without the config's `num_key_value_heads` is taken as
/// aiter); other models are (0.5.14–0.5.23, the same rule in each).
fn runs_aiter(s: &crate::scenario::Scenario) -> bool {
    if let Some(b) = &s.server.attention_backend {
        return b == "aiter";
    }
    match s.model.attention {
        Attention::MlaDsa { .. } | Attention::Dsv4 { .. } => false,
        Attention::Mla { .. } | Attention::HybridMla { .. } => {
            match s
                .resolved_model
                .hf
                .as_ref()
                .and_then(|h| h.num_key_value_heads)
            {
                Some(kv) => {
                    let per_rank = (kv / s.layout.tp_size.max(1)).max(1);
                    per_rank == 16 || per_rank == 128
                }
                None => true,
            }
        }
        _ => true,
    }
}

/// The `--mem-fraction-static` a scenario's server runs with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResolvedMemFraction {
    pub value: f64,
    /// The release's default when the scenario gives none.
    pub default: Option<crate::model::MemFractionDefault>,
    /// Scaled by 0.85 for the ROCm `aiter` attention backend.
    pub aiter_scaled: bool,
}

/// The fraction SGLang runs with: `--mem-fraction-static` if given, else the release's
/// default ([`crate::model::mem_fraction_static_default`] on the node's nvidia-smi
/// total); then, on an AMD node, `* 0.85` — the default attention backend there is
/// `aiter` (`server_args.py: _get_default_attn_backend`) and every modelled model's
/// context exceeds 8192 (`_handle_attention_backend_compatibility` ≤ 0.5.18,
/// `arg_groups/attention_hook.py` 0.5.19+; an explicit value is scaled too unless
/// `SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION` is set).
pub fn resolve_mem_fraction(s: &crate::scenario::Scenario) -> ResolvedMemFraction {
    let default = match s.server.mem_fraction_static {
        Some(_) => None,
        None => Some(crate::model::mem_fraction_static_default(
            &mem_fraction_inputs(s),
            s.version.release_rules().device,
        )),
    };
    let base = s
        .server
        .mem_fraction_static
        .or(default.map(|d| d.mem_fraction_static))
        .unwrap_or(0.85);
    let aiter_scaled = s.node.gpu_vendor == crate::hardware::GpuVendor::Amd && runs_aiter(s);
    ResolvedMemFraction {
        value: if aiter_scaled { base * 0.85 } else { base },
        default,
        aiter_scaled,
    }
}

/// What `handle_gpu_memory_settings` reads of a scenario.
fn mem_fraction_inputs(s: &crate::scenario::Scenario) -> crate::model::MemFractionInputs {
    let (use_mla, is_dsa) = match s.model.attention {
        Attention::Mla { .. } | Attention::HybridMla { .. } => (true, false),
        Attention::MlaDsa { .. } => (true, true),
        _ => (false, false),
    };
    crate::model::MemFractionInputs {
        gpu_mem_mib: s.node.gpu_memory.0 as f64 / (1u64 << 20) as f64,
        tp_size: s.layout.tp_size,
        pp_size: s.layout.pp_size,
        dp_size: s.layout.dp_size,
        enable_dp_attention: s.layout.enable_dp_attention,
        use_mla,
        is_dsa,
        is_dsv4: matches!(s.model.attention, Attention::Dsv4 { .. }),
        chunked_prefill_size: s.server.chunked_prefill_size,
        max_prefill_tokens: s.server.max_prefill_tokens as i64,
        cuda_graph_max_bs: s.server.cuda_graph_max_bs_decode,
        disable_cuda_graph: s.server.disable_cuda_graph,
        enable_hierarchical_cache: s.server.enable_hierarchical_cache.unwrap_or(false),
        max_running_requests: s.server.max_running_requests.map(u64::from),
        // `reserve_for_deepep_a2a_mb` (0.5.15+ by `deepep_reserve`).
        deepep: s.server.moe_a2a_backend == "deepep",
        multimodal: s.resolved_model.hf.as_ref().and_then(|h| {
            h.multimodal.served(
                s.version.release(),
                s.server.enable_multimodal,
                s.server.language_only,
                s.server.language_model_only,
            )
        }),
        hip: s.node.gpu_vendor == crate::hardware::GpuVendor::Amd,
        pd_role: s.server.disaggregation_mode,
        speculative_num_draft_tokens: s.server.speculative_num_draft_tokens,
    }
}

/// The `--chunked-prefill-size` a scheduler runs with: the flag, else the GPU tier's
/// default (`arg_groups/memory_hook.py: handle_gpu_memory_settings`, 0.5.19+;
/// `server_args.py: _handle_gpu_memory_settings` before), floor-divided by the DP width
/// under DP attention (`arg_groups/parallel_hook.py: handle_data_parallelism`,
/// `server_args.py: _handle_data_parallelism` before); `None` when it is 0 or less
/// (`managers/scheduler.py: Scheduler.init_chunked_prefill`: no chunking). Every
/// modelled release.
pub fn scheduler_chunked_prefill_size(s: &crate::scenario::Scenario) -> Option<u64> {
    let chunk = crate::model::mem_fraction_static_default(
        &mem_fraction_inputs(s),
        s.version.release_rules().device,
    )
    .chunked_prefill_size;
    let dp = if s.layout.enable_dp_attention {
        i64::from(s.layout.dp_size.max(1))
    } else {
        1
    };
    let c = chunk.div_euclid(dp);
    (c > 0).then_some(c as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ParallelLayout;
    use crate::model::{DevicePoolInputs, model_preset};
    use crate::release::Release;

    fn inputs<'a>(
        m: &'a ModelPreset,
        layout: &'a ParallelLayout,
        r: Release,
        mtp: u32,
        hicache: bool,
        pd: bool,
    ) -> PoolSetInputs<'a> {
        PoolSetInputs {
            model: m,
            layout,
            dtype: KvDtype::Bf16,
            rules: r.rules().pools,
            device: DevicePoolInputs {
                free_before_load: 0,
                weights_per_rank: 0,
                mem_fraction_static: 0.9,
                cell_size: 0,
                page_size: 1,
                max_total_tokens: None,
            },
            draft: SpecDraft { mtp_layers: mtp },
            swa_full_tokens_ratio: 0.8,
            mamba_full_memory_ratio: 0.9,
            max_mamba_cache_size: None,
            enable_hierarchical_cache: hicache,
            pd_disaggregation: pd,
        }
    }

    /// The target's cell with `mtp` draft layers, bf16 at TP8, HiCache on or off.
    fn cell_with(model: &str, r: Release, mtp: u32, hicache: bool) -> u64 {
        let m = model_preset(model).unwrap();
        let layout = ParallelLayout::tp(8);
        let inp = inputs(m, &layout, r, mtp, hicache, false);
        let target: u64 = inp
            .device_geometry()
            .iter()
            .map(|p| p.bytes_per_token)
            .sum();
        draft_cell(target, &inp)
    }

    #[test]
    fn dsv4_runs_ratio_mode_whether_the_ratio_is_given_or_not() {
        use crate::release::Dsv4Pools;
        for r in [Release::V0_5_21, Release::V0_5_22, Release::V0_5_23] {
            let d = r.rules().pools.dsv4_pools;
            assert_eq!(d, Dsv4Pools::RatioMode0521);
            // `_deepseek_v4_overrides`' 0.1, recorded as explicit.
            assert_eq!(d.operator_swa_full_tokens_ratio(None), Some(0.1));
            assert_eq!(d.operator_swa_full_tokens_ratio(Some(0.25)), Some(0.25));
        }
        // 0.5.18–0.5.19 replace the ratio when it is `ServerArgs`' default 0.8, given
        // or not; 0.5.20 only when unset.
        let d = Release::V0_5_18.rules().pools.dsv4_pools;
        assert_eq!(d, Release::V0_5_19.rules().pools.dsv4_pools);
        assert_eq!(d.operator_swa_full_tokens_ratio(Some(0.8)), Some(0.1));
        assert_eq!(d.operator_swa_full_tokens_ratio(Some(0.25)), Some(0.25));
        let d = Release::V0_5_20.rules().pools.dsv4_pools;
        assert_eq!(d.operator_swa_full_tokens_ratio(Some(0.8)), Some(0.8));
        assert_eq!(d.operator_swa_full_tokens_ratio(None), Some(0.1));
        // 0.5.15–0.5.17 run 0.5.18's formula and ratio rule; 0.5.14 its own formula
        // with the same ratio rule.
        for r in [Release::V0_5_15, Release::V0_5_16, Release::V0_5_17] {
            assert_eq!(r.rules().pools.dsv4_pools, Dsv4Pools::FlatKvBytes0518);
        }
        let d = Release::V0_5_14.rules().pools.dsv4_pools;
        assert_eq!(d, Dsv4Pools::C128PerSwaToken0514);
        assert_eq!(d.operator_swa_full_tokens_ratio(Some(0.8)), Some(0.1));
        assert_eq!(d.operator_swa_full_tokens_ratio(None), Some(0.1));
    }

    #[test]
    fn draft_kv_in_the_target_cell() {
        // DeepSeek-V3, MLA 576 × 2 B × 61 layers = 70,272 B; one NextN layer:
        // int(70,272 × 62 / 61) = 71,424 = 70,272 + 1,152 under every rule.
        assert_eq!(cell_with("deepseek-v3", Release::V0_5_23, 0, false), 70_272);
        assert_eq!(cell_with("deepseek-v3", Release::V0_5_17, 1, false), 71_424);
        assert_eq!(cell_with("deepseek-v3", Release::V0_5_21, 1, false), 71_424);
        assert_eq!(cell_with("deepseek-v3", Release::V0_5_23, 1, false), 71_424);
        // GLM-5.2: KV 78 × 1,152 = 89,856 + index-K on the 21 owned layers × 132 =
        // 2,772 → 92,628 where elided (0.5.22+; 0.5.18–0.5.21 with HiCache off), on all
        // 78 × 132 = 10,296 → 100,152 where not (≤ 0.5.17; 0.5.18–0.5.21 HiCache on).
        assert_eq!(cell_with("glm-5.2", Release::V0_5_23, 0, false), 92_628);
        assert_eq!(cell_with("glm-5.2", Release::V0_5_23, 0, true), 92_628);
        assert_eq!(cell_with("glm-5.2", Release::V0_5_21, 0, false), 92_628);
        assert_eq!(cell_with("glm-5.2", Release::V0_5_21, 0, true), 100_152);
        assert_eq!(cell_with("glm-5.2", Release::V0_5_17, 0, false), 100_152);
        // One NextN layer. 0.5.17 scales: int(100,152 × 79 / 78) = 100,152 + 1,284 =
        // 101,436. 0.5.18+ adds 89,856 / 78 = 1,152 of KV and a full indexer layer (132):
        // elided 92,628 + 1,284 = 93,912 (the scaling would give int(92,628 × 79 / 78) =
        // 93,815); not elided 100,152 + 1,284 = 101,436.
        assert_eq!(cell_with("glm-5.2", Release::V0_5_17, 1, false), 101_436);
        assert_eq!(cell_with("glm-5.2", Release::V0_5_18, 1, false), 93_912);
        assert_eq!(cell_with("glm-5.2", Release::V0_5_18, 1, true), 101_436);
        assert_eq!(cell_with("glm-5.2", Release::V0_5_21, 1, true), 101_436);
        assert_eq!(cell_with("glm-5.2", Release::V0_5_23, 1, true), 93_912);
    }

    /// `_should_elide_dsa_index_k`'s HiCache and PD conditions, 0.5.18–0.5.21 only.
    #[test]
    fn dsa_index_k_by_release_hicache_and_pd() {
        use IndexKLayers::{All, Owned};
        let at = |r: Release, hicache: bool, pd: bool| {
            let p = dsa_index_k_layers(r.rules().pools.dsa_index_k, hicache, pd);
            assert_eq!(p.device, p.host, "{r}");
            p.device
        };
        for (hicache, pd) in [(false, false), (true, false), (false, true), (true, true)] {
            assert_eq!(at(Release::V0_5_14, hicache, pd), All);
            assert_eq!(at(Release::V0_5_17, hicache, pd), All);
            assert_eq!(at(Release::V0_5_22, hicache, pd), Owned);
            assert_eq!(at(Release::V0_5_23, hicache, pd), Owned);
            for r in [Release::V0_5_18, Release::V0_5_19, Release::V0_5_21] {
                let want = if hicache || pd { All } else { Owned };
                assert_eq!(at(r, hicache, pd), want, "{r} hicache={hicache} pd={pd}");
            }
        }
        // The host indexer pool of GLM-5.2 (bf16, TP8): 78 × 132 under PD in 0.5.21,
        // 21 × 132 in 0.5.23.
        let m = model_preset("glm-5.2").unwrap();
        let layout = ParallelLayout::tp(8);
        let host = |r: Release, pd: bool| {
            let g = inputs(m, &layout, r, 0, false, pd).host_geometry();
            g.iter()
                .find(|p| p.name == "indexer")
                .unwrap()
                .bytes_per_token
        };
        assert_eq!(host(Release::V0_5_21, true), 10_296);
        assert_eq!(host(Release::V0_5_21, false), 2_772);
        assert_eq!(host(Release::V0_5_23, true), 2_772);
    }
}
