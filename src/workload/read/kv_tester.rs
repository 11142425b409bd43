//! kv-cache-tester traces (callanjfox/kv-cache-tester, `traces/trace_*.json`): one JSON
//! document per conversation, `block_size` (64), and `requests: [{t, type, in, out,
//! hash_ids, …}]` with `t` in seconds and hash ids local to the file. These files are
//! small (one conversation), so the document is parsed whole and then streamed.
//! `hash_ids` lists the whole blocks only (`in / block_size` entries).

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::BlockRecord;
use super::rows::{RowError, json_row_error, to_ns};
use crate::units::NS_PER_S;

/// Top level. Accepted and ignored: `id`, `models`, `hash_id_scope`, `tool_tokens`,
/// `system_tokens`, `totals`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct KvTesterDoc {
    #[serde(default)]
    id: Option<IgnoredAny>,
    #[serde(default)]
    models: Option<IgnoredAny>,
    pub block_size: u32,
    #[serde(default)]
    hash_id_scope: Option<IgnoredAny>,
    #[serde(default)]
    tool_tokens: Option<IgnoredAny>,
    #[serde(default)]
    system_tokens: Option<IgnoredAny>,
    pub requests: Vec<KvTesterRequest>,
    #[serde(default)]
    totals: Option<IgnoredAny>,
}

/// One request. Used: `t`, `in`, `out`, `hash_ids`. Accepted and ignored: `type`,
/// `model`, `input_types`, `output_types`, `stop`, `api_time`, `think_time`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct KvTesterRequest {
    t: serde_json::Number,
    #[serde(default, rename = "type")]
    kind: Option<IgnoredAny>,
    #[serde(default)]
    model: Option<IgnoredAny>,
    #[serde(rename = "in")]
    input: u32,
    #[serde(rename = "out")]
    output: u32,
    hash_ids: Vec<u64>,
    #[serde(default)]
    input_types: Option<IgnoredAny>,
    #[serde(default)]
    output_types: Option<IgnoredAny>,
    #[serde(default)]
    stop: Option<IgnoredAny>,
    #[serde(default)]
    api_time: Option<IgnoredAny>,
    #[serde(default)]
    think_time: Option<IgnoredAny>,
}

/// Parse the whole document; errors carry serde's line.
pub(crate) fn parse_doc(text: &str) -> Result<KvTesterDoc, (usize, RowError)> {
    serde_json::from_str(text).map_err(|e| (e.line(), json_row_error(&e)))
}

pub(crate) fn to_record(r: KvTesterRequest, rec: &mut BlockRecord) -> Result<(), RowError> {
    rec.arrival_ns = to_ns(&r.t, NS_PER_S, "t")?;
    rec.input_tokens = r.input;
    rec.output_tokens = r.output;
    rec.block_hashes = r.hash_ids;
    Ok(())
}
