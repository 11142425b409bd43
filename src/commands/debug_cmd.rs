//! `hicache-sim debug-sizing` (hidden): the simulator's side of the differential test
//! against SGLang's own sizing code (`tests/sglang_diff/`). Reads memory states as JSON
//! lines, prints one result line per state (`release::diff`).

use super::CmdResult;
use crate::error::InputError;
use crate::release::{Sglang, diff};

pub fn debug_sizing(states: &str, v: Sglang) -> CmdResult {
    let text =
        crate::input::read_to_string(std::path::Path::new(states), crate::input::DOCUMENT_CAP)
            .map_err(|e| InputError::new(states, format!("cannot read: {e}")))?;
    let out = diff::run_lines(&text, v)
        .map_err(|(line, m)| InputError::new(states, m).line_opt(Some(line)))?;
    print!("{out}");
    Ok(0)
}

/// `hicache-sim debug-split` (hidden): `--hicache-size` split between host pools
/// (`pools::split_hicache_size`, `pools::host_pool_counts`) for the differential test
/// against the wheel's own `hybrid_pool_assembler.py: _split_hicache_size`. Each input
/// line: `{"id": N, "hicache_size": GB, "pools": [{"device_bytes": B, "bytes_per_unit":
/// B, "page_size": P}, …]}`; each output line: `{"id": N, "shares": [...], "sizes":
/// [...]}`.
pub fn debug_split(cases: &str, v: Sglang) -> CmdResult {
    use crate::pools::{HostPoolSpec, HostSizing, PoolUnit, host_pool_counts, split_hicache_size};
    use crate::release::HicacheSizeSplit;
    use crate::sizing::HostPoolSizeArg;
    #[derive(serde::Deserialize)]
    struct Pool {
        device_bytes: u64,
        bytes_per_unit: u64,
        page_size: u64,
    }
    #[derive(serde::Deserialize)]
    struct Case {
        id: u64,
        hicache_size: u64,
        pools: Vec<Pool>,
    }
    let split = v.release_rules().pools.hicache_size_split;
    let text =
        crate::input::read_to_string(std::path::Path::new(cases), crate::input::DOCUMENT_CAP)
            .map_err(|e| InputError::new(cases, format!("cannot read: {e}")))?;
    let mut out = String::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let c: Case = serde_json::from_str(line).map_err(|e| {
            InputError::new(cases, format!("expected a split case: {e}")).line_opt(Some(i + 1))
        })?;
        let bytes: Vec<u64> = c.pools.iter().map(|p| p.device_bytes).collect();
        let shares = match split {
            HicacheSizeSplit::ByDeviceBytes => split_hicache_size(c.hicache_size as f64, &bytes),
            HicacheSizeSplit::WholeSizeEachPool => vec![c.hicache_size as f64; bytes.len()],
        };
        let specs: Vec<HostPoolSpec> = c
            .pools
            .iter()
            .map(|p| HostPoolSpec {
                name: "kv",
                unit: PoolUnit::Tokens,
                bytes_per_unit: p.bytes_per_unit,
                device_capacity: 0,
                page_size: p.page_size,
                device_bytes: p.device_bytes,
                sizing: HostSizing::Own,
            })
            .collect();
        let sizes = host_pool_counts(
            &specs,
            HostPoolSizeArg::SizeGb(c.hicache_size as f64),
            split,
        );
        out.push_str(
            &serde_json::json!({"id": c.id, "shares": shares, "sizes": sizes}).to_string(),
        );
        out.push('\n');
    }
    print!("{out}");
    Ok(0)
}
