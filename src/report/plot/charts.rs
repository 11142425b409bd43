//! Line and scatter charts over a results table: hit rate per tier vs an axis, the
//! generic x/y/group plot, budget vs request, and a replay's timeline.
//!
//! Replicas (several seeds per point) are averaged over the runs that started; points
//! where start-up was refused or OOM-killed have no hit rate, and are drawn as markers
//! at y = 0 (× refused, ▲ OOM-killed) so that they are never silently skipped.

use std::path::Path;

use plotters::style::RGBColor;

use super::figure::{Figure, Kind, Panel, Series, color, render, short};
use super::{PlotError, PlotInfo, Table};

/// The hit-rate columns of the sweep CSV, with the tier each belongs to.
pub const TIERS: [(&str, &str); 4] = [
    ("hit_rate_device", "device (L1)"),
    ("hit_rate_host", "host (L2)"),
    ("hit_rate_storage", "storage (L3)"),
    ("hit_rate_total", "total"),
];

fn shown(v: &str) -> &str {
    if v.is_empty() { "unset" } else { v }
}

/// How x positions are computed: numbers, or category indices.
struct XAxis {
    col: usize,
    categories: Option<Vec<String>>,
}

impl XAxis {
    fn new(t: &Table, col: usize) -> Self {
        let has_empty = (0..t.rows.len()).any(|r| t.cell(r, col).is_empty());
        let categories = if t.is_numeric(col) && !has_empty {
            None
        } else {
            Some(t.distinct(col))
        };
        XAxis { col, categories }
    }
    fn x(&self, t: &Table, r: usize) -> Option<f64> {
        match &self.categories {
            None => t.num(r, self.col),
            Some(c) => c
                .iter()
                .position(|v| v == t.cell(r, self.col))
                .map(|i| i as f64),
        }
    }
    fn labels(&self) -> Option<Vec<String>> {
        self.categories
            .as_ref()
            .map(|c| c.iter().map(|v| shown(v).to_string()).collect())
    }
}

/// Lines of `ycol` over `x`, one per value of `gcol`, plus refused / OOM markers.
/// `name_prefix` goes in front of series names (for several y columns in one panel).
fn grouped_series(
    t: &Table,
    x: &XAxis,
    ycol: usize,
    gcol: Option<usize>,
    name_prefix: &str,
    color_offset: usize,
    legend_markers: &mut (bool, bool),
) -> Vec<Series> {
    let outcome = t.header.iter().position(|h| h == "outcome");
    let p_start = t.header.iter().position(|h| h == "start_probability");
    let groups: Vec<Option<String>> = match gcol {
        Some(g) => t.distinct(g).into_iter().map(Some).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    let (mut refused_groups, mut oom_groups) = (Vec::new(), Vec::new());
    for (gi, gv) in groups.iter().enumerate() {
        let label = match (gcol, gv) {
            (Some(g), Some(v)) => format!("{name_prefix}{}={}", short(&t.header[g]), shown(v)),
            _ => name_prefix.trim_end_matches(" | ").to_string(),
        };
        let c = color(gi + color_offset);
        // x → (sum, n) of started values; and the x of refused / OOM runs.
        let mut acc: Vec<(f64, f64, usize)> = Vec::new();
        let mut refused: Vec<f64> = Vec::new();
        let mut oom: Vec<f64> = Vec::new();
        // Started rows below the target P(start), and their lowest P(start).
        let (mut at_risk, mut lowest_p) = (0usize, 1.0f64);
        for r in 0..t.rows.len() {
            if let (Some(g), Some(v)) = (gcol, gv)
                && t.cell(r, g) != v
            {
                continue;
            }
            let Some(xv) = x.x(t, r) else { continue };
            let oc = outcome.map(|o| t.cell(r, o));
            if oc == Some("started")
                && let Some(p) = p_start.and_then(|c| t.num(r, c))
                && p < super::outcome_map::TARGET_START
            {
                at_risk += 1;
                lowest_p = lowest_p.min(p);
            }
            match oc {
                Some("refused") => {
                    if !refused.contains(&xv) {
                        refused.push(xv);
                    }
                    continue;
                }
                Some("oom_killed") => {
                    if !oom.contains(&xv) {
                        oom.push(xv);
                    }
                    continue;
                }
                _ => {}
            }
            if let Some(yv) = t.num(r, ycol) {
                match acc.iter_mut().find(|a| a.0 == xv) {
                    Some(a) => {
                        a.1 += yv;
                        a.2 += 1;
                    }
                    None => acc.push((xv, yv, 1)),
                }
            }
        }
        acc.sort_by(|a, b| a.0.total_cmp(&b.0));
        refused.sort_by(f64::total_cmp);
        oom.sort_by(f64::total_cmp);
        out.push(Series {
            name: label.clone(),
            kind: Kind::Line,
            color: c,
            points: acc.iter().map(|a| (a.0, a.1 / a.2 as f64)).collect(),
            // A group that never started has no line: its legend says so.
            legend: Some(
                if acc.is_empty() && (!refused.is_empty() || !oom.is_empty()) {
                    format!("{label} (never started)")
                } else if at_risk > 0 {
                    // A line whose start-ups miss the target says so: its hit rates
                    // are bought at that risk.
                    format!(
                        "{label} (P(start) down to {lowest_p:.3} < {})",
                        super::outcome_map::TARGET_START
                    )
                } else {
                    label.clone()
                },
            ),
        });
        // One neutral colour for the markers of every group, so the legend's marker is
        // the plotted one; the legend names the groups that have them.
        if !refused.is_empty() {
            refused_groups.push(label.clone());
            out.push(Series {
                name: format!("refused: {label}"),
                kind: Kind::Crosses,
                color: MARKER,
                points: refused.iter().map(|&x| (x, 0.0)).collect(),
                legend: None,
            });
        }
        if !oom.is_empty() {
            oom_groups.push(label.clone());
            out.push(Series {
                name: format!("oom_killed: {label}"),
                kind: Kind::Triangles,
                color: MARKER,
                points: oom.iter().map(|&x| (x, 0.0)).collect(),
                legend: None,
            });
        }
    }
    let groups_text = |g: &[String]| {
        if gcol.is_some() {
            format!(": {}", g.join(", "))
        } else {
            String::new()
        }
    };
    if !refused_groups.is_empty() && !legend_markers.0 {
        legend_markers.0 = true;
        if let Some(s) = out.iter_mut().find(|s| s.kind == Kind::Crosses) {
            s.legend = Some(format!("refused (× at 0){}", groups_text(&refused_groups)));
        }
    }
    if !oom_groups.is_empty() && !legend_markers.1 {
        legend_markers.1 = true;
        if let Some(s) = out.iter_mut().find(|s| s.kind == Kind::Triangles) {
            s.legend = Some(format!("OOM-killed (▲ at 0){}", groups_text(&oom_groups)));
        }
    }
    out
}

/// The colour of refused / OOM-killed markers (every group's).
const MARKER: RGBColor = RGBColor(70, 70, 70);

/// Hit rates are fractions: a fixed 0..1 axis (with room for the markers at 0) unless
/// the data says otherwise (e.g. percentages).
fn rate_range(series: &[Series]) -> Option<(f64, f64)> {
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    (max <= 1.0).then_some((-0.04, 1.04))
}

/// Hit rate per tier (device, host, storage, total — those present) vs `x`, one line per
/// value of `group`; refused / OOM-killed points marked at 0. Writes `STEM.png/.svg`.
pub fn hit_rate_vs(
    t: &Table,
    x: &str,
    group: Option<&str>,
    stem: &Path,
) -> Result<PlotInfo, PlotError> {
    let xc = t.col(x)?;
    let gc = group.map(|g| t.col(g)).transpose()?;
    let tiers: Vec<(usize, &str, &str)> = TIERS
        .iter()
        .filter_map(|&(c, name)| t.header.iter().position(|h| h == c).map(|i| (i, c, name)))
        .collect();
    if tiers.is_empty() {
        return Err(t.col("hit_rate_total").unwrap_err());
    }
    for &(yc, col, _) in &tiers {
        t.rate_column(yc, col)?;
    }
    if !tiers.iter().any(|&(yc, _, _)| t.has_values(yc)) {
        return Err(PlotError::NoData {
            file: t.source.clone(),
            message: "the hit-rate columns are empty (no point replayed a trace): nothing to plot"
                .into(),
        });
    }
    let xa = XAxis::new(t, xc);
    let mut panels = Vec::new();
    for (yc, col, name) in tiers {
        let mut lm = (false, false);
        let series = grouped_series(t, &xa, yc, gc, "", 0, &mut lm);
        panels.push(Panel {
            title: format!("{name}: {col}"),
            x_label: x.to_string(),
            // Sweep rows average the started runs; a table without outcomes (a
            // replay's ranks or engines) is one value per x.
            y_label: if t.has("outcome") {
                "hit rate (mean of started runs)".into()
            } else {
                "hit rate".into()
            },
            y_range: rate_range(&series),
            series,
            x_categories: xa.labels(),
        });
    }
    let fig = Figure {
        title: format!(
            "Hit rate per tier vs {}{}{}",
            short(x),
            group
                .map(|g| format!(", by {}", short(g)))
                .unwrap_or_default(),
            t.unverified_mark()
        ),
        cols: 2,
        size: if panels.len() > 2 {
            (1400, 1000)
        } else {
            (1400, 520)
        },
        panels,
    };
    let files = render(&fig, stem)?;
    Ok(fig.info(files))
}

/// Any column(s) against any other: `y` may list several columns separated by commas;
/// one line per (y, group value), replicas averaged, refused / OOM marked at 0.
pub fn plot_xy(
    t: &Table,
    x: &str,
    y: &str,
    group: Option<&str>,
    stem: &Path,
) -> Result<PlotInfo, PlotError> {
    let xc = t.col(x)?;
    let gc = group.map(|g| t.col(g)).transpose()?;
    let ys: Vec<&str> = y
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let ycs = ys.iter().map(|c| t.col(c)).collect::<Result<Vec<_>, _>>()?;
    if ycs.is_empty() {
        return Err(t.col("").unwrap_err());
    }
    // A y column must hold numbers: a text, NaN or empty column would be drawn as a
    // chart of "refused" points at 0.
    for (&yc, yn) in ycs.iter().zip(&ys) {
        t.numeric_column(yc, yn)?;
    }
    let xa = XAxis::new(t, xc);
    let mut series = Vec::new();
    let mut lm = (false, false);
    let n_groups = gc.map_or(1, |g| t.distinct(g).len());
    for (i, (&yc, yn)) in ycs.iter().zip(&ys).enumerate() {
        let prefix = if ys.len() > 1 {
            format!("{yn} | ")
        } else {
            String::new()
        };
        let mut s = grouped_series(t, &xa, yc, gc, &prefix, i * n_groups, &mut lm);
        if ys.len() == 1 && gc.is_none() {
            s[0].name = yn.to_string();
            s[0].legend = Some(yn.to_string());
        }
        series.extend(s);
    }
    let all_rates = ys.iter().all(|y| y.contains("hit_rate"));
    let panel = Panel {
        title: if ys.iter().any(|y| y.contains("ttft")) {
            speeds_caption(t)
        } else {
            String::new()
        },
        x_label: x.to_string(),
        y_label: ys.join(", "),
        y_range: if all_rates { rate_range(&series) } else { None },
        series,
        x_categories: xa.labels(),
    };
    let fig = Figure {
        title: format!(
            "{} vs {}{}",
            ys.join(", "),
            short(x),
            group
                .map(|g| format!(", by {}", short(g)))
                .unwrap_or_default()
        ),
        cols: 1,
        size: (1000, 650),
        panels: vec![panel],
    };
    let files = render(&fig, stem)?;
    Ok(fig.info(files))
}

/// The speeds behind a plot of TTFT: the sweep CSV's `speeds` column, one
/// value named whole, several counted; empty without the column.
pub(crate) fn speeds_caption(t: &Table) -> String {
    let Some(c) = t.header.iter().position(|h| h == "speeds") else {
        return String::new();
    };
    let v: Vec<String> = t
        .distinct(c)
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    match v.len() {
        0 => String::new(),
        1 => fit_caption(&format!("speeds: {}", caption_of_speeds(&v[0]))),
        n => format!("{n} speed settings: see the `speeds` column"),
    }
}

/// The CSV's `speeds` line without what a caption can spare (scale, load-back rule,
/// D2H, link efficiency): the compute model, chunk, H2D and storage stay.
fn caption_of_speeds(line: &str) -> String {
    line.split("; ")
        .filter(|seg| {
            *seg != "decode beside_prefill"
                && !["scale ", "load-back ", "D2H ", "efficiency "]
                    .iter()
                    .any(|p| seg.starts_with(p))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A caption cut to what a figure's width shows (the whole text is in the data).
pub(crate) fn fit_caption(s: &str) -> String {
    const MAX: usize = 118;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(MAX - 1).collect::<String>())
    }
}

/// TTFT and cache hit rate per round of multi-turn runs: one line per run
/// (`(label, rounds)`; a single unlabelled run also draws TTFT p50 and p99), the speeds
/// that produced them in the caption. Writes `STEM.png/.svg`.
pub fn per_round(
    runs: &[(String, Vec<crate::runtime::rounds::RoundFigures>)],
    speeds: &str,
    stem: &Path,
) -> Result<PlotInfo, PlotError> {
    let single = runs.len() == 1;
    let name = |label: &str, what: &str| {
        if label.is_empty() {
            what.to_string()
        } else if single {
            format!("{label}: {what}")
        } else {
            label.to_string()
        }
    };
    let line = |i: usize, n: String, pts: Vec<(f64, f64)>| Series {
        legend: Some(n.clone()),
        name: n,
        kind: Kind::Line,
        color: color(i),
        points: pts,
    };
    let mut ttft = Vec::new();
    let mut hit = Vec::new();
    for (i, (label, rounds)) in runs.iter().enumerate() {
        let pts = |f: &dyn Fn(&crate::runtime::rounds::RoundFigures) -> f64| {
            rounds
                .iter()
                .map(|r| (f64::from(r.round), f(r)))
                .collect::<Vec<_>>()
        };
        ttft.push(line(i, name(label, "TTFT mean"), pts(&|r| r.ttft_mean_s)));
        if single {
            ttft.push(line(1, name(label, "TTFT p50"), pts(&|r| r.ttft_p50_s)));
            ttft.push(line(3, name(label, "TTFT p99"), pts(&|r| r.ttft_p99_s)));
        }
        hit.push(line(
            if single { 2 } else { i },
            name(label, "cache hit rate"),
            pts(&|r| r.hit_rate),
        ));
    }
    if ttft.iter().all(|s| s.points.is_empty()) {
        return Err(PlotError::NoData {
            file: stem.display().to_string(),
            message: "no round to plot".into(),
        });
    }
    let y_range = rate_range(&hit);
    // Rounds are whole numbers: label them as categories (x = the round).
    let n = runs.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    let cats: Vec<String> = (0..n).map(|r| r.to_string()).collect();
    let fig = Figure {
        title: "TTFT and cache hit rate per round".into(),
        cols: 1,
        size: (1100, 940),
        panels: vec![
            Panel {
                title: fit_caption(&format!("speeds: {speeds}")),
                x_label: "round".into(),
                y_label: "TTFT (s)".into(),
                series: ttft,
                x_categories: Some(cats.clone()),
                ..Default::default()
            },
            Panel {
                title: "cache hit rate (device + host + storage) per round".into(),
                x_label: "round".into(),
                y_label: "hit rate".into(),
                y_range,
                series: hit,
                x_categories: Some(cats),
                ..Default::default()
            },
        ],
    };
    let files = render(&fig, stem)?;
    Ok(fig.info(files))
}

/// The per-round plot of a `runtime.bench` sweep (`round_…_r` columns; `None` without
/// them): one line per point, labelled by its axis values.
pub fn per_round_of_sweep(
    t: &Table,
    axes: &[String],
    stem: &Path,
) -> Option<Result<PlotInfo, PlotError>> {
    use crate::runtime::rounds::RoundFigures;
    let col = |n: &str| t.header.iter().position(|h| h == n);
    col("round_ttft_mean_s_0")?;
    let mut runs = Vec::new();
    for r in 0..t.rows.len() {
        let mut rounds = Vec::new();
        for k in 0u32.. {
            let get = |f: &str| col(&format!("round_{f}_{k}")).and_then(|c| t.num(r, c));
            let Some(mean) = get("ttft_mean_s") else {
                break;
            };
            rounds.push(RoundFigures {
                round: k,
                requests: 0,
                ttft_mean_s: mean,
                ttft_p50_s: get("ttft_p50_s").unwrap_or(mean),
                ttft_p99_s: get("ttft_p99_s").unwrap_or(mean),
                input_tok_s: get("input_tok_s").unwrap_or(0.0),
                tpot_mean_s: get("tpot_mean_s"),
                hit_rate: get("hit_rate").unwrap_or(0.0),
            });
        }
        if rounds.is_empty() {
            continue;
        }
        let label: Vec<String> = axes
            .iter()
            .filter_map(|a| col(a).map(|c| format!("{}={}", short(a), t.cell(r, c))))
            .collect();
        let point = col("point").map_or(String::new(), |c| t.cell(r, c).to_string());
        runs.push((format!("point {point}: {}", label.join(", ")), rounds));
    }
    if runs.is_empty() {
        return None;
    }
    let speeds = speeds_caption(t);
    let speeds = speeds
        .strip_prefix("speeds: ")
        .unwrap_or(&speeds)
        .to_string();
    Some(per_round(&runs, &speeds, stem))
}

/// Per-rank (or per-point) host budget vs the request, in GB (10^9 B, as SGLang prints),
/// coloured by outcome, with the refusal line budget = request: every point below it is a
/// refusal.
pub fn budget_vs_request(t: &Table, stem: &Path) -> Result<PlotInfo, PlotError> {
    use super::outcome_map::{CLASSES, TARGET_START};
    let bc = t.col("budget_bytes")?;
    let rc = t.col("requested_bytes")?;
    let col = |n: &str| t.header.iter().position(|h| h == n);
    let (oc, pc, poolc) = (
        col("outcome"),
        col("start_probability"),
        col("binding_pool"),
    );
    // Colour by P(start) against the target (the outcome map's classes), marker by
    // what run 0 did; the legend names the pools each series' points bind on.
    let kinds: [(&str, Kind, RGBColor); 5] = [
        ("meets", Kind::Points, CLASSES[0].1),
        ("below", Kind::Points, CLASSES[1].1),
        ("refused", Kind::Crosses, CLASSES[2].1),
        ("oom_killed", Kind::Triangles, CLASSES[3].1),
        ("other", Kind::Points, color(7)),
    ];
    let mut buckets: Vec<Vec<(f64, f64)>> = vec![Vec::new(); kinds.len()];
    let mut pools: Vec<std::collections::BTreeSet<String>> = vec![Default::default(); kinds.len()];
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in 0..t.rows.len() {
        let (Some(b), Some(q)) = (t.num(r, bc), t.num(r, rc)) else {
            continue;
        };
        let (b, q) = (b / 1e9, q / 1e9);
        lo = lo.min(b).min(q);
        hi = hi.max(b).max(q);
        let o = oc.map_or("other", |o| t.cell(r, o));
        let p = pc.and_then(|c| t.num(r, c));
        let k = match (o, p) {
            ("started", Some(p)) if p < TARGET_START => 1,
            ("started", _) => 0,
            ("refused", _) => 2,
            ("oom_killed", _) => 3,
            _ => 4,
        };
        buckets[k].push((q, b));
        if let Some(pool) = poolc.map(|c| t.cell(r, c)).filter(|x| !x.is_empty()) {
            pools[k].insert(if pool == crate::startup::ALL_HOST_POOLS {
                "all pools, one booking".to_string()
            } else {
                format!("{pool} pool")
            });
        }
    }
    if !lo.is_finite() {
        return Err(PlotError::NoData {
            file: t.source.clone(),
            message: "no row has both budget_bytes and requested_bytes".into(),
        });
    }
    let mut series = vec![Series {
        name: "refusal line (budget = request)".into(),
        kind: Kind::Reference,
        color: color(7),
        points: vec![(lo.min(0.0), lo.min(0.0)), (hi, hi)],
        legend: Some("refusal line (budget = request)".into()),
    }];
    for (((id, kind, c), pts), pools) in kinds.iter().zip(buckets).zip(pools) {
        if pts.is_empty() {
            continue;
        }
        let what = match *id {
            "meets" => format!("started, P(start) ≥ {TARGET_START}"),
            "below" => format!("started, P(start) < {TARGET_START}"),
            "oom_killed" => "OOM-killed".to_string(),
            o => o.to_string(),
        };
        let on: Vec<String> = pools.into_iter().collect();
        let legend = if on.is_empty() {
            what
        } else {
            format!("{what}: {}", on.join(", "))
        };
        series.push(Series {
            name: id.to_string(),
            kind: *kind,
            color: *c,
            points: pts,
            legend: Some(legend),
        });
    }
    let fig = Figure {
        title: "Binding host pool: budget checked against vs requested (run 0)".into(),
        cols: 1,
        size: (900, 700),
        panels: vec![Panel {
            title: String::new(),
            x_label: "request of the binding pool: the one with the least margin (GB)".into(),
            y_label: "budget (GB)".into(),
            series,
            x_categories: None,
            y_range: None,
        }],
    };
    let files = render(&fig, stem)?;
    Ok(fig.info(files))
}

/// One replay over time: host-pool occupancy (columns starting with `host_`) above, hit
/// rates (columns starting with `hit_rate` or `page_hit_rate`) below. Time from `x`, or
/// else `time_s`, `time_ms` or `time_ns` (shown in seconds).
pub fn timeline(t: &Table, x: Option<&str>, stem: &Path) -> Result<PlotInfo, PlotError> {
    let (xc, scale) = match x {
        Some(x) => (t.col(x)?, 1.0),
        None => {
            let found = [("time_s", 1.0), ("time_ms", 1e-3), ("time_ns", 1e-9)]
                .iter()
                .find_map(|&(c, s)| t.header.iter().position(|h| h == c).map(|i| (i, s)));
            match found {
                Some(f) => f,
                None => return Err(t.col("time_s").unwrap_err()),
            }
        }
    };
    let cols_with = |pred: &dyn Fn(&str) -> bool| -> Vec<usize> {
        (0..t.header.len())
            .filter(|&i| i != xc && pred(&t.header[i]))
            .collect()
    };
    let host = cols_with(&|h| h.starts_with("host_"));
    let rates = cols_with(&|h| h.starts_with("hit_rate") || h.starts_with("page_hit_rate"));
    if host.is_empty() && rates.is_empty() {
        return Err(t.col("host_occupancy").unwrap_err());
    }
    let line = |c: usize, i: usize| {
        let mut pts: Vec<(f64, f64)> = (0..t.rows.len())
            .filter_map(|r| Some((t.num(r, xc)? * scale, t.num(r, c)?)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        Series {
            name: t.header[c].clone(),
            kind: Kind::Path,
            color: color(i),
            points: pts,
            legend: Some(t.header[c].clone()),
        }
    };
    let x_label = match x {
        Some(x) => x.to_string(),
        None => "time (s)".to_string(),
    };
    let mut panels = Vec::new();
    if !host.is_empty() {
        panels.push(Panel {
            title: "host pool (L2) occupancy".into(),
            x_label: x_label.clone(),
            y_label: host
                .iter()
                .map(|&c| t.header[c].as_str())
                .collect::<Vec<_>>()
                .join(", "),
            series: host.iter().enumerate().map(|(i, &c)| line(c, i)).collect(),
            ..Default::default()
        });
    }
    if !rates.is_empty() {
        let series: Vec<Series> = rates
            .iter()
            .enumerate()
            .map(|(i, &c)| line(c, i + 3))
            .collect();
        panels.push(Panel {
            title: "hit rate".into(),
            x_label,
            y_label: "hit rate".into(),
            y_range: rate_range(&series),
            series,
            ..Default::default()
        });
    }
    let fig = Figure {
        title: format!("Replay timeline{}", t.unverified_mark()),
        cols: 1,
        size: (1100, 450 * panels.len() as u32 + 40),
        panels,
    };
    let files = render(&fig, stem)?;
    Ok(fig.info(files))
}

/// The axis columns of a sweep CSV: those between `point` and `seed`.
pub fn sweep_axes(t: &Table) -> Vec<String> {
    let (Some(p), Some(s)) = (
        t.header.iter().position(|h| h == "point"),
        t.header.iter().position(|h| h == "seed"),
    ) else {
        return Vec::new();
    };
    if s <= p {
        return Vec::new();
    }
    t.header[p + 1..s].to_vec()
}

/// The plots a sweep writes next to its CSV, each when its columns are there:
/// `hit_rate_vs_X` (X = the `…fraction` axis, or the first numeric one; grouped by the
/// `…ratio` axis or the next one), `outcome_map` (needs `outcome` and two axes),
/// `budget_vs_request` (needs `budget_bytes` and `requested_bytes`). `axes` defaults to
/// [`sweep_axes`] when empty.
pub fn default_plots(
    t: &Table,
    axes: &[String],
    out_dir: &Path,
) -> Result<Vec<PlotInfo>, PlotError> {
    let found;
    let axes = if axes.is_empty() {
        found = sweep_axes(t);
        &found[..]
    } else {
        axes
    };
    let (x, group) = pick_axes(t, axes);
    plots_for(t, x.as_deref(), group.as_deref(), out_dir)
}

/// The x axis (the `…fraction` axis, else the first numeric one) and the group axis (the
/// `…ratio` axis, else the next one) of the default plots.
pub(crate) fn pick_axes(t: &Table, axes: &[String]) -> (Option<String>, Option<String>) {
    let numeric = |a: &String| {
        t.header
            .iter()
            .position(|h| h == a)
            .is_some_and(|c| t.is_numeric(c))
    };
    let x = axes
        .iter()
        .find(|a| a.contains("fraction") && numeric(a))
        .or_else(|| axes.iter().find(|a| numeric(a)));
    let group = x.and_then(|x| {
        axes.iter()
            .find(|a| *a != x && a.contains("ratio"))
            .or_else(|| axes.iter().find(|a| *a != x))
    });
    (x.cloned(), group.cloned())
}

/// Every file name [`default_plots`] may write for a sweep of these axes (each figure
/// as PNG and SVG).
pub fn default_plot_names(axes: &[String]) -> Vec<String> {
    let mut stems: Vec<String> = axes
        .iter()
        .map(|a| format!("hit_rate_vs_{}", short(a)))
        .collect();
    stems.push("outcome_map".into());
    stems.push("budget_vs_request".into());
    stems
        .into_iter()
        .flat_map(|s| [format!("{s}.png"), format!("{s}.svg")])
        .collect()
}

/// The default plots for a given x and group.
pub(crate) fn plots_for(
    t: &Table,
    x: Option<&str>,
    group: Option<&str>,
    out_dir: &Path,
) -> Result<Vec<PlotInfo>, PlotError> {
    let mut out = Vec::new();
    if let Some(x) = x {
        // A start-up-only sweep (no trace) leaves every hit-rate cell empty: no figure.
        if TIERS
            .iter()
            .any(|(c, _)| t.col(c).is_ok_and(|i| t.has_values(i)))
        {
            let stem = out_dir.join(format!("hit_rate_vs_{}", short(x)));
            out.push(hit_rate_vs(t, x, group, &stem)?);
        }
        if let Some(g) = group
            && t.has("outcome")
        {
            out.push(super::outcome_map(t, x, g, &out_dir.join("outcome_map"))?);
        }
    }
    if t.has("budget_bytes") && t.has("requested_bytes") {
        match budget_vs_request(t, &out_dir.join("budget_vs_request")) {
            Ok(i) => out.push(i),
            Err(PlotError::NoData { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
