//! Dynamo's KV router (`runtime.router.policy: dynamo_kv`): NVIDIA Dynamo's default
//! worker selection, as the crates.io crate `dynamo-kv-router` 1.6.1 has it (source
//! commit `0d9c24a8`, `lib/kv-router`), ported rule by rule:
//!
//! - **Overlap, from the engines' KV events.** Each engine publishes the blocks it
//!   stores and removes, with a medium (`protocols.rs: StorageTier::from_kv_medium`:
//!   `GPU` device, `CPU`/`CPU_PINNED`/`CPU_TIER1` host, `CPU_TIER2`/`DISK`/… disk). The
//!   device tier is a radix tree of chained block hashes: a worker's device overlap is
//!   its longest matched prefix of the request's blocks (`indexer/radix_tree.rs:
//!   find_matches`). A lower tier is matched on from each worker's device frontier
//!   (`indexer/lower_tier.rs`: consecutive blocks of that tier right after the device
//!   match). The replay reads them off each engine's tree as it stands when the request
//!   arrives ([`crate::cache::HiRadixTree::peek_tiers`]); SGLang's L3 is not published
//!   per engine here, so the disk term is 0.
//! - **Cost** (`scheduling/selector/reference.rs: DefaultWorkerScorer::worker_logit`,
//!   the crate's reference selector, kept for its tests and benchmarks; the production
//!   default, `lib/router-plugins/builtin/src/default/{scorer,picker}.rs`, is not on
//!   crates.io and was read at a later commit of the repository: same formula, same draw):
//!   `credit = overlap_score_credit × device + host_cache_hit_weight × host +
//!   disk_cache_hit_weight × disk`; `cached = round((device + host_w × host + disk_w ×
//!   disk) × block_size)` (`scheduling/overlap.rs: cache_hit_estimates_from_tiered_matches`);
//!   `prefill_blocks = ((active_prefill + (isl − cached)) + cached) / block_size`;
//!   `logit = prefill_load_scale × max(0, prefill_blocks − credit) + decode_blocks +
//!   decode_active_request_weight × active_requests` (that weight is 0 by default and
//!   not a key here). `overlap_score_credit_decay` is 0 by default (no decay) and not a
//!   key here; the shared-cache (`--shared-cache-type hicache`) credit is off by default
//!   and not modelled.
//! - **Load** (`sequences/prompt_registry.rs: project_worker_loads_into`):
//!   `decode_blocks = active_decode_blocks + (request blocks − the request's prefix
//!   depth among the worker's active requests)`, the active blocks counted once per
//!   worker however many active requests hold them; `active_prefill` is the effective
//!   prompt tokens (`isl − cached` on the worker at routing,
//!   `scheduling/prefill_load.rs: effective_prefill_tokens`) of requests whose first
//!   token has not come back.
//! - **Choice** (`selector/reference.rs: pick_default_worker`, same rule in
//!   `router-plugins/builtin/src/default/picker.rs: DefaultPicker::pick`): temperature
//!   0 → the least cost, ties broken uniformly at random (reservoir draw `fastrand::usize
//!   (0..ties) == 0` over the workers); temperature > 0 → `softmax_sample_index`:
//!   costs normalised to their range, weights `exp(−(cost − min) / ((max − min) ×
//!   temperature))`, one uniform draw against the running sum; all costs equal →
//!   uniform.
//!
//! The replay's side of it (not Dynamo's):
//! - **Randomness.** Dynamo draws ties and softmax samples from `fastrand`'s
//!   thread-local generator (OS-seeded), over the workers in `HashMap` order. The replay
//!   draws them from one [`crate::engine::stream`] of the scenario's `seed`, over
//!   the engines in order: the same distribution, not the same draws, so a run's
//!   per-engine assignment is reproducible here but cannot be compared draw for draw
//!   with a Dynamo process.
//! - **Load.** The untimed replay has no clock. The completion window of
//!   `runtime.router.in_flight` stands for concurrency: before request *i* is routed,
//!   request *i − in_flight* completes (Dynamo frees its blocks). The engines replay each
//!   request's prefill when it is routed (its blocks are in the tree, and their KV
//!   events at the router, before the next request), so every request in flight is
//!   counted as past its first token: its prompt blocks are active decode blocks, and
//!   `active_prefill` is 0 for every worker at every decision. With `in_flight: 1` (a
//!   sequential client) no block is active: `decode_blocks` is the request's own block
//!   count on every worker, and the choice is the largest weighted overlap.
//! - The request's blocks are the engine's pages (Dynamo's block size is the engine's
//!   KV block size, SGLang's `--page-size`), a trace's chained page hashes standing for
//!   Dynamo's sequence hashes; `isl` is the prompt's tokens.

use std::collections::VecDeque;

use rand::RngExt;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::engine::SimRng;
use crate::workload::PageHash;

/// The `dynamo-kv-router` release whose selection is replayed.
pub const DYNAMO_VERSION: &str = "1.6.1";

/// `runtime.router.dynamo_kv`: the router's parameters, named as `KvRouterConfig`'s
/// fields (`scheduling/config.rs`; the `DYN_ROUTER_*` variables of the same names), with
/// its defaults (`KvRouterConfig::default()`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DynamoKvSpec {
    /// The `dynamo-kv-router` release: only `1.6.1`.
    pub version: String,
    /// `overlap_score_credit` (1.0): the credit per device block matched.
    pub overlap_score_credit: f64,
    /// `prefill_load_scale` (1.0): the scale of the prompt-side cost after the credits.
    pub prefill_load_scale: f64,
    /// The deprecated `--kv-overlap-score-weight` / `DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT`:
    /// sets `prefill_load_scale`, and a 0 also zeroes `overlap_score_credit`
    /// (`config.rs: apply_deprecated_overlap_score_weight_override`). Unset by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_overlap_score_weight: Option<f64>,
    /// `host_cache_hit_weight` (0.75): the credit per host block after the device match.
    pub host_cache_hit_weight: f64,
    /// `disk_cache_hit_weight` (0.25): the credit per disk block (none is published in
    /// the replay: see the module's notes).
    pub disk_cache_hit_weight: f64,
    /// `router_temperature` (0.0): 0 picks the least cost, more draws from a softmax.
    pub router_temperature: f64,
    /// `use_kv_events` (true). `false` is Dynamo's approximate mode (the router predicts
    /// the caches from its own choices, with a TTL of wall clock): not modelled.
    pub use_kv_events: bool,
}

impl Default for DynamoKvSpec {
    fn default() -> Self {
        Self {
            version: DYNAMO_VERSION.into(),
            overlap_score_credit: 1.0,
            prefill_load_scale: 1.0,
            kv_overlap_score_weight: None,
            host_cache_hit_weight: 0.75,
            disk_cache_hit_weight: 0.25,
            router_temperature: 0.0,
            use_kv_events: true,
        }
    }
}

/// A `dynamo_kv` key the replay does not take: its key (`dynamo_kv.KEY`), why, and
/// whether it is a behaviour that is not modelled rather than a bad value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoRefusal {
    pub key: &'static str,
    pub why: String,
    pub not_modelled: bool,
}

impl DynamoKvSpec {
    /// The first key with a value the replay does not take.
    pub fn validate(&self) -> Result<(), DynamoRefusal> {
        let bad = |key: &'static str, why: String| {
            Err(DynamoRefusal {
                key,
                why,
                not_modelled: false,
            })
        };
        if self.version != DYNAMO_VERSION {
            return Err(DynamoRefusal {
                key: "dynamo_kv.version",
                why: format!(
                    "`{}`: only dynamo-kv-router {DYNAMO_VERSION} is modelled",
                    self.version
                ),
                not_modelled: true,
            });
        }
        let weights: [(&'static str, f64); 4] = [
            ("dynamo_kv.overlap_score_credit", self.overlap_score_credit),
            ("dynamo_kv.prefill_load_scale", self.prefill_load_scale),
            (
                "dynamo_kv.host_cache_hit_weight",
                self.host_cache_hit_weight,
            ),
            (
                "dynamo_kv.disk_cache_hit_weight",
                self.disk_cache_hit_weight,
            ),
        ];
        for (key, v) in weights {
            if !(v.is_finite() && v >= 0.0) {
                return bad(key, format!("{v}: expected a finite number, 0 or more"));
            }
        }
        if let Some(v) = self.kv_overlap_score_weight
            && !(v.is_finite() && v >= 0.0)
        {
            return bad(
                "dynamo_kv.kv_overlap_score_weight",
                format!("{v}: expected a finite number, 0 or more"),
            );
        }
        let t = self.router_temperature;
        if !(t.is_finite() && t >= 0.0) {
            return bad(
                "dynamo_kv.router_temperature",
                format!("{t}: expected a finite temperature, 0 or more"),
            );
        }
        if !self.use_kv_events {
            return Err(DynamoRefusal {
                key: "dynamo_kv.use_kv_events",
                why: "false (Dynamo's approximate mode: the router predicts each worker's cache from its own choices and forgets them after router_ttl_secs of wall clock) is not modelled: the untimed replay has no clock; use true (the engines' KV events)".into(),
                not_modelled: true,
            });
        }
        Ok(())
    }

    /// `(overlap_score_credit, prefill_load_scale)` after the deprecated weight.
    pub fn effective_credit_and_scale(&self) -> (f64, f64) {
        let (mut credit, mut scale) = (self.overlap_score_credit, self.prefill_load_scale);
        if let Some(w) = self.kv_overlap_score_weight {
            scale = w;
            if w == 0.0 {
                credit = 0.0;
            }
        }
        (credit, scale)
    }
}

/// One worker's blocks of the request per tier, as its KV events publish them: the
/// device prefix, the host blocks right after it, the disk blocks after those.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TierOverlap {
    pub device: u64,
    pub host: u64,
    pub disk: u64,
}

/// One worker's load as Dynamo projects it for a request
/// (`sequences::WorkerLoadProjection`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerLoad {
    pub active_prefill_tokens: u64,
    pub active_decode_blocks: u64,
    /// The request's blocks not already active on the worker.
    pub additional_active_blocks: u64,
}

/// The default cost of one worker (`DefaultWorkerScorer::worker_logit`, no decay, no
/// shared cache, `decode_active_request_weight` 0), in Dynamo's order of operations.
pub fn worker_cost(
    credit_weight: f64,
    prefill_load_scale: f64,
    host_weight: f64,
    disk_weight: f64,
    block_size: u32,
    isl_tokens: u64,
    overlap: TierOverlap,
    load: WorkerLoad,
) -> f64 {
    let (device, host, disk) = (
        overlap.device as f64,
        overlap.host as f64,
        overlap.disk as f64,
    );
    // `cache_hit_estimates_from_tiered_matches`: device, then each lower tier whose
    // weight and hits are not 0; cached tokens rounded.
    let cached = cached_tokens(host_weight, disk_weight, block_size, overlap);
    let credit = credit_weight * device + host_weight * host + disk_weight * disk + 0.0;
    let uncached = isl_tokens.saturating_sub(cached);
    let raw_tokens = (load.active_prefill_tokens + uncached).saturating_add(cached);
    let raw_blocks = raw_tokens as f64 / f64::from(block_size);
    let adjusted = (raw_blocks - credit).max(0.0);
    let decode = (load.active_decode_blocks + load.additional_active_blocks) as f64;
    prefill_load_scale * adjusted + decode + 0.0
}

/// The cached tokens Dynamo estimates from a worker's tiers
/// (`scheduling/overlap.rs: cache_hit_estimates_from_tiered_matches`): the device blocks,
/// plus each lower tier's blocks times its weight when neither is 0, times the block
/// size, rounded.
pub fn cached_tokens(host_weight: f64, disk_weight: f64, block_size: u32, o: TierOverlap) -> u64 {
    let mut effective = o.device as f64;
    if host_weight != 0.0 && o.host != 0 {
        effective += o.host as f64 * host_weight;
    }
    if disk_weight != 0.0 && o.disk != 0 {
        effective += o.disk as f64 * disk_weight;
    }
    (effective * f64::from(block_size)).round().max(0.0) as u64
}

/// `softmax_sample_index` (`selector/reference.rs`): the row drawn by `sample` (uniform
/// in [0, 1)) from costs at `temperature` > 0.
pub fn softmax_sample_index(costs: &[f64], temperature: f64, sample: f64) -> usize {
    assert!(!costs.is_empty(), "no worker to sample");
    let (min_cost, max_cost) = costs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &c| {
            (lo.min(c), hi.max(c))
        });
    let mut p: Vec<f64> = if min_cost == max_cost {
        vec![1.0 / costs.len() as f64; costs.len()]
    } else {
        let range = max_cost - min_cost;
        let magnitude = if range.is_finite() {
            1.0
        } else {
            min_cost.abs().max(max_cost.abs())
        };
        let min_normalized = min_cost / magnitude;
        let scale = -1.0 / ((max_cost / magnitude - min_normalized) * temperature);
        let max_scaled = min_normalized * scale;
        costs
            .iter()
            .map(|&c| (c / magnitude * scale - max_scaled).exp())
            .collect()
    };
    let sum: f64 = p.iter().sum();
    for x in p.iter_mut() {
        *x /= sum;
    }
    let mut cumulative = 0.0;
    for (row, x) in p.iter().enumerate() {
        cumulative += x;
        if sample <= cumulative {
            return row;
        }
    }
    costs.len() - 1
}

/// Dynamo's KV router over `n` engines, with the replay's completion window.
#[derive(Debug, Clone)]
pub struct DynamoKv {
    credit: f64,
    scale: f64,
    host_weight: f64,
    disk_weight: f64,
    temperature: f64,
    block_size: u32,
    in_flight: u32,
    rng: SimRng,
    /// Each worker's active blocks, with the number of active requests holding each.
    active: Vec<FxHashMap<PageHash, u32>>,
    /// Requests in flight, oldest first: worker and blocks (the untimed window).
    window: VecDeque<(u16, Vec<PageHash>)>,
    /// Timed: each worker's active prefill tokens (the effective prompt tokens of its
    /// requests whose first token has not come back).
    prefill: Vec<u64>,
    /// Timed: each request in flight by trace position: its worker, blocks and the
    /// prefill tokens it still counts.
    booked: FxHashMap<u64, (u16, Vec<PageHash>, u64)>,
    /// The costs of the last decision, per worker.
    pub costs: Vec<f64>,
    /// Decisions with two or more workers at the least cost (temperature 0), drawn.
    pub tie_draws: u64,
    /// Decisions that went to a worker with some overlap (device or host).
    pub overlap_routed: u64,
}

impl DynamoKv {
    /// The router over `n` workers of `block_size`-token blocks, drawing from `rng`.
    pub fn new(spec: &DynamoKvSpec, n: u32, block_size: u32, in_flight: u32, rng: SimRng) -> Self {
        let (credit, scale) = spec.effective_credit_and_scale();
        Self {
            credit,
            scale,
            host_weight: spec.host_cache_hit_weight,
            disk_weight: spec.disk_cache_hit_weight,
            temperature: spec.router_temperature,
            block_size: block_size.max(1),
            in_flight: in_flight.max(1),
            rng,
            active: vec![FxHashMap::default(); n.max(1) as usize],
            window: VecDeque::new(),
            prefill: vec![0; n.max(1) as usize],
            booked: FxHashMap::default(),
            costs: Vec::new(),
            tie_draws: 0,
            overlap_routed: 0,
        }
    }

    /// Its figures (`metrics.router`), with each engine's requests and the untimed
    /// completion window.
    pub fn figures(&self, in_flight: u32, assigned: Vec<u64>) -> super::RouterFigures {
        super::RouterFigures {
            router: format!("dynamo-kv-router {DYNAMO_VERSION}"),
            policy: super::RouterPolicy::DynamoKv.as_str().into(),
            engines: assigned.len() as u32,
            in_flight,
            assigned,
            tie_draws: self.tie_draws,
            overlap_routed: self.overlap_routed,
            ..super::RouterFigures::default()
        }
    }

    /// Worker `w`'s load for a request of `blocks`.
    pub fn load(&self, w: usize, blocks: &[PageHash]) -> WorkerLoad {
        let a = &self.active[w];
        let depth = blocks.iter().take_while(|b| a.contains_key(b)).count() as u64;
        WorkerLoad {
            active_prefill_tokens: self.prefill[w],
            active_decode_blocks: a.len() as u64,
            additional_active_blocks: blocks.len() as u64 - depth,
        }
    }

    /// Routes a request of `isl_tokens` prompt tokens and `blocks` (its whole pages),
    /// given every worker's tiers: completes the oldest request if `in_flight` are in
    /// flight, picks the worker, and books the request on it.
    pub fn select(
        &mut self,
        blocks: &[PageHash],
        isl_tokens: u64,
        overlaps: &[TierOverlap],
    ) -> u16 {
        if self.window.len() as u32 >= self.in_flight
            && let Some((w, done)) = self.window.pop_front()
        {
            self.release_blocks(w, &done);
        }
        let chosen = self.choose(blocks, isl_tokens, overlaps);
        self.book(chosen, blocks);
        self.window.push_back((chosen as u16, blocks.to_vec()));
        chosen as u16
    }

    /// The timed replay's routing of the request at trace position `index`: picks the
    /// worker from the loads the router tracks now, and books the request on it, its
    /// effective prompt tokens (`isl − cached` on that worker,
    /// `scheduling/prefill_load.rs: effective_prefill_tokens`) counted as active prefill
    /// until [`Self::first_token`], its blocks active until [`Self::finished`]
    /// (`sequences/multi_worker.rs: add_request`, `mark_prefill_completed`, `free`).
    pub fn select_timed(
        &mut self,
        index: u64,
        blocks: &[PageHash],
        isl_tokens: u64,
        overlaps: &[TierOverlap],
    ) -> u16 {
        let chosen = self.choose(blocks, isl_tokens, overlaps);
        self.book(chosen, blocks);
        let o = overlaps.get(chosen).copied().unwrap_or_default();
        let cached = cached_tokens(self.host_weight, self.disk_weight, self.block_size, o);
        let effective = isl_tokens.saturating_sub(cached.min(isl_tokens));
        self.prefill[chosen] += effective;
        self.booked
            .insert(index, (chosen as u16, blocks.to_vec(), effective));
        chosen as u16
    }

    /// The first token of the request at trace position `index` came back: its prompt
    /// leaves its worker's active prefill.
    pub fn first_token(&mut self, index: u64) {
        if let Some((w, _, p)) = self.booked.get_mut(&index) {
            self.prefill[usize::from(*w)] -= *p;
            *p = 0;
        }
    }

    /// The request at trace position `index` finished: its blocks leave its worker.
    pub fn finished(&mut self, index: u64) {
        if let Some((w, blocks, p)) = self.booked.remove(&index) {
            self.prefill[usize::from(w)] -= p;
            self.release_blocks(w, &blocks);
        }
    }

    fn release_blocks(&mut self, w: u16, blocks: &[PageHash]) {
        let a = &mut self.active[usize::from(w)];
        for b in blocks {
            if let Some(c) = a.get_mut(b) {
                *c -= 1;
                if *c == 0 {
                    a.remove(b);
                }
            }
        }
    }

    fn book(&mut self, chosen: usize, blocks: &[PageHash]) {
        let a = &mut self.active[chosen];
        for &b in blocks {
            *a.entry(b).or_insert(0) += 1;
        }
    }

    /// The worker of least cost (or the softmax draw), the decision's figures counted.
    fn choose(&mut self, blocks: &[PageHash], isl_tokens: u64, overlaps: &[TierOverlap]) -> usize {
        let n = self.active.len();
        self.costs.clear();
        for (w, &o) in overlaps.iter().enumerate().take(n) {
            let load = self.load(w, blocks);
            self.costs.push(worker_cost(
                self.credit,
                self.scale,
                self.host_weight,
                self.disk_weight,
                self.block_size,
                isl_tokens,
                o,
                load,
            ));
        }
        let chosen = if self.temperature == 0.0 {
            // `pick_default_worker`: the least cost, ties drawn as they come.
            let (mut best, mut best_cost, mut ties) = (0usize, f64::INFINITY, 0usize);
            for (w, &c) in self.costs.iter().enumerate() {
                if c < best_cost {
                    best = w;
                    best_cost = c;
                    ties = 1;
                } else if c == best_cost {
                    ties += 1;
                    if self.rng.random_range(0..ties) == 0 {
                        best = w;
                    }
                }
            }
            if ties > 1 {
                self.tie_draws += 1;
            }
            best
        } else {
            let sample: f64 = self.rng.random();
            softmax_sample_index(&self.costs, self.temperature, sample)
        };
        let o = overlaps.get(chosen).copied().unwrap_or_default();
        if o.device + o.host + o.disk > 0 {
            self.overlap_routed += 1;
        }
        chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiers(device: u64, host: u64) -> TierOverlap {
        TierOverlap {
            device,
            host,
            disk: 0,
        }
    }

    #[test]
    fn defaults_are_kv_router_configs() {
        let s = DynamoKvSpec::default();
        assert_eq!(
            (
                s.overlap_score_credit,
                s.prefill_load_scale,
                s.host_cache_hit_weight,
                s.disk_cache_hit_weight,
                s.router_temperature,
                s.use_kv_events
            ),
            (1.0, 1.0, 0.75, 0.25, 0.0, true)
        );
        assert!(s.validate().is_ok());
    }

    #[test]
    fn the_deprecated_weight_sets_the_scale_and_a_zero_drops_the_credit() {
        let mut s = DynamoKvSpec {
            kv_overlap_score_weight: Some(2.0),
            ..DynamoKvSpec::default()
        };
        assert_eq!(s.effective_credit_and_scale(), (1.0, 2.0));
        s.kv_overlap_score_weight = Some(0.0);
        assert_eq!(s.effective_credit_and_scale(), (0.0, 0.0));
    }

    #[test]
    fn cost_by_hand() {
        // 100 tokens, blocks of 16 (6 whole), 4 on device and 2 on host, nothing active:
        // cached = round((4 + 1.5) × 16) = 88; prefill = (0 + 12 + 88) / 16 = 6.25;
        // credit = 4 + 1.5 = 5.5; logit = 0.75 + decode 6 = 6.75
        let load = WorkerLoad {
            additional_active_blocks: 6,
            ..WorkerLoad::default()
        };
        let c = worker_cost(1.0, 1.0, 0.75, 0.25, 16, 100, tiers(4, 2), load);
        assert_eq!(c, 6.75);
        // no overlap: 100 / 16 + 6 = 12.25
        assert_eq!(
            worker_cost(1.0, 1.0, 0.75, 0.25, 16, 100, tiers(0, 0), load),
            12.25
        );
    }

    #[test]
    fn softmax_matches_dynamos_sampler() {
        // costs 0 and 1 at temperature 1: weights e^0, e^-1 → p0 = 0.7311
        assert_eq!(softmax_sample_index(&[0.0, 1.0], 1.0, 0.73), 0);
        assert_eq!(softmax_sample_index(&[0.0, 1.0], 1.0, 0.74), 1);
        // equal costs: uniform
        assert_eq!(softmax_sample_index(&[3.0, 3.0, 3.0], 0.5, 0.5), 1);
        // Dynamo's own case: extreme finite costs
        assert_eq!(softmax_sample_index(&[-f64::MAX, f64::MAX], 1.0, 0.6), 0);
    }

    /// The timed bookkeeping: a request of 100 tokens (blocks 1–6 of 16) with 1 device
    /// and 2 host blocks cached on worker 1 counts round((1 + 2 × 0.75) × 16) = 40 cached
    /// tokens, so 60 active prefill tokens there until its first token, and its six
    /// blocks until it finishes.
    #[test]
    fn timed_loads_follow_first_token_and_finish() {
        let mut d = DynamoKv::new(
            &DynamoKvSpec::default(),
            2,
            16,
            1,
            crate::engine::stream(0, 1),
        );
        let blocks: Vec<PageHash> = (1..=6).collect();
        // Worker 1's credit (1 + 0.75 × 2) beats worker 0's nothing.
        let w = d.select_timed(7, &blocks, 100, &[tiers(0, 0), tiers(1, 2)]);
        assert_eq!(w, 1);
        let l = d.load(1, &blocks);
        assert_eq!(
            (
                l.active_prefill_tokens,
                l.active_decode_blocks,
                l.additional_active_blocks
            ),
            (60, 6, 0)
        );
        assert_eq!(d.load(0, &blocks).active_prefill_tokens, 0);
        d.first_token(7);
        assert_eq!(d.load(1, &blocks).active_prefill_tokens, 0);
        assert_eq!(d.load(1, &blocks).active_decode_blocks, 6);
        d.finished(7);
        let l = d.load(1, &blocks);
        assert_eq!((l.active_decode_blocks, l.additional_active_blocks), (0, 6));
        // A request finished before its first token (an abort) takes its prefill too.
        d.select_timed(8, &blocks, 100, &[tiers(0, 0), tiers(0, 0)]);
        let w = (0..2)
            .find(|&w| d.load(w, &blocks).active_prefill_tokens > 0)
            .unwrap();
        assert_eq!(d.load(w, &blocks).active_prefill_tokens, 100);
        d.finished(8);
        assert_eq!(d.load(w, &blocks).active_prefill_tokens, 0);
    }
}
