//! A `config.json` whose numbers are of the wrong type or out of any model's range is an
//! error naming the file and the key (exit 2), never a default or a wrapped integer; a
//! quantisation method SGLang loads but whose weights are not modelled makes the answer
//! `unverified`; one SGLang does not know is SGLang's own start-up error. The base is
//! the catalogue's Llama-3.1-8B (32 layers, 8 of 32 KV heads × 128, 131,072 B a token).

use std::path::Path;

use serde_json::Value;

use crate::support::{exit2, sim, succeeded};

fn llama() -> Value {
    let c: Value = serde_json::from_str(include_str!("../../src/model/catalogue.json")).unwrap();
    c["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["hf_id"] == "meta-llama/Meta-Llama-3.1-8B")
        .unwrap()["config"]
        .clone()
}

/// A scenario on one H100 with `config` as its model's config.json; returns its path.
fn scenario(dir: &Path, name: &str, config: &Value) -> String {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("config.json"), config.to_string()).unwrap();
    let s = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &s,
        format!(
            "name: \"{name}\"\nnode: hgx-h100\nmodel: {{config: {}}}\nserver: {{tp_size: 1}}\n",
            d.join("config.json").display()
        ),
    )
    .unwrap();
    s.display().to_string()
}

fn mutant(key: &str, v: Value) -> Value {
    let mut c = llama();
    c[key] = v;
    c
}

#[test]
fn wrong_types_and_ranges_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Value, &str); 7] = [
        // A string read as absent gave num_attention_heads (32): 4× the KV bytes.
        ("num_key_value_heads", Value::from("8"), "found \"8\""),
        ("num_key_value_heads", Value::from(-1), "found -1"),
        // Read as absent, the weights fell from 7.88 to 0.25 GiB a rank.
        ("hidden_size", Value::from("abc"), "found \"abc\""),
        // 2^32 wrapped to 0 layers; 2^32 − 1 ran the per-layer scans for minutes.
        (
            "num_hidden_layers",
            Value::from(1u64 << 32),
            "found 4294967296",
        ),
        (
            "num_hidden_layers",
            Value::from(u32::MAX),
            "from 1 to 10000",
        ),
        // 0 B a token, and a plan that recommended a pool of it.
        ("head_dim", Value::from(0), "found 0"),
        ("vocab_size", Value::from(1.5), "found 1.5"),
    ];
    for (i, (key, v, words)) in cases.into_iter().enumerate() {
        let s = scenario(dir.path(), &format!("m{i}"), &mutant(key, v));
        let o = sim().args(["startup", &s]).output().unwrap();
        exit2(
            &o,
            &[&format!("m{i}/config.json"), &format!("`{key}`"), words],
        );
    }
}

/// `null` is absent, as transformers' `LlamaConfig` takes it (`num_key_value_heads =
/// num_attention_heads`) and SGLang's `getattr(config, k, None)` then reads: MHA, 32
/// heads × 128 × 2 (K, V) × 2 B × 32 layers = 524,288 B a token.
#[test]
fn null_is_absent_as_transformers_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), "n", &mutant("num_key_value_heads", Value::Null));
    let o = sim()
        .args(["startup", &s, "--format", "json"])
        .output()
        .unwrap();
    succeeded(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["host_pools"][0]["bytes_per_token"], 524_288,
        "{}",
        v["host_pools"]
    );
}

#[test]
fn a_quantisation_method_not_modelled_is_unverified_and_an_unknown_one_is_sglang_s_error() {
    let dir = tempfile::tempdir().unwrap();
    let bnb = mutant(
        "quantization_config",
        serde_json::json!({"quant_method": "bitsandbytes"}),
    );
    let s = scenario(dir.path(), "bnb", &bnb);
    let o = sim()
        .args(["startup", &s, "--format", "json"])
        .output()
        .unwrap();
    succeeded(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "unverified");
    assert!(
        v["unverified"][0]
            .as_str()
            .unwrap()
            .starts_with("quantization method `bitsandbytes`: read from config.json quantization_config: SGLang loads it"),
        "{}",
        v["unverified"]
    );
    let o = sim().args(["check", &s]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("unverified"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let bogus = mutant(
        "quantization_config",
        serde_json::json!({"quant_method": "bogus"}),
    );
    let s = scenario(dir.path(), "bogus", &bogus);
    let o = sim().args(["startup", &s]).output().unwrap();
    exit2(
        &o,
        &[
            "bogus/config.json",
            "SGLang refuses this checkpoint at start-up: \"Unknown quantization method: bogus. Must be one of ['fp8',",
        ],
    );
}
