//! The `sweep:` section of a scenario, as written: axes in file order (that order is the
//! column order and the point order), optional zipped groups, replicas over seeds.
//!
//! ```yaml
//! sweep:
//!   axes:
//!     server.hicache_host_memory_fraction: [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
//!     server.hicache_ratio: [null, 1.5, 2.0]
//!   zip:                      # optional groups varied together
//!     - {runtime.l1_pages: [1000, 2000], runtime.l2_pages: [2000, 4000]}
//!   seeds: 3                  # replicas, or an explicit list [1, 7, 42]
//!   seeding: common           # or per_point
//! ```
//!
//! Deserialised with serde-saphyr so that every axis keeps the line it was written on;
//! semantic checks (unknown path, empty axis, wrong type, unequal zip) happen in
//! [`super::expand`], before any work starts.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

/// One axis: a scenario field addressed by its dotted path, and the values it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Dotted path into the scenario tree, e.g. `server.hicache_ratio` (array elements
    /// by index: `nodes.0.name`).
    pub path: String,
    /// 1-based line of the axis key (0 when unknown, e.g. built in code).
    pub line: usize,
    /// The values, in file order.
    pub values: Vec<Value>,
    /// 1-based line of each value (0 when unknown).
    pub value_lines: Vec<usize>,
}

impl Axis {
    /// An axis built in code (no source lines).
    pub fn new(path: impl Into<String>, values: Vec<Value>) -> Self {
        let n = values.len();
        Self {
            path: path.into(),
            line: 0,
            values,
            value_lines: vec![0; n],
        }
    }
}

/// A group of axes varied together (the i-th value of each goes into the same point).
#[derive(Debug, Clone, PartialEq)]
pub struct ZipGroup {
    /// 1-based line of the group (0 when unknown).
    pub line: usize,
    pub axes: Vec<Axis>,
}

/// Replicas: how many seeds, or which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seeds {
    /// `seeds: N` — N replicas; replica 0 runs with the scenario's own seed, replica
    /// r > 0 with `derive_seed(scenario_seed, r)`.
    Count(u64),
    /// `seeds: [a, b, c]` — exactly these seeds.
    List(Vec<u64>),
}

impl Default for Seeds {
    fn default() -> Self {
        Seeds::Count(1)
    }
}

/// How a point's seed relates to its replica seed. Stable ids: `common`, `per_point`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seeding {
    /// Every combination of axis values runs with the same replica seeds (common random
    /// numbers): differences between points are the parameters', not the dice's.
    #[default]
    Common,
    /// Each point gets its own stream, `derive_seed(replica_seed, point_index)`.
    PerPoint,
}

impl Seeding {
    pub fn id(self) -> &'static str {
        match self {
            Seeding::Common => "common",
            Seeding::PerPoint => "per_point",
        }
    }
}

/// The whole `sweep:` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SweepSpec {
    /// Where the spec came from (a file name), used in every error. Not part of the
    /// YAML; set it with [`SweepSpec::with_source`].
    pub source: String,
    /// 1-based line of the `sweep:` section body (0 when unknown).
    pub line: usize,
    pub axes: Vec<Axis>,
    pub zip: Vec<ZipGroup>,
    pub seeds: Seeds,
    pub seeding: Seeding,
}

impl SweepSpec {
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// Parse the `sweep:` section out of a whole scenario document (other keys are
    /// ignored here: the scenario parser owns them). Syntax and type errors come back
    /// with file, line and column.
    pub fn from_scenario_yaml(text: &str, source: &str) -> Result<Self, crate::error::InputError> {
        #[derive(Deserialize)]
        struct Doc {
            sweep: Option<Spanned<SweepSpec>>,
        }
        let doc: Doc = serde_saphyr::from_str(text).map_err(|e| saphyr_error(e, source))?;
        match doc.sweep {
            Some(s) => {
                let mut spec = s.value;
                spec.line = s.referenced.line() as usize;
                Ok(spec.with_source(source))
            }
            None => Err(crate::error::InputError::new(
                source,
                "this scenario has no `sweep:` section",
            )
            .field("sweep")),
        }
    }
}

/// Turn a serde-saphyr error into an [`InputError`] with its line and a one-line message.
pub fn saphyr_error(e: serde_saphyr::Error, source: &str) -> crate::error::InputError {
    let line = e.location().map(|l| l.line() as usize).filter(|&l| l > 0);
    let msg = e.to_string();
    // Display prints "line L column C: message" plus a snippet; keep the first line.
    // The line goes in the `file:line:` prefix; keep the column and the message.
    let first = msg.lines().next().unwrap_or("");
    let first = first.trim_start_matches("error: ");
    let first = match first.strip_prefix("line ") {
        Some(rest) => rest.split_once(' ').map_or(rest, |(_, r)| r.trim_start()),
        None => first,
    };
    crate::error::InputError::new(source, first.to_string()).line_opt(line)
}

fn line_of<T>(s: &Spanned<T>) -> usize {
    s.referenced.line() as usize
}

/// Visitor for a mapping `path: [values…]`, keeping key order and lines.
struct AxesVisitor;

impl<'de> Visitor<'de> for AxesVisitor {
    type Value = Vec<Axis>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping from field path to a list of values")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let vals: Spanned<Vec<Spanned<Value>>> = map.next_value()?;
            let line = match line_of(&key) {
                0 => line_of(&vals),
                l => l,
            };
            out.push(Axis {
                path: key.value,
                line,
                value_lines: vals.value.iter().map(line_of).collect(),
                values: vals.value.into_iter().map(|v| v.value).collect(),
            });
        }
        Ok(out)
    }
}

struct AxesDe(Vec<Axis>);
impl<'de> Deserialize<'de> for AxesDe {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(AxesVisitor).map(AxesDe)
    }
}

struct SeedsVisitor;
impl<'de> Visitor<'de> for SeedsVisitor {
    type Value = Seeds;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a replica count (a positive integer) or a list of integer seeds")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Seeds, E> {
        if v == 0 {
            return Err(E::custom("seeds: the replica count must be at least 1"));
        }
        Ok(Seeds::Count(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Seeds, E> {
        if v <= 0 {
            return Err(E::custom("seeds: the replica count must be at least 1"));
        }
        Ok(Seeds::Count(v as u64))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Seeds, A::Error> {
        let mut v = Vec::new();
        while let Some(s) = seq.next_element::<u64>()? {
            v.push(s);
        }
        if v.is_empty() {
            return Err(de::Error::custom("seeds: the list of seeds is empty"));
        }
        Ok(Seeds::List(v))
    }
}
impl<'de> Deserialize<'de> for Seeds {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SeedsVisitor)
    }
}

impl<'de> Deserialize<'de> for SweepSpec {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            #[serde(default)]
            axes: Option<AxesDe>,
            #[serde(default)]
            zip: Option<Vec<Spanned<AxesDe>>>,
            #[serde(default)]
            seeds: Option<Seeds>,
            #[serde(default)]
            seeding: Option<Seeding>,
        }
        let raw = Raw::deserialize(d)?;
        Ok(SweepSpec {
            source: String::new(),
            line: 0,
            axes: raw.axes.map(|a| a.0).unwrap_or_default(),
            zip: raw
                .zip
                .unwrap_or_default()
                .into_iter()
                .map(|g| ZipGroup {
                    line: line_of(&g),
                    axes: g.value.0,
                })
                .collect(),
            seeds: raw.seeds.unwrap_or_default(),
            seeding: raw.seeding.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_axes_in_file_order_with_lines() {
        let y = "name: x\nsweep:\n  axes:\n    server.b: [0.5, 0.6]\n    server.a: [null, 1.5]\n  zip:\n    - {x.l1: [1, 2], x.l2: [3, 4]}\n  seeds: [7, 9]\n";
        let s = SweepSpec::from_scenario_yaml(y, "s.yaml").unwrap();
        assert_eq!(s.source, "s.yaml");
        assert_eq!(s.axes.len(), 2);
        assert_eq!(s.axes[0].path, "server.b");
        assert_eq!(s.axes[0].line, 4);
        assert_eq!(s.axes[1].path, "server.a");
        assert_eq!(s.axes[1].line, 5);
        assert_eq!(s.axes[1].values, vec![Value::Null, serde_json::json!(1.5)]);
        assert_eq!(s.zip.len(), 1);
        assert_eq!(s.zip[0].line, 7);
        assert_eq!(s.zip[0].axes[1].path, "x.l2");
        assert_eq!(s.seeds, Seeds::List(vec![7, 9]));
        assert_eq!(s.seeding, Seeding::Common);
    }

    #[test]
    fn bad_seeds_have_a_line() {
        let y = "sweep:\n  axes:\n    a: [1]\n  seeds: 0\n";
        let e = SweepSpec::from_scenario_yaml(y, "s.yaml").unwrap_err();
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("at least 1"), "{e}");
        let y = "sweep:\n  axes:\n    a: [1]\n  seeding: sometimes\n";
        let e = SweepSpec::from_scenario_yaml(y, "s.yaml").unwrap_err();
        assert_eq!(e.line, Some(4), "{e}");
    }
}
