//! A checkpoint's weight quantisation, read the way SGLang reads it
//! (`configs/model_config.py: _parse_quant_hf_config`, `_parse_modelopt_quant_config`),
//! or from a checkpoint name's suffix (`-FP8`, `-NVFP4`, `-AWQ`, `-GPTQ-Int4`, …).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::Choice;

crate::domain::choices::sglang_choice! {
    /// A checkpoint's weight format as a model preset's `checkpoint:` sizes, a scenario's
    /// `startup.weight_load.quantization` and a cost table's `quant` name it: the format
    /// of the loaded weights, one key for the SGLang methods that load alike (`fp8` for
    /// block-scaled and per-tensor FP8, `int4` for AWQ / GPTQ-Int4 / compressed-tensors
    /// pack-quantized). Declared in the keys' alphabetical order, so a `BTreeMap` keyed
    /// by it lists them as it did when they were text.
    pub enum CheckpointQuant {
        Bf16 = "bf16",
        Fp8 = "fp8",
        Int4 = "int4",
        Int8 = "int8",
        Mxfp4 = "mxfp4",
        Mxfp8 = "mxfp8",
        Nvfp4 = "nvfp4",
        W4aFp8 = "w4afp8",
    }
    choices = [Bf16, Fp8, Int4, Int8, Mxfp4, Mxfp8, Nvfp4, W4aFp8];
}

/// The quantisation method SGLang picks for a checkpoint, with what the simulator needs
/// of it: which modules stay unquantised and whether `--kv-cache-dtype auto` means FP8.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quantization {
    /// SGLang's method name (`fp8`, `modelopt_fp4`, `modelopt_fp8`, `modelopt_mixed`,
    /// `w4afp8`, `mxfp4`, `mxfp8`, `awq`, `gptq`, `compressed-tensors`, …); `None` for an
    /// unquantised (bf16/fp16) checkpoint.
    pub method: Option<String>,
    pub format: WeightFormat,
    /// Module name patterns kept unquantised (`exclude_modules`, `ignore`,
    /// `modules_to_not_convert`): ModelOpt globs, compressed-tensors `re:` regexes.
    pub exclude: Vec<String>,
    /// The quant config declares an FP8 KV cache (`kv_cache_quant_algo: FP8`): with
    /// `--kv-cache-dtype auto` SGLang stores KV as fp8 (`mem_cache/kv_cache_dtype.py:
    /// configure_kv_cache_dtype`).
    pub kv_cache_fp8: bool,
    /// Where the quantisation was read from (`config.json quantization_config`,
    /// `hf_quant_config.json`, `name suffix -AWQ`).
    pub source: String,
}

/// Bits per weight of the quantised Linear layers (scales included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightFormat {
    /// No quantisation: the model dtype (2 bytes).
    Bf16,
    /// FP8 weights, 128×128 block scales in fp32 (`fp8`, DeepSeek / Qwen FP8).
    Fp8Block,
    /// FP8 weights, one fp32 scale per tensor (ModelOpt FP8, compressed-tensors FP8).
    Fp8PerTensor,
    /// NVFP4: 4-bit values, one fp8 scale per 16 (ModelOpt FP4).
    Nvfp4,
    /// MXFP4: 4-bit values, one e8m0 scale per 32 (gpt-oss experts).
    Mxfp4,
    /// MXFP8: 8-bit values, one e8m0 scale per 32.
    Mxfp8,
    /// 4-bit integers with an fp16 scale (and a 4-bit zero point) per group (AWQ, GPTQ,
    /// compressed-tensors pack-quantized).
    Int4 { group_size: u32 },
    /// 8-bit integers with an fp16 scale per group (GPTQ-Int8).
    Int8 { group_size: u32 },
    /// W4AFP8: int4 routed experts, FP8 elsewhere.
    W4aFp8,
}

impl WeightFormat {
    /// Bytes of `n` weights of a quantised Linear layer (`n` a multiple of the groups;
    /// scales rounded up).
    pub fn bytes(self, n: u64) -> u64 {
        match self {
            WeightFormat::Bf16 => 2 * n,
            // 1 B per weight + one fp32 per 128×128 block.
            WeightFormat::Fp8Block => n + n.div_ceil(128 * 128) * 4,
            WeightFormat::Fp8PerTensor => n,
            // 0.5 B per weight + 1 B fp8 scale per 16.
            WeightFormat::Nvfp4 => n.div_ceil(2) + n.div_ceil(16),
            // 0.5 B per weight + 1 B e8m0 scale per 32.
            WeightFormat::Mxfp4 => n.div_ceil(2) + n.div_ceil(32),
            WeightFormat::Mxfp8 => n + n.div_ceil(32),
            // 0.5 B + per group a 2 B scale and a 0.5 B zero point.
            WeightFormat::Int4 { group_size } => {
                let g = n.div_ceil(group_size.max(1) as u64);
                n.div_ceil(2) + g * 2 + g.div_ceil(2)
            }
            WeightFormat::Int8 { group_size } => n + n.div_ceil(group_size.max(1) as u64) * 2,
            // Counted per part by the caller (experts int4, the rest fp8); alone: fp8.
            WeightFormat::W4aFp8 => n,
        }
    }

    /// The checkpoint key of the model presets (`bf16`, `fp8`, `nvfp4`, `mxfp4`, `int4`,
    /// `int8`, `w4afp8`, `mxfp8`).
    pub fn key(self) -> CheckpointQuant {
        match self {
            WeightFormat::Bf16 => CheckpointQuant::Bf16,
            WeightFormat::Fp8Block | WeightFormat::Fp8PerTensor => CheckpointQuant::Fp8,
            WeightFormat::Nvfp4 => CheckpointQuant::Nvfp4,
            WeightFormat::Mxfp4 => CheckpointQuant::Mxfp4,
            WeightFormat::Mxfp8 => CheckpointQuant::Mxfp8,
            WeightFormat::Int4 { .. } => CheckpointQuant::Int4,
            WeightFormat::Int8 { .. } => CheckpointQuant::Int8,
            WeightFormat::W4aFp8 => CheckpointQuant::W4aFp8,
        }
    }
}

/// The quantisation methods whose weight bytes this simulator models (the formats of
/// [`WeightFormat`] that [`read_quantization`] maps them to).
const MODELLED_METHODS: &[&str] = &[
    "fp8",
    "mxfp4",
    "quark_mxfp4",
    "mxfp8",
    "w4afp8",
    "awq",
    "awq_marlin",
    "gptq",
    "gptq_marlin",
    "compressed-tensors",
    "modelopt",
    "modelopt_fp4",
    "modelopt_fp8",
    "modelopt_mixed",
];

/// `layers/quantization/__init__.py: QUANTIZATION_METHODS` of 0.5.23 on CUDA
/// (`BASE_QUANTIZATION_METHODS` plus the `mxfp4` and `gptq` entries added beside it;
/// 0.5.18's list is the same but for `minimax_m3_nvfp4`): what
/// `configs/model_config.py: ModelConfig._verify_quantization` accepts. Any other method
/// is SGLang's `ValueError("Unknown quantization method: …")`.
pub const SGLANG_METHODS: &[&str] = &[
    "fp8",
    "mxfp8",
    "minimax_m3_nvfp4",
    "blockwise_int8",
    "modelopt",
    "modelopt_fp8",
    "modelopt_fp4",
    "nvfp4_online",
    "modelopt_mixed",
    "w8a8_int8",
    "w8a8_fp8",
    "awq",
    "awq_marlin",
    "bitsandbytes",
    "gguf",
    "gptq",
    "gptq_marlin",
    "moe_wna16",
    "compressed-tensors",
    "w4afp8",
    "petit_nvfp4",
    "quark",
    "quark_mxfp4",
    "auto-round",
    "auto-round-int8",
    "modelslim",
    "quark_int4fp8_moe",
    "humming",
    "mxfp_w4a8",
    "mxfp4",
];

/// What the simulator can say about a checkpoint's quantisation method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MethodStatus {
    /// Unquantised, or a method whose weight bytes are modelled.
    Modelled,
    /// SGLang loads it, but its weight bytes are not modelled (counted as the model
    /// dtype's): answers are `unverified`.
    NotModelled(String),
    /// SGLang refuses it at start-up.
    UnknownToSglang(String),
}

impl Quantization {
    /// Whether this method's weights are modelled, and if not, whether SGLang loads it.
    pub fn method_status(&self) -> MethodStatus {
        match self.method.as_deref() {
            None => MethodStatus::Modelled,
            Some(m) if MODELLED_METHODS.contains(&m) => MethodStatus::Modelled,
            Some(m) if SGLANG_METHODS.contains(&m) => MethodStatus::NotModelled(m.to_string()),
            Some(m) => MethodStatus::UnknownToSglang(m.to_string()),
        }
    }

    pub fn none() -> Self {
        Quantization {
            method: None,
            format: WeightFormat::Bf16,
            exclude: Vec::new(),
            kv_cache_fp8: false,
            source: "config.json (no quantization_config)".into(),
        }
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `unwrap_modelopt_quantization_config`: the nested `{"quantization": {...}}` of an
/// `hf_quant_config.json`, or the flat dict itself.
fn modelopt_section(v: &Value) -> &Value {
    match v.get("quantization") {
        Some(q) if q.is_object() => q,
        _ => v,
    }
}

/// `_parse_modelopt_quant_config`: `MIXED_PRECISION` → `modelopt_mixed` when any
/// per-layer algo is NVFP4 (else `w4afp8`); an algo containing FP4 → `modelopt_fp4`;
/// `FP8` → `modelopt_fp8`; `MXFP8` → `mxfp8`.
///
/// The KV cache and the unquantised modules as the ModelOpt configs read them
/// (`layers/quantization/modelopt_quant.py: ModelOptFp4Config.from_config`,
/// `ModelOptMixedPrecisionConfig.from_config`, 0.5.21–0.5.23): the flat `config.json`
/// form takes FP8 KV from a `kv_cache_scheme` dict `{type: float, num_bits: 8}` (else
/// `kv_cache_quant_algo`) and the exclusions from `ignore`; the nested
/// `hf_quant_config.json` form from `kv_cache_quant_algo` and `exclude_modules`.
fn modelopt(q: &Value, source: &str) -> Option<Quantization> {
    let flat = q.get("quantization").is_none();
    let q = modelopt_section(q);
    let algo = q.get("quant_algo").and_then(Value::as_str)?;
    let (method, format) = if algo == "MIXED_PRECISION" {
        let nvfp4 = q
            .get("quantized_layers")
            .and_then(Value::as_object)
            .is_some_and(|m| {
                m.values().any(|l| {
                    matches!(
                        l.get("quant_algo")
                            .and_then(Value::as_str)
                            .map(str::to_ascii_uppercase)
                            .as_deref(),
                        Some("NVFP4") | Some("W4A16_NVFP4")
                    )
                })
            });
        if nvfp4 {
            ("modelopt_mixed", WeightFormat::Nvfp4)
        } else {
            ("w4afp8", WeightFormat::W4aFp8)
        }
    } else if algo.contains("FP4") {
        ("modelopt_fp4", WeightFormat::Nvfp4)
    } else if algo == "FP8" {
        ("modelopt_fp8", WeightFormat::Fp8PerTensor)
    } else if algo == "MXFP8" {
        ("mxfp8", WeightFormat::Mxfp8)
    } else {
        return None;
    };
    let kv_algo_fp8 = || {
        q.get("kv_cache_quant_algo")
            .and_then(Value::as_str)
            .is_some_and(|a| a.eq_ignore_ascii_case("FP8"))
    };
    let (exclude, kv_cache_fp8) = if flat {
        let kv = match q.get("kv_cache_scheme") {
            Some(s) if s.is_object() => {
                s.get("type").and_then(Value::as_str) == Some("float")
                    && s.get("num_bits").and_then(Value::as_u64) == Some(8)
            }
            _ => kv_algo_fp8(),
        };
        (strings(q.get("ignore")), kv)
    } else {
        (strings(q.get("exclude_modules")), kv_algo_fp8())
    };
    Some(Quantization {
        method: Some(method.into()),
        format,
        exclude,
        kv_cache_fp8,
        source: source.into(),
    })
}

/// The checkpoint's quantisation: `config.json`'s `quantization_config` (ModelOpt when
/// it has no `quant_method` or `quant_method: modelopt`), else `compression_config`
/// (compressed-tensors), else `hf_quant_config.json` (ModelOpt). Mirrors
/// `configs/model_config.py: _parse_quant_hf_config` (0.5.21–0.5.23).
pub fn read_quantization(config: &Value, hf_quant_config: Option<&Value>) -> Quantization {
    let qc = config
        .get("quantization_config")
        .filter(|v| v.is_object())
        .or_else(|| {
            config
                .get("text_config")
                .and_then(|t| t.get("quantization_config"))
                .filter(|v| v.is_object())
        });
    if let Some(q) = qc {
        let method = q.get("quant_method").and_then(Value::as_str);
        if (method.is_none() || method == Some("modelopt"))
            && let Some(parsed) = modelopt(q, "config.json quantization_config")
        {
            // `model_loader/weight_utils.py: get_quant_config`: a `modelopt_mixed`
            // config.json without the per-layer map or any KV-cache key falls through
            // to hf_quant_config.json.
            let incomplete = parsed.method.as_deref() == Some("modelopt_mixed")
                && (q.get("quantized_layers").is_none()
                    || (q.get("kv_cache_quant_algo").is_none()
                        && q.get("kv_cache_scheme").is_none()));
            if incomplete
                && let Some(h) = hf_quant_config
                && let Some(from_file) = modelopt(h, "hf_quant_config.json")
            {
                return Quantization {
                    method: parsed.method,
                    ..from_file
                };
            }
            return parsed;
        }
        if let Some(m) = method {
            return from_method(m, q, "config.json quantization_config");
        }
        return Quantization::none();
    }
    if let Some(q) = config.get("compression_config").filter(|v| v.is_object()) {
        return from_method("compressed-tensors", q, "config.json compression_config");
    }
    if let Some(h) = hf_quant_config
        && let Some(parsed) = modelopt(h, "hf_quant_config.json")
    {
        return parsed;
    }
    Quantization::none()
}

fn from_method(method: &str, q: &Value, source: &str) -> Quantization {
    let bits = q.get("bits").and_then(Value::as_u64).unwrap_or(4);
    let group = q
        .get("group_size")
        .and_then(Value::as_i64)
        .filter(|&g| g > 0)
        .unwrap_or(128) as u32;
    let (format, exclude) = match method {
        "fp8" => (
            if q.get("weight_block_size").is_some() {
                WeightFormat::Fp8Block
            } else {
                WeightFormat::Fp8PerTensor
            },
            strings(q.get("ignored_layers")),
        ),
        "mxfp4" | "quark_mxfp4" => (
            WeightFormat::Mxfp4,
            strings(q.get("modules_to_not_convert")),
        ),
        "mxfp8" => (
            WeightFormat::Mxfp8,
            strings(q.get("modules_to_not_convert")),
        ),
        "w4afp8" => (WeightFormat::W4aFp8, Vec::new()),
        "awq" | "awq_marlin" => (
            WeightFormat::Int4 { group_size: group },
            strings(q.get("modules_to_not_convert")),
        ),
        "gptq" | "gptq_marlin" => (
            if bits == 8 {
                WeightFormat::Int8 { group_size: group }
            } else {
                WeightFormat::Int4 { group_size: group }
            },
            Vec::new(),
        ),
        "compressed-tensors" => (compressed_tensors_format(q), strings(q.get("ignore"))),
        _ => (WeightFormat::Bf16, Vec::new()),
    };
    let kv_cache_fp8 = q
        .get("kv_cache_quant_algo")
        .and_then(Value::as_str)
        .is_some_and(|a| a.eq_ignore_ascii_case("FP8"));
    Quantization {
        method: Some(method.to_string()),
        format,
        exclude,
        kv_cache_fp8,
        source: source.into(),
    }
}

/// compressed-tensors: the first config group's weight scheme (`num_bits`, `type`,
/// `group_size`).
fn compressed_tensors_format(q: &Value) -> WeightFormat {
    let w = q
        .get("config_groups")
        .and_then(Value::as_object)
        .and_then(|g| g.values().next())
        .and_then(|g| g.get("weights"));
    let bits = w
        .and_then(|w| w.get("num_bits"))
        .and_then(Value::as_u64)
        .unwrap_or(8);
    let float = w.and_then(|w| w.get("type")).and_then(Value::as_str) == Some("float");
    let group = w
        .and_then(|w| w.get("group_size"))
        .and_then(Value::as_u64)
        .unwrap_or(128) as u32;
    match (bits, float) {
        (8, true) => WeightFormat::Fp8PerTensor,
        (4, true) => WeightFormat::Nvfp4,
        (4, false) => WeightFormat::Int4 { group_size: group },
        (8, false) => WeightFormat::Int8 { group_size: group },
        _ => WeightFormat::Fp8PerTensor,
    }
}

/// Quantisation suffixes of checkpoint names, longest first: the suffix, SGLang's
/// method for it, the format. `Qwen3-32B-AWQ` is Qwen3-32B quantised with AWQ.
pub const NAME_SUFFIXES: &[(&str, &str, WeightFormat)] = &[
    ("-gptq-int4", "gptq", WeightFormat::Int4 { group_size: 128 }),
    ("-gptq-int8", "gptq", WeightFormat::Int8 { group_size: 128 }),
    ("-w4afp8", "w4afp8", WeightFormat::W4aFp8),
    ("-nvfp4", "modelopt_fp4", WeightFormat::Nvfp4),
    ("-mxfp4", "mxfp4", WeightFormat::Mxfp4),
    ("-fp8", "fp8", WeightFormat::Fp8Block),
    ("-fp4", "modelopt_fp4", WeightFormat::Nvfp4),
    ("-awq", "awq", WeightFormat::Int4 { group_size: 128 }),
    ("-gptq", "gptq", WeightFormat::Int4 { group_size: 128 }),
    (
        "-int4",
        "compressed-tensors",
        WeightFormat::Int4 { group_size: 32 },
    ),
    ("-bf16", "", WeightFormat::Bf16),
];

/// The quantisation a checkpoint path's last component ends with (`…-Instruct-AWQ`,
/// `…-FP8`, `…-AWQ-INT4`), if any.
pub fn suffix_of(path: &str) -> Option<Quantization> {
    let base = path
        .trim_end_matches('/')
        .rsplit('/')
        .next()?
        .to_ascii_lowercase();
    NAME_SUFFIXES
        .iter()
        .find(|(x, _, _)| base.ends_with(x))
        .and_then(|(x, _, _)| from_suffix(x))
}

/// The quantisation a name suffix implies (`-AWQ` → AWQ int4, …), when the checkpoint's
/// own config is not at hand.
pub fn from_suffix(suffix: &str) -> Option<Quantization> {
    let s = suffix.to_ascii_lowercase();
    NAME_SUFFIXES
        .iter()
        .find(|(x, _, _)| *x == s)
        .map(|(x, m, f)| Quantization {
            method: (!m.is_empty()).then(|| m.to_string()),
            format: *f,
            exclude: Vec::new(),
            kv_cache_fp8: false,
            source: format!("name suffix `{}`", &x[1..]),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_count_their_scales() {
        // 4096 × 4096 weights: fp8 block = 16,777,216 + 1,024 blocks × 4 B = 16,781,312.
        assert_eq!(WeightFormat::Fp8Block.bytes(4096 * 4096), 16_781_312);
        // NVFP4: 8,388,608 B of values + 1,048,576 fp8 scales = 9,437,184.
        assert_eq!(WeightFormat::Nvfp4.bytes(4096 * 4096), 9_437_184);
        // AWQ g128: 8,388,608 + 131,072 groups × 2.5 B = 8,716,288.
        assert_eq!(
            WeightFormat::Int4 { group_size: 128 }.bytes(4096 * 4096),
            8_716_288
        );
    }

    #[test]
    fn modelopt_and_method_configs() {
        // A ModelOpt NVFP4 hf_quant_config.json with an FP8 KV cache.
        let h = json!({"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
                        "exclude_modules": ["lm_head"]}});
        let q = read_quantization(&json!({}), Some(&h));
        assert_eq!(q.method.as_deref(), Some("modelopt_fp4"));
        assert!(q.kv_cache_fp8);
        assert_eq!(q.exclude, ["lm_head"]);
        // An AWQ config.json is int4, not fp8 (it was once read as fp8).
        let c =
            json!({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}});
        let q = read_quantization(&c, None);
        assert_eq!(q.format, WeightFormat::Int4 { group_size: 128 });
        assert_eq!(q.format.key(), CheckpointQuant::Int4);
        // MIXED_PRECISION without NVFP4 layers is w4afp8.
        let c = json!({"quantization_config": {"quant_algo": "MIXED_PRECISION",
                        "quantized_layers": {"a": {"quant_algo": "W4A8_AWQ"}}}});
        assert_eq!(
            read_quantization(&c, None).method.as_deref(),
            Some("w4afp8")
        );
        assert_eq!(
            from_suffix("-AWQ").unwrap().format.key(),
            CheckpointQuant::Int4
        );
        assert_eq!(
            from_suffix("-GPTQ-Int4").unwrap().format.key(),
            CheckpointQuant::Int4
        );
        assert!(from_suffix("-Instruct").is_none());
    }
}
