//! The SWA tree against SGLang's own for DeepSeek-V4: every golden file under
//! `tests/golden/dsv4_tree/` (per-request device hit pages of sglang 0.5.23's
//! `UnifiedRadixCache` with `tree_components=(FULL, SWA)` and its
//! `SWATokenToKVPoolAllocator` at DeepSeek-V4's page 256 and window 128, written by
//! `GRID=dsv4 tests/sglang_diff/swa_tree/run.sh`; why that is DeepSeek-V4's device tree
//! is in `tests/golden/dsv4_tree/README.md`) must be reproduced request by request by
//! the timing-off replay with an SWA pool (`Capacities::swa`), prefill-only and decoding.

use std::path::PathBuf;

use crate::support::{SwaGolden, swa_golden, swa_golden_check};

fn golden_files() -> Vec<PathBuf> {
    crate::support::golden_txt_files("dsv4_tree")
}

fn goldens() -> Vec<SwaGolden> {
    golden_files().iter().map(|p| swa_golden(p)).collect()
}

#[test]
fn dsv4_golden_files_cover_the_grid() {
    // 2 traces x 4 (full, SWA) pool pairs, each prefill-only and decoding, all at
    // DeepSeek-V4's page 256 and window 128; chat_agentic_mix's 4 pairs also at an
    // 8,192-token chunked prefill (`.c8192`, an H200's default).
    let g = goldens();
    let decode = g.iter().filter(|g| g.name.ends_with(".decode.txt")).count();
    let chunked = g.iter().filter(|g| g.name.contains(".c8192.")).count();
    assert_eq!((g.len() - decode, decode, chunked), (12, 12, 8));
    for g in &g {
        let c = &g.cfg.capacities;
        let swa = c.swa.as_ref().unwrap();
        assert_eq!((c.page_size, swa.window), (256, 128), "{}", g.name);
        assert_eq!(swa.decode, g.name.ends_with(".decode.txt"), "{}", g.name);
    }
    // Three pairs a trace at SGLang's 10:1 (swa_full_tokens_ratio 0.1), one equal.
    for trace in ["generated_agentic_bursty", "generated_chat_agentic_mix"] {
        let ratios: Vec<(u64, u64)> = g
            .iter()
            .filter(|g| g.name.starts_with(trace) && !g.name.ends_with(".decode.txt"))
            .filter(|g| !g.name.contains(".c8192."))
            .map(|g| {
                let c = &g.cfg.capacities;
                (c.l1_pages, c.swa.as_ref().unwrap().pages)
            })
            .collect();
        let tenth = ratios.iter().filter(|(l1, swa)| *l1 == 10 * swa).count();
        let equal = ratios.iter().filter(|(l1, swa)| l1 == swa).count();
        assert_eq!((tenth, equal), (3, 1), "{trace}: {ratios:?}");
    }
}

#[test]
fn swa_tree_reproduces_sglang_dsv4_device_hits_exactly() {
    let g = goldens();
    let bad: Vec<String> = g
        .iter()
        .filter_map(|g| swa_golden_check(g, &g.cfg).err())
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} differ:\n{}",
        bad.len(),
        g.len(),
        bad.join("\n")
    );
}

/// The files tell the rules apart: replayed at another window, page size or pool
/// pair, some request of some file differs. (A window of 127 does not: at page 256 a
/// node holds whole pages, so the validator's `len >= W`, the window lock and the
/// out-of-window frees are the same for every W from 1 to 256, and the decode
/// trigger's one-token shift changes no page here.)
#[test]
fn the_dsv4_files_fail_a_wrong_point() {
    let g = goldens();
    let fails = |change: &dyn Fn(&mut hicache_sim::runtime::ReplayConfig)| {
        g.iter()
            .filter(|g| {
                let mut cfg = g.cfg.clone();
                change(&mut cfg);
                swa_golden_check(g, &cfg).is_err()
            })
            .count()
    };
    // (With --nocapture: how many of the 16 files each change breaks.)
    // Two pages of window instead of one.
    let n = fails(&|c| c.capacities.swa.as_mut().unwrap().window = 257);
    eprintln!("window 257: {n} of {} files differ", g.len());
    assert!(n > 0);
    // Any window within one page is the same tree here (SGLang's too, for the one
    // file and both modes the driver was run at 127).
    assert_eq!(
        fails(&|c| c.capacities.swa.as_mut().unwrap().window = 127),
        0
    );
    // The pages of the earlier golden files.
    let n = fails(&|c| c.capacities.page_size = 64);
    eprintln!("page 64: {n} of {} files differ", g.len());
    assert!(n > 0);
    // Full and SWA pools the other way round.
    let n = fails(&|c| {
        let swa = c.capacities.swa.as_mut().unwrap();
        std::mem::swap(&mut swa.pages, &mut c.capacities.l1_pages);
    });
    eprintln!("pools swapped: {n} of {} files differ", g.len());
    assert!(n > 0);
}
