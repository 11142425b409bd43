//! The host tier against SGLang's own: every golden file under `tests/golden/host/`
//! (per-request device / host / storage hit tokens and pool usage, written by
//! `tests/sglang_diff/host/run.sh`, which replays the bundled traces through the
//! release's own radix tree, cache controller and host pool on a CPU) must be
//! reproduced request by request by the untimed replay under the release's rules
//! (`--sglang <release> --config call_pattern=scheduler_0_5_23`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hicache_sim::cache::{EvictionPolicy, WritePolicy};
use hicache_sim::release::Sglang;
use hicache_sim::runtime::{
    CallPattern, Capacities, ReplayConfig, RequestHits, TreePolicy, replay_hits,
};
use hicache_sim::workload::{Request, TraceOptions, open_trace_with};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One request's line: device, host (loaded back, L3 part included), storage
/// (fetched from L3), host pool slots in use, device slots in use — all tokens.
type Row = [u64; 5];

struct Golden {
    header: BTreeMap<String, String>,
    rows: Vec<Row>,
}

fn read_golden(p: &Path) -> Golden {
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    let header = crate::support::golden_header(lines.next().unwrap());
    let rows = lines
        .map(|l| {
            let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            v.try_into().expect("five columns")
        })
        .collect();
    Golden { header, rows }
}

fn requests(trace: &str, block: u32, page_size: u32, n: usize) -> Vec<Request> {
    let opts = TraceOptions {
        block_size: Some(block),
        ..TraceOptions::default()
    };
    open_trace_with(&root().join("traces").join(trace), &opts, page_size)
        .unwrap()
        .take(n)
        .map(|r| r.unwrap())
        .collect()
}

/// The golden files under `dir` and its release folders (`0.5.23/`, `0.5.18/`, …).
pub(crate) fn golden_files(dir: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let mut dirs = vec![root().join(dir)];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "txt") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

/// The replay configuration of a golden file: the release's rules
/// (`Sglang::release_rules`, as `replay --sglang` builds them), the file's pools and
/// policies, and 0.5.23's scheduler call pattern.
fn config(g: &Golden) -> ReplayConfig {
    let h = |k: &str| g.header[k].clone();
    let rules = Sglang::from_id(&h("sglang")).unwrap().release_rules();
    {
        let start = ReplayConfig::for_release(&rules);
        ReplayConfig {
            capacities: Capacities {
                page_size: h("page_size").parse().unwrap(),
                l1_pages: h("l1_pages").parse().unwrap(),
                l2_pages: h("l2_pages").parse().unwrap(),
                l3_unbounded: h("storage") == "file",
                ..start.capacities
            },
            policy: TreePolicy {
                write_policy: match h("write_policy").as_str() {
                    "write_through" => WritePolicy::WriteThrough,
                    "write_through_selective" => WritePolicy::WriteThroughSelective,
                    "write_back" => WritePolicy::WriteBack,
                    other => panic!("write policy {other}"),
                },
                eviction_policy: match h("policy").as_str() {
                    "lru" => EvictionPolicy::Lru,
                    "lfu" => EvictionPolicy::Lfu,
                    other => panic!("policy {other}"),
                },
                call_pattern: CallPattern::Scheduler0523,
                ..start.policy
            },
            ..start
        }
    }
}

fn row(h: &RequestHits, ps: u64) -> Row {
    [
        h.device * ps,
        (h.host + h.storage) * ps,
        h.fetched * ps,
        h.host_used * ps,
        h.device_used * ps,
    ]
}

/// Replays one golden file; returns (requests that differ, the first difference).
pub(crate) fn check(p: &Path) -> (usize, usize, Option<String>) {
    let g = read_golden(p);
    let h = |k: &str| g.header[k].clone();
    let cfg = config(&g);
    let n: usize = h("requests").parse().unwrap();
    assert_eq!(g.rows.len(), n, "{}: rows", p.display());
    let reqs = requests(
        &h("trace"),
        h("block").parse().unwrap(),
        cfg.capacities.page_size,
        n,
    );
    assert_eq!(reqs.len(), n, "{}: request count", p.display());
    let (_, hits) = replay_hits(&cfg, reqs).unwrap();
    let ps = u64::from(cfg.capacities.page_size);
    let mut bad = 0;
    let mut first = None;
    for (i, (ours, theirs)) in hits.iter().zip(&g.rows).enumerate() {
        let ours = row(ours, ps);
        if ours != *theirs {
            bad += 1;
            first.get_or_insert_with(|| {
                format!(
                    "{}: request {i}: [device host storage host_used device_used] {ours:?}, SGLang {theirs:?}",
                    p.file_name().unwrap().to_string_lossy()
                )
            });
        }
    }
    (n, bad, first)
}

/// The files of one release folder.
fn names_in(release: &str) -> Vec<String> {
    golden_files(&format!("tests/golden/host/{release}"))
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// `tests/sglang_diff/host/run.sh`'s grid for 0.5.23: 3 traces x 2 page sizes x L2
/// 1/2/4x x 3 write policies (LRU, 54), LFU at L2 2x on 64-token pages (3 traces x 3
/// policies, 9), L3 through HiCacheFile at L2 1x (the 2 generated traces x 2 page
/// sizes x 3 policies, 12). Every committed file is a point of it, and none is lost.
#[test]
fn golden_files_cover_the_grid() {
    let have = names_in("0.5.23");
    let points = [
        ("generated_agentic_bursty", 64, 500),
        ("generated_chat_agentic_mix", 64, 1000),
        ("synthetic_trace", 64, 8000),
        ("generated_agentic_bursty", 512, 64),
        ("generated_chat_agentic_mix", 512, 128),
        ("synthetic_trace", 512, 1000),
    ];
    let wps = ["write_through", "write_through_selective", "write_back"];
    let mut want = Vec::new();
    for (t, ps, l1) in points {
        for (ratio, policy, storage) in [(1, "lru", "none"), (2, "lru", "none"), (4, "lru", "none")]
            .into_iter()
            .chain((ps == 64).then_some((2, "lfu", "none")))
            .chain((!t.starts_with("synthetic")).then_some((1, "lru", "file")))
        {
            for wp in wps {
                want.push(format!(
                    "{t}.p{ps}.l1_{l1}.l2x{ratio}.{wp}.{policy}.{storage}.txt"
                ));
            }
        }
    }
    let outside: Vec<_> = have.iter().filter(|h| !want.contains(h)).collect();
    assert!(
        outside.is_empty(),
        "0.5.23: files outside the grid: {outside:?}"
    );
    assert_eq!(want.len(), 75);
    assert!(
        have.len() >= GRID_0_5_23_FILES,
        "0.5.23: {} golden files",
        have.len()
    );
    // HiRadixCache (0.5.16, 0.5.18 wheels): a subset of the same grid, no L3.
    for r in ["0.5.16", "0.5.18"] {
        let n = names_in(r);
        assert!(n.len() >= HIRADIX_FILES, "{r}: {} golden files", n.len());
        assert!(n.iter().all(|f| f.ends_with(".none.txt")), "{r}: {n:?}");
    }
}

/// The 0.5.23 golden files committed (the whole grid `run.sh` writes).
const GRID_0_5_23_FILES: usize = 75;

/// The fewest HiRadixCache golden files per release (`run.sh` writes up to 42).
const HIRADIX_FILES: usize = 6;

#[test]
fn host_tier_reproduces_sglang_exactly() {
    let files = golden_files("tests/golden/host");
    let mut bad = Vec::new();
    let (mut total, mut differ) = (0, 0);
    for p in &files {
        let (n, b, first) = check(p);
        total += n;
        differ += b;
        if let Some(f) = first {
            bad.push(format!("{f} ({b} of {n} requests differ)"));
        }
    }
    assert!(
        bad.is_empty(),
        "{differ} of {total} requests differ, in {} of {} files:\n{}",
        bad.len(),
        files.len(),
        bad.join("\n")
    );
}
