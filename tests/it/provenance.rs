//! Where a field's value came from (the provenance map, `scenario/lines.rs`): an error
//! about a field names the origin of its value — its own line of the file, the `--set`
//! that gave it, the flag of the pasted launch command (and the flag's line), or the
//! sweep axis value (and the value's line) — and `check` names a file's release, typed
//! once by the loader, even when a later stage fails.

use crate::support::{code, run, stderr, stdout};

/// Runs `args` in a folder holding `files`; exit code, stdout, stderr.
fn in_dir(files: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let d = tempfile::tempdir().unwrap();
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).unwrap();
    }
    let o = run(args, d.path());
    (code(&o), stdout(&o), stderr(&o))
}

const HEAD: &str = "node: gb300\nmodel: glm-5.2\nserver:\n";

#[test]
fn a_launch_flag_is_named_at_its_own_line() {
    // The block's third line (file line 7) gives `--page-size 0`; SGLang's page size must
    // be at least 1. Before, the error pointed at `server:` (line 3) and named no flag.
    let text = format!(
        "{HEAD}  launch: |\n    python -m sglang.launch_server --model-path zai-org/GLM-5.2 --tp 4 \\\n      --enable-hierarchical-cache --hicache-size 176 \\\n      --page-size 0\n"
    );
    let (rc, _, err) = in_dir(&[("l.yaml", &text)], &["startup", "l.yaml", "--runs", "2"]);
    assert_eq!(rc, 2, "{err}");
    assert_eq!(
        err,
        "error: l.yaml:7: field `server.page_size`: launch command flag `--page-size 0`: must be at least 1\n"
    );
}

#[test]
fn a_one_line_launch_names_the_flag_with_its_value() {
    // An explicit `page_size: 32` wins over `--page-size 0` (no error about it); the
    // fraction comes from the flag, on the launch line (4).
    let text = format!(
        "{HEAD}  page_size: 32\n  launch: python -m sglang.launch_server --model-path zai-org/GLM-5.2 --tp 4 --page-size 0 --mem-fraction-static 1.5\n"
    );
    let (rc, _, err) = in_dir(&[("e.yaml", &text)], &["startup", "e.yaml", "--runs", "2"]);
    assert_eq!(rc, 2, "{err}");
    assert_eq!(
        err,
        "error: e.yaml:5: field `server.mem_fraction_static`: launch command flag `--mem-fraction-static 1.5`: 1.5 must be in (0, 1)\n"
    );
    // A `--set` of the field wins over the flag: the error names the `--set`.
    let (rc, _, err) = in_dir(
        &[("e.yaml", &text)],
        &[
            "startup",
            "e.yaml",
            "--runs",
            "2",
            "--set",
            "server.mem_fraction_static=2",
        ],
    );
    assert_eq!(rc, 2, "{err}");
    assert_eq!(
        err,
        "error: --set server.mem_fraction_static=2: field `server.mem_fraction_static`: 2 must be in (0, 1)\n"
    );
}

#[test]
fn a_launch_given_with_set_is_named_as_that_set() {
    let set = "server.launch=python -m sglang.launch_server --model-path zai-org/GLM-5.2 --tp 4 --page-size 0";
    let (rc, _, err) = in_dir(
        &[("s.yaml", HEAD)],
        &["startup", "s.yaml", "--runs", "2", "--set", set],
    );
    assert_eq!(rc, 2, "{err}");
    assert_eq!(
        err,
        format!(
            "error: --set {set}: field `server.page_size`: launch command flag `--page-size 0`: must be at least 1\n"
        )
    );
}

#[test]
fn check_names_the_flag_and_the_line_of_a_bare_command_file() {
    let sh = "# hicache-sim: node=gb300\npython3 -m sglang.launch_server --model-path zai-org/GLM-5.2 --tp 4 \\\n  --enable-hierarchical-cache --hicache-size 176 \\\n  --page-size 0\n";
    let (rc, out, err) = in_dir(&[("r.sh", sh)], &["check", "r.sh", "--runs", "4"]);
    assert_eq!(rc, 2, "{err}");
    let msg =
        "r.sh:4: field `server.page_size`: launch command flag `--page-size 0`: must be at least 1";
    assert!(out.contains(&format!("        {msg}\n")), "{out}");
    assert_eq!(err, format!("error: {msg}\n"));
}

/// The sweep scenario's head (no `sweep:` section): a valid GB300 scenario.
const SWEPT: &str = "node: gb300\nmodel: glm-5.2\nsglang: 0.5.21\nseed: 1\nruns: 2\nserver:\n  tp_size: 4\n  enable_hierarchical_cache: true\n  hicache_size: 100\nruntime:\n  trace: t.jsonl\n";

#[test]
fn a_sweep_axis_value_is_named_at_its_line() {
    // Line 14 holds the page-size axis; its second value, 0, is refused.
    let one = format!("{SWEPT}sweep:\n  axes:\n    server.page_size: [64, 0]\n");
    let (rc, _, err) = in_dir(&[("s.yaml", &one)], &["sweep", "s.yaml", "--out", "o"]);
    assert_eq!(rc, 2, "{err}");
    assert_eq!(
        err,
        "error: s.yaml:14: field `server.page_size`: sweep axis `server.page_size` value 0: must be at least 1\n"
    );
    // With another axis, the combination is said after SGLang's words.
    let two = format!(
        "{SWEPT}sweep:\n  axes:\n    server.hicache_ratio: [null, 2.0]\n    server.page_size:\n      - 64\n      - 0\n"
    );
    let (rc, _, err) = in_dir(&[("s.yaml", &two)], &["sweep", "s.yaml", "--out", "o"]);
    assert_eq!(rc, 2, "{err}");
    assert_eq!(
        err,
        "error: s.yaml:17: field `server.page_size`: sweep axis `server.page_size` value 0: must be at least 1 (invalid combination server.hicache_ratio=null, server.page_size=0)\n"
    );
}

#[test]
fn a_sweep_release_axis_is_typed_once_and_named_at_its_line() {
    let y = format!("{SWEPT}sweep:\n  axes:\n    sglang: [0.5.19, pr4013]\n");
    let (rc, _, err) = in_dir(&[("s.yaml", &y)], &["sweep", "s.yaml", "--out", "o"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.starts_with(
            "error: s.yaml:14: field `sglang`: sweep axis `sglang` value \"pr4013\": unknown SGLang version `pr4013` (did you mean `pr40135`?): expected a release"
        ),
        "{err}"
    );
}

#[test]
fn check_keeps_the_release_a_file_asks_for_when_a_later_stage_fails() {
    // `sglang: 0.5.19` is typed by the loader's first stage; the node preset fails later.
    let (rc, out, _) = in_dir(
        &[
            ("n.yaml", "node: nosuch\nsglang: 0.5.19\nmodel: glm-5.2\n"),
            ("v.yaml", "node: gb300\nsglang: 1\nmodel: glm-5.2\n"),
            ("y.yaml", "node: gb300\nmodel: [glm\n"),
        ],
        &["check", "n.yaml", "v.yaml", "y.yaml", "--format", "json"],
    );
    assert_eq!(rc, 2, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let release = |f: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|r| r["file"] == f)
            .unwrap()["sglang"]
            .clone()
    };
    assert_eq!(release("n.yaml"), "0.5.19");
    // A `sglang:` that is no release, and a file that is no YAML, tell no release.
    assert_eq!(release("v.yaml"), "-");
    assert_eq!(release("y.yaml"), "-");
}
