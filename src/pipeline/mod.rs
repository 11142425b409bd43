//! The pipeline that joins the two halves: a scenario's start-up gives each rank its
//! host pool (or a refusal), and the runtime replays a trace through a device pool and a
//! host pool of exactly those sizes. One call = one sweep point = one CSV row.

mod fleet;
pub mod pd;
pub mod replay_memo;
mod row;
mod sensitivity;
mod swa;

pub use crate::runtime::apply_overrides;
pub use row::{COLUMNS, point_row};
pub use sensitivity::{needs_timing as sensitivity_needs_timing, sensitivity};
pub use swa::{SwaPlan, adopt_swa_tree, swa_pool};

use serde_json::{Map, Value};

use crate::error::InputError;
use crate::runtime::cost::ComputeSource;
use crate::runtime::dp::DpBalance;
use crate::runtime::l3_store::L3Scope;
use crate::runtime::{Capacities, Links, ReplayConfig, ReplayMetrics, Timing};
use crate::scenario::{RuntimeSection, Scenario};
use crate::startup::{MonteCarlo, Outcome, StartupPlan};
use crate::workload::read::{TraceFormat, TraceOptions, open_trace_with};

/// FNV-1a 64 of every data file bundled in the binary that a row is computed from: node
/// and model presets, the config catalogue, SGLang's flag table, storage backends, cost
/// tables. Two builds that differ in any of them write different rows for one scenario,
/// so a sweep's journal records it and `--resume` / `merge` refuse a mix.
pub fn bundled_data_fingerprint() -> String {
    use crate::fingerprint::{FNV1A_INIT, fnv1a_update};
    let named = crate::model::bundled_data()
        .into_iter()
        .chain(crate::hardware::bundled_data())
        .chain([
            ("sglang_flags.json", crate::flags::TABLE_JSON),
            (
                "storage_backends.yaml",
                crate::runtime::storage_backend::STORAGE_BACKENDS_YAML,
            ),
        ])
        .chain(crate::runtime::cost::table::TABLE_FILES.iter().copied());
    let mut h = FNV1A_INIT;
    for (name, text) in named {
        h = fnv1a_update(h, name.as_bytes());
        h = fnv1a_update(h, &(text.len() as u64).to_le_bytes());
        h = fnv1a_update(h, text.as_bytes());
    }
    format!("{h:016x}")
}

/// The host pool the runtime gets from a start-up: the smallest over the ranks that
/// started (TP ranks hold the same token slots; auto-size agrees on one ratio).
pub fn host_pool_tokens(mc: &MonteCarlo) -> Option<u64> {
    mc.first_run
        .iter()
        .filter(|r| r.outcome == Outcome::Started && !r.hicache_off)
        .filter_map(|r| r.pools.first().map(|p| p.tokens))
        .min()
}

/// Why a scenario has no replay configuration.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReplayConfigError {
    /// A `runtime.replay` key or value the replay does not take.
    #[error(transparent)]
    Override(#[from] InputError),
    /// A DeepSeek-V4 replay the SWA tree cannot run.
    #[error(
        "DeepSeek-V4's replay runs SGLang 0.5.23's tree with its SWA component (`UnifiedRadixCache` with FULL and SWA, the C4 / C128 states being per request) on the device tier (a tree per DP rank or engine): {0}; `startup` and `check` give its pools"
    )]
    Dsv4NotModelled(String),
    /// A DP load-balance method other than round-robin.
    #[error(
        "--load-balance-method {0} is not modelled: the replay's data-parallel ranks take requests round-robin (SGLang's default), or in the timed replay by total_requests or total_tokens: set one of those, or dp_size 1"
    )]
    LoadBalanceNotModelled(String),
    /// `--disable-radix-cache`, or a PD decode server without
    /// `--disaggregation-decode-enable-radix-cache`.
    #[error(
        "the radix cache is off ({0}): SGLang's ChunkCache matches no prefix, so every request misses in every tier; there is nothing to replay (a PD deployment's prefix hits are its prefill servers': replay one with --disaggregation-mode prefill)"
    )]
    RadixCacheOff(&'static str),
}

/// The tree's SWA component is not in the replay: one reason for every answer that
/// replays a sliding-window model (GPT-OSS, Gemma, MiMo, Llama 4, …).
pub const SWA_TREE_UNMODELLED: &str = "the tree's SWA component is not modelled (`mem_cache/swa_radix_cache.py: SWARadixCache`, or `UnifiedRadixCache`'s SWA component where the release routes the model there: a match ends only where the sliding window's KV before it is still cached, and the SWA pool evicts on its own): hit rates are a full-attention tree's over the full pool (SGLang 0.5.23's tree with its SWA component is the replay's answer only on the device tier alone, timing off, a tree per DP rank or engine)";
/// The tree's Mamba component is not in the replay: one reason for every answer that
/// replays a hybrid linear-attention model (Qwen3-Next, Nemotron-H, …).
pub const MAMBA_TREE_UNMODELLED: &str = "the tree's Mamba component is not modelled (`mem_cache/mamba_radix_cache.py: MambaRadixCache`, or `UnifiedRadixCache`'s Mamba component where the release routes the model there: a match ends only where a state checkpoint is cached, and the state pool evicts on its own): hit rates are a full-attention tree's over the KV pool";

/// The SWA tree decodes one slot per output token: a speculative draft's verify steps
/// are not in it.
pub const SWA_TREE_DRAFT_UNMODELLED: &str = "with a speculative draft the SWA tree's decode is not SGLang's: each verify step allocates the draft tokens' slots in both pools and frees the rejected ones, where the tree takes one slot per output token (the SWA pool's evictions may be off)";

/// The default `runtime.replay.l3_scope` for `--hicache-storage-backend`
/// ([`crate::runtime::l3_store`]): a file backend's directory is on each node, shared by
/// the ranks there, and so is NIXL's under its `auto` plugin choice (file plugins at
/// `/tmp/hicache_storage`); the `sim` backend keeps its keys in each process
/// (`sim_storage.py: SimHiCacheStorage._keys`); Mooncake, EIC, AIBrix and 3FS are one
/// store every server reads (3FS only with its metadata server: [`l3_scope_assumed`]).
pub fn l3_scope(backend: Option<crate::domain::StorageBackend>) -> L3Scope {
    use crate::domain::StorageBackend as B;
    match backend {
        Some(B::File | B::Nixl) => L3Scope::Node,
        Some(B::Sim) => L3Scope::Rank,
        _ => L3Scope::Fleet,
    }
}

/// Whether [`l3_scope`]'s default for `backend` is an assumption: every backend but the
/// file, `sim`, Mooncake, EIC and AIBrix ones. 3FS shares its store only with a
/// metadata server (without one, `Hf3fsLocalMetadataClient` keeps each process's index
/// in memory); NIXL is per node only under its file plugins.
fn l3_scope_assumed(backend: Option<crate::domain::StorageBackend>) -> bool {
    use crate::domain::StorageBackend as B;
    !matches!(
        backend,
        None | Some(B::File | B::Sim | B::Mooncake | B::Eic | B::Aibrix)
    )
}

/// What the final replay configuration adds to a scenario's reasons for `unverified`:
/// a timed replay on the SWA tree (`runtime::TIMED_SWA_UNMODELLED`: its decode KV taken
/// at once, no retraction), the launch's scheduling flags the replay does not model
/// (`scenario::launch_schedule`), an L3 store whose sharing among a deployment's
/// schedulers is a guess about the backend's deployment ([`l3_scope_assumed`]), a cost
/// table profiled for another model, TP size or GPU than the scenario's (its times stand
/// in; only with a scenario, which names them), and a clock over pipeline parallelism.
pub fn replay_config_unverified(s: Option<&Scenario>, cfg: &ReplayConfig) -> Vec<String> {
    let mut out = Vec::new();
    // A PD deployment's prefill servers decode nothing (`max_new_tokens` 1): the timed
    // SWA tree's decode simplifications do not reach its answers.
    let pd = s.is_some_and(|s| s.runtime.as_ref().is_some_and(|r| r.pd.is_some()));
    if cfg.capacities.swa.is_some() && cfg.measurement.timing == Timing::On && !pd {
        out.push(crate::runtime::TIMED_SWA_UNMODELLED.to_string());
    }
    let Some(s) = s else {
        return out;
    };
    if let Some(launch) = &s.launch {
        out.extend(crate::scenario::launch_schedule::replay_unmodelled(
            launch,
            cfg.measurement.timing == Timing::On,
        ));
    }
    let engines = s
        .runtime
        .as_ref()
        .and_then(|r| r.router.as_ref())
        .map_or(1, |r| r.engines);
    if cfg.has_storage() && (engines > 1 || cfg.capacities.dp_ranks > 1) {
        let given = s
            .runtime
            .as_ref()
            .is_some_and(|r| r.replay.contains_key("l3_scope"));
        let backend = s.server.hicache_storage_backend;
        // Every replay with an L3 runs a deployment's schedulers side by side on their
        // shared stores (the plain-page LRU and the SWA tree, replayed one scheduler at
        // a time, have no L3).
        if !given && l3_scope_assumed(backend) {
            out.push(format!(
                "the {} storage backend's store is taken to be {} (how this backend is deployed decides it): set runtime.replay.l3_scope (rank, node, fleet) to say whether each scheduler, each node or the whole fleet has one",
                backend.map_or("configured", |b| crate::domain::choices::Choice::id(b)),
                match cfg.capacities.l3_scope {
                    L3Scope::Fleet => "one store every engine and DP-attention rank reads and writes",
                    L3Scope::Node => "one store per node, shared by the ranks on it",
                    L3Scope::Rank => "one store per scheduler",
                }
            ));
        }
    }
    if let ComputeSource::Table {
        node,
        model,
        quant,
        tp,
    } = &cfg.scheduler.compute.source
        && let Ok(t) = crate::runtime::cost::table::find(node, model, *quant, *tp)
    {
        if !table_is_scenario_model(t, s) {
            out.push(format!(
                "the compute cost table is {}'s ({} {} TP{} on {}), not {}'s: its times stand in for this model's",
                t.hf_id, t.model, t.quant, t.tp, t.node, s.model_name
            ));
        }
        out.extend(table_shape_unverified(
            t,
            s,
            cfg.scheduler.compute.compute_scale,
        ));
    }
    if cfg.measurement.timing == Timing::On {
        out.extend(qwen3_vl_hopper_interval(s));
        out.extend(schedule_policy_unverified(s, cfg));
        if s.layout.pp_size > 1 && !matches!(cfg.scheduler.compute.source, ComputeSource::Fixed) {
            out.push(format!(
                "pipeline parallelism (--pp-size {}) is not in the clock: SGLang runs the stages as a pipeline of micro-batches (`managers/scheduler_pp_mixin.py: event_loop_pp`, or on a PD server `event_loop_pp_disagg_prefill` / `_decode`, 0.5.14–0.5.23), where the replay's forwards are one engine's, as the cost source times them: TTFT, TPOT and throughput may be off",
                s.layout.pp_size
            ));
        }
    }
    out
}

/// A GPU name compared across spellings: its words (split at spaces, `-` and `_`) in
/// upper case, without a form-factor or memory word (`H100-SXM` and `H100 80GB` are
/// `H100`; `H100-NVL` stays itself: another part's clocks and power).
fn gpu_key(name: &str) -> String {
    name.split([' ', '-', '_'])
        .map(str::to_ascii_uppercase)
        .filter(|w| {
            let memory = w
                .strip_suffix("GB")
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
            !w.is_empty() && !w.starts_with("SXM") && !memory
        })
        .collect()
}

/// `--schedule-policy` on a timed replay (a replay without a clock admits each request
/// alone: no policy reorders anything there): a reordering the replay does not run
/// (`dfs-weight`, `hrrn`, `lof`, `random`, `shortest-prefill-first`), LPM on the SWA
/// tree's replay (it admits first come, first served), LPM's in-batch check where the
/// trace's pages or blocks do not resolve its 32 tokens, and its single sort per
/// chunked batch.
fn schedule_policy_unverified(s: &Scenario, cfg: &ReplayConfig) -> Vec<String> {
    use crate::scenario::launch_schedule::{Policy, policy};
    let Some(p) = s.server.schedule_policy.as_deref() else {
        return Vec::new();
    };
    let page = u64::from(s.server.page_size.max(1));
    match policy(p, s.server.disable_radix_cache) {
        Policy::Reorders => vec![format!(
            "--schedule-policy {p} is not modelled: the timed replay admits the waiting queue first come, first served (SGLang's default fcfs; lpm is modelled); {p} reorders it before every admission scan (`managers/schedule_policy.py: SchedulePolicy.calc_priority`; hrrn from 0.5.20 falls back to fcfs above 128 waiting requests): TTFT and hit rates under load may differ"
        )],
        Policy::Lpm if cfg.capacities.swa.is_some() => vec![
            "--schedule-policy lpm is not modelled on the sliding-window tree's timed replay: it admits the waiting queue first come, first served: TTFT and hit rates under load may differ".into(),
        ],
        Policy::Lpm => {
            let mut out = Vec::new();
            // The pages inside one of the trace's blocks are hashed from the block's id
            // (`workload::reblock`): what two prompts share is seen at the larger of the
            // two; unknown while the format is detected from the file.
            let section = s.runtime.as_ref();
            let block = section.and_then(|r| {
                r.block_size.map(u64::from).or_else(|| {
                    r.trace_format
                        .as_deref()
                        .and_then(crate::workload::TraceFormat::from_id)
                        .map(|f| u64::from(f.default_block_size()))
                })
            });
            let exact = block.is_some_and(|b| {
                let g = page.max(b);
                g <= 32 && 32 % g == 0
            });
            if !exact {
                out.push(format!(
                    "--schedule-policy lpm: its in-batch prefix check (`_compute_prefix_matches`: a waiting request whose first 32 tokens another waiting request brings goes last) is taken on the trace's pages and blocks ({}): two requests that share 32 tokens inside one of them are not seen to share them",
                    match block {
                        Some(b) => format!("{} tokens", page.max(b)),
                        None => format!("a page of {page} tokens, blocks of the trace's format"),
                    }
                ));
            }
            if cfg.scheduler.compute.chunked_prefill_size > 0
                && !matches!(cfg.scheduler.compute.source, ComputeSource::Fixed)
            {
                out.push("--schedule-policy lpm with chunked prefill: SGLang sorts the queue again before each chunk of a chunked request (`_get_new_batch_prefill_raw` skips its early returns then) and fills the chunk's leftover budget in that order; the replay sorts once per batch".into());
            }
            out
        }
        _ => Vec::new(),
    }
}

/// SGLang's own `--prefill-decode-interval` for Qwen3-VL on a large Hopper GPU, which a
/// timed replay does not model: 0.5.20–0.5.23 `arg_groups/model_overrides/qwen3_vl.py:
/// _qwen3vl_hopper_serving_overrides` sets 22 when the flag is unset, for a multimodal
/// `qwen3_vl` / `qwen3_vl_moe` model on an SM90 GPU of at least 60 GiB
/// (`large_hopper_qwen3_vl_model_type`). A scenario without its launch text (a sweep's
/// point) is taken as not giving the flag. Its other defaults there change nothing the
/// replay models: the radix eviction's `priority` strategy is LRU over requests of one
/// priority, and the decode attention backend is not in the clock's cost sources.
fn qwen3_vl_hopper_interval(s: &Scenario) -> Option<String> {
    let arch = s.resolved_model.hf.as_ref()?.architecture.as_str();
    let large_hopper =
        crate::model::sm_major(&s.node.gpu) == Some(9) && s.node.gpu_memory.0 >= 60 << 30;
    let given = s
        .launch
        .as_ref()
        .is_some_and(|l| l.given.contains_key("prefill_decode_interval"));
    (matches!(
        arch,
        "Qwen3VLForConditionalGeneration" | "Qwen3VLMoeForConditionalGeneration"
    ) && large_hopper
        && s.version.release() >= crate::wheel::Release::V0_5_20
        && !given)
        .then(|| {
            format!(
                "SGLang {} runs Qwen3-VL on a large Hopper GPU ({}) with --prefill-decode-interval 22 (`model_overrides/qwen3_vl.py: _qwen3vl_hopper_serving_overrides`): 22 decode rounds after each prefill before the next (`scheduler.py: _should_defer_prefill`), where the replay prefills first whenever it can: TTFT may be low and TPOT high; give --prefill-decode-interval 0 to replay what the replay models",
                s.version.id(),
                s.node.gpu
            )
        })
}

/// Where the scenario's engine is not the one cost table `t` was profiled on: another
/// tensor-parallel size (the table's TP stands in: its GEMM shards, all-reduces and
/// weight reads are that TP's), or another GPU (by the node preset's GPU name; the
/// `compute_scale` in use said, as the factor a user sets for a sibling chip).
fn table_shape_unverified(
    t: &crate::runtime::cost::table::CostTable,
    s: &Scenario,
    scale: f64,
) -> Vec<String> {
    let mut out = Vec::new();
    if t.tp != s.layout.tp_size {
        out.push(format!(
            "the compute cost table was profiled at TP{} ({} on {}), the scenario runs TP{}: its forward times stand in for this TP's",
            t.tp, t.model, t.node, s.layout.tp_size
        ));
    }
    if s.layout.attn_tp_size() != u64::from(s.layout.tp_size) {
        out.push(format!(
            "the compute cost tables are profiled without DP attention (attention at TP{}), the scenario runs attention at TP{} on {} DP ranks: its forward times stand in",
            t.tp,
            s.layout.attn_tp_size(),
            s.layout.dp_size
        ));
    }
    if let Ok(n) = crate::hardware::node_preset(&t.node)
        && gpu_key(&n.gpu) != gpu_key(&s.node.gpu)
    {
        out.push(format!(
            "the compute cost table was profiled on {} ({}), the scenario's GPUs are {}: its forward times stand in{}",
            n.gpu,
            t.node,
            s.node.gpu,
            if scale == 1.0 {
                String::new()
            } else {
                format!(", scaled by compute_scale {}", crate::units::fmt_num(scale))
            }
        ));
    }
    out
}

/// Whether cost table `t` was profiled for the scenario's model (by preset name, alias
/// or Hugging Face id, case-insensitive).
fn table_is_scenario_model(t: &crate::runtime::cost::table::CostTable, s: &Scenario) -> bool {
    let same = |a: &str| a.eq_ignore_ascii_case(&t.model) || a.eq_ignore_ascii_case(&t.hf_id);
    same(&s.model_name) || s.model.aliases.iter().any(|a| same(a))
}

/// What a replay of this scenario does not model, beyond the scenario's own
/// `unmodelled` (which comes first): the tree components of `UnifiedRadixCache`
/// (`mem_cache/registry.py: create_unified_radix_cache`) the replay leaves out
/// ([`tree_unmodelled`]). Every replay answer from the scenario is `unverified`, naming
/// these.
pub fn replay_unverified(s: &Scenario, plan: &StartupPlan, swa_in_tree: bool) -> Vec<String> {
    // A PD deployment's replay models what a prefill server alone leaves out (its
    // admission gated by the decode side, its KV held until the transfer, the
    // transfer): its own reasons stand instead.
    let pd = s.runtime.as_ref().and_then(|r| r.pd.as_ref());
    s.unmodelled
        .iter()
        .filter(|u| pd.is_none() || u.what != "--disaggregation-mode prefill")
        .map(ToString::to_string)
        .chain(
            pd.map(|p| pd::pd_unverified(s, p, plan.device_swa_tokens.is_some()))
                .into_iter()
                .flatten(),
        )
        .chain(
            tree_unmodelled(plan, swa_in_tree)
                .into_iter()
                .map(String::from),
        )
        .chain(
            (swa_in_tree
                && s.server.speculative_algorithm.is_some()
                && !s.server.disaggregation_mode.is_prefill())
            .then(|| SWA_TREE_DRAFT_UNMODELLED.to_string()),
        )
        .collect()
}

/// The tree components of the model's `UnifiedRadixCache` a replay leaves out: its SWA
/// pool's SWA component unless the replay runs the SWA tree (`swa_in_tree`), its state
/// pool's Mamba component.
pub fn tree_unmodelled(plan: &StartupPlan, swa_in_tree: bool) -> Vec<&'static str> {
    [
        (
            plan.device_swa_tokens.is_some() && !swa_in_tree,
            SWA_TREE_UNMODELLED,
        ),
        (plan.device_state_slots.is_some(), MAMBA_TREE_UNMODELLED),
    ]
    .into_iter()
    .filter_map(|(on, why)| on.then_some(why))
    .collect()
}

/// The replay configuration a scenario implies: page size, policies and link speeds
/// from the SGLang flags, node and model; L1 = the device pool; L2 = `host_tokens`
/// (0 when HiCache is off); L3 when a storage backend is set. `overrides` (the
/// scenario's `runtime.replay` keys) win over everything derived.
///
/// A model with an SWA pool runs the SWA tree where it can ([`adopt_swa_tree`]).
pub fn replay_config(
    s: &Scenario,
    plan: &StartupPlan,
    host_tokens: Option<u64>,
    overrides: &Map<String, Value>,
) -> Result<ReplayConfig, ReplayConfigError> {
    let cfg = replay_config_without_swa(s, plan, host_tokens, overrides)?;
    match swa_pool(s, plan) {
        Some(swa) => Ok(adopt_swa_tree(cfg, &swa, overrides)?.0),
        None => Ok(cfg),
    }
}

/// [`replay_config`] before the SWA tree is adopted: for a caller that applies more
/// overrides first, then calls [`adopt_swa_tree`] itself.
pub fn replay_config_without_swa(
    s: &Scenario,
    plan: &StartupPlan,
    host_tokens: Option<u64>,
    overrides: &Map<String, Value>,
) -> Result<ReplayConfig, ReplayConfigError> {
    let page = plan.page_size.max(1);
    let sv = &s.server;
    if sv.disable_radix_cache {
        return Err(ReplayConfigError::RadixCacheOff(
            match sv.disaggregation_mode {
                crate::domain::DisaggregationMode::Decode => {
                    "a PD decode server's default: `handle_pd_disaggregation`"
                }
                _ => "--disable-radix-cache",
            },
        ));
    }
    // The release's tree and controller, then the scenario's own figures and SGLang
    // choices, typed as the loader read them.
    let rules = s.version.release_rules();
    let mut cfg = ReplayConfig::for_release(&rules);
    cfg.capacities = Capacities {
        page_size: page as u32,
        l1_pages: plan.device_tokens / page,
        l2_pages: host_tokens.unwrap_or(0) / page,
        // The shared-memory backend is a dummy store: nothing is ever found in it
        // (`storage/shm/hicache_shm.py: HiCacheShm`, "Dummy storage backend").
        l3_unbounded: sv
            .hicache_storage_backend
            .is_some_and(|b| b != crate::domain::StorageBackend::Shm),
        // Per-token pools only: a hybrid model's state pool is bytes per slot.
        bytes_per_token: plan
            .pools
            .iter()
            .filter(|p| p.spec.unit == crate::pools::PoolUnit::Tokens)
            .map(|p| p.bytes_per_token)
            .sum(),
        num_layers: s.model.layers / s.layout.pp_size.max(1),
        ..cfg.capacities
    };
    cfg.links = Links {
        h2d_bandwidth: s.node.h2d_bandwidth,
        d2h_bandwidth: s.node.d2h_bandwidth,
        storage_read_bandwidth: s.node.storage_read_bandwidth,
        storage_write_bandwidth: s.node.storage_write_bandwidth,
        load_back_kernel: load_back_kernel(s, &rules),
        ..cfg.links
    };
    // `--dp-size` schedulers, each with its own tree and pools of the sizes above, fed
    // by the controller's method; one not modelled is refused, never replayed as
    // round-robin.
    cfg.capacities.dp_ranks = s.layout.dp_size.max(1);
    cfg.capacities.l3_scope = l3_scope(sv.hicache_storage_backend);
    cfg.capacities.nodes = s.layout.nnodes.max(1);
    // `auto` is `follow_bootstrap_room` on a PD prefill server
    // (`serving_hook.py: handle_load_balance_method`), round-robin elsewhere.
    let prefill_server = sv.disaggregation_mode.is_prefill();
    let method = match sv.load_balance_method.as_deref() {
        None | Some("auto") if prefill_server => {
            Some("follow_bootstrap_room (a PD prefill server's auto)")
        }
        m => m,
    };
    if let Some(m) = method
        && cfg.capacities.dp_ranks > 1
    {
        cfg.capacities.dp_balance = match m {
            "auto" | "round_robin" => DpBalance::RoundRobin,
            "total_requests" => DpBalance::TotalRequests,
            "total_tokens" => DpBalance::TotalTokens,
            // The rooms the router draws for a PD deployment's requests
            // (`runtime::timed::pd`); a prefill server replayed alone has none.
            "follow_bootstrap_room" | "follow_bootstrap_room (a PD prefill server's auto)"
                if s.runtime.as_ref().is_some_and(|r| r.pd.is_some()) =>
            {
                DpBalance::FollowBootstrapRoom
            }
            _ => return Err(ReplayConfigError::LoadBalanceNotModelled(m.to_string())),
        };
    }
    let policy = &mut cfg.policy;
    if let (Some(_), Some(t)) = (policy.write_back_threshold, sv.hicache_write_back_threshold) {
        // `sglang: pr40576` with the scenario's own watermark.
        policy.write_back_threshold = Some(t);
    }
    policy.write_policy = sv.hicache_write_policy;
    policy.eviction_policy = sv.radix_eviction_policy;
    policy.host_memory_mode = sv.hicache_host_memory_mode;
    let prefetch = &mut cfg.prefetch;
    prefetch.prefetch_policy = sv.hicache_storage_prefetch_policy;
    // The cap in force in the scenario's host memory mode (buffer_only: 0.9 x host).
    prefetch.prefetch_capacity_rule = prefetch
        .prefetch_capacity_rule
        .in_mode(sv.hicache_host_memory_mode);
    let scheduler = &mut cfg.scheduler;
    // The scheduler's chunk (the flag or the GPU tier's default, per DP worker).
    scheduler.compute.chunked_prefill_size = scheduler_chunk(s, overrides)?;
    scheduler.compute.speculative = speculative(s);
    scheduler.max_prefill_tokens = sv.max_prefill_tokens;
    if let Some(c) = sv.schedule_conservativeness {
        scheduler.schedule_conservativeness = c;
    }
    if sv.schedule_policy.as_deref().is_some_and(|p| {
        crate::scenario::launch_schedule::policy(p, sv.disable_radix_cache)
            == crate::scenario::launch_schedule::Policy::Lpm
    }) {
        scheduler.schedule_policy = crate::runtime::SchedulePolicy::Lpm;
    }
    if let Some(m) = sv.max_running_requests {
        scheduler.max_running_requests = m;
    } else if sv.speculative_algorithm.is_some()
        && matches!(s.model.attention, crate::model::Attention::Dsv4 { .. })
    {
        // `deepseek_v4_hook.py: apply_deepseek_v4_defaults` sets 256 (0.5.14-0.5.23) in
        // `handle_model_specific_adjustments`, before the speculative handler's 48.
        scheduler.max_running_requests =
            crate::model::dsv4::DSV4_DEFAULT_MAX_RUNNING_REQUESTS as u32;
    } else if sv.speculative_algorithm.is_some() {
        // Every algorithm's handler (`_handle_eagle_family`, `_handle_ngram`, …,
        // 0.5.14-0.5.23): "Max running requests is reset to 48 for speculative
        // decoding" when the flag is unset.
        scheduler.max_running_requests = 48;
    }
    // The server's value: each DP-attention rank takes its share where the ranks are
    // built (`runtime::timed::lockstep`).
    scheduler.max_running_requests_split = cfg.capacities.dp_ranks > 1
        && (sv.max_running_requests.is_some() || sv.speculative_algorithm.is_some());
    // Only the scenario's own `runtime.replay` keys go through the text merge; they win
    // over everything derived (a `tlru` from the server arguments is refused there, or
    // by `apply_overrides`' check when no key replaces it).
    let cfg = apply_overrides(cfg, overrides)?;
    Ok(ClockDefaults::of(s).fill(cfg, overrides))
}

/// The terms a scenario's modelled clock fills in where its `runtime.replay` does not
/// give them: HiCache's per-step synchronisation and the L3 prefetch polls' all-reduces
/// ([`crate::release::step_sync`]: they depend on the release, whether it runs PP, and
/// the world of the group the counts are reduced on, the attention-TP size), and every
/// request's fixed way through the server
/// ([`crate::runtime::frontend::REQUEST_OVERHEAD_DEFAULT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockDefaults {
    release: crate::wheel::Release,
    pp: bool,
    group_world: u32,
}

impl ClockDefaults {
    pub fn of(s: &Scenario) -> Self {
        Self::new(
            s.version.release(),
            s.layout.pp_size > 1,
            u32::try_from(s.layout.attn_tp_size()).unwrap_or(u32::MAX),
        )
    }

    /// The default of a server of `release`, with pipeline parallelism (`pp`) or not,
    /// whose HiCache counts are reduced over `group_world` ranks (the attention-TP size):
    /// for configurations built without a scenario (the bench corpus of
    /// `tests/it/timecost.rs`), set as [`ClockDefaults::of`] would.
    pub fn new(release: crate::wheel::Release, pp: bool, group_world: u32) -> Self {
        ClockDefaults {
            release,
            pp,
            group_world,
        }
    }

    /// `cfg` (its overrides applied) with `compute.hicache_step_sync` set, where
    /// `overrides` do not give it, to the release's default under a modelled clock
    /// (`table`, `roofline`): 0.5 ms × the release's all-reduces per iteration with a
    /// host tier and more than one rank in the group; 0 under fixed speeds (end-to-end
    /// rates). `compute.prefetch_poll_sync` likewise: 0.5 ms per prefetch-poll
    /// all-reduce with an L3 tier too. `request_overhead`: 6 ms under a modelled clock,
    /// 0 under fixed speeds (their rates are end to end).
    pub fn fill(&self, mut cfg: ReplayConfig, overrides: &Map<String, Value>) -> ReplayConfig {
        let given = |key: &str| overrides.get("compute").and_then(|c| c.get(key)).is_some();
        let modelled = !matches!(cfg.scheduler.compute.source, ComputeSource::Fixed);
        if !overrides.contains_key("request_overhead") {
            cfg.frontend.request_overhead = if modelled {
                crate::runtime::frontend::REQUEST_OVERHEAD_DEFAULT
            } else {
                crate::units::Duration(0)
            };
        }
        if !given("prefetch_poll_sync") {
            cfg.scheduler.compute.prefetch_poll_sync = if modelled {
                crate::release::step_sync::default_prefetch_poll_sync(
                    cfg.capacities.l2_pages > 0,
                    cfg.has_storage(),
                    self.group_world,
                )
            } else {
                crate::units::Duration(0)
            };
        }
        if !given("hicache_step_sync") {
            // Set whole from the final configuration (0 under fixed speeds), so a
            // configuration filled before its last overrides is filled again right.
            cfg.scheduler.compute.hicache_step_sync =
                if matches!(cfg.scheduler.compute.source, ComputeSource::Fixed) {
                    crate::units::Duration(0)
                } else {
                    crate::release::step_sync::default_step_sync(
                        self.release,
                        cfg.capacities.l2_pages > 0,
                        cfg.has_storage(),
                        self.pp,
                        self.group_world,
                    )
                };
        }
        cfg
    }
}

/// The speculative decoding a scenario's launch command resolves to, as SGLang resolves
/// it (0.5.14–0.5.23, `arg_groups/speculative_hook.py`): unset steps take
/// `_auto_choose_speculative_params` — (3 steps, top-k 1, 4 draft tokens) for every
/// model with MTP layers (the (5, 4, 8) of Llama / Grok applies to models without them,
/// whose drafts the clock does not model anyway); with top-k 1 the draft tokens are
/// `steps + 1` (`_handle_eagle_family`). The draft's layers are the MTP layers the
/// pools mirror (`model::mtp_draft`; 0 for any other draft).
fn speculative(s: &Scenario) -> Option<crate::runtime::cost::Speculative> {
    let sv = &s.server;
    let algo = sv.speculative_algorithm.as_ref()?;
    let (steps, topk, draft) = match sv.speculative_num_steps {
        Some(n) => (
            n,
            sv.speculative_eagle_topk.unwrap_or(1),
            sv.speculative_num_draft_tokens
                .unwrap_or(n.saturating_add(1)),
        ),
        None => (3, 1, 4),
    };
    Some(crate::runtime::cost::Speculative {
        algorithm: algo.as_written().to_string(),
        num_steps: steps,
        eagle_topk: topk,
        num_draft_tokens: if topk == 1 {
            steps.saturating_add(1)
        } else {
            draft
        },
        draft_layers: crate::model::mtp_draft(sv, &s.model).0,
        target_layers: s.model.layers / s.layout.pp_size.max(1),
        accept_length: None,
    })
}

/// The chunk the replay's scheduler cuts prefill batches at: the server's
/// ([`crate::pools::device::scheduler_chunked_prefill_size`]; 0 = none). A
/// `runtime.replay.compute.chunked_prefill_size` in `overrides` that contradicts an
/// explicit `server.chunked_prefill_size` is an error naming both, not a silent winner.
pub fn scheduler_chunk(s: &Scenario, overrides: &Map<String, Value>) -> Result<u32, InputError> {
    let chunk = crate::pools::device::scheduler_chunked_prefill_size(s)
        .map_or(0, |c| u32::try_from(c).unwrap_or(u32::MAX));
    if let Some(given) = s.server.chunked_prefill_size
        && let Some(replay) = overrides
            .get("compute")
            .and_then(|c| c.get("chunked_prefill_size"))
            .and_then(Value::as_u64)
        && replay != u64::from(chunk)
    {
        return Err(InputError::new(
            "runtime.replay",
            format!(
                "{replay} contradicts server.chunked_prefill_size {given} (the scheduler's chunk: {chunk} per DP worker); set one of them"
            ),
        )
        .field("runtime.replay.compute.chunked_prefill_size"));
    }
    Ok(chunk)
}

/// The SM copy kernel a scenario's load-backs run (`release::copy_kernel`): with
/// `--hicache-io-backend kernel` on an NVIDIA GPU, the release's kernel (the TMA one
/// needs sm_90+: `kernels/ops/kvcache/hicache.py: use_hicache_tma_kernel`, else the
/// register kernel); `direct` — also what `page_first_direct` forces
/// (`arg_groups/hicache_hook.py: resolve_layout_io_compatibility`) — copies with
/// `cudaMemcpyAsync` at the link rate: none. None on AMD / unknown GPUs (the measured
/// rates are CUDA's; HIP runs another block quota).
fn load_back_kernel(
    s: &Scenario,
    rules: &crate::release::ReleaseRules,
) -> Option<crate::release::copy_kernel::LoadBackKernel> {
    use crate::domain::{IoBackend, MemLayout};
    use crate::release::copy_kernel::LoadBackKernel;
    if s.server.hicache_io_backend != IoBackend::Kernel
        || s.server.hicache_mem_layout == MemLayout::PageFirstDirect
    {
        return None;
    }
    match crate::model::sm_major(&s.node.gpu)? {
        m if m >= 9 => Some(rules.controller.load_back_kernel),
        _ => Some(LoadBackKernel::Register2Cta),
    }
}

/// Replays the section's trace (or generator) under `cfg`.
pub fn run_replay(
    section: &RuntimeSection,
    cfg: &ReplayConfig,
) -> Result<ReplayMetrics, InputError> {
    let fleet = section
        .router
        .as_ref()
        .filter(|r| r.is_fleet(cfg.capacities.dp_ranks));
    if let Some(b) = &section.bench {
        if fleet.is_some() {
            return Err(InputError::new(
                "runtime.bench",
                "runtime.bench drives one engine's scheduler; engines behind a router are replayed from a trace, untimed (set runtime.router.engines: 1)",
            )
            .field("runtime.router.engines"));
        }
        if cfg.capacities.dp_ranks > 1 {
            return Err(InputError::new(
                "runtime.bench",
                "runtime.bench drives one engine's scheduler; data-parallel ranks (--dp-size) are replayed from a trace only (set dp_ranks: 1 for one rank)",
            )
            .field("runtime.replay.dp_ranks"));
        }
        if section.trace.is_some() {
            return Err(InputError::new(
                "runtime.bench",
                "runtime.bench generates its own requests: remove runtime.trace (or runtime.bench)",
            ));
        }
        return crate::runtime::rounds::run_bench(cfg, b)
            .map_err(|e| InputError::new("runtime.bench", e.to_string()));
    }
    let (path, opts) = trace_options(section, cfg)?;
    let limit = section.max_requests.unwrap_or(u64::MAX);
    let factor = section.slowdown_factor.unwrap_or(1.0);
    crate::workload::slowdown::check_factor(factor)
        .map_err(|m| InputError::new("runtime.slowdown_factor", m.to_string()))?;
    let ranks = cfg.capacities.dp_ranks.max(1);
    if ranks > 1 && cfg.measurement.timeline_samples > 0 {
        return Err(InputError::new(
            "runtime.replay",
            format!("{ranks} data-parallel ranks have no timeline across their trees (the samples are one tree's): set timeline_samples: 0, or dp_ranks: 1"),
        )
        .field("runtime.replay.timeline_samples"));
    }
    let metrics = if let Some(pd) = &section.pd {
        pd::replay_pd(path, &opts, cfg, pd, fleet, limit, factor)?
    } else if let Some(spec) = fleet {
        fleet::replay_fleet(path, &opts, cfg, spec, limit, factor)?
    } else if ranks == 1 || cfg.measurement.timing == Timing::On {
        // Timed DP-attention ranks run on one clock from one read of the trace
        // (`runtime::timed::lockstep`).
        replay_share(path, &opts, cfg, limit, factor, &|_| true)?
    } else {
        if cfg.capacities.dp_balance != DpBalance::RoundRobin {
            return Err(InputError::new(
                "runtime.replay",
                format!(
                    "--load-balance-method {} reads the ranks' loads over time, which only the timed replay has: set runtime.replay.timing: on (or round_robin)",
                    cfg.capacities.dp_balance.id()
                ),
            )
            .field("runtime.replay.timing"));
        }
        // `round_robin_scheduler`: request i of the trace (arrival order) to rank i mod
        // N, each rank its own tree and pools (`runtime::dp`), their L3 stores shared
        // (`runtime.replay.l3_scope`).
        let cfgs: Vec<ReplayConfig> = (0..ranks)
            .map(|r| {
                let mut c = cfg.clone();
                c.capacities.dp_ranks = 1;
                c.measurement.warmup_requests =
                    crate::runtime::dp::warmup_share(cfg.measurement.warmup_requests, r, ranks);
                c
            })
            .collect();
        let mut slot = |i: u64| Some(crate::runtime::dp::round_robin_rank(i, ranks) as usize);
        let per_rank =
            match replay_side_by_side(path, &opts, &cfgs, ranks as usize, limit, &mut slot)? {
                Some(m) => m,
                // One scheduler at a time (the plain-page LRU, an SWA pool: no L3 to
                // share).
                None => {
                    let mut per_rank = Vec::with_capacity(ranks as usize);
                    for (r, c) in (0..ranks).zip(&cfgs) {
                        let share =
                            |i: usize| crate::runtime::dp::round_robin_rank(i as u64, ranks) == r;
                        per_rank.push(replay_share(path, &opts, c, limit, factor, &share)?);
                    }
                    per_rank
                }
            };
        crate::runtime::dp::merge(per_rank)
    };
    nothing_to_measure(
        &metrics,
        path,
        cfg.measurement.warmup_requests,
        section.max_requests,
    )?;
    Ok(metrics)
}

/// The section's trace and how it is read.
fn trace_options<'a>(
    section: &'a RuntimeSection,
    cfg: &ReplayConfig,
) -> Result<(&'a str, TraceOptions), InputError> {
    let Some(path) = section.trace.as_deref() else {
        return Err(InputError::new(
            "runtime.trace",
            "no trace: set runtime.trace (or pass --trace)",
        ));
    };
    let format = section
        .trace_format
        .as_deref()
        .map(|f| TraceFormat::from_id(f).ok_or_else(|| InputError::new(path, format!("unknown trace format `{f}`: expected mooncake, bailian, kv-cache-tester or csv"))))
        .transpose()?;
    let opts = TraceOptions {
        format,
        block_size: section.block_size,
        require_monotonic: cfg.measurement.timing == Timing::On,
    };
    Ok((path, opts))
}

/// `replay --router-events`: the router's event sequence of the section's trace
/// ([`fleet::write_router_events`]); an error without engines behind a router.
pub fn router_events(
    section: &RuntimeSection,
    cfg: &ReplayConfig,
    out: &mut dyn std::io::Write,
) -> Result<crate::runtime::router::RouterFigures, InputError> {
    let Some(spec) = section
        .router
        .as_ref()
        .filter(|r| r.is_fleet(cfg.capacities.dp_ranks))
    else {
        return Err(InputError::new(
            "--router-events",
            "no router: the scenario needs runtime.router with engines of 2 or more",
        ));
    };
    let (path, opts) = trace_options(section, cfg)?;
    let limit = section.max_requests.unwrap_or(u64::MAX);
    fleet::write_router_events(
        path,
        &opts,
        cfg.capacities.page_size,
        spec,
        cfg.capacities.dp_ranks,
        limit,
        out,
    )
}

/// The trace read once through [`crate::runtime::replay_side_by_side`]: `cfgs`'
/// schedulers (`ranks` per engine) side by side, their L3 stores shared as their
/// `l3_scope` says. `None` where the configuration replays one scheduler at a time.
/// (Untimed: the slowdown factor moves no figure.)
pub(super) fn replay_side_by_side(
    path: &str,
    opts: &TraceOptions,
    cfgs: &[ReplayConfig],
    ranks: usize,
    limit: u64,
    slot: &mut dyn FnMut(u64) -> Option<usize>,
) -> Result<Option<Vec<ReplayMetrics>>, InputError> {
    let Some(first) = cfgs.first().filter(|c| crate::runtime::side_by_side_ok(c)) else {
        return Ok(None);
    };
    let mut reader = open_trace_with(std::path::Path::new(path), opts, first.capacities.page_size)?;
    let mut err: Option<InputError> = None;
    let metrics = {
        let requests =
            until_error(reader.by_ref(), &mut err).take(limit.min(usize::MAX as u64) as usize);
        crate::runtime::replay_side_by_side(cfgs, ranks, requests, slot)
            .expect("checked: side by side")
            .map_err(|e| InputError::new(path, e.to_string()))
    };
    reader.finish()?;
    if let Some(e) = err {
        return Err(e);
    }
    metrics.map(Some)
}

/// One replay of the trace at `path`: those of its first `limit` requests whose index
/// (trace order) `share` keeps (a DP rank's, an engine's, or all).
fn replay_share(
    path: &str,
    opts: &TraceOptions,
    cfg: &ReplayConfig,
    limit: u64,
    factor: f64,
    share: &impl Fn(usize) -> bool,
) -> Result<ReplayMetrics, InputError> {
    let mut reader = open_trace_with(std::path::Path::new(path), opts, cfg.capacities.page_size)?;
    let mut err: Option<InputError> = None;
    let metrics = {
        let requests = until_error(reader.by_ref(), &mut err)
            .take(limit.min(usize::MAX as u64) as usize)
            .enumerate()
            .filter(|(i, _)| share(*i))
            .map(|(_, req)| req);
        let requests = crate::workload::slowdown::slow_down(requests, factor);
        crate::runtime::replay(cfg, requests).map_err(|e| InputError::new(path, e.to_string()))
    };
    // A binary trace is checked against its CRC as it is read; a replay that stopped
    // before its end (max_requests, an error) checks the rest now: no figure, and no
    // other error, from a damaged file.
    reader.finish()?;
    if let Some(e) = err {
        return Err(e);
    }
    metrics
}

/// A trace's requests up to the first one that cannot be read, whose error lands in
/// `err` (the caller returns it once the replay and the reader's own check are done).
pub(super) fn until_error<'a, I>(
    requests: I,
    err: &'a mut Option<InputError>,
) -> impl Iterator<Item = crate::workload::Request> + 'a
where
    I: Iterator<Item = Result<crate::workload::Request, InputError>> + 'a,
{
    requests.map_while(move |r| match r {
        Ok(req) => Some(req),
        Err(e) => {
            *err = Some(e);
            None
        }
    })
}

/// A replay that measured no request has no hit rate: saying "100 % miss" would be a
/// number nobody measured. Names why (empty trace, warm-up, `max_requests`).
pub fn nothing_to_measure(
    m: &ReplayMetrics,
    path: &str,
    warmup: u64,
    max_requests: Option<u64>,
) -> Result<(), InputError> {
    if m.measured_requests > 0 {
        return Ok(());
    }
    let why = if m.requests == 0 && max_requests == Some(0) {
        "runtime.max_requests is 0".to_string()
    } else if m.requests == 0 {
        "the trace has no requests".to_string()
    } else {
        format!(
            "all {} request(s) are warm-up (warmup_requests = {warmup}): lower --warmup",
            m.requests
        )
    };
    Err(InputError::new(
        path,
        format!("nothing to measure: no request is counted ({why})"),
    ))
}

#[cfg(test)]
mod tests {
    use super::gpu_key;

    #[test]
    fn a_gpu_is_the_same_across_spellings_but_not_across_parts() {
        assert_eq!(gpu_key("H100"), gpu_key("H100-SXM"));
        assert_eq!(gpu_key("H100"), gpu_key("h100 80GB"));
        assert_eq!(gpu_key("A100-80GB"), "A100");
        assert_ne!(gpu_key("H100"), gpu_key("H100-NVL"));
        assert_ne!(gpu_key("GB300"), gpu_key("B300"));
        assert_ne!(gpu_key("H20"), gpu_key("H20-3e"));
    }
}
