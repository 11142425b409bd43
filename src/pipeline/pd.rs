//! A prefill-decode disaggregated deployment in the replay (`runtime.pd`,
//! `runtime::timed::pd`): the decode server sized from the scenario, the trace read and
//! replayed on the prefill servers behind the router and the decode servers.

use crate::error::InputError;
use crate::runtime::pd::{DECODE_MAX_RUNNING_ASSUMED, DecodeServer, PD_UNMODELLED, PdSpec};
use crate::runtime::router::RouterSpec;
use crate::runtime::{ReplayConfig, ReplayMetrics, Timing};
use crate::scenario::Scenario;
use crate::workload::read::{TraceOptions, open_trace_with};

/// The decode server of `s`'s deployment: the same launch with `--disaggregation-mode
/// decode`, its radix cache off (`handle_pd_disaggregation`'s default) unless
/// `runtime.pd.decode_radix_cache`, HiCache on it only with its radix cache
/// (`runtime.pd.decode_hicache`, resolved in `spec.decode_hicache_on`) and never its L3,
/// sized as the start-up sizes it (its pool per rank, `release::PdRoles`' reserve); and
/// what a transfer sends per rank. DeepSeek-V4: its compressed pages per token
/// (`_compressed_bytes_per_full_token`), its window's SWA pages
/// (`_get_bytes_per_swa_token`) and its C128 state per request
/// (`prefill.py: _request_state_payload`), under SGLang's default schedule (0.5.23);
/// other models: the start-up's per-token pools (SGLang labels the SWA ones `swa`).
fn decode_server(s: &Scenario, spec: &PdSpec) -> Result<(DecodeServer, TransferBytes), InputError> {
    let at = |m: String| InputError::new("runtime.pd", m);
    if !s.server.disaggregation_mode.is_prefill() {
        return Err(at(
            "runtime.pd replays a prefill-decode deployment from its prefill server: the scenario's server needs --disaggregation-mode prefill".into(),
        )
        .field("server.disaggregation_mode"));
    }
    if spec.decode_hicache_on
        && s.server.hicache_host_memory_mode == crate::domain::HostMemoryMode::BufferOnly
    {
        // `hicache_hook.py: _validate_hicache_host_memory_mode` (0.5.21+); 0.5.19–0.5.20
        // run it, staging L3 only, and the decode side's L3 is not modelled.
        return Err(if s.version.release() >= crate::wheel::Release::V0_5_21 {
            at("the decode server cannot start: --hicache-host-memory-mode buffer_only is not supported on decode instances (SGLang's ValueError): set runtime.pd.decode_hicache: false".into())
                .field("runtime.pd.decode_hicache")
        } else {
            at("a decode server's HiCache in buffer_only mode is not modelled (its host pool stages L3 only, and the decode side's L3 is not modelled): set runtime.pd.decode_hicache: false".into())
                .field("runtime.pd.decode_hicache")
                .not_modelled()
        });
    }
    let mut d = s.clone();
    d.server.disaggregation_mode = crate::domain::DisaggregationMode::Decode;
    d.server.disaggregation_decode_enable_radix_cache = spec.decode_radix_cache;
    d.server.disable_radix_cache = !spec.decode_radix_cache;
    d.server.enable_hierarchical_cache = Some(spec.decode_hicache_on);
    d.server.hicache_storage_backend = None;
    let plan = crate::startup::StartupPlan::new(&d)
        .map_err(|e| at(format!("the decode server cannot be sized: {e}")))?;
    if plan.device_tokens == 0 {
        return Err(at(
            "the decode server has no KV pool (no GPU memory is left for it)".into(),
        ));
    }
    if spec.decode_radix_cache {
        if let Some(m) = crate::release::decode_radix_speculative_refusal(s.version, &s.server) {
            return Err(at(format!("the decode server cannot start: {m}"))
                .field("runtime.pd.decode_radix_cache"));
        }
        if let Some(m) = decode_radix_component_refusal(s, spec, &plan) {
            return Err(at(format!(
                "the decode server cannot start: SGLang {} raises ValueError: \"{m}\"",
                s.version
            ))
            .field("runtime.pd.decode_radix_cache"));
        }
        // `kv_cache_builder.py: validate_decode_radix_cache` (0.5.23) takes SWA models
        // on the unified tree's SWA component (DeepSeek-V4 only on its unified KV
        // layout) and hybrid SSM models on its Mamba component, where older releases
        // refuse some of them at start-up: neither is the decode tree here.
        let component = if matches!(s.model.attention, crate::model::Attention::Dsv4 { .. }) {
            Some("DeepSeek-V4's compressed pages and SWA ring")
        } else if plan.device_swa_tokens.is_some() {
            Some("a sliding-window model's SWA component")
        } else if plan.device_state_slots.is_some() {
            Some("a hybrid model's Mamba component")
        } else {
            None
        };
        if let Some(c) = component {
            return Err(at(format!(
                "a decode server's radix cache with {c} is not modelled (the replay's decode tree is full-attention only; SGLang 0.5.23 runs it on UnifiedRadixCache's component, older releases refuse some of these at start-up): set decode_radix_cache: false"
            ))
            .field("runtime.pd.decode_radix_cache")
            .not_modelled());
        }
    }
    // The server's value, each DP-attention rank its share (`resolve_max_num_reqs`:
    // `max(1, max_running_requests // attn_dp_size)`); unset, the defaults SGLang's
    // argument hooks set before it: DeepSeek-V4's 256 (`deepseek_v4_hook.py:
    // apply_deepseek_v4_defaults`, any disaggregation mode), 48 with a speculative
    // algorithm (`speculative_hook.py`).
    let dp = s.layout.dp_size.max(1);
    let hook_default = if matches!(s.model.attention, crate::model::Attention::Dsv4 { .. }) {
        Some(crate::model::dsv4::DSV4_DEFAULT_MAX_RUNNING_REQUESTS as u32)
    } else if s.server.speculative_algorithm.is_some() {
        Some(48)
    } else {
        None
    };
    let requested = spec
        .decode_max_running_requests
        .or(s.server.max_running_requests)
        .or(hook_default)
        .map(|m| (m / dp).max(1));
    let bytes = match crate::model::dsv4::Dsv4Geometry::of(&s.model.attention, s.model.layers) {
        Some(g) => {
            let sched = crate::model::dsv4::Dsv4Schedule::sglang_default(8192);
            let co = g.coefficients(&sched);
            TransferBytes {
                host_tokens: 0,
                full: g.compressed_bytes_per_full_token(sched.page_size).round() as u64,
                swa: co.bytes_per_swa_token.map_or(0, |b| b.round() as u64),
                window: u64::from(g.sliding_window),
                state: g.c128_state_bytes_per_request(&sched),
                state_period: 128,
            }
        }
        None => {
            let tokens = |swa: bool| -> u64 {
                plan.pools
                    .iter()
                    .filter(|p| {
                        p.spec.unit == crate::pools::PoolUnit::Tokens && (p.label == "swa") == swa
                    })
                    .map(|p| p.bytes_per_token)
                    .sum()
            };
            TransferBytes {
                host_tokens: 0,
                full: tokens(false),
                swa: tokens(true),
                window: match s.model.attention {
                    crate::model::Attention::GqaSwa { window, .. } => u64::from(window),
                    _ => 0,
                },
                state: 0,
                state_period: 0,
            }
        }
    };
    if bytes.full == 0 && bytes.swa == 0 {
        return Err(at(
            "the KV bytes a transfer sends per token are not known for this model (no per-token pool in its start-up): the transfer cannot be timed".into(),
        ));
    }
    // The decode server's host pool as its start-up makes it (an auto-sized ratio cut
    // to the host's memory included), as the prefill server's is taken.
    let host_tokens = if spec.decode_hicache_on {
        let mc = crate::startup::run(&plan, s.seed, 1);
        match super::host_pool_tokens(&mc) {
            Some(t) if t > 0 => t,
            _ => {
                return Err(at(
                    "the decode server's start-up gives it no host pool (refused, killed, or its HiCache turned off): its HiCache cannot be replayed; see `startup` with --disaggregation-mode decode, or set runtime.pd.decode_hicache: false".into(),
                )
                .field("runtime.pd.decode_hicache"));
            }
        }
    } else {
        0
    };
    Ok((
        DecodeServer::new(
            plan.device_tokens,
            plan.page_size.max(1) as u32,
            requested,
            context_length(s),
        ),
        TransferBytes {
            host_tokens,
            ..bytes
        },
    ))
}

/// The model's context length as SGLang reads it from its config
/// (`runtime::pd::hf_context_length`): the config file the scenario names, else the
/// catalogue's config of its model (by id, or a preset's name or alias); `None` when
/// no config is known.
pub fn context_length(s: &Scenario) -> Option<u64> {
    use crate::model::ModelSource;
    let rm = &s.resolved_model;
    let file = match &rm.source {
        ModelSource::ConfigFile(c) => Some(c.clone()),
        ModelSource::LocalDir(d) => Some(d.join("config.json")),
        _ => None,
    };
    if let Some(f) = file {
        let text = crate::input::read_to_string(&f, crate::input::DOCUMENT_CAP).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        return Some(crate::runtime::pd::hf_context_length(&v));
    }
    let names: Vec<String> = match &rm.source {
        ModelSource::Catalogue { hf_id, .. } => vec![hf_id.to_lowercase()],
        _ => std::iter::once(&s.model_name)
            .chain(&s.model.aliases)
            .map(|n| n.to_lowercase())
            .collect(),
    };
    crate::model::catalogue::catalogue()
        .iter()
        .find(|e| {
            let id = e.hf_id.to_lowercase();
            let base = e.basename().to_lowercase();
            names.iter().any(|n| *n == id || *n == base)
        })
        .map(|e| crate::runtime::pd::hf_context_length(&e.config))
}

/// `section` with its PD deployment's decode server sized from `s` (unchanged without
/// `runtime.pd`).
pub fn with_decode_server(
    s: &Scenario,
    section: &crate::scenario::RuntimeSection,
) -> Result<crate::scenario::RuntimeSection, InputError> {
    let mut section = section.clone();
    if let Some(pd) = section.pd.as_mut() {
        // A launch command shared by both roles carries the decode server's flags:
        // `enable_decode_hicache` is its radix cache with --enable-hierarchical-cache.
        pd.decode_radix_cache |= s.server.disaggregation_decode_enable_radix_cache;
        if pd.decode_hicache == Some(true) && !pd.decode_radix_cache {
            return Err(InputError::new(
                "runtime.pd",
                "decode_hicache: true needs the decode servers' radix cache (SGLang's `enable_decode_hicache` is --disaggregation-decode-enable-radix-cache with --enable-hierarchical-cache): set decode_radix_cache: true",
            )
            .field("runtime.pd.decode_hicache"));
        }
        pd.decode_hicache_on = decode_hicache_on(s, pd);
        let (server, b) = decode_server(s, pd)?;
        pd.decode = Some(server);
        pd.full_bytes_per_token = b.full;
        pd.swa_bytes_per_token = b.swa;
        pd.window = b.window;
        pd.state_bytes_per_request = b.state;
        pd.state_period = b.state_period;
        pd.decode_host_tokens = b.host_tokens;
    }
    Ok(section)
}

/// What SGLang raises at a decode server's start-up for its radix cache on a
/// sliding-window, DeepSeek-V4 or hybrid SSM model (`mem_cache/kv_cache_builder.py`:
/// the build's check in 0.5.14–0.5.22, `validate_decode_radix_cache` in 0.5.23), or
/// `None` where it starts:
/// - 0.5.14–0.5.18: any SWA model, any SSM model;
/// - 0.5.19–0.5.20: an SWA model without `SGLANG_ENABLE_UNIFIED_RADIX_TREE=1` (the
///   replay's launch never sets it), any SSM model;
/// - 0.5.21–0.5.22: an SWA model with HiCache, DeepSeek-V4;
/// - 0.5.23: an SWA model with HiCache, DeepSeek-V4 off its unified KV layout (a ROCm
///   layout: never here).
///
/// DeepSeek-V4 before 0.5.19 is left to the not-modelled refusal.
fn decode_radix_component_refusal(
    s: &Scenario,
    spec: &PdSpec,
    plan: &crate::startup::StartupPlan,
) -> Option<&'static str> {
    use crate::wheel::Release as R;
    let dsv4 = matches!(s.model.attention, crate::model::Attention::Dsv4 { .. });
    let swa = plan.device_swa_tokens.is_some() && !dsv4;
    let ssm = plan.device_state_slots.is_some() && !dsv4;
    let r = s.version.release();
    const SWA_HICACHE: &str = "--disaggregation-decode-enable-radix-cache with sliding window attention (SWA) models currently supports only device-resident cache and is incompatible with --enable-hierarchical-cache.";
    const SSM: &str =
        "--disaggregation-decode-enable-radix-cache is incompatible with Mamba/SSM models";
    if r < R::V0_5_19 {
        return if swa {
            Some(
                "--disaggregation-decode-enable-radix-cache is incompatible with sliding window attention (SWA) models",
            )
        } else if ssm {
            Some(SSM)
        } else {
            None
        };
    }
    if r < R::V0_5_21 {
        return if swa || dsv4 {
            Some(
                "--disaggregation-decode-enable-radix-cache with sliding window attention (SWA) models requires the unified radix tree (set SGLANG_ENABLE_UNIFIED_RADIX_TREE=1).",
            )
        } else if ssm {
            Some(SSM)
        } else {
            None
        };
    }
    if (swa || dsv4) && spec.decode_hicache_on {
        return Some(SWA_HICACHE);
    }
    if dsv4 {
        return Some(if r < R::V0_5_23 {
            "--disaggregation-decode-enable-radix-cache does not support DeepSeek-V4 (DSA) compressed KV (c4/c128/indexer) yet."
        } else {
            "--disaggregation-decode-enable-radix-cache with DeepSeek-V4 requires the unified KV layout (SGLANG_HACK_FLASHMLA_BACKEND=unified_kv_triton)."
        });
    }
    None
}

/// Whether `spec`'s decode servers run HiCache: their radix cache on (the key, or the
/// shared launch's flag) and `decode_hicache`, unset as the launch has
/// `--enable-hierarchical-cache` (`Scheduler.enable_decode_hicache`).
fn decode_hicache_on(s: &Scenario, spec: &PdSpec) -> bool {
    (spec.decode_radix_cache || s.server.disaggregation_decode_enable_radix_cache)
        && spec
            .decode_hicache
            .unwrap_or(s.server.enable_hierarchical_cache == Some(true))
}

/// What a PD transfer sends of a model, per rank (`timed::PdSend::bytes`).
struct TransferBytes {
    /// The decode server's host pool, tokens per rank (0 without its HiCache).
    host_tokens: u64,
    full: u64,
    swa: u64,
    window: u64,
    state: u64,
    state_period: u64,
}

/// What the PD replay of `spec` leaves out, for the status (`swa`: the model has an SWA
/// pool).
pub fn pd_unverified(s: &Scenario, spec: &PdSpec, swa: bool) -> Vec<String> {
    let mut v = vec![PD_UNMODELLED.to_string()];
    if swa {
        v.push(crate::runtime::pd::PD_SWA_UNMODELLED.to_string());
    }
    if s.layout.dp_size > 1 {
        v.push(crate::runtime::pd::PD_DECODE_DP_UNMODELLED.to_string());
    }
    if spec.decode_radix_cache || s.server.disaggregation_decode_enable_radix_cache {
        v.push(crate::runtime::pd::PD_DECODE_RADIX_UNMODELLED.to_string());
        if decode_hicache_on(s, spec) {
            v.push(crate::runtime::pd::PD_DECODE_HICACHE_UNMODELLED.to_string());
        }
    }
    if spec.decode_max_running_requests.is_none()
        && s.server.max_running_requests.is_none()
        && context_length(s).is_none()
    {
        v.push(DECODE_MAX_RUNNING_ASSUMED.to_string());
    }
    v
}

/// The deployment's replay: the prefill servers' hits, the client's times, `metrics.pd`,
/// and the router's figures when several prefill servers are behind it.
pub(super) fn replay_pd(
    path: &str,
    opts: &TraceOptions,
    cfg: &ReplayConfig,
    pd: &PdSpec,
    router: Option<&RouterSpec>,
    limit: u64,
    factor: f64,
) -> Result<ReplayMetrics, InputError> {
    if cfg.measurement.timing != Timing::On {
        return Err(InputError::new(
            "runtime.pd",
            "a PD deployment is replayed on the clock: set runtime.replay.timing: on (or remove runtime.pd to replay the prefill server alone)",
        )
        .field("runtime.replay.timing"));
    }
    if let Some(r) = router {
        super::fleet::check(cfg, r)?;
        if r.policy == crate::runtime::router::RouterPolicy::DynamoKv {
            // The PD driver routes with sgl-router's policies only.
            return Err(InputError::new(
                "runtime.router",
                "Dynamo's KV router in front of PD prefill servers is not modelled (the PD replay's router is sgl-router's): use policy cache_aware or round_robin",
            )
            .field("runtime.router.policy")
            .not_modelled());
        }
        if r.dp_aware && cfg.capacities.dp_ranks > 1 {
            // The PD driver sends each request to the rank of its bootstrap room.
            return Err(InputError::new(
                "runtime.router",
                "--dp-aware in front of PD prefill servers is not modelled: sgl-router 0.3.2's PD router sends to the worker's URL, which under --dp-aware ends in `@rank` (and reads no data_parallel_rank), and the replay sends each request to its bootstrap room's rank: set dp_aware: false",
            )
            .field("runtime.router.dp_aware")
            .not_modelled());
        }
    }
    let mut reader = open_trace_with(std::path::Path::new(path), opts, cfg.capacities.page_size)?;
    let mut err: Option<InputError> = None;
    let out = {
        let requests = super::until_error(reader.by_ref(), &mut err)
            .take(limit.min(usize::MAX as u64) as usize);
        let requests = crate::workload::slowdown::slow_down(requests, factor);
        crate::runtime::replay_pd(cfg, pd, router, requests)
    };
    reader.finish()?;
    if let Some(e) = err {
        return Err(e);
    }
    let (mut m, figures) =
        out.map_err(|e| super::fleet::timed_error(path, e, Some("runtime.pd")))?;
    if let (Some(f), Some(r)) = (figures, router) {
        super::fleet::set_timed_figures(&mut m, f, cfg, r);
    }
    Ok(m)
}
