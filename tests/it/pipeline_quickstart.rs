//! The README's main command end to end: the quickstart sweep (start-up → host pool →
//! replay → row), its hand-checked figures, and its plots.

use crate::support::succeeded;
use assert_cmd::Command;

fn rows(dir: &std::path::Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(dir.join("results.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            h.iter()
                .zip(rec.unwrap().iter())
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn quickstart_sweep_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args(["sweep", "scenarios/quickstart.yaml", "--quiet", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("note: --hicache-ratio is set").count(),
        1,
        "{err}"
    );
    let rows = rows(dir.path());
    assert_eq!(rows.len(), 24);
    let find = |f: &str, r: &str| {
        rows.iter()
            .find(|x| {
                x["server.hicache_host_memory_fraction"] == f && x["server.hicache_ratio"] == r
            })
            .unwrap_or_else(|| panic!("no row {f} {r}"))
    };
    // Auto-size at fraction 1.0: budget = (900 − 60 GB − 10 GiB) // 4 (page cache
    // credited); device bytes = (3,090,112 + 64) × 47,700 B; ratio = budget × 0.95 /
    // device bytes = 1.336147; host = 64,514 pages of 64 tokens × 47,700 B.
    let auto = find("1.0", "");
    assert_eq!(auto["outcome"], "started");
    assert_eq!(auto["budget_bytes"], "207315645440");
    assert_eq!(auto["fitted_ratio"], "1.336147");
    assert_eq!(auto["l1_pages"], "48283");
    assert_eq!(auto["l2_pages"], "64514");
    assert_eq!(
        auto["requested_bytes"],
        (64_514u64 * 64 * 47_700).to_string()
    );
    let host: f64 = auto["hit_rate_host"].parse().unwrap();
    assert!(
        host > 0.05,
        "a host pool larger than the device pool serves hits: {host}"
    );
    // Ratio 1.5: int(3,090,112 × 1.5) = 4,635,168 → 72,425 pages → 208.25 GB > 207.32.
    let r15 = find("0.7", "1.5");
    assert_eq!(r15["outcome"], "refused");
    assert_eq!(
        r15["message"],
        "Not enough host memory available. Requesting 208.25 GB but only have 207.32 GB free. Please reduce the size of the hierarchical cache."
    );
    assert_eq!(
        r15["hit_rate_total"], "",
        "a refused point has no hit rates"
    );
    // Ratio 1.0: an inclusive host pool one page larger than the device pool adds nothing.
    assert_eq!(find("0.5", "1.0")["hit_rate_host"], "0.000000");
    for f in [
        "hit_rate_vs_hicache_host_memory_fraction.png",
        "outcome_map.svg",
        "budget_vs_request.png",
    ] {
        assert!(dir.path().join(f).exists(), "{f}");
    }
}
