//! Golden outputs: the JSON report of each incident scenario is pinned byte for byte, so
//! any change to a reproduced figure is a reviewed decision, not noise. Regenerate with
//! `UPDATE_GOLDEN=1 cargo test --test it golden_startup` and review the diff.

use assert_cmd::Command;

fn check(name: &str, args: &[&str]) {
    let out = Command::cargo_bin("hicache-sim")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = format!("tests/golden/{name}.json");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &out.stdout).unwrap();
    }
    let want =
        std::fs::read(&path).unwrap_or_else(|_| panic!("{path} missing: run with UPDATE_GOLDEN=1"));
    assert!(
        out.stdout == want,
        "{name}: output differs from {path} (UPDATE_GOLDEN=1 to accept)"
    );
}

#[test]
fn gb300_135g_pr40135() {
    check(
        "gb300-glm52-135g",
        &[
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--format",
            "json",
            "--runs",
            "200",
        ],
    );
}

#[test]
fn gb300_135g_page_cache_credit() {
    check(
        "gb300-glm52-135g.page-cache-credit",
        &[
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--sglang",
            "page-cache-credit",
            "--format",
            "json",
            "--runs",
            "200",
        ],
    );
}

#[test]
fn tp8_startup_race() {
    check(
        "tp8-startup-race",
        &[
            "startup",
            "scenarios/tp8-startup-race.yaml",
            "--format",
            "json",
            "--runs",
            "200",
        ],
    );
}

#[test]
fn tp8_1772gib_176g() {
    check(
        "tp8-1772gib-176g",
        &[
            "startup",
            "scenarios/tp8-1772gib-176g.yaml",
            "--format",
            "json",
            "--runs",
            "200",
        ],
    );
}
