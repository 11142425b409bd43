//! Many start-up runs over rank jitter: run `i` draws from stream `i` of the seed, so the
//! results are identical for any number of threads. Run 0 is kept whole (per-rank
//! detail); the others are folded into counts and distributions.

use rayon::prelude::*;
use serde::Serialize;

use crate::engine;

use super::plan::StartupPlan;
use super::sim::{Outcome, RankResult, Scratch, simulate};

/// Summary of a distribution (bytes), over every rank of every run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Quantiles {
    pub count: u64,
    pub min: i128,
    pub p01: i128,
    pub p50: i128,
    pub p99: i128,
    pub max: i128,
}

impl Quantiles {
    fn of(s: &Sketch) -> Quantiles {
        if s.count == 0 {
            return Quantiles::default();
        }
        // The value at sorted position `i` (0-based), walking the counts.
        let at = |i: u64| {
            let mut seen = 0u64;
            for (&v, &c) in &s.counts {
                seen += c;
                if seen > i {
                    return v;
                }
            }
            *s.counts.keys().next_back().expect("non-empty")
        };
        let q = |f: f64| at(((s.count - 1) as f64 * f).round() as u64);
        Quantiles {
            count: s.count,
            min: s.min,
            p01: q(0.01),
            p50: q(0.5),
            p99: q(0.99),
            max: s.max,
        }
    }
}

/// Most distinct values a [`Sketch`] keeps exactly.
pub const SKETCH_EXACT_DISTINCT: usize = 1 << 16;

/// A distribution in bounded memory, the same whatever the order values arrive and
/// chunks merge in: exact counts per distinct value while there are at most
/// [`SKETCH_EXACT_DISTINCT`] of them (every start-up scenario seen so far), else counts
/// per value rounded to 12 significant bits (quantiles within 0.025 %; min and max stay
/// exact). Whether it rounds depends only on the multiset of values, so the result is
/// identical for any thread count.
#[derive(Debug, Clone, Default)]
pub struct Sketch {
    counts: std::collections::BTreeMap<i128, u64>,
    rounded: bool,
    count: u64,
    min: i128,
    max: i128,
}

fn round_12_bits(v: i128) -> i128 {
    let m = v.unsigned_abs();
    let bits = 128 - m.leading_zeros();
    let r = if bits <= 12 {
        m
    } else {
        let drop = bits - 12;
        (m >> drop) << drop
    } as i128;
    if v < 0 { -r } else { r }
}

impl Sketch {
    pub fn add(&mut self, v: i128) {
        self.add_n(v, 1);
    }

    fn add_n(&mut self, v: i128, n: u64) {
        if self.count == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.count += n;
        let k = if self.rounded { round_12_bits(v) } else { v };
        *self.counts.entry(k).or_insert(0) += n;
        if !self.rounded && self.counts.len() > SKETCH_EXACT_DISTINCT {
            self.round();
        }
    }

    fn round(&mut self) {
        let old = std::mem::take(&mut self.counts);
        for (v, c) in old {
            *self.counts.entry(round_12_bits(v)).or_insert(0) += c;
        }
        self.rounded = true;
    }

    pub fn merge(&mut self, mut o: Sketch) {
        if o.count == 0 {
            return;
        }
        if self.rounded && !o.rounded {
            o.round();
        }
        if o.rounded && !self.rounded {
            self.round();
        }
        let (min, max) = (o.min, o.max);
        for (v, c) in std::mem::take(&mut o.counts) {
            *self.counts.entry(v).or_insert(0) += c;
        }
        if self.count == 0 {
            self.min = min;
            self.max = max;
        } else {
            self.min = self.min.min(min);
            self.max = self.max.max(max);
        }
        self.count += o.count;
        if !self.rounded && self.counts.len() > SKETCH_EXACT_DISTINCT {
            self.round();
        }
    }
}

/// What `--runs N` reports.
#[derive(Debug, Clone, Serialize)]
pub struct MonteCarlo {
    pub runs: u64,
    /// Runs by their worst rank outcome: every rank started / some rank refused / some
    /// rank OOM-killed (a kill outranks a refusal).
    pub outcomes: RunOutcomes,
    /// Fraction of runs in which at least one rank was refused.
    pub refusal_probability: f64,
    /// Fraction of runs in which at least one rank was OOM-killed.
    pub oom_probability: f64,
    /// Fraction of runs in which every rank started.
    pub start_probability: f64,
    /// Rank outcomes over all runs.
    pub rank_outcomes: RunOutcomes,
    pub budget_bytes: Quantiles,
    pub margin_bytes: Quantiles,
    /// Run 0 in full.
    pub first_run: Vec<RankResult>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct RunOutcomes {
    pub started: u64,
    pub refused: u64,
    pub oom_killed: u64,
    /// Raised before or while building the pools (0.5.14's assertion, a failed
    /// `cudaHostRegister`); omitted from JSON when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub failed: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Values waiting to go into a [`Sketch`]: sorted and added as (value, count) runs, so
/// the sketch's ordered map is searched once per distinct value of a batch rather than
/// once per rank (start-up budgets repeat a lot). The sketch does not depend on the
/// order values arrive in, so batching changes nothing in it.
#[derive(Debug, Clone, Default)]
struct Batch {
    values: Vec<i128>,
}

impl Batch {
    const LEN: usize = 4096;

    fn push(&mut self, v: i128, into: &mut Sketch) {
        self.values.push(v);
        if self.values.len() >= Self::LEN {
            self.flush(into);
        }
    }

    fn flush(&mut self, into: &mut Sketch) {
        self.values.sort_unstable();
        let mut i = 0;
        while i < self.values.len() {
            let v = self.values[i];
            let n = self.values[i..].partition_point(|&x| x == v);
            into.add_n(v, n as u64);
            i += n;
        }
        self.values.clear();
    }
}

/// Counts and samples folded over a range of runs (order-independent: sums, and values
/// that are sorted before quantiles are read).
#[derive(Debug, Clone, Default)]
struct Tally {
    runs: RunOutcomes,
    runs_refused: u64,
    runs_killed: u64,
    ranks: RunOutcomes,
    budgets: Sketch,
    margins: Sketch,
    /// Not yet in `budgets` / `margins` (see [`Tally::flush`]).
    pending_budgets: Batch,
    pending_margins: Batch,
}

impl Tally {
    fn add(&mut self, results: &[RankResult]) {
        let mut worst = Outcome::Started;
        let (mut refused, mut killed) = (false, false);
        for r in results {
            match r.outcome {
                Outcome::Started => self.ranks.started += 1,
                Outcome::Refused => {
                    self.ranks.refused += 1;
                    refused = true;
                }
                Outcome::Failed | Outcome::PinFailed => self.ranks.failed += 1,
                Outcome::OomKilled => {
                    self.ranks.oom_killed += 1;
                    killed = true;
                }
            }
            worst = worst.max(r.outcome);
            if let Some(b) = r.budget_bytes {
                self.pending_budgets.push(b, &mut self.budgets);
            }
            if let Some(m) = r.margin_bytes {
                self.pending_margins.push(m, &mut self.margins);
            }
        }
        match worst {
            Outcome::OomKilled => self.runs.oom_killed += 1,
            Outcome::Refused => self.runs.refused += 1,
            Outcome::Failed | Outcome::PinFailed => self.runs.failed += 1,
            Outcome::Started => self.runs.started += 1,
        }
        self.runs_refused += u64::from(refused);
        self.runs_killed += u64::from(killed);
    }

    /// Moves the pending values into the sketches (before merging or reading them).
    fn flush(&mut self) {
        self.pending_budgets.flush(&mut self.budgets);
        self.pending_margins.flush(&mut self.margins);
    }

    fn merge(&mut self, mut o: Tally) {
        self.flush();
        o.flush();
        for (a, b) in [(&mut self.runs, o.runs), (&mut self.ranks, o.ranks)] {
            a.started += b.started;
            a.refused += b.refused;
            a.oom_killed += b.oom_killed;
            a.failed += b.failed;
        }
        self.runs_refused += o.runs_refused;
        self.runs_killed += o.runs_killed;
        self.budgets.merge(o.budgets);
        self.margins.merge(o.margins);
    }
}

/// Runs `runs` start-ups of `plan` under `seed` on the current rayon pool.
/// Start-up runs finished in this process (counted by chunk): what the progress line of
/// a long `startup --runs N` reads.
pub static RUNS_DONE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub fn run(plan: &StartupPlan, seed: u64, runs: u64) -> MonteCarlo {
    let runs = runs.max(1);
    let mut scratch = Scratch::default();
    let mut rng = engine::stream(seed, 0);
    simulate(plan, &mut rng, &mut scratch);
    let first_run = scratch.results.clone();
    let mut total = Tally::default();
    total.add(&first_run);

    // One scratch per chunk of runs; run i always draws from stream i. Chunks are
    // folded as they finish (memory does not grow with `runs`); every fold is a sum or a
    // sketch merge, so the result does not depend on the order.
    const CHUNK: u64 = 1024;
    let n_chunks = (runs - 1).div_ceil(CHUNK);
    let rest = (0..n_chunks)
        .into_par_iter()
        .map(|c| {
            let a = 1 + c * CHUNK;
            let b = (a + CHUNK).min(runs);
            // These runs are only tallied: no message text.
            let mut scratch = Scratch::default();
            scratch.messages = false;
            let mut t = Tally::default();
            for i in a..b {
                let mut rng = engine::stream(seed, i);
                simulate(plan, &mut rng, &mut scratch);
                t.add(&scratch.results);
            }
            RUNS_DONE.fetch_add(b - a, std::sync::atomic::Ordering::Relaxed);
            t
        })
        .reduce(Tally::default, |mut x, y| {
            x.merge(y);
            x
        });
    total.merge(rest);
    total.flush();
    let n = runs as f64;
    MonteCarlo {
        runs,
        outcomes: total.runs,
        refusal_probability: total.runs_refused as f64 / n,
        oom_probability: total.runs_killed as f64 / n,
        start_probability: total.runs.started as f64 / n,
        rank_outcomes: total.ranks,
        budget_bytes: Quantiles::of(&total.budgets),
        margin_bytes: Quantiles::of(&total.margins),
        first_run,
    }
}

#[cfg(test)]
mod sketch_tests {
    use super::*;

    #[test]
    fn exact_below_the_cap_and_order_free_above() {
        let mut a = Sketch::default();
        for v in [5i128, -3, 5, 9] {
            a.add(v);
        }
        let q = Quantiles::of(&a);
        assert_eq!((q.count, q.min, q.p50, q.max), (4, -3, 5, 9));
        // Above the cap: the same result however the values are split and merged.
        let vals: Vec<i128> = (0..200_000i128).map(|i| i * 7919 % 1_000_003).collect();
        let mut whole = Sketch::default();
        vals.iter().for_each(|&v| whole.add(v));
        let mut parts: Vec<Sketch> = vals
            .chunks(999)
            .map(|c| {
                let mut s = Sketch::default();
                c.iter().for_each(|&v| s.add(v));
                s
            })
            .collect();
        parts.reverse();
        let mut merged = Sketch::default();
        for p in parts {
            merged.merge(p);
        }
        assert_eq!(Quantiles::of(&whole), Quantiles::of(&merged));
        // 12 significant bits: 2,048 buckets per bit length above 12 bits (20 here).
        assert!(
            whole.counts.len() <= 4096 + 8 * 2048,
            "{}",
            whole.counts.len()
        );
        let q = Quantiles::of(&whole);
        let (lo, hi) = (*vals.iter().min().unwrap(), *vals.iter().max().unwrap());
        assert_eq!((q.min, q.max), (lo, hi));
        assert!((q.p50 - 500_000).abs() < 500_000 / 2000, "{}", q.p50);
    }
}
