//! Where a field's value came from: the provenance map of a scenario, built once at load
//! ([`crate::scenario::load::load_str`]) and carried by the resolved
//! [`Scenario`](crate::scenario::Scenario). A dotted path → 1-based line index built by a
//! light scan of block-style YAML, plus the paths whose value came from elsewhere
//! ([`Origin`]): a `--set`, a flag of the pasted `server.launch` command, a sweep axis
//! value. Typed deserialization and the library's [`FieldError`]s report a field path;
//! this turns it into `file:line`, the flag or the axis value that gave the value
//! ([`LineIndex::error`], the one place a field's error finds its place). Flow collections (`{a: 1}`,
//! `[1, 2]`) map every inner path to the line they start on, via the longest known prefix.

use std::collections::BTreeMap;

use crate::error::{FieldError, InputError};

#[derive(Debug, Clone, Default)]
pub struct LineIndex {
    lines: BTreeMap<String, usize>,
    /// Paths whose value came from elsewhere than their own line of the file: an error at
    /// or below them names that origin, not the file's line of their section.
    origins: Vec<(String, Origin)>,
}

/// Where a field's value came from, when not from its own key in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line override, named as given (`--set server.tp_size=3`); no line.
    Set(String),
    /// A flag of the pasted `server.launch` command, as typed with its value
    /// (`--page-size 0`), and the file's line it is on (`None`: the command is not the
    /// file's, it is located as `server.launch` is).
    LaunchFlag { flag: String, line: Option<usize> },
    /// A value of a sweep axis: the axis (its path), the value as the sweep writes it
    /// (`0`, `"0.5.19"`), and the file's line of the value.
    SweepAxis {
        axis: String,
        value: String,
        line: Option<usize>,
    },
}

impl Origin {
    /// What an error message says of a value from here, before its own words (`None`:
    /// the error's source names it already).
    fn says(&self) -> Option<String> {
        match self {
            Origin::Set(_) => None,
            Origin::LaunchFlag { flag, .. } => Some(format!("launch command flag `{flag}`")),
            Origin::SweepAxis { axis, value, .. } => {
                Some(format!("sweep axis `{axis}` value {value}"))
            }
        }
    }
}

impl LineIndex {
    pub fn build(text: &str) -> Self {
        let mut lines = BTreeMap::new();
        // (indent, path) of the open mapping keys / sequence items.
        let mut stack: Vec<(usize, String)> = Vec::new();
        let mut seq_counts: BTreeMap<String, usize> = BTreeMap::new();
        for (no, raw) in text.lines().enumerate() {
            let line_no = no + 1;
            let without_comment = strip_comment(raw);
            if without_comment.trim().is_empty() || without_comment.trim_start().starts_with("---")
            {
                continue;
            }
            let mut indent = without_comment.len() - without_comment.trim_start().len();
            let mut rest = without_comment.trim_start();
            // Sequence items: `- x` or `- key: v`.
            while let Some(after) = rest
                .strip_prefix("- ")
                .or_else(|| (rest == "-").then_some(""))
            {
                // `key:\n- item` (the item at its key's indent) is valid YAML, so only
                // deeper entries close here.
                while stack.last().is_some_and(|(i, _)| *i > indent) {
                    stack.pop();
                }
                let parent = stack.last().map(|(_, p)| p.clone()).unwrap_or_default();
                let n = seq_counts.entry(parent.clone()).or_insert(0);
                let path = format!("{parent}[{n}]");
                *n += 1;
                lines.entry(path.clone()).or_insert(line_no);
                stack.push((indent + 1, path));
                indent += 2;
                rest = after.trim_start();
            }
            if let Some(colon) = key_colon(rest) {
                let key = rest[..colon].trim().trim_matches(|c| c == '"' || c == '\'');
                while stack.last().is_some_and(|(i, _)| *i >= indent) {
                    stack.pop();
                }
                let parent = stack.last().map(|(_, p)| p.clone()).unwrap_or_default();
                let path = if parent.is_empty() {
                    key.to_string()
                } else {
                    format!("{parent}.{key}")
                };
                lines.entry(path.clone()).or_insert(line_no);
                seq_counts.remove(&path);
                stack.push((indent, path));
            }
        }
        Self {
            lines,
            origins: Vec::new(),
        }
    }

    /// Record that `path` is written at `line` (a launch file's `# hicache-sim:` field,
    /// whose line is its comment's).
    pub fn set_line(&mut self, path: &str, line: usize) {
        self.lines.insert(path.to_string(), line);
    }

    /// Forget where `path` is written (a null value, read as unset): its line is its
    /// parent's from now on.
    pub fn forget(&mut self, path: &str) {
        self.lines.remove(path);
    }

    /// Record that `path`'s value came from `origin` (a later origin of the same path, or
    /// of a path above it, wins).
    pub fn set_origin(&mut self, path: &str, origin: Origin) {
        self.origins.push((path.to_string(), origin));
    }

    /// The origin of `field`'s value: the last one recorded at or above it.
    pub fn origin(&self, field: &str) -> Option<&Origin> {
        let under = |p: &str| {
            field == p
                || field
                    .strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        };
        self.origins
            .iter()
            .rev()
            .find(|(p, _)| under(p))
            .map(|(_, o)| o)
    }

    /// Where an error about `field` should point: the `--set` that gave it (no line), the
    /// line of the launch flag or sweep axis value that gave it, else `source` at the
    /// field's line.
    pub fn locate(&self, source: &str, field: &str) -> (String, Option<usize>) {
        match self.origin(field) {
            Some(Origin::Set(o)) => (o.clone(), None),
            // A launch command given on the command line (`--set server.launch=…`):
            // named as that `--set`.
            Some(Origin::LaunchFlag { line: None, .. }) if field != "server.launch" => {
                self.locate(source, "server.launch")
            }
            Some(Origin::LaunchFlag { line, .. } | Origin::SweepAxis { line, .. }) => {
                (source.to_string(), *line)
            }
            None => (source.to_string(), self.line_of(field)),
        }
    }

    /// An error about `field` at its origin ([`locate`](Self::locate)); a value from a
    /// launch flag or a sweep axis is named before `message`.
    pub fn error(&self, source: &str, field: &str, message: &str) -> InputError {
        let (src, line) = self.locate(source, field);
        let message = match self.origin(field).and_then(Origin::says) {
            Some(from) => format!("{from}: {message}"),
            None => message.to_string(),
        };
        InputError::new(src, message).line_opt(line).field(field)
    }

    /// `e` as an input error at its field's origin (see [`error`](Self::error)).
    pub fn input_error(&self, source: &str, e: FieldError) -> InputError {
        let mut i = self.error(source, &e.field, &e.message);
        i.kind = e.kind;
        i
    }

    /// The line of `path` (`server.hicache_size`, `sweep.axes[2]`), or of its longest
    /// known prefix.
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let mut p = path.to_string();
        loop {
            if let Some(&l) = self.lines.get(&p) {
                return Some(l);
            }
            let cut = p.rfind(['.', '['])?;
            p.truncate(cut);
        }
    }
}

fn strip_comment(s: &str) -> &str {
    let mut in_s = false;
    let mut in_d = false;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match c {
            '\'' if !in_d => in_s = !in_s,
            '"' if !in_s => in_d = !in_d,
            '#' if !in_s && !in_d && (prev == ' ' || i == 0) => return &s[..i],
            _ => {}
        }
        prev = c;
    }
    s
}

/// Byte offset of the `:` that ends a mapping key on this line, if the line starts with one.
fn key_colon(s: &str) -> Option<usize> {
    if s.starts_with(['{', '[', '"', '\'', '|', '>']) && !s.starts_with(['"', '\'']) {
        return None;
    }
    let mut in_q: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (in_q, c) {
            (Some(q), c) if c == q => in_q = None,
            (None, '"' | '\'') if i == 0 => in_q = Some(c),
            (None, ':') if s[i + 1..].is_empty() || s[i + 1..].starts_with(' ') => return Some(i),
            (None, ' ') if s[..i].trim().is_empty() => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_to_lines() {
        let y = "name: x\nserver:\n  tp_size: 8   # comment\n  hicache_size: 135\nmemory:\n  cgroup:\n    max: 900GB\nsweep:\n  axes:\n    - path: a\n      values: [1, 2]\n    - path: b\n";
        let ix = LineIndex::build(y);
        assert_eq!(ix.line_of("name"), Some(1));
        assert_eq!(ix.line_of("server.tp_size"), Some(3));
        assert_eq!(ix.line_of("server.hicache_size"), Some(4));
        assert_eq!(ix.line_of("memory.cgroup.max"), Some(7));
        assert_eq!(ix.line_of("sweep.axes[0].path"), Some(10));
        assert_eq!(ix.line_of("sweep.axes[0].values[1]"), Some(11));
        assert_eq!(ix.line_of("sweep.axes[1].path"), Some(12));
        assert_eq!(ix.line_of("server.unknown"), Some(2));
        assert_eq!(ix.line_of("nothing"), None);
    }
}
