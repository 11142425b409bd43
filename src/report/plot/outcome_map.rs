//! The start-up outcome map: one cell per (x, y) pair of axis values (e.g. fraction ×
//! ratio), coloured by what start-up did — started (green, darker = more margin),
//! refused (red, darker = further short), OOM-killed (purple), mixed over seeds (orange,
//! labelled "k/n started") — with the mean margin printed in each cell (GB = 10^9 B).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::figure::{Chart, render, short};
use super::{DrawError, FONT_FAMILY, PanelInfo, PlotError, PlotInfo, SeriesInfo, Table};

/// Outcome classes of a cell, in legend order (stable ids used as series names).
pub const CLASSES: [(&str, RGBColor); 5] = [
    ("started", RGBColor(44, 160, 44)),
    ("refused", RGBColor(214, 39, 40)),
    ("oom_killed", RGBColor(118, 42, 131)),
    ("mixed", RGBColor(255, 127, 14)),
    ("no_result", RGBColor(170, 170, 170)),
];

/// Width of the legend column right of the grid (pixels), so it never hides a cell.
const LEGEND_W: u32 = 160;

struct Cell {
    x: usize,
    y: usize,
    class: usize,
    color: RGBColor,
    label: String,
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

/// Draw the outcome map of `x` × `y`. Needs `outcome`; `margin_bytes` is optional.
pub fn outcome_map(t: &Table, x: &str, y: &str, stem: &Path) -> Result<PlotInfo, PlotError> {
    let xc = t.col(x)?;
    let yc = t.col(y)?;
    let oc = t.col("outcome")?;
    let mc = t.header.iter().position(|h| h == "margin_bytes");
    let xs = t.distinct(xc);
    let ys = t.distinct(yc);
    // Per cell: (started, refused, oom, other, margin sum, margin n).
    let mut acc = vec![(0usize, 0usize, 0usize, 0usize, 0.0f64, 0usize); xs.len() * ys.len()];
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
        match t.cell(r, oc) {
            "started" => a.0 += 1,
            "refused" => a.1 += 1,
            "oom_killed" => a.2 += 1,
            _ => a.3 += 1,
        }
        if let Some(m) = mc.and_then(|m| t.num(r, m)) {
            a.4 += m;
            a.5 += 1;
        }
    }
    let mean = |a: &(usize, usize, usize, usize, f64, usize)| (a.5 > 0).then(|| a.4 / a.5 as f64);
    let max_pos = acc.iter().filter_map(mean).fold(0.0f64, f64::max);
    let max_neg = acc.iter().filter_map(mean).fold(0.0f64, |m, v| m.max(-v));
    let mut cells = Vec::new();
    let mut counts = [0usize; CLASSES.len()];
    for yi in 0..ys.len() {
        for xi in 0..xs.len() {
            let a = &acc[yi * xs.len() + xi];
            let n = a.0 + a.1 + a.2 + a.3;
            if n == 0 {
                continue;
            }
            let m = mean(a);
            let class = if a.2 > 0 {
                2
            } else if a.0 == n {
                0
            } else if a.1 == n {
                1
            } else if a.0 > 0 || a.1 > 0 {
                3
            } else {
                4
            };
            counts[class] += 1;
            let base = CLASSES[class].1;
            let color = match (class, m) {
                (0, Some(m)) if max_pos > 0.0 => lerp(RGBColor(199, 233, 192), base, m / max_pos),
                (1, Some(m)) if max_neg > 0.0 => lerp(RGBColor(252, 187, 161), base, -m / max_neg),
                _ => base,
            };
            let mut label = m.map(|m| format!("{:+.1} GB", m / 1e9)).unwrap_or_default();
            if class == 3 {
                label = format!("{}/{n} started {label}", a.0);
            }
            cells.push(Cell {
                x: xi,
                y: yi,
                class,
                color,
                label,
            });
        }
    }
    let grid = Grid {
        title: format!("Start-up outcome over {} × {}", short(x), short(y)),
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
        chart
            .draw_series(self.cells.iter().filter(|c| !c.label.is_empty()).map(|c| {
                let dark = matches!(c.class, 1 | 2) || (c.color.1 < 170 && c.class == 0);
                let style = TextStyle::from((FONT_FAMILY, 12).into_font())
                    .color(if dark { &WHITE } else { &BLACK })
                    .pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Center,
                    ));
                Text::new(c.label.clone(), (c.x as f64, c.y as f64), style)
            }))
            .map_err(e)?;
        // Legend in its own column, one entry per class present.
        let mut y = 60;
        for (i, (name, col)) in CLASSES.iter().enumerate() {
            if self.counts[i] == 0 {
                continue;
            }
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
