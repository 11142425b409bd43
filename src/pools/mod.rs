//! The pools a release builds for a model on one rank (issue 11): the device pools
//! SGLang profiles at start-up — full-attention KV, the sliding-window (SWA) pool, the
//! Mamba / linear-attention state pool — and the host pools that mirror them, with how
//! `--hicache-size` or the ratio reaches each one under the release's
//! [`PoolRules`](crate::release::PoolRules).
//!
//! [`device`] sizes the device pools (`profile_max_num_token`, the SWA and Mamba
//! configurators); [`host`] lists the host pools and sizes them (`HostKVCache.__init__`,
//! `MambaPoolHost.__init__`, `_split_hicache_size`, the MTP draft pool or packing).

pub mod device;
pub mod host;

pub use device::{
    DevicePools, PoolSetInputs, ResolvedMemFraction, SpecDraft, device_pools, dsv4_device_pools,
    resolve_mem_fraction,
};
pub use host::{
    HostPoolSpec, HostSizing, PoolUnit, host_pool_counts, host_pool_specs, split_hicache_size,
};

use crate::domain::ServerArgs;
use crate::model::{Attention, ModelPreset};

/// The MTP draft whose KV the host pools carry, and a note on what is left out.
///
/// NextN / EAGLE with the model's own MTP layers ([`ServerArgs::mtp_draft_layers`]) on a
/// plain MHA / MLA / DSA model; drafts of sliding-window and hybrid models (their draft
/// SWA / state layers), EAGLE3, STANDALONE and separate draft models are not modelled.
pub fn spec_draft(server: &ServerArgs, model: &ModelPreset) -> (SpecDraft, Option<String>) {
    let Some(algo) = &server.speculative_algorithm else {
        return (SpecDraft::default(), None);
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
            SpecDraft::default(),
            Some(format!(
                "warning: --speculative-algorithm {algo}: MTP drafts of sliding-window / hybrid models are not modelled: the host pools hold the target's layers only (real host requests are larger) and the draft's device memory is left out (real device pools are smaller)"
            )),
        );
    }
    if layers > 0 {
        return (
            SpecDraft { mtp_layers: layers },
            Some(format!(
                "--speculative-algorithm {algo}: {layers} MTP draft layer(s) mirrored on the host per the release's rules (separate draft pool up to 0.5.17, packed into the target pools from 0.5.19) and charged to the device cell size; the draft's weights count only when set in the weights per rank"
            )),
        );
    }
    (
        SpecDraft::default(),
        Some(format!(
            "warning: --speculative-algorithm {algo}: no MTP draft of the model's own layers (EAGLE3, STANDALONE, NGRAM, a separate draft model, or a model without MTP layers): draft KV on the host and draft device memory are not modelled"
        )),
    )
}
