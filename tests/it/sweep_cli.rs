//! The real binary: a start-up-only sweep killed part-way (SIGKILL) and resumed writes
//! the same bytes as an uninterrupted run; so do --jobs 1 vs 2, and shards 1/3..3/3
//! merged with `hicache-sim merge`.

use crate::support::succeeded;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::support::BIN;
use super::support::gb300_tray;

/// GB300 tray, GLM-5.2, page-cache-credit rules; start-up only (no runtime), 10 × 4 × 10
/// = 400 points of 200 Monte Carlo runs each (about a second).
const SCENARIO: &str = concat!(
    "\
name: sweep-cli-test
sglang: page-cache-credit
seed: 2
runs: 200
",
    gb300_tray!(),
    "\
sweep:
  axes:
    server.hicache_host_memory_fraction: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    server.hicache_ratio: [null, 1.0, 1.5, 2.0]
  seeds: 10
"
);

fn sweep(scenario: &Path, out: &Path, extra: &[&str]) {
    let o = Command::new(BIN)
        .arg("sweep")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .args(["--quiet"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "sweep {extra:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn lines(p: &Path) -> usize {
    std::fs::read(p).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

#[test]
fn killed_resumed_jobs_and_shards_all_give_the_same_bytes() {
    let d = tempfile::tempdir().unwrap();
    let scenario = d.path().join("s.yaml");
    std::fs::write(&scenario, SCENARIO).unwrap();

    let full = d.path().join("full");
    sweep(&scenario, &full, &["--jobs", "1"]);
    let want = std::fs::read(full.join("results.csv")).unwrap();
    assert_eq!(lines(&full.join("results.csv")), 401);
    assert!(full.join("outcome_map.png").exists());

    let two = d.path().join("two");
    sweep(&scenario, &two, &["--jobs", "2"]);
    assert_eq!(std::fs::read(two.join("results.csv")).unwrap(), want);

    // Kill a run once 10 rows are in its journal, then resume it.
    let killed = d.path().join("killed");
    let mut child = Command::new(BIN)
        .arg("sweep")
        .arg(&scenario)
        .arg("--out")
        .arg(&killed)
        .args(["--quiet", "--jobs", "2"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = killed.join("results.journal.jsonl");
    let t0 = Instant::now();
    while lines(&journal) < 11 && t0.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let done = lines(&journal);
    assert!(done >= 11, "the journal never reached 10 rows");
    assert!(
        done < 401 && !killed.join("results.csv").exists(),
        "the sweep finished before it could be killed ({done} journal lines)"
    );
    sweep(&scenario, &killed, &["--jobs", "2", "--resume"]);
    assert_eq!(std::fs::read(killed.join("results.csv")).unwrap(), want);

    // Shards, merged by the CLI.
    let sh = d.path().join("shards");
    for k in 1..=3 {
        sweep(
            &scenario,
            &sh,
            &["--jobs", "1", "--shard", &format!("{k}/3")],
        );
    }
    let merged = sh.join("results.csv");
    let st = Command::new(BIN)
        .arg("merge")
        .args((1..=3).map(|k| sh.join(format!("results.shard-{k}-of-3.csv"))))
        .arg("--output")
        .arg(&merged)
        .output()
        .unwrap();
    succeeded(&st);
    assert_eq!(std::fs::read(&merged).unwrap(), want);

    // And the plot command redraws from the merged CSV.
    let st = Command::new(BIN)
        .arg("plot")
        .arg(&merged)
        .args([
            "--y",
            "margin_bytes",
            "--group",
            "server.hicache_ratio",
            "--out",
        ])
        .arg(sh.join("plots"))
        .output()
        .unwrap();
    succeeded(&st);
    assert!(
        sh.join("plots/margin_bytes_vs_hicache_host_memory_fraction.svg")
            .exists()
    );
}
