//! `hicache-sim plan` on the quickstart scenario (GB300, GLM-5.2, page-cache-credit,
//! the bundled Mooncake trace): size / ratio / fraction searches with 1000 start-up runs
//! per probe, sensitivity probes, and the hit-rate ladder (27 replays + 3 policies).
//! Target: under 10 seconds on 2 cores. Time the whole command with
//! `hyperfine "target/release/hicache-sim plan scenarios/quickstart.yaml"`.

use criterion::{Criterion, criterion_group, criterion_main};
use hicache_sim::plan::{DEFAULT_RUNS, PlanOptions, plan};

fn bench(c: &mut Criterion) {
    hicache_sim::workload::read::enable_sharing();
    let opts = PlanOptions {
        target: 0.999,
        runs: DEFAULT_RUNS,
        seed: None,
        sets: vec![],
        trace: None,
        no_replay: false,
        ladder_max_gb: None,
        headroom: 0,
    };
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    g.bench_function("quickstart", |b| {
        b.iter(|| plan("scenarios/quickstart.yaml", &[None], &opts).unwrap())
    });
    g.bench_function("quickstart_startup_only", |b| {
        let o = PlanOptions {
            no_replay: true,
            ..opts.clone()
        };
        b.iter(|| plan("scenarios/quickstart.yaml", &[None], &o).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
