//! `OUT/report.html` of `hicache-sim plan`: one self-contained page — the figure (its SVG
//! inline, the PNG beside it), the frontier of each release, the hit-rate ladder, the
//! recommendation, and the text report verbatim.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::plan::Plan;
use crate::release::Sglang;
use crate::units::fmt_gb;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn gb(x: i128) -> String {
    format!("{} GB", fmt_gb(x))
}

/// The page, given the figure's SVG text (if any).
pub fn render(p: &Plan, svg: Option<&str>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>hicache-sim plan: {}</title>\n<style>body{{font-family:sans-serif;max-width:1560px;margin:1em auto;padding:0 1em}}.fig svg{{max-width:100%;height:auto}}.wide{{overflow-x:auto}}table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}th{{background:#f3f3f3}}td.l{{text-align:left}}.bad{{color:#b00}}code,pre{{background:#f7f7f7}}pre{{padding:.5em;overflow-x:auto}}</style></head><body>\n",
        esc(&p.scenario)
    );
    let _ = writeln!(
        h,
        "<h1>Capacity plan: {}</h1>\n<p>node <b>{}</b>, model <b>{}</b>, TP{}; target P(start) ≥ {} over rank-start jitter; {} start-up runs per probe, seed {}.</p>",
        esc(&p.scenario),
        esc(&p.node),
        esc(&p.model),
        p.tp_size,
        p.target,
        p.runs,
        p.seed
    );
    let r = &p.recommendation;
    h.push_str("<h2>Recommendation</h2>\n");
    if r.flags.is_empty() {
        h.push_str("<p class=\"bad\">No <code>--hicache-size</code> starts with the target probability.</p>\n");
    } else {
        let _ = writeln!(
            h,
            "<pre>{}</pre><p>status: <b>{}</b><br>write policy: {}<br>holds on: {}</p>",
            esc(&r.flags),
            r.status,
            esc(&r.policy_reason),
            esc(&Sglang::join_labelled(&r.holds_on))
        );
        for l in crate::plan::recommend::risk_lines(r, p.target) {
            let _ = writeln!(h, "<p>{}</p>", esc(&l));
        }
        if !r.unverified.is_empty() {
            let _ = writeln!(
                h,
                "<p class=\"bad\">unverified — these figures may not be SGLang's; not modelled: {}</p>",
                esc(&r.unverified.join("; "))
            );
        }
        if !r.breaks_on.is_empty() {
            let b: Vec<String> = r
                .breaks_on
                .iter()
                .map(|(v, g)| {
                    let floor = p
                        .releases
                        .iter()
                        .find(|r| r.sglang == *v)
                        .and_then(|r| r.floor_gb);
                    match (g, floor) {
                        (Some(g), Some(f)) => {
                            format!("{v} (too small there: only {f} to {g} starts)")
                        }
                        _ => format!(
                            "{v} (largest {})",
                            g.map_or("none".into(), |g| g.to_string())
                        ),
                    }
                })
                .collect();
            let _ = writeln!(h, "<p class=\"bad\">breaks on: {}</p>", esc(&b.join(", ")));
        }
        if !r.breaks_if.is_empty() {
            h.push_str("<ul>");
            for b in &r.breaks_if {
                let _ = write!(h, "<li>{}</li>", esc(b));
            }
            h.push_str("</ul>\n");
        }
    }
    if let Some(svg) = svg {
        let _ = writeln!(
            h,
            "<h2>Hit rate against host pool size</h2>\n<div class=\"fig\">{}</div>\n<p>Also as <a href=\"hit_rate_vs_host_pool.png\">PNG</a> and <a href=\"hit_rate_vs_host_pool.svg\">SVG</a>.</p>",
            // The SVG document without its XML prolog, inline.
            match svg.trim_start().strip_prefix("<?xml") {
                Some(rest) => rest.split_once("?>").map_or(svg, |(_, body)| body),
                None => svg,
            }
        );
    }
    h.push_str("<h2>Frontiers by release</h2>\n<div class=\"wide\"><table><tr><th>sglang</th><th>largest --hicache-size</th><th>P(start)</th><th>margin</th><th>one step more</th><th>largest --hicache-ratio</th><th>auto-size (fraction 1.0): KV pool / all host pools</th></tr>\n");
    for rel in &p.releases {
        if let Some(m) = &rel.invalid {
            let _ = writeln!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l bad\" colspan=\"6\">not valid: {}</td></tr>",
                esc(rel.sglang.id()),
                esc(m)
            );
            continue;
        }
        let (size, pr, margin, next) = match &rel.size {
            Some(f) => (
                f.value.to_string(),
                format!("{:.3}", f.at.start_probability),
                f.at.margin_bytes.map_or("-".into(), |m| gb(m as i128)),
                f.next
                    .failure
                    .as_ref()
                    .map_or("-".into(), |x| format!("{}: {}", x.outcome, x.message)),
            ),
            None => ("none".into(), "-".into(), "-".into(), "-".into()),
        };
        let ratio = rel
            .ratio
            .as_ref()
            .map_or("none".into(), |f| f.value.flag.clone());
        let auto =
            rel.fractions
                .as_ref()
                .and_then(|v| v.last())
                .map_or("no auto-size".into(), |f| {
                    format!(
                        "{} / {} (P {:.3})",
                        f.probe
                            .host_pool_tokens
                            .map_or("-".into(), |t| gb(
                                (t * f.probe.pool_bytes_per_token) as i128
                            )),
                        f.probe
                            .requested_bytes
                            .map_or("-".into(), |b| gb(b as i128)),
                        f.probe.start_probability
                    )
                });
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(rel.sglang.id()),
            size,
            pr,
            margin,
            esc(&next),
            esc(&ratio),
            esc(&auto)
        );
    }
    h.push_str("</table></div>\n");
    if let Some(l) = &p.ladder {
        let _ = writeln!(
            h,
            "<h2>Hit-rate ladder</h2><p>trace <code>{}</code>, {} rules</p><div class=\"wide\"><table><tr><th>--hicache-size</th><th>pool</th><th>device</th><th>host</th><th>storage</th><th>total</th><th>gain / 10 GB</th><th></th></tr>",
            esc(&l.trace),
            esc(l.sglang.id())
        );
        for x in &l.points {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{:.2} %</td><td>{:.2} %</td><td>{:.2} %</td><td>{:.2} %</td><td>{}</td><td class=\"l\">{}</td></tr>",
                x.size_gb,
                gb(x.host_pool_bytes as i128),
                100.0 * x.hit_rate_device,
                100.0 * x.hit_rate_host,
                100.0 * x.hit_rate_storage,
                100.0 * x.hit_rate_total,
                x.marginal_per_10gb
                    .map_or(String::new(), |g| format!("{:+.2} pp", 100.0 * g)),
                if x.size_gb == l.planned_gb {
                    "planned"
                } else if !x.holds {
                    "past the frontier"
                } else if x.size_gb == l.frontier_gb {
                    "frontier (no headroom)"
                } else {
                    ""
                }
            );
        }
        h.push_str("</table></div>\n");
    }
    let _ = writeln!(
        h,
        "<h2>Full report</h2><pre>{}</pre>\n</body></html>",
        esc(&crate::plan::text::render(p))
    );
    h
}

/// Why the plan's HTML report was not written.
#[derive(Debug, thiserror::Error)]
pub enum ReportWriteError {
    #[error(transparent)]
    Plot(#[from] super::plot::PlotError),
    /// The figure just written could not be read back to inline it.
    #[error("{0}")]
    ReadFigure(std::io::Error),
    #[error("{}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Writes the figure and `report.html` into `dir`; returns the files written.
pub fn write_plan_report(p: &Plan, dir: &Path) -> Result<Vec<PathBuf>, ReportWriteError> {
    let mut files = super::plan_plot::write(p, dir)?;
    let svg = files
        .iter()
        .find(|f| f.extension().is_some_and(|e| e == "svg"))
        .map(std::fs::read_to_string)
        .transpose()
        .map_err(ReportWriteError::ReadFigure)?;
    let path = dir.join("report.html");
    if let Err(error) = crate::output::write_file(&path, render(p, svg.as_deref()).as_bytes()) {
        return Err(ReportWriteError::Write { path, error });
    }
    files.push(path);
    Ok(files)
}
