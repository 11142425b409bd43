//! `hicache-sim check`: does each recipe start under each release asked? For a recipe
//! repository's CI. A file is a scenario (YAML) or a plain text / shell file holding one
//! `sglang.launch_server` command (`python -m sglang.launch_server …`, `python3 -m …`).
//!
//! A bare command file says nothing about the machine, so it names it in comments:
//! every `key=value` after `# hicache-sim:` is a scenario field set like `--set`
//! (`# hicache-sim: node=gb300 memory.cgroup.max=900GB
//! startup.weight_load.bytes_per_node=420GB`). `node` is required (here or with
//! `--node`); the model comes from `--model-path` (or `model=`); everything else takes
//! the scenario defaults. Command-line `--node` / `--set` win over the comments. The
//! scenario loader reads such files for every command
//! ([`crate::scenario::launch_file`]).

use serde::Serialize;

use super::probe::Prober;
use crate::error::InputError;
use crate::release::Sglang;
use crate::scenario::load::Draft;

/// One file under one release.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRow {
    pub file: String,
    /// The release (`None`: the file's own, which it does not tell: `-` in the output).
    #[serde(serialize_with = "release_or_dash")]
    pub sglang: Option<Sglang>,
    /// `started`, `refused`, `oom_killed`, `failed` (raised before sizing),
    /// `invalid_args` (SGLang rejects the recipe: its argument parser or server checks),
    /// `not_modelled` (SGLang would run it, but a rule it needs is not modelled: the
    /// message names it; no figure is given), `error` (the simulator cannot read the
    /// file: bad input, an undescribed model). (`skipped`, for a release without a flag table, no longer occurs: every
    /// modelled release has one; JUnit still counts it.)
    pub outcome: &'static str,
    /// The verdict ([`crate::startup::status`]): `ok`, `unverified` (started, but the
    /// recipe does something that moves the figures and is not modelled: `unverified`
    /// names it), or the outcome itself.
    pub status: &'static str,
    /// Why a start is not verified: each thing not modelled and which way it moves the
    /// figures (empty when everything is modelled).
    pub unverified: Vec<String>,
    /// Launch flags read and left out on purpose: a `python -m dynamo.sglang` worker's
    /// Dynamo flags, which Dynamo takes before SGLang's parser ([`crate::flags::dynamo`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Started with P(start) ≥ the target — and, under `--strict`, verified.
    pub passed: bool,
    pub start_probability: Option<f64>,
    /// The tightest rank's budget − request in run 0.
    pub margin_bytes: Option<i64>,
    /// SGLang's refusal text, the OOM kill, why the release rejects the flags, or (an
    /// `error` row) what is wrong with the file, where.
    pub message: Option<String>,
    /// The error with its file, line and field, for stderr (`invalid_args`, `error`).
    #[serde(skip)]
    pub located: Option<String>,
}

impl CheckRow {
    /// A row for a file × release that could not be checked: `invalid_args` when SGLang
    /// itself refuses the recipe (or only this release rejects it), `not_modelled` when a
    /// rule it needs is not modelled, `error` otherwise.
    pub fn not_checked(
        file: &str,
        sglang: Option<Sglang>,
        e: &InputError,
        sglang_refuses: bool,
    ) -> Self {
        let outcome = if e.kind == crate::error::ErrorKind::NotModelled {
            "not_modelled"
        } else if sglang_refuses {
            "invalid_args"
        } else {
            "error"
        };
        CheckRow {
            file: file.to_string(),
            sglang,
            outcome,
            status: outcome,
            unverified: Vec::new(),
            notes: Vec::new(),
            passed: false,
            start_probability: None,
            margin_bytes: None,
            message: Some(if sglang_refuses {
                match e.line {
                    Some(l) => format!("line {l}: {}", e.message),
                    None => e.message.clone(),
                }
            } else {
                e.to_string()
            }),
            located: Some(e.to_string()),
        }
    }

    /// Whether the row is an error (bad input: exit 2 once every row is printed).
    pub fn is_error(&self) -> bool {
        self.outcome == "error"
    }

    /// The release as the outputs name it: its id, `-` when the file does not tell.
    pub fn release_name(&self) -> &'static str {
        self.sglang.map_or("-", Sglang::id)
    }
}

/// A row's release in JSON: its id, `-` when the file does not tell.
fn release_or_dash<S: serde::Serializer>(v: &Option<Sglang>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v.map_or("-", Sglang::id))
}

/// How a file is read: its text, read by the scenario loader as YAML or as a launch
/// file ([`crate::scenario::launch_file`]), and the command line's `--set`s.
#[derive(Debug, Clone)]
pub struct CheckInput {
    pub path: String,
    pub text: String,
    pub sets: Vec<String>,
}

/// Reads `path` (a YAML scenario or a launch file: the loader tells them apart).
pub fn read_input(path: &str, cli_sets: &[String]) -> Result<CheckInput, InputError> {
    let text = crate::input::read_to_string(std::path::Path::new(path), crate::input::DOCUMENT_CAP)
        .map_err(|e| InputError::new(path, format!("cannot read: {e}")))?;
    Ok(CheckInput {
        path: path.into(),
        text,
        sets: cli_sets.to_vec(),
    })
}

impl CheckInput {
    /// The file under its own release: the release it asks for, typed by the loader's
    /// first stage (kept when a later stage fails; `None` when the file does not tell),
    /// and its prober.
    pub fn own(
        &self,
        seed: Option<u64>,
        runs: u64,
    ) -> (Option<Sglang>, Result<Prober, InputError>) {
        match Draft::read(&self.text, &self.path, &self.sets, None) {
            Ok(d) => (
                d.sglang.as_ref().ok().copied(),
                Prober::from_draft(d, seed, runs),
            ),
            Err(e) => (None, Err(e)),
        }
    }

    pub fn prober(
        &self,
        sglang: Option<Sglang>,
        seed: Option<u64>,
        runs: u64,
    ) -> Result<Prober, InputError> {
        Prober::from_text(&self.text, &self.path, &self.sets, sglang, seed, runs)
    }
}

/// Checks one file under `releases` (`None` = its own): one row per release whatever
/// happens. SGLang refusing the recipe (its parser, its server checks) is an
/// `invalid_args` row; a file the simulator cannot read or simulate under its own release
/// (bad input, an undescribed model) is an `error` row for every release asked; a
/// release-specific problem of a file valid under its own release is `invalid_args`.
pub fn check_file(
    input: &CheckInput,
    releases: &[Option<Sglang>],
    target: f64,
    strict: bool,
    seed: Option<u64>,
    runs: u64,
) -> Vec<CheckRow> {
    use crate::error::ErrorKind;
    let (own_release, own) = input.own(seed, runs);
    // A file-level problem (not SGLang's verdict, not one release's): every row is it.
    let own_input_error = own
        .as_ref()
        .err()
        .filter(|e| !matches!(e.kind, ErrorKind::SglangRefuses | ErrorKind::NotModelled));
    let mut rows = Vec::new();
    for r in releases {
        let name = r.or(own_release);
        let prober = match (r, &own) {
            (None, Ok(p)) => Ok(p.clone()),
            (None, Err(e)) => Err(e.clone()),
            (Some(_), Err(_)) if own_input_error.is_some() => {
                Err(own_input_error.cloned().expect("checked"))
            }
            (Some(v), _) => input.prober(Some(*v), seed, runs),
        };
        let p = match prober {
            Ok(p) => p,
            Err(e) => {
                let refuses = e.kind == ErrorKind::SglangRefuses
                    || (e.kind == ErrorKind::Input && own_input_error.is_none() && r.is_some());
                rows.push(CheckRow::not_checked(&input.path, name, &e, refuses));
                continue;
            }
        };
        let probe = match p.start(&[]) {
            Ok(x) => x,
            Err(m) => {
                let mut e = InputError::new(&input.path, m.to_string());
                e.kind = m.kind();
                rows.push(CheckRow::not_checked(&input.path, name, &e, false));
                continue;
            }
        };
        let started = probe.start_probability >= target;
        let outcome = if started {
            "started"
        } else {
            probe.failure.as_ref().map_or("refused", |f| f.outcome)
        };
        let unverified = !probe.unverified.is_empty();
        rows.push(CheckRow {
            file: input.path.clone(),
            sglang: Some(p.sglang),
            outcome,
            status: crate::startup::status(outcome, unverified),
            unverified: probe.unverified,
            notes: p
                .launch_notes
                .iter()
                .filter(|n| n.starts_with("Dynamo flags ignored"))
                .cloned()
                .collect(),
            passed: started && !(strict && unverified),
            start_probability: Some(probe.start_probability),
            margin_bytes: probe.margin_bytes,
            message: probe.failure.map(|f| f.message),
            located: None,
        });
    }
    rows
}

/// One line per row: file, release, outcome, margin, P(start) (and the message of a
/// failure on the next line).
pub fn render_text(rows: &[CheckRow]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let w = rows.iter().map(|r| r.file.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(
        out,
        "{:<w$}  {:<14} {:<13} {:>12} {:>9}",
        "file", "sglang", "status", "margin", "P(start)"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<w$}  {:<14} {:<13} {:>12} {:>9}",
            r.file,
            r.release_name(),
            r.status,
            r.margin_bytes.map_or("-".into(), |m| format!(
                "{} GB",
                crate::units::fmt_gb(m as i128)
            )),
            r.start_probability
                .map_or("-".into(), |p| format!("{p:.4}"))
        );
        if (!r.passed || r.outcome == "skipped")
            && let Some(m) = &r.message
        {
            let _ = writeln!(out, "{:<w$}    {m}", "");
        }
        for u in &r.unverified {
            let _ = writeln!(out, "{:<w$}    not modelled: {u}", "");
        }
        for n in &r.notes {
            let _ = writeln!(out, "{:<w$}    note: {n}", "");
        }
    }
    let failed = rows.iter().filter(|r| !r.passed).count();
    let unverified = rows.iter().filter(|r| r.status == "unverified").count();
    let _ = writeln!(
        out,
        "{} of {} file × release check(s) failed{}",
        failed,
        rows.len(),
        if unverified > 0 {
            format!(
                "; {unverified} started but unverified (something that moves the figures is not modelled; --strict fails them)"
            )
        } else {
            String::new()
        }
    );
    out
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // XML 1.0 has no representation for most control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push('?'),
            c => o.push(c),
        }
    }
    o
}

/// JUnit XML: one `<testcase>` per file × release (`classname` = file, `name` =
/// `sglang <release>`), a `<failure>` with SGLang's refusal text (or its rejection of the
/// flags), an `<error>` for a file that could not be checked, `<skipped>` for a release
/// the simulator has no flag table for.
pub fn render_junit(rows: &[CheckRow]) -> String {
    use std::fmt::Write as _;
    let errors = rows.iter().filter(|r| r.is_error()).count();
    let failures = rows.iter().filter(|r| !r.passed && !r.is_error()).count();
    // A start that is not verified is no pass: skipped (not checked), or a failure
    // under `--strict` (it then has `passed: false`).
    let skipped = rows
        .iter()
        .filter(|r| r.outcome == "skipped" || (r.passed && r.status == "unverified"))
        .count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"hicache-sim check\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
        rows.len()
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"hicache-sim check\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
        rows.len()
    );
    for r in rows {
        let _ = write!(
            o,
            "    <testcase classname=\"{}\" name=\"sglang {}\"",
            xml_escape(&r.file),
            xml_escape(r.release_name())
        );
        let unverified = format!("unverified: {}", r.unverified.join("; "));
        let msg = match r.message.as_deref() {
            Some(m) => m,
            None if r.status == "unverified" => unverified.as_str(),
            None => "",
        };
        if r.outcome == "skipped" || (r.passed && r.status == "unverified") {
            let _ = writeln!(
                o,
                ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                xml_escape(msg)
            );
        } else if r.is_error() {
            let _ = writeln!(
                o,
                ">\n      <error type=\"error\" message=\"{}\">{}</error>\n    </testcase>",
                xml_escape(msg),
                xml_escape(msg)
            );
        } else if !r.passed {
            let p = r
                .start_probability
                .map_or(String::new(), |p| format!(" (P(start) {p:.4})"));
            let _ = writeln!(
                o,
                ">\n      <failure type=\"{}\" message=\"{}{}\">{}</failure>\n    </testcase>",
                r.status,
                xml_escape(msg),
                xml_escape(&p),
                xml_escape(msg)
            );
        } else {
            let _ = writeln!(o, "/>");
        }
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}
