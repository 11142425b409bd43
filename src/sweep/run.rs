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

/// Why a point did not run (or, in [`super::check_points`], is refused before any
/// work): the error of whichever layer found it (a scenario field, the start-up plan,
/// the replay), kept whole; its text is what the row's `error` cell shows.
pub type PointError = Box<dyn std::error::Error + Send + Sync>;

/// The per-point pipeline: start-up → host pool → replay → one row. `Err` is recorded in
/// the row's `error` column; a panic is caught and recorded the same way.
pub type Runner<'a> = dyn Fn(&Point) -> Result<Row, PointError> + Sync + 'a;

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
    /// Hand the final CSV of a complete, unsharded run back as [`PlotData`], for the
    /// caller to draw the default plots from (a merged run gets them from `hicache-sim
    /// plot`).
    pub plots: bool,
    /// The names of the files the caller writes in the folder from the [`PlotData`]:
    /// refused as inputs before anything is written, as the CSV and the journal are.
    pub plot_files: Vec<String>,
    /// The resolved base scenario, flattened, with trace content hashes
    /// ([`journal::Header::scenario`]): part of the fingerprint.
    pub scenario: std::collections::BTreeMap<String, String>,
    /// Every scenario key at the value it takes when not set
    /// ([`crate::scenario::load::flattened_defaults`]): a journal of an earlier build
    /// that lacks only such keys (and columns) is resumed ([`super::upgrade`]).
    pub scenario_defaults: std::collections::BTreeMap<String, String>,
    /// What holds the output folder's lock (shown to a second run).
    pub holder: String,
    /// The run's inputs (what, path): an output file that is one of them is refused
    /// before anything is written or removed.
    pub inputs: Vec<(String, PathBuf)>,
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
            plot_files: Vec::new(),
            scenario: Default::default(),
            scenario_defaults: Default::default(),
            holder: "hicache-sim sweep".into(),
            inputs: Vec::new(),
        }
    }
}

/// The final CSV of a complete, unsharded run, with the folder still held: what the
/// default plots are drawn from, and where the files drawn are recorded
/// ([`crate::output::OutputDir::record`]) so that the next run removes them.
#[derive(Debug)]
pub struct PlotData {
    pub csv: Vec<u8>,
    pub csv_path: PathBuf,
    /// The sweep's axis paths, in CSV order.
    pub axes: Vec<String>,
    pub outdir: crate::output::OutputDir,
}

/// What a run did.
#[derive(Debug)]
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
    /// The distinct errors of those rows, most frequent first: (rows, first point, message).
    pub errors: Vec<(usize, usize, String)>,
    /// Every owned point is done and the final CSV was written.
    pub complete: bool,
    /// The final CSV (`results.csv` / `results.shard-K-of-N.csv`) when complete.
    pub csv: Option<PathBuf>,
    pub journal: PathBuf,
    /// Wall time of this invocation (for the points-per-second figure only; never in
    /// any output file).
    pub elapsed: std::time::Duration,
    /// What to draw the plots from (with `RunOptions::plots`).
    pub plot_data: Option<PlotData>,
}

/// The next-to-last column of a shard's CSV: the [`fingerprint`] of the whole sweep (the
/// same in every shard of one sweep).
pub const SWEEP_FINGERPRINT: &str = "sweep_fingerprint";
/// The last column of a shard's CSV: the row's [`journal::row_checksum`] under that
/// fingerprint (`merge` refuses an edited row).
pub const ROW_CHECKSUM: &str = "row_checksum";

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

/// Fingerprint of a whole sweep: its header, its base scenario and every point.
pub fn fingerprint(
    points: &[Point],
    header: &[String],
    scenario: &std::collections::BTreeMap<String, String>,
) -> String {
    let mut buf = serde_json::to_vec(header).expect("header serialises");
    buf.extend(serde_json::to_vec(scenario).expect("scenario serialises"));
    for p in points {
        let v = serde_json::json!([p.index, p.values, p.seed]);
        buf.extend(serde_json::to_vec(&v).expect("point serialises"));
    }
    format!("{:016x}", crate::fingerprint::fnv1a(&buf))
}

/// What differs between a journal's header and this run's, in words.
pub fn header_difference(old: &Header, new: &Header) -> String {
    if old.hicache_sim_journal != new.hicache_sim_journal {
        return format!(
            "journal format {} written by another hicache-sim, this one writes {}",
            old.hicache_sim_journal, new.hicache_sim_journal
        );
    }
    let d = journal::scenario_diff(&old.scenario, &new.scenario, 8);
    if !d.is_empty() {
        return format!("the scenario differs: {}", d.join("; "));
    }
    if old.columns != new.columns {
        return "the columns differ (sweep axes or output columns changed)".into();
    }
    if old.points_total != new.points_total {
        return format!(
            "{} points there, {} here (sweep axes or seeds changed)",
            old.points_total, new.points_total
        );
    }
    if old.shard != new.shard {
        return format!(
            "shard {} there, {} here",
            old.shard.as_deref().unwrap_or("none"),
            new.shard.as_deref().unwrap_or("none")
        );
    }
    format!(
        "the sweep's points differ: axis values or seeds (fingerprint {} there, {} here)",
        old.fingerprint, new.fingerprint
    )
}

/// One point's final CSV row.
fn make_row(
    p: &Point,
    header: &[String],
    n_axes: usize,
    res: Result<Row, PointError>,
) -> Vec<String> {
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
        Err(e) => {
            let m = e.to_string();
            row[err_col] = if m.is_empty() { "error".into() } else { m };
            // A rule the point needs that is not modelled is a status of its own, not a
            // blank one (the `error` column names the rule).
            if error_kind(e.as_ref()) == Some(crate::error::ErrorKind::NotModelled)
                && let Some(i) = header[first_runner..err_col]
                    .iter()
                    .position(|h| h == "status")
            {
                row[first_runner + i] = "not_modelled".into();
            }
        }
    }
    row
}

/// The [`crate::error::ErrorKind`] of a point's error, when it is one of the input errors.
fn error_kind(
    e: &(dyn std::error::Error + Send + Sync + 'static),
) -> Option<crate::error::ErrorKind> {
    if let Some(i) = e.downcast_ref::<crate::error::InputError>() {
        return Some(i.kind);
    }
    e.downcast_ref::<crate::error::FieldError>().map(|f| f.kind)
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
    let fp = fingerprint(points, &header, &opts.scenario);
    let stem = stem(opts.shard);
    let journal_path = opts.out_dir.join(format!("{stem}.journal.jsonl"));
    let csv_path = opts.out_dir.join(format!("{stem}.csv"));
    // No output is an input: checked for every name this run may write, before the
    // folder is claimed (nothing removed, nothing written).
    let inputs: Vec<(&str, &Path)> = opts
        .inputs
        .iter()
        .map(|(w, p)| (w.as_str(), p.as_path()))
        .collect();
    for name in output_names(&stem).iter().chain(&opts.plot_files) {
        crate::output::refuse_input_as_output("--out", &opts.out_dir.join(&name), &inputs)?;
    }
    // One run per folder: a second sweep into it fails at once, naming the first.
    let claim_err = |e| match e {
        crate::output::ClaimError::Lock(l) => SweepError::Locked(l.to_string()),
        crate::output::ClaimError::Io { path, source } => SweepError::io(&path, source),
    };
    let mut outdir =
        crate::output::OutputDir::claim(&opts.out_dir, &opts.holder, &format!("sweep {fp}"), &stem)
            .map_err(claim_err)?;
    let jheader = Header {
        hicache_sim_journal: journal::FORMAT,
        fingerprint: fp.clone(),
        points_total: points.len(),
        shard: opts.shard.map(|s| s.to_string()),
        columns: header.clone(),
        scenario: opts.scenario.clone(),
    };

    let owned: Vec<&Point> = points
        .iter()
        .filter(|p| opts.shard.is_none_or(|s| s.owns(p.index)))
        .collect();

    // Finished rows by point index (None = still to do).
    let mut done: Vec<Option<Vec<String>>> = vec![None; points.len()];
    // A journal cut inside its header line (killed while creating it) holds no row:
    // start it again rather than refusing every later --resume.
    let torn_header = opts.resume
        && crate::input::open(&journal_path)
            .and_then(|mut f| {
                let mut b = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut b).map(|_| b)
            })
            .is_ok_and(|b| !b.contains(&b'\n'));
    // The files an earlier run wrote in the folder go before this one writes; with a
    // --resume, once its journal is accepted, and this sweep's own files stay.
    let resuming = opts.resume && journal_path.exists() && !torn_header;
    if !resuming {
        outdir.remove_earlier(false).map_err(claim_err)?;
    }
    let mut journal = if resuming {
        let c = journal::read(&journal_path)?;
        let upgrade = if c.header == jheader {
            None
        } else {
            match super::upgrade::upgrade(&c.header, &jheader, &opts.scenario_defaults) {
                Some(u) => Some(u),
                None => {
                    return Err(SweepError::Mismatch {
                        path: journal_path.clone(),
                        message: format!(
                            "--resume refused: this journal belongs to a different sweep ({}); use another --out or run without --resume",
                            header_difference(&c.header, &jheader)
                        ),
                    });
                }
            }
        };
        let old_cols = &c.header.columns;
        // The points an earlier build's journal holds, in its order (rewritten below).
        let mut kept = Vec::new();
        for (i, e) in c.entries.into_iter().enumerate() {
            // The row must be the point's own: its index and axis values as this sweep
            // writes them (a hand-edited or spliced journal is refused, not trusted).
            let own = points.get(e.point).is_some_and(|p| {
                e.row.len() == old_cols.len()
                    && e.row[0] == p.index.to_string()
                    && p.values
                        .iter()
                        .zip(&e.row[1..])
                        .all(|((_, v), cell)| value_cell(v) == *cell)
                    && e.row[1 + n_axes] == p.seed.to_string()
            });
            if e.sum != journal::row_checksum(&c.header.fingerprint, &e.row) {
                return Err(SweepError::Journal {
                    path: journal_path.clone(),
                    line: i + 2,
                    message: format!(
                        "entry for point {}: its checksum does not match its row; the journal was edited: remove it or use another --out",
                        e.point
                    ),
                });
            }
            if !own && upgrade.is_some() {
                // An earlier build's journal whose rows are not this sweep's points.
                return Err(SweepError::Mismatch {
                    path: journal_path.clone(),
                    message: format!(
                        "--resume refused: this journal belongs to a different sweep (its line {} holds point {} at other axis values or seed); use another --out or run without --resume",
                        i + 2,
                        e.point
                    ),
                });
            }
            if !own {
                return Err(SweepError::Journal {
                    path: journal_path.clone(),
                    line: i + 2,
                    message: format!(
                        "entry for point {} does not hold that point's row (index, axis values, seed); the journal was edited or spliced: remove it or use another --out",
                        e.point
                    ),
                });
            }
            if done[e.point].is_none() {
                done[e.point] = Some(match &upgrade {
                    Some(_) => {
                        kept.push(e.point);
                        super::upgrade::Upgrade::convert_row(old_cols, &header, &e.row)
                    }
                    None => e.row,
                });
            }
        }
        match upgrade {
            None => Journal::reopen(&journal_path, c.intact_len)?,
            Some(u) => {
                // Written whole beside it, then moved over it: a crash leaves the old
                // journal or the upgraded one, never a mix.
                let tmp = journal_path.with_extension("jsonl.upgrade");
                let mut j = Journal::create(&tmp, &jheader)?;
                for &pi in &kept {
                    let row = done[pi].clone().expect("kept rows are done");
                    j.append(&Entry {
                        point: pi,
                        sum: journal::row_checksum(&fp, &row),
                        row,
                    })?;
                }
                drop(j);
                std::fs::rename(&tmp, &journal_path)
                    .map_err(|e| SweepError::io(&journal_path, e))?;
                let len = std::fs::metadata(&journal_path)
                    .map_err(|e| SweepError::io(&journal_path, e))?
                    .len();
                if !opts.quiet || !u.added_columns.is_empty() {
                    eprintln!("{}", u.describe(kept.len()));
                }
                Journal::reopen(&journal_path, len)?
            }
        }
    } else {
        Journal::create(&journal_path, &jheader)?
    };
    if resuming {
        outdir.remove_earlier(true).map_err(claim_err)?;
    }
    outdir
        .record(&journal_path, true)
        .map_err(|e| SweepError::io(&journal_path, e))?;
    if !outdir.removed.is_empty() && !opts.quiet {
        eprintln!(
            "removed {} file(s) an earlier run wrote in {}: {}",
            outdir.removed.len(),
            opts.out_dir.display(),
            outdir.removed.join(", ")
        );
    }
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
                .unwrap_or_else(|e| Err(panic_message(e).into()));
            let row = make_row(p, &header, n_axes, res);
            let entry = Entry {
                point: p.index,
                sum: journal::row_checksum(&fp, &row),
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
    let err_col = header.len() - 1;
    let failed = rows.iter().filter(|r| !r[err_col].is_empty()).count();
    let mut errors: Vec<(usize, usize, String)> = Vec::new();
    for r in rows.iter().filter(|r| !r[err_col].is_empty()) {
        let point = r[0].parse().unwrap_or(0);
        match errors.iter_mut().find(|e| e.2 == r[err_col]) {
            Some(e) => e.0 += 1,
            None => errors.push((1, point, r[err_col].clone())),
        }
    }
    errors.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let complete = rows.len() == owned.len();
    let mut plot_data = None;
    let csv = if complete {
        let bytes = match opts.shard {
            // A shard's rows name their sweep, so `merge` can refuse shards of another
            // sweep even without the journals (CSVs gathered from a cluster); the merged
            // file drops the column and equals the unsharded one.
            Some(_) => {
                let mut h = header.clone();
                h.push(SWEEP_FINGERPRINT.into());
                h.push(ROW_CHECKSUM.into());
                let tagged: Vec<Vec<String>> = rows
                    .iter()
                    .map(|r| {
                        let sum = journal::row_checksum(&fp, r);
                        let mut r = (*r).clone();
                        r.push(fp.clone());
                        r.push(sum);
                        r
                    })
                    .collect();
                csv_bytes(&h, tagged.iter())
            }
            None => csv_bytes(&header, rows.iter().copied()),
        };
        write_atomic(&csv_path, &bytes)?;
        outdir
            .record(&csv_path, false)
            .map_err(|e| SweepError::io(&csv_path, e))?;
        if opts.plots && opts.shard.is_none() {
            plot_data = Some(PlotData {
                csv: bytes,
                csv_path: csv_path.clone(),
                axes: header[1..1 + n_axes].to_vec(),
                outdir,
            });
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
        errors,
        complete,
        csv,
        journal: journal_path,
        elapsed: t0.elapsed(),
        plot_data,
    })
}

/// The file names a run of `stem` writes in its folder: the CSV and the journal (the
/// caller's plots are [`RunOptions::plot_files`]).
fn output_names(stem: &str) -> [String; 2] {
    [format!("{stem}.csv"), format!("{stem}.journal.jsonl")]
}

/// Write `path` via a temporary file and a rename, so a reader never sees half a CSV
/// (through symlinks, and in place for devices: [`crate::output::write_file`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    crate::output::write_file(path, bytes).map_err(|e| SweepError::io(path, e))
}
