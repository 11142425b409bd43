//! A DSA model's index-K (the indexer keys, 132 B per layer per token) on the device and
//! in the HiCache host indexer pool, release by release: GLM-5.2 (78 layers, 21 of them
//! owning their keys) on one GB300 tray at TP4, `--kv-cache-dtype fp8_e4m3` (the SM100
//! `trtllm` DSA backend stores the 576-element MLA latent raw: 576 × 1 B × 78 = 44,928
//! B/token of KV), `--mem-fraction-static 0.85`, page 64.
//!
//! - ≤ 0.5.17 never elides: index-K on all 78 layers, device and host: 78 × 132 = 10,296.
//! - 0.5.18–0.5.21 (`kv_cache_configurator.py: _should_elide_dsa_index_k`) elide only
//!   with HiCache off (and no PD): 21 × 132 = 2,772; HiCache on keeps all 78 on the device
//!   and the host indexer pool (`DSAIndexerPoolHost`: `device_pool.layer_num`).
//! - 0.5.22+ elide whatever HiCache says and the host keeps the owned layers
//!   (`pool_host/dsa.py: make_dsa_indexer_pool_decl`): 2,772.

use hicache_sim::commands::startup_cmd::{load_scenario, plan_for};
use hicache_sim::startup::{self, StartupPlan};

const SCENARIO: &str = "\
node: gb300
model: glm-5.2
server:
  tp_size: 4
  page_size: 64
  kv_cache_dtype: fp8_e4m3
  mem_fraction_static: 0.85
  enable_hierarchical_cache: true
  hicache_size: 150
startup:
  gpu_reserved: 1GiB
";

fn scenario_file(dir: &tempfile::TempDir) -> String {
    let p = dir.path().join("glm52.yaml");
    std::fs::write(&p, SCENARIO).unwrap();
    p.to_str().unwrap().to_string()
}

fn plan(sglang: &str, sets: &[&str]) -> StartupPlan {
    let dir = tempfile::tempdir().unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = load_scenario(&scenario_file(&dir), &sets, Some(sglang.parse().unwrap()))
        .expect("scenario loads");
    plan_for(&s).expect("plan builds")
}

fn per_token(p: &StartupPlan) -> Vec<(&'static str, u64)> {
    p.pools
        .iter()
        .map(|x| (x.name, x.bytes_per_token))
        .collect()
}

/// Rank 0's host pools of one run: (name, tokens, requested bytes).
fn host_pools(p: &StartupPlan) -> Vec<(&'static str, u64, u64)> {
    startup::run(p, 0, 1).first_run[0]
        .pools
        .iter()
        .map(|x| (x.name, x.tokens, x.requested_bytes))
        .collect()
}

const OFF: &[&str] = &["server.enable_hierarchical_cache=false"];

/// The device pool's rest: 284,208 MiB − 1 GiB = 296,939,945,984 B free before the load,
/// 105e9 B of NVFP4 weights per rank: 296,939,945,984 × 0.85 − 105e9 =
/// 147,398,954,086.4 B. Elided cell 44,928 + 2,772 = 47,700 → 3,090,124 → 3,090,112
/// tokens (page 64); not elided 44,928 + 10,296 = 55,224 → 2,669,110 → 2,669,056. The
/// device bytes (`get_kv_size_bytes`, the auto-size estimate) hold one padding page.
#[test]
fn device_cell_follows_the_release_and_hicache() {
    for (sglang, sets, indexer, tokens, cell) in [
        ("0.5.17", &[][..], 10_296, 2_669_056, 55_224),
        ("0.5.17", OFF, 10_296, 2_669_056, 55_224),
        ("0.5.18", &[][..], 10_296, 2_669_056, 55_224),
        ("0.5.18", OFF, 2_772, 3_090_112, 47_700),
        ("0.5.21", &[][..], 10_296, 2_669_056, 55_224),
        ("0.5.21", OFF, 2_772, 3_090_112, 47_700),
        ("0.5.22", &[][..], 2_772, 3_090_112, 47_700),
        ("0.5.23", &[][..], 2_772, 3_090_112, 47_700),
        ("0.5.23", OFF, 2_772, 3_090_112, 47_700),
        // What-ifs take the pools of their nearest release (0.5.21, 0.5.22).
        ("pr40135", &[][..], 10_296, 2_669_056, 55_224),
        ("page-cache-credit", &[][..], 2_772, 3_090_112, 47_700),
    ] {
        let p = plan(sglang, sets);
        let ctx = format!("{sglang} {sets:?}");
        assert_eq!(
            per_token(&p),
            [("kv", 44_928), ("indexer", indexer)],
            "{ctx}"
        );
        assert_eq!(p.device_tokens, tokens, "{ctx}");
        assert_eq!(p.device_bytes, (tokens + 64) * cell, "{ctx}");
    }
    assert_eq!(plan("0.5.21", &[]).device_bytes, 147_399_482_880);
    assert_eq!(plan("0.5.23", &[]).device_bytes, 147_401_395_200);
}

/// `--hicache-size 150` per rank: KV 150e9 // 44,928 = 3,338,675 → 52,167 pages →
/// 3,338,688 tokens (150,000,574,464 B); the indexer mirrors the 52,167 pages on top of
/// it: 52,167 × 64 × 78 × 132 = 34,375,131,648 B (34.38 GB, ≤ 0.5.21) or × 21 × 132 =
/// 9,254,843,136 B (9.25 GB, 0.5.22+).
#[test]
fn host_indexer_at_hicache_size_150() {
    let kv = ("kv", 3_338_688, 150_000_574_464);
    for (sglang, bytes) in [
        ("0.5.17", 34_375_131_648),
        ("0.5.21", 34_375_131_648),
        ("0.5.22", 9_254_843_136),
        ("0.5.23", 9_254_843_136),
    ] {
        assert_eq!(
            host_pools(&plan(sglang, &[])),
            [kv, ("indexer", 3_338_688, bytes)],
            "{sglang}"
        );
    }
    // The incident's `--hicache-size 135`: 46,951 pages × 64 × 10,296 = 30.94 GB under
    // 0.5.21 (8.33 GB before the fix).
    let p = plan("0.5.21", &["server.hicache_size=135"]);
    assert_eq!(
        host_pools(&p),
        [
            ("kv", 3_004_864, 135_002_529_792),
            ("indexer", 3_004_864, 30_938_079_744)
        ]
    );
}

/// `--hicache-ratio 1.5`: the KV host pool is `int(device_tokens × 1.5)` + a padding page,
/// so the indexer follows the smaller non-elided device pool too. 0.5.21:
/// int(2,669,056 × 1.5) = 4,003,584 → 62,557 pages → 4,003,648 tokens; 0.5.23:
/// int(3,090,112 × 1.5) = 4,635,168 → 72,425 pages → 4,635,200 tokens.
#[test]
fn host_indexer_from_the_ratio() {
    let sets = ["server.hicache_size=0", "server.hicache_ratio=1.5"];
    assert_eq!(
        host_pools(&plan("0.5.21", &sets)),
        [
            ("kv", 4_003_648, 4_003_648 * 44_928),
            ("indexer", 4_003_648, 41_221_559_808)
        ]
    );
    assert_eq!(
        host_pools(&plan("0.5.23", &sets)),
        [
            ("kv", 4_635_200, 4_635_200 * 44_928),
            ("indexer", 4_635_200, 12_848_774_400)
        ]
    );
}

/// What a user reads: the text report's pool line.
#[test]
fn startup_text_prints_the_indexer_per_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario_file(&dir);
    let text = |sglang: &str| {
        let out = assert_cmd::Command::cargo_bin("hicache-sim")
            .unwrap()
            .args(["startup", &path, "--sglang", sglang, "--runs", "1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{sglang}");
        String::from_utf8(out.stdout).unwrap()
    };
    let t = text("0.5.21");
    assert!(
        t.contains(
            "Device pool: 2669056 tokens per rank; host pools: kv 44928 B/token, indexer 10296 B/token"
        ),
        "{t}"
    );
    assert!(
        t.contains("indexer 34.38 GB (3338688 tokens) = 184.38 GB requested in all"),
        "{t}"
    );
    let t = text("0.5.23");
    assert!(
        t.contains(
            "Device pool: 3090112 tokens per rank; host pools: kv 44928 B/token, indexer 2772 B/token"
        ),
        "{t}"
    );
    assert!(
        t.contains("indexer 9.25 GB (3338688 tokens) = 159.26 GB requested in all"),
        "{t}"
    );
}

/// One NextN draft layer (`--speculative-algorithm NEXTN`). Device (0.5.18+
/// `pool_configurator.py`: `cell + int(kv / 78) + 132`, the draft's indexer on its one
/// layer): 47,700 + 576 + 132 = 48,408 → 3,044,929 → 3,044,928 tokens elided (the
/// ≤ 0.5.17 scaling would give int(47,700 × 79 / 78) = 48,311); 55,224 + 708 = 55,932 →
/// 2,635,264 not elided. Host: the draft packed into both pools (`layer_num = target +
/// 1`): KV 45,504 → 150e9 // 45,504 = 3,296,413 → 51,507 pages → 3,296,448 tokens;
/// indexer (78 + 1) × 132 = 10,428 or (21 + 1) × 132 = 2,904 B/token.
#[test]
fn nextn_draft_adds_one_indexer_layer() {
    let mtp = ["server.speculative_algorithm=NEXTN"];
    let kv = ("kv", 3_296_448, 150_001_569_792);
    for (sglang, tokens, indexer, bytes) in [
        ("0.5.21", 2_635_264, 10_428, 34_375_359_744),
        ("0.5.23", 3_044_928, 2_904, 9_572_884_992),
    ] {
        let p = plan(sglang, &mtp);
        assert_eq!(p.device_tokens, tokens, "{sglang}");
        assert_eq!(
            per_token(&p),
            [("kv", 45_504), ("indexer", indexer)],
            "{sglang}"
        );
        assert_eq!(
            host_pools(&p),
            [kv, ("indexer", 3_296_448, bytes)],
            "{sglang}"
        );
    }
    let mut off = mtp.to_vec();
    off.extend(OFF);
    assert_eq!(plan("0.5.18", &off).device_tokens, 3_044_928);
    assert_eq!(plan("0.5.17", &off).device_tokens, 2_635_264);
}
