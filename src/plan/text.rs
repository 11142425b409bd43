//! The plan as text: one block per release, the hit-rate ladder, the recommendation.
//! Byte figures print as SGLang prints them (`{x/1e9:.2f} GB`).

use std::fmt::Write as _;

use super::{Plan, ReleasePlan, StartProbe};
use crate::release::Sglang;
use crate::units::fmt_gb;

fn gb(x: i128) -> String {
    format!("{} GB", fmt_gb(x))
}

fn pct(x: f64) -> String {
    format!("{:.2} %", 100.0 * x)
}

/// "P(start) 1.000, run 0's tightest pool (kv): margin 0.31 GB (budget 102.32 GB,
/// request 102.00 GB)".
fn probe_line(p: &StartProbe) -> String {
    let mut s = format!("P(start) {:.3}", p.start_probability);
    if let (Some(m), Some(b), Some(r)) = (p.margin_bytes, p.budget_bytes, p.requested_bytes) {
        let _ = write!(
            s,
            ", run 0's tightest pool ({}): margin {} (budget {}, request {})",
            match p.binding_pool {
                Some(crate::startup::ALL_HOST_POOLS) => "all host pools, one booking",
                Some(n) => n,
                None => "host",
            },
            gb(m as i128),
            gb(b as i128),
            gb(r as i128)
        );
    }
    s
}

/// What fails one step past a frontier.
fn failure_line(p: &StartProbe) -> String {
    match &p.failure {
        Some(f) => format!(
            "{} (run {}, rank {}, P(start) {:.3}): {}",
            f.outcome.replace('_', "-"),
            f.run,
            f.rank,
            p.start_probability,
            f.message
        ),
        None => format!("P(start) {:.3}", p.start_probability),
    }
}

fn release_block(out: &mut String, r: &ReleasePlan, target: f64) {
    let _ = writeln!(out, "SGLang {} — {}", r.sglang, r.summary);
    if let Some(m) = &r.invalid {
        let _ = writeln!(out, "  the scenario is not valid under this release: {m}\n");
        return;
    }
    if let Some(m) = &r.does_not_fit {
        let _ = writeln!(
            out,
            "  failed: the model leaves no GPU memory for the KV cache, so no host pool can start: {m}\n"
        );
        return;
    }
    match &r.size {
        Some(f) => {
            let _ = writeln!(out, "  --hicache-size {:<6} {}", f.value, probe_line(&f.at));
            let _ = writeln!(out, "    at {}: {}", f.next_value, failure_line(&f.next));
        }
        None => {
            let _ = writeln!(
                out,
                "  --hicache-size: no size from 1 GB starts with P ≥ {target}"
            );
        }
    }
    match &r.ratio {
        Some(f) => {
            let pool = f.at.host_pool_tokens.unwrap_or(0) * f.at.pool_bytes_per_token;
            let _ = writeln!(
                out,
                "  --hicache-ratio {:<6} {} pages, {} KV pool; {}",
                f.value.flag,
                f.value.pages,
                gb(pool as i128),
                probe_line(&f.at)
            );
            let _ = writeln!(
                out,
                "    at {} (+1 page): {}",
                f.next_value.flag,
                failure_line(&f.next)
            );
        }
        None => {
            let _ = writeln!(out, "  --hicache-ratio: no ratio starts with P ≥ {target}");
        }
    }
    match &r.fractions {
        None => {
            let _ = writeln!(
                out,
                "  --hicache-host-memory-fraction: no auto-size in this release"
            );
        }
        Some(rows) => {
            let _ = writeln!(
                out,
                "  --hicache-host-memory-fraction (auto-size, no size or ratio):"
            );
            // The KV pool (what the --hicache-size lines and the notes name) and every
            // host pool the rank pins (KV + DSA indexer, SWA, state: the request SGLang
            // checks against the budget).
            let _ = writeln!(
                out,
                "    {:>8} {:>12} {:>12} {:>9}  outcome",
                "fraction", "KV pool", "all pools", "P(start)"
            );
            for row in rows {
                let kv = row.probe.host_pool_tokens.map_or("-".to_string(), |t| {
                    gb((t * row.probe.pool_bytes_per_token) as i128)
                });
                let pool = row
                    .probe
                    .requested_bytes
                    .map_or("-".to_string(), |b| gb(b as i128));
                let _ = writeln!(
                    out,
                    "    {:>8.1} {:>12} {:>12} {:>9.3}  {}",
                    row.fraction,
                    kv,
                    pool,
                    row.probe.start_probability,
                    if row.holds {
                        "holds".to_string()
                    } else {
                        row.probe
                            .failure
                            .as_ref()
                            .map_or("below target".into(), |f| f.outcome.replace('_', "-"))
                    }
                );
            }
        }
    }
    if !r.sensitivity.is_empty() {
        let _ = writeln!(out, "  sensitivity at the planned size:");
        for x in &r.sensitivity {
            let _ = writeln!(
                out,
                "    {:<58} P(start) {:.3} {}",
                format!("with {}:", x.what),
                x.probe.start_probability,
                if x.holds {
                    "holds".to_string()
                } else {
                    format!(
                        "breaks; largest size then: {}",
                        x.largest_size_gb.map_or("none".into(), |g| g.to_string())
                    )
                }
            );
        }
    }
    out.push('\n');
}

pub fn render(p: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Plan for {}: node {}, model {}, TP{}; target P(start) ≥ {}; {} start-up run(s) per probe, seed {} (the same jitter for every probe)\n",
        p.scenario, p.node, p.model, p.tp_size, p.target, p.runs, p.seed
    );
    for r in &p.releases {
        release_block(&mut out, r, p.target);
    }
    match (&p.ladder, &p.ladder_note) {
        (Some(l), _) => {
            let _ = writeln!(
                out,
                "Hit rate by host pool size ({}, {} rules; --hicache-size {} planned):",
                l.trace, l.sglang, l.planned_gb
            );
            let _ = writeln!(
                out,
                "  {:>7} {:>12} {:>9} {:>9} {:>9} {:>9} {:>13}",
                "size GB", "pool", "device", "host", "storage", "total", "gain/10 GB"
            );
            for x in &l.points {
                let _ = writeln!(
                    out,
                    "  {:>7} {:>12} {:>9} {:>9} {:>9} {:>9} {:>13}{}",
                    x.size_gb,
                    gb(x.host_pool_bytes as i128),
                    pct(x.hit_rate_device),
                    pct(x.hit_rate_host),
                    pct(x.hit_rate_storage),
                    pct(x.hit_rate_total),
                    x.marginal_per_10gb
                        .map_or(String::new(), |g| format!("{:+.2} pp", 100.0 * g)),
                    match (x.holds, x.size_gb == l.planned_gb) {
                        (_, true) => "  ← planned",
                        (false, _) => "  (past the frontier)",
                        _ if x.size_gb == l.frontier_gb => "  ← frontier (no headroom)",
                        _ => "",
                    }
                );
            }
            if !l.unverified.is_empty() {
                let _ = writeln!(out, "  hit rates unverified: {}", l.unverified.join("; "));
            }
            match l.stops_paying_gb {
                Some(g) => {
                    let _ = writeln!(
                        out,
                        "  more host memory stops paying from {g} GB (every further 10 GB adds < {:.1} pp)",
                        100.0 * super::ladder::STOPS_PAYING_PER_10GB
                    );
                }
                None => {
                    let _ = writeln!(out, "  still paying at the top of the ladder");
                }
            }
            let _ = writeln!(out, "Write policies at --hicache-size {}:", l.planned_gb);
            for x in &l.policies {
                match &x.error {
                    Some(e) => {
                        let _ = writeln!(out, "  {:<24} not accepted: {e}", x.policy);
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "  {:<24} device {:>8} host {:>8} storage {:>8} total {:>8}  backup {}",
                            x.policy,
                            pct(x.hit_rate_device),
                            pct(x.hit_rate_host),
                            pct(x.hit_rate_storage),
                            pct(x.hit_rate_total),
                            gb(x.backup_bytes as i128)
                        );
                    }
                }
            }
            out.push('\n');
        }
        (None, Some(n)) => {
            let _ = writeln!(out, "Hit rates: not computed ({n}).\n");
        }
        _ => {}
    }
    let r = &p.recommendation;
    if !r.unverified.is_empty() {
        let _ = writeln!(
            out,
            "Status: unverified — these figures may not be SGLang's; not modelled:"
        );
        for u in &r.unverified {
            let _ = writeln!(out, "  - {u}");
        }
        out.push('\n');
    }
    if r.flags.is_empty() {
        let _ = writeln!(
            out,
            "Recommendation: none — no --hicache-size starts with P ≥ {}.",
            p.target
        );
        return out;
    }
    let _ = writeln!(out, "Recommendation:\n  {}", r.flags);
    for l in super::recommend::risk_lines(r, p.target) {
        let _ = writeln!(out, "  {l}");
    }
    let _ = writeln!(out, "  write policy: {}", r.policy_reason);
    let _ = writeln!(out, "  holds on: {}", Sglang::join_labelled(&r.holds_on));
    if !r.breaks_on.is_empty() {
        let b: Vec<String> = r
            .breaks_on
            .iter()
            .map(|(v, g)| {
                let floor = p
                    .releases
                    .iter()
                    .find(|r| r.sglang == *v)
                    .and_then(|r| r.floor_gb);
                match (g, floor) {
                    (Some(g), Some(f)) => {
                        format!("{v} (too small there: only --hicache-size {f} to {g} starts)")
                    }
                    (Some(g), None) => format!("{v} (largest {g})"),
                    (None, _) => format!("{v} (no size starts)"),
                }
            })
            .collect();
        let _ = writeln!(out, "  breaks on: {}", b.join(", "));
    }
    if p.releases.len() > 1 {
        match r.safe_on_all_gb {
            Some(g) => {
                let _ = writeln!(out, "  safe on every release above: --hicache-size {g}");
            }
            None => {
                let _ = writeln!(
                    out,
                    "  no single --hicache-size is safe on every release above"
                );
            }
        }
    }
    for b in &r.breaks_if {
        let _ = writeln!(out, "  {b}");
    }
    for n in &r.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}
