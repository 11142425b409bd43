//! Resolution and validation of the HiCache server arguments
//! (`arg_groups/hicache_hook.py: handle_hicache_ratio_default`,
//! `validate_hicache_host_memory_mode`, the newest form).

use serde::{Deserialize, Serialize};

pub use crate::domain::HostMemoryMode;
use crate::domain::{Choice, ServerArgs, WritePolicy};

/// The HiCache flags that decide sizing, as the user gave them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HicacheArgs {
    /// `--hicache-ratio` (None = not given).
    pub ratio: Option<f64>,
    /// `--hicache-size` in GB (1e9) per rank per pool; 0 = not given.
    pub size_gb: f64,
    /// `--hicache-host-memory-fraction` (#40135+, default 0.8).
    pub fraction: Option<f64>,
    pub mode: HostMemoryMode,
    /// `--hicache-storage-backend` is set.
    pub storage_backend: bool,
    /// `--hicache-write-policy write_back`.
    pub write_back: bool,
    /// A PD-disaggregation decode server.
    pub is_decode: bool,
}

impl HicacheArgs {
    /// The flags of a server's arguments (not a PD decode server).
    pub fn of(s: &ServerArgs) -> HicacheArgs {
        HicacheArgs {
            ratio: s.hicache_ratio,
            size_gb: s.hicache_size,
            fraction: s.hicache_host_memory_fraction,
            mode: s.hicache_host_memory_mode,
            storage_backend: s.hicache_storage_backend.is_some(),
            write_back: s.hicache_write_policy == WritePolicy::WriteBack,
            is_decode: false,
        }
    }
}

impl Default for HicacheArgs {
    fn default() -> Self {
        Self {
            ratio: None,
            size_gb: 0.0,
            fraction: Some(0.8),
            mode: HostMemoryMode::Cache,
            storage_backend: false,
            write_back: false,
            is_decode: false,
        }
    }
}

/// Flags after resolution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedHicacheArgs {
    /// The ratio after defaulting (None on a decode server, which resolves it later).
    pub ratio: Option<f64>,
    pub size_gb: f64,
    /// `None` when auto-sizing is off (explicit ratio or size).
    pub fraction: Option<f64>,
    /// Whether the ratio was given by the user (not defaulted).
    pub ratio_explicit: bool,
    /// Set when an explicit ratio/size turned the fraction off: say it once.
    pub fraction_note: Option<String>,
}

impl ResolvedHicacheArgs {
    /// Explicit size or ratio: auto-sizing does not apply.
    pub fn is_explicit(&self) -> bool {
        self.ratio_explicit || self.size_gb > 0.0
    }
}

/// A rejected combination (SGLang raises `ValueError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SizingArgError(pub String);

/// Default ratio: 2.0 in cache mode, 1.2 in buffer-only mode.
pub fn default_ratio(mode: HostMemoryMode) -> f64 {
    match mode {
        HostMemoryMode::Cache => 2.0,
        HostMemoryMode::BufferOnly => 1.2,
    }
}

/// `handle_hicache_ratio_default` then `validate_hicache_host_memory_mode`. A decode
/// server keeps the ratio unset (SGLang's `kv_cache_builder` resolves it later against
/// the retraction-backup backend; not modelled). The fraction rule is from the
/// `arg_groups/hicache_hook.py: handle_hicache_ratio_default` of the #40135 era; some
/// later copies no longer carry it.
pub fn resolve_hicache_args(a: &HicacheArgs) -> Result<ResolvedHicacheArgs, SizingArgError> {
    if let Some(f) = a.fraction
        && !(f > 0.0 && f <= 1.0)
    {
        return Err(SizingArgError(
            "--hicache-host-memory-fraction must be in (0, 1].".into(),
        ));
    }
    let ratio_explicit = a.ratio.is_some();
    let ratio = match a.ratio {
        Some(r) => Some(r),
        None if a.is_decode => None,
        None => Some(default_ratio(a.mode)),
    };
    let (fraction, fraction_note) = if (ratio_explicit || a.size_gb > 0.0) && a.fraction.is_some() {
        (
            None,
            Some(if a.size_gb > 0.0 {
                "--hicache-size is set: HiCache auto-sizing (--hicache-host-memory-fraction) is off"
                    .to_string()
            } else {
                "--hicache-ratio is set: HiCache auto-sizing (--hicache-host-memory-fraction) is off".to_string()
            }),
        )
    } else {
        (a.fraction, None)
    };
    // Texts verbatim from `hicache_hook.py: validate_hicache_host_memory_mode`.
    if a.size_gb <= 0.0 && ratio.is_none() && !a.is_decode {
        return Err(SizingArgError(format!(
            "--hicache-host-memory-mode {} requires a host pool size: pass --hicache-size or --hicache-ratio.",
            a.mode.id()
        )));
    }
    if a.mode == HostMemoryMode::BufferOnly {
        if !a.storage_backend {
            return Err(SizingArgError(
                "--hicache-host-memory-mode buffer_only requires a storage backend (--hicache-storage-backend): host memory is only a staging buffer and all cached data lives in storage.".into(),
            ));
        }
        if a.write_back {
            return Err(SizingArgError(
                "--hicache-host-memory-mode buffer_only does not support --hicache-write-policy write_back; use write_through or write_through_selective.".into(),
            ));
        }
        if a.is_decode {
            return Err(SizingArgError(
                "--hicache-host-memory-mode buffer_only is not supported on decode instances: the decode-side prefetch and offload paths bypass the buffer-mode pipeline, fetching without its prefix context and never consuming its staged holds. Prefill instances share the standard scheduler path and are supported.".into(),
            ));
        }
    }
    Ok(ResolvedHicacheArgs {
        ratio,
        size_gb: a.size_gb,
        fraction,
        ratio_explicit,
        fraction_note,
    })
}
