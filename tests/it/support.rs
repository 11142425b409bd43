//! What several CLI test modules share: the small GB300 sweep scenario with its trace
//! beside it, and reading a finished process's output.

use std::path::Path;
use std::process::Output;

/// GB300, page-cache-credit, a 2 × 2 sweep (fraction × ratio) over `trace.jsonl` beside
/// it: the scenario `reliability` and `hostile` mutate, one case per test.
pub const SWEEP_SCENARIO: &str = "\
name: gb300-sweep
sglang: page-cache-credit
seed: 2
runs: 20
node: gb300
model: glm-5.2
server:
  tp_size: 4
  page_size: 64
  kv_cache_dtype: fp8_e4m3
  mem_fraction_static: 0.85
  enable_hierarchical_cache: true
  hicache_write_policy: write_through
memory:
  host_other_used: 10GB
  cgroup:
    version: v2
    max: 900GB
startup:
  process_memory: 15GB
  weight_load:
    bytes_per_node: 420GB
    read_bandwidth: 15GB/s
  arrival:
    jitter: {dist: log_normal, median: 1s, sigma: 1.5}
  post_load: 5s
runtime:
  trace: trace.jsonl
  trace_format: mooncake
  replay:
    timing: off
sweep:
  axes:
    server.hicache_host_memory_fraction: [0.5, 1.0]
    server.hicache_ratio: [null, 2.0]
";

/// A temp folder with `trace.jsonl`: the first 300 requests of the bundled synthetic trace.
pub fn trace_workdir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let trace = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/synthetic_trace.jsonl"),
    )
    .unwrap();
    let head: String = trace.lines().take(300).map(|l| format!("{l}\n")).collect();
    std::fs::write(d.path().join("trace.jsonl"), head).unwrap();
    d
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
