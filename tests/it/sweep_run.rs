//! Sweep execution: identical bytes for any --jobs, after interrupt + resume, and for
//! shards merged; failing and panicking points keep their rows.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use hicache_sim::sweep::{self, Point, Row, RunOptions, Shard, SweepSpec};
use serde_json::json;

const SCENARIO: &str = "\
seed: 7
server:
  hicache_host_memory_fraction: 1.0
  hicache_ratio: null
sweep:
  axes:
    server.hicache_host_memory_fraction: [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    server.hicache_ratio: [null, 1.5, 2.0, 3.0]
  seeds: 2
";

fn points() -> Vec<Point> {
    let spec = SweepSpec::from_scenario_yaml(SCENARIO, "s.yaml").unwrap();
    let base =
        json!({"seed": 7, "server": {"hicache_host_memory_fraction": 1.0, "hicache_ratio": null}});
    sweep::expand(&spec, &base).unwrap()
}

fn columns() -> Vec<String> {
    ["outcome", "hit_rate_host", "budget_bytes"]
        .map(String::from)
        .to_vec()
}

/// A deterministic synthetic pipeline; sleeps a point-dependent time so completion order
/// differs from point order when there are several threads.
fn runner(p: &Point) -> Result<Row, hicache_sim::sweep::PointError> {
    let f = p
        .get("server.hicache_host_memory_fraction")
        .unwrap()
        .as_f64()
        .unwrap();
    let r = p
        .get("server.hicache_ratio")
        .unwrap()
        .as_f64()
        .unwrap_or(2.0);
    std::thread::sleep(std::time::Duration::from_micros(
        ((p.index * 7919) % 13) as u64 * 200,
    ));
    if f == 0.7 && r == 3.0 {
        return Err("Not enough host memory available, \"quoted\", comma".into());
    }
    if f == 0.8 && r == 3.0 && p.replica == 1 {
        panic!("synthetic panic");
    }
    let outcome = if f * 3.0 >= r { "started" } else { "refused" };
    let hit = (f * 0.3 + (p.seed % 1000) as f64 * 1e-6) / r;
    Ok(Row::new()
        .with("outcome", outcome)
        .with("hit_rate_host", format!("{hit:.6}"))
        .with("budget_bytes", (f * 1e11) as u64))
}

fn opts(dir: &Path, jobs: usize) -> RunOptions {
    let mut o = RunOptions::new(dir, columns());
    o.jobs = jobs;
    o
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn jobs_1_and_2_give_identical_bytes_with_the_expected_rows() {
    let pts = points();
    assert_eq!(pts.len(), 48);
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let s1 = sweep::run(&pts, &runner, &opts(d1.path(), 1)).unwrap();
    let s2 = sweep::run(&pts, &runner, &opts(d2.path(), 2)).unwrap();
    assert!(s1.complete && s2.complete);
    assert_eq!(s1.computed, 48);
    // 0.7 × 3.0 fails on both replicas (Err), 0.8 × 3.0 panics on replica 1.
    assert_eq!(s1.failed, 3);
    let a = read(&s1.csv.unwrap());
    let b = read(&s2.csv.unwrap());
    assert_eq!(a, b);
    let text = String::from_utf8(a).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "point,server.hicache_host_memory_fraction,server.hicache_ratio,seed,outcome,hit_rate_host,budget_bytes,error"
    );
    assert_eq!(lines.len(), 49);
    // Point 0: fraction 0.5, ratio unset (empty cell), replica 0 → the scenario seed 7.
    assert_eq!(lines[1], "0,0.5,,7,refused,0.075004,50000000000,");
    // Point 3: fraction 0.5, ratio 1.5, replica 1.
    assert!(lines[4].starts_with(&format!(
        "3,0.5,1.5,{},",
        hicache_sim::engine::derive_seed(7, 1)
    )));
    // Fraction 0.7 × ratio 3.0, replica 0 = point (2*4+3)*2 = 22: the runner's Err, quoted.
    assert!(
        lines[23].ends_with(",,,,\"Not enough host memory available, \"\"quoted\"\", comma\""),
        "{}",
        lines[23]
    );
    // Fraction 0.8 × ratio 3.0, replica 1 = point 31: a caught panic.
    assert!(
        lines[32].ends_with(",panic: synthetic panic"),
        "{}",
        lines[32]
    );
}

#[test]
fn interrupted_then_resumed_equals_uninterrupted() {
    let pts = points();
    let full = tempfile::tempdir().unwrap();
    let want = read(
        &sweep::run(&pts, &runner, &opts(full.path(), 2))
            .unwrap()
            .csv
            .unwrap(),
    );

    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path(), 2);
    o.stop_after = Some(17);
    let s = sweep::run(&pts, &runner, &o).unwrap();
    assert!(!s.complete);
    assert!(s.csv.is_none());
    assert_eq!(s.computed, 17);
    assert!(!d.path().join("results.csv").exists());
    // A crash mid-write leaves a torn last line: resume must drop it.
    let jp = d.path().join("results.journal.jsonl");
    let mut j = read(&jp);
    assert_eq!(j.iter().filter(|&&b| b == b'\n').count(), 18);
    j.extend_from_slice(b"{\"point\":4");
    std::fs::write(&jp, &j).unwrap();

    // Second interruption, with resume.
    let mut o = opts(d.path(), 1);
    o.resume = true;
    o.stop_after = Some(10);
    let s = sweep::run(&pts, &runner, &o).unwrap();
    assert_eq!((s.resumed, s.computed, s.complete), (17, 10, false));

    let mut o = opts(d.path(), 2);
    o.resume = true;
    let s = sweep::run(&pts, &runner, &o).unwrap();
    assert_eq!((s.resumed, s.computed, s.complete), (27, 21, true));
    assert_eq!(read(&s.csv.unwrap()), want);

    // Resuming a finished sweep computes nothing and rewrites the same file.
    let s = sweep::run(&pts, &runner, &o).unwrap();
    assert_eq!((s.resumed, s.computed), (48, 0));
    assert_eq!(read(&s.csv.unwrap()), want);
}

#[test]
fn resume_refuses_a_journal_of_another_sweep() {
    let pts = points();
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path(), 1);
    o.stop_after = Some(3);
    sweep::run(&pts, &runner, &o).unwrap();
    let mut o = opts(d.path(), 1);
    o.resume = true;
    let e = sweep::run(&pts[..10], &runner, &o).unwrap_err();
    assert!(e.to_string().contains("different sweep"), "{e}");
}

#[test]
fn shards_merged_equal_the_unsharded_run() {
    let pts = points();
    let full = tempfile::tempdir().unwrap();
    let want = read(
        &sweep::run(&pts, &runner, &opts(full.path(), 1))
            .unwrap()
            .csv
            .unwrap(),
    );

    let d = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = Vec::new();
    for k in [3, 1, 2] {
        let mut o = opts(d.path(), 2);
        o.shard = Some(Shard::new(k, 3).unwrap());
        let s = sweep::run(&pts, &runner, &o).unwrap();
        assert_eq!(s.points_owned, 16);
        let csv = s.csv.unwrap();
        assert!(csv.ends_with(format!("results.shard-{k}-of-3.csv")));
        files.push(csv);
    }
    assert_eq!(sweep::merge(&files).unwrap(), want);

    // A missing shard, a duplicate and a truncated shard are refused.
    let e = sweep::merge(&files[..2]).unwrap_err().to_string();
    assert!(e.contains("missing"), "{e}");
    let e = sweep::merge(&[
        files[0].clone(),
        files[0].clone(),
        files[1].clone(),
        files[2].clone(),
    ])
    .unwrap_err()
    .to_string();
    assert!(e.contains("more than once") || e.contains("twice"), "{e}");
    // Drop the last row of shard 3/3 (it holds the last point, 47): only the journal's
    // point count can tell.
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let cut: Vec<&str> = text.lines().collect();
    std::fs::write(&files[0], cut[..cut.len() - 1].join("\n") + "\n").unwrap();
    let e = sweep::merge(&files).unwrap_err().to_string();
    assert!(e.contains("missing: 47"), "{e}");
}

#[test]
fn every_point_runs_exactly_once_across_threads() {
    let pts = points();
    let calls = AtomicUsize::new(0);
    let counting = |p: &Point| {
        calls.fetch_add(1, Ordering::Relaxed);
        runner(p)
    };
    let d = tempfile::tempdir().unwrap();
    sweep::run(&pts, &counting, &opts(d.path(), 2)).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 48);
}

#[test]
fn a_complete_sweep_draws_its_default_plots() {
    let pts = points();
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path(), 2);
    o.columns.push("hit_rate_total".into());
    o.plots = true;
    let with_total = |p: &Point| {
        runner(p).map(|r| {
            let h = r.get("hit_rate_host").unwrap().to_string();
            r.with("hit_rate_total", h)
        })
    };
    let mut s = sweep::run(&pts, &with_total, &o).unwrap();
    // The sweep hands its CSV back; the command draws (and records) the plots.
    let data = s
        .plot_data
        .take()
        .expect("a complete unsharded run hands back its CSV");
    let plots = hicache_sim::commands::sweep_cmd::draw_default_plots(data).unwrap();
    let names: Vec<String> = plots
        .iter()
        .map(|i| {
            i.files[0]
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            "hit_rate_vs_hicache_host_memory_fraction.png",
            "outcome_map.png"
        ]
    );
    assert!(d.path().join("outcome_map.svg").exists());
}
