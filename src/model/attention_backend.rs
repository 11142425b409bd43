//! The attention backend SGLang picks when `--attention-backend` is not given, and the
//! page size that backend — or the model's own overrides — forces on the server. The
//! page size decides the device pool's rounding and, above all, the radix tree's and the
//! host tier's page: a recipe for a Blackwell GPU without `--page-size` runs 64-token
//! pages in SGLang, not the flag's default 1.
//!
//! Modelled (CUDA, every release 0.5.14–0.5.23 unless said):
//! - DSA models (DeepSeek-V3.2, GLM-5.x): `Setting page size to 64 for DeepSeek DSA.`
//!   whatever `--page-size` says (`server_args.py` 0.5.14–0.5.16;
//!   `arg_groups/model_overrides/deepseek_v2.py` later), `64 × index_kpool` from 0.5.22
//!   ([`DsaPage`]; `index_kpool` is 1 for every catalogue DSA model);
//! - the default backend (`get_default_attn_backend`): a plain-attention (`Gqa`) model
//!   on SM100 (B200, B300, GB200, GB300) takes `trtllm_mha` unless speculative decoding
//!   leaves the top-k unset or asks more than one (`is_no_spec_infer_or_topk_one`), and
//!   `fa4` for asymmetric K/V widths from 0.5.17;
//!   `DeepseekV3ForCausalLM` (DeepSeek-V3/R1, Kimi-K2) on SM100 takes `trtllm_mla`
//!   (its model override); other MLA models and other GPUs keep `--page-size`;
//! - the backend's page constraint (`_mla_backend_page_constraints` and its
//!   predecessors in `server_args.py`): `flashmla` 64; `trtllm_mla` / `cutedsl_mla` 32 or
//!   64, else 64; `trtllm_mha` 16, 32 or 64 (and 128 from 0.5.17, [`Sm100Attention`]),
//!   else 64; `fa4` 128 for a non-MLA model on SM100.
//!
//! Checked against SGLang's own `get_default_attn_backend` and page constraints, every
//! release 0.5.14–0.5.23, by `tests/it/page_size.rs` (`tools/models/page_size_golden.py`:
//! 16,200 backend choices, 14,580 page sizes; the DSA and DeepSeek-V3 overrides are
//! model overrides the golden does not run, read from their code and the corpus' logs).
//!
//! Not modelled: model-specific backends of hybrid, sliding-window and linear-attention
//! models (their default is left as `--page-size` says and the start-up says so), ROCm,
//! and `--prefill-attention-backend` / `--decode-attention-backend` given apart.

use super::geometry::Attention;
pub use crate::release::{DsaPage, Sm100Attention};

/// What the model and flags say, as the backend choice reads them.
#[derive(Debug, Clone, Copy)]
pub struct BackendInputs<'a> {
    pub attention: &'a Attention,
    /// The checkpoint's `architectures[0]` (or the preset's family).
    pub architecture: &'a str,
    /// `--attention-backend` as given.
    pub attention_backend: Option<&'a str>,
    /// `--page-size` as given (1 when not given).
    pub page_size: u32,
    /// `--speculative-algorithm` given.
    pub speculative: bool,
    /// `--speculative-eagle-topk` as given (the backend default reads it before the
    /// speculative defaults fill it in).
    pub eagle_topk: Option<u32>,
    /// The GPU's CUDA compute capability major ([`super::sm_major`]); `None` for an
    /// unknown or non-CUDA GPU.
    pub sm_major: Option<u32>,
}

/// The page size SGLang runs and, when it is not `--page-size`, SGLang's own warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSize {
    pub page_size: u32,
    /// The backend it was resolved for (the default when no flag named one).
    pub backend: Option<&'static str>,
    /// SGLang's log line when the page size changed.
    pub changed: Option<String>,
    /// Why the page may not be SGLang's: a backend chosen by a rule not modelled here.
    pub unmodelled: Option<BackendUnmodelled>,
}

/// A backend whose choice or page constraint is not modelled, when the page given is one
/// it may change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendUnmodelled {
    /// An explicit `--attention-backend` outside the module doc's list, with a page other
    /// than 64.
    Explicit(String),
    /// SM100 with no `--attention-backend` for a sliding-window, hybrid linear-attention
    /// or hybrid MLA model, whose default comes from model-specific overrides, unless
    /// `--page-size` is 32 or 64, which every Blackwell backend keeps.
    ModelSpecific,
}

/// `utils/common.py: is_no_spec_infer_or_topk_one`: no top-k given, or top-k 1 with
/// pages of one token.
fn no_spec_or_topk_one(i: &BackendInputs<'_>) -> bool {
    match i.eagle_topk {
        None => true,
        Some(k) => k == 1 && i.page_size <= 1,
    }
}

/// `get_default_attn_backend` (and the DeepSeek-V3 SM100 override) for the models the
/// module doc lists; `None` where the simulator does not model the choice.
fn default_backend(i: &BackendInputs<'_>, rule: Sm100Attention) -> Option<&'static str> {
    let sm = i.sm_major?;
    match i.attention {
        Attention::Gqa {
            head_dim,
            v_head_dim,
            ..
        } => match sm {
            9 if no_spec_or_topk_one(i) => Some("fa3"),
            10 if no_spec_or_topk_one(i) && (!i.speculative || i.eagle_topk.is_some()) => {
                // 0.5.17 on: "trtllm_mha requires equal K/V row widths".
                if rule == Sm100Attention::Trtllm128Fa4
                    && v_head_dim.is_some_and(|v| v != *head_dim)
                {
                    Some("fa4")
                } else {
                    Some("trtllm_mha")
                }
            }
            _ => Some("flashinfer"),
        },
        Attention::Mla { .. } => match sm {
            10 if i.architecture == "DeepseekV3ForCausalLM" => Some("trtllm_mla"),
            10 => Some("flashinfer"),
            9 => Some("fa3"),
            _ => Some("triton"),
        },
        _ => None,
    }
}

/// The page size SGLang resolves for `i` under a release's [`Sm100Attention`] and
/// [`DsaPage`] rules.
pub fn resolve_page_size(i: &BackendInputs<'_>, rule: Sm100Attention, dsa: DsaPage) -> PageSize {
    let given = i.page_size.max(1);
    let keep = |backend| PageSize {
        page_size: given,
        backend,
        changed: None,
        unmodelled: None,
    };
    // DeepSeek-V4 runs its own 256-token pages (`StartupPlan`).
    if i.sm_major.is_none() || matches!(i.attention, Attention::Dsv4 { .. }) {
        return keep(None);
    }
    if let Attention::MlaDsa { index_kpool, .. } = i.attention {
        let page = match dsa {
            DsaPage::Fixed64 => 64,
            DsaPage::KpoolTimes64 => 64 * (*index_kpool).max(1),
        };
        return PageSize {
            page_size: page,
            backend: Some("dsa"),
            changed: (given != page)
                .then(|| format!("Setting page size to {page} for DeepSeek DSA.")),
            unmodelled: None,
        };
    }
    let backend: Option<&'static str> = match i.attention_backend {
        Some(b) => BACKENDS.iter().copied().find(|x| *x == b),
        None => default_backend(i, rule),
    };
    let Some(backend) = backend else {
        let unmodelled = match i.attention_backend {
            Some(b) if given != 64 => Some(BackendUnmodelled::Explicit(b.to_string())),
            None if i.sm_major == Some(10) && !matches!(given, 32 | 64) => {
                Some(BackendUnmodelled::ModelSpecific)
            }
            _ => None,
        };
        return PageSize {
            unmodelled,
            ..keep(None)
        };
    };
    let mla = matches!(
        i.attention,
        Attention::Mla { .. } | Attention::HybridMla { .. }
    );
    let (page, line) = match backend {
        "flashmla" if given != 64 => (
            64,
            "FlashMLA only supports a page_size of 64, change page_size to 64.".to_string(),
        ),
        "trtllm_mla" if !matches!(given, 32 | 64) => (
            64,
            format!(
                "TensorRT-LLM MLA only supports page_size of 32 or 64, changing page_size from {} to 64.",
                shown(i.page_size)
            ),
        ),
        "cutedsl_mla" if !matches!(given, 32 | 64) => (
            64,
            format!(
                "CuteDSL MLA only supports page_size of 32 or 64, changing page_size from {} to 64.",
                shown(i.page_size)
            ),
        ),
        "trtllm_mha" => {
            let kept = match rule {
                Sm100Attention::Trtllm64 => matches!(given, 16 | 32 | 64),
                Sm100Attention::Trtllm128Fa4 => matches!(given, 16 | 32 | 64 | 128),
            };
            if kept {
                return keep(Some(backend));
            }
            let sizes = match rule {
                Sm100Attention::Trtllm64 => "16, 32 or 64",
                Sm100Attention::Trtllm128Fa4 => "16, 32, 64 or 128",
            };
            (
                64,
                format!(
                    "TensorRT-LLM MHA only supports page_size of {sizes}, changing page_size from {} to 64.",
                    shown(i.page_size)
                ),
            )
        }
        // `_fa4_page_constraint`: on SM100, for a non-MLA model, always 128 — but not
        // for EAGLE with top-k > 1, whose page-tree cascade needs pages of one token.
        "fa4"
            if !mla && i.sm_major == Some(10) && i.eagle_topk.unwrap_or(0) <= 1 && given != 128 =>
        {
            (
                128,
                format!(
                    "FA4 backend only supports page size 128 for non-MLA model architectures, changing page_size from {} to 128.",
                    shown(i.page_size)
                ),
            )
        }
        _ => return keep(Some(backend)),
    };
    PageSize {
        page_size: page,
        backend: Some(backend),
        changed: Some(line),
        unmodelled: None,
    }
}

/// SGLang prints the flag's value, `None` when not given (the simulator's 1).
fn shown(page: u32) -> String {
    if page <= 1 {
        "None".into()
    } else {
        page.to_string()
    }
}

/// The backends whose page constraints are modelled, or that keep any page.
const BACKENDS: &[&str] = &[
    "flashmla",
    "trtllm_mla",
    "cutedsl_mla",
    "trtllm_mha",
    "fa4",
    "fa3",
    "flashinfer",
    "triton",
    "torch_native",
    "flex_attention",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn gqa() -> Attention {
        Attention::Gqa {
            kv_heads: 8,
            head_dim: 128,
            v_head_dim: None,
        }
    }

    fn inputs<'a>(
        a: &'a Attention,
        arch: &'a str,
        sm: Option<u32>,
        page: u32,
    ) -> BackendInputs<'a> {
        BackendInputs {
            attention: a,
            architecture: arch,
            attention_backend: None,
            page_size: page,
            speculative: false,
            eagle_topk: None,
            sm_major: sm,
        }
    }

    #[test]
    fn blackwell_mha_runs_trtllm_mha_pages_of_64() {
        let a = gqa();
        // The GB300 log of tests/log_corpus/24: "TensorRT-LLM MHA only supports
        // page_size of 16, 32 or 64, changing page_size from None to 64."
        let p = resolve_page_size(
            &inputs(&a, "Qwen3ForCausalLM", Some(10), 1),
            Sm100Attention::Trtllm64,
            DsaPage::Fixed64,
        );
        assert_eq!(p.page_size, 64);
        assert_eq!(p.backend, Some("trtllm_mha"));
        assert_eq!(
            p.changed.as_deref(),
            Some(
                "TensorRT-LLM MHA only supports page_size of 16, 32 or 64, changing page_size from None to 64."
            )
        );
        // 128 is kept from 0.5.17 only.
        let i = inputs(&a, "Qwen3ForCausalLM", Some(10), 128);
        assert_eq!(
            resolve_page_size(&i, Sm100Attention::Trtllm128Fa4, DsaPage::KpoolTimes64).page_size,
            128
        );
        assert_eq!(
            resolve_page_size(&i, Sm100Attention::Trtllm64, DsaPage::Fixed64).page_size,
            64
        );
        // Hopper's fa3 and RTX Blackwell's flashinfer keep the flag.
        for sm in [9, 12, 8] {
            let i = inputs(&a, "Qwen3ForCausalLM", Some(sm), 1);
            assert_eq!(
                resolve_page_size(&i, Sm100Attention::Trtllm128Fa4, DsaPage::KpoolTimes64)
                    .page_size,
                1,
                "sm {sm}"
            );
        }
        // Speculative decoding with top-k > 1: flashinfer on SM100.
        let mut i = inputs(&a, "Qwen3ForCausalLM", Some(10), 1);
        i.speculative = true;
        i.eagle_topk = Some(4);
        assert_eq!(
            resolve_page_size(&i, Sm100Attention::Trtllm128Fa4, DsaPage::KpoolTimes64).page_size,
            1
        );
    }

    #[test]
    fn dsa_models_run_64_token_pages_whatever_the_flag() {
        let a = Attention::MlaDsa {
            kv_lora_rank: 512,
            qk_rope_head_dim: 64,
            indexer_layers: 78,
            indexer_bytes_per_token_layer: 132,
            index_kpool: 1,
        };
        for (sm, page) in [(9, 1), (10, 1), (10, 32), (12, 128)] {
            let p = resolve_page_size(
                &inputs(&a, "GlmMoeDsaForCausalLM", Some(sm), page),
                Sm100Attention::Trtllm128Fa4,
                DsaPage::KpoolTimes64,
            );
            assert_eq!(p.page_size, 64, "sm {sm} page {page}");
        }
        // Pooled index keys: `64 × index_kpool` from 0.5.22, 64 before.
        let pooled = Attention::MlaDsa {
            kv_lora_rank: 512,
            qk_rope_head_dim: 64,
            indexer_layers: 78,
            indexer_bytes_per_token_layer: 66,
            index_kpool: 2,
        };
        let i = inputs(&pooled, "GlmMoeDsaForCausalLM", Some(10), 1);
        let p = resolve_page_size(&i, Sm100Attention::Trtllm128Fa4, DsaPage::KpoolTimes64);
        assert_eq!(
            (p.page_size, p.changed.as_deref()),
            (128, Some("Setting page size to 128 for DeepSeek DSA."))
        );
        let p = resolve_page_size(&i, Sm100Attention::Trtllm128Fa4, DsaPage::Fixed64);
        assert_eq!(p.page_size, 64);
        // Not on an unknown (or ROCm) GPU, whose DSA path is not modelled here.
        let p = resolve_page_size(
            &inputs(&a, "GlmMoeDsaForCausalLM", None, 1),
            Sm100Attention::Trtllm128Fa4,
            DsaPage::KpoolTimes64,
        );
        assert_eq!(p.page_size, 1);
    }

    #[test]
    fn deepseek_v3_on_blackwell_runs_trtllm_mla() {
        let a = Attention::Mla {
            kv_lora_rank: 512,
            qk_rope_head_dim: 64,
        };
        let p = resolve_page_size(
            &inputs(&a, "DeepseekV3ForCausalLM", Some(10), 1),
            Sm100Attention::Trtllm128Fa4,
            DsaPage::KpoolTimes64,
        );
        assert_eq!((p.page_size, p.backend), (64, Some("trtllm_mla")));
        let p = resolve_page_size(
            &inputs(&a, "DeepseekV3ForCausalLM", Some(10), 32),
            Sm100Attention::Trtllm128Fa4,
            DsaPage::KpoolTimes64,
        );
        assert_eq!(p.page_size, 32);
        // Hopper's fa3 keeps page 1; an explicit flashmla forces 64.
        let mut i = inputs(&a, "DeepseekV3ForCausalLM", Some(9), 1);
        assert_eq!(
            resolve_page_size(&i, Sm100Attention::Trtllm128Fa4, DsaPage::KpoolTimes64).page_size,
            1
        );
        i.attention_backend = Some("flashmla");
        assert_eq!(
            resolve_page_size(&i, Sm100Attention::Trtllm128Fa4, DsaPage::KpoolTimes64).page_size,
            64
        );
    }
}
