//! Launch files: a plain text / shell file holding one SGLang launch command
//! (`python -m sglang.launch_server …`, `sglang serve …`, `python -m dynamo.sglang …`)
//! read as a scenario by every command that takes one (`startup`, `plan`, `check`,
//! `replay`, `sweep`). The loader ([`crate::scenario::load::Draft::read`]) wraps it as
//! `name: <file stem>` and `server: {launch: <the file's text>}`; every `key=value`
//! after `# hicache-sim:` is a scenario field set like `--set`
//! (`# hicache-sim: node=gb300 memory.cgroup.max=900GB model=glm-5.2`), applied before
//! the command line's `--set`s, and an error about such a field names the comment's
//! line. Errors in the command name the file's own lines. `node` is required (a comment,
//! `--set node=…`, or `check --node`). Docs: `docs/src/guide/launch-files.md`.

use serde_json::{Map, Value};

use crate::error::InputError;

/// How a file is read as a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A YAML mapping (`node:`, `model:`, `server:` …).
    Yaml,
    /// A launch command, with `# hicache-sim:` comments.
    LaunchFile,
}

/// The two forms a scenario may take, for the error about a file that is neither.
pub const BOTH_FORMS: &str = "a scenario is either a YAML mapping (`node: gb300`, `model: …`, `server: {launch: \"python -m sglang.launch_server …\"}` …) or a launch file: one `python -m sglang.launch_server …` (or `sglang serve`, `python -m dynamo.sglang`) command with its machine in a `# hicache-sim: node=gb300` comment (see `hicache-sim check --help` and docs/src/guide/launch-files.md)";

/// Whether `path` names a YAML file by its extension (`.yaml`, `.yml`).
pub fn is_yaml_path(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    p.ends_with(".yaml") || p.ends_with(".yml")
}

/// Whether `text` has a launch command or a `# hicache-sim:` comment: a word that runs
/// SGLang (`sglang.launch_server`, `launch_server.py`, `sglang serve`, `dynamo.sglang`),
/// or a line of only `--flags`.
fn looks_like_launch(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim_start();
        let directive = t
            .strip_prefix('#')
            .is_some_and(|r| r.trim_start().starts_with("hicache-sim:"));
        directive
            || (!t.starts_with('#')
                && (t.starts_with("--")
                    || t.contains("sglang.launch_server")
                    || t.contains("launch_server.py")
                    || t.contains("sglang serve")
                    || t.contains("dynamo.sglang")))
    })
}

/// How `text` (from `source`) is read: a `.yaml`/`.yml` file is YAML; any other is YAML
/// when it is a YAML mapping (a scenario from a pipe, `plan <(…)`), a launch file when
/// it holds a launch command or a `# hicache-sim:` comment, and an error naming both
/// forms otherwise.
pub fn form_of(text: &str, source: &str) -> Result<Form, InputError> {
    if is_yaml_path(source) {
        return Ok(Form::Yaml);
    }
    match serde_saphyr::from_str::<Value>(text) {
        Ok(v) if v.is_object() => Ok(Form::Yaml),
        _ if looks_like_launch(text) => Ok(Form::LaunchFile),
        Ok(_) => Err(InputError::new(
            source,
            format!("neither a YAML mapping nor a launch command: {BOTH_FORMS}"),
        )),
        Err(_) => {
            // Written as YAML, with a mistake: its error, at its line, and both forms.
            let e = super::yaml::parse_yaml_value(text, source).expect_err("failed above");
            let mut e2 = InputError::new(
                source,
                format!("{} (and no launch command either): {BOTH_FORMS}", e.message),
            );
            e2.line = e.line;
            Err(e2)
        }
    }
}

/// A launch file as the loader reads it: the value tree (`name`, `server.launch`) and
/// the `# hicache-sim:` fields to apply.
#[derive(Debug, Clone)]
pub struct LaunchFile {
    pub value: Value,
    pub directives: Vec<Directive>,
}

/// Wraps the launch file `text` of `source` as a scenario tree (`name:` its file stem,
/// `server.launch:` its text byte for byte: a CR stays a CR, bash's reading of a file
/// saved with CRLF line ends) and reads its `# hicache-sim:` comments. A control
/// character (a binary file, a paste gone wrong) is named at its own line.
pub fn wrap(text: &str, source: &str) -> Result<LaunchFile, InputError> {
    let bad = |c: char| c.is_control() && !matches!(c, '\t' | '\r');
    if let Some((i, c)) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.chars().find(|&c| bad(c)).map(|c| (i, c)))
    {
        return Err(InputError::new(
            source,
            format!(
                "a control character ({}) in a launch-command file: not a text file, or a paste gone wrong",
                if c == '\0' {
                    "a NUL byte".to_string()
                } else {
                    format!("U+{:04X}", c as u32)
                }
            ),
        )
        .at_line(i + 1));
    }
    let directives = directives(source, text)?;
    let name = std::path::Path::new(source)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("recipe");
    let mut server = Map::new();
    server.insert("launch".into(), Value::String(text.to_string()));
    let mut root = Map::new();
    root.insert("name".into(), Value::String(name.to_string()));
    root.insert("server".into(), Value::Object(server));
    Ok(LaunchFile {
        value: Value::Object(root),
        directives,
    })
}

/// The error for a launch file that names no machine.
pub fn no_node(source: &str) -> InputError {
    InputError::new(
        source,
        "a bare launch command does not say which machine it runs on: add a `# hicache-sim: node=gb300` comment (any preset of `hicache-sim presets`), or pass `--set node=gb300` (`check`: --node)",
    )
}

/// One `key=value` of a `# hicache-sim:` comment, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// `key=value` as `--set` takes it (quotes removed).
    pub set: String,
    pub line: usize,
}

/// The words of one directive comment, split as a shell splits them: whitespace
/// separates, `'…'` and `"…"` group (quotes removed), `\` escapes outside single
/// quotes; a word starting with `#` ends the comment. `Err`: an unterminated quote.
fn directive_words(rest: &str) -> Result<Vec<String>, &'static str> {
    let mut words = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = cur.take() {
                    words.push(w);
                }
            }
            '#' if cur.is_none() => break,
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => w.push(x),
                        None => return Err("a quote `'` is not closed"),
                    }
                }
            }
            '"' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x) => w.push(x),
                            None => return Err("a quote `\"` is not closed"),
                        },
                        Some(x) => w.push(x),
                        None => return Err("a quote `\"` is not closed"),
                    }
                }
            }
            '\\' => {
                let w = cur.get_or_insert_with(String::new);
                if let Some(x) = chars.next() {
                    w.push(x);
                }
            }
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = cur {
        words.push(w);
    }
    Ok(words)
}

/// The `# hicache-sim:` fields of `path`'s text, in order. Every word must be
/// `key=value` (a value with spaces is quoted: `name="a b c"`) and a key is set once:
/// anything else is an error at its line, never dropped or overridden silently.
pub fn directives(path: &str, text: &str) -> Result<Vec<Directive>, InputError> {
    const FORM: &str = "every word after `# hicache-sim:` is KEY=VALUE, a scenario field as `--set` takes it (quote a value with spaces: name=\"a b c\")";
    let mut out: Vec<Directive> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i + 1;
        let Some(rest) = l
            .trim_start()
            .strip_prefix('#')
            .and_then(|l| l.trim_start().strip_prefix("hicache-sim:"))
        else {
            continue;
        };
        let words = directive_words(rest.trim_end_matches('\r'))
            .map_err(|m| InputError::new(path, format!("{m}: {FORM}")).at_line(line))?;
        for w in words {
            let Some((key, _)) = w.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
                return Err(
                    InputError::new(path, format!("`{w}` is not KEY=VALUE: {FORM}")).at_line(line),
                );
            };
            let key = key.trim();
            if let Some(d) = out
                .iter()
                .find(|d| d.set.split_once('=').is_some_and(|(k, _)| k.trim() == key))
            {
                return Err(InputError::new(
                    path,
                    format!(
                        "`{key}` is set twice in `# hicache-sim:` comments (line {} and line {line}): keep one",
                        d.line
                    ),
                )
                .at_line(line)
                .field(key));
            }
            out.push(Directive { set: w, line });
        }
    }
    Ok(out)
}
