//! The figure of `hicache-sim plan`: hit rate per tier and total against the host pool
//! size (`--hicache-size`), the sizes past the start-up frontier shaded as "refuses
//! here", other releases' frontiers as dashed lines, the recommended point marked; and
//! beside it the marginal gain per 10 GB. Drawn with the bundled font to PNG and SVG.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::plot::{Chart, DrawError, FONT_FAMILY, PlotError, render};
use crate::plan::Plan;

const TOTAL: RGBColor = RGBColor(0, 0, 0);
const DEVICE: RGBColor = RGBColor(31, 119, 180);
const HOST: RGBColor = RGBColor(44, 160, 44);
const STORAGE: RGBColor = RGBColor(255, 127, 14);
const REFUSE: RGBColor = RGBColor(214, 39, 40);

/// One ladder point: (size GB, device, host, storage, total) in %.
type Row = (f64, f64, f64, f64, f64);

/// A tier line: legend, colour, its value in a row, stroke width.
type Tier = (&'static str, RGBColor, fn(&Row) -> f64, u32);

/// The data of the figure, in percent and GB.
#[derive(Debug, Clone)]
pub struct PlanFigure {
    pub title: String,
    pub points: Vec<Row>,
    /// (size GB, gain in percentage points per 10 GB).
    pub gains: Vec<(f64, f64)>,
    pub planned_gb: f64,
    /// The largest size that starts (no headroom): past it, "refuses here".
    pub frontier_gb: f64,
    /// The write policy the ladder replays (the scenario's) and, when the recommendation
    /// picks another, that policy with its total hit rate (%) at the planned size.
    pub ladder_policy: String,
    pub recommended_policy: Option<(String, f64)>,
    pub primary: String,
    /// Other releases' largest size (dashed lines).
    pub others: Vec<(String, f64)>,
    pub target: f64,
}

impl PlanFigure {
    /// `None` without a ladder.
    pub fn of(p: &Plan) -> Option<PlanFigure> {
        let l = p.ladder.as_ref()?;
        let pc = |x: f64| 100.0 * x;
        let points = l
            .points
            .iter()
            .map(|x| {
                (
                    x.size_gb as f64,
                    pc(x.hit_rate_device),
                    pc(x.hit_rate_host),
                    pc(x.hit_rate_storage),
                    pc(x.hit_rate_total),
                )
            })
            .collect();
        let gains = l
            .points
            .iter()
            .filter_map(|x| x.marginal_per_10gb.map(|g| (x.size_gb as f64, pc(g))))
            .collect();
        // One dashed line per distinct frontier: releases that share it share a label
        // (`--sglang all` has six releases at one value; their labels overprinted).
        let mut by_value: std::collections::BTreeMap<u64, Vec<&str>> = Default::default();
        for r in p.releases.iter().skip(1) {
            if let Some(f) = &r.size {
                by_value.entry(f.value).or_default().push(r.sglang.id());
            }
        }
        let others = by_value
            .into_iter()
            .map(|(g, names)| {
                let label = match names.as_slice() {
                    [a] => a.to_string(),
                    [a, b] => format!("{a}, {b}"),
                    [a, .., z] => format!("{a} … {z} ({} releases)", names.len()),
                    [] => String::new(),
                };
                (label, g as f64)
            })
            .collect();
        Some(PlanFigure {
            title: format!(
                "{}: hit rate vs host pool ({}, {} rules)",
                p.scenario,
                Path::new(&l.trace)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or(&l.trace),
                l.sglang
            ),
            points,
            gains,
            planned_gb: l.planned_gb as f64,
            frontier_gb: l.frontier_gb as f64,
            ladder_policy: l.write_policy.to_string(),
            recommended_policy: l
                .policies
                .iter()
                .filter(|x| x.policy != l.write_policy)
                .find(|x| x.error.is_none() && x.policy == p.recommendation.write_policy)
                .map(|x| (x.policy.to_string(), pc(x.hit_rate_total))),
            primary: l.sglang.to_string(),
            others,
            target: p.target,
        })
    }

    fn x_range(&self) -> (f64, f64) {
        let hi = self
            .points
            .iter()
            .map(|p| p.0)
            .chain(self.others.iter().map(|o| o.1))
            .fold(self.planned_gb, f64::max);
        (0.0, hi * 1.04 + 1.0)
    }

    fn hit_panel<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError>
    where
        DB::ErrorType: 'static,
    {
        let (x0, x1) = self.x_range();
        let ymax = self
            .points
            .iter()
            .map(|p| p.4)
            .chain(self.recommended_policy.as_ref().map(|r| r.1))
            .fold(1.0, f64::max)
            // Room above the data for the legend (up to 7 lines, upper left).
            * 1.6;
        let mut chart = ChartBuilder::on(area)
            .caption("hit rate by tier", (FONT_FAMILY, 18))
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_desc("--hicache-size (GB per rank)")
            .y_desc("hit rate (% of input tokens)")
            .light_line_style(RGBColor(238, 238, 238))
            .label_style((FONT_FAMILY, 13))
            .axis_desc_style((FONT_FAMILY, 15))
            .draw()?;
        // "Refuses here": past the primary release's frontier.
        let edge = self.frontier_gb + 0.5;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(edge, 0.0), (x1, ymax)],
                REFUSE.mix(0.12).filled(),
            )))?
            .label(format!(
                "{} refuses here (P(start) < {})",
                self.primary, self.target
            ))
            .legend(|(x, y)| {
                Rectangle::new([(x, y - 5), (x + 20, y + 5)], REFUSE.mix(0.3).filled())
            });
        for (i, (name, g)) in self.others.iter().enumerate() {
            let x = g + 0.5;
            chart.draw_series(DashedLineSeries::new(
                vec![(x, 0.0), (x, ymax)],
                6,
                4,
                RGBColor(120, 120, 120).stroke_width(1),
            ))?;
            // Right of its line, or left of it in the right third (the label ran off
            // the panel there).
            let style = (FONT_FAMILY, 12).into_font().color(&RGBColor(90, 90, 90));
            let (text, style) = if x > x0 + (x1 - x0) * 0.66 {
                (
                    format!("{name}: ≤ {g} GB "),
                    style.pos(Pos::new(HPos::Right, VPos::Top)),
                )
            } else {
                (format!(" {name}: ≤ {g} GB"), style)
            };
            chart.draw_series(std::iter::once(Text::new(
                text,
                // Low on the chart (the legend holds the top left), staggered.
                (x, ymax * (0.06 + 0.05 * (i % 4) as f64)),
                style,
            )))?;
        }
        let series: [Tier; 4] = [
            ("total", TOTAL, |p| p.4, 3),
            ("device (L1)", DEVICE, |p| p.1, 2),
            ("host (L2)", HOST, |p| p.2, 2),
            ("storage (L3)", STORAGE, |p| p.3, 2),
        ];
        for (name, c, f, w) in series {
            let pts: Vec<(f64, f64)> = self.points.iter().map(|p| (p.0, f(p))).collect();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(w)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(w))
                });
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        // The recommendation: its size on the ladder's line (the scenario's policy) and,
        // when it recommends another write policy, that policy's total at the size, so
        // the circled figure is the one recommended.
        match (
            &self.recommended_policy,
            self.points.iter().find(|p| p.0 == self.planned_gb),
        ) {
            (Some((pol, total)), Some(p)) => {
                chart
                    .draw_series([Circle::new((p.0, *total), 8, REFUSE.stroke_width(3))])?
                    .label(format!(
                        "recommended: --hicache-size {} --hicache-write-policy {pol} ({total:.2} % total)",
                        self.planned_gb
                    ))
                    .legend(|(x, y)| Circle::new((x + 10, y), 6, REFUSE.stroke_width(2)));
                chart
                    .draw_series([Circle::new((p.0, p.4), 5, TOTAL.stroke_width(1))])?
                    .label(format!(
                        "the same size with the ladder's {} ({:.2} %)",
                        self.ladder_policy, p.4
                    ))
                    .legend(|(x, y)| Circle::new((x + 10, y), 4, TOTAL.stroke_width(1)));
            }
            (None, Some(p)) => {
                chart
                    .draw_series([Circle::new((p.0, p.4), 8, REFUSE.stroke_width(3))])?
                    .label(format!("recommended: --hicache-size {}", self.planned_gb))
                    .legend(|(x, y)| Circle::new((x + 10, y), 6, REFUSE.stroke_width(2)));
            }
            _ => {}
        }
        chart
            .configure_series_labels()
            .label_font((FONT_FAMILY, 13))
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    }

    fn gain_panel<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError>
    where
        DB::ErrorType: 'static,
    {
        let (x0, x1) = self.x_range();
        let lo = self.gains.iter().map(|g| g.1).fold(0.0, f64::min);
        let hi = self.gains.iter().map(|g| g.1).fold(0.1, f64::max);
        let pad = (hi - lo) * 0.1;
        let mut chart = ChartBuilder::on(area)
            .caption("marginal gain of the total per 10 GB", (FONT_FAMILY, 18))
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, (lo - pad)..(hi + pad))?;
        chart
            .configure_mesh()
            .x_desc("--hicache-size (GB per rank)")
            .y_desc("percentage points per 10 GB")
            .light_line_style(RGBColor(238, 238, 238))
            .label_style((FONT_FAMILY, 13))
            .axis_desc_style((FONT_FAMILY, 15))
            .draw()?;
        let edge = self.frontier_gb + 0.5;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(edge, lo - pad), (x1, hi + pad)],
            REFUSE.mix(0.12).filled(),
        )))?;
        chart.draw_series(LineSeries::new(
            vec![(x0, 0.0), (x1, 0.0)],
            BLACK.stroke_width(1),
        ))?;
        chart.draw_series(LineSeries::new(
            self.gains.iter().copied(),
            TOTAL.stroke_width(2),
        ))?;
        chart.draw_series(
            self.gains
                .iter()
                .map(|&p| Circle::new(p, 3, TOTAL.filled())),
        )?;
        Ok(())
    }
}

impl Chart for PlanFigure {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let body = root.titled(&self.title, (FONT_FAMILY, 22))?;
        let (w, _) = body.dim_in_pixel();
        let (left, right) = body.split_horizontally(w * 3 / 5);
        self.hit_panel(&left)?;
        self.gain_panel(&right)
    }
    fn size(&self) -> (u32, u32) {
        (1500, 650)
    }
}

/// Draws `OUT/hit_rate_vs_host_pool.{png,svg}`; nothing without a ladder.
pub fn write(p: &Plan, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    match PlanFigure::of(p) {
        Some(f) => render(&f, &dir.join("hit_rate_vs_host_pool")),
        None => Ok(Vec::new()),
    }
}
