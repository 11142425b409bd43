//! The book's reference pages, written from the declarations they document: every
//! command and option from clap's tree ([`crate::cli::cli`]), every scenario key and its
//! default from the scenario's own types, the releases and what-ifs from `versions`.
//! `tests/it/docs_reference.rs` compares the committed pages with these and fails when
//! one is stale (`UPDATE_DOCS=1` rewrites them), so the reference never drifts from the
//! code.

use std::fmt::Write;

/// Markdown-safe table cell: pipes escaped, newlines folded.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Prose from a help text as the book shows it: `--flag` outside code spans escaped, so
/// the book's smart punctuation does not turn it into an en dash (`–hicache-size`).
fn prose(s: &str) -> String {
    s.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 0 {
                part.replace("--", "\\-\\-")
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// One argument's name as a user types it: `--headroom <GB>`, `-o, --out <DIR>`, `FILE`.
fn arg_name(a: &clap::Arg) -> String {
    let values: Vec<String> = a
        .get_value_names()
        .map(|v| v.iter().map(|n| format!("<{n}>")).collect())
        .unwrap_or_else(|| vec![format!("<{}>", a.get_id().as_str().to_uppercase())]);
    if a.is_positional() {
        let n = a
            .get_value_names()
            .and_then(|v| v.first().map(|n| n.to_string()))
            .unwrap_or_else(|| a.get_id().as_str().to_uppercase());
        return n;
    }
    let mut flag = String::new();
    if let Some(s) = a.get_short() {
        let _ = write!(flag, "-{s}, ");
    }
    if let Some(l) = a.get_long() {
        let _ = write!(flag, "--{l}");
    }
    let takes = a.get_num_args().is_some_and(|n| n.takes_values())
        && !matches!(
            a.get_action(),
            clap::ArgAction::SetTrue | clap::ArgAction::SetFalse | clap::ArgAction::Count
        );
    if takes {
        let _ = write!(flag, " {}", values.join(" "));
    }
    flag
}

/// What the argument accepts beyond its help: its choices and its default.
fn arg_values(a: &clap::Arg) -> String {
    let mut v = Vec::new();
    let choices: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| format!("`{}`", p.get_name()))
        .collect();
    if !choices.is_empty() && !matches!(a.get_action(), clap::ArgAction::SetTrue) {
        v.push(format!("one of {}", choices.join(", ")));
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && !matches!(a.get_action(), clap::ArgAction::SetTrue) {
        v.push(format!("default `{}`", defaults.join(",")));
    }
    v.join("; ")
}

fn command_section(out: &mut String, path: &str, c: &clap::Command) {
    let _ = writeln!(out, "## `{path}`\n");
    if let Some(about) = c.get_long_about().or(c.get_about()) {
        let _ = writeln!(out, "{}\n", prose(about.to_string().trim()));
    }
    let args: Vec<&clap::Arg> = c
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version")
        .collect();
    if !args.is_empty() {
        out.push_str("| argument | accepts | what it does |\n|---|---|---|\n");
        for a in args {
            let help = a
                .get_long_help()
                .or(a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "| `{}` | {} | {} |",
                cell(&arg_name(a)),
                cell(&arg_values(a)),
                cell(&prose(help.trim()))
            );
        }
        out.push('\n');
    }
    if let Some(after) = c.get_after_help() {
        let _ = writeln!(out, "```text\n{}\n```\n", after.to_string().trim_end());
    }
    for sub in c.get_subcommands().filter(|s| s.get_name() != "help") {
        command_section(out, &format!("{path} {}", sub.get_name()), sub);
    }
}

/// Every subcommand of `hicache-sim`, depth first, with its arguments (flag, accepted
/// values and default, help text) and its examples: clap's own declarations.
pub fn cli_markdown() -> String {
    let mut c = crate::cli::cli();
    c.build();
    let mut out = String::new();
    command_section(&mut out, "hicache-sim", &c);
    out
}

/// `hicache-sim versions`, as it prints.
pub fn versions_markdown() -> String {
    format!(
        "```text\n{}```\n",
        crate::commands::versions_text()
            .trim_end_matches('\n')
            .to_string()
            + "\n"
    )
}

/// Every key of a scenario's `server:`, `memory:` and `startup:` sections and of
/// `runtime.replay:`, with the value it takes when the scenario does not set it (as the
/// scenario's types serialize it: `null` = unset, SGLang's default or the release's
/// applies). Read from a scenario that sets nothing but its node.
pub fn scenario_keys_markdown() -> String {
    let keys = crate::scenario::load::flattened_defaults();
    let mut out = String::from("| key | when not set |\n|---|---|\n");
    for (k, d) in keys {
        let _ = writeln!(out, "| `{}` | `{}` |", cell(&k), cell(&d));
    }
    out
}
