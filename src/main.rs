//! `hicache-sim`: a thin command line over the `hicache_sim` library. It parses
//! arguments and maps results to exit codes: 0 done, 1 the simulation found what the
//! user asked to fail on (`--fail-on-refusal`), 2 bad input.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hicache_sim::commands::{self, OutputFormat};

#[derive(Parser)]
#[command(
    name = "hicache-sim",
    version,
    about = "Simulate SGLang HiCache host-memory tiers: start-up sizing under each SGLang version, trace replay through device/host/storage, and parameter sweeps."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate the start-up of every rank: budgets, pool sizes, refusals, OOM kills.
    Startup(commands::StartupArgs),
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
        #[arg(long, default_value = "latest")]
        sglang: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Startup(a) => commands::startup(a),
        Command::Replay(a) => commands::replay(a),
        Command::Sweep(a) => commands::sweep(a),
        Command::Merge(a) => commands::merge(a),
        Command::Plot(a) => commands::plot(a),
        Command::Trace { command } => commands::trace(command),
        Command::Presets { format } => commands::presets(format),
        Command::Versions { format } => commands::versions(format),
        Command::DebugSizing { states, sglang } => commands::debug_sizing(&states, &sglang),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
