//! Workloads: what requests arrive, when, and which prompt pages they carry.
//! Trace readers and generators live here and never know about tiers.

/// A per-page chained prefix hash: page `i` of a request stands for its tokens
/// `[i*page_size, (i+1)*page_size)` *and everything before them*, so equal hashes mean
/// equal prefixes (as SGLang's `get_hash_str` chains page hashes).
pub type PageHash = u64;

/// One request as the runtime sees it, already at the engine's page size.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    /// Position in the (stably time-sorted) trace.
    pub id: u64,
    /// Arrival time in virtual nanoseconds from the trace start.
    pub arrival_ns: u64,
    /// Prompt length in tokens (may end in a partial page).
    pub input_tokens: u32,
    /// Tokens to generate.
    pub output_tokens: u32,
    /// Chained hashes of the prompt's whole pages; a trailing partial page is not
    /// listed (SGLang page-aligns keys before matching and inserting).
    pub page_hashes: Vec<PageHash>,
}

pub mod generate;
pub mod read;
pub mod reblock;
pub mod stats;
pub mod write;

pub use generate::{GeneratorConfig, generate, generate_records};
pub use read::{
    BlockRecord, RecordReader, TraceFormat, TraceOptions, TraceReader, collect_sorted, open_trace,
    open_trace_with,
};
pub use reblock::Reblocker;
pub use stats::{StatsBuilder, TraceStats, block_stats, stats};
pub use write::{MooncakeWriter, write_mooncake_jsonl};

/// FNV-1a 64 of a file's bytes, streamed: the identity of a trace's content (a sweep's
/// resume and merge refuse a trace that changed under the same name). Only a regular
/// file has one: a device (`/dev/zero` never ends), a FIFO (`<(…)`, consumed by the
/// hash) or a folder is refused before any byte is read.
pub fn content_hash(path: &std::path::Path) -> std::io::Result<u64> {
    use std::io::Read;
    // Before opening: opening a FIFO without a writer would block.
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "not a regular file ({}): a sweep reads its trace more than once and fingerprints its content, so it must be a file",
                if meta.is_dir() {
                    "a folder"
                } else {
                    "a device, pipe or socket"
                }
            ),
        ));
    }
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut h = crate::sweep::journal::FNV1A_INIT;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(h);
        }
        h = crate::sweep::journal::fnv1a_update(h, &buf[..n]);
    }
}
