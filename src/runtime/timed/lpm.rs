//! `--schedule-policy lpm` in the timed replay: SGLang's `SchedulePolicy.calc_priority`
//! for the longest-prefix-match policy (`managers/schedule_policy.py`, the same rule in
//! every release 0.5.14–0.5.23), run before each admission scan that
//! `get_new_batch_prefill` does not skip (a full batch, an empty queue, no request slot
//! left):
//! - **Above 128 waiting requests**, FCFS (`_determine_active_policy`:
//!   `WAITING_QUEUE_PREFIX_MATCH_MAX`): nothing is matched or moved.
//! - **Otherwise every waiting request is matched** against the tree in queue order
//!   (`_compute_prefix_matches` → `match_kv_cache`, which refreshes the matched nodes'
//!   access times as an admission's match does): `num_matched_prefix_tokens` = device
//!   and host hit tokens, at most the prompt (and a retracted request's outputs) less
//!   one token (`_compute_max_prefix_len`).
//! - **In-batch prefix caching**: a request whose device hit is at most
//!   `IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD` (32) tokens is matched against the
//!   waiting requests checked before it that were not put last; a match of at least
//!   `IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD` (32) tokens puts it last
//!   (`temporary_deprioritized`), else its prompt joins them. Taken here on the trace's
//!   pages: a match of `⌈32 / page⌉` whole pages (the pages' keys are chained hashes, so
//!   one key stands for its whole prefix); what two prompts share inside a page is not
//!   in the trace.
//! - **The sort** (`_sort_by_longest_prefix`): stable, by `−num_matched_prefix_tokens`,
//!   the requests put last after all others in their queue order. The queue keeps the
//!   order for the next scan; new requests join its end.

use std::collections::VecDeque;

use rustc_hash::FxHashSet;

use crate::cache::PageKey;

/// `IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD` and `…_DEPRIORITIZE_THRESHOLD`, tokens
/// (their defaults; the environment variables are not read).
const IN_BATCH_TOKENS: u64 = 32;
/// `WAITING_QUEUE_PREFIX_MATCH_MAX`.
pub const MATCH_MAX: usize = 128;

/// What LPM reads of one waiting request's match: its device hit and its device and
/// host hit, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matched {
    pub device_pages: u64,
    pub hit_pages: u64,
}

/// Reusable buffers (no allocation per scan once warm).
#[derive(Debug, Default)]
pub struct Scratch {
    keys: Vec<u64>,
    in_batch: FxHashSet<PageKey>,
}

/// Sorts `queue` as `calc_priority` under LPM does (the module doc), when it holds at
/// most [`MATCH_MAX`] requests. `pages(w)` and `input_tokens(w)` (its prompt and
/// outputs so far, `origin_input_ids + output_ids`) read a request;
/// `matched(w)` matches it against the tree (and refreshes what it matched).
pub fn sort<W>(
    queue: &mut VecDeque<W>,
    page: u64,
    scratch: &mut Scratch,
    pages: impl Fn(&W) -> &[PageKey],
    input_tokens: impl Fn(&W) -> u64,
    mut matched: impl FnMut(&W) -> Matched,
) {
    if queue.len() > MATCH_MAX {
        return;
    }
    let page = page.max(1);
    // Pages whose match reaches the in-batch thresholds.
    let in_batch_pages = IN_BATCH_TOKENS.div_ceil(page) as usize;
    let Scratch { keys, in_batch } = scratch;
    keys.clear();
    in_batch.clear();
    for w in queue.iter() {
        let m = matched(w);
        let cap = input_tokens(w).saturating_sub(1);
        let num_matched = (m.hit_pages * page).min(cap);
        let mut last = false;
        if m.device_pages * page <= IN_BATCH_TOKENS {
            // The waiting requests' own tree: a match of the threshold's pages is one
            // key (chained), a prompt shorter than them matches less.
            match pages(w).get(in_batch_pages - 1) {
                Some(k) if in_batch.contains(k) => last = true,
                Some(k) => {
                    in_batch.insert(*k);
                }
                None => {}
            }
        }
        keys.push(if last {
            u64::MAX
        } else {
            u64::MAX - 1 - num_matched
        });
    }
    // A stable insertion sort of at most 128 (no buffer to allocate).
    let q = queue.make_contiguous();
    for i in 1..q.len() {
        let mut j = i;
        while j > 0 && keys[j - 1] > keys[j] {
            keys.swap(j - 1, j);
            q.swap(j - 1, j);
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(name, pages, input tokens, device pages, hit pages)`.
    type Req = (&'static str, Vec<PageKey>, u64, u64, u64);

    fn sorted(reqs: Vec<Req>, page: u64) -> Vec<&'static str> {
        let mut q: VecDeque<Req> = reqs.into();
        sort(
            &mut q,
            page,
            &mut Scratch::default(),
            |r| &r.1,
            |r| r.2,
            |r| Matched {
                device_pages: r.3,
                hit_pages: r.4,
            },
        );
        q.into_iter().map(|r| r.0).collect()
    }

    #[test]
    fn the_longest_hit_goes_first_and_ties_keep_their_order() {
        let reqs = vec![
            ("a", vec![1, 2], 128, 0, 0),
            ("b", vec![3, 4], 128, 1, 2),
            ("c", vec![5, 6], 128, 1, 1),
            ("d", vec![7, 8], 128, 0, 1),
        ];
        // Hits (device + host): a 0, b 2 pages, c 1, d 1 (its host hit counts).
        assert_eq!(sorted(reqs, 64), ["b", "c", "d", "a"]);
    }

    #[test]
    fn a_request_whose_prefix_another_waiting_one_brings_goes_last() {
        // b and c share a's first page and have no device hit: the first of them in
        // the queue (a) is kept, the others go last in their order.
        let reqs = vec![
            ("a", vec![1, 2], 128, 0, 0),
            ("b", vec![1, 3], 128, 0, 0),
            ("c", vec![1, 4], 128, 0, 0),
            ("d", vec![9, 10], 128, 0, 0),
        ];
        assert_eq!(sorted(reqs, 64), ["a", "d", "b", "c"]);
        // At a page of 16 tokens, 32 are two pages: c shares both of a's and goes last,
        // b shares one only and stays.
        let reqs = vec![
            ("a", vec![1, 2], 32, 0, 0),
            ("c", vec![1, 2, 5], 48, 0, 0),
            ("b", vec![1, 3], 32, 0, 0),
        ];
        assert_eq!(sorted(reqs, 16), ["a", "b", "c"]);
    }

    #[test]
    fn a_device_hit_above_32_tokens_skips_the_in_batch_check() {
        // b shares a's first page but has a device hit of one 64-token page: it is
        // not checked, and its hit puts it first.
        let reqs = vec![("a", vec![1, 2], 128, 0, 0), ("b", vec![1, 3], 128, 1, 1)];
        assert_eq!(sorted(reqs, 64), ["b", "a"]);
    }

    #[test]
    fn above_128_waiting_requests_nothing_moves() {
        let mut reqs: Vec<Req> = (0..129).map(|_| ("x", vec![7], 64, 0, 0)).collect();
        reqs.push(("hit", vec![8], 128, 1, 1));
        let out = sorted(reqs, 64);
        assert_eq!(out.last(), Some(&"hit"));
    }
}
