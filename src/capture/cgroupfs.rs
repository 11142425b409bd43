//! One memory cgroup directory as `capture` reads it: the limit files SGLang reads
//! (`mem_cache/host_memory.py: _cgroup_memory_headroom`), `memory.current` /
//! `memory.usage_in_bytes`, `memory.stat`, `memory.min` as `_has_protected_descendants`
//! reads it, and `memory.low`; and its subdirectories.

use std::path::{Path, PathBuf};

use super::procfs::CgroupFs;
use crate::error::InputError;

/// A limit file (`memory.max`, `memory.high`, v1 `memory.limit_in_bytes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limit {
    /// No such file: SGLang skips it ("the hierarchy root may not have memory controller
    /// files").
    Missing,
    /// `max`: no limit.
    Max,
    Bytes(u64),
    /// An I/O error other than "no such file": SGLang's `read_text` raises `OSError`.
    Unreadable(String),
}

impl Limit {
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Limit::Bytes(b) => Some(*b),
            _ => None,
        }
    }
}

/// `memory.min` / `memory.low` (v2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protection {
    Bytes(u64),
    /// The word `max`.
    Max,
    Missing,
    Unreadable(String),
    /// Not an integer (SGLang's `int()` raises `ValueError`, which its scan catches).
    Malformed(String),
}

impl Protection {
    /// What 0.5.22+ `_has_protected_descendants` makes of this `memory.min`: protected
    /// unless it reads the integer 0.
    pub fn counts_as_protected(&self) -> bool {
        !matches!(self, Protection::Bytes(0))
    }
}

/// A file SGLang reads as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRead<T> {
    Ok(T),
    Missing,
    Unreadable(String),
}

impl<T> FileRead<T> {
    pub fn ok(&self) -> Option<&T> {
        match self {
            FileRead::Ok(t) => Some(t),
            _ => None,
        }
    }
    /// `missing` or the I/O error, for messages.
    pub fn problem(&self) -> Option<String> {
        match self {
            FileRead::Ok(_) => None,
            FileRead::Missing => Some("no such file".into()),
            FileRead::Unreadable(e) => Some(e.clone()),
        }
    }
}

/// The `memory.stat` counters the mapping uses (hierarchical: v2 keys, v1 `total_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    pub active_file: Option<u64>,
    pub inactive_file: Option<u64>,
    pub shmem: u64,
    pub dirty: u64,
    pub writeback: u64,
}

/// A subtree's charges as the files give them: `memory.current` and the `memory.stat`
/// counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Raw {
    pub usage: u64,
    pub shmem: u64,
    pub active_file: u64,
    pub inactive_file: u64,
    pub dirty: u64,
    pub writeback: u64,
}

impl Raw {
    pub fn add(&mut self, o: &Raw) {
        self.usage += o.usage;
        self.shmem += o.shmem;
        self.active_file += o.active_file;
        self.inactive_file += o.inactive_file;
        self.dirty += o.dirty;
        self.writeback += o.writeback;
    }
    /// `self - o` field by field, at least 0; also the bytes the floor added back.
    pub fn minus(&self, o: &Raw) -> (Raw, u64) {
        let mut clamped = 0;
        let mut f = |a: u64, b: u64| {
            clamped += b.saturating_sub(a);
            a.saturating_sub(b)
        };
        let r = Raw {
            usage: f(self.usage, o.usage),
            shmem: f(self.shmem, o.shmem),
            active_file: f(self.active_file, o.active_file),
            inactive_file: f(self.inactive_file, o.inactive_file),
            dirty: f(self.dirty, o.dirty),
            writeback: f(self.writeback, o.writeback),
        };
        (r, clamped)
    }
    /// The file LRU (`active_file + inactive_file`).
    pub fn file_lru(&self) -> u64 {
        self.active_file + self.inactive_file
    }
}

/// One cgroup directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dir {
    pub path: PathBuf,
    pub name: String,
    /// v2 `memory.max`; v1 `memory.limit_in_bytes`.
    pub max: Limit,
    /// v2 `memory.high`; `Missing` on v1.
    pub high: Limit,
    /// v2 `memory.min`; `Bytes(0)` on v1 (no such file there, and nothing reads it).
    pub min: Protection,
    /// v2 `memory.low`; `Bytes(0)` on v1.
    pub low: Protection,
    /// `memory.current` / `memory.usage_in_bytes`.
    pub usage: FileRead<u64>,
    pub stat: FileRead<Stat>,
    /// Subdirectories (read only where asked), by name.
    pub children: Vec<Dir>,
    /// Listing the subdirectories failed (SGLang's scan then says "protected").
    pub unlisted: Option<String>,
    /// Subdirectories not read, and why: one already read in this scan (a loop of
    /// symlinked directories; cgroupfs has none), or past the scan's bounds
    /// ([`MAX_SCAN_DEPTH`], [`MAX_SCAN_DIRS`]).
    pub skipped: Vec<String>,
}

impl Dir {
    /// The subtree's charges, when both `memory.current` and `memory.stat` (with its
    /// file LRU keys) were read.
    pub fn raw(&self) -> Option<Raw> {
        let (u, s) = (self.usage.ok()?, self.stat.ok()?);
        Some(Raw {
            usage: *u,
            shmem: s.shmem,
            active_file: s.active_file?,
            inactive_file: s.inactive_file?,
            dirty: s.dirty,
            writeback: s.writeback,
        })
    }

    /// The [`skipped`](Self::skipped) notes of this directory and every one inside.
    pub fn skipped_notes(&self) -> Vec<String> {
        std::iter::once(self)
            .chain(self.descendants())
            .flat_map(|d| d.skipped.iter().cloned())
            .collect()
    }

    /// Every directory strictly inside, depth first.
    pub fn descendants(&self) -> Vec<&Dir> {
        let mut out = Vec::new();
        let mut stack: Vec<&Dir> = self.children.iter().rev().collect();
        while let Some(d) = stack.pop() {
            out.push(d);
            stack.extend(d.children.iter().rev());
        }
        out
    }
}

/// Reads a whole file: `Ok(None)` when it does not exist, `Err` for any other I/O error,
/// and for a path that is not a regular file (a FIFO would block the reader) or is larger
/// than [`KERNEL_FILE_CAP`](crate::input::KERNEL_FILE_CAP).
fn read(path: &Path) -> Result<Option<String>, std::io::Error> {
    match crate::input::read(path, crate::input::KERNEL_FILE_CAP) {
        Ok(b) => match String::from_utf8(b) {
            Ok(s) => Ok(Some(s)),
            Err(_) => Ok(Some("\u{fffd}".into())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn bad(path: &Path, msg: String) -> InputError {
    InputError::new(path.display().to_string(), msg)
}

fn read_limit(path: &Path) -> Result<Limit, InputError> {
    Ok(match read(path) {
        Ok(None) => Limit::Missing,
        Err(e) => Limit::Unreadable(e.to_string()),
        Ok(Some(s)) => {
            let t = s.trim();
            if t == "max" {
                Limit::Max
            } else {
                Limit::Bytes(t.parse().map_err(|_| {
                    bad(
                        path,
                        format!("expected a byte count or `max`, got `{t}` (SGLang's `int()` raises ValueError here)"),
                    )
                })?)
            }
        }
    })
}

fn read_protection(path: &Path) -> Protection {
    match read(path) {
        Ok(None) => Protection::Missing,
        Err(e) => Protection::Unreadable(e.to_string()),
        Ok(Some(s)) => {
            let t = s.trim();
            match t.parse() {
                Ok(v) => Protection::Bytes(v),
                Err(_) if t == "max" => Protection::Max,
                Err(_) => Protection::Malformed(t.to_string()),
            }
        }
    }
}

fn read_usage(path: &Path) -> Result<FileRead<u64>, InputError> {
    Ok(match read(path) {
        Ok(None) => FileRead::Missing,
        Err(e) => FileRead::Unreadable(e.to_string()),
        Ok(Some(s)) => FileRead::Ok(
            s.trim()
                .parse()
                .map_err(|_| bad(path, format!("expected a byte count, got `{}`", s.trim())))?,
        ),
    })
}

/// `memory.stat`: `KEY VALUE` lines (SGLang's `dict(map(str.split, lines))`, every
/// value through `int()`).
fn read_stat(path: &Path, fs: CgroupFs) -> Result<FileRead<Stat>, InputError> {
    let text = match read(path) {
        Ok(None) => return Ok(FileRead::Missing),
        Err(e) => return Ok(FileRead::Unreadable(e.to_string())),
        Ok(Some(s)) => s,
    };
    let prefix = match fs {
        CgroupFs::V2 => "",
        // v1's unprefixed counters omit descendants; `total_*` are hierarchical.
        CgroupFs::V1 => "total_",
    };
    let mut st = Stat::default();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (key, value) = match f[..] {
            [k, v] => (k, v),
            _ => {
                return Err(bad(path, format!("expected `KEY VALUE`, got `{line}`")).at_line(i + 1));
            }
        };
        let v: i128 = value.parse().map_err(|_| {
            bad(path, format!("`{key}`: expected an integer, got `{value}`")).at_line(i + 1)
        })?;
        let v = u64::try_from(v.max(0)).unwrap_or(u64::MAX);
        let Some(k) = key.strip_prefix(prefix) else {
            continue;
        };
        match (fs, k) {
            (_, "active_file") => st.active_file = Some(v),
            (_, "inactive_file") => st.inactive_file = Some(v),
            (_, "shmem") => st.shmem = v,
            (CgroupFs::V2, "file_dirty") | (CgroupFs::V1, "dirty") => st.dirty = v,
            (CgroupFs::V2, "file_writeback") | (CgroupFs::V1, "writeback") => st.writeback = v,
            _ => {}
        }
    }
    Ok(FileRead::Ok(st))
}

/// Deepest subdirectory `read_dir` descends to (systemd nests a handful of levels; a
/// container runtime's cgroups add a few more).
pub const MAX_SCAN_DEPTH: usize = 32;

/// Most directories one `read_dir` reads (a node with thousands of containers has
/// thousands of cgroups).
pub const MAX_SCAN_DIRS: usize = 100_000;

/// One subtree scan: the directories read so far, by (device, inode), so a directory
/// reached again through a symlink is not read twice (two self-links in one directory
/// would otherwise make 2^depth paths), and how many more may be read.
struct Scan {
    seen: std::collections::HashMap<(u64, u64), PathBuf>,
    left: usize,
}

/// Reads the cgroup directory `path`; with `subtree`, every subdirectory too
/// (recursively, each directory once, within [`MAX_SCAN_DEPTH`] and [`MAX_SCAN_DIRS`]:
/// what is not read is said in [`Dir::skipped`]).
pub fn read_dir(path: &Path, fs: CgroupFs, subtree: bool) -> Result<Dir, InputError> {
    let mut scan = Scan {
        seen: Default::default(),
        left: MAX_SCAN_DIRS,
    };
    if let Some(id) = dir_id(path) {
        scan.seen.insert(id, path.to_path_buf());
    }
    read_dir_at(path, fs, subtree, 0, &mut scan)
}

/// A directory's (device, inode), following symlinks.
fn dir_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn read_dir_at(
    path: &Path,
    fs: CgroupFs,
    subtree: bool,
    depth: usize,
    scan: &mut Scan,
) -> Result<Dir, InputError> {
    let f = |n: &str| path.join(n);
    let (max, high, min, low, usage) = match fs {
        CgroupFs::V2 => (
            read_limit(&f("memory.max"))?,
            read_limit(&f("memory.high"))?,
            read_protection(&f("memory.min")),
            read_protection(&f("memory.low")),
            read_usage(&f("memory.current"))?,
        ),
        CgroupFs::V1 => (
            read_limit(&f("memory.limit_in_bytes"))?,
            Limit::Missing,
            Protection::Bytes(0),
            Protection::Bytes(0),
            read_usage(&f("memory.usage_in_bytes"))?,
        ),
    };
    let stat = read_stat(&f("memory.stat"), fs)?;
    let mut children = Vec::new();
    let mut unlisted = None;
    let mut skipped = Vec::new();
    if subtree {
        match subdirs(path) {
            Ok(names) if !names.is_empty() && depth >= MAX_SCAN_DEPTH => skipped.push(format!(
                "{}: {MAX_SCAN_DEPTH} levels deep in the scan: its {} subdirectories are not read",
                path.display(),
                names.len()
            )),
            Ok(names) => {
                for n in names {
                    let child = path.join(&n);
                    if let Some(id) = dir_id(&child) {
                        if let Some(first) = scan.seen.get(&id) {
                            skipped.push(format!(
                                "{}: the directory {} again (a symlink loop; cgroupfs has no symlinks): not read twice",
                                child.display(),
                                first.display()
                            ));
                            continue;
                        }
                        scan.seen.insert(id, child.clone());
                    }
                    if scan.left == 0 {
                        skipped.push(format!(
                            "{}: the scan has read {MAX_SCAN_DIRS} directories: this one and the rest are not read",
                            child.display()
                        ));
                        break;
                    }
                    scan.left -= 1;
                    children.push(read_dir_at(&child, fs, true, depth + 1, scan)?);
                }
            }
            Err(e) => unlisted = Some(e.to_string()),
        }
    }
    Ok(Dir {
        path: path.to_path_buf(),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "/".into()),
        max,
        high,
        min,
        low,
        usage,
        stat,
        children,
        unlisted,
        skipped,
    })
}

/// Why a cgroup directory cannot be listed (SGLang's scan answers "protected").
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A child that cannot be `stat`ed.
    #[error("{}: {error}", path.display())]
    Stat {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
}

/// Names of the subdirectories of `path` (following symlinks, as `Path.stat()` does),
/// sorted.
pub fn subdirs(path: &Path) -> Result<Vec<String>, ListError> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(path)? {
        let e = e?;
        let p = e.path();
        match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => names.push(e.file_name().to_string_lossy().into_owned()),
            Ok(_) => {}
            // SGLang's `child.stat()` raises: its scan answers "protected".
            Err(error) => return Err(ListError::Stat { path: p, error }),
        }
    }
    names.sort();
    Ok(names)
}
