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

/// Page-hash vectors handed back by a consumer that is done with a request
/// ([`recycle_pages`]) and taken again by the trace reader ([`reuse_pages`]): the
/// streaming untimed replay allocates no vector per request. Per thread (a reader and its
/// replay run on one), at most a few kept.
mod spare {
    use std::cell::RefCell;

    thread_local! {
        static SPARE: RefCell<Vec<Vec<super::PageHash>>> = const { RefCell::new(Vec::new()) };
    }
    const KEEP: usize = 8;

    pub fn reuse_pages() -> Vec<super::PageHash> {
        SPARE.with(|s| s.borrow_mut().pop()).unwrap_or_default()
    }

    pub fn recycle_pages(mut v: Vec<super::PageHash>) {
        v.clear();
        SPARE.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < KEEP {
                s.push(v);
            }
        });
    }
}
pub use spare::{recycle_pages, reuse_pages};

pub mod generate;
pub mod read;
pub mod reblock;
pub mod slowdown;
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
