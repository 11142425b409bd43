//! DP-attention ranks in the timed replay: `--dp-size N --enable-dp-attention` runs N
//! schedulers, each with its own radix tree, host pool and cache controller, that the
//! `DataParallelController` feeds round-robin (`runtime::dp`). Their forwards are not
//! independent: every forward runs on all ranks together. Each scheduler's
//! `get_next_batch_to_run` calls `prepare_mlp_sync_batch`
//! (`managers/scheduler_components/dp_attn.py`, 0.5.14–0.5.23), which all-gathers the
//! ranks' batch shapes before the forward; a rank with nothing to run joins with an
//! idle batch (`get_idle_batch`), and the MLP / MoE layers exchange the ranks'
//! tokens in every layer. So the replay runs the ranks on one clock in steps: when no
//! step is in flight and an event happens, every rank forms its forward (a prefill
//! batch or a decode step, as alone), and the step ends when the slowest rank's does;
//! a request that reaches a rank during a step waits for the next. With a speculative
//! draft a step is all prefill or all decode: while any rank prefills, the others'
//! decodes wait (`get_next_batch_to_run`'s MLP sync of the new prefill batch first).
//!
//! The controller receives each request from the server's one TokenizerManager
//! (`rank::Inbound`), once its encode and fixed way in are done: the ranks share that
//! encode queue, and a load-reading method reads the loads then, not at the send.
//!
//! The model's simplification, labelled in the speeds (`Speeds::dp_attention`): a
//! rank's forward costs what the cost model gives for its own batch; the MoE layers'
//! work on the other ranks' gathered tokens is not charged to it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::cache::{HiRadix, TreeKind, Unified0523, V1};
use crate::runtime::ReplayError;
use crate::runtime::config::ReplayConfig;
use crate::runtime::dp::{DpBalance, DpBudget};
use crate::runtime::metrics::ReplayMetrics;
use crate::units::Nanos;
use crate::workload::Request;

use super::rank::{Dispatch, Fed, Inbound, Rank, RankFeed, check_arrival};
use super::{Sim, merge_ranks};

/// Replays `requests` on `cfg.capacities.dp_ranks` lockstep ranks: the deployment's
/// figures, each rank's in `ranks`.
pub(crate) fn run<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    requests: I,
) -> Result<ReplayMetrics, ReplayError> {
    let requests = requests.into_iter();
    if cfg.capacities.swa.is_some() {
        // The SWA tree's ranks (`timed::swa`).
        return run_ranks(cfg, requests, |c, feed| {
            super::swa::Sim::new(c, feed, false, true)
        });
    }
    match cfg.policy.tree {
        TreeKind::V1 => run_ranks(cfg, requests, |c, feed| {
            Sim::<_, V1>::new(c, feed, false, true)
        }),
        TreeKind::Unified0523 => run_ranks(cfg, requests, |c, feed| {
            Sim::<_, Unified0523>::new(c, feed, false, true)
        }),
        TreeKind::HiRadix => run_ranks(cfg, requests, |c, feed| {
            Sim::<_, HiRadix>::new(c, feed, false, true)
        }),
    }
}

/// Each rank's configuration: the server's, with what DP attention changes per rank.
pub(super) fn rank_config(cfg: &ReplayConfig) -> ReplayConfig {
    let ranks = cfg.capacities.dp_ranks.max(1);
    // Each rank counts the trace's first `warmup_requests` as warm-up, wherever they
    // went (its requests carry their trace positions).
    let mut c = cfg.clone();
    c.capacities.dp_ranks = 1;
    // DP attention scales `--schedule-conservativeness` by 0.3 (0.5.14
    // `server_args.py: _handle_data_parallelism`, 0.5.23 `arg_groups/
    // parallel_hook.py`): `new_token_ratio` starts at 0.21 by default.
    c.scheduler.schedule_conservativeness *= 0.3;
    if cfg.scheduler.max_running_requests_split {
        // Each rank's scheduler takes its share of the server's value
        // (`mem_cache/kv_cache_configurator.py: resolve_max_num_reqs`, 0.5.23:
        // `max(1, max_running_requests // attn_dp_size)`; 0.5.14
        // `model_executor/model_runner_kv_cache_mixin.py`: `// dp_size`).
        let m = &mut c.scheduler.max_running_requests;
        *m = (*m / ranks).max(1);
    }
    c
}

/// One engine's DP-attention ranks on one clock (the module's notes): their steps,
/// and the `DataParallelController`'s choice of a rank for a request it receives.
pub(super) struct Lockstep<S> {
    pub(super) sims: Vec<S>,
    method: DpBalance,
    /// A speculative draft: a step is all prefill or all decode.
    prefill_first: bool,
    budget: DpBudget,
    snapshots: Vec<Option<crate::runtime::dp::LoadSnapshot>>,
    step_end: Option<Nanos>,
    /// Requests received (round-robin's count).
    received: u64,
}

impl<S: Rank> Lockstep<S> {
    pub(super) fn new(cfg: &ReplayConfig, sims: Vec<S>) -> Self {
        Lockstep {
            method: cfg.capacities.dp_balance,
            // `Scheduler.get_next_batch_to_run` (0.5.14–0.5.23) with a speculative
            // algorithm and DP attention: the new prefill batches are MLP-synced first
            // ("prefill and decode batches will not be mixed"): if any rank has one,
            // every rank runs it or an idle batch, and the running batches decode only
            // when no rank prefills. (`--speculative-skip-dp-mlp-sync` ≤ 0.5.1x and
            // 0.5.23's `SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION` lift it; neither is
            // modelled.)
            prefill_first: cfg.scheduler.compute.speculative.is_some(),
            budget: DpBudget::new(sims.len() as u32),
            snapshots: Vec::with_capacity(sims.len()),
            step_end: None,
            received: 0,
            sims,
        }
    }

    pub(super) fn next_time(&self) -> Option<Nanos> {
        self.sims.iter().filter_map(|s| s.next_time()).min()
    }

    /// The rank the controller sends a request of `input_tokens` arriving at `now` to:
    /// `round_robin_scheduler` in arrival order, the rank of its bootstrap `room` (a PD
    /// request's; the callers refuse the method without rooms), or the load-reading
    /// methods from the loads the ranks published by then.
    pub(super) fn pick(&mut self, now: Nanos, input_tokens: u32, room: Option<u64>) -> usize {
        let i = self.received;
        self.received += 1;
        let n = self.sims.len() as u64;
        match (self.method, room) {
            (DpBalance::RoundRobin, _) => {
                return crate::runtime::dp::round_robin_rank(i, n as u32) as usize;
            }
            (DpBalance::FollowBootstrapRoom, Some(room)) => return (room % n) as usize,
            _ => {}
        }
        self.snapshots.clear();
        self.snapshots
            .extend(self.sims.iter().map(|s| s.snapshot()));
        self.budget.refresh(now, &self.snapshots);
        self.budget.dispatch(self.method, u64::from(input_tokens)) as usize
    }

    /// Its requests in flight (read from their feeds and not finished).
    pub(super) fn in_flight(&self) -> u32 {
        self.sims.iter().map(Rank::in_flight).sum()
    }

    /// Everything due at `t` on every rank; then, with no forward in flight, every
    /// rank forms its own and the step ends at the slowest's.
    pub(super) fn advance(&mut self, t: Nanos) -> Result<(), ReplayError> {
        for s in &mut self.sims {
            s.handle_due(t)?;
        }
        if self.step_end == Some(t) {
            self.step_end = None;
        }
        if self.step_end.is_some() {
            return Ok(());
        }
        // No forward in flight: every rank forms its own, on one clock. With a
        // speculative draft, prefills first: a decode waits while any rank prefills.
        let mut end: Option<Nanos> = None;
        for s in &mut self.sims {
            s.form(t, self.prefill_first)?;
            end = later(end, s.pending_end());
        }
        if self.prefill_first {
            let prefilled = end.is_some();
            for s in &mut self.sims {
                s.unhold_and_decode(!prefilled);
                if !prefilled {
                    end = later(end, s.pending_end());
                }
            }
        }
        for s in &mut self.sims {
            if s.pending_end().is_none() {
                s.publish_when_idle(t);
            }
        }
        if let Some(e) = end {
            for s in &mut self.sims {
                s.commit_step(e);
            }
            self.step_end = Some(e);
        }
        Ok(())
    }

    /// The ranks' ends.
    pub(super) fn finish(self) -> Vec<super::RunEnd> {
        self.sims.into_iter().map(Rank::finish).collect()
    }
}

fn run_ranks<I: Iterator<Item = Request>, S: Rank>(
    cfg: &ReplayConfig,
    requests: I,
    make: impl Fn(&ReplayConfig, RankFeed<I>) -> Result<S, ReplayError>,
) -> Result<ReplayMetrics, ReplayError> {
    let ranks = cfg.capacities.dp_ranks.max(1);
    let method = cfg.capacities.dp_balance;
    refuse_rooms(method)?;
    // Round-robin deals the trace as it is read; the load-reading methods pick each
    // request's rank at its arrival, from the loads the ranks published by then.
    let (dealt, mut direct) = if method == DpBalance::RoundRobin {
        (Some(requests), None)
    } else {
        (None, Some(requests.enumerate()))
    };
    let d = Rc::new(RefCell::new(Dispatch {
        src: dealt,
        inbound: Inbound::new(cfg.frontend),
        read: 0,
        ranks,
        queues: (0..ranks).map(|_| VecDeque::new()).collect(),
    }));
    let c = rank_config(cfg);
    let mut sims = Vec::with_capacity(ranks as usize);
    for r in 0..ranks {
        let feed = RankFeed {
            d: Rc::clone(&d),
            rank: r as usize,
        };
        sims.push(make(&c, feed)?);
    }
    super::rank::share_stores(&cfg.capacities, &mut [&mut sims[..]]);
    for s in &mut sims {
        s.pull()?;
    }
    let mut group = Lockstep::new(cfg, sims);
    // The next request the TokenizerManager delivers to the controller (load-reading
    // methods), in the trace's order.
    let mut next: Option<(Nanos, Fed)> = None;
    let mut prev_arrival = 0;
    loop {
        if next.is_none()
            && let Some((i, r)) = direct.as_mut().and_then(Iterator::next)
        {
            check_arrival(i as u64, &r, &mut prev_arrival)?;
            let at = d.borrow_mut().inbound.deliver(&r);
            next = Some((
                at,
                Fed {
                    index: i as u64,
                    req: r,
                    seen: Some(at),
                },
            ));
        }
        let next_event = group.next_time();
        // The controller receives the request when the TokenizerManager sends it on,
        // before the events at or after then.
        if let Some(&(at, _)) = next.as_ref()
            && next_event.is_none_or(|t| at <= t)
        {
            let (_, fed) = next.take().expect("delivered");
            let k = group.pick(at, fed.req.input_tokens, None);
            d.borrow_mut().queues[k].push_back(fed);
            group.sims[k].feed()?;
            continue;
        }
        let Some(t) = next_event else { break };
        group.advance(t)?;
    }
    Ok(merge_ranks(group.finish()))
}

/// `follow_bootstrap_room` outside a PD replay: there is no bootstrap room to follow.
pub(super) fn refuse_rooms(method: DpBalance) -> Result<(), ReplayError> {
    if method == DpBalance::FollowBootstrapRoom {
        return Err(ReplayError::InvalidConfig {
            field: "dp_balance",
            message: "follow_bootstrap_room sends a request to the rank of the bootstrap room the router gives a PD request: only a PD deployment's replay (runtime.pd) has rooms".into(),
        });
    }
    Ok(())
}

/// The later of a step's end so far and a rank's forward end.
fn later(end: Option<Nanos>, done: Option<Nanos>) -> Option<Nanos> {
    match (end, done) {
        (Some(e), Some(d)) => Some(e.max(d)),
        (e, d) => e.or(d),
    }
}
