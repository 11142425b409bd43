//! What a decoding request's KV costs the device pool in the timed replay
//! (`decode_memory: sglang`, the default), as SGLang's scheduler counts it. Same in
//! 0.5.14 and 0.5.23 (the rules below were read in both wheels):
//!
//! - **KV growth** (`schedule_batch.py: ScheduleBatch.new_tokens_required_next_decode`):
//!   each decode step writes one KV slot per request; a request whose committed length
//!   is a multiple of the page size takes a new page first. After its prefill a request
//!   holds its prompt; after `k` output tokens, `prompt + k − 1` slots (the last token's
//!   KV is written by the next step). Its prompt pages are in the tree
//!   (`cache_unfinished_req`); its decode pages are its own, freed at its finish (the
//!   replay inserts no output tokens, as before).
//! - **Admission** ([`prefill_adder_fits`], [`prefill_adder_reserve`]).
//! - **`new_token_ratio`** ([`NewTokenRatio`]).
//! - **Retraction** ([`retract_decode_key`]).
//!
//! Deviations (named): with `decode_timeline: beside_prefill` decode steps are not on
//! the replay's timeline, so a request's progress is its share of its decode time and
//! the scheduler's decode steps (the ratio's decay, the memory check) are counted at
//! the replay's events, one `decode_iteration_ns` apart; 0.5.14 with a speculative
//! draft retracts from the batch's back (no sort), which is not modelled (the length
//! order is used); decode-disaggregation's retraction backup and the priority
//! retraction policy (`--retraction-policy priority`, 0.5.23) are not modelled.

/// `SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION` (`environ.py`, default 4096): the
/// reservation counts at most this many future tokens per request.
pub(crate) const CLIP_MAX_NEW_TOKENS: u64 = 4096;

/// `SGLANG_RETRACT_DECODE_STEPS` (`environ.py`, default 20): a retraction frees room for
/// this many decode steps of every request kept, and estimates the new ratio with it.
pub(crate) const RETRACT_DECODE_STEPS: u64 = 20;

/// `SGLANG_INIT_NEW_TOKEN_RATIO` (0.7), `SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR` (0.14),
/// `SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS` (600) (`environ.py`, 0.5.14-0.5.23).
const INIT_NEW_TOKEN_RATIO: f64 = 0.7;
const MIN_NEW_TOKEN_RATIO_FACTOR: f64 = 0.14;
const NEW_TOKEN_RATIO_DECAY_STEPS: f64 = 600.0;

/// The admission rule, `managers/schedule_policy.py: PrefillAdder` with
/// `mem_cache/prefill_budget.py: PrefillBudget` (0.5.23; the same arithmetic inline in
/// 0.5.14's `PrefillAdder`): `rem_total_tokens = available + evictable −
/// rem_total_token_offset`, where the offset starts at Σ over the running requests of
/// `min(max_new_tokens − len(output_ids), CLIP) × new_token_ratio`
/// (`_get_running_request_total_token_offset`), and a request is admitted
/// (`add_one_req` → `check_prefill`) while `extend + min(max_new_tokens, CLIP) + page
/// < rem_total_tokens` (its matched prefix locked, so not evictable); each admission
/// adds `ceil_page(extend) + page + min(max_new_tokens, CLIP)` to the offset
/// (`_update_prefill_budget` → `reserve`), and the batch stops once
/// `rem_total_tokens <= 0` (`budget_state`).
///
/// This is the check: `extend` tokens to prefill (beyond the device prefix),
/// `max_new_left = max_new_tokens − len(output_ids)`, against `rem_total`.
pub(crate) fn prefill_adder_fits(
    extend: u64,
    max_new_left: u64,
    page: u64,
    rem_total: f64,
) -> bool {
    ((extend + max_new_left.min(CLIP_MAX_NEW_TOKENS) + page) as f64) < rem_total
}

/// What an admitted request adds to `rem_total_token_offset` beyond its extend's pages
/// (which the replay allocates at once): `page + min(max_new_tokens, CLIP)`
/// (`_select_prefill_admission` reserves the whole `max_new_tokens`, clipped).
pub(crate) fn prefill_adder_reserve(page: u64, max_new: u64) -> f64 {
    (page + max_new.min(CLIP_MAX_NEW_TOKENS)) as f64
}

/// A running request's term of `rem_total_token_offset`
/// (`_get_running_request_total_token_offset`): `min(max_new_tokens −
/// len(output_ids), CLIP) × ratio`; the ratio is the release's
/// ([`crate::release::RunningOffset`]: 1 for an `ignore_eos` request from 0.5.22,
/// `new_token_ratio` before).
pub(crate) fn running_request_offset(max_new: u32, out: u32, ratio: f64) -> f64 {
    u64::from(max_new.saturating_sub(out)).min(CLIP_MAX_NEW_TOKENS) as f64 * ratio
}

/// The retraction rule, `managers/scheduler.py: update_running_batch` →
/// `check_decode_mem` fails → `schedule_batch.py: retract_decode` (0.5.14, 0.5.23):
/// requests sorted by `(len(output_ids), −len(origin_input_ids))` descending and popped
/// from the end (fewest outputs first, then the longest prompt) until the step fits,
/// always keeping one; each is released without inserting (`release_kv_cache(…,
/// checkpoint=False)` / `is_insert=False`: its decode slots freed, its prompt's tree
/// nodes unlocked, so evictable), then `evict_from_tree_cache(remaining ×
/// RETRACT_DECODE_STEPS)`; it keeps its `output_ids` and goes to the back of the
/// waiting queue (`_add_request_to_queue(is_retracted=True)`, prefetch re-issued), where
/// it prefills its prompt and its outputs again. The ratio becomes
/// [`NewTokenRatio::after_retract`].
///
/// This is the sort key, ascending: the last is retracted first (`seq`, the admission
/// order, keeps Python's stable sort among equal keys).
pub(crate) fn retract_decode_key(
    out: u32,
    input: u32,
    seq: u64,
) -> (std::cmp::Reverse<u32>, u32, u64) {
    (std::cmp::Reverse(out), input, seq)
}

/// `managers/scheduler_components/new_token_ratio_tracker.py: NewTokenRatioTracker`
/// (0.5.14 `from_server_args`, 0.5.23 `from_config`): the share of a running request's
/// remaining `max_new_tokens` that admission reserves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NewTokenRatio {
    pub init: f64,
    pub min: f64,
    pub decay: f64,
    pub current: f64,
}

impl NewTokenRatio {
    /// `init = min(0.7 × schedule_conservativeness, 1)`, `min = min(init × 0.14, 1)`,
    /// `decay = (init − min) / 600`.
    pub fn new(schedule_conservativeness: f64) -> Self {
        let init = (INIT_NEW_TOKEN_RATIO * schedule_conservativeness).min(1.0);
        let min = (init * MIN_NEW_TOKEN_RATIO_FACTOR).min(1.0);
        let decay = (init - min) / NEW_TOKEN_RATIO_DECAY_STEPS;
        Self {
            init,
            min,
            decay,
            current: init,
        }
    }

    /// `decay_step` (a decode step that needed no retraction) `n` times.
    pub fn decay_steps(&mut self, n: u64) {
        if n > 0 {
            self.current = (self.current - self.decay * n as f64).max(self.min);
        }
    }

    /// `reset` (`Scheduler.on_idle`: no batch to run).
    pub fn reset(&mut self) {
        self.current = self.init;
    }

    /// `estimate_new_token_ratio_after_retract` over the requests kept:
    /// `min(1, (Σ len(output_ids) + 20 × n) / (Σ max_new_tokens + 1))`.
    pub fn after_retract(decoded: u64, max_new: u64, kept: u64) -> f64 {
        ((decoded + RETRACT_DECODE_STEPS * kept) as f64 / (max_new + 1) as f64).min(1.0)
    }
}

/// Tokens rounded up to whole pages.
pub(crate) fn pages_for(tokens: u64, page_size: u64) -> u64 {
    tokens.div_ceil(page_size.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_schedule() {
        let r = NewTokenRatio::new(1.0);
        assert_eq!(r.init, 0.7);
        assert!((r.min - 0.098).abs() < 1e-12);
        assert!((r.decay - 0.602 / 600.0).abs() < 1e-15);
        // Conservativeness 2 caps the start at 1.
        assert_eq!(NewTokenRatio::new(2.0).init, 1.0);
        // DP attention's 0.3 x: 0.21.
        assert!((NewTokenRatio::new(0.3).init - 0.21).abs() < 1e-12);
        let mut r = r;
        r.decay_steps(10_000);
        assert_eq!(r.current, r.min);
        // Two kept requests, 30 tokens decoded, 200 max_new: (30 + 40) / 201.
        assert!((NewTokenRatio::after_retract(30, 200, 2) - 70.0 / 201.0).abs() < 1e-15);
    }
}
