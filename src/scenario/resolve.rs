//! From a scenario file to a resolved scenario: presets looked up and overridden field
//! by field, SGLang's flags checked the way SGLang checks them, and the parallel layout
//! derived. Everything the start-up and runtime simulations need, nothing read twice.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::lines::LineIndex;
use super::load::{LoadedScenario, field_error};
use super::schema::{MemorySpec, ScenarioFile, StartupSpec};
use crate::domain::ServerArgs;
use crate::error::{FieldError, InputError, nearest};
use crate::hardware::{NodePreset, node_presets};
use crate::model::{KvDtype, ModelPreset, ParallelLayout};
use crate::release::Sglang;
use crate::sizing::SglangVersion;

/// A scenario with presets resolved and flags checked.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub source: String,
    pub name: String,
    /// The selected release or what-if (`sglang:`, `--sglang`).
    pub version: Sglang,
    pub seed: u64,
    pub runs: u64,
    pub node_name: String,
    pub node: NodePreset,
    pub model_name: String,
    pub model: ModelPreset,
    /// Where the model came from, and its config when it was read from one (weights per
    /// rank by part: `ResolvedModel::weights_per_rank`).
    pub resolved_model: crate::model::ResolvedModel,
    pub kv_dtype: KvDtype,
    pub server: ServerArgs,
    pub layout: ParallelLayout,
    pub memory: MemorySpec,
    pub startup: StartupSpec,
    pub runtime: Option<super::RuntimeSection>,
    pub sweep: Option<Value>,
    /// Things SGLang would log once (an ignored fraction) and flags not modelled.
    pub notes: Vec<String>,
    /// What this scenario does that changes SGLang's figures and is not modelled (the
    /// file's `unmodelled:`, the launch command's flags, the draft): every answer from it
    /// is `unverified`, naming these.
    pub unmodelled: Vec<super::schema::Unmodelled>,
    /// The pasted launch command as SGLang's parser read it (set by [`resolve`]).
    pub launch: Option<super::launch::LaunchArgs>,
    /// Where each field's value came from (file line, `--set`), built at load: errors
    /// found later (the start-up plan's) name the same place resolution would. Empty for
    /// patched trees (sweep points, plan probes), which have no file lines.
    pub provenance: super::lines::LineIndex,
    /// What the weight-offload flags do at start-up (`crate::model::offload`).
    pub offload: crate::model::offload::OffloadEffect,
}

impl Scenario {
    /// Weights on one rank as the start-up loads them: a config-described model's bytes
    /// by part as SGLang shards them plus what the load adds per layer
    /// ([`crate::model::ResolvedModel::weights_as_loaded`]); a preset (or a
    /// `startup.weight_load.quantization` other than the config's own) its checkpoint /
    /// (tp × pp). Before any weight offload.
    pub fn weights_with_offload(&self) -> Result<u64, crate::model::NoCheckpointSize> {
        let quant = self.startup.weight_load.quantization;
        let own = self
            .resolved_model
            .quantization
            .as_ref()
            .map(|q| q.format.key());
        if (quant.is_none() || quant == own)
            && let Some(w) = self
                .resolved_model
                .weights_as_loaded_on(&self.layout, crate::model::sm_major(&self.node.gpu))
        {
            return Ok(w);
        }
        // A preset divides its checkpoint by TP × PP, which DP attention breaks: the
        // attention (and a DeepSeek-V4 embedding) is whole on every attention-TP rank
        // (`ParallelLayout::attn_tp_size`). The same checkpoint's config.json from the
        // catalogue, in the format the preset loads, splits it by part as SGLang does.
        let wanted = quant.unwrap_or_else(|| self.model.default_quant.clone());
        if self.layout.enable_dp_attention
            && self.resolved_model.hf.is_none()
            && let Some(c) = catalogue_twin(self.server.model_path.as_deref(), &wanted)
            && let Some(w) =
                c.weights_as_loaded_on(&self.layout, crate::model::sm_major(&self.node.gpu))
        {
            return Ok(w);
        }
        self.model.weights_per_rank(&self.layout, quant)
    }

    /// Device memory gone before the weight load (CUDA context, communicators): the
    /// scenario's `startup.gpu_reserved`, else the node preset's figure for the world.
    pub fn gpu_reserved(&self) -> u64 {
        self.startup
            .gpu_reserved
            .map(|b| b.0)
            .unwrap_or_else(|| self.node.gpu_reserved_for(self.layout.world_size()))
    }

    /// [`Self::weights_with_offload`] less what the weight offload frees on the GPU
    /// before `Load weight end` is measured (offloaded less prefetched:
    /// [`crate::model::offload::OffloadFigures::gpu_freed_bytes`]): the weights the
    /// device pool is sized after.
    pub fn weights_per_rank(&self) -> Result<u64, crate::model::NoCheckpointSize> {
        let w = self.weights_with_offload()?;
        Ok(match self.offload.figures() {
            Some(f) => w.saturating_sub(f.gpu_freed_bytes()),
            None => w,
        })
    }

    /// Loads, overrides and resolves `path`.
    pub fn load(path: &str, sets: &[String]) -> Result<Scenario, InputError> {
        let loaded = super::load::load_file(path, sets)?;
        resolve(&loaded)
    }
}

/// Resolves a loaded scenario.
pub fn resolve(l: &LoadedScenario) -> Result<Scenario, InputError> {
    let mut s = resolve_file_parts(&l.file, &l.source, &l.lines, &l.not_modelled_flags)?;
    // The launch's priority-scheduling assert: after the server-argument checks
    // `resolve_file_parts` runs (the chunk's page assert among them), as in SGLang.
    if let Some(m) = l
        .launch
        .as_ref()
        .and_then(super::launch_schedule::start_refusal)
    {
        return Err(l
            .lines
            .input_error(
                &l.source,
                FieldError::new(
                    "server.schedule_policy",
                    format!("SGLang {}'s {m}", s.version.id()),
                ),
            )
            .sglang_refuses());
    }
    schedule_policy_check(&s, &l.source, &l.lines)?;
    s.launch = l.launch.clone();
    Ok(s)
}

/// The largest `--hicache-size` a scenario may give (GB per rank): what `plan`'s search
/// may probe, too.
pub const MAX_HICACHE_SIZE_GB: f64 = 1e6;
/// The largest `--hicache-ratio` a scenario may give.
pub const MAX_HICACHE_RATIO: f64 = 1000.0;

/// The `runtime:` fields checked where they are written, before any trace is read (a
/// trace reader would name the trace's file and line for the scenario's mistake).
fn check_runtime(rt: &super::RuntimeSection) -> Result<(), FieldError> {
    if rt.block_size == Some(0) {
        return Err(FieldError::new(
            "runtime.block_size",
            "0: the trace's tokens per hash id must be positive (leave the key out for the format's own)",
        ));
    }
    if let Some(f) = &rt.trace_format
        && crate::workload::TraceFormat::from_id(f).is_none()
    {
        return Err(FieldError::new(
            "runtime.trace_format",
            format!(
                "unknown trace format `{f}`: expected mooncake, bailian, kv-cache-tester or csv (leave the key out to detect it)"
            ),
        ));
    }
    if rt.max_requests == Some(0) {
        return Err(FieldError::new(
            "runtime.max_requests",
            "0 replays nothing: give a positive count, or leave the key out for the whole trace",
        ));
    }
    if let Some(f) = rt.slowdown_factor
        && let Err(m) = crate::workload::slowdown::check_factor(f)
    {
        return Err(FieldError::new("runtime.slowdown_factor", m));
    }
    if let Some(b) = &rt.bench
        && let Err(e) = b.validate()
    {
        return Err(FieldError::new(
            format!("runtime.bench.{}", e.field),
            e.message,
        ));
    }
    if let Some(r) = &rt.router
        && let Err(e) = r.validate()
    {
        let field = format!("runtime.router.{}", e.key);
        return Err(if e.not_modelled {
            FieldError::not_modelled(field, e.why)
        } else {
            FieldError::new(field, e.why)
        });
    }
    if let Some(p) = &rt.pd
        && let Err((key, why)) = p.validate()
    {
        return Err(FieldError::new(format!("runtime.pd.{key}"), why));
    }
    // Each `runtime.replay` key and its type (the values the start-up derives come later).
    if let Err(e) =
        crate::runtime::apply_overrides(crate::runtime::ReplayConfig::default(), &rt.replay)
        && let Some(field) = e.field
    {
        return Err(FieldError::new(field, e.message));
    }
    Ok(())
}

/// Resolves a typed scenario file (also used for sweep points): node, model, the
/// server arguments under the release's rules, the parallel layout, the start-up and
/// memory figures, HiCache's pool arguments, the runtime section; each checked in that
/// order, the first error returned.
pub fn resolve_file(
    f: &ScenarioFile,
    source: &str,
    lines: &LineIndex,
    not_modelled: &[String],
) -> Result<Scenario, InputError> {
    let s = resolve_file_parts(f, source, lines, not_modelled)?;
    schedule_policy_check(&s, source, lines)?;
    Ok(s)
}

/// `--schedule-policy` (`server.schedule_policy`: the launch's, the file's, a `--set`'s
/// or a sweep axis's): the release's argparse choices, then the scheduler's refusal at
/// start ([`super::launch_schedule::policy_refusal`]) on the radix cache as the
/// release's checks left it. Last of SGLang's checks: its scheduler starts after the
/// server arguments are checked.
fn schedule_policy_check(s: &Scenario, source: &str, lines: &LineIndex) -> Result<(), InputError> {
    let Some(p) = s.server.schedule_policy.as_deref() else {
        return Ok(());
    };
    let at = |msg: String| {
        lines
            .input_error(source, FieldError::new("server.schedule_policy", msg))
            .sglang_refuses()
    };
    let flags = crate::flags::table().release(s.version.release());
    let choices = flags
        .exact("--schedule-policy")
        .and_then(|i| flags.actions[i].choices.clone())
        .unwrap_or_default();
    if !choices.iter().any(|c| c == p) {
        return Err(at(format!(
            "SGLang {} refuses this command: argument --schedule-policy: invalid choice: '{p}' (choose from {})",
            s.version.id(),
            choices
                .iter()
                .map(|c| format!("'{c}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    match super::launch_schedule::policy_refusal(p, s.server.disable_radix_cache) {
        Some(m) => Err(at(format!("SGLang {}'s {m}", s.version.id()))),
        None => Ok(()),
    }
}

/// [`resolve_file`] without the scheduler's own check, which [`resolve`] runs after
/// the launch's server-argument asserts.
fn resolve_file_parts(
    f: &ScenarioFile,
    source: &str,
    lines: &LineIndex,
    not_modelled: &[String],
) -> Result<Scenario, InputError> {
    let at = |field: &str, msg: String| lines.input_error(source, FieldError::new(field, msg));
    let version = f.sglang;
    let (node_name, node) = resolve_node(f, source, lines, &at)?;
    let ResolvedParts {
        resolved,
        model_name,
        model,
        quant_note,
        quant_guess,
    } = resolve_model(f, source, lines, &at)?;
    let (server, release_notes, kv_dtype, backend_unmodelled) =
        check_server(f, lines, &node, &resolved, &model_name, &model, &at)?;
    let s = &server;
    let layout = parallel_layout(s, &node_name, &node, &at)?;
    check_startup(f, layout.world_size(), &node, &at)?;
    // Already phrased by the launch parser (warnings for unmodelled memory flags,
    // explicit fields overriding launch flags, HiCache flags without HiCache).
    let mut notes: Vec<String> = not_modelled.to_vec();
    notes.extend(resolved.note.clone());
    notes.extend(quant_note);
    notes.extend(release_notes);
    // Which MTP draft the host pools carry (`crate::model::mtp_draft`).
    let mut unmodelled = f.unmodelled.clone();
    if let (_, Some(n)) = crate::model::mtp_draft(s, &model) {
        notes.push(n.text());
        if let crate::model::DraftNote::NotModelled { what, effect } = n {
            unmodelled.push(super::schema::Unmodelled { what, effect });
        }
    }
    // DeepSeek-V4's compress-state dtype reaches the device pools (checked against
    // SGLang's configurator); the host pools' state copies are sized as fp32.
    if matches!(model.attention, crate::model::Attention::Dsv4 { .. })
        && s.hicache_enabled()
        && s.env.dsv4_compress_state_itemsize() != Ok(crate::model::dsv4::STATE_ITEMSIZE)
    {
        unmodelled.push(super::schema::Unmodelled {
            what: "SGLANG_DSV4_COMPRESS_STATE_DTYPE".into(),
            effect: "the HiCache host pools of DeepSeek-V4's compress states are sized in fp32: under another state dtype the host-pool differential has not run, so their bytes may differ".into(),
        });
    }
    // One side of a PD deployment: its pools are sized as SGLang sizes that side; what
    // the two sides do together is not modelled.
    unmodelled.extend(pd_role_unmodelled(s, &model, version.release()));
    // An open PR's replay rules (`sglang: pr39395`, …): in no release, partly assumed.
    if let crate::release::Sglang::Proposal(p) = f.sglang {
        unmodelled.push(super::schema::Unmodelled {
            what: format!("sglang {}", p.id()),
            effect: format!(
                "the replay runs open {} (in no release) on 0.5.23; assumed: {}",
                p.url(),
                p.assumptions()
            ),
        });
    }
    if let Some(u) = estimated_gpu_reserve(f, &node_name, &node, &layout, s) {
        unmodelled.push(u);
    }
    if let Some(u) = quantization_not_modelled(&resolved, source, lines)? {
        unmodelled.push(u);
    }
    // A checkpoint format the preset has no size for: its weights are a guess.
    unmodelled.extend(quant_guess);
    // An attention backend (and page size) SGLang picks by rules not modelled.
    unmodelled.extend(backend_unmodelled);
    // `--context-length` moves no pool of a full-attention model (GQA, MLA, MLA + DSA),
    // nor DeepSeek-V4's: `arg_groups/deepseek_v4_hook.py: apply_deepseek_v4_defaults`
    // sets `--max-running-requests` 256 when not given (0.5.18–0.5.23, the releases that
    // size V4), so `DSV4PoolConfigurator._resolve_max_running_requests_per_worker` never
    // reaches its context-length estimate. Not a reason to doubt their answer.
    if matches!(
        model.attention,
        crate::model::Attention::Gqa { .. }
            | crate::model::Attention::Mla { .. }
            | crate::model::Attention::MlaDsa { .. }
            | crate::model::Attention::Dsv4 { .. }
    ) {
        unmodelled.retain(|u| u.effect != super::launch::CONTEXT_LENGTH_EFFECT);
        notes.retain(|n| !n.ends_with(super::launch::CONTEXT_LENGTH_EFFECT));
    }
    unmodelled.sort();
    unmodelled.dedup();
    if s.hicache_enabled() || version == Sglang::WhatIf(SglangVersion::AutoHicache) {
        notes.extend(hicache_args_note(s, &at)?);
    }
    let (offload, offload_note) = resolve_offload(
        s,
        &resolved,
        &model,
        f.startup.weight_load.quantization,
        &layout,
        &node,
        version,
        &at,
    )?;
    notes.extend(offload_note);
    // An offload asked for but not modelled moves both margins: never a plain `ok`.
    if let crate::model::offload::OffloadEffect::NotModelled(why) = &offload {
        let what = if s.cpu_offload_gb > 0 {
            "--cpu-offload-gb"
        } else {
            "--offload-group-size"
        };
        unmodelled.push(super::schema::Unmodelled {
            what: what.into(),
            effect: format!(
                "weight offload is not modelled here ({why}): the weights it moves to pinned host memory are left on the GPU, so the real host margin is smaller and the device pool larger"
            ),
        });
        unmodelled.sort();
        unmodelled.dedup();
    }
    let runtime = resolve_runtime(f, source, lines, &at)?;
    Ok(Scenario {
        source: source.to_string(),
        name: if f.name.is_empty() {
            source.to_string()
        } else {
            f.name.clone()
        },
        version,
        seed: f.seed,
        runs: f.runs,
        node_name,
        node,
        model_name,
        model,
        resolved_model: resolved,
        kv_dtype,
        server: s.clone(),
        layout,
        memory: f.memory.clone(),
        startup: f.startup.clone(),
        runtime,
        sweep: f.sweep.clone(),
        notes,
        unmodelled,
        launch: None,
        provenance: lines.clone(),
        offload,
    })
}

/// A checkpoint quantised with a method whose weight bytes are not modelled: the answer
/// is `unverified` (the weights are counted as the model dtype's); a method SGLang does
/// not know is its own start-up error (`configs/model_config.py:
/// ModelConfig._verify_quantization`), quoted.
fn quantization_not_modelled(
    resolved: &crate::model::ResolvedModel,
    source: &str,
    lines: &LineIndex,
) -> Result<Option<super::schema::Unmodelled>, InputError> {
    use crate::model::quant::{MethodStatus, SGLANG_METHODS};
    let Some(q) = resolved.quantization.as_ref() else {
        return Ok(None);
    };
    match q.method_status() {
        MethodStatus::Modelled => Ok(None),
        MethodStatus::NotModelled(m) => Ok(Some(super::schema::Unmodelled {
            what: format!("quantization method `{m}`"),
            effect: format!(
                "read from {}: SGLang loads it, but its weight bytes are not modelled (counted as the model dtype's): the weights per rank and the device pool may differ; set startup.weight_load.bytes_per_node to the checkpoint's size",
                q.source
            ),
        })),
        MethodStatus::UnknownToSglang(m) => {
            let (src, line) = lines.locate(source, "model");
            // The file it was read from, when the model came from one.
            let from = match resolved.input_files().first() {
                Some(f) => format!("{} ({})", f.display(), q.source),
                None => q.source.clone(),
            };
            Err(InputError::new(
                src,
                format!(
                    "{from}: SGLang refuses this checkpoint at start-up: \"Unknown quantization method: {m}. Must be one of [{}].\"",
                    SGLANG_METHODS
                        .iter()
                        .map(|x| format!("'{x}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .line_opt(line)
            .field("model"))
        }
    }
}

/// The device memory gone before the weight load, when it is an estimate and an answer
/// depends on it: the device pool sets a ratio-sized or auto-sized host pool and the
/// replay's device capacity (an explicit `--hicache-size`'s start-up verdict does not
/// depend on it). `startup.gpu_reserved` (or the node's own) is the user's measurement.
fn estimated_gpu_reserve(
    f: &ScenarioFile,
    node_name: &str,
    node: &NodePreset,
    layout: &crate::model::ParallelLayout,
    s: &crate::domain::ServerArgs,
) -> Option<super::schema::Unmodelled> {
    let world = layout.world_size();
    if f.startup.gpu_reserved.is_some() || node.gpu_reserved_source_for(world).is_some() {
        return None;
    }
    let explicit_size = s.hicache_enabled() && s.hicache_size > 0.0;
    if explicit_size && f.runtime.is_none() {
        return None;
    }
    let gib = node.gpu_reserved_for(world) as f64 / (1u64 << 30) as f64;
    Some(super::schema::Unmodelled {
        what: "GPU memory before the load".into(),
        effect: format!(
            "the {node_name} preset's {gib:.2} GiB gone before the weight load on a {world}-GPU world is an estimate, not a measurement: the device pool (max_total_num_tokens, a ratio- or auto-sized host pool, the replay's device capacity) may differ; set startup.gpu_reserved to nvidia-smi's memory.total minus your log's `Load weight begin. avail mem=`"
        ),
    })
}

/// Where a field's error is reported: the scenario's file and the field's line.
type At<'a> = &'a dyn Fn(&str, String) -> InputError;

/// `node:`: a node preset, overridden field by field.
fn resolve_node(
    f: &ScenarioFile,
    source: &str,
    lines: &LineIndex,
    at: At,
) -> Result<(String, NodePreset), InputError> {
    let (node_name, node_over) = f.node.split();
    let node_name =
        node_name.ok_or_else(|| at("node", "expected `preset:` naming a node preset".into()))?;
    let node_base = node_presets().get(&node_name).ok_or_else(|| {
        at(
            "node",
            unknown_preset(
                "node",
                &node_name,
                node_presets().keys().map(String::as_str),
            ),
        )
    })?;
    let mut node: NodePreset = override_preset(node_base, &node_over, "node", source, lines)?;
    // The preset's input-only fields (not serialized, so the override's round trip drops
    // them); a figure the scenario gives is the user's measurement.
    node.host_memory_bandwidth = node_base.host_memory_bandwidth;
    let given = |k: &str, preset: &Option<String>| match node_over.contains_key(k) {
        true => Some(format!("the scenario's `node.{k}`")),
        false => preset.clone(),
    };
    node.gpu_reserved_source = given("gpu_reserved", &node_base.gpu_reserved_source);
    node.gpu_reserved_tp1_source = given("gpu_reserved_tp1", &node_base.gpu_reserved_tp1_source);
    Ok((node_name, node))
}

/// The model as [`resolve_model`] finds it.
struct ResolvedParts {
    resolved: crate::model::ResolvedModel,
    model_name: String,
    /// The preset (or the config's), overridden field by field.
    model: ModelPreset,
    /// The checkpoint format a `--model-path` names, when it changes or misses the
    /// preset's.
    quant_note: Option<String>,
    /// What a `--model-path` in a format the preset has no size for leaves unmodelled.
    quant_guess: Option<super::schema::Unmodelled>,
}

/// The model (`crate::model::resolve`): `model:` (a preset, a catalogue model, or
/// `{config: FILE}`) and the launch command's `--model-path`.
fn resolve_model(
    f: &ScenarioFile,
    source: &str,
    lines: &LineIndex,
    at: At,
) -> Result<ResolvedParts, InputError> {
    let (model_ref_name, mut model_over) = match &f.model {
        Some(r) => r.split(),
        None => (None, BTreeMap::new()),
    };
    let config_file = match model_over.remove("config") {
        None => None,
        Some(Value::String(p)) if !p.trim().is_empty() => {
            Some(std::path::PathBuf::from(resolve_relative(&p, source)))
        }
        Some(_) => {
            return Err(at(
                "model.config",
                "expected the path of a Hugging Face config.json".into(),
            ));
        }
    };
    let model_at = |m: String| {
        if f.model.is_some() {
            at("model", m)
        } else {
            let (src, line) = lines.locate(source, "server.launch");
            let line = line.or(lines.line_of("server.model_path"));
            InputError::new(src, m).line_opt(line).field("model")
        }
    };
    let resolved = crate::model::resolve(&crate::model::ModelQuery {
        name: model_ref_name.as_deref(),
        config_file: config_file.as_deref(),
        model_path: f.server.model_path.as_deref(),
    })
    // Not described (`check` makes this a row that names the path, not an abort).
    .map_err(|m| {
        let e = model_at(m.to_string());
        if m.is_not_modelled() {
            e.not_modelled()
        } else {
            e.unknown_model()
        }
    })?;
    let model_name = resolved.name.clone();
    let mut model: ModelPreset =
        override_preset(&resolved.preset, &model_over, "model", source, lines)?;
    // A preset's checkpoint in the format the --model-path names (`…-AWQ` is int4, not
    // the preset's default), when the preset has a size for it.
    let mut quant_note = None;
    let mut quant_guess = None;
    if let (crate::model::ModelSource::Preset(_), Some(path)) =
        (&resolved.source, f.server.model_path.as_deref())
        && !model_over.contains_key("default_quant")
        && let Some(q) = crate::model::quant::suffix_of(path)
    {
        let key = q.format.key();
        if model.checkpoint.contains_key(&key) {
            if model.default_quant != key {
                quant_note = Some(format!(
                    "model: --model-path {path} is a {key} checkpoint ({}): the preset's {key} size is used",
                    q.source
                ));
                model.default_quant = key;
            }
        } else {
            quant_note = Some(format!(
                "warning: --model-path {path} is a {key} checkpoint ({}), but preset `{model_name}` has no {key} size (it has {}): using {}; set startup.weight_load.bytes_per_node or describe the model with `model: {{config: FILE}}`",
                q.source,
                model
                    .checkpoint
                    .keys()
                    .map(|q| q.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                model.default_quant
            ));
            quant_guess = Some(super::schema::Unmodelled {
                what: "--model-path".into(),
                effect: format!(
                    "a checkpoint format preset `{model_name}` has no size for: its {} weights are used, so the weights per rank and the device pool may differ",
                    model.default_quant
                ),
            });
        }
    }
    Ok(ResolvedParts {
        resolved,
        model_name,
        model,
        quant_note,
        quant_guess,
    })
}

/// The server arguments under the release's flags, choices and coercions
/// (`release::check_server`: SGLang's own checks), their notes, and the KV dtype they
/// give on this node's GPU for this model.
fn check_server(
    f: &ScenarioFile,
    lines: &LineIndex,
    node: &NodePreset,
    resolved: &crate::model::ResolvedModel,
    model_name: &str,
    model: &ModelPreset,
    at: At,
) -> Result<
    (
        ServerArgs,
        Vec<String>,
        KvDtype,
        Option<super::schema::Unmodelled>,
    ),
    InputError,
> {
    let version = f.sglang;
    let mut server = f.server.clone();
    // Written in the file (its own line, not the `server:` fallback), or not the default.
    let fraction_line = lines.line_of("server.hicache_host_memory_fraction");
    let fraction_given = (fraction_line.is_some() && fraction_line != lines.line_of("server"))
        || server.hicache_host_memory_fraction
            != ServerArgs::default().hicache_host_memory_fraction;
    // SGLang's own server-argument checks (`check`: an invalid_args row).
    let release_notes = crate::release::check_server(version, &mut server, fraction_given)
        .map_err(|(field, m)| at(field, m).sglang_refuses())?;
    let s = &server;
    // DeepSeek-V4's own assert on the dtype's spelling (`check`: an invalid_args row).
    if matches!(model.attention, crate::model::Attention::Dsv4 { .. })
        && let Some(m) =
            crate::release::dsv4_kv_cache_dtype_refusal(crate::domain::Choice::id(s.kv_cache_dtype))
    {
        return Err(at("server.kv_cache_dtype", m).sglang_refuses());
    }
    // DeepSeek-V4's asserts on the speculative flags (`check`: an invalid_args row).
    if matches!(model.attention, crate::model::Attention::Dsv4 { .. })
        && let Some(m) = crate::release::dsv4_speculative_refusal(s)
    {
        return Err(at("server.speculative_algorithm", m).sglang_refuses());
    }
    // `pool_configurator.py: _get_dsv4_compress_state_dtype_sizes` raises on another
    // spelling of the variable (read for DeepSeek-V4 only).
    if matches!(model.attention, crate::model::Attention::Dsv4 { .. })
        && let Err(m) = s.env.dsv4_compress_state_itemsize()
    {
        return Err(at("server.env.SGLANG_DSV4_COMPRESS_STATE_DTYPE", m).sglang_refuses());
    }
    // Valid `--kv-cache-dtype` choices of 0.5.14–0.5.23 (flag table) whose packed data +
    // scale buffers this simulator does not size have no storage dtype.
    let requested = match KvDtype::from_flag(s.kv_cache_dtype) {
        Some(d) => d,
        None => {
            return Err(at(
                "server.kv_cache_dtype",
                format!(
                    "kv cache dtype `{}` is a valid SGLang choice, but its bytes per token (packed values + block scales) are not modelled: simulate with fp8_e4m3 or bf16 and scale the pools by hand",
                    s.kv_cache_dtype
                ),
            )
            .not_modelled());
        }
    };
    // What `auto` (and fp8 on a DSA model) means on this GPU (`model::resolve_kv_dtype`).
    let glm_dsa = resolved
        .hf
        .as_ref()
        .map(|h| h.glm_dsa)
        .unwrap_or(model_name.starts_with("glm-5"));
    let kv_dtype = crate::model::resolve_kv_dtype(
        &model,
        requested,
        crate::model::sm_major(&node.gpu),
        glm_dsa,
    )
    .map_err(|m| at("server.kv_cache_dtype", m.to_string()))?;
    model
        .attention
        .check_dtype(kv_dtype)
        .map_err(|m| at("server.kv_cache_dtype", m.to_string()))?;
    let mut release_notes = release_notes;
    let (page_note, backend_unmodelled) =
        resolve_page_size(&mut server, version, node, resolved, model_name, model);
    release_notes.extend(page_note);
    if let Some(m) = crate::release::chunk_page_refusal(&server) {
        return Err(at("server.chunked_prefill_size", m).sglang_refuses());
    }
    Ok((server, release_notes, kv_dtype, backend_unmodelled))
}

/// The page size SGLang runs (`model::resolve_page_size`: the attention backend's and the
/// DSA override's constraints) written into `--page-size`, with SGLang's own warning as a
/// note when it changed. DeepSeek-V4 keeps its own 256 (`StartupPlan`).
fn resolve_page_size(
    server: &mut ServerArgs,
    version: Sglang,
    node: &NodePreset,
    resolved: &crate::model::ResolvedModel,
    model_name: &str,
    model: &ModelPreset,
) -> (Option<String>, Option<super::schema::Unmodelled>) {
    // A page size of 0 is refused by `parallel_layout`, with its origin.
    if server.page_size == 0 {
        return (None, None);
    }
    // A preset picked by name has no config: DeepSeek-V3/R1 and Kimi-K2 are
    // `DeepseekV3ForCausalLM`.
    let architecture = match resolved.hf.as_ref() {
        Some(h) => h.architecture.clone(),
        None if ["deepseek-v3", "deepseek-r1", "kimi-k2"]
            .iter()
            .any(|p| model_name.starts_with(p)) =>
        {
            "DeepseekV3ForCausalLM".into()
        }
        None => String::new(),
    };
    let inputs = crate::model::BackendInputs {
        attention: &model.attention,
        architecture: &architecture,
        attention_backend: server.attention_backend.as_deref(),
        page_size: server.page_size,
        speculative: server.speculative_algorithm.is_some(),
        eagle_topk: server.speculative_eagle_topk,
        sm_major: crate::model::sm_major(&node.gpu),
    };
    let flags = version.release_rules().flags;
    let p = crate::model::resolve_page_size(&inputs, flags.sm100_attention, flags.dsa_page);
    let assumed = server.page_size.max(1);
    let unmodelled = p.unmodelled.as_ref().map(|u| match u {
        crate::model::BackendUnmodelled::Explicit(b) => super::schema::Unmodelled {
            what: format!("--attention-backend {b}"),
            effect: format!(
                "the {b} backend's page-size constraint is not modelled: page {assumed} assumed, as --page-size says; SGLang may change it (its log says so)"
            ),
        },
        crate::model::BackendUnmodelled::ModelSpecific => super::schema::Unmodelled {
            what: "attention backend".into(),
            effect: format!(
                "SGLang picks this model's attention backend on {} by model-specific rules not modelled here, and the backend may change the page size (page {assumed} assumed, as --page-size says): give --attention-backend and --page-size as SGLang logs them",
                node.gpu
            ),
        },
    });
    server.page_size = p.page_size;
    let note = p.changed.map(|line| {
        format!(
            "page size {}: SGLang's {} attention backend: \"{line}\"",
            p.page_size,
            p.backend.unwrap_or("default")
        )
    });
    (note, unmodelled)
}

/// The parallel layout the server arguments give, checked against the node.
fn parallel_layout(
    s: &ServerArgs,
    node_name: &str,
    node: &NodePreset,
    at: At,
) -> Result<ParallelLayout, InputError> {
    for (field, v) in [
        ("server.tp_size", s.tp_size),
        ("server.pp_size", s.pp_size),
        ("server.dp_size", s.dp_size),
        ("server.nnodes", s.nnodes),
        ("server.page_size", s.page_size),
    ] {
        if v == 0 {
            return Err(at(field, "must be at least 1".into()));
        }
    }
    if let Some(m) = s.mem_fraction_static
        && !(m > 0.0 && m < 1.0)
    {
        return Err(at(
            "server.mem_fraction_static",
            format!("{m} must be in (0, 1)"),
        ));
    }
    // Bounds far beyond any machine keep the byte arithmetic inside u64.
    if let Some(r) = s.hicache_ratio
        && !(r > 0.0 && r <= MAX_HICACHE_RATIO)
    {
        return Err(at(
            "server.hicache_ratio",
            format!("{r} must be in (0, 1000]"),
        ));
    }
    if !(0.0..=MAX_HICACHE_SIZE_GB).contains(&s.hicache_size) {
        return Err(at(
            "server.hicache_size",
            format!(
                "{} must be between 0 and 1,000,000 (GB per rank; 0 = unset)",
                s.hicache_size
            ),
        ));
    }
    if s.page_size > 1 << 20 {
        return Err(at(
            "server.page_size",
            format!("{} tokens is not a page size", s.page_size),
        ));
    }
    if s.dp_size > 1 && !s.enable_dp_attention {
        return Err(at(
            "server.dp_size",
            "data parallelism without --enable-dp-attention (separate engine replicas sharing the host) is not modelled: simulate one replica, or enable DP attention".into(),
        )
        .not_modelled());
    }
    if s.hicache_enabled() && s.disable_radix_cache {
        return Err(at(
            "server.disable_radix_cache",
            "--enable-hierarchical-cache and --disable-radix-cache are mutually exclusive (SGLang raises ValueError)".into(),
        ));
    }
    let layout = ParallelLayout {
        tp_size: s.tp_size,
        pp_size: s.pp_size,
        dp_size: s.dp_size,
        enable_dp_attention: s.enable_dp_attention,
        nnodes: s.nnodes,
    };
    let world = layout.world_size();
    if world % s.nnodes as u64 != 0 {
        return Err(at(
            "server.nnodes",
            format!(
                "world size {world} (tp × pp) is not divisible by nnodes {}",
                s.nnodes
            ),
        ));
    }
    if world > 4096 {
        return Err(at(
            "server.tp_size",
            format!(
                "world size {world} (tp × pp) is larger than this simulator models (4096 ranks)"
            ),
        ));
    }
    let per_node = world / s.nnodes as u64;
    if per_node > node.gpus_per_node as u64 {
        return Err(at(
            "server.tp_size",
            format!(
                "{per_node} ranks per node but node `{node_name}` has {} GPUs: raise --nnodes",
                node.gpus_per_node
            ),
        ));
    }
    Ok(layout)
}

/// The weight offload the server arguments ask for, as the start-up models it
/// (`crate::model::offload`): SGLang's argument failures are errors at the field
/// (`check`: an invalid_args row); what is not modelled is a warning.
fn resolve_offload(
    s: &ServerArgs,
    resolved: &crate::model::ResolvedModel,
    model: &ModelPreset,
    quant_override: Option<crate::model::quant::CheckpointQuant>,
    layout: &ParallelLayout,
    node: &NodePreset,
    version: Sglang,
    at: At,
) -> Result<(crate::model::offload::OffloadEffect, Option<String>), InputError> {
    use crate::model::offload::{
        self as off, OffloadEffect, OffloadMode, Offloader, V2_TYPE_ERROR,
    };
    let refuse = |e: off::OffloadArgError| at(e.field, e.message).sglang_refuses();
    let offloader = off::offloader(&off::OffloadArgs::of(s), s.tp_size).map_err(refuse)?;
    let flag = match offloader {
        Offloader::Noop => {
            let note = (s.cpu_offload_gb < 0).then(|| {
                format!(
                    "--cpu-offload-gb {} is not positive: SGLang offloads nothing (`create_offloader` checks `cpu_offload_gb > 0`)",
                    s.cpu_offload_gb
                )
            });
            return Ok((OffloadEffect::Off, note));
        }
        Offloader::V1 { .. } => "--cpu-offload-gb",
        Offloader::V2 { .. } => "--offload-group-size",
    };
    let not_modelled = |why: String| {
        Ok((
            OffloadEffect::NotModelled(why.clone()),
            Some(format!(
                "warning: {flag} is not modelled here: {why}; the real host margin is smaller and the device pool larger"
            )),
        ))
    };
    // The per-layer shapes: the model's own config, else the catalogue's config of the
    // `--model-path` a preset was picked from (in the same checkpoint format).
    let quant = quant_override.unwrap_or_else(|| checkpoint_format(resolved, model));
    if quant != checkpoint_format(resolved, model) {
        return not_modelled(format!(
            "weights in startup.weight_load.quantization {quant}, not the checkpoint's own format"
        ));
    }
    let from_catalogue;
    let (hf, format) = match (&resolved.hf, &resolved.quantization) {
        (Some(hf), Some(q)) => (hf, q.format),
        _ => {
            from_catalogue = catalogue_twin(s.model_path.as_deref(), &quant);
            match &from_catalogue {
                Some(c) => (
                    c.hf.as_ref().expect("a catalogue model has a config"),
                    c.quantization.as_ref().expect("and a quantisation").format,
                ),
                None => {
                    return not_modelled(format!(
                        "model `{}` is a preset without per-layer shapes (name it by a catalogue id, e.g. the checkpoint's Hugging Face id, or `model: {{config: FILE}}`)",
                        resolved.name
                    ));
                }
            }
        }
    };
    if layout.pp_size > 1 {
        return not_modelled(
            "pipeline parallelism with offload (each stage offloads its own layers)".into(),
        );
    }
    let Some(d) = &hf.deepseek_layers else {
        return match offloader {
            // `wrap_modules` calls `submodule_accessor(module)` at the first offloaded
            // index; only `DeepseekV2Model` passes one.
            Offloader::V2 {
                group_size,
                num_in_group,
                ..
            } => {
                if off::v2_offloaded_indices(hf.layers, group_size, num_in_group).is_empty() {
                    return Err(refuse(off::OffloadArgError {
                        field: "server.offload_group_size",
                        message: format!(
                            "--offload-group-size {group_size} --offload-num-in-group {num_in_group} offloads none of the {} layers: `OffloaderV2.post_init` raises IndexError (list index out of range)",
                            hf.layers
                        ),
                    }));
                }
                Ok((
                    OffloadEffect::Fails {
                        error: "TypeError",
                        message: format!(
                            "{V2_TYPE_ERROR} (OffloaderV2.wrap_modules: {} builds its layers without a `submodule_accessor`; layer offload supports the DeepSeek-V2 family only: {})",
                            hf.architecture,
                            off::DEEPSEEK_V2_FAMILY.join(", ")
                        ),
                    },
                    None,
                ))
            }
            Offloader::V1 { max_bytes } => match &hf.llama_layers {
                Some(llama) if v1_format_modelled(format) => Ok((
                    OffloadEffect::Modelled(crate::model::offload_llama::v1_llama_figures(
                        llama,
                        layout,
                        format,
                        max_bytes,
                        version.release_rules().cpu_offload_resident,
                    )),
                    None,
                )),
                Some(_) => not_modelled(format!("the parameters of a {} checkpoint", format.key())),
                None => not_modelled(format!(
                    "the parameter order of {} decoder layers (modelled: the DeepSeek-V2 family and {})",
                    hf.architecture,
                    crate::model::offload_llama::LLAMA_STYLE_FAMILY.join(", ")
                )),
            },
            Offloader::Noop => unreachable!("returned above"),
        };
    };
    let routed_own = hf.params.routed_expert_format.is_some();
    let elem = match (off::expert_elem_bytes(format), routed_own) {
        (Some(e), false) => e,
        _ => {
            return not_modelled(format!(
                "the expert tensors of a {} checkpoint",
                format.key()
            ));
        }
    };
    let fused = d.fused_shared_experts(
        crate::model::sm_major(&node.gpu),
        format,
        s.disable_shared_experts_fusion,
    );
    let figures = match offloader {
        Offloader::V2 {
            group_size,
            num_in_group,
            prefetch_step,
            mode,
        } => {
            if !matches!(mode, OffloadMode::Cpu | OffloadMode::Meta) {
                return not_modelled(format!(
                    "--offload-mode {} (one shared copy per DP group)",
                    mode.id()
                ));
            }
            off::v2_figures(
                d,
                layout,
                fused,
                elem,
                group_size,
                num_in_group,
                prefetch_step,
                mode,
            )
            .map_err(refuse)?
        }
        Offloader::V1 { max_bytes } => {
            if !v1_format_modelled(format) {
                return not_modelled(format!("the parameters of a {} checkpoint", format.key()));
            }
            off::v1_figures(
                d,
                layout,
                format,
                fused,
                max_bytes,
                version.release_rules().cpu_offload_resident,
            )
        }
        Offloader::Noop => unreachable!("returned above"),
    };
    let note = (s.cpu_offload_gb > 0 && s.offload_group_size > 0).then(|| {
        "warning: --cpu-offload-gb and --offload-group-size are both given: SGLang builds OffloaderV1 (`create_offloader` checks `cpu_offload_gb > 0` first) and ignores --offload-group-size / --offload-num-in-group / --offload-prefetch-step".to_string()
    });
    Ok((OffloadEffect::Modelled(figures), note))
}

/// Checkpoint formats whose linear parameters `offload::linear` lists (bf16, and fp8
/// with its 128 × 128 block scales): OffloaderV1 is modelled for these.
fn v1_format_modelled(format: crate::model::quant::WeightFormat) -> bool {
    use crate::model::quant::WeightFormat;
    matches!(format, WeightFormat::Bf16 | WeightFormat::Fp8Block)
}

/// The checkpoint's own format: the config's, else the preset's default (which a
/// `--model-path` suffix has already picked).
/// The catalogue's config of the `--model-path` a preset was picked from, when the
/// catalogue holds it in the checkpoint format `quant`: the per-part shapes a preset
/// lacks (the weight offload's layers, DP attention's split of the weights).
fn catalogue_twin(
    model_path: Option<&str>,
    quant: &crate::model::quant::CheckpointQuant,
) -> Option<crate::model::ResolvedModel> {
    model_path
        .and_then(crate::model::catalogue_model)
        .filter(|c| c.quantization.as_ref().map(|q| q.format.key()).as_ref() == Some(quant))
}

fn checkpoint_format(
    resolved: &crate::model::ResolvedModel,
    model: &ModelPreset,
) -> crate::model::quant::CheckpointQuant {
    resolved
        .quantization
        .as_ref()
        .map(|q| q.format.key())
        .unwrap_or(model.default_quant)
}

/// Monte Carlo runs, the start-up's arrival and pinning, and the host's memory figures.
fn check_startup(
    f: &ScenarioFile,
    world: u64,
    node: &NodePreset,
    at: At,
) -> Result<(), InputError> {
    if f.runs == 0 || f.runs > MAX_RUNS {
        return Err(at(
            "runs",
            format!(
                "{} must be between 1 and {} (memory does not grow with runs; time does)",
                f.runs, MAX_RUNS
            ),
        ));
    }
    if f.startup.arrival.offsets.len() as u64 > world {
        return Err(at(
            "startup.arrival.offsets",
            format!(
                "{} offsets for a world of {world} ranks",
                f.startup.arrival.offsets.len()
            ),
        ));
    }
    if let super::schema::JitterSpec::LogNormal { sigma, .. } = f.startup.arrival.jitter
        && !(0.0..=10.0).contains(&sigma)
    {
        return Err(at(
            "startup.arrival.jitter.sigma",
            format!(
                "{sigma} must be between 0 and 10 (sigma 10 already spreads ranks over e^±10 = 22,000× the median)"
            ),
        ));
    }
    let host_total = f.memory.host_total.map(|b| b.0).unwrap_or(node.host_dram.0);
    if f.memory
        .host_other_used
        .0
        .saturating_add(f.memory.host_other_page_cache.0)
        > host_total
    {
        return Err(at(
            "memory.host_other_page_cache",
            "host_other_used + host_other_page_cache is larger than the host's memory".into(),
        ));
    }
    if let Some(p) = &f.startup.pin.steps
        && !(1..=MAX_PIN_STEPS).contains(p)
    {
        return Err(at(
            "startup.pin.steps",
            format!(
                "{p} must be between 1 and {MAX_PIN_STEPS} (each step is an event per rank and pool)"
            ),
        ));
    }
    Ok(())
}

/// HiCache's pool arguments as the release resolves them (`hicache_hook.py`'s
/// ValueError: SGLang refuses the arguments), and the note on an ignored fraction.
fn hicache_args_note(s: &ServerArgs, at: At) -> Result<Option<String>, InputError> {
    let r =
        crate::sizing::resolve_hicache_args(&crate::sizing::HicacheArgs::of(s)).map_err(|e| {
            let field = if e.0.contains("fraction") {
                "server.hicache_host_memory_fraction"
            } else {
                "server"
            };
            at(field, e.0).sglang_refuses()
        })?;
    Ok(r.fraction_note)
}

/// The `runtime:` section, typed and checked where it is written; its trace relative to
/// the scenario.
fn resolve_runtime(
    f: &ScenarioFile,
    source: &str,
    lines: &LineIndex,
    at: At,
) -> Result<Option<super::RuntimeSection>, InputError> {
    let runtime = match &f.runtime {
        None => None,
        Some(v) => Some(
            serde_path_to_error::deserialize::<_, super::RuntimeSection>(v.clone()).map_err(
                |e| {
                    let path = format!("runtime.{}", e.path());
                    field_error(source, lines, &path, &e.into_inner().to_string())
                },
            )?,
        ),
    };
    if runtime
        .as_ref()
        .and_then(|r| r.trace.as_deref())
        .is_some_and(|t| t.trim().is_empty())
    {
        return Err(at(
            "runtime.trace",
            "an empty path: name a trace file, or leave the key out".into(),
        ));
    }
    if let Some(rt) = &runtime {
        check_runtime(rt).map_err(|e| lines.input_error(source, e))?;
    }
    let runtime = runtime.map(|mut rt| {
        rt.trace = rt.trace.map(|t| resolve_relative(&t, source));
        // The router's random draws (dynamo_kv) come from the scenario's one seed.
        if let Some(r) = rt.router.as_mut() {
            r.seed = f.seed;
        }
        // So do the PD router's bootstrap rooms.
        if let Some(p) = rt.pd.as_mut() {
            p.seed = f.seed;
        }
        rt
    });
    Ok(runtime)
}

fn unknown_preset<'a>(
    what: &str,
    name: &str,
    known: impl Iterator<Item = &'a str> + Clone,
) -> String {
    let list: Vec<&str> = known.clone().collect();
    let hint = nearest(name, known)
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    format!(
        "unknown {what} preset `{name}`{hint}; known: {}",
        list.join(", ")
    )
}

/// `base` with `overrides` applied field by field; an unknown field is an error naming
/// the nearest real one.
pub fn override_preset<T: Serialize + DeserializeOwned>(
    base: &T,
    overrides: &BTreeMap<String, Value>,
    prefix: &str,
    source: &str,
    lines: &super::lines::LineIndex,
) -> Result<T, InputError> {
    let mut v = serde_json::to_value(base).map_err(|e| InputError::new(source, e.to_string()))?;
    let obj = v.as_object_mut().expect("presets serialize to maps");
    for (k, val) in overrides {
        if !obj.contains_key(k) {
            let path = format!("{prefix}.{k}");
            let hint = nearest(k, obj.keys().map(String::as_str).chain(["preset"]))
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err(lines.error(source, &path, &format!("unknown key `{k}`{hint}")));
        }
        obj.insert(k.clone(), val.clone());
    }
    serde_path_to_error::deserialize::<_, T>(v).map_err(|e| {
        let path = format!("{prefix}.{}", e.path());
        field_error(source, lines, &path, &e.into_inner().to_string())
    })
}

/// Most Monte Carlo runs one command takes (a billion start-ups is hours of work; more is
/// a typo). Memory does not grow with the count.
pub const MAX_RUNS: u64 = 1_000_000_000;

/// Most steps a pool's pinning is split into: 10,000 already resolves a 1 TB pool in
/// 100 MB steps, and every step is an event of every rank's start-up.
pub const MAX_PIN_STEPS: u32 = 10_000;

/// A relative path in a scenario resolves against the scenario file's folder, wherever
/// the command runs from: the same scenario always reads the same file.
pub fn resolve_relative(path: &str, scenario: &str) -> String {
    let p = std::path::Path::new(path);
    if p.is_absolute() {
        return path.to_string();
    }
    match std::path::Path::new(scenario).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(p).display().to_string(),
        _ => path.to_string(),
    }
}

/// What a PD prefill or decode server leaves out (`--disaggregation-mode`): its start-up
/// default (`release::PdRoles`) and a decode server's radix cache are modelled; the rest
/// of the deployment is not. A decode server's retraction-backup host pool is named
/// where SGLang builds it ([`decode_retraction_host_pool`]).
fn pd_role_unmodelled(
    s: &crate::domain::ServerArgs,
    model: &ModelPreset,
    release: crate::wheel::Release,
) -> Option<super::schema::Unmodelled> {
    use crate::domain::DisaggregationMode as Pd;
    let mode = s.disaggregation_mode;
    let effect = match mode {
        Pd::Null => return None,
        Pd::Prefill => {
            "the pools are a PD prefill server's (no decode CUDA-graph reserve) and the SWA tree ends each request at its prefill, but not modelled are its admission waiting for the decode server's KV preallocation, each request's KV held until its transfer ends, the transfer itself, and `max_new_tokens` forced to 1 (the timed replay still decodes each request's output on it): TTFT and device occupancy may be off".to_string()
        }
        Pd::Decode => {
            let radix = if s.disaggregation_decode_enable_radix_cache {
                "radix cache on"
            } else {
                "radix cache off"
            };
            match decode_retraction_host_pool(s, model, release) {
                Some(pool) => format!(
                    "the pools are a PD decode server's (activation from the running batch, no prefill CUDA-graph reserve, {radix}), but not the host pool it builds for retraction backups ({pool}; host memory use is larger than shown) or its extra request slots"
                ),
                None => format!(
                    "the pools are a PD decode server's (activation from the running batch, no prefill CUDA-graph reserve, {radix}), but not its extra request slots"
                ),
            }
        }
    };
    Some(super::schema::Unmodelled {
        what: format!("--disaggregation-mode {}", crate::domain::Choice::id(mode)),
        effect,
    })
}

/// The retraction-backup host pool a decode server builds by default, described, or
/// `None` where it builds none (`mem_cache/kv_cache_builder.py:
/// resolve_decode_retraction_backup`): from 0.5.18, `host_pool` unless the decode radix
/// cache (or the KV offload, DCP, priority preemption, ROCm from 0.5.19) is on, for an
/// MHA or hybrid-SWA KV pool only (`supports_host_pool`: MLA, DSA, DeepSeek-V4 and
/// hybrid state models keep `cpu_tensor`, no pool). Its ratio when none is given: 1.0
/// (0.5.18), `BACKUP_ONLY_HICACHE_RATIO` 0.2 (0.5.19–0.5.20), max(0.2, one longest
/// request ÷ the device pool) auto-sized to the host's memory (0.5.21+).
fn decode_retraction_host_pool(
    s: &crate::domain::ServerArgs,
    model: &ModelPreset,
    release: crate::wheel::Release,
) -> Option<String> {
    use crate::model::Attention as A;
    use crate::wheel::Release as R;
    if release < R::V0_5_18
        || s.disaggregation_decode_enable_radix_cache
        || !matches!(model.attention, A::Gqa { .. } | A::GqaSwa { .. })
    {
        return None;
    }
    let (on_cuda, ratio) = if release >= R::V0_5_21 {
        (
            " on CUDA",
            "max(0.2, one longest request / the device pool), auto-sized to the host's memory",
        )
    } else if release >= R::V0_5_19 {
        (" on CUDA", "0.2")
    } else {
        ("", "1.0, the device pool's size")
    };
    Some(format!(
        "`--disaggregation-decode-retraction-backup host_pool`, the default{on_cuda} for an MHA or hybrid-SWA pool without the decode radix cache: a pinned KV host pool of HiCache ratio {ratio}"
    ))
}
