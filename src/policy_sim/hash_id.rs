//! Trace hash ids as SGLang's policy simulator sees them: a JSON int or a JSON string
//! (`HashId = int | str` in `benchmark/hicache/hicache_policy_simulator.py`), compared by
//! value as Python dict keys, and ordered in the eviction heaps by their Python `repr`.

use std::fmt::Write as _;

/// One trace block id. `Int(1)` and `Str("1")` are different keys, as in Python.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HashId {
    Int(i128),
    Str(Box<str>),
}

impl From<u64> for HashId {
    fn from(v: u64) -> Self {
        HashId::Int(v as i128)
    }
}

impl From<i64> for HashId {
    fn from(v: i64) -> Self {
        HashId::Int(v as i128)
    }
}

impl From<&str> for HashId {
    fn from(v: &str) -> Self {
        HashId::Str(v.into())
    }
}

impl HashId {
    /// Python's `repr(block)`: `10` for an int, `'abc'` for a str. The heaps compare
    /// these strings, so `"10" < "9"` and every str (`'…` or `"…`) sorts after every
    /// non-negative int except that `-` (0x2D) sorts before digits and quotes
    /// (0x22, 0x27) sort before `-`, exactly as Python compares the repr strings.
    pub fn repr(&self) -> String {
        match self {
            HashId::Int(v) => v.to_string(),
            HashId::Str(s) => py_str_repr(s),
        }
    }
}

/// CPython's `str.__repr__` (Objects/unicodeobject.c `unicode_repr`): single quotes
/// unless the text holds a `'` and no `"`; `\\`, the quote, `\t`, `\n`, `\r` escaped;
/// other ASCII control characters and DEL as `\xNN`. Non-ASCII characters are kept
/// as they are (CPython escapes non-printable non-ASCII too; trace ids never hold them).
fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reprs_match_python() {
        assert_eq!(HashId::Int(10).repr(), "10");
        assert_eq!(HashId::Int(-3).repr(), "-3");
        assert_eq!(HashId::from("ab").repr(), "'ab'");
        assert_eq!(HashId::from("it's").repr(), "\"it's\"");
        assert_eq!(HashId::from("a'b\"").repr(), "'a\\'b\"'");
        assert_eq!(HashId::from("x\ny").repr(), "'x\\ny'");
        // the heap order the tool relies on: "10" < "9"
        assert!(HashId::Int(10).repr() < HashId::Int(9).repr());
    }
}
