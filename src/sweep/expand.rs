//! From a [`SweepSpec`] and the fully-defaulted scenario tree to the list of points:
//! every check on the sweep file happens here, before any work starts.
//!
//! Point order: the cartesian product of the axes in file order (the first axis varies
//! slowest, like nested loops), then the zip groups in file order (each group is one
//! factor of the product), then the replicas (fastest). `Point::index` is the position
//! in that order, and it is the row order of every output.

use serde_json::Value;

use super::spec::{Axis, Seeding, Seeds, SweepSpec};
use crate::engine::derive_seed;
use crate::error::{InputError, nearest};

/// One unit of work: a value for every axis path, and a seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Position in the sweep's point order (0-based); rows are written in this order.
    pub index: usize,
    /// `(path, value)` for every axis and zipped axis, in column order.
    pub values: Vec<(String, Value)>,
    /// Replica number (0-based).
    pub replica: usize,
    /// The seed this point runs with (see [`Seeding`]).
    pub seed: u64,
}

impl Point {
    /// The value of `path` in this point, if it is an axis.
    pub fn get(&self, path: &str) -> Option<&Value> {
        self.values.iter().find(|(p, _)| p == path).map(|(_, v)| v)
    }
}

/// The scenario's own seed: `base.seed` when it is an integer, else 0.
pub fn scenario_seed(base: &Value) -> u64 {
    base.get("seed").and_then(Value::as_u64).unwrap_or(0)
}

/// The seed of replica `r` before [`Seeding`] is applied.
fn replica_seed(seeds: &Seeds, scenario_seed: u64, r: usize) -> u64 {
    match seeds {
        Seeds::List(v) => v[r],
        // Replica 0 reproduces the plain (unswept) run of the scenario.
        Seeds::Count(_) if r == 0 => scenario_seed,
        Seeds::Count(_) => derive_seed(scenario_seed, r as u64),
    }
}

fn replica_count(seeds: &Seeds) -> usize {
    match seeds {
        Seeds::Count(n) => usize::try_from(*n).unwrap_or(usize::MAX),
        Seeds::List(v) => v.len(),
    }
}

/// Most points one sweep may have (before sharding): 10^7 rows is a 5 GB CSV.
pub const MAX_POINTS: usize = 10_000_000;

/// Look a dotted path up in a JSON tree (`a.b.0.c`; numeric segments index arrays).
pub fn lookup<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(m) => m.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn lookup_mut<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut cur = root;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(m) => m.get_mut(seg)?,
            Value::Array(a) => a.get_mut(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Every path in the tree (interior and leaf), for "did you mean".
fn all_paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    let push = |p: String, child: &Value, out: &mut Vec<String>| {
        all_paths(child, &p, out);
        out.push(p);
    };
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                push(p, c, out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                let p = if prefix.is_empty() {
                    i.to_string()
                } else {
                    format!("{prefix}.{i}")
                };
                push(p, c, out);
            }
        }
        _ => {}
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A string such as `135GB`, `5GB/s` or `20s`: a quantity the scenario parser accepts in
/// place of a plain number (see `units::ByteSize` and friends).
fn is_quantity(s: &str) -> bool {
    use crate::units::{parse_bandwidth, parse_bytes, parse_duration};
    parse_bytes(s).is_ok() || parse_bandwidth(s).is_ok() || parse_duration(s).is_ok()
}

/// Whether `v` may replace `base` in the tree: same JSON type, with the leniencies the
/// scenario format itself has (`null` unsets an optional field; a null base accepts
/// anything; quantities may be written as numbers or as strings with units; a preset
/// mapping may be replaced by a preset name). Returns what was expected on mismatch.
fn compatible(base: &Value, v: &Value) -> Result<(), Incompatible> {
    let ok = match (base, v) {
        (Value::Null, _) | (_, Value::Null) => true,
        (Value::Bool(_), Value::Bool(_)) => true,
        (Value::Number(b), Value::Number(n)) => {
            // An integer field takes integers only (page sizes, token counts, seeds).
            !(b.is_u64() || b.is_i64()) || n.is_u64() || n.is_i64()
        }
        (Value::Number(_), Value::String(s)) => is_quantity(s),
        (Value::String(_), Value::String(_)) => true,
        (Value::String(b), Value::Number(_)) => is_quantity(b),
        (Value::Array(_), Value::Array(_)) => true,
        (Value::Object(_), Value::Object(_) | Value::String(_)) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Incompatible {
            base: base.clone(),
            given: v.clone(),
        })
    }
}

/// An axis value of another JSON type than the scenario's value at its path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("expected {} like the scenario's value {base}, got {given}", type_name(.base))]
pub struct Incompatible {
    pub base: Value,
    pub given: Value,
}

fn err(spec: &SweepSpec, line: usize, field: &str, msg: String) -> InputError {
    InputError::new(spec.source.clone(), msg)
        .line_opt((line > 0).then_some(line))
        .field(field)
}

fn check_axis(
    spec: &SweepSpec,
    base: &Value,
    axis: &Axis,
    paths: &mut Option<Vec<String>>,
) -> Result<(), InputError> {
    if axis.path == "seed" {
        return Err(err(
            spec,
            axis.line,
            &axis.path,
            "sweep replicas with `sweep.seeds` (a count or a list), not with an axis over `seed`"
                .into(),
        ));
    }
    if axis.path == "sweep" || axis.path.starts_with("sweep.") {
        return Err(err(
            spec,
            axis.line,
            &axis.path,
            "a sweep cannot sweep its own `sweep` section".into(),
        ));
    }
    let Some(bv) = lookup(base, &axis.path) else {
        let cands = paths.get_or_insert_with(|| {
            let mut v = Vec::new();
            all_paths(base, "", &mut v);
            v.sort();
            v
        });
        let hint = nearest(&axis.path, cands.iter().map(String::as_str))
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        return Err(err(
            spec,
            axis.line,
            &axis.path,
            format!("unknown scenario field `{}`{hint}", axis.path),
        ));
    };
    if axis.values.is_empty() {
        return Err(err(
            spec,
            axis.line,
            &axis.path,
            "empty axis: give at least one value".into(),
        ));
    }
    for (i, v) in axis.values.iter().enumerate() {
        if let Err(m) = compatible(bv, v) {
            let line = axis
                .value_lines
                .get(i)
                .copied()
                .filter(|&l| l > 0)
                .unwrap_or(axis.line);
            return Err(err(spec, line, &axis.path, format!("value #{} {m}", i + 1)));
        }
    }
    Ok(())
}

/// Validate `spec` against the fully-defaulted scenario tree `base` and list its points.
/// Errors name file, line and field: unknown path (with the nearest valid one), empty
/// axis, a value whose type does not fit the field, zip groups of unequal lengths, a
/// path swept twice.
pub fn expand(spec: &SweepSpec, base: &Value) -> Result<Vec<Point>, InputError> {
    let mut paths = None;
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut check_dup = |a: &Axis| -> Result<(), InputError> {
        if let Some((_, l)) = seen.iter().find(|(p, _)| *p == a.path) {
            return Err(err(
                spec,
                a.line,
                &a.path,
                format!("`{}` is swept twice (first on line {l})", a.path),
            ));
        }
        seen.push((a.path.clone(), a.line));
        Ok(())
    };
    for a in &spec.axes {
        check_dup(a)?;
        check_axis(spec, base, a, &mut paths)?;
    }
    for g in &spec.zip {
        if g.axes.is_empty() {
            return Err(err(spec, g.line, "sweep.zip", "empty zip group".into()));
        }
        let first = &g.axes[0];
        for a in &g.axes {
            check_dup(a)?;
            check_axis(spec, base, a, &mut paths)?;
            if a.values.len() != first.values.len() {
                return Err(err(
                    spec,
                    if a.line > 0 { a.line } else { g.line },
                    &a.path,
                    format!(
                        "zipped axes must have equal lengths: `{}` has {} values but `{}` has {}",
                        a.path,
                        a.values.len(),
                        first.path,
                        first.values.len()
                    ),
                ));
            }
        }
    }

    // Factors of the product: each plain axis, then each zip group.
    let mut factors: Vec<Vec<&Axis>> = spec.axes.iter().map(|a| vec![a]).collect();
    factors.extend(spec.zip.iter().map(|g| g.axes.iter().collect()));
    let lens: Vec<usize> = factors.iter().map(|f| f[0].values.len()).collect();
    let replicas = replica_count(&spec.seeds);
    // Sizes checked before anything is allocated: a product that overflows (eight axes
    // of 256 values wrap to 0 in u64) or a sweep nobody can run is refused.
    let total = lens
        .iter()
        .chain(std::iter::once(&replicas))
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .filter(|&t| t <= MAX_POINTS)
        .ok_or_else(|| {
            let sizes: Vec<String> = lens.iter().map(usize::to_string).collect();
            InputError::new(
                &spec.source,
                format!(
                    "the sweep has {} × {replicas} seed(s) points, more than {MAX_POINTS}: split it into several sweeps (or shards of a smaller one)",
                    sizes.join(" × ")
                ),
            )
            .field("sweep")
        })?;
    let combos = total / replicas.max(1);
    let s0 = scenario_seed(base);

    let mut points = Vec::with_capacity(combos * replicas);
    let mut digits = vec![0usize; factors.len()];
    for _ in 0..combos {
        let mut values = Vec::new();
        for (f, &d) in factors.iter().zip(&digits) {
            for a in f {
                values.push((a.path.clone(), a.values[d].clone()));
            }
        }
        for r in 0..replicas {
            let index = points.len();
            let rs = replica_seed(&spec.seeds, s0, r);
            let seed = match spec.seeding {
                Seeding::Common => rs,
                Seeding::PerPoint => derive_seed(rs, index as u64),
            };
            points.push(Point {
                index,
                values: values.clone(),
                replica: r,
                seed,
            });
        }
        // Odometer increment, last factor fastest.
        for i in (0..digits.len()).rev() {
            digits[i] += 1;
            if digits[i] < lens[i] {
                break;
            }
            digits[i] = 0;
        }
    }
    Ok(points)
}

/// The scenario tree of one point: `base` with every axis value set, and `seed` set to
/// the point's seed when the scenario has a top-level `seed` field (so the tree alone
/// reproduces the point).
pub fn apply(base: &Value, point: &Point) -> Value {
    let mut v = base.clone();
    apply_in_place(&mut v, point);
    v
}

/// Writes `point`'s axis values and seed into `v` (a copy of the base whose earlier
/// patches, on the same axis paths, are all overwritten).
fn apply_in_place(v: &mut Value, point: &Point) {
    for (path, val) in &point.values {
        if let Some(slot) = lookup_mut(v, path) {
            *slot = val.clone();
        }
    }
    if let Some(Value::Number(_)) = v.get("seed") {
        v["seed"] = Value::from(point.seed);
    }
}

/// Up to this many combinations, [`check_points`] checks every one before any work
/// (about 1.5 s on a loaded 2-core machine); above, every axis value once.
pub const FULL_CHECK_POINTS: usize = 100_000;

/// Run `validate` (e.g. the scenario's typed conversion and SGLang's own argument checks)
/// on every point (its tree and the point) before any work starts; the first failure (by
/// point index) comes back naming the point's values, so an invalid combination is
/// refused as SGLang would refuse it. A failure that is an [`InputError`] is located
/// already (the axis value that caused it) and comes back as it is.
///
/// Fast enough for 10^6 points: each thread patches the axis values into its own copy of
/// the base in place (no clone of the scenario per point), and the points are split
/// over the rayon pool.
pub fn check_points(
    spec: &SweepSpec,
    base: &Value,
    points: &[Point],
    validate: &(dyn Fn(&Value, &Point) -> Result<(), super::PointError> + Sync),
) -> Result<(), InputError> {
    use rayon::prelude::*;
    let mut firsts: Vec<&Point> = points.iter().filter(|p| p.replica == 0).collect();
    if firsts.len() > FULL_CHECK_POINTS {
        // Too many to check one by one up front: every value of every axis is checked
        // (with the other axes at their first values); any other combination SGLang
        // would refuse fails at its own point, and the sweep then exits 3 counting them.
        let first = firsts[0];
        firsts.retain(|p| {
            p.values
                .iter()
                .zip(&first.values)
                .filter(|(a, b)| a.1 != b.1)
                .count()
                <= 1
        });
    }
    let chunk = firsts
        .len()
        .div_ceil(rayon::current_num_threads().max(1) * 8)
        .max(1);
    let first_bad = firsts
        .par_chunks(chunk)
        .filter_map(|ps| {
            let mut v = base.clone();
            for p in ps {
                apply_in_place(&mut v, p);
                if let Err(m) = validate(&v, p) {
                    return Some((p.index, m));
                }
            }
            None
        })
        .min_by_key(|(i, _)| *i);
    if let Some((i, m)) = first_bad {
        let p = &points[i];
        let desc: Vec<String> = p.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
        return Err(match m.downcast::<InputError>() {
            // Located already (at the axis value that gave the field): the combination
            // is said after it when other axes are part of it.
            Ok(e) if p.values.len() > 1 => InputError {
                message: format!("{} (invalid combination {})", e.message, desc.join(", ")),
                ..*e
            },
            Ok(e) => *e,
            Err(m) => InputError::new(
                spec.source.clone(),
                format!("invalid combination {}: {m}", desc.join(", ")),
            )
            .line_opt((spec.line > 0).then_some(spec.line))
            .field("sweep"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({"seed": 42, "server": {"hicache_host_memory_fraction": 1.0, "hicache_ratio": null,
               "page_size": 64, "hicache_size": "135GB", "write_policy": "write_through"},
               "node": {"gpus": 4}})
    }

    #[test]
    fn product_order_and_seeds() {
        let spec = SweepSpec {
            axes: vec![
                Axis::new(
                    "server.hicache_host_memory_fraction",
                    vec![json!(0.5), json!(1.0)],
                ),
                Axis::new(
                    "server.hicache_ratio",
                    vec![Value::Null, json!(2.0), json!(3.0)],
                ),
            ],
            seeds: Seeds::Count(2),
            ..Default::default()
        };
        let pts = expand(&spec, &base()).unwrap();
        assert_eq!(pts.len(), 12);
        assert_eq!(pts[0].values[0].1, json!(0.5));
        assert_eq!(pts[0].values[1].1, Value::Null);
        assert_eq!(pts[0].seed, 42);
        assert_eq!(pts[1].seed, derive_seed(42, 1));
        assert_eq!(pts[2].values[1].1, json!(2.0));
        assert_eq!(pts[2].seed, 42); // common random numbers
        assert_eq!(pts[6].values[0].1, json!(1.0));
        assert_eq!(pts[11].index, 11);
        let applied = apply(&base(), &pts[3]);
        assert_eq!(applied["server"]["hicache_ratio"], json!(2.0));
        assert_eq!(applied["seed"], json!(derive_seed(42, 1)));
    }

    #[test]
    fn per_point_seeding_and_zip() {
        let spec = SweepSpec {
            axes: vec![Axis::new("server.page_size", vec![json!(32), json!(64)])],
            zip: vec![super::super::spec::ZipGroup {
                line: 0,
                axes: vec![
                    Axis::new(
                        "server.write_policy",
                        vec![json!("write_back"), json!("write_through")],
                    ),
                    Axis::new("node", vec![json!("gb300"), json!({"gpus": 8})]),
                ],
            }],
            seeds: Seeds::List(vec![5]),
            seeding: Seeding::PerPoint,
            ..Default::default()
        };
        let pts = expand(&spec, &base()).unwrap();
        assert_eq!(pts.len(), 4);
        assert_eq!(pts[1].values[1].1, json!("write_through"));
        assert_eq!(pts[1].values[2].1, json!({"gpus": 8}));
        assert_eq!(pts[3].seed, derive_seed(5, 3));
    }

    #[test]
    fn quantities_and_types() {
        let b = base();
        assert!(compatible(&json!("135GB"), &json!(100)).is_ok());
        assert!(compatible(&json!(64), &json!(32.5)).is_err());
        assert!(compatible(&json!(1.0), &json!(1)).is_ok());
        assert!(compatible(&json!(1.0), &json!("abc")).is_err());
        assert!(compatible(&json!(true), &json!(1)).is_err());
        assert!(lookup(&b, "server.page_size").is_some());
    }
}
