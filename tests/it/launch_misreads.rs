//! Launch commands once mis-read, case by case: each now parses the way
//! SGLang's own parser does, or is an error naming file, line and what SGLang says.

use assert_cmd::Command;
use serde_json::Value;

fn run(yaml: &str) -> (Option<i32>, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args(["startup", path.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A GB300 tray scenario around `launch` (one line) under SGLang `release`.
fn scenario(release: &str, launch: &str) -> String {
    format!(
        "sglang: \"{release}\"\nnode: gb300\nmodel: glm-5.2\nserver:\n  launch: {}\n",
        serde_json::to_string(launch).unwrap()
    )
}

const BASE: &str =
    "python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 --page-size 64";

fn ok(release: &str, flags: &str) -> Value {
    let (code, v, err) = run(&scenario(release, &format!("{BASE} {flags}")));
    assert!(matches!(code, Some(0 | 1)), "{flags}: {err}");
    v
}

fn refused(release: &str, flags: &str) -> String {
    let (code, _, err) = run(&scenario(release, &format!("{BASE} {flags}")));
    assert_eq!(code, Some(2), "{flags} was accepted");
    assert!(err.contains("s.yaml:5: field `server.launch`"), "{err}");
    err
}

#[test]
fn accepted_as_sglang_accepts_them() {
    let v = ok(
        "0.5.23",
        "--mem-frac 0.85 --enable-hicache --hicache-size 100",
    );
    assert_eq!(v["server"]["mem_fraction_static"], 0.85);
    assert_eq!(v["server"]["enable_hierarchical_cache"], true);
    assert_eq!(v["server"]["hicache_size"], 100);
    let v = ok("0.5.23", "--attn-dp-size 4 --enable-dp-attention");
    assert_eq!(
        (
            v["server"]["dp_size"].clone(),
            v["server"]["enable_dp_attention"].clone()
        ),
        (Value::from(4), Value::Bool(true))
    );
    let v = ok(
        "0.5.23",
        "--disaggregation-decode-enable-offload-kvcache --mamba-radix-cache-strategy extra_buffer --skip-tokenizer-init --radix-eviction-policy tlru",
    );
    assert_eq!(v["server"]["radix_eviction_policy"], "tlru");
    let nm: Vec<&str> = v["launch"]["not_modelled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["flag"].as_str().unwrap())
        .collect();
    assert_eq!(
        nm,
        [
            "--disaggregation-decode-enable-offload-kvcache",
            "--mamba-radix-cache-strategy",
            "--skip-tokenizer-init"
        ]
    );
    // Memory-relevant ones warn with what is left out; --skip-tokenizer-init is JSON only.
    let notes = v["notes"].to_string();
    assert!(notes.contains("warning: --disaggregation-decode-enable-offload-kvcache is not modelled: a PD decode server"), "{notes}");
    assert!(
        notes.contains("warning: --mamba-radix-cache-strategy is not modelled"),
        "{notes}"
    );
    assert!(!notes.contains("skip-tokenizer-init"), "{notes}");
    assert_eq!(v["launch"]["release"], "0.5.23");
    // nvfp4 KV: SGLang's parser accepts it; the simulator says it cannot size it.
    let (code, _, err) = run(&scenario(
        "0.5.23",
        &format!("{BASE} --kv-cache-dtype nvfp4"),
    ));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("kv cache dtype `nvfp4` is a valid SGLang choice, but its bytes per token"),
        "{err}"
    );
}

#[test]
fn refused_as_sglang_refuses_them() {
    let e = refused("0.5.23", "--pp 2");
    assert!(e.contains("SGLang 0.5.23 refuses this command: ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size, --pp-async-batch-depth"), "{e}");
    let e = refused("0.5.23", "--kv-cache-dtype fp8");
    assert!(e.contains("argument --kv-cache-dtype: invalid choice: 'fp8' (choose from 'auto', 'fp8_e5m2', 'fp8_e4m3'"), "{e}");
    let e = refused("0.5.23", "--enable-hierarchical-cache --hicache-size 135.5");
    assert!(
        e.contains("argument --hicache-size: invalid int value: '135.5'"),
        "{e}"
    );
    let e = refused(
        "0.5.23",
        "--enable-hierarchical-cache --hicache-storage-backend moonkake",
    );
    assert!(
        e.contains("argument --hicache-storage-backend: invalid choice: 'moonkake'"),
        "{e}"
    );
    // 0.5.23 splits --cuda-graph-bs by phase: the old spelling is an ambiguous prefix.
    let e = refused("0.5.23", "--cuda-graph-bs 1 2 4");
    assert!(e.contains("ambiguous option: --cuda-graph-bs could match --cuda-graph-bs-decode, --cuda-graph-bs-prefill (--cuda-graph-bs itself: removed in 0.5.20; last in 0.5.19)"), "{e}");
    let e = refused("0.5.23", "--enable-hierarchical-cache=false");
    assert!(e.contains("argument --enable-hierarchical-cache/--enable-hicache: ignored explicit argument 'false'"), "{e}");
    let e = refused(
        "0.5.20",
        "--enable-hierarchical-cache --hicache-host-memory-fraction 0.5",
    );
    assert!(
        e.contains("SGLang 0.5.20 has no flag --hicache-host-memory-fraction (added in 0.5.21)"),
        "{e}"
    );
}

#[test]
fn cuda_graph_bs_takes_every_value_where_it_exists() {
    // 0.5.14: --cuda-graph-bs is nargs='+' of ints: all three values, not one.
    let (code, v, err) = run(&scenario(
        "pre-28614",
        &format!("{BASE} --cuda-graph-bs 1 2 4"),
    ));
    assert!(matches!(code, Some(0 | 1)), "{err}");
    assert_eq!(v["launch"]["not_modelled"][0]["flag"], "--cuda-graph-bs");
    let r = hicache_sim::flags::table().release(hicache_sim::release::Release::V0_5_14);
    let argv: Vec<String> = ["--model-path", "m", "--cuda-graph-bs", "1", "2", "4"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let p = hicache_sim::flags::parse(r, &argv).unwrap();
    assert_eq!(
        p.values["cuda_graph_bs_decode"],
        serde_json::json!([1, 2, 4])
    );
}

#[test]
fn silent_cases_now_parse_or_speak() {
    // nohup bash -c "…": the command inside is read.
    let y = "sglang: \"0.5.23\"\nnode: gb300\nmodel: glm-5.2\nserver:\n  launch: >-\n    nohup bash -c \"python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4\n    --tp 4 --enable-hierarchical-cache --hicache-size 100\" > server.log 2>&1 &\n";
    let (code, v, err) = run(y);
    assert!(matches!(code, Some(0 | 1)), "{err}");
    assert_eq!(v["server"]["tp_size"], 4);
    assert_eq!(v["server"]["enable_hierarchical_cache"], true);
    assert_eq!(v["world_size"], 4);
    // HiCache flags without --enable-hierarchical-cache: SGLang ignores them; we say so.
    let v = ok(
        "0.5.23",
        "--hicache-size 100 --hicache-write-policy write_back",
    );
    assert_eq!(v["server"]["enable_hierarchical_cache"], false);
    assert!(v["notes"][0].as_str().unwrap().starts_with("warning: --hicache-size, --hicache-write-policy given without --enable-hierarchical-cache: SGLang keeps HiCache off"), "{}", v["notes"]);
    // An explicit field overriding a launch flag says so.
    let y = format!("{}  tp_size: 2\n", scenario("0.5.23", BASE));
    let (_, v, err) = run(&y);
    assert_eq!(v["server"]["tp_size"], 2, "{err}");
    assert_eq!(
        v["notes"][0],
        "server.tp_size: 2 (explicit field) overrides --tp 4 from the launch command"
    );
    // --model-path contradicting model: is an error at `model:`.
    let y = scenario(
        "0.5.23",
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 4",
    )
    .replace("glm-5.2", "deepseek-v3");
    let (code, _, err) = run(&y);
    assert_eq!(code, Some(2));
    assert!(err.contains("s.yaml:3: field `model`: --model-path Qwen/Qwen3-32B is a qwen3 model, but `model:` is `deepseek-v3`"), "{err}");
    // … and picks the preset when `model:` is absent.
    let y = scenario(
        "0.5.23",
        "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --tp 4",
    )
    .replace("model: glm-5.2\n", "");
    let (code, v, err) = run(&y);
    assert!(matches!(code, Some(0 | 1)), "{err}");
    assert!(
        v["notes"]
            .to_string()
            .contains("model: deepseek-v3.2 (picked from --model-path deepseek-ai/DeepSeek-V3.2)")
    );
}

#[test]
fn a_multi_pool_rank_reports_each_pool_and_the_total() {
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args([
            "startup",
            "scenarios/tp8-1772gib-176g.yaml",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r0 = &v["ranks"][0];
    let pools: Vec<u64> = r0["pools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["requested_bytes"].as_u64().unwrap())
        .collect();
    // KV: --hicache-size 176 → 176e9 // 40016 B/token = 4398240 tokens → 68723 pages of 64 (+1)
    // = 68723 × 64 × 40016 B; indexer: the same slots × 8052 B.
    assert_eq!(pools, [68_723 * 64 * 40_016, 68_723 * 64 * 8_052]);
    assert_eq!(
        r0["requested_total_bytes"].as_u64().unwrap(),
        pools.iter().sum::<u64>()
    );
    let text = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args(["startup", "scenarios/tp8-1772gib-176g.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(
            "rank 0 host pools: kv 176.00 GB (4398272 tokens) + indexer 35.41 GB (4398272 tokens) = 211.42 GB requested in all"
        ),
        "{text}"
    );
    assert!(text.contains("HiCache: on; write policy write_through, storage backend none, io backend kernel, mem layout page_first, prefetch policy timeout, eviction policy lru, page size 64, host memory mode cache, TP8 PP1 DP1"), "{text}");
}

#[test]
fn a_post_release_reads_its_base_releases_flag_table() {
    // `tools/flags/gen_flag_table.py` records 0.5.15.post1's parser only where it differs
    // from 0.5.15's (`post_releases_same_as`); it did not, so 0.5.15's table applies.
    use hicache_sim::release::Release;
    assert_eq!(Release::V0_5_15Post1.flags().release, Release::V0_5_15);
    assert_eq!(Release::V0_5_15.flags().release, Release::V0_5_15);
}

/// A `--set server.launch=…` replaces a file's folded (`>-`) launch block: it was read
/// from the file's block again and the `--set` dropped without a word (TP2 stayed TP2).
#[test]
fn a_set_launch_command_replaces_the_files_block() {
    let sc = crate::support::repo("scenarios/deepseek-v4-flash-device-tree.yaml");
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args([
            "startup",
            sc.to_str().unwrap(),
            "--format",
            "json",
            "--set",
            "server.launch=python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 4",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["world_size"],
        4,
        "{}",
        serde_json::to_string(&v)
            .unwrap()
            .chars()
            .take(600)
            .collect::<String>()
    );
}
