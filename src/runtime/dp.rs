//! Data-parallel ranks in the replay: `--dp-size N` runs N schedulers, each with its
//! own radix tree, host pool and cache controller (the scenario models it with
//! `--enable-dp-attention`; separate engine replicas are refused there), and the
//! `DataParallelController` sends each request to one of them. Its default method is
//! `round_robin` (`arg_groups/serving_hook.py: handle_load_balance_method`: `auto` is
//! round-robin outside PD prefill, 0.5.23; `round_robin` by default in every modelled
//! release): request i of the arrival order goes to rank `i mod N`
//! (`managers/data_parallel_controller.py: round_robin_scheduler`, all ranks active).
//! The ranks share nothing the untimed replay models, so each is replayed on its own
//! share of the trace (the trace read once per rank) and the figures are summed
//! ([`merge`]).
//!
//! Behind the router (`pipeline::fleet`) an engine's ranks get its own arrivals
//! round-robin, or with `--dp-aware` the router picks the rank.
//!
//! The timed replay cannot run the ranks as independent engines: under DP attention
//! every forward runs on all ranks together (the MLP / MoE layers are shared,
//! `prepare_mlp_sync_batch` pads idle ranks), so it runs them in lockstep on one clock
//! (`runtime::timed::lockstep`).
//!
//! The load-reading methods (`total_requests`, `total_tokens`: [`DpBudget`]) need the
//! schedulers' loads over time: the timed replay runs them; untimed they are refused.
//! Not modelled: `follow_bootstrap_room` (PD), refused, never replayed as round-robin.

use serde::{Deserialize, Serialize};

use super::metrics::ReplayMetrics;
use crate::units::Nanos;

/// `--load-balance-method` of the `DataParallelController`
/// (`managers/data_parallel_controller.py`, 0.5.14–0.5.23; `auto` is round-robin
/// outside PD prefill).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DpBalance {
    /// `round_robin_scheduler`: request i to rank i mod N.
    #[default]
    RoundRobin,
    /// `total_requests_scheduler`: the rank with the fewest running + waiting requests
    /// in the budget (first on a tie).
    TotalRequests,
    /// `total_tokens_scheduler`: the rank with the fewest KV tokens in use plus queued
    /// prompt tokens, then the fewest requests.
    TotalTokens,
    /// `follow_bootstrap_room` (a PD prefill server's `auto`): the rank
    /// `bootstrap_room % N` of the room the router gives each PD request. Only a PD
    /// replay (`runtime::timed::pd`) has rooms; elsewhere it is refused.
    FollowBootstrapRoom,
}

impl DpBalance {
    /// SGLang's name for it.
    pub fn id(self) -> &'static str {
        match self {
            DpBalance::RoundRobin => "round_robin",
            DpBalance::TotalRequests => "total_requests",
            DpBalance::TotalTokens => "total_tokens",
            DpBalance::FollowBootstrapRoom => "follow_bootstrap_room",
        }
    }
}

/// How often the controller re-reads the ranks' snapshots: `refresh_load_budget`
/// throttles it to once per 20 ms.
pub const BUDGET_REFRESH_NS: Nanos = 20_000_000;

/// One rank's published load (`LoadSnapshot`: `num_running_reqs + num_waiting_reqs`,
/// `num_total_tokens`), with the time it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSnapshot {
    pub at: Nanos,
    pub requests: u64,
    pub tokens: u64,
}

/// `data_parallel_controller.py: DPBudget` with `refresh_load_budget`: the ranks'
/// loads as of the last refresh, plus one request (and its prompt tokens) for each
/// request dispatched since: the burst heuristic that keeps a burst from landing on
/// one rank between refreshes.
#[derive(Debug, Clone)]
pub struct DpBudget {
    requests: Vec<u64>,
    tokens: Vec<u64>,
    last_seen: Vec<Option<Nanos>>,
    last_refresh: Option<Nanos>,
}

impl DpBudget {
    pub fn new(ranks: u32) -> Self {
        let n = ranks.max(1) as usize;
        Self {
            requests: vec![0; n],
            tokens: vec![0; n],
            last_seen: vec![None; n],
            last_refresh: None,
        }
    }

    /// `refresh_load_budget` at `now`: at most once per 20 ms, the snapshots replace the
    /// budget (`update_budget`: a snapshot already read, same timestamp, is skipped).
    pub fn refresh(&mut self, now: Nanos, snapshots: &[Option<LoadSnapshot>]) {
        if self
            .last_refresh
            .is_some_and(|t| now.saturating_sub(t) < BUDGET_REFRESH_NS)
        {
            return;
        }
        self.last_refresh = Some(now);
        for (r, snap) in snapshots.iter().enumerate() {
            let Some(snap) = snap else { continue };
            if self.last_seen[r] == Some(snap.at) {
                continue;
            }
            self.last_seen[r] = Some(snap.at);
            self.requests[r] = snap.requests;
            self.tokens[r] = snap.tokens;
        }
    }

    /// `DPBudget.dispatch`: the rank for a request of `tokens` prompt tokens, whose
    /// budget then counts it.
    pub fn dispatch(&mut self, method: DpBalance, tokens: u64) -> u32 {
        let n = self.requests.len();
        let r = match method {
            // `index(min(...))`: the first of the least loaded.
            DpBalance::TotalRequests | DpBalance::RoundRobin | DpBalance::FollowBootstrapRoom => {
                (0..n).min_by_key(|&i| self.requests[i]).unwrap_or(0)
            }
            DpBalance::TotalTokens => (0..n)
                .min_by_key(|&i| (self.tokens[i], self.requests[i]))
                .unwrap_or(0),
        };
        self.requests[r] += 1;
        if method == DpBalance::TotalTokens {
            self.tokens[r] += tokens;
        }
        r as u32
    }
}

/// The most ranks a replay takes (SGLang's DP sizes are far below).
pub const MAX_DP_RANKS: u32 = 4096;

/// The rank `round_robin_scheduler` sends request `index` (arrival order) to.
pub fn round_robin_rank(index: u64, ranks: u32) -> u32 {
    (index % u64::from(ranks.max(1))) as u32
}

/// How many of the first `warmup` requests (arrival order) rank `rank` of `ranks`
/// receives: its own stream's warm-up, so that the measured requests are the same as
/// one tree's.
pub fn warmup_share(warmup: u64, rank: u32, ranks: u32) -> u64 {
    let (r, n) = (u64::from(rank), u64::from(ranks.max(1)));
    if warmup <= r {
        0
    } else {
        (warmup - r).div_ceil(n)
    }
}

/// The deployment's figures from its ranks': counters and final pool contents summed
/// (each rank has its own pools), the peaks summed (an upper bound of the pages held at
/// once: the untimed ranks have no common clock), rates recomputed from the sums. The
/// ranks are kept, in rank order, in `ranks`.
pub fn merge(ranks: Vec<ReplayMetrics>) -> ReplayMetrics {
    let mut t = ReplayMetrics::default();
    let (mut dev_pages, mut host_pages, mut storage_pages) = (0u64, 0u64, 0u64);
    for m in &ranks {
        // Page hits of each tier, from the rank's page rate (exact: pages < 2^53).
        let pages = |rate: f64| (rate * m.input_pages as f64).round() as u64;
        dev_pages += pages(m.device_page_hit_rate);
        host_pages += pages(m.host_page_hit_rate);
        storage_pages += pages(m.storage_page_hit_rate);
        t.requests += m.requests;
        t.measured_requests += m.measured_requests;
        t.input_tokens += m.input_tokens;
        t.input_pages += m.input_pages;
        t.device_hit_tokens += m.device_hit_tokens;
        t.host_hit_tokens += m.host_hit_tokens;
        t.storage_hit_tokens += m.storage_hit_tokens;
        t.miss_tokens += m.miss_tokens;
        t.load_back_skipped_tokens += m.load_back_skipped_tokens;
        t.load_back_bytes += m.load_back_bytes;
        t.backup_bytes += m.backup_bytes;
        t.prefetch_bytes += m.prefetch_bytes;
        t.l3_write_bytes += m.l3_write_bytes;
        t.prefetches_issued += m.prefetches_issued;
        t.prefetches_rate_limited += m.prefetches_rate_limited;
        t.prefetch_retries += m.prefetch_retries;
        t.prefetch_poll_all_reduces += m.prefetch_poll_all_reduces;
        t.device_evicted_pages += m.device_evicted_pages;
        t.host_evicted_pages += m.host_evicted_pages;
        t.storage_evicted_pages += m.storage_evicted_pages;
        t.failed_backups += m.failed_backups;
        t.tokens_dropped_without_backup += m.tokens_dropped_without_backup;
        t.insert_truncated_requests += m.insert_truncated_requests;
        t.retracted_requests += m.retracted_requests;
        t.retraction_steps += m.retraction_steps;
        t.decode_oom_aborts += m.decode_oom_aborts;
        t.final_device_pages += m.final_device_pages;
        t.final_host_device_resident_pages += m.final_host_device_resident_pages;
        t.final_host_only_pages += m.final_host_only_pages;
        t.peak_host_device_resident_pages += m.peak_host_device_resident_pages;
        t.peak_host_only_pages += m.peak_host_only_pages;
        t.peak_host_pages += m.peak_host_pages;
        t.final_storage_pages += m.final_storage_pages;
    }
    t.finish_rates(dev_pages, host_pages, storage_pages);
    t.ranks = ranks;
    t
}

/// Load imbalance of the ranks: the largest rank's prompt tokens over the mean (1.0:
/// even). `None` without ranks or tokens.
pub fn imbalance(ranks: &[ReplayMetrics]) -> Option<f64> {
    let total: u64 = ranks.iter().map(|m| m.input_tokens).sum();
    let max = ranks.iter().map(|m| m.input_tokens).max()?;
    (total > 0).then(|| max as f64 * ranks.len() as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_and_the_warmup_each_rank_gets() {
        let ranks: Vec<u32> = (0..7).map(|i| round_robin_rank(i, 3)).collect();
        assert_eq!(ranks, [0, 1, 2, 0, 1, 2, 0]);
        // the first 7 requests: ranks 0,1,2,0,1,2,0 -> 3, 2, 2
        assert_eq!(
            (0..3).map(|r| warmup_share(7, r, 3)).collect::<Vec<_>>(),
            [3, 2, 2]
        );
        assert_eq!(warmup_share(1, 2, 3), 0);
        assert_eq!(warmup_share(0, 0, 3), 0);
        for w in 0..20u64 {
            let sum: u64 = (0..4).map(|r| warmup_share(w, r, 4)).sum();
            assert_eq!(sum, w);
        }
    }

    /// The controller's budget: dispatches between refreshes count on it (a burst
    /// spreads), a refresh within 20 ms of the last is skipped, a stale snapshot is not
    /// read twice, ties go to the first rank.
    #[test]
    fn the_budget_spreads_a_burst_and_refreshes_every_20_ms() {
        let mut b = DpBudget::new(3);
        let snap = |at, requests, tokens| {
            Some(LoadSnapshot {
                at,
                requests,
                tokens,
            })
        };
        b.refresh(0, &[None, None, None]);
        let burst: Vec<u32> = (0..4)
            .map(|_| b.dispatch(DpBalance::TotalRequests, 100))
            .collect();
        assert_eq!(burst, [0, 1, 2, 0]);
        // 10 ms later: no refresh; rank 1 and 2 have 1 request each, rank 0 two.
        b.refresh(10_000_000, &[snap(5, 0, 0), snap(5, 9, 0), snap(5, 9, 0)]);
        assert_eq!(b.dispatch(DpBalance::TotalRequests, 0), 1);
        // 20 ms after the first refresh: the snapshots replace the budget.
        b.refresh(20_000_000, &[snap(5, 3, 0), snap(5, 1, 0), snap(5, 2, 0)]);
        assert_eq!(b.dispatch(DpBalance::TotalRequests, 0), 1);
        // The same snapshots again (same timestamps) are skipped: rank 1 keeps its +1.
        b.refresh(40_000_000, &[snap(5, 3, 0), snap(5, 1, 0), snap(5, 2, 0)]);
        assert_eq!(b.dispatch(DpBalance::TotalRequests, 0), 1);
        assert_eq!(b.dispatch(DpBalance::TotalRequests, 0), 2);
        // total_tokens: fewest tokens, then fewest requests; the prompt is counted.
        let mut t = DpBudget::new(2);
        t.refresh(0, &[snap(1, 5, 1000), snap(1, 1, 1000)]);
        assert_eq!(t.dispatch(DpBalance::TotalTokens, 300), 1);
        assert_eq!(t.dispatch(DpBalance::TotalTokens, 300), 0);
        assert_eq!(t.dispatch(DpBalance::TotalTokens, 300), 1);
    }

    #[test]
    fn merge_sums_the_ranks_and_recomputes_the_rates() {
        let rank = |input: u64, dev: u64, pages: u64, dev_pages: u64| {
            let mut m = ReplayMetrics {
                requests: 2,
                measured_requests: 2,
                input_tokens: input,
                input_pages: pages,
                device_hit_tokens: dev,
                miss_tokens: input - dev,
                peak_host_pages: 5,
                ..Default::default()
            };
            m.finish_rates(dev_pages, 0, 0);
            m
        };
        let t = merge(vec![rank(1000, 250, 10, 2), rank(3000, 2000, 30, 20)]);
        assert_eq!(t.requests, 4);
        assert_eq!(t.input_tokens, 4000);
        assert_eq!(t.device_hit_tokens, 2250);
        assert_eq!(t.device_hit_rate, 2250.0 / 4000.0);
        assert_eq!(t.device_page_hit_rate, 22.0 / 40.0);
        assert_eq!(t.peak_host_pages, 10);
        assert_eq!(t.ranks.len(), 2);
        assert_eq!(imbalance(&t.ranks), Some(1.5));
    }
}
