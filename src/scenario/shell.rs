//! The text around a pasted launch command, read as bash would hand `argv` to Python.
//!
//! Lexing follows bash's rules for what recipes contain: `\`-newline continuations,
//! `#` comments at the start of a word, single quotes (literal), double quotes (`\` escapes
//! only `$ \` " \` and newline), backslash escapes outside quotes, `$NAME` / `${NAME}` /
//! `${NAME:-default}` from assignments and `export` lines earlier in the text, operators
//! `; & && || | |&`, newlines, parentheses, and redirections (`> log`, `2>&1`, `&> f`,
//! `>> f`, `< f`) whose targets are dropped. A carriage return is an ordinary character,
//! as bash reads it: a shell file saved with CRLF line ends passes `\r` in the last word
//! of each line, and `\` before CR-LF quotes the CR instead of continuing the line (a
//! YAML scenario's line breaks are normalized by YAML before they get here).
//!
//! Then every simple command is searched for an SGLang launcher — `python[3] -m
//! sglang.launch_server`, a path to `launch_server.py`, `sglang serve` — behind any
//! wrapper (`nohup`, `env`, `docker run … IMAGE`, `srun …`, `numactl …`, `torchrun … -m`),
//! and `bash -c "…"` / `sh -c` strings are read recursively. Exactly one launcher must be
//! found; two are an error naming both lines.
//!
//! Refused with a clear error: command substitution (`$(…)`, backticks), here-documents,
//! a variable the text never sets, unclosed quotes.

use std::collections::BTreeMap;

/// Text to lex with the 1-based line (within the launch block) of every character.
#[derive(Debug, Clone, Default)]
pub struct Src {
    chars: Vec<char>,
    lines: Vec<usize>,
}

impl Src {
    /// Text as written (a literal block, a quoted or plain scalar, a shell file): newlines
    /// are newlines, and a carriage return is a character like any other (bash's rule).
    pub fn literal(text: &str) -> Src {
        let mut s = Src::default();
        let mut line = 1;
        for c in text.chars() {
            s.chars.push(c);
            s.lines.push(line);
            if c == '\n' {
                line += 1;
            }
        }
        s
    }

    /// The raw lines of a folded YAML block (`launch: >-`), dedented: YAML joins lines
    /// with a space (a blank line stays a newline); a line ending in `\` keeps its line
    /// break, so the README's `\` continuations read as continuations whatever the fold.
    pub fn folded(lines: &[&str]) -> Src {
        let mut s = Src::default();
        let n = lines.len();
        for (i, l) in lines.iter().enumerate() {
            let l = l.trim_end_matches('\r');
            for c in l.chars() {
                s.chars.push(c);
                s.lines.push(i + 1);
            }
            if i + 1 < n {
                let sep = if l.is_empty() || l.ends_with('\\') || lines[i + 1].trim().is_empty() {
                    '\n'
                } else {
                    ' '
                };
                s.chars.push(sep);
                s.lines.push(i + 1);
            }
        }
        s
    }

    fn line_at(&self, i: usize) -> usize {
        self.lines
            .get(i)
            .or(self.lines.last())
            .copied()
            .unwrap_or(1)
    }
}

/// A lexing or command-finding error at a line of the launch text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellError {
    pub message: String,
    pub line: usize,
    /// About the model path (`--model-path $MODEL_PATH` with the variable never set): the
    /// recipe does not say which model it serves.
    pub model_path: bool,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ShellError> {
    Err(ShellError {
        message: message.into(),
        line,
        model_path: false,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    /// Literal text; `quoted` = came from quotes or an escape (never split, never an
    /// assignment name).
    Lit { text: String, quoted: bool },
    /// `$NAME`, `${NAME}`, `${NAME:-default}`.
    Var {
        name: String,
        default: Option<String>,
        quoted: bool,
    },
    /// `$(( expr ))`: bash arithmetic (`super::arith`), evaluated when the word expands.
    Arith { expr: String, quoted: bool },
}

#[derive(Debug, Clone, PartialEq)]
struct RawWord {
    parts: Vec<Part>,
    line: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(RawWord),
    /// A command separator or pipe (`;`, `&`, `&&`, `||`, `|`, newline, parentheses).
    Sep(usize),
    /// A redirection operator: the next word is its target.
    Redir(usize),
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

struct Lexer<'a> {
    s: &'a Src,
    i: usize,
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.s.chars.get(self.i + k).copied()
    }

    fn line(&self) -> usize {
        self.s.line_at(self.i)
    }

    /// After `$`: a variable reference, or an error for what is not supported.
    fn dollar(&mut self, quoted: bool) -> Result<Option<Part>, ShellError> {
        let line = self.line();
        match self.peek(0) {
            Some('(') if self.peek(1) == Some('(') => {
                // `$(( … ))`: up to the `))` that closes it (parentheses nest inside).
                self.i += 2;
                let start = self.i;
                let mut depth = 0usize;
                loop {
                    match self.peek(0) {
                        None => return err(line, "unclosed `$((`"),
                        Some('(') => depth += 1,
                        Some(')') if depth > 0 => depth -= 1,
                        Some(')') if self.peek(1) == Some(')') => break,
                        Some(')') => {
                            return err(
                                line,
                                "`$((` closed by a single `)`: bash reads `$( (…) )`, a command substitution, which cannot be read",
                            );
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
                let expr: String = self.s.chars[start..self.i].iter().collect();
                self.i += 2;
                Ok(Some(Part::Arith { expr, quoted }))
            }
            Some('(') => err(
                line,
                "command substitution `$(…)` cannot be read: paste the command with its values",
            ),
            Some('{') => {
                self.i += 1;
                let start = self.i;
                while self.peek(0).is_some_and(|c| c != '}') {
                    self.i += 1;
                }
                if self.peek(0).is_none() {
                    return err(line, "unclosed `${`");
                }
                let inner: String = self.s.chars[start..self.i].iter().collect();
                self.i += 1;
                let (name, default) = match inner.split_once(":-").or_else(|| inner.split_once('-'))
                {
                    Some((n, d)) => (n.to_string(), Some(d.to_string())),
                    None => (inner.clone(), None),
                };
                if name.is_empty()
                    || !name.chars().all(is_name)
                    || !is_name_start(name.chars().next().unwrap_or('0'))
                {
                    return err(
                        line,
                        format!(
                            "`${{{inner}}}` cannot be read: only `${{NAME}}` and `${{NAME:-default}}` are supported"
                        ),
                    );
                }
                Ok(Some(Part::Var {
                    name,
                    default,
                    quoted,
                }))
            }
            Some(c) if is_name_start(c) => {
                let start = self.i;
                while self.peek(0).is_some_and(is_name) {
                    self.i += 1;
                }
                Ok(Some(Part::Var {
                    name: self.s.chars[start..self.i].iter().collect(),
                    default: None,
                    quoted,
                }))
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => err(
                line,
                format!("`${c}` (a shell parameter) cannot be read from pasted text"),
            ),
            // A lone `$` is literal.
            _ => Ok(None),
        }
    }

    #[allow(unused_assignments)]
    fn tokens(&mut self) -> Result<Vec<Tok>, ShellError> {
        let mut out = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        let mut word_line = 0;
        let mut in_word = false;
        macro_rules! lit {
            ($c:expr, $q:expr) => {{
                let (c, q): (char, bool) = ($c, $q);
                if !in_word {
                    in_word = true;
                    word_line = self.line();
                }
                match parts.last_mut() {
                    Some(Part::Lit { text, quoted }) if *quoted == q => text.push(c),
                    _ => parts.push(Part::Lit {
                        text: c.to_string(),
                        quoted: q,
                    }),
                }
            }};
        }
        macro_rules! end_word {
            () => {{
                if in_word {
                    out.push(Tok::Word(RawWord {
                        parts: std::mem::take(&mut parts),
                        line: word_line,
                    }));
                    in_word = false;
                }
            }};
        }
        while let Some(c) = self.peek(0) {
            let line = self.line();
            match c {
                '\\' => match self.peek(1) {
                    Some('\n') => self.i += 2,
                    Some(n) => {
                        self.i += 2;
                        lit!(n, true);
                    }
                    None => self.i += 1,
                },
                '\'' => {
                    if !in_word {
                        in_word = true;
                        word_line = line;
                    }
                    self.i += 1;
                    parts.push(Part::Lit {
                        text: String::new(),
                        quoted: true,
                    });
                    loop {
                        match self.peek(0) {
                            Some('\'') => {
                                self.i += 1;
                                break;
                            }
                            Some(x) => {
                                lit!(x, true);
                                self.i += 1;
                            }
                            None => return err(line, "unclosed single quote `'`"),
                        }
                    }
                }
                '"' => {
                    if !in_word {
                        in_word = true;
                        word_line = line;
                    }
                    self.i += 1;
                    parts.push(Part::Lit {
                        text: String::new(),
                        quoted: true,
                    });
                    loop {
                        match self.peek(0) {
                            Some('"') => {
                                self.i += 1;
                                break;
                            }
                            Some('\\') => match self.peek(1) {
                                Some('\n') => self.i += 2,
                                Some(n @ ('$' | '`' | '"' | '\\')) => {
                                    lit!(n, true);
                                    self.i += 2;
                                }
                                _ => {
                                    lit!('\\', true);
                                    self.i += 1;
                                }
                            },
                            Some('$') => {
                                self.i += 1;
                                match self.dollar(true)? {
                                    Some(p) => parts.push(p),
                                    None => lit!('$', true),
                                }
                            }
                            Some('`') => {
                                return err(
                                    self.line(),
                                    "command substitution with backticks cannot be read: paste the command with its values",
                                );
                            }
                            Some(x) => {
                                lit!(x, true);
                                self.i += 1;
                            }
                            None => return err(line, "unclosed double quote `\"`"),
                        }
                    }
                }
                '$' => {
                    self.i += 1;
                    match self.dollar(false)? {
                        Some(p) => {
                            if !in_word {
                                in_word = true;
                                word_line = line;
                            }
                            parts.push(p);
                        }
                        None => lit!('$', false),
                    }
                }
                '`' => {
                    return err(
                        line,
                        "command substitution with backticks cannot be read: paste the command with its values",
                    );
                }
                '#' if !in_word => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                ' ' | '\t' => {
                    end_word!();
                    self.i += 1;
                }
                '\n' | ';' | '(' | ')' => {
                    end_word!();
                    self.i += 1;
                    out.push(Tok::Sep(line));
                }
                '|' | '&' => {
                    // `&>` / `&>>` redirect; `&&`, `||`, `|&`, `|`, `&` separate.
                    if c == '&' && self.peek(1) == Some('>') {
                        end_word!();
                        self.i += if self.peek(2) == Some('>') { 3 } else { 2 };
                        out.push(Tok::Redir(line));
                        continue;
                    }
                    end_word!();
                    self.i += 1;
                    if matches!(self.peek(0), Some('|' | '&')) {
                        self.i += 1;
                    }
                    out.push(Tok::Sep(line));
                }
                '<' | '>' => {
                    // An all-digit word right before is a file descriptor number.
                    if in_word
                        && parts.len() == 1
                        && matches!(&parts[0], Part::Lit { text, quoted: false } if text.chars().all(|d| d.is_ascii_digit()))
                    {
                        parts.clear();
                        in_word = false;
                    }
                    end_word!();
                    if c == '<' && self.peek(1) == Some('<') {
                        return err(
                            line,
                            "here-documents (`<<`) cannot be read in a launch command",
                        );
                    }
                    self.i += 1;
                    // `>>`, `>|`, `<>`, `>&`, `<&`.
                    if matches!(self.peek(0), Some('>' | '|' | '&')) {
                        self.i += 1;
                    }
                    out.push(Tok::Redir(line));
                }
                c => {
                    lit!(c, false);
                    self.i += 1;
                }
            }
        }
        end_word!();
        Ok(out)
    }
}

/// A found SGLang launch: the argv SGLang's parser receives, the line of each word.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// What ran the server, e.g. `python3 -m sglang.launch_server`, `sglang serve`.
    pub launcher: String,
    pub argv: Vec<String>,
    pub lines: Vec<usize>,
    /// Environment given to the command (assignment prefixes, `export`, `env X=…`,
    /// `docker run -e X=…`), sorted.
    pub env: BTreeMap<String, String>,
    /// `sglang serve` (a leading positional model path becomes `--model-path`, 0.5.16+).
    pub serve: bool,
    /// Things bash does that are likely not what the author meant (a line of flags that
    /// runs as its own command because the line before lacks a `\`).
    pub warnings: Vec<String>,
    /// The variable the model path is read from when the text never sets it
    /// (`--model-path $MODEL_PATH`), and its line: bash passes an empty path, and the
    /// scenario's `model:` must say what the recipe serves.
    pub unset_model_path: Option<(String, usize)>,
}

#[derive(Debug, Clone)]
struct Word {
    text: String,
    line: usize,
}

/// Splits off a leading `NAME=` if the word is an assignment (unquoted name).
fn assignment(w: &RawWord) -> Option<(String, Vec<Part>)> {
    let Some(Part::Lit {
        text,
        quoted: false,
    }) = w.parts.first()
    else {
        return None;
    };
    let (name, rest) = text.split_once('=')?;
    if name.is_empty() || !is_name_start(name.chars().next()?) || !name.chars().all(is_name) {
        return None;
    }
    let mut parts = vec![Part::Lit {
        text: rest.to_string(),
        quoted: true,
    }];
    parts.extend(w.parts[1..].iter().cloned());
    Some((name.to_string(), parts))
}

/// `$(( expr ))` as bash expands it: `$NAME` / `${NAME}` inside are replaced by their
/// values first, then the expression is evaluated (`super::arith`); an error names `line`.
fn arith_value(
    expr: &str,
    vars: &BTreeMap<String, String>,
    line: usize,
) -> Result<String, ShellError> {
    let mut text = String::new();
    let c: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < c.len() {
        if c[i] == '$' {
            let braced = c.get(i + 1) == Some(&'{');
            let start = i + 1 + usize::from(braced);
            let mut j = start;
            while j < c.len() && is_name(c[j]) {
                j += 1;
            }
            if j > start && (!braced || c.get(j) == Some(&'}')) {
                let name: String = c[start..j].iter().collect();
                text.push_str(vars.get(&name).map(String::as_str).unwrap_or(""));
                i = j + usize::from(braced);
                continue;
            }
            return err(
                line,
                format!(
                    "`$((…))` holding `{expr}`: only `$NAME` and `${{NAME}}` can be read inside"
                ),
            );
        }
        text.push(c[i]);
        i += 1;
    }
    super::arith::eval(&text, vars)
        .map(|v| v.to_string())
        .map_err(|m| ShellError {
            message: format!("`$(({expr}))`: {m}"),
            line,
            model_path: false,
        })
}

/// The most text variable expansion may produce over a whole launch text (16 MiB): a
/// launch command is a few kilobytes, and a variable that doubles itself (`A=$A$A` forty
/// times) would otherwise grow until memory runs out.
pub const MAX_EXPANSION_BYTES: usize = 16 << 20;

/// What expansion may still produce, counted over every word of one launch text.
#[derive(Debug, Clone, Copy)]
struct Budget(usize);

impl Budget {
    fn take(&mut self, n: usize, line: usize) -> Result<(), ShellError> {
        match self.0.checked_sub(n) {
            Some(left) => {
                self.0 = left;
                Ok(())
            }
            None => err(
                line,
                format!(
                    "expanding the variables here gives more than {} MiB of text (does a variable double itself, as `A=$A$A`?): a launch command is never that long",
                    MAX_EXPANSION_BYTES >> 20
                ),
            ),
        }
    }
}

/// Expands a word's parts: quoted text stays one field; unquoted expansions split on
/// blanks (bash's default IFS); an unquoted expansion that yields nothing vanishes.
/// Every byte produced is taken from `budget` (an error at `line` when it runs out).
fn expand(
    parts: &[Part],
    vars: &BTreeMap<String, String>,
    split: bool,
    unset: &mut Option<String>,
    budget: &mut Budget,
    line: usize,
) -> Result<Vec<String>, ShellError> {
    let mut fields: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    for p in parts {
        match p {
            Part::Lit { text, quoted } => {
                budget.take(text.len(), line)?;
                cur.push_str(text);
                has |= *quoted || !text.is_empty();
            }
            Part::Arith { expr, quoted } => {
                let v = arith_value(expr, vars, line)?;
                budget.take(v.len(), line)?;
                // An arithmetic result is one number: it never splits (no blanks).
                cur.push_str(&v);
                has = has || *quoted || !v.is_empty();
            }
            Part::Var {
                name,
                default,
                quoted,
            } => {
                let v = match (vars.get(name), default) {
                    (Some(v), _) if !v.is_empty() || default.is_none() => v.clone(),
                    (_, Some(d)) => d.clone(),
                    (None, None) => {
                        // Bash expands it to nothing; an error only if the SGLang
                        // command uses it (see `scan`).
                        unset.get_or_insert_with(|| name.clone());
                        String::new()
                    }
                    (Some(v), None) => v.clone(),
                };
                budget.take(v.len(), line)?;
                if *quoted || !split {
                    cur.push_str(&v);
                    has = true;
                } else {
                    let mut pieces = v
                        .split([' ', '\t', '\n'])
                        .filter(|s| !s.is_empty())
                        .peekable();
                    let starts_blank = v.starts_with([' ', '\t', '\n']);
                    if starts_blank && has {
                        fields.push(std::mem::take(&mut cur));
                        has = false;
                    }
                    while let Some(piece) = pieces.next() {
                        cur.push_str(piece);
                        has = true;
                        if pieces.peek().is_some() {
                            fields.push(std::mem::take(&mut cur));
                        }
                    }
                    if v.ends_with([' ', '\t', '\n']) && has {
                        fields.push(std::mem::take(&mut cur));
                        has = false;
                    }
                }
            }
        }
    }
    if has {
        fields.push(cur);
    }
    Ok(fields)
}

/// Simple commands of the token stream: words with redirection targets dropped.
fn simple_commands(toks: Vec<Tok>) -> Vec<Vec<RawWord>> {
    let mut cmds = Vec::new();
    let mut cur = Vec::new();
    let mut skip_next = false;
    for t in toks {
        match t {
            Tok::Word(w) => {
                if skip_next {
                    skip_next = false;
                } else {
                    cur.push(w);
                }
            }
            Tok::Redir(_) => skip_next = true,
            Tok::Sep(_) => {
                skip_next = false;
                if !cur.is_empty() {
                    cmds.push(std::mem::take(&mut cur));
                }
            }
        }
    }
    if !cur.is_empty() {
        cmds.push(cur);
    }
    cmds
}

fn basename(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

fn is_python(w: &str) -> bool {
    let b = basename(w);
    b.strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Where the launcher is in a command's words: (index of the first SGLang argument,
/// launcher text, is `sglang serve`).
fn launcher_at(words: &[Word]) -> Option<(usize, String, bool)> {
    for (j, w) in words.iter().enumerate() {
        let t = w.text.as_str();
        let next = words.get(j + 1).map(|w| w.text.as_str());
        // `-m` runs a module only after the interpreter (`python -m`, `torchrun … -m`): a
        // command that starts with `-m` (a continuation line that did not continue, as
        // under CRLF) is bash's "command not found", not SGLang.
        let runner = words[..j]
            .iter()
            .any(|w| is_python(&w.text) || basename(&w.text) == "torchrun");
        if runner
            && ((t == "-m" && next == Some("sglang.launch_server"))
                || t == "-msglang.launch_server")
        {
            let skip = if t == "-m" { 2 } else { 1 };
            let who = if j > 0 {
                basename(&words[0].text).to_string()
            } else {
                "python".into()
            };
            let who = words[..j]
                .iter()
                .rev()
                .find(|w| is_python(&w.text) || basename(&w.text) == "torchrun")
                .map(|w| basename(&w.text).to_string())
                .unwrap_or(who);
            return Some((j + skip, format!("{who} -m sglang.launch_server"), false));
        }
        // NVIDIA Dynamo's SGLang worker (ai-dynamo: `python -m dynamo.sglang`; older
        // releases `dynamo.sglang.worker`, `dynamo.sglang.decode_worker`): its own flags
        // are dropped before SGLang's parser (`crate::flags::dynamo`).
        let dynamo = |m: &str| {
            matches!(
                m,
                "dynamo.sglang" | "dynamo.sglang.worker" | "dynamo.sglang.decode_worker"
            )
        };
        if runner
            && ((t == "-m" && next.is_some_and(dynamo)) || t.strip_prefix("-m").is_some_and(dynamo))
        {
            let (skip, module) = if t == "-m" {
                (2, next.unwrap_or_default())
            } else {
                (1, &t[2..])
            };
            return Some((j + skip, format!("python -m {module}"), false));
        }
        if basename(t) == "launch_server.py" && j > 0 {
            return Some((j + 1, format!("python {t}"), false));
        }
        if basename(t) == "sglang" && next == Some("serve") {
            return Some((j + 2, "sglang serve".into(), true));
        }
    }
    None
}

/// A `bash -c STRING` (or `sh`, `zsh`, combined options like `-lc`) in the words.
fn shell_c(words: &[Word]) -> Option<&Word> {
    for (j, w) in words.iter().enumerate() {
        if matches!(basename(&w.text), "bash" | "sh" | "zsh" | "dash") {
            let mut k = j + 1;
            while let Some(o) = words.get(k) {
                if o.text.starts_with('-') && !o.text.starts_with("--") {
                    k += 1;
                    if o.text.contains('c') {
                        return words.get(k);
                    }
                } else if o.text.starts_with("--") {
                    k += 1;
                } else {
                    break;
                }
            }
        }
    }
    None
}

/// Environment assignments a wrapper passes: `env X=1`, `docker run -e X=1 / --env X=1`.
fn wrapper_env(words: &[Word], upto: usize, env: &mut BTreeMap<String, String>) {
    let mut j = 0;
    while j < upto {
        let t = words[j].text.as_str();
        let value = if matches!(t, "-e" | "--env") {
            j += 1;
            words.get(j).map(|w| w.text.as_str())
        } else if let Some(v) = t.strip_prefix("--env=") {
            Some(v)
        } else if j > 0 && basename(&words[0].text) == "env" && !t.starts_with('-') {
            Some(t)
        } else {
            None
        };
        if let Some((k, v)) = value.and_then(|v| v.split_once('='))
            && !k.is_empty()
            && k.chars().all(is_name)
        {
            env.insert(k.to_string(), v.to_string());
        }
        j += 1;
    }
}

/// Finds the one SGLang launch in `src`.
pub fn find_launch(src: &Src) -> Result<Launch, ShellError> {
    let mut vars = BTreeMap::new();
    let mut found = Vec::new();
    let mut first_words: Option<(Vec<Word>, BTreeMap<String, String>)> = None;
    let mut budget = Budget(MAX_EXPANSION_BYTES);
    scan(src, 0, &mut vars, &mut found, &mut first_words, &mut budget)?;
    match found.len() {
        1 => Ok(found.pop().expect("one")),
        0 => {
            // Only flags (`--tp 8 --enable-hierarchical-cache …`): read them as the argv.
            if let Some((words, env)) = first_words
                && words.first().is_some_and(|w| w.text.starts_with("--"))
            {
                return Ok(Launch {
                    launcher: String::new(),
                    argv: words.iter().map(|w| w.text.clone()).collect(),
                    lines: words.iter().map(|w| w.line).collect(),
                    env,
                    serve: false,
                    warnings: Vec::new(),
                    unset_model_path: None,
                });
            }
            err(
                1,
                "no SGLang launch command found: expected `python3 -m sglang.launch_server …`, `sglang serve …`, a path to `launch_server.py`, or only the `--flags`",
            )
        }
        _ => err(
            found[1].lines.first().copied().unwrap_or(1),
            format!(
                "{} SGLang launch commands (lines {}): paste the one to simulate",
                found.len(),
                found
                    .iter()
                    .map(|l| l.lines.first().copied().unwrap_or(1).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

fn scan(
    src: &Src,
    line_offset: usize,
    vars: &mut BTreeMap<String, String>,
    found: &mut Vec<Launch>,
    first_words: &mut Option<(Vec<Word>, BTreeMap<String, String>)>,
    budget: &mut Budget,
) -> Result<(), ShellError> {
    let toks = Lexer { s: src, i: 0 }.tokens().map_err(|mut e| {
        e.line += line_offset;
        e
    })?;
    for cmd in simple_commands(toks) {
        // Leading assignments: the command's environment (or shell variables when alone).
        let mut env = BTreeMap::new();
        let mut k = 0;
        while let Some((name, parts)) = cmd.get(k).and_then(assignment) {
            let line = cmd[k].line + line_offset;
            let v = expand(&parts, vars, false, &mut None, budget, line)?.concat();
            env.insert(name, v);
            k += 1;
        }
        if k == cmd.len() {
            vars.extend(env);
            continue;
        }
        let mut words = Vec::new();
        let mut unset_uses: Vec<(usize, usize, String)> = Vec::new();
        let mut exporting = false;
        for (n, w) in cmd[k..].iter().enumerate() {
            let line = w.line + line_offset;
            if exporting && let Some((name, parts)) = assignment(w) {
                let v = expand(&parts, vars, false, &mut None, budget, line)?.concat();
                vars.insert(name.clone(), v.clone());
                env.insert(name, v);
                continue;
            }
            let mut unset = None;
            let fields = expand(&w.parts, vars, true, &mut unset, budget, line)?;
            if let Some(name) = unset {
                // Where in `words` the unset variable was used (even if it vanished).
                unset_uses.push((words.len(), line, name));
                // An unset model path (`--model-path $MODEL_PATH`) stays an empty word:
                // the scenario's `model:` (a `# hicache-sim: model=…`) may name the model.
                if fields.is_empty()
                    && words.last().is_some_and(|w: &Word| {
                        matches!(w.text.as_str(), "--model-path" | "--model")
                    })
                {
                    words.push(Word {
                        text: String::new(),
                        line,
                    });
                }
            }
            for text in fields {
                if n == 0 && text == "export" {
                    exporting = true;
                    continue;
                }
                words.push(Word { text, line });
            }
        }
        if exporting {
            continue;
        }
        let mut all_env = vars.clone();
        all_env.extend(env);
        if let Some((start, launcher, serve)) = launcher_at(&words) {
            // A variable the text never sets, used in the SGLang command itself. The
            // model path itself (`--model-path $MODEL_PATH`, `--model-path=$M`) is
            // recorded: the loader reads the model from `model:` or refuses.
            let is_model = |w: &str| matches!(w, "--model-path" | "--model");
            let mut unset_model_path = None;
            for (i, line, name) in unset_uses.iter().filter(|(i, _, _)| *i >= start) {
                let model = (*i > 0 && words.get(i - 1).is_some_and(|w| is_model(&w.text)))
                    || words
                        .get(*i)
                        .is_some_and(|w| w.text.split_once('=').is_some_and(|(f, _)| is_model(f)));
                if model {
                    unset_model_path.get_or_insert((name.clone(), *line));
                    continue;
                }
                return err(
                    *line,
                    format!(
                        "`${name}` is not set in the pasted text (bash would pass an empty value): set it (`{name}=…`) or paste the value"
                    ),
                );
            }
            wrapper_env(&words, start, &mut all_env);
            found.push(Launch {
                launcher,
                argv: words[start..].iter().map(|w| w.text.clone()).collect(),
                lines: words[start..].iter().map(|w| w.line).collect(),
                env: all_env,
                serve,
                warnings: Vec::new(),
                unset_model_path,
            });
            continue;
        }
        if let (Some(last), Some(first)) = (found.last_mut(), words.first())
            && first.text.starts_with("--")
        {
            last.warnings.push(format!(
                "line {}: `{}` runs as a command of its own (bash: command not found), not as a flag of the SGLang command: is a `\\` missing at the end of the line before?",
                first.line, first.text
            ));
        }
        if let Some(script) = shell_c(&words) {
            let inner = Src::literal(&script.text);
            scan(
                &inner,
                script.line - 1,
                &mut vars.clone(),
                found,
                first_words,
                budget,
            )?;
        } else if first_words.is_none() {
            *first_words = Some((words, all_env));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        find_launch(&Src::literal(text)).unwrap().argv
    }

    #[test]
    fn quotes_escapes_comments_continuations() {
        assert_eq!(
            argv(
                "python3 -m sglang.launch_server --a 'x y' --b \"{\\\"a\\\": 1}\" \\\n  --c z # trailing\n"
            ),
            ["--a", "x y", "--b", "{\"a\": 1}", "--c", "z"]
        );
        // CRLF: bash keeps the CR in the line's last word (what SGLang then receives).
        assert_eq!(
            argv("python -m sglang.launch_server --x a\\ b\r\n"),
            ["--x", "a b\r"]
        );
        // ... and `\` before CR-LF quotes the CR: the next line is a command of its own.
        let l = find_launch(&Src::literal(
            "python -m sglang.launch_server --tp 4 \\\r\n  --page-size 64\r\n",
        ))
        .unwrap();
        assert_eq!(l.argv, ["--tp", "4", "\r"]);
        // $(( … )): bash arithmetic on the text's variables
        assert_eq!(
            argv(
                "G=8\npython -m sglang.launch_server --tp $((G / 2)) --dp \"$(( (1 + 1) * $G ))\"\n"
            ),
            ["--tp", "4", "--dp", "16"]
        );
    }

    #[test]
    fn wrappers_redirections_and_chains() {
        let a = "export TP=8\nCUDA_VISIBLE_DEVICES=0,1 nohup python3 -m sglang.launch_server --tp $TP > log 2>&1 &\nsleep 60 && curl localhost:30000 | tee out.log";
        let l = find_launch(&Src::literal(a)).unwrap();
        assert_eq!(l.argv, ["--tp", "8"]);
        assert_eq!(l.lines, [2, 2]);
        assert_eq!(l.env["CUDA_VISIBLE_DEVICES"], "0,1");
        assert_eq!(
            argv(
                "nohup bash -c \"python3 -m sglang.launch_server --tp 4 --page-size 64\" > x.log &"
            ),
            ["--tp", "4", "--page-size", "64"]
        );
        assert_eq!(
            argv(
                "docker run --gpus all -e HF_TOKEN=x --shm-size 32g lmsysorg/sglang:latest python3 -m sglang.launch_server --tp 8"
            ),
            ["--tp", "8"]
        );
        assert_eq!(
            argv(
                "srun -N 1 --ntasks-per-node=1 env SGLANG_X=1 python -u /opt/sglang/python/sglang/launch_server.py --tp 2 | tee s.log"
            ),
            ["--tp", "2"]
        );
        assert_eq!(
            argv("torchrun --nproc-per-node 8 -m sglang.launch_server --tp 8; echo done || true"),
            ["--tp", "8"]
        );
        assert_eq!(
            argv(
                "env -u X A=1 numactl --cpunodebind=0 python3.11 -u -m sglang.launch_server --tp 1 |& tee l"
            ),
            ["--tp", "1"]
        );
        let l = find_launch(&Src::literal("sglang serve Qwen/Qwen3-8B --tp 2")).unwrap();
        assert!(l.serve);
        assert_eq!(l.argv, ["Qwen/Qwen3-8B", "--tp", "2"]);
    }

    #[test]
    fn refusals_name_the_line() {
        let e = find_launch(&Src::literal(
            "python -m sglang.launch_server --tp 2\npython -m sglang.launch_server --tp 4",
        ))
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message.contains("2 SGLang launch commands (lines 1, 2)"),
            "{}",
            e.message
        );
        let e = find_launch(&Src::literal(
            "python -m sglang.launch_server \\\n --tp $TP",
        ))
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("`$TP` is not set"), "{}", e.message);
        let e =
            find_launch(&Src::literal("python -m sglang.launch_server\n --x 'abc")).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (2, "unclosed single quote `'`")
        );
        // Unset outside the SGLang command: bash's empty value, no error.
        let l = find_launch(&Src::literal(
            "export LD=$LD:/x\npython -m sglang.launch_server --tp 2\n--page-size 64",
        ))
        .unwrap();
        assert_eq!(l.argv, ["--tp", "2"]);
        assert!(
            l.warnings[0].starts_with("line 3: `--page-size` runs as a command of its own"),
            "{:?}",
            l.warnings
        );
        let e = find_launch(&Src::literal("echo hi")).unwrap_err();
        assert!(e.message.starts_with("no SGLang launch command found"));
        // Dynamo's SGLang worker is a launcher: its argv (Dynamo's flags are dropped
        // after, by `crate::flags::dynamo`).
        let l = find_launch(&Src::literal(
            "export X=1\npython3 -m dynamo.sglang --model-path m --tp 4 --endpoint dyn://a.b.c\n",
        ))
        .unwrap();
        assert_eq!(l.launcher, "python -m dynamo.sglang");
        assert_eq!(l.argv[..4], ["--model-path", "m", "--tp", "4"]);
        assert_eq!(l.lines[0], 2);
    }

    #[test]
    fn folded_block_keeps_backslash_continuations() {
        let lines = [
            "python -m sglang.launch_server \\",
            "--tp 8 \\",
            "--page-size 64",
        ];
        let l = find_launch(&Src::folded(&lines)).unwrap();
        assert_eq!(l.argv, ["--tp", "8", "--page-size", "64"]);
        assert_eq!(l.lines, [2, 2, 3, 3]);
        // Without backslashes the fold joins the lines into one command.
        let l = find_launch(&Src::folded(&["python -m sglang.launch_server", "--tp 8"])).unwrap();
        assert_eq!(l.argv, ["--tp", "8"]);
    }
}
