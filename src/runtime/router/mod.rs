//! Several engines behind SGLang's router (untimed here; timed: `runtime::timed::fleet`). The router
//! (`sglang-router` 0.3.2 on PyPI, the last release under that name, the sglang 0.5.8
//! period) sends each request to one of N engines; each engine has its own radix tree
//! and pools (those the start-up sizes for one engine), so, as for data-parallel ranks
//! (`runtime::dp`), each engine is replayed on its own share of the trace and the figures
//! are summed.
//!
//! What is modelled, mirrored from the router's code (file and function named at each
//! item): `round_robin` (`src/policies/round_robin.rs: select_worker`) and
//! `cache_aware` (`src/policies/cache_aware.rs: select_worker`, over the approximate
//! radix tree of `src/policies/tree.rs`), every worker healthy, one model. The router's
//! worker list is a `DashMap` keyed by random UUIDs, so its order is a random permutation
//! per router process; engines here are numbered in that list's order (slice positions),
//! which the policies only ever compare by position.
//!
//! The routing text. Our traces hold page hashes, not tokens, so the router is taken to
//! see `/generate` with `input_ids`: one id per whole page, the page's number in order of
//! first appearance in the trace (0, 1, 2, …: a page is the same id wherever the same
//! prefix recurs). The router matches on the ids as decimal numbers joined by spaces
//! (`src/protocols/generate.rs: extract_text_for_routing`), characters, not ids: a
//! partial number matches too, as in the router. A prompt shorter than a page has an
//! empty text (rate 0). The differential test sends these very `input_ids`.
//!
//! Load. The router's load of a worker is its in-flight count: +1 when it is selected
//! (`WorkerLoadGuard`, cache_aware only in 0.3.2; round_robin never reads it), −1 once
//! the worker's response has been read (`src/routers/http/router.rs`). The untimed
//! replay has no clock, so completion is a rule of this simulator, not of the router:
//! at most `in_flight` requests are in flight; before request *i* is dispatched, request
//! *i − in_flight* completes (a sliding window; `in_flight: 1` is a sequential client).
//! [`Router::dispatch`] and the event list of `replay --router-events` follow that one
//! sequence. The timed replay (`runtime::timed::fleet`) has the clock: it passes each
//! engine's requests in flight at the arrival ([`Router::route_with_loads`]).
//!
//! Not modelled: the tree's eviction (a thread every `--eviction-interval-secs`, 60 s of
//! wall clock; a replay in which an engine's characters pass `--max-tree-size` is
//! refused); `random` and `power_of_two` (the thread RNG is OS-seeded; power_of_two reads
//! `/get_load` polled every 60 s) and `manual` (routing keys from headers): refused;
//! the router's retries and health checks (every worker answers); smg 1.x (the router
//! of sglang 0.5.21–0.5.23), whose cache_aware has no imbalance switch, matches every
//! tenant of a node and breaks ties with an unseeded random draw: refused.
//!
//! A second router: Dynamo's KV router (`policy: dynamo_kv`, [`dynamo_kv`],
//! `dynamo-kv-router` 1.6.1), fed by the engines' KV events rather than by routing text:
//! `pipeline::fleet` replays the engines side by side while it routes.
//!
//! Data-parallel ranks inside the engines (`pipeline::fleet`): the router picks an
//! engine and the engine's controller round-robins its ranks, or with `--dp-aware`
//! ([`RouterSpec::dp_aware`]) the router's workers are the ranks themselves.

pub mod cache_aware;
pub mod dynamo_kv;
pub mod tree;

use std::collections::{HashMap, VecDeque};
use std::io::Write as _;

use serde::{Deserialize, Serialize};

use crate::workload::{PageHash, Request};
use cache_aware::{Branch, CacheAware};

/// The router release modelled.
pub const ROUTER_VERSION: &str = "0.3.2";

/// The most engines a replay takes (the tree tells 64 tenants apart).
pub const MAX_ENGINES: u32 = tree::MAX_TENANTS;

/// The most requests in flight the window takes.
pub const MAX_IN_FLIGHT: u32 = 1 << 20;

/// `--policy`: the router's choices (`sglang_router/router_args.py`); only
/// `round_robin` and `cache_aware` are deterministic and modelled. `dynamo_kv` is
/// another router: Dynamo's KV router ([`dynamo_kv`]), its parameters under
/// `runtime.router.dynamo_kv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RouterPolicy {
    #[default]
    CacheAware,
    RoundRobin,
    Random,
    PowerOfTwo,
    Manual,
    DynamoKv,
}

impl RouterPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CacheAware => "cache_aware",
            Self::RoundRobin => "round_robin",
            Self::Random => "random",
            Self::PowerOfTwo => "power_of_two",
            Self::Manual => "manual",
            Self::DynamoKv => "dynamo_kv",
        }
    }
}

/// The scenario's `runtime.router:` section: the router's own flags, with the defaults
/// its launcher sets (`sglang_router/router_args.py: RouterArgs`, 0.3.2; not the Rust
/// `CacheAwareConfig::default()`, which only its tests use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RouterSpec {
    /// The `sglang-router` release whose policies are replayed: only `0.3.2`.
    pub version: String,
    /// Engines behind the router (`--worker-urls`); 1 = no router (today's replay).
    pub engines: u32,
    /// `--policy` (default `cache_aware`).
    pub policy: RouterPolicy,
    /// `--cache-threshold` (0.3): a match rate above it routes to the matched engine.
    /// Read as a Python float; the router compares it as `f32` (`CacheAwareConfig`).
    pub cache_threshold: f64,
    /// `--balance-abs-threshold` (64).
    pub balance_abs_threshold: u64,
    /// `--balance-rel-threshold` (1.5), compared as `f32` too.
    pub balance_rel_threshold: f64,
    /// `--max-tree-size` (2^26 characters per engine): a replay past it is refused
    /// (the eviction it would trigger runs on a wall clock).
    pub max_tree_size: u64,
    /// Requests in flight at once (this simulator's completion rule, not a router
    /// flag): request i completes before request i + in_flight is dispatched.
    pub in_flight: u32,
    /// `--dp-aware`: the router lists each engine's data-parallel ranks as workers
    /// (`url@rank`, `get_dp_aware_workers`) and picks the rank itself (the request's
    /// `data_parallel_rank`, which the engine's `DataParallelController` honours:
    /// `maybe_external_dp_rank_routing`). Off (the default): the router picks an engine
    /// and the engine's controller picks the rank (`round_robin`).
    pub dp_aware: bool,
    /// `policy: dynamo_kv`: Dynamo's KV router's parameters (read only under that
    /// policy).
    pub dynamo_kv: dynamo_kv::DynamoKvSpec,
    /// The scenario's `seed` (set where the scenario is read, not a key of the section):
    /// the stream Dynamo's random tie-breaks and softmax draws come from.
    #[serde(skip)]
    pub seed: u64,
}

impl Default for RouterSpec {
    fn default() -> Self {
        Self {
            version: ROUTER_VERSION.into(),
            engines: 1,
            policy: RouterPolicy::CacheAware,
            cache_threshold: 0.3,
            balance_abs_threshold: 64,
            balance_rel_threshold: 1.5,
            max_tree_size: 1 << 26,
            in_flight: 16,
            dp_aware: false,
            dynamo_kv: dynamo_kv::DynamoKvSpec::default(),
            seed: 0,
        }
    }
}

/// A `runtime.router` value the replay does not take: its key, why, and whether it is a
/// router behaviour that is not modelled (a `not_modelled` answer) rather than a bad
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterRefusal {
    pub key: &'static str,
    pub why: String,
    pub not_modelled: bool,
}

impl RouterRefusal {
    fn value((key, why): (&'static str, String)) -> Self {
        RouterRefusal {
            key,
            why,
            not_modelled: false,
        }
    }
    fn not_modelled((key, why): (&'static str, String)) -> Self {
        RouterRefusal {
            key,
            why,
            not_modelled: true,
        }
    }
}

impl RouterSpec {
    /// The first key with a value the replay does not take.
    pub fn validate(&self) -> Result<(), RouterRefusal> {
        if self.version != ROUTER_VERSION {
            return Err(RouterRefusal::not_modelled((
                "version",
                format!(
                    "`{}`: only sglang-router {ROUTER_VERSION} is modelled; smg 1.x (the router of sglang 0.5.21-0.5.23) breaks cache_aware ties with an unseeded random draw and has no imbalance switch: not modelled",
                    self.version
                ),
            )));
        }
        if !(1..=MAX_ENGINES).contains(&self.engines) {
            return Err(RouterRefusal::value((
                "engines",
                format!("{}: expected 1 to {MAX_ENGINES} engines", self.engines),
            )));
        }
        match self.policy {
            RouterPolicy::CacheAware | RouterPolicy::RoundRobin => {}
            RouterPolicy::DynamoKv => {
                self.dynamo_kv.validate().map_err(|e| RouterRefusal {
                    key: e.key,
                    why: e.why,
                    not_modelled: e.not_modelled,
                })?;
                if self.dp_aware {
                    return Err(RouterRefusal::not_modelled(("dp_aware", "true with policy dynamo_kv is not modelled: --dp-aware is sgl-router's flag, and Dynamo's KV router picks each engine's DP rank itself (every (worker, dp_rank) its own candidate); set dp_aware: false".into())));
                }
            }
            RouterPolicy::Random => return Err(RouterRefusal::not_modelled(("policy", "random is not modelled: the router draws from an OS-seeded thread RNG (src/policies/random.rs); use round_robin or cache_aware".into()))),
            RouterPolicy::PowerOfTwo => return Err(RouterRefusal::not_modelled(("policy", "power_of_two is not modelled: two workers drawn from an OS-seeded RNG, loads polled from /get_load every 60 s (src/policies/power_of_two.rs); use round_robin or cache_aware".into()))),
            RouterPolicy::Manual => return Err(RouterRefusal::not_modelled(("policy", "manual is not modelled: it routes on a routing-key header the trace does not have; use round_robin or cache_aware".into()))),
        }
        if !(self.cache_threshold.is_finite() && (0.0..=1.0).contains(&self.cache_threshold)) {
            return Err(RouterRefusal::value((
                "cache_threshold",
                format!(
                    "{}: expected a match rate from 0 to 1",
                    self.cache_threshold
                ),
            )));
        }
        if !(self.balance_rel_threshold.is_finite() && self.balance_rel_threshold >= 0.0) {
            return Err(RouterRefusal::value((
                "balance_rel_threshold",
                format!(
                    "{}: expected a finite ratio, 0 or more",
                    self.balance_rel_threshold
                ),
            )));
        }
        if self.max_tree_size == 0 {
            return Err(RouterRefusal::value((
                "max_tree_size",
                "0: expected a positive character count".into(),
            )));
        }
        if !(1..=MAX_IN_FLIGHT).contains(&self.in_flight) {
            return Err(RouterRefusal::value((
                "in_flight",
                format!("{}: expected 1 to {MAX_IN_FLIGHT}", self.in_flight),
            )));
        }
        Ok(())
    }

    /// Whether the replay has engines behind a router (more than one), or a router that
    /// picks the DP ranks (`dp_aware`; Dynamo's, when the engines have `dp_ranks` ranks).
    pub fn is_fleet(&self, dp_ranks: u32) -> bool {
        self.engines > 1 || self.dp_aware || (self.routes_ranks() && dp_ranks > 1)
    }

    /// The router picks the DP rank a request runs on, past the engine's
    /// `DataParallelController` method: sgl-router with `--dp-aware`, and Dynamo's KV
    /// router, which scores every (worker, dp_rank) as its own candidate
    /// (`dynamo-kv-router` 1.6.1 `scheduling/selector/reference.rs`:
    /// `for_each_eligible_worker_rank`), each rank publishing its own KV events, and whose
    /// SGLang worker passes the rank on (ai-dynamo/dynamo
    /// `components/src/dynamo/sglang/request_handlers`: `async_generate(...,
    /// data_parallel_rank=dp_rank)` from the router's `routing.dp_rank`).
    pub fn routes_ranks(&self) -> bool {
        self.dp_aware || self.policy == RouterPolicy::DynamoKv
    }

    /// The workers the router chooses among with `dp_ranks` ranks an engine: the engines,
    /// or when it routes ranks ([`Self::routes_ranks`]) every engine's ranks
    /// (engine-major, as `get_dp_aware_workers` lists them).
    pub fn workers(&self, dp_ranks: u32) -> u32 {
        if self.routes_ranks() {
            self.engines.saturating_mul(dp_ranks.max(1))
        } else {
            self.engines
        }
    }
}

/// The router's figures over a replay (`metrics.router`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RouterFigures {
    /// `sglang-router 0.3.2`.
    pub router: String,
    pub policy: String,
    pub engines: u32,
    pub in_flight: u32,
    /// Requests routed, per engine (warm-up included).
    pub assigned: Vec<u64>,
    /// cache_aware decisions: above the cache threshold (to the matched engine), at or
    /// below it (least load), and under imbalance (least load).
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub imbalanced: u64,
    /// cache_aware: the characters of each engine's part of the router's tree
    /// (`tenant_char_count`, what `--max-tree-size` bounds); empty for round_robin.
    pub tree_chars: Vec<u64>,
    /// dynamo_kv: decisions with two or more engines at the least cost, drawn at random
    /// (from the scenario's seed) as Dynamo draws them (not written while 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub tie_draws: u64,
    /// dynamo_kv: requests sent to a worker (an engine, or a rank) holding some of their
    /// prefix on the device
    /// or the host (not written while 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub overlap_routed: u64,
    /// Requests routed: most per engine over the mean (1.0: even).
    pub request_imbalance: f64,
    /// Prompt tokens: most per engine over the mean.
    pub token_imbalance: f64,
    /// Data-parallel ranks inside each engine (not written while 1).
    #[serde(skip_serializing_if = "is_one")]
    pub dp_ranks: u32,
    /// `--dp-aware`: the router's workers (`assigned`, `tree_chars`) are the ranks,
    /// engine-major; else the engines (not written while off).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dp_aware: bool,
    /// Timed (`runtime::timed::fleet`): the router's loads are the engines' requests in
    /// flight on the clock, and `in_flight` (the untimed completion window) is unused
    /// (not written while off).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clock_loads: bool,
    /// The engines' `--load-balance-method` over their DP ranks when not round-robin
    /// (timed; not written otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp_balance: Option<String>,
}

fn is_one(n: &u32) -> bool {
    *n <= 1
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why the router cannot replay a trace.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouterError {
    #[error(
        "engine {engine}'s router tree holds {chars} characters, past max_tree_size {max}: the router's eviction (every 60 s of wall clock) would have run, which the untimed replay does not model; use a shorter trace (runtime.max_requests) or a larger runtime.router.max_tree_size"
    )]
    TreeFull { engine: u16, chars: u64, max: u64 },
    #[error(
        "more than {} distinct pages: the router's input_ids are 32-bit",
        i32::MAX
    )]
    TooManyPages,
}

/// Routing texts from page hashes: each page numbered in order of first appearance,
/// the numbers written as the router joins `input_ids`.
#[derive(Debug, Default)]
pub struct RoutingText {
    ids: HashMap<PageHash, u32>,
    /// The current request's ids and text (buffers reused across requests).
    pub input_ids: Vec<u32>,
    pub text: Vec<u8>,
}

impl RoutingText {
    /// Fills `input_ids` and `text` for `pages`.
    pub fn set(&mut self, pages: &[PageHash]) -> Result<(), RouterError> {
        self.input_ids.clear();
        self.text.clear();
        for (k, &h) in pages.iter().enumerate() {
            let next = self.ids.len() as u32;
            if next > i32::MAX as u32 {
                return Err(RouterError::TooManyPages);
            }
            let id = *self.ids.entry(h).or_insert(next);
            self.input_ids.push(id);
            if k > 0 {
                self.text.push(b' ');
            }
            // Writing to a Vec cannot fail.
            let _ = write!(self.text, "{id}");
        }
        Ok(())
    }
}

/// The router in front of the engines, with the completion window.
#[derive(Debug, Clone)]
pub struct Router {
    policy: Policy,
    in_flight: u32,
    max_tree_size: u64,
    /// In-flight requests per engine (the router's `load`).
    loads: Vec<u32>,
    /// Engines of the requests in flight, oldest first.
    window: VecDeque<u16>,
    figures: RouterFigures,
}

#[derive(Debug, Clone)]
enum Policy {
    /// `round_robin.rs`: `counter.fetch_add(1) % healthy.len()`, from 0.
    RoundRobin {
        counter: u64,
    },
    CacheAware(Box<CacheAware>),
}

impl Router {
    pub fn new(spec: &RouterSpec) -> Self {
        let n = spec.engines.clamp(1, MAX_ENGINES);
        let policy = match spec.policy {
            RouterPolicy::CacheAware => Policy::CacheAware(Box::new(CacheAware::new(
                n,
                // pyo3 reads the launcher's Python floats into the config's f32 fields.
                spec.cache_threshold as f32,
                spec.balance_abs_threshold,
                spec.balance_rel_threshold as f32,
            ))),
            _ => Policy::RoundRobin { counter: 0 },
        };
        Self {
            policy,
            in_flight: spec.in_flight.max(1),
            max_tree_size: spec.max_tree_size,
            loads: vec![0; n as usize],
            window: VecDeque::with_capacity(spec.in_flight.clamp(1, 4096) as usize),
            figures: RouterFigures {
                router: format!("sglang-router {ROUTER_VERSION}"),
                policy: spec.policy.as_str().into(),
                engines: n,
                in_flight: spec.in_flight,
                assigned: vec![0; n as usize],
                ..RouterFigures::default()
            },
        }
    }

    /// The next request: completes the oldest one if `in_flight` are in flight
    /// (returning its engine), then routes `text` and returns the engine chosen.
    pub fn dispatch(&mut self, text: &[u8]) -> Result<(Option<u16>, u16), RouterError> {
        let done = if self.window.len() as u32 >= self.in_flight {
            self.window.pop_front().inspect(|&e| {
                self.loads[usize::from(e)] -= 1;
            })
        } else {
            None
        };
        let engine = self.pick(text)?;
        self.loads[usize::from(engine)] += 1;
        self.window.push_back(engine);
        Ok((done, engine))
    }

    /// Routes `text` with each engine's requests in flight given (`loads`: the timed
    /// replay's engines, dispatched and not finished, as the router counts a worker's
    /// load from the request it sends to the response's end) instead of the
    /// completion window.
    pub fn route_with_loads(&mut self, text: &[u8], loads: &[u32]) -> Result<u16, RouterError> {
        self.loads.copy_from_slice(loads);
        self.pick(text)
    }

    /// The policy's choice for `text` at the current loads, counted in the figures.
    fn pick(&mut self, text: &[u8]) -> Result<u16, RouterError> {
        let engine = match &mut self.policy {
            Policy::RoundRobin { counter } => {
                let e = (*counter % self.loads.len() as u64) as u16;
                *counter += 1;
                e
            }
            Policy::CacheAware(p) => {
                let (e, branch) = p.select_worker(&self.loads, text);
                match branch {
                    Branch::Hit => self.figures.cache_hits += 1,
                    Branch::Miss => self.figures.cache_misses += 1,
                    Branch::Imbalanced => self.figures.imbalanced += 1,
                }
                let chars = p.tree.tenant_chars(e);
                if chars > self.max_tree_size {
                    return Err(RouterError::TreeFull {
                        engine: e,
                        chars,
                        max: self.max_tree_size,
                    });
                }
                e
            }
        };
        self.figures.assigned[usize::from(engine)] += 1;
        Ok(engine)
    }

    /// The figures so far.
    pub fn figures(&self) -> RouterFigures {
        let mut f = self.figures.clone();
        if let Policy::CacheAware(p) = &self.policy {
            f.tree_chars = (0..self.loads.len() as u16)
                .map(|e| p.tree.tenant_chars(e))
                .collect();
        }
        f
    }
}

/// Routes `requests` (trace order): the engine of each, and the router's figures
/// (imbalances not yet filled: they need the engines' replays).
pub fn assign<I: IntoIterator<Item = Request>>(
    spec: &RouterSpec,
    requests: I,
) -> Result<(Vec<u16>, RouterFigures), RouterError> {
    let mut router = Router::new(spec);
    let mut text = RoutingText::default();
    let mut out = Vec::new();
    for r in requests {
        text.set(&r.page_hashes)?;
        out.push(router.dispatch(&text.text)?.1);
    }
    Ok((out, router.figures()))
}

/// Most over mean of `xs` (1.0 when all are 0 or there is none).
pub fn max_over_mean(xs: impl IntoIterator<Item = u64>) -> f64 {
    let (mut n, mut sum, mut max) = (0u64, 0u64, 0u64);
    for x in xs {
        n += 1;
        sum += x;
        max = max.max(x);
    }
    if sum == 0 {
        1.0
    } else {
        max as f64 * n as f64 / sum as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_launchers() {
        let s = RouterSpec::default();
        assert_eq!(
            (
                s.cache_threshold,
                s.balance_abs_threshold,
                s.balance_rel_threshold
            ),
            (0.3, 64, 1.5)
        );
        assert_eq!(s.max_tree_size, 67_108_864);
        assert_eq!(s.policy, RouterPolicy::CacheAware);
        assert!(s.validate().is_ok());
    }

    #[test]
    fn routing_text_numbers_pages_by_first_appearance() {
        let mut t = RoutingText::default();
        t.set(&[900, 17, 5]).unwrap();
        assert_eq!(t.text, b"0 1 2");
        t.set(&[900, 17, 44]).unwrap();
        assert_eq!(
            (t.input_ids.as_slice(), t.text.as_slice()),
            (&[0, 1, 3][..], &b"0 1 3"[..])
        );
        t.set(&[]).unwrap();
        assert!(t.text.is_empty());
    }

    #[test]
    fn the_window_completes_the_oldest_request() {
        // in_flight 2, round robin over 2 engines: request i completes before i + 2
        let spec = RouterSpec {
            engines: 2,
            policy: RouterPolicy::RoundRobin,
            in_flight: 2,
            ..RouterSpec::default()
        };
        let mut r = Router::new(&spec);
        assert_eq!(r.dispatch(b"").unwrap(), (None, 0));
        assert_eq!(r.dispatch(b"").unwrap(), (None, 1));
        assert_eq!(r.dispatch(b"").unwrap(), (Some(0), 0));
        assert_eq!(r.dispatch(b"").unwrap(), (Some(1), 1));
        assert_eq!(r.figures().assigned, [2, 2]);
    }

    #[test]
    fn a_tree_past_max_tree_size_is_refused() {
        let spec = RouterSpec {
            engines: 2,
            max_tree_size: 5,
            ..RouterSpec::default()
        };
        let mut r = Router::new(&spec);
        // "1 2" (3 chars): a miss to engine 0; "7 8 9" (5 chars): a miss to engine 1
        // (loads [1, 0]), 5 chars: not past 5
        assert_eq!(r.dispatch(b"1 2").unwrap(), (None, 0));
        assert_eq!(r.dispatch(b"7 8 9").unwrap(), (None, 1));
        // "7 8 9 1 0": 5 of 9 chars match (0.556 > 0.3), engine 1, which joins the new
        // edge " 1 0": 9 characters
        assert_eq!(
            r.dispatch(b"7 8 9 1 0"),
            Err(RouterError::TreeFull {
                engine: 1,
                chars: 9,
                max: 5
            })
        );
    }
}
