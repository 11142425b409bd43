//! The SWA tree against SGLang's own: every golden file under `tests/golden/swa_tree/`
//! (per-request device hit pages of sglang 0.5.23's `UnifiedRadixCache` with
//! `tree_components=(FULL, SWA)` and its `SWATokenToKVPoolAllocator`, written by
//! `tests/sglang_diff/swa_tree/run.sh`) must be reproduced exactly by the timing-off
//! replay with an SWA pool (`Capacities::swa`, `call_pattern: scheduler_0_5_23`).

use std::path::{Path, PathBuf};

use hicache_sim::cache::{EvictionPolicy, TreeKind};
use hicache_sim::runtime::{
    CallPattern, Capacities, Measurement, ReplayConfig, SwaPool, Timing, TreePolicy, replay,
    replay_hits,
};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn golden_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("tests/golden/swa_tree"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    v.sort();
    v
}

fn swa_config(page_size: u32, l1: u64, swa: u64, window: u32, checks: bool) -> ReplayConfig {
    swa_config_with(page_size, l1, swa, window, checks, false)
}

fn swa_config_with(
    page_size: u32,
    l1: u64,
    swa: u64,
    window: u32,
    checks: bool,
    decode: bool,
) -> ReplayConfig {
    ReplayConfig {
        capacities: Capacities {
            page_size,
            l1_pages: l1,
            l2_pages: 0,
            swa: Some(SwaPool {
                pages: swa,
                window,
                decode,
            }),
            ..Default::default()
        },
        policy: TreePolicy {
            tree: TreeKind::Unified0523,
            eviction_policy: EvictionPolicy::Lru,
            call_pattern: CallPattern::Scheduler0523,
            ..Default::default()
        },
        measurement: Measurement {
            debug_checks: checks,
            ..Default::default()
        },
        ..ReplayConfig::default()
    }
}

/// Replays one golden file's point; returns the first differing request, if any.
fn check(p: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    let h = crate::support::golden_header(lines.next().unwrap());
    let theirs: Vec<u64> = lines.map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(h["sglang"], "0.5.23");
    assert_eq!(h["components"], "FULL,SWA");
    assert_eq!(h["policy"], "lru");
    assert_eq!(
        (
            h["pattern"].as_str(),
            h["chunk"].as_str(),
            h["waiting_touch"].as_str(),
            h["prefill_checkpoint"].as_str()
        ),
        ("scheduler", "0", "1", "0")
    );
    // decode=1: every request decodes its trace's output tokens (the driver's
    // --decode 1, no output cap here); otherwise every request ends at its prefill.
    let decode = h.get("decode").map(String::as_str) == Some("1");
    if decode {
        assert_eq!(h["output_cap"], "0");
    }
    let page_size: u32 = h["page_size"].parse().unwrap();
    let cfg = swa_config_with(
        page_size,
        h["l1_pages"].parse().unwrap(),
        h["swa_pages"].parse().unwrap(),
        h["window"].parse().unwrap(),
        true,
        decode,
    );
    let reqs = crate::support::bundled_trace(&h["trace"], h["block"].parse().unwrap(), page_size);
    assert_eq!(reqs.len(), theirs.len(), "{}: request count", p.display());
    let (_, hits) = replay_hits(&cfg, reqs).map_err(|e| e.to_string())?;
    for (i, (ours, theirs)) in hits.iter().zip(&theirs).enumerate() {
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
    // 2 traces x 4 (full, SWA) pool pairs, each prefill-only and decoding.
    let files = golden_files();
    let decode = files
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".decode.txt"))
        .count();
    assert_eq!((files.len() - decode, decode), (8, 8));
}

#[test]
fn swa_tree_reproduces_sglang_device_hits_exactly() {
    let files = golden_files();
    let bad: Vec<String> = files.iter().filter_map(|p| check(p).err()).collect();
    assert!(
        bad.is_empty(),
        "{} of {} differ:\n{}",
        bad.len(),
        files.len(),
        bad.join("\n")
    );
}

/// An SWA pool outside the modelled combination is refused, never ignored.
#[test]
fn an_swa_pool_elsewhere_is_refused() {
    let reqs = || crate::support::bundled_trace("generated_agentic_bursty.jsonl", 64, 64);
    let ok = swa_config(64, 1000, 1000, 128, false);
    assert!(replay(&ok, reqs()).is_ok());
    let mut cases = Vec::new();
    let mut c = ok.clone();
    c.policy.call_pattern = CallPattern::Simulator;
    cases.push(c);
    let mut c = ok.clone();
    c.capacities.l2_pages = 1000;
    cases.push(c);
    let mut c = ok.clone();
    c.policy.tree = TreeKind::V1;
    cases.push(c);
    let mut c = ok.clone();
    c.measurement.timing = Timing::On;
    cases.push(c);
    let mut c = ok.clone();
    c.policy.eviction_policy = EvictionPolicy::Lfu;
    cases.push(c);
    let mut c = ok.clone();
    c.capacities.l3_unbounded = true;
    cases.push(c);
    for c in cases {
        let e = replay(&c, reqs()).unwrap_err().to_string();
        assert!(e.contains("runtime.swa"), "{e}");
    }
}

/// A prompt the SWA pool cannot hold even after eviction is an error, as in SGLang:
/// `tests/sglang_diff/swa_tree/replay_swa_tree.py` at a 256-token window, 2,000 full
/// and 300 SWA pages raises "Prefill out of memory" at request 120 of
/// generated_agentic_bursty (23,210 tokens, 363 pages in each pool).
#[test]
fn a_prompt_larger_than_the_swa_pool_is_sglang_s_out_of_memory() {
    let cfg = swa_config(64, 2000, 300, 256, false);
    let e = replay(
        &cfg,
        crate::support::bundled_trace("generated_agentic_bursty.jsonl", 64, 64),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("request #120 ") && e.contains("Prefill out of memory"),
        "{e}"
    );
}
