//! The per-rank budget, the admission guard with its exact refusal text, and the booking
//! scope (`mem_cache/pool_host/base.py`).

use serde::Serialize;

use super::host_memory::{
    HostMemoryError, available_given_headroom, available_host_memory_bytes, cgroup_memory_headroom,
};
use super::pyops::py_floordiv;
use super::version::{AvailableReading, BudgetSplit, ExplicitPath, Rules};
use crate::hardware::HostMemoryView;
use crate::units::fmt_gb;

/// `HICACHE_HOST_MEMORY_RESERVE_BYTES = 10 * 1024**3` (`pool_host/base.py`, all versions).
pub const HICACHE_HOST_MEMORY_RESERVE_BYTES: i128 = 10 * (1 << 30);

/// `pool_host/base.py: ranks_per_host` (#35540+): 1 when the world has one rank (or
/// torch.distributed is not initialised), else `max(world_size // nnodes, 1)`. V5 uses
/// `launch_world_size`; pass that as `world_size`.
pub fn ranks_per_host(world_size: u64, nnodes: u64) -> u64 {
    if world_size <= 1 {
        1
    } else {
        (world_size / nnodes.max(1)).max(1)
    }
}

/// `host_memory_budget_bytes()` outside a scope: `available - 10 GiB` (V0/V1, `Whole`)
/// or `(available - 10 GiB) // ranks_per_host` (#35540+, `PerRank`), Python floor
/// division, so it can be negative (and prints as `-0.50`).
pub fn host_memory_budget_bytes(available: i128, ranks_per_host: u64, split: BudgetSplit) -> i128 {
    let rest = available - HICACHE_HOST_MEMORY_RESERVE_BYTES;
    match split {
        BudgetSplit::Whole => rest,
        BudgetSplit::PerRank => py_floordiv(rest, ranks_per_host.max(1) as i128),
    }
}

/// The downstream whole-headroom layer (#38157 on v0.5.21): `max(0, available - 10 GiB)`.
pub fn whole_headroom_budget(available: i128) -> i128 {
    (available - HICACHE_HOST_MEMORY_RESERVE_BYTES).max(0)
}

/// `explicit_host_memory_budget`: the world MIN all-reduce (int64) of every rank's
/// snapshot `(available - 10 GiB) // ranks`. Empty input → `None`.
pub fn explicit_snapshot_budget(snapshots: &[i128]) -> Option<i128> {
    snapshots.iter().copied().min()
}

/// The refusal text, GB = 1e9, two decimals, sign kept: the same words in every release
/// 0.5.14–0.5.23 (`pool_host/base.py: HostKVCache.__init__`, `_allocate_host_buffer` from
/// 0.5.22; `MambaPoolHost.__init__` in `memory_pool_host.py`, `pool_host/mamba.py` from
/// 0.5.18), so it is no release rule.
pub fn refusal_message(requested: u64, budget: i128) -> String {
    format!(
        "Not enough host memory available. Requesting {} GB but only have {} GB free. Please reduce the size of the hierarchical cache.",
        fmt_gb(requested as i128),
        fmt_gb(budget)
    )
}

/// The DSA indexer host pool's own refusal text (no "Please reduce…" sentence), the same
/// in every release 0.5.14–0.5.23 (`memory_pool_host.py: DSAIndexerPoolHost.__init__`,
/// `pool_host/dsa.py` from 0.5.19); [`refusal_message`] is the KV pools' text.
pub fn indexer_refusal_message(requested: u64, budget: i128) -> String {
    format!(
        "Not enough host memory for DSA indexer hierarchical cache. Requesting {} GB but only have {} GB free.",
        fmt_gb(requested as i128),
        fmt_gb(budget)
    )
}

/// The refusal text for a pool named as in `model::PoolGeometry::name`:
/// the indexer's own text for `"indexer"`, the common one otherwise.
pub fn refusal_message_for(pool: &str, requested: u64, budget: i128) -> String {
    if pool == "indexer" {
        indexer_refusal_message(requested, budget)
    } else {
        refusal_message(requested, budget)
    }
}

/// A refused pool: what was requested and the figure it was checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}", refusal_message(*requested, *budget))]
pub struct Refusal {
    pub requested: u64,
    pub budget: i128,
}

/// The guard: `if requested_bytes > budget: raise ValueError(...)`.
pub fn guard(requested: u64, budget: i128) -> Result<(), Refusal> {
    if (requested as i128) > budget {
        Err(Refusal { requested, budget })
    } else {
        Ok(())
    }
}

/// `host_memory_budget_scope(budget)` (#40135+): inside it, `host_memory_budget_bytes
/// (requested)` returns the current allowance and, if `requested <= allowance`, books it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BudgetScope {
    allowance: i128,
}

impl BudgetScope {
    pub fn new(budget: i128) -> Self {
        Self { allowance: budget }
    }

    /// Books `requested` if it fits; otherwise `Err(allowance)`, the figure the refusal
    /// message prints (nothing booked).
    pub fn book(&mut self, requested: u64) -> Result<(), i128> {
        let r = requested as i128;
        if r <= self.allowance {
            self.allowance -= r;
            Ok(())
        } else {
            Err(self.allowance)
        }
    }

    /// As [`book`](Self::book), with the refusal ready to print.
    pub fn admit(&mut self, requested: u64) -> Result<(), Refusal> {
        self.book(requested)
            .map_err(|budget| Refusal { requested, budget })
    }

    pub fn remaining(&self) -> i128 {
        self.allowance
    }
}

impl Rules {
    /// `available_host_memory_bytes()` (or psutil's available) as this version reads it
    /// for an explicitly sized pool (with the version's cgroup fallback).
    pub fn available(&self, view: &HostMemoryView) -> Result<i128, HostMemoryError> {
        available_host_memory_bytes(view, self.available, self.allow_cgroup_fallback)
    }

    /// The same reading for auto-sizing: never falls back to psutil.
    pub fn available_auto(&self, view: &HostMemoryView) -> Result<i128, HostMemoryError> {
        available_host_memory_bytes(view, self.available, false)
    }

    /// `host_memory_budget_bytes()` outside any scope, as auto-size reads it: the rank's
    /// share `(available - 10 GiB) [// ranks_per_host]`, without cgroup fallback. The
    /// #40135 / V5 auto-size multiply it by the fraction.
    pub fn per_rank_share(
        &self,
        view: &HostMemoryView,
        ranks_per_host: u64,
    ) -> Result<i128, HostMemoryError> {
        Ok(self.per_rank_share_of(self.available_auto(view)?, ranks_per_host))
    }

    /// [`per_rank_share`](Self::per_rank_share) of an `available` already read.
    pub fn per_rank_share_of(&self, available: i128, ranks_per_host: u64) -> i128 {
        host_memory_budget_bytes(available, ranks_per_host, self.budget_split)
    }

    /// The figure an explicitly sized pool is checked against when it samples `view`:
    /// the live per-rank share (`LivePerPool`), `max(0, available - 10 GiB)`
    /// (`LiveWholeHeadroom`), or this rank's snapshot before the MIN all-reduce
    /// (`SnapshotMinAllReduce`; the caller all-reduces and opens a [`BudgetScope`]).
    pub fn explicit_budget(
        &self,
        view: &HostMemoryView,
        ranks_per_host: u64,
    ) -> Result<i128, HostMemoryError> {
        Ok(self.explicit_budget_of(self.available(view)?, ranks_per_host))
    }

    /// [`explicit_budget`](Self::explicit_budget) of an `available` already read.
    pub fn explicit_budget_of(&self, available: i128, ranks_per_host: u64) -> i128 {
        match self.explicit_path {
            ExplicitPath::LivePerPool | ExplicitPath::SnapshotMinAllReduce => {
                host_memory_budget_bytes(available, ranks_per_host, self.budget_split)
            }
            ExplicitPath::LiveWholeHeadroom => whole_headroom_budget(available),
        }
    }

    /// One read of host memory as a sizing step makes it: the cgroup headroom (read
    /// once: SGLang's 0.5.21+ log line prints it, and `available` is bounded by it) and
    /// `available` as [`available`](Self::available) (`explicit`) or
    /// [`available_auto`](Self::available_auto) read it. Equal to calling those, with
    /// one headroom walk instead of several.
    pub fn read_available(&self, view: &HostMemoryView, explicit: bool) -> AvailableRead {
        match self.available {
            AvailableReading::PsutilOnly => AvailableRead {
                headroom: None,
                available: Ok(view.psutil_available as i128),
            },
            AvailableReading::CgroupMin(variant) => {
                let h = cgroup_memory_headroom(view, variant);
                AvailableRead {
                    headroom: h.as_ref().ok().copied().flatten(),
                    available: available_given_headroom(
                        view.psutil_available,
                        h,
                        variant,
                        explicit && self.allow_cgroup_fallback,
                    ),
                }
            }
        }
    }
}

/// What [`Rules::read_available`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvailableRead {
    /// The cgroup headroom when a cgroup limit bounds and was readable.
    pub headroom: Option<u64>,
    /// `available_host_memory_bytes()` (or psutil's available).
    pub available: Result<i128, HostMemoryError>,
}
