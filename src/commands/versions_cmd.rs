//! `hicache-sim versions`.

use serde::Serialize;

use super::{CmdResult, OutputFormat};
use crate::sizing::SglangVersion;

#[derive(Serialize)]
struct VersionOut {
    id: &'static str,
    summary: &'static str,
    rules: crate::sizing::Rules,
}

pub fn versions(format: OutputFormat) -> CmdResult {
    match format {
        OutputFormat::Text => {
            for v in SglangVersion::ALL {
                println!("{:<24} {}", v.id(), v.summary());
            }
        }
        OutputFormat::Json => {
            let all: Vec<VersionOut> = SglangVersion::ALL
                .iter()
                .map(|v| VersionOut {
                    id: v.id(),
                    summary: v.summary(),
                    rules: v.rules(),
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&all).expect("plain data serializes")
            );
        }
    }
    Ok(0)
}
