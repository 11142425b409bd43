//! `hicache-sim versions`: the SGLang releases (with their wheel dates) and the PR-era
//! what-ifs (with the release that first shipped each, or "a proposal").

use serde::Serialize;

use super::{CmdResult, OutputFormat};
use crate::release::{Release, ReleaseRules, Sglang, first_shipped, nearest_release};
use crate::report::startup_all::shipped;

#[derive(Serialize)]
struct VersionOut {
    id: &'static str,
    /// `release`, `alias` (`latest`), `what_if` (sizing) or `proposal` (an open PR's
    /// replay rules on 0.5.23).
    kind: &'static str,
    /// Release: the wheel's date; what-if: first shipping release and date, or "in no
    /// release up to 0.5.23 (a proposal)".
    shipped: String,
    /// The release whose rules this id repeats (aliases, `latest`).
    same_as: Option<&'static str>,
    /// What-ifs: the release that first shipped the rule set.
    first_shipped: Option<&'static str>,
    /// What-ifs: the release whose controller, tree and flags complete the rule set.
    nearest_release: Option<&'static str>,
    summary: &'static str,
    rules: ReleaseRules,
}

fn all() -> Vec<VersionOut> {
    let mut out: Vec<VersionOut> = Release::ALL
        .iter()
        .map(|&r| VersionOut {
            id: r.id(),
            kind: "release",
            shipped: r.date().to_string(),
            same_as: r.same_as().map(Release::id),
            first_shipped: None,
            nearest_release: None,
            summary: r.summary(),
            rules: r.rules(),
        })
        .collect();
    out.push(VersionOut {
        id: "latest",
        kind: "alias",
        shipped: Release::LATEST.date().to_string(),
        same_as: Some(Release::LATEST.id()),
        first_shipped: None,
        nearest_release: None,
        summary: "the newest modelled release; the default when a scenario names none",
        rules: Release::LATEST.rules(),
    });
    for v in crate::sizing::SglangVersion::ALL {
        let s = Sglang::WhatIf(v);
        out.push(VersionOut {
            id: v.id(),
            kind: "what_if",
            shipped: shipped(s),
            same_as: None,
            first_shipped: first_shipped(v).map(Release::id),
            nearest_release: Some(nearest_release(v).id()),
            summary: v.summary(),
            rules: s.release_rules(),
        });
    }
    for p in crate::release::proposal::Proposal::ALL {
        let s = Sglang::Proposal(p);
        out.push(VersionOut {
            id: p.id(),
            kind: "proposal",
            shipped: shipped(s),
            same_as: None,
            first_shipped: None,
            nearest_release: Some(Release::V0_5_23.id()),
            summary: p.summary(),
            rules: s.release_rules(),
        });
    }
    out
}

/// The text `versions` prints: one line per release, two per what-if.
pub fn text() -> String {
    use std::fmt::Write;
    let all = all();
    let mut o = String::from("SGLang releases (--sglang X; wheel dates):\n");
    for v in all
        .iter()
        .filter(|v| v.kind == "release" || v.kind == "alias")
    {
        let same = v
            .same_as
            .map(|s| format!("same rules as {s}; "))
            .unwrap_or_default();
        let _ = writeln!(o, "  {:<14} {}  {}{}", v.id, v.shipped, same, v.summary);
    }
    o.push_str(
        "\nWhat-ifs (PR-era rule sets; controller, tree and flags of the nearest release):\n",
    );
    for v in all.iter().filter(|v| v.kind == "what_if") {
        let _ = writeln!(o, "  {:<24} {}", v.id, v.summary);
        let _ = writeln!(o, "  {:<24} shipped: {}", "", v.shipped);
    }
    o.push_str("\nProposals (open upstream PRs' replay rules on 0.5.23; sizing as 0.5.23):\n");
    for p in crate::release::proposal::Proposal::ALL {
        let _ = writeln!(o, "  {:<24} {}", p.id(), p.summary());
        let _ = writeln!(o, "  {:<24} {}", "", p.url());
        let _ = writeln!(o, "  {:<24} assumed: {}", "", p.assumptions());
    }
    o
}

pub fn versions(format: OutputFormat) -> CmdResult {
    match format {
        OutputFormat::Text => print!("{}", text()),
        OutputFormat::Json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&all()).expect("plain data serializes")
            );
        }
    }
    Ok(0)
}
