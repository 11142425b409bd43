//! The book's reference pages are the code's own declarations: the commands and options
//! (clap's tree), the scenario keys and their defaults (the scenario's types) and the
//! releases (`versions`), each written between `BEGIN/END generated` markers by
//! `hicache_sim::reference` and compared here. A page edited by hand, or an option added
//! without regenerating, fails (`UPDATE_DOCS=1 cargo test --release --test it
//! docs_reference` rewrites them).

use crate::support::check_doc;

#[test]
fn the_command_reference_is_clap_s_tree() {
    let md = hicache_sim::reference::cli_markdown();
    // Real content: every subcommand and a flag of each kind, with its help.
    for needle in [
        "## `hicache-sim plan`",
        "## `hicache-sim trace gen`",
        "| `--headroom <GB>` | default `10` |",
        "| `--target-start <TARGET_START>` | default `0.999` |",
        "hicache-sim plan scenarios/quickstart.yaml --out plan-quickstart",
    ] {
        assert!(md.contains(needle), "{needle} not in the generated page");
    }
    check_doc("docs/src/reference/cli.md", "commands", &md).unwrap();
}

#[test]
fn the_versions_page_is_what_versions_prints() {
    let md = hicache_sim::reference::versions_markdown();
    assert!(md.contains("  0.5.23         2026-10-30  "), "{md}");
    assert!(md.contains("shipped: in no release up to 0.5.23 (a proposal)"));
    check_doc("docs/src/reference/versions.md", "versions", &md).unwrap();
}

#[test]
fn the_scenario_keys_are_the_scenario_s_types() {
    let md = hicache_sim::reference::scenario_keys_markdown();
    for needle in [
        "| `server.hicache_size` |",
        "| `memory.host_other_used` |",
        "| `runtime.replay.",
    ] {
        assert!(md.contains(needle), "{needle} not in the generated table");
    }
    check_doc("docs/src/reference/scenarios.md", "scenario keys", &md).unwrap();
}

/// The staleness check fails on a hand edit: the generated block with one cell changed
/// is not what the code writes.
#[test]
fn a_hand_edited_reference_page_is_stale() {
    let md = hicache_sim::reference::cli_markdown();
    let edited = md.replacen("default `0.999`", "default `0.99`", 1);
    assert_ne!(md, edited);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("cli.md");
    std::fs::write(
        &page,
        format!(
            "# x\n<!-- BEGIN generated: commands -->\n{edited}<!-- END generated: commands -->\n"
        ),
    )
    .unwrap();
    if std::env::var_os("UPDATE_DOCS").is_none() {
        let e = check_doc(page.to_str().unwrap(), "commands", &md).unwrap_err();
        assert!(e.contains("stale or was edited by hand"), "{e}");
    }
}

/// The guide's two plan outputs are the binary's own output of the commands they show.
#[test]
fn plan_outputs_in_the_guide() {
    let run = |args: &[&str]| {
        let o = crate::support::sim().args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8(o.stdout).unwrap();
        format!("```console\n$ hicache-sim {}\n{out}```\n", args.join(" "))
    };
    let a = run(&[
        "plan",
        "scenarios/gb300-glm52-135g.yaml",
        "--sglang",
        "0.5.21,0.5.23",
    ]);
    // 0.5.21's frontier is 53 GB (tests/it/plan.rs has the arithmetic); the
    // recommendation keeps 10 GB of headroom below it.
    assert!(a.contains("  --hicache-size 53 "), "{a}");
    assert!(
        a.contains("the frontier without headroom is --hicache-size 53"),
        "{a}"
    );
    check_doc(
        "docs/src/guide/plan-and-check.md",
        "plan gb300-glm52-135g",
        &a,
    )
    .unwrap();
    let b = run(&["plan", "scenarios/quickstart.yaml"]);
    assert!(
        b.contains("--enable-hierarchical-cache --hicache-size 114 "),
        "{b}"
    );
    assert!(b.contains("← frontier (no headroom)"), "{b}");
    check_doc("docs/src/guide/plan-and-check.md", "plan quickstart", &b).unwrap();
}
