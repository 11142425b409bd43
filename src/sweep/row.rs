//! What a runner returns for one point, how values become CSV cells, and the one CSV
//! writer every output goes through (so that a merged file and an unsharded run are
//! byte-identical).

use serde_json::Value;

/// One point's results: an ordered list of `(column, value)`, produced by the per-point
/// pipeline. Columns must be among those declared in `RunOptions::columns`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub cells: Vec<(String, String)>,
}

impl Row {
    pub fn new() -> Self {
        Self::default()
    }
    /// Append a cell (builder style).
    pub fn with(mut self, column: impl Into<String>, value: impl ToString) -> Self {
        self.push(column, value);
        self
    }
    pub fn push(&mut self, column: impl Into<String>, value: impl ToString) {
        self.cells.push((column.into(), value.to_string()));
    }
    pub fn get(&self, column: &str) -> Option<&str> {
        self.cells
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, v)| v.as_str())
    }
}

/// A scenario value as a CSV cell: `null` is empty (an unset optional field), strings
/// bare, numbers as serde_json prints them (`1.0` stays `1.0`), anything else compact
/// JSON.
pub fn value_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// Serialise a header and rows as CSV (RFC 4180 quoting, `\n` line ends).
pub fn csv_bytes<'a, I>(header: &[String], rows: I) -> Vec<u8>
where
    I: IntoIterator<Item = &'a Vec<String>>,
{
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing into a Vec cannot fail; a record of the wrong length is a bug here.
    w.write_record(header).expect("csv header");
    for r in rows {
        w.write_record(r).expect("csv row");
    }
    w.into_inner().expect("csv flush")
}
