//! The speculative draft a scenario's flags and its model give: how many of the model's
//! own MTP (NextN) layers the host pools mirror, and a note on what is not modelled.
//! Below `scenario` (which notes it) and `pools` (which sizes it).

use super::geometry::Attention;
use super::presets::ModelPreset;
use crate::domain::ServerArgs;

/// What the draft note says: a fact of the sizing, or something not modelled (which
/// way the figures may be off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftNote {
    Info(String),
    NotModelled { what: String, effect: String },
}

impl DraftNote {
    /// The note as the scenario's notes print it.
    pub fn text(&self) -> String {
        match self {
            DraftNote::Info(t) => t.clone(),
            DraftNote::NotModelled { what, effect } => format!("warning: {what}: {effect}"),
        }
    }
}

/// The MTP draft layers whose KV the host pools carry (0: none), and a note on what is
/// left out.
///
/// The rule is SGLang's `speculative/base_spec_worker.py: _can_pack_hicache_mtp`
/// (0.5.18–0.5.23), read by [`ServerArgs::mtp_draft_layers`]:
/// NextN / EAGLE with the model's own MTP layers on a
/// plain MHA / MLA / DSA model, or DeepSeek-V4 (whose draft `crate::pools::
/// dsv4_device_pools` sizes); drafts of other sliding-window and hybrid models (their
/// draft SWA / state layers), EAGLE3, STANDALONE and separate draft models are not
/// modelled.
pub fn mtp_draft(server: &ServerArgs, model: &ModelPreset) -> (u32, Option<DraftNote>) {
    let Some(algo) = &server.speculative_algorithm else {
        return (0, None);
    };
    let layers = server.mtp_draft_layers(model.mtp_layers);
    let swa_or_hybrid = matches!(
        model.attention,
        Attention::GqaSwa { .. }
            | Attention::GqaLinear { .. }
            | Attention::GqaState { .. }
            | Attention::HybridMla { .. }
    );
    if layers > 0 && swa_or_hybrid {
        return (
            0,
            Some(DraftNote::NotModelled {
                what: format!("--speculative-algorithm {algo}"),
                effect: "MTP drafts of sliding-window / hybrid models are not modelled: the host pools hold the target's layers only (real host requests are larger) and the draft's device memory is left out (real device pools are smaller)".into(),
            }),
        );
    }
    if layers > 0 && matches!(model.attention, Attention::Dsv4 { .. }) {
        return (
            layers,
            Some(DraftNote::Info(format!(
                "--speculative-algorithm {algo}: DeepSeek-V4's MTP layer as the draft, sized as `DSV4PoolConfigurator` sizes it (16 / 256-row compress-state rings, coefficients x (T + 1) / T, the draft's own pools at the target's full / SWA tokens); the draft's weights count only when set in the weights per rank"
            ))),
        );
    }
    if layers > 0 {
        return (
            layers,
            Some(DraftNote::Info(format!(
                "--speculative-algorithm {algo}: {layers} MTP draft layer(s) mirrored on the host per the release's rules (separate draft pool up to 0.5.17, packed into the target pools from 0.5.19) and charged to the device cell size; the draft's weights count only when set in the weights per rank"
            ))),
        );
    }
    (
        0,
        Some(DraftNote::NotModelled {
            what: format!("--speculative-algorithm {algo}"),
            effect: "no MTP draft of the model's own layers (EAGLE3, STANDALONE, NGRAM, a separate draft model, or a model without MTP layers): draft KV on the host and draft device memory are not modelled".into(),
        }),
    )
}
