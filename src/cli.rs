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
    about = "Simulate SGLang HiCache host-memory tiers: start-up sizing under each SGLang version, trace replay through device/host/storage, and parameter sweeps."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Simulate the start-up of every rank: budgets, pool sizes, refusals, OOM kills.
    Startup(commands::StartupArgs),
    /// Capacity plan: the largest --hicache-size / ratio / fraction that starts every rank
    /// with P ≥ target, the hit rate it buys, and the flags for the recipe.
    Plan(commands::PlanArgs),
    /// Check recipes (scenarios or launch-command files) for a CI: one line per file x
    /// release; exit 1 when any would refuse or be OOM-killed.
    Check(commands::CheckArgs),
    /// Replay a trace through the device / host / storage tiers.
    Replay(commands::ReplayArgs),
    /// Run the sweep of a scenario: CSV rows and default plots in --out.
    Sweep(commands::SweepArgs),
    /// Join shard CSVs of one sweep into the file an unsharded run writes.
    Merge(commands::MergeArgs),
    /// Draw a plot from a results CSV.
    Plot(commands::PlotArgs),
    /// Generate traces or print their statistics.
    Trace {
        #[command(subcommand)]
        command: commands::TraceCommand,
    },
    /// Measure this machine: write the `node:` and `memory:` of a scenario (meminfo, the
    /// memory cgroup chain as SGLang walks it, nvidia-smi).
    Capture(commands::CaptureArgs),
    /// List the node and model presets a scenario can name.
    Presets {
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// List the SGLang releases and what-if rule sets this simulator models.
    Versions {
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Differential-test hook: sizing figures of memory states (JSON lines).
    #[command(hide = true)]
    DebugSizing {
        /// JSON-lines file of states (`tests/sglang_diff/`).
        states: String,
        #[arg(long, default_value = "latest", value_parser = commands::sglang_arg::bare)]
        sglang: crate::release::Sglang,
    },
    /// Differential-test hook: `--hicache-size` split between host pools (JSON lines).
    #[command(hide = true)]
    DebugSplit {
        /// JSON-lines file of split cases (`tests/sglang_diff/`).
        cases: String,
        #[arg(long, default_value = "latest", value_parser = commands::sglang_arg::bare)]
        sglang: crate::release::Sglang,
    },
}
