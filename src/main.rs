//! `hicache-sim`: a thin command line over the `hicache_sim` library. It parses
//! arguments and maps results to exit codes: 0 done, 1 the simulation found what the
//! user asked to fail on (`--fail-on-refusal`), 2 bad input or a rule the input needs
//! that is not modelled (printed `error:` or `not_modelled:`).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use hicache_sim::cli::{Cli, Command};
use hicache_sim::commands;

/// What a failed write to stdout/stderr means for the exit: `print!` panics with
/// "failed printing to stdout: …"; a closed pipe (`hicache-sim presets | head -1`) ends
/// the command quietly with 0, as `rg` does; anything else (`> /dev/full`) is exit 3.
fn stream_failure(msg: &str) -> Option<ExitCode> {
    let rest = msg
        .strip_prefix("failed printing to stdout: ")
        .map(|r| ("stdout", r))
        .or_else(|| {
            msg.strip_prefix("failed printing to stderr: ")
                .map(|r| ("stderr", r))
        })?;
    if rest.1.contains("Broken pipe") {
        return Some(ExitCode::SUCCESS);
    }
    if rest.0 == "stdout" {
        let _ = writeln!(std::io::stderr(), "error: <stdout>: {}", rest.1);
    }
    Some(ExitCode::from(3))
}

/// What clap has to say instead of a command (`--help`, `--version`, a usage error),
/// printed with its exit code (0 for help, 2 for a usage error) — unless the print
/// itself fails: `--help > /dev/full` is exit 3 naming the stream, as any other output
/// (a closed pipe stays a quiet 0).
fn clap_exit(e: &clap::Error) -> ExitCode {
    let printed = e.print().and_then(|()| {
        if e.use_stderr() {
            std::io::stderr().flush()
        } else {
            std::io::stdout().flush()
        }
    });
    match printed {
        Ok(()) => ExitCode::from(e.exit_code() as u8),
        Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(io) => {
            let stream = if e.use_stderr() {
                "<stderr>"
            } else {
                "<stdout>"
            };
            let _ = writeln!(std::io::stderr(), "error: {stream}: {io}");
            ExitCode::from(3)
        }
    }
}

/// An unknown `--sglang` that clap's parse refused, in the command's own wording
/// ([`commands::sglang_arg`]) rather than clap's. Only when the command line has no other
/// usage error: the line is read once more with `--sglang` as plain text, and clap's own
/// error, if that finds one, is the one printed (as before `--sglang` was typed by clap).
fn sglang_refused(e: &clap::Error) -> Option<commands::SglangArgError> {
    let refusal = std::error::Error::source(e)?.downcast_ref::<commands::SglangArgError>()?;
    let mut textual = hicache_sim::cli::cli();
    for sub in [
        "startup",
        "plan",
        "check",
        "replay",
        "sweep",
        "debug-sizing",
        "debug-split",
    ] {
        textual = textual.mut_subcommand(sub, |c| {
            c.mut_arg("sglang", |a| a.value_parser(clap::value_parser!(String)))
        });
    }
    let m = textual.try_get_matches().ok()?;
    let scenario = m
        .subcommand_matches("replay")
        .is_some_and(|r| r.contains_id("scenario"));
    Some(refusal.clone().with_scenario(scenario))
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("")
}

fn main() -> ExitCode {
    // Stream failures are not bugs: keep the default panic message for everything else.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_text(info.payload()).starts_with("failed printing to std") {
            default_hook(info);
        }
    }));
    match std::panic::catch_unwind(run) {
        Ok(code) => code,
        Err(p) => stream_failure(panic_text(p.as_ref())).unwrap_or(ExitCode::from(101)),
    }
}

fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            return match sglang_refused(&e) {
                Some(refusal) => {
                    let _ = writeln!(std::io::stderr(), "error: {refusal}");
                    ExitCode::from(2)
                }
                None => clap_exit(&e),
            };
        }
    };
    let result = match cli.command {
        Command::Startup(a) => commands::startup(a),
        Command::Plan(a) => commands::plan(a),
        Command::Check(a) => commands::check(a),
        Command::Replay(a) => commands::replay(a),
        Command::Sweep(a) => commands::sweep(a),
        Command::Merge(a) => commands::merge(a),
        Command::Plot(a) => commands::plot(a),
        Command::Trace { command } => commands::trace(command),
        Command::Capture(a) => commands::capture(a),
        Command::Presets { format } => commands::presets(format),
        Command::Versions { format } => commands::versions(format),
        Command::DebugSizing { states, sglang } => commands::debug_sizing(&states, sglang),
        Command::DebugSplit { cases, sglang } => commands::debug_split(&cases, sglang),
    };
    // Flush here, inside the catch: a failure at exit would be silent.
    if let Err(e) = std::io::stdout().flush() {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return ExitCode::SUCCESS;
        }
        let _ = writeln!(std::io::stderr(), "error: <stdout>: {e}");
        return ExitCode::from(3);
    }
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{}: {e}", e.label());
            ExitCode::from(e.exit_code())
        }
    }
}
