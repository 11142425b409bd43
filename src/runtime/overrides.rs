//! A replay config with a scenario's `runtime.replay` keys applied: what the pipeline
//! replays, and what the scenario loader checks each key and its type against before
//! any trace is read.

use serde_json::{Map, Value};

use super::config::ReplayConfig;
use crate::error::InputError;

/// `cfg` as a value with every key, those left out of the serialized config while
/// they hold their default (`compute`, `storage_backend`, `storage_latency`,
/// `decode_timeline`, `decode_memory`, `schedule_conservativeness`, `schedule_policy`,
/// `max_new_tokens`, `ignore_eos`, `host_read_share`, `load_back_kernel`,
/// `tokenize_per_token`, `request_overhead`: outputs made before them keep their bytes)
/// included: what a
/// scenario's `runtime.replay` keys and a sweep's `runtime.replay.*` axes are checked
/// against.
pub fn full_value(cfg: &ReplayConfig) -> Value {
    let mut v = serde_json::to_value(cfg).expect("config serializes");
    let o = v.as_object_mut().expect("config serializes to a map");
    o.entry("compute").or_insert_with(|| {
        serde_json::to_value(super::cost::Compute::default()).expect("serializes")
    });
    o.entry("storage_backend").or_insert(Value::Null);
    o.entry("dp_ranks")
        .or_insert(Value::from(cfg.capacities.dp_ranks));
    o.entry("l3_scope")
        .or_insert_with(|| Value::from(cfg.capacities.l3_scope.id()));
    o.entry("nodes")
        .or_insert(Value::from(cfg.capacities.nodes));
    o.entry("host_read_share").or_insert(Value::Null);
    o.entry("load_back_kernel").or_insert(Value::Null);
    o.entry("storage_latency")
        .or_insert_with(|| Value::from(format!("{}ns", cfg.links.storage_latency.0)));
    o.entry("decode_timeline")
        .or_insert_with(|| Value::from("beside_prefill"));
    o.entry("decode_memory")
        .or_insert_with(|| Value::from("sglang"));
    o.entry("schedule_conservativeness")
        .or_insert(Value::from(cfg.scheduler.schedule_conservativeness));
    o.entry("schedule_policy")
        .or_insert_with(|| Value::from("fcfs"));
    o.entry("max_new_tokens").or_insert(Value::Null);
    o.entry("ignore_eos")
        .or_insert(Value::from(cfg.scheduler.ignore_eos));
    o.entry("tokenize_per_token")
        .or_insert_with(|| Value::from(format!("{}ns", cfg.frontend.tokenize_per_token.0)));
    o.entry("request_overhead")
        .or_insert_with(|| Value::from(format!("{}ns", cfg.frontend.request_overhead.0)));
    v
}

/// Sets `key` to `val` in `o`: a map merges into the map already there, key by key
/// (`compute: {source: …}` keeps the derived `compute.chunked_prefill_size`), except a
/// tagged choice (a map with a `kind`, like `compute.source`), which replaces it whole.
fn merge_into(o: &mut Map<String, Value>, key: &str, val: Value) {
    match (o.get_mut(key), val) {
        (Some(Value::Object(dst)), Value::Object(src)) if !src.contains_key("kind") => {
            for (k, v) in src {
                merge_into(dst, &k, v);
            }
        }
        (_, val) => {
            o.insert(key.to_string(), val);
        }
    }
}

/// `cfg` with `overrides` (`runtime.replay` keys: field name → value) applied field by
/// field; an unknown field is an error naming the nearest real one.
pub fn apply_overrides(
    cfg: ReplayConfig,
    overrides: &Map<String, Value>,
) -> Result<ReplayConfig, InputError> {
    if overrides.is_empty() {
        // Nothing to merge: the typed config as built, held to the same checks a
        // deserialized one meets (the eviction policies the tree models, then `validate`).
        super::config::modelled(cfg.policy.eviction_policy).map_err(|m| {
            InputError::new("runtime.replay", m.to_string()).field("runtime.replay.eviction_policy")
        })?;
        cfg.validate()
            .map_err(|e| InputError::new("runtime.replay", e.to_string()))?;
        return Ok(cfg);
    }
    let mut v = full_value(&cfg);
    let o = v.as_object_mut().expect("config serializes to a map");
    for (k, val) in overrides {
        if !o.contains_key(k) {
            let hint = crate::error::nearest(k, o.keys().map(String::as_str))
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err(
                InputError::new("runtime.replay", format!("unknown key `{k}`{hint}"))
                    .field(format!("runtime.replay.{k}")),
            );
        }
        // YAML 1.1 reads a bare `timing: off` as a boolean.
        let val = match (k.as_str(), val) {
            ("timing", Value::Bool(b)) => Value::String(if *b { "on" } else { "off" }.into()),
            _ => val.clone(),
        };
        merge_into(o, k, val);
    }
    // A storage backend preset fills the storage figures the overrides do not set.
    if let Some(name) = overrides.get("storage_backend").and_then(Value::as_str) {
        let b = super::storage_backend::find(name).map_err(|m| {
            InputError::new("runtime.replay", m.to_string()).field("runtime.replay.storage_backend")
        })?;
        for (k, val) in super::storage_backend::fields(super::storage_backend::preset(b)) {
            if !overrides.contains_key(k) {
                o.insert(k.to_string(), val);
            }
        }
    }
    let release_offset = cfg.scheduler.running_offset;
    let mut cfg: ReplayConfig = serde_path_to_error::deserialize(v).map_err(|e| {
        let f = format!("runtime.replay.{}", e.path());
        InputError::new("runtime.replay", e.into_inner().to_string()).field(f)
    })?;
    // The release's rule, not a key of the text form: kept across the merge.
    cfg.scheduler.running_offset = release_offset;
    cfg.validate()
        .map_err(|e| InputError::new("runtime.replay", e.to_string()))?;
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map merges key by key (the derived chunk stays); a tagged choice (`kind`)
    /// replaces the old one whole (no field of the old source survives).
    #[test]
    fn maps_merge_and_tagged_choices_replace() {
        let mut cfg = ReplayConfig::default();
        cfg.scheduler.compute.chunked_prefill_size = 8192;
        let o: Map<String, Value> = serde_json::from_str(
            r#"{"compute": {"source": {"kind": "fixed"}, "compute_scale": 2.0}}"#,
        )
        .unwrap();
        let c = apply_overrides(cfg, &o).unwrap();
        assert_eq!(c.scheduler.compute.chunked_prefill_size, 8192);
        assert_eq!(c.scheduler.compute.compute_scale, 2.0);
        let mut dst: Map<String, Value> =
            serde_json::from_str(r#"{"source": {"kind": "table", "node": "gb300"}, "x": 1}"#)
                .unwrap();
        merge_into(&mut dst, "source", serde_json::json!({"kind": "fixed"}));
        assert_eq!(dst["source"], serde_json::json!({"kind": "fixed"}));
        assert_eq!(dst["x"], 1);
    }
}
