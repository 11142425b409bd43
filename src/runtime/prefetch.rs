//! L3 prefetch admission, one rule for both replays: whether a request's storage hit
//! is prefetched and how many pages are allocated for it. The timed replay then
//! transfers the pages over the storage link and terminates the prefetch by the
//! release's `prefetch_policy`; the untimed replay completes it at once.

use crate::cache::{HostMemoryMode, MatchResult, NodeId, PageKey, ROOT, TreeRules};

use super::session::Session;

/// The outcome of [`Session::admit_prefetch`].
pub(crate) enum Admission {
    /// Nothing looked up: an anchor without a host copy, or a span under the threshold.
    Declined,
    /// Not looked up: the prefetch budget is spent (`prefetch_rate_limited`).
    RateLimited,
    /// Looked up, nothing kept: a hit under the threshold (revoked), or no host room.
    Revoked,
    Admitted(Admitted),
}

/// An admitted prefetch: `pages` pages of the span starting at `span_start` allocated.
pub(crate) struct Admitted {
    /// The deepest matched node the fetched pages hang under (`last_host_node`). In
    /// cache mode it stays host-pinned (`protect_host`) until the caller inserts the
    /// pages and calls `release_host`.
    pub anchor: NodeId,
    pub span_start: usize,
    /// The requested span in tokens (`stats_requested_tokens`).
    pub span_tokens: u64,
    /// Pages allocated: host slots (cache mode) or staging slots (buffer_only).
    pub pages: u64,
    /// Tokens the prefetch holds of the budget while in flight
    /// (`prefetch_tokens_occupied`): the requested span in cache mode
    /// (`prefetch_from_storage` charges it at issue), the staged pages in buffer_only
    /// (charged only once the hit is known).
    pub charge_tokens: u64,
}

impl<R: TreeRules> Session<R> {
    /// Prefetch admission for the span of `key` after the match `m`
    /// (`managers/scheduler.py: _prefetch_kvcache` → `mem_cache/hiradix_cache.py:
    /// HiRadixCache.prefetch_from_storage` (0.5.23: `unified_radix_cache.py:
    /// prefetch_from_storage`), the controller's hit query
    /// (`managers/cache_controller.py: HiCacheController.prefetch_io_aux_func` /
    /// `_storage_hit_query`), then the host allocation for the hit
    /// (`allocate_storage_hit`); all releases with storage, 0.5.14–0.5.23):
    /// - the anchor (`m.last_node`) must be the root or backed up, except in
    ///   buffer_only mode, where the tree holds no host values;
    /// - the span must reach `max(prefetch_threshold, page_size)` tokens;
    /// - the budget must not be spent (`prefetch_rate_limited`: occupied ≥ the
    ///   release's `prefetch_capacity_limit`, [`crate::release::PrefetchCapRule`],
    ///   0.9 × host in buffer_only);
    /// - the leading pages present in storage are the hit; a hit under the threshold
    ///   is revoked;
    /// - cache mode: host pages for the hit (`evict_host(hit)` once when short, else
    ///   the page-aligned free part if it reaches the threshold), the anchor pinned
    ///   first so that eviction keeps it; buffer_only: staging slots up to the
    ///   budget's room ([`Session::staging_room_pages`]), revoked under the threshold.
    ///
    /// Counts `prefetches_issued`, `prefetches_rate_limited` and `prefetch_bytes`; the
    /// caller charges `charge_tokens` when it holds the prefetch across time.
    pub fn admit_prefetch(&mut self, key: &[PageKey], m: &MatchResult) -> Admission {
        let anchor = m.last_node;
        let buffer = self.cfg.policy.host_memory_mode == HostMemoryMode::BufferOnly;
        if !(buffer || anchor == ROOT || self.tree.node(anchor).backed_up) {
            return Admission::Declined;
        }
        let span_start = m.matched_pages() as usize;
        let span = &key[span_start..];
        let thr = self.cfg.effective_prefetch_threshold();
        let span_tokens = span.len() as u64 * self.ps;
        if span_tokens < thr {
            return Admission::Declined;
        }
        if self.prefetch_occupied >= self.prefetch_limit {
            self.m.prefetches_rate_limited += 1;
            return Admission::RateLimited;
        }
        self.m.prefetches_issued += 1;
        let hit = self.storage.as_ref().map_or(0, |st| st.get().hit_run(span));
        if hit * self.ps < thr {
            return Admission::Revoked;
        }
        let (pages, charge_tokens) = if buffer {
            let got = hit.min(self.staging_room_pages());
            if got * self.ps < thr {
                return Admission::Revoked;
            }
            (got, got * self.ps)
        } else {
            self.tree.protect_host(anchor);
            let got = self.tree.reserve_host(hit, thr.div_ceil(self.ps));
            if got == 0 {
                self.tree.release_host(anchor);
                return Admission::Revoked;
            }
            (got, span_tokens)
        };
        self.m.prefetch_bytes += self.bytes(pages);
        Admission::Admitted(Admitted {
            anchor,
            span_start,
            span_tokens,
            pages,
            charge_tokens,
        })
    }
}
