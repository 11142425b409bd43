//! Property: whatever the thread count, the interruption points and the sharding, the
//! final CSV is the same bytes as one uninterrupted single-thread run.

use hicache_sim::sweep::{self, Axis, Point, Row, RunOptions, Seeds, Shard, SweepSpec};
use proptest::prelude::*;
use serde_json::json;

fn points(n_a: usize, n_b: usize, seeds: u64) -> Vec<Point> {
    let spec = SweepSpec {
        source: "p.yaml".into(),
        axes: vec![
            Axis::new("a", (0..n_a).map(|i| json!(i as f64 / 10.0)).collect()),
            Axis::new("b", (0..n_b).map(|i| json!(format!("v{i}"))).collect()),
        ],
        seeds: Seeds::Count(seeds),
        ..Default::default()
    };
    sweep::expand(&spec, &json!({"seed": 3, "a": 0.0, "b": ""})).unwrap()
}

fn runner(p: &Point) -> Result<Row, hicache_sim::sweep::PointError> {
    if p.seed.is_multiple_of(7) {
        return Err(format!("unlucky seed {}", p.seed).into());
    }
    Ok(Row::new()
        .with("x", p.seed % 1000)
        .with("y", format!("{:.3}", p.values[0].1.as_f64().unwrap() * 3.0)))
}

fn opts(dir: &std::path::Path, jobs: usize) -> RunOptions {
    let mut o = RunOptions::new(dir, vec!["x".into(), "y".into()]);
    o.jobs = jobs;
    o
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn same_bytes_whatever_the_schedule(
        n_a in 1usize..5, n_b in 1usize..4, seeds in 1u64..4,
        jobs in 1usize..4, stops in proptest::collection::vec(0usize..10, 0..3), n_shards in 1usize..5,
    ) {
        let pts = points(n_a, n_b, seeds);
        let d0 = tempfile::tempdir().unwrap();
        let want = std::fs::read(sweep::run(&pts, &runner, &opts(d0.path(), 1)).unwrap().csv.unwrap()).unwrap();

        // Interrupted at each of `stops`, then resumed to the end.
        let d = tempfile::tempdir().unwrap();
        for &s in &stops {
            let mut o = opts(d.path(), jobs);
            o.resume = true;
            o.stop_after = Some(s);
            sweep::run(&pts, &runner, &o).unwrap();
        }
        let mut o = opts(d.path(), jobs);
        o.resume = true;
        let s = sweep::run(&pts, &runner, &o).unwrap();
        prop_assert!(s.complete);
        prop_assert_eq!(std::fs::read(s.csv.unwrap()).unwrap(), want.clone());

        // Sharded, then merged.
        let d = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        let mut owned = 0;
        for k in 1..=n_shards {
            let mut o = opts(d.path(), jobs);
            o.shard = Some(Shard::new(k, n_shards).unwrap());
            let s = sweep::run(&pts, &runner, &o).unwrap();
            owned += s.points_owned;
            files.push(s.csv.unwrap());
        }
        prop_assert_eq!(owned, pts.len());
        prop_assert_eq!(sweep::merge(&files).unwrap(), want);
    }
}
