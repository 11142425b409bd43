//! What several test modules share: the binary under test, the GB300 tray's scenario
//! head, the small GB300 sweep scenario with its trace beside it, reading and checking a
//! finished process's output, and the header line of the golden files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// This build's `hicache-sim`.
pub const BIN: &str = env!("CARGO_BIN_EXE_hicache-sim");

/// `hicache-sim` as an `assert_cmd` command (no arguments yet).
pub fn sim() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("hicache-sim").unwrap()
}

/// Runs `hicache-sim ARGS` in `dir` with no standard input.
pub fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A file of this repository.
pub fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// The GB300 GLM-5.2 tray the CLI tests run (TP 4, fp8 KV, HiCache on), in three parts
/// that the scenarios put together: [`gb300_server!`] (node, model, `server:` up to
/// HiCache on), [`gb300_host!`] (`memory:` and `startup:` up to the weight load) and
/// [`gb300_jitter!`] (the arrival jitter); [`gb300_tray!`] is the whole head with the
/// write-through policy and the jitter. Macros, so that a `const` scenario (`concat!`)
/// and a `format!` one share the same text.
macro_rules! gb300_server {
    () => {
        "\
node: gb300
model: glm-5.2
server:
  tp_size: 4
  page_size: 64
  kv_cache_dtype: fp8_e4m3
  mem_fraction_static: 0.85
  enable_hierarchical_cache: true
"
    };
}
pub(crate) use gb300_server;

/// See [`gb300_server!`].
macro_rules! gb300_host {
    () => {
        "\
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
"
    };
}
pub(crate) use gb300_host;

/// See [`gb300_server!`] (braces: not for a `format!` string).
macro_rules! gb300_jitter {
    () => {
        "  arrival:\n    jitter: {dist: log_normal, median: 1s, sigma: 1.5}\n"
    };
}
pub(crate) use gb300_jitter;

/// See [`gb300_server!`]: everything from `node:` to `startup.post_load`.
macro_rules! gb300_tray {
    () => {
        concat!(
            $crate::support::gb300_server!(),
            "  hicache_write_policy: write_through\n",
            $crate::support::gb300_host!(),
            $crate::support::gb300_jitter!(),
            "  post_load: 5s\n"
        )
    };
}
pub(crate) use gb300_tray;

/// GB300, page-cache-credit, a 2 × 2 sweep (fraction × ratio) over `trace.jsonl` beside
/// it: the scenario `reliability` and `hostile` mutate, one case per test.
pub const SWEEP_SCENARIO: &str = concat!(
    "\
name: gb300-sweep
sglang: page-cache-credit
seed: 2
runs: 20
",
    gb300_tray!(),
    "\
runtime:
  trace: trace.jsonl
  trace_format: mooncake
  replay:
    timing: off
sweep:
  axes:
    server.hicache_host_memory_fraction: [0.5, 1.0]
    server.hicache_ratio: [null, 2.0]
"
);

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

/// A successful exit, or the failure shows standard error.
#[track_caller]
pub fn succeeded(o: &Output) {
    assert!(o.status.success(), "{}", stderr(o));
}

/// Exit 0, or the failure shows standard error.
#[track_caller]
pub fn ok(o: &Output) {
    assert_eq!(code(o), 0, "{}", stderr(o));
}

/// Exit 2 (bad input) with every one of `words` on standard error.
#[track_caller]
pub fn exit2(o: &Output, words: &[&str]) {
    assert_eq!(code(o), 2, "stdout:\n{}\nstderr:\n{}", stdout(o), stderr(o));
    for w in words {
        assert!(stderr(o).contains(w), "missing `{w}` in:\n{}", stderr(o));
    }
}

/// The `# key=value key=value` first line of a golden file, as a map.
pub fn golden_header(line: &str) -> BTreeMap<String, String> {
    line.strip_prefix("# ")
        .expect("header line")
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("key=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// `csv` with the cell of data row `row` (0 = the first after the header) in column
/// `col` set to `value`, written back as the sweep writes it (RFC 4180 quoting: a cell
/// may hold commas, so a naive split would shift the columns).
pub fn set_csv_cell(csv: &str, row: usize, col: &str, value: &str) -> String {
    let mut r = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
    let header = r.headers().unwrap().clone();
    let c = header.iter().position(|h| h == col).unwrap();
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(&header).unwrap();
    for (i, rec) in r.records().enumerate() {
        let mut cells: Vec<String> = rec.unwrap().iter().map(str::to_string).collect();
        if i == row {
            cells[c] = value.to_string();
        }
        w.write_record(&cells).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

/// The cells of data row `row` of `csv`, by column name.
pub fn csv_row(csv: &str, row: usize) -> Vec<(String, String)> {
    let mut r = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
    let header = r.headers().unwrap().clone();
    let rec = r.records().nth(row).unwrap().unwrap();
    header
        .iter()
        .map(str::to_string)
        .zip(rec.iter().map(str::to_string))
        .collect()
}

/// A table in the docs book that a test computes: the block between
/// `<!-- BEGIN generated: NAME -->` and `<!-- END generated: NAME -->` in `doc` (a path
/// from the repository's root) must equal `content`. `UPDATE_DOCS=1` writes it instead,
/// so a figure in the book is always the one the test computed, never one copied by hand.
pub fn check_doc(doc: &str, name: &str, content: &str) -> Result<(), String> {
    let path = repo(doc);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{doc}: {e}"))?;
    let (begin, end) = (
        format!("<!-- BEGIN generated: {name} -->\n"),
        format!("<!-- END generated: {name} -->"),
    );
    let a = text
        .find(&begin)
        .ok_or_else(|| format!("{doc}: no `{}` marker", begin.trim_end()))?
        + begin.len();
    let b = a + text[a..]
        .find(&end)
        .ok_or_else(|| format!("{doc}: no `{end}` marker"))?;
    if &text[a..b] == content {
        return Ok(());
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let new = format!("{}{content}{}", &text[..a], &text[b..]);
        return std::fs::write(&path, new).map_err(|e| format!("{doc}: {e}"));
    }
    Err(format!(
        "{doc}: the `{name}` table is stale or was edited by hand; run `UPDATE_DOCS=1 cargo test --release --test it` and review the diff"
    ))
}

/// Makes a FIFO at `path` with a writer that opens and closes it as often as anything
/// opens it for reading: a build that opens it reads an empty file (and fails on what
/// the test asserts) instead of waiting forever for a writer. A build that refuses it
/// leaves the writer waiting in `open` until the test process ends.
pub fn fifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        while let Ok(f) = std::fs::OpenOptions::new().write(true).open(&p) {
            drop(f);
        }
    });
}

/// A bundled trace (`traces/NAME`) read as the golden-file tests read it: `block`-token
/// hash ids, at `page_size`-token pages.
pub fn bundled_trace(
    name: &str,
    block: u32,
    page_size: u32,
) -> Vec<hicache_sim::workload::Request> {
    let opts = hicache_sim::workload::TraceOptions {
        block_size: Some(block),
        ..Default::default()
    };
    hicache_sim::workload::open_trace_with(&repo("traces").join(name), &opts, page_size)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// DeepSeek-V3's NextN draft as SGLang resolves an unset `--speculative-num-steps`
/// (3 steps, top-k 1, 4 draft tokens; one MTP layer over 61), the acceptance unset.
pub fn mtp_draft() -> hicache_sim::runtime::cost::Speculative {
    hicache_sim::runtime::cost::Speculative {
        algorithm: "EAGLE".into(),
        num_steps: 3,
        eagle_topk: 1,
        num_draft_tokens: 4,
        draft_layers: 1,
        target_layers: 61,
        accept_length: None,
    }
}

/// The golden files (`*.txt`) of `tests/golden/DIR`, sorted by name.
pub fn golden_txt_files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo("tests/golden").join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    v.sort();
    v
}

/// The timing-off replay with an SWA pool, as SGLang 0.5.23's scheduler calls the tree
/// one request at a time (`Capacities::swa`, `call_pattern: scheduler_0_5_23`): `l1`
/// full and `swa` SWA pages, each request decoding its output tokens when `decode`.
pub fn swa_replay_config(
    page_size: u32,
    l1: u64,
    swa: u64,
    window: u32,
    checks: bool,
    decode: bool,
) -> hicache_sim::runtime::ReplayConfig {
    use hicache_sim::cache::{EvictionPolicy, TreeKind};
    use hicache_sim::runtime::{
        CallPattern, Capacities, Measurement, ReplayConfig, SwaPool, TreePolicy,
    };
    ReplayConfig {
        capacities: Capacities {
            page_size,
            l1_pages: l1,
            l2_pages: 0,
            swa: Some(SwaPool {
                pages: swa,
                window,
                decode,
            }),
            ..Default::default()
        },
        policy: TreePolicy {
            tree: TreeKind::Unified0523,
            eviction_policy: EvictionPolicy::Lru,
            call_pattern: CallPattern::Scheduler0523,
            ..Default::default()
        },
        measurement: Measurement {
            debug_checks: checks,
            ..Default::default()
        },
        ..ReplayConfig::default()
    }
}

/// One golden file of SGLang's SWA tree (`tests/sglang_diff/swa_tree/run.sh`): its
/// name, the replay of its point, the bundled trace it ran and SGLang's per-request
/// device hit pages.
pub struct SwaGolden {
    pub name: String,
    pub cfg: hicache_sim::runtime::ReplayConfig,
    pub trace: String,
    pub block: u32,
    pub pages: Vec<u64>,
}

/// Reads an SWA golden file, checking that its header names the modelled pattern:
/// sglang 0.5.23, components FULL+SWA, LRU, one request at a time, no chunked prefill,
/// the waiting-prefix touch, and with `decode=1` no output cap.
pub fn swa_golden(p: &Path) -> SwaGolden {
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    let h = golden_header(lines.next().unwrap());
    let pages: Vec<u64> = lines.map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(h["sglang"], "0.5.23");
    assert_eq!(h["components"], "FULL,SWA");
    assert_eq!(h["policy"], "lru");
    assert_eq!(
        (
            h["pattern"].as_str(),
            h["waiting_touch"].as_str(),
            h["prefill_checkpoint"].as_str()
        ),
        ("scheduler", "1", "0")
    );
    // chunk=C: chunked prefill at C tokens (the driver's --chunk, SGLang's
    // --chunked-prefill-size; 0 = none), named `.c<C>`.
    let chunk: u32 = h["chunk"].parse().unwrap();
    let name = p.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        chunk != 0,
        name.contains(&format!(".c{chunk}.")),
        "{name}: chunk {chunk}"
    );
    // decode=1: every request decodes its trace's output tokens (the driver's
    // --decode 1, no output cap here); otherwise every request ends at its prefill.
    let decode = h.get("decode").map(String::as_str) == Some("1");
    if decode {
        assert_eq!(h["output_cap"], "0");
    }
    assert_eq!(h["requests"].parse::<usize>().unwrap(), pages.len());
    let mut cfg = swa_replay_config(
        h["page_size"].parse().unwrap(),
        h["l1_pages"].parse().unwrap(),
        h["swa_pages"].parse().unwrap(),
        h["window"].parse().unwrap(),
        true,
        decode,
    );
    cfg.scheduler.compute.chunked_prefill_size = chunk;
    SwaGolden {
        name,
        cfg,
        trace: h["trace"].clone(),
        block: h["block"].parse().unwrap(),
        pages,
    }
}

/// Replays `g`'s trace under `cfg` (the file's own point, or a changed one) and
/// compares every request's device hit pages with SGLang's; the first request that
/// differs, if any.
pub fn swa_golden_check(
    g: &SwaGolden,
    cfg: &hicache_sim::runtime::ReplayConfig,
) -> Result<(), String> {
    let reqs = bundled_trace(&g.trace, g.block, cfg.capacities.page_size);
    assert_eq!(reqs.len(), g.pages.len(), "{}: request count", g.name);
    let (_, hits) = hicache_sim::runtime::replay_hits(cfg, reqs).map_err(|e| e.to_string())?;
    for (i, (ours, theirs)) in hits.iter().zip(&g.pages).enumerate() {
        if ours.device != *theirs {
            return Err(format!(
                "{}: request {i}: device hit pages {} (SGLang {theirs})",
                g.name, ours.device
            ));
        }
    }
    Ok(())
}

/// The catalogue model `hf_id` as `read_model` reads its `config.json` (panics naming it
/// when the catalogue has no such model).
pub fn catalogue_hf(hf_id: &str) -> hicache_sim::model::HfModel {
    let e = hicache_sim::model::catalogue::catalogue()
        .iter()
        .find(|e| e.hf_id == hf_id)
        .unwrap_or_else(|| panic!("{hf_id} not in the catalogue"));
    hicache_sim::model::read_model(&hicache_sim::model::ConfigFiles {
        config: e.config.clone(),
        hf_quant_config: e.hf_quant_config.clone(),
        safetensors_total_size: None,
    })
    .unwrap()
}
