//! `runtime.slowdown_factor`: a trace replayed slower (or faster) than it was recorded,
//! as SGLang's own benchmark replays a Mooncake trace.
//!
//! Mirrors `benchmark/serving.py: get_request` (with `use_trace_timestamps`) and
//! `benchmark/datasets/mooncake.py: get_mooncake_request_over_time`, flag
//! `--mooncake-slowdown-factor` (checked in 0.5.14, 0.5.21 and 0.5.23; 0.5.14 has
//! `get_request` in `bench_serving.py`, the same rule): each request is
//! sent `(timestamp − first timestamp) × slowdown_factor` after the start, so the first
//! request keeps its time and every gap between arrivals is multiplied. A factor of 2
//! halves the offered load; the requests, their order and their prompts are unchanged.

use super::Request;

/// A slowdown factor that is not a finite number > 0.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error(
    "{}: the slowdown factor must be from 1e-6 to 1e6 (1 = the trace's own times, 2 = twice as slow)", crate::units::fmt_num(*.0)
)]
pub struct BadSlowdownFactor(pub f64);

/// Whether `f` is a usable factor (SGLang's flag takes any float; a factor ≤ 0, NaN or
/// infinite would put arrivals at one instant, reverse them or nowhere).
pub fn check_factor(f: f64) -> Result<(), BadSlowdownFactor> {
    // Past 1e6 a day-long trace's gaps leave the nanosecond clock's range.
    if (1e-6..=1e6).contains(&f) {
        Ok(())
    } else {
        Err(BadSlowdownFactor(f))
    }
}

/// Arrivals of `requests` stretched by `factor` about the first arrival:
/// `first + round((arrival − first) × factor)` ns. A factor of exactly 1 returns every
/// request unchanged.
pub fn slow_down<I: Iterator<Item = Request>>(requests: I, factor: f64) -> SlowDown<I> {
    SlowDown {
        inner: requests,
        factor,
        first: None,
    }
}

/// The iterator [`slow_down`] returns (streaming: one request at a time).
pub struct SlowDown<I> {
    inner: I,
    factor: f64,
    first: Option<u64>,
}

impl<I: Iterator<Item = Request>> Iterator for SlowDown<I> {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        let mut r = self.inner.next()?;
        if self.factor == 1.0 {
            return Some(r);
        }
        let first = *self.first.get_or_insert(r.arrival_ns);
        // Out-of-order arrivals keep their order (the timed replay refuses them, naming
        // the request): `first` is then later than this one, and the offset is negative.
        let offset = r.arrival_ns as f64 - first as f64;
        let scaled = (first as f64 + offset * self.factor).round();
        r.arrival_ns = scaled.clamp(0.0, u64::MAX as f64) as u64;
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ns: &[u64]) -> Vec<Request> {
        ns.iter()
            .enumerate()
            .map(|(i, &a)| Request {
                id: i as u64,
                arrival_ns: a,
                input_tokens: 64,
                output_tokens: 1,
                page_hashes: vec![i as u64],
            })
            .collect()
    }

    fn arrivals(ns: &[u64], f: f64) -> Vec<u64> {
        slow_down(at(ns).into_iter(), f)
            .map(|r| r.arrival_ns)
            .collect()
    }

    #[test]
    fn gaps_are_multiplied_about_the_first_arrival() {
        const S: u64 = 1_000_000_000;
        // First at 5 s, then +1 s, +3 s: offsets 0, 1, 3 s × 2 = 0, 2, 6 s after 5 s.
        assert_eq!(
            arrivals(&[5 * S, 6 * S, 8 * S], 2.0),
            [5 * S, 7 * S, 11 * S]
        );
        // × 0.5: 0, 0.5, 1.5 s after 5 s.
        assert_eq!(
            arrivals(&[5 * S, 6 * S, 8 * S], 0.5),
            [5 * S, 5 * S + S / 2, 6 * S + S / 2]
        );
        // × 1.5 on 1 ns and 3 ns offsets: 1.5 → 2 (round half away from zero), 4.5 → 5.
        assert_eq!(arrivals(&[10, 11, 13], 1.5), [10, 12, 15]);
        // × 1: unchanged, to the nanosecond, even beyond f64's exact integers.
        let big = [u64::MAX - 7, u64::MAX - 3, u64::MAX];
        assert_eq!(arrivals(&big, 1.0), big);
    }

    #[test]
    fn bad_factors_are_refused() {
        for f in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(check_factor(f).is_err(), "{f}");
        }
        assert!(check_factor(1e-3).is_ok());
    }
}
