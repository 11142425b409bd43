//! Cost tables generated from `aiconfigurator-core` 0.12.0's profiled SGLang 0.5.14
//! operator timings by `tools/costs/gen_cost_tables.py` (`tools/costs/tables/<node>.json`,
//! embedded here), and their interpolation — a line-for-line port of that script's
//! `interp1`, `interp_grid` and `prefill_from_table`, so the off-grid checks each table
//! carries (`checks.offgrid`: the script's own results) test this code to the µs.

use std::sync::OnceLock;

use serde_json::Value;

use crate::domain::Choice;
use crate::model::quant::CheckpointQuant;

/// The generated tables, one JSON per node preset.
pub(crate) static TABLE_FILES: [(&str, &str); 6] = [
    (
        "gb300",
        include_str!("../../../tools/costs/tables/gb300.json"),
    ),
    (
        "gb200",
        include_str!("../../../tools/costs/tables/gb200.json"),
    ),
    (
        "hgx-b300",
        include_str!("../../../tools/costs/tables/hgx-b300.json"),
    ),
    (
        "hgx-b200",
        include_str!("../../../tools/costs/tables/hgx-b200.json"),
    ),
    (
        "hgx-h200",
        include_str!("../../../tools/costs/tables/hgx-h200.json"),
    ),
    (
        "hgx-h100",
        include_str!("../../../tools/costs/tables/hgx-h100.json"),
    ),
];

/// One (node, model, quantisation, TP) table. Times in µs.
#[derive(Debug, Clone)]
pub struct CostTable {
    pub node: String,
    pub model: String,
    /// The Hugging Face checkpoint it was profiled for (`hf_id`).
    pub hf_id: String,
    pub quant: CheckpointQuant,
    pub tp: u32,
    /// `aiconfigurator-core` version and the SGLang data version, for outputs.
    pub source: String,
    linear_t: Vec<f64>,
    attn_b: Vec<f64>,
    attn_n: Vec<f64>,
    attn_p: Vec<f64>,
    decode_b: Vec<f64>,
    decode_c: Vec<f64>,
    /// `prefill.linear_us[T]`.
    linear: Vec<f64>,
    /// `prefill.attn_us[b][n][p]` (`None`: b·n above the profiled batch tokens).
    attn: Vec<Vec<Vec<Option<f64>>>>,
    /// `decode.step_us[B][C]`.
    step: Vec<Vec<Option<f64>>>,
    /// `attn` per plane as a [`Grid`] over (`attn_n`, `attn_p`), and the largest `n`
    /// each plane covers; `step` as a [`Grid`] over (`decode_b`, `decode_c`).
    attn_grid: Vec<Grid>,
    attn_max_n: Vec<f64>,
    step_grid: Grid,
    /// `checks.offgrid` rows as stored (kind, then the point, engine µs, table µs).
    pub offgrid: Vec<Vec<Value>>,
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

fn opt_row(v: &Value) -> Vec<Option<f64>> {
    v.as_array()
        .map(|a| a.iter().map(Value::as_f64).collect())
        .unwrap_or_default()
}

fn parse_node(node: &str, text: &str) -> Vec<CostTable> {
    // The files are generated and committed; a parse failure is a build defect that
    // the unit tests catch, so an unreadable file yields no tables rather than a panic.
    let Ok(root) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let g = &root["grids"];
    let source = format!(
        "{} {} ({} {} data, {})",
        root["source"]["package"]
            .as_str()
            .unwrap_or("aiconfigurator-core"),
        root["source"]["version"].as_str().unwrap_or("?"),
        root["backend"].as_str().unwrap_or("?"),
        root["backend_version"].as_str().unwrap_or("?"),
        root["system"].as_str().unwrap_or("?"),
    );
    let mut out = Vec::new();
    for t in root["tables"].as_array().into_iter().flatten() {
        out.push(CostTable {
            node: node.to_string(),
            model: t["model"].as_str().unwrap_or_default().to_string(),
            hf_id: t["hf_id"].as_str().unwrap_or_default().to_string(),
            quant: t["quant"]
                .as_str()
                .and_then(CheckpointQuant::from_id)
                .unwrap_or_else(|| panic!("bundled cost table {node}: quant {}", t["quant"])),
            tp: t["tp"].as_u64().unwrap_or(0) as u32,
            source: source.clone(),
            linear_t: floats(&g["linear_T"]),
            attn_b: floats(&g["attn_b"]),
            attn_n: floats(&g["attn_n"]),
            attn_p: floats(&g["attn_p"]),
            decode_b: floats(&g["decode_B"]),
            decode_c: floats(&g["decode_C"]),
            linear: floats(&t["prefill"]["linear_us"]),
            attn: t["prefill"]["attn_us"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|plane| {
                    plane
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(opt_row)
                        .collect()
                })
                .collect(),
            step: t["decode"]["step_us"]
                .as_array()
                .into_iter()
                .flatten()
                .map(opt_row)
                .collect(),
            offgrid: t["checks"]["offgrid"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_array().cloned())
                .collect(),
            attn_grid: Vec::new(),
            attn_max_n: Vec::new(),
            step_grid: Grid::default(),
        });
    }
    for t in &mut out {
        t.attn_grid = t
            .attn
            .iter()
            .map(|plane| Grid::new(&t.attn_n, &t.attn_p, plane))
            .collect();
        // Largest new-token count a plane covers (a row with a present cell).
        t.attn_max_n = t
            .attn
            .iter()
            .map(|plane| {
                plane
                    .iter()
                    .enumerate()
                    .filter(|(_, row)| row.iter().any(Option::is_some))
                    .map(|(j, _)| t.attn_n[j])
                    .fold(0.0, f64::max)
            })
            .collect();
        t.step_grid = Grid::new(&t.decode_b, &t.decode_c, &t.step);
    }
    out
}

/// Every embedded table.
pub fn tables() -> &'static [CostTable] {
    static ALL: OnceLock<Vec<CostTable>> = OnceLock::new();
    ALL.get_or_init(|| {
        TABLE_FILES
            .iter()
            .flat_map(|(node, text)| parse_node(node, text))
            .collect()
    })
}

/// A (node, model, quantisation, TP) with no bundled cost table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no cost table for node `{node}`, model `{model}`, quant `{quant}`, tp {tp}; tables for `{node}`: {}",
    have_text(.have)
)]
pub struct NoCostTable {
    pub node: String,
    pub model: String,
    pub quant: CheckpointQuant,
    pub tp: u32,
    /// The node's tables, `model quant tpN` each.
    pub have: Vec<String>,
}

fn have_text(have: &[String]) -> String {
    if have.is_empty() {
        "none (nodes with tables: gb300, gb200, hgx-b300, hgx-b200, hgx-h200, hgx-h100)".to_string()
    } else {
        have.join(", ")
    }
}

/// The table of (node, model, quantisation, TP), or the list of what exists.
pub fn find(
    node: &str,
    model: &str,
    quant: CheckpointQuant,
    tp: u32,
) -> Result<&'static CostTable, NoCostTable> {
    tables()
        .iter()
        .find(|t| t.node == node && t.model == model && t.quant == quant && t.tp == tp)
        .ok_or_else(|| NoCostTable {
            node: node.to_string(),
            model: model.to_string(),
            quant,
            tp,
            have: tables()
                .iter()
                .filter(|t| t.node == node)
                .map(|t| format!("{} {} tp{}", t.model, t.quant, t.tp))
                .collect(),
        })
}

/// `gen_cost_tables.py: interp1`: piecewise-linear, clamped at the ends.
pub fn interp1(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    interp1_by(xs.len(), |i| xs[i], |i| ys[i], x)
}

/// [`interp1`] over an indexed table, reading `x`/`y` through closures (a [`Grid`]'s
/// rows are looked up without building a slice of them).
#[inline]
fn interp1_by(len: usize, x_at: impl Fn(usize) -> f64, y_at: impl Fn(usize) -> f64, x: f64) -> f64 {
    if len == 0 {
        return 0.0;
    }
    if x <= x_at(0) {
        return y_at(0);
    }
    let last = len - 1;
    if x >= x_at(last) {
        return y_at(last);
    }
    for i in 1..len {
        let xi = x_at(i);
        if x <= xi {
            let x0 = x_at(i - 1);
            let t = (x - x0) / (xi - x0);
            let (y0, y1) = (y_at(i - 1), y_at(i));
            return y0 + t * (y1 - y0);
        }
    }
    y_at(last)
}

/// One row of a [`Grid`]: its `x` and its present cells (`y`, value).
#[derive(Debug, Clone)]
struct GridRow {
    x: f64,
    ys: Vec<f64>,
    vals: Vec<f64>,
}

/// `gen_cost_tables.py: interp_grid`: bilinear over a grid with missing cells, along
/// `y` first (rows indexed by `xs`, columns by `ys`). The missing cells are dropped
/// once, when the table is read, so a lookup allocates nothing (it runs once per
/// forward of the timed replay) and gives the same bits as interpolating every row.
#[derive(Debug, Clone, Default)]
pub struct Grid {
    /// The rows with at least one present cell, in `xs` order.
    rows: Vec<GridRow>,
}

impl Grid {
    pub fn new(xs: &[f64], ys: &[f64], grid: &[Vec<Option<f64>>]) -> Grid {
        let rows = grid
            .iter()
            .enumerate()
            .filter_map(|(i, row)| {
                let (cy, cv): (Vec<f64>, Vec<f64>) = row
                    .iter()
                    .enumerate()
                    .filter_map(|(j, v)| v.map(|v| (ys[j], v)))
                    .unzip();
                (!cy.is_empty()).then(|| GridRow {
                    x: xs[i],
                    ys: cy,
                    vals: cv,
                })
            })
            .collect();
        Grid { rows }
    }

    /// The value at (`x`, `y`).
    pub fn at(&self, x: f64, y: f64) -> f64 {
        let row = |i: usize| {
            let r = &self.rows[i];
            interp1_by(r.ys.len(), |j| r.ys[j], |j| r.vals[j], y)
        };
        interp1_by(self.rows.len(), |i| self.rows[i].x, row, x)
    }
}

/// Planes of the attention grid a table may hold: the per-batch-size lookups of one
/// forward sit on the stack.
const MAX_ATTN_PLANES: usize = 16;

impl CostTable {
    /// Context-dependent time of one request of `n` new tokens over a cached prefix of
    /// `p` in a batch of `b`, µs (`prefill_from_table`'s inner loop). Above the largest
    /// profiled `n` the piece is split into consecutive sub-pieces whose prefix grows
    /// (causal attention: the sum is the whole piece's work).
    fn attn_us(&self, b: usize, n: f64, p: f64) -> f64 {
        let top = self.attn_max_n.first().copied().unwrap_or(0.0);
        if top > 0.0 && n > top {
            let mut done = 0.0;
            let mut t = 0.0;
            while done < n {
                let piece = (n - done).min(top);
                t += self.attn_us(b, piece, p + done);
                done += piece;
            }
            return t;
        }
        let (mut xs, mut ys) = ([0.0f64; MAX_ATTN_PLANES], [0.0f64; MAX_ATTN_PLANES]);
        let mut k = 0;
        for (i, bb) in self.attn_b.iter().enumerate().take(MAX_ATTN_PLANES) {
            if n <= self.attn_max_n[i] {
                xs[k] = bb.log2();
                ys[k] = self.attn_grid[i].at(n, p) / bb;
                k += 1;
            }
        }
        interp1(&xs[..k], &ys[..k], (b as f64).log2())
    }

    /// One prefill forward of requests `(new tokens, cached prefix)`, µs:
    /// `linear(Σ nᵢ) + Σᵢ attn_b(nᵢ, pᵢ)/b` (`gen_cost_tables.py: prefill_from_table`).
    pub fn prefill_us(&self, reqs: &[(u64, u64)]) -> f64 {
        let b = reqs.len();
        if b == 0 {
            return 0.0;
        }
        let total: u64 = reqs.iter().map(|r| r.0).sum();
        let mut t = interp1(&self.linear_t, &self.linear, total as f64);
        for &(n, p) in reqs {
            t += self.attn_us(b, n as f64, p as f64);
        }
        t
    }

    /// One decode step of `batch` requests at mean context `ctx`, µs (bilinear in
    /// (B, C), clamped; the SGLang Simulator's decode rule).
    pub fn decode_step_us(&self, batch: u64, ctx: u64) -> f64 {
        self.step_grid.at(batch as f64, ctx as f64)
    }

    /// The largest profiled decode batch (lookups above it clamp to it).
    pub fn decode_max_batch(&self) -> u64 {
        self.decode_b.iter().copied().fold(0.0, f64::max) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bundled table's attention planes fit the stack buffer of a lookup (a plane
    /// past it would be dropped from the interpolation).
    #[test]
    fn attention_planes_fit_the_lookup() {
        for t in tables() {
            assert!(t.attn_b.len() <= MAX_ATTN_PLANES, "{} {}", t.node, t.model);
            assert_eq!(t.attn_grid.len(), t.attn.len());
        }
    }

    /// A compacted grid gives the bits of interpolating every stored row, on and off
    /// the grid, over its missing cells and outside it.
    #[test]
    fn grid_lookup_equals_the_stored_rows() {
        let t = &tables()[0];
        let naive = |xs: &[f64], ys: &[f64], grid: &[Vec<Option<f64>>], x: f64, y: f64| {
            let (mut rx, mut ry) = (Vec::new(), Vec::new());
            for (i, row) in grid.iter().enumerate() {
                let (mut px, mut py) = (Vec::new(), Vec::new());
                for (j, v) in row.iter().enumerate() {
                    if let Some(v) = v {
                        px.push(ys[j]);
                        py.push(*v);
                    }
                }
                if !px.is_empty() {
                    rx.push(xs[i]);
                    ry.push(interp1(&px, &py, y));
                }
            }
            interp1(&rx, &ry, x)
        };
        let mut n = 0;
        for (pi, plane) in t.attn.iter().enumerate() {
            for x in [0.0, 1.0, 7.5, 64.0, 1000.0, 3333.3, 1e5, 1e9] {
                for y in [0.0, 3.0, 500.0, 8191.0, 1e5, 1e7] {
                    let want = naive(&t.attn_n, &t.attn_p, plane, x, y);
                    assert_eq!(t.attn_grid[pi].at(x, y).to_bits(), want.to_bits());
                    n += 1;
                }
            }
        }
        for x in [1.0, 3.0, 200.0, 1e4] {
            for y in [0.0, 1000.0, 1e6] {
                let want = naive(&t.decode_b, &t.decode_c, &t.step, x, y);
                assert_eq!(t.step_grid.at(x, y).to_bits(), want.to_bits());
            }
        }
        assert!(n >= 240);
    }

    #[test]
    fn every_node_file_parses() {
        // 130 tables (the generator's count), every one with 16 linear points.
        assert_eq!(tables().len(), 130);
        assert!(
            tables()
                .iter()
                .all(|t| t.linear.len() == 16 && t.attn.len() == 5)
        );
    }

    #[test]
    fn offgrid_checks_match_the_generator() {
        // `checks.offgrid` stores the generator's own interpolation (table_us, last
        // column) at off-grid points; the port must agree to rounding (±1 µs).
        let mut n = 0;
        for t in tables() {
            for row in &t.offgrid {
                let num = |i: usize| row[i].as_f64().unwrap_or(f64::NAN);
                let (ours, want) = if row[0] == "prefill" {
                    let (b, nn, p) = (num(1) as usize, num(2) as u64, num(3) as u64);
                    (t.prefill_us(&vec![(nn, p); b]), num(5))
                } else {
                    (t.decode_step_us(num(1) as u64, num(2) as u64), num(4))
                };
                assert!(
                    (ours.round() - want).abs() <= 1.0,
                    "{} {} {} tp{}: {row:?} gives {ours}",
                    t.node,
                    t.model,
                    t.quant,
                    t.tp
                );
                n += 1;
            }
        }
        assert!(n > 1000, "{n} checks");
    }

    #[test]
    fn grid_points_are_exact() {
        // Llama-3.1-70B bf16 TP4 on GB300, one request of 1 024 new tokens over a
        // 131 072-token prefix: linear_us[T=1024] + attn_us[b=1][n=1024][p=131072]
        // (docs/src/design/time-model.md §3 quotes 31.5 ms + 59.6 ms).
        let t = find("gb300", "llama-3.1-70b", CheckpointQuant::Bf16, 4).unwrap();
        let want = t.linear[6] + t.attn[0][2][4].unwrap();
        assert_eq!(t.prefill_us(&[(1024, 131_072)]), want);
        assert!((want / 1000.0 - 91.1).abs() < 0.2, "{want}");
    }

    #[test]
    fn unknown_table_names_what_exists() {
        let e = find("hgx-h100", "glm-5.2", CheckpointQuant::Fp8, 8).unwrap_err();
        assert!(e.to_string().contains("qwen3-235b-a22b bf16 tp8"), "{e}");
    }
}
