//! KV cache element types (`--kv-cache-dtype`) and their size in bytes.

use serde::{Deserialize, Serialize};

/// `--kv-cache-dtype`, as the device pool stores it (`store_dtype`).
///
/// SGLang stores fp8 KV as `uint8` (`mem_cache/memory_pool.py: store_dtype`), so fp8 is
/// 1 byte. `fp8_ds_mla` is the FlashMLA sparse FP8 layout: 656 bytes per token per layer
/// (512 B fp8 latent + 16 B of fp32 scales + 128 B bf16 rope part), MLA only.
/// `auto` follows the model dtype; every preset here is bf16, so `auto` = bf16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    Auto,
    Bf16,
    Fp16,
    /// `fp8_e4m3` / `fp8_e5m2`: stored as uint8.
    #[serde(alias = "fp8_e4m3", alias = "fp8_e5m2")]
    Fp8,
    /// FlashMLA's FP8 MLA cache layout, 656 B/token/layer (not an itemsize).
    Fp8DsMla,
}

/// Bytes per token per layer of the `fp8_ds_mla` layout.
pub const FP8_DS_MLA_BYTES_PER_LAYER: u64 = 656;

impl KvDtype {
    pub const ALL: [KvDtype; 5] = [
        KvDtype::Auto,
        KvDtype::Bf16,
        KvDtype::Fp16,
        KvDtype::Fp8,
        KvDtype::Fp8DsMla,
    ];

    /// Stable snake_case id, as in scenarios and CSVs.
    pub fn id(self) -> &'static str {
        match self {
            KvDtype::Auto => "auto",
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp8 => "fp8",
            KvDtype::Fp8DsMla => "fp8_ds_mla",
        }
    }

    /// The storage dtype of a `--kv-cache-dtype` spelling (`Auto`: the model's); `None`
    /// for the packed fp4 / mxfp8 layouts, whose block scales are not modelled.
    pub fn from_flag(f: crate::domain::KvCacheDtype) -> Option<KvDtype> {
        if f.is_packed() {
            None
        } else {
            Self::from_id(crate::domain::Choice::id(f))
        }
    }

    pub fn from_id(s: &str) -> Option<KvDtype> {
        Some(match s {
            "auto" => KvDtype::Auto,
            "bf16" | "bfloat16" => KvDtype::Bf16,
            "fp16" | "float16" | "half" => KvDtype::Fp16,
            "fp8" | "fp8_e4m3" | "fp8_e5m2" => KvDtype::Fp8,
            "fp8_ds_mla" => KvDtype::Fp8DsMla,
            _ => return None,
        })
    }

    /// `torch._utils._element_size(store_dtype)`. For `fp8_ds_mla` this is the size of
    /// the fp8 part only; use [`crate::model::Attention`] for the per-layer figure.
    pub fn itemsize(self) -> u64 {
        match self {
            KvDtype::Auto | KvDtype::Bf16 | KvDtype::Fp16 => 2,
            KvDtype::Fp8 | KvDtype::Fp8DsMla => 1,
        }
    }
}

/// A KV cache dtype SGLang refuses for the model (its own asserts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KvDtypeRefused {
    #[error(
        "{} is not supported for DeepseekV4ForCausalLM (SGLang asserts fp8_e4m3 or bfloat16)",
        .0.id()
    )]
    DeepseekV4(KvDtype),
    #[error("DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype (SGLang asserts)")]
    Dsa,
    /// `fp8_ds_mla` on a GQA model (the simulator's own check: the layout is MLA-only).
    #[error(
        "kv dtype `fp8_ds_mla` is an MLA cache layout; this model uses GQA: expected auto, bf16, fp16 or fp8"
    )]
    MlaLayoutOnGqa,
}
