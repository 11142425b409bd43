//! Reading a scenario: YAML text → JSON value tree (syntax errors with line/column) →
//! `server.launch` merged in → `--set` overrides applied → typed [`ScenarioFile`] (field
//! errors with file, line and field path, and the nearest valid key for a typo).

use serde_json::{Map, Value};

use serde::Deserialize;

use super::launch::{LaunchArgs, TextPos, parse_launch_src};
use super::launch_file::{self, BOTH_FORMS, Form, LaunchFile, form_of};
use super::lines::{LineIndex, Origin};
use super::schema::ScenarioFile;
use super::shell::Src;
use crate::error::{InputError, nearest};
use crate::release::Sglang;

/// A scenario as read from disk, before presets are resolved.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    /// Where it came from (for error messages).
    pub source: String,
    pub lines: LineIndex,
    pub file: ScenarioFile,
    /// Notes and warnings from the launch command (flags not modelled, overrides, …).
    pub not_modelled_flags: Vec<String>,
    /// The parsed launch command, when the scenario has one.
    pub launch: Option<LaunchArgs>,
}

pub use super::yaml::parse_yaml_value;

/// Reads and checks `path`, applying `sets` (`server.hicache_size=150`).
pub fn load_file(path: &str, sets: &[String]) -> Result<LoadedScenario, InputError> {
    load_file_as(path, sets, None)
}

/// As [`load_file`], under `sglang` (`--sglang`, typed by the command line) instead of
/// the file's `sglang:` when it is given.
pub fn load_file_as(
    path: &str,
    sets: &[String],
    sglang: Option<Sglang>,
) -> Result<LoadedScenario, InputError> {
    let text = crate::input::read_to_string(std::path::Path::new(path), crate::input::DOCUMENT_CAP)
        .map_err(|e| InputError::new(path, format!("cannot read the scenario: {e}")))?;
    load_str_as(&text, path, sets, sglang)
}

/// As [`load_file`], from text already in memory.
pub fn load_str(text: &str, source: &str, sets: &[String]) -> Result<LoadedScenario, InputError> {
    load_str_as(text, source, sets, None)
}

/// As [`load_file_as`], from text already in memory.
pub fn load_str_as(
    text: &str,
    source: &str,
    sets: &[String],
    sglang: Option<Sglang>,
) -> Result<LoadedScenario, InputError> {
    let draft = Draft::read(text, source, sets, sglang)?;
    draft.load()
}

/// A scenario read as far as its release: the value tree with the `--set`s applied, the
/// provenance map, and the release typed (the one place a scenario's `sglang:` becomes
/// a [`Sglang`]). [`Draft::load`] goes on to the typed scenario; `check` keeps the
/// release of a file whose later stages fail ([`Draft::sglang`]).
#[derive(Debug)]
pub struct Draft<'a> {
    text: &'a str,
    source: &'a str,
    value: Value,
    lines: LineIndex,
    form: Form,
    /// `--sglang`, else the tree's `sglang:` (the file's key, a `--set sglang=…`, a
    /// `# hicache-sim: sglang=…` comment), else [`Sglang::DEFAULT`]; `Err` when that is
    /// no release (the error at the key's line).
    pub sglang: Result<Sglang, InputError>,
}

impl<'a> Draft<'a> {
    /// Parses `text` and applies `sets`; types the release (under `sglang` when the
    /// command line gave one).
    pub fn read(
        text: &'a str,
        source: &'a str,
        sets: &[String],
        sglang: Option<Sglang>,
    ) -> Result<Draft<'a>, InputError> {
        let form = form_of(text, source)?;
        let (mut value, mut lines) = match form {
            Form::Yaml => {
                let value = parse_yaml_value(text, source)?;
                if !value.is_object() {
                    return Err(InputError::new(
                        source,
                        format!("a scenario must be a YAML mapping: {BOTH_FORMS}"),
                    ));
                }
                (value, LineIndex::build(text))
            }
            // A launch file: its `# hicache-sim:` fields first (the command line's
            // `--set`s win over them), each located at its comment's line.
            Form::LaunchFile => {
                let LaunchFile {
                    mut value,
                    directives,
                } = launch_file::wrap(text, source)?;
                let mut lines = LineIndex::default();
                for d in &directives {
                    if d.set
                        .split_once('=')
                        .is_some_and(|(k, _)| k.trim() == "server.launch")
                    {
                        return Err(InputError::new(
                            source,
                            "`# hicache-sim: server.launch=…` would replace the file's own command: the command is the file's text; put the command in the file (or give a YAML scenario)",
                        )
                        .at_line(d.line)
                        .field("server.launch"));
                    }
                    apply_set(&mut value, &d.set).map_err(|mut e| {
                        if e.source == format!("--set {}", d.set) {
                            e.source = source.to_string();
                            e.line = Some(d.line);
                        }
                        e
                    })?;
                    if let Some((path, _)) = d.set.split_once('=') {
                        lines.set_line(path.trim(), d.line);
                    }
                }
                (value, lines)
            }
        };
        // `--set` (and `--sglang`) first: the release picks the flag table, `--set
        // server.launch=…` is read like a launch in the file, and an explicit field set on
        // the command line wins over the launch flag like one in the file.
        for s in sets {
            apply_set(&mut value, s)?;
            if let Some((path, _)) = s.split_once('=') {
                lines.set_origin(path.trim(), Origin::Set(format!("--set {s}")));
            }
        }
        if form == Form::LaunchFile && value.get("node").is_none_or(Value::is_null) {
            return Err(launch_file::no_node(source));
        }
        // `server.X: null` means unset: the field takes its default (`typed_as`) and counts
        // as not written (a release without the flag does not refuse it). It still
        // overrides a launch command's flag, as an explicit field does.
        if let Some(server) = value.get("server").and_then(Value::as_object) {
            for (k, v) in server {
                if v.is_null() {
                    lines.forget(&format!("server.{k}"));
                }
            }
        }
        // The release, typed here once. It picks the launch parser's flag table and the
        // choices' spellings, and is the typed scenario's.
        let given = value
            .as_object_mut()
            .expect("checked a mapping")
            .remove("sglang");
        let sglang = match sglang {
            Some(v) => Ok(v),
            None => release_value(given.as_ref())
                .map_err(|m| field_error(source, &lines, "sglang", &m.to_string())),
        };
        Ok(Draft {
            text,
            source,
            value,
            lines,
            form,
            sglang,
        })
    }

    /// The scenario's name in errors.
    pub fn source(&self) -> &'a str {
        self.source
    }

    /// The typed scenario: `server.launch` merged in, every field typed.
    pub fn load(self) -> Result<LoadedScenario, InputError> {
        let Draft {
            text,
            source,
            mut value,
            mut lines,
            form,
            sglang,
        } = self;
        let version = sglang?;
        let launch = merge_launch(&mut value, version, text, form, source, &mut lines)?;
        let file = typed_as(value, version, source, &lines)?;
        Ok(LoadedScenario {
            source: source.to_string(),
            lines,
            file,
            not_modelled_flags: launch.as_ref().map(|l| l.notes.clone()).unwrap_or_default(),
            launch,
        })
    }
}

/// The launch text as the lexer should see it: a block scalar (`|`, `>-`, …) or a plain
/// scalar spread over lines is read from its raw lines (so `\` continuations and error
/// lines survive YAML's folding); a quoted or one-line scalar from its YAML value.
fn launch_src(text: &str, line: Option<usize>, value: &str) -> (Src, TextPos) {
    let one = |l: Option<usize>| {
        (
            Src::literal(value),
            TextPos {
                first_line: l,
                block: false,
            },
        )
    };
    let Some(line) = line else {
        return one(None);
    };
    let raw: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let Some(key_line) = raw.get(line - 1) else {
        return one(Some(line));
    };
    let key_indent = key_line.len() - key_line.trim_start().len();
    let Some(after) = key_line.split_once("launch:").map(|(_, a)| a.trim()) else {
        return one(Some(line));
    };
    let indicator = after.split(" #").next().unwrap_or("").trim();
    let is_block = indicator.starts_with(['|', '>']);
    if !is_block && (after.starts_with(['"', '\'']) || after.is_empty()) {
        return one(Some(line));
    }
    // The lines that belong to the scalar: deeper than the key, or blank.
    let mut body: Vec<&str> = Vec::new();
    for l in &raw[line..] {
        let ind = l.len() - l.trim_start().len();
        if l.trim().is_empty() || ind > key_indent {
            body.push(l);
        } else {
            break;
        }
    }
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body.pop();
    }
    if !is_block {
        if body.is_empty() {
            return one(Some(line));
        }
        // A plain scalar over several lines: YAML folds them with spaces.
        let mut lines: Vec<&str> = vec![after];
        lines.extend(body.iter().map(|l| l.trim()));
        return (
            Src::folded(&lines),
            TextPos {
                first_line: Some(line),
                block: false,
            },
        );
    }
    let indent = indicator
        .chars()
        .find(|c| c.is_ascii_digit())
        .and_then(|c| c.to_digit(10))
        .map(|d| key_indent + d as usize)
        .unwrap_or_else(|| {
            body.iter()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.len() - l.trim_start().len())
                .unwrap_or(0)
        });
    let lines: Vec<&str> = body
        .iter()
        .map(|l| {
            if l.len() >= indent {
                &l[indent..]
            } else {
                l.trim_start()
            }
        })
        .collect();
    let src = if indicator.starts_with('>') {
        Src::folded(&lines)
    } else {
        Src::literal(&lines.join("\n"))
    };
    (
        src,
        TextPos {
            first_line: Some(line + 1),
            block: true,
        },
    )
}

/// Merges `server.launch` into `server`: explicit fields win, with a notice.
fn merge_launch(
    value: &mut Value,
    sglang: Sglang,
    text: &str,
    form: Form,
    source: &str,
    lines: &mut LineIndex,
) -> Result<Option<LaunchArgs>, InputError> {
    // The preset `model:` names (a bare name or `{preset: …}`), if any.
    let model_name: Option<String> = match value.get("model") {
        Some(Value::String(m)) => Some(m.clone()),
        Some(Value::Object(o)) => o.get("preset").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    let has_model = value.get("model").is_some();
    let Some(server) = value.get_mut("server").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    let Some(cmd) = server.get("launch") else {
        return Ok(None);
    };
    let Some(cmd) = cmd.as_str() else {
        return Err(
            InputError::new(source, "expected the SGLang launch command as a string")
                .line_opt(lines.line_of("server.launch"))
                .field("server.launch"),
        );
    };
    // A launch file's command is the file itself: line l of it is line l of the file
    // (unless a `--set server.launch=…` replaced it).
    let (src, pos) =
        if form == Form::LaunchFile && lines.locate(source, "server.launch").0 == source {
            (
                Src::literal(cmd),
                TextPos {
                    first_line: Some(1),
                    block: false,
                },
            )
        } else if matches!(lines.origin("server.launch"), Some(Origin::Set(_))) {
            // A `--set server.launch=…`: its own text, never the file's block.
            launch_src(text, None, cmd)
        } else {
            launch_src(text, lines.line_of("server.launch"), cmd)
        };
    let mut parsed = parse_launch_src(&src, sglang.release(), source, pos)?;
    // `--model-path $MODEL_PATH` with the variable never set: bash passes an empty path,
    // so the model is the scenario's `model:` (a launch file's `# hicache-sim: model=…`).
    if let Some((name, line)) = parsed.unset_model_path.clone() {
        if !has_model {
            return Err(InputError::new(
                source,
                format!(
                    "the model path `${name}` is not set in the pasted text (bash would pass an empty --model-path): set it (`{name}=…`), paste the model's path, or {}",
                    super::launch::DESCRIBE_MODEL
                ),
            )
            .line_opt(line.or(lines.line_of("server.launch")))
            .field("server.launch")
            .unknown_model());
        }
        parsed.notes.push(format!(
            "--model-path `${name}` is not set in the text: the model is the scenario's `model:`"
        ));
    } else if let Some(Value::String(path)) = parsed.given.get("model_path") {
        let model_line = parsed.model_path_line;
        let at_model = |m: String| {
            InputError::new(source, m)
                .line_opt(
                    lines
                        .line_of("model")
                        .or(model_line)
                        .or(lines.line_of("server.launch")),
                )
                .field("model")
        };
        match super::launch::check_model_path(path, model_name.as_deref()) {
            // The preset, unless `model::resolve` finds this path elsewhere (a local
            // checkpoint, or a format the preset has no size for: the catalogue).
            Ok(Some(id))
                if !has_model
                    && matches!(
                        crate::model::resolve(&crate::model::ModelQuery {
                            model_path: Some(path),
                            ..Default::default()
                        })
                        .map(|r| r.source),
                        Ok(crate::model::ModelSource::Preset(_))
                    ) =>
            {
                parsed
                    .notes
                    .push(format!("model: {id} (picked from --model-path {path})"));
                value
                    .as_object_mut()
                    .expect("checked a mapping")
                    .insert("model".into(), Value::String(id));
            }
            Ok(_) => {}
            // A placeholder (`your-model`, `[model_path]`, an unset `$MODEL_PATH`) with no
            // `model:`: the recipe does not say what it serves.
            Err(_) if !has_model && super::launch::is_placeholder(path) => {
                return Err(at_model(format!(
                    "--model-path `{path}` is a placeholder, not a model: {}",
                    super::launch::DESCRIBE_MODEL
                ))
                .unknown_model());
            }
            // A path that names no preset is `model::resolve`'s to find (a local
            // checkpoint, the catalogue) unless `model:` names a preset.
            Err(m)
                if model_name.is_some()
                    || !matches!(m, super::launch::ModelPathError::NoPreset(_)) =>
            {
                return Err(at_model(m.to_string()));
            }
            Err(_) => {}
        }
    }
    // The flags that move memory and are not modelled travel with the scenario (a sweep
    // point or a plan probe re-types a patched tree, which has no launch text).
    let unmodelled: Vec<Value> = parsed
        .not_modelled
        .iter()
        .filter_map(|n| {
            n.memory_effect
                .as_ref()
                .map(|m| serde_json::json!({"what": n.flag, "effect": m}))
        })
        .collect();
    if !unmodelled.is_empty() {
        let o = value.as_object_mut().expect("checked a mapping");
        match o.get_mut("unmodelled") {
            Some(Value::Array(a)) => a.extend(unmodelled),
            _ => {
                o.insert("unmodelled".into(), Value::Array(unmodelled));
            }
        }
    }
    let server = value
        .get_mut("server")
        .and_then(Value::as_object_mut)
        .expect("checked above");
    for (k, v) in parsed.fields.clone() {
        // A launch file's `# hicache-sim:` comment that changes what its own command sets
        // would make the answer describe another server than the one the file runs: an
        // error at the comment (`--set` on the command line stays a printed override).
        let field = format!("server.{k}");
        if form == Form::LaunchFile
            && let Some(explicit) = server.get(&k)
            && !same_value(explicit, &v)
            && lines.origin(&field).is_none()
            && let Some(line) = lines.line_of(&field)
        {
            let flag = parsed
                .given_as
                .get(&k)
                .map(String::as_str)
                .unwrap_or("its flag");
            return Err(InputError::new(
                source,
                format!(
                    "`# hicache-sim: {field}={}` contradicts the command's {flag} {}: a comment may not change what the command runs; change the command, or drop the comment (`--set {field}=…` on the command line overrides it, printed as an override)",
                    show(explicit),
                    show(&v)
                ),
            )
            .at_line(line)
            .field(&field));
        }
        match server.get(&k) {
            Some(explicit) if !same_value(explicit, &v) => parsed.notes.push(format!(
                "server.{k}: {} (explicit field) overrides {} {} from the launch command",
                show(explicit),
                parsed
                    .given_as
                    .get(&k)
                    .map(String::as_str)
                    .unwrap_or("the flag"),
                show(&v)
            )),
            Some(_) => {}
            None => {
                // The provenance map names the flag (and its line, when the command is
                // the file's own: a `--set server.launch=…` has none).
                if let Some((flag, line)) = parsed.flag_of.get(&k) {
                    let in_file = lines.locate(source, "server.launch").0 == source;
                    lines.set_origin(
                        &format!("server.{k}"),
                        Origin::LaunchFlag {
                            flag: flag.clone(),
                            line: line.filter(|_| in_file),
                        },
                    );
                }
                server.insert(k, v);
            }
        }
    }
    Ok(Some(parsed))
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Applies one `path=value` override; the value is read as YAML (`150`, `null`, `[1,2]`).
pub fn apply_set(value: &mut Value, set: &str) -> Result<(), InputError> {
    let src = format!("--set {set}");
    let (path, raw) = set.split_once('=').ok_or_else(|| {
        InputError::new(&src, "expected PATH=VALUE, e.g. server.hicache_size=150")
    })?;
    if path.trim() == "sweep" || path.trim().starts_with("sweep.") {
        return Err(InputError::new(
            &src,
            "--set cannot change the sweep (its axes and seeds are read from the file's `sweep:` section): edit the file, or put the value you want fixed in its field (e.g. --set server.hicache_ratio=2)",
        )
        .field(path.trim()));
    }
    let v = if raw.trim().is_empty() {
        Value::Null
    } else {
        parse_yaml_value(raw, &src)?
    };
    set_path(value, path.trim(), v)
        .map_err(|m| InputError::new(&src, m.to_string()).field(path.trim()))
}

/// Why a dotted path (`server.hicache_size`) cannot be set in a value tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetPathError {
    #[error("empty component in path `{0}`")]
    EmptyComponent(String),
    /// The named prefix holds a value that is neither a mapping nor a preset name.
    #[error("`{0}` is not a mapping")]
    NotAMapping(String),
}

/// The leaves of a value tree by dotted path (`server.hicache_size` → `135`), each as
/// its JSON text: the inverse of [`set_path`], for fingerprints and key listings.
pub fn flatten(v: &Value, prefix: &str, out: &mut std::collections::BTreeMap<String, String>) {
    match v {
        Value::Object(o) if !o.is_empty() => {
            for (k, x) in o {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(x, &key, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), v.to_string());
        }
    }
}

/// Every key of a scenario's `server:`, `memory:` and `startup:` sections and of
/// `runtime.replay:`, `runtime.router:` and `runtime.pd:`, by dotted path, with the value it takes when the scenario does not
/// set it, as the scenario's types serialize it (`null` = unset: SGLang's default or the
/// release's applies). Read from a scenario that sets nothing but its node. The
/// reference's table of keys, and what lets `--resume` accept a journal of an earlier
/// build that lacked a key this build added at its default.
pub fn flattened_defaults() -> std::collections::BTreeMap<String, String> {
    let file = super::schema::ScenarioFile::minimal("gb300");
    let mut v = serde_json::to_value(&file).expect("a scenario serializes");
    if let Some(o) = v.as_object_mut() {
        for k in [
            "name",
            "description",
            "node",
            "model",
            "sweep",
            "unmodelled",
        ] {
            o.remove(k);
        }
        o.insert(
            "runtime".into(),
            serde_json::json!({
                "replay": serde_json::to_value(crate::runtime::ReplayConfig::default())
                    .expect("a replay config serializes"),
                // Absent = one engine, what `engines: 1` and the launcher's defaults say.
                "router": serde_json::to_value(crate::runtime::router::RouterSpec::default())
                    .expect("a router section serializes"),
                // Absent = the server alone; these are the section's defaults.
                "pd": serde_json::to_value(crate::runtime::pd::PdSpec::default())
                    .expect("a pd section serializes")
            }),
        );
    }
    let mut keys = std::collections::BTreeMap::new();
    flatten(&v, "", &mut keys);
    keys
}

/// Sets `a.b.c` in a value tree, creating maps on the way.
pub fn set_path(root: &mut Value, path: &str, v: Value) -> Result<(), SetPathError> {
    let mut cur = root;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() {
            return Err(SetPathError::EmptyComponent(path.to_string()));
        }
        if !cur.is_object() {
            if cur.is_null() || cur.is_string() {
                // A preset given by name (`node: gb300`) becomes `{preset: gb300}`.
                let name = cur.as_str().map(str::to_string);
                let mut m = Map::new();
                if let Some(n) = name {
                    m.insert("preset".into(), Value::String(n));
                }
                *cur = Value::Object(m);
            } else {
                return Err(SetPathError::NotAMapping(parts[..i].join(".")));
            }
        }
        let obj = cur.as_object_mut().expect("made an object above");
        if i + 1 == parts.len() {
            obj.insert(p.to_string(), v);
            return Ok(());
        }
        cur = obj.entry(p.to_string()).or_insert(Value::Null);
    }
    Ok(())
}

/// Removes the `server:` keys whose value is null (unset: the default applies); returns
/// their names.
fn unset_nulls(value: &mut Value) -> Vec<String> {
    let Some(server) = value.get_mut("server").and_then(Value::as_object_mut) else {
        return Vec::new();
    };
    let nulls: Vec<String> = server
        .iter()
        .filter(|(_, v)| v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    for k in &nulls {
        server.remove(k);
    }
    nulls
}

/// The typed scenario of a tree under `sglang` (the release the loader typed: a point
/// of a sweep, a plan's probe); the tree's own `sglang:`, if any, is not read. A null
/// `server:` field is unset (its default), as in a file. Errors name the field path and
/// its origin.
pub fn typed_as(
    mut value: Value,
    sglang: Sglang,
    source: &str,
    lines: &LineIndex,
) -> Result<ScenarioFile, InputError> {
    unset_nulls(&mut value);
    if let Some(o) = value.as_object_mut() {
        o.remove("sglang");
    }
    typed(&value, sglang, source, lines)
}

/// As [`typed_as`], reading the tree in place (no copy): the sweep checks every point
/// this way. The tree holds no `sglang:` (the release is `sglang`, typed once).
pub fn typed_ref_as(
    value: &Value,
    sglang: Sglang,
    source: &str,
    lines: &LineIndex,
) -> Result<ScenarioFile, InputError> {
    if value.get("sglang").is_some()
        || value
            .get("server")
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().any(Value::is_null))
    {
        return typed_as(value.clone(), sglang, source, lines);
    }
    typed(value, sglang, source, lines)
}

/// The typed scenario of a tree without `sglang:` and null `server:` fields, under
/// `sglang`. A choice whose spellings depend on the release (`release::choice_refusal`)
/// is refused with the release's own list.
fn typed(
    value: &Value,
    sglang: Sglang,
    source: &str,
    lines: &LineIndex,
) -> Result<ScenarioFile, InputError> {
    let mut file = serde_path_to_error::deserialize::<_, ScenarioFile>(value).map_err(|e| {
        let path = clean_path(&e.path().to_string());
        let inner = e.into_inner().to_string();
        let by_release = value
            .pointer(&format!("/{}", path.replace('.', "/")))
            .and_then(Value::as_str)
            .filter(|_| crate::release::RELEASE_CHOICE_FIELDS.contains(&path.as_str()))
            .and_then(|given| crate::release::choice_refusal(sglang, &path, given));
        field_error(
            source,
            lines,
            &path,
            by_release.as_deref().unwrap_or(&inner),
        )
    })?;
    file.sglang = sglang;
    Ok(file)
}

/// A tree's `sglang:` typed: absent is [`Sglang::DEFAULT`]; an unknown id or a value that
/// is not a string is refused (the message of the field's error). The one place a
/// scenario's release is read from text (its file, a `--set`, a sweep axis value).
pub fn release_value(given: Option<&Value>) -> Result<Sglang, serde_json::Error> {
    match given {
        None => Ok(Sglang::DEFAULT),
        Some(v) => Sglang::deserialize(v),
    }
}

/// `server.hicache_sise` with "unknown field `hicache_sise`, expected one of …" becomes
/// "unknown key `hicache_sise` (did you mean `hicache_size`?)".
pub fn field_error(source: &str, lines: &LineIndex, path: &str, inner: &str) -> InputError {
    let msg = if let Some(rest) = inner.strip_prefix("unknown field `") {
        let key = rest.split('`').next().unwrap_or("");
        let expected: Vec<&str> = rest
            .split("expected ")
            .nth(1)
            .map(|e| {
                e.split('`')
                    .filter(|s| s.chars().all(|c| c.is_alphanumeric() || c == '_'))
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let hint = nearest(key, expected.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_else(|| {
                if expected.is_empty() {
                    String::new()
                } else {
                    format!(" (valid keys: {})", expected.join(", "))
                }
            });
        format!("unknown key `{key}`{hint}")
    } else if inner.contains("did not match any variant of untagged enum PresetRef") {
        "expected a preset name (`gb300`) or a mapping with `preset:` and field overrides"
            .to_string()
    } else {
        inner.to_string()
    };
    let mut err = if path.is_empty() || path == "." {
        InputError::new(source, msg)
    } else {
        lines.error(source, path, &msg)
    };
    // A missing key has no line of its own: point at the mapping that lacks it (the
    // file's first line for a top-level key).
    if err.line.is_none() && err.source == source && inner.starts_with("missing field") {
        err.line = Some(
            err.field
                .as_deref()
                .and_then(|p| lines.line_of(p))
                .unwrap_or(1),
        );
    }
    err
}

fn clean_path(p: &str) -> String {
    // serde_path_to_error prints `?` for untracked segments and `.` for the root.
    let p = p.trim_start_matches('.');
    p.split('.')
        .filter(|s| *s != "?")
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "name: t\nnode: gb300\nmodel: {preset: glm-5.2, kv_cache_dtype: fp8}\nserver:\n  tp_size: 4\n  hicache_size: 135\n";

    #[test]
    fn loads_and_applies_sets() {
        let s = load_str(
            BASE,
            "t.yaml",
            &[
                "server.hicache_size=150".into(),
                "node.host_dram=880GB".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.file.server.hicache_size, 150.0);
        assert_eq!(s.file.server.tp_size, 4);
        let (name, over) = s.file.node.split();
        assert_eq!(name.as_deref(), Some("gb300"));
        assert_eq!(over["host_dram"], Value::String("880GB".into()));
    }

    #[test]
    fn unknown_key_names_line_field_and_nearest() {
        let text = BASE.replace("hicache_size: 135", "hicache_sise: 135");
        let e = load_str(&text, "t.yaml", &[]).unwrap_err();
        assert_eq!(e.line, Some(6));
        assert_eq!(e.field.as_deref(), Some("server.hicache_sise"));
        assert!(
            e.message.contains("did you mean `hicache_size`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn wrong_type_and_unit() {
        let text = BASE.replace("tp_size: 4", "tp_size: four");
        let e = load_str(&text, "t.yaml", &[]).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(5), Some("server.tp_size"))
        );
        let text = format!("{BASE}memory:\n  host_other_used: 40 GBs\n");
        let e = load_str(&text, "t.yaml", &[]).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(8), Some("memory.host_other_used"))
        );
        assert!(e.message.contains("unknown unit"), "{}", e.message);
        let text = format!("{BASE}memory:\n  host_other_used: -4GB\n");
        let e = load_str(&text, "t.yaml", &[]).unwrap_err();
        assert!(e.message.contains("negative"), "{}", e.message);
    }

    #[test]
    fn launch_command_merges_and_explicit_fields_win() {
        let text = "node: gb300\nmodel: glm-5.2\nserver:\n  launch: python -m sglang.launch_server --model-path m --tp 8 --enable-hierarchical-cache --hicache-size 176 --page-size 64\n  page_size: 32\n";
        let s = load_str(text, "t.yaml", &[]).unwrap();
        assert_eq!(s.file.server.tp_size, 8);
        assert_eq!(s.file.server.hicache_size, 176.0);
        assert_eq!(s.file.server.page_size, 32);
        assert_eq!(
            s.not_modelled_flags,
            [
                "server.page_size: 32 (explicit field) overrides --page-size 64 from the launch command"
            ]
        );
        let bad = text.replace("--tp 8", "--tp 8 --hicache-sizes 3");
        let e = load_str(&bad, "t.yaml", &[]).unwrap_err();
        assert_eq!(e.line, Some(4));
        assert!(
            e.message.starts_with(
                "SGLang 0.5.23 has no flag --hicache-sizes (did you mean --hicache-size?)"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn launch_blocks_in_every_yaml_style() {
        let head = "node: gb300\nmodel: glm-5.2\nsglang: \"0.5.23\"\nserver:\n";
        let cmd = [
            "python -m sglang.launch_server \\",
            "--model-path m --tp 4 \\",
            "--enable-hierarchical-cache --hicache-size 100 # host pool",
            "> log 2>&1 &",
        ];
        for style in ["|", "|-", ">", ">-", ">+"] {
            let body: String = cmd.iter().map(|l| format!("    {l}\n")).collect();
            let text = format!("{head}  launch: {style}\n{body}");
            let s = load_str(&text, "t.yaml", &[]).unwrap_or_else(|e| panic!("{style}: {e}"));
            assert_eq!(
                (s.file.server.tp_size, s.file.server.hicache_size),
                (4, 100.0),
                "{style}"
            );
            let bad = text.replace("--tp 4", "--tp four");
            let e = load_str(&bad, "t.yaml", &[]).unwrap_err();
            // Line 2 of the block is line 7 of the file.
            assert_eq!(e.line, Some(7), "{style}");
            assert!(e.message.starts_with("line 2 of the launch block: SGLang 0.5.23 refuses this command: argument --tp-size/--tensor-parallel-size: invalid int value: 'four'"), "{}", e.message);
        }
        // CRLF line ends.
        let body: String = cmd.iter().map(|l| format!("    {l}\r\n")).collect();
        let text = format!("{head}  launch: >-\r\n{body}")
            .replace("\n", "\r\n")
            .replace("\r\r", "\r");
        let s = load_str(&text, "t.yaml", &[]).unwrap();
        assert_eq!(s.file.server.tp_size, 4);
    }

    #[test]
    fn yaml_syntax_error_has_line() {
        let e = load_str("node: gb300\nmodel: [a\n", "t.yaml", &[]).unwrap_err();
        assert!(e.line.is_some());
        assert!(e.message.starts_with("invalid YAML"));
    }
}
