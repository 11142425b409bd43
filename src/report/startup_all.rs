//! `startup SCENARIO --sglang all`: "which release broke my recipe" — one row per release
//! (oldest first) and per what-if, from the same scenario, seed and runs.

use std::fmt::Write as _;

use serde::Serialize;

use super::startup::StartupReport;
use crate::release::{Sglang, first_shipped};
use crate::units::fmt_gb;

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct SglangRow {
    pub sglang: Sglang,
    /// `release` or `what_if`.
    pub kind: &'static str,
    /// The release's build date; for a what-if, the release that first shipped it
    /// (`0.5.21 (2026-10-01)`) or `in no release up to 0.5.23 (a proposal)`.
    pub shipped: String,
    /// Worst outcome of run 0 (`started`, `refused`, `failed`, `oom_killed`), or
    /// `invalid_args` when this release rejects the scenario's flags.
    pub outcome: &'static str,
    pub ranks_started: u64,
    pub ranks: u64,
    /// Run 0's binding rank (smallest margin): its budget, request and margin.
    pub budget_bytes: Option<i64>,
    pub requested_bytes: Option<u64>,
    pub margin_bytes: Option<i64>,
    pub refusal_probability: Option<f64>,
    pub runs: u64,
    /// SGLang's message of the first rank that did not start, or the input error.
    pub message: Option<String>,
}

/// The "shipped" column of `id`.
pub fn shipped(v: Sglang) -> String {
    match v {
        Sglang::Release(r) => r.date().to_string(),
        Sglang::WhatIf(w) => match first_shipped(w) {
            Some(r) => format!("{} ({})", r.id(), r.date()),
            None => format!(
                "in no release up to {} (a proposal)",
                crate::release::Release::LATEST.id()
            ),
        },
        Sglang::Proposal(p) => format!("open PR, in no release ({})", p.url()),
    }
}

fn kind(v: Sglang) -> &'static str {
    if v.is_release() { "release" } else { "what_if" }
}

/// A row from a finished report.
pub fn row(v: Sglang, rep: &StartupReport) -> SglangRow {
    let order = ["started", "refused", "failed", "pin_failed", "oom_killed"];
    let worst = rep
        .ranks
        .iter()
        .map(|r| r.outcome)
        .max_by_key(|o| order.iter().position(|x| x == o))
        .unwrap_or("started");
    let binding = rep
        .ranks
        .iter()
        .filter(|r| r.margin_bytes.is_some())
        .min_by_key(|r| r.margin_bytes);
    SglangRow {
        sglang: v,
        kind: kind(v),
        shipped: shipped(v),
        outcome: worst,
        ranks_started: rep.ranks.iter().filter(|r| r.outcome == "started").count() as u64,
        ranks: rep.ranks.len() as u64,
        budget_bytes: binding.and_then(|r| r.budget_bytes),
        requested_bytes: binding.and_then(|r| r.requested_bytes),
        margin_bytes: binding.and_then(|r| r.margin_bytes),
        refusal_probability: Some(rep.refusal_probability),
        runs: rep.runs,
        message: rep
            .ranks
            .iter()
            .find(|r| r.outcome != "started")
            .and_then(|r| r.message.clone()),
    }
}

/// A row for a release that rejects the scenario's flags (`invalid_args`), or under
/// which a rule the scenario needs is not modelled (`not_modelled`).
pub fn invalid_row(v: Sglang, error_kind: crate::error::ErrorKind, message: String) -> SglangRow {
    SglangRow {
        sglang: v,
        kind: kind(v),
        shipped: shipped(v),
        outcome: if error_kind == crate::error::ErrorKind::NotModelled {
            "not_modelled"
        } else {
            "invalid_args"
        },
        ranks_started: 0,
        ranks: 0,
        budget_bytes: None,
        requested_bytes: None,
        margin_bytes: None,
        refusal_probability: None,
        runs: 0,
        message: Some(message),
    }
}

/// The text table.
pub fn render_text(scenario: &str, rows: &[SglangRow]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "hicache-sim startup: {scenario}, every SGLang release and what-if"
    );
    let _ = writeln!(
        o,
        "{:<24} {:<10} {:<12} {:>7} {:>11} {:>11} {:>11} {:>10}  shipped",
        "sglang", "kind", "outcome", "started", "budget", "request", "margin", "P(refuse)"
    );
    let gb = |x: Option<i64>| x.map_or("-".to_string(), |v| format!("{} GB", fmt_gb(v as i128)));
    for r in rows {
        let _ = writeln!(
            o,
            "{:<24} {:<10} {:<12} {:>7} {:>11} {:>11} {:>11} {:>10}  {}",
            r.sglang,
            r.kind,
            r.outcome,
            format!("{}/{}", r.ranks_started, r.ranks),
            gb(r.budget_bytes),
            gb(r.requested_bytes.map(|v| v as i64)),
            gb(r.margin_bytes),
            r.refusal_probability
                .map_or("-".to_string(), |p| format!("{p:.4}")),
            r.shipped
        );
    }
    // Messages once each, under the table.
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        if let Some(m) = r.message.as_deref()
            && !seen.contains(&m)
        {
            seen.push(m);
            let _ = writeln!(o, "{}: {m}", r.sglang);
        }
    }
    o
}
