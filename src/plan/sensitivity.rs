//! What would break a plan: the planned `--hicache-size` started again with one thing
//! about the node a little worse — a larger checkpoint left in the page cache, more
//! memory used by other processes in or outside the job, a heavier rank process — each
//! with the largest size that still holds under it.

use serde::Serialize;
use serde_json::Value;

use super::probe::{Patch, ProbeError, Prober, StartProbe};
use super::search::size_patch;
use crate::scenario::Scenario;
use crate::units::GB;

#[derive(Debug, Clone, Serialize)]
pub struct Sensitivity {
    /// What changed, in words.
    pub what: String,
    /// The scenario field and its new value.
    pub field: &'static str,
    pub value: u64,
    /// The planned size under the change.
    pub probe: StartProbe,
    pub holds: bool,
    /// The largest size that holds under the change.
    pub largest_size_gb: Option<u64>,
}

/// The checkpoint bytes each node reads through the page cache (the scenario's, or the
/// model preset's checkpoint split over the nodes, as the start-up model takes it).
fn checkpoint_per_node(s: &Scenario) -> Option<u64> {
    match s.startup.weight_load.bytes_per_node {
        Some(b) => Some(b.0),
        None => s
            .model
            .checkpoint_bytes(s.startup.weight_load.quantization)
            .ok()
            .map(|b| b / s.layout.nnodes.max(1) as u64),
    }
}

/// The perturbations of `s`, as (words, field, new value).
fn perturbations(s: &Scenario) -> Vec<(String, &'static str, u64)> {
    let mut v = Vec::new();
    if s.startup.weight_load.through_page_cache.unwrap_or(true)
        && let Some(c) = checkpoint_per_node(s)
    {
        v.push((
            "a 5 % larger checkpoint in the page cache".to_string(),
            "startup.weight_load.bytes_per_node",
            c + c / 20,
        ));
    }
    if let Some(cg) = &s.memory.cgroup {
        v.push((
            "10 GB more used by other processes in the job's cgroup".to_string(),
            "memory.cgroup.preexisting_anon",
            cg.preexisting_anon.0 + 10 * GB,
        ));
    }
    v.push((
        "10 GB more used by other processes on the host".to_string(),
        "memory.host_other_used",
        s.memory.host_other_used.0 + 10 * GB,
    ));
    let pm = s.startup.process_memory.map_or(15 * GB, |b| b.0);
    v.push((
        "5 GB more memory per rank process".to_string(),
        "startup.process_memory",
        pm + 5 * GB,
    ));
    v
}

/// Each perturbation at `size_gb`, and the largest size that holds under it.
pub fn probes(
    prober: &Prober,
    s: &Scenario,
    size_gb: u64,
    target: f64,
) -> Result<Vec<Sensitivity>, ProbeError> {
    perturbations(s)
        .into_iter()
        .map(|(what, field, value)| {
            let extra: Patch = (field, Value::from(value));
            let mut patches = size_patch(size_gb);
            patches.push(extra.clone());
            let probe = prober.start(&patches)?;
            let holds = probe.start_probability >= target;
            let largest_size_gb = if holds {
                Some(size_gb)
            } else {
                let shifted = ShiftedProber {
                    inner: prober,
                    extra,
                };
                shifted.frontier(target, size_gb)?
            };
            Ok(Sensitivity {
                what,
                field,
                value,
                probe,
                holds,
                largest_size_gb,
            })
        })
        .collect()
}

/// A prober with one more patch on every probe.
struct ShiftedProber<'a> {
    inner: &'a Prober,
    extra: Patch,
}

impl ShiftedProber<'_> {
    /// The largest size ≤ `below` that holds under the extra patch.
    fn frontier(&self, target: f64, below: u64) -> Result<Option<u64>, ProbeError> {
        super::search::largest_passing(1, below, |s| {
            let mut p = size_patch(s);
            p.push(self.extra.clone());
            self.inner.start_probability(&p).map(|p| p >= target)
        })
    }
}
