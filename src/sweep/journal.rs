//! The journal: `STEM.journal.jsonl`, one JSON line per finished point, appended and
//! flushed as each point finishes, so an interrupted or crashing sweep keeps every
//! finished row and `--resume` computes only what is missing.
//!
//! Line 1 is a header naming the sweep it belongs to (a fingerprint of its points and
//! columns, the point count, the shard); every other line is
//! `{"point": i, "row": [cells of the final CSV row], "sum": "…"}`, where `sum` is the
//! [`row_checksum`] of the row under the sweep's fingerprint: a hand-edited or spliced
//! row is refused by `--resume` and `merge`. A last line cut short by a crash (no
//! trailing newline, or not valid JSON) is dropped on resume and overwritten.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SweepError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Format version of the journal.
    pub hicache_sim_journal: u32,
    /// FNV-1a 64 of the whole sweep (all points, not only this shard's, and the header).
    pub fingerprint: String,
    /// Points in the whole sweep.
    pub points_total: usize,
    /// `K/N` when sharded.
    pub shard: Option<String>,
    /// The CSV header.
    pub columns: Vec<String>,
    /// The resolved base scenario, flattened (`server.hicache_size` → `135`), with the
    /// content hash of every trace the sweep reads (`trace:PATH` → FNV-1a 64): a resume
    /// or a merge with anything else different is refused, naming what differs.
    #[serde(default)]
    pub scenario: std::collections::BTreeMap<String, String>,
}

/// The journal format this build writes (2: the header carries the scenario; 3: every
/// row carries its checksum).
pub const FORMAT: u32 = 3;

/// The checksum of one finished row of the sweep `fingerprint`: FNV-1a 64 over the
/// fingerprint and the cells, each cell length-prefixed (no two rows share a byte
/// string). It catches an edited cell, a row moved between sweeps and a torn row; it is
/// not a signature (anyone can recompute it), which is not its job.
pub fn row_checksum(fingerprint: &str, row: &[String]) -> String {
    use crate::fingerprint::{FNV1A_INIT, fnv1a_update};
    let mut h = fnv1a_update(FNV1A_INIT, fingerprint.as_bytes());
    for c in row {
        h = fnv1a_update(h, &(c.len() as u64).to_le_bytes());
        h = fnv1a_update(h, c.as_bytes());
    }
    format!("{h:016x}")
}

/// What differs between two flattened scenarios, for "refused: … differs" messages
/// (at most `max` entries, in key order).
pub fn scenario_diff(
    old: &std::collections::BTreeMap<String, String>,
    new: &std::collections::BTreeMap<String, String>,
    max: usize,
) -> Vec<String> {
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| old.get(*k) != new.get(*k))
        .take(max)
        .map(|k| {
            let show = |v: Option<&String>| v.map_or("(unset)".to_string(), |s| s.clone());
            format!("{k}: {} vs {}", show(old.get(k)), show(new.get(k)))
        })
        .collect()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub point: usize,
    pub row: Vec<String>,
    /// [`row_checksum`] of `row` under the header's fingerprint.
    #[serde(default)]
    pub sum: String,
}

/// An open journal, appending.
pub struct Journal {
    path: PathBuf,
    out: BufWriter<File>,
}

impl Journal {
    /// Start a fresh journal (truncating any old one) with `header`.
    pub fn create(path: &Path, header: &Header) -> Result<Self, SweepError> {
        let f = File::create(path).map_err(|e| SweepError::io(path, e))?;
        let mut j = Journal {
            path: path.to_path_buf(),
            out: BufWriter::new(f),
        };
        let line = serde_json::to_string(header).expect("journal header serialises");
        j.write_line(&line)?;
        Ok(j)
    }

    /// Reopen an existing journal for appending after [`read`] validated it; `keep` is the
    /// byte length of its intact prefix (a torn last line is cut off).
    pub fn reopen(path: &Path, keep: u64) -> Result<Self, SweepError> {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| SweepError::io(path, e))?;
        f.set_len(keep).map_err(|e| SweepError::io(path, e))?;
        drop(f);
        let f = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| SweepError::io(path, e))?;
        Ok(Journal {
            path: path.to_path_buf(),
            out: BufWriter::new(f),
        })
    }

    /// Append one finished point and flush it to the OS.
    pub fn append(&mut self, e: &Entry) -> Result<(), SweepError> {
        let line = serde_json::to_string(e).expect("journal entry serialises");
        self.write_line(&line)
    }

    fn write_line(&mut self, line: &str) -> Result<(), SweepError> {
        let p = &self.path;
        self.out
            .write_all(line.as_bytes())
            .and_then(|_| self.out.write_all(b"\n"))
            .and_then(|_| self.out.flush())
            .map_err(|e| SweepError::io(p, e))
    }
}

/// What an existing journal holds.
pub struct Contents {
    pub header: Header,
    pub entries: Vec<Entry>,
    /// Byte length of the intact prefix (everything up to the last good line).
    pub intact_len: u64,
}

/// Read a journal. A torn final line is ignored; a bad line anywhere else is an error
/// naming the file and line.
pub fn read(path: &Path) -> Result<Contents, SweepError> {
    let mut text = String::new();
    crate::input::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| SweepError::io(path, e))?;
    let bad = |line: usize, m: String| SweepError::Journal {
        path: path.to_path_buf(),
        line,
        message: m,
    };
    let mut header: Option<Header> = None;
    let mut entries = Vec::new();
    let mut intact_len = 0u64;
    let mut offset = 0usize;
    let n_lines = text.split_inclusive('\n').count();
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let last = i + 1 == n_lines;
        let complete = raw.ends_with('\n');
        let line = raw.trim_end_matches('\n');
        offset += raw.len();
        if !complete && last {
            // Torn by a crash mid-write: drop it.
            break;
        }
        if i == 0 {
            let h: Header = serde_json::from_str(line)
                .map_err(|e| bad(1, format!("not a sweep journal header: {e}")))?;
            header = Some(h);
        } else {
            let e: Entry = match serde_json::from_str(line) {
                Ok(e) => e,
                Err(_) if last => break,
                Err(e) => return Err(bad(i + 1, format!("corrupt journal line: {e}"))),
            };
            entries.push(e);
        }
        intact_len = offset as u64;
    }
    let header = header.ok_or_else(|| bad(1, "empty journal (no header line)".into()))?;
    Ok(Contents {
        header,
        entries,
        intact_len,
    })
}
