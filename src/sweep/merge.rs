//! `hicache-sim merge`: join shard CSVs into exactly the file an unsharded run writes.
//!
//! Checks before writing anything: every file has the same header with a `point` column;
//! no point index appears twice; indices cover `0..total` without a gap, where `total`
//! comes from the shards' journals when they sit next to the CSVs (so a missing last
//! point is caught too) and otherwise from the largest index; files named
//! `…shard-K-of-N…` hold only their own points and all N shards are present.

use std::path::{Path, PathBuf};

use super::SweepError;
use super::journal;
use super::row::csv_bytes;
use super::shard::Shard;

fn merr(m: String) -> SweepError {
    SweepError::Merge(m)
}

/// The journal next to a shard CSV (`X.csv` → `X.journal.jsonl`), if present.
fn journal_of(csv: &Path) -> Option<PathBuf> {
    let name = csv.file_name()?.to_str()?;
    let stem = name.strip_suffix(".csv")?;
    let p = csv.with_file_name(format!("{stem}.journal.jsonl"));
    p.exists().then_some(p)
}

/// Merge shard CSVs; returns the bytes of the unsharded CSV.
pub fn merge(files: &[PathBuf]) -> Result<Vec<u8>, SweepError> {
    if files.is_empty() {
        return Err(merr("no CSV files to merge".into()));
    }
    let mut header: Option<(Vec<String>, &PathBuf)> = None;
    // (point index, record, file number)
    let mut rows: Vec<(usize, Vec<String>, usize)> = Vec::new();
    let mut total: Option<(journal::Header, &PathBuf)> = None;
    let mut unchecked: Vec<&PathBuf> = Vec::new();
    let mut shards: Vec<(Shard, &PathBuf)> = Vec::new();
    // (fingerprint of the sweep, its file) from each shard CSV that carries one
    let mut fingerprints: Vec<(String, &PathBuf)> = Vec::new();

    for (fi, f) in files.iter().enumerate() {
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_path(f)
            .map_err(|e| merr(format!("{}: {e}", f.display())))?;
        let mut h: Vec<String> = rdr
            .headers()
            .map_err(|e| merr(format!("{}: {e}", f.display())))?
            .iter()
            .map(str::to_string)
            .collect();
        // A shard's own columns naming its sweep and each row's checksum: checked, then
        // dropped.
        let n = h.len();
        let tagged = n >= 2
            && h[n - 2] == super::run::SWEEP_FINGERPRINT
            && h[n - 1] == super::run::ROW_CHECKSUM;
        if tagged {
            h.truncate(n - 2);
        } else if h.last().map(String::as_str) == Some(super::run::SWEEP_FINGERPRINT) {
            return Err(merr(format!(
                "{}: a shard written by an older hicache-sim (a `{}` column but no `{}`): its rows cannot be checked; run the shard again with this build",
                f.display(),
                super::run::SWEEP_FINGERPRINT,
                super::run::ROW_CHECKSUM
            )));
        }
        match &header {
            None => header = Some((h.clone(), f)),
            Some((h0, f0)) if *h0 != h => {
                let i = h0
                    .iter()
                    .zip(&h)
                    .position(|(a, b)| a != b)
                    .unwrap_or(h0.len().min(h.len()));
                return Err(merr(format!(
                    "{} and {} have different headers (first difference at column {}: `{}` vs `{}`)",
                    f0.display(),
                    f.display(),
                    i + 1,
                    h0.get(i).map_or("", String::as_str),
                    h.get(i).map_or("", String::as_str)
                )));
            }
            _ => {}
        }
        if h.first().map(String::as_str) != Some("point") {
            return Err(merr(format!(
                "{}: the first column must be `point` (a sweep results CSV)",
                f.display()
            )));
        }
        let shard = f
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(Shard::from_file_name);
        if let Some(s) = shard {
            shards.push((s, f));
        }
        for (li, rec) in rdr.records().enumerate() {
            let rec = rec.map_err(|e| merr(format!("{}: {e}", f.display())))?;
            let line = li + 2;
            let idx: usize = rec[0]
                .parse()
                .ok()
                .filter(|&i| i < super::expand::MAX_POINTS)
                .ok_or_else(|| {
                    merr(format!(
                        "{}:{line}: `point` is not a point index of a sweep: `{}`",
                        f.display(),
                        &rec[0]
                    ))
                })?;
            if let Some(s) = shard
                && !s.owns(idx)
            {
                return Err(merr(format!(
                    "{}:{line}: point {idx} does not belong to shard {s}",
                    f.display()
                )));
            }
            let mut cells: Vec<String> = rec.iter().map(str::to_string).collect();
            if tagged {
                let sum = cells.pop().unwrap_or_default();
                let fp = cells.pop().unwrap_or_default();
                if sum != journal::row_checksum(&fp, &cells) {
                    return Err(merr(format!(
                        "{}:{line}: the row of point {idx} does not match its `{}`: it was edited after the sweep wrote it; run that shard again",
                        f.display(),
                        super::run::ROW_CHECKSUM
                    )));
                }
                match fingerprints.iter().find(|(_, g)| *g == f) {
                    None => fingerprints.push((fp, f)),
                    Some((fp0, _)) if *fp0 != fp => {
                        return Err(merr(format!(
                            "{}:{line}: rows of two sweeps in one file ({} `{fp0}` and `{fp}`)",
                            f.display(),
                            super::run::SWEEP_FINGERPRINT
                        )));
                    }
                    _ => {}
                }
            }
            rows.push((idx, cells, fi));
        }
        if let Some(j) = journal_of(f) {
            let c = journal::read(&j)?;
            journal_backs_rows(&j, &c, f, fi, &rows)?;
            match &total {
                None => total = Some((c.header, f)),
                Some((h0, f0)) if h0.fingerprint != c.header.fingerprint => {
                    // Shards share everything but the shard: compare as if unsharded.
                    let mut h = c.header.clone();
                    h.shard = h0.shard.clone();
                    return Err(merr(format!(
                        "{} and {} come from different sweeps: {}",
                        f0.display(),
                        f.display(),
                        super::run::header_difference(h0, &h)
                    )));
                }
                _ => {}
            }
        } else {
            unchecked.push(f);
        }
    }
    if total.is_none() {
        same_sweep_without_journals(&header, &rows, files, &fingerprints)?;
    }
    if total.is_some() && !unchecked.is_empty() {
        return Err(merr(format!(
            "{} has no journal beside it ({}), so it cannot be checked to come from the same scenario as the others; copy the journals with the CSVs",
            unchecked[0].display(),
            unchecked[0].with_extension("journal.jsonl").display()
        )));
    }

    if let Some((s0, _)) = shards.first() {
        let n = s0.n;
        if let Some((s, f)) = shards.iter().find(|(s, _)| s.n != n) {
            return Err(merr(format!(
                "{} is shard {s} but others are of {n}",
                f.display()
            )));
        }
        for k in 1..=n {
            let c = shards.iter().filter(|(s, _)| s.k == k).count();
            if c == 0 && shards.len() == files.len() {
                return Err(merr(format!("shard {k}/{n} is missing")));
            }
            if c > 1 {
                return Err(merr(format!("shard {k}/{n} is given more than once")));
            }
        }
    }

    rows.sort_by_key(|r| r.0);
    for w in rows.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(merr(format!(
                "point {} appears twice ({} and {})",
                w[0].0,
                files[w[0].2].display(),
                files[w[1].2].display()
            )));
        }
    }
    let expected = match &total {
        Some((h, _)) => h.points_total,
        None => rows.last().map_or(0, |r| r.0 + 1),
    };
    // Walk the sorted indices for the gaps (no table sized by an index read from a file).
    let mut missing: Vec<usize> = Vec::new();
    let mut n_missing = 0usize;
    let mut next = 0usize;
    if let Some(r) = rows.iter().find(|r| r.0 >= expected) {
        return Err(merr(format!(
            "{}: point {} is beyond the sweep's {expected} points",
            files[r.2].display(),
            r.0
        )));
    }
    for r in rows.iter().map(|r| r.0).chain(std::iter::once(expected)) {
        if r > next {
            n_missing += r - next;
            missing.extend((next..r).take(10usize.saturating_sub(missing.len())));
        }
        next = r + 1;
    }
    if n_missing > 0 {
        let shown: Vec<String> = missing.iter().map(usize::to_string).collect();
        return Err(merr(format!(
            "{n_missing} point(s) missing: {}{}",
            shown.join(", "),
            if n_missing > 10 { ", …" } else { "" }
        )));
    }
    if rows.len() > expected {
        return Err(merr(format!(
            "{} rows but the sweep has {expected} points",
            rows.len()
        )));
    }
    let (h, _) = header.expect("at least one file");
    let recs: Vec<Vec<String>> = rows.into_iter().map(|r| r.1).collect();
    Ok(csv_bytes(&h, recs.iter()))
}

/// A journal beside a CSV vouches for its rows: each of its entries carries its own
/// checksum, and each row the CSV (file number `fi`) holds must be its point's journal
/// row, cell for cell.
fn journal_backs_rows(
    j: &Path,
    c: &journal::Contents,
    f: &Path,
    fi: usize,
    rows: &[(usize, Vec<String>, usize)],
) -> Result<(), SweepError> {
    let mut by_point: std::collections::BTreeMap<usize, &Vec<String>> = Default::default();
    for (i, e) in c.entries.iter().enumerate() {
        if e.sum != journal::row_checksum(&c.header.fingerprint, &e.row) {
            return Err(merr(format!(
                "{}:{}: the entry for point {} does not match its checksum: the journal was edited",
                j.display(),
                i + 2,
                e.point
            )));
        }
        by_point.entry(e.point).or_insert(&e.row);
    }
    for (idx, cells, _) in rows.iter().filter(|r| r.2 == fi) {
        if by_point.get(idx).is_none_or(|r| *r != cells) {
            return Err(merr(format!(
                "{}: the row of point {idx} is not the one its journal {} recorded: the CSV was edited after the sweep wrote it",
                f.display(),
                j.display()
            )));
        }
    }
    Ok(())
}

/// Without journals, what the rows themselves say: the `sglang` column (not an axis: one
/// release for the whole sweep) must be the same in every file, and the shards' sweep
/// fingerprints must agree.
fn same_sweep_without_journals(
    header: &Option<(Vec<String>, &PathBuf)>,
    rows: &[(usize, Vec<String>, usize)],
    files: &[PathBuf],
    fingerprints: &[(String, &PathBuf)],
) -> Result<(), SweepError> {
    let Some((h, _)) = header else {
        return Ok(());
    };
    let seed = h.iter().position(|c| c == "seed");
    let col = h
        .iter()
        .position(|c| c == "sglang")
        .filter(|&i| seed.is_some_and(|s| i > s));
    if let Some(c) = col {
        let mut first: Option<(&str, usize)> = None;
        for (_, r, fi) in rows {
            let v = r.get(c).map_or("", String::as_str);
            match first {
                None => first = Some((v, *fi)),
                Some((v0, f0)) if v0 != v => {
                    return Err(merr(format!(
                        "{} and {} come from different scenarios: `sglang` is {v0} in one and {v} in the other (not a sweep axis: every row of one sweep has the same)",
                        files[f0].display(),
                        files[*fi].display(),
                    )));
                }
                _ => {}
            }
        }
    }
    if let Some((fp0, f0)) = fingerprints.first()
        && let Some((fp, f)) = fingerprints.iter().find(|(fp, _)| fp != fp0)
    {
        return Err(merr(format!(
            "{} and {} come from different sweeps ({} `{fp0}` and `{fp}`: the scenario, its axes or its seeds differ); copy the journals (`*.journal.jsonl`) beside the CSVs to see which fields",
            f0.display(),
            f.display(),
            super::run::SWEEP_FINGERPRINT
        )));
    }
    Ok(())
}

/// `hicache-sim merge OUT FILES…`: merge and write `out` (atomically, through symlinks,
/// never over one of the inputs).
pub fn merge_to(files: &[PathBuf], out: &Path) -> Result<(), SweepError> {
    let inputs: Vec<(&str, &Path)> = files.iter().map(|f| ("input CSV", f.as_path())).collect();
    crate::output::refuse_input_as_output("--output", out, &inputs)?;
    let bytes = merge(files)?;
    super::run::write_atomic(out, &bytes)
}
