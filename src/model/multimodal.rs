//! Whether SGLang serves a model as multimodal, and what that changes in the default
//! `--mem-fraction-static`: the vision encoder's headroom (`adjust_mem_fraction_for_vlm`)
//! and the prefill CUDA graph that multimodal prefill cannot replay.
//!
//! The architecture lists are each release's own (`configs/model_config.py`), read from
//! the wheels by `tools/models/gen_multimodal_archs.py` into `multimodal_archs.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::release::Release;

static ARCHS_JSON: &str = include_str!("multimodal_archs.json");

#[derive(Debug, Deserialize)]
struct ReleaseLists {
    multimodal: BTreeSet<String>,
    mm_disabled: BTreeSet<String>,
    prefill_graph_piecewise: BTreeSet<String>,
    prefill_graph_breakable: BTreeSet<String>,
}

#[derive(Debug, Deserialize)]
struct ArchsFile {
    releases: BTreeMap<String, ReleaseLists>,
}

fn lists(release: Release) -> &'static ReleaseLists {
    static F: OnceLock<ArchsFile> = OnceLock::new();
    let f = F.get_or_init(|| {
        serde_json::from_str(ARCHS_JSON)
            .unwrap_or_else(|e| panic!("embedded src/model/multimodal_archs.json is invalid: {e}"))
    });
    let id = release.id();
    f.releases
        .get(id)
        .unwrap_or_else(|| panic!("multimodal_archs.json has no release {id}"))
}

/// What a `config.json` says that the multimodal rules read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MultimodalFacts {
    /// `architectures[0]`.
    pub architecture: String,
    /// `vision_config` is there (`adjust_mem_fraction_for_vlm` returns without it).
    pub has_vision_config: bool,
    /// `text_config` is there: `hf_config is not hf_text_config`, SGLang's
    /// `has_multimodal_subconfig`.
    pub has_text_config: bool,
    /// The config's own `language_model_only`.
    pub language_model_only: bool,
    /// `getattr(vision_config, "num_hidden_layers", 24)` and `"hidden_size", 1024`: the
    /// keys as the config has them (Qwen-VL's `depth` is not `num_hidden_layers`, so the
    /// rule takes 24 for it, as SGLang does).
    pub vit_num_hidden_layers: Option<u64>,
    pub vit_hidden_size: Option<u64>,
}

impl MultimodalFacts {
    pub fn from_config(root: &Value) -> MultimodalFacts {
        let vision = root.get("vision_config").filter(|v| v.is_object());
        MultimodalFacts {
            architecture: root
                .pointer("/architectures/0")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            has_vision_config: vision.is_some(),
            has_text_config: root.get("text_config").is_some_and(Value::is_object),
            language_model_only: root
                .get("language_model_only")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            vit_num_hidden_layers: vision
                .and_then(|v| v.get("num_hidden_layers"))
                .and_then(Value::as_u64),
            vit_hidden_size: vision
                .and_then(|v| v.get("hidden_size"))
                .and_then(Value::as_u64),
        }
    }

    /// `ModelConfig.is_multimodal and not language_only` as the memory settings read it
    /// (`server_args.py: _handle_gpu_memory_settings` 0.5.14–0.5.18,
    /// `arg_groups/memory_hook.py: handle_gpu_memory_settings` 0.5.19+):
    /// `enable_multimodal` (None: on, except the release's `mm_disabled_models` as
    /// `architectures[0]`), not `--language-model-only` (0.5.18+) or the config's
    /// `language_model_only`, and the architecture in the release's
    /// `multimodal_model_archs` or a `text_config` sub-config; then not `--language-only`.
    pub fn is_multimodal(
        &self,
        release: Release,
        enable_multimodal: Option<bool>,
        language_only: bool,
        language_model_only: bool,
    ) -> bool {
        let l = lists(release);
        let enabled = enable_multimodal.unwrap_or(!l.mm_disabled.contains(&self.architecture));
        enabled
            && !(language_model_only || self.language_model_only)
            && (l.multimodal.contains(&self.architecture) || self.has_text_config)
            && !language_only
    }

    /// Whether a multimodal model keeps its prefill CUDA graph: the rule "multimodal
    /// model" of `_disable_*_cudagraph_if_incompatible` (0.5.14–0.5.18
    /// `server_args.py`, 0.5.19+ `arg_groups/cuda_graph_hook.py`) turns it off unless
    /// the architecture is on the release's piecewise (tc_piecewise) or breakable
    /// allowlist.
    pub fn keeps_prefill_graph(&self, release: Release) -> bool {
        let l = lists(release);
        l.prefill_graph_piecewise.contains(&self.architecture)
            || l.prefill_graph_breakable.contains(&self.architecture)
    }

    /// [`Served`] when the model is served as multimodal under `release`.
    pub fn served(
        &self,
        release: Release,
        enable_multimodal: Option<bool>,
        language_only: bool,
        language_model_only: bool,
    ) -> Option<Served> {
        self.is_multimodal(
            release,
            enable_multimodal,
            language_only,
            language_model_only,
        )
        .then(|| Served {
            has_vision_config: self.has_vision_config,
            vit_num_hidden_layers: self.vit_num_hidden_layers,
            vit_hidden_size: self.vit_hidden_size,
            keeps_prefill_graph: self.keeps_prefill_graph(release),
        })
    }
}

/// A model SGLang serves as multimodal, as the default fraction reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Served {
    pub has_vision_config: bool,
    pub vit_num_hidden_layers: Option<u64>,
    pub vit_hidden_size: Option<u64>,
    /// [`MultimodalFacts::keeps_prefill_graph`] under the release.
    pub keeps_prefill_graph: bool,
}

impl Served {
    /// `adjust_mem_fraction_for_vlm` (0.5.14–0.5.23, the same arithmetic in each, with
    /// `SGLANG_ENABLE_POST_CAPTURE_KV_SIZING` off, its default): `f × 0.95 × clamp(1 −
    /// 0.1 × (layers × hidden² / (24 × 1024²) − 1), 0.8, 1.05)`, not rounded again; `f`
    /// itself without a `vision_config`.
    pub fn adjust_mem_fraction_for_vlm(&self, f: f64) -> f64 {
        if !self.has_vision_config {
            return f;
        }
        let layers = self.vit_num_hidden_layers.unwrap_or(24) as f64;
        let hidden = self.vit_hidden_size.unwrap_or(1024) as f64;
        let ratio = layers * hidden * hidden / (24.0 * 1024.0 * 1024.0);
        let dynamic = (1.0 - 0.1 * (ratio - 1.0)).clamp(0.8, 1.05);
        f * (0.95 * dynamic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen3_vl() -> MultimodalFacts {
        MultimodalFacts::from_config(&serde_json::json!({
            "architectures": ["Qwen3VLForConditionalGeneration"],
            "text_config": {"hidden_size": 5120},
            "vision_config": {"depth": 27, "hidden_size": 1152},
        }))
    }

    #[test]
    fn qwen3_vl_fraction_is_the_logged_one() {
        // Logged server_args (H100, 0.5.10-era fork): 0.835 → 0.7721792968749999, and
        // on B200 0.857 → 0.7925241406249999: `depth` is not `num_hidden_layers`, so 24
        // layers of 1152: ratio 1.265625, factor 0.95 × 0.9734375.
        let m = qwen3_vl()
            .served(Release::V0_5_14, None, false, false)
            .unwrap();
        assert_eq!(
            m.adjust_mem_fraction_for_vlm(0.835),
            0.835 * (0.95 * 0.9734375)
        );
        assert!((m.adjust_mem_fraction_for_vlm(0.835) - 0.7721792968749999).abs() < 1e-15);
        assert!((m.adjust_mem_fraction_for_vlm(0.857) - 0.7925241406249999).abs() < 1e-15);
    }

    #[test]
    fn multimodal_per_release_and_flags() {
        let m = qwen3_vl();
        for r in Release::ALL {
            assert!(m.is_multimodal(r, None, false, false), "{r:?}");
            assert!(!m.is_multimodal(r, None, true, false), "--language-only");
            assert!(!m.is_multimodal(r, Some(false), false, false));
            assert!(!m.keeps_prefill_graph(r));
        }
        // Gemma 3 is served text-only unless --enable-multimodal.
        let g = MultimodalFacts::from_config(&serde_json::json!({
            "architectures": ["Gemma3ForConditionalGeneration"],
            "text_config": {}, "vision_config": {"num_hidden_layers": 27, "hidden_size": 1152},
        }));
        assert!(!g.is_multimodal(Release::V0_5_23, None, false, false));
        assert!(g.is_multimodal(Release::V0_5_23, Some(true), false, false));
        // A text model is not.
        let t = MultimodalFacts::from_config(
            &serde_json::json!({"architectures": ["Qwen3ForCausalLM"]}),
        );
        assert!(!t.is_multimodal(Release::V0_5_23, None, false, false));
        assert!(t.served(Release::V0_5_23, None, false, false).is_none());
        // Kimi K2.5's MoonViT config names its sizes `vt_*`: the rule's defaults (24 x
        // 1024) give the bare 0.95.
        let k = MultimodalFacts::from_config(&serde_json::json!({
            "architectures": ["KimiK25ForConditionalGeneration"], "text_config": {},
            "vision_config": {"vt_num_hidden_layers": 27, "vt_hidden_size": 1152}}));
        let s = k.served(Release::V0_5_23, None, false, false).unwrap();
        assert_eq!(s.adjust_mem_fraction_for_vlm(0.9), 0.9 * 0.95);
        // Qwen3.5 keeps the breakable prefill graph from 0.5.16 (its allowlist).
        let q = MultimodalFacts::from_config(&serde_json::json!({
            "architectures": ["Qwen3_5ForConditionalGeneration"], "text_config": {},
            "vision_config": {"depth": 27, "hidden_size": 1152}}));
        assert!(q.keeps_prefill_graph(Release::V0_5_23));
        assert!(!q.keeps_prefill_graph(Release::V0_5_14));
    }
}
