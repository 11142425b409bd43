//! What each host pool size buys: the trace replayed through the device pool and a host
//! pool of each size on a ladder (fixed 10 GB steps, plus the planned size × 1, 3/4,
//! 1/2, 1/4), with the marginal gain per 10 GB, and the three write policies at the
//! planned size. Replays run in parallel (rayon); each is a pure function of its size,
//! collected in ladder order, so the result is the same for any thread count.

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;

use super::probe::Prober;
use super::search::size_patch;
use crate::error::InputError;
use crate::pipeline::{host_pool_tokens, replay_config, run_replay};
use crate::release::Sglang;
use crate::scenario::Engine;
use crate::sizing::{HostPoolSizeArg, host_pool_size};
use crate::startup;

/// Marginal gain (total hit rate, per 10 GB) below which more host memory "stops
/// paying": half a percentage point.
pub const STOPS_PAYING_PER_10GB: f64 = 0.005;

/// One host pool size on the ladder.
#[derive(Debug, Clone, Serialize)]
pub struct LadderPoint {
    pub size_gb: u64,
    /// A point of the fixed 10 GB ladder (the marginal gain is read between these).
    pub step: bool,
    /// At or below the frontier: starts with P(start) ≥ the target. A size past
    /// it is replayed with the pool SGLang builds for it (run 0's pool when run 0
    /// started, else `HostKVCache`'s rounding of the size), and drawn in the "refuses
    /// here" region.
    pub holds: bool,
    pub host_pool_tokens: u64,
    pub host_pool_bytes: u64,
    pub hit_rate_device: f64,
    pub hit_rate_host: f64,
    pub hit_rate_storage: f64,
    pub hit_rate_total: f64,
    /// (total − total at the previous step) / (size − previous size) × 10 GB.
    pub marginal_per_10gb: Option<f64>,
}

/// One write policy at the planned size.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyPoint {
    pub policy: crate::domain::WritePolicy,
    pub hit_rate_device: f64,
    pub hit_rate_host: f64,
    pub hit_rate_storage: f64,
    pub hit_rate_total: f64,
    pub backup_bytes: u64,
    /// The policy is not accepted (a flag error under this release).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Ladder {
    pub trace: String,
    /// The recommended size (the frontier less the plan's headroom).
    pub planned_gb: u64,
    /// The largest size that starts with P ≥ target (no headroom): sizes past it are
    /// drawn in the "refuses here" region.
    pub frontier_gb: u64,
    /// The release whose rules the replays use.
    pub sglang: Sglang,
    /// The write policy the ladder's sizes are replayed with (the scenario's own).
    pub write_policy: crate::domain::WritePolicy,
    pub points: Vec<LadderPoint>,
    /// The smallest step size from which every further step gains less than
    /// [`STOPS_PAYING_PER_10GB`] per 10 GB (`None`: still paying at the top).
    pub stops_paying_gb: Option<u64>,
    pub policies: Vec<PolicyPoint>,
    /// The tree components the ladder's replays leave out (`pipeline::tree_unmodelled`;
    /// the scenario's own `unmodelled` are the plan's): its hit rates are then
    /// `unverified`, naming these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unverified: Vec<String>,
}

#[derive(Debug)]
pub enum LadderError {
    NoTrace,
    Input(InputError),
}

/// The top of the ladder by default: twice the plan (past the frontier, drawn in the
/// "refuses here" region, so the figure shows what the refused memory would have
/// bought), at least the plan + 40 GB.
pub fn default_top(planned_gb: u64) -> u64 {
    (planned_gb * 2).max(planned_gb + 40)
}

/// Sizes to replay: the 10 GB ladder (a coarser multiple of 10 GB when the range is
/// large, at most ~24 steps) up to `top`, the plan × 1, 3/4, 1/2, 1/4 and the frontier.
pub fn sizes(planned_gb: u64, frontier_gb: u64, top: u64) -> Vec<(u64, bool)> {
    let top = top.max(10);
    let step = (top.div_ceil(24)).div_ceil(10).max(1) * 10;
    let mut v: Vec<(u64, bool)> = (1..=top / step).map(|i| (i * step, true)).collect();
    let extra = [4u64, 3, 2, 1].map(|q| planned_gb * q / 4);
    for s in extra.into_iter().chain([frontier_gb]) {
        if s >= 1 && !v.iter().any(|&(x, _)| x == s) {
            v.push((s, false));
        }
    }
    v.sort_unstable();
    v
}

fn replay_at(
    prober: &Prober,
    size_gb: u64,
    extra: &[(&'static str, Value)],
) -> Result<(u64, bool, crate::runtime::ReplayMetrics, u64), LadderError> {
    let mut patches = size_patch(size_gb);
    patches.extend(extra.iter().cloned());
    let bad = |m: super::probe::ProbeError| LadderError::Input(m.into_input("plan"));
    let (s, plan) = prober.plan(&patches).map_err(bad)?;
    let Some(section) = &s.runtime else {
        return Err(LadderError::NoTrace);
    };
    if section.trace.is_none() {
        return Err(LadderError::NoTrace);
    }
    if section.engine != Engine::Hiradix {
        return Err(LadderError::Input(InputError::new(
            "plan",
            "plan replays with the hiradix engine (runtime.engine)",
        )));
    }
    let mc = startup::run(&plan, prober.seed, 1);
    let started = mc
        .first_run
        .iter()
        .all(|r| r.outcome == startup::Outcome::Started);
    let bpt = plan.host_bytes_per_token();
    let tokens = match host_pool_tokens(&mc) {
        Some(t) if started => t,
        // `HostKVCache.__init__`'s pool for an explicit size (what SGLang would build).
        _ => {
            host_pool_size(
                plan.device_tokens,
                HostPoolSizeArg::SizeGb(size_gb as f64),
                s.server.page_size.max(1) as u64,
                bpt,
            )
            .tokens
        }
    };
    let cfg = replay_config(&s, &plan, Some(tokens), &section.replay)
        .map_err(|e| LadderError::Input(InputError::new("plan", e.to_string())))?;
    let m = run_replay(section, &cfg).map_err(LadderError::Input)?;
    Ok((tokens, started, m, tokens * bpt))
}

/// The ladder around `planned_gb` (the recommended size) under the prober's release;
/// sizes past `frontier_gb` (≥ `planned_gb`) do not start with P ≥ target.
pub fn run(
    prober: &Prober,
    planned_gb: u64,
    frontier_gb: u64,
    top_gb: Option<u64>,
) -> Result<Ladder, LadderError> {
    let frontier_gb = frontier_gb.max(planned_gb);
    let s = prober
        .scenario(&[])
        .map_err(|m| LadderError::Input(m.into_input("plan")))?;
    let trace = s
        .runtime
        .as_ref()
        .and_then(|r| r.trace.clone())
        .ok_or(LadderError::NoTrace)?;
    let sizes = sizes(
        planned_gb,
        frontier_gb,
        top_gb.unwrap_or_else(|| default_top(frontier_gb)),
    );
    let mut points = sizes
        .par_iter()
        .map(|&(size_gb, step)| {
            let (tokens, _, m, bytes) = replay_at(prober, size_gb, &[])?;
            Ok(LadderPoint {
                size_gb,
                step,
                holds: size_gb <= frontier_gb,
                host_pool_tokens: tokens,
                host_pool_bytes: bytes,
                hit_rate_device: m.device_hit_rate,
                hit_rate_host: m.host_hit_rate,
                hit_rate_storage: m.storage_hit_rate,
                hit_rate_total: m.total_hit_rate,
                marginal_per_10gb: None,
            })
        })
        .collect::<Result<Vec<_>, LadderError>>()?;
    let mut prev: Option<(u64, f64)> = None;
    for p in points.iter_mut().filter(|p| p.step) {
        if let Some((s0, t0)) = prev {
            p.marginal_per_10gb = Some((p.hit_rate_total - t0) / (p.size_gb - s0) as f64 * 10.0);
        }
        prev = Some((p.size_gb, p.hit_rate_total));
    }
    let steps: Vec<&LadderPoint> = points.iter().filter(|p| p.step).collect();
    let stops_paying_gb = (0..steps.len())
        .find(|&i| {
            steps[i + 1..].iter().all(|p| {
                p.marginal_per_10gb
                    .is_some_and(|g| g < STOPS_PAYING_PER_10GB)
            })
        })
        .filter(|&i| i + 1 < steps.len())
        .map(|i| steps[i].size_gb);
    use crate::domain::{Choice, WritePolicy};
    let policies = [
        WritePolicy::WriteThrough,
        WritePolicy::WriteThroughSelective,
        WritePolicy::WriteBack,
    ]
    .par_iter()
    .map(|&pol| {
        match replay_at(
            prober,
            planned_gb,
            &[("server.hicache_write_policy", Value::from(pol.id()))],
        ) {
            Ok((_, _, m, _)) => Ok(PolicyPoint {
                policy: pol,
                hit_rate_device: m.device_hit_rate,
                hit_rate_host: m.host_hit_rate,
                hit_rate_storage: m.storage_hit_rate,
                hit_rate_total: m.total_hit_rate,
                backup_bytes: m.backup_bytes,
                error: None,
            }),
            Err(LadderError::Input(e)) => Ok(PolicyPoint {
                policy: pol,
                hit_rate_device: 0.0,
                hit_rate_host: 0.0,
                hit_rate_storage: 0.0,
                hit_rate_total: 0.0,
                backup_bytes: 0,
                error: Some(e.message),
            }),
            Err(e) => Err(e),
        }
    })
    .collect::<Result<Vec<_>, LadderError>>()?;
    let unverified = {
        let bad = |m: super::probe::ProbeError| LadderError::Input(m.into_input("plan"));
        let (ps, plan) = prober.plan(&size_patch(planned_gb)).map_err(bad)?;
        let mut u: Vec<String> = crate::pipeline::tree_unmodelled(&plan, false)
            .into_iter()
            .map(String::from)
            .collect();
        // The launch's scheduling flags its replays do not model, with the scenario's
        // clock or without (`scenario::launch_schedule`).
        let timed = ps.runtime.as_ref().is_some_and(|r| {
            replay_config(&ps, &plan, None, &r.replay)
                .is_ok_and(|c| c.measurement.timing == crate::runtime::Timing::On)
        });
        u.extend_from_slice(prober.replay_unmodelled.of_replay(timed));
        u
    };
    Ok(Ladder {
        unverified,
        trace,
        planned_gb,
        frontier_gb,
        sglang: s.version,
        write_policy: s.server.hicache_write_policy,
        points,
        stops_paying_gb,
        policies,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn ladder_sizes() {
        // Plan 40 GB: top = max(80, 80) = 80, step = ⌈⌈80/24⌉/10⌉·10 = 10 → 10..80;
        // 3/4 = 30 and 1/2 = 20 and 1/4 = 10 are steps already; 40 is one too.
        let v = super::sizes(40, 40, super::default_top(40));
        let s: Vec<u64> = v.iter().map(|x| x.0).collect();
        assert_eq!(s, vec![10, 20, 30, 40, 50, 60, 70, 80]);
        // Plan 102: top 204, step ⌈⌈204/24⌉/10⌉·10 = 10 → 10..200, plus 102, 76, 51, 25.
        let v = super::sizes(102, 102, super::default_top(102));
        assert_eq!(v.len(), 20 + 4);
        assert!(v.contains(&(102, false)) && v.contains(&(25, false)));
        // With headroom: plan 102, frontier 115 (a point of its own, past the plan).
        let v = super::sizes(102, 115, super::default_top(115));
        assert!(v.contains(&(115, false)) && v.contains(&(102, false)));
        // A wide range: top 1000 → step ⌈⌈1000/24⌉/10⌉·10 = 50: 20 steps.
        assert_eq!(
            super::sizes(500, 500, 1000).iter().filter(|x| x.1).count(),
            20
        );
    }
}
