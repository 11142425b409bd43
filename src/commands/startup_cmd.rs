//! `hicache-sim startup`.

use super::{CmdResult, CommandError, OutputFormat, StartupArgs};
use crate::error::InputError;
use crate::report::startup as report;
use crate::scenario::{Scenario, load_file, resolve::resolve};
use crate::startup::{self, StartupPlan};

/// Loads a scenario with CLI overrides (`--sglang`, `--seed`, `--runs`, `--set`).
pub fn load_scenario(
    path: &str,
    sets: &[String],
    sglang: Option<&str>,
) -> Result<Scenario, InputError> {
    let mut sets = sets.to_vec();
    if let Some(v) = sglang {
        sets.push(format!("sglang={v}"));
    }
    let loaded = load_file(path, &sets)?;
    resolve(&loaded)
}

/// Builds the plan; a plan error is an input error at the field it names.
pub fn plan_for(s: &Scenario) -> Result<StartupPlan, InputError> {
    StartupPlan::new(s).map_err(|(field, msg)| {
        let lines = crate::scenario::lines::LineIndex::build(
            &std::fs::read_to_string(&s.source).unwrap_or_default(),
        );
        InputError::new(&s.source, msg)
            .line_opt(lines.line_of(&field))
            .field(field)
    })
}

pub fn startup(a: StartupArgs) -> CmdResult {
    let s = load_scenario(&a.scenario, &a.sets, a.sglang.as_deref())?;
    let plan = plan_for(&s)?;
    let seed = a.seed.unwrap_or(s.seed);
    let runs = a.runs.unwrap_or(s.runs);
    if runs == 0 {
        return Err(InputError::new("--runs", "must be at least 1").into());
    }
    let mc = match a.jobs {
        Some(j) => rayon::ThreadPoolBuilder::new()
            .num_threads(j.max(1))
            .build()
            .map_err(|e| CommandError::Other(e.to_string()))?
            .install(|| startup::run(&plan, seed, runs)),
        None => startup::run(&plan, seed, runs),
    };
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
    let failed = mc.outcomes.refused + mc.outcomes.oom_killed > 0;
    Ok(if a.fail_on_refusal && failed { 1 } else { 0 })
}
