//! What a start-up's runs mean, before anything is rendered: the one-paragraph verdict,
//! the rank that binds (least margin), and the first failure of a Monte Carlo (run 0,
//! else the first failing run). `report` prints these; `plan` probes with them.

use std::fmt::Write as _;

use serde::Serialize;

use super::montecarlo::MonteCarlo;
use super::plan::StartupPlan;
use super::sim::{Outcome, RankResult, Scratch, simulate};
use crate::scenario::Scenario;
use crate::units::{fmt_gb, secs};

fn gb(x: i128) -> String {
    format!("{} GB", fmt_gb(x))
}

/// The one verdict vocabulary of `startup`, `check`, `plan` and `sweep`: a start is `ok`
/// only when everything that moves the figures is modelled, else `unverified` (the
/// reasons travel beside it); any other outcome (`refused`, `oom_killed`, `failed`,
/// `pin_failed`, `invalid_args`, `error`) is itself.
pub fn status(outcome: &'static str, unverified: bool) -> &'static str {
    match outcome {
        "started" if unverified => "unverified",
        "started" => "ok",
        o => o,
    }
}

/// One paragraph: what happened in run 0 and, with several runs, how likely each outcome is.
pub fn verdict(s: &Scenario, plan: &StartupPlan, mc: &MonteCarlo) -> String {
    let ranks = &mc.first_run;
    let started = ranks
        .iter()
        .filter(|r| r.outcome == Outcome::Started)
        .count();
    let refused: Vec<&RankResult> = ranks
        .iter()
        .filter(|r| r.outcome == Outcome::Refused)
        .collect();
    let killed: Vec<&RankResult> = ranks
        .iter()
        .filter(|r| r.outcome == Outcome::OomKilled)
        .collect();
    let failed: Vec<&RankResult> = ranks
        .iter()
        .filter(|r| r.outcome == Outcome::Failed)
        .collect();
    let pin_failed: Vec<&RankResult> = ranks
        .iter()
        .filter(|r| r.outcome == Outcome::PinFailed)
        .collect();
    let mut v = String::new();
    if refused.is_empty() && killed.is_empty() && failed.is_empty() && pin_failed.is_empty() {
        let min_margin = ranks.iter().filter_map(|r| r.margin_bytes).min();
        let off = ranks.iter().filter(|r| r.hicache_off).count();
        let _ = write!(
            v,
            "Under {} all {} ranks start",
            s.version.id(),
            ranks.len()
        );
        if let Some(m) = min_margin {
            let _ = write!(
                v,
                "; the tightest rank has {} of margin between its budget and its request",
                gb(m)
            );
        }
        if off > 0 {
            // The first off rank's reason (SGLang's own, without the prefix).
            let reason = ranks
                .iter()
                .find(|r| r.hicache_off)
                .and_then(|r| r.message.as_deref())
                .map(|m| m.strip_prefix("HiCache off: ").unwrap_or(m))
                .unwrap_or("");
            let _ = write!(v, "; HiCache is switched off on {off} rank(s) ({reason})");
        }
        v.push('.');
    } else {
        let _ = write!(
            v,
            "Under {} {} of {} ranks start",
            s.version.id(),
            started,
            ranks.len()
        );
        if let Some(r) = refused.first() {
            let _ = write!(
                v,
                "; {} refused (first: rank {} sampled at {:.2} s: {})",
                refused.len(),
                r.rank,
                r.sampled_at.map(secs).unwrap_or(0.0),
                r.message.as_deref().unwrap_or("")
            );
        }
        if let Some(r) = failed.first() {
            let kind = r
                .log
                .iter()
                .find_map(|e| match e {
                    crate::release::log_lines::LogEvent::Error(k) => Some(k.name()),
                    _ => None,
                })
                .unwrap_or("AssertionError");
            let _ = write!(
                v,
                "; {} failed before sizing read any memory (first: rank {}: {kind}: {})",
                failed.len(),
                r.rank,
                r.message.as_deref().unwrap_or("")
            );
            if let Some(f) = &plan.device_failure {
                let _ = write!(v, "; what would help: {}", f.hint);
            }
        }
        if let Some(r) = pin_failed.first() {
            let _ = write!(
                v,
                "; {} could not pin their host pools (first: rank {}: RuntimeError: {})",
                pin_failed.len(),
                r.rank,
                r.message.as_deref().unwrap_or("")
            );
        }
        if let Some(r) = killed.first() {
            let _ = write!(
                v,
                "; {} OOM-killed (first: rank {}: {})",
                killed.len(),
                r.rank,
                r.message.as_deref().unwrap_or("")
            );
        }
        v.push('.');
    }
    if mc.runs > 1 {
        let _ = write!(
            v,
            " Over {} runs with rank-start jitter: all ranks start in {:.2} % of runs, a rank is refused in {:.2} %, OOM-killed in {:.2} %.",
            mc.runs,
            100.0 * mc.start_probability,
            100.0 * mc.refusal_probability,
            100.0 * mc.oom_probability
        );
    }
    v
}

impl StartupPlan {
    /// Bytes per token of the first host pool (the KV pool); 0 when that pool counts
    /// state slots, or there is none.
    pub fn host_bytes_per_token(&self) -> u64 {
        self.pools
            .first()
            .filter(|p| p.spec.unit == crate::pools::PoolUnit::Tokens)
            .map_or(0, |p| p.bytes_per_token)
    }
}

/// The rank of run 0 that binds: the started rank with the least margin between its
/// budget and its request (the first of equals).
pub fn binding_rank(ranks: &[RankResult]) -> Option<&RankResult> {
    ranks
        .iter()
        .filter(|r| r.margin_bytes.is_some())
        .min_by_key(|r| r.margin_bytes)
}

/// The first rank of a run that did not start: its outcome and SGLang's message.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub run: u64,
    pub rank: u32,
    pub outcome: &'static str,
    pub message: String,
}

impl Failure {
    /// The first rank of run `run` (its `ranks`) that did not start.
    pub fn of(run: u64, ranks: &[RankResult]) -> Option<Failure> {
        ranks
            .iter()
            .find(|r| r.outcome != Outcome::Started)
            .map(|r| Failure {
                run,
                rank: r.rank,
                outcome: r.outcome.id(),
                message: r.message.clone().unwrap_or_default(),
            })
    }
}

/// The first failure of a Monte Carlo: run 0's (`mc.first_run`), else the first run in
/// `1..runs` with a rank that did not start (the same streams as [`super::montecarlo::run`]: run `i`
/// draws from stream `i` of `seed`), scanned only when some run failed.
pub fn first_failure(plan: &StartupPlan, mc: &MonteCarlo, seed: u64, runs: u64) -> Option<Failure> {
    if let Some(f) = Failure::of(0, &mc.first_run) {
        return Some(f);
    }
    if mc.start_probability >= 1.0 {
        return None;
    }
    let mut scratch = Scratch::default();
    (1..runs).find_map(|i| {
        let mut rng = crate::engine::stream(seed, i);
        simulate(plan, &mut rng, &mut scratch);
        Failure::of(i, &scratch.results)
    })
}
