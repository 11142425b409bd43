//! `hicache-sim sweep`, `merge` and `plot`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{CmdResult, CommandError, MergeArgs, PlotArgs, SweepArgs};
use crate::error::{FieldError, InputError};
use crate::pipeline::{COLUMNS, point_row};
use crate::release::Sglang;
use crate::runtime::ReplayConfig;
use crate::scenario::LoadedScenario;
use crate::scenario::lines::{LineIndex, Origin};
use crate::scenario::load::load_str_as;
use crate::scenario::resolve::resolve;
use crate::sweep::{self, RunOptions, Shard, SweepSpec};

/// The scenario as a value tree with every field present (the sweep checks axis paths
/// and value types against it), without its `sweep:` section.
/// The file is read once (`sweep <(…)`: a pipe cannot be read twice); the scenario as
/// loaded comes back too.
pub fn sweep_base(
    path: &str,
    sets: &[String],
    sglang: Option<Sglang>,
) -> Result<(Value, SweepSpec, LoadedScenario), InputError> {
    let text = crate::input::read_to_string(std::path::Path::new(path), crate::input::DOCUMENT_CAP)
        .map_err(|e| InputError::new(path, format!("cannot read the scenario: {e}")))?;
    // A launch file has no `sweep:` section, and `--set` (so `# hicache-sim:`) cannot
    // give one: a sweep's axes are YAML.
    if crate::scenario::launch_file::form_of(&text, path)?
        == crate::scenario::launch_file::Form::LaunchFile
    {
        return Err(InputError::new(
            path,
            "a launch file has no `sweep:` section (a sweep's axes and seeds are YAML, which `# hicache-sim:` comments cannot give): write a YAML scenario with the command as `server: {launch: |…}`, the comments' fields as keys, and a `sweep:` section (docs/src/guide/launch-files.md); `startup`, `plan`, `check` and `replay` read the launch file as it is",
        )
        .field("sweep"));
    }
    let spec = SweepSpec::from_scenario_yaml(&text, path)?;
    let loaded = load_str_as(&text, path, sets, sglang)?;
    // Resolve once up front: a bad base scenario is an error before any work starts.
    resolve(&loaded)?;
    let mut base =
        serde_json::to_value(&loaded.file).map_err(|e| InputError::new(path, e.to_string()))?;
    let o = base
        .as_object_mut()
        .expect("a scenario serializes to a map");
    o.remove("sweep");
    if let Some(rt) = o.get_mut("runtime").and_then(Value::as_object_mut) {
        // Every replay field, so `runtime.replay.X` axes can be checked; the pipeline
        // only applies the keys the file or an axis sets.
        let mut full = crate::runtime::full_value(&ReplayConfig::default());
        if let (Some(f), Some(user)) = (
            full.as_object_mut(),
            rt.get("replay").and_then(Value::as_object),
        ) {
            for (k, v) in user {
                f.insert(k.clone(), v.clone());
            }
        }
        rt.insert("replay".into(), full);
    }
    Ok((base, spec, loaded))
}

pub fn sweep(a: SweepArgs) -> CmdResult {
    if a.out.trim().is_empty() {
        return Err(InputError::new(
            "--out",
            "an empty folder name: name the folder to write the sweep into (`--out .` for this one)",
        )
        .into());
    }
    // Every point replays the same trace(s): parse each once, share it read-only.
    // `HICACHE_SIM_NO_TRACE_SHARING=1` parses per point instead (the test that the
    // shared parse changes no byte of the CSV compares the two).
    if std::env::var_os("HICACHE_SIM_NO_TRACE_SHARING").is_none() {
        crate::workload::read::enable_sharing();
    }
    // Points that resolve to the same replay (config, trace) replay it once;
    // `HICACHE_SIM_NO_REPLAY_MEMO=1` replays per point (the byte-identity test).
    if std::env::var_os("HICACHE_SIM_NO_REPLAY_MEMO").is_none() {
        crate::pipeline::replay_memo::enable();
    }
    let (base, spec, loaded) = sweep_base(&a.scenario, &a.sets, a.sglang)?;
    let points = sweep::expand(&spec, &base)?;
    // The release of every point, typed once: the scenario's, or a `sglang` axis value's.
    let releases = PointReleases::new(&spec, loaded.file.sglang)?;
    // The tree every point is patched into holds no `sglang:` (the base keeps it for the
    // journal's record of the scenario).
    let mut tree = base.clone();
    if let Some(o) = tree.as_object_mut() {
        o.remove("sglang");
    }
    // Every combination is checked the way SGLang checks its flags, before any work.
    let source0 = a.scenario.clone();
    let notes = std::sync::Mutex::new(std::collections::BTreeSet::new());
    // Every model file a point reads (`config.json` and what sits beside it): their
    // content is part of the sweep's fingerprint.
    let model_files = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let lines = crate::scenario::lines::LineIndex::default();
    sweep::check_points(&spec, &tree, &points, &|v: &Value, p: &sweep::Point| {
        let at_axis = |e: InputError| axis_error(&spec, p, e);
        let file = crate::scenario::load::typed_ref_as(v, releases.of(p), &source0, &lines)
            .map_err(at_axis)?;
        // A point needing a rule that is not modelled is no bad input: it runs, and its
        // row says `not_modelled` (the `error` column names the rule).
        let not_modelled = crate::error::ErrorKind::NotModelled;
        let s = match crate::scenario::resolve::resolve_file(&file, &source0, &lines, &[]) {
            Ok(s) => s,
            Err(e) if e.kind == not_modelled => return Ok(()),
            Err(e) => return Err(at_axis(e)),
        };
        if !s.notes.is_empty() {
            notes
                .lock()
                .expect("not poisoned")
                .extend(s.notes.iter().cloned());
        }
        model_files
            .lock()
            .expect("not poisoned")
            .extend(s.resolved_model.input_files());
        match crate::startup::StartupPlan::new(&s) {
            Err(e) if e.kind != not_modelled => Err(e.into()),
            _ => Ok(()),
        }
    })?;
    // What SGLang would log once (an explicit ratio turning the fraction off), said once.
    for n in notes.into_inner().expect("not poisoned") {
        eprintln!("note: {n}");
    }
    // The replay keys the file itself sets (the base was filled with every default).
    let user_replay: Vec<String> = loaded
        .file
        .runtime
        .as_ref()
        .and_then(|r| r.get("replay"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let source = a.scenario.clone();
    // The launch command's scheduling flags a replay does not model (the points' trees
    // have no launch text).
    let launch = crate::scenario::launch_schedule::ReplayUnmodelled::of(loaded.launch.as_ref());
    let runner = |p: &sweep::Point| {
        let mut v = sweep::apply(&tree, p);
        keep_explicit_replay_keys(&mut v, &user_replay, p);
        point_row(&v, p, releases.of(p), &source, &launch)
    };
    let mut columns: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    columns.extend(bench_columns(&base, &points));
    let mut opts = RunOptions::new(&a.out, columns);
    let model_files = model_files.into_inner().expect("not poisoned");
    let (scenario_map, traces) =
        provenance(&base, &points, &a.scenario, &loaded.lines, &model_files)?;
    opts.scenario = scenario_map;
    opts.scenario_defaults = crate::scenario::load::flattened_defaults();
    opts.inputs = std::iter::once(("scenario".to_string(), PathBuf::from(&a.scenario)))
        .chain(traces.into_iter().map(|t| ("trace".to_string(), t)))
        .chain(
            model_files
                .iter()
                .map(|m| ("model file".to_string(), m.clone())),
        )
        .collect();
    for (what, p) in &opts.inputs {
        crate::output::protect_input(what, p);
    }
    opts.holder = format!(
        "hicache-sim sweep {}{}",
        a.scenario,
        a.sets
            .iter()
            .map(|s| format!(" --set {s}"))
            .chain(a.sglang.map(|v| format!(" --sglang {v}")))
            .collect::<String>()
    );
    opts.jobs = crate::commands::clamp_jobs(a.jobs);
    opts.resume = a.resume;
    opts.quiet = a.quiet;
    opts.plots = true;
    opts.plot_files = crate::report::plot::default_plot_names(&axes_of(&points));
    if opts.columns.iter().any(|c| c.starts_with("round_")) {
        opts.plot_files
            .extend(["per_round.png".to_string(), "per_round.svg".to_string()]);
    }
    opts.shard = a.shard.as_deref().map(Shard::parse).transpose()?;
    let mut summary = sweep::run(&points, &runner, &opts)?;
    let plots = match summary.plot_data.take() {
        Some(d) => draw_default_plots(d)?,
        None => Vec::new(),
    };
    eprintln!(
        "{} points ({} owned, {} computed, {} resumed, {} with errors) in {:.2} s{}",
        summary.points_total,
        summary.points_owned,
        summary.computed,
        summary.resumed,
        summary.failed,
        summary.elapsed.as_secs_f64(),
        summary
            .csv
            .as_ref()
            .map(|c| format!(" -> {}", c.display()))
            .unwrap_or_default()
    );
    let (replays, asked) = crate::pipeline::replay_memo::stats();
    if asked > replays {
        eprintln!(
            "{replays} distinct replays for {asked} replaying points (the others share a replay: same resolved replay config and trace)"
        );
    }
    for p in &plots {
        for f in &p.files {
            eprintln!("plot: {}", f.display());
        }
    }
    if summary.failed > 0 {
        // Every finished row is kept (CSV and journal); the run still did not do its job.
        let mut m = format!(
            "{} of {} points failed (their rows carry the message in the `error` column):",
            summary.failed, summary.points_owned
        );
        for (n, point, msg) in summary.errors.iter().take(5) {
            m.push_str(&format!("\n  {n} point(s), first point {point}: {msg}"));
        }
        if summary.errors.len() > 5 {
            m.push_str(&format!(
                "\n  … and {} other message(s)",
                summary.errors.len() - 5
            ));
        }
        return Err(CommandError::Other(m));
    }
    Ok(0)
}

/// The release of each point: the scenario's (typed by the loader), or the value of a
/// `sglang` axis, each typed once by the loader's reading of a release
/// (`load::release_value`). A value that is no release is refused at its line, naming
/// the axis.
struct PointReleases {
    own: Sglang,
    by_axis: Vec<(Value, Sglang)>,
}

impl PointReleases {
    fn new(spec: &SweepSpec, own: Sglang) -> Result<Self, InputError> {
        let mut by_axis = Vec::new();
        let axes = spec
            .axes
            .iter()
            .chain(spec.zip.iter().flat_map(|g| &g.axes));
        for a in axes.filter(|a| a.path == "sglang") {
            for (i, v) in a.values.iter().enumerate() {
                let typed = crate::scenario::load::release_value(Some(v))
                    .map_err(|m| axis_lines(a, i).error(&spec.source, "sglang", &m.to_string()))?;
                by_axis.push((v.clone(), typed));
            }
        }
        Ok(Self { own, by_axis })
    }

    fn of(&self, p: &sweep::Point) -> Sglang {
        match p.get("sglang") {
            Some(v) => self
                .by_axis
                .iter()
                .find(|(x, _)| x == v)
                .map_or(self.own, |(_, r)| *r),
            None => self.own,
        }
    }
}

/// The provenance map of one value of an axis: the axis path came from the axis's `i`-th
/// value, at its line.
fn axis_lines(a: &sweep::Axis, i: usize) -> LineIndex {
    let line = a
        .value_lines
        .get(i)
        .copied()
        .filter(|&l| l > 0)
        .or((a.line > 0).then_some(a.line));
    let mut lines = LineIndex::default();
    lines.set_origin(
        &a.path,
        Origin::SweepAxis {
            axis: a.path.clone(),
            value: a.values[i].to_string(),
            line,
        },
    );
    lines
}

/// A point's error about a field one of its axes set, at that axis value's line, naming
/// the axis and the value (`check_points` adds the combination); any other error as its
/// message, which `check_points` names with the combination at the `sweep:` line.
fn axis_error(spec: &SweepSpec, p: &sweep::Point, e: InputError) -> sweep::PointError {
    let Some(field) = e.field.as_deref() else {
        return e.message.into();
    };
    let under = |path: &str| {
        field == path
            || field
                .strip_prefix(path)
                .is_some_and(|r| r.starts_with('.') || r.starts_with('['))
    };
    let axes = spec
        .axes
        .iter()
        .chain(spec.zip.iter().flat_map(|g| &g.axes));
    for a in axes.filter(|a| under(&a.path)) {
        if let Some(v) = p.get(&a.path)
            && let Some(i) = a.values.iter().position(|x| x == v)
        {
            return Box::new(axis_lines(a, i).error(&spec.source, field, &e.message));
        }
    }
    e.message.into()
}

/// The columns of a `runtime.bench` sweep (none without one): the whole run's
/// `ttft_mean_s`, `input_tok_s`, `tpot_mean_s`, `bench_passes`, then per round `r` (up
/// to the most rounds any point runs) `round_{figure}_{r}` for each of
/// `runtime::rounds::ROUND_FIGURES` — wide, so one point stays one row; the README shows
/// the `pandas.wide_to_long` call that makes it one row per round.
fn bench_columns(base: &Value, points: &[sweep::Point]) -> Vec<String> {
    let bench = base.pointer("/runtime/bench");
    let axis_bench = points
        .iter()
        .flat_map(|p| &p.values)
        .any(|(k, _)| k.starts_with("runtime.bench"));
    if bench.is_none_or(Value::is_null) && !axis_bench {
        return Vec::new();
    }
    let base_rounds = bench
        .and_then(|b| b.get("rounds"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let rounds = points
        .iter()
        .flat_map(|p| &p.values)
        .filter(|(k, _)| k == "runtime.bench.rounds")
        .filter_map(|(_, v)| v.as_u64())
        .chain(std::iter::once(base_rounds))
        .max()
        .unwrap_or(1);
    let mut c: Vec<String> = ["ttft_mean_s", "input_tok_s", "tpot_mean_s", "bench_passes"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for r in 0..rounds.min(10_000) {
        for f in crate::runtime::rounds::ROUND_FIGURES {
            c.push(format!("round_{f}_{r}"));
        }
    }
    c
}

/// The base scenario flattened (`server.hicache_size` → `135`), the content hash of
/// every trace and model file a point reads and of the data bundled in the binary: what
/// a `--resume` or `merge` must find unchanged; and the traces' paths.
fn provenance(
    base: &Value,
    points: &[sweep::Point],
    scenario: &str,
    lines: &crate::scenario::lines::LineIndex,
    model_files: &std::collections::BTreeSet<PathBuf>,
) -> Result<(BTreeMap<String, String>, Vec<PathBuf>), CommandError> {
    let mut m = BTreeMap::new();
    crate::scenario::load::flatten(base, "", &mut m);
    m.insert(
        "hicache_sim_version".into(),
        env!("CARGO_PKG_VERSION").into(),
    );
    m.insert(
        "bundled data".into(),
        crate::pipeline::bundled_data_fingerprint(),
    );
    for f in model_files {
        let hash = crate::fingerprint::content_hash(f).map_err(|e| {
            InputError::new(
                f.display().to_string(),
                format!("cannot fingerprint the model file: {e}"),
            )
        })?;
        m.insert(
            format!("model file content {}", f.display()),
            format!("{hash:016x}"),
        );
    }
    let mut traces: Vec<String> = base
        .pointer("/runtime/trace")
        .and_then(Value::as_str)
        .map(str::to_string)
        .into_iter()
        .collect();
    for p in points {
        for (k, v) in &p.values {
            if k == "runtime.trace"
                && let Some(t) = v.as_str()
            {
                traces.push(t.to_string());
            }
        }
    }
    traces.sort();
    traces.dedup();
    let mut paths = Vec::new();
    for t in traces {
        let path = crate::scenario::resolve::resolve_relative(&t, scenario);
        let hash = crate::fingerprint::content_hash(Path::new(&path)).map_err(|e| {
            lines.input_error(
                scenario,
                FieldError::new(
                    "runtime.trace",
                    format!("cannot read the trace `{path}`: {e}"),
                ),
            )
        })?;
        m.insert(format!("trace content {t}"), format!("{hash:016x}"));
        paths.push(PathBuf::from(path));
    }
    Ok((m, paths))
}

/// Drops `runtime.replay` keys that neither the file nor this point's axes set, so the
/// replay derives them from the start-up (e.g. `l2_pages` from the host pool).
fn keep_explicit_replay_keys(v: &mut Value, user: &[String], p: &sweep::Point) {
    let Some(replay) = v
        .pointer_mut("/runtime/replay")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let from_axes: Vec<&str> = p
        .values
        .iter()
        .filter_map(|(k, _)| k.strip_prefix("runtime.replay."))
        .collect();
    replay.retain(|k, _| user.iter().any(|u| u == k) || from_axes.contains(&k.as_str()));
}

pub fn merge(a: MergeArgs) -> CmdResult {
    let files: Vec<PathBuf> = a.files.iter().map(PathBuf::from).collect();
    sweep::merge_to(&files, Path::new(&a.output))?;
    eprintln!("merged {} files -> {}", files.len(), a.output);
    Ok(0)
}

pub fn plot(a: PlotArgs) -> CmdResult {
    let csv = Path::new(&a.csv);
    let out_dir = a
        .out
        .as_deref()
        .map(PathBuf::from)
        .unwrap_or_else(|| csv.parent().unwrap_or(Path::new(".")).to_path_buf());
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| CommandError::Other(format!("{}: {e}", out_dir.display())))?;
    let infos = crate::report::plot::plot_csv(
        csv,
        a.x.as_deref(),
        a.y.as_deref(),
        a.group.as_deref(),
        &out_dir,
    )
    .map_err(plot_error)?;
    for i in infos {
        for f in i.files {
            println!("{}", f.display());
        }
    }
    Ok(0)
}

/// A sweep's axis paths, in CSV order.
fn axes_of(points: &[sweep::Point]) -> Vec<String> {
    points
        .first()
        .map(|p| p.values.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default()
}

/// The default plots of a complete sweep, drawn next to its CSV and recorded as the
/// run's files. Any failure is exit 3 (the CSV is written and stays).
pub fn draw_default_plots(
    mut d: sweep::PlotData,
) -> Result<Vec<crate::report::plot::PlotInfo>, CommandError> {
    use crate::report::plot::{Table, default_plots};
    let failed = |e: crate::report::plot::PlotError| CommandError::Other(e.to_string());
    let table = Table::from_csv(&d.csv, &d.csv_path.display().to_string()).map_err(failed)?;
    let dir = d.outdir.dir().to_path_buf();
    let mut plots = default_plots(&table, &d.axes, &dir).map_err(failed)?;
    if let Some(p) =
        crate::report::plot::per_round_of_sweep(&table, &d.axes, &dir.join("per_round"))
    {
        plots.push(p.map_err(failed)?);
    }
    for f in plots.iter().flat_map(|p| &p.files) {
        d.outdir
            .record(f, false)
            .map_err(|e| crate::sweep::SweepError::io(f, e))?;
    }
    Ok(plots)
}

/// A plot failure: exit 3 when writing failed (I/O, drawing, the font), exit 2 when the
/// CSV or the columns asked for are wrong.
pub fn plot_error(e: crate::report::plot::PlotError) -> CommandError {
    use crate::report::plot::PlotError as P;
    match e {
        P::Io { .. } | P::Draw { .. } | P::Font => CommandError::Other(e.to_string()),
        P::Csv { .. } | P::MissingColumn { .. } | P::NoData { .. } => {
            CommandError::Usage(e.to_string())
        }
    }
}
