//! `hicache-sim plan`: capacity planning in one command. For a scenario's node, model,
//! layout, memory and jitter, under one release or every release:
//!
//! - the largest `--hicache-size`, the largest `--hicache-ratio` (to the page) and the
//!   auto-size pool of each `--hicache-host-memory-fraction` that start every rank with
//!   P(start) ≥ a target, found by bisection over the start-up model ([`search`]);
//! - what fails one step past each frontier, and what would break the plan
//!   ([`sensitivity`]);
//! - the hit rate each host pool size buys on a trace ([`ladder`]);
//! - the flag line to paste into the recipe ([`recommend`]).

pub mod check;
pub mod ladder;
pub mod probe;
pub mod recommend;
pub mod search;
pub mod sensitivity;
pub mod text;

use rayon::prelude::*;
use serde::Serialize;

pub use crate::startup::Failure;
pub use ladder::{Ladder, LadderPoint, PolicyPoint};
pub use probe::{Patch, ProbeError, Prober, StartProbe};
pub use recommend::Recommendation;
pub use search::{FractionRow, Frontier, RatioPick, largest_passing};
pub use sensitivity::Sensitivity;

use crate::error::InputError;
use crate::release::Sglang;
use crate::sizing::AutoSizeRule;

/// What the user asked.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// P(start) every rank must reach (0 < target ≤ 1).
    pub target: f64,
    /// Monte Carlo runs per probe.
    pub runs: u64,
    pub seed: Option<u64>,
    /// `--set` overrides.
    pub sets: Vec<String>,
    /// Replay this trace instead of the scenario's (`runtime.trace`).
    pub trace: Option<String>,
    /// Skip the hit-rate ladder (start-up only).
    pub no_replay: bool,
    /// Top of the hit-rate ladder in GB (default [`ladder::default_top`]).
    pub ladder_max_gb: Option<u64>,
    /// Host memory (bytes) the recommended size must leave on every node: it must still
    /// start with P ≥ target with this much more used by other processes, inside the
    /// job's cgroup and outside it ([`Prober::with_headroom`]). 0 recommends the
    /// frontier itself.
    pub headroom: u64,
}

/// `--headroom` when not given: 10 GB a node, the step of the plan's own "more used by
/// other processes" sensitivity probes, so a recommendation survives them.
pub const DEFAULT_HEADROOM_GB: u64 = 10;

/// Runs per probe when `--runs` is not given: enough that P(start) ≥ 0.999 means at
/// most one failing run in a thousand.
pub const DEFAULT_RUNS: u64 = 1000;

/// One release's frontiers.
#[derive(Debug, Clone, Serialize)]
pub struct ReleasePlan {
    pub sglang: Sglang,
    pub summary: &'static str,
    /// The scenario does not resolve under this release (a flag it lacks, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// The model leaves no GPU memory for the KV cache: what SGLang raises, and what
    /// would help (no host pool size can start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub does_not_fit: Option<String>,
    /// The largest `--hicache-size` that starts with P ≥ target (no headroom).
    pub size: Option<Frontier<u64>>,
    /// The largest `--hicache-size` that still starts with P ≥ target with the plan's
    /// headroom used by other processes (equal to `size` at `--headroom 0`): what the
    /// plan recommends. Its `next` is the next step up, probed without the headroom used.
    pub with_headroom: Option<Frontier<u64>>,
    /// P(start) of `with_headroom`'s next step with the headroom used (at `--headroom 0`
    /// its `next` probe's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headroom_next_probability: Option<f64>,
    pub ratio: Option<Frontier<RatioPick>>,
    /// `None`: the release has no auto-size (`--hicache-host-memory-fraction`).
    pub fractions: Option<Vec<FractionRow>>,
    /// Perturbations at the planned size.
    pub sensitivity: Vec<Sensitivity>,
    /// The primary release's planned size started under this release.
    pub at_recommended: Option<StartProbe>,
    /// The smallest of all releases' frontiers started under this release.
    pub at_smallest_frontier: Option<StartProbe>,
    /// The smallest `--hicache-size` that starts under this release, when the primary
    /// release's size fails here *below* this release's own frontier (0.5.14's host >
    /// device assertion): the sizes that hold are `floor_gb ..= size`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor_gb: Option<u64>,
}

impl ReleasePlan {
    /// A release with nothing planned (no frontier, no probe): the base of the plans
    /// that stop early (the scenario invalid there, or the model does not fit).
    fn unplanned(sglang: Sglang) -> ReleasePlan {
        ReleasePlan {
            sglang,
            summary: sglang.summary(),
            invalid: None,
            does_not_fit: None,
            size: None,
            with_headroom: None,
            headroom_next_probability: None,
            ratio: None,
            fractions: None,
            sensitivity: Vec::new(),
            at_recommended: None,
            at_smallest_frontier: None,
            floor_gb: None,
        }
    }
}

/// The whole plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub scenario: String,
    pub node: String,
    pub model: String,
    pub tp_size: u64,
    pub target: f64,
    pub runs: u64,
    pub seed: u64,
    pub releases: Vec<ReleasePlan>,
    pub ladder: Option<Ladder>,
    /// Why there is no ladder (no trace, no size starts, `--no-replay`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ladder_note: Option<String>,
    pub recommendation: Recommendation,
}

/// The largest host request worth probing: the node's whole host RAM (no pool of that
/// size can start), in bytes.
fn max_bytes(s: &crate::scenario::Scenario) -> u64 {
    s.memory
        .host_total
        .map(|b| b.0)
        .unwrap_or(s.node.host_dram.0)
}

/// One release's frontiers and sensitivity probes; `headroom` bytes a node for the
/// recommended size ([`PlanOptions::headroom`]).
pub fn plan_release(
    prober: &Prober,
    target: f64,
    headroom: u64,
) -> Result<ReleasePlan, ProbeError> {
    let s = prober.scenario(&[])?;
    let version = s.version;
    // Never past the largest size a scenario may give (a huge host would make the
    // search probe a size the scenario check refuses, blamed on a field not set).
    let max_gb = max_bytes(&s)
        .div_ceil(crate::units::GB)
        .max(2)
        .min(crate::scenario::resolve::MAX_HICACHE_SIZE_GB as u64 - 1);
    let size = search::size_frontier(prober, target, max_gb)?;
    // The device pool and the KV pool's bytes per token: the plan's, no run needed.
    let (_, base) = prober.plan(&search::size_patch(1))?;
    if let Some(f) = &base.device_failure {
        return Ok(ReleasePlan {
            does_not_fit: Some(format!("{} (what would help: {})", f.message, f.hint)),
            ..ReleasePlan::unplanned(version)
        });
    }
    let ratio = search::ratio_frontier(
        prober,
        target,
        base.device_tokens,
        s.server.page_size.max(1) as u64,
        base.pools.first().map_or(0, |p| p.bytes_per_token),
        max_bytes(&s),
    )?;
    let fractions = match version.rules().auto_size {
        AutoSizeRule::None => None,
        _ => Some(search::fraction_table(prober, target)?),
    };
    let (with_headroom, headroom_next_probability) = match &size {
        Some(f) if headroom > 0 => {
            let h = prober.with_headroom(headroom)?;
            let lo = search::assert_floor_gb(prober, f.value)?;
            match search::largest_passing(lo, f.value, |g| {
                h.start_probability(&search::size_patch(g))
                    .map(|p| p >= target)
            })? {
                Some(g) => (
                    Some(Frontier {
                        value: g,
                        at: h.start(&search::size_patch(g))?,
                        next_value: g + 1,
                        next: prober.start(&search::size_patch(g + 1))?,
                    }),
                    Some(h.start_probability(&search::size_patch(g + 1))?),
                ),
                None => (None, None),
            }
        }
        _ => (
            size.clone(),
            size.as_ref().map(|f| f.next.start_probability),
        ),
    };
    let sensitivity = match &with_headroom {
        Some(f) => sensitivity::probes(prober, &s, f.value, target)?,
        None => Vec::new(),
    };
    Ok(ReleasePlan {
        sglang: version,
        summary: version.summary(),
        invalid: None,
        does_not_fit: None,
        size,
        with_headroom,
        headroom_next_probability,
        ratio,
        fractions,
        sensitivity,
        at_recommended: None,
        at_smallest_frontier: None,
        floor_gb: None,
    })
}

/// Runs the plan of `path` under each of `releases` (`None` = the scenario's own). The
/// first release is the primary one: the ladder and the recommendation's size are its.
pub fn plan(
    path: &str,
    releases: &[Option<Sglang>],
    opts: &PlanOptions,
) -> Result<Plan, InputError> {
    if !(opts.target > 0.0 && opts.target <= 1.0) {
        return Err(InputError::new(
            "--target-start",
            format!("must be in (0, 1], got {}", opts.target),
        ));
    }
    let mut sets = opts.sets.clone();
    if let Some(t) = &opts.trace {
        let abs =
            std::path::absolute(t).map_err(|e| InputError::new("--trace", format!("{t}: {e}")))?;
        if let Err(e) = crate::input::regular(&abs) {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                _ => e.to_string(),
            };
            return Err(InputError::new("--trace", format!("{t}: {why}")));
        }
        sets.push(format!("runtime.trace={}", abs.display()));
        // Another file: its format and block size are its own (detected), not those the
        // scenario gives for its own trace.
        sets.push("runtime.trace_format=".into());
        sets.push("runtime.block_size=".into());
    }
    // Read once (a scenario from a pipe, `plan <(…)`, cannot be read twice).
    let text = crate::input::read_to_string(std::path::Path::new(path), crate::input::DOCUMENT_CAP)
        .map_err(|e| InputError::new(path, format!("cannot read the scenario: {e}")))?;
    // The scenario must be valid as it stands (its own release).
    let own = Prober::from_text(&text, path, &sets, None, opts.seed, opts.runs)?;
    let s0 = own.scenario(&[]).map_err(|m| m.into_input(path))?;
    // Releases are planned in parallel (each a pure function of the scenario and the
    // release), collected in the order asked.
    let done = releases
        .par_iter()
        .map(|r| {
            let prober = match r {
                None => Ok(own.clone()),
                Some(v) => Prober::from_text(&text, path, &sets, Some(*v), opts.seed, opts.runs),
            };
            Ok(match prober {
                Ok(p) => {
                    let rp = plan_release(&p, opts.target, opts.headroom)
                        .map_err(|m| m.into_input(path))?;
                    (rp, Some(p))
                }
                Err(e) => {
                    // `None` is the scenario's own release, which resolved above.
                    let v = r.unwrap_or(own.sglang);
                    let rp = ReleasePlan {
                        invalid: Some(e.message),
                        ..ReleasePlan::unplanned(v)
                    };
                    (rp, None)
                }
            })
        })
        .collect::<Result<Vec<_>, InputError>>()?;
    let primary: Option<Prober> = done.iter().find_map(|(_, p)| p.clone());
    // Whether the primary's size, and the smallest frontier, hold under each release: a
    // probe, not a comparison of frontiers (0.5.14 also fails below the device pool).
    let primary_gb = done
        .iter()
        .find(|(rp, _)| rp.invalid.is_none())
        .and_then(|(rp, _)| rp.with_headroom.as_ref().map(|f| f.value));
    let smallest_gb = done
        .iter()
        .filter(|(rp, _)| rp.invalid.is_none())
        .filter_map(|(rp, _)| rp.size.as_ref().map(|f| f.value))
        .min();
    let plans: Vec<ReleasePlan> = done
        .into_par_iter()
        .map(|(mut rp, p)| {
            if let Some(p) = p {
                let at = |g: Option<u64>| {
                    g.map(|g| p.start(&search::size_patch(g)))
                        .transpose()
                        .map_err(|m| m.into_input(path))
                };
                rp.at_recommended = at(primary_gb)?;
                rp.at_smallest_frontier = at(smallest_gb)?;
                // Failing below this release's own frontier: where the sizes that hold
                // start (the smallest passing size above the recommended one).
                if let (Some(rec), Some(own), Some(a)) = (
                    primary_gb,
                    rp.size.as_ref().map(|f| f.value),
                    rp.at_recommended.as_ref(),
                ) && rec < own
                    && a.start_probability < opts.target
                {
                    rp.floor_gb = search::smallest_passing(rec, own, |g| {
                        p.start_probability(&search::size_patch(g))
                            .map(|x| x >= opts.target)
                    })
                    .map_err(|m| m.into_input(path))?;
                }
            }
            Ok(rp)
        })
        .collect::<Result<Vec<_>, InputError>>()?;
    let primary_plan = plans.iter().find(|p| p.invalid.is_none());
    let primary_size = primary_plan.and_then(|p| p.with_headroom.as_ref().map(|f| f.value));
    let frontier = primary_plan
        .and_then(|p| p.size.as_ref().map(|f| f.value))
        .unwrap_or(0);
    let (ladder, ladder_note) = match (&primary, primary_size) {
        _ if opts.no_replay => (None, Some("--no-replay".to_string())),
        (Some(p), Some(size)) => match ladder::run(p, size, frontier, opts.ladder_max_gb) {
            Ok(l) => (Some(l), None),
            Err(ladder::LadderError::NoTrace) => (
                None,
                Some("the scenario has no runtime.trace: pass --trace F for hit rates".into()),
            ),
            Err(ladder::LadderError::Input(e)) => return Err(e),
        },
        _ => (
            None,
            Some("no --hicache-size starts: nothing to replay".into()),
        ),
    };
    let recommendation =
        recommend::recommend(&plans, ladder.as_ref(), &s0, opts.target, opts.headroom);
    Ok(Plan {
        scenario: s0.name.clone(),
        node: s0.node_name.clone(),
        model: s0.model_name.clone(),
        tp_size: s0.layout.tp_size as u64,
        target: opts.target,
        runs: opts.runs,
        seed: own.seed,
        releases: plans,
        ladder,
        ladder_note,
        recommendation,
    })
}
