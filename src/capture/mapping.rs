//! From the cgroup directories SGLang walks to the scenario's `memory.cgroup`.
//!
//! Which level is the job: the lowest level of the walk that sets a limit (v2
//! `memory.max` or `memory.high`; v1 `memory.limit_in_bytes` below the "unlimited"
//! value), as the schema means it (the Slurm job or Kubernetes container cgroup whose
//! limit binds); the levels from it down to the process's own cgroup are `below` (the
//! ranks charge in the last one, as they will when the server is started from where
//! `capture` ran), and the levels above it up to the highest level with a limit are
//! `parents`. Levels above the highest limit bound nothing in SGLang's walk: they, their
//! other children and their own charges are left to the host figures (`psutil_available`,
//! `host_other_page_cache`). With no limit anywhere, the job is the process's cgroup.
//!
//! Charges: `memory.current` and `memory.stat` are hierarchical (v1: `total_*`), the
//! scenario's `preexisting` are a level's own, so own = level − its children (the path
//! child and the siblings), field by field. Each sibling is one entry for its whole
//! subtree. `memory.current` includes kernel memory that `memory.stat`'s `anon`/`file`
//! do not, so a level's `anon` is `current − shmem − active_file − inactive_file`
//! (everything the kernel cannot reclaim as clean page cache); the file LRU keeps its
//! sum, with `file_dirty`/`file_writeback` taken out of the inactive list first.

use std::collections::BTreeMap;

use super::cgroupfs::{self, Dir, FileRead, Limit, Protection, Raw};
use super::procfs::{CgroupFs, Hierarchy};
use crate::error::InputError;
use crate::hardware::MAX_CGROUP_DEPTH;
use crate::scenario::schema::{
    CgroupLevelSpec, CgroupSpec, CgroupVersionSpec, PreexistingSpec, SiblingSpec,
};
use crate::units::ByteSize;

/// At or above this a v1 `memory.limit_in_bytes` means "no limit": the kernel writes
/// `PAGE_COUNTER_MAX × PAGE_SIZE` (2^63 − 4096 on 4 KiB pages, 2^63 − 65536 on 64 KiB).
pub const V1_NO_LIMIT_FROM: u64 = 1 << 62;

/// Written for a `memory.min`/`memory.low` of `max` (protects everything): 8 PiB, more
/// than any host.
pub const PROTECT_ALL: u64 = 1 << 53;

/// The scenario's cgroup and what the capture has to say about it.
#[derive(Debug, Clone, Default)]
pub struct CgroupMapping {
    pub spec: Option<CgroupSpec>,
    /// Comments on fields, by field path (`memory.cgroup.parents[0].max`).
    pub comments: BTreeMap<String, String>,
    /// What was read (for the header).
    pub read: Vec<String>,
    /// What could not be read or represented (for the header and stderr).
    pub notes: Vec<String>,
    /// Σ of every charge the scenario places in cgroups, and of their file LRU part.
    pub modelled_total: u64,
    pub modelled_file_lru: u64,
}

/// A file SGLang reads and cannot: the capture stops (exit 2) naming it.
fn unreadable(file: &std::path::Path, why: &str, level: &Dir) -> InputError {
    InputError::new(
        file.display().to_string(),
        format!(
            "{why}: SGLang's `_cgroup_memory_headroom` reads it because {} sets a limit, and raises there (0.5.22+: `Cannot automatically size HiCache host memory`, or psutil's figure for an explicit `--hicache-size`), which a scenario cannot describe",
            level.path.display()
        ),
    )
}

/// Whether a level's limit files bound anything in the walk.
fn limited(fs: CgroupFs, d: &Dir) -> bool {
    match fs {
        CgroupFs::V2 => d.max.bytes().is_some() || d.high.bytes().is_some(),
        CgroupFs::V1 => d.max.bytes().is_some_and(|b| b < V1_NO_LIMIT_FROM),
    }
}

/// Checks that every file SGLang reads at this level can be read (it reads
/// `memory.current` and `memory.stat` wherever a limit file holds a number — on v1 also
/// the "unlimited" one).
fn check_sglang_reads(fs: CgroupFs, d: &Dir) -> Result<(), InputError> {
    let limits: Vec<(&str, &Limit)> = match fs {
        CgroupFs::V2 => vec![("memory.max", &d.max), ("memory.high", &d.high)],
        CgroupFs::V1 => vec![("memory.limit_in_bytes", &d.max)],
    };
    let mut reads_usage = false;
    for (name, l) in limits {
        match l {
            Limit::Unreadable(e) => return Err(unreadable(&d.path.join(name), e, d)),
            Limit::Bytes(_) => reads_usage = true,
            Limit::Missing | Limit::Max => {}
        }
    }
    if !reads_usage {
        return Ok(());
    }
    let usage = match fs {
        CgroupFs::V2 => "memory.current",
        CgroupFs::V1 => "memory.usage_in_bytes",
    };
    if let Some(p) = d.usage.problem() {
        return Err(unreadable(&d.path.join(usage), &p, d));
    }
    match &d.stat {
        FileRead::Ok(s) => {
            let prefix = if fs == CgroupFs::V1 { "total_" } else { "" };
            if s.active_file.is_none() || s.inactive_file.is_none() {
                return Err(InputError::new(
                    d.path.join("memory.stat").display().to_string(),
                    format!(
                        "no `{prefix}active_file` / `{prefix}inactive_file` line: SGLang reads both here (a KeyError)"
                    ),
                ));
            }
        }
        other => {
            return Err(unreadable(
                &d.path.join("memory.stat"),
                &other.problem().unwrap_or_default(),
                d,
            ));
        }
    }
    Ok(())
}

/// A subtree's charges: the directory's own files, else the sum over the nearest
/// directories inside it that have them (a directory without the memory controller is
/// charged to its parent).
fn subtree(d: &Dir) -> Raw {
    d.raw().unwrap_or_else(|| {
        let mut r = Raw::default();
        for c in &d.children {
            r.add(&subtree(c));
        }
        r
    })
}

/// Own charges as the scenario's kinds.
fn own_charges(r: &Raw) -> PreexistingSpec {
    let lru = r.file_lru();
    let dirty = r.dirty.min(lru);
    let writeback = r.writeback.min(lru - dirty);
    let held = dirty + writeback;
    let from_inactive = held.min(r.inactive_file);
    PreexistingSpec {
        anon: ByteSize(r.usage.saturating_sub(r.shmem + lru)),
        shmem: ByteSize(r.shmem),
        inactive_file: ByteSize(r.inactive_file - from_inactive),
        active_file: ByteSize(r.active_file - (held - from_inactive)),
        dirty: ByteSize(dirty),
        writeback: ByteSize(writeback),
    }
}

fn total(p: &PreexistingSpec) -> (u64, u64) {
    let lru = p.inactive_file.0 + p.active_file.0 + p.dirty.0 + p.writeback.0;
    (p.anon.0 + p.shmem.0 + lru, lru)
}

fn protection(
    fs: CgroupFs,
    p: &Protection,
    file: &std::path::Path,
    notes: &mut Vec<String>,
) -> (u64, bool) {
    if fs == CgroupFs::V1 {
        return (0, false);
    }
    match p {
        Protection::Bytes(b) => (*b, false),
        Protection::Max => {
            notes.push(format!(
                "{}: `max` (protects everything) is written as {PROTECT_ALL} B",
                file.display()
            ));
            (PROTECT_ALL, false)
        }
        Protection::Missing => (0, true),
        Protection::Unreadable(e) | Protection::Malformed(e) => {
            notes.push(format!(
                "{}: {e}: SGLang 0.5.22+ counts it as protected (`min_unreadable`)",
                file.display()
            ));
            (0, true)
        }
    }
}

/// `memory.low` (v2): not read by SGLang; the reclaim model's best-effort protection.
fn low_of(fs: CgroupFs, d: &Dir, notes: &mut Vec<String>) -> u64 {
    if fs == CgroupFs::V1 {
        return 0;
    }
    match &d.low {
        Protection::Bytes(b) => *b,
        Protection::Max => PROTECT_ALL,
        Protection::Missing => 0,
        Protection::Unreadable(e) | Protection::Malformed(e) => {
            notes.push(format!(
                "{}: {e}: taken as 0",
                d.path.join("memory.low").display()
            ));
            0
        }
    }
}

fn limit_of(fs: CgroupFs, l: &Limit) -> Option<ByteSize> {
    match (fs, l) {
        (CgroupFs::V1, Limit::Bytes(b)) if *b >= V1_NO_LIMIT_FROM => None,
        (_, Limit::Bytes(b)) => Some(ByteSize(*b)),
        _ => None,
    }
}

/// Whether 0.5.22+'s scan finds a protection strictly inside `d` (a non-zero or
/// unreadable `memory.min`, or a directory it cannot list).
fn protected_inside(d: &Dir) -> Option<String> {
    if let Some(e) = &d.unlisted {
        return Some(format!("{} cannot be listed ({e})", d.path.display()));
    }
    for c in d.descendants() {
        if c.min.counts_as_protected() {
            return Some(format!(
                "{}/memory.min: {}",
                c.path.display(),
                describe_min(&c.min)
            ));
        }
        if let Some(e) = &c.unlisted {
            return Some(format!("{} cannot be listed ({e})", c.path.display()));
        }
    }
    None
}

fn describe_min(p: &Protection) -> String {
    match p {
        Protection::Bytes(b) => format!("{b}"),
        Protection::Max => "max".into(),
        Protection::Missing => "no such file".into(),
        Protection::Unreadable(e) => e.clone(),
        Protection::Malformed(t) => format!("`{t}`"),
    }
}

/// A comment with the size in GiB.
fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Maps one resolved hierarchy (its walk read from disk) to the scenario's cgroup.
pub fn map_hierarchy(h: &Hierarchy) -> Result<CgroupMapping, InputError> {
    let fs = h.fs;
    let walk = h.walk();
    let mut out = CgroupMapping::default();
    let dirs: Vec<Dir> = walk
        .iter()
        .map(|p| cgroupfs::read_dir(p, fs, false))
        .collect::<Result<_, _>>()?;
    for d in &dirs {
        check_sglang_reads(fs, d)?;
    }
    let lim: Vec<usize> = (0..dirs.len()).filter(|&i| limited(fs, &dirs[i])).collect();
    let job = lim.first().copied().unwrap_or(0);
    let top = lim.last().copied().unwrap_or(0);
    let rel = |i: usize| -> String {
        let parts = &h.relative[..h.relative.len() - i];
        format!("/{}", parts.join("/"))
    };
    if top + 1 >= MAX_CGROUP_DEPTH {
        return Err(InputError::new(
            walk[0].display().to_string(),
            format!(
                "{} levels from the process's cgroup up to the highest limit ({}): the simulator models at most {}",
                top + 1,
                walk[top].display(),
                MAX_CGROUP_DEPTH - 1
            ),
        ));
    }
    let version = match fs {
        CgroupFs::V1 => CgroupVersionSpec::V1,
        CgroupFs::V2 => CgroupVersionSpec::V2,
    };
    out.read.push(format!(
        "{} ({}) mounted at {} (mountinfo line {}, root {}); the process's cgroup {} → {}",
        fs.name(),
        match fs {
            CgroupFs::V1 => "v1, memory controller",
            CgroupFs::V2 => "v2",
        },
        h.mount.display(),
        h.line,
        h.root,
        h.membership,
        walk[0].display()
    ));
    if lim.is_empty() {
        out.read.push(format!(
            "no limit on the {} levels up to the mount: SGLang's headroom is None (psutil alone bounds); the job is the process's cgroup",
            dirs.len()
        ));
    } else {
        out.read.push(format!(
            "the job: {} (the lowest level with a limit){}{}",
            rel(job),
            if job > 0 {
                format!(
                    "; below it down to the process: {}",
                    (0..job).rev().map(&rel).collect::<Vec<_>>().join(", ")
                )
            } else {
                String::new()
            },
            if top > job {
                format!(
                    "; parents up to the highest limit: {}",
                    (job + 1..=top).map(&rel).collect::<Vec<_>>().join(", ")
                )
            } else {
                String::new()
            }
        ));
        if top + 1 < dirs.len() {
            out.read.push(format!(
                "{} level(s) above, up to the mount, have no limit: left to the host figures",
                dirs.len() - top - 1
            ));
        }
    }

    // Siblings of each path level below the highest limit (children of the level above,
    // whole subtrees), and what is below the process's own cgroup.
    let mut siblings: Vec<Vec<Dir>> = vec![Vec::new(); top + 1];
    let mut listing_failed = vec![None; top + 1];
    for i in 0..top {
        match cgroupfs::subdirs(&walk[i + 1]) {
            Ok(names) => {
                for n in names.iter().filter(|n| **n != dirs[i].name) {
                    siblings[i].push(cgroupfs::read_dir(&walk[i + 1].join(n), fs, true)?);
                }
            }
            Err(e) => listing_failed[i] = Some(e.to_string()),
        }
    }
    let engine_inside = cgroupfs::read_dir(&walk[0], fs, true)?;
    for d in siblings.iter().flatten().chain([&engine_inside]) {
        out.notes.extend(d.skipped_notes());
    }

    // Subtree charges of the path levels, bottom up.
    let mut sub: Vec<Raw> = Vec::with_capacity(top + 1);
    for i in 0..=top {
        let r = match dirs[i].raw() {
            Some(r) => r,
            None if i == 0 => subtree(&engine_inside),
            None => {
                let mut r = sub[i - 1];
                for s in &siblings[i - 1] {
                    r.add(&subtree(s));
                }
                r
            }
        };
        if dirs[i].raw().is_none() {
            out.notes.push(format!(
                "{}: no memory.current / memory.stat ({}): its charges are counted in the levels above",
                dirs[i].path.display(),
                dirs[i].usage.problem().or(dirs[i].stat.problem()).unwrap_or_else(|| "no file LRU keys".into())
            ));
        }
        sub.push(r);
    }
    let mut clamped = 0u64;
    // The charges of each level's listed children (the path child and its siblings).
    let children: Vec<Raw> = (0..=top)
        .map(|i| {
            let mut r = Raw::default();
            if i > 0 {
                r = sub[i - 1];
                for s in &siblings[i - 1] {
                    r.add(&subtree(s));
                }
            }
            r
        })
        .collect();
    let own: Vec<PreexistingSpec> = (0..=top)
        .map(|i| {
            let (r, c) = sub[i].minus(&children[i]);
            clamped += c;
            own_charges(&r)
        })
        .collect();
    if clamped > 0 {
        out.notes.push(format!(
            "the children's charges exceed their parent's by {clamped} B in total (files read at different instants): those own charges are taken as 0"
        ));
    }
    if !engine_inside.children.is_empty() {
        out.notes.push(format!(
            "{} cgroup(s) below the process's own cgroup are counted in its own charges",
            engine_inside.descendants().len()
        ));
    }

    // Path levels as scenario levels.
    let mut levels: Vec<CgroupLevelSpec> = Vec::with_capacity(top + 1);
    let mut comments = BTreeMap::new();
    for i in 0..=top {
        let d = &dirs[i];
        let (min, min_unreadable) =
            protection(fs, &d.min, &d.path.join("memory.min"), &mut out.notes);
        if fs == CgroupFs::V2 && matches!(d.min, Protection::Missing) && i < dirs.len() - 1 {
            out.notes.push(format!(
                "{}: no memory.min (the memory controller is not enabled there): SGLang 0.5.22+ counts it as protected (`min_unreadable`)",
                d.path.display()
            ));
        }
        // What 0.5.22+ finds below the process's cgroup, and a level whose children
        // cannot be listed: protected from that level up.
        let mut inside = false;
        if fs == CgroupFs::V2 {
            if i == 0
                && let Some(why) = protected_inside(&engine_inside)
            {
                inside = true;
                out.notes.push(format!(
                    "{why}: below the process's own cgroup (not listed): `protected_inside` on it"
                ));
            }
            if i > 0
                && let Some(e) = &listing_failed[i - 1]
            {
                inside = true;
                out.notes.push(format!(
                    "{} cannot be listed ({e}): SGLang 0.5.22+ counts it as protected (`protected_inside`); its other children are not listed",
                    d.path.display()
                ));
            }
        }
        let mut sibs = Vec::new();
        for s in &siblings[i] {
            let r = subtree(s);
            let o = own_charges(&r);
            let (smin, smin_unreadable) =
                protection(fs, &s.min, &s.path.join("memory.min"), &mut out.notes);
            let inside = if fs == CgroupFs::V2 {
                protected_inside(s)
            } else {
                None
            };
            sibs.push((
                SiblingSpec {
                    name: s.name.clone(),
                    anon: o.anon,
                    page_cache: o.inactive_file,
                    shmem: o.shmem,
                    min: ByteSize(smin),
                    low: ByteSize(low_of(fs, s, &mut out.notes)),
                    max: limit_of(fs, &s.max),
                    high: if fs == CgroupFs::V2 {
                        limit_of(fs, &s.high)
                    } else {
                        None
                    },
                    min_unreadable: smin_unreadable,
                    protected_inside: inside.is_some(),
                    preexisting: PreexistingSpec {
                        active_file: o.active_file,
                        dirty: o.dirty,
                        writeback: o.writeback,
                        ..Default::default()
                    },
                },
                inside,
                s.raw().is_none(),
            ));
        }
        levels.push(CgroupLevelSpec {
            name: d.name.clone(),
            max: limit_of(fs, &d.max),
            high: if fs == CgroupFs::V2 {
                limit_of(fs, &d.high)
            } else {
                None
            },
            min: ByteSize(min),
            low: ByteSize(low_of(fs, d, &mut out.notes)),
            min_unreadable,
            protected_inside: inside,
            preexisting: own[i].clone(),
            siblings: Vec::new(),
        });
        // Field paths for comments, known once the level's place is.
        let field = if i == job {
            "memory.cgroup".to_string()
        } else if i > job {
            format!("memory.cgroup.parents[{}]", i - job - 1)
        } else {
            format!("memory.cgroup.below[{}]", job - 1 - i)
        };
        let file = |n: &str| d.path.join(n).display().to_string();
        let (maxf, highf, usef) = match fs {
            CgroupFs::V2 => ("memory.max", "memory.high", "memory.current"),
            CgroupFs::V1 => ("memory.limit_in_bytes", "", "memory.usage_in_bytes"),
        };
        comments.insert(format!("{field}.path"), d.path.display().to_string());
        if let Some(b) = limit_of(fs, &d.max) {
            comments.insert(
                format!("{field}.max"),
                format!("{} ({})", file(maxf), gib(b.0)),
            );
        }
        if let Some(b) = limit_of(fs, &d.high).filter(|_| fs == CgroupFs::V2) {
            comments.insert(
                format!("{field}.high"),
                format!("{} ({})", file(highf), gib(b.0)),
            );
        }
        comments.insert(
            format!("{field}.preexisting"),
            if i == 0 {
                format!(
                    "own charges: {usef} {}{}",
                    gib(sub[0].usage),
                    if engine_inside.children.is_empty() {
                        ""
                    } else {
                        ", with the cgroups below it"
                    }
                )
            } else {
                format!(
                    "own charges: {usef} {} less its children's {}",
                    gib(sub[i].usage),
                    gib(children[i].usage)
                )
            },
        );
        for (k, (sib, inside, no_files)) in sibs.into_iter().enumerate() {
            let sf = format!("{field}.siblings[{k}]");
            let mut c = format!(
                "{}: {} in all",
                siblings[i][k].path.display(),
                gib(subtree(&siblings[i][k]).usage)
            );
            if let Some(w) = inside {
                c += &format!("; protected inside: {w}");
            }
            if no_files {
                c += "; no memory.current/memory.stat of its own";
            }
            if sib.min_unreadable {
                c += &format!("; memory.min: {}", describe_min(&siblings[i][k].min));
            }
            comments.insert(sf, c);
            levels[i].siblings.push(sib);
        }
    }
    out.comments = comments;

    // Usage above a limit: the simulator's pre-charge would reclaim or fail.
    for (i, d) in dirs.iter().enumerate().take(top + 1) {
        let u = sub[i].usage;
        if let Some(m) = limit_of(fs, &d.max).filter(|m| u > m.0) {
            out.notes.push(format!(
                "{}: usage {u} B is above the limit {} B: the simulator cannot pre-charge it (the scenario will not load until the limit or the charges change)",
                d.path.display(),
                m.0
            ));
        } else if let Some(hi) = limit_of(fs, &d.high).filter(|h| fs == CgroupFs::V2 && u > h.0) {
            out.notes.push(format!(
                "{}: usage {u} B is above memory.high {} B (the kernel throttles): the simulator reclaims page cache down to it before start-up",
                d.path.display(),
                hi.0
            ));
        }
    }

    // The scenario's shape: job, parents (the job's parent first), below (the job's
    // child first, the process's cgroup last).
    let parents: Vec<CgroupLevelSpec> = levels.drain(job + 1..).collect();
    let job_level = levels.pop().expect("the job level");
    let below: Vec<CgroupLevelSpec> = levels.into_iter().rev().collect();
    for l in parents
        .iter()
        .chain(below.iter())
        .chain(std::iter::once(&job_level))
    {
        let (t, f) = total(&l.preexisting);
        out.modelled_total += t;
        out.modelled_file_lru += f;
        for s in &l.siblings {
            let mut p = s.preexisting.clone();
            p.anon = s.anon;
            p.shmem = s.shmem;
            p.inactive_file = s.page_cache;
            let (t, f) = total(&p);
            out.modelled_total += t;
            out.modelled_file_lru += f;
        }
    }
    out.spec = Some(CgroupSpec {
        version,
        max: job_level.max,
        high: job_level.high,
        min: job_level.min,
        low: job_level.low,
        min_unreadable: job_level.min_unreadable,
        protected_inside: job_level.protected_inside,
        preexisting: job_level.preexisting,
        siblings: job_level.siblings,
        parents,
        below,
        ..Default::default()
    });
    Ok(out)
}
