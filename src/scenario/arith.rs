//! Bash arithmetic expansion, `$(( … ))`, as a launch text uses it (`--tp $((GPUS / 2))`):
//! signed 64-bit integers that wrap as bash's `intmax_t` does, C precedence, and
//! variables read as integers (unset or empty = 0; a value that is itself an expression
//! is evaluated, as bash does, up to a depth limit). Mirrors bash's `expr.c`: the
//! operators `, = ?: || && | ^ & == != < > <= >= << >> + - * / % **`, unary `+ - ! ~`,
//! parentheses, numbers in base 10, `0x` hex, leading-`0` octal and `base#digits`.
//! Not read: assignments (`=`, `+=`, `++`): a launch text never needs them.

use std::collections::BTreeMap;

/// Why bash would refuse a `$(( … ))` expression; the wording is bash's where bash has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArithError {
    #[error("`{0}` is not an arithmetic operator")]
    NotAnOperator(char),
    #[error("`{0}` is not a number bash reads (value too great for base?)")]
    BadNumber(String),
    #[error("invalid arithmetic base in `{0}`")]
    BadBase(String),
    #[error("`?` without `:`")]
    TernaryWithoutColon,
    #[error("division by 0")]
    DivisionByZero,
    #[error("exponent less than 0")]
    NegativeExponent,
    #[error("`++`/`--` (an assignment) cannot be read in a launch text")]
    IncrementDecrement,
    #[error("assigning to `{0}` inside $((…)) cannot be read in a launch text")]
    Assignment(String),
    #[error("`{0}`: expression recursion level exceeded")]
    RecursionTooDeep(String),
    #[error("missing `)`")]
    MissingParen,
    #[error("syntax error: operand expected (error token is \"{0}\")")]
    OperandExpectedAt(String),
    #[error("syntax error: operand expected")]
    OperandExpected,
    #[error("syntax error in expression (error token is \"{0}\")")]
    TrailingToken(String),
}

/// How deep a variable whose value is an expression may recurse (bash's own limit is
/// 1024 levels of `expr` recursion; a launch text needs one or two).
const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Name(String),
    Op(&'static str),
}

const OPS: [&str; 27] = [
    "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "++", "--", "+", "-", "*",
    "/", "%", "<", ">", "&", "|", "^", "!", "~", "?", ":",
];

fn lex(s: &str) -> Result<Vec<Tok>, ArithError> {
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || b[i] == '#' || b[i] == '_' || b[i] == '@')
            {
                i += 1;
            }
            let w: String = b[start..i].iter().collect();
            out.push(Tok::Num(number(&w)?));
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(Tok::Name(b[start..i].iter().collect()));
            continue;
        }
        if c == '(' || c == ')' || c == ',' || c == '=' && b.get(i + 1) != Some(&'=') {
            let op: &'static str = match c {
                '(' => "(",
                ')' => ")",
                ',' => ",",
                _ => "=",
            };
            out.push(Tok::Op(op));
            i += 1;
            continue;
        }
        let rest: String = b[i..b.len().min(i + 2)].iter().collect();
        match OPS.iter().find(|op| rest.starts_with(**op)) {
            Some(op) => {
                out.push(Tok::Op(op));
                i += op.len();
            }
            None => return Err(ArithError::NotAnOperator(c)),
        }
    }
    Ok(out)
}

/// A bash integer constant: `10`, `0x1F`, `017` (octal), `2#101`, `36#z`.
fn number(w: &str) -> Result<i64, ArithError> {
    let bad = || ArithError::BadNumber(w.to_string());
    let (base, digits) = if let Some((b, d)) = w.split_once('#') {
        let b: u32 = b.parse().map_err(|_| bad())?;
        if !(2..=64).contains(&b) {
            return Err(ArithError::BadBase(w.to_string()));
        }
        (b, d.to_string())
    } else if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        (16, h.to_string())
    } else if w.len() > 1 && w.starts_with('0') {
        (8, w[1..].to_string())
    } else {
        (10, w.to_string())
    };
    if digits.is_empty() {
        return Err(bad());
    }
    let mut v: i64 = 0;
    for c in digits.chars() {
        // bash: 0-9, a-z, A-Z, @, _ (letters case-insensitive below base 37)
        let d = match c {
            '0'..='9' => c as u32 - '0' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 10,
            'A'..='Z' if base <= 36 => c as u32 - 'A' as u32 + 10,
            'A'..='Z' => c as u32 - 'A' as u32 + 36,
            '@' => 62,
            '_' => 63,
            _ => return Err(bad()),
        };
        if d >= base {
            return Err(bad());
        }
        v = v.wrapping_mul(base as i64).wrapping_add(d as i64);
    }
    Ok(v)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    i: usize,
    vars: &'a BTreeMap<String, String>,
    depth: usize,
    /// Skip side conditions in an unevaluated branch (`0 && 1/0` is 0 in bash).
    live: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn comma(&mut self) -> Result<i64, ArithError> {
        let mut v = self.ternary()?;
        while self.eat(",") {
            v = self.ternary()?;
        }
        Ok(v)
    }

    fn ternary(&mut self) -> Result<i64, ArithError> {
        let c = self.binary(0)?;
        if !self.eat("?") {
            return Ok(c);
        }
        let live = self.live;
        self.live = live && c != 0;
        let a = self.comma()?;
        if !self.eat(":") {
            return Err(ArithError::TernaryWithoutColon);
        }
        self.live = live && c == 0;
        let b = self.ternary()?;
        self.live = live;
        Ok(if c != 0 { a } else { b })
    }

    /// Binary operators by C precedence (lowest first).
    fn binary(&mut self, level: usize) -> Result<i64, ArithError> {
        const LEVELS: [&[&str]; 10] = [
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<", ">", "<=", ">="],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.power();
        }
        let mut v = self.binary(level + 1)?;
        loop {
            let Some(Tok::Op(op)) = self.peek().cloned() else {
                return Ok(v);
            };
            if !LEVELS[level].contains(&op) {
                return Ok(v);
            }
            self.i += 1;
            let live = self.live;
            if op == "||" {
                self.live = live && v == 0;
            } else if op == "&&" {
                self.live = live && v != 0;
            }
            let r = self.binary(level + 1)?;
            self.live = live;
            v = match op {
                "||" => i64::from(v != 0 || r != 0),
                "&&" => i64::from(v != 0 && r != 0),
                "|" => v | r,
                "^" => v ^ r,
                "&" => v & r,
                "==" => i64::from(v == r),
                "!=" => i64::from(v != r),
                "<" => i64::from(v < r),
                ">" => i64::from(v > r),
                "<=" => i64::from(v <= r),
                ">=" => i64::from(v >= r),
                // bash shifts by the count as given (C's `<<` on intmax_t, count mod 64 on x86)
                "<<" => v.wrapping_shl(r as u32),
                ">>" => v.wrapping_shr(r as u32),
                "+" => v.wrapping_add(r),
                "-" => v.wrapping_sub(r),
                "*" => v.wrapping_mul(r),
                "/" | "%" if r == 0 && self.live => return Err(ArithError::DivisionByZero),
                "/" | "%" if r == 0 => 0,
                "/" => v.wrapping_div(r),
                _ => v.wrapping_rem(r),
            };
        }
    }

    /// `**`, right-associative, above the unary operators of its right operand.
    fn power(&mut self) -> Result<i64, ArithError> {
        let base = self.unary()?;
        if !self.eat("**") {
            return Ok(base);
        }
        let e = self.power()?;
        if e < 0 {
            return if self.live {
                Err(ArithError::NegativeExponent)
            } else {
                Ok(0)
            };
        }
        let mut v: i64 = 1;
        for _ in 0..e.min(64) {
            v = v.wrapping_mul(base);
        }
        // beyond 64 multiplications the value is 0, ±1 or has wrapped: finish exactly
        if e > 64 {
            v = match base {
                0 => 0,
                1 => 1,
                -1 => {
                    if e % 2 == 0 {
                        1
                    } else {
                        -1
                    }
                }
                _ => {
                    let mut x: i64 = 1;
                    let mut b = base;
                    let mut n = e;
                    while n > 0 {
                        if n & 1 == 1 {
                            x = x.wrapping_mul(b);
                        }
                        b = b.wrapping_mul(b);
                        n >>= 1;
                    }
                    x
                }
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<i64, ArithError> {
        if self.eat("++") || self.eat("--") {
            return Err(ArithError::IncrementDecrement);
        }
        if self.eat("-") {
            return Ok(self.unary()?.wrapping_neg());
        }
        if self.eat("+") {
            return self.unary();
        }
        if self.eat("!") {
            return Ok(i64::from(self.unary()? == 0));
        }
        if self.eat("~") {
            return Ok(!self.unary()?);
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<i64, ArithError> {
        match self.peek().cloned() {
            Some(Tok::Num(n)) => {
                self.i += 1;
                Ok(n)
            }
            Some(Tok::Name(name)) => {
                self.i += 1;
                if matches!(self.peek(), Some(Tok::Op("=" | "+=" | "-=" | "++" | "--"))) {
                    return Err(ArithError::Assignment(name));
                }
                let v = self.vars.get(&name).map(String::as_str).unwrap_or("");
                if v.trim().is_empty() {
                    return Ok(0);
                }
                if self.depth >= MAX_DEPTH {
                    return Err(ArithError::RecursionTooDeep(name));
                }
                eval_depth(v, self.vars, self.depth + 1)
            }
            Some(Tok::Op("(")) => {
                self.i += 1;
                let v = self.comma()?;
                if !self.eat(")") {
                    return Err(ArithError::MissingParen);
                }
                Ok(v)
            }
            Some(Tok::Op(op)) => Err(ArithError::OperandExpectedAt(op.to_string())),
            None => Err(ArithError::OperandExpected),
        }
    }
}

fn eval_depth(
    expr: &str,
    vars: &BTreeMap<String, String>,
    depth: usize,
) -> Result<i64, ArithError> {
    let toks = lex(expr)?;
    if toks.is_empty() {
        return Ok(0);
    }
    let mut p = Parser {
        toks,
        i: 0,
        vars,
        depth,
        live: true,
    };
    let v = p.comma()?;
    match p.peek() {
        None => Ok(v),
        Some(t) => Err(ArithError::TrailingToken(match t {
            Tok::Num(n) => n.to_string(),
            Tok::Name(n) => n.clone(),
            Tok::Op(o) => o.to_string(),
        })),
    }
}

/// Evaluates `expr` (the text between `$((` and `))`, its `$NAME`s already expanded) as
/// bash does; `vars` are the text's variables. An empty expression is 0.
pub fn eval(expr: &str, vars: &BTreeMap<String, String>) -> Result<i64, ArithError> {
    eval_depth(expr, vars, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(e: &str) -> Result<i64, ArithError> {
        let vars: BTreeMap<String, String> = [("GPUS", "8"), ("E", ""), ("X", "GPUS / 2")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        eval(e, &vars)
    }

    /// Values bash 5.2 prints for `echo $(( … ))` (checked by hand with bash).
    #[test]
    fn bash_values() {
        for (e, v) in [
            ("2*4", 8),
            (" 16 / 2 ", 8),
            ("GPUS / 2", 4),
            ("7 % 4 + 1", 4),
            ("(1 + 1) << 1", 4),
            ("-9 / 2 + 6", 2), // truncation toward zero: -4 + 6
            ("-9 % 4", -1),
            ("2 ** 3 ** 2", 512), // right-associative
            ("-2 ** 2", 4),       // unary minus binds tighter than **
            ("E + 3", 3),         // empty is 0
            ("UNSET * 5 + 1", 1), // unset is 0
            ("X + 1", 5),         // a variable holding an expression is evaluated
            ("0x10 + 010 + 2#11", 27),
            ("1 < 2 && 3 > 4 || 5", 1),
            ("1 ? 2 : 3", 2),
            ("0 && 1 / 0", 0), // the unevaluated branch does not divide
            ("~0", -1),
            ("!5", 0),
            ("1, 2, 3", 3),
            ("9223372036854775807 + 1", i64::MIN),
            ("", 0),
        ] {
            assert_eq!(ev(e), Ok(v), "$(( {e} ))");
        }
        assert_eq!(ev("1 / 0"), Err(ArithError::DivisionByZero));
        assert_eq!(ev("1 / 0").unwrap_err().to_string(), "division by 0");
        assert!(ev("2 ** -1").is_err());
        assert!(ev("08").is_err()); // octal digit 8
        assert_eq!(ev("GPUS = 3"), Err(ArithError::Assignment("GPUS".into())));
        assert!(ev("(1 + 2").is_err());
    }
}
