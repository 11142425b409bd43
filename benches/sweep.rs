//! Sweep throughput: points per second on 1 and 2 threads, with a cheap synthetic runner
//! (the lead may swap in the start-up runner), journal and final CSV included; plus
//! expanding a 1,000-point spec. Run: `cargo bench --features bench --bench sweep`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hicache_sim::sweep::{self, Point, Row, RunOptions, SweepSpec};
use serde_json::json;

/// 10 fractions × 10 ratios × 10 seeds = 1,000 points.
const SCENARIO: &str = "\
sweep:
  axes:
    server.hicache_host_memory_fraction: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    server.hicache_ratio: [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0]
  seeds: 10
";

fn base() -> serde_json::Value {
    json!({"seed": 1, "server": {"hicache_host_memory_fraction": 1.0, "hicache_ratio": null}})
}

/// A few microseconds of arithmetic per point, shaped like a start-up row.
fn runner(p: &Point) -> Result<Row, Box<dyn std::error::Error + Send + Sync>> {
    let f = p.values[0].1.as_f64().unwrap_or(1.0);
    let r = p.values[1].1.as_f64().unwrap_or(2.0);
    let mut rng = hicache_sim::engine::stream(p.seed, p.index as u64);
    let mut acc = 0u64;
    for _ in 0..256 {
        acc = acc.wrapping_add(rand::Rng::next_u64(&mut rng) >> 40);
    }
    let budget = (f * 2.0e11) as i64 - (acc % 1000) as i64;
    let req = (r * 6.0e10) as i64;
    Ok(Row::new()
        .with("outcome", if req <= budget { "started" } else { "refused" })
        .with("budget_bytes", budget)
        .with("requested_bytes", req)
        .with("margin_bytes", budget - req))
}

fn bench(c: &mut Criterion) {
    let spec = SweepSpec::from_scenario_yaml(SCENARIO, "bench.yaml").unwrap();
    let points = sweep::expand(&spec, &base()).unwrap();
    assert_eq!(points.len(), 1000);
    let columns: Vec<String> = ["outcome", "budget_bytes", "requested_bytes", "margin_bytes"]
        .map(String::from)
        .to_vec();

    let mut g = c.benchmark_group("sweep");
    g.sample_size(10);
    g.throughput(Throughput::Elements(points.len() as u64));
    g.bench_function("expand_1000_points", |b| {
        b.iter(|| sweep::expand(black_box(&spec), &base()).unwrap())
    });
    for jobs in [1usize, 2] {
        g.bench_function(format!("run_1000_points_jobs_{jobs}"), |b| {
            b.iter(|| {
                let d = tempfile::tempdir().unwrap();
                let mut o = RunOptions::new(d.path(), columns.clone());
                o.jobs = jobs;
                black_box(sweep::run(&points, &runner, &o).unwrap())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
