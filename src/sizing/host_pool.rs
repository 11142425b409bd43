//! Host pool tokens and bytes (`pool_host/base.py: HostKVCache.__init__`, all versions).

use serde::{Deserialize, Serialize};

use super::pyops::{py_float_floordiv, py_int};
use super::version::SmallHostRule;

/// How the pool is sized.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostPoolSizeArg {
    /// `--hicache-ratio` (or the auto-size ratio): `int(device_tokens * ratio)`.
    Ratio(f64),
    /// `--hicache-size` in GB (1e9) per rank per pool: `int(size * 1e9 // bytes_per_token)`.
    SizeGb(f64),
}

/// One host pool's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HostPoolSize {
    /// Host tokens (`page_num * page_size`).
    pub tokens: u64,
    pub page_num: u64,
    /// `tokens * bytes_per_token`: what is checked against the budget and pinned.
    pub requested_bytes: u64,
}

/// `size = int(device_tokens * ratio)` or `int(hicache_size * 1e9 // size_per_token)`;
/// `page_num = size // page_size + 1` (always one extra page, even if aligned);
/// `size = page_num * page_size`; `requested = size * size_per_token`.
/// (`sync_fixed_hicache_size`'s PP MIN is the caller's, as are #32373's SWA split.)
pub fn host_pool_size(
    device_tokens: u64,
    arg: HostPoolSizeArg,
    page_size: u64,
    bytes_per_token: u64,
) -> HostPoolSize {
    let size = match arg {
        HostPoolSizeArg::Ratio(r) => py_int(device_tokens as f64 * r),
        HostPoolSizeArg::SizeGb(gb) => {
            py_int(py_float_floordiv(gb * 1e9, bytes_per_token.max(1) as f64))
        }
    }
    .max(0) as u64;
    let page = page_size.max(1);
    let page_num = size / page + 1;
    let tokens = page_num * page;
    HostPoolSize {
        tokens,
        page_num,
        requested_bytes: tokens * bytes_per_token,
    }
}

/// Outcome of the host-vs-device size rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum SmallHostCheck {
    Ok,
    /// #28614+: logged, start-up continues. The line itself is SGLang's log text, which
    /// changed across releases: `release::log_lines` renders it.
    Warning,
    /// V0: `AssertionError`, start-up fails.
    AssertionFailed(&'static str),
}

/// V0: `assert self.size > device_pool.size, "The host memory should be larger than the
/// device memory with the current protocol"`; #28614+: a warning when `host <= device`.
pub fn check_small_host(
    rule: SmallHostRule,
    host_tokens: u64,
    device_tokens: u64,
) -> SmallHostCheck {
    if host_tokens > device_tokens {
        return SmallHostCheck::Ok;
    }
    match rule {
        SmallHostRule::AssertLarger => SmallHostCheck::AssertionFailed(
            "The host memory should be larger than the device memory with the current protocol",
        ),
        SmallHostRule::Warn => SmallHostCheck::Warning,
    }
}
