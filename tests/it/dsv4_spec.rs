//! DeepSeek-V4's device pools under speculative decoding (`--speculative-algorithm EAGLE
//! --speculative-eagle-topk 1 --speculative-num-steps S`, the MTP layer as the draft)
//! against each release's own `model_executor/pool_configurator.py:
//! DSV4PoolConfigurator`: `tools/models/dsv4_spec_golden.py` runs the class on SGLang's
//! `ModelConfig` (tests/golden/dsv4_spec/, 0.5.14–0.5.23) per model × layout (TP,
//! attention DP) × draft tokens (2, 3, 4, 8, 11) × ratio-mode schedule, at 40 and 100
//! GiB. Every coefficient (Python's `repr`), ring size, pool size and SGLang refusal
//! (`_assert_ring_serves_draft_tokens`, 0.5.18+) must be the simulator's.

use std::collections::BTreeMap;

use hicache_sim::model::dsv4::{Dsv4Error, Dsv4Formula, Dsv4Geometry, Dsv4Schedule};
use hicache_sim::release::{Dsv4DraftTokenBound, Sglang};
use serde_json::Value;

const RELEASES: [&str; 10] = [
    "0.5.14", "0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22",
    "0.5.23",
];

#[test]
fn dsv4_spec_pools_match_sglang() {
    let (mut sized, mut refused) = (0usize, 0usize);
    let mut failures = Vec::new();
    // (release, draft tokens) → Flash's full tokens at 100 GiB, TP4, the defaults.
    let mut flash = BTreeMap::new();
    for rel in RELEASES {
        let rules = Sglang::from_id(rel).unwrap().release_rules().pools;
        let formula = Dsv4Formula::of(rules.dsv4_pools);
        let path = format!("tests/golden/dsv4_spec/{rel}.jsonl");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in text.lines() {
            let g: Value = serde_json::from_str(line).unwrap();
            assert_eq!(g["case"], "dsv4_spec", "{path}: {line}");
            assert!(g.get("error").is_none(), "{path}: {line}");
            let id = g["model"].as_str().unwrap();
            let hf = crate::support::catalogue_hf(id);
            let geo = Dsv4Geometry::of(&hf.attention, hf.layers).expect("a DSV4 geometry");
            assert_eq!(g["layers"].as_u64(), Some(hf.layers as u64), "{path}: {id}");
            // `_handle_eagle_family`: top-k 1 makes the draft tokens steps + 1.
            let n = g["speculative_num_draft_tokens"].as_u64().unwrap();
            assert_eq!(g["speculative_num_steps"].as_u64(), Some(n - 1));
            let dp = g["dp"].as_u64().unwrap();
            let ctx = format!("{rel} {id} tp={} dp={dp} draft tokens {n}", g["tp"]);
            for c in g["dsv4"].as_array().unwrap() {
                // A refused schedule records no ratio: the release's rule gives it.
                let ratio = match c.get("swa_full_tokens_ratio_explicitly_set") {
                    Some(_) => crate::dsv4_host::golden_operator_ratio(rel, c),
                    None => rules
                        .dsv4_pools
                        .operator_swa_full_tokens_ratio(c["swa_full_tokens_ratio_arg"].as_f64()),
                };
                let sched = Dsv4Schedule {
                    compress_state_itemsize: match c["compress_state_dtype"].as_str() {
                        Some("bf16") => 2,
                        _ => 4,
                    },
                    max_running_requests: c["max_running_requests"].as_u64().unwrap(),
                    chunked_prefill_size: c["chunked_prefill_size"].as_i64().unwrap(),
                    operator_swa_full_tokens_ratio: ratio,
                    attn_dp_size: dp,
                    speculative_num_draft_tokens: Some(n),
                    ..Dsv4Schedule::sglang_default(8192)
                };
                let bound = geo.check_draft_tokens(rules.dsv4_draft_token_bound, &sched);
                if let Some(err) = c.get("error") {
                    // SGLang's AssertionError, word for word.
                    refused += 1;
                    match bound {
                        Err(e @ Dsv4Error::DraftTokensExceedRing { .. }) => {
                            let want = format!("AssertionError: {e}");
                            if err.as_str() != Some(want.as_str()) {
                                failures.push(format!("{ctx}: simulator {want}, SGLang {err}"));
                            }
                        }
                        other => failures
                            .push(format!("{ctx}: simulator {other:?}, SGLang refuses: {err}")),
                    }
                    continue;
                }
                if let Err(e) = bound {
                    failures.push(format!("{ctx}: simulator refuses ({e}), SGLang sizes"));
                    continue;
                }
                let (c4, c128) = sched.ring_sizes();
                if c["ring_sizes"]["4"].as_u64() != Some(c4)
                    || c["ring_sizes"]["128"].as_u64() != Some(c128)
                {
                    failures.push(format!("{ctx}: rings {c4}/{c128}, SGLang {c}"));
                }
                let mut c = c.clone();
                c["speculative_num_draft_tokens"] = n.into();
                failures.extend(crate::kv_bytes::dsv4_case(
                    formula, ratio, &geo, &c, &ctx, dp,
                ));
                sized += 1;
                if id == "deepseek-ai/DeepSeek-V4-Flash"
                    && g["tp"] == 4
                    && dp == 1
                    && c["max_running_requests"] == 256
                    && c["swa_full_tokens_ratio_arg"].is_null()
                    && c.get("compress_state_dtype").is_none()
                {
                    let s = &c["sizes"]["100"];
                    flash.insert(
                        (rel, n),
                        (s["full"].as_u64().unwrap(), s["swa"].as_u64().unwrap()),
                    );
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // 10 releases × 4 models × 4 layouts × 5 draft counts × 4 schedules = 3,200: 0.5.18+
    // refuse 11 draft tokens (6 × 4 × 4 × 4 = 384). (The two sgl-project FP8 configs,
    // `model_type: deepseek_ref`, are ones SGLang's ModelConfig cannot build offline.)
    assert_eq!((sized, refused), (3200 - 384, 384));
    // DeepSeek-V4-Flash, TP4, 100 GiB available, --max-running-requests 256 (the V4
    // default, set before the speculative handler's 48), ratio 0.1: the draft count does
    // not move the figures (the rings are 16 / 256 rows for any draft).
    for rel in RELEASES {
        for n in [2, 3, 4, 8] {
            assert_eq!(flash[&(rel, n)], flash[&(rel, 4)], "{rel} {n}");
        }
    }
    assert_eq!(flash[&("0.5.14", 4)], (4_125_696, 412_416));
    assert_eq!(flash[&("0.5.17", 4)], (11_010_048, 1_100_800));
    assert_eq!(flash[&("0.5.20", 4)], (11_010_048, 1_100_800));
    assert_eq!(flash[&("0.5.23", 4)], (12_841_728, 1_284_096));
    // Draft tokens 11 too where SGLang sizes them (0.5.14–0.5.17).
    assert_eq!(flash.len(), 10 * 4 + 4);
}

/// The 0.5.18+ bound by hand: the C4 ring of 16 rows serves `16 − 8 + 2` = 10 draft
/// tokens, the C128 ring of 256 rows `256 − 128 + 2` = 130; 0.5.14–0.5.17 do not bound.
#[test]
fn dsv4_draft_token_bound_by_release() {
    let hf = crate::support::catalogue_hf("deepseek-ai/DeepSeek-V4-Flash");
    let geo = Dsv4Geometry::of(&hf.attention, hf.layers).unwrap();
    let at = |n| Dsv4Schedule {
        speculative_num_draft_tokens: Some(n),
        ..Dsv4Schedule::sglang_default(8192)
    };
    for rel in RELEASES {
        let bound = Sglang::from_id(rel)
            .unwrap()
            .release_rules()
            .pools
            .dsv4_draft_token_bound;
        let early = ["0.5.14", "0.5.15", "0.5.16", "0.5.17"].contains(&rel);
        assert_eq!(
            bound,
            if early {
                Dsv4DraftTokenBound::Unbounded
            } else {
                Dsv4DraftTokenBound::RingWritePad
            },
            "{rel}"
        );
        assert!(geo.check_draft_tokens(bound, &at(10)).is_ok());
        assert_eq!(
            geo.check_draft_tokens(bound, &at(11)).is_ok(),
            early,
            "{rel}"
        );
    }
    assert_eq!(
        geo.check_draft_tokens(Dsv4DraftTokenBound::RingWritePad, &at(11))
            .unwrap_err(),
        Dsv4Error::DraftTokensExceedRing {
            draft_tokens: 11,
            ratio: 4,
            ring_size: 16,
            max_draft_tokens: 10
        }
    );
}

/// DeepSeek-V4-Flash at TP 4 on an HGX B200, HiCache off, at the default f 0.855 (the
/// budget `profile_max_num_token` leaves: 119,735,425,551 B; see `models_v4.rs:
/// deepseek_v4_device_pools_by_each_releases_formula`), with `--speculative-algorithm
/// EAGLE --speculative-eagle-topk 1 --speculative-num-steps 3` (4 draft tokens), each
/// release's own `DSV4PoolConfigurator` (the figures its golden lines give for that
/// budget):
/// - 0.5.21–0.5.23: the SWA token 585 × 43 + 16/256 × (8,192 + 2,048) × 21 = 38,595 B
///   (31,875 without the draft: 8-row rings); the full token (0.1 × 38,595 + 3,899.25)
///   × 44/43 = 7,939.186… B (7,086.75); the C128 rings 257 × 256 + 257 → 66,176 rows ×
///   4,096 B × 20 = 5,421,137,920 B (2,715,811,840); 114,314,287,631 / 7,939.19 →
///   14,398,720 full tokens (16,512,256: −2,113,536, −12.8 %), SWA 1,439,744
///   (1,651,200);
/// - 0.5.15–0.5.20: (7,705.45 + 1,344) × 44/43 = 9,259.90 B, the same rings:
///   12,344,832 / 1,234,432 (15,186,432 / 1,518,592);
/// - 0.5.14: the C128 rings per SWA token too, (15,897.45 + 1,344 + 8,192) × 44/43 =
///   26,024.93 B: 4,600,576 / 460,032 (7,531,520 / 753,152).
#[test]
fn deepseek_v4_flash_tp4_eagle_on_hgx_b200() {
    use assert_cmd::Command;
    let run = |rel: &str, spec: bool| {
        let mut c = Command::cargo_bin("hicache-sim").unwrap();
        c.args(["startup", "--format", "json", "--sglang", rel])
            .arg("scenarios/deepseek-v4-pro-host-pools.yaml")
            .args(["--set", "server.enable_hierarchical_cache=false"])
            .args(["--set", "server.tp_size=4"])
            .args(["--set", "model=deepseek-ai/DeepSeek-V4-Flash"]);
        if spec {
            c.args(["--set", "server.speculative_algorithm=EAGLE"])
                .args(["--set", "server.speculative_eagle_topk=1"])
                .args(["--set", "server.speculative_num_steps=3"]);
        }
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(0), "{rel}: {err}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["status"], "ok", "{rel} spec={spec}: {v}");
        (
            v["device_pool_tokens"].as_u64().unwrap(),
            v["device_swa_pool_tokens"].as_u64().unwrap(),
        )
    };
    for (rel, plain, eagle) in [
        ("0.5.14", (7_531_520, 753_152), (4_600_576, 460_032)),
        ("0.5.17", (15_186_432, 1_518_592), (12_344_832, 1_234_432)),
        ("0.5.20", (15_186_432, 1_518_592), (12_344_832, 1_234_432)),
        ("0.5.21", (16_512_256, 1_651_200), (14_398_720, 1_439_744)),
        ("0.5.23", (16_512_256, 1_651_200), (14_398_720, 1_439_744)),
    ] {
        assert_eq!(run(rel, false), plain, "{rel}");
        assert_eq!(run(rel, true), eagle, "{rel}");
    }
}

/// `check` on launch commands: EAGLE as DeepSeek-V4 takes it sizes (`ok`, no longer
/// `not_modelled`); `NEXTN`, a missing top-k 1 or missing steps are SGLang's own
/// AssertionErrors (`invalid_args`); 11 draft tokens fail 0.5.18+ with the
/// configurator's words and start under 0.5.17; HiCache with the draft stays
/// `not_modelled` (its host pools).
#[test]
fn check_answers_deepseek_v4_with_eagle() {
    use assert_cmd::Command;
    let dir = tempfile::tempdir().unwrap();
    let head = "# hicache-sim: node=hgx-b200\npython -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 4";
    let cases = [
        (
            "eagle.sh",
            " --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
        ),
        (
            "steps1.sh",
            " --speculative-algorithm EAGLE --speculative-num-steps 1 --speculative-eagle-topk 1",
        ),
        ("nextn.sh", " --speculative-algorithm NEXTN"),
        (
            "notopk.sh",
            " --speculative-algorithm EAGLE --speculative-num-steps 3",
        ),
        (
            "nosteps.sh",
            " --speculative-algorithm EAGLE --speculative-eagle-topk 1",
        ),
        (
            "eleven.sh",
            " --speculative-algorithm EAGLE --speculative-num-steps 10 --speculative-eagle-topk 1",
        ),
        (
            "hicache.sh",
            " --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --enable-hierarchical-cache --hicache-ratio 2",
        ),
    ];
    let mut files = Vec::new();
    for (name, flags) in cases {
        let f = dir.path().join(name);
        std::fs::write(&f, format!("{head}{flags}\n")).unwrap();
        files.push(f);
    }
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args(["check", "--sglang", "0.5.17,0.5.18,0.5.23", "--runs", "5"])
        .args(&files)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let status = |file: &str, rel: &str| {
        let row = text
            .lines()
            .find(|l| {
                let mut w = l.split_whitespace();
                w.next().is_some_and(|f| f.ends_with(&format!("/{file}"))) && w.next() == Some(rel)
            })
            .unwrap_or_else(|| panic!("{file} {rel}: {text}"));
        row.split_whitespace().nth(2).unwrap().to_string()
    };
    for rel in ["0.5.17", "0.5.18", "0.5.23"] {
        assert_eq!(status("eagle.sh", rel), "ok", "{text}");
        assert_eq!(status("steps1.sh", rel), "ok", "{text}");
        for f in ["nextn.sh", "notopk.sh", "nosteps.sh"] {
            assert_eq!(status(f, rel), "invalid_args", "{f}: {text}");
        }
        assert_eq!(status("hicache.sh", rel), "not_modelled", "{text}");
    }
    assert_eq!(status("eleven.sh", "0.5.17"), "ok", "{text}");
    assert_eq!(status("eleven.sh", "0.5.18"), "failed", "{text}");
    assert_eq!(status("eleven.sh", "0.5.23"), "failed", "{text}");
    assert!(text.contains("speculative_num_draft_tokens=11 exceeds what the c4 compress state ring can keep resident (ring_size=16 serves at most 10 draft tokens)"), "{text}");
    assert!(
        text.contains(
            "Only EAGLE speculative algorithm with topk == 1 is supported for DeepseekV4ForCausalLM"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM"
        ),
        "{text}"
    );
}
