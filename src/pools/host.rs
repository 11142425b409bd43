//! Host pools of one rank: which pools a release builds for a model, their bytes per
//! token (or per state slot), and their sizes from `--hicache-size` or the ratio.

use serde::Serialize;

use super::device::{DevicePools, PoolSetInputs};
use crate::model::{Attention, device_pool_bytes};
use crate::release::{HicacheSizeSplit, MtpDraftHost};
use crate::sizing::{HostPoolSizeArg, py_float_floordiv, py_int};

/// What a pool counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolUnit {
    Tokens,
    /// Mamba / linear-attention state slots (one per cached request state).
    Slots,
    /// Host pages of a DeepSeek-V4 pool (`DeepSeekV4PagedHostPool` /
    /// `DeepSeekV4StateHostPool`: `num_host_pages` pages of `item_bytes` per layer).
    Pages,
}

/// How a host pool's size is derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostSizing {
    /// Its own `HostKVCache` / `MambaPoolHost` sizing: the ratio times its device
    /// capacity, or its share of `--hicache-size`.
    Own,
    /// The first pool's slot count, one to one (the DSA indexer host pool,
    /// `hybrid_pool_assembler.py: prepare_host_pool_config`).
    MirrorFirst,
    /// The ≤ 0.5.17 MTP draft host pool: `host_to_device_ratio = primary.size /
    /// pool.size`, `host_size = 0` (`kv_cache_builder.py: maybe_register_hicache_draft`).
    DraftRatio,
    /// A DeepSeek-V4 host pool: `int(ceil(device_capacity / page_size) × ratio)` pages,
    /// no padding page (`hybrid_pool_assembler.py: _deepseek_v4_num_host_pages`,
    /// 0.5.21–0.5.23); `--hicache-size` is refused before any pool is built.
    Dsv4Pages,
}

/// One host pool of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HostPoolSpec {
    /// `kv`, `indexer`, `swa`, `state`, `draft`.
    pub name: &'static str,
    pub unit: PoolUnit,
    /// `size_per_token` (bytes per token, or per state slot).
    pub bytes_per_unit: u64,
    /// The device pool's capacity the ratio multiplies (tokens or slots).
    pub device_capacity: u64,
    /// Host page size (1 for the state pool: `MambaPoolHost.page_size = 1`).
    pub page_size: u64,
    /// The device pool's bytes (`get_kv_size_bytes`: `size + page_size` rows; the state
    /// pool's `size + 1` slots): the weight `_split_hicache_size` reads.
    pub device_bytes: u64,
    pub sizing: HostSizing,
}

/// Whether the model runs `UnifiedRadixCache` in a release whose plain models still run
/// `HiRadixCache` (0.5.17–0.5.18 `mem_cache/registry.py`: hybrid SWA, hybrid SSM and DSA
/// models go to `_create_unified_radix_cache`).
fn routes_unified(a: &Attention) -> bool {
    matches!(a, Attention::GqaSwa { .. } | Attention::MlaDsa { .. }) || a.has_state_pool()
}

/// The host pools of one rank, in the order SGLang builds them.
///
/// Per-token pools from [`PoolSetInputs::host_geometry`] (a DSA model's indexer pool on
/// the layers the release's host pool keeps, `crate::release::DsaIndexK`; its
/// `device_bytes` from the device pool's layers); the Mamba state pool
/// (`pool_host/mamba.py: MambaPoolHost`, page size 1) after them; MTP draft layers per
/// the release's [`MtpDraftHost`]: a separate `draft` pool (≤ 0.5.17), or packed into
/// the target pools (`pool_host/mla.py` / `mha.py`: `layer_num = target_layer_num +
/// len(mtp_draft_device_pools)`; `pool_host/dsa.py` packs one indexer layer per draft
/// layer too), or — 0.5.18 under `HiRadixCache` — no host copy at all.
pub fn host_pool_specs(inp: &PoolSetInputs<'_>, dev: &DevicePools) -> Vec<HostPoolSpec> {
    let m = inp.model;
    let page = inp.device.page_size.max(1);
    let drafts = inp.draft.mtp_layers as u64;
    let packed = drafts > 0
        && match inp.rules.mtp_draft_host {
            MtpDraftHost::Packed => true,
            MtpDraftHost::PackedUnifiedTreeOnly => routes_unified(&m.attention),
            MtpDraftHost::SeparatePool => false,
        };
    let per_layer = m.attention.kv_bytes_per_token_layer(inp.layout, inp.dtype);
    // The device pools' bytes per token (`get_kv_size_bytes`, what `_split_hicache_size`
    // and the auto-size estimate read), in the host geometry's order.
    let device_geo = inp.device_geometry();
    let mut out: Vec<HostPoolSpec> = inp
        .host_geometry()
        .into_iter()
        .zip(device_geo)
        .map(|(g, dg)| {
            let mut bpt = g.bytes_per_token;
            if packed {
                bpt += match (g.name, &m.attention) {
                    ("kv", _) => per_layer * drafts,
                    (
                        "indexer",
                        Attention::MlaDsa {
                            indexer_bytes_per_token_layer,
                            ..
                        },
                    ) => indexer_bytes_per_token_layer * drafts,
                    _ => 0,
                };
            }
            let capacity = if g.name == "swa" {
                dev.swa_tokens.unwrap_or(dev.full_tokens)
            } else {
                dev.full_tokens
            };
            HostPoolSpec {
                name: g.name,
                unit: PoolUnit::Tokens,
                bytes_per_unit: bpt,
                device_capacity: capacity,
                page_size: page,
                device_bytes: device_pool_bytes(capacity, page, dg.bytes_per_token),
                sizing: if g.name == "indexer" {
                    HostSizing::MirrorFirst
                } else {
                    HostSizing::Own
                },
            }
        })
        .collect();
    if let (Some(slots), Some(per_slot)) = (
        dev.state_slots,
        m.attention.state_bytes_per_slot(inp.layout),
    ) {
        out.push(HostPoolSpec {
            name: "state",
            unit: PoolUnit::Slots,
            bytes_per_unit: per_slot,
            device_capacity: slots,
            page_size: 1,
            device_bytes: (slots + 1) * per_slot,
            sizing: HostSizing::Own,
        });
    }
    if drafts > 0 && inp.rules.mtp_draft_host == MtpDraftHost::SeparatePool {
        out.push(HostPoolSpec {
            name: "draft",
            unit: PoolUnit::Tokens,
            bytes_per_unit: per_layer * drafts,
            device_capacity: dev.full_tokens,
            page_size: page,
            device_bytes: device_pool_bytes(dev.full_tokens, page, per_layer * drafts),
            sizing: HostSizing::DraftRatio,
        });
    }
    out
}

/// DeepSeek-V4's host pools of one rank ([`crate::model::dsv4::Dsv4Geometry::host_pools`]),
/// as specs: counted in host pages of `page` tokens of the full device pool (`full`
/// tokens) or of the SWA pool (`swa` tokens). `device_bytes` is the device pool's share
/// the pool mirrors (informative: `--hicache-size`, which would split by it, is refused).
pub fn dsv4_host_pool_specs(
    geo: &crate::model::dsv4::Dsv4Geometry,
    full: u64,
    swa: u64,
    page: u64,
) -> Vec<HostPoolSpec> {
    use crate::model::dsv4::Dsv4HostBasis;
    geo.host_pools(page)
        .into_iter()
        .map(|p| {
            let capacity = match p.basis {
                Dsv4HostBasis::Full => full,
                Dsv4HostBasis::Swa => swa,
            };
            HostPoolSpec {
                name: p.name,
                unit: PoolUnit::Pages,
                bytes_per_unit: p.bytes_per_page(),
                device_capacity: capacity,
                page_size: page.max(1),
                device_bytes: capacity.div_ceil(page.max(1)) * p.bytes_per_page(),
                sizing: HostSizing::Dsv4Pages,
            }
        })
        .collect()
}

/// `hybrid_pool_assembler.py: _split_hicache_size` (0.5.17–0.5.23): `hicache_size *
/// size_bytes / total_device_pool_size` per pool, Python true division of the exact
/// integer product (the flag is an `int` of GB).
pub fn split_hicache_size(hicache_size_gb: f64, device_bytes: &[u64]) -> Vec<f64> {
    let total: u128 = device_bytes.iter().map(|&b| b as u128).sum();
    device_bytes
        .iter()
        .map(|&b| {
            if total == 0 {
                return 0.0;
            }
            if hicache_size_gb.fract() == 0.0 && hicache_size_gb >= 0.0 {
                // int * int is exact in Python; one rounding in the division.
                let num = hicache_size_gb as u128 * b as u128;
                num as f64 / total as f64
            } else {
                hicache_size_gb * b as f64 / total as f64
            }
        })
        .collect()
}

/// Host units (tokens or slots, after the padding page) of each pool of `specs`.
///
/// Each `Own` pool: `int(device_capacity * ratio)` or `int(host_size * 1e9 //
/// size_per_token)` with `host_size` its share of `--hicache-size` (the whole size before
/// 0.5.17, [`split_hicache_size`] over the `Own` pools from 0.5.17 when there are more
/// than one); then `page_num = size // page_size + 1`, `size = page_num * page_size`
/// (`pool_host/base.py: HostKVCache.__init__`, `pool_host/mamba.py:
/// MambaPoolHost.__init__`). Mirrors and draft pools follow the first pool.
pub fn host_pool_counts(
    specs: &[HostPoolSpec],
    arg: HostPoolSizeArg,
    split: HicacheSizeSplit,
) -> Vec<u64> {
    let own: Vec<usize> = (0..specs.len())
        .filter(|&i| specs[i].sizing == HostSizing::Own)
        .collect();
    if specs.iter().any(|s| s.sizing == HostSizing::Dsv4Pages) {
        // DeepSeek-V4: every pool from the ratio (a size was refused before).
        let ratio = match arg {
            HostPoolSizeArg::Ratio(r) => r,
            HostPoolSizeArg::SizeGb(_) => 0.0,
        };
        return specs
            .iter()
            .map(|s| crate::model::dsv4::dsv4_host_pages(s.device_capacity, s.page_size, ratio))
            .collect();
    }
    let shares: Vec<f64> = match arg {
        HostPoolSizeArg::SizeGb(gb)
            if split == HicacheSizeSplit::ByDeviceBytes && own.len() > 1 =>
        {
            let bytes: Vec<u64> = own.iter().map(|&i| specs[i].device_bytes).collect();
            split_hicache_size(gb, &bytes)
        }
        HostPoolSizeArg::SizeGb(gb) => vec![gb; own.len()],
        HostPoolSizeArg::Ratio(_) => vec![0.0; own.len()],
    };
    let pad = |size: i128, page: u64| {
        let page = page.max(1);
        (size.max(0) as u64 / page + 1) * page
    };
    let mut out = vec![0u64; specs.len()];
    for (k, &i) in own.iter().enumerate() {
        let s = &specs[i];
        let size = match arg {
            HostPoolSizeArg::Ratio(r) => py_int(s.device_capacity as f64 * r),
            HostPoolSizeArg::SizeGb(_) => py_int(py_float_floordiv(
                shares[k] * 1e9,
                s.bytes_per_unit.max(1) as f64,
            )),
        };
        out[i] = pad(size, s.page_size);
    }
    let first = out.first().copied().unwrap_or(0);
    for (i, s) in specs.iter().enumerate() {
        match s.sizing {
            HostSizing::Own | HostSizing::Dsv4Pages => {}
            HostSizing::MirrorFirst => out[i] = first,
            HostSizing::DraftRatio => {
                let cap = s.device_capacity.max(1) as f64;
                let ratio = first as f64 / cap;
                out[i] = pad(py_int(cap * ratio), s.page_size);
            }
        }
    }
    out
}
