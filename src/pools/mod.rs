//! The pools a release builds for a model on one rank: the device pools
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
    DevicePools, DsaIndexKPlacement, PoolError, PoolSetInputs, ResolvedMemFraction, SpecDraft,
    device_pools, dsa_index_k_layers, dsv4_device_pools, dsv4_schedule, resolve_mem_fraction,
};
pub use host::{
    HostPoolSpec, HostSizing, PoolUnit, dsv4_host_pool_specs, host_pool_counts, host_pool_specs,
    split_hicache_size,
};

use crate::domain::ServerArgs;
use crate::model::ModelPreset;

/// The MTP draft whose KV the host pools carry, and a note on what is left out
/// ([`crate::model::mtp_draft`]).
pub fn spec_draft(
    server: &ServerArgs,
    model: &ModelPreset,
) -> (SpecDraft, Option<crate::model::DraftNote>) {
    let (mtp_layers, note) = crate::model::mtp_draft(server, model);
    (SpecDraft { mtp_layers }, note)
}
