//! HiCache's per-step synchronisation: the blocking all-reduces SGLang's scheduler runs
//! every iteration while HiCache is on, to agree the cache controller's ack counts (and
//! storage queue sizes) across the ranks of one batch.
//!
//! Every release 0.5.14–0.5.23 runs `tree_cache.check_hicache_events()` once per
//! scheduler iteration, with something in flight or not: from
//! `managers/scheduler.py: _get_new_batch_prefill_raw` (0.5.14–0.5.19, reached from
//! `get_next_batch_to_run` every iteration) and from `_process_hicache_events` at the top
//! of `get_next_batch_to_run` (0.5.20–0.5.23). Each count is a `torch.distributed.
//! all_reduce(…, MIN)` of a CPU tensor through `_all_reduce_attn_groups`
//! (`mem_cache/hiradix_cache.py`, `mem_cache/unified_radix_cache.py`): on the attention
//! CP and attention TP groups whose world size is above 1, else on the TP cache group
//! when its world is above 1 (`tp_cache_group = get_dp_tp_group().cpu_group`,
//! `kv_cache_builder.py`: a gloo group; the attention-TP group under DP attention, the
//! whole TP group otherwise). At TP 1 without PP no collective runs.
//!
//! How many all-reduces an iteration makes (PP 1):
//! - 0.5.14–0.5.16: `check_hicache_events` = `writing_check` + `loading_check` (one
//!   each), + `drain_storage_control_queues` with storage: 2, or 3 with L3. A decode
//!   iteration adds `update_running_batch` → `flush_write_through_acks` →
//!   `writing_check` (one more; not charged here, see below).
//! - 0.5.17–0.5.23: at PP 1 the counts go in one tensor (`_sync_hicache_ready_counts`,
//!   sglang PR <https://github.com/sgl-project/sglang/pull/30511>): 1, storage or not;
//!   `flush_write_through_acks` is gone from `update_running_batch`.
//! - PP > 1: 0.5.17–0.5.20 keep the separate checks (2, 3 with L3), 0.5.21+ merge them
//!   (sglang PR <https://github.com/sgl-project/sglang/pull/37562>): 1. The PP forwarding
//!   (`_pp_sync`, point-to-point) is not counted.
//!
//! What one costs: sglang PR <https://github.com/sgl-project/sglang/pull/39903> measured
//! a 4-rank gloo all-reduce at 0.5 ms on a 4× GB300 (Grace) node and 3.2 ms on a 4× B200
//! node with two Xeon 6960P sockets (a profile there: 2.8 ms a step, 1 121 ms over 400
//! steps, in `_all_reduce_attn_groups → all_reduce → wait`), on the scheduler's critical
//! path before the next forward; HiCache (L2) ran 2 % and 21 % below L1 alone there.
//! The default is the 0.5 ms: the single-socket host's figure, and the one closer to the
//! "about 150+ µs" per all-reduce that sglang PR
//! <https://github.com/sgl-project/sglang/pull/30511> reports on a single node; a
//! two-socket host is a `compute.hicache_step_sync` of its own.

use crate::cache::TreeKind;
use crate::domain::PrefetchPolicy;
use crate::units::{Duration, NS_PER_US};
use crate::wheel::Release;

/// One gloo all-reduce of the HiCache counts, ns: sglang PR 39903's 4× GB300 figure.
pub const ALL_REDUCE_NS: u64 = 500 * NS_PER_US;

/// The blocking all-reduces `check_hicache_events` makes per scheduler iteration in
/// `release`, with an L3 backend (`storage`) and with pipeline parallelism (`pp`).
pub fn all_reduces_per_iteration(release: Release, storage: bool, pp: bool) -> u32 {
    let merged = if pp {
        release >= Release::V0_5_21
    } else {
        release >= Release::V0_5_17
    };
    if merged { 1 } else { 2 + u32::from(storage) }
}

/// The default `compute.hicache_step_sync` of a server: [`ALL_REDUCE_NS`] ×
/// [`all_reduces_per_iteration`] when HiCache is on (`host_tier`) and the group the
/// counts are reduced on has more than one rank (`group_world`: the attention-TP size,
/// `tp / dp` under DP attention, else `tp`), else 0.
pub fn default_step_sync(
    release: Release,
    host_tier: bool,
    storage: bool,
    pp: bool,
    group_world: u32,
) -> Duration {
    if !host_tier || group_world <= 1 {
        return Duration(0);
    }
    Duration(ALL_REDUCE_NS * u64::from(all_reduces_per_iteration(release, storage, pp)))
}

/// The blocking all-reduce one admission poll of an L3 prefetch makes
/// (`managers/scheduler.py: _get_new_batch_prefill_raw` calls the tree's
/// `check_prefetch_progress` for each waiting request it reaches, every iteration, until
/// the request's prefetch terminates). `finished`: the prefetch's pages have all arrived
/// by the poll.
///
/// - `HiRadixCache` (the tree of 0.5.14–0.5.18, [`TreeKind::HiRadix`] and
///   [`TreeKind::V1`]; `mem_cache/hiradix_cache.py: can_terminate_prefetch`): under
///   `wait_complete` and `timeout` every poll reduces `[not can_terminate, terminated]`
///   with MAX over the attention groups, finished or not; `best_effort` returns before it.
/// - `UnifiedRadixCache` (0.5.19–0.5.23, `mem_cache/unified_radix_cache.py:
///   _can_terminate_prefetch`): only `timeout` votes, with MAX, and only while the
///   operation is not terminated; `wait_complete` waits for the ack drain that
///   `check_hicache_events` already reduces ([`all_reduces_per_iteration`]).
///
/// A prefetch whose existence query finds nothing is not polled here: the replay's query
/// is instant, so it never enters the queue as a prefetch (SGLang polls it until its
/// query thread marks it terminated, a few polls).
pub fn prefetch_poll_all_reduces(tree: TreeKind, policy: PrefetchPolicy, finished: bool) -> u32 {
    match tree {
        TreeKind::HiRadix | TreeKind::V1 => u32::from(policy != PrefetchPolicy::BestEffort),
        TreeKind::Unified0523 => u32::from(policy == PrefetchPolicy::Timeout && !finished),
    }
}

/// The blocking all-reduce a prefetch's termination makes once it may stop: `HiRadixCache`
/// agrees the tokens every rank completed with a MIN (`hiradix_cache.py:
/// check_prefetch_progress` → `_sync_and_clamp_prefetch_result`, 0.5.14–0.5.18, every
/// policy); `UnifiedRadixCache` does not (`_handle_prefetch_result`: "All PP/TP ranks
/// will get the same `min_completed_tokens` … No need to sync cross-rank here").
pub fn prefetch_finalise_all_reduces(tree: TreeKind) -> u32 {
    match tree {
        TreeKind::HiRadix | TreeKind::V1 => 1,
        TreeKind::Unified0523 => 0,
    }
}

/// The default `compute.prefetch_poll_sync`: one [`ALL_REDUCE_NS`] per admission-poll
/// all-reduce when the server has an L3 tier under HiCache and the attention-TP group
/// has more than one rank (`_all_reduce_attn_groups` skips a group of one), else 0.
pub fn default_prefetch_poll_sync(host_tier: bool, storage: bool, group_world: u32) -> Duration {
    if host_tier && storage && group_world > 1 {
        Duration(ALL_REDUCE_NS)
    } else {
        Duration(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_release() {
        assert_eq!(all_reduces_per_iteration(Release::V0_5_14, false, false), 2);
        assert_eq!(all_reduces_per_iteration(Release::V0_5_16, true, false), 3);
        assert_eq!(all_reduces_per_iteration(Release::V0_5_17, true, false), 1);
        assert_eq!(all_reduces_per_iteration(Release::V0_5_20, true, true), 3);
        assert_eq!(all_reduces_per_iteration(Release::V0_5_21, true, true), 1);
        assert_eq!(all_reduces_per_iteration(Release::V0_5_23, false, false), 1);
    }

    #[test]
    fn prefetch_polls_per_tree_and_policy() {
        use PrefetchPolicy::*;
        let hi = TreeKind::HiRadix;
        let un = TreeKind::Unified0523;
        // HiRadixCache: every poll under wait_complete / timeout, finished or not.
        assert_eq!(prefetch_poll_all_reduces(hi, WaitComplete, false), 1);
        assert_eq!(prefetch_poll_all_reduces(hi, Timeout, true), 1);
        assert_eq!(
            prefetch_poll_all_reduces(TreeKind::V1, WaitComplete, true),
            1
        );
        assert_eq!(prefetch_poll_all_reduces(hi, BestEffort, false), 0);
        assert_eq!(prefetch_finalise_all_reduces(hi), 1);
        // UnifiedRadixCache: timeout's vote while unfinished only.
        assert_eq!(prefetch_poll_all_reduces(un, Timeout, false), 1);
        assert_eq!(prefetch_poll_all_reduces(un, Timeout, true), 0);
        assert_eq!(prefetch_poll_all_reduces(un, WaitComplete, false), 0);
        assert_eq!(prefetch_poll_all_reduces(un, BestEffort, false), 0);
        assert_eq!(prefetch_finalise_all_reduces(un), 0);
        assert_eq!(default_prefetch_poll_sync(true, true, 2), Duration(500_000));
        assert_eq!(default_prefetch_poll_sync(true, true, 1), Duration(0));
        assert_eq!(default_prefetch_poll_sync(true, false, 8), Duration(0));
    }

    #[test]
    fn nothing_without_a_host_tier_or_at_one_rank() {
        let r = Release::V0_5_23;
        assert_eq!(default_step_sync(r, false, false, false, 8), Duration(0));
        assert_eq!(default_step_sync(r, true, false, false, 1), Duration(0));
        assert_eq!(
            default_step_sync(r, true, false, false, 2),
            Duration(500_000)
        );
        assert_eq!(
            default_step_sync(Release::V0_5_14, true, true, false, 4),
            Duration(1_500_000)
        );
    }
}
