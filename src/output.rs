//! One place for what the commands write: files (atomically, through symlinks, never
//! renamed over a device), the rule that an output is never one of the run's inputs, the
//! lock that keeps two runs out of one output folder, and the record of what a run wrote
//! there ([`OutputDir`]) so the next run removes exactly those files.
//!
//! Standard output and error are handled at the CLI edge (`main.rs`): a closed pipe ends
//! the command quietly with exit 0, any other write failure is exit 3 naming the stream.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::InputError;

/// The inputs this process read (`what`, path): [`write_with`] refuses to write over any
/// of them and [`OutputDir`] never removes one, whatever a manifest says.
static INPUTS: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

/// Records `path` as one of the run's inputs (`what`: "scenario", "trace", …).
pub fn protect_input(what: &str, path: &Path) {
    let mut g = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    if !g.iter().any(|(_, p)| p == path) {
        g.push((what.to_string(), path.to_path_buf()));
    }
}

/// The recorded input `path` names, if any: (what, the input's path).
pub fn protected_input(path: &Path) -> Option<(String, PathBuf)> {
    let g = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    g.iter().find(|(_, p)| same_file(path, p)).cloned()
}

/// The file a path names once symlinks are followed (the path itself when it does not
/// exist yet, with its parent folder resolved when that exists).
pub fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            std::fs::canonicalize(dir)
                .map(|d| d.join(name))
                .unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// Whether two paths name the same file (same device and inode when both exist, else the
/// same resolved path).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    resolved(a) == resolved(b)
}

/// Refuses an output path that is one of the run's inputs (`startup s.yaml --csv
/// s.yaml`, `replay --trace t.jsonl --timeline t.jsonl`): the run would destroy what it
/// read. `flag` names the output option; `inputs` are (what, path) pairs.
pub fn refuse_input_as_output(
    flag: &str,
    out: &Path,
    inputs: &[(&str, &Path)],
) -> Result<(), InputError> {
    for (what, input) in inputs {
        if same_file(out, input) {
            return Err(InputError::new(
                format!("{flag} {}", out.display()),
                format!(
                    "this output is the run's {what} ({}); writing it would destroy the input: choose another path",
                    input.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses an output path inside one of the trees the run read from (`capture -o
/// CG/job/memory.max`, or any new file beside it): `what` names the tree. Symlinks are
/// followed, so a link pointing into a tree is refused too.
pub fn refuse_output_inside(
    flag: &str,
    out: &Path,
    trees: &[(&str, &Path)],
) -> Result<(), InputError> {
    let o = resolved(out);
    for (what, tree) in trees {
        let t = resolved(tree);
        if o.starts_with(&t) {
            return Err(InputError::new(
                format!("{flag} {}", out.display()),
                format!(
                    "this output is inside the {what} the run reads ({}); writing there could destroy an input: choose a path outside it",
                    tree.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` so a reader never sees half a file and nothing but `path`'s
/// target changes (see [`write_with`]).
pub fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

/// The file a write to `path` lands in: symlinks followed one hop at a time (so a link
/// whose target does not exist yet is still followed: its target is created), at most
/// 40 hops as the kernel allows.
fn write_target(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Writes what `fill` produces to `path` so a reader never sees half a file and nothing
/// but `path`'s target changes:
/// - a symlink is followed and its target written (the link stays a link);
/// - an existing non-regular file (a device such as `/dev/full` or `/dev/null`, a FIFO)
///   is written in place, never renamed over, so its write error (e.g. "No space left
///   on device") is reported and the device node stays;
/// - a regular file is written to a temporary file beside the target, synced and
///   renamed over it: a full disk or a kill leaves the old file (or none), never a
///   truncated one under the final name.
///
/// `fill` writes through a buffer; large outputs (a binary trace) stream through it.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let target = write_target(path)?;
    if let Some((what, input)) = protected_input(&target) {
        return Err(std::io::Error::other(format!(
            "refusing to write over the run's {what} ({})",
            input.display()
        )));
    }
    // The kernel's own resolution first: `/dev/stdout` is a link to `/proc/self/fd/1`,
    // a "magic" link whose text (`pipe:[123]`) names no path, though opening it reaches
    // the pipe; then the hop-by-hop target (a dangling link's target is created).
    let in_place = [path, target.as_path()]
        .into_iter()
        .find_map(|p| std::fs::metadata(p).ok().map(|m| (p, m)));
    if let Some((target, meta)) = in_place
        && !meta.is_file()
    {
        if meta.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        let mut w = std::io::BufWriter::with_capacity(
            1 << 16,
            OpenOptions::new().write(true).open(&target)?,
        );
        fill(&mut w)?;
        return w.flush();
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = target.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    let res = (|| {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, File::create(&tmp)?);
        fill(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_data()?;
        drop(f);
        std::fs::rename(&tmp, &target)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// An exclusive lock on an output folder (`DIR/.hicache-sim.lock`, `flock`), held until
/// dropped (or the process ends, however it ends). The file says who holds it.
#[derive(Debug)]
pub struct DirLock {
    file: File,
}

impl Drop for DirLock {
    /// Unlock explicitly: a process forked by another thread between our open and its
    /// exec holds a copy of the descriptor, and closing ours alone would leave the lock
    /// held until that copy closes.
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Why a folder could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "{}: another hicache-sim run is writing this folder ({holder}); wait for it, or use another --out",
        dir.display()
    )]
    Held { dir: PathBuf, holder: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl DirLock {
    /// Takes the lock at once or fails naming the holder (its pid, command and start).
    pub fn acquire(dir: &Path, what: &str) -> Result<DirLock, LockError> {
        let path = dir.join(".hicache-sim.lock");
        let io = |e| LockError::Io {
            path: path.clone(),
            source: e,
        };
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = f.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(LockError::Held {
                    dir: dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "holder unknown".into()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let who = format!("pid {}: {what}", std::process::id());
        f.set_len(0).map_err(io)?;
        f.rewind().map_err(io)?;
        f.write_all(who.as_bytes()).map_err(io)?;
        f.flush().map_err(io)?;
        Ok(DirLock { file: f })
    }
}

/// The manifest of an output folder: the files the runs into it wrote.
pub const MANIFEST: &str = ".hicache-sim.outputs";

/// One file a run wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Owned {
    /// File name inside the folder (never a path).
    name: String,
    /// The run it belongs to (`plan`, `sweep <fingerprint>`).
    run: String,
    /// The part of that run (a shard's file stem; empty for a whole run).
    part: String,
    /// Length and modification time when written: a file changed since is the user's
    /// now and is left alone. `None` for a file the run keeps appending to (a journal).
    len: Option<u64>,
    mtime_ns: Option<u64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    hicache_sim_outputs: u32,
    files: Vec<Owned>,
}

/// An output folder held by one run (`plan --out`, `sweep --out`): locked, and owned —
/// the files earlier runs wrote there (listed in [`MANIFEST`]) are removed before this
/// one writes, so its results never sit beside another run's. Removed are exactly the
/// files a manifest lists that are still as that run left them (same length and
/// modification time), plain files directly in the folder, and not one of this run's
/// inputs; nothing else is touched. Kept: the other shards of the same sweep, and with
/// `--resume` this run's own files.
#[derive(Debug)]
pub struct OutputDir {
    dir: PathBuf,
    run: String,
    part: String,
    manifest: Manifest,
    /// What the claim removed (file names), for the run to say.
    pub removed: Vec<String>,
    _lock: DirLock,
}

fn mtime_ns(m: &std::fs::Metadata) -> Option<u64> {
    m.modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok())
}

/// Why an output folder could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl OutputDir {
    /// Creates `dir` if needed and locks it (`holder` says who); the files earlier runs
    /// wrote are still there until [`OutputDir::remove_earlier`]. This run's files
    /// belong to `run` (`plan`, `sweep <fingerprint>`) and its `part` (a shard's stem).
    pub fn claim(dir: &Path, holder: &str, run: &str, part: &str) -> Result<OutputDir, ClaimError> {
        std::fs::create_dir_all(dir).map_err(|e| ClaimError::Io {
            path: dir.to_path_buf(),
            source: e,
        })?;
        let lock = DirLock::acquire(dir, holder)?;
        // An unreadable or foreign manifest lists nothing we can trust: remove nothing.
        let old: Manifest = crate::input::read(&dir.join(MANIFEST), crate::input::DOCUMENT_CAP)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Ok(OutputDir {
            dir: dir.to_path_buf(),
            run: run.to_string(),
            part: part.to_string(),
            manifest: Manifest {
                hicache_sim_outputs: 1,
                files: old.files,
            },
            removed: Vec::new(),
            _lock: lock,
        })
    }

    /// Removes the files earlier runs wrote here, except those of this run in another
    /// part (a sibling shard) and, with `keep_own`, those of this run in this part
    /// (`sweep --resume`); see [`OutputDir`] for what is never removed. Saves the
    /// manifest. Call it once the run's input is known good, before it writes.
    pub fn remove_earlier(&mut self, keep_own: bool) -> Result<(), ClaimError> {
        let old = std::mem::take(&mut self.manifest.files);
        for f in old {
            let ours = f.run == self.run;
            if ours && (f.part != self.part || keep_own) {
                self.manifest.files.push(f);
                continue;
            }
            if self.removable(&f) {
                let p = self.dir.join(&f.name);
                match std::fs::remove_file(&p) {
                    Ok(()) => self.removed.push(f.name),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(ClaimError::Io { path: p, source: e }),
                }
            }
        }
        self.save().map_err(|e| ClaimError::Io {
            path: self.dir.join(MANIFEST),
            source: e,
        })
    }

    /// Whether a listed file is still what its run wrote and safe to remove.
    fn removable(&self, f: &Owned) -> bool {
        let plain = !f.name.is_empty()
            && f.name != "."
            && f.name != ".."
            && !f.name.contains('/')
            && f.name != MANIFEST
            && !f.name.starts_with(".hicache-sim.lock");
        if !plain {
            return false;
        }
        let p = self.dir.join(&f.name);
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            return false;
        };
        m.file_type().is_file()
            && f.len.is_none_or(|l| l == m.len())
            && f.mtime_ns.is_none_or(|t| Some(t) == mtime_ns(&m))
            && protected_input(&p).is_none()
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records a file this run wrote in the folder (`growing`: it will change after this
    /// call, as a journal does, so its length and time are not recorded) and saves the
    /// manifest, so a run killed later still leaves its files listed.
    pub fn record(&mut self, path: &Path, growing: bool) -> std::io::Result<()> {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return Ok(());
        };
        let m = std::fs::symlink_metadata(self.dir.join(name))?;
        if !m.file_type().is_file() {
            // written through a link or onto a device: not ours to remove later
            return Ok(());
        }
        self.manifest.files.retain(|f| f.name != name);
        self.manifest.files.push(Owned {
            name: name.to_string(),
            run: self.run.clone(),
            part: self.part.clone(),
            len: (!growing).then(|| m.len()),
            mtime_ns: if growing { None } else { mtime_ns(&m) },
        });
        self.save()
    }

    fn save(&self) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(&self.manifest).map_err(std::io::Error::other)?;
        write_file(&self.dir.join(MANIFEST), &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_through_symlink_keeps_the_link() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target.csv");
        std::fs::write(&target, "old").unwrap();
        let link = d.path().join("link.csv");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn same_file_sees_links_and_relative_paths() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.yaml");
        std::fs::write(&a, "x").unwrap();
        let l = d.path().join("l.yaml");
        std::os::unix::fs::symlink(&a, &l).unwrap();
        assert!(same_file(&a, &l));
        assert!(same_file(&a, &d.path().join(".").join("a.yaml")));
        assert!(!same_file(&a, &d.path().join("b.yaml")));
        let e = refuse_input_as_output("--csv", &l, &[("scenario", &a)]).unwrap_err();
        assert!(e.message.contains("scenario"), "{}", e.message);
    }

    #[test]
    fn second_lock_names_the_holder() {
        let d = tempfile::tempdir().unwrap();
        let _held = DirLock::acquire(d.path(), "sweep a.yaml").unwrap();
        let e = DirLock::acquire(d.path(), "sweep b.yaml").unwrap_err();
        let m = e.to_string();
        assert!(m.contains("sweep a.yaml") && m.contains("pid"), "{m}");
        drop(_held);
        DirLock::acquire(d.path(), "sweep b.yaml").unwrap();
    }
}
