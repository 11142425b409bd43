//! `hicache-sim startup`.

use super::{CmdResult, CommandError, OutputFormat, SglangOrAll, StartupArgs};
use crate::error::InputError;
use crate::release::Sglang;
use crate::report::startup as report;
use crate::scenario::load::load_file_as;
use crate::scenario::{MAX_RUNS, Scenario, resolve::resolve};
use crate::startup::{self, StartupPlan};

/// Loads a scenario with CLI overrides (`--sglang`, typed by clap, and `--set`).
pub fn load_scenario(
    path: &str,
    sets: &[String],
    sglang: Option<Sglang>,
) -> Result<Scenario, InputError> {
    resolve(&load_file_as(path, sets, sglang)?)
}

/// Builds the plan; a plan error is an input error at the field it names.
pub fn plan_for(s: &Scenario) -> Result<StartupPlan, InputError> {
    StartupPlan::new(s).map_err(|e| s.provenance.input_error(&s.source, e))
}

/// Runs from which `startup` announces itself and shows progress.
const LONG_RUNS: u64 = 1_000_000;

/// `runs` start-ups of `plan` (checked: 1 ..= [`MAX_RUNS`]) on `jobs` threads (clamped
/// to the cores; the result is the same for any count).
fn monte_carlo(
    runs: u64,
    jobs: Option<usize>,
    plan: &StartupPlan,
    seed: u64,
) -> Result<startup::MonteCarlo, CommandError> {
    if runs == 0 || runs > MAX_RUNS {
        return Err(InputError::new(
            "--runs",
            format!("must be between 1 and {MAX_RUNS}, got {runs}"),
        )
        .into());
    }
    // A long Monte Carlo says so and shows its progress (a run of 10^9 start-ups takes
    // tens of minutes).
    let _progress = (runs >= LONG_RUNS).then(|| {
        eprintln!("note: {runs} start-up runs: this takes a while; progress on stderr");
        super::progress::Progress::start(move |secs| {
            let n = startup::montecarlo::RUNS_DONE.load(std::sync::atomic::Ordering::Relaxed);
            format!(
                "startup: {n} of {runs} runs ({:.1} %), {secs:.0} s",
                100.0 * n as f64 / runs as f64
            )
        })
    });
    Ok(match jobs {
        Some(j) => rayon::ThreadPoolBuilder::new()
            .num_threads(super::clamp_jobs(Some(j)))
            .build()
            .map_err(|e| CommandError::Other(e.to_string()))?
            .install(|| startup::run(plan, seed, runs)),
        None => startup::run(plan, seed, runs),
    })
}

pub fn startup(a: StartupArgs) -> CmdResult {
    if let Some(csv) = &a.csv {
        crate::output::refuse_input_as_output(
            "--csv",
            std::path::Path::new(csv),
            &[("scenario", std::path::Path::new(&a.scenario))],
        )?;
    }
    let sglang = match a.sglang {
        Some(SglangOrAll::All) => return startup_all(&a),
        Some(SglangOrAll::One(v)) => Some(v),
        None => None,
    };
    let s = load_scenario(&a.scenario, &a.sets, sglang)?;
    let plan = plan_for(&s)?;
    let seed = a.seed.unwrap_or(s.seed);
    let mc = monte_carlo(a.runs.unwrap_or(s.runs), a.jobs, &plan, seed)?;
    let rep = report::build(&s, &plan, &mc, seed);
    match a.format {
        OutputFormat::Text => print!("{}", report::render_text(&s, &plan, &rep)),
        OutputFormat::Json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&rep)
                    .map_err(|e| CommandError::Other(e.to_string()))?
            )
        }
    }
    if let Some(path) = &a.csv {
        write_ranks_csv(&rep, path)?;
    }
    let failed = mc.outcomes.refused + mc.outcomes.oom_killed + mc.outcomes.failed > 0;
    Ok(if a.fail_on_refusal && failed { 1 } else { 0 })
}

/// `--sglang all`: the scenario under every release and what-if. A release that
/// rejects the scenario's flags gets an `invalid_args` row, one under which a rule it
/// needs is not modelled a `not_modelled` row, not an error.
fn startup_all(a: &StartupArgs) -> CmdResult {
    use crate::report::startup_all as all;
    if a.csv.is_some() {
        return Err(
            InputError::new("--csv", "is for one SGLang version, not `--sglang all`").into(),
        );
    }
    // The scenario itself must be valid under its own (or the default) version, as
    // without `all`: a bad scenario is exit 2 naming its file and line, not a table of
    // rows that could not be checked.
    let own = load_scenario(&a.scenario, &a.sets, None)?;
    plan_for(&own)?;
    let mut rows = Vec::new();
    // A row that could not be checked (the release rejects the scenario) is a failure
    // for --fail-on-refusal too: a CI gate never passes what it did not check.
    let mut any_failed = false;
    for v in Sglang::all() {
        let s = match load_scenario(&a.scenario, &a.sets, Some(v)) {
            Ok(s) => s,
            Err(e) => {
                rows.push(all::invalid_row(v, e.kind, e.message));
                any_failed = true;
                continue;
            }
        };
        let plan = match StartupPlan::new(&s) {
            Ok(p) => p,
            Err(e) => {
                rows.push(all::invalid_row(v, e.kind, e.message));
                any_failed = true;
                continue;
            }
        };
        let seed = a.seed.unwrap_or(s.seed);
        let mc = monte_carlo(a.runs.unwrap_or(s.runs), a.jobs, &plan, seed)?;
        any_failed |= mc.outcomes.refused + mc.outcomes.oom_killed + mc.outcomes.failed > 0;
        let rep = report::build(&s, &plan, &mc, seed);
        rows.push(all::row(v, &rep));
    }
    match a.format {
        OutputFormat::Text => print!("{}", all::render_text(&own.name, &rows)),
        OutputFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "scenario": own.name,
                "rows": rows,
            }))
            .map_err(|e| CommandError::Other(e.to_string()))?
        ),
    }
    Ok(if a.fail_on_refusal && any_failed {
        1
    } else {
        0
    })
}

/// Run 0 rank by rank as CSV, and the per-rank budget-vs-request plot beside it.
fn write_ranks_csv(rep: &report::StartupReport, path: &str) -> Result<(), CommandError> {
    let err = |e: &dyn std::fmt::Display| CommandError::Other(format!("{path}: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "rank",
        "node",
        "outcome",
        "sampled_at_s",
        "available_bytes",
        "budget_bytes",
        "requested_bytes",
        "margin_bytes",
        "message",
    ])
    .map_err(|e| err(&e))?;
    let opt = |x: Option<i64>| x.map(|v| v.to_string()).unwrap_or_default();
    for r in &rep.ranks {
        w.write_record([
            r.rank.to_string(),
            r.node.to_string(),
            r.outcome.to_string(),
            r.sampled_at_s
                .map(|t| format!("{t:.6}"))
                .unwrap_or_default(),
            opt(r.available_bytes),
            opt(r.budget_bytes),
            r.requested_bytes.map(|v| v.to_string()).unwrap_or_default(),
            opt(r.margin_bytes),
            r.message.clone().unwrap_or_default(),
        ])
        .map_err(|e| err(&e))?;
    }
    let bytes = w.into_inner().map_err(|e| err(&e))?;
    // Atomically, through links, in place on devices (never a half-written CSV).
    crate::output::write_file(std::path::Path::new(path), &bytes).map_err(|e| err(&e))?;
    let table = crate::report::plot::Table::from_csv(&bytes, path).map_err(|e| err(&e))?;
    let stem = std::path::Path::new(path).with_extension("");
    let stem = stem.with_file_name(format!(
        "{}_budget_vs_request",
        stem.file_name().and_then(|n| n.to_str()).unwrap_or("ranks")
    ));
    let info = crate::report::plot::budget_vs_request(&table, &stem).map_err(|e| err(&e))?;
    for f in info.files {
        eprintln!("plot: {}", f.display());
    }
    Ok(())
}
