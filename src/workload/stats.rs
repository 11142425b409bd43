//! Trace statistics, in one pass, with memory proportional to the distinct pages.
//!
//! Definitions (state them next to every figure printed):
//! - `pages`: page references, summed over requests (whole pages of each prompt at the
//!   page size; at block level, one per hash id);
//! - `distinct_pages`: distinct page hashes over the whole trace;
//! - `infinite_capacity_hit_ceiling` = `1 − distinct_pages / pages`: the page-counted hit
//!   rate of an infinite cache that starts empty (every first reference misses, every
//!   later one hits; page hashes are chained, so a repeat is always a prefix hit);
//! - `infinite_capacity_token_hit_ceiling`: the same, token-weighted over all prompt
//!   tokens: tokens of repeated references / `input_tokens` (a trailing partial page
//!   never hits).

use rustc_hash::FxHashSet;
use serde::Serialize;

use super::Request;
use super::read::BlockRecord;

/// See the module documentation for the definitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceStats {
    /// Tokens per page (or per block for block-level statistics).
    pub unit_tokens: u32,
    pub requests: u64,
    pub pages: u64,
    pub distinct_pages: u64,
    pub repeated_pages: u64,
    pub infinite_capacity_hit_ceiling: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens inside repeated page references.
    pub repeated_tokens: u64,
    pub infinite_capacity_token_hit_ceiling: f64,
    pub first_arrival_ns: u64,
    pub last_arrival_ns: u64,
    /// `last − first` arrival.
    pub time_span_ns: u64,
    pub max_input_tokens: u32,
    pub mean_input_tokens: f64,
    pub mean_output_tokens: f64,
    /// Requests whose arrival is earlier than an earlier row's.
    pub out_of_order_requests: u64,
}

impl TraceStats {
    /// A short human-readable summary that states each definition next to its figure.
    pub fn to_text(&self) -> String {
        let pct = |x: f64| format!("{:.2} %", 100.0 * x);
        format!(
            "requests                 {}\n\
             time span                {:.3} s (first to last arrival)\n\
             input tokens             {} (mean {:.1}, max {})\n\
             output tokens            {} (mean {:.1})\n\
             page references          {} ({}-token pages, whole pages of each prompt)\n\
             distinct pages           {}\n\
             hit ceiling, pages       {} (1 - distinct/references: infinite cache, cold start)\n\
             hit ceiling, tokens      {} (tokens of repeated pages / all input tokens)\n\
             out-of-order requests    {}\n",
            self.requests,
            self.time_span_ns as f64 / 1e9,
            self.input_tokens,
            self.mean_input_tokens,
            self.max_input_tokens,
            self.output_tokens,
            self.mean_output_tokens,
            self.pages,
            self.unit_tokens,
            self.distinct_pages,
            pct(self.infinite_capacity_hit_ceiling),
            pct(self.infinite_capacity_token_hit_ceiling),
            self.out_of_order_requests,
        )
    }
}

/// Accumulates [`TraceStats`] one request at a time.
#[derive(Debug, Clone)]
pub struct StatsBuilder {
    unit_tokens: u32,
    seen: FxHashSet<u64>,
    requests: u64,
    pages: u64,
    input_tokens: u64,
    output_tokens: u64,
    repeated_pages: u64,
    repeated_tokens: u64,
    first: Option<u64>,
    max_arrival: u64,
    min_arrival: u64,
    max_input: u32,
    out_of_order: u64,
}

impl StatsBuilder {
    pub fn new(unit_tokens: u32) -> Self {
        StatsBuilder {
            unit_tokens,
            seen: FxHashSet::default(),
            requests: 0,
            pages: 0,
            input_tokens: 0,
            output_tokens: 0,
            repeated_pages: 0,
            repeated_tokens: 0,
            first: None,
            max_arrival: 0,
            min_arrival: u64::MAX,
            max_input: 0,
            out_of_order: 0,
        }
    }

    /// One request: its arrival, lengths, and hashes (page `i` covers tokens
    /// `[i·unit, (i+1)·unit)`, clipped to the prompt for a partial tail block).
    pub fn add(&mut self, arrival_ns: u64, input_tokens: u32, output_tokens: u32, hashes: &[u64]) {
        if self.first.is_some() && arrival_ns < self.max_arrival {
            self.out_of_order += 1;
        }
        self.first.get_or_insert(arrival_ns);
        self.max_arrival = self.max_arrival.max(arrival_ns);
        self.min_arrival = self.min_arrival.min(arrival_ns);
        self.requests += 1;
        self.input_tokens += input_tokens as u64;
        self.output_tokens += output_tokens as u64;
        self.max_input = self.max_input.max(input_tokens);
        let unit = self.unit_tokens as u64;
        for (i, &h) in hashes.iter().enumerate() {
            self.pages += 1;
            if !self.seen.insert(h) {
                self.repeated_pages += 1;
                let start = i as u64 * unit;
                self.repeated_tokens += unit.min((input_tokens as u64).saturating_sub(start));
            }
        }
    }

    pub fn finish(&self) -> TraceStats {
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let distinct = self.seen.len() as u64;
        let (first, last) = if self.requests == 0 {
            (0, 0)
        } else {
            (self.min_arrival, self.max_arrival)
        };
        TraceStats {
            unit_tokens: self.unit_tokens,
            requests: self.requests,
            pages: self.pages,
            distinct_pages: distinct,
            repeated_pages: self.repeated_pages,
            infinite_capacity_hit_ceiling: ratio(self.repeated_pages, self.pages),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            repeated_tokens: self.repeated_tokens,
            infinite_capacity_token_hit_ceiling: ratio(self.repeated_tokens, self.input_tokens),
            first_arrival_ns: first,
            last_arrival_ns: last,
            time_span_ns: last - first,
            max_input_tokens: self.max_input,
            mean_input_tokens: ratio(self.input_tokens, self.requests),
            mean_output_tokens: ratio(self.output_tokens, self.requests),
            out_of_order_requests: self.out_of_order,
        }
    }
}

/// Page-level statistics of requests at `page_size` tokens per page.
pub fn stats<I, E>(requests: I, page_size: u32) -> Result<TraceStats, E>
where
    I: IntoIterator<Item = Result<Request, E>>,
{
    let mut b = StatsBuilder::new(page_size);
    for r in requests {
        let r = r?;
        b.add(
            r.arrival_ns,
            r.input_tokens,
            r.output_tokens,
            &r.page_hashes,
        );
    }
    Ok(b.finish())
}

/// Block-level statistics of raw trace rows: one reference per hash id, as the
/// trace publishers count them (e.g. Mooncake synthetic: 121,877 references).
pub fn block_stats<I, E>(records: I, block_size: u32) -> Result<TraceStats, E>
where
    I: IntoIterator<Item = Result<BlockRecord, E>>,
{
    let mut b = StatsBuilder::new(block_size);
    for r in records {
        let r = r?;
        b.add(
            r.arrival_ns,
            r.input_tokens,
            r.output_tokens,
            &r.block_hashes,
        );
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_case() {
        let mut b = StatsBuilder::new(4);
        b.add(10, 8, 1, &[1, 2]); // 2 new
        b.add(5, 10, 2, &[1, 2, 3]); // 2 repeated (8 tokens), 1 new; out of order
        let s = b.finish();
        assert_eq!(s.requests, 2);
        assert_eq!(s.pages, 5);
        assert_eq!(s.distinct_pages, 3);
        assert_eq!(s.repeated_pages, 2);
        assert_eq!(s.infinite_capacity_hit_ceiling, 0.4);
        assert_eq!(s.repeated_tokens, 8);
        assert_eq!(s.infinite_capacity_token_hit_ceiling, 8.0 / 18.0);
        assert_eq!(s.time_span_ns, 5);
        assert_eq!(s.out_of_order_requests, 1);
        let t = s.to_text();
        assert!(t.contains("hit ceiling, pages       40.00 %"), "{t}");
        assert!(t.contains("hit ceiling, tokens      44.44 %"), "{t}");
    }

    #[test]
    fn partial_tail_counts_its_tokens_only() {
        let mut b = StatsBuilder::new(512);
        b.add(0, 600, 0, &[7, 8]);
        b.add(1, 600, 0, &[7, 8]);
        let s = b.finish();
        // second request: block 7 = 512 tokens, block 8 = 88 tokens
        assert_eq!(s.repeated_tokens, 600);
        assert_eq!(s.infinite_capacity_token_hit_ceiling, 0.5);
    }
}
