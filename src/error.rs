//! Errors about the user's input. Every one names where the problem is (file, line,
//! field), what was expected, and maps to exit code 2 at the CLI edge.

use std::fmt;

/// A problem with something the user wrote: a scenario, a trace, a flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file (or `--set`, `<command line>`, …) the input came from.
    pub source: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The field or flag, e.g. `server.hicache_size`, when known.
    pub field: Option<String>,
    /// What is wrong and what was expected.
    pub message: String,
    /// Whose verdict it is (SGLang's own parser or server check, or the simulator's).
    pub kind: ErrorKind,
}

/// Whose verdict an [`InputError`] is: `check` turns SGLang's refusals of a recipe into
/// failed rows (`invalid_args`), unmodelled rules into `not_modelled` rows and everything
/// else it cannot read into error rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorKind {
    /// The simulator cannot read or simulate the input.
    #[default]
    Input,
    /// SGLang itself would refuse the command: its argument parser (the release's flag
    /// table) or its server-argument checks.
    SglangRefuses,
    /// The model is not described: an unknown or placeholder `--model-path`.
    UnknownModel,
    /// SGLang would run it, but a rule it needs is not modelled here (a release's pool
    /// configurator, a model's attention layout, a deployment shape): the simulator
    /// refuses rather than print a number SGLang would not. `check` and `startup
    /// --sglang all` make it a `not_modelled` row, naming the rule.
    NotModelled,
}

impl InputError {
    pub fn new(source: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            source: source.into(),
            line: None,
            field: None,
            message: message.into(),
            kind: ErrorKind::Input,
        }
    }
    /// Marks the error as SGLang's own refusal (see [`ErrorKind::SglangRefuses`]).
    pub fn sglang_refuses(mut self) -> Self {
        self.kind = ErrorKind::SglangRefuses;
        self
    }
    /// Marks the error as a rule the simulator does not model (see
    /// [`ErrorKind::NotModelled`]).
    pub fn not_modelled(mut self) -> Self {
        self.kind = ErrorKind::NotModelled;
        self
    }
    /// Marks the error as an undescribed model (see [`ErrorKind::UnknownModel`]).
    pub fn unknown_model(mut self) -> Self {
        self.kind = ErrorKind::UnknownModel;
        self
    }
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }
    pub fn line_opt(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.source)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(fd) = &self.field {
            write!(f, ": field `{fd}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

/// A library error about one field of the input: its dotted path
/// (`server.mem_fraction_static`, `startup.arrival.jitter`) and what is wrong. The library
/// knows the field, not where its value came from; the CLI edge turns it into an
/// [`InputError`] at the value's origin (file line, `--set`, launch flag) with
/// `LineIndex::input_error` (`scenario/lines.rs`), in one place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
    /// Whose verdict it is (the simulator's by default), carried to the [`InputError`].
    pub kind: ErrorKind,
}

impl FieldError {
    /// `error` (any typed library error, or SGLang's own words) about `field`.
    pub fn new(field: impl Into<String>, error: impl fmt::Display) -> Self {
        Self {
            field: field.into(),
            message: error.to_string(),
            kind: ErrorKind::Input,
        }
    }
    /// A rule about `field` the simulator does not model ([`ErrorKind::NotModelled`]).
    pub fn not_modelled(field: impl Into<String>, error: impl fmt::Display) -> Self {
        Self {
            kind: ErrorKind::NotModelled,
            ..Self::new(field, error)
        }
    }
}

/// A name that is none of a fixed set (a node or model preset): the nearest, and the
/// whole set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown {what} `{given}`{}: expected one of {}",
    did_you_mean(.suggestion.as_deref()),
    .known.join(", ")
)]
pub struct UnknownName {
    /// What kind of name, as the message says it (`node preset`, `model`).
    pub what: &'static str,
    pub given: String,
    /// The nearest of `candidates` ([`nearest`]).
    pub suggestion: Option<String>,
    pub known: Vec<String>,
}

impl UnknownName {
    /// `given` is not a `what`: suggests the nearest of `candidates` (which may include
    /// aliases), lists `known`.
    pub fn new<'a>(
        what: &'static str,
        given: &str,
        candidates: impl IntoIterator<Item = &'a str>,
        known: Vec<String>,
    ) -> Self {
        Self {
            what,
            given: given.to_string(),
            suggestion: nearest(given, candidates).map(str::to_string),
            known,
        }
    }
}

/// ` (did you mean `NAME`?)`, or nothing.
pub fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default()
}

/// The candidate closest to `word` by edit distance, if any is reasonably close:
/// used for "unknown key `hicache_sise`, did you mean `hicache_size`?".
pub fn nearest<'a, I: IntoIterator<Item = &'a str>>(word: &str, candidates: I) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = levenshtein(word, c);
        if best.is_none_or(|(bd, bc)| d < bd || (d == bd && c < bc)) {
            best = Some((d, c));
        }
    }
    best.filter(|&(d, c)| d <= (c.len().max(word.len()) / 2).max(2))
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_key() {
        let keys = ["hicache_size", "hicache_ratio", "page_size"];
        assert_eq!(nearest("hicache_sise", keys), Some("hicache_size"));
        assert_eq!(nearest("zzzzzzzzzzzzzz", keys), None);
    }

    #[test]
    fn display_has_file_line_field() {
        let e = InputError::new("s.yaml", "expected a size")
            .at_line(4)
            .field("server.hicache_size");
        assert_eq!(
            e.to_string(),
            "s.yaml:4: field `server.hicache_size`: expected a size"
        );
    }
}
