//! A parsed trace held whole, in columns: what a sweep shares read-only (`Arc`)
//! across its points and threads instead of parsing the file once per point, and the
//! in-memory form of the binary trace file that `hicache-sim trace convert` writes.
//!
//! Binary file (all integers little-endian; every column starts 8-byte aligned):
//!
//! | bytes | what |
//! | --- | --- |
//! | 8 | magic `HCSIMTRC` |
//! | 4, 4 | format version ([`BIN_VERSION`]), source format (index in [`TraceFormat::ALL`]) |
//! | 4, 4 | block size (tokens per hash id), CRC-32 of the file (this field read as 0) |
//! | 8, 8 | records `n`, hash ids `m` |
//! | 8, 8 | the source file's [`crate::fingerprint::content_hash`] and its length in bytes |
//! | 8·n | arrival, ns |
//! | 8·n | the record's line in the source file |
//! | 4·n (+pad) | input_length |
//! | 4·n (+pad) | output_length |
//! | 8·(n+1) | offsets of each record's ids (first 0, last `m`) |
//! | 8·m | hash ids |
//!
//! Reading it is one pass, one decode per column (no allocation per record); the
//! readers find it by its magic bytes, whatever the file is called. A file whose
//! version is not this build's, or whose sizes do not add up to its length, is refused
//! before anything is allocated; its bytes are checked against the CRC-32 in its header
//! in the same pass that reads them (a CRC detects every single-bit error and every
//! burst up to 32 bits): read whole, before the columns are used; streamed, where the
//! records end, or where a reader stops or meets an error (`BinStream::finish`): no
//! result, and no other error, comes from a damaged file. Version 1 files (no
//! checksum) are refused with the command that re-creates them.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{BlockRecord, RecordReader, TraceFormat, TraceOptions};
use crate::error::InputError;

/// The first 8 bytes of a binary trace.
pub const BIN_MAGIC: &[u8; 8] = b"HCSIMTRC";
/// The layout version this build writes and reads (2: the header carries a CRC-32).
pub const BIN_VERSION: u32 = 2;
const HEADER_BYTES: usize = 56;
/// Where the CRC-32 sits in the header (read as 0 when computing it).
const CRC_AT: usize = 20;

/// A whole trace, record by record in columns (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceColumns {
    /// The format the records were read from (for a binary file: its source's).
    pub format: TraceFormat,
    /// Tokens per hash id.
    pub block_size: u32,
    pub arrival_ns: Vec<u64>,
    pub line: Vec<u64>,
    pub input_tokens: Vec<u32>,
    pub output_tokens: Vec<u32>,
    /// `ids[offsets[i]..offsets[i+1]]` are record `i`'s hash ids; `len() == n + 1`.
    pub offsets: Vec<u64>,
    pub ids: Vec<u64>,
    /// The error that ended the parse (after the records above), returned to a reader
    /// that reads past them, exactly where a streaming reader would have met it.
    pub tail_error: Option<InputError>,
    /// Provenance of a binary file: the source's content hash and length.
    pub source_hash: u64,
    pub source_len: u64,
}

impl TraceColumns {
    /// No records yet.
    pub fn empty(format: TraceFormat, block_size: u32) -> Self {
        TraceColumns {
            format,
            block_size,
            arrival_ns: Vec::new(),
            line: Vec::new(),
            input_tokens: Vec::new(),
            output_tokens: Vec::new(),
            offsets: vec![0],
            ids: Vec::new(),
            tail_error: None,
            source_hash: 0,
            source_len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.arrival_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.arrival_ns.is_empty()
    }

    /// Total hash ids (page references at the trace's block size).
    pub fn id_count(&self) -> u64 {
        self.ids.len() as u64
    }

    /// Record `i`'s hash ids.
    pub fn ids_of(&self, i: usize) -> &[u64] {
        &self.ids[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Read every record of `reader` (monotonic order is *not* required here: a reader
    /// over the columns applies [`TraceOptions::require_monotonic`] itself). A bad row
    /// ends the columns and is kept as [`TraceColumns::tail_error`].
    pub fn collect(mut reader: RecordReader) -> Self {
        let mut c = TraceColumns::empty(reader.format(), reader.block_size());
        let mut rec = BlockRecord::default();
        loop {
            match reader.read_into(&mut rec) {
                Ok(true) => c.push(&rec),
                Ok(false) => break,
                Err(e) => {
                    c.tail_error = Some(e);
                    break;
                }
            }
        }
        c
    }

    fn push(&mut self, rec: &BlockRecord) {
        self.arrival_ns.push(rec.arrival_ns);
        self.line.push(rec.line as u64);
        self.input_tokens.push(rec.input_tokens);
        self.output_tokens.push(rec.output_tokens);
        self.ids.extend_from_slice(&rec.block_hashes);
        self.offsets.push(self.ids.len() as u64);
    }

    /// Write the binary form. `source_hash`/`source_len` name the file it came from.
    /// The columns are serialised twice: once into the CRC, once into `w` (the CRC is in
    /// the header, before them).
    pub fn write_binary(&self, w: &mut impl Write) -> std::io::Result<()> {
        let mut crc = CrcWriter(crc32fast::Hasher::new());
        crc.write_all(&self.header_bytes(0))?;
        self.write_columns(&mut crc)?;
        let sum = crc.0.finalize();
        w.write_all(&self.header_bytes(sum))?;
        self.write_columns(w)
    }

    fn header_bytes(&self, crc: u32) -> Vec<u8> {
        let n = self.len() as u64;
        let fmt_index = TraceFormat::ALL
            .iter()
            .position(|f| *f == self.format)
            .unwrap_or(0) as u32;
        let mut h = Vec::with_capacity(HEADER_BYTES);
        h.extend_from_slice(BIN_MAGIC);
        h.extend_from_slice(&BIN_VERSION.to_le_bytes());
        h.extend_from_slice(&fmt_index.to_le_bytes());
        h.extend_from_slice(&self.block_size.to_le_bytes());
        h.extend_from_slice(&crc.to_le_bytes());
        for v in [n, self.id_count(), self.source_hash, self.source_len] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h
    }

    fn write_columns(&self, w: &mut impl Write) -> std::io::Result<()> {
        write_u64s(w, &self.arrival_ns)?;
        write_u64s(w, &self.line)?;
        write_u32s(w, &self.input_tokens)?;
        write_u32s(w, &self.output_tokens)?;
        write_u64s(w, &self.offsets)?;
        write_u64s(w, &self.ids)?;
        Ok(())
    }

    /// Parse the binary form from its bytes; `src` names the file in errors.
    pub fn from_binary(src: &str, b: &[u8]) -> Result<Self, InputError> {
        let h = Header::parse(src, b, b.len() as u64)?;
        let at = offsets_start(h.n) as usize;
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if word(at) != 0 || word(at + 8 * h.n as usize) != h.m {
            return Err(InputError::new(src, DAMAGED));
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header_for_crc(b));
        crc.update(&b[HEADER_BYTES..]);
        h.check_crc(src, crc.finalize())?;
        let bad = |m: String| InputError::new(src, m);
        let n = h.n as usize;
        let m = h.m as usize;
        let mut at = HEADER_BYTES;
        let arrival_ns = read_u64s(b, &mut at, n);
        let line = read_u64s(b, &mut at, n);
        let input_tokens = read_u32s(b, &mut at, n);
        let output_tokens = read_u32s(b, &mut at, n);
        let offsets = read_u64s(b, &mut at, n + 1);
        let ids = read_u64s(b, &mut at, m);
        if offsets[0] != 0 || offsets[n] != m as u64 || offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(bad(DAMAGED.into()));
        }
        Ok(TraceColumns {
            format: h.format,
            block_size: h.block_size,
            arrival_ns,
            line,
            input_tokens,
            output_tokens,
            offsets,
            ids,
            tail_error: None,
            source_hash: h.source_hash,
            source_len: h.source_len,
        })
    }

    /// Read a binary trace file column by column through one buffer, so the peak
    /// memory is the columns, not the columns plus the file (a sweep's shared parse of
    /// the ×50 trace: the 200-point sweep peaks at 164 MB, was 265 MB). Same checks and
    /// messages as [`Self::from_binary`].
    pub fn read_binary(path: &Path) -> Result<Self, InputError> {
        use std::io::{BufReader, Read};
        let src = path.display().to_string();
        let io = |e: std::io::Error| InputError::new(&src, format!("cannot read: {e}"));
        let mut f = crate::input::open(path).map_err(io)?;
        let file_len = f.metadata().map_err(io)?.len();
        let mut head = Vec::with_capacity(HEADER_BYTES);
        (&mut f)
            .take(HEADER_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(io)?;
        let h = Header::parse(&src, &head, file_len)?;
        // The first and last offsets before anything is allocated (the sizes add up to
        // the file's length, checked above); then one pass reads the columns through
        // the CRC, checked before any of them is used.
        check_offset_ends(&src, &h, &mut f).map_err(io)??;
        let (n, m) = (h.n as usize, h.m as usize);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header_for_crc(&head));
        let mut r = CrcReader {
            r: BufReader::with_capacity(1 << 20, f),
            crc,
        };
        let arrival_ns = stream_u64s(&mut r, n).map_err(io)?;
        let line = stream_u64s(&mut r, n).map_err(io)?;
        let input_tokens = stream_u32s(&mut r, n).map_err(io)?;
        let output_tokens = stream_u32s(&mut r, n).map_err(io)?;
        let offsets = stream_u64s(&mut r, n + 1).map_err(io)?;
        let ids = stream_u64s(&mut r, m).map_err(io)?;
        h.check_crc(&src, r.crc.finalize())?;
        if offsets[0] != 0 || offsets[n] != m as u64 || offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(InputError::new(&src, DAMAGED));
        }
        Ok(TraceColumns {
            format: h.format,
            block_size: h.block_size,
            arrival_ns,
            line,
            input_tokens,
            output_tokens,
            offsets,
            ids,
            tail_error: None,
            source_hash: h.source_hash,
            source_len: h.source_len,
        })
    }
}

const DAMAGED: &str =
    "binary trace offsets are not increasing from 0 to the id count: the file is damaged";

/// The fixed header, checked against the file's length.
struct Header {
    /// The CRC-32 the header stores.
    crc: u32,
    format: TraceFormat,
    block_size: u32,
    n: u64,
    m: u64,
    source_hash: u64,
    source_len: u64,
}

impl Header {
    /// `b`: at least the header's bytes (or the whole file if shorter); `file_len`: the
    /// file's length.
    fn parse(src: &str, b: &[u8], file_len: u64) -> Result<Self, InputError> {
        let bad = |m: String| InputError::new(src, m);
        if b.len() < 8 || &b[..8] != BIN_MAGIC {
            return Err(bad(
                "not a hicache-sim binary trace (no HCSIMTRC magic)".into()
            ));
        }
        if b.len() < HEADER_BYTES {
            return Err(bad(format!(
                "binary trace header cut short ({} of {HEADER_BYTES} bytes)",
                b.len()
            )));
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let version = u32_at(8);
        if version != BIN_VERSION {
            return Err(bad(format!(
                "binary trace format version {version}, this build reads version {BIN_VERSION}: re-create it with `hicache-sim trace convert SOURCE -o {src}`"
            )));
        }
        let format = *TraceFormat::ALL
            .get(u32_at(12) as usize)
            .ok_or_else(|| bad(format!("unknown source format index {}", u32_at(12))))?;
        let block_size = u32_at(16);
        if block_size == 0 {
            return Err(bad("binary trace with block size 0".into()).field("block_size"));
        }
        let (n, m) = (u64_at(24), u64_at(32));
        let expect = expected_len(n, m);
        if expect != Some(file_len) {
            return Err(bad(format!(
                "binary trace is {file_len} bytes, its header ({n} records, {m} hash ids) says {}: truncated or not written by `trace convert`",
                expect.map_or("more than 2^64".to_string(), |e| e.to_string())
            )));
        }
        Ok(Header {
            crc: u32_at(CRC_AT),
            format,
            block_size,
            n,
            m,
            source_hash: u64_at(40),
            source_len: u64_at(48),
        })
    }
}

impl Header {
    /// The file's bytes against the CRC the header stores.
    fn check_crc(&self, src: &str, computed: u32) -> Result<(), InputError> {
        check_crc(src, self.crc, computed)
    }
}

/// A computed CRC-32 against the one the header stores.
fn check_crc(src: &str, stored: u32, computed: u32) -> Result<(), InputError> {
    if computed == stored {
        return Ok(());
    }
    Err(InputError::new(
        src,
        format!(
            "binary trace content does not match its checksum (CRC-32 {stored:08x} in the header, {computed:08x} computed): the file is damaged; re-create it with `hicache-sim trace convert SOURCE -o {src}`"
        ),
    ))
}

/// The header's bytes as the CRC covers them: the CRC field read as 0.
fn header_for_crc(b: &[u8]) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h.copy_from_slice(&b[..HEADER_BYTES]);
    h[CRC_AT..CRC_AT + 4].fill(0);
    h
}

/// Where the offsets column starts.
fn offsets_start(n: u64) -> u64 {
    HEADER_BYTES as u64 + 16 * n + 2 * pad8(4 * n)
}

/// The first and last offsets (0 and `m` in a sound file), read where they sit before the
/// CRC pass: a crafted or sparse file whose lengths add up is refused without reading
/// gigabytes of it. Leaves `f` just past the header.
fn check_offset_ends(
    src: &str,
    h: &Header,
    f: &mut std::fs::File,
) -> std::io::Result<Result<(), InputError>> {
    use std::io::{Seek, SeekFrom};
    let mut b = [0u8; 8];
    f.seek(SeekFrom::Start(offsets_start(h.n)))?;
    f.read_exact(&mut b)?;
    let first = u64::from_le_bytes(b);
    f.seek(SeekFrom::Start(offsets_start(h.n) + 8 * h.n))?;
    f.read_exact(&mut b)?;
    let last = u64::from_le_bytes(b);
    f.seek(SeekFrom::Start(HEADER_BYTES as u64))?;
    Ok(if first == 0 && last == h.m {
        Ok(())
    } else {
        Err(InputError::new(src, DAMAGED))
    })
}

/// A `Read` that feeds every byte it hands out to a CRC.
struct CrcReader<R> {
    r: R,
    crc: crc32fast::Hasher,
}

impl<R: Read> Read for CrcReader<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let k = self.r.read(b)?;
        self.crc.update(&b[..k]);
        Ok(k)
    }
}

/// A `Write` that only feeds a CRC.
struct CrcWriter(crc32fast::Hasher);

impl Write for CrcWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.update(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One column of a [`BinStream`]: a buffered cursor over its byte span that feeds
/// every byte to the column's own CRC-32 as it enters the buffer (a whole buffer per
/// CRC update, not a value at a time), so the file is checked in the same pass that
/// reads it; the column CRCs are combined in file order at the end.
struct ColReader {
    f: std::fs::File,
    buf: Box<[u8]>,
    /// `buf[pos..filled]` not handed out yet.
    pos: usize,
    filled: usize,
    crc: crc32fast::Hasher,
    /// Bytes of the span (padding included) not in the buffer yet.
    unread: u64,
}

/// Bytes a column cursor buffers.
const COL_BUF: usize = 1 << 16;

impl ColReader {
    fn new(f: std::fs::File, len: u64) -> Self {
        ColReader {
            f,
            buf: vec![0u8; COL_BUF].into_boxed_slice(),
            pos: 0,
            filled: 0,
            crc: crc32fast::Hasher::new(),
            unread: len,
        }
    }

    /// Refills the buffer from the span (at most what is left of it) and hashes it.
    fn fill(&mut self) -> std::io::Result<()> {
        let want = self.unread.min(COL_BUF as u64) as usize;
        if want == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "read past the column",
            ));
        }
        self.f.read_exact(&mut self.buf[..want])?;
        self.crc.update(&self.buf[..want]);
        self.unread -= want as u64;
        self.pos = 0;
        self.filled = want;
        Ok(())
    }

    fn read_exact(&mut self, mut b: &mut [u8]) -> std::io::Result<()> {
        while !b.is_empty() {
            if self.pos == self.filled {
                self.fill()?;
            }
            let k = b.len().min(self.filled - self.pos);
            b[..k].copy_from_slice(&self.buf[self.pos..self.pos + k]);
            self.pos += k;
            b = &mut b[k..];
        }
        Ok(())
    }

    /// The next `N` bytes if they are in the buffer (not consumed).
    #[inline]
    fn peek<const N: usize>(&self) -> Option<[u8; N]> {
        let end = self.pos + N;
        (end <= self.filled).then(|| self.buf[self.pos..end].try_into().expect("N bytes"))
    }

    /// The next `n` bytes if they are all in the buffer (not consumed).
    #[inline]
    fn peek_bytes(&self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        (end <= self.filled).then(|| &self.buf[self.pos..end])
    }

    /// The next `N` bytes: straight from the buffer when they are in it (every value of
    /// a column is, the buffer and the spans being whole multiples of 8), else through
    /// [`Self::read_exact`].
    #[inline]
    fn array<const N: usize>(&mut self) -> std::io::Result<[u8; N]> {
        let end = self.pos + N;
        if end <= self.filled {
            let a = self.buf[self.pos..end].try_into().expect("N bytes");
            self.pos = end;
            return Ok(a);
        }
        let mut a = [0u8; N];
        self.read_exact(&mut a)?;
        Ok(a)
    }

    /// The next `k` little-endian u64s appended to `out`, decoded from the buffer in
    /// place (no copy through a byte vector).
    fn u64s_into(&mut self, mut k: usize, out: &mut Vec<u64>) -> std::io::Result<()> {
        while k > 0 {
            if self.pos == self.filled {
                self.fill()?;
            }
            let n = ((self.filled - self.pos) / 8).min(k);
            if n == 0 {
                // A value across the buffer's end (not in a well-formed file).
                out.push(u64::from_le_bytes(self.array::<8>()?));
                k -= 1;
                continue;
            }
            let end = self.pos + 8 * n;
            out.extend(
                self.buf[self.pos..end]
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
            );
            self.pos = end;
            k -= n;
        }
        Ok(())
    }

    /// Bytes of the span not handed out yet.
    #[cfg(test)]
    fn left(&self) -> u64 {
        self.unread + (self.filled - self.pos) as u64
    }

    /// Reads what is left of the span (the padding, or the rest after an early stop)
    /// through the CRC.
    fn drain(&mut self) -> std::io::Result<()> {
        self.pos = self.filled;
        while self.unread > 0 {
            self.fill()?;
            self.pos = self.filled;
        }
        Ok(())
    }
}

/// A binary trace read record by record: one buffered cursor per column, so a single
/// replay's memory stays flat in trace length (a sweep shares [`TraceColumns`]). The
/// CRC-32 is checked in the same pass: when the last record has been read, or by
/// [`BinStream::finish`] for a reader stopped before it; a mismatch is an error in
/// place of the end of the records, so no result is made from damaged bytes. The
/// file is read once (its bytes read = its length).
pub(crate) struct BinStream {
    src: String,
    pub format: TraceFormat,
    /// The header's block size; the reader sets the one in force (`--block-size`), which
    /// the ids-per-input rule reads.
    pub block_size: u32,
    n: u64,
    m: u64,
    pos: u64,
    prev: u64,
    /// CRC-32 of the header as the CRC covers it, and the one it stores.
    head_crc: crc32fast::Hasher,
    stored_crc: u32,
    /// Whether the CRC was checked and matched.
    verified: bool,
    arrival: ColReader,
    line: ColReader,
    input: ColReader,
    output: ColReader,
    offsets: ColReader,
    ids: ColReader,
}

impl std::fmt::Debug for BinStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BinStream({}, {}/{})", self.src, self.pos, self.n)
    }
}

impl BinStream {
    pub fn open(path: &Path) -> Result<Self, InputError> {
        use std::io::{Seek, SeekFrom};
        let src = path.display().to_string();
        let io = |e: std::io::Error| InputError::new(&src, format!("read error: {e}"));
        let mut f = crate::input::open(path).map_err(io)?;
        let file_len = f.metadata().map_err(io)?.len();
        let mut head = Vec::with_capacity(HEADER_BYTES);
        (&mut f)
            .take(HEADER_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(io)?;
        let h = Header::parse(&src, &head, file_len)?;
        // The first and last offsets before anything else: a crafted file whose lengths
        // add up is refused without streaming it.
        check_offset_ends(&src, &h, &mut f).map_err(io)??;
        let (n, m) = (h.n, h.m);
        let spans = column_spans(n, m);
        let mut at = HEADER_BYTES as u64;
        let mut cursor = |len: u64| -> Result<ColReader, InputError> {
            let mut f = crate::input::open(path).map_err(io)?;
            f.seek(SeekFrom::Start(at)).map_err(io)?;
            at += len;
            Ok(ColReader::new(f, len))
        };
        let mut head_crc = crc32fast::Hasher::new();
        head_crc.update(&header_for_crc(&head));
        let mut s = BinStream {
            format: h.format,
            block_size: h.block_size,
            n,
            m,
            pos: 0,
            prev: 0,
            head_crc,
            stored_crc: h.crc,
            verified: false,
            arrival: cursor(spans[0])?,
            line: cursor(spans[1])?,
            input: cursor(spans[2])?,
            output: cursor(spans[3])?,
            offsets: cursor(spans[4])?,
            ids: cursor(spans[5])?,
            src: src.clone(),
        };
        if s.u64_from(Col::Offsets)? != 0 {
            return Err(InputError::new(&src, DAMAGED));
        }
        Ok(s)
    }

    fn u64_from(&mut self, c: Col) -> Result<u64, InputError> {
        let r = match c {
            Col::Arrival => &mut self.arrival,
            Col::Line => &mut self.line,
            Col::Offsets => &mut self.offsets,
        };
        let b = r
            .array::<8>()
            .map_err(|e| InputError::new(&self.src, format!("read error: {e}")))?;
        Ok(u64::from_le_bytes(b))
    }

    fn u32_from(&mut self, input: bool) -> Result<u32, InputError> {
        let r = if input {
            &mut self.input
        } else {
            &mut self.output
        };
        let b = r
            .array::<4>()
            .map_err(|e| InputError::new(&self.src, format!("read error: {e}")))?;
        Ok(u32::from_le_bytes(b))
    }

    /// Bytes the column cursors have read (the header and the two offset probes of
    /// `open` aside): the whole file's columns once, after the last record.
    #[cfg(test)]
    pub(crate) fn bytes_read(&mut self) -> u64 {
        let spans: u64 = column_spans(self.n, self.m).iter().sum();
        spans - self.columns().iter().map(|c| c.left()).sum::<u64>()
    }

    /// The column cursors in file order.
    fn columns(&mut self) -> [&mut ColReader; 6] {
        [
            &mut self.arrival,
            &mut self.line,
            &mut self.input,
            &mut self.output,
            &mut self.offsets,
            &mut self.ids,
        ]
    }

    /// Reads the rest of every column through its CRC and checks the file's CRC-32
    /// (once: later calls return at once). What a reader stopped before the last
    /// record (a request limit, an error) calls, so a damaged file is named as such.
    pub fn finish(&mut self) -> Result<(), InputError> {
        if self.verified {
            return Ok(());
        }
        let mut crc = self.head_crc.clone();
        let mut drained = Ok(());
        for c in self.columns() {
            drained = drained.and_then(|_| c.drain());
            crc.combine(&c.crc);
        }
        drained.map_err(|e| InputError::new(&self.src, format!("read error: {e}")))?;
        check_crc(&self.src, self.stored_crc, crc.finalize())?;
        self.verified = true;
        Ok(())
    }

    /// The next record into `rec`; `Ok(None)` at the end, once the file's CRC-32
    /// matched (a mismatch is the error there). Returns the record's line.
    pub fn next(&mut self, rec: &mut BlockRecord) -> Result<Option<usize>, InputError> {
        if self.pos == self.n {
            self.finish()?;
            return Ok(None);
        }
        if let Some(line) = self.next_buffered(rec) {
            return Ok(Some(line));
        }
        self.next_slow(rec)
    }

    /// [`Self::next`] when the record is whole in the column buffers and passes every
    /// check: read straight from them, nothing consumed otherwise (`None`: the general
    /// path then reads it, refills, and names any error). Most records take this path.
    #[inline]
    fn next_buffered(&mut self, rec: &mut BlockRecord) -> Option<usize> {
        let end = u64::from_le_bytes(self.offsets.peek()?);
        let arrival = u64::from_le_bytes(self.arrival.peek()?);
        let line = u64::from_le_bytes(self.line.peek()?);
        let input = u32::from_le_bytes(self.input.peek()?);
        let output = u32::from_le_bytes(self.output.peek()?);
        let last = self.pos + 1 == self.n;
        if end < self.prev || end > self.m || (last && end != self.m) {
            return None;
        }
        let k = end - self.prev;
        if super::too_many_ids(k, input, self.block_size).is_some() {
            return None;
        }
        let ids = self.ids.peek_bytes(8 * k as usize)?;
        rec.block_hashes.clear();
        rec.block_hashes.extend(
            ids.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
        );
        self.ids.pos += 8 * k as usize;
        self.offsets.pos += 8;
        self.arrival.pos += 8;
        self.line.pos += 8;
        self.input.pos += 4;
        self.output.pos += 4;
        self.pos += 1;
        self.prev = end;
        rec.arrival_ns = arrival;
        rec.input_tokens = input;
        rec.output_tokens = output;
        Some(line as usize)
    }

    /// [`Self::next`] through the column cursors, refilling and checking as it goes.
    #[cold]
    fn next_slow(&mut self, rec: &mut BlockRecord) -> Result<Option<usize>, InputError> {
        self.pos += 1;
        let end = self.u64_from(Col::Offsets)?;
        if end < self.prev || end > self.m || (self.pos == self.n && end != self.m) {
            return Err(InputError::new(&self.src, DAMAGED));
        }
        rec.arrival_ns = self.u64_from(Col::Arrival)?;
        let line = self.u64_from(Col::Line)? as usize;
        rec.input_tokens = self.u32_from(true)?;
        rec.output_tokens = self.u32_from(false)?;
        // More ids than the input fills is refused before they are allocated (a record
        // declaring 4e8 of them would take 3.2 GB).
        if let Some(m) = super::too_many_ids(end - self.prev, rec.input_tokens, self.block_size) {
            return Err(InputError::new(&self.src, m)
                .at_line(line)
                .field("hash_ids"));
        }
        let k = (end - self.prev) as usize;
        self.prev = end;
        rec.block_hashes.clear();
        self.ids
            .u64s_into(k, &mut rec.block_hashes)
            .map_err(|e| InputError::new(&self.src, format!("read error: {e}")))?;
        Ok(Some(line))
    }
}

#[derive(Clone, Copy)]
enum Col {
    Arrival,
    Line,
    Offsets,
}

/// The byte spans of the columns, in file order (the two u32 columns padded to 8):
/// arrival, line, input_length, output_length, offsets, hash ids. For a header whose
/// lengths [`expected_len`] accepted (no overflow).
fn column_spans(n: u64, m: u64) -> [u64; 6] {
    [8 * n, 8 * n, pad8(4 * n), pad8(4 * n), 8 * (n + 1), 8 * m]
}

fn pad8(bytes: u64) -> u64 {
    bytes.div_ceil(8) * 8
}

fn expected_len(n: u64, m: u64) -> Option<u64> {
    let n8 = n.checked_mul(8)?;
    let n4 = pad8(n.checked_mul(4)?);
    (HEADER_BYTES as u64)
        .checked_add(n8)?
        .checked_add(n8)?
        .checked_add(n4)?
        .checked_add(n4)?
        .checked_add(n8.checked_add(8)?)?
        .checked_add(m.checked_mul(8)?)
}

fn write_u64s(w: &mut impl Write, v: &[u64]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(v.len().min(1 << 16) * 8);
    for chunk in v.chunks(1 << 16) {
        buf.clear();
        for x in chunk {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    Ok(())
}

fn write_u32s(w: &mut impl Write, v: &[u32]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(v.len().min(1 << 16) * 4);
    for chunk in v.chunks(1 << 16) {
        buf.clear();
        for x in chunk {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    if v.len() % 2 == 1 {
        w.write_all(&[0u8; 4])?;
    }
    Ok(())
}

fn read_u64s(b: &[u8], at: &mut usize, n: usize) -> Vec<u64> {
    let s = &b[*at..*at + 8 * n];
    *at += 8 * n;
    s.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

/// `n` little-endian u64s from `r`, read in 32 KiB chunks.
fn stream_u64s(r: &mut impl Read, n: usize) -> std::io::Result<Vec<u64>> {
    let mut v = Vec::with_capacity(n);
    let mut buf = [0u8; 8 * 4096];
    while v.len() < n {
        let k = (n - v.len()).min(4096);
        r.read_exact(&mut buf[..8 * k])?;
        v.extend(
            buf[..8 * k]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
        );
    }
    Ok(v)
}

/// `n` little-endian u32s from `r`, then the padding to a multiple of 8 bytes.
fn stream_u32s(r: &mut impl Read, n: usize) -> std::io::Result<Vec<u32>> {
    let mut v = Vec::with_capacity(n);
    let mut buf = [0u8; 4 * 8192];
    while v.len() < n {
        let k = (n - v.len()).min(8192);
        r.read_exact(&mut buf[..4 * k])?;
        v.extend(
            buf[..4 * k]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))),
        );
    }
    let pad = (pad8(4 * n as u64) - 4 * n as u64) as usize;
    r.read_exact(&mut buf[..pad])?;
    Ok(v)
}

fn read_u32s(b: &[u8], at: &mut usize, n: usize) -> Vec<u32> {
    let s = &b[*at..*at + 4 * n];
    *at += pad8(4 * n as u64) as usize;
    s.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

/// Whether the file starts with [`BIN_MAGIC`] (a missing or short file: no).
pub fn is_binary(path: &Path) -> bool {
    let Ok(f) = crate::input::open(path) else {
        return false;
    };
    let mut head = [0u8; 8];
    let mut r = std::io::BufReader::new(f);
    matches!(r.read_exact(&mut head), Ok(())) && &head == BIN_MAGIC
}

/// Parsed traces shared by every point of a sweep (and every thread), keyed by the
/// file and the options that change the parse. Off until [`enable_sharing`]: a single
/// replay streams its JSONL and keeps memory flat in trace length.
type Key = (PathBuf, Option<TraceFormat>, Option<u32>);
static SHARED: Mutex<Option<Vec<(Key, Arc<TraceColumns>)>>> = Mutex::new(None);

/// Parse each trace once from now on and share it (sweeps).
pub fn enable_sharing() {
    let mut g = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        *g = Some(Vec::new());
    }
}

/// Whether [`enable_sharing`] was called.
pub fn sharing_enabled() -> bool {
    SHARED.lock().unwrap_or_else(|e| e.into_inner()).is_some()
}

/// The parsed form of `path` under `opts` (format and block size; the order check is
/// the reader's), parsed on first use. Concurrent first uses of one trace parse it
/// once: the lock is held while parsing (the other points wait for it anyway).
pub fn shared(path: &Path, opts: &TraceOptions) -> Result<Arc<TraceColumns>, InputError> {
    let key: Key = (path.to_path_buf(), opts.format, opts.block_size);
    let mut g = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let cache = g.get_or_insert_with(Vec::new);
    if let Some((_, c)) = cache.iter().find(|(k, _)| *k == key) {
        return Ok(Arc::clone(c));
    }
    let load_opts = TraceOptions {
        require_monotonic: false,
        ..opts.clone()
    };
    let cols = if is_binary(path) {
        let mut c = TraceColumns::read_binary(path)?;
        if let Some(b) = opts.block_size {
            c.block_size = b;
        }
        c
    } else {
        let reader = RecordReader::open_unshared(path, &load_opts)?;
        TraceColumns::collect(reader)
    };
    let c = Arc::new(cols);
    cache.push((key, Arc::clone(&c)));
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three records (an odd count: the u32 columns end in 4 bytes of padding), read
    /// back by the streaming reader exactly as the bulk decoder reads them; offsets
    /// that go backwards are refused as damaged.
    #[test]
    fn streamed_read_equals_bulk_decode() {
        let mut c = TraceColumns::empty(TraceFormat::Mooncake, 512);
        for (i, ids) in [vec![1u64, 2], vec![], vec![1, 2, 3]]
            .into_iter()
            .enumerate()
        {
            c.arrival_ns.push(i as u64 * 1000);
            c.line.push(i as u64 + 1);
            c.input_tokens.push(512 * ids.len() as u32 + 7);
            c.output_tokens.push(3);
            c.ids.extend(ids);
            c.offsets.push(c.ids.len() as u64);
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.bin");
        let mut bytes = Vec::new();
        c.write_binary(&mut bytes).unwrap();
        std::fs::write(&p, &bytes).unwrap();
        let streamed = TraceColumns::read_binary(&p).unwrap();
        assert_eq!(streamed, TraceColumns::from_binary("t", &bytes).unwrap());
        assert_eq!(streamed.offsets, vec![0, 2, 2, 5]);
        assert_eq!(streamed.input_tokens, vec![1031, 7, 1543]);
        // header 56 + arrival 24 + line 24 + input 16 (12 + pad) + output 16 = 136:
        // offsets[1] (= 2) at 136 + 8; set it to 9 (> offsets[2] = 2).
        bytes[144] = 9;
        std::fs::write(&p, &bytes).unwrap();
        let e = TraceColumns::read_binary(&p).unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");
        // The same edit with its CRC re-stamped (a crafted file): the offsets check.
        let sum = crc32fast::hash(&[&header_for_crc(&bytes)[..], &bytes[HEADER_BYTES..]].concat());
        bytes[CRC_AT..CRC_AT + 4].copy_from_slice(&sum.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        let e = TraceColumns::read_binary(&p).unwrap_err();
        assert!(e.to_string().contains("offsets are not increasing"), "{e}");
        let e = TraceColumns::from_binary("t", &bytes).unwrap_err();
        assert!(e.to_string().contains("offsets are not increasing"), "{e}");
    }

    /// Every single bit flipped anywhere in a small file (header included) is refused by
    /// both readers, naming the file; the intact file reads.
    #[test]
    fn every_single_bit_flip_is_refused() {
        let mut c = TraceColumns::empty(TraceFormat::Mooncake, 16);
        for (i, ids) in [vec![7u64, 8], vec![7, 8, 9]].into_iter().enumerate() {
            c.arrival_ns.push(i as u64 * 5);
            c.line.push(i as u64 + 1);
            c.input_tokens.push(16 * ids.len() as u32);
            c.output_tokens.push(1);
            c.ids.extend(ids);
            c.offsets.push(c.ids.len() as u64);
        }
        let mut bytes = Vec::new();
        c.write_binary(&mut bytes).unwrap();
        assert_eq!(
            TraceColumns::from_binary("t.bin", &bytes).unwrap().ids,
            c.ids
        );
        // Streamed: every column read once, in the pass that checks the CRC.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.bin");
        std::fs::write(&p, &bytes).unwrap();
        let mut s = BinStream::open(&p).unwrap();
        let mut rec = BlockRecord::default();
        while s.next(&mut rec).unwrap().is_some() {}
        assert_eq!(s.bytes_read() + HEADER_BYTES as u64, bytes.len() as u64);
        assert_eq!(
            TraceColumns::read_binary(&p).unwrap(),
            TraceColumns::from_binary("t.bin", &bytes).unwrap()
        );
        for bit in 0..8 * bytes.len() {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let e = TraceColumns::from_binary("t.bin", &b)
                .expect_err(&format!("bit {bit} flipped was read"));
            assert!(e.to_string().starts_with("t.bin: "), "{e}");
            // Read whole and streamed: refused too (the stream at the latest where the
            // end of its records would be), and never past the end.
            std::fs::write(&p, &b).unwrap();
            assert!(
                TraceColumns::read_binary(&p).is_err(),
                "bit {bit}: read whole"
            );
            let streamed = BinStream::open(&p).and_then(|mut s| {
                let mut rec = BlockRecord::default();
                while s.next(&mut rec)?.is_some() {}
                Ok(())
            });
            assert!(streamed.is_err(), "bit {bit}: streamed to its end");
        }
    }
}
