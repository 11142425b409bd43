//! What a process reads about host memory: psutil's `available` and the cgroupfs files
//! from its memory cgroup up to the mount root. Plain data (no borrow, no allocation),
//! so tests can build any table by hand and the start-up simulator can take millions.

use serde::{Deserialize, Serialize};

/// Deepest cgroup chain (job level to mount root) a view holds.
pub const MAX_CGROUP_DEPTH: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupVersion {
    V1,
    V2,
}

/// A cgroup in a `HostMemory` arena (`crate::hardware::HostMemory`). `CgroupId(0)` is the
/// mount root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CgroupId(pub u32);

/// cgroup v1 writes this for "no limit" in `memory.limit_in_bytes`: `2^63 - 4096`
/// (PAGE_COUNTER_MAX pages of 4 KiB).
pub const V1_UNLIMITED: u64 = (1u64 << 63) - 4096;

/// Keys of `memory.stat` the sizing rules read. On v2 the counters are hierarchical; on
/// v1 these hold the `total_*` keys (hierarchical), since the unprefixed v1 counters omit
/// descendants. `file` includes `shmem`; `active_file`/`inactive_file` do not (shmem
/// sits on the anon LRU). Dirty and writeback pages are on the file LRU (inactive here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct MemStat {
    pub anon: u64,
    pub file: u64,
    pub active_file: u64,
    pub inactive_file: u64,
    pub file_dirty: u64,
    pub file_writeback: u64,
    pub shmem: u64,
}

/// One cgroup directory on the walk from the process's cgroup up to the mount root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CgroupLevel {
    /// The modelled cgroup, when the view came from a [`super::HostMemory`].
    pub cgroup: Option<CgroupId>,
    /// v2 `memory.max` (`None` = "max" or no file); v1 `memory.limit_in_bytes` (raw, so
    /// [`V1_UNLIMITED`] when unlimited: SGLang compares against it as a number).
    pub max: Option<u64>,
    /// v2 `memory.high` (`None` = "max"); always `None` on v1.
    pub high: Option<u64>,
    /// `memory.current` (v2) / `memory.usage_in_bytes` (v1); `None` = file missing.
    pub usage: Option<u64>,
    /// `memory.stat`; `None` = file missing.
    pub stat: Option<MemStat>,
    /// `memory.min` of this cgroup (v2).
    pub min: u64,
    /// Page cache of this level's *other* children (siblings of the path) protected from
    /// reclaim by their `memory.min`: `file_lru - min(file_lru, max(0, usage - min))`
    /// summed over those children.
    pub protected_sibling_cache: u64,
    /// Some cgroup strictly below this level has a non-zero — or unreadable —
    /// `memory.min` (v2). 0.5.22+ `mem_cache/host_memory.py: _has_protected_descendants`
    /// then drops this level's whole page-cache credit.
    pub protected_descendants: bool,
}

/// Levels from the job's cgroup (index 0) up to and including the mount root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CgroupChain {
    pub version: CgroupVersion,
    levels: [CgroupLevel; MAX_CGROUP_DEPTH],
    len: usize,
}

impl CgroupChain {
    /// From hand-written levels (job first). More than [`MAX_CGROUP_DEPTH`] are cut.
    pub fn from_levels(version: CgroupVersion, levels: &[CgroupLevel]) -> Self {
        let mut c = Self {
            version,
            levels: [CgroupLevel::default(); MAX_CGROUP_DEPTH],
            len: 0,
        };
        for l in levels.iter().take(MAX_CGROUP_DEPTH) {
            c.push(*l);
        }
        c
    }

    pub(crate) fn empty(version: CgroupVersion) -> Self {
        Self::from_levels(version, &[])
    }

    /// Empties the chain in place (levels beyond `len` are never read).
    pub(crate) fn clear(&mut self, version: CgroupVersion) {
        self.version = version;
        self.len = 0;
    }

    pub(crate) fn push(&mut self, l: CgroupLevel) {
        if self.len < MAX_CGROUP_DEPTH {
            self.levels[self.len] = l;
            self.len += 1;
        }
    }

    /// Job level first, mount root last.
    pub fn levels(&self) -> &[CgroupLevel] {
        &self.levels[..self.len]
    }
}

/// What reading `/proc/self/cgroup` + `/proc/self/mountinfo` + cgroupfs gives.
// Large by design: the chain is inline so a snapshot never allocates.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CgroupRead {
    /// No procfs (not Linux): SGLang's headroom is `None` (no cgroup bound).
    NoProcfs,
    /// Memberships exist but no mounted cgroupfs directory was resolved (not mounted,
    /// or membership outside the namespace).
    NotFound,
    Found(CgroupChain),
}

/// Exactly what SGLang's `available_host_memory_bytes` would read at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HostMemoryView {
    /// `psutil.virtual_memory().available` = MemAvailable: host-wide, blind to cgroups.
    pub psutil_available: u64,
    pub cgroup: CgroupRead,
}
