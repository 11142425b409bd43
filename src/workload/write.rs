//! Writing traces: Mooncake JSONL (`timestamp` in ms, `input_length`,
//! `output_length`, `hash_ids` at the records' block size), so generated workloads can
//! be saved (`hicache-sim trace gen`) and read back by every Mooncake-compatible tool,
//! SGLang's policy simulator included.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use super::read::BlockRecord;

/// The timestamp field: whole milliseconds as an integer, otherwise milliseconds with
/// the fraction (nanosecond precision, trailing zeros trimmed).
fn write_ms(w: &mut impl Write, ns: u64) -> io::Result<()> {
    let ms = ns / 1_000_000;
    let frac = ns % 1_000_000;
    if frac == 0 {
        write!(w, "{ms}")
    } else {
        let f = format!("{frac:06}");
        write!(w, "{ms}.{}", f.trim_end_matches('0'))
    }
}

/// One record as a Mooncake JSONL line (with the newline).
pub fn write_mooncake_line(w: &mut impl Write, r: &BlockRecord) -> io::Result<()> {
    write_mooncake_line_with(w, r, None)
}

/// One record as a Mooncake JSONL line, starting with `"block_size": N` when given (the
/// trace says its own block size; Mooncake tools ignore the extra key).
pub fn write_mooncake_line_with(
    w: &mut impl Write,
    r: &BlockRecord,
    block_size: Option<u32>,
) -> io::Result<()> {
    w.write_all(b"{")?;
    if let Some(b) = block_size {
        write!(w, "\"block_size\": {b}, ")?;
    }
    w.write_all(b"\"timestamp\": ")?;
    write_ms(w, r.arrival_ns)?;
    write!(
        w,
        ", \"input_length\": {}, \"output_length\": {}, \"hash_ids\": [",
        r.input_tokens, r.output_tokens
    )?;
    for (i, h) in r.block_hashes.iter().enumerate() {
        if i > 0 {
            w.write_all(b", ")?;
        }
        write!(w, "{h}")?;
    }
    w.write_all(b"]}\n")
}

/// Write every record; returns how many.
pub fn write_mooncake_jsonl<W: Write, I: IntoIterator<Item = BlockRecord>>(
    mut w: W,
    records: I,
) -> io::Result<u64> {
    let mut n = 0;
    for r in records {
        write_mooncake_line(&mut w, &r)?;
        n += 1;
    }
    w.flush()?;
    Ok(n)
}

/// A Mooncake JSONL writer that can renumber hash ids `0, 1, 2, …` in order of first
/// appearance, as the public Mooncake traces are numbered: same prefix structure,
/// shorter lines. Memory: one map entry per distinct block.
pub struct MooncakeWriter<W: Write> {
    w: W,
    remap: Option<FxHashMap<u64, u64>>,
    block_size: Option<u32>,
    scratch: BlockRecord,
    written: u64,
}

impl<W: Write> MooncakeWriter<W> {
    pub fn new(w: W, remap_ids: bool) -> Self {
        MooncakeWriter {
            w,
            remap: remap_ids.then(FxHashMap::default),
            block_size: None,
            scratch: BlockRecord::default(),
            written: 0,
        }
    }

    /// Every line starts with `"block_size": N`: the trace says its own block size
    /// (Mooncake's own traces are 512 and say nothing; a generated one can be any).
    pub fn with_block_size(mut self, block_size: u32) -> Self {
        self.block_size = Some(block_size);
        self
    }

    pub fn write(&mut self, r: &BlockRecord) -> io::Result<()> {
        self.written += 1;
        match &mut self.remap {
            None => write_mooncake_line_with(&mut self.w, r, self.block_size),
            Some(map) => {
                self.scratch.arrival_ns = r.arrival_ns;
                self.scratch.input_tokens = r.input_tokens;
                self.scratch.output_tokens = r.output_tokens;
                self.scratch.block_hashes.clear();
                for h in &r.block_hashes {
                    let next = map.len() as u64;
                    self.scratch
                        .block_hashes
                        .push(*map.entry(*h).or_insert(next));
                }
                write_mooncake_line_with(&mut self.w, &self.scratch, self.block_size)
            }
        }
    }

    /// Flush and return the writer and how many records were written.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        self.w.flush()?;
        Ok((self.w, self.written))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_layout_as_the_mooncake_files() {
        let r = BlockRecord {
            arrival_ns: 1_500_250_000,
            input_tokens: 600,
            output_tokens: 6,
            block_hashes: vec![0, 1],
            ..BlockRecord::default()
        };
        let mut out = Vec::new();
        write_mooncake_line(&mut out, &r).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"timestamp\": 1500.25, \"input_length\": 600, \"output_length\": 6, \"hash_ids\": [0, 1]}\n"
        );
        let mut out = Vec::new();
        write_mooncake_line(
            &mut out,
            &BlockRecord {
                arrival_ns: 3_000_000,
                ..r
            },
        )
        .unwrap();
        assert!(
            String::from_utf8(out)
                .unwrap()
                .starts_with("{\"timestamp\": 3, ")
        );
    }

    #[test]
    fn remapped_ids_count_from_zero_in_first_appearance_order() {
        let rec = |ids: Vec<u64>| BlockRecord {
            input_tokens: 16 * ids.len() as u32,
            block_hashes: ids,
            ..BlockRecord::default()
        };
        let mut w = MooncakeWriter::new(Vec::new(), true);
        w.write(&rec(vec![900, 77])).unwrap();
        w.write(&rec(vec![900, 5, 6])).unwrap();
        let (out, n) = w.finish().unwrap();
        assert_eq!(n, 2);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with("\"hash_ids\": [0, 1]}"), "{}", lines[0]);
        assert!(
            lines[1].ends_with("\"hash_ids\": [0, 2, 3]}"),
            "{}",
            lines[1]
        );
    }
}
