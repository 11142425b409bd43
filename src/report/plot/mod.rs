//! Plots of sweep results, with plotters, to PNG and SVG, text rendered with
//! the bundled DejaVu Sans (no system fonts, no fontconfig).
//!
//! Every chart reads a [`Table`] (a results CSV), builds a small figure model and draws
//! it twice (PNG, SVG); it returns a [`PlotInfo`] — titles, axis labels, series and their
//! point counts — so tests check the data behind the picture, not pixels.
//!
//! Charts: [`hit_rate_vs`] (hit rate per tier vs an axis, one line per group, refused
//! and OOM-killed points marked at y = 0), [`outcome_map`] (started / refused / OOM over
//! two axes, margin as colour), [`budget_vs_request`] (budget vs request with the refusal
//! line), [`timeline`] (host occupancy and hit rate over time of one replay), and the
//! generic [`plot_xy`] behind `hicache-sim plot --x --y --group`.

mod charts;
mod figure;
mod outcome_map;
mod table;

pub use charts::{
    TIERS, budget_vs_request, default_plot_names, default_plots, hit_rate_vs, per_round,
    per_round_of_sweep, plot_xy, sweep_axes, timeline,
};
pub use figure::{Chart, Figure, Kind, Panel, Series, render, short};
pub use outcome_map::outcome_map;
pub use table::Table;

use std::path::PathBuf;
use std::sync::OnceLock;

/// The font family every text style uses; registered from the bundled file.
pub const FONT_FAMILY: &str = "sans-serif";

static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// Register the bundled DejaVu Sans with plotters (once per process, before drawing).
pub fn register_font_once() -> Result<(), PlotError> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, plotters::style::FontStyle::Normal, FONT)
            .is_ok()
    });
    if ok { Ok(()) } else { Err(PlotError::Font) }
}

/// A plotters drawing failure, in the backend's words (the backend's error type is
/// generic over the backend, so its text is what a chart can pass on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(pub String);

impl<E: std::error::Error + Send + Sync> From<plotters::drawing::DrawingAreaErrorKind<E>>
    for DrawError
{
    fn from(e: plotters::drawing::DrawingAreaErrorKind<E>) -> Self {
        DrawError(e.to_string())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{file}: not a readable CSV: {message}")]
    Csv { file: String, message: String },
    #[error("{file}: no column `{column}`{hint}")]
    MissingColumn {
        file: String,
        column: String,
        hint: String,
    },
    #[error("{file}: {message}")]
    NoData { file: String, message: String },
    #[error("drawing {path}: {message}")]
    Draw { path: String, message: String },
    #[error("the bundled font could not be loaded")]
    Font,
}

/// What a chart drew, for tests and for the CLI to print.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotInfo {
    pub title: String,
    pub panels: Vec<PanelInfo>,
    /// The PNG and SVG written.
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PanelInfo {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<SeriesInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesInfo {
    pub name: String,
    pub points: usize,
}

impl PlotInfo {
    /// All series of all panels as `(panel title, series name, points)`.
    pub fn series(&self) -> Vec<(&str, &str, usize)> {
        self.panels
            .iter()
            .flat_map(|p| {
                p.series
                    .iter()
                    .map(move |s| (p.title.as_str(), s.name.as_str(), s.points))
            })
            .collect()
    }
}

/// `hicache-sim plot RESULTS.csv [--x FIELD] [--y FIELD] [--group FIELD]`: with `y`, the
/// generic [`plot_xy`] (x defaults to the first sweep axis; `y` may list columns separated
/// by commas), written as `OUT_DIR/Y_vs_X.{png,svg}`; without, a timeline CSV (a `time_s`,
/// `time_ms` or `time_ns` column) gets [`timeline`] and a sweep CSV its
/// [`default_plots`] (`x`/`group` override the axes they pick).
pub fn plot_csv(
    csv: &std::path::Path,
    x: Option<&str>,
    y: Option<&str>,
    group: Option<&str>,
    out_dir: &std::path::Path,
) -> Result<Vec<PlotInfo>, PlotError> {
    let t = Table::read(csv)?;
    // A header and no rows (a sweep that wrote nothing yet, a truncated copy): no chart
    // drawn from it would say anything, so none is drawn.
    if t.rows.is_empty() {
        return Err(PlotError::NoData {
            file: csv.display().to_string(),
            message: "no rows under the header: nothing to plot (a sweep writes its rows as points finish; `sweep --resume` completes an interrupted one)".into(),
        });
    }
    let axes = sweep_axes(&t);
    if let Some(y) = y {
        let x = match x.or(axes.first().map(String::as_str)) {
            Some(x) => x,
            None => {
                return Err(t
                    .col("point")
                    .err()
                    .unwrap_or_else(|| t.col("--x").unwrap_err()));
            }
        };
        let name = format!("{}_vs_{}", y.replace(',', "+"), short(x)).replace(['/', ' '], "_");
        return Ok(vec![plot_xy(&t, x, y, group, &out_dir.join(name))?]);
    }
    if ["time_s", "time_ms", "time_ns"].iter().any(|c| t.has(c)) && axes.is_empty() {
        return Ok(vec![timeline(&t, x, &out_dir.join("timeline"))?]);
    }
    let (hx, hg) = charts::pick_axes(&t, &axes);
    let x = x.map(str::to_string).or(hx);
    let group = group
        .map(str::to_string)
        .or(hg.filter(|g| Some(g.as_str()) != x.as_deref()));
    let infos = charts::plots_for(&t, x.as_deref(), group.as_deref(), out_dir)?;
    if infos.is_empty() {
        return Err(PlotError::NoData {
            file: t.source.clone(),
            message: "nothing to plot: no hit_rate_*, outcome or budget_bytes/requested_bytes \
                      columns; pass --x and --y"
                .into(),
        });
    }
    Ok(infos)
}
