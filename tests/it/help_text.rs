//! Every argument of every subcommand says what it is (`--help` prints a line for it),
//! and every subcommand's help page ends with an example run of that subcommand. The
//! tree is the one the binary parses with (`hicache_sim::cli::cli()`), walked
//! recursively, hidden subcommands included.

use clap::ArgAction;

/// Every command of the tree with its path from the root (`["trace", "stats"]`), the
/// root first (empty path).
fn commands() -> Vec<(Vec<String>, clap::Command)> {
    fn walk(path: Vec<String>, c: &clap::Command, out: &mut Vec<(Vec<String>, clap::Command)>) {
        out.push((path.clone(), c.clone()));
        for s in c.get_subcommands() {
            let mut p = path.clone();
            p.push(s.get_name().to_string());
            walk(p, s, out);
        }
    }
    let mut out = Vec::new();
    walk(Vec::new(), &hicache_sim::cli::cli(), &mut out);
    out
}

/// clap's own `--help` / `--version` (generated, with their own help).
fn generated(a: &clap::Arg) -> bool {
    matches!(
        a.get_action(),
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
    )
}

/// `what` of `path` names the argument as a user types it: `trace stats FILE`,
/// `sweep --jobs`.
fn name(path: &[String], a: &clap::Arg) -> String {
    let arg = match a.get_long() {
        Some(l) => format!("--{l}"),
        None if a.is_positional() => a
            .get_value_names()
            .and_then(|v| v.first())
            .map_or_else(|| a.get_id().to_string().to_uppercase(), |v| v.to_string()),
        None => format!("-{}", a.get_short().unwrap_or('?')),
    };
    format!("hicache-sim {} {arg}", path.join(" "))
}

/// The arguments of the tree that have no help text (a blank one counts as none).
fn missing_help(tree: &[(Vec<String>, clap::Command)]) -> Vec<String> {
    let mut missing = Vec::new();
    for (path, c) in tree {
        for a in c.get_arguments().filter(|a| !generated(a)) {
            let help = a
                .get_help()
                .or(a.get_long_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            if help.trim().is_empty() {
                missing.push(name(path, a));
            }
        }
    }
    missing
}

/// The commands whose after-help has no `Example` naming a run of the command itself
/// (`hicache-sim trace stats …` for `trace stats`).
fn missing_example(tree: &[(Vec<String>, clap::Command)]) -> Vec<String> {
    let mut missing = Vec::new();
    for (path, c) in tree {
        let after = [c.get_after_help(), c.get_after_long_help()]
            .into_iter()
            .flatten()
            .map(|h| h.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        let run = ["hicache-sim".to_string()]
            .into_iter()
            .chain(path.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let runs_itself = after.lines().any(|l| {
            l.trim_start()
                .trim_start_matches("$ ")
                .starts_with(&format!("{run} "))
        });
        if !after.contains("Example") || !runs_itself {
            missing.push(if path.is_empty() {
                "hicache-sim".to_string()
            } else {
                run
            });
        }
    }
    missing
}

#[test]
fn every_argument_has_help_text() {
    let tree = commands();
    // The tree is the real one: the subcommands and the arguments the checks walk.
    let names: Vec<String> = tree.iter().map(|(p, _)| p.join(" ")).collect();
    for sub in [
        "startup",
        "sweep",
        "replay",
        "plot",
        "trace stats",
        "trace gen",
        "merge",
        "check",
    ] {
        assert!(names.iter().any(|n| n == sub), "no `{sub}` in {names:?}");
    }
    let args: usize = tree
        .iter()
        .map(|(_, c)| c.get_arguments().filter(|a| !generated(a)).count())
        .sum();
    assert!(args > 80, "only {args} arguments in the tree");
    let missing = missing_help(&tree);
    assert!(
        missing.is_empty(),
        "arguments without help text:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_subcommand_has_an_example() {
    let missing = missing_example(&commands());
    assert!(
        missing.is_empty(),
        "commands without an example in their after-help:\n  {}",
        missing.join("\n  ")
    );
}

/// The checks fail when a help text or an example is taken away (they are not vacuous).
#[test]
fn the_checks_catch_a_removed_help_text_or_example() {
    let mut tree = commands();
    let (path, sweep) = tree
        .iter_mut()
        .find(|(p, _)| p == &["sweep".to_string()])
        .expect("a sweep subcommand");
    *sweep = sweep
        .clone()
        .mut_arg("jobs", |a| a.help(None::<&str>).long_help(None::<&str>))
        .after_help(None::<&str>)
        .after_long_help(None::<&str>);
    let path = path.clone();
    assert_eq!(missing_help(&tree), ["hicache-sim sweep --jobs"]);
    assert_eq!(missing_example(&tree), ["hicache-sim sweep"]);
    let (_, stats) = tree
        .iter_mut()
        .find(|(p, _)| p.join(" ") == "trace stats")
        .expect("a trace stats subcommand");
    *stats = stats.clone().mut_arg("file", |a| a.help("  "));
    assert_eq!(
        missing_help(&tree),
        ["hicache-sim sweep --jobs", "hicache-sim trace stats FILE"]
    );
    assert_eq!(path, ["sweep"]);
}

/// What `--help` prints is the tree's text: `sweep --help` shows `--quiet`'s line and the
/// example.
#[test]
fn help_pages_print_the_texts() {
    let out = crate::support::sim()
        .args(["sweep", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("--quiet"), "{text}");
    assert!(text.contains("Example"), "{text}");
    assert!(text.contains("hicache-sim sweep scenarios/"), "{text}");
}
