//! Runs dynamo-kv-router 1.6.1's default worker selection (`DefaultWorkerSelector`,
//! `scheduling/selector/reference.rs`) on generated cases and prints one JSON line per
//! case: the inputs, and what Dynamo chose.
//!
//! - temperature 0: the set of workers Dynamo picks over 64 seeds (its ties are drawn
//!   at random, so the set is the workers of least cost);
//! - temperature > 0: the seed, the uniform sample its seeded RNG draws first
//!   (`fastrand::Rng::with_seed(seed).f64()`, the one draw of a softmax choice) and the
//!   worker chosen.
//!
//! The overlap signals are built by Dynamo's own `OverlapAnalysis::signals` from tiered
//! matches (device overlap scores, host and disk continuation hits), the load by
//! `WorkerLoadProjection`, as the router hands them to the selector.

use std::collections::{BTreeSet, HashMap};

use dynamo_kv_router::indexer::{LowerTierMatchDetails, MatchDetails, TieredMatchDetails};
use dynamo_kv_router::protocols::{RoutingConstraints, StorageTier, WorkerWithDpRank};
use dynamo_kv_router::scheduling::{OverlapAnalysis, ScheduleMode};
use dynamo_kv_router::sequences::WorkerLoadProjection;
use dynamo_kv_router::test_utils::SimpleWorkerConfig;
use dynamo_kv_router::{
    DefaultWorkerSelector, KvRouterConfig, SchedulingRequest, WorkerSelectionInput, WorkerSelector,
};
use rustc_hash::FxHashMap;

/// A small deterministic generator (SplitMix64), so the cases are the same everywhere.
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn pick(&mut self, xs: &[f64]) -> f64 {
        xs[self.below(xs.len() as u64) as usize]
    }
}

#[derive(Clone, Copy)]
struct Worker {
    device: u64,
    host: u64,
    disk: u64,
    active_prefill: u64,
    active_decode: u64,
    additional: u64,
}

fn select(
    cfg: &KvRouterConfig,
    block_size: u32,
    isl: u64,
    workers: &[Worker],
    seed: u64,
) -> u64 {
    let mut tiered = TieredMatchDetails {
        device: MatchDetails::new(),
        lower_tier: HashMap::new(),
    };
    let mut host = LowerTierMatchDetails::default();
    let mut disk = LowerTierMatchDetails::default();
    let mut loads = FxHashMap::default();
    for (i, w) in workers.iter().enumerate() {
        let id = WorkerWithDpRank::new(i as u64, 0);
        if w.device > 0 {
            tiered.device.overlap_scores.scores.insert(id, w.device as u32);
        }
        if w.host > 0 {
            host.hits.insert(id, w.host as usize);
        }
        if w.disk > 0 {
            disk.hits.insert(id, w.disk as usize);
        }
        loads.insert(
            id,
            WorkerLoadProjection {
                active_prefill_tokens: w.active_prefill as usize,
                active_decode_blocks: w.active_decode as usize,
                active_requests: 0,
                additional_active_blocks: w.additional as usize,
            },
        );
    }
    tiered.lower_tier.insert(StorageTier::HostPinned, host);
    tiered.lower_tier.insert(StorageTier::Disk, disk);
    let overlap = OverlapAnalysis::new(cfg, block_size, &tiered).signals();
    let request = SchedulingRequest {
        mode: ScheduleMode::QueryOnly {
            request_id: Some("case".into()),
        },
        token_seq: None,
        isl_tokens: isl as usize,
        overlap,
        kv_transfer_candidates: None,
        retain_kv_transfer_chain: false,
        worker_loads: loads,
        track_prefill_tokens: true,
        router_config_override: None,
        lora_name: None,
        priority_jump: 0.0,
        strict_priority: 0,
        policy_class: None,
        session_context: None,
        expected_output_tokens: None,
        affinity_target: None,
        pinned_worker: None,
        allowed_worker_ids: None,
        routing_constraints: RoutingConstraints::default(),
        shared_cache_hits: None,
        resp_tx: None,
    };
    let configs: HashMap<u64, SimpleWorkerConfig> = (0..workers.len() as u64)
        .map(|i| (i, SimpleWorkerConfig::default()))
        .collect();
    let selector = DefaultWorkerSelector::new_seeded(Some(cfg.clone()), "backend", seed);
    selector
        .select_worker(WorkerSelectionInput::configured(
            &configs,
            &request,
            request.eligibility(),
            block_size,
        ))
        .expect("a worker")
        .worker
        .worker_id
}

fn main() {
    let cases: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(400);
    let mut g = Gen(0x0D7A_2026);
    for case in 0..cases {
        let n = 2 + g.below(3) as usize;
        let block_size = [16u32, 32, 64][g.below(3) as usize];
        let blocks = g.below(41);
        let isl = blocks * u64::from(block_size) + g.below(u64::from(block_size));
        let cfg = KvRouterConfig {
            overlap_score_credit: g.pick(&[1.0, 1.0, 1.0, 0.5, 2.0, 0.0]),
            prefill_load_scale: g.pick(&[1.0, 1.0, 0.5, 2.0]),
            host_cache_hit_weight: g.pick(&[0.75, 0.75, 0.5, 0.0]),
            disk_cache_hit_weight: g.pick(&[0.25, 0.25, 0.1, 0.0]),
            router_temperature: if case % 4 == 3 {
                g.pick(&[0.25, 0.5, 1.0, 2.0])
            } else {
                0.0
            },
            ..KvRouterConfig::default()
        };
        let mut workers: Vec<Worker> = (0..n)
            .map(|_| {
                let device = g.below(blocks + 1);
                let host = g.below(blocks - device + 1);
                let disk = g.below(blocks - device - host + 1);
                Worker {
                    device,
                    host,
                    disk,
                    active_prefill: if g.below(4) == 0 { g.below(4000) } else { 0 },
                    active_decode: if g.below(3) == 0 { 0 } else { g.below(300) },
                    additional: g.below(blocks + 1),
                }
            })
            .collect();
        // Ties: half the cases copy a worker over another.
        if g.below(2) == 0 {
            let a = g.below(n as u64) as usize;
            let b = g.below(n as u64) as usize;
            workers[b] = workers[a];
        }
        let t = cfg.router_temperature;
        let ws: Vec<String> = workers
            .iter()
            .map(|w| {
                format!(
                    "[{},{},{},{},{},{}]",
                    w.device, w.host, w.disk, w.active_prefill, w.active_decode, w.additional
                )
            })
            .collect();
        let head = format!(
            "{{\"case\":{case},\"block_size\":{block_size},\"isl\":{isl},\"overlap_score_credit\":{:?},\"prefill_load_scale\":{:?},\"host_cache_hit_weight\":{:?},\"disk_cache_hit_weight\":{:?},\"router_temperature\":{:?},\"workers\":[{}]",
            cfg.overlap_score_credit,
            cfg.prefill_load_scale,
            cfg.host_cache_hit_weight,
            cfg.disk_cache_hit_weight,
            t,
            ws.join(",")
        );
        if t == 0.0 {
            let set: BTreeSet<u64> = (0..64)
                .map(|seed| select(&cfg, block_size, isl, &workers, seed))
                .collect();
            let set: Vec<String> = set.iter().map(u64::to_string).collect();
            println!("{head},\"dynamo_least_cost\":[{}]}}", set.join(","));
        } else {
            let seed = g.next();
            let sample = fastrand::Rng::with_seed(seed).f64();
            let chosen = select(&cfg, block_size, isl, &workers, seed);
            println!("{head},\"seed\":{seed},\"sample\":{sample:?},\"dynamo_choice\":{chosen}}}");
        }
    }
}
