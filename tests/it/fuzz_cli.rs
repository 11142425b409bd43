//! A bounded fuzz of the real binary (issue #10): mutated scenarios, hostile `--set`
//! values and mutated trace lines. Every run must exit 0, 1, 2 or 3 (never a panic or
//! an abort), within a memory limit, and an exit 2 must say where: the file and line,
//! or the `--set` argument. The case count is fixed (PROPTEST_CASES raises it for a
//! longer campaign), so CI time is bounded.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use proptest::prelude::*;

const BIN: &str = env!("CARGO_BIN_EXE_hicache-sim");

/// Address-space limit of a fuzzed run (2 GiB): a runaway allocation aborts it, and the
/// test sees the abort.
const MEMORY_LIMIT_KIB: u64 = 2 << 20;

const SCENARIO: &str = "\
name: fuzz
sglang: page-cache-credit
seed: 2
runs: 4
node: gb300
model: glm-5.2
server:
  tp_size: 4
  page_size: 64
  kv_cache_dtype: fp8_e4m3
  mem_fraction_static: 0.85
  enable_hierarchical_cache: true
  hicache_write_policy: write_through
  hicache_ratio: 1.2
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
  trace: t.jsonl
  trace_format: mooncake
  replay:
    timing: off
";

const TRACE: &str = "\
{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 10, \"hash_ids\": [1, 2]}
{\"timestamp\": 5, \"input_length\": 1500, \"output_length\": 10, \"hash_ids\": [1, 2, 3]}
{\"timestamp\": 9, \"input_length\": 600, \"output_length\": 10, \"hash_ids\": [4, 5]}
";

/// Values a hostile user (or a broken script) puts in a field.
const HOSTILE: &[&str] = &[
    "-1",
    "0",
    "1e308",
    "-1e308",
    ".nan",
    ".inf",
    "18446744073709551616",
    "9223372036854775807",
    "null",
    "[]",
    "{}",
    "''",
    "x",
    "1e30s",
    "4e9",
    "135.5",
    "0.0000001",
    "99999999999999999999TB",
    "[1, 2, 3]",
    "{dist: log_normal, median: 1s, sigma: 1e300}",
    "{dist: uniform, low: 5s, high: 1s}",
    "\"\\u0000\"",
    "floppy",
    "v1",
    "true",
];

const FIELDS: &[&str] = &[
    "sglang",
    "seed",
    "runs",
    "node",
    "node.host_dram",
    "node.gpus",
    "model",
    "model.layers",
    "server.tp_size",
    "server.page_size",
    "server.mem_fraction_static",
    "server.hicache_ratio",
    "server.hicache_size",
    "server.hicache_host_memory_fraction",
    "server.hicache_write_policy",
    "server.hicache_storage_backend",
    "server.launch",
    "memory.host_other_used",
    "memory.cgroup.max",
    "memory.cgroup.version",
    "startup.process_memory",
    "startup.post_load",
    "startup.arrival.jitter",
    "startup.weight_load.read_bandwidth",
    "runtime.trace",
    "runtime.replay.timing",
    "runtime.replay.l1_pages",
    "runtime.max_requests",
];

/// 48 cases per property from a fixed seed (CI runs the same cases every time);
/// `PROPTEST_CASES=N` and `FUZZ_SEED=S` for a longer or another campaign.
fn config() -> ProptestConfig {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    ProptestConfig {
        cases: env("PROPTEST_CASES").unwrap_or(48) as u32,
        rng_seed: proptest::test_runner::RngSeed::Fixed(env("FUZZ_SEED").unwrap_or(10)),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn run_limited(args: &[&str], dir: &Path) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {MEMORY_LIMIT_KIB}; exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null());
    cmd.output().unwrap()
}

/// The exit-code and message contract; `located` says what an exit-2 message must name.
fn check(o: &Output, located: &dyn Fn(&str) -> bool, what: &str) -> Result<(), TestCaseError> {
    let err = String::from_utf8_lossy(&o.stderr);
    let code = o.status.code();
    prop_assert!(
        matches!(code, Some(0..=3)),
        "{what}: exit {code:?} (signal or panic)\n{err}"
    );
    prop_assert!(!err.contains("panicked"), "{what}: panic\n{err}");
    if code == Some(2) {
        prop_assert!(located(&err), "{what}: exit 2 without a location:\n{err}");
    }
    Ok(())
}

fn has_file_line(err: &str, file: &str) -> bool {
    err.match_indices(&format!("{file}:"))
        .any(|(i, m)| err[i + m.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

fn workdir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("t.jsonl"), TRACE).unwrap();
    d
}

/// A mutation of one line of the scenario: its value replaced, the line dropped,
/// duplicated, or its indentation broken.
fn mutate(text: &str, line: usize, kind: u8, value: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let i = line % lines.len();
    match kind % 4 {
        0 => {
            if let Some(c) = lines[i].find(": ") {
                lines[i] = format!("{}: {value}", &lines[i][..c]);
            } else {
                lines[i] = format!("{}: {value}", lines[i].trim_end_matches(':'));
            }
        }
        1 => {
            lines.remove(i);
        }
        2 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        _ => lines[i] = format!("   {}", lines[i]),
    }
    lines.join("\n") + "\n"
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_scenarios(line in 0usize..60, kind in 0u8..4, v in 0usize..HOSTILE.len(), replay in any::<bool>()) {
        let d = workdir();
        let text = mutate(SCENARIO, line, kind, HOSTILE[v]);
        std::fs::write(d.path().join("s.yaml"), &text).unwrap();
        let args: Vec<&str> = if replay {
            vec!["replay", "s.yaml", "--format", "json"]
        } else {
            vec!["startup", "s.yaml", "--format", "json"]
        };
        let o = run_limited(&args, d.path());
        check(&o, &|e| has_file_line(e, "s.yaml"), &format!("{args:?} on\n{text}"))?;
    }

    #[test]
    fn hostile_set_values(f in 0usize..FIELDS.len(), v in 0usize..HOSTILE.len()) {
        let d = workdir();
        std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
        let set = format!("{}={}", FIELDS[f], HOSTILE[v]);
        let o = run_limited(&["startup", "s.yaml", "--set", &set], d.path());
        check(&o, &|e| e.contains("--set") || has_file_line(e, "s.yaml"), &set)?;
    }

    #[test]
    fn mutated_trace_lines(line in 0usize..3, field in 0usize..4, v in 0usize..HOSTILE.len()) {
        let d = workdir();
        let keys = ["timestamp", "input_length", "output_length", "hash_ids"];
        let mut lines: Vec<String> = TRACE.lines().map(str::to_string).collect();
        let l = &lines[line];
        let k = format!("\"{}\": ", keys[field]);
        let start = l.find(&k).unwrap() + k.len();
        let end = l[start..].find([',', '}']).map_or(l.len(), |e| {
            // a list value runs to its closing bracket
            if l[start..].starts_with('[') { l[start..].find(']').unwrap() + 1 } else { e }
        }) + start;
        let json_value = match HOSTILE[v] {
            ".nan" => "NaN",
            ".inf" => "Infinity",
            "''" => "\"\"",
            other => other,
        };
        lines[line] = format!("{}{}{}", &l[..start], json_value, &l[end..]);
        let text = lines.join("\n") + "\n";
        std::fs::write(d.path().join("t.jsonl"), &text).unwrap();
        for engine in ["hiradix", "policy-simulator"] {
            let o = run_limited(
                &["replay", "--trace", "t.jsonl", "--trace-format", "mooncake", "--l1-pages", "4", "--l2-pages", "4", "--engine", engine],
                d.path(),
            );
            check(&o, &|e| has_file_line(e, "t.jsonl"), &format!("{engine} on\n{text}"))?;
        }
    }
}
