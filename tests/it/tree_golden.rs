//! The 0.5.23 tree against SGLang's own: every golden file under `tests/golden/tree/`
//! (per-request device hit pages written by `tests/sglang_diff/tree/run.sh`, which
//! replays the bundled traces through sglang 0.5.23's `UnifiedRadixCache` on a CPU)
//! must be reproduced exactly by `tree: unified_0_5_23`, in both call patterns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hicache_sim::cache::{EvictionPolicy, TreeKind};
use hicache_sim::runtime::{CallPattern, Capacities, ReplayConfig, TreePolicy, replay_hits};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Golden {
    header: BTreeMap<String, String>,
    device: Vec<u64>,
}

fn read_golden(p: &Path) -> Golden {
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    let header = crate::support::golden_header(lines.next().unwrap());
    let device = lines.map(|l| l.trim().parse().unwrap()).collect();
    Golden { header, device }
}

fn golden_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("tests/golden/tree"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    v.sort();
    v
}

/// Replays one golden file's point; returns the first differing request, if any.
fn check(p: &Path, tree: TreeKind) -> Result<(), String> {
    let g = read_golden(p);
    let h = |k: &str| g.header[k].clone();
    assert_eq!(h("sglang"), "0.5.23");
    let block: u32 = h("block").parse().unwrap();
    let page_size: u32 = h("page_size").parse().unwrap();
    let cfg = ReplayConfig {
        capacities: Capacities {
            page_size,
            l1_pages: h("l1_pages").parse().unwrap(),
            l2_pages: 0,
            ..Default::default()
        },
        policy: TreePolicy {
            tree,
            eviction_policy: match h("policy").as_str() {
                "lru" => EvictionPolicy::Lru,
                "lfu" => EvictionPolicy::Lfu,
                other => panic!("policy {other}"),
            },
            call_pattern: match h("pattern").as_str() {
                "sim" => CallPattern::Simulator,
                "scheduler" => CallPattern::Scheduler0523,
                other => panic!("pattern {other}"),
            },
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    let reqs = crate::support::bundled_trace(&h("trace"), block, page_size);
    assert_eq!(reqs.len(), g.device.len(), "{}: request count", p.display());
    let (_, hits) = replay_hits(&cfg, reqs).unwrap();
    for (i, (ours, theirs)) in hits.iter().zip(&g.device).enumerate() {
        if ours.device != *theirs {
            return Err(format!(
                "{}: request {i}: device hit pages {} (SGLang {theirs})",
                p.file_name().unwrap().to_string_lossy(),
                ours.device
            ));
        }
    }
    Ok(())
}

#[test]
fn golden_files_cover_the_grid() {
    let files = golden_files();
    // 3 traces x 2 page sizes x 4 capacities x LRU/LFU x 2 call patterns.
    assert_eq!(files.len(), 96, "golden files: {}", files.len());
}

#[test]
fn unified_0_5_23_reproduces_sglang_device_hits_exactly() {
    let mut bad = Vec::new();
    for p in golden_files() {
        if let Err(e) = check(&p, TreeKind::Unified0523) {
            bad.push(e);
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} differ:\n{}",
        bad.len(),
        golden_files().len(),
        bad.join("\n")
    );
}

/// The V1 tree is not SGLang 0.5.23's: it must differ somewhere on the grid (the
/// golden files can tell the two trees apart).
#[test]
fn v1_tree_differs_from_sglang_0_5_23_somewhere() {
    let differ = golden_files()
        .iter()
        .filter(|p| check(p, TreeKind::V1).is_err())
        .count();
    assert!(differ > 0);
}
