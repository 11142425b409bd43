//! Which cost terms of the timed replay move its TTFT and throughput most: each term
//! of the time model made 25 % dearer on its own (a forward 1.25× longer, a link
//! 1.25× slower, a fixed cost 1.25× larger), every other term as configured.
//!
//! A term that is 0 or absent in the configuration (no storage, no tokenizer cost, no
//! speculative draft) is left out: making it dearer changes nothing. The terms SGLang
//! pays that the time model does not have (fixed per-iteration costs, HiCache's
//! bookkeeping; its per-step synchronisation and the fixed per-request way are terms)
//! cannot appear here; [`NOT_IN_THE_MODEL`] names them.

use serde::Serialize;

use super::config::ReplayConfig;
use super::metrics::ReplayMetrics;
use crate::units::{Bandwidth, Duration};

/// How much dearer each term is made: 25 %.
pub const STEP: f64 = 1.25;

/// What the time model leaves out, so no row of the report can show it.
pub const NOT_IN_THE_MODEL: &str = "fixed per-request and per-iteration costs (HTTP / ZMQ / detokenizer, the scheduler's loop, CUDA-graph launch) and HiCache's own bookkeeping are not in the time model, so no row shows them";

/// [`NOT_IN_THE_MODEL`] for a report of `rows`: with a `request_overhead` row (the
/// fixed per-request way charged) it names only the per-iteration costs as left out;
/// with a `hicache_sync` row (HiCache's per-step synchronisation charged) or a
/// `prefetch_poll` row (the L3 prefetch polls' all-reduces charged) it says which
/// per-iteration costs are in the model; without any, the constant itself (outputs
/// without the terms keep their bytes).
pub fn not_in_the_model(rows: &[Row]) -> String {
    let has = |t: Term| rows.iter().any(|r| r.term == t);
    let modelled: Vec<&str> = [
        (
            Term::HicacheSync,
            "HiCache's per-step synchronisation is in the model: hicache_sync",
        ),
        (
            Term::PrefetchPoll,
            "the L3 prefetch polls' all-reduces are in the model: prefetch_poll",
        ),
    ]
    .into_iter()
    .filter(|&(t, _)| has(t))
    .map(|(_, s)| s)
    .collect();
    let per_request = has(Term::RequestOverhead);
    if modelled.is_empty() && !per_request {
        return NOT_IN_THE_MODEL.to_string();
    }
    let what = if per_request {
        "fixed per-iteration costs (the scheduler's loop, CUDA-graph launch"
    } else {
        "fixed per-request and per-iteration costs (HTTP / ZMQ / detokenizer, the scheduler's loop, CUDA-graph launch"
    };
    let modelled = if modelled.is_empty() {
        String::new()
    } else {
        format!("; {}", modelled.join("; "))
    };
    format!(
        "{what}{modelled}) and HiCache's own bookkeeping are not in the time model, so no row shows them"
    )
}

/// One cost term of the time model and how it is made [`STEP`] dearer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Term {
    /// Every forward, prefill and decode (`compute.compute_scale`).
    Compute,
    /// The H2D link of a host hit's load-back (`h2d_bandwidth`).
    H2d,
    /// The fixed cost of each H2D run (`h2d_run_overhead`).
    H2dRunOverhead,
    /// The D2H link of write-through backups (`d2h_bandwidth`).
    D2h,
    /// The fixed cost of each D2H run (`d2h_run_overhead`).
    D2hRunOverhead,
    /// The storage read link of L3 prefetches (`storage_read_bandwidth`).
    StorageRead,
    /// The storage write link of L3 backups (`storage_write_bandwidth`).
    StorageWrite,
    /// The fixed cost of one storage operation (`storage_latency`).
    StorageLatency,
    /// The TokenizerManager's encode per prompt token (`tokenize_per_token`).
    Tokenize,
    /// Every request's fixed way through the server (`request_overhead`).
    RequestOverhead,
    /// The opt-in charge per cached token (`compute.hit_cost_per_cached_token`).
    HitCost,
    /// HiCache's per-step synchronisation (`compute.hicache_step_sync`), where it is
    /// charged (a host tier).
    HicacheSync,
    /// The blocking all-reduce of an L3 prefetch's admission poll
    /// (`compute.prefetch_poll_sync`), where it is charged (an L3 tier, TP > 1).
    PrefetchPoll,
    /// The speculative draft's acceptance: 1.25× fewer tokens a decode iteration
    /// (`compute.speculative.accept_length`).
    Acceptance,
}

impl Term {
    /// Every term, in the order the report lists ties.
    pub const ALL: [Term; 14] = [
        Term::Compute,
        Term::H2d,
        Term::H2dRunOverhead,
        Term::D2h,
        Term::D2hRunOverhead,
        Term::StorageRead,
        Term::StorageWrite,
        Term::StorageLatency,
        Term::Tokenize,
        Term::RequestOverhead,
        Term::HitCost,
        Term::HicacheSync,
        Term::PrefetchPoll,
        Term::Acceptance,
    ];

    /// The term's name in outputs.
    pub fn id(self) -> &'static str {
        match self {
            Term::Compute => "compute",
            Term::H2d => "h2d",
            Term::H2dRunOverhead => "h2d_run_overhead",
            Term::D2h => "d2h",
            Term::D2hRunOverhead => "d2h_run_overhead",
            Term::StorageRead => "storage_read",
            Term::StorageWrite => "storage_write",
            Term::StorageLatency => "storage_latency",
            Term::Tokenize => "tokenize",
            Term::RequestOverhead => "request_overhead",
            Term::HitCost => "hit_cost",
            Term::HicacheSync => "hicache_sync",
            Term::PrefetchPoll => "prefetch_poll",
            Term::Acceptance => "acceptance",
        }
    }

    /// `cfg` with this term [`STEP`] dearer and what changed (`field a → b`), or `None`
    /// where the term is 0 or absent in `cfg`.
    pub fn dearer(self, cfg: &ReplayConfig) -> Option<(ReplayConfig, String)> {
        let mut c = cfg.clone();
        let slower = |b: &mut Bandwidth, name: &str| {
            let was = b.0;
            (was > 0.0).then(|| {
                b.0 = was / STEP;
                format!("{name} {:.2} → {:.2} GB/s", was / 1e9, b.0 / 1e9)
            })
        };
        let longer = |d: &mut Duration, name: &str| {
            let was = d.0;
            (was > 0).then(|| {
                d.0 = (was as f64 * STEP).round() as u64;
                format!("{name} {was} → {} ns", d.0)
            })
        };
        let storage = cfg.has_storage();
        let what = match self {
            Term::Compute => {
                let was = c.scheduler.compute.compute_scale;
                c.scheduler.compute.compute_scale = was * STEP;
                Some(format!("compute_scale {was} → {}", was * STEP))
            }
            Term::H2d => slower(&mut c.links.h2d_bandwidth, "h2d_bandwidth"),
            Term::H2dRunOverhead => longer(&mut c.links.h2d_run_overhead, "h2d_run_overhead"),
            Term::D2h => slower(&mut c.links.d2h_bandwidth, "d2h_bandwidth"),
            Term::D2hRunOverhead => longer(&mut c.links.d2h_run_overhead, "d2h_run_overhead"),
            Term::StorageRead if storage => slower(
                &mut c.links.storage_read_bandwidth,
                "storage_read_bandwidth",
            ),
            Term::StorageWrite if storage => slower(
                &mut c.links.storage_write_bandwidth,
                "storage_write_bandwidth",
            ),
            Term::StorageLatency if storage => {
                longer(&mut c.links.storage_latency, "storage_latency")
            }
            Term::StorageRead | Term::StorageWrite | Term::StorageLatency => None,
            Term::Tokenize => longer(&mut c.frontend.tokenize_per_token, "tokenize_per_token"),
            Term::RequestOverhead => longer(&mut c.frontend.request_overhead, "request_overhead"),
            Term::HitCost => longer(
                &mut c.scheduler.compute.hit_cost_per_cached_token,
                "hit_cost_per_cached_token",
            ),
            Term::HicacheSync if cfg.hicache_step_sync_ns() > 0 => longer(
                &mut c.scheduler.compute.hicache_step_sync,
                "hicache_step_sync",
            ),
            Term::HicacheSync => None,
            Term::PrefetchPoll if cfg.prefetch_poll_sync_ns() > 0 => longer(
                &mut c.scheduler.compute.prefetch_poll_sync,
                "prefetch_poll_sync",
            ),
            Term::PrefetchPoll => None,
            Term::Acceptance => {
                let s = c.scheduler.compute.speculative.as_mut()?;
                // Only where decode iterations verify drafts in the clock.
                s.step()?;
                let was = s.accept_length();
                // At least one token an iteration: the verified token itself.
                let now = (was / STEP).max(1.0);
                s.accept_length = Some(now);
                Some(format!("accept_length {was:.3} → {now:.3}"))
            }
        }?;
        Some((c, what))
    }
}

/// One row of the report: a term made dearer and what the replay then gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub term: Term,
    /// The field changed, `a → b`.
    pub change: String,
    pub ttft_mean_s: Option<f64>,
    pub ttft_p99_s: Option<f64>,
    pub tpot_mean_s: Option<f64>,
    pub makespan_s: Option<f64>,
}

impl Row {
    pub fn of(term: Term, change: String, m: &ReplayMetrics) -> Self {
        Row {
            term,
            change,
            ttft_mean_s: ttft_mean(m),
            ttft_p99_s: m.ttft_p99_s,
            tpot_mean_s: m.tpot_mean_s,
            makespan_s: m.makespan_s,
        }
    }
}

/// The replay's mean TTFT (its breakdown's mean), when timed.
pub fn ttft_mean(m: &ReplayMetrics) -> Option<f64> {
    m.ttft_breakdown.as_ref().map(|b| b.mean_s)
}

/// `rows` sorted by how far they move the mean TTFT from `base` (largest first; ties
/// in [`Term::ALL`]'s order).
pub fn rank(base: Option<f64>, mut rows: Vec<Row>) -> Vec<Row> {
    let moved = |r: &Row| match (base, r.ttft_mean_s) {
        (Some(b), Some(x)) => (x - b).abs(),
        _ => 0.0,
    };
    rows.sort_by(|a, b| moved(b).total_cmp(&moved(a)));
    rows
}

/// `(x − base) / base` in percent, when both are known and `base` is not 0.
pub fn change_pct(base: Option<f64>, x: Option<f64>) -> Option<f64> {
    match (base, x) {
        (Some(b), Some(x)) if b > 0.0 => Some(100.0 * (x - b) / b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default configuration (fixed speeds, no storage, no tokenizer cost, no
    /// draft): compute, both links and their run overheads have a cost; the storage
    /// terms, the tokenizer, the hit cost and the acceptance do not.
    #[test]
    fn terms_with_a_cost_in_the_default_configuration() {
        let cfg = ReplayConfig::default();
        let with: Vec<&str> = Term::ALL
            .iter()
            .filter(|t| t.dearer(&cfg).is_some())
            .map(|t| t.id())
            .collect();
        assert_eq!(
            with,
            [
                "compute",
                "h2d",
                "h2d_run_overhead",
                "d2h",
                "d2h_run_overhead"
            ]
        );
        let (c, what) = Term::H2dRunOverhead.dearer(&cfg).unwrap();
        // The SGLang simulator's 6.67 µs a run, 25 % more.
        assert_eq!(cfg.links.h2d_run_overhead.0, 6_670);
        assert_eq!(c.links.h2d_run_overhead.0, 8_338);
        assert_eq!(what, "h2d_run_overhead 6670 → 8338 ns");
        let (c, _) = Term::Compute.dearer(&cfg).unwrap();
        assert_eq!(c.scheduler.compute.compute_scale, 1.25);
    }

    #[test]
    fn rows_rank_by_how_far_they_move_the_mean_ttft() {
        let row = |term, t| Row {
            term,
            change: String::new(),
            ttft_mean_s: Some(t),
            ttft_p99_s: None,
            tpot_mean_s: None,
            makespan_s: None,
        };
        let r = rank(
            Some(1.0),
            vec![
                row(Term::Compute, 1.2),
                row(Term::H2d, 0.7),
                row(Term::D2h, 1.0),
            ],
        );
        let order: Vec<Term> = r.iter().map(|r| r.term).collect();
        assert_eq!(order, [Term::H2d, Term::Compute, Term::D2h]);
        assert_eq!(change_pct(Some(2.0), Some(2.5)), Some(25.0));
        assert_eq!(change_pct(Some(0.0), Some(2.5)), None);
    }
}
