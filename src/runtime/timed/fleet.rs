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
//! DP-attention ranks inside an engine run in lockstep on the engine's clock
//! (`timed::lockstep`), its `DataParallelController` choosing a rank for each request
//! the router sends it once the engine's TokenizerManager has it in (`rank::Inbound`);
//! with `--dp-aware` the router's workers are the ranks, and the rank it picks is the
//! one the request runs on. Behind Dynamo's KV router the engines'
//! trees and each request's progress feed the router ([`DynamoRouter`]). Not here: the
//! router's periodic tree eviction (a router tree past `max_tree_size` is an error, as
//! untimed).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::cache::{HiRadix, TreeKind, Unified0523, V1};
use crate::runtime::ReplayError;
use crate::runtime::config::ReplayConfig;
use crate::runtime::metrics::ReplayMetrics;
use crate::runtime::router::{
    Router, RouterError, RouterFigures, RouterPolicy, RouterSpec, RoutingText,
};
use crate::units::Nanos;
use crate::workload::Request;

use super::lockstep::Lockstep;
use super::rank::{
    Dispatch, Fed, Inbound, Rank, RankFeed, RouterView, check_arrival, first_delivery,
};
use super::{Progress, Sim};

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
    if cfg.capacities.swa.is_some() && spec.policy == RouterPolicy::DynamoKv {
        // The SWA tree publishes no KV events here (`pipeline::fleet` refuses it too).
        return Err(ReplayError::InvalidConfig {
            field: "router",
            message: "a sliding-window model's engines behind Dynamo's KV router are not modelled"
                .into(),
        }
        .into());
    }
    if cfg.capacities.dp_ranks > 1 {
        return run_dp(cfg, spec, requests);
    }
    if cfg.capacities.swa.is_some() {
        return run_engines(cfg, spec, requests, SglRouter::new(spec), |c, feed| {
            super::swa::Sim::new(c, feed, false, false)
        });
    }
    if spec.policy == RouterPolicy::DynamoKv {
        let choose = DynamoRouter::new(cfg, spec, 1);
        return match cfg.policy.tree {
            TreeKind::V1 => run_engines(cfg, spec, requests, choose, |c, feed| {
                tracked(Sim::<_, V1>::new(c, feed, false, false))
            }),
            TreeKind::Unified0523 => run_engines(cfg, spec, requests, choose, |c, feed| {
                tracked(Sim::<_, Unified0523>::new(c, feed, false, false))
            }),
            TreeKind::HiRadix => run_engines(cfg, spec, requests, choose, |c, feed| {
                tracked(Sim::<_, HiRadix>::new(c, feed, false, false))
            }),
        };
    }
    let choose = SglRouter::new(spec);
    match cfg.policy.tree {
        TreeKind::V1 => run_engines(cfg, spec, requests, choose, |c, feed| {
            Sim::<_, V1>::new(c, feed, false, false)
        }),
        TreeKind::Unified0523 => run_engines(cfg, spec, requests, choose, |c, feed| {
            Sim::<_, Unified0523>::new(c, feed, false, false)
        }),
        TreeKind::HiRadix => run_engines(cfg, spec, requests, choose, |c, feed| {
            Sim::<_, HiRadix>::new(c, feed, false, false)
        }),
    }
}

/// The router in front of one-rank engines: how it picks each request's engine.
trait ChooseEngine<S> {
    /// Hears what the engines streamed back since its last decision.
    fn hear(&mut self, _engines: &mut [S]) {}
    /// The engine of request `i` (trace position), arriving now, given the engines and
    /// what waits in their feeds.
    fn choose(
        &mut self,
        i: u64,
        r: &Request,
        engines: &[S],
        queues: &[VecDeque<Fed>],
    ) -> Result<usize, FleetError>;
    /// Its figures, given the requests sent to each engine.
    fn figures(self, sent: Vec<u64>) -> RouterFigures;
}

/// sgl-router's policies (`runtime::router`): the load of an engine is its requests
/// sent and not finished — what the engine holds, and what waits in its feed behind a
/// request it has not seen yet (tokenizing, or sent at the same instant).
struct SglRouter {
    router: Router,
    text: RoutingText,
    loads: Vec<u32>,
}

impl SglRouter {
    fn new(spec: &RouterSpec) -> Self {
        Self {
            router: Router::new(spec),
            text: RoutingText::default(),
            loads: Vec::new(),
        }
    }
}

impl<S: Rank> ChooseEngine<S> for SglRouter {
    fn choose(
        &mut self,
        _i: u64,
        r: &Request,
        engines: &[S],
        queues: &[VecDeque<Fed>],
    ) -> Result<usize, FleetError> {
        self.text.set(&r.page_hashes)?;
        self.loads.clear();
        self.loads.extend(
            engines
                .iter()
                .zip(queues)
                .map(|(s, q)| s.in_flight() + q.len() as u32),
        );
        Ok(usize::from(
            self.router.route_with_loads(&self.text.text, &self.loads)?,
        ))
    }

    fn figures(self, _sent: Vec<u64>) -> RouterFigures {
        self.router.figures()
    }
}

/// Dynamo's KV router (`runtime::router::dynamo_kv`): at each arrival it reads every
/// worker's tree as that worker's KV events publish it, and the loads it tracks itself
/// — each request's effective prompt tokens from its routing to its first token, its
/// blocks to its end (`DynamoKv::select_timed`). Its workers are the engines, or with
/// DP attention every engine's ranks ([`RouterSpec::routes_ranks`]; `pipeline::fleet`
/// refuses sliding-window models behind it). The KV events and the first token reach
/// the router without delay.
struct DynamoRouter {
    router: crate::runtime::router::dynamo_kv::DynamoKv,
    in_flight: u32,
    overlaps: Vec<crate::runtime::router::dynamo_kv::TierOverlap>,
    progress: Vec<(u64, Progress)>,
}

impl DynamoRouter {
    /// Over `spec`'s workers, each engine's `ranks` DP ranks.
    fn new(cfg: &ReplayConfig, spec: &RouterSpec, ranks: u32) -> Self {
        use crate::runtime::router::dynamo_kv::DynamoKv;
        let n = spec
            .workers(ranks)
            .clamp(1, crate::runtime::router::MAX_ENGINES);
        // The untimed replay's stream of the scenario's seed (`pipeline::fleet`).
        let rng = crate::engine::stream(spec.seed, 0xD7A4_0000);
        Self {
            router: DynamoKv::new(&spec.dynamo_kv, n, cfg.capacities.page_size, 1, rng),
            in_flight: spec.in_flight,
            overlaps: Vec::with_capacity(n as usize),
            progress: Vec::new(),
        }
    }
}

impl DynamoRouter {
    /// Hears the workers' progress since its last decision.
    fn hear_all<'a, S: RouterView + 'a>(&mut self, workers: impl Iterator<Item = &'a mut S>) {
        for s in workers {
            s.drain_progress(&mut self.progress);
        }
        for (index, step) in self.progress.drain(..) {
            match step {
                Progress::FirstToken => self.router.first_token(index),
                Progress::Finished => self.router.finished(index),
            }
        }
    }

    /// The worker (a position in `workers`' order) of request `i`, arriving now.
    fn choose_worker<'a, S: RouterView + 'a>(
        &mut self,
        i: u64,
        r: &Request,
        workers: impl Iterator<Item = &'a S>,
    ) -> usize {
        use crate::runtime::router::dynamo_kv::TierOverlap;
        self.overlaps.clear();
        self.overlaps.extend(workers.map(|s| {
            let (device, host) = s.peek_tiers(&r.page_hashes);
            TierOverlap {
                device,
                host,
                disk: 0,
            }
        }));
        usize::from(self.router.select_timed(
            i,
            &r.page_hashes,
            u64::from(r.input_tokens),
            &self.overlaps,
        ))
    }
}

impl<S: Rank + RouterView> ChooseEngine<S> for DynamoRouter {
    fn hear(&mut self, engines: &mut [S]) {
        self.hear_all(engines.iter_mut());
    }

    fn choose(
        &mut self,
        i: u64,
        r: &Request,
        engines: &[S],
        _queues: &[VecDeque<Fed>],
    ) -> Result<usize, FleetError> {
        Ok(self.choose_worker(i, r, engines.iter()))
    }

    fn figures(self, sent: Vec<u64>) -> RouterFigures {
        self.router.figures(self.in_flight, sent)
    }
}

/// An engine that keeps its requests' progress for the router.
fn tracked<S: RouterView>(s: Result<S, ReplayError>) -> Result<S, ReplayError> {
    s.map(|mut s| {
        s.track_progress();
        s
    })
}

/// One-rank engines behind `choose`, each on its own clock: the router receives each
/// request at its arrival, before the engines' events at or after it.
fn run_engines<I: Iterator<Item = Request>, S: Rank, C: ChooseEngine<S>>(
    cfg: &ReplayConfig,
    spec: &RouterSpec,
    requests: I,
    mut choose: C,
    make: impl Fn(&ReplayConfig, RankFeed<I>) -> Result<S, ReplayError>,
) -> Result<(ReplayMetrics, RouterFigures), FleetError> {
    let n = spec.engines.clamp(1, crate::runtime::router::MAX_ENGINES);
    let d = Rc::new(RefCell::new(Dispatch::driven(n as usize)));
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
    {
        let mut each: Vec<&mut [S]> = engines.chunks_mut(1).collect();
        super::rank::share_stores(&cfg.capacities, &mut each);
    }
    let mut src = requests.enumerate().peekable();
    // Requests sent to each engine (its count: its requests carry trace positions).
    let mut sent = vec![0u64; n as usize];
    let mut prev_arrival = 0;
    loop {
        choose.hear(&mut engines);
        let next_event = engines.iter().filter_map(|s| s.next_time()).min();
        if let Some((_, r)) = src.peek()
            && next_event.is_none_or(|t| r.arrival_ns <= t)
        {
            let (i, r) = src.next().expect("peeked");
            check_arrival(i as u64, &r, &mut prev_arrival)?;
            let e = choose.choose(i as u64, &r, &engines, &d.borrow().queues)?;
            d.borrow_mut().queues[e].push_back(Fed::own(i as u64, r));
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
    let mut f = choose.figures(sent);
    f.clock_loads = true;
    Ok((m, f))
}

/// [`run`] with DP-attention ranks inside each engine: each engine's ranks run in
/// lockstep on its own clock (`timed::lockstep`), its `DataParallelController` choosing
/// a rank for each request the router sends it (`--load-balance-method`), or the router
/// choosing the rank ([`RouterSpec::routes_ranks`]).
fn run_dp<I: Iterator<Item = Request>>(
    cfg: &ReplayConfig,
    spec: &RouterSpec,
    requests: I,
) -> Result<(ReplayMetrics, RouterFigures), FleetError> {
    let ranks = cfg.capacities.dp_ranks.max(1);
    if cfg.capacities.swa.is_some() {
        return run_dp_engines(
            cfg,
            spec,
            requests,
            SglDpRouter::new(spec, ranks),
            |c, feed| super::swa::Sim::new(c, feed, false, true),
        );
    }
    if spec.policy == RouterPolicy::DynamoKv {
        let choose = DynamoRouter::new(cfg, spec, ranks);
        return match cfg.policy.tree {
            TreeKind::V1 => run_dp_engines(cfg, spec, requests, choose, |c, feed| {
                tracked(Sim::<_, V1>::new(c, feed, false, true))
            }),
            TreeKind::Unified0523 => run_dp_engines(cfg, spec, requests, choose, |c, feed| {
                tracked(Sim::<_, Unified0523>::new(c, feed, false, true))
            }),
            TreeKind::HiRadix => run_dp_engines(cfg, spec, requests, choose, |c, feed| {
                tracked(Sim::<_, HiRadix>::new(c, feed, false, true))
            }),
        };
    }
    let choose = SglDpRouter::new(spec, ranks);
    match cfg.policy.tree {
        TreeKind::V1 => run_dp_engines(cfg, spec, requests, choose, |c, feed| {
            Sim::<_, V1>::new(c, feed, false, true)
        }),
        TreeKind::Unified0523 => run_dp_engines(cfg, spec, requests, choose, |c, feed| {
            Sim::<_, Unified0523>::new(c, feed, false, true)
        }),
        TreeKind::HiRadix => run_dp_engines(cfg, spec, requests, choose, |c, feed| {
            Sim::<_, HiRadix>::new(c, feed, false, true)
        }),
    }
}

/// Where the router sends a request among engines with DP ranks.
enum Worker {
    /// An engine, whose `DataParallelController` picks the rank.
    Engine(usize),
    /// A rank (engine-major), past the engine's method.
    Rank(usize),
}

/// The router in front of engines with DP-attention ranks.
trait ChooseDpWorker<S> {
    /// Hears what the ranks streamed back since its last decision.
    fn hear(&mut self, _engines: &mut [Lockstep<S>]) {}
    /// The worker of request `i` (trace position), arriving now, given the engines,
    /// what waits in their ranks' feeds (engine-major) and what each engine's
    /// TokenizerManager holds for its controller (`held`).
    fn choose(
        &mut self,
        i: u64,
        r: &Request,
        engines: &[Lockstep<S>],
        queues: &[VecDeque<Fed>],
        held: &[VecDeque<(Nanos, Fed)>],
    ) -> Result<Worker, FleetError>;
    /// Its figures, given the requests sent to each of its workers.
    fn figures(self, sent: Vec<u64>) -> RouterFigures;
}

/// sgl-router's policies in front of engines with DP ranks: its workers the engines, or
/// with `--dp-aware` their ranks (engine-major, as `get_dp_aware_workers` lists
/// `url@rank`), each worker's load its requests sent and not finished, those still in
/// its feeds too.
struct SglDpRouter {
    router: Router,
    text: RoutingText,
    loads: Vec<u32>,
    dp_aware: bool,
    ranks: usize,
}

impl SglDpRouter {
    fn new(spec: &RouterSpec, ranks: u32) -> Self {
        let workers = if spec.dp_aware {
            spec.engines.saturating_mul(ranks.max(1))
        } else {
            spec.engines
        };
        Self {
            router: Router::new(&RouterSpec {
                engines: workers,
                ..spec.clone()
            }),
            text: RoutingText::default(),
            loads: vec![0; workers as usize],
            dp_aware: spec.dp_aware,
            ranks: ranks.max(1) as usize,
        }
    }
}

impl<S: Rank> ChooseDpWorker<S> for SglDpRouter {
    fn choose(
        &mut self,
        _i: u64,
        r: &Request,
        engines: &[Lockstep<S>],
        queues: &[VecDeque<Fed>],
        held: &[VecDeque<(Nanos, Fed)>],
    ) -> Result<Worker, FleetError> {
        self.text.set(&r.page_hashes)?;
        let ranks = self.ranks;
        if self.dp_aware {
            for (w, l) in self.loads.iter_mut().enumerate() {
                *l = engines[w / ranks].sims[w % ranks].in_flight() + queues[w].len() as u32;
            }
        } else {
            for (e, l) in self.loads.iter_mut().enumerate() {
                *l = engines[e].in_flight()
                    + super::rank::queued(queues, e, ranks)
                    + held[e].len() as u32;
            }
        }
        let w = usize::from(self.router.route_with_loads(&self.text.text, &self.loads)?);
        Ok(if self.dp_aware {
            Worker::Rank(w)
        } else {
            Worker::Engine(w)
        })
    }

    fn figures(self, _sent: Vec<u64>) -> RouterFigures {
        self.router.figures()
    }
}

impl<S: Rank + RouterView> ChooseDpWorker<S> for DynamoRouter {
    fn hear(&mut self, engines: &mut [Lockstep<S>]) {
        self.hear_all(engines.iter_mut().flat_map(|g| g.sims.iter_mut()));
    }

    fn choose(
        &mut self,
        i: u64,
        r: &Request,
        engines: &[Lockstep<S>],
        _queues: &[VecDeque<Fed>],
        _held: &[VecDeque<(Nanos, Fed)>],
    ) -> Result<Worker, FleetError> {
        Ok(Worker::Rank(self.choose_worker(
            i,
            r,
            engines.iter().flat_map(|g| g.sims.iter()),
        )))
    }

    fn figures(self, sent: Vec<u64>) -> RouterFigures {
        self.router.figures(self.in_flight, sent)
    }
}

fn run_dp_engines<I: Iterator<Item = Request>, S: Rank, C: ChooseDpWorker<S>>(
    cfg: &ReplayConfig,
    spec: &RouterSpec,
    requests: I,
    mut choose: C,
    make: impl Fn(&ReplayConfig, RankFeed<I>) -> Result<S, ReplayError>,
) -> Result<(ReplayMetrics, RouterFigures), FleetError> {
    if !spec.routes_ranks() {
        // A request the router gives a rank never reaches the method's room assert
        // (`maybe_external_dp_rank_routing` comes first).
        super::lockstep::refuse_rooms(cfg.capacities.dp_balance)?;
    }
    let n = spec.engines.max(1) as usize;
    let ranks = cfg.capacities.dp_ranks.max(1) as usize;
    // One feed per rank of every engine (engine-major).
    let d = Rc::new(RefCell::new(Dispatch::driven(n * ranks)));
    let c = super::lockstep::rank_config(cfg);
    let mut all = Vec::with_capacity(n);
    for e in 0..n {
        let mut sims = Vec::with_capacity(ranks);
        for r in 0..ranks {
            let feed = RankFeed {
                d: Rc::clone(&d),
                rank: e * ranks + r,
            };
            sims.push(make(&c, feed)?);
        }
        all.push(sims);
    }
    {
        let mut each: Vec<&mut [S]> = all.iter_mut().map(Vec::as_mut_slice).collect();
        super::rank::share_stores(&cfg.capacities, &mut each);
    }
    let mut engines: Vec<Lockstep<S>> = all
        .into_iter()
        .map(|sims| Lockstep::new(cfg, sims))
        .collect();
    let mut src = requests.enumerate().peekable();
    // Requests sent to each engine, and to each of the router's workers.
    let mut sent = vec![0u64; n];
    let mut per_worker = vec![0u64; spec.workers(ranks as u32) as usize];
    let mut prev_arrival = 0;
    // Each engine's TokenizerManager, and the requests the router sent to an engine
    // (not to a rank) that it has not yet handed its `DataParallelController`, in the
    // order it delivers them.
    let mut inbound = vec![Inbound::new(cfg.frontend); n];
    let mut held: Vec<VecDeque<(Nanos, Fed)>> = (0..n).map(|_| VecDeque::new()).collect();
    loop {
        choose.hear(&mut engines);
        let next_event = engines.iter().filter_map(Lockstep::next_time).min();
        let arrival = src.peek().map(|(_, r)| r.arrival_ns);
        // A controller dispatches a request when its TokenizerManager delivers it,
        // before a later arrival and the events at or after then.
        let due = first_delivery(&held);
        if let Some((at, e)) = due
            && arrival.is_none_or(|a| at <= a)
            && next_event.is_none_or(|t| at <= t)
        {
            let (_, fed) = held[e].pop_front().expect("due");
            let k = engines[e].pick(at, fed.req.input_tokens, None);
            d.borrow_mut().queues[e * ranks + k].push_back(fed);
            engines[e].sims[k].feed()?;
            continue;
        }
        if let Some(a) = arrival
            && next_event.is_none_or(|t| a <= t)
        {
            let (i, r) = src.next().expect("peeked");
            check_arrival(i as u64, &r, &mut prev_arrival)?;
            let w = choose.choose(i as u64, &r, &engines, &d.borrow().queues, &held)?;
            match w {
                // The request carries its rank (`data_parallel_rank`): the engine's
                // controller sends it there, past its balance method and without
                // advancing its counters (`managers/data_parallel_controller.py:
                // maybe_external_dp_rank_routing`, 0.5.23).
                Worker::Rank(w) => {
                    per_worker[w] += 1;
                    let e = w / ranks;
                    let seen = Some(inbound[e].deliver(&r));
                    d.borrow_mut().queues[w].push_back(Fed {
                        index: i as u64,
                        req: r,
                        seen,
                    });
                    sent[e] += 1;
                    engines[e].sims[w % ranks].feed()?;
                }
                Worker::Engine(e) => {
                    per_worker[e] += 1;
                    let at = inbound[e].deliver(&r);
                    held[e].push_back((
                        at,
                        Fed {
                            index: i as u64,
                            req: r,
                            seen: Some(at),
                        },
                    ));
                    sent[e] += 1;
                }
            }
            continue;
        }
        let Some(t) = next_event else { break };
        for g in &mut engines {
            if g.next_time() == Some(t) {
                g.advance(t)?;
            }
        }
    }
    let ends = engines
        .into_iter()
        .zip(&sent)
        .map(|(g, &k)| {
            let mut end = super::merge_ends(g.finish());
            end.m.requests = k;
            end
        })
        .collect();
    let mut m = super::merge_ranks(ends);
    m.engines = std::mem::take(&mut m.ranks);
    let mut f = choose.figures(per_worker);
    f.clock_loads = true;
    Ok((m, f))
}
