//! CPython 3.11 `argparse` over one SGLang release's flags: what `parse_args(argv)` of
//! the parser built by `prepare_server_args` (0.5.14–0.5.23 `srt/server_args.py`) accepts,
//! stores, or refuses — with argparse's own error text (after `sglang serve: error: `).
//!
//! Mirrored: `_parse_optional` (exact option, `--opt=value`, unambiguous prefixes with
//! `allow_abbrev`, the "ambiguous option" error naming the candidates in registration
//! order, negative numbers and words with spaces read as values), `_match_argument`
//! (nargs `None`/`?`/`*`/`+`/N; an optional's values stop at the next option),
//! `_get_values` / `_get_value` / `_check_value` (type then choices), store_true given
//! `=value` ("ignored explicit argument"), required options, and "unrecognized arguments".
//! Not mirrored: `--help` output (reported as an error: nothing to simulate), `--config`
//! files (read by `prepare_server_args` before argparse).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Action, ArgType, FlagSpec, Nargs, ReleaseFlags};

/// A flag the command set: which action, as which option string, at which argv index.
#[derive(Debug, Clone, PartialEq)]
pub struct Given {
    pub dest: String,
    /// The full option string argparse resolved (`--mem-fraction-static`).
    pub option: String,
    /// As typed (`--mem-frac`, `--tp-size=8`).
    pub typed: String,
    pub index: usize,
}

/// A successful parse: every dest with the value argparse's namespace holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub values: BTreeMap<String, Value>,
    pub given: Vec<Given>,
}

impl Parsed {
    /// Whether the command set `dest` (rather than leaving the default).
    pub fn was_given(&self, dest: &str) -> bool {
        self.given.iter().any(|g| g.dest == dest)
    }
}

/// argparse's refusal: the message it prints after `sglang serve: error: `, and the argv
/// index it is about (when one word is to blame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    pub message: String,
    pub index: Option<usize>,
    /// `--help`/`-h`: argparse prints the help and exits 0.
    pub help: bool,
}

impl ArgError {
    fn at(index: usize, message: String) -> Self {
        Self {
            message,
            index: Some(index),
            help: false,
        }
    }
}

/// argparse's refusal of one optional's values: the text it prints after
/// `argument --flag: ` (CPython 3.11 `argparse.py: _get_values`, `_check_value`,
/// `_match_argument`; SGLang's own `ArgumentTypeError`s for `human_readable_int`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error(
        "Decimals are not allowed with IEC suffixes like '{suffix}'. Use an integer IEC value such as '{int}{suffix}', or an SI value such as '{number}{si}'."
    )]
    IecDecimal {
        suffix: &'static str,
        int: i128,
        number: String,
        si: &'static str,
    },
    #[error(
        "Invalid integer value: '{0}'. Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). Suffixes are case-sensitive."
    )]
    HumanInt(String),
    /// The value as Python's `repr` prints it.
    #[error("invalid int value: {0}")]
    Int(String),
    #[error("invalid float value: {0}")]
    Float(String),
    #[error("invalid loads value: {0}")]
    Json(String),
    /// The flag's first option string.
    #[error("{0} must be a JSON object")]
    NotJsonObject(String),
    /// The value and the choices, each as Python's `repr` prints it.
    #[error("invalid choice: {value} (choose from {})", choices.join(", "))]
    Choice { value: String, choices: Vec<String> },
    #[error("expected one argument")]
    ExpectedOne,
    #[error("expected at least one argument")]
    ExpectedAtLeastOne,
    #[error("expected {n} argument{}", if *n == 1 { "" } else { "s" })]
    ExpectedExactly { n: usize },
}

/// One argv word after `_parse_optional`.
#[derive(Debug, Clone)]
enum Word {
    /// A value ('A' in argparse's pattern).
    Arg,
    /// `--` ('-').
    DashDash,
    /// An option: the action (None = unknown, goes to extras), the option string matched,
    /// and a value given with `=`.
    Opt {
        action: Option<usize>,
        option: String,
        explicit: Option<String>,
    },
    /// `-h` / `--help` (or a prefix of `--help`).
    Help,
}

const HELP: [&str; 2] = ["-h", "--help"];

/// Python's `repr()` of a str.
pub fn py_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// `'-?\d+$|-\d*\.\d+$'`: argparse's negative-number matcher.
fn looks_negative(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('-') else {
        return false;
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    digits(rest)
        || rest
            .split_once('.')
            .is_some_and(|(a, b)| a.bytes().all(|c| c.is_ascii_digit()) && digits(b))
}

/// The options a prefix could name (`_get_option_tuples`, `allow_abbrev=True`), in
/// registration order, `-h`/`--help` first.
fn option_tuples(r: &ReleaseFlags, arg: &str) -> Vec<(Option<usize>, String, Option<String>)> {
    let mut out = Vec::new();
    if arg.starts_with("--") {
        let (prefix, explicit) = match arg.split_once('=') {
            Some((p, e)) => (p, Some(e.to_string())),
            None => (arg, None),
        };
        for h in HELP {
            if h.starts_with(prefix) {
                out.push((None, h.to_string(), explicit.clone()));
            }
        }
        for (o, i) in &r.option_strings {
            if o.starts_with(prefix) {
                out.push((Some(*i), o.clone(), explicit.clone()));
            }
        }
    } else if arg.len() >= 2 {
        // A single-dash word: `-h` + glued value, or any option starting with it.
        let short = &arg[..arg.char_indices().nth(2).map_or(arg.len(), |(i, _)| i)];
        for h in HELP {
            if h == short {
                out.push((None, h.to_string(), Some(arg[short.len()..].to_string())));
            } else if h.starts_with(arg) {
                out.push((None, h.to_string(), None));
            }
        }
        for (o, i) in &r.option_strings {
            if o.starts_with(arg) {
                out.push((Some(*i), o.clone(), None));
            }
        }
    }
    out
}

fn classify(r: &ReleaseFlags, idx: usize, arg: &str) -> Result<Word, ArgError> {
    if arg.is_empty() || !arg.starts_with('-') {
        return Ok(Word::Arg);
    }
    if HELP.contains(&arg) {
        return Ok(Word::Help);
    }
    if let Some(i) = r.exact(arg) {
        return Ok(Word::Opt {
            action: Some(i),
            option: arg.to_string(),
            explicit: None,
        });
    }
    if arg.len() == 1 {
        return Ok(Word::Arg);
    }
    if let Some((o, e)) = arg.split_once('=') {
        if HELP.contains(&o) {
            return Ok(Word::Help);
        }
        if let Some(i) = r.exact(o) {
            return Ok(Word::Opt {
                action: Some(i),
                option: o.to_string(),
                explicit: Some(e.to_string()),
            });
        }
    }
    let tuples = option_tuples(r, arg);
    if tuples.len() > 1 {
        let names: Vec<&str> = tuples.iter().map(|t| t.1.as_str()).collect();
        return Err(ArgError::at(
            idx,
            format!("ambiguous option: {arg} could match {}", names.join(", ")),
        ));
    }
    if let Some((action, option, explicit)) = tuples.into_iter().next() {
        return Ok(match action {
            None => Word::Help,
            Some(_) => Word::Opt {
                action,
                option,
                explicit,
            },
        });
    }
    // No SGLang option looks like a negative number, so `-1` is a value.
    if looks_negative(arg) || arg.contains(' ') {
        return Ok(Word::Arg);
    }
    Ok(Word::Opt {
        action: None,
        option: arg.to_string(),
        explicit: None,
    })
}

fn name(a: &FlagSpec) -> String {
    a.options.join("/")
}

/// Python's `int(s)` on a str.
pub fn py_int(s: &str) -> Option<i128> {
    let t = s.trim_matches(|c: char| c.is_whitespace());
    let (neg, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    // Python 3 refuses leading zeros only in literals, not in int(): int("08") == 8.
    let v: i128 = digits.replace('_', "").parse().ok()?;
    Some(if neg { -v } else { v })
}

/// `utils/common.py: human_readable_int` (SGLang 0.5.2x; the flag table says which flags
/// of which releases use it): `value.strip()`, then `(\d+(\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)`
/// in full — IEC suffixes take integers only, SI ones `int(Decimal(n) × 10^k)`
/// (truncated) — else Python's `int(value)`. `Err`: the `ArgumentTypeError` text, which
/// argparse prints after `argument --flag: `.
pub fn human_readable_int(value: &str) -> Result<i128, ValueError> {
    let v = value.trim_matches(|c: char| c.is_whitespace());
    let suffixes: [(&str, i128, bool); 8] = [
        ("Ki", 1 << 10, true),
        ("Mi", 1 << 20, true),
        ("Gi", 1 << 30, true),
        ("Ti", 1 << 40, true),
        ("k", 1_000, false),
        ("M", 1_000_000, false),
        ("G", 1_000_000_000, false),
        ("T", 1_000_000_000_000, false),
    ];
    for (suffix, mult, iec) in suffixes {
        let Some(number) = v.strip_suffix(suffix) else {
            continue;
        };
        let (int, frac) = match number.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (number, None),
        };
        let digits = |x: &str| !x.is_empty() && x.chars().all(|c| c.is_ascii_digit());
        if !digits(int) || frac.is_some_and(|f| !digits(f)) {
            break;
        }
        if iec && frac.is_some() {
            return Err(ValueError::IecDecimal {
                suffix,
                int: int.trim_start_matches('0').parse::<i128>().unwrap_or(0),
                number: number.to_string(),
                si: &suffix[..1],
            });
        }
        // int(Decimal(number) * mult): exact, truncated toward zero.
        let f = frac.unwrap_or("");
        let scale = 10i128.checked_pow(f.len() as u32);
        let whole: Option<i128> = format!("{int}{f}").parse().ok();
        if let (Some(scale), Some(whole)) = (scale, whole)
            && let Some(x) = whole.checked_mul(mult)
        {
            return Ok(x / scale);
        }
        break;
    }
    py_int(v).ok_or_else(|| ValueError::HumanInt(v.to_string()))
}

/// Python's `float(s)` on a str.
pub fn py_float(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c.is_whitespace());
    let body = t.trim_start_matches(['+', '-']);
    if t.len() - body.len() > 1 {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    if ["inf", "infinity", "nan"].contains(&lower.as_str()) {
        let neg = t.starts_with('-');
        return Some(match (lower.as_str(), neg) {
            ("nan", _) => f64::NAN,
            (_, true) => f64::NEG_INFINITY,
            _ => f64::INFINITY,
        });
    }
    // Underscores only between digits.
    let b = body.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_'
            && !(i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit())
        {
            return None;
        }
        if !(c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'e' | b'E' | b'+' | b'-')) {
            return None;
        }
    }
    t.replace('_', "").parse::<f64>().ok()
}

fn float_value(f: f64) -> Value {
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or_else(|| Value::String(format!("{f}")))
}

/// `_get_value` then `_check_value` for one string.
fn convert(a: &FlagSpec, s: &str) -> Result<Value, ValueError> {
    let v = match a.ty {
        ArgType::Str => Value::String(s.to_string()),
        ArgType::Int => match py_int(s) {
            Some(i) => i64::try_from(i)
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(i.to_string())),
            None => return Err(ValueError::Int(py_repr(s))),
        },
        ArgType::HumanInt => human_readable_int(s).map(|i| {
            i64::try_from(i)
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(i.to_string()))
        })?,
        ArgType::Float => match py_float(s) {
            Some(f) => float_value(f),
            None => return Err(ValueError::Float(py_repr(s))),
        },
        ArgType::Json => {
            serde_json::from_str::<Value>(s).map_err(|_| ValueError::Json(py_repr(s)))?
        }
        ArgType::JsonObject => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => return Err(ValueError::NotJsonObject(a.options[0].clone())),
        },
    };
    if let Some(choices) = &a.choices {
        let shown = match &v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !choices.contains(&shown) {
            let list: Vec<String> = choices.iter().map(|c| py_repr(c)).collect();
            let value = match &v {
                Value::String(s) => py_repr(s),
                other => other.to_string(),
            };
            return Err(ValueError::Choice {
                value,
                choices: list,
            });
        }
    }
    Ok(v)
}

/// How many of the leading values an optional takes (`_match_argument` with the `-`s
/// removed from the pattern, as for every optional).
fn match_count(a: &FlagSpec, avail: usize) -> Result<usize, ValueError> {
    let need = |ok: bool, n: usize, e: ValueError| if ok { Ok(n) } else { Err(e) };
    match a.nargs {
        Nargs::Single => need(avail >= 1, 1, ValueError::ExpectedOne),
        Nargs::Optional => Ok(avail.min(1)),
        Nargs::ZeroOrMore => Ok(avail),
        Nargs::OneOrMore => need(avail >= 1, avail, ValueError::ExpectedAtLeastOne),
        Nargs::Exactly(n) => need(avail >= n, n, ValueError::ExpectedExactly { n }),
    }
}

/// `parser.parse_args(argv)` of SGLang `release`'s server parser.
pub fn parse(r: &ReleaseFlags, argv: &[String]) -> Result<Parsed, ArgError> {
    // Pass 1: classify every word (an ambiguous prefix fails here, before any value).
    let mut words = Vec::with_capacity(argv.len());
    let mut after_dd = false;
    for (i, w) in argv.iter().enumerate() {
        if after_dd {
            words.push(Word::Arg);
        } else if w == "--" {
            words.push(Word::DashDash);
            after_dd = true;
        } else {
            words.push(classify(r, i, w)?);
        }
    }
    let mut values: BTreeMap<String, Value> = BTreeMap::new();
    for a in &r.actions {
        values
            .entry(a.dest.clone())
            .or_insert_with(|| a.default.clone());
    }
    let mut given = Vec::new();
    let mut seen = vec![false; r.actions.len()];
    let mut extras: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match &words[i] {
            Word::Arg | Word::DashDash => {
                // No positionals: stray values are extras (a `--` is dropped).
                if matches!(words[i], Word::Arg) {
                    extras.push(argv[i].clone());
                }
                i += 1;
            }
            Word::Help => {
                return Err(ArgError {
                    message: "--help prints the help and exits: nothing to simulate".into(),
                    index: Some(i),
                    help: true,
                });
            }
            Word::Opt {
                action: None,
                option,
                ..
            } => {
                extras.push(option.clone());
                i += 1;
            }
            Word::Opt {
                action: Some(ai),
                option,
                explicit,
            } => {
                let a = &r.actions[*ai];
                let err = |m: &dyn std::fmt::Display| {
                    ArgError::at(i, format!("argument {}: {m}", name(a)))
                };
                let (args, stop): (Vec<String>, usize) = match explicit {
                    Some(e) => {
                        if matches!(a.nargs, Nargs::Exactly(0)) {
                            return Err(err(&format!("ignored explicit argument {}", py_repr(e))));
                        }
                        match_count(a, 1).map_err(|e| err(&e))?;
                        if matches!(a.nargs, Nargs::Exactly(n) if n > 1) {
                            unreachable!("match_count refused")
                        }
                        (vec![e.clone()], i + 1)
                    }
                    None => {
                        let avail = words[i + 1..]
                            .iter()
                            .take_while(|w| matches!(w, Word::Arg))
                            .count();
                        let n = match_count(a, avail).map_err(|e| err(&e))?;
                        (argv[i + 1..i + 1 + n].to_vec(), i + 1 + n)
                    }
                };
                seen[*ai] = true;
                given.push(Given {
                    dest: a.dest.clone(),
                    option: option.clone(),
                    typed: argv[i].split('=').next().unwrap_or("").to_string(),
                    index: i,
                });
                let single = matches!(a.nargs, Nargs::Single | Nargs::Optional);
                let value = match a.action {
                    Action::StoreTrue => Value::Bool(true),
                    Action::StoreFalse => Value::Bool(false),
                    Action::StoreConst => a.konst.clone(),
                    Action::BooleanOptional => Value::Bool(!option.starts_with("--no-")),
                    Action::Count => {
                        let n = values.get(&a.dest).and_then(Value::as_i64).unwrap_or(0);
                        Value::from(n + 1)
                    }
                    Action::AppendConst => {
                        let mut l = values
                            .get(&a.dest)
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        l.push(a.konst.clone());
                        Value::Array(l)
                    }
                    Action::Store | Action::Append => {
                        let v = if single && args.len() == 1 {
                            convert(a, &args[0]).map_err(|e| err(&e))?
                        } else if args.is_empty() && a.nargs == Nargs::Optional {
                            a.konst.clone()
                        } else {
                            Value::Array(
                                args.iter()
                                    .map(|s| convert(a, s))
                                    .collect::<Result<_, _>>()
                                    .map_err(|e| err(&e))?,
                            )
                        };
                        if a.action == Action::Append {
                            let mut l = values
                                .get(&a.dest)
                                .and_then(Value::as_array)
                                .cloned()
                                .unwrap_or_default();
                            l.push(v);
                            Value::Array(l)
                        } else {
                            v
                        }
                    }
                };
                values.insert(a.dest.clone(), value);
                i = stop;
            }
        }
    }
    let missing: Vec<String> = r
        .actions
        .iter()
        .zip(&seen)
        .filter(|(a, s)| a.required && !**s)
        .map(|(a, _)| name(a))
        .collect();
    if !missing.is_empty() {
        return Err(ArgError {
            message: format!(
                "the following arguments are required: {}",
                missing.join(", ")
            ),
            index: None,
            help: false,
        });
    }
    if !extras.is_empty() {
        let first = argv.iter().position(|w| *w == extras[0]);
        return Err(ArgError {
            message: format!("unrecognized arguments: {}", extras.join(" ")),
            index: first,
            help: false,
        });
    }
    Ok(Parsed { values, given })
}

#[cfg(test)]
mod tests {

    /// `utils/common.py: human_readable_int` of the 0.5.23 wheel (identical in 0.5.14), run
    /// by Python on each value: these are its results and messages.
    #[test]
    fn human_readable_int_as_sglang() {
        for (v, want) in [
            ("32k", 32000),
            ("1.5M", 1_500_000),
            ("2Mi", 2_097_152),
            ("1Ki", 1024),
            ("25.6k", 25600),
            ("1.55k", 1550),
            ("0.0001k", 0),
            (" 64 ", 64),
            ("64\r", 64),
            ("1_000", 1000),
            ("-3", -3),
            ("1T", 1_000_000_000_000),
            ("3Ti", 3_298_534_883_328),
        ] {
            assert_eq!(human_readable_int(v), Ok(want), "{v:?}");
        }
        assert_eq!(
            human_readable_int("1.5Ki").unwrap_err().to_string(),
            "Decimals are not allowed with IEC suffixes like 'Ki'. Use an integer IEC value such as '1Ki', or an SI value such as '1.5K'."
        );
        for v in ["-1k", "1K", "abc", "1e3", "0x10", ""] {
            assert_eq!(
                human_readable_int(v).unwrap_err().to_string(),
                format!(
                    "Invalid integer value: '{v}'. Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). Suffixes are case-sensitive."
                ),
                "{v:?}"
            );
        }
    }

    use super::*;
    use crate::flags::table;

    fn run(rel: &str, cmd: &str) -> Result<Parsed, ArgError> {
        let argv: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
        let rel = crate::wheel::Release::ALL
            .into_iter()
            .find(|r| r.id() == rel)
            .expect("a modelled release");
        parse(table().release(rel), &argv)
    }

    #[test]
    fn prefixes_equals_and_types() {
        let p = run(
            "0.5.23",
            "--model-path m --tp 8 --mem-frac 0.25 --hicache-size=135 --enable-hicache",
        )
        .unwrap();
        assert_eq!(p.values["tp_size"], Value::from(8));
        assert_eq!(p.values["mem_fraction_static"], float_value(0.25));
        assert_eq!(p.values["hicache_size"], Value::from(135));
        assert_eq!(p.values["enable_hierarchical_cache"], Value::Bool(true));
        assert_eq!(p.given[2].option, "--mem-fraction-static");
        assert_eq!(p.given[2].typed, "--mem-frac");
    }

    #[test]
    fn refusals_with_argparse_text() {
        let e = run("0.5.23", "--model-path m --pp 2").unwrap_err();
        assert_eq!(
            e.message,
            "ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size, --pp-async-batch-depth"
        );
        let e = run("0.5.23", "--model-path m --hicache-size 135.5").unwrap_err();
        assert_eq!(
            e.message,
            "argument --hicache-size: invalid int value: '135.5'"
        );
        let e = run("0.5.23", "--model-path m --enable-hierarchical-cache=false").unwrap_err();
        assert_eq!(
            e.message,
            "argument --enable-hierarchical-cache/--enable-hicache: ignored explicit argument 'false'"
        );
        let e = run("0.5.23", "--model-path m --kv-cache-dtype fp8").unwrap_err();
        assert!(
            e.message.starts_with(
                "argument --kv-cache-dtype: invalid choice: 'fp8' (choose from 'auto', 'fp8_e5m2'"
            ),
            "{}",
            e.message
        );
        let e = run("0.5.23", "--model-path m --tp-size").unwrap_err();
        assert_eq!(
            e.message,
            "argument --tp-size/--tensor-parallel-size: expected one argument"
        );
        let e = run("0.5.23", "--model-path m --tp-size 2 4").unwrap_err();
        assert_eq!(e.message, "unrecognized arguments: 4");
        let e = run("0.5.23", "--tp-size 2").unwrap_err();
        assert_eq!(
            e.message,
            "the following arguments are required: --model-path/--model"
        );
        let e = run(
            "0.5.23",
            "--model-path m --hicache-storage-backend moonkake",
        )
        .unwrap_err();
        assert!(
            e.message.contains("invalid choice: 'moonkake'"),
            "{}",
            e.message
        );
    }

    #[test]
    fn python_numbers() {
        assert_eq!(py_int(" 1_000 "), Some(1000));
        assert_eq!(py_int("+08"), Some(8));
        assert_eq!(py_int("1__0"), None);
        assert_eq!(py_int("1.0"), None);
        assert_eq!(py_float("1e3"), Some(1000.0));
        assert_eq!(py_float(".5"), Some(0.5));
        assert_eq!(py_float("5."), Some(5.0));
        assert!(py_float("-Infinity").unwrap().is_infinite());
        assert_eq!(py_float("0x10"), None);
        assert_eq!(py_float("1_0.5"), Some(10.5));
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a"), "'a'");
    }
}
