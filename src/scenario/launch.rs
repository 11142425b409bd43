//! A pasted SGLang launch command turned into `server:` fields, read exactly as SGLang
//! reads it: bash semantics for the text around it ([`super::shell`]), then the selected
//! release's own argparse rules over the generated flag table ([`crate::flags`]).
//!
//! Flags the simulator models fill [`ServerArgs`](crate::domain::ServerArgs) fields (the
//! same names as SGLang's dests); flags that change memory but are not modelled give a
//! warning saying what is left out and which way the figures may be off; the rest (ports,
//! logging, parsers) are listed in the JSON report only.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::shell::{Launch, Src, find_launch};
use crate::error::InputError;
use crate::flags::{Parsed, table};
use crate::release::Release;

/// SGLang dests that map onto a `ServerArgs` field of the same name.
const MODELLED: &[&str] = &[
    "model_path",
    "tp_size",
    "pp_size",
    "dp_size",
    "enable_dp_attention",
    "nnodes",
    "page_size",
    "mem_fraction_static",
    "max_total_tokens",
    "kv_cache_dtype",
    "enable_hierarchical_cache",
    "hicache_ratio",
    "hicache_size",
    "hicache_host_memory_fraction",
    "hicache_write_policy",
    "hicache_host_memory_mode",
    "hicache_io_backend",
    "hicache_mem_layout",
    "hicache_storage_backend",
    "hicache_storage_prefetch_policy",
    "radix_eviction_policy",
    "disable_radix_cache",
    "max_running_requests",
    "chunked_prefill_size",
    "max_prefill_tokens",
    "schedule_conservativeness",
    "schedule_policy",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "swa_full_tokens_ratio",
    "mamba_full_memory_ratio",
    "max_mamba_cache_size",
    "cpu_offload_gb",
    "offload_group_size",
    "offload_num_in_group",
    "offload_prefetch_step",
    "offload_mode",
    "disable_shared_experts_fusion",
    "cuda_graph_max_bs_decode",
    "disable_cuda_graph",
    "moe_a2a_backend",
    "enable_multimodal",
    "language_only",
    "language_model_only",
    "attention_backend",
    "load_balance_method",
    "disaggregation_mode",
    "disaggregation_decode_enable_radix_cache",
];

/// Memory-relevant flags this simulator does not model: (dest prefix or name, what is
/// left out and which way the figures may be off). First match wins.
/// What `--context-length` leaves out. It never sizes a KV pool (`profile_max_num_token`
/// divides the rest by the cell size in every modelled release); it sets the default
/// request slots (`_resolve_max_num_reqs`: `max_total_num_tokens / context_len × 512`,
/// clamped to 2048–4096) and the `req_to_token` pool built after the KV pool, which the
/// Mamba/state pools of hybrid models and the SWA checks read (DeepSeek-V4's
/// configurator would too, but its hook always sets the slots first).
/// `scenario::resolve` keeps it only for those models.
pub const CONTEXT_LENGTH_EFFECT: &str = "the context length is not modelled: it sets the default request slots that hybrid state pools and the SWA checks read";

const MEMORY_UNMODELLED: &[(&str, &str)] = &[
    (
        "speculative_",
        "draft weights and the draft's device KV take GPU memory (the real device pool is smaller)",
    ),
    (
        "enable_multi_layer_eagle",
        "multi-layer EAGLE drafts are not modelled: real device pool smaller, host requests larger",
    ),
    (
        "quantization",
        "weight quantization is not modelled from the flag: weight bytes come from the model preset (`startup.weight_load.quantization`); the device pool is off by the difference",
    ),
    (
        "modelopt_quant",
        "ModelOpt weight quantization is not modelled: weight bytes come from the model preset",
    ),
    (
        "quantize_and_serve",
        "on-the-fly weight quantization is not modelled: weight bytes come from the model preset",
    ),
    (
        "dtype",
        "the weight dtype is not modelled: weight bytes come from the model preset",
    ),
    (
        "disaggregation_decode_enable_offload_kvcache",
        "a PD decode server's KV offload to storage is not modelled: it builds its own host pool (host memory larger than shown)",
    ),
    (
        "disaggregation_decode_retraction_backup",
        "a PD decode server's retraction backup is not modelled: the host pool it builds by default (`host_pool`) is not in the host figures",
    ),
    (
        "disaggregation_decode_extra_slots",
        "a PD decode server's extra request slots are not modelled (its req_to_token pool is larger)",
    ),
    ("enable_pd_role_switch", "PD role switching is not modelled"),
    (
        "mamba_",
        "the Mamba state pool is sized from --mamba-full-memory-ratio / --max-mamba-cache-size only",
    ),
    (
        "disable_hybrid_swa_memory",
        "hybrid SWA memory off is not modelled: pools use the preset's split",
    ),
    (
        "enable_unified_memory",
        "unified memory is not modelled: host and device pools are treated as separate memories",
    ),
    (
        "enable_weights_cpu_backup",
        "a CPU copy of the weights is not modelled: real host margin smaller",
    ),
    (
        "enable_draft_weights_cpu_backup",
        "a CPU copy of the draft weights is not modelled: real host margin smaller",
    ),
    (
        "enable_lmcache",
        "LMCache is not modelled: its host buffers take host memory (real host margin smaller)",
    ),
    (
        "enable_flexkv",
        "FlexKV is not modelled: its host buffers take host memory (real host margin smaller)",
    ),
    ("enable_hisparse", "HiSparse is not modelled"),
    (
        "config",
        "the flags of a --config YAML file are not read: the answer is for the command without them (paste them into the launch command)",
    ),
    (
        "disable_custom_all_reduce",
        "custom all-reduce off is not modelled: the node presets' GPU memory before the load was measured with its buffers allocated; without them SGLang has more (8 x RTX PRO 6000 at TP8: 94.08 and 93.99 GiB free against 93.30 with it on), so the real device pool is larger",
    ),
    ("context_length", CONTEXT_LENGTH_EFFECT),
    (
        "cuda_graph_",
        "CUDA graph buffers are not modelled from the flag: they are part of `startup.gpu_reserved`",
    ),
    (
        "enable_lora",
        "LoRA adapters are not modelled: their GPU memory makes the real device pool smaller",
    ),
    (
        "max_loras_per_batch",
        "LoRA adapters are not modelled: their GPU memory makes the real device pool smaller",
    ),
    (
        "lora_paths",
        "LoRA adapters are not modelled: their GPU memory makes the real device pool smaller",
    ),
    ("enable_memory_saver", "the memory saver is not modelled"),
    (
        "ep_size",
        "expert parallelism does not change the KV pools here; EP-sharded weights change the device pool SGLang gets",
    ),
    ("moe_dense_tp_size", "the dense-MLP TP size is not modelled"),
    ("attn_cp_size", "context parallelism is not modelled"),
    ("dcp_size", "decode context parallelism is not modelled"),
];

/// A flag the command set that the simulator does not model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotModelled {
    /// The option as typed (`--mem-frac`).
    pub flag: String,
    pub dest: String,
    /// What is left out and which way the figures may be off (None: no memory effect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_effect: Option<String>,
}

/// A parsed launch command.
#[derive(Debug, Clone)]
pub struct LaunchArgs {
    /// The release whose parser read it (its flag table: [`Release::flags`]).
    pub release: Release,
    pub launcher: String,
    /// `server:` fields it sets (modelled dests only, given explicitly).
    pub fields: Map<String, Value>,
    /// Every dest the command gave, with the value SGLang's parser holds (SGLang names).
    pub given: BTreeMap<String, Value>,
    /// The option each given dest came from (`--tp`), for notices.
    pub given_as: BTreeMap<String, String>,
    pub not_modelled: Vec<NotModelled>,
    /// Notes and warnings (HiCache flags without HiCache, deprecated spellings, …).
    pub notes: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// The scenario file's line of the `--model-path` word, when known (errors about the
    /// model point there).
    pub model_path_line: Option<usize>,
    /// For each of `fields`, the flag that set it as typed with its value (`--page-size
    /// 0`) and the scenario file's line of the flag, when known (the provenance map
    /// names them: `scenario::lines::Origin::LaunchFlag`).
    pub flag_of: BTreeMap<String, (String, Option<usize>)>,
    /// The unset variable the model path is read from (`$MODEL_PATH`), and the scenario
    /// file's line of it, when known: the scenario's `model:` names the model.
    pub unset_model_path: Option<(String, Option<usize>)>,
}

/// Where the launch text sits in the scenario file, for errors: the line of line 1 of
/// the text, and whether it is a block (`launch: |` / `>-`), so messages name the line
/// within the block.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextPos {
    pub first_line: Option<usize>,
    pub block: bool,
}

fn memory_effect(dest: &str) -> Option<&'static str> {
    MEMORY_UNMODELLED
        .iter()
        .find(|(p, _)| {
            if p.ends_with('_') {
                dest.starts_with(p)
            } else {
                dest == *p
            }
        })
        .map(|(_, m)| *m)
}

/// How to say which model a recipe serves, for errors about an unknown or placeholder
/// `--model-path`.
pub const DESCRIBE_MODEL: &str = "say which model it serves: `model:` in a scenario (a preset or catalogue name, or `{config: path/to/config.json}`), `model=` in a `# hicache-sim:` comment of a launch-command file, or a --model-path that is a local checkpoint directory with a config.json (`hicache-sim presets` lists the models the simulator knows)";

/// Whether a `--model-path` is a documentation placeholder (`your-model`, `[model_path]`,
/// `<MODEL>`, `/path/to/model`), not a model.
pub fn is_placeholder(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    path.trim().is_empty()
        || p.contains(['[', ']', '<', '>', '{', '}'])
        || [
            "your-model",
            "your_model",
            "yourmodel",
            "model_path",
            "model-path",
            "path/to/",
            "path_to_",
        ]
        .iter()
        .any(|x| p.contains(x))
}

/// Parses `cmd` (literal text) for `release`; `source` and `pos` locate it for errors.
pub fn parse_launch(
    cmd: &str,
    release: Release,
    source: &str,
    line: Option<usize>,
) -> Result<LaunchArgs, InputError> {
    parse_launch_src(
        &Src::literal(cmd),
        release,
        source,
        TextPos {
            first_line: line,
            block: false,
        },
    )
}

/// As [`parse_launch`], from a lexing source (a folded YAML block keeps its raw lines).
pub fn parse_launch_src(
    src: &Src,
    release: Release,
    source: &str,
    pos: TextPos,
) -> Result<LaunchArgs, InputError> {
    let err = |line_in_text: Option<usize>, msg: String| {
        let (line, msg) = match (pos.first_line, line_in_text) {
            (Some(f), Some(l)) if pos.block => (
                Some(f + l - 1),
                format!("line {l} of the launch block: {msg}"),
            ),
            (Some(f), Some(l)) => (Some(f + l - 1), msg),
            (f, _) => (f, msg),
        };
        InputError::new(source, msg)
            .line_opt(line)
            .field("server.launch")
    };
    let release_flags = release.flags();
    let Reading {
        launch,
        argv,
        argv_at,
        result,
        dynamo_ignored,
    } = read_text(src, release).map_err(|e| {
        if e.model_path {
            err(Some(e.line), format!("{}; {}", e.message, DESCRIBE_MODEL)).unknown_model()
        } else {
            err(Some(e.line), e.message)
        }
    })?;
    let parsed = result.map_err(|e| {
        let line = e.index.and_then(|i| {
            launch
                .lines
                .get(i.min(launch.lines.len().saturating_sub(1)))
                .copied()
        });
        // The table's id: a post release reads (and is named by) its base release's.
        let release = release_flags.release;
        let mut msg = format!("SGLang {release} refuses this command: {}", e.message);
        // An ambiguous prefix that is a whole flag in other releases: say so.
        if let Some(rest) = e.message.strip_prefix("ambiguous option: ") {
            let opt = rest.split(' ').next().unwrap_or("");
            let opt = opt.split('=').next().unwrap_or(opt);
            if let Some(h) = table().history(opt, release) {
                msg.push_str(&format!(" ({opt} itself: {h})"));
            }
        }
        // A flag the release lacks: name the release that has it.
        if let Some(rest) = e.message.strip_prefix("unrecognized arguments: ") {
            let first = rest.split(' ').next().unwrap_or("");
            let opt = first.split('=').next().unwrap_or(first);
            if opt.starts_with("--") {
                msg = match table().history(opt, release) {
                    Some(h) => format!(
                        "SGLang {release} has no flag {opt} ({h}); argparse: {}",
                        e.message
                    ),
                    None => {
                        let hint = crate::error::nearest(
                            opt,
                            release_flags.option_strings.iter().map(|(o, _)| o.as_str()),
                        )
                        .map(|n| format!(" (did you mean {n}?)"))
                        .unwrap_or_default();
                        format!(
                            "SGLang {release} has no flag {opt}{hint}; argparse: {}",
                            e.message
                        )
                    }
                };
            }
        }
        // A carriage return in SGLang's verdict: a file with CRLF line ends, as bash runs
        // it. Shown as `\r`, and said.
        if msg.contains('\r') {
            msg = msg.replace('\r', "\\r")
                + " (a carriage return: the text has Windows CRLF line ends, and bash passes the CR to SGLang in the last word of each line; a `\\` before CRLF does not continue the line: convert it with `dos2unix`)";
        }
        // SGLang's own parser refuses the command (`check`: an invalid_args row).
        err(line, msg).sglang_refuses()
    })?;
    let model_line = launch
        .argv
        .iter()
        .position(|w| {
            w.split('=')
                .next()
                .is_some_and(|f| f == "--model-path" || f == "--model")
        })
        .and_then(|i| launch.lines.get(i).copied())
        .and_then(|l| pos.first_line.map(|f| f + l - 1));
    // Each given flag as typed with its value, and its line in the scenario file.
    let flags: Vec<(String, Option<usize>)> = parsed
        .given
        .iter()
        .map(|g| {
            let value = parsed.values.get(&g.dest);
            let words = match value {
                _ if g.typed.contains('=') => 0,
                Some(Value::Bool(_)) | Some(Value::Null) | None => 0,
                Some(Value::Array(a)) => a.len(),
                Some(_) => 1,
            };
            let mut flag = g.typed.clone();
            for w in argv.iter().skip(g.index + 1).take(words) {
                flag.push(' ');
                flag.push_str(w);
            }
            let line = argv_at
                .get(g.index)
                .and_then(|&i| launch.lines.get(i))
                .and_then(|&l| pos.first_line.map(|f| f + l - 1));
            (flag, line)
        })
        .collect();
    let unset_model_path = launch
        .unset_model_path
        .clone()
        .map(|(name, l)| (name, pos.first_line.map(|f| f + l - 1)));
    let mut out = to_fields(launch, release, &parsed);
    out.model_path_line = model_line;
    out.unset_model_path = unset_model_path;
    if !dynamo_ignored.is_empty() {
        out.notes.push(format!(
            "Dynamo flags ignored (NVIDIA Dynamo's own, not passed to SGLang; ai-dynamo {} `dynamo/sglang/args.py`): {}",
            crate::flags::dynamo::release(),
            dynamo_ignored.join(", ")
        ));
    }
    // The flag behind each field: its own dest, else `--attn-dp-size` (DP attention).
    for field in out.fields.keys() {
        let by = |dest: &str| parsed.given.iter().rposition(|g| g.dest == dest);
        if let Some(i) = by(field).or_else(|| by("attn_dp_size")) {
            out.flag_of.insert(field.clone(), flags[i].clone());
        }
    }
    Ok(out)
}

/// What SGLang `release` makes of a pasted text: the launch bash would run, the argv
/// SGLang's parser receives, and argparse's verdict.
#[derive(Debug, Clone)]
pub struct Reading {
    pub launch: Launch,
    pub argv: Vec<String>,
    /// For each word of `argv`, the index of the launch's word it came from (`sglang
    /// serve` drops `--model-type X` and adds `--model-path` before a positional path).
    pub argv_at: Vec<usize>,
    pub result: Result<Parsed, crate::flags::ArgError>,
    /// The Dynamo flags of a `python -m dynamo.sglang` worker, as typed with their
    /// values: Dynamo's, not passed to SGLang.
    pub dynamo_ignored: Vec<String>,
}

/// Reads `src` as bash, then as SGLang `release`'s parser.
pub fn read_text(src: &Src, release: Release) -> Result<Reading, super::shell::ShellError> {
    let launch = find_launch(src)?;
    let (mut argv, mut argv_at) = serve_argv(&launch, release);
    // NVIDIA Dynamo's SGLang worker takes its own flags and hands the rest to SGLang's
    // parser unchanged (ai-dynamo 1.6.1 `dynamo/sglang/args.py: parse_args`).
    let mut dynamo_ignored = Vec::new();
    if launch.launcher.contains("dynamo.sglang") {
        let (keep, ignored) = crate::flags::dynamo::split(&argv);
        argv_at = keep.iter().map(|&i| argv_at[i]).collect();
        argv = keep.iter().map(|&i| argv[i].clone()).collect();
        dynamo_ignored = ignored;
    }
    let result = crate::flags::parse(release.flags(), &argv);
    Ok(Reading {
        launch,
        argv,
        argv_at,
        result,
        dynamo_ignored,
    })
}

/// `sglang serve` hands argv on after taking a leading positional model path (0.5.16–
/// 0.5.23 `cli/serve.py: _normalize_positional_model_path`) and `--model-type X`
/// (`_extract_model_type_override`, exact spelling only).
fn serve_argv(l: &Launch, release: Release) -> (Vec<String>, Vec<usize>) {
    if !l.serve {
        return (l.argv.clone(), (0..l.argv.len()).collect());
    }
    let mut out = Vec::new();
    let mut at = Vec::new();
    let mut i = 0;
    while i < l.argv.len() {
        let a = &l.argv[i];
        if a == "--model-type" {
            i += 2;
            continue;
        }
        if a.starts_with("--model-type=") {
            i += 1;
            continue;
        }
        out.push(a.clone());
        at.push(i);
        i += 1;
    }
    if positional_model_path(release) && out.first().is_some_and(|a| !a.starts_with('-')) {
        out.insert(0, "--model-path".into());
        at.insert(0, at[0]);
    }
    (out, at)
}

/// Releases whose `sglang serve` reads a leading positional model path (0.5.16+).
fn positional_model_path(release: Release) -> bool {
    !matches!(
        release,
        Release::V0_5_14 | Release::V0_5_15 | Release::V0_5_15Post1
    )
}

fn to_fields(launch: Launch, release: Release, p: &Parsed) -> LaunchArgs {
    let mut out = LaunchArgs {
        release,
        launcher: launch.launcher.clone(),
        env: launch.env.clone(),
        notes: launch
            .warnings
            .iter()
            .map(|w| format!("warning: launch text {w}"))
            .collect(),
        fields: Map::new(),
        given: BTreeMap::new(),
        given_as: BTreeMap::new(),
        not_modelled: Vec::new(),
        model_path_line: None,
        flag_of: BTreeMap::new(),
        unset_model_path: None,
    };
    for g in &p.given {
        let v = p.values.get(&g.dest).cloned().unwrap_or(Value::Null);
        out.given.insert(g.dest.clone(), v.clone());
        out.given_as.insert(g.dest.clone(), g.typed.clone());
        if MODELLED.contains(&g.dest.as_str()) {
            if !v.is_null() {
                out.fields.insert(g.dest.clone(), v);
            }
        } else if g.dest == "attn_dp_size" {
            // 0.5.23 `--attn-dp-size N` is DP attention of size N (`--enable-dp-attention
            // --dp N` before it; `parallel_hook.py` folds the old spelling into it).
            if let Some(n) = v.as_u64().filter(|&n| n > 1) {
                out.fields
                    .insert("enable_dp_attention".into(), Value::Bool(true));
                out.fields.entry("dp_size").or_insert(Value::from(n));
            }
        } else if g.dest == "dtype"
            && matches!(v.as_str(), Some("auto" | "half" | "float16" | "bfloat16"))
        {
            // A 16-bit `--dtype` (`configs/model_config.py: _get_and_verify_dtype`,
            // 0.5.14–0.5.23; `auto` on a float32 checkpoint is float16) keeps every
            // unquantised weight and an `auto` KV cache at 2 bytes, as the catalogue
            // counts them: nothing moves (`float` / `float32` would double them).
        } else if !out.not_modelled.iter().any(|n| n.dest == g.dest) {
            out.not_modelled.push(NotModelled {
                flag: g.typed.clone(),
                dest: g.dest.clone(),
                memory_effect: memory_effect(&g.dest).map(str::to_string),
            });
        }
    }
    // SGLang variables in the command's environment: those modelled fill `server.env`,
    // the others that move memory are named (`launch_env`).
    let modelled: Map<String, Value> = launch
        .env
        .iter()
        .filter(|(k, _)| super::launch_env::MODELLED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    if !modelled.is_empty() {
        out.fields.insert("env".into(), Value::Object(modelled));
    }
    for (name, value, effect) in super::launch_env::unmodelled(&launch.env) {
        out.not_modelled.push(NotModelled {
            flag: format!("{name}={value}"),
            dest: format!("env {name}"),
            memory_effect: Some(effect.to_string()),
        });
    }
    if p.was_given("dp_size") && p.was_given("attn_dp_size") {
        out.fields.insert(
            "dp_size".into(),
            p.values.get("dp_size").cloned().unwrap_or(Value::Null),
        );
    }
    let hicache_on = p.values.get("enable_hierarchical_cache") == Some(&Value::Bool(true));
    let stray: Vec<&str> = p
        .given
        .iter()
        .filter(|g| g.dest.starts_with("hicache_"))
        .map(|g| g.typed.as_str())
        .collect();
    if !hicache_on && !stray.is_empty() {
        out.notes.push(format!(
            "warning: {} given without --enable-hierarchical-cache: SGLang keeps HiCache off and ignores them (add --enable-hierarchical-cache, or set server.enable_hierarchical_cache: true)",
            stray.join(", ")
        ));
    }
    // 0.5.14–0.5.23 `prepare_server_args` merges a `--config` YAML file into argv before
    // argparse; the file is not read here (`MEMORY_UNMODELLED`: the answer is
    // `unverified`, and the note below says so).
    for n in &out.not_modelled {
        if let Some(m) = &n.memory_effect {
            out.notes
                .push(format!("warning: {} is not modelled: {m}", n.flag));
        }
    }
    out
}

/// What a `--model-path` says about the model preset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathModel {
    /// The checkpoint's name is a preset (or an alias of one): its canonical id.
    Preset(String),
    /// No preset, but the model family (`qwen3`, `deepseek`, `glm`, …) is recognisable.
    Family(String),
    /// Nothing recognisable (a local path like `/models/ft-7`).
    Unknown,
}

/// The leading letters-and-digits token of a name: `qwen3-235b…` → `qwen3`,
/// `deepseek-v3` → `deepseek`, `glm-5.2` → `glm`.
fn family(name: &str) -> &str {
    name.split(['-', '_', '.', '/']).next().unwrap_or("")
}

/// Matches a `--model-path` (hub id or local path) to a model preset by its last path
/// component: the preset id or an alias, alone or followed by `-suffix`
/// (`GLM-5.2-NVFP4` → `glm-5.2`, `DeepSeek-R1` → `deepseek-v3`).
pub fn model_from_path(path: &str) -> PathModel {
    let base = path
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if base.is_empty() {
        return PathModel::Unknown;
    }
    let mut names: Vec<(String, String)> = crate::model::model_presets()
        .iter()
        .flat_map(|(id, p)| {
            std::iter::once((id.clone(), id.clone()))
                .chain(p.aliases.iter().map(move |a| (a.clone(), id.clone())))
        })
        .collect();
    // Longest name first: `deepseek-v3.2` before `deepseek-v3`.
    names.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    for (name, id) in &names {
        if base == *name
            || base
                .strip_prefix(name.as_str())
                .is_some_and(|r| r.starts_with('-'))
        {
            return PathModel::Preset(id.clone());
        }
    }
    let fam = family(&base);
    if names.iter().any(|(n, _)| family(n) == fam)
        || [
            "qwen", "qwen2", "qwen2.5", "qwen3", "qwen3.5", "llama", "mistral", "mixtral", "gemma",
            "phi",
        ]
        .contains(&fam)
    {
        PathModel::Family(fam.to_string())
    } else {
        PathModel::Unknown
    }
}

/// A `--model-path` that disagrees with `model:`, or names no preset when there is none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelPathError {
    #[error(
        "--model-path {path} is the `{id}` preset, but `model:` is `{model}`: drop `model:` (the launch command picks it) or fix one of them"
    )]
    OtherPreset {
        path: String,
        id: String,
        model: String,
    },
    #[error(
        "--model-path {path} is a {family} model, but `model:` is `{model}`: the KV geometry would be another model's; pick the matching preset (`hicache-sim presets`) or describe the model with overrides"
    )]
    OtherFamily {
        path: String,
        family: String,
        model: String,
    },
    #[error(
        "--model-path {0} names no model preset: add `model:` (a preset, with overrides for this checkpoint's geometry)"
    )]
    NoPreset(String),
}

/// Checks `--model-path` against the scenario's `model:` preset (canonical id), or picks
/// the preset when the scenario has none. `Ok(Some(id))` = the preset to use.
pub fn check_model_path(path: &str, model: Option<&str>) -> Result<Option<String>, ModelPathError> {
    let canonical = |m: &str| {
        crate::model::model_presets()
            .iter()
            .find(|(id, p)| id.as_str() == m || p.aliases.iter().any(|a| a == m))
            .map(|(id, _)| id.clone())
    };
    match (model_from_path(path), model) {
        (PathModel::Preset(id), None) => Ok(Some(id)),
        (PathModel::Preset(id), Some(m)) => match canonical(m) {
            Some(c) if c != id => Err(ModelPathError::OtherPreset {
                path: path.to_string(),
                id,
                model: m.to_string(),
            }),
            _ => Ok(None),
        },
        // Only a preset `model:` is checked against the path's family: a catalogue
        // name or `{config: FILE}` describes the checkpoint itself.
        (PathModel::Family(f), Some(m)) if canonical(m).is_some_and(|c| family(&c) != f) => {
            Err(ModelPathError::OtherFamily {
                path: path.to_string(),
                family: f.to_string(),
                model: m.to_string(),
            })
        }
        (PathModel::Family(_) | PathModel::Unknown, None) => {
            Err(ModelPathError::NoPreset(path.to_string()))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16-bit `--dtype` moves no byte (no warning); `float32` doubles the weights and
    /// stays a named unmodelled flag.
    #[test]
    fn a_16_bit_dtype_is_modelled_float32_is_not() {
        for d in ["half", "float16", "bfloat16", "auto"] {
            let a = parse_launch(
                &format!("python -m sglang.launch_server --model-path m --dtype {d}"),
                Release::V0_5_23,
                "s.yaml",
                None,
            )
            .unwrap();
            assert!(a.not_modelled.is_empty(), "{d}: {:?}", a.not_modelled);
            assert!(a.notes.is_empty(), "{d}: {:?}", a.notes);
        }
        let a = parse_launch(
            "python -m sglang.launch_server --model-path m --dtype float32",
            Release::V0_5_23,
            "s.yaml",
            None,
        )
        .unwrap();
        assert_eq!(a.not_modelled[0].dest, "dtype");
        assert!(a.not_modelled[0].memory_effect.is_some());
    }

    #[test]
    fn parses_a_real_command() {
        let cmd = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --tp 8 \\\n --enable-hierarchical-cache --hicache-size 176 --page-size 64 --trust-remote-code --port=30000";
        let a = parse_launch(cmd, Release::V0_5_23, "s.yaml", Some(3)).unwrap();
        assert_eq!(a.fields["tp_size"], Value::from(8u64));
        assert_eq!(a.fields["hicache_size"], Value::from(176u64));
        assert_eq!(a.fields["page_size"], Value::from(64u64));
        assert_eq!(a.fields["enable_hierarchical_cache"], Value::Bool(true));
        let nm: Vec<&str> = a.not_modelled.iter().map(|n| n.flag.as_str()).collect();
        assert_eq!(nm, ["--trust-remote-code", "--port"]);
        assert!(a.not_modelled.iter().all(|n| n.memory_effect.is_none()));
        let a = parse_launch(
            "sglang serve m --config cfg.yaml --speculative-algorithm EAGLE --speculative-draft-model-quantization fp8",
            Release::V0_5_23,
            "s.yaml",
            None,
        )
        .unwrap();
        assert_eq!(
            a.notes[0],
            "warning: --config is not modelled: the flags of a --config YAML file are not read: the answer is for the command without them (paste them into the launch command)"
        );
        assert_eq!(a.fields["speculative_algorithm"], Value::from("EAGLE"));
        assert!(
            a.notes[1].starts_with(
                "warning: --speculative-draft-model-quantization is not modelled: draft weights"
            ),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn unknown_flag_names_the_release_and_a_suggestion() {
        let e = parse_launch(
            "python -m sglang.launch_server --model-path m --hicache-sise 135",
            Release::V0_5_23,
            "s.yaml",
            Some(7),
        )
        .unwrap_err();
        assert_eq!(e.line, Some(7));
        assert_eq!(
            e.message,
            "SGLang 0.5.23 has no flag --hicache-sise (did you mean --hicache-size?); argparse: unrecognized arguments: --hicache-sise 135"
        );
        let e = parse_launch(
            "python -m sglang.launch_server --model-path m --hicache-host-memory-fraction 0.5",
            Release::V0_5_20,
            "s.yaml",
            None,
        )
        .unwrap_err();
        assert!(
            e.message.starts_with(
                "SGLang 0.5.20 has no flag --hicache-host-memory-fraction (added in 0.5.21)"
            ),
            "{}",
            e.message
        );
        let e = parse_launch(
            "sglang serve m --tp eight",
            Release::V0_5_23,
            "s.yaml",
            None,
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "SGLang 0.5.23 refuses this command: argument --tp-size/--tensor-parallel-size: invalid int value: 'eight'"
        );
    }

    #[test]
    fn model_path_picks_or_contradicts_the_preset() {
        assert_eq!(
            model_from_path("zai-org/GLM-5.2-NVFP4"),
            PathModel::Preset("glm-5.2".into())
        );
        assert_eq!(
            model_from_path("/xxx/DeepSeek-R1/"),
            PathModel::Preset("deepseek-v3".into())
        );
        assert_eq!(
            model_from_path("deepseek-ai/DeepSeek-V3.2"),
            PathModel::Preset("deepseek-v3.2".into())
        );
        assert_eq!(
            model_from_path("Qwen/Qwen3-32B"),
            PathModel::Family("qwen3".into())
        );
        assert_eq!(
            check_model_path("deepseek-ai/DeepSeek-V3.2", None),
            Ok(Some("deepseek-v3.2".into()))
        );
        assert_eq!(
            check_model_path("zai-org/GLM-5.2-NVFP4", Some("glm-5.2")),
            Ok(None)
        );
        let e = check_model_path("Qwen/Qwen3-32B", Some("deepseek-v3"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "--model-path Qwen/Qwen3-32B is a qwen3 model, but `model:` is `deepseek-v3`"
            ),
            "{e}"
        );
        let e = check_model_path("deepseek-ai/DeepSeek-V3.2", Some("glm-5.2"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is the `deepseek-v3.2` preset"), "{e}");
        assert_eq!(check_model_path("/models/ft-7", Some("glm-5.2")), Ok(None));
    }

    #[test]
    fn release_ids() {
        use crate::release::Sglang;
        let table = |id: &str| Sglang::from_id(id).unwrap().release().flags().release.id();
        assert_eq!(table("0.5.19"), "0.5.19");
        // #35540 first shipped in 0.5.19 (the release module's map).
        assert_eq!(table("pr35540"), "0.5.19");
        assert_eq!(table("pr40135-whole-headroom"), "0.5.21");
        assert_eq!(table("latest"), "0.5.23");
        // 0.5.15.post1's parser is 0.5.15's (`post_releases_same_as`).
        assert_eq!(table("0.5.15.post1"), "0.5.15");
        assert!(!positional_model_path(Release::V0_5_15Post1));
        assert!(positional_model_path(Release::V0_5_16));
    }
}
