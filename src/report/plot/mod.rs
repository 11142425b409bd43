//! Plots of sweep results (issue #4), with plotters, to PNG and SVG, text rendered with
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
    TIERS, budget_vs_request, default_plots, hit_rate_vs, plot_xy, short, sweep_axes, timeline,
};
pub use figure::{Chart, Figure, Kind, Panel, Series, render};
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
