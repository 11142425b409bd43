//! The command line's grammar: the clap derive structs of `hicache-sim` and [`cli`], the
//! [`clap::Command`] they build. In the library so that tests can walk every subcommand
//! and argument (their help texts and examples); `src/main.rs` parses with it and runs.

use clap::{CommandFactory, Parser, Subcommand};

use crate::commands::{self, OutputFormat};

/// The whole command tree of `hicache-sim` (what `--help` prints from).
pub fn cli() -> clap::Command {
    Cli::command()
}

#[derive(Parser)]
#[command(
    name = "hicache-sim",
    version,
    about = "Simulate SGLang HiCache host-memory tiers: start-up sizing under each SGLang version, trace replay through device/host/storage, and parameter sweeps.",
    after_help = "Examples:
  hicache-sim startup scenarios/quickstart.yaml
  hicache-sim plan scenarios/gb300-glm52-135g.yaml --no-replay"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Simulate the start-up of every rank: budgets, pool sizes, refusals, OOM kills.
    #[command(after_help = "Examples:
  hicache-sim startup scenarios/gb300-glm52-135g.yaml --sglang all
  hicache-sim startup scenarios/tp8-startup-race.yaml --runs 200 --format json")]
    Startup(commands::StartupArgs),
    /// Capacity plan: the largest --hicache-size / ratio / fraction that starts every rank
    /// with P ≥ target, the hit rate it buys, and the flags for the recipe.
    #[command(after_help = "Examples:
  hicache-sim plan scenarios/quickstart.yaml --out plan-quickstart
  hicache-sim plan scenarios/gb300-glm52-135g.yaml --sglang 0.5.21,0.5.23 --no-replay")]
    Plan(commands::PlanArgs),
    /// Check recipes (scenarios or launch-command files) for a CI: one line per file x
    /// release; exit 1 when any would refuse or be OOM-killed.
    #[command(after_help = "Examples:
  hicache-sim check scenarios/quickstart.yaml scenarios/tp8-startup-race.yaml
  hicache-sim check scenarios/gb300-glm52-135g.yaml --sglang all --format junit > check.xml
(both exit 1: the TP8 race refuses under its rules, and 0.5.19+ refuse 135 GB on the tray)")]
    Check(commands::CheckArgs),
    /// Replay a trace through the device / host / storage tiers.
    #[command(after_help = "Examples:
  hicache-sim replay scenarios/quickstart.yaml
  hicache-sim replay --trace traces/generated_chat_agentic_mix.jsonl --l1-pages 2000 --l2-pages 8000 --eviction-policy lfu")]
    Replay(commands::ReplayArgs),
    /// Run the sweep of a scenario: CSV rows and default plots in --out.
    #[command(after_help = "Examples:
  hicache-sim sweep scenarios/quickstart.yaml --out out/quickstart
  hicache-sim sweep scenarios/quickstart.yaml --out out/quickstart --shard 1/2 --jobs 2")]
    Sweep(commands::SweepArgs),
    /// Join shard CSVs of one sweep into the file an unsharded run writes.
    #[command(
        after_help = "Example (after `sweep --shard 1/2` and `--shard 2/2` into out/quickstart):
  hicache-sim merge out/quickstart/results.shard-1-of-2.csv out/quickstart/results.shard-2-of-2.csv -o out/quickstart/results.csv"
    )]
    Merge(commands::MergeArgs),
    /// Draw a plot from a results CSV.
    #[command(
        after_help = "Examples (after `hicache-sim sweep scenarios/quickstart.yaml --out out/quickstart`):
  hicache-sim plot out/quickstart/results.csv
  hicache-sim plot out/quickstart/results.csv --x server.hicache_host_memory_fraction --y hit_rate_host --group server.hicache_ratio"
    )]
    Plot(commands::PlotArgs),
    /// Generate traces or print their statistics.
    #[command(after_help = "Examples:
  hicache-sim trace stats traces/synthetic_trace.jsonl
  hicache-sim trace gen --config traces/recipes/chat_agentic_mix.json --seed 20261130 -o chat.jsonl")]
    Trace {
        #[command(subcommand)]
        command: commands::TraceCommand,
    },
    /// Measure this machine: write the `node:` and `memory:` of a scenario (meminfo, the
    /// memory cgroup chain as SGLang walks it, nvidia-smi).
    #[command(after_help = "Examples:
  hicache-sim capture --node gb300 --model glm-5.2 -o my-node.yaml
  hicache-sim capture --node gb300 --nvidia-smi none")]
    Capture(commands::CaptureArgs),
    /// List the node and model presets a scenario can name.
    #[command(after_help = "Examples:
  hicache-sim presets
  hicache-sim presets --format json")]
    Presets {
        /// Output format: `text` (tables) or `json` (every preset field).
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// List the SGLang releases and what-if rule sets this simulator models.
    #[command(after_help = "Examples:
  hicache-sim versions
  hicache-sim versions --format json")]
    Versions {
        /// Output format: `text` (one line per release or what-if) or `json`.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Differential-test hook: sizing figures of memory states (JSON lines).
    #[command(
        hide = true,
        after_help = "Example (states.jsonl as tests/sglang_diff/diff.py writes it):
  hicache-sim debug-sizing states.jsonl --sglang 0.5.21"
    )]
    DebugSizing {
        /// JSON-lines file of states (`tests/sglang_diff/`).
        states: String,
        /// The release (or what-if) whose rules to apply: an id from `hicache-sim versions`.
        #[arg(long, default_value = "latest", value_parser = commands::sglang_arg::bare)]
        sglang: crate::release::Sglang,
    },
    /// Differential-test hook: `--hicache-size` split between host pools (JSON lines).
    #[command(
        hide = true,
        after_help = "Example (one case per line, as tests/sglang_diff/diff.py writes them):
  echo '{\"id\": 1, \"hicache_size\": 100, \"pools\": [{\"device_bytes\": 80000000000, \"bytes_per_unit\": 70272, \"page_size\": 64}]}' > cases.jsonl
  hicache-sim debug-split cases.jsonl --sglang 0.5.23"
    )]
    DebugSplit {
        /// JSON-lines file of split cases (`tests/sglang_diff/`).
        cases: String,
        /// The release (or what-if) whose rules to apply: an id from `hicache-sim versions`.
        #[arg(long, default_value = "latest", value_parser = commands::sglang_arg::bare)]
        sglang: crate::release::Sglang,
    },
}
