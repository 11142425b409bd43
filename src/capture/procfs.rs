//! What `capture` reads from procfs: `/proc/meminfo` as psutil reads it, and the
//! process's memory cgroup as SGLang resolves it from `/proc/self/cgroup` and
//! `/proc/self/mountinfo` (`mem_cache/host_memory.py: _cgroup_memory_headroom`,
//! 0.5.21–0.5.23).

use std::path::{Path, PathBuf};

use crate::error::InputError;

/// The figures of `/proc/meminfo` the simulator takes, in bytes (psutil multiplies
/// every field by 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemInfo {
    /// `MemTotal`.
    pub total: u64,
    /// `psutil.virtual_memory().available`: `MemAvailable`, or `MemFree` when that is
    /// larger than the total (`psutil/_pslinux.py: virtual_memory`, the LXC guard).
    pub available: u64,
    /// `Active(file) + Inactive(file)`: the host's file LRU (page cache), when present.
    pub file_lru: Option<u64>,
}

/// Parses `/proc/meminfo` (`source` names the file in errors). `MemTotal` and
/// `MemAvailable` must be there (kernels since 3.14 write it; psutil estimates it itself
/// on older ones, which the simulator does not model).
pub fn parse_meminfo(text: &str, source: &str) -> Result<MemInfo, InputError> {
    let mut total = None;
    let mut available = None;
    let mut free = None;
    let mut active_file = None;
    let mut inactive_file = None;
    for (i, line) in text.lines().enumerate() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let slot = match key.trim() {
            "MemTotal" => &mut total,
            "MemAvailable" => &mut available,
            "MemFree" => &mut free,
            "Active(file)" => &mut active_file,
            "Inactive(file)" => &mut inactive_file,
            _ => continue,
        };
        let num = rest.split_whitespace().next().unwrap_or("");
        let v: u64 = num.parse().map_err(|_| {
            InputError::new(
                source,
                format!(
                    "`{}`: expected a number of kB, got `{}`",
                    key.trim(),
                    rest.trim()
                ),
            )
            .at_line(i + 1)
        })?;
        *slot = Some(v.saturating_mul(1024));
    }
    let missing = |k: &str| {
        InputError::new(
            source,
            format!(
                "no `{k}:` line (psutil reads MemTotal and MemAvailable; kernels since 3.14 write both)"
            ),
        )
    };
    let total = total.ok_or_else(|| missing("MemTotal"))?;
    let mut available = available.ok_or_else(|| missing("MemAvailable"))?;
    if available > total {
        available = free.unwrap_or(available);
    }
    let file_lru = match (active_file, inactive_file) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
    Ok(MemInfo {
        total,
        available,
        file_lru,
    })
}

/// A cgroup filesystem type as mountinfo names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CgroupFs {
    /// `cgroup` (v1) with the `memory` controller.
    V1,
    /// `cgroup2`.
    V2,
}

impl CgroupFs {
    pub fn name(self) -> &'static str {
        match self {
            CgroupFs::V1 => "cgroup",
            CgroupFs::V2 => "cgroup2",
        }
    }
}

/// The process's memberships: `0::/path` (v2) and `N:…memory…:/path` (v1). The last
/// line of each kind wins, as in SGLang's dict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memberships {
    pub v2: Option<String>,
    pub v1_memory: Option<String>,
}

impl Memberships {
    pub fn get(&self, fs: CgroupFs) -> Option<&str> {
        match fs {
            CgroupFs::V1 => self.v1_memory.as_deref(),
            CgroupFs::V2 => self.v2.as_deref(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.v2.is_none() && self.v1_memory.is_none()
    }
}

/// Parses `/proc/self/cgroup`. A line that is not `ID:CONTROLLERS:PATH` is an error (it
/// is a `ValueError` in SGLang's `line.split(":", 2)` unpacking).
pub fn parse_memberships(text: &str, source: &str) -> Result<Memberships, InputError> {
    let mut m = Memberships::default();
    for (i, line) in text.lines().enumerate() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(InputError::new(
                source,
                format!("expected `ID:CONTROLLERS:PATH` (e.g. `0::/user.slice`), got `{line}`"),
            )
            .at_line(i + 1));
        };
        if controllers.is_empty() {
            m.v2 = Some(path.to_string());
        } else if controllers.split(',').any(|c| c == "memory") {
            m.v1_memory = Some(path.to_string());
        }
    }
    Ok(m)
}

/// `_unescape_mount_path`: mountinfo writes space, tab, newline and backslash as `\ooo`.
pub fn unescape_mount_path(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            // Python's chr(v) then UTF-8: values above 0x7f become two bytes.
            let mut buf = [0u8; 4];
            out.extend_from_slice(
                char::from_u32(v)
                    .unwrap_or('?')
                    .encode_utf8(&mut buf)
                    .as_bytes(),
            );
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A path as `PurePosixPath` sees it: absolute or not, and its parts (empty and `.`
/// parts dropped; `..` kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PosixPath {
    pub absolute: bool,
    pub parts: Vec<String>,
}

impl PosixPath {
    pub fn new(s: &str) -> Self {
        Self {
            absolute: s.starts_with('/'),
            parts: s
                .split('/')
                .filter(|p| !p.is_empty() && *p != ".")
                .map(str::to_string)
                .collect(),
        }
    }
    pub fn is_root(&self) -> bool {
        self.absolute && self.parts.is_empty()
    }
    /// `/a/b` (or `/` for the root).
    pub fn display(&self) -> String {
        format!(
            "{}{}",
            if self.absolute { "/" } else { "" },
            self.parts.join("/")
        )
    }
}

/// One memory cgroup hierarchy SGLang resolves: a mountinfo line whose filesystem holds a
/// membership, with the process's directory in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    pub fs: CgroupFs,
    /// 1-based line in mountinfo.
    pub line: usize,
    /// The host-side path of the mount's root (field 4), unescaped: `/` unless the
    /// mount shows a subtree (a cgroup namespace, a bind mount).
    pub root: String,
    /// The mount point (field 5), unescaped.
    pub mount: PathBuf,
    /// The membership line's path.
    pub membership: String,
    /// Parts from the mount point to the process's directory.
    pub relative: Vec<String>,
}

impl Hierarchy {
    /// The process's directory: mount point + relative parts.
    pub fn directory(&self) -> PathBuf {
        let mut d = self.mount.clone();
        for p in &self.relative {
            d.push(p);
        }
        d
    }

    /// The directories SGLang walks: the process's first, the mount point last.
    pub fn walk(&self) -> Vec<PathBuf> {
        (0..=self.relative.len())
            .rev()
            .map(|k| {
                let mut d = self.mount.clone();
                for p in &self.relative[..k] {
                    d.push(p);
                }
                d
            })
            .collect()
    }
}

/// A mountinfo line SGLang considers but skips, and why (for the capture's notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub line: usize,
    pub why: String,
}

/// The cgroup mounts of `/proc/self/mountinfo` that hold a membership, resolved the way
/// `_cgroup_memory_headroom` does: the mount's root must contain the membership, except
/// that with a root other than `/` (a cgroup namespace) the membership is taken relative
/// to the namespace root; `..` in the result is an error (SGLang raises `ValueError`);
/// a directory that does not exist is skipped. Lines SGLang cannot split are errors
/// (`ValueError`/`IndexError` there).
pub fn resolve_mounts(
    text: &str,
    source: &str,
    m: &Memberships,
) -> Result<(Vec<Hierarchy>, Vec<Skipped>), InputError> {
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let err =
            |what: &str| InputError::new(source, format!("{what}, got `{line}`")).at_line(i + 1);
        let Some((before, after)) = line.split_once(" - ") else {
            return Err(err(
                "expected a mountinfo line with ` - ` before the filesystem type",
            ));
        };
        let a: Vec<&str> = after.split_whitespace().collect();
        if a.len() < 3 {
            return Err(err("expected `FSTYPE SOURCE OPTIONS` after ` - `"));
        }
        let fs = match a[0] {
            "cgroup2" => CgroupFs::V2,
            "cgroup" => CgroupFs::V1,
            _ => continue,
        };
        let Some(membership) = m.get(fs) else {
            continue;
        };
        if fs == CgroupFs::V1 && !a[2].split(',').any(|o| o == "memory") {
            continue;
        }
        let f: Vec<&str> = before.split_whitespace().collect();
        if f.len() < 5 {
            return Err(err(
                "expected at least 5 fields before ` - ` (ID PARENT MAJ:MIN ROOT MOUNTPOINT)",
            ));
        }
        let root_s = unescape_mount_path(f[3]);
        let mount_s = unescape_mount_path(f[4]);
        let root = PosixPath::new(&root_s);
        let member = PosixPath::new(membership);
        let relative = if member.absolute == root.absolute
            && member.parts.len() >= root.parts.len()
            && member.parts[..root.parts.len()] == root.parts[..]
        {
            member.parts[root.parts.len()..].to_vec()
        } else if !root.is_root() {
            // A cgroup namespace shows the membership relative to its root while
            // mountinfo names the host-side subtree.
            if !member.absolute {
                return Err(InputError::new(
                    source,
                    format!("the membership `{membership}` is not an absolute path (SGLang's `relative_to(\"/\")` raises)"),
                )
                .at_line(i + 1));
            }
            member.parts.clone()
        } else {
            skipped.push(Skipped {
                line: i + 1,
                why: format!(
                    "{} mount at {mount_s}: the membership {membership} is outside its root {root_s}",
                    fs.name()
                ),
            });
            continue;
        };
        if relative.iter().any(|p| p == "..") {
            return Err(InputError::new(
                source,
                format!("cannot resolve the cgroup memory path `{membership}` under the mount at {mount_s} (`..`): SGLang raises ValueError here"),
            )
            .at_line(i + 1));
        }
        let h = Hierarchy {
            fs,
            line: i + 1,
            root: root_s,
            mount: PathBuf::from(&mount_s),
            membership: membership.to_string(),
            relative,
        };
        if !h.directory().is_dir() {
            skipped.push(Skipped {
                line: i + 1,
                why: format!(
                    "{} mount at {mount_s}: {} is not a directory",
                    fs.name(),
                    h.directory().display()
                ),
            });
            continue;
        }
        found.push(h);
    }
    Ok((found, skipped))
}

/// `DIR/NAME` under the proc root.
pub fn proc_file(proc_root: &Path, name: &str) -> PathBuf {
    proc_root.join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_in_bytes_and_lxc_guard() {
        let m = parse_meminfo(
            "MemTotal:       24683584 kB\nMemFree:        16900496 kB\nMemAvailable:   23534712 kB\nActive(file):  100 kB\nInactive(file): 28 kB\n",
            "meminfo",
        )
        .unwrap();
        assert_eq!(m.total, 24_683_584 * 1024);
        assert_eq!(m.available, 23_534_712 * 1024);
        assert_eq!(m.file_lru, Some(128 * 1024));
        // MemAvailable above MemTotal: psutil takes MemFree.
        let m =
            parse_meminfo("MemTotal: 10 kB\nMemFree: 4 kB\nMemAvailable: 12 kB\n", "m").unwrap();
        assert_eq!(m.available, 4 * 1024);
        assert_eq!(m.file_lru, None);
        let e = parse_meminfo("MemTotal: x kB\n", "m").unwrap_err();
        assert_eq!(e.line, Some(1));
        let e = parse_meminfo("MemTotal: 10 kB\n", "m").unwrap_err();
        assert!(e.message.contains("MemAvailable"), "{e}");
    }

    #[test]
    fn memberships_last_line_wins() {
        let m =
            parse_memberships("12:cpu,cpuacct:/x\n4:memory:/a\n0::/b\n4:memory:/c\n", "c").unwrap();
        assert_eq!(m.v1_memory.as_deref(), Some("/c"));
        assert_eq!(m.v2.as_deref(), Some("/b"));
        let e = parse_memberships("0::/a\nbroken\n", "c").unwrap_err();
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn unescape() {
        assert_eq!(
            unescape_mount_path(r"/tmp/a\040b\011c\134d"),
            "/tmp/a b\tc\\d"
        );
        assert_eq!(unescape_mount_path(r"/x\04"), r"/x\04");
        assert_eq!(unescape_mount_path(r"\\"), r"\\");
    }

    #[test]
    fn posix_paths() {
        let p = PosixPath::new("//a/./b//");
        assert_eq!(p.parts, vec!["a", "b"]);
        assert!(PosixPath::new("/").is_root());
        assert_eq!(PosixPath::new("/").display(), "/");
    }
}
