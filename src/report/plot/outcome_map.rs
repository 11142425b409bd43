//! The start-up outcome map: one cell per (x, y) pair of axis values (e.g. fraction ×
//! ratio), coloured by P(start) against the target — meets the target (green, darker =
//! more margin), starts but below the target (amber: the risk a point hides when only run
//! 0's margin is read), refused in every run (red, darker = further short), OOM-killed
//! (purple) — each cell labelled with its P(start), the mean margin (GB = 10^9 B) and
//! the pool that binds.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::figure::{Chart, render, short};
use super::{DrawError, FONT_FAMILY, PanelInfo, PlotError, PlotInfo, SeriesInfo, Table};

/// P(start) a point must reach to be drawn as meeting the target: the default of
/// `plan` and `check`'s `--target-start`.
pub const TARGET_START: f64 = 0.999;

/// Outcome classes of a cell, in legend order (stable ids used as series names).
pub const CLASSES: [(&str, RGBColor); 6] = [
    ("meets_target", RGBColor(44, 160, 44)),
    ("below_target", RGBColor(230, 145, 0)),
    ("refused", RGBColor(214, 39, 40)),
    ("oom_killed", RGBColor(118, 42, 131)),
    ("failed", RGBColor(90, 90, 90)),
    ("no_result", RGBColor(170, 170, 170)),
];

/// What each class means, for the legend.
fn legend_name(class: usize) -> String {
    match class {
        0 => format!("P(start) ≥ {TARGET_START}"),
        1 => format!("starts, P(start) < {TARGET_START}"),
        2 => "refused".into(),
        3 => "OOM-killed".into(),
        4 => "failed / invalid".into(),
        _ => "no result".into(),
    }
}

/// Width of the legend column right of the grid (pixels), so it never hides a cell.
const LEGEND_W: u32 = 190;

struct Cell {
    x: usize,
    y: usize,
    color: RGBColor,
    /// Lines of the label (P(start); margin and binding pool).
    label: Vec<String>,
}

struct Grid {
    title: String,
    x_label: String,
    y_label: String,
    x_cats: Vec<String>,
    y_cats: Vec<String>,
    cells: Vec<Cell>,
    counts: [usize; CLASSES.len()],
}

fn lerp(a: RGBColor, b: RGBColor, t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let m = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * t).round() as u8;
    RGBColor(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

fn shown(v: &str) -> String {
    if v.is_empty() {
        "unset".into()
    } else {
        v.to_string()
    }
}

/// What the rows of one cell (its seeds) add up to.
#[derive(Default)]
struct Acc {
    rows: usize,
    started: usize,
    refused: usize,
    oom: usize,
    failed: usize,
    p_sum: f64,
    p_n: usize,
    margin_sum: f64,
    margin_n: usize,
    /// The binding pool, when every row names the same one.
    pool: Option<String>,
    pools_differ: bool,
}

/// Draw the outcome map of `x` × `y`. Needs `outcome`; `start_probability`,
/// `margin_bytes` and `binding_pool` are optional (a CSV without `start_probability`
/// reads run 0's outcome as the whole story).
pub fn outcome_map(t: &Table, x: &str, y: &str, stem: &Path) -> Result<PlotInfo, PlotError> {
    let xc = t.col(x)?;
    let yc = t.col(y)?;
    let oc = t.col("outcome")?;
    let col = |n: &str| t.header.iter().position(|h| h == n);
    let (mc, pc, bc) = (
        col("margin_bytes"),
        col("start_probability"),
        col("binding_pool"),
    );
    let xs = t.distinct(xc);
    let ys = t.distinct(yc);
    let mut acc: Vec<Acc> = (0..xs.len() * ys.len()).map(|_| Acc::default()).collect();
    for r in 0..t.rows.len() {
        let xi = xs
            .iter()
            .position(|v| v == t.cell(r, xc))
            .expect("distinct");
        let yi = ys
            .iter()
            .position(|v| v == t.cell(r, yc))
            .expect("distinct");
        let a = &mut acc[yi * xs.len() + xi];
        a.rows += 1;
        match t.cell(r, oc) {
            "started" => a.started += 1,
            "refused" => a.refused += 1,
            "oom_killed" => a.oom += 1,
            "" => {}
            _ => a.failed += 1,
        }
        if let Some(p) = pc.and_then(|c| t.num(r, c)) {
            a.p_sum += p;
            a.p_n += 1;
        }
        if let Some(m) = mc.and_then(|m| t.num(r, m)) {
            a.margin_sum += m;
            a.margin_n += 1;
        }
        if let Some(b) = bc.map(|c| t.cell(r, c)).filter(|b| !b.is_empty()) {
            match &a.pool {
                None => a.pool = Some(b.to_string()),
                Some(p) if p != b => a.pools_differ = true,
                _ => {}
            }
        }
    }
    let mean_margin = |a: &Acc| (a.margin_n > 0).then(|| a.margin_sum / a.margin_n as f64);
    let max_pos = acc.iter().filter_map(mean_margin).fold(0.0f64, f64::max);
    let max_neg = acc
        .iter()
        .filter_map(mean_margin)
        .fold(0.0f64, |m, v| m.max(-v));
    let mut cells = Vec::new();
    let mut counts = [0usize; CLASSES.len()];
    for yi in 0..ys.len() {
        for xi in 0..xs.len() {
            let a = &acc[yi * xs.len() + xi];
            if a.rows == 0 {
                continue;
            }
            // P(start) over the cell's seeds; without the column, run 0's outcome.
            let p = if a.p_n > 0 {
                Some(a.p_sum / a.p_n as f64)
            } else {
                (a.started + a.refused + a.oom > 0).then(|| a.started as f64 / a.rows as f64)
            };
            let class = match p {
                Some(p) if p >= TARGET_START => 0,
                Some(p) if p > 0.0 => 1,
                _ if a.oom > 0 => 3,
                _ if a.refused > 0 => 2,
                _ if a.failed > 0 => 4,
                _ => 5,
            };
            counts[class] += 1;
            let m = mean_margin(a);
            let base = CLASSES[class].1;
            let color = match (class, m) {
                (0, Some(m)) if max_pos > 0.0 => {
                    lerp(RGBColor(199, 233, 192), base, m.max(0.0) / max_pos)
                }
                (2, Some(m)) if max_neg > 0.0 => {
                    lerp(RGBColor(252, 187, 161), base, -m.min(0.0) / max_neg)
                }
                _ => base,
            };
            let mut label = Vec::new();
            if let Some(p) = p {
                label.push(format!("P(start) {p:.3}"));
            }
            if let Some(m) = m {
                let pool = match (&a.pool, a.pools_differ) {
                    (Some(p), false) if p == crate::startup::ALL_HOST_POOLS => " all pools".into(),
                    (Some(p), false) => format!(" {p}"),
                    _ => String::new(),
                };
                label.push(format!("{:+.1} GB{pool}", m / 1e9));
            }
            cells.push(Cell {
                x: xi,
                y: yi,
                color,
                label,
            });
        }
    }
    let grid = Grid {
        title: format!(
            "Start-up over {} × {}: P(start) against {TARGET_START}",
            short(x),
            short(y)
        ),
        x_label: x.to_string(),
        y_label: y.to_string(),
        x_cats: xs.iter().map(|v| shown(v)).collect(),
        y_cats: ys.iter().map(|v| shown(v)).collect(),
        cells,
        counts,
    };
    let files = render(&grid, stem)?;
    Ok(PlotInfo {
        title: grid.title.clone(),
        panels: vec![PanelInfo {
            title: String::new(),
            x_label: grid.x_label.clone(),
            y_label: grid.y_label.clone(),
            series: CLASSES
                .iter()
                .zip(grid.counts)
                .map(|((name, _), n)| SeriesInfo {
                    name: name.to_string(),
                    points: n,
                })
                .collect(),
        }],
        files,
    })
}

impl Chart for Grid {
    fn size(&self) -> (u32, u32) {
        let w = (110 * self.x_cats.len() as u32 + 300).clamp(700, 1800) + LEGEND_W;
        let h = (60 * self.y_cats.len() as u32 + 220).clamp(450, 1400);
        (w, h)
    }

    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError>
    where
        DB::ErrorType: 'static,
    {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| DrawError::from(x);
        root.fill(&WHITE).map_err(e)?;
        let (nx, ny) = (self.x_cats.len().max(1), self.y_cats.len().max(1));
        let (w, _) = root.dim_in_pixel();
        let (main, side) = root.split_horizontally(w.saturating_sub(LEGEND_W));
        let mut chart = ChartBuilder::on(&main)
            .caption(&self.title, (FONT_FAMILY, 22))
            .margin(10)
            .x_label_area_size(50)
            .y_label_area_size(90)
            .build_cartesian_2d(-0.5f64..(nx as f64 - 0.5), -0.5f64..(ny as f64 - 0.5))
            .map_err(e)?;
        let cat = |c: &[String], v: f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                c[i as usize].clone()
            } else {
                String::new()
            }
        };
        let fx = |v: &f64| cat(&self.x_cats, *v);
        let fy = |v: &f64| cat(&self.y_cats, *v);
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(nx + 1)
            .y_labels(ny + 1)
            .x_label_formatter(&fx)
            .y_label_formatter(&fy)
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style((FONT_FAMILY, 13))
            .axis_desc_style((FONT_FAMILY, 15))
            .draw()
            .map_err(e)?;
        chart
            .draw_series(self.cells.iter().map(|c| {
                let (x, y) = (c.x as f64, c.y as f64);
                Rectangle::new(
                    [(x - 0.48, y - 0.45), (x + 0.48, y + 0.45)],
                    c.color.filled(),
                )
            }))
            .map_err(e)?;
        // The label's lines, centred on the cell (14 px apart).
        for c in self.cells.iter().filter(|c| !c.label.is_empty()) {
            // White on a dark cell, black on a light one (by luminance).
            let lum = 0.299 * f64::from(c.color.0)
                + 0.587 * f64::from(c.color.1)
                + 0.114 * f64::from(c.color.2);
            let dark = lum < 150.0;
            let (cx, cy) = chart.backend_coord(&(c.x as f64, c.y as f64));
            let n = c.label.len() as i32;
            for (i, line) in c.label.iter().enumerate() {
                let style = TextStyle::from((FONT_FAMILY, 12).into_font())
                    .color(if dark { &WHITE } else { &BLACK })
                    .pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Center,
                    ));
                let y = cy + (2 * i as i32 - (n - 1)) * 8;
                main.draw(&Text::new(line.clone(), (cx, y), style))
                    .map_err(e)?;
            }
        }
        // Legend in its own column, one entry per class present.
        let mut y = 60;
        for (i, (_, col)) in CLASSES.iter().enumerate() {
            if self.counts[i] == 0 {
                continue;
            }
            let name = legend_name(i);
            side.draw(&Rectangle::new([(8, y), (24, y + 14)], col.filled()))
                .map_err(e)?;
            side.draw(&Text::new(
                format!("{name} ({})", self.counts[i]),
                (32, y),
                (FONT_FAMILY, 14).into_font(),
            ))
            .map_err(e)?;
            y += 24;
        }
        Ok(())
    }
}
