//! `mem_cache/host_memory.py: available_host_memory_bytes` and its cgroup headroom walk,
//! in the variants SGLang shipped (#40135 era onwards; `_cgroup_memory_headroom`).

use crate::hardware::{CgroupId, CgroupLevel, CgroupRead, CgroupVersion, HostMemoryView};

use super::version::{AvailableReading, HeadroomVariant};

/// Why the cgroup could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostMemoryError {
    /// Variants A/B: memberships exist but no cgroupfs directory was resolved.
    #[error("Cannot locate the process memory cgroup in mounted cgroup filesystems")]
    CgroupNotFound,
    /// Variants A/B: a usage file is missing for a known limit (raises on purpose).
    #[error("{file} is missing in a memory cgroup with a known limit (level {level})")]
    MissingFile {
        file: &'static str,
        level: usize,
        cgroup: Option<CgroupId>,
    },
    /// Variants C/D/E: any failure to read the cgroup, without the fallback.
    #[error(
        "Cannot automatically size HiCache host memory; set --hicache-size explicitly (GB per rank), leaving room for other memory use within the container limit. ({reason})"
    )]
    Unreadable { reason: &'static str },
}

fn usage_file(v: CgroupVersion) -> &'static str {
    match v {
        CgroupVersion::V2 => "memory.current",
        CgroupVersion::V1 => "memory.usage_in_bytes",
    }
}

/// Whether a variant reports read failures with the newer "set --hicache-size" text
/// and has the `allow_cgroup_fallback` parameter: C and E. A, B and D (upstream
/// `049da31f`: `available_host_memory_bytes()` takes no argument) raise
/// "Cannot locate the process memory cgroup…" / `FileNotFoundError` instead.
fn newer(variant: HeadroomVariant) -> bool {
    matches!(
        variant,
        HeadroomVariant::ActiveInactiveCredit
            | HeadroomVariant::ProtectedSibling
            | HeadroomVariant::ProtectedDescendants
    )
}

/// Usage of one level as the variant counts it.
fn effective_usage(
    variant: HeadroomVariant,
    version: CgroupVersion,
    level: &CgroupLevel,
    usage: u64,
) -> Result<u64, HostMemoryError> {
    let need_stat = || {
        level.stat.ok_or(HostMemoryError::Unreadable {
            reason: "memory.stat is missing for a known limit",
        })
    };
    Ok(match variant {
        HeadroomVariant::Raw => usage,
        HeadroomVariant::InactiveV1Only => match (version, level.stat) {
            (CgroupVersion::V1, Some(s)) => usage.saturating_sub(s.inactive_file),
            _ => usage,
        },
        HeadroomVariant::ActiveInactiveCredit => {
            let s = need_stat()?;
            usage.saturating_sub(s.active_file + s.inactive_file)
        }
        HeadroomVariant::CleanCredit => match level.stat {
            None => usage,
            Some(s) => {
                let lru = s.active_file + s.inactive_file;
                usage.saturating_sub(lru.saturating_sub(s.file_dirty + s.file_writeback))
            }
        },
        HeadroomVariant::ProtectedSibling => {
            let s = need_stat()?;
            let credit =
                (s.active_file + s.inactive_file).saturating_sub(level.protected_sibling_cache);
            usage.saturating_sub(credit)
        }
        HeadroomVariant::ProtectedDescendants => {
            let s = need_stat()?;
            let page_cache = s.active_file + s.inactive_file;
            let credit =
                if version == CgroupVersion::V2 && page_cache > 0 && level.protected_descendants {
                    0
                } else {
                    page_cache
                };
            usage.saturating_sub(credit)
        }
    })
}

/// `_cgroup_memory_headroom`: the minimum over the job's cgroup and every ancestor up to
/// and including the mount root of `max(0, limit - usage_eff)`, for each limit that is
/// set (v2 `memory.max` and `memory.high`; v1 `memory.limit_in_bytes`, where the
/// `2^63 - 4096` "unlimited" sentinel is compared as a number, as 0.5.21–0.5.23 do: it
/// never binds against psutil, but it makes SGLang read that level's usage files).
/// `Ok(None)`: no limit anywhere, or no procfs.
///
/// Hot in the start-up Monte Carlo (once per sample): levels are walked by reference
/// and errors are built only when raised.
pub fn cgroup_memory_headroom(
    view: &HostMemoryView,
    variant: HeadroomVariant,
) -> Result<Option<u64>, HostMemoryError> {
    let chain = match &view.cgroup {
        CgroupRead::NoProcfs => return Ok(None),
        CgroupRead::NotFound => {
            return Err(if newer(variant) {
                HostMemoryError::Unreadable {
                    reason: "no mounted cgroup filesystem holds this process's memory cgroup",
                }
            } else {
                HostMemoryError::CgroupNotFound
            });
        }
        CgroupRead::Found(c) => c,
    };
    let version = chain.version;
    let mut headroom: Option<u64> = None;
    for (i, level) in chain.levels().iter().enumerate() {
        // v1 has no `memory.high`.
        let high = match version {
            CgroupVersion::V2 => level.high,
            CgroupVersion::V1 => None,
        };
        let limit = match (level.max, high) {
            (None, None) => continue,
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
        };
        // Both limits of a level are checked against the same usage: the smaller one
        // binds (`max(0, a - u)` is monotone in `a`), and a missing file raises for
        // either.
        let Some(usage) = level.usage else {
            return Err(if newer(variant) {
                HostMemoryError::Unreadable {
                    reason: "memory.current is missing for a known limit",
                }
            } else {
                HostMemoryError::MissingFile {
                    file: usage_file(version),
                    level: i,
                    cgroup: level.cgroup,
                }
            });
        };
        let eff = effective_usage(variant, version, level, usage)?;
        let remaining = limit.saturating_sub(eff);
        headroom = Some(match headroom {
            Some(h) => h.min(remaining),
            None => remaining,
        });
    }
    Ok(headroom)
}

/// `available_host_memory_bytes(*, allow_cgroup_fallback)`: psutil's available, bounded
/// by the cgroup headroom when the reading is [`AvailableReading::CgroupMin`].
///
/// With `allow_cgroup_fallback` (variants C and E; A, B and D have no such parameter and
/// always raise) an unreadable cgroup gives psutil's value (SGLang logs a warning).
pub fn available_host_memory_bytes(
    view: &HostMemoryView,
    reading: AvailableReading,
    allow_cgroup_fallback: bool,
) -> Result<i128, HostMemoryError> {
    let variant = match reading {
        AvailableReading::PsutilOnly => return Ok(view.psutil_available as i128),
        AvailableReading::CgroupMin(v) => v,
    };
    available_given_headroom(
        view.psutil_available,
        cgroup_memory_headroom(view, variant),
        variant,
        allow_cgroup_fallback,
    )
}

/// The tail of [`available_host_memory_bytes`] for a headroom already read with
/// [`cgroup_memory_headroom`] (the start-up simulator reads it once per sample and also
/// logs it): `min(psutil, headroom)`, psutil alone when no cgroup bounds, and the
/// variant's fallback on a read error.
pub fn available_given_headroom(
    psutil_available: u64,
    headroom: Result<Option<u64>, HostMemoryError>,
    variant: HeadroomVariant,
    allow_cgroup_fallback: bool,
) -> Result<i128, HostMemoryError> {
    let host = psutil_available as i128;
    match headroom {
        Ok(None) => Ok(host),
        Ok(Some(h)) => Ok(host.min(h as i128)),
        Err(_) if allow_cgroup_fallback && newer(variant) => Ok(host),
        Err(e) => Err(e),
    }
}
