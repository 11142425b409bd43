//! Engines behind SGLang's router, timed: each engine its own scheduler, tree and pools
//! on its own GPUs (its clock independent of the others'), the router choosing an
//! engine for each request at its arrival from what it sees then.
//!
//! sgl-router counts a worker's load from the request it sends to the end of the
//! response (`RequestGuard` / `WorkerLoadGuard` around the proxied request, v0.3.x), so
//! here the load of an engine at an arrival is its requests in flight: handed to it and
//! not finished ([`Rank::in_flight`]). The untimed fleet replay stands in a completion
//! window (`runtime.router.in_flight`) for it; this replay needs none. The policy's
//! choice is the router's own code as ported in `runtime::router` (round-robin,
//! cache-aware with its approximate tree and balance thresholds).
//!
//! Not here: DP-attention ranks inside the engines, `--dp-aware`, Dynamo's KV router
//! (each refused by `pipeline::fleet` before the replay), and the router's periodic
//! tree eviction (a router tree past `max_tree_size` is an error, as untimed).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::cache::{HiRadix, TreeKind, Unified0523, V1};
use crate::runtime::ReplayError;
use crate::runtime::config::ReplayConfig;
use crate::runtime::metrics::ReplayMetrics;
use crate::runtime::router::{Router, RouterError, RouterFigures, RouterSpec, RoutingText};
use crate::workload::Request;

use super::Sim;
use super::rank::{Dispatch, Rank, RankFeed};

/// Why a timed fleet replay stopped: the router's or an engine's error.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Router(#[from] RouterError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// Replays `requests` on `spec.engines` engines behind the router: the fleet's figures
/// (each engine's in `engines`) and the router's.
pub fn run<I: IntoIterator<Item = Request>>(
    cfg: &ReplayConfig,
    spec: &RouterSpec,
    requests: I,
) -> Result<(ReplayMetrics, RouterFigures), FleetError> {
    let requests = requests.into_iter();
    if cfg.capacities.swa.is_some() {
        return run_engines(cfg, spec, requests, |c, feed| {
            super::swa::Sim::new(c, feed, false, false)
        });
    }
    match cfg.policy.tree {
        TreeKind::V1 => run_engines(cfg, spec, requests, |c, feed| {
            Sim::<_, V1>::new(c, feed, false, false)
        }),
        TreeKind::Unified0523 => run_engines(cfg, spec, requests, |c, feed| {
            Sim::<_, Unified0523>::new(c, feed, false, false)
        }),
        TreeKind::HiRadix => run_engines(cfg, spec, requests, |c, feed| {
            Sim::<_, HiRadix>::new(c, feed, false, false)
        }),
    }
}

fn run_engines<I: Iterator<Item = Request>, S: Rank>(
    cfg: &ReplayConfig,
    spec: &RouterSpec,
    requests: I,
    make: impl Fn(&ReplayConfig, RankFeed<I>) -> Result<S, ReplayError>,
) -> Result<(ReplayMetrics, RouterFigures), FleetError> {
    let n = spec.engines.max(1);
    let d = Rc::new(RefCell::new(Dispatch {
        src: None,
        read: 0,
        ranks: n,
        queues: (0..n).map(|_| VecDeque::new()).collect(),
    }));
    let mut engines = Vec::with_capacity(n as usize);
    for e in 0..n {
        let mut c = cfg.clone();
        c.capacities.dp_ranks = 1;
        let feed = RankFeed {
            d: Rc::clone(&d),
            rank: e as usize,
        };
        engines.push(make(&c, feed)?);
    }
    let mut router = Router::new(spec);
    let mut text = RoutingText::default();
    let mut loads = vec![0u32; n as usize];
    let mut src = requests.enumerate().peekable();
    // Requests sent to each engine (its count: its requests carry trace positions).
    let mut sent = vec![0u64; n as usize];
    let mut prev_arrival = 0;
    loop {
        let next_event = engines.iter().filter_map(|s| s.next_time()).min();
        // The router receives the next request before the engines' events at or after
        // its arrival.
        if let Some((_, r)) = src.peek()
            && next_event.is_none_or(|t| r.arrival_ns <= t)
        {
            let (i, r) = src.next().expect("peeked");
            if r.arrival_ns < prev_arrival {
                // The engines check their own arrivals; the trace's order is checked here.
                return Err(ReplayError::ArrivalOutOfOrder {
                    index: i as u64,
                    id: r.id,
                    arrival_ns: r.arrival_ns,
                    previous_ns: prev_arrival,
                }
                .into());
            }
            prev_arrival = r.arrival_ns;
            text.set(&r.page_hashes)?;
            // Sent and not finished: what the engine holds, and what waits in its feed
            // behind a request it has not seen yet (tokenizing, or sent at the same
            // instant).
            {
                let q = &d.borrow().queues;
                for ((l, s), q) in loads.iter_mut().zip(&engines).zip(q) {
                    *l = s.in_flight() + q.len() as u32;
                }
            }
            let e = usize::from(router.route_with_loads(&text.text, &loads)?);
            d.borrow_mut().queues[e].push_back((i as u64, r));
            sent[e] += 1;
            engines[e].feed()?;
            continue;
        }
        let Some(t) = next_event else { break };
        for s in &mut engines {
            if s.next_time() == Some(t) {
                s.handle_due(t)?;
                s.form(t, false)?;
            }
        }
    }
    let ends = engines
        .into_iter()
        .zip(&sent)
        .map(|(s, &k)| {
            let mut end = s.finish();
            end.m.requests = k;
            end
        })
        .collect();
    let mut m = super::merge_ranks(ends);
    m.engines = std::mem::take(&mut m.ranks);
    let mut f = router.figures();
    f.clock_loads = true;
    Ok((m, f))
}
