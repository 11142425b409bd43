//! The start-up report: a per-rank table and a one-paragraph verdict (text), or the same
//! numbers as JSON. Byte figures print the way SGLang prints them (`{x/1e9:.2f} GB`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::domain::Choice;
use crate::release::Sglang;
use crate::release::log_lines::{self, RenderContext};
use crate::scenario::Scenario;
use crate::startup::{MonteCarlo, Quantiles, RankResult, RunOutcomes, StartupPlan};
use crate::units::{fmt_gb, secs};

/// The JSON document of `hicache-sim startup --format json`.
#[derive(Debug, Clone, Serialize)]
pub struct StartupReport {
    pub scenario: String,
    pub sglang: Sglang,
    pub sglang_summary: &'static str,
    pub seed: u64,
    pub runs: u64,
    pub outcomes: RunOutcomes,
    pub refusal_probability: f64,
    pub oom_probability: f64,
    pub start_probability: f64,
    pub rank_outcomes: RunOutcomes,
    pub budget_bytes: QuantilesI64,
    pub margin_bytes: QuantilesI64,
    pub world_size: u32,
    pub nnodes: u32,
    pub ranks_per_host: u64,
    pub device_pool_tokens: u64,
    pub device_pool_bytes: u64,
    /// The device SWA pool of a sliding-window model (`swa_max_total_num_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_swa_pool_tokens: Option<u64>,
    /// The device state pool of a hybrid model (`max_mamba_cache_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_state_slots: Option<u64>,
    pub host_pools: Vec<PoolGeometryOut>,
    /// What `profile_max_num_token` was fed on each rank.
    pub device_profile: DeviceProfileOut,
    pub notes: Vec<String>,
    /// The resolved server arguments under SGLang's own dest names (`tp_size`,
    /// `hicache_write_policy`, …): what the launch command's flags hold in SGLang's parser,
    /// explicit `server:` fields where they override it, SGLang's defaults otherwise.
    pub server: serde_json::Map<String, serde_json::Value>,
    /// How the pasted launch command was read, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<LaunchOut>,
    /// The weight offload (`--cpu-offload-gb`, `--offload-group-size`), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<OffloadOut>,
    /// Run 0, rank by rank.
    pub ranks: Vec<RankOut>,
    pub verdict: String,
    /// The verdict in the one vocabulary of every command ([`crate::startup::status`]):
    /// `ok`, `unverified` or run 0's worst outcome.
    pub status: &'static str,
    /// Why a start is not verified (`Scenario::unmodelled`): each thing that moves the
    /// figures and is not modelled.
    pub unverified: Vec<String>,
}

/// The inputs of the device pool (`profile_max_num_token`), the same on every rank.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceProfileOut {
    /// `--mem-fraction-static` as SGLang resolves it.
    pub mem_fraction_static: f64,
    /// `flag` (given) or `default` (the release's `handle_gpu_memory_settings`).
    pub mem_fraction_source: &'static str,
    /// The default's `reserved_mem` in MiB (None when the flag was given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_reserved_mib: Option<f64>,
    /// GPU memory free before the weights load (`Load weight begin. avail mem=`).
    pub free_before_load_bytes: u64,
    /// nvidia-smi's total minus that: the CUDA context and NCCL before the load.
    pub gpu_reserved_bytes: u64,
    /// Weights as loaded on a rank (`Load weight end. … mem usage=`), when known.
    pub weights_per_rank_bytes: Option<u64>,
}

/// What the weight offload does on each rank before the pools are sized.
#[derive(Debug, Clone, Serialize)]
pub struct OffloadOut {
    /// `modelled`, `fails` (every rank raises building its model) or `not_modelled`.
    pub status: &'static str,
    /// `v1` (`--cpu-offload-gb`) or `v2` (`--offload-group-size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offloader: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    /// Decoder layers whose parameters moved (global ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensors: Option<u64>,
    /// Bytes moved to the host per rank (`numel × element_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_logical_bytes_per_rank: Option<u64>,
    /// Host memory they pin per rank (each tensor rounded up to a power of two), charged
    /// before the host pools are sized.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_pinned_bytes_per_rank: Option<u64>,
    /// The same for every rank of one host (× ranks per host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_pinned_bytes_per_host: Option<u64>,
    /// GPU copies dropped, the part onloaded back by the prefetch, and the difference the
    /// device pool gains (bytes per rank).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_offloaded_bytes_per_rank: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_prefetched_bytes_per_rank: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_freed_bytes_per_rank: Option<u64>,
    /// Why it fails, or what is not modelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

fn offload_out(s: &Scenario, ranks_per_host: u64) -> Option<OffloadOut> {
    use crate::model::offload::OffloadEffect;
    let empty = |status, message| OffloadOut {
        status,
        offloader: None,
        mode: None,
        layers: None,
        tensors: None,
        host_logical_bytes_per_rank: None,
        host_pinned_bytes_per_rank: None,
        host_pinned_bytes_per_host: None,
        gpu_offloaded_bytes_per_rank: None,
        gpu_prefetched_bytes_per_rank: None,
        gpu_freed_bytes_per_rank: None,
        message,
    };
    Some(match &s.offload {
        OffloadEffect::Off => return None,
        OffloadEffect::Fails { error, message } => {
            empty("fails", Some(format!("{error}: {message}")))
        }
        OffloadEffect::NotModelled(why) => empty("not_modelled", Some(why.clone())),
        OffloadEffect::Modelled(f) => OffloadOut {
            offloader: Some(f.offloader),
            mode: Some(f.mode.id()),
            layers: Some(f.layers.clone()),
            tensors: Some(f.tensors),
            host_logical_bytes_per_rank: Some(f.host_logical_bytes),
            host_pinned_bytes_per_rank: Some(f.host_pinned_bytes),
            host_pinned_bytes_per_host: Some(f.host_pinned_bytes * ranks_per_host),
            gpu_offloaded_bytes_per_rank: Some(f.gpu_offloaded_bytes),
            gpu_prefetched_bytes_per_rank: Some(f.gpu_prefetched_bytes),
            gpu_freed_bytes_per_rank: Some(f.gpu_freed_bytes()),
            ..empty("modelled", None)
        },
    })
}

/// The text line of a modelled offload: what moved, the host memory it pins, what the
/// device pool gains.
fn offload_line(o: &OffloadOut, ranks_per_host: u64) -> Option<String> {
    const GIB: f64 = (1u64 << 30) as f64;
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let layers = o.layers.as_ref()?;
    let shown: Vec<String> = layers.iter().take(6).map(|l| l.to_string()).collect();
    let more = if layers.len() > 6 { ", …" } else { "" };
    Some(format!(
        "Weight offload: {} ({}), {} tensor(s) of {} layer(s) ({}{more}) per rank: {} moved to the host, {} pinned ({} per host of {} ranks); GPU {} offloaded - {} prefetched = {} more for the device pool",
        o.offloader?,
        o.mode?,
        o.tensors?,
        layers.len(),
        shown.join(", "),
        gib(o.host_logical_bytes_per_rank?),
        gib(o.host_pinned_bytes_per_rank?),
        gib(o.host_pinned_bytes_per_host?),
        ranks_per_host,
        gib(o.gpu_offloaded_bytes_per_rank?),
        gib(o.gpu_prefetched_bytes_per_rank?),
        gib(o.gpu_freed_bytes_per_rank?),
    ))
}

/// The launch command as SGLang's parser read it.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchOut {
    /// The release whose flag table and argparse rules read it.
    pub release: String,
    pub launcher: String,
    /// Flags given that the simulator does not model (with the memory effect left out,
    /// when they have one).
    pub not_modelled: Vec<crate::scenario::launch::NotModelled>,
    /// Environment given to the command.
    pub env: std::collections::BTreeMap<String, String>,
}

/// `server` of the JSON report: the resolved fields, with SGLang's own typed values for
/// what the launch command gave, plus every other dest it gave.
pub fn server_object(s: &Scenario) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::Value;
    let mut m = match serde_json::to_value(&s.server) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    m.remove("launch");
    // Only dests the release's parser has (0.5.20 has no hicache_host_memory_fraction).
    // (The launch command, if any, was read by the same release's parser: `scenario::load`.)
    let r = s.version.release().flags();
    m.retain(|dest, _| r.actions.iter().any(|a| a.dest == *dest));
    // "Unset" in the simulator (None) is the release's default in SGLang's namespace.
    for (dest, v) in m.iter_mut() {
        if v.is_null()
            && let Some(a) = r.actions.iter().find(|a| a.dest == *dest)
        {
            *v = a.default.clone();
        }
    }
    if let Some(l) = &s.launch {
        for (dest, v) in &l.given {
            let same = match (m.get(dest), v) {
                (Some(a), b) => match (a.as_f64(), b.as_f64()) {
                    (Some(x), Some(y)) => x == y,
                    _ => a == b,
                },
                (None, _) => true,
            };
            if same {
                m.insert(dest.clone(), v.clone());
            }
        }
    }
    m
}

#[derive(Debug, Clone, Serialize)]
pub struct PoolGeometryOut {
    pub name: &'static str,
    /// Per-token pools (KV, SWA, indexer, draft).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_token: Option<u64>,
    /// The Mamba / linear-attention state pool: bytes per state slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_slot: Option<u64>,
    /// A DeepSeek-V4 pool: bytes per host page across its layers (`layer_num ×
    /// item_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_page: Option<u64>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct QuantilesI64 {
    pub count: u64,
    pub min: i64,
    pub p01: i64,
    pub p50: i64,
    pub p99: i64,
    pub max: i64,
}

impl From<Quantiles> for QuantilesI64 {
    fn from(q: Quantiles) -> Self {
        let c = |x: i128| x.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        QuantilesI64 {
            count: q.count,
            min: c(q.min),
            p01: c(q.p01),
            p50: c(q.p50),
            p99: c(q.p99),
            max: c(q.max),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RankOut {
    pub rank: u32,
    pub node: u32,
    pub outcome: &'static str,
    pub requested_bytes: Option<u64>,
    pub budget_bytes: Option<i64>,
    pub margin_bytes: Option<i64>,
    pub available_bytes: Option<i64>,
    pub psutil_available_bytes: Option<u64>,
    pub arrived_at_s: f64,
    pub sampled_at_s: Option<f64>,
    pub ready_at_s: Option<f64>,
    pub fitted_ratio: Option<f64>,
    pub hicache_off: bool,
    pub reclaimed_bytes: u64,
    pub pools: Vec<PoolOut>,
    /// Every host pool's request summed (`requested_bytes` is the pool that binds: the
    /// refused one, or the one with the least margin).
    pub requested_total_bytes: Option<u64>,
    pub message: Option<String>,
    /// SGLang's log lines of this rank, in the order it prints them, in the format of
    /// the release the version maps to (`release::log_lines`).
    pub log: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PoolOut {
    pub name: &'static str,
    /// Host tokens of a per-token pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Host state slots of the state pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slots: Option<u64>,
    /// Host pages of a DeepSeek-V4 pool (`num_host_pages`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<u64>,
    pub requested_bytes: u64,
    pub budget_bytes: i64,
}

fn i64c(x: i128) -> i64 {
    x.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// The rendering context of `plan`'s release and pin-failure figures.
pub fn log_context(plan: &StartupPlan) -> RenderContext<'_> {
    RenderContext {
        rules: plan.log_rules,
        pin_failure_rc: plan.pin_failure_rc,
        pin_failure_error: &plan.pin_failure_error,
    }
}

/// SGLang's log lines of one rank, rendered.
pub fn rank_log(ctx: &RenderContext, r: &RankResult) -> Vec<String> {
    r.log
        .iter()
        .map(|e| log_lines::render(ctx, e, r.message.as_deref()))
        .collect()
}

fn rank_out(plan: &StartupPlan, ctx: &RenderContext, r: &RankResult) -> RankOut {
    let unit = |name: &str| {
        plan.pools
            .iter()
            .find(|p| p.name == name)
            .map_or(crate::pools::PoolUnit::Tokens, |p| p.spec.unit)
    };
    use crate::pools::PoolUnit;
    RankOut {
        rank: r.rank,
        node: r.node,
        outcome: r.outcome.id(),
        requested_bytes: r.requested_bytes,
        budget_bytes: r.budget_bytes.map(i64c),
        margin_bytes: r.margin_bytes.map(i64c),
        available_bytes: r.available_bytes.map(i64c),
        psutil_available_bytes: r.psutil_available,
        arrived_at_s: secs(r.arrived_at),
        sampled_at_s: r.sampled_at.map(secs),
        ready_at_s: r.ready_at.map(secs),
        fitted_ratio: r.fitted_ratio,
        hicache_off: r.hicache_off,
        reclaimed_bytes: r.reclaimed_bytes,
        pools: r
            .pools
            .iter()
            .map(|p| PoolOut {
                name: p.name,
                tokens: (unit(p.name) == PoolUnit::Tokens).then_some(p.tokens),
                slots: (unit(p.name) == PoolUnit::Slots).then_some(p.tokens),
                pages: (unit(p.name) == PoolUnit::Pages).then_some(p.tokens),
                requested_bytes: p.requested_bytes,
                budget_bytes: i64c(p.budget_bytes),
            })
            .collect(),
        requested_total_bytes: (!r.pools.is_empty())
            .then(|| r.pools.iter().map(|p| p.requested_bytes).sum()),
        message: r.message.clone(),
        log: rank_log(ctx, r),
    }
}

/// Builds the report of a Monte Carlo (or single) run.
pub fn build(s: &Scenario, plan: &StartupPlan, mc: &MonteCarlo, seed: u64) -> StartupReport {
    let mut rep = StartupReport {
        scenario: s.name.clone(),
        sglang: s.version,
        sglang_summary: s.version.summary(),
        seed,
        runs: mc.runs,
        outcomes: mc.outcomes,
        refusal_probability: mc.refusal_probability,
        oom_probability: mc.oom_probability,
        start_probability: mc.start_probability,
        rank_outcomes: mc.rank_outcomes,
        budget_bytes: mc.budget_bytes.into(),
        margin_bytes: mc.margin_bytes.into(),
        world_size: plan.world_size,
        nnodes: plan.nnodes,
        ranks_per_host: plan.ranks_per_host,
        device_pool_tokens: plan.device_tokens,
        device_pool_bytes: plan.device_bytes,
        device_swa_pool_tokens: plan.device_swa_tokens,
        device_state_slots: plan.device_state_slots,
        host_pools: plan
            .pools
            .iter()
            .map(|p| {
                let u = p.spec.unit;
                use crate::pools::PoolUnit;
                PoolGeometryOut {
                    name: p.name,
                    bytes_per_token: (u == PoolUnit::Tokens).then_some(p.bytes_per_token),
                    bytes_per_slot: (u == PoolUnit::Slots).then_some(p.bytes_per_token),
                    bytes_per_page: (u == PoolUnit::Pages).then_some(p.bytes_per_token),
                }
            })
            .collect(),
        device_profile: device_profile(s, &crate::pools::resolve_mem_fraction(s)),
        notes: s.notes.clone(),
        server: server_object(s),
        launch: s.launch.as_ref().map(|l| LaunchOut {
            release: l.release.flags().release.to_string(),
            launcher: l.launcher.clone(),
            not_modelled: l.not_modelled.clone(),
            env: l.env.clone(),
        }),
        offload: offload_out(s, plan.ranks_per_host),
        ranks: {
            let ctx = log_context(plan);
            mc.first_run
                .iter()
                .map(|r| rank_out(plan, &ctx, r))
                .collect()
        },
        verdict: String::new(),
        status: crate::startup::status(
            mc.first_run
                .iter()
                .map(|r| r.outcome)
                .max()
                .unwrap_or(crate::startup::Outcome::Started)
                .id(),
            !s.unmodelled.is_empty(),
        ),
        unverified: s.unmodelled.iter().map(ToString::to_string).collect(),
    };
    rep.verdict = crate::startup::verdict(s, plan, mc);
    rep
}

fn gb(x: i128) -> String {
    format!("{} GB", fmt_gb(x))
}

/// One line with the HiCache settings the scenario resolved to (from the launch command
/// and explicit fields). `page_size` is the one the server runs (`StartupPlan::page_size`:
/// 256 for DeepSeek-V4 whatever `--page-size` says, `model_overrides/deepseek_v4.py:
/// _deepseek_v4_overrides`), the size HiCache's host pools are paged by.
pub fn hicache_settings(s: &Scenario, page_size: u64) -> String {
    let v = &s.server;
    format!(
        "HiCache: {}; write policy {}, storage backend {}, io backend {}, mem layout {}, prefetch policy {}, eviction policy {}, page size {}, host memory mode {}, TP{} PP{} DP{}{}",
        if v.hicache_enabled() { "on" } else { "off" },
        v.hicache_write_policy,
        v.hicache_storage_backend.map_or("none", |b| b.id()),
        v.hicache_io_backend,
        v.hicache_mem_layout,
        v.hicache_storage_prefetch_policy,
        v.radix_eviction_policy,
        page_size,
        v.hicache_host_memory_mode,
        v.tp_size,
        v.pp_size,
        v.dp_size,
        if v.enable_dp_attention {
            " (DP attention)"
        } else {
            ""
        }
    )
}

/// The text report.
pub fn render_text(s: &Scenario, plan: &StartupPlan, rep: &StartupReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "hicache-sim startup: {}", rep.scenario);
    let _ = writeln!(o, "SGLang rules: {} ({})", rep.sglang, rep.sglang_summary);
    let _ = writeln!(
        o,
        "Node: {} x{} ({} GPUs {}, host {}), model {} (kv {}), TP{} PP{} DP{}, {} rank(s) per host, page {}",
        s.node_name,
        plan.nnodes,
        s.node.gpus_per_node,
        s.node.gpu,
        gb(s.memory
            .host_total
            .map(|b| b.0)
            .unwrap_or(s.node.host_dram.0) as i128),
        s.model_name,
        s.kv_dtype.id(),
        s.layout.tp_size,
        s.layout.pp_size,
        s.layout.dp_size,
        plan.ranks_per_host,
        plan.page_size
    );
    let pools: Vec<String> = plan
        .pools
        .iter()
        .map(|p| match p.spec.unit {
            crate::pools::PoolUnit::Tokens => format!("{} {} B/token", p.name, p.bytes_per_token),
            crate::pools::PoolUnit::Slots => format!("{} {} B/slot", p.name, p.bytes_per_token),
            crate::pools::PoolUnit::Pages => format!("{} {} B/page", p.name, p.bytes_per_token),
        })
        .collect();
    // The SWA and state device pools of sliding-window and hybrid models.
    let extra = [
        plan.device_swa_tokens
            .map(|t| format!(", SWA pool {t} tokens")),
        plan.device_state_slots
            .map(|k| format!(", state pool {k} slots")),
    ]
    .into_iter()
    .flatten()
    .collect::<String>();
    let _ = writeln!(
        o,
        "Device pool: {} tokens per rank{}; host pools: {}",
        plan.device_tokens,
        extra,
        // No host pool is built with HiCache off: say so rather than what one would cost.
        match s.server.hicache_enabled() {
            true => pools.join(", "),
            false => "none (HiCache off)".to_string(),
        }
    );
    let _ = writeln!(o, "{}", device_profile_line(s));
    if let Some(line) = rep
        .offload
        .as_ref()
        .and_then(|x| offload_line(x, rep.ranks_per_host))
    {
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(o, "{}", hicache_settings(s, plan.page_size));
    if let Some(l) = &rep.launch {
        let _ = writeln!(
            o,
            "Launch command read by SGLang {}'s parser{}",
            l.release,
            if l.launcher.is_empty() {
                String::new()
            } else {
                format!(" ({})", l.launcher)
            }
        );
    }
    for n in &rep.notes {
        let _ = writeln!(o, "Note: {n}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Run 0 (seed {}):", rep.seed);
    let _ = writeln!(
        o,
        "{:>4} {:>4} {:>9} {:>9} {:>12} {:>12} {:>12} {:>12} {:>11}  {}",
        "rank",
        "node",
        "arrived",
        "sampled",
        "psutil avail",
        "available",
        "budget",
        "requested",
        "margin",
        "outcome"
    );
    for r in &rep.ranks {
        let opt = |x: Option<i64>| x.map(|b| gb(b as i128)).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "{:>4} {:>4} {:>8.2}s {:>9} {:>12} {:>12} {:>12} {:>12} {:>11}  {}",
            r.rank,
            r.node,
            r.arrived_at_s,
            r.sampled_at_s
                .map(|t| format!("{t:.2}s"))
                .unwrap_or_else(|| "-".into()),
            r.psutil_available_bytes
                .map(|b| gb(b as i128))
                .unwrap_or_else(|| "-".into()),
            opt(r.available_bytes),
            opt(r.budget_bytes),
            r.requested_bytes
                .map(|b| gb(b as i128))
                .unwrap_or_else(|| "-".into()),
            opt(r.margin_bytes),
            r.outcome
        );
    }
    // A rank with several host pools (KV + indexer, KV + state): each pool and the total.
    if rep.ranks.iter().any(|r| r.pools.len() > 1) {
        let _ = writeln!(o);
        for r in &rep.ranks {
            if r.pools.is_empty() {
                continue;
            }
            let parts: Vec<String> = r
                .pools
                .iter()
                .map(|p| {
                    let count = match (p.tokens, p.slots) {
                        (_, Some(k)) => format!(" ({k} slots)"),
                        (Some(t), None) => format!(" ({t} tokens)"),
                        (None, None) => String::new(),
                    };
                    format!("{} {}{count}", p.name, gb(p.requested_bytes as i128))
                })
                .collect();
            let _ = writeln!(
                o,
                "rank {} host pools: {} = {} requested in all",
                r.rank,
                parts.join(" + "),
                gb(r.requested_total_bytes.unwrap_or(0) as i128)
            );
        }
    }
    let msgs: Vec<&RankOut> = rep
        .ranks
        .iter()
        .filter(|r| (r.outcome != "started" || r.hicache_off) && r.message.is_some())
        .collect();
    if !msgs.is_empty() {
        let _ = writeln!(o);
        for r in msgs {
            let _ = writeln!(
                o,
                "rank {} {}: {}",
                r.rank,
                r.outcome,
                r.message.as_deref().unwrap_or("")
            );
        }
    }
    if rep.ranks.iter().any(|r| !r.log.is_empty()) {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "SGLang log, run 0 (SGLang {}'s format strings):",
            log_release(s)
        );
        o.push_str(&render_log(rep));
    }
    if rep.runs > 1 {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Monte Carlo: {} runs: started {}, refused {}, oom_killed {}; P(refusal) = {:.4}, P(OOM) = {:.4}",
            rep.runs,
            rep.outcomes.started,
            rep.outcomes.refused,
            rep.outcomes.oom_killed,
            rep.refusal_probability,
            rep.oom_probability
        );
        if rep.outcomes.failed > 0 {
            let _ = writeln!(
                o,
                "  failed before sizing (assertion): {} runs",
                rep.outcomes.failed
            );
        }
        let q = |q: &QuantilesI64| {
            format!(
                "min {} / p1 {} / p50 {} / p99 {} / max {}",
                gb(q.min as i128),
                gb(q.p01 as i128),
                gb(q.p50 as i128),
                gb(q.p99 as i128),
                gb(q.max as i128)
            )
        };
        let _ = writeln!(o, "Budget per rank: {}", q(&rep.budget_bytes));
        let _ = writeln!(o, "Margin per rank: {}", q(&rep.margin_bytes));
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Verdict: {}", rep.verdict);
    if rep.unverified.is_empty() {
        let _ = writeln!(o, "Status: {}", rep.status);
    } else {
        let _ = writeln!(
            o,
            "Status: {} — these figures may not be SGLang's; not modelled:",
            rep.status
        );
        for u in &rep.unverified {
            let _ = writeln!(o, "  - {u}");
        }
    }
    o
}

/// The release whose log formats render a version's lines.
fn log_release(s: &Scenario) -> &'static str {
    s.version.release().id()
}

/// The log lines of run 0 as the server prints them, rank by rank (`[TP0] …`).
pub fn render_log(rep: &StartupReport) -> String {
    let mut o = String::new();
    for r in &rep.ranks {
        for line in &r.log {
            let _ = writeln!(o, "[TP{}] {line}", r.rank);
        }
    }
    o
}

/// What `profile_max_num_token` was fed: the fraction (flag or the release's default,
/// `pools::resolve_mem_fraction`), the free memory before the load and the weights.
fn device_profile(s: &Scenario, f: &crate::pools::ResolvedMemFraction) -> DeviceProfileOut {
    let reserved = s.gpu_reserved();
    DeviceProfileOut {
        mem_fraction_static: f.value,
        mem_fraction_source: if f.default.is_some() {
            "default"
        } else {
            "flag"
        },
        default_reserved_mib: f.default.as_ref().map(|d| d.reserved_mib),
        free_before_load_bytes: s.node.gpu_memory.0.saturating_sub(reserved),
        gpu_reserved_bytes: reserved,
        weights_per_rank_bytes: s.weights_per_rank().ok(),
    }
}

/// The device profile as one line of the text report.
fn device_profile_line(s: &Scenario) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let f = crate::pools::resolve_mem_fraction(s);
    let p = device_profile(s, &f);
    let how = match (&f.default, f.aiter_scaled) {
        (Some(d), _) => format!(
            "{}'s default: {:.0} MiB reserved of {:.0} MiB{}",
            s.version.release_id(),
            d.reserved_mib,
            s.node.gpu_memory.0 as f64 / (1u64 << 20) as f64,
            if f.aiter_scaled {
                ", x 0.85 for aiter"
            } else {
                ""
            }
        ),
        (None, true) => "--mem-fraction-static x 0.85 for aiter".to_string(),
        (None, false) => "--mem-fraction-static".to_string(),
    };
    let weights = p
        .weights_per_rank_bytes
        .map(|w| format!("{:.2} GiB", w as f64 / GIB))
        .unwrap_or_else(|| "?".into());
    format!(
        "Device profile: mem_fraction_static {:.3} ({how}); {:.2} GiB free before the load (nvidia-smi total - {:.2} GiB); weights {weights} per rank",
        p.mem_fraction_static,
        p.free_before_load_bytes as f64 / GIB,
        p.gpu_reserved_bytes as f64 / GIB,
    )
}
