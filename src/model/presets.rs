//! Model presets (embedded `models.yaml`) and what a preset computes: host pools per
//! rank, the MTP draft pool, checkpoint bytes and weights per rank.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::dtype::KvDtype;
use super::geometry::{Attention, IndexKLayers, PoolGeometry};
use super::parallel::ParallelLayout;
use super::quant::CheckpointQuant;
use crate::units::ByteSize;

/// KV geometry and checkpoint sizes of one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPreset {
    /// One line for listings.
    #[serde(default)]
    pub description: String,
    /// Other names this preset answers to (`glm-4.5`, `glm-4.7`, …).
    #[serde(default)]
    pub aliases: Vec<String>,
    pub attention: Attention,
    /// Decoder layers (`num_hidden_layers`), MTP layers excluded.
    pub layers: u32,
    /// `num_nextn_predict_layers`: MTP draft layers (their KV is a separate draft pool).
    #[serde(default)]
    pub mtp_layers: u32,
    /// Checkpoint bytes on disk per quantisation (`fp8`, `bf16`, `nvfp4`, `int4`, `mxfp4`).
    pub checkpoint: BTreeMap<CheckpointQuant, ByteSize>,
    /// The quantisation used when a scenario does not say (a key of `checkpoint`).
    pub default_quant: CheckpointQuant,
    #[serde(default = "default_kv_dtype")]
    pub default_kv_dtype: KvDtype,
    /// SGLang serves it as a multimodal model (`ModelConfig.is_multimodal`): its KV
    /// budget leaves out the release's [`crate::release::MmReservation`].
    #[serde(default)]
    pub multimodal: bool,
}

fn default_kv_dtype() -> KvDtype {
    KvDtype::Bf16
}

pub(super) static MODELS_YAML: &str = include_str!("models.yaml");

/// The embedded model presets, by id (`deepseek-v3`, `glm-5.2`, …).
pub fn model_presets() -> &'static BTreeMap<String, ModelPreset> {
    static P: OnceLock<BTreeMap<String, ModelPreset>> = OnceLock::new();
    P.get_or_init(|| {
        let m: BTreeMap<String, ModelPreset> = serde_saphyr::from_str(MODELS_YAML)
            .unwrap_or_else(|e| panic!("embedded src/model/models.yaml is invalid: {e}"));
        for (k, p) in &m {
            assert!(
                p.checkpoint.contains_key(&p.default_quant),
                "models.yaml: {k}: default_quant `{}` has no checkpoint size",
                p.default_quant
            );
        }
        m
    })
}

/// A quantisation a model has no checkpoint size for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no checkpoint size for quantisation `{quant}`: expected one of {} (or set the checkpoint bytes explicitly)",
    .known.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(", ")
)]
pub struct NoCheckpointSize {
    pub quant: CheckpointQuant,
    pub known: Vec<CheckpointQuant>,
}

/// A preset by id or alias; the error lists the ids and suggests the nearest.
pub fn model_preset(name: &str) -> Result<&'static ModelPreset, crate::error::UnknownName> {
    let all = model_presets();
    if let Some(p) = all.get(name) {
        return Ok(p);
    }
    if let Some(p) = all.values().find(|p| p.aliases.iter().any(|a| a == name)) {
        return Ok(p);
    }
    let names = all
        .iter()
        .flat_map(|(k, p)| std::iter::once(k.as_str()).chain(p.aliases.iter().map(|a| a.as_str())));
    Err(crate::error::UnknownName::new(
        "model",
        name,
        names,
        all.keys().cloned().collect(),
    ))
}

impl ModelPreset {
    /// Host-mirrored pools of the target model on one rank, with their bytes per token,
    /// a DSA model's index-K on its owned layers. See [`Attention::host_pools`]; mirrors
    /// `pool_host/mha.py` / `mla.py: get_size_per_token` and the DSA indexer host pool
    /// (`DSAIndexerPoolHost`).
    pub fn host_pools(&self, layout: &ParallelLayout, dtype: KvDtype) -> Vec<PoolGeometry> {
        self.attention.host_pools(self.layers, layout, dtype)
    }

    /// The per-token pools with a DSA model's index-K on the `index_k` layers
    /// ([`Attention::pools_per_token`]).
    pub fn pools_per_token(
        &self,
        layout: &ParallelLayout,
        dtype: KvDtype,
        index_k: IndexKLayers,
    ) -> Vec<PoolGeometry> {
        self.attention
            .pools_per_token(self.layers, layout, dtype, index_k)
    }

    /// The MTP (NEXTN/EAGLE) draft model's KV per token on one rank, if the model has MTP
    /// layers: same per-layer geometry, `mtp_layers` layers (the draft lives on the last
    /// PP stage, so it is not divided by `pp_size`). Where a release puts it — a separate
    /// host pool with the target's slot count (≤ 0.5.17), packed into the target pools
    /// (`layer_num = target + drafts`, 0.5.19+), or nowhere (0.5.18 under `HiRadixCache`)
    /// — is [`crate::pools::host_pool_specs`]'s, per `release::MtpDraftHost`.
    pub fn mtp_draft_pool(&self, layout: &ParallelLayout, dtype: KvDtype) -> Option<PoolGeometry> {
        (self.mtp_layers > 0).then(|| PoolGeometry {
            name: "draft",
            bytes_per_token: self.attention.kv_bytes_per_token_layer(layout, dtype)
                * self.mtp_layers as u64,
        })
    }

    /// Bytes per token over all device pools of the target (`cell_size` in
    /// `profile_max_num_token`), a DSA model's index-K elided to its owned layers (the
    /// release- and HiCache-dependent cell is `crate::pools::device_pools`').
    pub fn cell_size(&self, layout: &ParallelLayout, dtype: KvDtype) -> u64 {
        self.host_pools(layout, dtype)
            .iter()
            .map(|p| p.bytes_per_token)
            .sum()
    }

    /// Checkpoint bytes for a quantisation (`None` = `default_quant`).
    pub fn checkpoint_bytes(
        &self,
        quant: Option<CheckpointQuant>,
    ) -> Result<u64, NoCheckpointSize> {
        let q = quant.unwrap_or(self.default_quant);
        self.checkpoint
            .get(&q)
            .map(|b| b.0)
            .ok_or_else(|| NoCheckpointSize {
                quant: q,
                known: self.checkpoint.keys().copied().collect(),
            })
    }

    /// Weights resident per rank: checkpoint bytes / (tp * pp), rounded up.
    pub fn weights_per_rank(
        &self,
        layout: &ParallelLayout,
        quant: Option<CheckpointQuant>,
    ) -> Result<u64, NoCheckpointSize> {
        Ok(self.checkpoint_bytes(quant)?.div_ceil(layout.world_size()))
    }
}
