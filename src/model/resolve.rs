//! From what a scenario or a launch command says about the model to a [`ModelPreset`]
//! the start-up, plan and replay read: one function, [`resolve`].
//!
//! Sources, in order:
//! 1. `--model-path DIR` when `DIR/config.json` exists (a local checkpoint): its
//!    `config.json`, `hf_quant_config.json` and `model.safetensors.index.json` — SGLang
//!    reads the same files (`configs/model_config.py: ModelConfig`);
//! 2. `model: {config: FILE}` in a scenario (the `hf_quant_config.json` and
//!    `model.safetensors.index.json` next to it are read when present);
//! 3. `model: NAME`: a model preset (`glm-5.2`, `deepseek-v3`, … — the incidents'
//!    figures), else the bundled catalogue by Hugging Face id or name;
//! 4. no `model:`: the `--model-path` name matched to a preset, else to the catalogue
//!    (ids and basenames, case-insensitive, `-Instruct` / `-Chat` / `-Base` and
//!    quantisation suffixes such as `-FP8`, `-AWQ`, `-GPTQ-Int4` mapped to the base
//!    architecture plus that quantisation).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::catalogue::{self, Found};
use super::dtype::KvDtype;
use super::hf_config::{ConfigFiles, HfModel, read_model};
use super::parallel::ParallelLayout;
use super::presets::{ModelPreset, model_presets};
use super::quant::{CheckpointQuant, Quantization, WeightFormat};
use super::weights::PartBytes;
use crate::units::ByteSize;

/// What a scenario says about its model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelQuery<'a> {
    /// `model: NAME` / `model: {preset: NAME}`: a preset, or a catalogue id or name.
    pub name: Option<&'a str>,
    /// `model: {config: FILE}`, resolved against the scenario's folder.
    pub config_file: Option<&'a Path>,
    /// `--model-path` (`server.model_path`, or from `server.launch`).
    pub model_path: Option<&'a str>,
}

/// Where a model's description came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// A model preset (`src/model/models.yaml`).
    Preset(String),
    /// A catalogue entry: its id, and the file it was read from.
    Catalogue { hf_id: String, cited: String },
    /// `model: {config: FILE}`.
    ConfigFile(PathBuf),
    /// `--model-path DIR` with a `config.json`.
    LocalDir(PathBuf),
}

/// A model as the simulation reads it, with its description when it came from a config.
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    /// A short name for reports (`glm-5.2`, `Qwen/Qwen3-32B`, the directory name).
    pub name: String,
    pub preset: ModelPreset,
    pub source: ModelSource,
    /// The config as read (`None` for a preset).
    pub hf: Option<HfModel>,
    /// The checkpoint's quantisation (`None` for a preset).
    pub quantization: Option<Quantization>,
    /// One line for the scenario's notes (how the model was found).
    pub note: Option<String>,
}

/// Beside a `config.json`, the files [`read_files`] reads when they exist.
const SIDE_FILES: [&str; 2] = ["hf_quant_config.json", "model.safetensors.index.json"];

impl ResolvedModel {
    /// The files this model was read from (`config.json` and whichever of
    /// `hf_quant_config.json` and `model.safetensors.index.json` sit beside it), for the
    /// fingerprint of a result that depends on them; none for a preset or the catalogue
    /// (bundled in the binary).
    pub fn input_files(&self) -> Vec<PathBuf> {
        let config = match &self.source {
            ModelSource::ConfigFile(c) => c.clone(),
            ModelSource::LocalDir(d) => d.join("config.json"),
            ModelSource::Preset(_) | ModelSource::Catalogue { .. } => return Vec::new(),
        };
        let dir = config.parent().unwrap_or(Path::new(".")).to_path_buf();
        std::iter::once(config)
            .chain(
                SIDE_FILES
                    .iter()
                    .map(|f| dir.join(f))
                    .filter(|p| p.is_file()),
            )
            .collect()
    }

    /// Bytes of weights by part: the config's parameter counts in the checkpoint's
    /// format, scaled to `model.safetensors.index.json`'s `metadata.total_size` when it
    /// was read. `None` for a preset.
    pub fn part_bytes(&self) -> Option<PartBytes> {
        let (hf, q) = (self.hf.as_ref()?, self.quantization.as_ref()?);
        let b = hf.params.bytes(q);
        Some(match hf.safetensors_total_size {
            Some(t) => b.scaled_to(t),
            None => b,
        })
    }

    /// Bytes of weights one rank holds (MTP draft excluded), by SGLang's sharding rules
    /// ([`PartBytes::per_rank`]: attention over the attention-TP group — replicated `dp`
    /// times under `--enable-dp-attention` —, experts and MLPs over TP/EP, vocabulary
    /// over TP, norms and routers replicated). `None` for a preset, whose checkpoint is
    /// divided evenly ([`ModelPreset::weights_per_rank`]).
    pub fn weights_per_rank(&self, layout: &ParallelLayout) -> Option<u64> {
        Some(self.part_bytes()?.per_rank(layout))
    }

    /// What `Load weight end … mem usage=` reports on one rank: [`Self::weights_per_rank`]
    /// plus [`LOAD_BYTES_PER_LAYER`] for each decoder layer the rank holds. `None` for a
    /// preset.
    pub fn weights_as_loaded(&self, layout: &ParallelLayout) -> Option<u64> {
        self.weights_as_loaded_on(layout, None)
    }

    /// [`Self::weights_as_loaded`] on a GPU of compute capability `sm_major`
    /// ([`super::sm_major`]): plus the padding of an mxfp4 checkpoint's MoE buffers
    /// ([`super::weights::mxfp4_moe_padding_per_rank`], gpt-oss) and the buffers the
    /// model builds with its weights ([`super::weights::ParamCounts::load_buffers`]:
    /// DeepSeek-V4's RoPE tables).
    pub fn weights_as_loaded_on(
        &self,
        layout: &ParallelLayout,
        sm_major: Option<u32>,
    ) -> Option<u64> {
        let hf = self.hf.as_ref()?;
        let layers = (hf.layers as u64).div_ceil(layout.pp_size.max(1) as u64);
        let padding = match self.quantization.as_ref().map(|q| q.format) {
            Some(WeightFormat::Mxfp4) => super::weights::mxfp4_moe_padding_per_rank(
                &hf.params,
                layout.tp_size as u64,
                sm_major,
            )
            .div_ceil(layout.pp_size.max(1) as u64),
            _ => 0,
        };
        // DeepSeek-V4's RoPE tables ([`super::weights::dsv4_rope_table_bytes`]): whole
        // on every rank (a PP stage holding both layer kinds builds both).
        Some(
            self.weights_per_rank(layout)?
                + padding
                + layers * LOAD_BYTES_PER_LAYER
                + hf.params.load_buffers,
        )
    }
}

/// Device memory the load takes per decoder layer on each rank beyond the weights'
/// bytes. `Load weight end … mem usage=` is the drop in free device memory across
/// `model_executor/model_runner.py: load_model` (`get_available_gpu_memory` after
/// `torch.cuda.empty_cache()`), and PyTorch's caching allocator rounds each tensor
/// above 1 MiB up to 2 MiB (`c10/cuda/CUDACachingAllocator.cpp: round_size`,
/// `kRoundLarge`): 1 MiB a tensor on average, four large tensors a layer (fused QKV,
/// O, gate_up / w13, down / w2). Calibrated on the log corpus's logged weights
/// (`tests/log_corpus/README.md`: QwQ-32B TP4 +0.28 GiB over the checkpoint share, 64
/// layers x 4 MiB = 0.25; Llama-3.1-8B TP1 +0.15 and +0.13 GiB, 32 x 4 MiB = 0.125).
pub const LOAD_BYTES_PER_LAYER: u64 = 4 << 20;

/// Why a model could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{}: cannot read: {error}", path.display())]
    CannotRead {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: not JSON: {error}", path.display())]
    NotJson {
        path: PathBuf,
        error: serde_json::Error,
    },
    /// A `model.safetensors.index.json` without `metadata.total_size`.
    #[error(
        "{}: `metadata.total_size` is missing: expected the bytes of all tensors",
        .0.display()
    )]
    NoTotalSize(PathBuf),
    /// A config that does not describe a model this simulator reads (`origin` says where
    /// it came from).
    #[error("{origin}: {error}")]
    Config {
        origin: String,
        error: super::hf_config::ReadError,
    },
    /// Not a preset, not in the catalogue, not a local checkpoint: the nearest name, the
    /// presets, and the three ways to describe a model.
    #[error("{}", unknown(.0))]
    Unknown(String),
    #[error(
        "no model: give `model:` (a preset or catalogue name, or {{config: FILE}}) or a launch command with --model-path"
    )]
    NoModel,
}

impl ModelError {
    /// A known architecture whose pools are not modelled (`hf_config::ReadError::NotModelled`),
    /// as opposed to a model that is not described at all.
    pub fn is_not_modelled(&self) -> bool {
        matches!(
            self,
            ModelError::Config {
                error: super::hf_config::ReadError::NotModelled {
                    sglang_loads: true,
                    ..
                },
                ..
            }
        )
    }
}

/// The answer for a model this simulator cannot find or read: the nearest preset or
/// catalogue name, the presets, and the three ways to describe a model.
fn unknown(what: &str) -> String {
    let base = what
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(what);
    let presets = model_presets();
    let names = presets
        .iter()
        .flat_map(|(id, p)| {
            std::iter::once(id.as_str()).chain(p.aliases.iter().map(String::as_str))
        })
        .chain(catalogue::catalogue().iter().map(|e| e.basename()));
    let hint = crate::error::nearest(base, names)
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    format!(
        "unknown model `{what}`{hint}: not a model preset ({}), not in the bundled catalogue ({} Hugging Face models) and not a local directory with a config.json; describe it with `model: {{config: path/to/config.json}}` (its Hugging Face config.json), point --model-path at a local checkpoint directory, or name a preset or catalogue model (`hicache-sim presets` lists them)",
        presets.keys().cloned().collect::<Vec<_>>().join(", "),
        catalogue::catalogue().len()
    )
}

fn read_json(path: &Path) -> Result<Value, ModelError> {
    let text = crate::input::read_to_string(path, crate::input::DOCUMENT_CAP).map_err(|error| {
        ModelError::CannotRead {
            path: path.to_path_buf(),
            error,
        }
    })?;
    serde_json::from_str(&text).map_err(|error| ModelError::NotJson {
        path: path.to_path_buf(),
        error,
    })
}

/// `config.json` plus the optional `hf_quant_config.json` and the safetensors index's
/// `metadata.total_size` of a checkpoint folder.
fn read_files(config: &Path) -> Result<ConfigFiles, ModelError> {
    let dir = config.parent().unwrap_or(Path::new("."));
    let hf_quant_config = {
        let p = dir.join(SIDE_FILES[0]);
        if p.is_file() {
            Some(read_json(&p)?)
        } else {
            None
        }
    };
    let safetensors_total_size = {
        let p = dir.join(SIDE_FILES[1]);
        if p.is_file() {
            let v = read_json(&p)?;
            Some(
                v.pointer("/metadata/total_size")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| ModelError::NoTotalSize(p.clone()))?,
            )
        } else {
            None
        }
    };
    Ok(ConfigFiles {
        config: read_json(config)?,
        hf_quant_config,
        safetensors_total_size,
    })
}

/// A [`ModelPreset`] from a config: its geometry, layers, MTP layers, the checkpoint
/// size in its quantisation (the safetensors index's total when known, else the
/// parameter count in that format; the default) and in the other formats, the KV dtype
/// `auto` means for it.
pub fn preset_from_config(hf: &HfModel, quant: &Quantization, description: String) -> ModelPreset {
    let parts = hf.params.bytes(quant);
    let bytes = hf.safetensors_total_size.unwrap_or(parts.total());
    let key = quant.format.key();
    // The other formats a scenario may name (`startup.weight_load.quantization`): the
    // same parameters in bf16, fp8 (block scales), NVFP4, MXFP4 and int4 (group 128),
    // with no exclusions beyond what every format keeps in bf16.
    let mut checkpoint: BTreeMap<CheckpointQuant, ByteSize> = [
        WeightFormat::Bf16,
        WeightFormat::Fp8Block,
        WeightFormat::Nvfp4,
        WeightFormat::Mxfp4,
        WeightFormat::Int4 { group_size: 128 },
    ]
    .into_iter()
    .map(|f| {
        let q = Quantization {
            format: f,
            exclude: Vec::new(),
            ..quant.clone()
        };
        (f.key(), ByteSize(hf.params.bytes(&q).total()))
    })
    .collect();
    checkpoint.insert(key, ByteSize(bytes));
    ModelPreset {
        description,
        aliases: Vec::new(),
        attention: hf.attention.clone(),
        layers: hf.layers,
        mtp_layers: hf.mtp_layers,
        // With the default flags under the newest release's architecture lists: the
        // preset has no release (the per-release rule with the server's flags is
        // `multimodal::MultimodalFacts::served`, which the default fraction reads).
        multimodal: hf.multimodal.is_multimodal(
            crate::release::Release::V0_5_23,
            None,
            false,
            false,
        ),
        checkpoint,
        default_quant: key,
        default_kv_dtype: if quant.kv_cache_fp8 {
            KvDtype::Fp8
        } else {
            KvDtype::Bf16
        },
    }
}

fn from_files(
    files: &ConfigFiles,
    quant: Option<Quantization>,
    name: String,
    source: ModelSource,
    origin: &str,
) -> Result<ResolvedModel, ModelError> {
    let hf = read_model(files).map_err(|error| ModelError::Config {
        origin: origin.to_string(),
        error,
    })?;
    let quant = quant.unwrap_or_else(|| hf.quantization.clone());
    let preset = preset_from_config(
        &hf,
        &quant,
        format!("{name} ({}, read from {origin})", hf.architecture),
    );
    Ok(ResolvedModel {
        note: Some(format!(
            "model: {name} read from {origin} ({}; quantisation {} from {})",
            hf.architecture,
            quant.method.as_deref().unwrap_or("none"),
            quant.source
        )),
        name,
        preset,
        source,
        hf: Some(hf),
        quantization: Some(quant),
    })
}

fn from_catalogue(f: Found) -> Result<ResolvedModel, ModelError> {
    let e = f.entry;
    let files = ConfigFiles {
        config: e.config.clone(),
        hf_quant_config: e.hf_quant_config.clone(),
        safetensors_total_size: None,
    };
    let cited = e.config_source.cite();
    let mut r = from_files(
        &files,
        f.quant,
        e.hf_id.clone(),
        ModelSource::Catalogue {
            hf_id: e.hf_id.clone(),
            cited: cited.clone(),
        },
        &format!("the catalogue ({cited})"),
    )?;
    r.note = r.note.map(|n| format!("{n}; matched: {}", f.how));
    Ok(r)
}

/// The bundled catalogue's model for a `--model-path` (its config, in the format the
/// name or the config says), when the catalogue knows it: what a preset picked from the
/// same path lacks (per-layer shapes, for the weight offload).
pub fn catalogue_model(path: &str) -> Option<ResolvedModel> {
    catalogue::find(path).and_then(|f| from_catalogue(f).ok())
}

/// A preset by id or alias.
fn preset(name: &str) -> Option<ResolvedModel> {
    let (id, p) = model_presets()
        .iter()
        .find(|(id, p)| id.as_str() == name || p.aliases.iter().any(|a| a == name))?;
    Some(ResolvedModel {
        name: id.clone(),
        preset: p.clone(),
        source: ModelSource::Preset(id.clone()),
        hf: None,
        quantization: None,
        note: None,
    })
}

/// Whether what follows a preset's name in a path's last component names the same
/// architecture: only variant words (`-Instruct`, `-Thinking`, …), a date (`-2507`,
/// `-0905`) and quantisation suffixes (`-FP8`, `-NVFP4`, `-AWQ`, …). Any other word is
/// another model: `GLM-4.7-Flash` (MLA, 47 layers) and `GLM-4.5-Air` (46 layers) are not
/// `glm-4.6` (92 layers), `DeepSeek-R1-Distill-Qwen-32B` is not `deepseek-v3`.
fn same_architecture_suffix(rest: &str) -> bool {
    let words: Vec<&str> = super::catalogue::VARIANTS
        .iter()
        .chain(super::quant::NAME_SUFFIXES.iter().map(|(s, _, _)| s))
        .flat_map(|s| s.split('-'))
        .filter(|w| !w.is_empty())
        .collect();
    rest.strip_prefix('-').is_some_and(|r| {
        r.split('-')
            .all(|w| words.contains(&w) || (w.len() == 4 && w.chars().all(|c| c.is_ascii_digit())))
    })
}

/// The preset a `--model-path` names by its last component: the id or an alias, alone
/// or followed by suffixes that keep the architecture (`GLM-5.2-NVFP4` → `glm-5.2`,
/// `Qwen3-235B-A22B-Instruct-2507` → `qwen3-235b-a22b`; see
/// `same_architecture_suffix`), longest name first.
pub fn preset_for_path(path: &str) -> Option<String> {
    let base = path
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if base.is_empty() {
        return None;
    }
    let mut names: Vec<(String, String)> = model_presets()
        .iter()
        .flat_map(|(id, p)| {
            std::iter::once((id.clone(), id.clone()))
                .chain(p.aliases.iter().map(move |a| (a.clone(), id.clone())))
        })
        .collect();
    names.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    names
        .into_iter()
        .find(|(name, _)| {
            base == *name
                || base
                    .strip_prefix(name.as_str())
                    .is_some_and(same_architecture_suffix)
        })
        .map(|(_, id)| id)
}

/// Resolves a model (see the module doc for the order of sources). Errors say what was
/// looked for and how to describe the model.
pub fn resolve(q: &ModelQuery<'_>) -> Result<ResolvedModel, ModelError> {
    if let Some(p) = q.model_path {
        let dir = Path::new(p);
        let cfg = dir.join("config.json");
        if cfg.is_file() {
            let files = read_files(&cfg)?;
            let name = dir
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.to_string());
            return from_files(
                &files,
                None,
                name,
                ModelSource::LocalDir(dir.to_path_buf()),
                &cfg.display().to_string(),
            );
        }
    }
    if let Some(cfg) = q.config_file {
        let files = read_files(cfg)?;
        let name = cfg
            .parent()
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| cfg.display().to_string());
        return from_files(
            &files,
            None,
            name,
            ModelSource::ConfigFile(cfg.to_path_buf()),
            &cfg.display().to_string(),
        );
    }
    if let Some(name) = q.name {
        if let Some(r) = preset(name) {
            return Ok(r);
        }
        return match catalogue::find(name) {
            Some(f) => from_catalogue(f),
            None => Err(ModelError::Unknown(name.to_string())),
        };
    }
    let Some(path) = q.model_path else {
        return Err(ModelError::NoModel);
    };
    if let Some(id) = preset_for_path(path) {
        let mut r = preset(&id).expect("a preset id");
        // A checkpoint format the preset has no size for (`Qwen3-235B-A22B-AWQ`): the
        // catalogue's config in that format, when it knows the model.
        if let Some(q) = super::quant::suffix_of(path)
            && !r.preset.checkpoint.contains_key(&q.format.key())
            && let Some(f) = catalogue::find(path)
        {
            return from_catalogue(f);
        }
        r.note = Some(format!("model: {id} (picked from --model-path {path})"));
        return Ok(r);
    }
    match catalogue::find(path) {
        Some(f) => from_catalogue(f),
        None => Err(ModelError::Unknown(path.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Attention, KvDtype};

    #[test]
    fn presets_catalogue_and_errors() {
        let r = resolve(&ModelQuery {
            name: Some("glm-5.2"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(r.source, ModelSource::Preset("glm-5.2".into()));
        let r = resolve(&ModelQuery {
            model_path: Some("Qwen/Qwen3-32B"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(r.name, "Qwen/Qwen3-32B");
        // Qwen3-32B: 64 layers, 8 KV heads × 128: 8 × 128 × 2 (K, V) × 2 B × 64
        // = 262,144 B per token at TP 1 (SGLang 0.5.23's cell size, golden).
        assert_eq!(
            r.preset.cell_size(&ParallelLayout::tp(1), KvDtype::Bf16),
            262_144
        );
        let e = resolve(&ModelQuery {
            model_path: Some("/models/ft-7"),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`/models/ft-7`") && e.contains("{config:"),
            "{e}"
        );
    }

    #[test]
    fn a_path_names_a_preset_only_with_suffixes_that_keep_its_architecture() {
        let p = |path: &str| preset_for_path(path);
        assert_eq!(p("zai-org/GLM-5.2-NVFP4").as_deref(), Some("glm-5.2"));
        assert_eq!(
            p("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8").as_deref(),
            Some("qwen3-235b-a22b")
        );
        assert_eq!(
            p("moonshotai/Kimi-K2-Instruct-0905").as_deref(),
            Some("kimi-k2")
        );
        assert_eq!(
            p("deepseek-ai/DeepSeek-R1-0528").as_deref(),
            Some("deepseek-v3")
        );
        assert_eq!(p("/models/GLM-4.6-FP8/").as_deref(), Some("glm-4.6"));
        // Other models whose names start with a preset's: not that preset.
        assert_eq!(p("zai-org/GLM-4.7-Flash"), None);
        assert_eq!(p("zai-org/GLM-4.5-Air"), None);
        assert_eq!(p("zai-org/GLM-4.5-Air-FP8"), None);
        assert_eq!(p("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"), None);
    }

    #[test]
    fn glm_4_7_flash_by_path_is_the_catalogue_mla_config_not_the_glm_4_6_preset() {
        // Before: `GLM-4.7-Flash` matched the `glm-4.7` alias + `-flash`, i.e. the glm-4.6
        // preset: GQA 8 x 128 x 2 (K, V) x 2 B x 92 layers = 376,832 B per token. The
        // catalogue config (aiconfigurator@19d098ad) is MLA, 47 layers:
        // (512 + 64) x 2 B x 47 = 54,144 B per token (README catalogue table, golden).
        let r = resolve(&ModelQuery {
            model_path: Some("zai-org/GLM-4.7-Flash"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(r.name, "zai-org/GLM-4.7-Flash");
        assert_eq!(
            r.preset.cell_size(&ParallelLayout::tp(1), KvDtype::Bf16),
            54_144
        );
        // GLM-4.5-Air has no sourced config: an error that names the path, not
        // GLM-4.5's 92 layers.
        let e = resolve(&ModelQuery {
            model_path: Some("zai-org/GLM-4.5-Air"),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("`zai-org/GLM-4.5-Air`"), "{e}");
    }

    #[test]
    fn glm_4_5_by_name_is_its_sourced_config() {
        // zai-org/GLM-4.5's config.json (alibaba/rtp-llm@de8bee30 test data): GQA, 92
        // layers, 8 KV heads x 128. bf16 KV per token per rank, as SGLang 0.5.21-0.5.23
        // compute it (tests/golden/kv_bytes): TP1 8 x 128 x 2 (K, V) x 2 B x 92
        // = 376,832; TP8 one KV head per rank: 128 x 2 x 2 x 92 = 47,104.
        let r = resolve(&ModelQuery {
            name: Some("zai-org/GLM-4.5"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(r.name, "zai-org/GLM-4.5");
        match &r.source {
            ModelSource::Catalogue { cited, .. } => assert!(
                cited.starts_with("alibaba/rtp-llm@de8bee30: rtp_llm/test/"),
                "{cited}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            r.preset.cell_size(&ParallelLayout::tp(1), KvDtype::Bf16),
            376_832
        );
        assert_eq!(
            r.preset.cell_size(&ParallelLayout::tp(8), KvDtype::Bf16),
            47_104
        );
    }

    #[test]
    fn awq_is_int4_not_fp8() {
        // An AWQ checkpoint used to be read as fp8.
        let r = resolve(&ModelQuery {
            model_path: Some("Qwen/Qwen2.5-72B-Instruct-AWQ"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(r.preset.default_quant, CheckpointQuant::Int4);
        assert!(matches!(
            r.preset.attention,
            Attention::Gqa { kv_heads: 8, .. }
        ));
    }
}
