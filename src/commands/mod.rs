//! The subcommands behind the CLI: each reads its inputs, calls the library, and writes
//! text or JSON. Kept apart from `main.rs` so that tests can call them in-process.

use std::fmt;

use clap::{Args, Subcommand, ValueEnum};

use crate::error::InputError;
use crate::release::Sglang;

pub mod capture_cmd;
pub mod check_cmd;
mod debug_cmd;
pub mod plan_cmd;
mod presets_cmd;
mod progress;
mod replay_cmd;
pub mod sglang_arg;
pub mod startup_cmd;
pub mod sweep_cmd;
mod trace_cmd;
mod versions_cmd;
pub use versions_cmd::text as versions_text;

pub use capture_cmd::{CaptureArgs, capture};
pub use check_cmd::check;
pub use debug_cmd::{debug_sizing, debug_split};
pub use plan_cmd::plan;
pub use presets_cmd::presets;
pub use replay_cmd::replay;
pub use sglang_arg::{SglangArgError, SglangList, SglangOrAll};
pub use startup_cmd::startup;
pub use sweep_cmd::{merge, plot, sweep};
pub use trace_cmd::trace;
pub use versions_cmd::versions;

/// Why a command stopped. Exit codes: 2 for bad input, 3 for anything else
/// (I/O failures); 1 is reserved for `--fail-on-refusal`.
#[derive(Debug)]
pub enum CommandError {
    Input(InputError),
    /// Bad input that is not a scenario field (a merge of CSVs that do not belong
    /// together, a resume of another sweep): exit 2.
    Usage(String),
    Other(String),
}

impl CommandError {
    /// How the CLI labels it on stderr: `not_modelled` (a rule the input needs is not
    /// modelled: no answer, the rule named), else `error`.
    pub fn label(&self) -> &'static str {
        match self {
            CommandError::Input(e) if e.kind == crate::error::ErrorKind::NotModelled => {
                "not_modelled"
            }
            _ => "error",
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Input(_) | CommandError::Usage(_) => 2,
            CommandError::Other(_) => 3,
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Input(e) => write!(f, "{e}"),
            CommandError::Usage(m) | CommandError::Other(m) => write!(f, "{m}"),
        }
    }
}

impl From<InputError> for CommandError {
    fn from(e: InputError) -> Self {
        CommandError::Input(e)
    }
}

impl From<crate::sweep::SweepError> for CommandError {
    /// Exit 2 for what the user handed in (files that do not belong together, a journal
    /// of another sweep), 3 for I/O and a folder another run holds.
    fn from(e: crate::sweep::SweepError) -> Self {
        use crate::sweep::SweepError as E;
        match e {
            E::Input(i) => CommandError::Input(i),
            E::Merge(_) | E::Mismatch { .. } | E::Journal { .. } => {
                CommandError::Usage(e.to_string())
            }
            E::Io { .. } | E::Pool(_) | E::Locked(_) => CommandError::Other(e.to_string()),
        }
    }
}

impl From<std::io::Error> for CommandError {
    fn from(e: std::io::Error) -> Self {
        CommandError::Other(e.to_string())
    }
}

pub type CmdResult = Result<u8, CommandError>;

/// `--jobs N` as threads: 0 or unset = every core, and never more threads than cores
/// (`--jobs 10000` would spawn thousands of threads for nothing; results are identical
/// for any count).
pub fn clamp_jobs(jobs: Option<usize>) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match jobs {
        None | Some(0) => cores,
        Some(j) => j.min(cores),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct StartupArgs {
    /// Scenario YAML.
    pub scenario: String,
    /// SGLang sizing rules (see `hicache-sim versions`); overrides the scenario's `sglang`.
    #[arg(long, value_parser = sglang_arg::startup)]
    pub sglang: Option<SglangOrAll>,
    /// Seed of the run's rank jitter (default: the scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Monte Carlo runs over the rank-start jitter (default: the scenario's `runs`).
    #[arg(long)]
    pub runs: Option<u64>,
    /// Output format: `text` (a table per release) or `json` (every figure, for scripts).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Exit with code 1 when any rank of any run is refused or OOM-killed.
    #[arg(long)]
    pub fail_on_refusal: bool,
    /// Override a scenario field: `--set server.hicache_size=150` (repeatable; the path is
    /// the field's in the YAML, the value is read as YAML).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Threads for the Monte Carlo runs (default, or 0: one per core; never more than the
    /// cores). Results are identical for any value.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write run 0 rank by rank to this CSV, and its per-rank budget-vs-request plot
    /// (PNG + SVG) next to it.
    #[arg(long)]
    pub csv: Option<String>,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Scenario YAML (node, model, layout, memory, jitter; `runtime.trace` for hit rates).
    pub scenario: String,
    /// Release(s) to plan for: one id, a comma-separated list, or `all` (every release
    /// 0.5.14 … 0.5.23); default the scenario's `sglang`. The first is the primary one
    /// (its size is recommended and replayed).
    #[arg(long, value_parser = sglang_arg::list)]
    pub sglang: Option<SglangList>,
    /// P(start) every rank must reach over the jitter distribution, a probability in
    /// (0, 1].
    #[arg(long, default_value_t = 0.999)]
    pub target_start: f64,
    /// Host memory the recommended --hicache-size leaves on every node, in GB: it must
    /// still start with P ≥ --target-start with this much more used by other processes,
    /// in the job's cgroup and outside it (0 recommends the frontier itself).
    #[arg(long, value_name = "GB", default_value_t = crate::plan::DEFAULT_HEADROOM_GB as f64)]
    pub headroom: f64,
    /// Monte Carlo start-up runs per probe (default 1000).
    #[arg(long)]
    pub runs: Option<u64>,
    /// Seed of every probe (default: the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Trace to replay for hit rates (default: the scenario's `runtime.trace`).
    #[arg(long)]
    pub trace: Option<String>,
    /// Start-up only: no hit-rate ladder.
    #[arg(long)]
    pub no_replay: bool,
    /// Top of the hit-rate ladder in GB (default: twice the planned size).
    #[arg(long, value_name = "GB")]
    pub ladder_max: Option<u64>,
    /// Output format: `text` (the plan and its flags) or `json` (plan.json's content).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Write plan.json, plan.txt, the figures and report.html here.
    #[arg(long)]
    pub out: Option<String>,
    /// Override a scenario field before planning: `--set server.page_size=64`
    /// (repeatable; the path is the field's in the YAML, the value is read as YAML).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    /// JUnit XML: one testcase per file × release.
    Junit,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Scenario YAML files, or launch files: text / shell files holding one
    /// `sglang.launch_server` (or `sglang serve`, `python -m dynamo.sglang`) command,
    /// its machine in a `# hicache-sim: node=gb300` comment or --node; every
    /// `key=value` of such a comment is a scenario field set like `--set`
    /// (`model=glm-5.2`, `memory.cgroup.max=900GB`). Every command that takes a scenario
    /// reads them (`sweep` needs YAML). docs/src/guide/launch-files.md.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Release(s): one id, a comma-separated list, or `all`; default each file's own.
    #[arg(long, value_parser = sglang_arg::list)]
    pub sglang: Option<SglangList>,
    /// P(start) a recipe must reach to pass, a probability in (0, 1].
    #[arg(long, default_value_t = 0.999)]
    pub target_start: f64,
    /// Monte Carlo start-up runs per file × release.
    #[arg(long, default_value_t = 1000)]
    pub runs: u64,
    /// Fail (exit 1) a recipe that starts but is `unverified`: it sets something that
    /// moves the figures and that the simulator does not model (the row names it).
    #[arg(long)]
    pub strict: bool,
    /// Seed of every file's start-up runs (default: each scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Node preset for bare launch-command files (overrides their comment; see
    /// `hicache-sim presets`).
    #[arg(long)]
    pub node: Option<String>,
    /// Override a field of every file's scenario: `--set server.hicache_size=150`
    /// (repeatable; the path is the field's in the YAML, the value is read as YAML).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Output format: `text` (one line per file x release), `json` or `junit` (JUnit XML
    /// for a CI's test report).
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Optional scenario YAML (its `runtime:` section and start-up pool sizes).
    pub scenario: Option<String>,
    /// Trace file to replay (Mooncake JSONL, Bailian, kv-cache-tester JSON, CSV, or a
    /// binary trace from `trace convert`). Default: the scenario's
    /// `runtime.trace`; required without a scenario.
    #[arg(long)]
    pub trace: Option<String>,
    /// Trace format: mooncake, bailian, kv-cache-tester or csv (default: detected from the
    /// file name and content).
    #[arg(long)]
    pub trace_format: Option<String>,
    /// Block size of the trace's hash ids in tokens (default: the format's).
    #[arg(long)]
    pub block_size: Option<u32>,
    /// Arrival gaps × this factor (SGLang `bench_serving --mooncake-slowdown-factor`;
    /// overrides `runtime.slowdown_factor`; default 1 = the trace's own times).
    #[arg(long)]
    pub slowdown_factor: Option<f64>,
    /// Tokens per page of the tiers (SGLang's `--page-size`; default: the scenario's
    /// server page size, 64 without a scenario).
    #[arg(long)]
    pub page_size: Option<u32>,
    /// Device (L1, GPU HBM) capacity in pages (default: the device pool of the scenario's
    /// start-up, 4096 without a scenario).
    #[arg(long)]
    pub l1_pages: Option<u64>,
    /// Host (L2, pinned DRAM) capacity in pages (default: the host pool of the scenario's
    /// start-up, 8192 without a scenario).
    #[arg(long)]
    pub l2_pages: Option<u64>,
    /// Storage (L3) capacity in pages, or `unbounded` (default: no L3 unless the
    /// scenario's `runtime.replay` has one).
    #[arg(long)]
    pub l3_pages: Option<String>,
    /// When a device page is backed up to host (SGLang's `--hicache-write-policy`):
    /// `write_through` (default), `write_through_selective` or `write_back`; with
    /// `--engine policy-simulator`, `write_through` or `boundary_l1_l2` (which selects that
    /// engine when --engine is not given).
    #[arg(long)]
    pub write_policy: Option<String>,
    /// Which device / host page goes first when a tier is full (SGLang's
    /// `--radix-eviction-policy`): lru (default), lfu, fifo, mru, filo, priority or slru.
    #[arg(long)]
    pub eviction_policy: Option<String>,
    /// `off` (default): a pure cache replay, requests one after another, transfers
    /// instant; `on`: a discrete-event replay with arrivals, a scheduler and link
    /// transfers (gives TTFT).
    #[arg(long)]
    pub timing: Option<String>,
    /// Requests at the start of the trace excluded from the hit-rate figures (default 0).
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Engine: `hiradix` (SGLang's runtime rules; the default unless the scenario's
    /// `runtime.engine` says otherwise) or `policy-simulator` (an exact port of SGLang's
    /// benchmark/hicache/hicache_policy_simulator.py).
    #[arg(long)]
    pub engine: Option<String>,
    /// Output format: `text` (hit rates per tier, and times when timed) or `json` (every
    /// metric, for scripts).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Override a field of the scenario: `--set runtime.replay.l2_pages=20000`
    /// (repeatable; needs a scenario; the value is read as YAML).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// SGLang release or what-if whose controller defaults the replay uses (overrides
    /// the scenario's `sglang`; default `latest` = 0.5.23).
    #[arg(long, value_parser = sglang_arg::replay)]
    pub sglang: Option<Sglang>,
    /// Write the occupancy / hit-rate timeline as CSV (and a plot next to it).
    #[arg(long)]
    pub timeline: Option<String>,
    /// Write the per-round figures of a `runtime.bench` run as CSV (one row per round)
    /// and a plot of TTFT and hit rate per round next to it.
    #[arg(long)]
    pub rounds: Option<String>,
    /// Write the router's event sequence (engines behind a router: `runtime.router`) as
    /// JSON lines, each send with its `input_ids` and the engine chosen, instead of
    /// replaying: what `tools/router/router_golden.py` replays through the real router.
    #[arg(long, value_name = "FILE")]
    pub router_events: Option<String>,
    /// Write each engine's figures behind the router (`runtime.router`, 2 or more
    /// engines) as CSV: one row per engine in the router's worker order, then `all`.
    #[arg(long, value_name = "FILE")]
    pub engines_csv: Option<String>,
    /// Write each data-parallel rank's figures (`--dp-size`, one engine) as CSV: one
    /// row per rank, then `all`, with TTFT when timed; their hit rates plotted next to
    /// it (`STEM_hit_rates.png/.svg`).
    #[arg(long, value_name = "FILE")]
    pub ranks_csv: Option<String>,
    /// Rank the time model's cost terms by how far each moves the TTFT: one more timed
    /// replay per term with a cost (compute, links, run overheads, storage, tokenizer,
    /// hit cost, a draft's acceptance), each made 25 % dearer on its own; a table after
    /// the text, `sensitivity` in JSON. Needs a timed replay.
    #[arg(long)]
    pub sensitivity: bool,
    /// Any replay setting: `--config lru_mode=plain_page`, `--config evict_host_rule=reclaim_device_resident`
    /// (repeatable; the fields of `runtime.replay`).
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub config: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Scenario YAML with a `sweep:` section (its axes over any scenario field).
    pub scenario: String,
    /// Threads running the sweep's points (default, or 0: one per core; never more than
    /// the cores). The CSV is identical for any value.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Folder for results.csv, the journal and the default plots (created if missing;
    /// files an earlier run wrote there are removed unless --resume).
    #[arg(long, default_value = "out")]
    pub out: String,
    /// Continue the sweep whose journal is in --out: finished points are kept, the others
    /// run (refused if the journal is of another scenario or settings).
    #[arg(long)]
    pub resume: bool,
    /// `K/N`: run the K-th of N deterministic shards (K from 1; shard K owns points K,
    /// K+N, ...), writing results.shard-K-of-N.csv; join the shards with `merge`.
    #[arg(long)]
    pub shard: Option<String>,
    /// Hide the progress bar (drawn only when stderr is a terminal) and the line listing
    /// the files of an earlier run removed from --out. The summary line, notes, plot paths
    /// and errors are still printed to stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Override a field of the base scenario: `--set server.hicache_size=150` (repeatable;
    /// a sweep axis over the same field still wins per point).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// SGLang release or what-if (overrides the scenario's `sglang`; a `sglang` sweep
    /// axis still wins per point).
    #[arg(long, value_parser = sglang_arg::sweep)]
    pub sglang: Option<Sglang>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard CSVs of one sweep (`results.shard-K-of-N.csv`, every K of the same N).
    pub files: Vec<String>,
    /// The merged CSV to write (the results.csv an unsharded run would have written).
    #[arg(long, short)]
    pub output: String,
}

#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Results CSV: a sweep's results.csv, a `replay --timeline` or `--rounds` CSV, or a
    /// `startup --csv` one.
    pub csv: String,
    /// Column for the x axis (default: the sweep's first axis, or the time column of a
    /// timeline).
    #[arg(long)]
    pub x: Option<String>,
    /// Column(s) for the y axis, comma-separated: `--y hit_rate_device,hit_rate_host` (default:
    /// the standard plots of the CSV's hit-rate, outcome and budget columns).
    #[arg(long)]
    pub y: Option<String>,
    /// Column whose values split the points into one line each (default: the sweep's
    /// second axis, if any).
    #[arg(long)]
    pub group: Option<String>,
    /// Output folder (default: the CSV's folder).
    #[arg(long)]
    pub out: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Generate a synthetic trace (Mooncake JSONL).
    #[command(after_help = "Examples:
  hicache-sim trace gen --config traces/recipes/chat_agentic_mix.json --seed 20261130 -o chat.jsonl
  hicache-sim trace gen --requests 500 --seed 1 -o mix.jsonl")]
    Gen(TraceGenArgs),
    /// Requests, pages, distinct pages, hit ceiling, time span.
    #[command(after_help = "Examples:
  hicache-sim trace stats traces/synthetic_trace.jsonl
  hicache-sim trace stats traces/kv-cache-tester/trace_0012.json --trace-format kv-cache-tester --page-size 64 --format json")]
    Stats(TraceStatsArgs),
    /// Write a trace in hicache-sim's binary columnar form (read back by every command
    /// whatever its name: found by its magic bytes). Parses once; replays skip JSON.
    #[command(after_help = "Examples:
  hicache-sim trace convert traces/synthetic_trace.jsonl -o synthetic.bin
  hicache-sim replay --trace synthetic.bin --l1-pages 2000 --l2-pages 8000")]
    Convert(TraceConvertArgs),
}

#[derive(Debug, Args)]
pub struct TraceConvertArgs {
    /// The trace to convert (any format `replay` reads).
    pub input: String,
    /// Where to write the binary trace (refused if it is the input).
    #[arg(long, short)]
    pub output: String,
    /// Input trace format: mooncake, bailian, kv-cache-tester or csv (default: detected
    /// from the file name and content). `--format` is a deprecated alias.
    #[arg(long, alias = "format")]
    pub trace_format: Option<String>,
    /// Tokens per hash id (default: the format's); stored in the binary file.
    #[arg(long)]
    pub block_size: Option<u32>,
}

#[derive(Debug, Args)]
pub struct TraceGenArgs {
    /// Generator config, JSON or YAML, as in traces/recipes/chat_agentic_mix.json: keys
    /// `requests`, `block_size`, `page_size` (tokens), `arrivals` (`process: poisson` with
    /// `rate_per_s`, or gamma), `system_prompts` (`count`, `zipf_s`, `tokens` min/max),
    /// `sessions` (a list of `kind: chat` or `kind: agentic`, each with a `weight`, token
    /// ranges and `think_time_s`). Default: a chat + agentic mix of 16-token blocks.
    #[arg(long)]
    pub config: Option<String>,
    /// Requests to generate (overrides the config's `requests`; default 1000 without a config).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Seed of the generator: the same config and seed give the same file, byte for byte.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the trace (Mooncake JSONL; hash ids renumbered from 0).
    #[arg(long, short)]
    pub output: String,
}

#[derive(Debug, Args)]
pub struct TraceStatsArgs {
    /// The trace to read (any format `replay` reads, a binary trace included).
    pub file: String,
    /// Input trace format: mooncake, bailian, kv-cache-tester or csv (default: detected
    /// from the file name and content).
    #[arg(long)]
    pub trace_format: Option<String>,
    /// Tokens per page the statistics count in (default: the trace's block size).
    #[arg(long)]
    pub page_size: Option<u32>,
    /// Tokens per hash id of the trace (default: the format's, or the file's own
    /// `block_size`).
    #[arg(long)]
    pub block_size: Option<u32>,
    /// Output format: `text` or `json` (`--output-format` is a deprecated alias). The
    /// trace's format is --trace-format.
    #[arg(long, alias = "output-format", value_parser = output_format_not_trace, default_value = "text")]
    pub format: OutputFormat,
}

/// `trace stats --format`: the output's format, as everywhere; a trace format given to it
/// (what `--format` meant here before `--trace-format`) is refused naming the flag to use.
fn output_format_not_trace(v: &str) -> Result<OutputFormat, String> {
    if let Ok(f) = OutputFormat::from_str(v, true) {
        return Ok(f);
    }
    if crate::workload::read::TraceFormat::from_id(v).is_some() {
        return Err(format!(
            "--format is the output's format (text or json); for the trace's format use --trace-format {v}"
        ));
    }
    Err("expected text or json".into())
}
