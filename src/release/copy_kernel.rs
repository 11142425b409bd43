//! The SM copy kernel a load-back runs with `--hicache-io-backend kernel`.
//!
//! With the `kernel` io backend a load-back is not a copy-engine `cudaMemcpy`: per layer,
//! a kernel on the SMs reads the pinned host rows in place (`mem_cache/pool_host/mla.py`,
//! `mha.py: load_to_device_per_layer` → `kernels/ops/kvcache/hicache.py:
//! transfer_hicache_one_layer` / `_mla`, or sgl-kernel's `transfer_kv_per_layer*` /
//! `_pf_lf`), on a grid capped by a block quota, so its rate is set by the CTAs it gets,
//! not by the host link. `direct` (and `page_first_direct`, which forces it:
//! `arg_groups/hicache_hook.py: resolve_layout_io_compatibility`) copies with
//! `cudaMemcpyAsync` at the link rate: no kernel cap ([`None`] in the replay).
//!
//! The rates are SGLang's own published measurement (PR #40278, "TMA-staged
//! host<->device KV transfer kernel", Speed Tests): H2D one layer at a time from a
//! page-first host pool through `MHATokenToKVPoolHost.load_to_device_per_layer`, 8
//! layers, 512 B bf16 rows (K and V: 1 KiB per token per layer), 128-token pages, GB300:
//!
//! | tokens per layer | register kernel, 2 CTAs | TMA kernel, 4 CTAs |
//! |---|---|---|
//! | 2 048 | 229 µs (73 GB/s) | 155 µs (108 GB/s) |
//! | 8 192 | 751 µs (89 GB/s) | 399 µs (168 GB/s) |
//! | 32 768 | 2 779 µs (97 GB/s) | 1 398 µs (192 GB/s) |
//!
//! A least-squares line through the three per-layer times (÷ 8) gives each kernel a
//! rate and a fixed cost per layer launch: register 98.86 GB/s + 8.13 µs, TMA
//! 202.2 GB/s + 8.73 µs (within 2.5 % of every published point, tested below). The rate
//! is the CTAs' (`hicache_tma.cuh`: "every SM has a fixed write port to L2, so one CTA
//! cannot exceed it and the block quota decides how much of the host link is used"),
//! so it is applied on every NVIDIA node; it binds only where the link is faster (the
//! Grace trays and GH200: NVLink-C2C); on a PCIe Gen5 node (55 GB/s × 0.85) the link
//! stays the limit. Measured for the page-first layout; layer_first runs the same
//! kernel on another host view and is given the same rate (no separate figure).

use serde::{Deserialize, Serialize};

use crate::units::Nanos;

/// Which SM copy kernel a `kernel`-backend load-back runs (a release rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LoadBackKernel {
    /// The register-staging kernel at its CUDA block quota of 2
    /// (`kernels/ops/kvcache/hicache.py: DEFAULT_BLOCK_QUOTA = 2`; sgl-kernel's AOT
    /// `transfer_kv_per_layer*` default the same): 0.5.14–0.5.20.
    #[serde(rename = "register_2cta")]
    Register2Cta,
    /// The TMA bulk-copy kernel at 4 CTAs (`hicache.py: use_hicache_tma_kernel`,
    /// `TMA_BLOCK_QUOTA = 4`, `SGLANG_HICACHE_TMA_TRANSFER` on by default; sm_90+):
    /// 0.5.21+.
    #[serde(rename = "tma_4cta")]
    Tma4Cta,
}

impl LoadBackKernel {
    /// Bytes per second the kernel moves (PR #40278 fit, above).
    pub fn rate(self) -> f64 {
        match self {
            Self::Register2Cta => 98.86e9,
            Self::Tma4Cta => 202.2e9,
        }
    }

    /// Fixed cost of one per-layer launch, ns (PR #40278 fit, above).
    pub fn per_launch_ns(self) -> Nanos {
        match self {
            Self::Register2Cta => 8_130,
            Self::Tma4Cta => 8_730,
        }
    }

    /// Time of `launches` per-layer launches moving `bytes` in all.
    pub fn time_ns(self, bytes: u64, launches: u64) -> Nanos {
        if bytes == 0 {
            return 0;
        }
        launches * self.per_launch_ns() + (bytes as f64 / self.rate() * 1e9).round() as Nanos
    }

    pub fn id(self) -> &'static str {
        match self {
            Self::Register2Cta => "register_2cta",
            Self::Tma4Cta => "tma_4cta",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_reproduces_pr_40278_within_three_percent() {
        // 8 layers of `tokens` × 1 KiB: e.g. 2 048 tokens → 8 × 2 MiB = 16 777 216 B,
        // register: 8 × 8.13 µs + 16 777 216 / 98.86e9 s = 65.0 + 169.7 = 234.7 µs (229).
        for (k, points) in [
            (
                LoadBackKernel::Register2Cta,
                [(2048u64, 229.0), (8192, 751.0), (32768, 2779.0)],
            ),
            (
                LoadBackKernel::Tma4Cta,
                [(2048, 155.0), (8192, 399.0), (32768, 1398.0)],
            ),
        ] {
            for (tokens, us) in points {
                let t = k.time_ns(8 * tokens * 1024, 8) as f64 / 1e3;
                assert!((t / us - 1.0).abs() < 0.03, "{k:?} {tokens}: {t} vs {us}");
            }
        }
        assert_eq!(
            LoadBackKernel::Register2Cta.time_ns(16_777_216, 8),
            65_040 + 169_707
        );
    }
}
