//! DeepSeek-V4's HiCache host pools, against SGLang's own code.
//!
//! `tests/golden/dsv4_host/<release>.jsonl` (written by `tools/models/dsv4_host_golden.py`,
//! which runs each release's `DSV4PoolConfigurator`, `DeepSeekV4TokenToKVPool` and
//! `build_deepseek_v4_hicache_stack` — the real `DeepSeekV4PagedHostPool` /
//! `DeepSeekV4StateHostPool` constructors — on a CPU with a shape-recording torch stub)
//! holds one line per DeepSeek-V4 catalogue model × schedule × device budget, with the
//! host pools at `--hicache-ratio` 1, 2 and 3.5 and SGLang's refusals of `--hicache-size`
//! and of the auto-size. Every figure is checked here against
//! `Dsv4Geometry::host_pools` and `dsv4_host_pages`: each pool's name, layers, host
//! pages, page bytes and requested bytes, in SGLang's build order.

use hicache_sim::model::dsv4::{
    DSV4_AUTO_SIZE_REFUSAL, DSV4_HICACHE_SIZE_REFUSAL, Dsv4Formula, Dsv4Geometry, Dsv4HostBasis,
    Dsv4Schedule, dsv4_host_pages,
};
use serde_json::Value;

const RELEASES: [&str; 6] = ["0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"];

#[test]
fn dsv4_host_pools_match_sglang() {
    let mut failures: Vec<String> = Vec::new();
    let mut pools_checked = 0usize;
    let mut sglang_errors = 0usize;
    for rel in RELEASES {
        let path = format!("tests/golden/dsv4_host/{rel}.jsonl");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in text.lines() {
            let g: Value = serde_json::from_str(line).unwrap();
            let id = g["model"].as_str().unwrap();
            if g.get("error").is_some() {
                // SGLang's ModelConfig cannot read the sgl-project FP8 repacks offline
                // (`model_type: deepseek_ref`), as in tests/golden/kv_bytes.
                assert!(id.starts_with("sgl-project/"), "{path}: {g}");
                sglang_errors += 1;
                continue;
            }
            let hf = crate::support::catalogue_hf(id);
            let geo = Dsv4Geometry::of(&hf.attention, hf.layers).expect("a DSV4 geometry");
            let sched = Dsv4Schedule {
                page_size: 256,
                max_running_requests: g["max_running_requests"].as_u64().unwrap(),
                chunked_prefill_size: g["chunked_prefill_size"].as_i64().unwrap(),
                operator_swa_full_tokens_ratio: golden_operator_ratio(rel, &g),
                attn_dp_size: 1,
                disable_radix_cache: false,
                disable_overlap_schedule: false,
                compress_state_itemsize: 4,
                speculative_num_draft_tokens: None,
            };
            let gib = g["available_gib"].as_u64().unwrap();
            let ctx = format!("{rel} {id} {sched:?} {gib} GiB");
            let formula = Dsv4Formula::of(
                hicache_sim::release::Sglang::from_id(rel)
                    .unwrap()
                    .release_rules()
                    .pools
                    .dsv4_pools,
            );
            let dev = geo
                .pool_sizes_for(formula, &sched, gib << 30, None)
                .unwrap();
            assert_eq!(
                (dev.full, dev.swa),
                (g["full"].as_u64().unwrap(), g["swa"].as_u64().unwrap()),
                "{ctx}"
            );
            assert_eq!(g["hicache_size_error"], DSV4_HICACHE_SIZE_REFUSAL, "{ctx}");
            // The auto-size (`hicache_auto_size.py`) ships in 0.5.21; before, the line
            // has no such key.
            match g.get("auto_size_error") {
                Some(e) => assert_eq!(e, DSV4_AUTO_SIZE_REFUSAL, "{ctx}"),
                None => assert!(
                    ["0.5.18", "0.5.19", "0.5.20"].contains(&rel),
                    "{ctx}: no auto-size line"
                ),
            }
            for (ratio, want) in g["hosts"].as_object().unwrap() {
                let r: f64 = ratio.parse().unwrap();
                let want = want.as_array().unwrap();
                // The `kv` anchor (`LogicalHostPool`): full host pages, no bytes.
                assert_eq!(want[0][0], "kv", "{ctx}");
                let anchor = dsv4_host_pages(dev.full, 256, r);
                if want[0][2].as_u64() != Some(anchor) {
                    failures.push(format!(
                        "{ctx} r={r}: anchor {anchor} pages, SGLang {}",
                        want[0]
                    ));
                }
                let got: Vec<Value> = geo
                    .host_pools(256)
                    .iter()
                    .map(|p| {
                        let tokens = match p.basis {
                            Dsv4HostBasis::Full => dev.full,
                            Dsv4HostBasis::Swa => dev.swa,
                        };
                        let pages = dsv4_host_pages(tokens, 256, r);
                        serde_json::json!([
                            p.name,
                            p.layers,
                            pages,
                            p.item_bytes,
                            pages * p.bytes_per_page()
                        ])
                    })
                    .collect();
                if got[..] != want[1..] {
                    failures.push(format!("{ctx} r={r}: simulator {got:?}, SGLang {want:?}"));
                }
                pools_checked += got.len();
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // 4 DeepSeek-V4 catalogue models SGLang reads × 6 schedules × 2 budgets × 3 ratios
    // × 6 pools × 6 releases; 2 FP8 repacks × 6 releases it cannot read.
    assert_eq!(pools_checked, 4 * 6 * 2 * 3 * 6 * 6);
    assert_eq!(sglang_errors, 2 * 6);
}

/// The ratio `DSV4PoolConfigurator` took as the operator's in a golden line (`None`: cap
/// mode). A line resolved as SGLang resolves the flags (`_deepseek_v4_overrides`, then
/// the explicit-ratio rule of `handle_cache_compatibility`) must be what the release's
/// rule gives for the flag; the others are the configurator's cap mode, forced.
pub fn golden_operator_ratio(rel: &str, g: &Value) -> Option<f64> {
    let explicit = g["swa_full_tokens_ratio_explicitly_set"].as_bool().unwrap();
    let ratio = explicit.then(|| g["swa_full_tokens_ratio"].as_f64().unwrap());
    if g["resolved_as_sglang"].as_bool().unwrap() {
        let rule = hicache_sim::release::Sglang::from_id(rel)
            .unwrap()
            .release_rules()
            .pools
            .dsv4_pools;
        assert_eq!(
            rule.operator_swa_full_tokens_ratio(g["swa_full_tokens_ratio_arg"].as_f64()),
            ratio,
            "{rel}: {g}"
        );
        // Every DeepSeek-V4 build runs ratio mode, given the flag or not.
        assert!(explicit, "{rel}: {g}");
    }
    ratio
}

/// DeepSeek-V4-Pro at `--hicache-ratio 2` on a 100 GiB device budget in the
/// configurator's cap mode, by hand (SGLang's figures in the golden's forced cap-mode line
/// agree): full 13,550,080 tokens = 52,930 pages → 105,860 host pages; SWA 606,464 =
/// 2,369 pages → 4,738.
#[test]
fn dsv4_pro_host_pools_by_hand() {
    let hf = crate::support::catalogue_hf("deepseek-ai/DeepSeek-V4-Pro");
    let geo = Dsv4Geometry::of(&hf.attention, hf.layers).unwrap();
    let p = geo.host_pools(256);
    let rows: Vec<(&str, u64, u64)> = p.iter().map(|p| (p.name, p.layers, p.item_bytes)).collect();
    assert_eq!(
        rows,
        [
            // page_bytes(256) = ceil(256 × 584 / 576) × 576 = 260 × 576.
            ("swa", 61, 149_760),
            // page_bytes(64) = 65 × 576.
            ("deepseek_v4_c4", 30, 37_440),
            // 64 slots × (128 + 128 / 128 × 4).
            ("deepseek_v4_c4_indexer", 30, 8_448),
            // ring 8 × 2 × 2 × 512 × 4 B.
            ("deepseek_v4_c4_state", 30, 65_536),
            // ring 8 × 2 × 2 × 128 × 4 B.
            ("deepseek_v4_c4_indexer_state", 30, 16_384),
            // page_bytes(2) = 3 × 576.
            ("deepseek_v4_c128", 31, 1_728),
        ]
    );
    assert_eq!(dsv4_host_pages(13_550_080, 256, 2.0), 105_860);
    assert_eq!(dsv4_host_pages(606_464, 256, 2.0), 4_738);
    // SWA 61 × 4,738 × 149,760 = 43,283,335,680 B; C4 30 × 105,860 × 37,440 =
    // 118,901,952,000 B.
    // The simulator's own figures, not a product of literals: pages from the device
    // tokens, bytes per page from the geometry.
    assert_eq!(
        p[0].bytes_per_page() * dsv4_host_pages(606_464, 256, 2.0),
        43_283_335_680
    );
    assert_eq!(
        p[1].bytes_per_page() * dsv4_host_pages(13_550_080, 256, 2.0),
        118_901_952_000
    );
}

/// `startup`'s "HiCache:" line prints the page size the server runs: DeepSeek-V4 pages by
/// 256 tokens whatever `--page-size` says (`model_overrides/deepseek_v4.py:
/// _deepseek_v4_overrides`), as the "Node:" line already did. The scenario's launch gives
/// no `--page-size`, so the flag is its default 1 — the figure the line used to print.
#[test]
fn dsv4_startup_hicache_line_prints_the_page_size_sglang_runs() {
    let out = assert_cmd::Command::cargo_bin("hicache-sim")
        .unwrap()
        .args(["startup", "scenarios/deepseek-v4-pro-host-pools.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |p: &str| {
        text.lines()
            .find(|l| l.starts_with(p))
            .unwrap_or_else(|| panic!("no {p} line: {text}"))
            .to_string()
    };
    assert!(line("Node:").ends_with(", page 256"), "{text}");
    let hicache = line("HiCache:");
    assert!(hicache.contains(", page size 256, "), "{hicache}");
    assert!(!hicache.contains("page size 1,"), "{hicache}");
}
