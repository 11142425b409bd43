//! A start-up plan: everything about one scenario that does not change between Monte
//! Carlo runs, computed once — pool geometry, device pool, timings, the memory template —
//! so a run only draws jitter and replays events.

use crate::engine::SimRng;
use crate::error::FieldError;
use crate::hardware::{CgroupId, CgroupLimits, CgroupVersion, ChargeKind, HostMemory};
use crate::model::DevicePoolInputs;
use crate::release::log_lines::{ErrorKind, LogRules};
use crate::scenario::Scenario;
use crate::scenario::schema::{
    CgroupLevelSpec, CgroupSpec, CgroupVersionSpec, JitterSpec, MemorySpec, PinMethod,
    PreexistingSpec, SiblingSpec,
};
use crate::sizing::{AutoSizeRule, HicacheArgs, HostPoolSizeArg, Rules};
use crate::units::Nanos;

use rand::RngExt;
use rand_distr::{Distribution, Exp, LogNormal, Normal};

/// One host-mirrored pool of a rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolPlan {
    pub name: &'static str,
    /// SGLang's `pool_label` in its log lines: `hybrid_cache/hybrid_pool_assembler.py:
    /// build_hybrid_swa_stack` labels the full-attention pool `full` beside `swa`
    /// (0.5.17+); every other pool keeps its name (`kv` by `pool_host/base.py`'s default).
    pub label: &'static str,
    /// Bytes per token, or per state slot when `spec.unit` is slots.
    pub bytes_per_token: u64,
    /// How the release builds and sizes it (`crate::pools`).
    pub spec: crate::pools::HostPoolSpec,
    /// A DeepSeek-V4 host pool (`DeepSeekV4PagedHostPool` / `DeepSeekV4StateHostPool`):
    /// its layers and page bytes, for its own log line and refusal text.
    pub dsv4: Option<crate::model::dsv4::Dsv4HostPool>,
}

impl PoolPlan {
    /// SGLang's refusal text when `requested` bytes exceed `budget`: the V4 pools' own
    /// (`Not enough host memory for V4 paged pool …`), else the pool's
    /// ([`crate::sizing::refusal_message_for`]).
    pub fn refusal_message(&self, requested: u64, budget: i128) -> String {
        match &self.dsv4 {
            Some(v4) => {
                crate::model::dsv4::dsv4_refusal_message(self.name, v4.state, requested, budget)
            }
            None => crate::sizing::refusal_message_for(self.name, requested, budget),
        }
    }
}

/// How a rank sizes its host pools, from the flags and the version's rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HicacheSizing {
    /// HiCache is off: no host pools.
    Off,
    /// `--hicache-size` (GB, > 0) or a ratio (explicit, or the default where the version
    /// has no auto-size): checked by the version's explicit path.
    Explicit { ratio: f64, size_gb: f64 },
    /// #40135 auto-size (`hicache_auto_size.py`): neither ratio nor size given.
    AutoSize { fraction: f64, default_ratio: f64 },
    /// V5 auto-HiCache (`hicache_auto.py`): `--enable-hierarchical-cache` left unset.
    AutoHicache { fraction: f64 },
}

/// Resolves the sizing mode; errors carry SGLang's ValueError text.
///
/// Mirrors `arg_groups/hicache_hook.py: handle_hicache_ratio_default` (an explicit
/// `--hicache-ratio` or `--hicache-size` turns the fraction off, #40135+) and the V5
/// `handle_hicache_auto` (HiCache left unset = auto mode, `auto-hicache` only). With
/// HiCache switched on explicitly and no size, #40135's `hicache_auto_size.py` applies
/// (ratio capped at the 2.0 / 1.2 default) in every version that has auto-size; before
/// #40135 the default ratio is checked like an explicit one.
pub fn hicache_sizing(
    s: &crate::domain::ServerArgs,
    rules: &Rules,
) -> Result<HicacheSizing, crate::sizing::SizingArgError> {
    let auto_mode =
        s.enable_hierarchical_cache.is_none() && rules.auto_size == AutoSizeRule::AutoHicache;
    if !s.hicache_enabled() && !auto_mode {
        return Ok(HicacheSizing::Off);
    }
    let r = crate::sizing::resolve_hicache_args(&HicacheArgs::of(s))?;
    let ratio = r.ratio.unwrap_or(2.0);
    Ok(match (r.fraction, rules.auto_size) {
        (Some(f), AutoSizeRule::AutoHicache) if auto_mode => {
            HicacheSizing::AutoHicache { fraction: f }
        }
        (Some(f), AutoSizeRule::Pr40135 | AutoSizeRule::AutoHicache) => HicacheSizing::AutoSize {
            fraction: f,
            default_ratio: ratio,
        },
        _ => HicacheSizing::Explicit {
            ratio,
            size_gb: r.size_gb,
        },
    })
}

/// Why an arrival-jitter distribution cannot be drawn from.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JitterError {
    #[error("`high` must be at least `low`")]
    HighBelowLow,
    #[error("{0}")]
    Normal(#[from] rand_distr::NormalError),
    #[error("{0}")]
    Exp(#[from] rand_distr::ExpError),
}

/// How each rank's arrival is drawn.
#[derive(Debug, Clone)]
pub enum Jitter {
    None,
    Uniform { low: f64, high: f64 },
    Normal(Normal<f64>),
    Exponential(Exp<f64>),
    LogNormal(LogNormal<f64>),
}

impl Jitter {
    fn from_spec(s: &JitterSpec) -> Result<Self, JitterError> {
        Ok(match s {
            JitterSpec::None => Jitter::None,
            JitterSpec::Uniform { low, high } => {
                if high.0 < low.0 {
                    return Err(JitterError::HighBelowLow);
                }
                Jitter::Uniform {
                    low: low.0 as f64,
                    high: high.0 as f64,
                }
            }
            JitterSpec::Normal { mean, std } => {
                Jitter::Normal(Normal::new(mean.0 as f64, std.0 as f64)?)
            }
            JitterSpec::Exponential { mean } => {
                if mean.0 == 0 {
                    Jitter::None
                } else {
                    Jitter::Exponential(Exp::new(1.0 / mean.0 as f64)?)
                }
            }
            JitterSpec::LogNormal { median, sigma } => {
                Jitter::LogNormal(LogNormal::new((median.0.max(1) as f64).ln(), *sigma)?)
            }
        })
    }

    /// One delay in nanoseconds (negative draws are truncated at 0, draws past
    /// [`crate::units::MAX_DURATION_NS`] — a log-normal's far tail — at that bound).
    pub fn draw(&self, rng: &mut SimRng) -> Nanos {
        let x = match self {
            Jitter::None => 0.0,
            Jitter::Uniform { low, high } => {
                if high > low {
                    rng.random_range(*low..=*high)
                } else {
                    *low
                }
            }
            Jitter::Normal(d) => d.sample(rng),
            Jitter::Exponential(d) => d.sample(rng),
            Jitter::LogNormal(d) => d.sample(rng),
        };
        if x > 0.0 {
            // `+inf` and finite draws past the bound saturate; NaN fails `x > 0`.
            x.min(crate::units::MAX_DURATION_NS as f64).round() as Nanos
        } else {
            0
        }
    }
}

/// Steps a rank's weight load charges the page cache in (a later rank sees an earlier
/// rank's cache grow).
const LOAD_STEPS: u32 = 4;

/// Host pools a plan may build (KV, SWA, indexer, state, drafts: five at most today);
/// a rank keeps its counts in a fixed array so a Monte Carlo run allocates nothing.
pub const MAX_HOST_POOLS: usize = 8;

/// Everything one start-up run needs.
#[derive(Debug, Clone)]
pub struct StartupPlan {
    /// The device KV pool SGLang cannot build (the model does not fit): every rank
    /// raises in its model runner after the load, before any host pool.
    pub device_failure: Option<DeviceFailure>,
    /// [`Self::host_tokens`] for the sizes that do not depend on a run (an explicit
    /// `--hicache-size` or ratio), computed once per plan.
    pub fixed_host_tokens: Vec<u64>,
    pub version: crate::release::Sglang,
    pub rules: Rules,
    pub nnodes: u32,
    pub world_size: u32,
    /// Ranks placed on each node (`world_size / nnodes`).
    pub ranks_per_node: u32,
    /// What SGLang's `ranks_per_host()` returns (`world_size // nnodes`).
    pub ranks_per_host: u64,
    pub page_size: u64,
    /// The device KV pool's usable size in tokens (same on every rank).
    pub device_tokens: u64,
    /// The device SWA pool (sliding-window models) and state slots (hybrid models).
    pub device_swa_tokens: Option<u64>,
    pub device_state_slots: Option<u64>,
    /// The release's pool rules (`--hicache-size` split, MTP draft, …).
    pub pool_rules: crate::release::PoolRules,
    /// Σ device bytes of the host-mirrored pools (`_estimate_hicache_bytes`).
    pub device_bytes: u64,
    pub pools: Vec<PoolPlan>,
    /// How the host pools are sized (explicit, auto, off).
    pub sizing: HicacheSizing,
    pub process_memory: u64,
    /// Checkpoint bytes each rank reads.
    pub load_bytes_per_rank: u64,
    /// Read speed of one rank (the node's bandwidth shared by its ranks).
    pub load_bw_per_rank: f64,
    pub load_through_cache: bool,
    pub load_steps: u32,
    /// Time of one load step.
    pub load_step_ns: Nanos,
    /// Page cache of the node dropped (aged out, reclaimed) by the time its first rank
    /// sizes its pools.
    pub reclaimed_per_node: u64,
    pub post_load: Nanos,
    pub pin_bw: f64,
    pub pin_steps: u32,
    pub pin_kind: ChargeKind,
    pub offsets: Vec<Nanos>,
    pub jitter: Jitter,
    /// Each node's memory before any rank starts (node 0 first).
    pub nodes: Vec<NodeMemory>,
    /// The log formats (and host-registration rule) of the release the version maps to.
    pub log_rules: LogRules,
    /// `--hicache-mem-layout`: page-first layouts register in whole-page chunks from
    /// 0.5.19; the DSA indexer's and the state pool's `Allocating` lines print it.
    pub mem_layout: crate::domain::MemLayout,
    /// `startup.pin.failure_rc` / `failure_error`.
    pub pin_failure_rc: i64,
    pub pin_failure_error: String,
    /// Pinned host bytes the weight offload takes on each rank while its model is built,
    /// before the weights are read ([`crate::model::offload::OffloadFigures::
    /// host_pinned_bytes`]); 0 without offload.
    pub offload_host_bytes: u64,
    /// How they are charged: torch's pinned allocator calls `cudaHostAlloc` by default
    /// (shmem, like `startup.pin.method: cudaHostAlloc`).
    pub offload_kind: ChargeKind,
    /// Every rank raises while its model is built (SGLang's exception and message): a
    /// `failed` start-up.
    pub build_failure: Option<(ErrorKind, String)>,
}

/// A model that leaves no GPU memory for the KV cache: what SGLang raises, and what
/// would help.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceFailure {
    pub kind: crate::release::log_lines::ErrorKind,
    /// SGLang's own text.
    pub message: String,
    /// What would make it fit (the flag that helps), in the simulator's words.
    pub hint: String,
}

impl DeviceFailure {
    /// Weights per rank `weights` against `free` bytes free before the load at
    /// `mem_fraction_static` `f`:
    /// - the weights alone do not fit: the load raises CUDA's out-of-memory error
    ///   (`torch.OutOfMemoryError`), and only a larger `--tp` (or a smaller checkpoint)
    ///   helps;
    /// - they fit but leave no memory under the fraction (`rest ≤ 0`):
    ///   `_profile_available_bytes` raises `ValueError("Loaded weights leave no GPU memory
    ///   for the KV cache …")` ([`crate::pools::PoolError::WeightsLeaveNoKvRoom`],
    ///   0.5.14–0.5.23);
    /// - a rest smaller than one page of cells: `MemoryPoolConfig.__post_init__`
    ///   (`model_executor/pool_configurator.py`, 0.5.14–0.5.23) raises `RuntimeError("Not
    ///   enough memory. Please try to increase --mem-fraction-static. Current value:
    ///   mem_fraction_static=F")`.
    ///
    /// A fraction above `weights / free`, or a larger `--tp`, helps.
    pub fn of(weights: u64, free: u64, f: f64, tp: u32) -> DeviceFailure {
        use crate::release::log_lines::ErrorKind;
        let human_bytes = |b: u64| format!("{} GB", crate::units::fmt_gb(b as i128));
        let larger_tp = larger_tp(tp);
        if weights >= free {
            return DeviceFailure {
                kind: ErrorKind::OutOfMemoryError,
                message: format!(
                    "CUDA out of memory while loading the weights: {} per rank, {} free on the GPU",
                    human_bytes(weights),
                    human_bytes(free)
                ),
                hint: format!(
                    "the weights alone exceed the GPU's free memory: {larger_tp}, or serve a smaller checkpoint format"
                ),
            };
        }
        let needed = weights as f64 / free as f64;
        let hint = format!(
            "the weights ({} per rank) take {:.1} % of the {} free before the load: raise --mem-fraction-static above {:.3}, or {larger_tp}",
            human_bytes(weights),
            100.0 * needed,
            human_bytes(free),
            needed
        );
        // `rest = free·f − weights` (`profile_max_num_token`, GiB floats).
        const GIB: f64 = (1u64 << 30) as f64;
        let (before, after) = (free as f64 / GIB, (free - weights) as f64 / GIB);
        if after - before * (1.0 - f) <= 0.0 {
            let e = crate::pools::PoolError::WeightsLeaveNoKvRoom {
                mem_fraction_static: f,
                minimum: 1.0 - after / before,
            };
            return DeviceFailure {
                kind: ErrorKind::ValueError,
                message: e.to_string(),
                hint,
            };
        }
        DeviceFailure {
            kind: ErrorKind::RuntimeError,
            message: format!(
                "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static={}",
                crate::sizing::py_repr_float(f)
            ),
            hint,
        }
    }

    /// DeepSeek-V4's device pools that SGLang cannot build (0.5.18–0.5.23), from
    /// [`crate::pools::dsv4_device_pools`]'s error; `None` for an error that is not a
    /// failed start-up (a path the simulator does not model). Each is SGLang's own:
    /// - the weights alone exceed the free memory: the load's CUDA out-of-memory error
    ///   ([`Self::of`]);
    /// - they fit but leave no memory under the fraction: `_profile_available_bytes`'
    ///   `ValueError("Loaded weights leave no GPU memory for the KV cache …")`;
    /// - cap mode: `DSV4PoolConfigurator.calculate_pool_sizes`' `RuntimeError("The DSV4
    ///   SWA pool cap … leaves no room …")`;
    /// - ratio mode: `_compute_dsv4_sizes` → `validate_swa_pool_size`'s `ValueError("SWA
    ///   pool (N tokens) cannot hold even one request …")`, raised for a full pool of 0
    ///   too (its SWA share is 0), before `MemoryPoolConfig` would say "Not enough
    ///   memory".
    pub fn of_dsv4(
        e: &crate::pools::PoolError,
        weights: u64,
        free: u64,
        f: f64,
        tp: u32,
    ) -> Option<DeviceFailure> {
        use crate::model::dsv4::Dsv4Error;
        use crate::pools::PoolError;
        use crate::release::log_lines::ErrorKind;
        let larger_tp = larger_tp(tp);
        match e {
            // the same rule as any model's (`rest ≤ 0`, or weights beyond the free memory)
            PoolError::WeightsLeaveNoKvRoom { .. } => Some(Self::of(weights, free, f, tp)),
            PoolError::Dsv4(Dsv4Error::SwaCapLeavesNoRoom { .. }) => Some(DeviceFailure {
                kind: ErrorKind::RuntimeError,
                message: e.to_string(),
                hint: format!(
                    "the SWA pool cap is paid up front and takes the whole KV budget: lower --max-running-requests, raise --mem-fraction-static, or {larger_tp}"
                ),
            }),
            PoolError::Dsv4(Dsv4Error::SwaBelowFloor { window, page, .. }) => Some(DeviceFailure {
                kind: ErrorKind::ValueError,
                message: e.to_string(),
                hint: format!(
                    "the KV budget left after the C128 compress-state rings (which grow with --max-running-requests) holds too few tokens for an SWA pool above one request's {window} + {page}: raise --mem-fraction-static, lower --max-running-requests, or {larger_tp}"
                ),
            }),
            PoolError::Dsv4(Dsv4Error::DraftTokensExceedRing { ratio, .. }) => {
                Some(DeviceFailure {
                    kind: ErrorKind::AssertionError,
                    message: e.to_string(),
                    hint: format!(
                        "the C{ratio} compress-state ring cannot hold that many draft tokens: lower --speculative-num-steps"
                    ),
                })
            }
            _ => None,
        }
    }
}

/// The hint every device failure ends with: the next TP halves the weights per rank.
fn larger_tp(tp: u32) -> String {
    format!(
        "raise --tp (TP{tp} → TP{} halves the weights per rank)",
        tp.saturating_mul(2)
    )
}

impl StartupPlan {
    /// Builds the plan of `s`; errors are about the scenario (the caller adds file/line).
    pub fn new(s: &Scenario) -> Result<Self, FieldError> {
        let rules = s.version.rules();
        let world = s.layout.world_size() as u32;
        let nnodes = s.layout.nnodes.max(1);
        let ranks_per_node = world / nnodes;
        // DeepSeek-V4 runs 256-token pages whatever `--page-size` says
        // (`model_overrides/deepseek_v4.py`).
        let page_size = if matches!(s.model.attention, crate::model::Attention::Dsv4 { .. }) {
            crate::model::dsv4::DSV4_PAGE_SIZE
        } else {
            s.server.page_size.max(1) as u64
        };
        let quant = s.startup.weight_load.quantization;
        let weights_per_rank = s
            .weights_per_rank()
            .map_err(|m| FieldError::new("startup.weight_load.quantization", m))?;
        let gpu_overhead = s.gpu_reserved();
        let mem_fraction_static = crate::pools::resolve_mem_fraction(s).value;
        // The pools this release builds for this model (`crate::pools`).
        let pool_rules = s.version.release_rules().pools;
        let pool_inputs = crate::pools::PoolSetInputs {
            model: &s.model,
            layout: &s.layout,
            dtype: s.kv_dtype,
            rules: pool_rules,
            device: DevicePoolInputs {
                free_before_load: s.node.gpu_memory.0.saturating_sub(gpu_overhead),
                weights_per_rank,
                mem_fraction_static,
                cell_size: 0,
                page_size,
                max_total_tokens: s.server.max_total_tokens,
            },
            draft: crate::pools::spec_draft(&s.server, &s.model).0,
            swa_full_tokens_ratio: s.server.swa_full_tokens_ratio(),
            mamba_full_memory_ratio: s.server.mamba_full_memory_ratio(),
            max_mamba_cache_size: s.server.max_mamba_cache_size,
            enable_hierarchical_cache: s.server.hicache_enabled(),
            // `_should_elide_dsa_index_k` reads `disaggregation_mode`.
            pd_disaggregation: !s.server.disaggregation_mode.is_null(),
        };
        let sizing = hicache_sizing(&s.server, &rules).map_err(|m| FieldError::new("server", m))?;
        let dsv4 = crate::model::dsv4::Dsv4Geometry::of(&s.model.attention, s.model.layers);
        // A DeepSeek-V4 device pool SGLang cannot build: every rank fails after the load.
        let mut dsv4_failure = None;
        let (device, pools) = match &dsv4 {
            Some(geo) => {
                // DeepSeek-V4: the device pools as `DSV4PoolConfigurator` sizes them, the
                // host pools as `build_deepseek_v4_hicache_stack` builds them.
                let p = match crate::pools::dsv4_device_pools(
                    &pool_inputs,
                    &s.server,
                    s.node.gpu_memory.0,
                ) {
                    Ok(p) => p,
                    Err(e) => {
                        let f = DeviceFailure::of_dsv4(
                            &e,
                            weights_per_rank,
                            pool_inputs.device.free_before_load,
                            mem_fraction_static,
                            s.layout.tp_size,
                        )
                        .ok_or_else(|| dsv4_refusal(e))?;
                        dsv4_failure = Some(f);
                        crate::model::dsv4::Dsv4PoolSizes {
                            full: 0,
                            swa: 0,
                            c4: 0,
                            c128: 0,
                            c4_state: 0,
                            fixed_bytes: 0,
                        }
                    }
                };
                // The host pools come after the device pools: a failed device pool
                // raises first.
                match sizing {
                    _ if dsv4_failure.is_some() => {}
                    HicacheSizing::Off => {}
                    // SGLang's own refusals of the sizing come first (below).
                    HicacheSizing::Explicit { size_gb, .. }
                        if size_gb <= 0.0
                            && s.server.speculative_algorithm.is_some()
                            && pool_rules.dsv4_host
                                != crate::release::Dsv4HostPools::NotModelled =>
                    {
                        return Err(FieldError::not_modelled(
                            "server.speculative_algorithm",
                            "DeepSeek-V4's HiCache host pools with a speculative draft (`build_deepseek_v4_hicache_stack` packs the draft's SWA layer into the `swa` host pool; the C4 state host pages follow the 16-row rings) are not modelled: the device pools are; HiCache off gives them exactly",
                        ));
                    }
                    _ if pool_rules.dsv4_host == crate::release::Dsv4HostPools::NotModelled => {
                        return Err(FieldError::not_modelled(
                            "server.enable_hierarchical_cache",
                            format!(
                                "DeepSeek-V4's HiCache host pools under SGLang {} (its own `hybrid_pool_assembler.py: build_deepseek_v4_hicache_stack`, whose pools differ from 0.5.18's) are not modelled: the device pools are; pick a release from 0.5.18 on, or HiCache off",
                                s.version
                            ),
                        ));
                    }
                    HicacheSizing::AutoSize { .. } | HicacheSizing::AutoHicache { .. } => {
                        return Err(FieldError::new(
                            "server.hicache_ratio",
                            crate::model::dsv4::DSV4_AUTO_SIZE_REFUSAL,
                        ));
                    }
                    HicacheSizing::Explicit { size_gb, .. } if size_gb > 0.0 => {
                        return Err(FieldError::new(
                            "server.hicache_size",
                            crate::model::dsv4::DSV4_HICACHE_SIZE_REFUSAL,
                        ));
                    }
                    _ => {}
                }
                let device = crate::pools::DevicePools {
                    full_tokens: p.full,
                    swa_tokens: Some(p.swa),
                    state_slots: None,
                };
                let pools: Vec<PoolPlan> = geo
                    .host_pools(crate::model::dsv4::DSV4_PAGE_SIZE)
                    .into_iter()
                    .zip(crate::pools::dsv4_host_pool_specs(
                        geo,
                        p.full,
                        p.swa,
                        crate::model::dsv4::DSV4_PAGE_SIZE,
                    ))
                    .map(|(v4, spec)| PoolPlan {
                        name: spec.name,
                        label: spec.name,
                        bytes_per_token: spec.bytes_per_unit,
                        spec,
                        dsv4: Some(v4),
                    })
                    .collect();
                (device, pools)
            }
            None => {
                let device = crate::pools::device_pools(&pool_inputs)
                    .map_err(|m| FieldError::new("server", m))?;
                let specs = crate::pools::host_pool_specs(&pool_inputs, &device);
                let has_swa = specs.iter().any(|x| x.name == "swa");
                let pools: Vec<PoolPlan> = specs
                    .into_iter()
                    .map(|spec| PoolPlan {
                        name: spec.name,
                        label: if spec.name == "kv" && has_swa {
                            "full"
                        } else {
                            spec.name
                        },
                        bytes_per_token: spec.bytes_per_unit,
                        spec,
                        dsv4: None,
                    })
                    .collect();
                (device, pools)
            }
        };
        let device_tokens = device.full_tokens;
        let device_failure = dsv4_failure.or_else(|| {
            (device_tokens == 0).then(|| {
                DeviceFailure::of(
                    weights_per_rank,
                    pool_inputs.device.free_before_load,
                    mem_fraction_static,
                    s.layout.tp_size,
                )
            })
        });
        let device_bytes = pools.iter().map(|p| p.spec.device_bytes).sum();

        let ckpt = match s.startup.weight_load.bytes_per_node {
            Some(b) => b.0,
            None => {
                s.model
                    .checkpoint_bytes(quant)
                    .map_err(|m| FieldError::new("startup.weight_load.quantization", m))?
                    / nnodes as u64
            }
        };
        let read_bw = s
            .startup
            .weight_load
            .read_bandwidth
            .map(|b| b.0)
            .unwrap_or(s.node.local_read_bandwidth.0);
        let pin_bw = s
            .startup
            .pin
            .bandwidth
            .map(|b| b.0)
            .unwrap_or(s.node.pin_bandwidth.0);

        let nodes = build_nodes(s, nnodes)?;
        let jitter = Jitter::from_spec(&s.startup.arrival.jitter)
            .map_err(|m| FieldError::new("startup.arrival.jitter", m))?;
        let mut offsets: Vec<Nanos> = s.startup.arrival.offsets.iter().map(|d| d.0).collect();
        offsets.resize(world as usize, 0);

        if pools.len() > MAX_HOST_POOLS {
            return Err(FieldError::new(
                "model",
                format!(
                    "{} host pools; at most {MAX_HOST_POOLS} are modelled",
                    pools.len()
                ),
            ));
        }
        let mut plan = StartupPlan {
            device_failure,
            fixed_host_tokens: Vec::new(),
            version: s.version,
            rules,
            nnodes,
            world_size: world,
            ranks_per_node,
            ranks_per_host: s.layout.ranks_per_host(),
            page_size,
            device_tokens,
            device_swa_tokens: device.swa_tokens,
            device_state_slots: device.state_slots,
            pool_rules,
            device_bytes,
            pools,
            sizing,
            process_memory: s
                .startup
                .process_memory
                .map(|b| b.0)
                .unwrap_or(15 * crate::units::GB),
            load_bytes_per_rank: ckpt / ranks_per_node.max(1) as u64,
            load_bw_per_rank: read_bw / ranks_per_node.max(1) as f64,
            load_through_cache: s.startup.weight_load.through_page_cache.unwrap_or(true),
            load_steps: LOAD_STEPS,
            load_step_ns: Self::duration(
                ckpt / ranks_per_node.max(1) as u64 / LOAD_STEPS as u64,
                read_bw / ranks_per_node.max(1) as f64,
            ),
            reclaimed_per_node: s.startup.weight_load.reclaimed_before_sizing.0,
            post_load: s
                .startup
                .post_load
                .map(|d| d.0)
                .unwrap_or(5 * crate::units::NS_PER_S),
            pin_bw,
            pin_steps: s.startup.pin.steps.unwrap_or(8),
            pin_kind: match s.startup.pin.method {
                PinMethod::CudaHostRegister => ChargeKind::Anon,
                PinMethod::CudaHostAlloc => ChargeKind::Shmem,
            },
            offsets,
            jitter,
            nodes,
            log_rules: s.version.release_rules().log,
            mem_layout: s.server.hicache_mem_layout,
            pin_failure_rc: s.startup.pin.failure_rc.unwrap_or(2),
            pin_failure_error: s
                .startup
                .pin
                .failure_error
                .clone()
                .unwrap_or_else(|| "out of memory".into()),
            offload_host_bytes: s.offload.figures().map_or(0, |f| f.host_pinned_bytes),
            offload_kind: ChargeKind::Shmem,
            build_failure: match &s.offload {
                crate::model::offload::OffloadEffect::Fails { error, message } => Some((
                    match *error {
                        "TypeError" => ErrorKind::TypeError,
                        _ => ErrorKind::RuntimeError,
                    },
                    message.clone(),
                )),
                _ => None,
            },
        };
        plan.fixed_host_tokens = plan.host_tokens(None);
        Ok(plan)
    }

    /// Host tokens (or state slots) of every pool of a rank, from `--hicache-size` or
    /// the ratio, under the release's pool rules (`crate::pools::host_pool_counts`: the
    /// `_split_hicache_size` split from 0.5.17, the DSA indexer mirroring the KV pool's
    /// slots, the ≤ 0.5.17 MTP draft pool's ratio).
    pub fn host_tokens(&self, auto_ratio: Option<f64>) -> Vec<u64> {
        let p = self;
        let arg = match (auto_ratio, p.sizing) {
            (Some(ratio), _) => HostPoolSizeArg::Ratio(ratio),
            (None, HicacheSizing::Explicit { size_gb, .. }) if size_gb > 0.0 => {
                HostPoolSizeArg::SizeGb(size_gb)
            }
            (None, HicacheSizing::Explicit { ratio, .. }) => HostPoolSizeArg::Ratio(ratio),
            (None, HicacheSizing::AutoSize { default_ratio, .. }) => {
                HostPoolSizeArg::Ratio(default_ratio)
            }
            (None, HicacheSizing::AutoHicache { .. } | HicacheSizing::Off) => {
                HostPoolSizeArg::Ratio(0.0)
            }
        };
        let specs: Vec<crate::pools::HostPoolSpec> = p.pools.iter().map(|x| x.spec).collect();
        crate::pools::host_pool_counts(&specs, arg, p.pool_rules.hicache_size_split)
    }

    /// Nanoseconds to move `bytes` at `bw` bytes/s.
    pub fn duration(bytes: u64, bw: f64) -> Nanos {
        if bw <= 0.0 {
            0
        } else {
            (bytes as f64 / bw * 1e9).round() as Nanos
        }
    }
}

/// One node's memory before any rank starts, where its ranks run, and what they may pin.
#[derive(Debug, Clone)]
pub struct NodeMemory {
    pub memory: HostMemory,
    /// The engine's cgroup in `memory`: the job, or the deepest `below` level (the mount
    /// root when no cgroup is modelled). Ranks charge and read here.
    pub job_cgroup: CgroupId,
    /// `memory.pin_limit_per_rank`: the most one rank can register.
    pub pin_limit: Option<u64>,
}

/// Every node's memory (`memory:` with its `nodes:` overrides merged in).
pub fn build_nodes(s: &Scenario, nnodes: u32) -> Result<Vec<NodeMemory>, FieldError> {
    if s.memory.nodes.len() > nnodes as usize {
        return Err(FieldError::new(
            "memory.nodes",
            format!(
                "{} per-node blocks for {} node(s) (world size / GPUs per node)",
                s.memory.nodes.len(),
                nnodes
            ),
        ));
    }
    (0..nnodes as usize)
        .map(|i| {
            let spec = s.memory.for_node(i)?;
            // Errors inside a per-node block name it.
            let prefix = |f: String| {
                if s.memory.nodes.get(i).is_some() {
                    f.replacen("memory", &format!("memory.nodes[{i}]"), 1)
                } else {
                    f
                }
            };
            let (memory, job_cgroup) = build_memory(s, &spec).map_err(|e| FieldError {
                field: prefix(e.field),
                ..e
            })?;
            Ok(NodeMemory {
                memory,
                job_cgroup,
                pin_limit: spec.pin_limit_per_rank.map(|b| b.0),
            })
        })
        .collect()
}

/// A DeepSeek-V4 pool error that is not a failed start-up: a rule the simulator does not
/// model (the release's configurator, a draft it does not size — DSpark's, or any draft
/// in the configurator's cap mode —, V4.1's ratio-1/2 layers) is
/// `not_modelled`; anything else is the simulator's error about the server.
fn dsv4_refusal(e: crate::pools::PoolError) -> FieldError {
    use crate::model::dsv4::Dsv4Error;
    use crate::pools::PoolError;
    match e {
        PoolError::Dsv4Speculative(..)
        | PoolError::Dsv4(Dsv4Error::UnmodelledRatio(_) | Dsv4Error::SpeculativeCapMode) => {
            FieldError::not_modelled("server", e)
        }
        e => FieldError::new("server", e),
    }
}

/// One node's memory: host RAM, other tenants, the cgroup tree (ancestors, siblings at
/// any level, the job, levels below it down to the engine's cgroup) and what was charged
/// before the ranks start.
fn build_memory(s: &Scenario, m: &MemorySpec) -> Result<(HostMemory, CgroupId), FieldError> {
    let total = m.host_total.map(|b| b.0).unwrap_or(s.node.host_dram.0);
    let version = match m.cgroup.as_ref().map(|c| c.version) {
        Some(CgroupVersionSpec::V1) => CgroupVersion::V1,
        _ => CgroupVersion::V2,
    };
    if m.psutil_available.is_some() && m.host_other_used.0 != 0 {
        return Err(FieldError::new(
            "memory.psutil_available",
            "give either `psutil_available` (what `free -b` shows as available) or `host_other_used` (which derives it), not both",
        ));
    }
    let mut mem = HostMemory::new(version, total);
    mem.other_used = m.host_other_used.0;
    mem.other_cache = m.host_other_page_cache.0;
    if m.host_other_used
        .0
        .saturating_add(m.host_other_page_cache.0)
        > total
    {
        return Err(FieldError::new(
            "memory.host_other_used",
            "host_other_used + host_other_page_cache is larger than the host's memory",
        ));
    }
    let engine = match &m.cgroup {
        // No memory cgroup visible: SGLang's headroom is None and only psutil bounds.
        None => mem.root(),
        Some(cg) => build_tree(&mut mem, cg)?,
    };
    if let Some(avail) = m.psutil_available {
        // MemAvailable falls one for one with unreclaimable memory outside the cgroups.
        let now = mem.psutil_available();
        if avail.0 > now {
            return Err(FieldError::new(
                "memory.psutil_available",
                format!(
                    "{} B is more than this node can have available ({} B: host memory less the page cache and pre-existing charges given)",
                    avail.0, now
                ),
            ));
        }
        mem.other_used = now - avail.0;
    }
    Ok((mem, engine))
}

fn level_name(name: &str, default: String) -> String {
    if name.is_empty() {
        default
    } else {
        name.to_string()
    }
}

/// Builds the cgroup tree of `cg` in `mem`; returns the engine's cgroup.
fn build_tree(mem: &mut HostMemory, cg: &CgroupSpec) -> Result<CgroupId, FieldError> {
    let bad = |field: String, e: String| FieldError::new(field, e);
    // Mount root down to the job's parent; each level's siblings go next to it.
    let mut parent = mem.root();
    let n = cg.parents.len();
    for (k, p) in cg.parents.iter().enumerate().rev() {
        let field = format!("memory.cgroup.parents[{k}]");
        add_siblings(mem, parent, &p.siblings, &format!("{field}.siblings"))?;
        parent = add_level(
            mem,
            parent,
            p,
            level_name(&p.name, format!("level{}", n - 1 - k)),
            &field,
        )?;
    }
    add_siblings(mem, parent, &cg.siblings, "memory.cgroup.siblings")?;
    let job = mem
        .add_cgroup(
            parent,
            "job",
            CgroupLimits {
                max: cg.max.map(|b| b.0),
                high: cg.high.map(|b| b.0),
                min: cg.min.0,
                low: cg.low.0,
            },
        )
        .map_err(|e| bad("memory.cgroup".into(), e.to_string()))?;
    mem.set_min_unreadable(job, cg.min_unreadable);
    mem.set_protected_inside(job, cg.protected_inside);
    let mut own = cg.preexisting.clone();
    own.anon.0 += cg.preexisting_anon.0;
    own.inactive_file.0 += cg.preexisting_page_cache.0;
    precharge(mem, job, &own).map_err(|e| {
        bad(
            "memory.cgroup".into(),
            format!("pre-existing charges do not fit: {e}"),
        )
    })?;
    let mut engine = job;
    for (k, b) in cg.below.iter().enumerate() {
        let field = format!("memory.cgroup.below[{k}]");
        add_siblings(mem, engine, &b.siblings, &format!("{field}.siblings"))?;
        engine = add_level(
            mem,
            engine,
            b,
            level_name(&b.name, format!("below{k}")),
            &field,
        )?;
    }
    Ok(engine)
}

/// A level of the engine's path with its limits and its own pre-existing charges.
fn add_level(
    mem: &mut HostMemory,
    parent: CgroupId,
    l: &CgroupLevelSpec,
    name: String,
    field: &str,
) -> Result<CgroupId, FieldError> {
    let id = mem
        .add_cgroup(
            parent,
            &name,
            CgroupLimits {
                max: l.max.map(|b| b.0),
                high: l.high.map(|b| b.0),
                min: l.min.0,
                low: l.low.0,
            },
        )
        .map_err(|e| FieldError::new(field.to_string(), e.to_string()))?;
    mem.set_min_unreadable(id, l.min_unreadable);
    mem.set_protected_inside(id, l.protected_inside);
    precharge(mem, id, &l.preexisting).map_err(|e| {
        FieldError::new(
            format!("{field}.preexisting"),
            format!("does not fit before start-up: {e}"),
        )
    })?;
    Ok(id)
}

fn add_siblings(
    mem: &mut HostMemory,
    parent: CgroupId,
    sibs: &[SiblingSpec],
    field: &str,
) -> Result<(), FieldError> {
    for (i, sib) in sibs.iter().enumerate() {
        let id = mem
            .add_cgroup(
                parent,
                &level_name(&sib.name, format!("sibling{i}")),
                CgroupLimits {
                    max: sib.max.map(|b| b.0),
                    high: sib.high.map(|b| b.0),
                    min: sib.min.0,
                    low: sib.low.0,
                },
            )
            .map_err(|e| FieldError::new(field.to_string(), e.to_string()))?;
        mem.set_min_unreadable(id, sib.min_unreadable);
        mem.set_protected_inside(id, sib.protected_inside);
        let mut own = sib.preexisting.clone();
        own.anon.0 += sib.anon.0;
        own.shmem.0 += sib.shmem.0;
        own.inactive_file.0 += sib.page_cache.0;
        precharge(mem, id, &own).map_err(|e| {
            FieldError::new(
                format!("{field}[{i}]"),
                format!("does not fit before start-up: {e}"),
            )
        })?;
    }
    Ok(())
}

/// Charges that exist before any rank starts (a sibling's memory, the job's own).
fn precharge(
    mem: &mut HostMemory,
    cg: CgroupId,
    p: &PreexistingSpec,
) -> Result<(), crate::hardware::Oom> {
    let charges = [
        (ChargeKind::Anon, p.anon.0),
        (ChargeKind::Shmem, p.shmem.0),
        (ChargeKind::PageCache, p.inactive_file.0),
        (ChargeKind::PageCacheActive, p.active_file.0),
        (ChargeKind::PageCacheDirty, p.dirty.0),
        (ChargeKind::PageCacheWriteback, p.writeback.0),
    ];
    for &(kind, bytes) in charges.iter().filter(|c| c.1 > 0) {
        mem.charge(cg, kind, bytes)?;
    }
    Ok(())
}
