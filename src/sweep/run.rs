//! Executing a sweep: a rayon pool of `jobs` threads over the points still missing, each
//! finished row appended to the journal at once, then the final CSV rewritten from the
//! journal in point order. The CSV depends only on the points and the runner's results:
//! the same bytes for any `jobs`, any completion order, after any interruption + resume.

use std::io::IsTerminal;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use super::journal::{self, Entry, Header, Journal};
use super::row::{Row, csv_bytes, value_cell};
use super::shard::{Shard, stem};
use super::{Point, SweepError};

/// The per-point pipeline: start-up → host pool → replay → one row. `Err` is recorded in
/// the row's `error` column; a panic is caught and recorded the same way.
pub type Runner<'a> = dyn Fn(&Point) -> Result<Row, String> + Sync + 'a;

/// How to run a sweep.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Worker threads (`--jobs`); 0 means all cores.
    pub jobs: usize,
    /// Output folder (`--out`); created if missing.
    pub out_dir: PathBuf,
    /// Keep the journal's finished rows and compute only the missing points.
    pub resume: bool,
    /// Run only shard K of N (`--shard K/N`).
    pub shard: Option<Shard>,
    /// No progress bar (it is also hidden when stderr is not a terminal).
    pub quiet: bool,
    /// The runner's columns, in output order. A runner cell outside this list makes the
    /// point's row an error; a declared column the runner leaves out is empty. A column
    /// named like an axis path, `point`, `seed` or `error` is dropped (the sweep writes
    /// those itself).
    pub columns: Vec<String>,
    /// Compute at most this many points in this invocation, then stop as if interrupted
    /// (journal kept, no final CSV). For chunked runs and for tests.
    pub stop_after: Option<usize>,
    /// Draw the default plots (`report::plot::default_plots`) next to the final CSV of a
    /// complete, unsharded run (a merged run gets them from `hicache-sim plot`).
    pub plots: bool,
}

impl RunOptions {
    pub fn new(out_dir: impl Into<PathBuf>, columns: Vec<String>) -> Self {
        Self {
            jobs: 0,
            out_dir: out_dir.into(),
            resume: false,
            shard: None,
            quiet: true,
            columns,
            stop_after: None,
            plots: false,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct SweepSummary {
    /// Points in the whole sweep.
    pub points_total: usize,
    /// Points this shard owns (all of them when unsharded).
    pub points_owned: usize,
    /// Points computed in this invocation.
    pub computed: usize,
    /// Points found finished in the journal (`--resume`).
    pub resumed: usize,
    /// Rows with a non-empty `error`.
    pub failed: usize,
    /// Every owned point is done and the final CSV was written.
    pub complete: bool,
    /// The final CSV (`results.csv` / `results.shard-K-of-N.csv`) when complete.
    pub csv: Option<PathBuf>,
    pub journal: PathBuf,
    /// Wall time of this invocation (for the points-per-second figure only; never in
    /// any output file).
    pub elapsed: std::time::Duration,
    /// The plots drawn (with `RunOptions::plots`).
    pub plots: Vec<crate::report::plot::PlotInfo>,
}

/// The CSV header of a sweep: `point`, the axis paths, `seed`, the runner's columns
/// (minus any that collide with the former), `error`.
pub fn header(points: &[Point], columns: &[String]) -> Vec<String> {
    let mut h = vec!["point".to_string()];
    if let Some(p) = points.first() {
        h.extend(p.values.iter().map(|(k, _)| k.clone()));
    }
    h.push("seed".into());
    for c in columns {
        if !h.contains(c) && c != "error" {
            h.push(c.clone());
        }
    }
    h.push("error".into());
    h
}

/// Fingerprint of a whole sweep: its header and every point.
pub fn fingerprint(points: &[Point], header: &[String]) -> String {
    let mut buf = serde_json::to_vec(header).expect("header serialises");
    for p in points {
        let v = serde_json::json!([p.index, p.values, p.seed]);
        buf.extend(serde_json::to_vec(&v).expect("point serialises"));
    }
    format!("{:016x}", journal::fnv1a(&buf))
}

/// One point's final CSV row.
fn make_row(p: &Point, header: &[String], n_axes: usize, res: Result<Row, String>) -> Vec<String> {
    let mut row = Vec::with_capacity(header.len());
    row.push(p.index.to_string());
    row.extend(p.values.iter().map(|(_, v)| value_cell(v)));
    row.push(p.seed.to_string());
    let first_runner = 2 + n_axes;
    row.resize(header.len(), String::new());
    let err_col = header.len() - 1;
    match res {
        Ok(r) => {
            for (c, v) in r.cells {
                match header[first_runner..err_col].iter().position(|h| *h == c) {
                    Some(i) => row[first_runner + i] = v,
                    None if header[..first_runner].contains(&c) => {} // axis/seed echo
                    None => {
                        row[err_col] = format!("runner produced undeclared column `{c}`");
                    }
                }
            }
        }
        Err(m) => row[err_col] = if m.is_empty() { "error".into() } else { m },
    }
    row
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panic: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panic: {s}")
    } else {
        "panic".into()
    }
}

fn progress_bar(len: u64, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {pos}/{len} points  {per_sec}  ETA {eta}  {msg}",
    ) {
        pb.set_style(style);
    }
    pb
}

/// Run (or resume) a sweep over `points` (all of them: sharding is applied here).
pub fn run(
    points: &[Point],
    runner: &Runner<'_>,
    opts: &RunOptions,
) -> Result<SweepSummary, SweepError> {
    let t0 = Instant::now();
    let header = header(points, &opts.columns);
    let n_axes = points.first().map_or(0, |p| p.values.len());
    let fp = fingerprint(points, &header);
    let stem = stem(opts.shard);
    std::fs::create_dir_all(&opts.out_dir).map_err(|e| SweepError::io(&opts.out_dir, e))?;
    let journal_path = opts.out_dir.join(format!("{stem}.journal.jsonl"));
    let csv_path = opts.out_dir.join(format!("{stem}.csv"));
    let jheader = Header {
        hicache_sim_journal: 1,
        fingerprint: fp.clone(),
        points_total: points.len(),
        shard: opts.shard.map(|s| s.to_string()),
        columns: header.clone(),
    };

    let owned: Vec<&Point> = points
        .iter()
        .filter(|p| opts.shard.is_none_or(|s| s.owns(p.index)))
        .collect();

    // Finished rows by point index (None = still to do).
    let mut done: Vec<Option<Vec<String>>> = vec![None; points.len()];
    let mut journal = if opts.resume && journal_path.exists() {
        let c = journal::read(&journal_path)?;
        if c.header != jheader {
            return Err(SweepError::Mismatch {
                path: journal_path.clone(),
                message: format!(
                    "this journal belongs to a different sweep (fingerprint {} with {} points, \
                     this one is {} with {}); use another --out or run without --resume",
                    c.header.fingerprint,
                    c.header.points_total,
                    fp,
                    points.len()
                ),
            });
        }
        for e in c.entries {
            if e.point < done.len() && done[e.point].is_none() && e.row.len() == header.len() {
                done[e.point] = Some(e.row);
            }
        }
        Journal::reopen(&journal_path, c.intact_len)?
    } else {
        Journal::create(&journal_path, &jheader)?
    };
    let resumed = owned.iter().filter(|p| done[p.index].is_some()).count();
    let todo: Vec<&Point> = owned
        .iter()
        .copied()
        .filter(|p| done[p.index].is_none())
        .collect();

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs)
        .build()
        .map_err(|e| SweepError::Pool(e.to_string()))?;
    let pb = progress_bar(owned.len() as u64, opts.quiet);
    pb.set_position(resumed as u64);
    let started = AtomicUsize::new(0);
    let limit = opts.stop_after.unwrap_or(usize::MAX);
    let shared = Mutex::new((&mut journal, &mut done, None::<SweepError>));
    pool.install(|| {
        todo.par_iter().with_max_len(1).for_each(|p| {
            if started.fetch_add(1, Ordering::Relaxed) >= limit {
                return;
            }
            let res = catch_unwind(AssertUnwindSafe(|| runner(p)))
                .unwrap_or_else(|e| Err(panic_message(e)));
            let row = make_row(p, &header, n_axes, res);
            let entry = Entry {
                point: p.index,
                row,
            };
            let mut g = shared.lock().unwrap_or_else(|e| e.into_inner());
            let (j, d, err) = &mut *g;
            if err.is_none()
                && let Err(e) = j.append(&entry)
            {
                *err = Some(e);
            }
            d[p.index] = Some(entry.row);
            pb.inc(1);
        })
    });
    let (_, _, err) = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    pb.finish_and_clear();
    if let Some(e) = err {
        return Err(e);
    }
    drop(journal);

    let computed = todo.len().min(limit);
    let rows: Vec<&Vec<String>> = owned
        .iter()
        .filter_map(|p| done[p.index].as_ref())
        .collect();
    let failed = rows
        .iter()
        .filter(|r| !r[header.len() - 1].is_empty())
        .count();
    let complete = rows.len() == owned.len();
    let mut plots = Vec::new();
    let csv = if complete {
        let bytes = csv_bytes(&header, rows.iter().copied());
        write_atomic(&csv_path, &bytes)?;
        if opts.plots && opts.shard.is_none() {
            let table =
                crate::report::plot::Table::from_csv(&bytes, &csv_path.display().to_string())?;
            let axes = &header[1..1 + n_axes];
            plots = crate::report::plot::default_plots(&table, axes, &opts.out_dir)?;
        }
        Some(csv_path)
    } else {
        None
    };
    Ok(SweepSummary {
        points_total: points.len(),
        points_owned: owned.len(),
        computed,
        resumed,
        failed,
        complete,
        csv,
        journal: journal_path,
        elapsed: t0.elapsed(),
        plots,
    })
}

/// Write `path` via a temporary file and a rename, so a reader never sees half a CSV.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    let tmp = path.with_extension("csv.tmp");
    std::fs::write(&tmp, bytes).map_err(|e| SweepError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| SweepError::io(path, e))
}
