//! `hicache-sim check FILE…`: one line per file × release; exit 1 when any would refuse,
//! be OOM-killed or have its flags rejected, 0 otherwise, 2 for bad input.

use super::{CheckArgs, CheckFormat, CmdResult, CommandError, SglangList};
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
    if a.runs == 0 || a.runs > crate::scenario::MAX_RUNS {
        return Err(InputError::new(
            "--runs",
            format!(
                "must be between 1 and {}, got {}",
                crate::scenario::MAX_RUNS,
                a.runs
            ),
        )
        .into());
    }
    let releases = SglangList::of(a.sglang.as_ref());
    let mut sets = a.sets.clone();
    if let Some(n) = &a.node {
        sets.push(format!("node={n}"));
    }
    // `--node N` travels as `--set node=N`: an error about it names the flag typed.
    let relabel = |mut e: InputError| {
        if let Some(n) = &a.node
            && e.source == format!("--set node={n}")
        {
            e.source = format!("--node {n}");
        }
        e
    };
    // One row per file × release whatever happens: a file that cannot be read is an
    // `error` row per release, and the other files are still checked.
    let mut rows = Vec::new();
    for f in &a.files {
        match check::read_input(f, &sets).map_err(relabel) {
            Ok(i) => rows.extend(
                check::check_file(&i, &releases, a.target_start, a.strict, a.seed, a.runs)
                    .into_iter()
                    .map(|mut r| {
                        if let Some(n) = &a.node {
                            let (from, to) = (format!("--set node={n}"), format!("--node {n}"));
                            r.located = r.located.map(|l| l.replace(&from, &to));
                            r.message = r.message.map(|l| l.replace(&from, &to));
                        }
                        r
                    }),
            ),
            Err(e) => {
                for r in &releases {
                    rows.push(check::CheckRow::not_checked(f, *r, &e, false));
                }
            }
        }
    }
    match a.format {
        CheckFormat::Text => print!("{}", check::render_text(&rows)),
        CheckFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| CommandError::Other(e.to_string()))?
        ),
        CheckFormat::Junit => print!("{}", check::render_junit(&rows)),
    }
    // Where each row that could not be checked went wrong, file and line, on stderr.
    let mut said = std::collections::BTreeSet::new();
    for r in &rows {
        if let Some(l) = &r.located
            && said.insert(l.clone())
        {
            let what = if r.is_error() {
                "error"
            } else if r.outcome == "not_modelled" {
                "not modelled"
            } else {
                "refused by SGLang"
            };
            eprintln!("{what}: {l}");
        }
    }
    // Exit 2 when any file could not be checked (bad input), after every row is printed;
    // 1 when any check failed; 0 when all passed.
    Ok(if rows.iter().any(|r| r.is_error()) {
        2
    } else if rows.iter().all(|r| r.passed) {
        0
    } else {
        1
    })
}
