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
}

/// Per-run digest (small, so runs can be computed in parallel and folded in order).
#[derive(Debug, Clone, Default)]
struct Digest {
    worst: Option<Outcome>,
    ranks: RunOutcomes,
    budgets: Vec<i128>,
    margins: Vec<i128>,
}

fn digest(results: &[RankResult]) -> Digest {
    let mut d = Digest {
        worst: Some(Outcome::Started),
        ..Digest::default()
    };
    for r in results {
        match r.outcome {
            Outcome::Started => d.ranks.started += 1,
            Outcome::Refused => d.ranks.refused += 1,
            Outcome::OomKilled => d.ranks.oom_killed += 1,
        }
        d.worst = d.worst.max(Some(r.outcome));
        if let Some(b) = r.budget_bytes {
            d.budgets.push(b);
        }
        if let Some(m) = r.margin_bytes {
            d.margins.push(m);
        }
    }
    d
}

/// Runs `runs` start-ups of `plan` under `seed` on the current rayon pool.
pub fn run(plan: &StartupPlan, seed: u64, runs: u64) -> MonteCarlo {
    let runs = runs.max(1);
    let mut scratch = Scratch::default();
    let mut rng = engine::stream(seed, 0);
    simulate(plan, &mut rng, &mut scratch);
    let first_run = scratch.results.clone();
    let first = digest(&first_run);

    // Chunks keep one scratch per task; the fold order is by run index.
    const CHUNK: u64 = 256;
    let chunks: Vec<(u64, u64)> = (1..runs)
        .step_by(CHUNK as usize)
        .map(|s| (s, (s + CHUNK).min(runs)))
        .collect();
    let digests: Vec<Vec<Digest>> = chunks
        .par_iter()
        .map(|&(a, b)| {
            let mut scratch = Scratch::default();
            (a..b)
                .map(|i| {
                    let mut rng = engine::stream(seed, i);
                    simulate(plan, &mut rng, &mut scratch);
                    digest(&scratch.results)
                })
                .collect()
        })
        .collect();

    let mut outcomes = RunOutcomes::default();
    let mut rank_outcomes = RunOutcomes::default();
    let mut budgets = Vec::new();
    let mut margins = Vec::new();
    let (mut runs_refused, mut runs_killed) = (0u64, 0u64);
    for d in std::iter::once(first).chain(digests.into_iter().flatten()) {
        match d.worst {
            Some(Outcome::OomKilled) => outcomes.oom_killed += 1,
            Some(Outcome::Refused) => outcomes.refused += 1,
            _ => outcomes.started += 1,
        }
        runs_refused += u64::from(d.ranks.refused > 0);
        runs_killed += u64::from(d.ranks.oom_killed > 0);
        rank_outcomes.started += d.ranks.started;
        rank_outcomes.refused += d.ranks.refused;
        rank_outcomes.oom_killed += d.ranks.oom_killed;
        budgets.extend(d.budgets);
        margins.extend(d.margins);
    }
    let n = runs as f64;
    MonteCarlo {
        runs,
        outcomes,
        refusal_probability: runs_refused as f64 / n,
        oom_probability: runs_killed as f64 / n,
        start_probability: outcomes.started as f64 / n,
        rank_outcomes,
        budget_bytes: Quantiles::of(&mut budgets),
        margin_bytes: Quantiles::of(&mut margins),
        first_run,
    }
}
