//! Engines behind SGLang's router in the untimed replay (`runtime::router`): the trace is
//! routed once (the router's view: each request's routing text, the completion window),
//! then each engine replays its share with its own pools, and the figures are summed as
//! for DP ranks (`runtime::dp::merge`), the engines kept in `metrics.engines`. Timed, the
//! engines run on their own clocks behind the router (`runtime::timed::fleet`).

use std::io::Write;

use crate::error::InputError;
use crate::runtime::router::{self, Router, RouterFigures, RouterSpec, RoutingText};
use crate::runtime::{ReplayConfig, ReplayMetrics, Timing};
use crate::workload::read::{TraceOptions, open_trace_with};

/// One routed request: its index (trace order), its routing text and ids, the engine,
/// and the request completed just before it was dispatched (index), if any.
struct Routed<'a> {
    index: u64,
    text: &'a RoutingText,
    engine: u16,
    done: Option<u64>,
}

/// Routes the first `limit` requests of the trace at `path`, calling `each` per request
/// in order; the router's figures at the end.
fn route_trace(
    path: &str,
    opts: &TraceOptions,
    page_size: u32,
    spec: &RouterSpec,
    limit: u64,
    mut each: impl FnMut(Routed<'_>) -> Result<(), InputError>,
) -> Result<RouterFigures, InputError> {
    let mut reader = open_trace_with(std::path::Path::new(path), opts, page_size)?;
    let mut router = Router::new(spec);
    let mut text = RoutingText::default();
    let in_flight = u64::from(spec.in_flight.max(1));
    let mut index = 0u64;
    let located = |e: router::RouterError| {
        InputError::new("runtime.router", e.to_string()).field(match e {
            router::RouterError::TreeFull { .. } => "runtime.router.max_tree_size",
            router::RouterError::TooManyPages => "runtime.trace",
        })
    };
    while index < limit {
        let Some(req) = reader.next() else { break };
        let req = req?;
        text.set(&req.page_hashes).map_err(located)?;
        let (done, engine) = router.dispatch(&text.text).map_err(located)?;
        each(Routed {
            index,
            text: &text,
            engine,
            done: done.map(|_| index - in_flight),
        })?;
        index += 1;
    }
    reader.finish()?;
    Ok(router.figures())
}

/// Routes the first `limit` requests of the trace at `path` with Dynamo's KV router
/// (`runtime::router::dynamo_kv`), fed by the workers' state: every engine's `ranks`
/// DP ranks (`cfg` is one rank's) are replayed side by side as the requests are routed.
/// Each request's worker (engine-major), and the router's figures, each worker's
/// requests in `assigned`.
fn route_dynamo(
    path: &str,
    opts: &TraceOptions,
    cfg: &ReplayConfig,
    spec: &RouterSpec,
    ranks: u32,
    limit: u64,
) -> Result<(Vec<u16>, RouterFigures), InputError> {
    use crate::runtime::router::dynamo_kv::{DynamoKv, TierOverlap};
    let n = spec.workers(ranks).clamp(1, router::MAX_ENGINES);
    // One stream of the scenario's seed, apart from any other use of it.
    let rng = crate::engine::stream(spec.seed, 0xD7A4_0000);
    let mut dyn_router = DynamoKv::new(
        &spec.dynamo_kv,
        n,
        cfg.capacities.page_size,
        spec.in_flight,
        rng,
    );
    let mut reader = open_trace_with(std::path::Path::new(path), opts, cfg.capacities.page_size)?;
    let mut err: Option<InputError> = None;
    let mut out = Vec::new();
    let mut overlaps = Vec::with_capacity(n as usize);
    {
        let requests = super::until_error(reader.by_ref(), &mut err)
            .take(limit.min(usize::MAX as u64) as usize);
        crate::runtime::route_by_engine_state(
            cfg,
            n as usize,
            ranks as usize,
            requests,
            &mut |req, tiers| {
                overlaps.clear();
                overlaps.extend(tiers.iter().map(|&(device, host)| TierOverlap {
                    device,
                    host,
                    disk: 0,
                }));
                let e = dyn_router.select(&req.page_hashes, u64::from(req.input_tokens), &overlaps);
                out.push(e);
                e
            },
        )
        .map_err(|e| InputError::new(path, e.to_string()))?;
    }
    reader.finish()?;
    if let Some(e) = err {
        return Err(e);
    }
    let mut assigned = vec![0u64; n as usize];
    for &e in &out {
        assigned[usize::from(e)] += 1;
    }
    Ok((out, dyn_router.figures(spec.in_flight, assigned)))
}

/// The section's keys checked (a section built in code, not read from a scenario, too).
fn validated(spec: &RouterSpec) -> Result<(), InputError> {
    spec.validate().map_err(|e| {
        let i = InputError::new("runtime.router", e.why).field(format!("runtime.router.{}", e.key));
        if e.not_modelled { i.not_modelled() } else { i }
    })
}

/// More rank workers (`--dp-aware`, Dynamo's) than the router tells apart.
fn too_many_workers(engines: u32, ranks: u32, workers: u32) -> InputError {
    InputError::new(
        "runtime.router",
        format!(
            "{engines} engines x {ranks} data-parallel ranks = {workers} router workers (--dp-aware, or Dynamo's (worker, dp_rank) candidates): the router tells at most {} apart",
            router::MAX_ENGINES
        ),
    )
    .field("runtime.router.engines")
}

/// The refusals of combinations the fleet replay does not model.
pub(super) fn check(cfg: &ReplayConfig, spec: &RouterSpec) -> Result<(), InputError> {
    // Each a combination the fleet replay does not model (`not_modelled`).
    let refuse = |field: &str, m: String| {
        Err(InputError::new("runtime.router", m)
            .field(field)
            .not_modelled())
    };
    validated(spec)?;
    let n = spec.engines;
    let workers = spec.workers(cfg.capacities.dp_ranks);
    if workers > router::MAX_ENGINES {
        return Err(too_many_workers(n, cfg.capacities.dp_ranks, workers));
    }
    if cfg.capacities.dp_ranks > 1
        && !spec.routes_ranks()
        && cfg.capacities.dp_balance != crate::runtime::dp::DpBalance::RoundRobin
        && cfg.measurement.timing == Timing::Off
    {
        // Untimed, the engines' own controllers deal round-robin: never replay a
        // load-reading method as round-robin (the timed fleet reads the loads).
        return refuse(
            "runtime.router.engines",
            format!(
                "--load-balance-method {} behind a router reads the ranks' loads over time, which only the timed replay has: set runtime.replay.timing: on, round_robin, or runtime.router.dp_aware: true",
                cfg.capacities.dp_balance.id()
            ),
        );
    }
    if spec.policy == router::RouterPolicy::DynamoKv {
        let why = if cfg.capacities.swa.is_some() {
            Some(
                "a sliding-window model's engines behind Dynamo's KV router are not modelled (the router is fed from the full tree's events only): use policy cache_aware",
            )
        } else if cfg.policy.lru_mode == crate::cache::LruMode::PlainPage {
            Some(
                "the plain page LRU (no radix tree) publishes no prefix KV events for Dynamo's router: use the radix tree, or policy cache_aware",
            )
        } else {
            None
        };
        if let Some(m) = why {
            return refuse("runtime.router.policy", m.to_string());
        }
    }
    if cfg.measurement.timeline_samples > 0 {
        return refuse(
            "runtime.replay.timeline_samples",
            format!(
                "{n} engines have no common timeline (each engine's tree is replayed on its own): set timeline_samples: 0, or runtime.router.engines: 1"
            ),
        );
    }
    Ok(())
}

/// The fleet's replay: every engine's share, merged; `metrics.engines` and
/// `metrics.router` filled.
pub(super) fn replay_fleet(
    path: &str,
    opts: &TraceOptions,
    cfg: &ReplayConfig,
    spec: &RouterSpec,
    limit: u64,
    factor: f64,
) -> Result<ReplayMetrics, InputError> {
    check(cfg, spec)?;
    if cfg.measurement.timing == Timing::On {
        return replay_fleet_timed(path, opts, cfg, spec, limit, factor);
    }
    let ranks = cfg.capacities.dp_ranks.max(1);
    // Each request's (engine, rank): with `dp_aware`, and behind Dynamo, the router's
    // worker is a rank (engine-major); else the router picks the engine and the engine's
    // `DataParallelController` round-robins its own arrivals over its ranks
    // (`round_robin_scheduler`, `runtime::dp`).
    let mut slots: Vec<(u16, u32)> = Vec::new();
    let mut arrivals = vec![0u64; spec.engines as usize];
    let routed = routed_spec(spec, ranks);
    let mut figures = if spec.policy == router::RouterPolicy::DynamoKv {
        // Every rank its own worker, its tree replayed as one engine's.
        let mut c = cfg.clone();
        c.capacities.dp_ranks = 1;
        let (workers, figures) = route_dynamo(path, opts, &c, spec, ranks, limit)?;
        slots = workers
            .into_iter()
            .map(|w| {
                let w = u32::from(w);
                ((w / ranks) as u16, w % ranks)
            })
            .collect();
        figures
    } else {
        route_trace(path, opts, cfg.capacities.page_size, &routed, limit, |r| {
            slots.push(if spec.dp_aware {
                let w = u32::from(r.engine);
                ((w / ranks) as u16, w % ranks)
            } else {
                let k = &mut arrivals[usize::from(r.engine)];
                let rank = crate::runtime::dp::round_robin_rank(*k, ranks);
                *k += 1;
                (r.engine, rank)
            });
            Ok(())
        })?
    };
    let warmup = usize::try_from(cfg.measurement.warmup_requests).unwrap_or(usize::MAX);
    // Every (engine, rank)'s configuration, engine-major: its own warm-up share.
    let cfgs: Vec<ReplayConfig> = (0..spec.engines as u16)
        .flat_map(|e| (0..ranks).map(move |r| (e, r)))
        .map(|(e, r)| {
            let mut c = cfg.clone();
            c.capacities.dp_ranks = 1;
            c.measurement.warmup_requests =
                slots.iter().take(warmup).filter(|&&x| x == (e, r)).count() as u64;
            c
        })
        .collect();
    let mut slot = |i: u64| {
        let &(e, r) = slots.get(usize::try_from(i).ok()?)?;
        Some(usize::from(e) * ranks as usize + r as usize)
    };
    // One read of the trace with every scheduler side by side, their L3 stores shared
    // (`runtime.replay.l3_scope`); else each share apart (the plain-page LRU, an SWA
    // pool: no L3 to share).
    let mut flat =
        match super::replay_side_by_side(path, opts, &cfgs, ranks as usize, limit, &mut slot)? {
            Some(m) => m,
            None => {
                let mut out = Vec::with_capacity(cfgs.len());
                for (k, c) in cfgs.iter().enumerate() {
                    let (e, r) = ((k / ranks as usize) as u16, (k % ranks as usize) as u32);
                    let share = |i: usize| slots.get(i) == Some(&(e, r));
                    out.push(super::replay_share(path, opts, c, limit, factor, &share)?);
                }
                out
            }
        };
    let mut per_engine = Vec::with_capacity(spec.engines as usize);
    for _ in 0..spec.engines {
        let mut per_rank: Vec<ReplayMetrics> = flat.drain(..ranks as usize).collect();
        per_engine.push(if ranks > 1 {
            crate::runtime::dp::merge(per_rank)
        } else {
            per_rank.pop().expect("one rank")
        });
    }
    let mut m = crate::runtime::dp::merge(per_engine);
    m.engines = std::mem::take(&mut m.ranks);
    set_worker_figures(&mut figures, &m, spec, ranks);
    m.router = Some(figures);
    Ok(m)
}

/// The router's figures over its workers (the engines, or with `dp_aware` their ranks):
/// request and prompt-token imbalance, the engines and their DP ranks.
fn set_worker_figures(
    figures: &mut RouterFigures,
    m: &ReplayMetrics,
    spec: &RouterSpec,
    ranks: u32,
) {
    figures.request_imbalance = router::max_over_mean(figures.assigned.iter().copied());
    figures.token_imbalance = if spec.routes_ranks() && ranks > 1 {
        router::max_over_mean(
            m.engines
                .iter()
                .flat_map(|e| e.ranks.iter().map(|r| r.input_tokens)),
        )
    } else {
        router::max_over_mean(m.engines.iter().map(|e| e.input_tokens))
    };
    figures.engines = spec.engines;
    figures.dp_ranks = ranks;
    figures.dp_aware = spec.dp_aware;
}

/// The fleet's timed replay (`runtime::timed::fleet`): the router picks each request's
/// engine at its arrival from the engines' requests in flight then; every engine on its
/// own clock. One read of the trace.
fn replay_fleet_timed(
    path: &str,
    opts: &TraceOptions,
    cfg: &ReplayConfig,
    spec: &RouterSpec,
    limit: u64,
    factor: f64,
) -> Result<ReplayMetrics, InputError> {
    let mut reader = open_trace_with(std::path::Path::new(path), opts, cfg.capacities.page_size)?;
    let mut err: Option<InputError> = None;
    let out = {
        let requests = super::until_error(reader.by_ref(), &mut err)
            .take(limit.min(usize::MAX as u64) as usize);
        let requests = crate::workload::slowdown::slow_down(requests, factor);
        crate::runtime::replay_fleet_timed(cfg, spec, requests)
    };
    reader.finish()?;
    if let Some(e) = err {
        return Err(e);
    }
    let (mut m, figures) = out.map_err(|e| timed_error(path, e, None))?;
    set_timed_figures(&mut m, figures, cfg, spec);
    Ok(m)
}

/// A timed fleet's or PD deployment's error: the router's at its key, the replay's at
/// the trace (and `replay_field`, when given).
pub(super) fn timed_error(
    path: &str,
    e: crate::runtime::FleetError,
    replay_field: Option<&str>,
) -> InputError {
    match e {
        crate::runtime::FleetError::Router(r) => {
            let field = match r {
                router::RouterError::TreeFull { .. } => "runtime.router.max_tree_size",
                router::RouterError::TooManyPages => "runtime.trace",
            };
            InputError::new("runtime.router", r.to_string()).field(field)
        }
        crate::runtime::FleetError::Replay(r) => {
            let e = InputError::new(path, r.to_string());
            match replay_field {
                Some(f) => e.field(f),
                None => e,
            }
        }
    }
}

/// The router's figures of a timed replay completed (imbalances, engines, the engines'
/// DP ranks and their method) and set in `m`.
pub(super) fn set_timed_figures(
    m: &mut ReplayMetrics,
    mut figures: RouterFigures,
    cfg: &ReplayConfig,
    spec: &RouterSpec,
) {
    let ranks = cfg.capacities.dp_ranks.max(1);
    set_worker_figures(&mut figures, m, spec, ranks);
    // The engines' balance method decides only what the router does not route itself.
    if ranks > 1
        && !spec.routes_ranks()
        && cfg.capacities.dp_balance != crate::runtime::dp::DpBalance::RoundRobin
    {
        figures.dp_balance = Some(cfg.capacities.dp_balance.id().to_string());
    }
    m.router = Some(figures);
}

/// The spec the router runs: its workers are the engines, or with `dp_aware` every
/// engine's ranks.
fn routed_spec(spec: &RouterSpec, dp_ranks: u32) -> RouterSpec {
    RouterSpec {
        engines: spec.workers(dp_ranks),
        ..spec.clone()
    }
}

/// `replay --router-events`: the event sequence the fleet replay routes, as JSON lines
/// for the differential test against the router (`tools/router/router_golden.py`):
/// `{"op":"done","rid":"r3"}` before the send it precedes, `{"op":"send","rid":"r7",
/// "input_ids":[..],"engine":2}` (the engine the simulator chose, a position in the
/// router's worker order), and the outstanding requests' `done` at the end, oldest first.
pub fn write_router_events(
    path: &str,
    opts: &TraceOptions,
    page_size: u32,
    spec: &RouterSpec,
    dp_ranks: u32,
    limit: u64,
    out: &mut dyn Write,
) -> Result<RouterFigures, InputError> {
    validated(spec)?;
    if spec.policy == router::RouterPolicy::DynamoKv {
        return Err(InputError::new(
            "--router-events",
            "policy dynamo_kv: the event list is the sglang-router differential test's (routing texts); Dynamo's KV router is fed by the engines' state, not by the list",
        )
        .field("runtime.router.policy"));
    }
    let workers = spec.workers(dp_ranks);
    if workers > router::MAX_ENGINES {
        return Err(too_many_workers(spec.engines, dp_ranks, workers));
    }
    let spec = &routed_spec(spec, dp_ranks);
    let io = |e: std::io::Error| InputError::new("--router-events", e.to_string());
    let mut last = 0u64;
    let mut any = false;
    let figures = route_trace(path, opts, page_size, spec, limit, |r| {
        if let Some(d) = r.done {
            writeln!(out, "{{\"op\":\"done\",\"rid\":\"r{d}\"}}").map_err(io)?;
        }
        write!(
            out,
            "{{\"op\":\"send\",\"rid\":\"r{}\",\"input_ids\":[",
            r.index
        )
        .map_err(io)?;
        for (k, id) in r.text.input_ids.iter().enumerate() {
            if k > 0 {
                out.write_all(b",").map_err(io)?;
            }
            write!(out, "{id}").map_err(io)?;
        }
        writeln!(out, "],\"engine\":{}}}", r.engine).map_err(io)?;
        last = r.index;
        any = true;
        Ok(())
    })?;
    if any {
        let first_open = (last + 1).saturating_sub(u64::from(spec.in_flight.max(1)));
        for d in first_open..=last {
            writeln!(out, "{{\"op\":\"done\",\"rid\":\"r{d}\"}}").map_err(io)?;
        }
    }
    Ok(figures)
}
