//! The 25 real HiCache launch commands of `tests/recipes/` (SGLang's docs, storage-backend
//! READMEs, benchmark scripts and issues; each file cites its source and names its node in
//! a `# hicache-sim:` comment) through `hicache-sim check`, as a new user runs them: one
//! row per file, and an answer for every one.
//!
//! An answer is a start-up verdict (`started`, with the host-memory margin), SGLang's own
//! refusal of the command (`invalid_args`, with its message), or, for a model that is a
//! placeholder or not described, an error row that names the `--model-path` and says how
//! to describe it.

use assert_cmd::Command;
use serde_json::Value;

/// file, release, outcome, host-memory margin in bytes (started rows).
///
/// Why each non-started row is what it is:
/// - 05: as published, `\  # Enable …` escapes a space: argparse gets the word " " and
///   refuses it ("unrecognized arguments:  ");
/// - 06, 07, 15, 16, 17: `your-model` / `[model_path]` placeholders;
/// - 19: the command was run on a release with `--disable-prefill-overlap`;
///   0.5.14 (the file's pinned release) has no such flag;
/// - 22: `--model-path` is followed by nothing SGLang takes as its value;
/// - 23: `valkey` is not a storage backend of 0.5.23's choices;
/// - 24: bash reads `<MODEL_PATH>` as two redirections (the `>` takes the next word,
///   `--host`), so `--model-path` gets `0.0.0.0`, which names no model.
///
/// A ratio-sized host pool's margin follows the device pool, so the node's GPU reserve
/// (hgx-h100: 2.32 GiB gone before the load): 08 (`--hicache-ratio 2.5`, TP4 at f 0.25)
/// has 62,656 device tokens a rank and 156,672 host tokens of 65,536 B; 10
/// (`--hicache-ratio 2`, TP2 at the default f 0.828) 272,448 and 544,960 of 131,072 B.
const TABLE: &[(&str, &str, &str, Option<u64>)] = &[
    (
        "01-bench-readme-hicache-qwen25-14b.sh",
        "0.5.23",
        "started",
        Some(1_498_816_317_440),
    ),
    (
        "02-best-practices-hf3fs-deepseek-r1.sh",
        "0.5.23",
        "started",
        Some(155_047_628_288),
    ),
    (
        "03-best-practices-mooncake-qwen3-235b.sh",
        "0.5.23",
        "started",
        Some(87_875_415_552),
    ),
    (
        "04-best-practices-pd-prefill-deepseek-r1.sh",
        "0.5.23",
        "started",
        Some(155_047_628_288),
    ),
    (
        "05-best-practices-pd-decode-deepseek-r1.sh",
        "0.5.23",
        "invalid_args",
        None,
    ),
    (
        "06-best-practices-dynamic-placeholder.sh",
        "0.5.23",
        "error",
        None,
    ),
    ("07-mooncake-readme-placeholder.sh", "0.5.23", "error", None),
    (
        "08-bench-mix-qwen3-32b-tp4.sh",
        "0.5.23",
        "started",
        Some(472_047_989_248),
    ),
    (
        "09-hf3fs-readme-qwen3-32b.sh",
        "0.5.23",
        "started",
        Some(1_965_756_533_248),
    ),
    (
        "10-hf3fs-multinode-qwen3-32b-tp2.sh",
        "0.5.23",
        "started",
        Some(908_202_293_760),
    ),
    (
        "11-nixl-default-qwen3-8b.sh",
        "0.5.23",
        "started",
        Some(910_259_599_872),
    ),
    (
        "12-nixl-json-qwen3-8b.sh",
        "0.5.23",
        "started",
        Some(910_259_599_872),
    ),
    (
        "13-nixl-hybrid-qwen35-9b-tp2.sh",
        "0.5.23",
        "started",
        // Qwen3.5-9B is multimodal: its KV budget leaves out 100 MiB per rank
        // (`mm_runtime_reservation_gb`), so the ratio-sized host pools are smaller;
        // --disable-cuda-graph takes the graph reserve out of the default fraction.
        Some(73_349_343_744),
    ),
    (
        "14-aibrix-qwen3-32b.sh",
        "0.5.23",
        "started",
        Some(1_965_039_307_264),
    ),
    ("15-eic-placeholder.sh", "0.5.23", "error", None),
    (
        "16-simm-extra-config-placeholder.sh",
        "0.5.23",
        "error",
        None,
    ),
    ("17-simm-env-placeholder.sh", "0.5.23", "error", None),
    (
        "18-seaweedfs-qwen3-8b.sh",
        "0.5.23",
        "started",
        Some(222_323_132_416),
    ),
    (
        "19-issue-14282-llama31-8b-tp4.sh",
        "0.5.14",
        "invalid_args",
        None,
    ),
    (
        "20-best-practices-mooncake-qwen3-235b-b200-0.5.20.sh",
        "0.5.20",
        "started",
        Some(31_470_939_648),
    ),
    (
        "21-tiered-cache-dp8ep8-deepseek-v3-mi300x.sh",
        "0.5.23",
        "started",
        Some(105_657_093_632),
    ),
    (
        "22-session-cache-placeholder.sh",
        "0.5.23",
        "invalid_args",
        None,
    ),
    ("23-valkey-llama31-8b.sh", "0.5.23", "invalid_args", None),
    ("24-file-direct-io-placeholder.sh", "0.5.23", "error", None),
    (
        "25-disk-bench-qwen3-32b-h200.sh",
        "0.5.23",
        "started",
        Some(1_924_249_700_864),
    ),
];

#[test]
fn every_recipe_gets_an_answer() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recipes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sh"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 25, "tests/recipes holds the 25 recipes");
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .args(
            files
                .iter()
                .map(|p| format!("tests/recipes/{}", p.file_name().unwrap().to_string_lossy())),
        )
        .args(["--format", "json", "--runs", "200"])
        .output()
        .unwrap();
    // Some rows fail (refusals, placeholders): exit 2 once every row is printed.
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), TABLE.len(), "one row per file");
    for (row, (file, release, outcome, margin)) in rows.iter().zip(TABLE) {
        let got_file = row["file"].as_str().unwrap();
        assert!(got_file.ends_with(file), "{got_file} vs {file}");
        assert_eq!(row["sglang"], *release, "{file}");
        assert_eq!(row["outcome"], *outcome, "{file}: {row}");
        assert_eq!(row["margin_bytes"].as_u64(), *margin, "{file}: {row}");
        let msg = row["message"].as_str().unwrap_or("");
        match *outcome {
            "started" => assert_eq!(row["start_probability"], 1.0, "{file}"),
            "invalid_args" => assert!(msg.contains("line "), "{file}: {msg}"),
            "error" => {
                // Names the model path and how to describe a model.
                assert!(
                    msg.contains("--model-path") || msg.contains("unknown model"),
                    "{file}: {msg}"
                );
                assert!(msg.contains("model:"), "{file}: {msg}");
            }
            o => panic!("{file}: unexpected outcome {o}"),
        }
    }
    let started = TABLE.iter().filter(|r| r.2 == "started").count();
    let refused = TABLE.iter().filter(|r| r.2 == "invalid_args").count();
    assert_eq!(
        (started, refused, TABLE.len() - started - refused),
        (15, 4, 6)
    );
}
