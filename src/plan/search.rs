//! The searches: the largest `--hicache-size`, the largest `--hicache-ratio` and the
//! auto-size pool of each `--hicache-host-memory-fraction` that start every rank with
//! P(start) ≥ the target. P(start) is monotone non-increasing in the pool size (a larger
//! request never fits where a smaller one did, and pins more for later ranks to see), so
//! a bisection finds the frontier in log2(range) probes instead of a user's grid.

use serde::Serialize;
use serde_json::Value;

use super::probe::{Patch, ProbeError, Prober, StartProbe};
use crate::sizing::{HostPoolSizeArg, host_pool_size};

/// Points a search scans when the smallest setting fails: sizes below a floor can fail
/// for a reason of their own (0.5.14's `assert self.size > device_pool.size` in
/// `pool_host/base.py: HostKVCache.__init__`: a host pool not larger than the device
/// pool), so the passing sizes can start above `lo`.
pub const SCAN_POINTS: u64 = 16;

/// Largest `x` in `lo..=hi` with `pass(x)`, for a `pass` that is false up to some floor,
/// true up to a frontier and false after it; `None` when no probe passes. Probes `lo`
/// (else [`SCAN_POINTS`] evenly spaced points for the first that passes), `hi`, then
/// bisects.
pub fn largest_passing<E>(
    lo: u64,
    hi: u64,
    mut pass: impl FnMut(u64) -> Result<bool, E>,
) -> Result<Option<u64>, E> {
    if lo > hi {
        return Ok(None);
    }
    let mut lo = lo;
    if !pass(lo)? {
        let step = ((hi - lo) / SCAN_POINTS).max(1);
        let mut found = None;
        let mut x = lo + step;
        while x <= hi {
            if pass(x)? {
                found = Some(x);
                break;
            }
            x += step;
        }
        match found {
            Some(x) => lo = x,
            None => return Ok(None),
        }
    }
    if pass(hi)? {
        return Ok(Some(hi));
    }
    // Invariant: pass(a), !pass(b).
    let (mut a, mut b) = (lo, hi);
    while b - a > 1 {
        let m = a + (b - a) / 2;
        if pass(m)? {
            a = m;
        } else {
            b = m;
        }
    }
    Ok(Some(a))
}

/// Smallest `x` in `(lo, hi]` with `pass(x)`, given `!pass(lo)` and `pass(hi)` (a floor:
/// false below it, true from it up to `hi`); bisection.
pub fn smallest_passing<E>(
    lo: u64,
    hi: u64,
    mut pass: impl FnMut(u64) -> Result<bool, E>,
) -> Result<Option<u64>, E> {
    if lo >= hi {
        return Ok(None);
    }
    // Invariant: !pass(a), pass(b).
    let (mut a, mut b) = (lo, hi);
    while b - a > 1 {
        let m = a + (b - a) / 2;
        if pass(m)? {
            b = m;
        } else {
            a = m;
        }
    }
    Ok(Some(b))
}

/// A frontier: the largest setting that starts, its probe, and the probe one step past.
#[derive(Debug, Clone, Serialize)]
pub struct Frontier<T: Serialize> {
    pub value: T,
    pub at: StartProbe,
    /// The next step (size + 1 GB, one more page): what fails first.
    pub next_value: T,
    pub next: StartProbe,
}

/// Patches that make `--hicache-size S` the sizing (an explicit size wins over a ratio
/// and switches the fraction off: `hicache_hook.py: handle_hicache_ratio_default`).
pub fn size_patch(size_gb: u64) -> Vec<Patch> {
    vec![("server.hicache_size", Value::from(size_gb as f64))]
}

/// Patches for `--hicache-ratio R` alone (`--hicache-size 0` = use the ratio).
pub fn ratio_patch(ratio: f64) -> Vec<Patch> {
    vec![
        ("server.hicache_size", Value::from(0.0)),
        ("server.hicache_ratio", Value::from(ratio)),
    ]
}

/// Patches for auto-size with `--hicache-host-memory-fraction F` (no size, no ratio).
pub fn fraction_patch(fraction: f64) -> Vec<Patch> {
    vec![
        ("server.hicache_size", Value::from(0.0)),
        ("server.hicache_ratio", Value::Null),
        ("server.hicache_host_memory_fraction", Value::from(fraction)),
    ]
}

fn passes(p: &StartProbe, target: f64) -> bool {
    p.start_probability >= target
}

/// The largest integer `--hicache-size` (GB, as SGLang takes it) in `1..=max_gb` that
/// starts with P ≥ `target`; `Ok(None)` when even 1 GB does not.
pub fn size_frontier(
    prober: &Prober,
    target: f64,
    max_gb: u64,
) -> Result<Option<Frontier<u64>>, ProbeError> {
    let lo = assert_floor_gb(prober, max_gb)?;
    let found = largest_passing(lo, max_gb, |s| {
        prober
            .start_probability(&size_patch(s))
            .map(|p| p >= target)
    })?;
    let Some(s) = found else { return Ok(None) };
    Ok(Some(Frontier {
        value: s,
        at: prober.start(&size_patch(s))?,
        next_value: s + 1,
        next: prober.start(&size_patch(s + 1))?,
    }))
}

/// The smallest `--hicache-size` (GB) whose KV host pool is larger than its device pool,
/// in a release that asserts it (0.5.14 `pool_host/base.py: HostKVCache.__init__`:
/// `assert self.size > device_pool.size`, before any memory is read; `size = (int(S ×
/// 1e9 // size_per_token) // page + 1) × page`, the whole size to the KV pool): every
/// smaller size fails the assertion, so the size search starts there instead of scanning
/// for it (a scan of evenly spaced sizes can step over a window of sizes that start
/// narrower than its step). 1 in releases that only warn; `max_gb + 1` when no size up to
/// `max_gb` is large enough.
pub fn assert_floor_gb(prober: &Prober, max_gb: u64) -> Result<u64, ProbeError> {
    let (_, plan) = prober.plan(&size_patch(1))?;
    let Some(kv) = plan.pools.first().map(|p| p.spec) else {
        return Ok(1);
    };
    if plan.rules.small_host != crate::sizing::SmallHostRule::AssertLarger {
        return Ok(1);
    }
    let larger = |gb: u64| {
        host_pool_size(
            kv.device_capacity,
            HostPoolSizeArg::SizeGb(gb as f64),
            kv.page_size,
            kv.bytes_per_unit,
        )
        .tokens
            > kv.device_capacity
    };
    Ok((1..=max_gb).find(|&gb| larger(gb)).unwrap_or(max_gb + 1))
}

/// The ratio found for a pool of `k + 1` pages: the interval of ratios SGLang maps to
/// that pool (`int(device_tokens * r) // page_size + 1 == k + 1`,
/// `pool_host/base.py: HostKVCache.__init__`) and the shortest decimal at its top.
#[derive(Debug, Clone, Serialize)]
pub struct RatioPick {
    pub ratio: f64,
    /// The ratio as written on the command line (the shortest decimal for this pool).
    pub flag: String,
    pub pages: u64,
}

/// A ratio whose pool is `k + 1` pages (the middle of `int(D·r) = k·page`).
fn ratio_of_pages(k: u64, device_tokens: u64, page: u64) -> f64 {
    (k * page) as f64 / device_tokens as f64 + 0.5 / device_tokens as f64
}

/// The largest ratio giving `k + 1` pages, written with as many decimals as it takes for
/// one step in the last digit to be at most one page (`10^-d ≤ page / device_tokens`),
/// so the flag names the pool to the page.
pub fn ratio_flag(k: u64, device_tokens: u64, page: u64, bytes_per_token: u64) -> RatioPick {
    let pages = |r: f64| {
        host_pool_size(
            device_tokens,
            HostPoolSizeArg::Ratio(r),
            page,
            bytes_per_token,
        )
        .page_num
    };
    let top = ((k + 1) * page) as f64 / device_tokens as f64;
    let step = page as f64 / device_tokens as f64;
    let mut d = 0;
    while 10f64.powi(-d) > step && d < 12 {
        d += 1;
    }
    for d in d..=12 {
        let scale = 10f64.powi(d);
        let mut c = (top * scale).floor() / scale;
        // The floor can land on the top itself (the next pool): one digit step down.
        if pages(c) > k + 1 {
            c = ((top * scale).floor() - 1.0) / scale;
        }
        if pages(c) == k + 1 {
            return RatioPick {
                ratio: c,
                flag: format!("{c:.*}", d as usize),
                pages: k + 1,
            };
        }
    }
    let r = ratio_of_pages(k, device_tokens, page);
    RatioPick {
        ratio: r,
        flag: format!("{r}"),
        pages: k + 1,
    }
}

/// The largest `--hicache-ratio`, to the page: bisection over the pool's page count.
pub fn ratio_frontier(
    prober: &Prober,
    target: f64,
    device_tokens: u64,
    page: u64,
    bytes_per_token: u64,
    max_bytes: u64,
) -> Result<Option<Frontier<RatioPick>>, ProbeError> {
    if device_tokens == 0 || page == 0 || bytes_per_token == 0 {
        return Ok(None);
    }
    // Never past the largest ratio a scenario may give (the pages of ratio 1000, less
    // the one the frontier's next step probes).
    let max_k = (max_bytes / (page * bytes_per_token) + 1).min(
        ((crate::scenario::resolve::MAX_HICACHE_RATIO as u64).saturating_mul(device_tokens) / page)
            .saturating_sub(2),
    );
    let found = largest_passing(0, max_k, |k| {
        prober
            .start_probability(&ratio_patch(ratio_of_pages(k, device_tokens, page)))
            .map(|p| p >= target)
    })?;
    let Some(k) = found else { return Ok(None) };
    let mut pick = ratio_flag(k, device_tokens, page, bytes_per_token);
    let mut at = prober.start(&ratio_patch(pick.ratio))?;
    if !passes(&at, target) {
        // A pool sized from its own device pool (SWA, a hybrid model's state slots) can
        // grow by a page before the KV pool does, inside the KV pool's ratio interval:
        // the interval's middle, which the search probed and found to hold, is the answer.
        let r = ratio_of_pages(k, device_tokens, page);
        pick = RatioPick {
            ratio: r,
            flag: format!("{r}"),
            pages: k + 1,
        };
        at = prober.start(&ratio_patch(r))?;
    }
    let next = ratio_flag(k + 1, device_tokens, page, bytes_per_token);
    Ok(Some(Frontier {
        at,
        next: prober.start(&ratio_patch(next.ratio))?,
        value: pick,
        next_value: next,
    }))
}

/// One `--hicache-host-memory-fraction` under auto-size.
#[derive(Debug, Clone, Serialize)]
pub struct FractionRow {
    pub fraction: f64,
    pub probe: StartProbe,
    /// P(start) ≥ the target.
    pub holds: bool,
}

/// The fractions a plan tabulates.
pub const FRACTIONS: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/// The auto-size pool of each fraction (releases with auto-size only: the caller asks
/// the release's rules).
pub fn fraction_table(prober: &Prober, target: f64) -> Result<Vec<FractionRow>, ProbeError> {
    FRACTIONS
        .iter()
        .map(|&f| {
            let probe = prober.start(&fraction_patch(f))?;
            Ok(FractionRow {
                fraction: f,
                holds: passes(&probe, target),
                probe,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_finds_the_last_passing_value() {
        for edge in [1u64, 2, 7, 63, 64, 99, 100] {
            let mut probes = 0;
            let r = largest_passing::<()>(1, 100, |x| {
                probes += 1;
                Ok(x <= edge)
            })
            .unwrap();
            assert_eq!(r, Some(edge));
            // lo, hi, then ⌈log2 99⌉ = 7 at most.
            assert!(probes <= 9, "{probes} probes for edge {edge}");
        }
        assert_eq!(largest_passing::<()>(1, 100, |_| Ok(false)).unwrap(), None);
        // A floor: 40..=70 pass. The scan (step ⌊99/16⌋ = 6: 7, 13, … 43) finds 43,
        // then bisection finds 70.
        let r = largest_passing::<()>(1, 100, |x| Ok((40..=70).contains(&x))).unwrap();
        assert_eq!(r, Some(70));
    }

    #[test]
    fn ratio_flag_names_the_pool_to_the_page() {
        // D = 1000 tokens, page 64: one page is 0.064 of ratio, so 2 decimals (0.01 ≤
        // 0.064). k = 9 → 10 pages needs int(1000 r) in [576, 640): the largest
        // 2-decimal ratio is 0.63 (630 tokens); 0.64 gives 640 tokens = 11 pages.
        let p = ratio_flag(9, 1000, 64, 1);
        assert_eq!(p.flag, "0.63");
        assert_eq!(p.pages, 10);
    }
}
