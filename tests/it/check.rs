//! `hicache-sim check`: exit codes for a recipe repository's CI, bare launch-command
//! files named by `# hicache-sim:` comments, and JUnit XML read back by an XML parser.

use crate::support::sim;

const GB300: &str = "scenarios/gb300-glm52-135g.yaml";

/// The incident's recipe as a shell file: the same machine as the scenario, named in
/// comments (no jitter: every rank samples together).
const RECIPE: &str = r#"#!/bin/bash
# GLM-5.2 on a GB300 tray, job cgroup 900 GB
# hicache-sim: node=gb300 memory.cgroup.max=900GB memory.host_other_used=10GB
# hicache-sim: startup.weight_load.bytes_per_node=420GB startup.process_memory=15GB
python -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 \
  --kv-cache-dtype fp8_e4m3 --page-size 64 --mem-fraction-static 0.85 \
  --enable-hierarchical-cache --hicache-size 135 --hicache-write-policy write_through \
  --trust-remote-code
"#;

const REFUSAL: &str = "Not enough host memory available. Requesting 135.00 GB but only have 102.32 GB free. Please reduce the size of the hierarchical cache.";

/// 0.5.21 charges the checkpoint's page cache: (900 − 60 − 420 GB − 10 GiB) // 4 =
/// 102.32 GB < 135.00 GB on every rank → exit 1. 0.5.18 (`startup --sglang all`:
/// started, P(refuse) 0) sizes from psutil / whole headroom and starts it → exit 0.
#[test]
fn exit_codes_on_the_135_gb_recipe() {
    let out = sim()
        .args(["check", GB300, "--sglang", "0.5.21", "--runs", "200"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("refused") && text.contains(REFUSAL), "{text}");
    assert!(text.contains("-32.69 GB"), "{text}");
    sim()
        .args(["check", GB300, "--sglang", "0.5.18", "--runs", "200"])
        .assert()
        .code(0);
    // Any failing release fails the check.
    sim()
        .args(["check", GB300, "--sglang", "0.5.18,0.5.21", "--runs", "50"])
        .assert()
        .code(1);
}

#[test]
fn bare_launch_command_files() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("recipe.sh");
    std::fs::write(&recipe, RECIPE).unwrap();
    let r = recipe.to_str().unwrap();
    let out = sim()
        .args(["check", r, "--sglang", "0.5.21,0.5.18", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["outcome"], "refused");
    assert_eq!(v[0]["message"], REFUSAL);
    assert_eq!(v[0]["start_probability"], 0.0);
    assert_eq!(v[1]["outcome"], "started");
    assert_eq!(v[1]["passed"], true);

    // No machine named: bad input.
    let nonode = dir.path().join("nonode.sh");
    std::fs::write(&nonode, RECIPE.replace("# hicache-sim: node=gb300 ", "# ")).unwrap();
    sim()
        .args(["check", nonode.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("# hicache-sim: node=gb300"));
    // … unless --node says it.
    sim()
        .args([
            "check",
            nonode.to_str().unwrap(),
            "--node",
            "gb300",
            "--sglang",
            "0.5.18",
        ])
        .assert()
        .code(0);

    // A bad flag value: SGLang's parser refuses the command, an invalid_args row (exit
    // 1: a check never aborts the batch), at the file's own line (7), not the
    // wrapper's.
    let bad = dir.path().join("bad.sh");
    std::fs::write(
        &bad,
        RECIPE.replace("--hicache-size 135", "--hicache-size abc"),
    )
    .unwrap();
    sim()
        .args(["check", bad.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("invalid_args"))
        .stdout(predicates::str::contains(
            "line 7: SGLang 0.5.23 refuses this command",
        ))
        .stderr(predicates::str::contains("bad.sh:7:"))
        .stderr(predicates::str::contains("invalid int value: 'abc'"));
}

/// JUnit XML, parsed: one testcase per file × release, failures carrying SGLang's text;
/// 0.5.15.post1 reads 0.5.15's flag table (the generator found its parser unchanged) and
/// starts the recipe like 0.5.15.
#[test]
fn junit_is_valid_xml() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("r&d <recipe>.sh");
    std::fs::write(&recipe, RECIPE).unwrap();
    let out = sim()
        .args([
            "check",
            GB300,
            recipe.to_str().unwrap(),
            "--sglang",
            "0.5.15.post1,0.5.18,0.5.21",
            "--runs",
            "20",
            "--format",
            "junit",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let cases: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 6);
    assert_eq!(root.attribute("tests"), Some("6"));
    assert_eq!(root.attribute("failures"), Some("2"));
    assert_eq!(root.attribute("skipped"), Some("0"));
    let failures: Vec<_> = cases
        .iter()
        .filter_map(|c| c.children().find(|n| n.has_tag_name("failure")))
        .collect();
    assert_eq!(failures.len(), 2);
    for f in &failures {
        assert_eq!(f.attribute("type"), Some("refused"));
        assert_eq!(f.text(), Some(REFUSAL));
    }
    // The escaped file name reads back as written.
    assert!(
        cases
            .iter()
            .any(|c| c.attribute("classname") == recipe.to_str())
    );
    assert!(
        cases
            .iter()
            .filter(|c| {
                c.attribute("name") == Some("sglang 0.5.18")
                    || c.attribute("name") == Some("sglang 0.5.15.post1")
            })
            .all(|c| c.children().all(|n| !n.is_element()))
    );
}
