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
    fn of(v: &mut [i128]) -> Quantiles {
        if v.is_empty() {
            return Quantiles::default();
        }
        v.sort_unstable();
        let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
        Quantiles {
            count: v.len() as u64,
            min: v[0],
            p01: q(0.01),
            p50: q(0.5),
            p99: q(0.99),
            max: v[v.len() - 1],
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
    /// Raised before sizing (0.5.14's assertion); omitted from JSON when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub failed: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Counts and samples folded over a range of runs (order-independent: sums, and values
/// that are sorted before quantiles are read).
#[derive(Debug, Clone, Default)]
struct Tally {
    runs: RunOutcomes,
    runs_refused: u64,
    runs_killed: u64,
    ranks: RunOutcomes,
    budgets: Vec<i128>,
    margins: Vec<i128>,
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
                Outcome::Failed => self.ranks.failed += 1,
                Outcome::OomKilled => {
                    self.ranks.oom_killed += 1;
                    killed = true;
                }
            }
            worst = worst.max(r.outcome);
            self.budgets.extend(r.budget_bytes);
            self.margins.extend(r.margin_bytes);
        }
        match worst {
            Outcome::OomKilled => self.runs.oom_killed += 1,
            Outcome::Refused => self.runs.refused += 1,
            Outcome::Failed => self.runs.failed += 1,
            Outcome::Started => self.runs.started += 1,
        }
        self.runs_refused += u64::from(refused);
        self.runs_killed += u64::from(killed);
    }

    fn merge(&mut self, o: Tally) {
        for (a, b) in [(&mut self.runs, o.runs), (&mut self.ranks, o.ranks)] {
            a.started += b.started;
            a.refused += b.refused;
            a.oom_killed += b.oom_killed;
            a.failed += b.failed;
        }
        self.runs_refused += o.runs_refused;
        self.runs_killed += o.runs_killed;
        self.budgets.extend(o.budgets);
        self.margins.extend(o.margins);
    }
}

/// Runs `runs` start-ups of `plan` under `seed` on the current rayon pool.
pub fn run(plan: &StartupPlan, seed: u64, runs: u64) -> MonteCarlo {
    let runs = runs.max(1);
    let mut scratch = Scratch::default();
    let mut rng = engine::stream(seed, 0);
    simulate(plan, &mut rng, &mut scratch);
    let first_run = scratch.results.clone();
    let mut total = Tally::default();
    total.add(&first_run);

    // One scratch per chunk of runs; run i always draws from stream i.
    const CHUNK: u64 = 1024;
    let chunks: Vec<(u64, u64)> = (1..runs)
        .step_by(CHUNK as usize)
        .map(|s| (s, (s + CHUNK).min(runs)))
        .collect();
    let tallies: Vec<Tally> = chunks
        .par_iter()
        .map(|&(a, b)| {
            let mut scratch = Scratch::default();
            let mut t = Tally::default();
            for i in a..b {
                let mut rng = engine::stream(seed, i);
                simulate(plan, &mut rng, &mut scratch);
                t.add(&scratch.results);
            }
            t
        })
        .collect();
    for t in tallies {
        total.merge(t);
    }
    let n = runs as f64;
    MonteCarlo {
        runs,
        outcomes: total.runs,
        refusal_probability: total.runs_refused as f64 / n,
        oom_probability: total.runs_killed as f64 / n,
        start_probability: total.runs.started as f64 / n,
        rank_outcomes: total.ranks,
        budget_bytes: Quantiles::of(&mut total.budgets),
        margin_bytes: Quantiles::of(&mut total.margins),
        first_run,
    }
}
