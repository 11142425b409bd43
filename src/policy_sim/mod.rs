//! An exact port of SGLang's standalone L1/L2 policy simulator,
//! `benchmark/hicache/hicache_policy_simulator.py` + `simulate_hicache_policies.py`
//! (upstream commit 110816e7, added by sglang PR 29049), so that on any trace this module
//! prints that tool's numbers.
//!
//! What it models (and what it does not), as the tool does: cache residency per page,
//! one page = one trace block id; L1 (D) and L2 (H) capacities in pages; no timing, no
//! L3, no transfers, no batching. Policies `main_write_through` and `boundary_l1_l2`.
//! Its exact rules, all kept here:
//! - records are sorted by timestamp with a *stable* sort before the run;
//! - the clock advances once per request; every node on the path gets that value;
//! - a match stops at the first page that is neither on L1 nor on L2;
//! - eviction heaps order candidates by (last access, path of `repr(hash id)` strings —
//!   so `"10"` sorts before `"9"` — insertion counter); stale entries are skipped on pop.
//!
//! Verified against the Python tool itself (a verbatim transcription run with CPython
//! 3.11, outside the repository): identical metrics, every counter, on the Mooncake
//! synthetic trace (pinned in `tests/it/policy_sim_synthetic.rs`) and conversation trace
//! (12,031 requests) at L1 6000 / L2 12000 and L1 6000 / L2 3000, and on 240 random
//! mixed int/str-id traces with tiny capacities and thresholds 1–3, including the 27
//! runs where the tool stops on its own `boundary invariant violation` (one pinned in
//! `tests/it/policy_sim_mixed_ids.rs`). sglang PR 29049's figures come from the Mooncake FAST'25
//! `toolagent_trace.jsonl` (23,608 requests, 409,356 block references), not shipped here.
//!
//! This is *not* SGLang's runtime `HiRadixCache` (see `crate::cache`): the runtime breaks
//! ties by `TreeNode` heap order, so the two can differ in the last digits.

mod hash_id;
mod load;
mod sim;
mod tree;

use serde::{Deserialize, Serialize};

pub use hash_id::HashId;
pub use load::{TraceRecord, load_trace_records, parse_record_line, records_from_blocks};
pub use sim::Simulator;

/// The tool's `SUPPORTED_POLICIES`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimPolicy {
    /// `main_write_through`: every request path goes to L1; a node is backed up to L2
    /// once its hit count reaches the threshold and its parent is on L2 (prefix-closed
    /// L2); L1 eviction drops backed-up copies and deletes un-backed leaves.
    MainWriteThrough,
    /// `boundary_l1_l2`: the whole request path is reserved on L2 as well; L1 eviction
    /// demotes leaves to L2 keeping a D+H boundary; L2 eviction drops D+H duplicates
    /// before deleting H-only leaves.
    BoundaryL1L2,
}

impl SimPolicy {
    pub const ALL: [SimPolicy; 2] = [SimPolicy::MainWriteThrough, SimPolicy::BoundaryL1L2];

    pub fn id(self) -> &'static str {
        match self {
            SimPolicy::MainWriteThrough => "main_write_through",
            SimPolicy::BoundaryL1L2 => "boundary_l1_l2",
        }
    }

    pub fn from_id(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.id() == s)
    }
}

impl std::fmt::Display for SimPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

fn default_threshold() -> u64 {
    1
}

/// One run of the tool: `--l1-pages`, `--l2-pages`, one policy,
/// `--write-through-threshold` (default 1), `--sanity-check-interval` (default 0 = off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySimConfig {
    pub l1_pages: u64,
    pub l2_pages: u64,
    pub policy: SimPolicy,
    #[serde(default = "default_threshold")]
    pub write_through_threshold: u64,
    #[serde(default)]
    pub sanity_check_interval: u64,
}

impl PolicySimConfig {
    pub fn new(policy: SimPolicy, l1_pages: u64, l2_pages: u64) -> Self {
        PolicySimConfig {
            l1_pages,
            l2_pages,
            policy,
            write_through_threshold: 1,
            sanity_check_interval: 0,
        }
    }
}

/// The tool's `PolicyMetrics.to_dict()`, fields in its order and with its names.
/// Rates are page-counted over all requests of the trace (no warm-up excluded):
/// `l1_hit_rate = l1_hit_pages / total_input_pages`,
/// `l1_l2_hit_rate = (l1_hit_pages + l2_hit_pages) / total_input_pages`.
/// The residency fields are counted once, after the last request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyMetrics {
    pub policy: SimPolicy,
    pub requests: u64,
    pub total_input_pages: u64,
    pub l1_hit_pages: u64,
    pub l2_hit_pages: u64,
    pub miss_pages: u64,
    pub l1_evictions: u64,
    pub l2_evictions: u64,
    pub d_to_h_demotions: u64,
    pub dh_to_d_l2_dedup_evictions: u64,
    pub h_to_deleted_evictions: u64,
    pub failed_h_allocations: u64,
    pub d_pages: u64,
    pub h_pages: u64,
    pub dh_pages: u64,
    pub unique_cached_pages: u64,
    pub duplicate_ratio: f64,
    pub l1_hit_rate: f64,
    pub l1_l2_hit_rate: f64,
}

/// What [`run`] returns: the tool's metrics for one policy.
pub type PolicySimReport = PolicyMetrics;

impl PolicyMetrics {
    pub fn new(policy: SimPolicy) -> Self {
        PolicyMetrics {
            policy,
            requests: 0,
            total_input_pages: 0,
            l1_hit_pages: 0,
            l2_hit_pages: 0,
            miss_pages: 0,
            l1_evictions: 0,
            l2_evictions: 0,
            d_to_h_demotions: 0,
            dh_to_d_l2_dedup_evictions: 0,
            h_to_deleted_evictions: 0,
            failed_h_allocations: 0,
            d_pages: 0,
            h_pages: 0,
            dh_pages: 0,
            unique_cached_pages: 0,
            duplicate_ratio: 0.0,
            l1_hit_rate: 0.0,
            l1_l2_hit_rate: 0.0,
        }
    }

    /// The tool's `l1_hit_rate` / `l1_l2_hit_rate` properties (0 when no pages).
    pub fn refresh_rates(&mut self) {
        let t = self.total_input_pages;
        if t == 0 {
            self.l1_hit_rate = 0.0;
            self.l1_l2_hit_rate = 0.0;
        } else {
            self.l1_hit_rate = self.l1_hit_pages as f64 / t as f64;
            self.l1_l2_hit_rate = (self.l1_hit_pages + self.l2_hit_pages) as f64 / t as f64;
        }
    }
}

/// Errors of the simulator: a bad configuration, or one of the tool's own
/// `AssertionError`s (an invariant the tool checks and would crash on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicySimError {
    #[error("invalid policy simulator configuration: {0}")]
    Config(String),
    #[error("policy simulator invariant violated: {0}")]
    Invariant(String),
}

/// `HiCachePolicySimulator(...).simulate_records(records)`: stable sort by timestamp,
/// replay every request, then count the final residency.
pub fn run(
    cfg: &PolicySimConfig,
    records: &[TraceRecord],
) -> Result<PolicySimReport, PolicySimError> {
    let mut sim = Simulator::new(
        cfg.policy,
        cfg.l1_pages,
        cfg.l2_pages,
        cfg.write_through_threshold,
    )?;
    let mut order: Vec<usize> = (0..records.len()).collect();
    // `sorted(records, key=lambda r: r.timestamp)`: stable; NaN is rejected by the loader.
    order.sort_by(|&a, &b| {
        records[a]
            .timestamp
            .partial_cmp(&records[b].timestamp)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let total = order.len();
    for (i, &r) in order.iter().enumerate() {
        sim.process_request(&records[r].hash_ids, false)?;
        let index = i + 1;
        if cfg.sanity_check_interval > 0
            && ((index as u64).is_multiple_of(cfg.sanity_check_interval) || index == total)
        {
            sim.sanity_check()?;
        }
    }
    sim.refresh_final_residency_metrics();
    Ok(sim.metrics().clone())
}

/// `simulate_policies`: the same records under several policies, in the given order.
pub fn simulate_policies(
    records: &[TraceRecord],
    policies: &[SimPolicy],
    l1_pages: u64,
    l2_pages: u64,
    write_through_threshold: u64,
) -> Result<Vec<PolicyMetrics>, PolicySimError> {
    policies
        .iter()
        .map(|&p| {
            let mut cfg = PolicySimConfig::new(p, l1_pages, l2_pages);
            cfg.write_through_threshold = write_through_threshold;
            run(&cfg, records)
        })
        .collect()
}

/// `simulate_hicache_policies.py --output-json`: the payload it writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicySimPayload {
    pub trace: String,
    pub l1_pages: u64,
    pub l2_pages: u64,
    pub max_requests: Option<u64>,
    pub write_through_threshold: u64,
    /// policy id → metrics, in run order (serialised as a JSON object).
    #[serde(serialize_with = "ser_metrics_map")]
    pub metrics: Vec<PolicyMetrics>,
}

fn ser_metrics_map<S: serde::Serializer>(m: &[PolicyMetrics], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(m.len()))?;
    for x in m {
        map.serialize_entry(x.policy.id(), x)?;
    }
    map.end()
}

/// `print_summary` of `simulate_hicache_policies.py`: a left-aligned table with rates
/// as `{100*x:7.2f}%`.
pub fn format_summary(results: &[PolicyMetrics]) -> String {
    let headers = [
        "policy",
        "requests",
        "pages",
        "l1_hit",
        "l1+l2_hit",
        "D",
        "H",
        "D+H",
        "unique",
        "failed_H",
    ];
    let rate = |x: f64| format!("{:7.2}%", 100.0 * x);
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|m| {
            vec![
                m.policy.id().to_string(),
                m.requests.to_string(),
                m.total_input_pages.to_string(),
                rate(m.l1_hit_rate),
                rate(m.l1_l2_hit_rate),
                m.d_pages.to_string(),
                m.h_pages.to_string(),
                m.dh_pages.to_string(),
                m.unique_cached_pages.to_string(),
                m.failed_h_allocations.to_string(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain(std::iter::once(headers[i].len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, &w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = String::new();
    out.push_str(&line(&headers.map(String::from)));
    out.push('\n');
    out.push_str(&line(
        &widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>(),
    ));
    out.push('\n');
    for r in &rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
