//! `hicache-sim capture`: the `node:` and `memory:` of a scenario measured on the machine
//! it runs on — `/proc/meminfo` as psutil reads it, the process's memory cgroup chain as
//! SGLang's `mem_cache/host_memory.py: _cgroup_memory_headroom` walks it (0.5.21–0.5.23,
//! cgroup v1 and v2), and `nvidia-smi` when present — so a capacity planner measures the
//! node instead of copying figures.
//!
//! - [`procfs`]: meminfo, memberships, mountinfo, the mount that holds the process;
//! - [`cgroupfs`]: one cgroup directory's files and subdirectories;
//! - [`mapping`]: those directories as the scenario's `memory.cgroup`;
//! - [`gpu`]: `nvidia-smi` and the node preset it suggests;
//! - [`render`]: the scenario YAML with its comments.

pub mod cgroupfs;
pub mod gpu;
pub mod mapping;
pub mod procfs;
pub mod render;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::hardware::{node_preset, node_presets};
use crate::scenario::schema::MemorySpec;
use crate::units::ByteSize;
use gpu::GpuRead;
use procfs::MemInfo;

/// What to read and how to name the node.
#[derive(Debug, Clone)]
pub struct Options {
    /// `/proc`, or a fake tree (its `mountinfo` names the cgroupfs mount points).
    pub proc_root: PathBuf,
    /// The `nvidia-smi` program; `None` = do not run it.
    pub nvidia_smi: Option<String>,
    /// Node preset (else guessed from `nvidia-smi`).
    pub node: Option<String>,
    /// Model for `model:` (else a commented template).
    pub model: Option<String>,
    /// Seconds since the epoch for the header.
    pub now: u64,
}

/// A node override: its YAML value and a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    pub value: String,
    pub comment: String,
}

/// Everything captured.
#[derive(Debug, Clone)]
pub struct Captured {
    pub host: Option<String>,
    pub kernel: Option<String>,
    pub now: u64,
    pub proc_root: PathBuf,
    pub meminfo: Option<MemInfo>,
    pub gpus: GpuRead,
    pub preset: String,
    /// How the preset was chosen (`--node`, or the GPU name).
    pub preset_why: String,
    pub node_overrides: BTreeMap<&'static str, Override>,
    pub memory: MemorySpec,
    /// Comments on `memory` fields by field path.
    pub comments: BTreeMap<String, String>,
    /// What was read, for the header.
    pub read: Vec<String>,
    /// What could not be read or represented.
    pub notes: Vec<String>,
    pub model: Option<String>,
    /// `server.tp_size` the scenario is written with: one rank per GPU of the node (the
    /// GPUs nvidia-smi lists, else the preset's `gpus_per_node`), so the scenario starts
    /// as a whole-node TP recipe; and where that count came from.
    pub tp_size: u64,
    pub tp_why: String,
    /// The files read (an output must not be one of them).
    pub inputs: Vec<PathBuf>,
    /// The trees read from: the procfs root and every cgroupfs mount resolved. An output
    /// inside one would land beside (or over) a file SGLang reads: `memory.max`,
    /// `memory.stat`, a sibling's `memory.current`.
    pub trees: Vec<PathBuf>,
}

/// Reads a procfs file (a regular file only, at most
/// [`KERNEL_FILE_CAP`](crate::input::KERNEL_FILE_CAP)): `Ok(None)` when it does not exist.
fn read_opt(path: &Path) -> Result<Option<String>, std::io::Error> {
    match crate::input::read_to_string(path, crate::input::KERNEL_FILE_CAP) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn presets_list() -> String {
    node_presets()
        .keys()
        .cloned()
        .collect::<Vec<_>>()
        .join(", ")
}

/// Captures the node. Errors (exit 2) name the file: a file SGLang would fail on, or one
/// that is not what the kernel writes.
pub fn capture(opts: &Options) -> Result<Captured, InputError> {
    let proc = &opts.proc_root;
    let mut notes = Vec::new();
    let mut read = Vec::new();
    let mut inputs = Vec::new();
    let mut trees = vec![proc.clone()];
    let text_of = |p: &Path| read_opt(p).ok().flatten().map(|s| s.trim().to_string());
    let host = text_of(&proc.join("sys/kernel/hostname"));
    let kernel = text_of(&proc.join("sys/kernel/osrelease"));

    // psutil's figures.
    let meminfo_path = proc.join("meminfo");
    inputs.push(meminfo_path.clone());
    let meminfo = match read_opt(&meminfo_path) {
        Ok(Some(t)) => Some(procfs::parse_meminfo(
            &t,
            &meminfo_path.display().to_string(),
        )?),
        Ok(None) => {
            notes.push(format!(
                "{}: no such file: host_total, psutil_available and host_other_page_cache not captured (the scenario takes the preset's host_dram, all of it available)",
                meminfo_path.display()
            ));
            None
        }
        Err(e) => {
            return Err(InputError::new(
                meminfo_path.display().to_string(),
                format!("cannot read it: {e}"),
            ));
        }
    };
    if let Some(m) = &meminfo {
        read.push(format!(
            "{}: MemTotal {} B, MemAvailable {} B{}",
            meminfo_path.display(),
            m.total,
            m.available,
            m.file_lru
                .map(|f| format!(", Active(file) + Inactive(file) {f} B"))
                .unwrap_or_default()
        ));
    }

    // The memory cgroup, as SGLang resolves it.
    let cgroup_path = proc.join("self/cgroup");
    let mountinfo_path = proc.join("self/mountinfo");
    inputs.push(cgroup_path.clone());
    inputs.push(mountinfo_path.clone());
    let io = |p: &Path, e: std::io::Error| {
        InputError::new(
            p.display().to_string(),
            format!(
                "cannot read it ({e}): SGLang's `_cgroup_memory_headroom` raises OSError here, which a scenario cannot describe"
            ),
        )
    };
    let cg_text = read_opt(&cgroup_path).map_err(|e| io(&cgroup_path, e))?;
    let mi_text = read_opt(&mountinfo_path).map_err(|e| io(&mountinfo_path, e))?;
    let mut mapping = mapping::CgroupMapping::default();
    match (cg_text, mi_text) {
        (Some(cg), Some(mi)) => {
            let m = procfs::parse_memberships(&cg, &cgroup_path.display().to_string())?;
            let (found, skipped) =
                procfs::resolve_mounts(&mi, &mountinfo_path.display().to_string(), &m)?;
            trees.extend(found.iter().map(|h| h.mount.clone()));
            if m.is_empty() {
                notes.push(format!(
                    "{}: no memory cgroup membership (no `0::` line, no `memory` controller): SGLang's headroom is None; no `cgroup:`",
                    cgroup_path.display()
                ));
            } else if found.is_empty() {
                let why: Vec<String> = skipped
                    .iter()
                    .map(|s| format!("line {}: {}", s.line, s.why))
                    .collect();
                return Err(InputError::new(
                    mountinfo_path.display().to_string(),
                    format!(
                        "no mounted cgroup filesystem holds the process's memory cgroup ({}{}): SGLang raises `Cannot locate the process memory cgroup in mounted cgroup filesystems` (0.5.22+: `Cannot automatically size HiCache host memory; set --hicache-size explicitly`), which a scenario cannot describe",
                        [
                            m.v2.as_ref().map(|p| format!("cgroup2 {p}")),
                            m.v1_memory.as_ref().map(|p| format!("memory {p}"))
                        ]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(", "),
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", why.join("; "))
                        }
                    ),
                ));
            } else {
                mapping = choose_and_map(&found)?;
            }
        }
        _ => notes.push(format!(
            "{} or {} does not exist: SGLang's headroom is None (no procfs); no `cgroup:`",
            cgroup_path.display(),
            mountinfo_path.display()
        )),
    }
    read.append(&mut mapping.read);
    notes.append(&mut mapping.notes);

    // GPUs and the node preset.
    let gpus = match &opts.nvidia_smi {
        None => GpuRead::Off,
        Some(p) => gpu::run(p)?,
    };
    let found_gpus = match &gpus {
        GpuRead::Found(g) => Some(g.clone()),
        _ => None,
    };
    let (preset, preset_why) = match (&opts.node, &found_gpus) {
        (Some(n), _) => {
            node_preset(n).map_err(|e| InputError::new("--node", e.to_string()))?;
            (n.clone(), "--node".to_string())
        }
        (None, Some(g)) => match gpu::guess_preset(g) {
            Some((id, _)) => (
                id.to_string(),
                format!(
                    "guessed from nvidia-smi's `{}` (check it; --node picks another)",
                    g[0].name
                ),
            ),
            None => {
                return Err(InputError::new(
                    "nvidia-smi",
                    format!(
                        "{} x `{}` matches no node preset's GPU: name the closest preset with --node (one of {}); the measured gpus_per_node and gpu_memory override it",
                        g.len(),
                        g[0].name,
                        presets_list()
                    ),
                ));
            }
        },
        (None, None) => {
            let why = match &gpus {
                GpuRead::Off => "nvidia-smi not run".to_string(),
                GpuRead::Absent(w) | GpuRead::Failed(w) => w.clone(),
                GpuRead::Found(_) => unreachable!("handled above"),
            };
            return Err(InputError::new(
                "--node",
                format!(
                    "no GPU information ({why}): name the node preset with --node PRESET (one of {})",
                    presets_list()
                ),
            ));
        }
    };
    let p = node_preset(&preset).map_err(|e| InputError::new("--node", e.to_string()))?;
    let (tp_size, tp_why) = match &gpus {
        GpuRead::Found(g) => (
            g.len() as u64,
            format!(
                "one rank per GPU: the {} GPU(s) nvidia-smi lists; set the recipe's --tp",
                g.len()
            ),
        ),
        _ => (
            p.gpus_per_node as u64,
            format!(
                "one rank per GPU: preset {preset}'s {} GPUs (nvidia-smi not read); set the recipe's --tp",
                p.gpus_per_node
            ),
        ),
    };
    let mut node_overrides = BTreeMap::new();
    match &gpus {
        GpuRead::Found(g) => {
            let mib = g.iter().map(|x| x.memory_mib).min().unwrap_or(0);
            if g.iter()
                .any(|x| x.name != g[0].name || x.memory_mib != g[0].memory_mib)
            {
                notes.push(format!(
                    "nvidia-smi lists different GPUs ({}): gpu_memory is the smallest",
                    g.iter()
                        .map(|x| format!("{} {} MiB", x.name, x.memory_mib))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if !gpu_matches(&g[0].name, &p.gpu) {
                notes.push(format!(
                    "nvidia-smi reports `{}`; preset {preset}'s GPU is {}",
                    g[0].name, p.gpu
                ));
            }
            read.push(format!(
                "nvidia-smi: {} x {}, memory.total {} MiB, driver {}",
                g.len(),
                g[0].name,
                g[0].memory_mib,
                g[0].driver
            ));
            node_overrides.insert(
                "gpus_per_node",
                Override {
                    value: g.len().to_string(),
                    comment: format!(
                        "nvidia-smi: {} GPU(s) (preset: {})",
                        g.len(),
                        p.gpus_per_node
                    ),
                },
            );
            node_overrides.insert(
                "gpu_memory",
                Override {
                    value: format!("{mib}MiB"),
                    comment: format!(
                        "nvidia-smi memory.total (preset: {} MiB)",
                        p.gpu_memory.0 / crate::units::MIB
                    ),
                },
            );
        }
        GpuRead::Absent(w) | GpuRead::Failed(w) => notes.push(format!(
            "no GPU read ({w}): gpus_per_node and gpu_memory are the preset's"
        )),
        GpuRead::Off => {
            notes.push("nvidia-smi not run: gpus_per_node and gpu_memory are the preset's".into())
        }
    }

    // Host memory.
    let mut memory = MemorySpec {
        cgroup: mapping.spec.clone(),
        ..Default::default()
    };
    let mut comments = mapping.comments.clone();
    if let Some(m) = &meminfo {
        node_overrides.insert(
            "host_dram",
            Override {
                value: m.total.to_string(),
                comment: format!(
                    "MemTotal, {} (preset: {})",
                    gib(m.total),
                    gib(p.host_dram.0)
                ),
            },
        );
        memory.host_total = Some(ByteSize(m.total));
        comments.insert(
            "memory.host_total".into(),
            format!("MemTotal, {}", gib(m.total)),
        );
        // The start-up model derives the memory used outside the cgroups from
        // psutil's figure; it cannot be more than MemTotal less what the cgroups hold
        // that is not page cache.
        let unreclaimable = mapping.modelled_total - mapping.modelled_file_lru;
        let ceiling = m.total.saturating_sub(unreclaimable);
        let mut avail = m.available;
        comments.insert(
            "memory.psutil_available".into(),
            format!(
                "MemAvailable = psutil.virtual_memory().available, {}",
                gib(avail)
            ),
        );
        if avail > ceiling {
            notes.push(format!(
                "MemAvailable {avail} B is more than MemTotal less the cgroups' charges other than page cache ({ceiling} B; kernel memory such as reclaimable slab is counted there): psutil_available is written as {ceiling} B"
            ));
            avail = ceiling;
            comments.insert(
                "memory.psutil_available".into(),
                format!("capped: MemAvailable was {} B", m.available),
            );
        }
        memory.psutil_available = Some(ByteSize(avail));
        if let Some(f) = m.file_lru {
            let outside = f.saturating_sub(mapping.modelled_file_lru);
            let room = avail.saturating_sub(mapping.modelled_file_lru);
            let x = outside.min(room);
            if x < outside {
                notes.push(format!(
                    "page cache outside the cgroups ({outside} B) is more than MemAvailable leaves ({room} B): host_other_page_cache is written as {x} B"
                ));
            }
            memory.host_other_page_cache = ByteSize(x);
            comments.insert(
                "memory.host_other_page_cache".into(),
                format!(
                    "Active(file) + Inactive(file) {} less the {} in the cgroups below",
                    gib(f),
                    gib(mapping.modelled_file_lru)
                ),
            );
        } else {
            notes.push(format!(
                "{}: no Active(file)/Inactive(file): host_other_page_cache not captured (0)",
                meminfo_path.display()
            ));
        }
    }
    Ok(Captured {
        host,
        kernel,
        now: opts.now,
        proc_root: opts.proc_root.clone(),
        meminfo,
        gpus,
        preset,
        preset_why,
        node_overrides,
        memory,
        comments,
        read,
        notes,
        model: opts.model.clone(),
        tp_size,
        tp_why,
        inputs,
        trees,
    })
}

fn gpu_matches(name: &str, gpu: &str) -> bool {
    name.to_ascii_uppercase()
        .contains(&gpu.to_ascii_uppercase())
}

fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Of the hierarchies SGLang resolves, the one that carries the memory controller
/// (files under its walk), the longest walk first (a second mount of the same tree
/// shows a part of it). SGLang takes the smallest headroom over all of them; a second
/// hierarchy with memory files is noted (it does not happen on a real kernel: a
/// controller is bound to one hierarchy).
fn choose_and_map(found: &[procfs::Hierarchy]) -> Result<mapping::CgroupMapping, InputError> {
    let mut with_memory = Vec::new();
    let mut info = Vec::new();
    for h in found {
        let dirs: Vec<cgroupfs::Dir> = h
            .walk()
            .iter()
            .map(|p| cgroupfs::read_dir(p, h.fs, false))
            .collect::<Result<_, _>>()?;
        let has = dirs.iter().any(|d| {
            !matches!(d.max, cgroupfs::Limit::Missing)
                || !matches!(d.usage, cgroupfs::FileRead::Missing)
                || !matches!(d.stat, cgroupfs::FileRead::Missing)
        });
        if has {
            with_memory.push(h);
        } else {
            info.push(format!(
                "{} at {} (mountinfo line {}): no memory controller files on the walk (SGLang finds no limit there)",
                h.fs.name(),
                h.mount.display(),
                h.line
            ));
        }
    }
    with_memory.sort_by_key(|h| std::cmp::Reverse(h.relative.len()));
    let Some(first) = with_memory.first() else {
        info.push(format!(
            "cgroup: {} hierarchy(ies) resolved, none with memory controller files: SGLang's headroom is None; no `cgroup:`",
            found.len()
        ));
        return Ok(mapping::CgroupMapping {
            read: info,
            ..Default::default()
        });
    };
    let mut out = mapping::map_hierarchy(first)?;
    out.read.extend(info);
    for other in &with_memory[1..] {
        // SGLang reads these too: what it would fail on stops the capture as well.
        let m = mapping::map_hierarchy(other)?;
        if m.spec != out.spec || other.fs != first.fs {
            out.notes.push(format!(
                "{} at {} (mountinfo line {}) also holds memory files; SGLang takes the smaller headroom of both, the scenario models only {}",
                other.fs.name(),
                other.mount.display(),
                other.line,
                first.mount.display()
            ));
        }
    }
    Ok(out)
}
