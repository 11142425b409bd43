//! What `--kv-cache-dtype` (and its default, `auto`) means for a model on a GPU: the
//! element type and, for DSA models, the cache layout.

use super::dtype::{KvDtype, KvDtypeRefused};
use super::geometry::Attention;
use super::presets::ModelPreset;

/// The CUDA compute capability major of a node's GPU (`torch.cuda.
/// get_device_capability()[0]`), from the node preset's `gpu` name: Blackwell data-centre
/// parts (B200, B300, GB200, GB300) 10, RTX Blackwell (RTX PRO 6000, RTX 5090) 12,
/// Hopper (H100, H200, H20, GH200) 9, Ada (L40S, L20, L4, RTX 4090) and Ampere (A100,
/// A30) 8. `None` for a name it does not know (and for AMD GPUs, where SGLang's DSA
/// rules take the HIP branch).
pub fn sm_major(gpu: &str) -> Option<u32> {
    let g = gpu.to_ascii_uppercase().replace([' ', '-', '_'], "");
    let starts = |p: &[&str]| p.iter().any(|x| g.starts_with(x));
    if starts(&["RTXPRO6000", "RTX5090", "RTX5080"]) {
        Some(12)
    } else if starts(&["GB", "B100", "B200", "B300"]) {
        Some(10)
    } else if starts(&["GH", "H100", "H200", "H800", "H20"]) {
        Some(9)
    } else if starts(&["L40", "L20", "L4", "RTX4090", "A100", "A30", "A10", "A800"]) {
        Some(8)
    } else {
        None
    }
}

/// The KV element type / layout SGLang uses for `requested` on a GPU of compute
/// capability `sm_major`.
///
/// - DSA models (MLA + indexer: DeepSeek-V3.2, GLM-5.x): `auto` is `fp8_e4m3` on SM ≥ 10,
///   else `bfloat16`; only bf16 and fp8_e4m3 are accepted
///   (`server_args.py: _set_default_dsa_kv_cache_dtype` 0.5.14–0.5.16,
///   `arg_groups/overrides.py: _dsa_kv_cache_dtype_default` 0.5.17–0.5.23). FP8 is then
///   stored raw (`kv_lora_rank + qk_rope_head_dim` bytes) when a DSA backend is
///   `trtllm` — the default on SM ≥ 10 — and in FlashMLA's scaled layout (656 B per
///   layer for a 512 + 64 latent: `kv_lora_rank + kv_lora_rank // 128 * 4 +
///   qk_rope_head_dim * 2`) on Hopper's `flashmla_kv` and on SM12x GLM's
///   `flashinfer_sparse_mla` (`_set_default_dsa_backends` / `_dsa_split_backend_resolution`;
///   `kv_cache_configurator.py: calculate_mla_kv_cache_dim`). An explicit `fp8_ds_mla`
///   (this simulator's name for the scaled layout) is kept as given.
/// - Other models: `auto` is FP8 when the checkpoint's quant config declares an FP8 KV
///   cache (`kv_cache_dtype.py: configure_kv_cache_dtype`, `kv_cache_quant_algo`), else
///   the model dtype (the model's `default_kv_dtype`).
///
/// `sm_major` `None` (an unknown GPU) reads as Hopper for the DSA rules.
pub fn resolve_kv_dtype(
    model: &ModelPreset,
    requested: KvDtype,
    sm_major: Option<u32>,
    glm_dsa: bool,
) -> Result<KvDtype, KvDtypeRefused> {
    if matches!(model.attention, Attention::Dsv4 { .. }) {
        // `arg_groups/overrides.py: _deepseek_v4_kv_cache_dtype` (0.5.21–0.5.23): auto
        // is fp8_e4m3; only fp8_e4m3 and bfloat16 pass its assert.
        return match requested {
            KvDtype::Auto | KvDtype::Fp8 => Ok(KvDtype::Fp8),
            KvDtype::Bf16 => Ok(KvDtype::Bf16),
            other => Err(KvDtypeRefused::DeepseekV4(other)),
        };
    }
    if !matches!(model.attention, Attention::MlaDsa { .. }) {
        return Ok(match requested {
            KvDtype::Auto => model.default_kv_dtype,
            x => x,
        });
    }
    let major = sm_major.unwrap_or(9);
    let dtype = match requested {
        KvDtype::Auto if major >= 10 => KvDtype::Fp8,
        KvDtype::Auto => KvDtype::Bf16,
        KvDtype::Fp16 => {
            return Err(KvDtypeRefused::Dsa);
        }
        x => x,
    };
    Ok(match dtype {
        KvDtype::Fp8 if major == 12 && glm_dsa => KvDtype::Fp8DsMla,
        KvDtype::Fp8 if major >= 10 => KvDtype::Fp8,
        KvDtype::Fp8 => KvDtype::Fp8DsMla,
        x => x,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::model_preset;

    #[test]
    fn gpu_generations() {
        assert_eq!(sm_major("GB300"), Some(10));
        assert_eq!(sm_major("B200"), Some(10));
        assert_eq!(sm_major("H200"), Some(9));
        assert_eq!(sm_major("RTX PRO 6000"), Some(12));
        assert_eq!(sm_major("MI300X"), None);
    }

    #[test]
    fn dsa_defaults_follow_the_gpu() {
        let glm = model_preset("glm-5.2").unwrap();
        // Blackwell: auto → fp8, stored raw (trtllm): 576 B per layer.
        assert_eq!(
            resolve_kv_dtype(glm, KvDtype::Auto, Some(10), true),
            Ok(KvDtype::Fp8)
        );
        // Hopper: auto → bf16; fp8 → FlashMLA's 656 B layout.
        assert_eq!(
            resolve_kv_dtype(glm, KvDtype::Auto, Some(9), true),
            Ok(KvDtype::Bf16)
        );
        assert_eq!(
            resolve_kv_dtype(glm, KvDtype::Fp8, Some(9), true),
            Ok(KvDtype::Fp8DsMla)
        );
        assert!(resolve_kv_dtype(glm, KvDtype::Fp16, Some(9), true).is_err());
        let llama = model_preset("llama-3.1-70b").unwrap();
        assert_eq!(
            resolve_kv_dtype(llama, KvDtype::Fp8, Some(9), false),
            Ok(KvDtype::Fp8)
        );
    }
}
