//! Streaming trace readers. Each yields one record per line as it reads (a
//! 1 M-request JSONL file is never held in memory); every malformed row is an
//! [`InputError`] naming the file, the line and, when known, the field.
//!
//! Two layers:
//! - [`RecordReader`]: rows as the trace has them ([`BlockRecord`]: block hash ids at
//!   the trace's block size);
//! - [`TraceReader`]: [`Request`]s with `page_hashes` re-blocked to the engine's page
//!   size (see [`super::reblock`]).
//!
//! Order: readers keep the file order and never sort. A timestamp earlier than the
//! one before it is remembered ([`RecordReader::first_out_of_order`] gives its line);
//! with [`TraceOptions::require_monotonic`] it is an error at that line instead, so a
//! timing-on replay can refuse the trace; or [`collect_sorted`] sorts it stably, as
//! SGLang's policy simulator does (and [`crate::policy_sim`] does itself). `Request::arrival_ns` is the
//! trace's own timestamp in nanoseconds (the traces' clocks start near zero);
//! `Request::id` is the row's 0-based position in the file.

pub mod columns;
mod kv_tester;
mod rows;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::reblock::Reblocker;
use super::{PageHash, Request};
use crate::error::InputError;

pub use columns::{TraceColumns, enable_sharing, is_binary, shared, sharing_enabled};
pub use rows::CSV_HEADER;

/// The trace formats we read. Ids are stable (CLI `--format`, scenarios).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// Mooncake JSONL: `timestamp` (ms), `input_length`, `output_length`, `hash_ids`
    /// of 512-token blocks.
    Mooncake,
    /// Qwen Bailian JSONL: `chat_id`, `parent_chat_id`, `timestamp` (s), `type`,
    /// `turn`, `input_length`, `output_length`, `hash_ids` of 16-token blocks.
    Bailian,
    /// kv-cache-tester JSON: `block_size`, `requests: [{t (s), type, in, out, hash_ids}]`.
    KvCacheTester,
    /// CSV with header `timestamp_ms,input_length,output_length,hash_ids`, ids `;`-separated.
    Csv,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 4] = [
        TraceFormat::Mooncake,
        TraceFormat::Bailian,
        TraceFormat::KvCacheTester,
        TraceFormat::Csv,
    ];

    pub fn id(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Bailian => "bailian",
            TraceFormat::KvCacheTester => "kv-cache-tester",
            TraceFormat::Csv => "csv",
        }
    }

    pub fn from_id(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.id() == s)
    }

    /// The block size the format's public traces use: 512, 16, the file's own
    /// `block_size` (64 in the public files), and 512 for CSV (a Mooncake export).
    pub fn default_block_size(self) -> u32 {
        match self {
            TraceFormat::Mooncake | TraceFormat::Csv => 512,
            TraceFormat::Bailian => 16,
            TraceFormat::KvCacheTester => 64,
        }
    }

    /// Guess the format from the extension (`.csv`, `.json`) and, for JSONL or any
    /// other name, from the first non-blank line: `chat_id` → Bailian, a header
    /// starting `timestamp_ms` → CSV, `"requests"` → kv-cache-tester, else Mooncake.
    pub fn detect(path: &Path) -> Result<Self, InputError> {
        let src = path.display().to_string();
        if columns::is_binary(path) {
            // a binary trace names its source's format in its header
            let mut head = [0u8; 16];
            crate::input::open(path)
                .and_then(|mut f| f.read_exact(&mut head))
                .map_err(|e| InputError::new(&src, format!("read error: {e}")))?;
            let i = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes"));
            return TraceFormat::ALL.get(i as usize).copied().ok_or_else(|| {
                InputError::new(
                    &src,
                    format!("binary trace: unknown source format index {i}"),
                )
            });
        }
        match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => return Ok(TraceFormat::Csv),
            Some("json") => return Ok(TraceFormat::KvCacheTester),
            _ => {}
        }
        let f = crate::input::open(path)
            .map_err(|e| InputError::new(&src, format!("cannot open: {e}")))?;
        let mut head = String::new();
        BufReader::new(f)
            .take(1 << 20)
            .read_to_string(&mut head)
            .map_err(|e| InputError::new(&src, format!("read error: {e}")))?;
        let first = head.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let t = first.trim_start();
        if t.starts_with("timestamp_ms") || t.starts_with('#') {
            Ok(TraceFormat::Csv)
        } else if t.starts_with('{') && first.contains("\"chat_id\"") {
            Ok(TraceFormat::Bailian)
        } else if t.starts_with('{')
            && (first.contains("\"requests\"")
                || (!first.contains("\"hash_ids\"") && head.contains("\"requests\"")))
        {
            // a kv-cache-tester document (possibly pretty-printed: first line `{`)
            Ok(TraceFormat::KvCacheTester)
        } else if t.starts_with('{') {
            Ok(TraceFormat::Mooncake)
        } else {
            Err(InputError::new(
                &src,
                "cannot tell the trace format; pass one of mooncake, bailian, kv-cache-tester, csv",
            )
            .at_line(1))
        }
    }
}

impl std::fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// One trace row as the file has it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlockRecord {
    /// 1-based line in the file (kv-cache-tester: the request's index + 1, its
    /// document being one line).
    pub line: usize,
    /// 0-based position in the file.
    pub index: u64,
    pub arrival_ns: u64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Chained block hash ids at the trace's block size.
    pub block_hashes: Vec<u64>,
}

/// The longest trace line read (64 MiB; `HICACHE_SIM_MAX_LINE_BYTES` sets another): a
/// file without newlines (`/dev/zero`, a binary file) would otherwise grow one string
/// until memory runs out.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// The largest line cap `HICACHE_SIM_MAX_LINE_BYTES` may set (1 TiB): a larger one
/// could not be held in memory anyway.
pub const MAX_LINE_BYTES_LIMIT: u64 = 1 << 40;

/// The line cap in force: [`DEFAULT_MAX_LINE_BYTES`] unless `HICACHE_SIM_MAX_LINE_BYTES`
/// says, which must be a whole number of bytes from 1 to [`MAX_LINE_BYTES_LIMIT`]
/// (anything else is an error naming the variable, never ignored).
pub fn max_line_bytes() -> Result<usize, InputError> {
    const VAR: &str = "HICACHE_SIM_MAX_LINE_BYTES";
    let Some(raw) = std::env::var_os(VAR) else {
        return Ok(DEFAULT_MAX_LINE_BYTES);
    };
    let expected = format!(
        "expected a whole number of bytes from 1 to {MAX_LINE_BYTES_LIMIT} (1 TiB); unset it for the default {DEFAULT_MAX_LINE_BYTES} (64 MiB)"
    );
    let v = raw.to_string_lossy();
    let n: u64 = v
        .trim()
        .parse()
        .map_err(|_| InputError::new(VAR, format!("`{v}` is not a byte count: {expected}")))?;
    if n == 0 {
        return Err(InputError::new(
            VAR,
            format!("0 would refuse every line: {expected}"),
        ));
    }
    if n > MAX_LINE_BYTES_LIMIT {
        return Err(InputError::new(
            VAR,
            format!("{n} bytes is more than a line could ever be held in memory: {expected}"),
        ));
    }
    usize::try_from(n).map_err(|_| InputError::new(VAR, expected))
}

/// `read_line` that stops at `cap` bytes: `Ok(None)` when the line is longer.
pub fn read_line_capped(
    reader: &mut (impl BufRead + ?Sized),
    buf: &mut String,
    cap: usize,
) -> std::io::Result<Option<usize>> {
    let n = reader.take(cap as u64 + 1).read_line(buf)?;
    if n > cap && !buf.ends_with('\n') {
        return Ok(None);
    }
    Ok(Some(n))
}

fn line_too_long(src: &str, line: usize, cap: usize) -> InputError {
    InputError::new(
        src,
        format!(
            "line longer than {cap} bytes (a binary file, or no newlines?); set HICACHE_SIM_MAX_LINE_BYTES to read longer lines"
        ),
    )
    .at_line(line)
}

/// How to open a trace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceOptions {
    /// `None`: [`TraceFormat::detect`].
    pub format: Option<TraceFormat>,
    /// Override the trace's block size (e.g. a CSV exported at 16 tokens).
    pub block_size: Option<u32>,
    /// A timestamp going backwards is an error at its line.
    pub require_monotonic: bool,
}

enum Source {
    Lines(Box<dyn BufRead + Send>),
    KvTester(std::vec::IntoIter<kv_tester::KvTesterRequest>),
    /// A parsed trace (a sweep's shared parse, or a binary file read whole).
    Columns {
        cols: Arc<TraceColumns>,
        pos: usize,
    },
    /// A binary trace streamed column by column (a single replay).
    Binary(Box<columns::BinStream>),
}

/// The rule of both engines: a request names at most the blocks its prompt fills
/// (`ceil(input_length / block_size)`); more would be counted by the policy simulator
/// (every hash id) and dropped by the runtime (page-aligned prompt). The message when
/// `ids` break it.
pub(crate) fn too_many_ids(ids: u64, input_tokens: u32, block_size: u32) -> Option<String> {
    let need = (input_tokens as u64).div_ceil(block_size.max(1) as u64);
    (ids > need).then(|| {
        format!(
            "{ids} hash ids for input_length {input_tokens} at {block_size}-token blocks (at most {need}): the trace is inconsistent (wrong --block-size?)"
        )
    })
}

/// Streaming reader of [`BlockRecord`]s.
pub struct RecordReader {
    src: String,
    format: TraceFormat,
    block_size: u32,
    source: Source,
    line_no: usize,
    index: u64,
    buf: String,
    last_arrival: Option<u64>,
    first_out_of_order: Option<usize>,
    require_monotonic: bool,
    done: bool,
    /// [`max_line_bytes`] when opened.
    max_line: usize,
}

impl RecordReader {
    /// Open a file. Format detection, the CSV header and the whole kv-cache-tester
    /// document are checked here.
    pub fn open(path: &Path, opts: &TraceOptions) -> Result<Self, InputError> {
        if columns::sharing_enabled() {
            let src = path.display().to_string();
            return Self::from_columns(src, columns::shared(path, opts)?, opts);
        }
        Self::open_unshared(path, opts)
    }

    /// [`RecordReader::open`] without the sweep's shared parse (what that parse uses).
    pub(crate) fn open_unshared(path: &Path, opts: &TraceOptions) -> Result<Self, InputError> {
        let src = path.display().to_string();
        if columns::is_binary(path) {
            let mut bin = columns::BinStream::open(path)?;
            let block_size = opts.block_size.unwrap_or(bin.block_size);
            // The ids-per-input rule before a record's ids are allocated.
            bin.block_size = block_size;
            if block_size == 0 {
                return Err(
                    InputError::new(&src, "block size must be positive").field("block_size")
                );
            }
            return Ok(RecordReader {
                src,
                format: bin.format,
                block_size,
                source: Source::Binary(Box::new(bin)),
                line_no: 0,
                index: 0,
                buf: String::new(),
                last_arrival: None,
                first_out_of_order: None,
                require_monotonic: opts.require_monotonic,
                max_line: max_line_bytes()?,
                done: false,
            });
        }
        let format = match opts.format {
            Some(f) => f,
            None => TraceFormat::detect(path)?,
        };
        let f = crate::input::open(path)
            .map_err(|e| InputError::new(&src, format!("cannot open: {e}")))?;
        Self::from_reader(src, BufReader::new(f), format, opts)
    }

    /// Read a parsed trace (records in file order; the order check and the
    /// ids-per-input rule apply as for a file). `opts.block_size` overrides the
    /// trace's; `opts.format` is the trace's own.
    pub fn from_columns(
        src: impl Into<String>,
        cols: Arc<TraceColumns>,
        opts: &TraceOptions,
    ) -> Result<Self, InputError> {
        let src = src.into();
        let block_size = opts.block_size.unwrap_or(cols.block_size);
        if block_size == 0 {
            return Err(InputError::new(&src, "block size must be positive").field("block_size"));
        }
        Ok(RecordReader {
            src,
            format: cols.format,
            block_size,
            source: Source::Columns { cols, pos: 0 },
            line_no: 0,
            index: 0,
            buf: String::new(),
            last_arrival: None,
            first_out_of_order: None,
            require_monotonic: opts.require_monotonic,
            max_line: max_line_bytes()?,
            done: false,
        })
    }

    /// Read from any buffered reader; `src` names it in errors.
    pub fn from_reader(
        src: impl Into<String>,
        mut reader: impl BufRead + Send + 'static,
        format: TraceFormat,
        opts: &TraceOptions,
    ) -> Result<Self, InputError> {
        let src = src.into();
        let mut block_size = format.default_block_size();
        let mut line_no = 0;
        let source = match format {
            TraceFormat::KvCacheTester => {
                let mut text = String::new();
                reader
                    .read_to_string(&mut text)
                    .map_err(|e| InputError::new(&src, format!("read error: {e}")))?;
                let doc = kv_tester::parse_doc(&text).map_err(|(line, (field, msg))| {
                    let e = InputError::new(&src, msg).at_line(line);
                    match field {
                        Some(f) => e.field(f),
                        None => e,
                    }
                })?;
                block_size = doc.block_size;
                Source::KvTester(doc.requests.into_iter())
            }
            TraceFormat::Csv => {
                // header: the first line that is neither blank nor a comment
                let mut header = String::new();
                loop {
                    header.clear();
                    let cap = max_line_bytes()?;
                    let n = read_line_capped(&mut reader, &mut header, cap)
                        .map_err(|e| InputError::new(&src, format!("read error: {e}")))?
                        .ok_or_else(|| line_too_long(&src, line_no + 1, cap))?;
                    line_no += 1;
                    if n == 0 {
                        return Err(InputError::new(
                            &src,
                            format!("empty CSV trace; expected the header `{CSV_HEADER}`"),
                        ));
                    }
                    let h = header.trim();
                    if !h.is_empty() && !h.starts_with('#') {
                        break;
                    }
                }
                let h: String = header
                    .trim()
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                if h != CSV_HEADER {
                    return Err(InputError::new(
                        &src,
                        format!(
                            "expected the CSV header `{CSV_HEADER}`, found `{}`",
                            header.trim()
                        ),
                    )
                    .at_line(line_no));
                }
                Source::Lines(Box::new(reader))
            }
            TraceFormat::Mooncake => {
                // A trace that says its block size on its first line (`trace gen`'s) is
                // read at it; an explicit block size wins (and a line saying another is
                // refused at that line).
                if opts.block_size.is_none()
                    && let Ok(head) = reader.fill_buf()
                    && let Some(b) = rows::declared_block_size(head)
                {
                    block_size = b;
                }
                Source::Lines(Box::new(reader))
            }
            TraceFormat::Bailian => Source::Lines(Box::new(reader)),
        };
        if let Some(b) = opts.block_size {
            block_size = b;
        }
        if block_size == 0 {
            return Err(InputError::new(&src, "block size must be positive").field("block_size"));
        }
        Ok(RecordReader {
            src,
            format,
            block_size,
            source,
            line_no,
            index: 0,
            buf: String::new(),
            last_arrival: None,
            first_out_of_order: None,
            require_monotonic: opts.require_monotonic,
            max_line: max_line_bytes()?,
            done: false,
        })
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// Tokens per trace block (per hash id).
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// The source's name as used in errors.
    pub fn source_name(&self) -> &str {
        &self.src
    }

    /// Line of the first row whose timestamp is earlier than the previous row's.
    pub fn first_out_of_order(&self) -> Option<usize> {
        self.first_out_of_order
    }

    fn err(&self, line: usize, field: Option<String>, msg: String) -> InputError {
        let e = InputError::new(&self.src, msg).at_line(line);
        match field {
            Some(f) => e.field(f),
            None => e,
        }
    }

    /// Read the next record into `rec` (reusing its buffer). `Ok(false)` at the end. An
    /// error met in a binary trace is the file's damage when its checksum fails
    /// ([`RecordReader::damaged_first`]).
    pub fn read_into(&mut self, rec: &mut BlockRecord) -> Result<bool, InputError> {
        self.read_into_unchecked(rec)
            .map_err(|e| self.damaged_first(e))
    }

    /// Checks the rest of a binary trace against its CRC-32 (read once, in the same pass
    /// as the records; see `columns::BinStream::finish`); nothing to check for a text
    /// trace or a parsed one (a shared parse was checked whole). What a consumer that
    /// stops before the end calls before it reports anything.
    pub fn finish(&mut self) -> Result<(), InputError> {
        match &mut self.source {
            Source::Binary(bin) => bin.finish(),
            _ => Ok(()),
        }
    }

    /// `e`, unless the trace is a binary file whose checksum fails: then that (the
    /// damage explains the error, which names a consequence of it).
    pub fn damaged_first(&mut self, e: InputError) -> InputError {
        match self.finish() {
            Err(crc) => crc,
            Ok(()) => e,
        }
    }

    fn read_into_unchecked(&mut self, rec: &mut BlockRecord) -> Result<bool, InputError> {
        if self.done {
            return Ok(false);
        }
        let parsed = match &mut self.source {
            Source::KvTester(it) => {
                let Some(r) = it.next() else {
                    self.done = true;
                    return Ok(false);
                };
                self.line_no += 1;
                kv_tester::to_record(r, rec).map_err(|(f, m)| {
                    let i = self.line_no - 1;
                    InputError::new(&self.src, m)
                        .field(format!("requests[{i}].{}", f.unwrap_or_default()))
                })
            }
            Source::Columns { cols, pos } => {
                let i = *pos;
                if i >= cols.len() {
                    self.done = true;
                    return match &cols.tail_error {
                        Some(e) => Err(e.clone()),
                        None => Ok(false),
                    };
                }
                *pos += 1;
                rec.arrival_ns = cols.arrival_ns[i];
                rec.input_tokens = cols.input_tokens[i];
                rec.output_tokens = cols.output_tokens[i];
                rec.block_hashes.clear();
                rec.block_hashes.extend_from_slice(cols.ids_of(i));
                self.line_no = cols.line[i] as usize;
                Ok(())
            }
            Source::Binary(bin) => match bin.next(rec)? {
                Some(line) => {
                    self.line_no = line;
                    Ok(())
                }
                None => {
                    self.done = true;
                    return Ok(false);
                }
            },
            Source::Lines(reader) => loop {
                self.buf.clear();
                let cap = self.max_line;
                let n = read_line_capped(reader, &mut self.buf, cap)
                    .map_err(|e| {
                        InputError::new(&self.src, format!("read error: {e}"))
                            .at_line(self.line_no + 1)
                    })?
                    .ok_or_else(|| line_too_long(&self.src, self.line_no + 1, cap))?;
                if n == 0 {
                    self.done = true;
                    return Ok(false);
                }
                self.line_no += 1;
                let t = self.buf.trim();
                if t.is_empty() || (self.format == TraceFormat::Csv && t.starts_with('#')) {
                    continue;
                }
                let line = self.line_no;
                let block_size = self.block_size;
                let r = match self.format {
                    TraceFormat::Mooncake => rows::mooncake(&self.buf, rec).and_then(|b| match b {
                        Some(b) if b != block_size => Err((
                            Some("block_size".into()),
                            format!(
                                "this row's hash ids are of {b}-token blocks, but the trace is read at {block_size}-token blocks (--block-size / runtime.block_size, or the first line's block_size): one trace has one block size"
                            ),
                        )),
                        _ => Ok(()),
                    }),
                    TraceFormat::Bailian => rows::bailian(&self.buf, rec),
                    TraceFormat::Csv => rows::csv(&self.buf, rec),
                    TraceFormat::KvCacheTester => unreachable!("kv-cache-tester is parsed whole"),
                };
                break r.map_err(|(f, m)| self.err(line, f, m));
            },
        };
        parsed?;
        // One rule for both engines: a request names at most the blocks its prompt
        // fills (ceil(input_length / block_size)); more would be counted by the policy
        // simulator (every hash id) and dropped by the runtime (page-aligned prompt).
        if let Some(m) = too_many_ids(
            rec.block_hashes.len() as u64,
            rec.input_tokens,
            self.block_size,
        ) {
            return Err(self.err(self.line_no, Some("hash_ids".into()), m));
        }
        rec.line = self.line_no;
        rec.index = self.index;
        self.index += 1;
        if let Some(last) = self.last_arrival
            && rec.arrival_ns < last
        {
            if self.first_out_of_order.is_none() {
                self.first_out_of_order = Some(rec.line);
            }
            if self.require_monotonic {
                return Err(self.err(
                    rec.line,
                    Some("timestamp".into()),
                    format!(
                        "timestamp goes backwards ({} ns after {} ns); the trace must be sorted by time",
                        rec.arrival_ns, last
                    ),
                ));
            }
        }
        self.last_arrival = Some(
            self.last_arrival
                .map_or(rec.arrival_ns, |l| l.max(rec.arrival_ns)),
        );
        Ok(true)
    }
}

impl Iterator for RecordReader {
    type Item = Result<BlockRecord, InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut rec = BlockRecord::default();
        match self.read_into(&mut rec) {
            Ok(true) => Some(Ok(rec)),
            Ok(false) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Streaming reader of [`Request`]s at the engine's page size.
pub struct TraceReader {
    records: RecordReader,
    reblocker: Reblocker,
    rec: BlockRecord,
}

impl TraceReader {
    pub fn new(records: RecordReader, page_size: u32) -> Result<Self, InputError> {
        let reblocker = Reblocker::new(records.block_size(), page_size).map_err(|e| {
            InputError::new(records.source_name(), e.to_string()).field("page_size")
        })?;
        Ok(TraceReader {
            records,
            reblocker,
            rec: BlockRecord::default(),
        })
    }

    pub fn records(&self) -> &RecordReader {
        &self.records
    }

    pub fn reblocker(&self) -> Reblocker {
        self.reblocker
    }

    /// See [`RecordReader::first_out_of_order`].
    pub fn first_out_of_order(&self) -> Option<usize> {
        self.records.first_out_of_order()
    }

    /// See [`RecordReader::finish`].
    pub fn finish(&mut self) -> Result<(), InputError> {
        self.records.finish()
    }

    fn next_request(&mut self) -> Result<Option<Request>, InputError> {
        if !self.records.read_into(&mut self.rec)? {
            return Ok(None);
        }
        let mut page_hashes: Vec<PageHash> = crate::workload::reuse_pages();
        self.reblocker
            .page_hashes(
                &self.rec.block_hashes,
                self.rec.input_tokens,
                &mut page_hashes,
            )
            .map_err(|e| {
                let e = InputError::new(self.records.source_name(), e.to_string())
                    .at_line(self.rec.line)
                    .field("hash_ids");
                self.records.damaged_first(e)
            })?;
        Ok(Some(Request {
            id: self.rec.index,
            arrival_ns: self.rec.arrival_ns,
            input_tokens: self.rec.input_tokens,
            output_tokens: self.rec.output_tokens,
            page_hashes,
        }))
    }
}

impl Iterator for TraceReader {
    type Item = Result<Request, InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_request() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                self.records.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Open a trace as [`Request`]s at `page_size` tokens per page. `format: None`
/// detects it. The file's block size is the format's (see
/// [`TraceFormat::default_block_size`]); use [`open_trace_with`] to override it.
pub fn open_trace(
    path: &Path,
    format: Option<TraceFormat>,
    page_size: u32,
) -> Result<TraceReader, InputError> {
    open_trace_with(
        path,
        &TraceOptions {
            format,
            ..TraceOptions::default()
        },
        page_size,
    )
}

pub fn open_trace_with(
    path: &Path,
    opts: &TraceOptions,
    page_size: u32,
) -> Result<TraceReader, InputError> {
    TraceReader::new(RecordReader::open(path, opts)?, page_size)
}

/// Collect requests and sort them stably by arrival, renumbering `id` to the position in
/// the sorted trace (what [`Request::id`] means). A file already in time order comes
/// back unchanged. Holds the whole trace: for replays that need an ordered trace from
/// a file that is not.
pub fn collect_sorted<I, E>(requests: I) -> Result<Vec<Request>, E>
where
    I: IntoIterator<Item = Result<Request, E>>,
{
    let mut v: Vec<Request> = requests.into_iter().collect::<Result<_, _>>()?;
    v.sort_by_key(|r| r.arrival_ns);
    for (i, r) in v.iter_mut().enumerate() {
        r.id = i as u64;
    }
    Ok(v)
}
