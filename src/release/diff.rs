//! The simulator's side of the differential test against SGLang's own sizing code
//! (`tests/sglang_diff/`): a memory state described as the files SGLang reads (a cgroup
//! tree with `memory.max` / `high` / `min` / `current` / `stat` per directory, psutil's
//! `available`, and whether procfs / the mount exist), turned into the
//! [`HostMemoryView`] the sizing rules read, and the figures SGLang's functions return:
//! `_cgroup_memory_headroom`, `available_host_memory_bytes` with and without the cgroup
//! fallback, `host_memory_budget_bytes(auto_size=True)`, and host pools built against
//! the live budget (`HostKVCache.__init__`: tokens, bytes, budget, refusal text).
//!
//! The harness writes the same state as real files on disk and runs the wheel's code on
//! them; every field printed here is compared exactly.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Sglang;
use crate::hardware::{
    CgroupChain, CgroupLevel, CgroupRead, CgroupVersion, HostMemoryView, MemStat,
};
use crate::sizing::{
    self, AvailableReading, HostMemoryError, HostPoolSizeArg, cgroup_memory_headroom,
};

/// A cgroupfs file: a number, the literal `max`, missing, or unreadable (an I/O error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FileValue {
    Int(u64),
    Word(String),
}

/// Counters of `memory.stat` (hierarchical; v1 writes them as `total_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct StatState {
    pub anon: u64,
    pub shmem: u64,
    pub active_file: u64,
    pub inactive_file: u64,
    pub file_dirty: u64,
    pub file_writeback: u64,
}

/// One cgroup directory, by its path relative to the mount (`""` = the mount root,
/// `task/engine`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupState {
    pub path: String,
    /// v2 `memory.max` / v1 `memory.limit_in_bytes`: an int, `"max"`, `"missing"`.
    pub max: FileValue,
    /// v2 `memory.high` (ignored on v1).
    pub high: FileValue,
    /// v2 `memory.min`: an int, `"missing"`, `"unreadable"`.
    pub min: FileValue,
    /// `memory.current` / `memory.usage_in_bytes`: an int, `"missing"`, `"unreadable"`.
    pub current: FileValue,
    /// `memory.stat`, or missing / unreadable (`None` + `stat_file`).
    pub stat: Option<StatState>,
    /// `"ok"`, `"missing"` or `"unreadable"`.
    #[serde(default = "ok")]
    pub stat_file: String,
}

fn ok() -> String {
    "ok".into()
}

/// One host pool to build (`HostKVCache.__init__`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PoolRequest {
    pub device_tokens: u64,
    pub size_per_token: u64,
    pub page_size: u64,
    /// `--hicache-size` in GB (0 = use the ratio).
    pub host_size: f64,
    pub ratio: f64,
}

/// `hicache_auto_size.py: auto_size_hicache` inputs: `--hicache-host-memory-fraction`,
/// the default ratio it may lower, and the device bytes of the host-mirrored pools.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoSizeRequest {
    pub fraction: f64,
    pub ratio: f64,
    pub device_bytes: u64,
}

/// A memory state as SGLang's functions read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryState {
    pub id: String,
    /// `v1` or `v2`.
    pub cgroup_version: String,
    pub psutil_available: u64,
    /// `/proc/self/cgroup` and `/proc/self/mountinfo` exist.
    pub procfs: bool,
    /// The memory cgroupfs is listed in mountinfo.
    pub mounted: bool,
    /// The process's cgroup (relative to the mount root); its directory may be absent.
    pub engine: String,
    pub cgroups: Vec<CgroupState>,
    pub ranks_per_host: u64,
    pub pools: Vec<PoolRequest>,
    pub auto: AutoSizeRequest,
}

/// A failure, by the Python exception's category.
fn err_name(e: &HostMemoryError) -> &'static str {
    match e {
        HostMemoryError::CgroupNotFound => "runtime_error",
        HostMemoryError::MissingFile { .. } => "os_error",
        HostMemoryError::Unreadable { reason } if reason.starts_with("no mounted") => {
            "runtime_error"
        }
        HostMemoryError::Unreadable { .. } => "os_error",
    }
}

fn parent(path: &str) -> Option<String> {
    if path.is_empty() {
        None
    } else {
        Some(
            path.rsplit_once('/')
                .map_or(String::new(), |(p, _)| p.to_string()),
        )
    }
}

fn is_below(child: &str, top: &str) -> bool {
    child != top && (top.is_empty() || child.starts_with(&format!("{top}/")))
}

impl MemoryState {
    fn version(&self) -> CgroupVersion {
        if self.cgroup_version == "v1" {
            CgroupVersion::V1
        } else {
            CgroupVersion::V2
        }
    }

    /// What `_cgroup_memory_headroom` reads: the levels from the engine's directory up
    /// to the mount root. `_has_protected_descendants` of a level: any directory below it
    /// whose `memory.min` is not 0 (missing and unreadable count as protected).
    pub fn view(&self) -> HostMemoryView {
        let psutil_available = self.psutil_available;
        if !self.procfs {
            return HostMemoryView {
                psutil_available,
                cgroup: CgroupRead::NoProcfs,
            };
        }
        let by_path: BTreeMap<&str, &CgroupState> =
            self.cgroups.iter().map(|c| (c.path.as_str(), c)).collect();
        if !self.mounted || !by_path.contains_key(self.engine.as_str()) {
            return HostMemoryView {
                psutil_available,
                cgroup: CgroupRead::NotFound,
            };
        }
        let version = self.version();
        let num = |f: &FileValue| match f {
            FileValue::Int(n) => Some(*n),
            FileValue::Word(_) => None,
        };
        let mut levels = Vec::new();
        let mut cur = Some(self.engine.clone());
        while let Some(p) = cur {
            if let Some(c) = by_path.get(p.as_str()) {
                let protected_descendants = self
                    .cgroups
                    .iter()
                    .any(|d| is_below(&d.path, &p) && !matches!(d.min, FileValue::Int(0)));
                levels.push(CgroupLevel {
                    cgroup: None,
                    max: num(&c.max),
                    high: match version {
                        CgroupVersion::V2 => num(&c.high),
                        CgroupVersion::V1 => None,
                    },
                    usage: num(&c.current),
                    stat: if c.stat_file == "ok" {
                        c.stat.map(|s| MemStat {
                            anon: s.anon,
                            file: s.active_file + s.inactive_file + s.shmem,
                            active_file: s.active_file,
                            inactive_file: s.inactive_file,
                            file_dirty: s.file_dirty,
                            file_writeback: s.file_writeback,
                            shmem: s.shmem,
                        })
                    } else {
                        None
                    },
                    min: num(&c.min).unwrap_or(0),
                    protected_sibling_cache: 0,
                    protected_descendants,
                });
            }
            cur = parent(&p);
        }
        HostMemoryView {
            psutil_available,
            cgroup: CgroupRead::Found(CgroupChain::from_levels(version, &levels)),
        }
    }
}

/// One pool's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolResult {
    pub tokens: u64,
    pub requested: u64,
    /// The figure checked, or `"error"`.
    pub budget: serde_json::Value,
    /// `ok`, `refused` or `error`.
    pub outcome: String,
    pub message: Option<String>,
}

/// One state's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateResult {
    pub id: String,
    /// `_cgroup_memory_headroom()`: an int, null, or the error category.
    pub headroom: serde_json::Value,
    /// `available_host_memory_bytes(allow_cgroup_fallback=True)` (0.5.21: no argument).
    pub available_fallback: serde_json::Value,
    /// `available_host_memory_bytes()` without fallback.
    pub available: serde_json::Value,
    /// `host_memory_budget_bytes(auto_size=True)`.
    pub auto_budget: serde_json::Value,
    pub pools: Vec<PoolResult>,
    /// `auto_size_hicache`: the fitted ratio, or `no_host_memory` (its `ValueError`), or
    /// `error` (the cgroup could not be read).
    pub auto_ratio: serde_json::Value,
    /// The budget of the booking scope it opens (`int(share * fraction)`).
    pub auto_scope_budget: serde_json::Value,
}

fn val<T: Into<serde_json::Value>>(r: Result<T, &'static str>) -> serde_json::Value {
    match r {
        Ok(v) => v.into(),
        Err(e) => e.into(),
    }
}

fn i(x: i128) -> serde_json::Value {
    serde_json::Value::from(x as i64)
}

/// The simulator's figures for `state` under `sglang`.
pub fn evaluate(state: &MemoryState, sglang: Sglang) -> StateResult {
    let rules = sglang.rules();
    let view = state.view();
    let variant = match rules.available {
        AvailableReading::CgroupMin(v) => Some(v),
        AvailableReading::PsutilOnly => None,
    };
    let headroom = match variant {
        None => serde_json::Value::Null,
        Some(v) => match cgroup_memory_headroom(&view, v) {
            Ok(h) => h.map_or(serde_json::Value::Null, serde_json::Value::from),
            Err(e) => err_name(&e).into(),
        },
    };
    let available_fallback = match rules.available(&view) {
        Ok(a) => i(a),
        Err(_) => "error".into(),
    };
    let available = match rules.available_auto(&view) {
        Ok(a) => i(a),
        Err(_) => "error".into(),
    };
    let auto_budget = val(rules
        .per_rank_share(&view, state.ranks_per_host)
        .map(|b| b as i64)
        .map_err(|_| "error"));
    let pools = state
        .pools
        .iter()
        .map(|p| {
            let arg = if p.host_size > 0.0 {
                HostPoolSizeArg::SizeGb(p.host_size)
            } else {
                HostPoolSizeArg::Ratio(p.ratio)
            };
            let size = sizing::host_pool_size(p.device_tokens, arg, p.page_size, p.size_per_token);
            match rules.explicit_budget(&view, state.ranks_per_host) {
                Err(_) => PoolResult {
                    tokens: size.tokens,
                    requested: size.requested_bytes,
                    budget: "error".into(),
                    outcome: "error".into(),
                    message: None,
                },
                Ok(b) => {
                    let refused = sizing::guard(size.requested_bytes, b).err();
                    PoolResult {
                        tokens: size.tokens,
                        requested: size.requested_bytes,
                        budget: i(b),
                        outcome: if refused.is_some() { "refused" } else { "ok" }.into(),
                        message: refused.map(|r| r.to_string()),
                    }
                }
            }
        })
        .collect();
    let (auto_ratio, auto_scope_budget) = match rules.per_rank_share(&view, state.ranks_per_host) {
        Err(_) => ("error".into(), "error".into()),
        Ok(share) => {
            let a = state.auto;
            let budget = sizing::auto_size_budget(share, a.fraction);
            let ratio = sizing::auto_size_ratio(a.ratio, budget, a.device_bytes);
            match sizing::check_auto_size_ratio(ratio) {
                Ok(r) => (serde_json::Value::from(r), i(budget)),
                Err(_) => ("no_host_memory".into(), "error".into()),
            }
        }
    };
    StateResult {
        id: state.id.clone(),
        headroom,
        available_fallback,
        available,
        auto_budget,
        pools,
        auto_ratio,
        auto_scope_budget,
    }
}

/// `hicache-sim debug-sizing`: reads states as JSON lines, prints one result line each.
/// A malformed line is an error naming its line number.
pub fn run_lines(input: &str, sglang: Sglang) -> Result<String, (usize, String)> {
    let mut out = String::new();
    for (n, line) in input.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let state: MemoryState = serde_json::from_str(line).map_err(|e| (n + 1, e.to_string()))?;
        out.push_str(&serde_json::to_string(&evaluate(&state, sglang)).expect("plain data"));
        out.push('\n');
    }
    Ok(out)
}
