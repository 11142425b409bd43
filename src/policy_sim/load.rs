//! `load_trace_records` of `hicache_policy_simulator.py`: JSONL, one object per line,
//! blank lines skipped, `hash_ids` required (ints or strings, one page each — the tool
//! does *not* re-block), `timestamp` optional (default: the record's index),
//! `output_length` optional; every other field ignored, as the tool does.

use std::path::Path;

use serde_json::Value;

use super::hash_id::HashId;
use crate::error::InputError;
use crate::workload::BlockRecord;

/// `TraceRecord(timestamp, hash_ids, output_length)`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRecord {
    pub timestamp: f64,
    pub hash_ids: Vec<HashId>,
    pub output_length: Option<i64>,
}

impl TraceRecord {
    pub fn new(timestamp: f64, hash_ids: Vec<HashId>) -> Self {
        TraceRecord {
            timestamp,
            hash_ids,
            output_length: None,
        }
    }

    /// A record of integer ids (the common case in tests).
    pub fn ints(timestamp: f64, ids: &[i64]) -> Self {
        Self::new(
            timestamp,
            ids.iter().map(|&i| HashId::Int(i as i128)).collect(),
        )
    }
}

/// Records from any format the workload readers know (Mooncake, Bailian,
/// kv-cache-tester, CSV): one page per trace hash id, as the tool counts them, and
/// `timestamp` = arrival in milliseconds (for a Mooncake file, the tool's own values;
/// the order, which is all the tool uses it for, is the same in every format).
pub fn records_from_blocks<I, E>(records: I) -> Result<Vec<TraceRecord>, E>
where
    I: IntoIterator<Item = Result<BlockRecord, E>>,
{
    records
        .into_iter()
        .map(|r| {
            r.map(|r| TraceRecord {
                timestamp: r.arrival_ns as f64 / 1e6,
                hash_ids: r.block_hashes.iter().map(|&h| HashId::from(h)).collect(),
                output_length: Some(i64::from(r.output_tokens)),
            })
        })
        .collect()
}

/// Read a trace the way the tool does, stopping after `max_requests` records.
/// Deviations, all on input the tool would mis-handle: a `timestamp` that is NaN, a
/// float or bool hash id (Python would key `1.0` as `1`), and a nested list as id are
/// errors with file and line; the tool crashes or silently merges on those.
pub fn load_trace_records(
    path: &Path,
    max_requests: Option<usize>,
) -> Result<Vec<TraceRecord>, InputError> {
    let src = path.display().to_string();
    let f = crate::input::open(path)
        .map_err(|e| InputError::new(&src, format!("cannot open trace: {e}")))?;
    let mut records = Vec::new();
    let mut reader = std::io::BufReader::new(f);
    let mut line = String::new();
    let mut line_no = 0usize;
    let cap = crate::workload::read::max_line_bytes()?;
    loop {
        if max_requests.is_some_and(|m| records.len() >= m) {
            break;
        }
        line.clear();
        let n = crate::workload::read::read_line_capped(&mut reader, &mut line, cap)
            .map_err(|e| InputError::new(&src, format!("read error: {e}")).at_line(line_no + 1))?
            .ok_or_else(|| {
                InputError::new(
                    &src,
                    format!("line longer than {cap} bytes (a binary file, or no newlines?)"),
                )
                .at_line(line_no + 1)
            })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line.trim().is_empty() {
            continue;
        }
        let rec = parse_record_line(&line, records.len()).map_err(|(field, msg)| {
            let e = InputError::new(&src, msg).at_line(line_no);
            match field {
                Some(f) => e.field(f),
                None => e,
            }
        })?;
        records.push(rec);
    }
    Ok(records)
}

/// One line of the tool's JSONL; `index` is the number of records read before it (the
/// default timestamp). Errors are `(field, message)`.
pub fn parse_record_line(
    line: &str,
    index: usize,
) -> Result<TraceRecord, (Option<&'static str>, String)> {
    let obj: Value =
        serde_json::from_str(line).map_err(|e| (None, format!("invalid JSON: {e}")))?;
    let Value::Object(map) = obj else {
        return Err((None, "expected a JSON object".into()));
    };
    let Some(ids) = map.get("hash_ids") else {
        return Err((Some("hash_ids"), "Missing hash_ids".into()));
    };
    let Value::Array(ids) = ids else {
        return Err((
            Some("hash_ids"),
            "expected a list of ints or strings".into(),
        ));
    };
    let mut hash_ids = Vec::with_capacity(ids.len());
    for (i, v) in ids.iter().enumerate() {
        let id = match v {
            Value::Number(n) if n.is_i64() => HashId::Int(n.as_i64().unwrap_or(0) as i128),
            Value::Number(n) if n.is_u64() => HashId::Int(n.as_u64().unwrap_or(0) as i128),
            Value::String(s) => HashId::Str(s.as_str().into()),
            other => {
                return Err((
                    Some("hash_ids"),
                    format!("element {i} is {other}, expected an int or a string"),
                ));
            }
        };
        hash_ids.push(id);
    }
    let timestamp = match map.get("timestamp") {
        None => index as f64,
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => s.trim().parse::<f64>().unwrap_or(f64::NAN),
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(other) => {
            return Err((
                Some("timestamp"),
                format!("expected a number, found {other}"),
            ));
        }
    };
    if timestamp.is_nan() {
        return Err((
            Some("timestamp"),
            "expected a number, found NaN or text".into(),
        ));
    }
    let output_length = match map.get("output_length") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
        Some(other) => {
            return Err((
                Some("output_length"),
                format!("expected an int, found {other}"),
            ));
        }
    };
    Ok(TraceRecord {
        timestamp,
        hash_ids,
        output_length,
    })
}
