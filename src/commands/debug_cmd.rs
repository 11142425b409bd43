//! `hicache-sim debug-sizing` (hidden): the simulator's side of the differential test
//! against SGLang's own sizing code (`tests/sglang_diff/`). Reads memory states as JSON
//! lines, prints one result line per state (`release::diff`).

use super::CmdResult;
use crate::error::InputError;
use crate::release::{Sglang, diff};

pub fn debug_sizing(states: &str, sglang: &str) -> CmdResult {
    let v = Sglang::from_id(sglang).map_err(|e| InputError::new("--sglang", e.to_string()))?;
    let text = std::fs::read_to_string(states)
        .map_err(|e| InputError::new(states, format!("cannot read: {e}")))?;
    let out = diff::run_lines(&text, v)
        .map_err(|(line, m)| InputError::new(states, m).line_opt(Some(line)))?;
    print!("{out}");
    Ok(0)
}
