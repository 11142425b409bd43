//! The SWA tree against SGLang's own: every golden file under `tests/golden/swa_tree/`
//! (per-request device hit pages of sglang 0.5.23's `UnifiedRadixCache` with
//! `tree_components=(FULL, SWA)` and its `SWATokenToKVPoolAllocator`, written by
//! `tests/sglang_diff/swa_tree/run.sh`) must be reproduced exactly by the timing-off
//! replay with an SWA pool (`Capacities::swa`, `call_pattern: scheduler_0_5_23`), with
//! the file's chunked prefill (`chunk=`, `scheduler.compute.chunked_prefill_size`).

use std::path::PathBuf;

use hicache_sim::cache::{EvictionPolicy, TreeKind};
use hicache_sim::runtime::{CallPattern, ReplayConfig, Timing, replay};

use crate::support::{swa_golden, swa_golden_check, swa_replay_config};

fn golden_files() -> Vec<PathBuf> {
    crate::support::golden_txt_files("swa_tree")
}

fn swa_config(page_size: u32, l1: u64, swa: u64, window: u32, checks: bool) -> ReplayConfig {
    swa_replay_config(page_size, l1, swa, window, checks, false)
}

#[test]
fn golden_files_cover_the_grid() {
    // 2 traces x 4 (full, SWA) pool pairs, each prefill-only and decoding: unchunked
    // and at chunk 8192; chat_agentic_mix's 4 pairs also at chunk 4096.
    let files = golden_files();
    let count = |chunk: &str, decode: bool| {
        files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".decode.txt") == decode)
            .filter(|n| match chunk {
                "" => !n.contains(".c"),
                c => n.contains(&format!(".{c}.")),
            })
            .count()
    };
    for decode in [false, true] {
        assert_eq!(
            (
                count("", decode),
                count("c8192", decode),
                count("c4096", decode)
            ),
            (8, 8, 4),
            "decode {decode}"
        );
    }
    assert_eq!(files.len(), 40);
}

/// The chunked files hold what chunking changes: replayed without the chunk, every
/// prefill-only chunked file differs somewhere.
#[test]
fn chunked_files_differ_without_the_chunk() {
    let chunked: Vec<PathBuf> = golden_files()
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.contains(".c") && !n.ends_with(".decode.txt")
        })
        .collect();
    assert_eq!(chunked.len(), 12);
    let same: Vec<String> = chunked
        .iter()
        .filter(|p| {
            let g = swa_golden(p);
            let mut cfg = g.cfg.clone();
            cfg.scheduler.compute.chunked_prefill_size = 0;
            swa_golden_check(&g, &cfg).is_ok()
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(same.is_empty(), "reproduced without chunking: {same:?}");
}

#[test]
fn swa_tree_reproduces_sglang_device_hits_exactly() {
    let files = golden_files();
    let bad: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let g = swa_golden(p);
            swa_golden_check(&g, &g.cfg).err()
        })
        .collect();
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
    c.scheduler.decode_timeline = hicache_sim::runtime::DecodeTimeline::Interleaved;
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
