//! `hicache-sim plan`: the largest host pool that starts, what it buys, and the flags.

use std::path::{Path, PathBuf};

use super::{CmdResult, CommandError, OutputFormat, PlanArgs, SglangList};
use crate::error::InputError;
use crate::plan::{self, PlanOptions};

/// Runs per probe from which a plan announces itself and shows progress.
const LONG_RUNS: u64 = 100_000;

/// Every file `plan --out DIR` may write in DIR.
const OUTPUT_NAMES: &[&str] = &[
    "plan.json",
    "plan.txt",
    "report.html",
    "hit_rate_vs_host_pool.png",
    "hit_rate_vs_host_pool.svg",
];

pub fn plan(a: PlanArgs) -> CmdResult {
    let runs = a.runs.unwrap_or(plan::DEFAULT_RUNS);
    if runs == 0 || runs > crate::scenario::MAX_RUNS {
        return Err(InputError::new(
            "--runs",
            format!(
                "must be between 1 and {}, got {runs}",
                crate::scenario::MAX_RUNS
            ),
        )
        .into());
    }
    let mut releases = SglangList::of(a.sglang.as_ref());
    if a.sglang == Some(SglangList::AllReleases) {
        // The scenario's own release (or what-if) first: its size is the one
        // recommended; every release then says whether it holds.
        let own = super::startup_cmd::load_scenario(&a.scenario, &a.sets, None)?;
        releases.retain(|r| *r != Some(own.version));
        releases.insert(0, None);
    }
    // What the plan reads is never written over nor removed: the scenario, its trace.
    let mut inputs: Vec<(&str, PathBuf)> = vec![("scenario", PathBuf::from(&a.scenario))];
    crate::output::protect_input("scenario", Path::new(&a.scenario));
    if let Some(t) = &a.trace {
        inputs.push(("trace", PathBuf::from(t)));
        crate::output::protect_input("trace", Path::new(t));
    }
    if let Some(out) = &a.out {
        if out.trim().is_empty() {
            return Err(InputError::new(
                "--out",
                "an empty folder name: name the folder to write the plan into (`--out .` for this one)",
            )
            .into());
        }
        let ins: Vec<(&str, &Path)> = inputs.iter().map(|(w, p)| (*w, p.as_path())).collect();
        crate::output::refuse_input_as_output("--out", Path::new(out), &ins)?;
    }
    // A long plan says so and shows its progress (a bar on a terminal, a line every
    // 30 s otherwise); a short one stays quiet.
    if runs >= LONG_RUNS {
        eprintln!(
            "note: {runs} start-up runs per probe, tens of probes per release (size, ratio and fraction searches, sensitivity) for {} release(s): this takes a while; progress on stderr",
            releases.len()
        );
    }
    let _progress = (runs >= LONG_RUNS).then(|| {
        super::progress::Progress::start(move |secs| {
            let n = crate::plan::probe::PROBES_DONE.load(std::sync::atomic::Ordering::Relaxed);
            format!(
                "plan: {n} probes done ({} start-up runs), {secs:.0} s",
                n.saturating_mul(runs)
            )
        })
    });
    crate::workload::read::enable_sharing();
    let opts = PlanOptions {
        target: a.target_start,
        runs,
        seed: a.seed,
        sets: a.sets.clone(),
        trace: a.trace.clone(),
        no_replay: a.no_replay,
        ladder_max_gb: a.ladder_max,
        headroom: headroom_bytes(a.headroom)?,
    };
    let p = plan::plan(&a.scenario, &releases, &opts)?;
    let json = || serde_json::to_string_pretty(&p).map_err(|e| CommandError::Other(e.to_string()));
    match a.format {
        OutputFormat::Text => print!("{}", plan::text::render(&p)),
        OutputFormat::Json => println!("{}", json()?),
    }
    if let Some(out) = &a.out {
        let dir = Path::new(out);
        // The trace the plan replayed (the scenario's own, resolved) is an input too.
        if let Some(l) = &p.ladder {
            inputs.push(("trace", PathBuf::from(&l.trace)));
            crate::output::protect_input("trace", Path::new(&l.trace));
        }
        let ins: Vec<(&str, &Path)> = inputs.iter().map(|(w, p)| (*w, p.as_path())).collect();
        for name in OUTPUT_NAMES {
            crate::output::refuse_input_as_output("--out", &dir.join(name), &ins)?;
        }
        // The folder is this plan's: locked, and what an earlier plan or sweep wrote
        // there (its manifest) removed before anything is written.
        let mut outdir = crate::output::OutputDir::claim(
            dir,
            &format!("hicache-sim plan {}", a.scenario),
            "plan",
            "",
        )
        .and_then(|mut o| o.remove_earlier(false).map(|()| o))
        .map_err(|e| CommandError::Other(e.to_string()))?;
        if !outdir.removed.is_empty() {
            eprintln!(
                "removed {} file(s) an earlier run wrote in {out}: {}",
                outdir.removed.len(),
                outdir.removed.join(", ")
            );
        }
        let mut write = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            crate::output::write_file(&path, bytes)
                .and_then(|()| outdir.record(&path, false))
                .map_err(|e| CommandError::Other(format!("{}: {e}", path.display())))
        };
        write("plan.json", json()?.as_bytes())?;
        write("plan.txt", plan::text::render(&p).as_bytes())?;
        let files = crate::report::html::write_plan_report(&p, dir)
            .map_err(|e| CommandError::Other(e.to_string()))?;
        for f in files {
            outdir
                .record(&f, false)
                .map_err(|e| CommandError::Other(format!("{}: {e}", f.display())))?;
            eprintln!("wrote {}", f.display());
        }
    }
    Ok(0)
}

/// `--headroom GB` in bytes: a finite, non-negative number of decimal GB.
fn headroom_bytes(gb: f64) -> Result<u64, InputError> {
    if !gb.is_finite() || gb < 0.0 || gb > 1e6 {
        return Err(InputError::new(
            "--headroom",
            format!("must be a number of GB from 0 to 1000000, got {gb}"),
        ));
    }
    Ok((gb * crate::units::GB as f64).round() as u64)
}
