//! A bounded fuzz of the real binary: mutated scenarios, hostile `--set`
//! values and mutated trace lines. Every run must exit 0, 1, 2 or 3 (never a panic or
//! an abort), within a memory limit, and an exit 2 must say where: the file and line,
//! or the `--set` argument. The case count is fixed (PROPTEST_CASES raises it for a
//! longer campaign), so CI time is bounded.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use proptest::prelude::*;

use super::support::BIN;
use super::support::{gb300_host, gb300_jitter, gb300_server};

/// Address-space limit of a fuzzed run (2 GiB): a runaway allocation aborts it, and the
/// test sees the abort.
const MEMORY_LIMIT_KIB: u64 = 2 << 20;

const SCENARIO: &str = concat!(
    "\
name: fuzz
sglang: page-cache-credit
seed: 2
runs: 4
",
    gb300_server!(),
    "  hicache_write_policy: write_through\n  hicache_ratio: 1.2\n",
    gb300_host!(),
    gb300_jitter!(),
    "  post_load: 5s\n",
    "\
runtime:
  trace: t.jsonl
  trace_format: mooncake
  replay:
    timing: off
"
);

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
        tally("mutated_scenarios", &o);
        check(&o, &|e| has_file_line(e, "s.yaml"), &format!("{args:?} on\n{text}"))?;
    }

    #[test]
    fn hostile_set_values(f in 0usize..FIELDS.len(), v in 0usize..HOSTILE.len()) {
        let d = workdir();
        std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
        let set = format!("{}={}", FIELDS[f], HOSTILE[v]);
        let o = run_limited(&["startup", "s.yaml", "--set", &set], d.path());
        tally("hostile_set_values", &o);
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
            tally("mutated_trace_lines", &o);
            check(&o, &|e| has_file_line(e, "t.jsonl"), &format!("{engine} on\n{text}"))?;
        }
    }
}

// ---- trace convert, binary traces, plan, check headers, launch files ----

/// Fewer cases for the properties that run heavier commands (`plan`), same fixed seed.
fn config_n(n: u32) -> ProptestConfig {
    let mut c = config();
    if std::env::var("PROPTEST_CASES").is_err() {
        c.cases = n;
    }
    c
}

/// The trace converted once per process (the tests mutate copies of its bytes).
fn converted() -> &'static [u8] {
    static BIN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let d = workdir();
        let o = run_limited(&["trace", "convert", "t.jsonl", "-o", "t.bin"], d.path());
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::read(d.path().join("t.bin")).unwrap()
    })
}

/// A recipe file for `check`, with `# hicache-sim:` header lines in front.
const RECIPE: &str = "python -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 \\\n  --page-size 64 --enable-hierarchical-cache --hicache-size 100\n";

/// Words a hostile header or launch line is made of.
const WORDS: &[&str] = &[
    "node=gb300",
    "node=",
    "=gb300",
    "node",
    "memory.cgroup.max=900GB",
    "memory.cgroup.max 900GB",
    "name=\"a b\"",
    "name=\"a b",
    "name='x'",
    "name=a\\ b",
    "#",
    "runs=3",
    "runs=-1",
    "sglang=0.5.24",
    "sglang=0.5.20",
    "model=your-model",
    "server.hicache_size=1e9",
    "server.hicache_host_memory_fraction=null",
    "\u{0}",
    "\r",
    "$HOME",
    "x=$((1/0))",
];

/// Pieces a hostile launch text is made of: variables that grow, arithmetic, CRs,
/// continuations, substitutions.
const LAUNCH_PIECES: &[&str] = &[
    "A=xx\n",
    "A=$A$A\n",
    "A=\"$A$A$A$A\"\n",
    "B=$((2**62))\n",
    "B=$(( B * B ))\n",
    "TP=$((8/2))\n",
    "TP=$((1/0))\n",
    "TP=$((\n",
    "export X=$A\n",
    "\r\n",
    "\\\r\n",
    "$(echo hi)\n",
    "`id`\n",
    "bash -c \"$A\"\n",
    "python -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp $TP --served-model-name $A\n",
    "python -m sglang.launch_server --model-path $MODEL --tp 4\n",
    "--page-size 64 --max-total-tokens 1.5M \\\n",
    "sglang serve zai-org/GLM-5.2-NVFP4 --tp $((TP))\n",
];

proptest! {
    #![proptest_config(config())]

    /// `trace convert` on a mutated trace: a located exit 2, or a binary that replays as
    /// the text does (the same exit code; on a refusal the same message, at the same
    /// line of the binary: a request the replay refuses, such as too few hash ids for its
    /// input, is still a request of the trace, which `convert` keeps).
    #[test]
    fn trace_convert_of_mutated_traces(line in 0usize..3, cut in 0usize..200, v in 0usize..HOSTILE.len()) {
        let d = workdir();
        let mut lines: Vec<String> = TRACE.lines().map(str::to_string).collect();
        let l = &lines[line];
        let at = cut.min(l.len());
        lines[line] = format!("{}{}{}", &l[..at], HOSTILE[v], &l[at..]);
        let text = lines.join("\n") + "\n";
        std::fs::write(d.path().join("t.jsonl"), &text).unwrap();
        let o = run_limited(&["trace", "convert", "t.jsonl", "-o", "t.bin"], d.path());
        tally("trace_convert_of_mutated_traces", &o);
        check(&o, &|e| has_file_line(e, "t.jsonl"), &format!("convert\n{text}"))?;
        if o.status.code() == Some(0) {
            let o = run_limited(&["replay", "--trace", "t.bin", "--l1-pages", "4", "--l2-pages", "4"], d.path());
            tally("trace_convert_then_replay", &o);
            check(&o, &|e| e.contains("t.bin"), "replay of the converted trace")?;
            let text_run = run_limited(&["replay", "--trace", "t.jsonl", "--l1-pages", "4", "--l2-pages", "4"], d.path());
            prop_assert_eq!(o.status.code(), text_run.status.code(), "{}", String::from_utf8_lossy(&o.stderr));
            if o.status.code() == Some(2) {
                prop_assert_eq!(
                    String::from_utf8_lossy(&o.stderr).replace("t.bin", "t.jsonl"),
                    String::from_utf8_lossy(&text_run.stderr).to_string()
                );
            }
        } else {
            prop_assert!(!d.path().join("t.bin").exists(), "a refused convert left t.bin");
        }
    }

    /// A binary trace with one bit flipped anywhere is refused, exit 2 naming the file,
    /// by the streaming reader (`replay`) and `trace stats`.
    #[test]
    fn binary_trace_bit_flips_are_refused(pos in any::<proptest::sample::Index>(), bit in 0u8..8) {
        let d = workdir();
        let mut b = converted().to_vec();
        let i = pos.index(b.len());
        b[i] ^= 1 << bit;
        std::fs::write(d.path().join("t.bin"), &b).unwrap();
        for args in [
            vec!["replay", "--trace", "t.bin", "--l1-pages", "4", "--l2-pages", "4"],
            vec!["trace", "stats", "t.bin"],
        ] {
            let o = run_limited(&args, d.path());
            tally("binary_trace_bit_flips_are_refused", &o);
            check(&o, &|e| e.contains("t.bin"), &format!("{args:?} with byte {i} bit {bit} flipped"))?;
            prop_assert_eq!(o.status.code(), Some(2), "byte {} bit {} flipped was read: {:?}", i, bit, args);
        }
    }

    /// A binary trace cut short, or whose header declares other counts (huge ones in a
    /// file padded to match them): exit 2 naming the file, within the memory limit.
    #[test]
    fn binary_trace_cuts_and_declared_lengths(cut in any::<proptest::sample::Index>(), n in any::<u64>(), m in any::<u64>(), pad in any::<bool>()) {
        let d = workdir();
        let good = converted();
        let mut b = good[..cut.index(good.len())].to_vec();
        if b.len() >= 40 && cut.index(4) > 0 {
            // other counts: small, huge, or the file padded (sparse) to what they declare
            let n = n % 10_000_000;
            let m = m % 100_000_000;
            b[24..32].copy_from_slice(&n.to_le_bytes());
            b[32..40].copy_from_slice(&m.to_le_bytes());
            std::fs::write(d.path().join("t.bin"), &b).unwrap();
            if pad {
                let len = 56 + 16 * n + 2 * (4 * n).div_ceil(8) * 8 + 8 * (n + 1) + 8 * m;
                let f = std::fs::OpenOptions::new().write(true).open(d.path().join("t.bin")).unwrap();
                f.set_len(len).unwrap();
            }
        } else {
            std::fs::write(d.path().join("t.bin"), &b).unwrap();
        }
        let o = run_limited(&["replay", "--trace", "t.bin", "--l1-pages", "4"], d.path());
        tally("binary_trace_cuts_and_declared_lengths", &o);
        check(&o, &|e| e.contains("t.bin"), "a cut or re-counted binary trace")?;
        prop_assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    }

    /// `# hicache-sim:` header lines of hostile words: exit 0–3, an exit 2 names the file
    /// and line (or the flag); never a panic.
    #[test]
    fn check_headers(words in proptest::collection::vec(0usize..WORDS.len(), 1..8), lines in 1usize..4) {
        let d = workdir();
        let mut head = String::new();
        for (k, w) in words.iter().enumerate() {
            if k % lines == 0 {
                head.push_str("\n# hicache-sim:");
            }
            head.push(' ');
            head.push_str(WORDS[*w]);
        }
        let text = format!("#!/bin/bash{head}\n{RECIPE}");
        std::fs::write(d.path().join("r.sh"), &text).unwrap();
        let o = run_limited(&["check", "r.sh", "--runs", "4", "--sglang", "0.5.21"], d.path());
        tally("check_headers", &o);
        check(&o, &|e| has_file_line(e, "r.sh") || e.contains("r.sh:") || e.contains("--set"), &format!("check on\n{text}"))?;
    }

    /// Launch texts of growing variables, arithmetic, CRs, substitutions: exit 0–3 within
    /// the memory limit (expansion is bounded), an exit 2 names the file and line.
    #[test]
    fn launch_file_expansion(pieces in proptest::collection::vec(0usize..LAUNCH_PIECES.len(), 1..40)) {
        let d = workdir();
        let mut text = String::from("# hicache-sim: node=gb300\n");
        for p in &pieces {
            text.push_str(LAUNCH_PIECES[*p]);
        }
        std::fs::write(d.path().join("r.sh"), &text).unwrap();
        let o = run_limited(&["check", "r.sh", "--runs", "4"], d.path());
        tally("launch_file_expansion", &o);
        check(&o, &|e| has_file_line(e, "r.sh"), &format!("check on\n{text:?}"))?;
    }
}

proptest! {
    #![proptest_config(config_n(12))]

    /// `plan` on mutated scenarios (start-up only, few runs): exit 0–3, located exit 2.
    #[test]
    fn plan_on_mutated_scenarios(line in 0usize..60, kind in 0u8..4, v in 0usize..HOSTILE.len()) {
        let d = workdir();
        let text = mutate(SCENARIO, line, kind, HOSTILE[v]);
        std::fs::write(d.path().join("s.yaml"), &text).unwrap();
        let o = run_limited(&["plan", "s.yaml", "--runs", "4", "--no-replay", "--format", "json"], d.path());
        tally("plan_on_mutated_scenarios", &o);
        check(&o, &|e| has_file_line(e, "s.yaml") || e.contains("--"), &format!("plan on\n{text}"))?;
    }
}

// ---- config.json mutants, time keys, capture trees ----

/// JSON values a broken or hostile config.json holds where a number belongs.
const JSON_HOSTILE: &[&str] = &[
    "\"8\"",
    "-1",
    "0",
    "1.5",
    "4294967296",
    "4294967295",
    "18446744073709551615",
    "1e308",
    "null",
    "[]",
    "{}",
    "true",
    "\"abc\"",
    "[1, 2, \"x\"]",
];

/// Keys of a config.json the sizing reads (dimensions, counts, layer lists, the
/// quantisation).
const CONFIG_KEYS: &[&str] = &[
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "moe_intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "index_head_dim",
    "vocab_size",
    "n_routed_experts",
    "num_experts",
    "num_experts_per_tok",
    "num_nextn_predict_layers",
    "sliding_window",
    "layer_types",
    "compress_ratios",
    "quantization_config",
    "architectures",
    "text_config",
    "torch_dtype",
];

/// Catalogue models of every attention kind the sizing reads: dense GQA, MLA + DSA,
/// hybrid linear attention (Qwen3.5, Nemotron-H), sliding window (gpt-oss, Gemma 4),
/// DeepSeek-V4, an NVFP4 checkpoint.
const CONFIG_MODELS: &[&str] = &[
    "meta-llama/Meta-Llama-3.1-8B",
    "deepseek-ai/DeepSeek-V3.2",
    "Qwen/Qwen3.5-122B-A10B",
    "google/gemma-4-26B-A4B",
    "nvidia/Nemotron-H-56B-Base-8K",
    "openai/gpt-oss-120b",
    "deepseek-ai/DeepSeek-V4-Flash",
    "nvidia/DeepSeek-V3.2-NVFP4",
];

/// With `FUZZ_TALLY=FILE`, one line per run (`property exit-code`) is appended to FILE:
/// the exit codes of a campaign, for its report.
fn tally(property: &str, o: &Output) {
    if let Some(f) = std::env::var_os("FUZZ_TALLY") {
        use std::io::Write;
        if let Ok(mut w) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(f)
        {
            let code = o.status.code();
            // An exit 3 (an I/O failure) with the first words of its message.
            let why = match code {
                Some(3) => String::from_utf8_lossy(&o.stderr)
                    .chars()
                    .take(160)
                    .collect(),
                _ => String::new(),
            };
            let _ = writeln!(w, "{property} {code:?} {why}");
        }
    }
}

fn catalogue_config(id: &str) -> serde_json::Value {
    static C: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let c = C.get_or_init(|| {
        serde_json::from_str(include_str!("../../src/model/catalogue.json")).unwrap()
    });
    c["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["hf_id"] == id)
        .unwrap_or_else(|| panic!("{id} not in the catalogue"))["config"]
        .clone()
}

/// Time and rate keys of the replay, with values a hostile user writes.
const TIME_KEYS: &[&str] = &[
    "tokenize_per_token",
    "prefill_tokens_per_s",
    "decode_tokens_per_s",
    "bandwidth_efficiency",
    "h2d_run_overhead",
    "d2h_run_overhead",
    "storage_latency",
    "prefetch_timeout_base",
    "prefetch_timeout_max",
    "scheduler_idle_poll",
    "storage_read_bandwidth",
    "h2d_bandwidth",
];
const TIME_VALUES: &[&str] = &[
    "6756",
    "6756ns",
    "1e300",
    "1e-300",
    "-1",
    "0",
    "1e30s",
    "999999h",
    ".nan",
    "x",
    "4GB/s",
    "1e300GB/s",
    "0.5",
    "2ms",
];

proptest! {
    #![proptest_config(config())]

    /// A catalogue model's config.json with one key set to a hostile value, sized by
    /// `startup`: exit 0–3 within 2 GiB, never a panic; an exit 2 names the config file
    /// or the scenario.
    #[test]
    fn config_json_mutants(m in 0usize..CONFIG_MODELS.len(), k in 0usize..CONFIG_KEYS.len(), v in 0usize..JSON_HOSTILE.len(), text_config in any::<bool>()) {
        let d = workdir();
        let mut cfg = catalogue_config(CONFIG_MODELS[m]);
        let value: serde_json::Value = serde_json::from_str(JSON_HOSTILE[v]).unwrap();
        // The key in the text config when the model has one (and asked), else the root.
        match cfg.get_mut("text_config").filter(|t| text_config && t.is_object()) {
            Some(t) => t[CONFIG_KEYS[k]] = value,
            None => cfg[CONFIG_KEYS[k]] = value,
        }
        std::fs::create_dir_all(d.path().join("cfg")).unwrap();
        std::fs::write(d.path().join("cfg/config.json"), cfg.to_string()).unwrap();
        std::fs::write(
            d.path().join("s.yaml"),
            "name: \"fuzz\"\nnode: hgx-h200\nmodel: {config: cfg/config.json}\nserver: {tp_size: 8}\n",
        )
        .unwrap();
        let o = run_limited(&["startup", "s.yaml", "--format", "json"], d.path());
        tally("config_json_mutants", &o);
        check(
            &o,
            &|e| e.contains("config.json") || has_file_line(e, "s.yaml"),
            &format!("{} with {} = {}", CONFIG_MODELS[m], CONFIG_KEYS[k], JSON_HOSTILE[v]),
        )?;
    }

    /// A timed replay with one time or rate key set to a hostile value: exit 0–3, an
    /// exit 2 names `--config`; a replay that runs ends (the clock never overflows into
    /// a panic).
    #[test]
    fn hostile_time_keys(k in 0usize..TIME_KEYS.len(), v in 0usize..TIME_VALUES.len()) {
        let d = workdir();
        let kv = format!("{}={}", TIME_KEYS[k], TIME_VALUES[v]);
        let o = run_limited(
            &["replay", "--trace", "t.jsonl", "--timing", "on", "--l1-pages", "4", "--config", &kv],
            d.path(),
        );
        tally("hostile_time_keys", &o);
        check(&o, &|e| e.contains("--config"), &format!("replay --config {kv}"))?;
    }

    /// `capture` of a procfs and cgroup v2 tree whose files hold hostile values: exit
    /// 0–3 within 2 GiB; an exit 2 names the file it could not read as SGLang would.
    #[test]
    fn capture_of_hostile_trees(file in 0usize..6, v in 0usize..HOSTILE.len()) {
        let d = workdir();
        let root = d.path();
        let put = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let g = 1u64 << 30;
        put("proc/meminfo", &format!(
            "MemTotal: {} kB\nMemFree: {} kB\nMemAvailable: {} kB\nActive(file): {} kB\nInactive(file): {} kB\n",
            1000 * g / 1024, 700 * g / 1024, 900 * g / 1024, 40 * g / 1024, 100 * g / 1024
        ));
        put("proc/self/cgroup", "0::/job\n");
        put("proc/self/mountinfo", &format!(
            "30 23 0:26 / {} rw,nosuid - cgroup2 cgroup2 rw\n",
            root.join("cg").display()
        ));
        put("cg/memory.stat", "anon 1\n");
        put("cg/job/memory.max", &format!("{}\n", 900 * g));
        put("cg/job/memory.current", &format!("{}\n", 10 * g));
        put("cg/job/memory.min", "0\n");
        put("cg/job/memory.stat", "anon 1000\nfile 0\nshmem 0\nactive_file 0\ninactive_file 0\nfile_dirty 0\nfile_writeback 0\n");
        // One file holds the hostile value.
        let (rel, text) = match file {
            0 => ("proc/meminfo", format!("MemTotal: {} kB\nMemAvailable: {} kB\n", HOSTILE[v], HOSTILE[v])),
            1 => ("cg/job/memory.max", format!("{}\n", HOSTILE[v])),
            2 => ("cg/job/memory.current", format!("{}\n", HOSTILE[v])),
            3 => ("cg/job/memory.stat", format!("anon {}\nactive_file {}\n", HOSTILE[v], HOSTILE[v])),
            4 => ("proc/self/cgroup", format!("0::{}\n", HOSTILE[v])),
            _ => ("cg/job/memory.min", format!("{}\n", HOSTILE[v])),
        };
        put(rel, &text);
        let o = run_limited(
            &["capture", "--proc-root", root.join("proc").to_str().unwrap(), "--node", "gb300", "--nvidia-smi", "none"],
            root,
        );
        tally("capture_of_hostile_trees", &o);
        check(&o, &|e| e.contains("proc") || e.contains("cg/") || e.contains("memory."), &format!("capture with {rel} = {:?}", HOSTILE[v]))?;
    }
}
