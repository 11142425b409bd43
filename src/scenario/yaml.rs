//! YAML text to a value tree, an error naming its line (the loader, the launch-file
//! reader and `capture`'s self-check share it).

use serde_json::Value;

use crate::error::InputError;

/// Parses YAML text into a value tree; syntax errors carry the line.
pub fn parse_yaml_value(text: &str, source: &str) -> Result<Value, InputError> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        let line = e.location().map(|l| l.line() as usize);
        let msg = e.to_string();
        let first = msg
            .lines()
            .next()
            .unwrap_or("invalid YAML")
            .trim_start_matches("error: ")
            .to_string();
        InputError::new(source, format!("invalid YAML: {first}")).line_opt(line)
    })
}
