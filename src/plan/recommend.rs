//! The recommendation: the flag line to paste into the recipe, the releases it holds on,
//! and what would break it.

use serde::Serialize;

use super::ReleasePlan;
use super::ladder::Ladder;
use crate::release::Sglang;
use crate::scenario::Scenario;

#[derive(Debug, Clone, Serialize)]
pub struct Recommendation {
    /// `--enable-hierarchical-cache --hicache-size N --hicache-write-policy P`, or empty
    /// when no size starts.
    pub flags: String,
    /// The recommended size: the largest that starts with P ≥ target with `headroom_gb`
    /// more host memory used on every node.
    pub size_gb: Option<u64>,
    /// The headroom the recommendation keeps (GB a node, `--headroom`).
    pub headroom_gb: f64,
    /// The largest size that starts with P ≥ target with no headroom: past it, the plan's
    /// own rules refuse.
    pub frontier_gb: Option<u64>,
    /// The next step up from the recommended size (one more GB): what it costs in risk.
    pub next_step: Option<NextStep>,
    pub write_policy: crate::domain::WritePolicy,
    /// Releases (of those planned) on which the size starts with P ≥ target.
    pub holds_on: Vec<Sglang>,
    /// Releases on which it does not, with their own largest size.
    pub breaks_on: Vec<(Sglang, Option<u64>)>,
    /// The largest size that holds on every planned release (`--sglang all`: a recipe
    /// safe on all of them).
    pub safe_on_all_gb: Option<u64>,
    /// Perturbations of the primary release under which the size fails, in words.
    pub breaks_if: Vec<String>,
    /// Why this write policy.
    pub policy_reason: String,
    /// `ok`, `unverified` (the scenario does something that moves the figures and is not
    /// modelled: `unverified` names it) or `refused` (no size starts): the one verdict
    /// vocabulary of every command ([`crate::startup::status`]).
    pub status: &'static str,
    pub unverified: Vec<String>,
    /// Things SGLang itself would warn about at this size.
    pub notes: Vec<String>,
}

/// The size one step above the recommendation, started as planned and with the
/// headroom used.
#[derive(Debug, Clone, Serialize)]
pub struct NextStep {
    pub size_gb: u64,
    /// P(start) as the scenario stands (no headroom used).
    pub start_probability: f64,
    /// P(start) with the plan's headroom used by other processes.
    pub start_probability_with_headroom: f64,
    /// Run 0's tightest margin as the scenario stands, and the pool it is of.
    pub margin_bytes: Option<i64>,
    pub binding_pool: Option<&'static str>,
}

/// Chooses the primary release's largest size, the write policy with the best total hit
/// rate at that size (the scenario's own on a tie or without a trace), and lists where it
/// holds.
pub fn recommend(
    plans: &[ReleasePlan],
    ladder: Option<&Ladder>,
    s: &Scenario,
    target: f64,
    headroom: u64,
) -> Recommendation {
    let valid: Vec<&ReleasePlan> = plans.iter().filter(|p| p.invalid.is_none()).collect();
    let size_gb = valid
        .first()
        .and_then(|p| p.with_headroom.as_ref().map(|f| f.value));
    let frontier_gb = valid.first().and_then(|p| p.size.as_ref().map(|f| f.value));
    // The next step up: its P(start) as planned is the `next` probe of the recommended
    // size's search (probed without the headroom); with the headroom used it fails by
    // construction (the plan keeps that probe's figure).
    let next_step = valid.first().and_then(|p| {
        let h = p.with_headroom.as_ref()?;
        Some(NextStep {
            size_gb: h.next_value,
            start_probability: h.next.start_probability,
            start_probability_with_headroom: p
                .headroom_next_probability
                .unwrap_or(h.next.start_probability),
            margin_bytes: h.next.margin_bytes,
            binding_pool: h.next.binding_pool,
        })
    });
    let own_policy = s.server.hicache_write_policy;
    let (write_policy, policy_reason) = match ladder {
        Some(l) => {
            let own = l.policies.iter().find(|p| p.policy == own_policy);
            let best = l.policies.iter().filter(|p| p.error.is_none()).fold(
                None::<&super::PolicyPoint>,
                |b, p| match b {
                    Some(b) if b.hit_rate_total >= p.hit_rate_total => Some(b),
                    _ => Some(p),
                },
            );
            match (own, best) {
                (Some(o), Some(b))
                    if o.error.is_none() && b.hit_rate_total <= o.hit_rate_total + 1e-9 =>
                {
                    (
                        own_policy,
                        format!(
                            "the scenario's policy; no other policy has a higher total hit rate ({:.2} %) on this trace",
                            100.0 * o.hit_rate_total
                        ),
                    )
                }
                (_, Some(b)) => (
                    b.policy,
                    format!(
                        "the highest total hit rate at this size on this trace ({:.2} %)",
                        100.0 * b.hit_rate_total
                    ),
                ),
                _ => (own_policy, "the scenario's policy".into()),
            }
        }
        None => (
            own_policy,
            "the scenario's policy (no trace replayed)".into(),
        ),
    };
    let mut holds_on = Vec::new();
    let mut breaks_on = Vec::new();
    if size_gb.is_some() {
        for p in &valid {
            let own = p.size.as_ref().map(|f| f.value);
            if p.at_recommended
                .as_ref()
                .is_some_and(|a| a.start_probability >= target)
            {
                holds_on.push(p.sglang);
            } else {
                breaks_on.push((p.sglang, own));
            }
        }
    }
    // The smallest frontier, if it holds on every release (it may not: 0.5.14 fails
    // below the device pool, where later releases' frontiers can lie).
    let safe_on_all_gb = valid
        .iter()
        .map(|p| p.size.as_ref().map(|f| f.value))
        .collect::<Option<Vec<u64>>>()
        .and_then(|v| v.into_iter().min())
        .filter(|_| {
            valid.iter().all(|p| {
                p.at_smallest_frontier
                    .as_ref()
                    .is_some_and(|a| a.start_probability >= target)
            })
        });
    let breaks_if = valid
        .first()
        .map(|p| {
            p.sensitivity
                .iter()
                .filter(|x| !x.holds)
                .map(|x| {
                    let largest = x
                        .largest_size_gb
                        .map_or("no size".to_string(), |g| format!("--hicache-size {g}"));
                    let how =
                        x.probe
                            .failure
                            .as_ref()
                            .map_or("fails".to_string(), |f| match f.outcome {
                                "oom_killed" => "a rank is OOM-killed".to_string(),
                                "refused" => "refuses".to_string(),
                                o => o.to_string(),
                            });
                    format!(
                        "with {}, {} {} (P(start) {:.3}); {} still holds",
                        x.what, p.sglang, how, x.probe.start_probability, largest
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mut notes = Vec::new();
    if let Some(f) = valid.first().and_then(|p| p.with_headroom.as_ref()) {
        let host = f.at.host_pool_tokens.unwrap_or(0);
        let device = f.at.device_pool_tokens;
        if host <= device {
            // `pool_host/base.py: HostKVCache.__init__` (#28614+) logs this and starts.
            notes.push(format!(
                "the host pool ({host} tokens, {} GB) is not larger than the device pool ({device} tokens, {} GB): SGLang warns, and a write-through host tier that only mirrors the device pool adds few hits",
                crate::units::fmt_gb((host * f.at.pool_bytes_per_token) as i128),
                crate::units::fmt_gb((device * f.at.pool_bytes_per_token) as i128)
            ));
        }
    }
    // Auto-size (where the release has it) may hold a larger pool than any explicit
    // size: `hicache_auto.py`/`host_memory.py` auto-size agrees one world MIN of the
    // budgets before any rank pins, so no rank samples after its peers have pinned.
    if let Some(p) = valid.first()
        && let (Some(f), Some(rows)) = (p.with_headroom.as_ref(), p.fractions.as_ref())
        && let Some(best) = rows.iter().filter(|r| r.holds).max_by(|a, b| {
            let kv = |r: &super::search::FractionRow| {
                r.probe.host_pool_tokens.unwrap_or(0) * r.probe.pool_bytes_per_token
            };
            kv(a).cmp(&kv(b))
        })
    {
        let auto = best.probe.host_pool_tokens.unwrap_or(0) * best.probe.pool_bytes_per_token;
        let explicit = f.at.host_pool_tokens.unwrap_or(0) * f.at.pool_bytes_per_token;
        if auto > explicit {
            notes.push(format!(
                "auto-size holds a larger pool on {}: --hicache-host-memory-fraction {:.1} without --hicache-size (or ratio) gives a {} GB KV host pool per rank ({} GB in all host pools) with P(start) {:.3}, against a {} GB KV pool at --hicache-size {}; auto-size agrees one world MIN of the budgets before any rank pins, so no rank samples after its peers have pinned",
                p.sglang,
                best.fraction,
                crate::units::fmt_gb(auto as i128),
                best.probe
                    .requested_bytes
                    .map_or("-".to_string(), |b| crate::units::fmt_gb(b as i128)),
                best.probe.start_probability,
                crate::units::fmt_gb(explicit as i128),
                f.value
            ));
        }
    }
    let flags = match size_gb {
        Some(g) => format!(
            "--enable-hierarchical-cache --hicache-size {g} --hicache-write-policy {write_policy}"
        ),
        None => String::new(),
    };
    let unverified: Vec<String> = s.unmodelled.iter().map(ToString::to_string).collect();
    let status = crate::startup::status(
        if size_gb.is_some() {
            "started"
        } else {
            "refused"
        },
        !unverified.is_empty(),
    );
    Recommendation {
        status,
        unverified,
        flags,
        size_gb,
        headroom_gb: headroom as f64 / crate::units::GB as f64,
        frontier_gb,
        next_step,
        write_policy,
        holds_on,
        breaks_on,
        safe_on_all_gb,
        breaks_if,
        policy_reason,
        notes,
    }
}

/// The recommendation's headroom and the risk of the next step up, in words (the text
/// and the HTML report print these lines).
pub fn risk_lines(r: &Recommendation, target: f64) -> Vec<String> {
    let mut v = Vec::new();
    let (Some(size), Some(frontier)) = (r.size_gb, r.frontier_gb) else {
        return v;
    };
    if r.headroom_gb > 0.0 {
        v.push(format!(
            "headroom: starts with P(start) ≥ {target} with {} GB more host memory used on every node (in the job's cgroup and outside it); the frontier without headroom is --hicache-size {frontier}{}",
            r.headroom_gb,
            if frontier == size {
                " (the same size)".to_string()
            } else {
                format!(" (--headroom 0 recommends it: {} GB more)", frontier - size)
            }
        ));
    } else {
        v.push("headroom: none (--headroom 0): the recommendation is the frontier itself".into());
    }
    if let Some(n) = &r.next_step {
        let margin = n.margin_bytes.map_or(String::new(), |m| {
            format!(
                ", run 0's tightest margin {} GB ({} pool)",
                crate::units::fmt_gb(m as i128),
                n.binding_pool.unwrap_or("host")
            )
        });
        v.push(if r.headroom_gb > 0.0 {
            format!(
                "next step up: --hicache-size {}: P(start) {:.3} as planned{margin}, {:.3} with the headroom used",
                n.size_gb, n.start_probability, n.start_probability_with_headroom
            )
        } else {
            format!(
                "next step up: --hicache-size {}: P(start) {:.3}{margin}",
                n.size_gb, n.start_probability
            )
        });
    }
    v
}
