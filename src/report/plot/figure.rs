//! A small figure model — panels of lines and markers — drawn with plotters to PNG and
//! SVG from the same data. Charts build a [`Figure`]; [`Figure::info`] is what tests
//! check (labels, series, point counts), never the pixels.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    DrawError, FONT_FAMILY, PanelInfo, PlotError, PlotInfo, SeriesInfo, register_font_once,
};

/// Tableau-10: distinguishable lines for groups.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Line through the points with a dot on each.
    Line,
    /// Dots only.
    Points,
    /// `×` markers (refused start-ups).
    Crosses,
    /// `▲` markers (OOM-killed start-ups).
    Triangles,
    /// A thin black reference line (e.g. budget = request).
    Reference,
    /// A line without dots (long time series).
    Path,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub kind: Kind,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
    /// Legend text; `None` keeps the series out of the legend (marker series of several
    /// groups share one entry).
    pub legend: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Category names when x is categorical (x = 0, 1, 2… index into this).
    pub x_categories: Option<Vec<String>>,
    /// Fixed y range (e.g. hit rates 0..1); otherwise from the data.
    pub y_range: Option<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct Figure {
    pub title: String,
    pub panels: Vec<Panel>,
    /// Panels per row.
    pub cols: usize,
    pub size: (u32, u32),
}

fn pad(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        let d = if lo.abs() > 1e-12 {
            lo.abs() * 0.1
        } else {
            1.0
        };
        return (lo - d, hi + d);
    }
    let d = (hi - lo) * 0.05;
    (lo - d, hi + d)
}

impl Panel {
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let pts = self.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        );
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        let xr = match &self.x_categories {
            Some(c) => (-0.5, c.len().max(1) as f64 - 0.5),
            None => pad(x0, x1),
        };
        let yr = self.y_range.unwrap_or_else(|| pad(y0, y1));
        (xr, yr)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError>
    where
        DB::ErrorType: 'static,
    {
        let ((x0, x1), (y0, y1)) = self.ranges();
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT_FAMILY, 18))
            .margin(8)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        let cats = self.x_categories.clone();
        let fmt_x = move |v: &f64| match &cats {
            Some(c) => {
                let i = v.round();
                if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                    c[i as usize].clone()
                } else {
                    String::new()
                }
            }
            None => format!("{}", (v * 1e6).round() / 1e6),
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style((FONT_FAMILY, 13))
            .axis_desc_style((FONT_FAMILY, 15))
            .x_label_formatter(&fmt_x);
        if let Some(c) = &self.x_categories {
            mesh.x_labels(c.len() + 1);
        }
        mesh.draw()?;

        let mut any_legend = false;
        // Lines first, markers after: the legend lists the groups together.
        let is_line = |s: &&Series| matches!(s.kind, Kind::Line | Kind::Path | Kind::Reference);
        let ordered = self
            .series
            .iter()
            .filter(is_line)
            .chain(self.series.iter().filter(|s| !is_line(s)));
        for s in ordered {
            let c = s.color;
            let pts = s.points.clone();
            let anno =
                match s.kind {
                    Kind::Line => {
                        chart
                            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
                        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))?
                    }
                    Kind::Points => {
                        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?
                    }
                    Kind::Crosses => chart
                        .draw_series(pts.iter().map(|&p| Cross::new(p, 6, c.stroke_width(2))))?,
                    Kind::Triangles => chart
                        .draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 6, c.filled())))?,
                    Kind::Reference => chart
                        .draw_series(LineSeries::new(pts.iter().copied(), BLACK.stroke_width(1)))?,
                    Kind::Path => chart
                        .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?,
                };
            // An unnamed series (one line, no groups) has nothing to say in a legend.
            if let Some(text) = s.legend.as_ref().filter(|t| !t.is_empty()) {
                any_legend = true;
                let kind = s.kind;
                anno.label(text.clone()).legend(
                    move |(x, y)| -> DynElement<'static, DB, (i32, i32)> {
                        match kind {
                            Kind::Line | Kind::Path | Kind::Reference => {
                                let st = if kind == Kind::Reference {
                                    BLACK.stroke_width(1)
                                } else {
                                    c.stroke_width(2)
                                };
                                PathElement::new(vec![(x, y), (x + 20, y)], st).into_dyn()
                            }
                            Kind::Points => Circle::new((x + 10, y), 4, c.filled()).into_dyn(),
                            Kind::Crosses => {
                                Cross::new((x + 10, y), 6, c.stroke_width(2)).into_dyn()
                            }
                            Kind::Triangles => {
                                TriangleMarker::new((x + 10, y), 6, c.filled()).into_dyn()
                            }
                        }
                    },
                );
            }
        }
        if any_legend {
            chart
                .configure_series_labels()
                .label_font((FONT_FAMILY, 13))
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()?;
        }
        Ok(())
    }

    pub fn info(&self) -> PanelInfo {
        PanelInfo {
            title: self.title.clone(),
            x_label: self.x_label.clone(),
            y_label: self.y_label.clone(),
            series: self
                .series
                .iter()
                .map(|s| SeriesInfo {
                    name: s.name.clone(),
                    points: s.points.len(),
                })
                .collect(),
        }
    }
}

/// Something that can draw itself on any plotters backend.
pub trait Chart {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError>
    where
        DB::ErrorType: 'static;
    fn size(&self) -> (u32, u32);
}

impl Chart for Figure {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let body = root.titled(&self.title, (FONT_FAMILY, 22))?;
        let cols = self.cols.max(1);
        let rows = self.panels.len().div_ceil(cols).max(1);
        let areas = body.split_evenly((rows, cols));
        for (p, a) in self.panels.iter().zip(&areas) {
            p.draw(a)?;
        }
        Ok(())
    }
    fn size(&self) -> (u32, u32) {
        self.size
    }
}

impl Figure {
    pub fn info(&self, files: Vec<PathBuf>) -> PlotInfo {
        PlotInfo {
            title: self.title.clone(),
            panels: self.panels.iter().map(Panel::info).collect(),
            files,
        }
    }
}

/// Draw `chart` to `STEM.png` and `STEM.svg`; returns both paths. Each is drawn in
/// memory and written with [`crate::output::write_file`] (a temporary file renamed over
/// the target): a full disk leaves no truncated figure under its final name.
pub fn render(chart: &impl Chart, stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    register_font_once()?;
    if let Some(d) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| PlotError::Io {
            path: d.display().to_string(),
            message: e.to_string(),
        })?;
    }
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    let draw_err = |p: &Path, m: String| PlotError::Draw {
        path: p.display().to_string(),
        message: m,
    };
    let io_err = |p: &Path, e: std::io::Error| PlotError::Io {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    let (w, h) = chart.size();
    let mut rgb = vec![0u8; 3 * w as usize * h as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        chart.draw_on(&root).map_err(|m| draw_err(&png, m.0))?;
        root.present().map_err(|e| draw_err(&png, e.to_string()))?;
    }
    let mut png_bytes = Vec::new();
    {
        use image::ImageEncoder;
        image::codecs::png::PngEncoder::new(&mut png_bytes)
            .write_image(&rgb, w, h, image::ColorType::Rgb8)
            .map_err(|e| draw_err(&png, e.to_string()))?;
    }
    crate::output::write_file(&png, &png_bytes).map_err(|e| io_err(&png, e))?;
    let mut svg_text = String::new();
    {
        let root = SVGBackend::with_string(&mut svg_text, (w, h)).into_drawing_area();
        chart.draw_on(&root).map_err(|m| draw_err(&svg, m.0))?;
        root.present().map_err(|e| draw_err(&svg, e.to_string()))?;
    }
    crate::output::write_file(&svg, svg_text.as_bytes()).map_err(|e| io_err(&svg, e))?;
    Ok(vec![png, svg])
}

/// Last segment of a dotted path: `server.hicache_ratio` → `hicache_ratio`.
pub fn short(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}
