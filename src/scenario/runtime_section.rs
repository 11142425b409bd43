//! The scenario's `runtime:` section: which trace, which engine, and overrides of the
//! replay configuration the rest of the scenario implies.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which model replays the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// SGLang's runtime rules (`mem_cache/hiradix_cache.py`), `crate::runtime`.
    #[default]
    Hiradix,
    /// An exact port of `benchmark/hicache/hicache_policy_simulator.py`
    /// (`crate::policy_sim`): page = one trace block, no timing, no L3.
    PolicySimulator,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeSection {
    /// Trace file (relative to the working directory).
    pub trace: Option<String>,
    /// `mooncake`, `bailian`, `kv-cache-tester` or `csv`; default: detected.
    pub trace_format: Option<String>,
    /// Tokens per hash id in the trace; default: the format's (Mooncake 512).
    pub block_size: Option<u32>,
    /// Replay only the first N requests.
    pub max_requests: Option<u64>,
    /// Arrival gaps × this factor about the first arrival (SGLang `bench_serving
    /// --mooncake-slowdown-factor`, `workload::slowdown`); default 1 = the trace's times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowdown_factor: Option<f64>,
    pub engine: Engine,
    /// Closed-loop `bench_multiturn`-style clients instead of a trace (timed replay
    /// only): the replay reports per-round figures (`runtime::rounds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<crate::runtime::rounds::BenchSpec>,
    /// Engines behind SGLang's router (`runtime::router`): its flags, the launcher's
    /// defaults; absent = one engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<crate::runtime::router::RouterSpec>,
    /// A prefill-decode disaggregated deployment (`runtime::pd`): the scenario's server
    /// is its prefill server; absent = the server alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pd: Option<crate::runtime::pd::PdSpec>,
    /// Overrides of `runtime::ReplayConfig` fields (`l2_pages`, `write_policy`,
    /// `timing`, …); anything not given is derived from the scenario.
    pub replay: Map<String, Value>,
}
