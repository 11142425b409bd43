//! Parsing one row of each line-based format into a [`BlockRecord`]. Unknown fields are
//! errors (a typo must not silently change a run); the optional fields that derivative
//! traces add are accepted and ignored, and listed on each row type.

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::BlockRecord;
use crate::units::{NS_PER_MS, NS_PER_S};

/// A row-level problem: the field (when known) and what is wrong.
pub(crate) type RowError = (Option<String>, String);

/// A JSON timestamp in `unit_ns` units (ms or s) to integer nanoseconds.
/// Integers convert exactly; fractions round to the nearest nanosecond.
pub(crate) fn to_ns(n: &serde_json::Number, unit_ns: u64, field: &str) -> Result<u64, RowError> {
    if let Some(u) = n.as_u64() {
        return u.checked_mul(unit_ns).ok_or_else(|| {
            (
                Some(field.to_string()),
                format!("timestamp {u} is too large"),
            )
        });
    }
    match n.as_f64() {
        Some(x) if x.is_finite() && x >= 0.0 && x * (unit_ns as f64) < u64::MAX as f64 => {
            Ok((x * unit_ns as f64).round() as u64)
        }
        _ => Err((
            Some(field.to_string()),
            format!("expected a non-negative timestamp, found {n}"),
        )),
    }
}

/// serde_json's error as a row error: "… at line 1 column 17" becomes "(column 17)",
/// a cut-off line is called truncated, and the field is named — from "unknown field
/// `x`" / "missing field `x`", or else the last `"key":` before the error's column
/// (the rows are flat objects).
pub(crate) fn json_row_error_in(line: &str, e: &serde_json::Error) -> RowError {
    let full = e.to_string();
    let base = match full.rfind(" at line ") {
        Some(i) => &full[..i],
        None => full.as_str(),
    };
    let msg = if e.is_eof() {
        format!("truncated line: {base}")
    } else {
        format!("{base} (column {})", e.column())
    };
    let named = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|pfx| {
            let i = full.find(pfx)? + pfx.len();
            let j = full[i..].find('`')?;
            Some(full[i..i + j].to_string())
        });
    let field = named.or_else(|| {
        if e.line() != 1 || e.is_eof() {
            return None;
        }
        let upto = line.get(..e.column().min(line.len()))?;
        let colon = upto.rfind("\":")?;
        let start = upto[..colon].rfind('"')? + 1;
        Some(upto[start..colon].to_string())
    });
    (field, msg)
}

/// For whole documents (kv-cache-tester): only the named-field forms.
pub(crate) fn json_row_error(e: &serde_json::Error) -> RowError {
    json_row_error_in("", e)
}

/// One line without its line ending.
fn body(line: &str) -> &str {
    line.trim_end_matches(['\r', '\n'])
}

/// Mooncake JSONL (`FAST25-release/traces/*.jsonl`): `timestamp` in ms,
/// `input_length`, `output_length`, `hash_ids` of 512-token blocks. Accepted and
/// ignored: `session_id`, `delay` (seen in derivative traces). `block_size`: the tokens
/// per hash id, written by `hicache-sim trace gen` on every line (the format itself has
/// no such field: Mooncake's own traces are 512) and checked by the reader.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MooncakeRow {
    #[serde(default)]
    block_size: Option<u32>,
    timestamp: serde_json::Number,
    input_length: u32,
    output_length: u32,
    hash_ids: Vec<u64>,
    #[serde(default)]
    #[allow(dead_code)]
    session_id: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    delay: Option<IgnoredAny>,
}

/// One Mooncake row into `rec`; returns the row's own `block_size`, when it has one.
pub(crate) fn mooncake(line: &str, rec: &mut BlockRecord) -> Result<Option<u32>, RowError> {
    let line = body(line);
    if fast_mooncake(line, rec).is_some() {
        return Ok(None);
    }
    mooncake_serde(line, rec)
}

fn mooncake_serde(line: &str, rec: &mut BlockRecord) -> Result<Option<u32>, RowError> {
    let r: MooncakeRow = serde_json::from_str(line).map_err(|e| json_row_error_in(line, &e))?;
    rec.arrival_ns = to_ns(&r.timestamp, NS_PER_MS, "timestamp")?;
    rec.input_tokens = r.input_length;
    rec.output_tokens = r.output_length;
    rec.block_hashes = r.hash_ids;
    Ok(r.block_size)
}

/// The `block_size` a Mooncake trace's first line declares (`{"block_size": 64, …`, as
/// `trace gen` writes it), read from the start of `head` without parsing the row.
pub(crate) fn declared_block_size(head: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(&head[..head.len().min(256)])
        .ok()
        .or_else(|| {
            // cut inside a UTF-8 sequence: the valid prefix
            let e = std::str::from_utf8(&head[..head.len().min(256)]).err()?;
            std::str::from_utf8(&head[..e.valid_up_to()]).ok()
        })?;
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    let rest = first.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest
        .strip_prefix("\"block_size\"")?
        .trim_start()
        .strip_prefix(':')?;
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|&b| b > 0)
}

/// A Mooncake row read straight from the bytes, without serde: the rows as the public
/// traces write them (the four fields once each in any order, integers only, plain
/// keys). Anything else — a fraction, an escape, `session_id`, a duplicate, an error —
/// returns `None` and the serde path reads the line (and words any error), so the two
/// paths agree on every line the fast one accepts. Chosen by measurement: serde's
/// integer and sequence parsing was most of an untimed replay's profile.
fn fast_mooncake(line: &str, rec: &mut BlockRecord) -> Option<()> {
    let b = line.as_bytes();
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    // a JSON integer without sign, fraction or exponent, no leading zero
    let uint = |i: &mut usize| -> Option<u64> {
        let start = *i;
        let mut v: u64 = 0;
        while *i < b.len() && b[*i].is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add(u64::from(b[*i] - b'0'))?;
            *i += 1;
        }
        let n = *i - start;
        if n == 0 || (n > 1 && b[start] == b'0') {
            return None;
        }
        if *i < b.len() && matches!(b[*i], b'.' | b'e' | b'E') {
            return None;
        }
        Some(v)
    };
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let (mut ts, mut inp, mut out, mut ids) = (None, None, None, false);
    loop {
        ws(&mut i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        i += 1;
        let k0 = i;
        while i < b.len() && b[i] != b'"' {
            if b[i] == b'\\' {
                return None;
            }
            i += 1;
        }
        let key = &b[k0..i];
        i += 1;
        ws(&mut i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        ws(&mut i);
        match key {
            b"timestamp" if ts.is_none() => ts = Some(uint(&mut i)?),
            b"input_length" if inp.is_none() => inp = Some(u32::try_from(uint(&mut i)?).ok()?),
            b"output_length" if out.is_none() => out = Some(u32::try_from(uint(&mut i)?).ok()?),
            b"hash_ids" if !ids => {
                ids = true;
                if b.get(i) != Some(&b'[') {
                    return None;
                }
                i += 1;
                rec.block_hashes.clear();
                ws(&mut i);
                if b.get(i) == Some(&b']') {
                    i += 1;
                } else {
                    loop {
                        ws(&mut i);
                        rec.block_hashes.push(uint(&mut i)?);
                        ws(&mut i);
                        match b.get(i) {
                            Some(b',') => i += 1,
                            Some(b']') => {
                                i += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
            }
            _ => return None,
        }
        ws(&mut i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {
                i += 1;
                break;
            }
            _ => return None,
        }
    }
    ws(&mut i);
    if i != b.len() || !ids {
        return None;
    }
    rec.arrival_ns = ts?.checked_mul(NS_PER_MS)?;
    rec.input_tokens = inp?;
    rec.output_tokens = out?;
    Some(())
}

/// Qwen Bailian JSONL (alibaba-edu/qwen-bailian-usagetraces-anon): `chat_id`,
/// `parent_chat_id` (−1 for a root), `timestamp` in s, `input_length`,
/// `output_length`, `type` (text/search/image/file), `turn`, `hash_ids` of 16-token
/// blocks. Session fields are checked for type and otherwise not used: the chained
/// hash ids already carry the shared prefixes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct BailianRow {
    chat_id: i64,
    #[serde(default)]
    parent_chat_id: Option<i64>,
    timestamp: serde_json::Number,
    input_length: u32,
    output_length: u32,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    turn: Option<u32>,
    hash_ids: Vec<u64>,
}

pub(crate) fn bailian(line: &str, rec: &mut BlockRecord) -> Result<(), RowError> {
    let line = body(line);
    let r: BailianRow = serde_json::from_str(line).map_err(|e| json_row_error_in(line, &e))?;
    rec.arrival_ns = to_ns(&r.timestamp, NS_PER_S, "timestamp")?;
    rec.input_tokens = r.input_length;
    rec.output_tokens = r.output_length;
    rec.block_hashes = r.hash_ids;
    Ok(())
}

/// The plain CSV: header `timestamp_ms,input_length,output_length,hash_ids`, hash ids
/// separated by `;` inside the last column (may be empty). Lines starting with `#` are
/// comments. Integers only; the timestamp may have a fraction of a millisecond.
pub const CSV_HEADER: &str = "timestamp_ms,input_length,output_length,hash_ids";

pub(crate) fn csv(line: &str, rec: &mut BlockRecord) -> Result<(), RowError> {
    let cols: Vec<&str> = line.trim_end_matches(['\r', '\n']).split(',').collect();
    if cols.len() != 4 {
        return Err((
            None,
            format!(
                "expected 4 comma-separated columns ({CSV_HEADER}), found {}",
                cols.len()
            ),
        ));
    }
    let int = |s: &str, field: &str| -> Result<u32, RowError> {
        s.trim().parse::<u32>().map_err(|_| {
            (
                Some(field.to_string()),
                format!("expected a non-negative integer, found `{}`", s.trim()),
            )
        })
    };
    let ts: f64 = cols[0].trim().parse().map_err(|_| {
        (
            Some("timestamp_ms".to_string()),
            format!(
                "expected a number of milliseconds, found `{}`",
                cols[0].trim()
            ),
        )
    })?;
    let num = serde_json::Number::from_f64(ts).ok_or_else(|| {
        (
            Some("timestamp_ms".to_string()),
            "expected a finite number".to_string(),
        )
    })?;
    rec.arrival_ns = match cols[0].trim().parse::<u64>() {
        Ok(u) => to_ns(&u.into(), NS_PER_MS, "timestamp_ms")?,
        Err(_) => to_ns(&num, NS_PER_MS, "timestamp_ms")?,
    };
    rec.input_tokens = int(cols[1], "input_length")?;
    rec.output_tokens = int(cols[2], "output_length")?;
    rec.block_hashes.clear();
    let ids = cols[3].trim();
    if !ids.is_empty() {
        for (i, s) in ids.split(';').enumerate() {
            let v = s.trim().parse::<u64>().map_err(|_| {
                (
                    Some("hash_ids".to_string()),
                    format!("element {i} `{}` is not a non-negative integer", s.trim()),
                )
            })?;
            rec.block_hashes.push(v);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line the fast path accepts, serde reads to the same record; the lines it
    /// leaves to serde include every one serde refuses.
    #[test]
    fn fast_mooncake_agrees_with_serde() {
        let lines = [
            r#"{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3]}"#,
            r#"{"hash_ids":[7],"output_length":1,"input_length":512,"timestamp":18446744073709}"#,
            r#"  { "timestamp" : 5 , "input_length" : 1 , "output_length" : 0 , "hash_ids" : [ ] }  "#,
            "{\"timestamp\":\t3,\"input_length\":1,\"output_length\":2,\"hash_ids\":[18446744073709551615]}",
            r#"{"timestamp": 1.5, "input_length": 1, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": 01, "input_length": 1, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": 1, "input_length": 4294967296, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [18446744073709551616]}"#,
            r#"{"timestamp": 1, "timestamp": 2, "input_length": 1, "output_length": 1, "hash_ids": []}"#,
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1}"#,
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1,]}"#,
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1]} x"#,
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "session_id": 3}"#,
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "extra": 3}"#,
            r#"{"time\u0073tamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": 1e3, "input_length": 1, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": 18446744073709551615, "input_length": 1, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1, 2"#,
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1 2]}"#,
        ];
        let mut accepted = 0;
        for l in lines {
            let mut fast = BlockRecord::default();
            let mut slow = BlockRecord::default();
            let s = mooncake_serde(l, &mut slow);
            if fast_mooncake(l, &mut fast).is_some() {
                accepted += 1;
                assert!(s.is_ok(), "fast accepted what serde refuses: {l} ({s:?})");
                assert_eq!(fast, slow, "{l}");
            }
            // the public entry point gives serde's answer either way
            let mut any = BlockRecord::default();
            assert_eq!(mooncake(l, &mut any).is_ok(), s.is_ok(), "{l}");
            if s.is_ok() {
                assert_eq!(any, slow, "{l}");
            }
        }
        assert_eq!(accepted, 4, "the four plain rows take the fast path");
    }
}
