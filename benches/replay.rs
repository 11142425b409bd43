//! Replay throughput.
//! - timing off: ≥ 1 M generated requests streamed through the tree; throughput in
//!   page lookups (prompt pages) per second, one core. Target ≥ 10 M/s.
//! - timing on: simulated requests per wall-second. Target ≥ 200 k/s.
//!
//! Run: `cargo bench --features bench --bench replay -- --warm-up-time 1 --measurement-time 5`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::RngExt;

use hicache_sim::cache::TreeKind;
use hicache_sim::engine::{SimRng, stream};
use hicache_sim::runtime::{
    Capacities, Measurement, ReplayConfig, Scheduler, Timing, TreePolicy, replay,
};
use hicache_sim::workload::Request;

/// Multi-turn conversations: each request continues one of `convs` conversations
/// (its whole history as a prefix plus 1–8 new pages), a conversation restarting
/// after 64 pages; every 8th conversation shares a 16-page system prompt.
struct Gen {
    rng: SimRng,
    i: u64,
    n: u64,
    lens: Vec<u32>,
    epoch: Vec<u32>,
    buf_cap: usize,
}

impl Gen {
    fn new(n: u64, convs: usize, seed: u64) -> Self {
        Self {
            rng: stream(seed, 0),
            i: 0,
            n,
            lens: vec![0; convs],
            epoch: vec![0; convs],
            buf_cap: 72,
        }
    }
}

impl Iterator for Gen {
    type Item = Request;
    fn next(&mut self) -> Option<Request> {
        if self.i >= self.n {
            return None;
        }
        let c = self.rng.random_range(0..self.lens.len());
        let add = self.rng.random_range(1..=8u32);
        if self.lens[c] + add > 64 {
            self.lens[c] = 0;
            self.epoch[c] += 1;
        }
        self.lens[c] += add;
        let len = self.lens[c];
        let mut h = Vec::with_capacity(self.buf_cap);
        let shared = c % 8 == 0;
        for j in 0..u64::from(len) {
            let id = if shared && j < 16 {
                0xFFFF_0000_0000 + j
            } else {
                ((c as u64) << 32) ^ (u64::from(self.epoch[c]) << 12) ^ j ^ (1 << 62)
            };
            h.push(id);
        }
        let r = Request {
            id: self.i,
            arrival_ns: self.i * 2_000, // 500 k req/s offered
            input_tokens: len * 64,
            output_tokens: 8,
            page_hashes: h,
        };
        self.i += 1;
        Some(r)
    }
}

fn total_pages(n: u64, convs: usize) -> u64 {
    Gen::new(n, convs, 7)
        .map(|r| r.page_hashes.len() as u64)
        .sum()
}

/// CPU time this thread has run, in ns (`/proc/thread-self/schedstat`, Linux), so the
/// figure holds on a shared machine where wall time does not.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn bench(c: &mut Criterion) {
    let n = 1_000_000;
    let convs = 100_000;
    let pages = total_pages(n, convs);
    let cfg = ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 200_000,
            l2_pages: 400_000,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    // Timing-off throughput per CPU-second, both trees (printed once).
    for tree in [TreeKind::V1, TreeKind::Unified0523] {
        let cfg_t = {
            let start = cfg.clone();
            ReplayConfig {
                policy: TreePolicy {
                    tree,
                    ..start.policy
                },
                ..start
            }
        };
        if let Some(t0) = thread_cpu_ns() {
            replay(&cfg_t, Gen::new(n, convs, 7)).unwrap();
            if let Some(t1) = thread_cpu_ns() {
                eprintln!(
                    "timing off, tree {}: {:.2} M page lookups per CPU-second",
                    tree.id(),
                    pages as f64 / ((t1 - t0) as f64 / 1e9) / 1e6
                );
            }
        }
    }
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    g.throughput(Throughput::Elements(pages));
    g.bench_function("timing_off_1M_requests_page_lookups", |b| {
        b.iter(|| replay(&cfg, Gen::new(n, convs, 7)).unwrap())
    });
    // The same replay under 0.5.23's tree (`tree: unified_0_5_23`).
    let cfg_unified = {
        let start = cfg.clone();
        ReplayConfig {
            policy: TreePolicy {
                tree: TreeKind::Unified0523,
                ..start.policy
            },
            ..start
        }
    };
    g.bench_function("timing_off_1M_requests_page_lookups_unified_0_5_23", |b| {
        b.iter(|| replay(&cfg_unified, Gen::new(n, convs, 7)).unwrap())
    });
    let n_on = 200_000;
    let cfg_on = {
        let start = cfg.clone();
        ReplayConfig {
            capacities: Capacities {
                l3_unbounded: true,
                ..start.capacities
            },
            scheduler: Scheduler {
                prefill_tokens_per_s: 1e9,
                decode_tokens_per_s: 1e6,
                max_running_requests: 256,
                max_prefill_tokens: 1 << 20,
                ..start.scheduler
            },
            measurement: Measurement {
                timing: Timing::On,
                ..start.measurement
            },
            ..start
        }
    };
    g.throughput(Throughput::Elements(n_on));
    g.bench_function("timing_on_200k_requests", |b| {
        b.iter(|| replay(&cfg_on, Gen::new(n_on, 20_000, 7)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
