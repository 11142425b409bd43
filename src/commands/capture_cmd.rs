//! `hicache-sim capture`: writes the `node:` and `memory:` of a scenario measured on this
//! machine (`crate::capture`).

use std::path::{Path, PathBuf};

use clap::Args;

use super::{CmdResult, CommandError};
use crate::capture::{self, Options};
use crate::error::InputError;

/// Environment variable naming the `nvidia-smi` program (`--nvidia-smi` wins).
pub const NVIDIA_SMI_ENV: &str = "HICACHE_SIM_NVIDIA_SMI";

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// Write the scenario here (atomically; never over a file `capture` reads) instead of
    /// standard output.
    #[arg(long, short)]
    pub output: Option<String>,
    /// Node preset (default: guessed from nvidia-smi's GPU name; required without it).
    #[arg(long)]
    pub node: Option<String>,
    /// Model for `model:` (a preset or a catalogue id, as `model:` takes it; default: a
    /// commented template to fill in).
    #[arg(long)]
    pub model: Option<String>,
    /// procfs to read (`meminfo`, `self/cgroup`, `self/mountinfo`); its mountinfo names
    /// the cgroupfs mount points. For tests: a fake tree.
    #[arg(long, default_value = "/proc")]
    pub proc_root: String,
    /// The nvidia-smi program (default: $HICACHE_SIM_NVIDIA_SMI, else `nvidia-smi` on the
    /// PATH); `none` to skip it.
    #[arg(long)]
    pub nvidia_smi: Option<String>,
}

/// Seconds since the epoch for the header: `SOURCE_DATE_EPOCH` when set (reproducible
/// files), else now.
fn now() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
}

pub fn capture(a: CaptureArgs) -> CmdResult {
    let smi = a
        .nvidia_smi
        .clone()
        .or_else(|| std::env::var(NVIDIA_SMI_ENV).ok())
        .unwrap_or_else(|| "nvidia-smi".into());
    let opts = Options {
        proc_root: PathBuf::from(&a.proc_root),
        nvidia_smi: (smi != "none").then_some(smi),
        node: a.node.clone(),
        model: a.model.clone(),
        now: now(),
    };
    let c = capture::capture(&opts)?;
    if let Some(out) = &a.output {
        // After the capture (which only reads): only then are the cgroupfs mounts known.
        let named: Vec<(&str, &Path)> = c.inputs.iter().map(|p| ("input", p.as_path())).collect();
        crate::output::refuse_input_as_output("--output", Path::new(out), &named)?;
        let trees: Vec<(&str, &Path)> = c
            .trees
            .iter()
            .enumerate()
            .map(|(i, p)| {
                (
                    if i == 0 {
                        "procfs tree"
                    } else {
                        "cgroupfs mount"
                    },
                    p.as_path(),
                )
            })
            .collect();
        crate::output::refuse_output_inside("--output", Path::new(out), &trees)?;
    }
    let text = capture::render::render(&c);
    check_loads(&text, &c)?;
    match &a.output {
        Some(out) => {
            crate::output::write_file(Path::new(out), text.as_bytes())
                .map_err(|e| CommandError::Other(format!("{out}: {e}")))?;
            eprintln!(
                "wrote {out}: node {}{}{}",
                c.preset,
                match &c.memory.cgroup {
                    Some(cg) => format!(
                        ", cgroup {:?} with {} level(s)",
                        cg.version,
                        1 + cg.parents.len() + cg.below.len()
                    )
                    .to_lowercase(),
                    None => ", no memory cgroup".into(),
                },
                if c.notes.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {} thing(s) not captured as SGLang reads them (its header lists them)",
                        c.notes.len()
                    )
                }
            );
        }
        None => print!("{text}"),
    }
    for n in &c.notes {
        eprintln!("note: {n}");
    }
    Ok(0)
}

/// The written text must be a scenario the loader takes, whose node memory the start-up
/// model builds (with a placeholder model when none was given). A failure here is a
/// defect of `capture` (exit 3), except memory the model cannot hold (exit 2).
fn check_loads(text: &str, c: &capture::Captured) -> Result<(), CommandError> {
    let v = crate::scenario::load::parse_yaml_value(text, "<captured>")
        .map_err(|e| CommandError::Other(format!("capture wrote invalid YAML: {e}")))?;
    let mem: crate::scenario::schema::MemorySpec =
        serde_json::from_value(v.get("memory").cloned().unwrap_or_default())
            .map_err(|e| CommandError::Other(format!("capture wrote an invalid `memory:`: {e}")))?;
    if mem != c.memory {
        return Err(CommandError::Other(
            "capture's `memory:` does not read back as what was captured".into(),
        ));
    }
    let sets: Vec<String> = match &c.model {
        Some(_) => Vec::new(),
        None => crate::model::model_presets()
            .keys()
            .next()
            .map(|m| vec![format!("model={m}")])
            .unwrap_or_default(),
    };
    let loaded = crate::scenario::load_str(text, "<captured>", &sets)?;
    let s = crate::scenario::resolve::resolve(&loaded)?;
    crate::startup::plan::build_nodes(&s, s.layout.nnodes.max(1)).map_err(|e| {
        CommandError::Input(InputError::new("<captured>", e.message).field(e.field))
    })?;
    Ok(())
}
