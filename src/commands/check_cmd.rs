//! `hicache-sim check FILE…`: one line per file × release; exit 1 when any would refuse,
//! be OOM-killed or have its flags rejected, 0 otherwise, 2 for bad input.

use super::plan_cmd::release_list;
use super::{CheckArgs, CheckFormat, CmdResult, CommandError};
use crate::error::InputError;
use crate::plan::check;

pub fn check(a: CheckArgs) -> CmdResult {
    if !(a.target_start > 0.0 && a.target_start <= 1.0) {
        return Err(InputError::new(
            "--target-start",
            format!("must be in (0, 1], got {}", a.target_start),
        )
        .into());
    }
    if a.runs == 0 || a.runs > super::startup_cmd::MAX_RUNS {
        return Err(InputError::new(
            "--runs",
            format!(
                "must be between 1 and {}, got {}",
                super::startup_cmd::MAX_RUNS,
                a.runs
            ),
        )
        .into());
    }
    let releases = release_list(a.sglang.as_deref())?;
    let releases: Vec<Option<&str>> = releases.iter().map(|r| r.as_deref()).collect();
    let mut sets = a.sets.clone();
    if let Some(n) = &a.node {
        sets.push(format!("node={n}"));
    }
    // Every file is read (and must be valid) before any is simulated: bad input is
    // exit 2 however many files pass.
    let inputs = a
        .files
        .iter()
        .map(|f| check::read_input(f, &sets))
        .collect::<Result<Vec<_>, InputError>>()?;
    let mut rows = Vec::new();
    for i in &inputs {
        rows.extend(check::check_file(
            i,
            &releases,
            a.target_start,
            a.seed,
            a.runs,
        )?);
    }
    match a.format {
        CheckFormat::Text => print!("{}", check::render_text(&rows)),
        CheckFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| CommandError::Other(e.to_string()))?
        ),
        CheckFormat::Junit => print!("{}", check::render_junit(&rows)),
    }
    Ok(if rows.iter().all(|r| r.passed) { 0 } else { 1 })
}
