//! SGLang versions as policies: each [`SglangVersion`] resolves to a complete [`Rules`]
//! value (data, not code), whose fields are enums with stable snake_case ids.

use std::fmt;

use serde::{Deserialize, Serialize};

pub use super::prefetch::PrefetchCapRule;

/// The PR-era sizing rule sets ("what-ifs"; releases are [`crate::release::Release`]).
/// Ids are stable: they appear in CSVs, scenarios and `--sglang`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SglangVersion {
    /// Before #28614 (main ≤ 2026-06-26, "V0").
    #[serde(rename = "pre-28614")]
    Pre28614,
    /// #28614 "remove large host mem constraint" (2026-06-26, "V1").
    #[serde(rename = "pr28614")]
    Pr28614,
    /// #35540 per-rank split of a live psutil reading (2026-08-19, "V2").
    #[serde(rename = "pr35540")]
    Pr35540,
    /// #40135 cgroup-aware auto-size (2026-09-19, "V3").
    #[serde(rename = "pr40135")]
    Pr40135,
    /// Downstream one-line layer of #38157 on v0.5.21: explicit sizes checked against the
    /// whole remaining headroom. Not upstream.
    #[serde(rename = "pr40135-whole-headroom")]
    Pr40135WholeHeadroom,
    /// #41181 / #42039 / #42420 era: cgroup usage net of active+inactive file cache.
    #[serde(rename = "page-cache-credit")]
    PageCacheCredit,
    /// Same era, only clean file cache credited (dirty and writeback stay charged).
    #[serde(rename = "page-cache-credit-clean")]
    PageCacheCreditClean,
    /// A proposal (in no release up to 0.5.23): explicit sizes take one snapshot per
    /// rank, world MIN all-reduce, then booking.
    #[serde(rename = "explicit-snapshot")]
    ExplicitSnapshot,
    /// "V5", a proposal (in no release up to 0.5.23; 0.5.23's `enable_hierarchical_cache`
    /// is a plain `bool = False`): HiCache on by default, ratio min(8, …), off below 1.5,
    /// halving on pin failure.
    #[serde(rename = "auto-hicache")]
    AutoHicache,
}

/// An unknown `--sglang` id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown SGLang version `{given}`{hint}: expected one of {}", SglangVersion::ALL.iter().map(|v| v.id()).collect::<Vec<_>>().join(", "))]
pub struct UnknownVersion {
    pub given: String,
    hint: String,
}

impl SglangVersion {
    pub const ALL: [SglangVersion; 9] = [
        SglangVersion::Pre28614,
        SglangVersion::Pr28614,
        SglangVersion::Pr35540,
        SglangVersion::Pr40135,
        SglangVersion::Pr40135WholeHeadroom,
        SglangVersion::PageCacheCredit,
        SglangVersion::PageCacheCreditClean,
        SglangVersion::ExplicitSnapshot,
        SglangVersion::AutoHicache,
    ];

    pub fn id(self) -> &'static str {
        match self {
            SglangVersion::Pre28614 => "pre-28614",
            SglangVersion::Pr28614 => "pr28614",
            SglangVersion::Pr35540 => "pr35540",
            SglangVersion::Pr40135 => "pr40135",
            SglangVersion::Pr40135WholeHeadroom => "pr40135-whole-headroom",
            SglangVersion::PageCacheCredit => "page-cache-credit",
            SglangVersion::PageCacheCreditClean => "page-cache-credit-clean",
            SglangVersion::ExplicitSnapshot => "explicit-snapshot",
            SglangVersion::AutoHicache => "auto-hicache",
        }
    }

    /// Parses an id or an alias (`v0`…`v5`, merge dates, `#40135`). Releases and
    /// `latest` are parsed by [`crate::release::Sglang::from_id`].
    pub fn from_id(s: &str) -> Result<SglangVersion, UnknownVersion> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.trim_start_matches('#');
        if let Some(v) = Self::ALL.iter().find(|v| v.id() == t) {
            return Ok(*v);
        }
        let v = match t {
            "v0" | "pre28614" | "2026-06" => SglangVersion::Pre28614,
            "v1" | "28614" | "2026-06-26" | "2026-07-20" => SglangVersion::Pr28614,
            "v2" | "35540" | "2026-08-19" => SglangVersion::Pr35540,
            "v3" | "40135" | "2026-09-19" => SglangVersion::Pr40135,
            "v0.5.21-whole-headroom" | "whole-headroom" => SglangVersion::Pr40135WholeHeadroom,
            "41181" | "42039" | "42420" | "variant-c" => SglangVersion::PageCacheCredit,
            "variant-d" => SglangVersion::PageCacheCreditClean,
            "variant-e" | "snapshot" => SglangVersion::ExplicitSnapshot,
            "v5" | "auto" => SglangVersion::AutoHicache,
            _ => {
                let hint = crate::error::nearest(t, Self::ALL.iter().map(|v| v.id()))
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                return Err(UnknownVersion {
                    given: s.to_string(),
                    hint,
                });
            }
        };
        Ok(v)
    }

    /// One line for `hicache-sim versions`.
    pub fn summary(self) -> &'static str {
        match self {
            SglangVersion::Pre28614 => {
                "before #28614: psutil available - 10 GiB, live per pool, not split by ranks; host pool must exceed device pool"
            }
            SglangVersion::Pr28614 => {
                "#28614: as before, host <= device only warns; prefetch cap 0.5 x host"
            }
            SglangVersion::Pr35540 => {
                "#35540: (psutil available - 10 GiB) // ranks_per_host, sampled live by each pool (the startup race)"
            }
            SglangVersion::Pr40135 => {
                "#40135: min(psutil, cgroup headroom with page cache counted as used); explicit sizes live // ranks; else auto-size"
            }
            SglangVersion::Pr40135WholeHeadroom => {
                "#40135 + downstream #38157 layer: explicit sizes checked against max(0, available - 10 GiB), not // ranks"
            }
            SglangVersion::PageCacheCredit => {
                "page-cache credit: cgroup usage minus active+inactive file cache (shmem stays charged); explicit live // ranks"
            }
            SglangVersion::PageCacheCreditClean => {
                "page-cache credit, clean only: dirty and writeback pages stay charged; explicit live // ranks"
            }
            SglangVersion::ExplicitSnapshot => {
                "proposal (in no release up to 0.5.23): page-cache credit (memory.min-protected sibling cache charged); explicit sizes snapshot + world MIN + booking, so no start-up race"
            }
            SglangVersion::AutoHicache => {
                "proposal (in no release up to 0.5.23): HiCache on by default, ratio min(8, 0.95 x budget / device bytes), off below 1.5, halved on pin failure"
            }
        }
    }

    /// The complete rule set of this version.
    pub fn rules(self) -> Rules {
        use SglangVersion as V;
        let psutil = Rules {
            available: AvailableReading::PsutilOnly,
            allow_cgroup_fallback: false,
            budget_split: BudgetSplit::Whole,
            explicit_path: ExplicitPath::LivePerPool,
            auto_size: AutoSizeRule::None,
            small_host: SmallHostRule::Warn,
            prefetch_cap: PrefetchCapRule::HalfHost,
        };
        let v3 = Rules {
            available: AvailableReading::CgroupMin(HeadroomVariant::Raw),
            budget_split: BudgetSplit::PerRank,
            auto_size: AutoSizeRule::Pr40135,
            ..psutil
        };
        match self {
            V::Pre28614 => Rules {
                small_host: SmallHostRule::AssertLarger,
                prefetch_cap: PrefetchCapRule::ExcessOverDevice,
                ..psutil
            },
            V::Pr28614 => psutil,
            V::Pr35540 => Rules {
                budget_split: BudgetSplit::PerRank,
                ..psutil
            },
            V::Pr40135 => v3,
            V::Pr40135WholeHeadroom => Rules {
                explicit_path: ExplicitPath::LiveWholeHeadroom,
                ..v3
            },
            V::PageCacheCredit => Rules {
                available: AvailableReading::CgroupMin(HeadroomVariant::ActiveInactiveCredit),
                allow_cgroup_fallback: true,
                ..v3
            },
            V::PageCacheCreditClean => Rules {
                available: AvailableReading::CgroupMin(HeadroomVariant::CleanCredit),
                ..v3
            },
            V::ExplicitSnapshot => Rules {
                available: AvailableReading::CgroupMin(HeadroomVariant::ProtectedSibling),
                allow_cgroup_fallback: true,
                explicit_path: ExplicitPath::SnapshotMinAllReduce,
                ..v3
            },
            // Choice (no one SGLang source settles it): page-cache credit with the
            // cgroup fallback, as the newest tests expect (`test_host_memory.py` @
            // 2b484a51); explicit sizes checked *live* per pool, as the V5 code says
            // (`hicache_auto.py: _budget_scope`: "An explicit --hicache-ratio/--hicache-size
            // has no snapshot: each pool checks live host memory, as it does without auto
            // mode"; `pool_host/base.py` @ 6e47bc52 has no explicit snapshot). Pick
            // `explicit-snapshot` for the snapshot behaviour.
            V::AutoHicache => Rules {
                available: AvailableReading::CgroupMin(HeadroomVariant::ProtectedSibling),
                allow_cgroup_fallback: true,
                explicit_path: ExplicitPath::LivePerPool,
                auto_size: AutoSizeRule::AutoHicache,
                ..v3
            },
        }
    }
}

impl fmt::Display for SglangVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl std::str::FromStr for SglangVersion {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_id(s)
    }
}

/// Everything a version decides about host-pool sizing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rules {
    /// What `available` is.
    pub available: AvailableReading,
    /// `allow_cgroup_fallback` passed to `available_host_memory_bytes` on the
    /// explicit-size path: an unreadable cgroup falls back to psutil (with a warning)
    /// instead of raising "…set --hicache-size explicitly…". Auto-size reads never fall
    /// back (V5 `hicache_auto.py: _local_size` turns the error into "the host memory
    /// limit cannot be read"). [I] which callers pass `True` is inferred from that error
    /// text; only variants C and E have the parameter.
    pub allow_cgroup_fallback: bool,
    /// Whether the budget is divided by `ranks_per_host`.
    pub budget_split: BudgetSplit,
    /// How pools sized by an explicit `--hicache-size` / `--hicache-ratio` are checked.
    pub explicit_path: ExplicitPath,
    /// What happens when neither is given.
    pub auto_size: AutoSizeRule,
    /// Host pool not larger than the device pool.
    pub small_host: SmallHostRule,
    /// The runtime's L3 prefetch capacity limit.
    #[serde(
        serialize_with = "PrefetchCapRule::serialize_id",
        deserialize_with = "PrefetchCapRule::deserialize_id"
    )]
    pub prefetch_cap: PrefetchCapRule,
}

/// Where `available` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AvailableReading {
    /// `psutil.virtual_memory().available` (`pool_host/base.py`, V0–V2).
    PsutilOnly,
    /// `min(psutil available, cgroup headroom)` (`mem_cache/host_memory.py:
    /// available_host_memory_bytes`, V3+), with a headroom variant.
    CgroupMin(HeadroomVariant),
}

/// How cgroup usage is turned into headroom (`mem_cache/host_memory.py:
/// _cgroup_memory_headroom`, in the variants SGLang shipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadroomVariant {
    /// A (upstream `6517b724`, sglang PR 40135): raw `memory.current`, page cache counted as used.
    Raw,
    /// B (`MindLab-Research/sglang@650b1d51`): `usage - total_inactive_file`; the key only
    /// exists on v1, so on v2 no credit applies.
    InactiveV1Only,
    /// C: `max(0, usage - (active_file + inactive_file))` (v1: `total_*`); a missing
    /// `memory.stat` raises.
    ActiveInactiveCredit,
    /// D (upstream `049da31f`): `max(0, usage - max(0, file_lru - (dirty + writeback)))`;
    /// a missing `memory.stat` means raw usage.
    CleanCredit,
    /// E (inferred from `test_host_memory.py` @ `2b484a51`): as C, but page cache of
    /// sibling cgroups protected by `memory.min` stays charged; missing `memory.current`
    /// or `memory.stat` raises "set --hicache-size" unless fallback is allowed.
    ProtectedSibling,
    /// 0.5.22–0.5.23 `mem_cache/host_memory.py: _cgroup_memory_headroom`: as C (active +
    /// inactive file credited; v1 `total_*` keys), except that on cgroup v2 a level with
    /// page cache > 0 gets no credit at all when `_has_protected_descendants` (any
    /// descendant's `memory.min` non-zero or unreadable). A missing `memory.current` /
    /// `memory.stat` raises (`OSError`), caught by `available_host_memory_bytes`.
    ProtectedDescendants,
}

impl HeadroomVariant {
    pub fn id(self) -> &'static str {
        match self {
            HeadroomVariant::Raw => "raw",
            HeadroomVariant::InactiveV1Only => "inactive_v1_only",
            HeadroomVariant::ActiveInactiveCredit => "active_inactive_credit",
            HeadroomVariant::CleanCredit => "clean_credit",
            HeadroomVariant::ProtectedSibling => "protected_sibling",
            HeadroomVariant::ProtectedDescendants => "protected_descendants",
        }
    }
}

/// Whether the budget is split among the ranks of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetSplit {
    /// `available - 10 GiB` (V0, V1).
    Whole,
    /// `(available - 10 GiB) // ranks_per_host` (`pool_host/base.py:
    /// host_memory_budget_bytes`, #35540+).
    PerRank,
}

/// How a pool with an explicit size is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExplicitPath {
    /// Each pool constructor samples `available` live and checks against the budget
    /// (`pool_host/base.py: HostKVCache.__init__`, V0–V3).
    LivePerPool,
    /// Each pool samples live and checks against `max(0, available - 10 GiB)` (the
    /// downstream #38157 layer on v0.5.21).
    LiveWholeHeadroom,
    /// One snapshot `(available - 10 GiB) // ranks` per rank, world MIN all-reduce
    /// (int64), then every pool books against it (`explicit_host_memory_budget`).
    SnapshotMinAllReduce,
}

/// Auto-sizing when neither `--hicache-ratio` nor `--hicache-size` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoSizeRule {
    /// Default ratio 2.0 (1.2 buffer-only), checked like an explicit size.
    None,
    /// `mem_cache/hicache_auto_size.py: auto_size_hicache` (sglang PR 40135).
    Pr40135,
    /// `mem_cache/hicache_auto.py` (V5).
    AutoHicache,
}

/// Host pool at or below the device pool size (`pool_host/base.py: HostKVCache.__init__`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmallHostRule {
    /// V0: `assert self.size > device_pool.size`.
    AssertLarger,
    /// #28614+: a warning only.
    Warn,
}
