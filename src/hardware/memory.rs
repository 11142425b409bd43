//! A dynamic model of host memory as Linux accounts it: MemTotal/MemAvailable host-wide
//! and a memory-cgroup tree with hard limits, charges by kind, reclaim of clean page
//! cache and OOM kills.
//!
//! Model (kernel `Documentation/admin-guide/cgroup-v2.rst`, `mm/memcontrol.c`,
//! simplified): a charge to a cgroup counts against `memory.max` of that cgroup and every
//! ancestor. When it would cross one, the kernel reclaims clean page cache inside that
//! ancestor's subtree — inactive list first, then active — skipping cache protected by a
//! cgroup's `memory.min`; if that is not enough, the cgroup OOM killer fires. `memory.high`
//! makes the kernel reclaim too, but never kills. Anonymous memory pinned by
//! `cudaHostRegister` and shmem from `cudaHostAlloc` are never reclaimable; dirty and
//! writeback pages are not reclaimable until written back. A charge that would exceed
//! host RAM reclaims cache host-wide first (page cache outside the modelled cgroups, then
//! inside), else it is a host (global) OOM.
//!
//! Hot path: `charge` and `snapshot` walk the ancestor chain (depth ≤ 8) and allocate
//! nothing; reclaim scans the arena (a few cgroups) only when a limit is hit.

use serde::{Deserialize, Serialize};

use super::view::{
    CgroupChain, CgroupId, CgroupLevel, CgroupRead, CgroupVersion, HostMemoryView,
    MAX_CGROUP_DEPTH, MemStat, V1_UNLIMITED,
};

/// What a charge is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChargeKind {
    /// Anonymous memory: process heap, and pools pinned with `cudaHostRegister`. Never
    /// reclaimable here (no swap; pinned pages cannot be reclaimed).
    Anon,
    /// Swap-backed shared memory: `cudaHostAlloc`, `/dev/shm`. Never reclaimable.
    Shmem,
    /// Clean page cache on the inactive list (a first read, e.g. the weight load).
    PageCache,
    /// Clean page cache on the active list (pages touched twice).
    PageCacheActive,
    /// Dirty page cache (written, not yet flushed): charged, not reclaimable.
    PageCacheDirty,
    /// Page cache under writeback: charged, not reclaimable.
    PageCacheWriteback,
}

/// Charges of one cgroup (own) or of a subtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Charges {
    pub anon: u64,
    pub shmem: u64,
    pub inactive_clean: u64,
    pub active_clean: u64,
    pub dirty: u64,
    pub writeback: u64,
}

impl Charges {
    pub fn total(&self) -> u64 {
        self.anon + self.shmem + self.file_lru()
    }
    /// Page cache on the file LRU lists (clean, dirty and writeback; not shmem).
    pub fn file_lru(&self) -> u64 {
        self.inactive_clean + self.active_clean + self.dirty + self.writeback
    }
    pub fn clean_cache(&self) -> u64 {
        self.inactive_clean + self.active_clean
    }
    fn slot(&mut self, kind: ChargeKind) -> &mut u64 {
        match kind {
            ChargeKind::Anon => &mut self.anon,
            ChargeKind::Shmem => &mut self.shmem,
            ChargeKind::PageCache => &mut self.inactive_clean,
            ChargeKind::PageCacheActive => &mut self.active_clean,
            ChargeKind::PageCacheDirty => &mut self.dirty,
            ChargeKind::PageCacheWriteback => &mut self.writeback,
        }
    }
    fn get(&self, kind: ChargeKind) -> u64 {
        match kind {
            ChargeKind::Anon => self.anon,
            ChargeKind::Shmem => self.shmem,
            ChargeKind::PageCache => self.inactive_clean,
            ChargeKind::PageCacheActive => self.active_clean,
            ChargeKind::PageCacheDirty => self.dirty,
            ChargeKind::PageCacheWriteback => self.writeback,
        }
    }
    fn stat(&self) -> MemStat {
        MemStat {
            anon: self.anon,
            file: self.file_lru() + self.shmem,
            active_file: self.active_clean,
            inactive_file: self.inactive_clean + self.dirty + self.writeback,
            file_dirty: self.dirty,
            file_writeback: self.writeback,
            shmem: self.shmem,
        }
    }
}

/// Limits of one cgroup. v2: `memory.max`, `memory.high`, `memory.min`; v1:
/// `memory.limit_in_bytes` is `max` (`None` = unlimited, read as [`V1_UNLIMITED`]) and
/// `high`/`min` are ignored by the v1 readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CgroupLimits {
    pub max: Option<u64>,
    pub high: Option<u64>,
    pub min: u64,
    /// v2 `memory.low`: best-effort protection. Reclaim takes cache under it only when
    /// the unprotected cache of the subtree is not enough (the kernel's "low breach",
    /// `mm/vmscan.c: shrink_node_memcgs` retrying with `memcg_low_reclaim`).
    pub low: u64,
}

impl CgroupLimits {
    pub fn max(bytes: u64) -> Self {
        Self {
            max: Some(bytes),
            ..Self::default()
        }
    }
}

#[derive(Debug, Clone)]
struct Cgroup {
    path: String,
    parent: Option<CgroupId>,
    children: Vec<CgroupId>,
    depth: usize,
    limits: CgroupLimits,
    /// `memory.min` is missing or unreadable: counted as protected by 0.5.22+'s scan of
    /// descendants, 0 for reclaim.
    min_unreadable: bool,
    /// A cgroup below this one, not in the arena, counts as protected for 0.5.22+'s
    /// scan (from this cgroup and every ancestor).
    protected_inside: bool,
    own: Charges,
    subtree: Charges,
    /// `subtree.total()` (`memory.current`), kept by `add`/`remove`: read on every
    /// charge at every level.
    usage: u64,
}

/// A cgroup OOM kill (or a host OOM when `cgroup` is `None`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "OOM kill in {where_}: charging {requested} B would exceed the limit of {limit} B (usage {usage} B after reclaiming {reclaimed} B of page cache)"
)]
pub struct Oom {
    pub cgroup: Option<CgroupId>,
    /// `cgroup /a/b` or `host`.
    pub where_: String,
    pub requested: u64,
    pub limit: u64,
    pub usage: u64,
    pub reclaimed: u64,
}

/// Misuse of the arena (bad parent, too deep).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error("cgroup `{0}` would be deeper than {MAX_CGROUP_DEPTH} levels")]
    TooDeep(String),
    #[error("unknown cgroup id {0}")]
    UnknownCgroup(u32),
}

/// What a successful charge did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ChargeOutcome {
    /// Clean page cache the kernel reclaimed to make room (bytes).
    pub reclaimed: u64,
}

/// Host memory: MemTotal, memory outside the modelled cgroups, and the cgroup tree.
#[derive(Debug, Clone)]
pub struct HostMemory {
    pub version: CgroupVersion,
    /// `MemTotal`.
    pub mem_total: u64,
    /// Unreclaimable memory used outside the modelled cgroups (kernel, other services).
    pub other_used: u64,
    /// Clean page cache outside the modelled cgroups (reclaimable host-wide).
    pub other_cache: u64,
    /// The low watermark term of MemAvailable (`min(pagecache/2, wmark_low)` is not
    /// available); 0 by default.
    pub low_watermark: u64,
    /// Whether the process can resolve its cgroupfs directory. `false` models "not
    /// mounted / membership outside the namespace" (`CgroupRead::NotFound`).
    pub cgroupfs_mounted: bool,
    cgroups: Vec<Cgroup>,
}

impl HostMemory {
    /// A host with `mem_total` bytes and only the mount-root cgroup (id 0, path `/`,
    /// no limit).
    pub fn new(version: CgroupVersion, mem_total: u64) -> Self {
        Self {
            version,
            mem_total,
            other_used: 0,
            other_cache: 0,
            low_watermark: 0,
            cgroupfs_mounted: true,
            cgroups: vec![Cgroup {
                path: "/".into(),
                parent: None,
                children: Vec::new(),
                depth: 0,
                limits: CgroupLimits::default(),
                min_unreadable: false,
                protected_inside: false,
                own: Charges::default(),
                subtree: Charges::default(),
                usage: 0,
            }],
        }
    }

    /// Makes `self` equal to `template` without reallocating when both have the same
    /// cgroup tree (the start-up Monte Carlo resets one node per run); otherwise clones.
    pub fn reset_to(&mut self, template: &HostMemory) {
        let same_tree = self.cgroups.len() == template.cgroups.len()
            && self
                .cgroups
                .iter()
                .zip(&template.cgroups)
                .all(|(a, b)| a.parent == b.parent && a.path == b.path);
        if !same_tree {
            *self = template.clone();
            return;
        }
        self.version = template.version;
        self.mem_total = template.mem_total;
        self.other_used = template.other_used;
        self.other_cache = template.other_cache;
        self.low_watermark = template.low_watermark;
        self.cgroupfs_mounted = template.cgroupfs_mounted;
        for (a, b) in self.cgroups.iter_mut().zip(&template.cgroups) {
            a.limits = b.limits;
            a.min_unreadable = b.min_unreadable;
            a.protected_inside = b.protected_inside;
            a.own = b.own;
            a.subtree = b.subtree;
            a.usage = b.usage;
        }
    }

    /// The mount root.
    pub fn root(&self) -> CgroupId {
        CgroupId(0)
    }

    /// Adds a child cgroup `name` under `parent`.
    pub fn add_cgroup(
        &mut self,
        parent: CgroupId,
        name: &str,
        limits: CgroupLimits,
    ) -> Result<CgroupId, MemoryError> {
        let p = self.cg(parent)?;
        let path = if p.path == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", p.path)
        };
        let depth = p.depth + 1;
        if depth >= MAX_CGROUP_DEPTH {
            return Err(MemoryError::TooDeep(path));
        }
        let id = CgroupId(self.cgroups.len() as u32);
        self.cgroups.push(Cgroup {
            path,
            parent: Some(parent),
            children: Vec::new(),
            depth,
            limits,
            min_unreadable: false,
            protected_inside: false,
            own: Charges::default(),
            subtree: Charges::default(),
            usage: 0,
        });
        self.cgroups[parent.0 as usize].children.push(id);
        Ok(id)
    }

    fn cg(&self, id: CgroupId) -> Result<&Cgroup, MemoryError> {
        self.cgroups
            .get(id.0 as usize)
            .ok_or(MemoryError::UnknownCgroup(id.0))
    }

    /// Path of a cgroup relative to the mount root (`/job/engine`).
    pub fn path(&self, id: CgroupId) -> &str {
        &self.cgroups[id.0 as usize].path
    }

    pub fn parent(&self, id: CgroupId) -> Option<CgroupId> {
        self.cgroups[id.0 as usize].parent
    }

    pub fn limits(&self, id: CgroupId) -> CgroupLimits {
        self.cgroups[id.0 as usize].limits
    }

    pub fn set_limits(&mut self, id: CgroupId, limits: CgroupLimits) {
        self.cgroups[id.0 as usize].limits = limits;
    }

    /// Marks `memory.min` of `id` as missing or unreadable (v2): SGLang 0.5.22+
    /// (`mem_cache/host_memory.py: _has_protected_descendants`) then counts it as
    /// protected from every level above; reclaim still takes its `min` as 0.
    pub fn set_min_unreadable(&mut self, id: CgroupId, unreadable: bool) {
        self.cgroups[id.0 as usize].min_unreadable = unreadable;
    }

    /// Marks a protection below `id` that the arena does not hold (a cgroup under the
    /// engine's own, a subtree described as one sibling, a directory that cannot be
    /// listed): 0.5.22+ `_has_protected_descendants` is True at `id` and above.
    pub fn set_protected_inside(&mut self, id: CgroupId, protected: bool) {
        self.cgroups[id.0 as usize].protected_inside = protected;
    }

    /// `memory.current`: charges of the subtree.
    pub fn usage(&self, id: CgroupId) -> u64 {
        self.cgroups[id.0 as usize].usage
    }

    /// Subtree charges by kind.
    pub fn charges(&self, id: CgroupId) -> Charges {
        self.cgroups[id.0 as usize].subtree
    }

    /// Charges of this cgroup alone (not its children).
    pub fn own_charges(&self, id: CgroupId) -> Charges {
        self.cgroups[id.0 as usize].own
    }

    /// `memory.stat` (hierarchical: v2 keys, or v1 `total_*` keys).
    pub fn stat(&self, id: CgroupId) -> MemStat {
        self.cgroups[id.0 as usize].subtree.stat()
    }

    /// Bytes in use host-wide (MemTotal − MemFree).
    pub fn host_used(&self) -> u64 {
        self.other_used + self.other_cache + self.cgroups[0].usage
    }

    /// `MemFree`.
    pub fn mem_free(&self) -> u64 {
        self.mem_total.saturating_sub(self.host_used())
    }

    /// `psutil.virtual_memory().available` = MemAvailable (mirrors
    /// `psutil/_pslinux.py: virtual_memory`, which reads `/proc/meminfo`; kernel
    /// `si_mem_available`): MemFree plus the file LRU (page cache, whether or not charged
    /// to a cgroup) minus `min(pagecache/2, wmark_low)`. Host-wide and blind to cgroup
    /// limits. Shmem, anon and pinned memory are not available. (The kernel counts dirty
    /// file pages too, since they are on the file LRU.)
    pub fn psutil_available(&self) -> u64 {
        let pagecache = self.other_cache + self.cgroups[0].subtree.file_lru();
        let avail = self.mem_free() + pagecache - (pagecache / 2).min(self.low_watermark);
        // psutil: "if avail > total: avail = free" (LXC); cannot happen here but keep it.
        if avail > self.mem_total {
            self.mem_free()
        } else {
            avail
        }
    }

    fn is_in_subtree(&self, c: CgroupId, top: CgroupId) -> bool {
        let mut cur = Some(c);
        while let Some(x) = cur {
            if x == top {
                return true;
            }
            cur = self.cgroups[x.0 as usize].parent;
        }
        false
    }

    /// Clean cache of `kind` in `c`'s own charges that reclaim rooted at `top` may take:
    /// bounded by `usage - memory.min` (and `- memory.low` unless `low_breach`) of `c`
    /// and of each ancestor strictly below `top` (a reclaim's own root is not
    /// protected, as in `mem_cgroup_protection`).
    fn reclaimable_own(
        &self,
        c: CgroupId,
        top: CgroupId,
        kind: ChargeKind,
        low_breach: bool,
    ) -> u64 {
        let mut allowed = self.cgroups[c.0 as usize].own.get(kind);
        let mut cur = Some(c);
        while let Some(x) = cur {
            if x == top {
                break;
            }
            let g = &self.cgroups[x.0 as usize];
            let protect = if low_breach {
                g.limits.min
            } else {
                g.limits.min.max(g.limits.low)
            };
            allowed = allowed.min(g.usage.saturating_sub(protect));
            cur = g.parent;
        }
        allowed
    }

    fn remove(&mut self, c: CgroupId, kind: ChargeKind, bytes: u64) {
        *self.cgroups[c.0 as usize].own.slot(kind) -= bytes;
        let mut cur = Some(c);
        while let Some(x) = cur {
            let g = &mut self.cgroups[x.0 as usize];
            *g.subtree.slot(kind) -= bytes;
            g.usage -= bytes;
            cur = g.parent;
        }
    }

    fn add(&mut self, c: CgroupId, kind: ChargeKind, bytes: u64) {
        *self.cgroups[c.0 as usize].own.slot(kind) += bytes;
        let mut cur = Some(c);
        while let Some(x) = cur {
            let g = &mut self.cgroups[x.0 as usize];
            *g.subtree.slot(kind) += bytes;
            g.usage += bytes;
            cur = g.parent;
        }
    }

    /// Reclaims up to `want` bytes of clean page cache in `top`'s subtree, inactive
    /// first, then active, cgroups in creation order; returns what was reclaimed. With
    /// `protect`, `memory.min` is never breached and `memory.low` only in a second pass
    /// when the first did not free enough.
    fn reclaim(&mut self, top: CgroupId, want: u64, protect: bool) -> u64 {
        let mut got = self.reclaim_pass(top, want, protect, false);
        if protect && got < want {
            got += self.reclaim_pass(top, want - got, true, true);
        }
        got
    }

    fn reclaim_pass(&mut self, top: CgroupId, want: u64, protect: bool, low_breach: bool) -> u64 {
        let mut got = 0;
        // A leaf (the usual job cgroup): its subtree is itself, and its own limits do not
        // protect it from its own reclaim — the scan below would find just this.
        if self.cgroups[top.0 as usize].children.is_empty() {
            for kind in [ChargeKind::PageCache, ChargeKind::PageCacheActive] {
                if got >= want {
                    return got;
                }
                let take = self.cgroups[top.0 as usize].own.get(kind).min(want - got);
                if take > 0 {
                    self.remove(top, kind, take);
                    got += take;
                }
            }
            return got;
        }
        for kind in [ChargeKind::PageCache, ChargeKind::PageCacheActive] {
            for i in 0..self.cgroups.len() {
                if got >= want {
                    return got;
                }
                let c = CgroupId(i as u32);
                if !self.is_in_subtree(c, top) {
                    continue;
                }
                let avail = if protect {
                    self.reclaimable_own(c, top, kind, low_breach)
                } else {
                    self.cgroups[i].own.get(kind)
                };
                let take = avail.min(want - got);
                if take > 0 {
                    self.remove(c, kind, take);
                    got += take;
                }
            }
        }
        got
    }

    /// Charges `bytes` of `kind` to `cg`, reclaiming clean page cache where a limit (of
    /// `cg` or an ancestor, or host RAM) would be crossed. Errors with the OOM kill when
    /// reclaim cannot make room; nothing is charged then (the cache already reclaimed
    /// stays reclaimed, as in the kernel).
    #[inline]
    pub fn charge(
        &mut self,
        cg: CgroupId,
        kind: ChargeKind,
        bytes: u64,
    ) -> Result<ChargeOutcome, Oom> {
        // Fast path (most charges of a start-up): no limit on the way up, nor host RAM,
        // would be crossed, so the walk below would reclaim nothing.
        if self.fits(cg, bytes) {
            self.add(cg, kind, bytes);
            return Ok(ChargeOutcome::default());
        }
        self.charge_reclaiming(cg, kind, bytes)
    }

    /// Whether `bytes` more in `cg` stays within `memory.high` and `memory.max` of `cg`
    /// and every ancestor, and within host RAM. (A level over `memory.high` with
    /// `memory.max <= memory.high` is over `memory.max` too, so this is exactly "the
    /// charge reclaims nothing".)
    #[inline]
    fn fits(&self, cg: CgroupId, bytes: u64) -> bool {
        if self.host_used() + bytes > self.mem_total {
            return false;
        }
        let mut cur = Some(cg);
        while let Some(x) = cur {
            let g = &self.cgroups[x.0 as usize];
            let after = g.usage + bytes;
            if g.limits.high.is_some_and(|h| after > h) || g.limits.max.is_some_and(|m| after > m) {
                return false;
            }
            cur = g.parent;
        }
        true
    }

    /// [`charge`](Self::charge) when some limit would be crossed: reclaim, or the OOM.
    #[inline(never)]
    fn charge_reclaiming(
        &mut self,
        cg: CgroupId,
        kind: ChargeKind,
        bytes: u64,
    ) -> Result<ChargeOutcome, Oom> {
        let mut reclaimed = 0u64;
        // Lowest level first: reclaim there also lowers every ancestor's usage.
        let mut cur = Some(cg);
        while let Some(x) = cur {
            let g = &self.cgroups[x.0 as usize];
            let (max, high, usage, parent) = (g.limits.max, g.limits.high, g.usage, g.parent);
            if let Some(h) = high {
                // memory.high: reclaim (throttling), never an OOM kill.
                let over = (usage + bytes).saturating_sub(h);
                if over > 0 && max.is_none_or(|m| m > h) {
                    reclaimed += self.reclaim(x, over, true);
                }
            }
            if let Some(m) = max {
                let usage = self.cgroups[x.0 as usize].usage;
                let over = (usage + bytes).saturating_sub(m);
                if over > 0 {
                    let got = self.reclaim(x, over, true);
                    reclaimed += got;
                    if got < over {
                        return Err(self.cgroup_oom(x, bytes, m, usage - got, reclaimed));
                    }
                }
            }
            cur = parent;
        }
        // Host RAM.
        let over = (self.host_used() + bytes).saturating_sub(self.mem_total);
        if over > 0 {
            let from_other = self.other_cache.min(over);
            self.other_cache -= from_other;
            reclaimed += from_other;
            let got = self.reclaim(CgroupId(0), over - from_other, false);
            reclaimed += got;
            if from_other + got < over {
                return Err(Oom {
                    cgroup: None,
                    where_: "host".into(),
                    requested: bytes,
                    limit: self.mem_total,
                    usage: self.host_used(),
                    reclaimed,
                });
            }
        }
        self.add(cg, kind, bytes);
        Ok(ChargeOutcome { reclaimed })
    }

    /// The OOM kill of cgroup `x` (out of line: rare, and its text is formatted).
    #[cold]
    #[inline(never)]
    fn cgroup_oom(&self, x: CgroupId, bytes: u64, limit: u64, usage: u64, reclaimed: u64) -> Oom {
        Oom {
            cgroup: Some(x),
            where_: format!("cgroup {}", self.cgroups[x.0 as usize].path),
            requested: bytes,
            limit,
            usage,
            reclaimed,
        }
    }

    /// Frees up to `bytes` of `kind` charged to `cg` itself; returns what was freed.
    pub fn uncharge(&mut self, cg: CgroupId, kind: ChargeKind, bytes: u64) -> u64 {
        let b = bytes.min(self.cgroups[cg.0 as usize].own.get(kind));
        self.remove(cg, kind, b);
        b
    }

    /// Reclaims up to `bytes` of clean page cache from `cg`'s subtree (inactive first),
    /// as background aging or `echo 1 > drop_caches` would; ignores `memory.min`.
    /// Returns what was dropped.
    pub fn drop_page_cache(&mut self, cg: CgroupId, bytes: u64) -> u64 {
        self.reclaim(cg, bytes, false)
    }

    /// Moves up to `bytes` of `cg`'s own clean inactive cache to the active list (pages
    /// touched a second time); returns what moved.
    pub fn activate_page_cache(&mut self, cg: CgroupId, bytes: u64) -> u64 {
        let b = bytes.min(self.cgroups[cg.0 as usize].own.inactive_clean);
        self.remove(cg, ChargeKind::PageCache, b);
        self.add(cg, ChargeKind::PageCacheActive, b);
        b
    }

    /// Writeback finished: up to `bytes` of `cg`'s own dirty, then writeback, pages become
    /// clean inactive cache; returns what moved.
    pub fn clean_page_cache(&mut self, cg: CgroupId, bytes: u64) -> u64 {
        let mut left = bytes;
        for kind in [ChargeKind::PageCacheDirty, ChargeKind::PageCacheWriteback] {
            let b = left.min(self.cgroups[cg.0 as usize].own.get(kind));
            self.remove(cg, kind, b);
            self.add(cg, ChargeKind::PageCache, b);
            left -= b;
        }
        bytes - left
    }

    /// Page cache of `c`'s subtree that `memory.min` protects from reclaim.
    fn protected_cache(&self, c: CgroupId) -> u64 {
        let g = &self.cgroups[c.0 as usize];
        let lru = g.subtree.file_lru();
        lru - lru.min(g.usage.saturating_sub(g.limits.min))
    }

    /// What SGLang's `available_host_memory_bytes` would read now from inside `cg`:
    /// psutil's available and the cgroupfs files from `cg` up to the mount root.
    pub fn snapshot(&self, cg: CgroupId) -> HostMemoryView {
        let mut view = HostMemoryView {
            psutil_available: 0,
            cgroup: CgroupRead::NoProcfs,
        };
        self.snapshot_into(cg, &mut view);
        view
    }

    /// [`snapshot`](Self::snapshot) written over `view` (the start-up Monte Carlo keeps
    /// one per run: a view holds the whole chain inline, so building it afresh and
    /// returning it copies a kilobyte per sample).
    pub fn snapshot_into(&self, cg: CgroupId, view: &mut HostMemoryView) {
        view.psutil_available = self.psutil_available();
        if !self.cgroupfs_mounted {
            view.cgroup = CgroupRead::NotFound;
            return;
        }
        if !matches!(view.cgroup, CgroupRead::Found(_)) {
            view.cgroup = CgroupRead::Found(CgroupChain::empty(self.version));
        }
        let CgroupRead::Found(chain) = &mut view.cgroup else {
            return;
        };
        chain.clear(self.version);
        // Whether any cgroup has a `memory.min` (v2) at all (non-zero or unreadable): if
        // none, no level has a protected descendant and the per-level scan is skipped.
        let any_min = self.version == CgroupVersion::V2
            && self
                .cgroups
                .iter()
                .any(|g| g.limits.min != 0 || g.min_unreadable || g.protected_inside);
        let mut below: Option<CgroupId> = None;
        let mut cur = Some(cg);
        while let Some(x) = cur {
            let g = &self.cgroups[x.0 as usize];
            let (max, high, min) = match self.version {
                CgroupVersion::V2 => (g.limits.max, g.limits.high, g.limits.min),
                CgroupVersion::V1 => (Some(g.limits.max.unwrap_or(V1_UNLIMITED)), None, 0),
            };
            let protected_sibling_cache = g
                .children
                .iter()
                .filter(|&&s| Some(s) != below)
                .map(|&s| self.protected_cache(s))
                .sum();
            let protected_descendants = any_min
                && (0..self.cgroups.len()).any(|i| {
                    let c = CgroupId(i as u32);
                    let g = &self.cgroups[i];
                    let protects =
                        g.protected_inside || (c != x && (g.limits.min != 0 || g.min_unreadable));
                    protects && self.is_in_subtree(c, x)
                });
            chain.push(CgroupLevel {
                cgroup: Some(x),
                max,
                high,
                usage: Some(g.usage),
                stat: Some(g.subtree.stat()),
                min,
                protected_sibling_cache,
                protected_descendants,
            });
            below = Some(x);
            cur = g.parent;
        }
    }
}
