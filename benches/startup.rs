//! Start-up Monte Carlo speed: rank start-ups simulated per second on one core, as the
//! Monte Carlo runs them after run 0 (tallied only: no message text).
//! Targets: at least a million per second; two million for the
//! GB300 two-pool case (`gb300_tp4_page_cache_credit`).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hicache_sim::commands::startup_cmd::{load_scenario, plan_for};
use hicache_sim::engine;
use hicache_sim::startup::{Scratch, simulate};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("startup");
    for (name, path, version) in [
        ("race_tp8_pr35540", "scenarios/tp8-startup-race.yaml", None),
        ("gb300_tp4_pr40135", "scenarios/gb300-glm52-135g.yaml", None),
        (
            "gb300_tp4_page_cache_credit",
            "scenarios/gb300-glm52-135g.yaml",
            Some("page-cache-credit"),
        ),
        (
            "gb300_tp4_0_5_21",
            "scenarios/gb300-glm52-135g.yaml",
            Some("0.5.21"),
        ),
        (
            "tp8_1772gib_explicit_snapshot",
            "scenarios/tp8-1772gib-176g.yaml",
            Some("explicit-snapshot"),
        ),
    ] {
        let s = load_scenario(path, &[], version.map(|v: &str| v.parse().unwrap())).unwrap();
        let plan = plan_for(&s).unwrap();
        g.throughput(Throughput::Elements(plan.world_size as u64));
        let mut scratch = Scratch::default();
        scratch.messages = false;
        let mut run = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                run += 1;
                let mut rng = engine::stream(1, run);
                simulate(&plan, &mut rng, &mut scratch);
                scratch.results.len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
