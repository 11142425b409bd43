//! One place for what the commands write: files (atomically, through symlinks, never
//! renamed over a device), the rule that an output is never one of the run's inputs, and
//! the lock that keeps two sweeps out of one output folder.
//!
//! Standard output and error are handled at the CLI edge (`main.rs`): a closed pipe ends
//! the command quietly with exit 0, any other write failure is exit 3 naming the stream.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::InputError;

/// The inputs this process read (`what`, path): [`write_with`] refuses to write over any
/// of them.
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
    if let Ok(meta) = std::fs::metadata(&target)
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
