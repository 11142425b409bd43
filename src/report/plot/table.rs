//! A results CSV as plots read it: a header and rows of strings, numbers parsed on
//! demand (an empty cell is "no value", e.g. the hit rate of a refused point).

use std::path::Path;

use super::PlotError;
use crate::error::nearest;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// File name, for errors.
    pub source: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn read(path: &Path) -> Result<Self, PlotError> {
        let bytes =
            crate::input::read(path, crate::input::DOCUMENT_CAP).map_err(|e| PlotError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        Self::from_csv(&bytes, &path.display().to_string())
    }

    pub fn from_csv(bytes: &[u8], source: &str) -> Result<Self, PlotError> {
        let bad = |m: String| PlotError::Csv {
            file: source.to_string(),
            message: m,
        };
        let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(bytes);
        let header: Vec<String> = rdr
            .headers()
            .map_err(|e| bad(e.to_string()))?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for r in rdr.records() {
            let r = r.map_err(|e| bad(e.to_string()))?;
            rows.push(r.iter().map(str::to_string).collect());
        }
        Ok(Table {
            source: source.to_string(),
            header,
            rows,
        })
    }

    /// A figure title's suffix when any row's `status` is `unverified` (a figure drawn
    /// from such rows carries the label the rows carry); empty otherwise.
    pub fn unverified_mark(&self) -> &'static str {
        let unverified = self
            .header
            .iter()
            .position(|h| h == "status")
            .is_some_and(|c| (0..self.rows.len()).any(|r| self.cell(r, c) == "unverified"));
        if unverified {
            " — unverified: see the CSV's `unverified` column"
        } else {
            ""
        }
    }

    pub fn has(&self, column: &str) -> bool {
        self.header.iter().any(|h| h == column)
    }

    /// Index of `column`, or an error naming the file and the nearest column.
    pub fn col(&self, column: &str) -> Result<usize, PlotError> {
        self.header
            .iter()
            .position(|h| h == column)
            .ok_or_else(|| PlotError::MissingColumn {
                file: self.source.clone(),
                column: column.to_string(),
                hint: nearest(column, self.header.iter().map(String::as_str))
                    .map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_else(|| format!("; columns are: {}", self.header.join(", "))),
            })
    }

    pub fn cell(&self, row: usize, col: usize) -> &str {
        self.rows[row].get(col).map_or("", String::as_str)
    }

    /// The cell as a number; `None` when empty or not a number.
    pub fn num(&self, row: usize, col: usize) -> Option<f64> {
        self.cell(row, col)
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
    }

    /// `Ok` when `col` has at least one number and every non-empty cell is a finite
    /// number; otherwise an error naming the column and the first bad row.
    pub fn numeric_column(&self, col: usize, name: &str) -> Result<(), PlotError> {
        let bad = |m: String| PlotError::NoData {
            file: self.source.clone(),
            message: m,
        };
        let mut any = false;
        for r in 0..self.rows.len() {
            let c = self.cell(r, col).trim();
            if c.is_empty() {
                continue;
            }
            if self.num(r, col).is_none() {
                return Err(bad(format!(
                    "column `{name}` is not numeric: row {} holds `{c}`",
                    r + 2
                )));
            }
            any = true;
        }
        if !any {
            return Err(bad(format!(
                "column `{name}` has no value to plot (every cell is empty)"
            )));
        }
        Ok(())
    }

    /// Whether `col` holds any non-empty cell.
    pub fn has_values(&self, col: usize) -> bool {
        (0..self.rows.len()).any(|r| !self.cell(r, col).trim().is_empty())
    }

    /// A column of rates a figure is drawn from: every non-empty cell a finite number,
    /// and no empty cell in a row that has a result (its `outcome`, when there is one,
    /// is `started`, and its `error`, when there is one, is empty) — a NaN, `abc` or a
    /// missing value is an error naming the column and the row, never a gap in a line.
    pub fn rate_column(&self, col: usize, name: &str) -> Result<(), PlotError> {
        let bad = |m: String| PlotError::NoData {
            file: self.source.clone(),
            message: m,
        };
        let outcome = self.header.iter().position(|h| h == "outcome");
        let error = self.header.iter().position(|h| h == "error");
        for r in 0..self.rows.len() {
            let c = self.cell(r, col).trim();
            if c.is_empty() {
                let has_result = outcome.is_none_or(|o| self.cell(r, o) == "started")
                    && error.is_none_or(|e| self.cell(r, e).trim().is_empty());
                if has_result {
                    return Err(bad(format!(
                        "column `{name}` is empty at row {} (a point that started and has no error): nothing to draw there",
                        r + 2
                    )));
                }
                continue;
            }
            if self.num(r, col).is_none() {
                return Err(bad(format!(
                    "column `{name}` is not numeric: row {} holds `{c}`",
                    r + 2
                )));
            }
        }
        Ok(())
    }

    /// Whether every non-empty value of `col` is a number.
    pub fn is_numeric(&self, col: usize) -> bool {
        (0..self.rows.len()).all(|r| self.cell(r, col).is_empty() || self.num(r, col).is_some())
    }

    /// Distinct values of `col`, sorted numerically when they all are numbers (empty
    /// first), otherwise in order of first appearance.
    pub fn distinct(&self, col: usize) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in 0..self.rows.len() {
            let c = self.cell(r, col);
            if !v.iter().any(|x| x == c) {
                v.push(c.to_string());
            }
        }
        if self.is_numeric(col) {
            v.sort_by(|a, b| {
                let fa = a.parse::<f64>().unwrap_or(f64::NEG_INFINITY);
                let fb = b.parse::<f64>().unwrap_or(f64::NEG_INFINITY);
                fa.total_cmp(&fb)
            });
        }
        v
    }
}
