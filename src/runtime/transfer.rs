//! Transfer cost model of SGLang's simulator (`tools/sglang-simulator`, PR #33824,
//! `simulation/sglang/cache_controller.py`): a transfer is split into runs, each run of
//! `size` bytes moves at `BW_eff = size*BW/(overhead*BW + size)` with
//! `BW = efficiency (0.85) × link bandwidth`, so a run takes `overhead + size/BW`.
//! Overheads: 6.67 µs per H2D run, 4 µs per D2H run. Storage moves at its raw
//! bandwidth with no per-run overhead.

use crate::units::Nanos;

/// Time of `runs` runs totalling `bytes` on a link of `bandwidth` bytes/s.
pub fn run_time_ns(
    bytes: u64,
    runs: u64,
    bandwidth: f64,
    efficiency: f64,
    overhead_ns: Nanos,
) -> Nanos {
    if bytes == 0 {
        return 0;
    }
    let bw = bandwidth * efficiency;
    runs * overhead_ns + (bytes as f64 / bw * 1e9).round() as Nanos
}

/// Effective bandwidth of one run of `size` bytes (bytes/s).
pub fn effective_bandwidth(size: f64, bandwidth: f64, efficiency: f64, overhead_s: f64) -> f64 {
    let bw = bandwidth * efficiency;
    size * bw / (overhead_s * bw + size)
}

/// Storage read or write at raw bandwidth.
pub fn storage_time_ns(bytes: u64, bandwidth: f64) -> Nanos {
    (bytes as f64 / bandwidth * 1e9).round() as Nanos
}

/// A FIFO link: a transfer starts when the link is free and occupies it until done.
#[derive(Debug, Clone, Copy, Default)]
pub struct Link {
    pub busy_until: Nanos,
}

impl Link {
    /// Schedules a transfer of `dur` ns requested at `now`; returns its finish time.
    pub fn transfer(&mut self, now: Nanos, dur: Nanos) -> Nanos {
        let start = self.busy_until.max(now);
        self.busy_until = start + dur;
        self.busy_until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_time_matches_effective_bandwidth() {
        // 1 MiB on a 50 GB/s link, 4 µs overhead: BW = 42.5e9,
        // 1048576/42.5e9 = 24.672 µs, + 4 µs = 28.672 µs.
        let t = run_time_ns(1 << 20, 1, 50e9, 0.85, 4_000);
        assert_eq!(t, 28_672);
        let eff = effective_bandwidth((1u64 << 20) as f64, 50e9, 0.85, 4e-6);
        assert!(((1u64 << 20) as f64 / eff * 1e9 - 28_672.0).abs() < 1.0);
    }

    #[test]
    fn link_serialises() {
        let mut l = Link::default();
        assert_eq!(l.transfer(10, 5), 15);
        assert_eq!(l.transfer(12, 5), 20);
        assert_eq!(l.transfer(30, 1), 31);
    }
}
