//! The parallel layout of one engine: TP, PP, DP (attention), nodes.

use serde::{Deserialize, Serialize};

/// `--tp-size`, `--pp-size`, `--dp-size`, `--enable-dp-attention`, `--nnodes`.
///
/// World size = `tp_size * pp_size`. With `--enable-dp-attention` SGLang runs the DP
/// attention groups *inside* the TP group (`attn_tp_size = tp_size // dp_size`), so DP
/// does not add ranks; without it, `dp_size > 1` means separate engines (one per DP
/// rank, each with this layout), which the caller models as several engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParallelLayout {
    pub tp_size: u32,
    pub pp_size: u32,
    pub dp_size: u32,
    pub enable_dp_attention: bool,
    pub nnodes: u32,
}

impl Default for ParallelLayout {
    fn default() -> Self {
        Self {
            tp_size: 1,
            pp_size: 1,
            dp_size: 1,
            enable_dp_attention: false,
            nnodes: 1,
        }
    }
}

impl ParallelLayout {
    /// TP only, one node.
    pub fn tp(tp_size: u32) -> Self {
        Self {
            tp_size,
            ..Self::default()
        }
    }

    /// `tp_size * pp_size` (the torch.distributed world of one engine).
    pub fn world_size(&self) -> u64 {
        self.tp_size.max(1) as u64 * self.pp_size.max(1) as u64
    }

    /// The TP size the attention layers shard KV heads over:
    /// `tp_size // dp_size` with DP attention (`layers/dp_attention.py:
    /// compute_dp_attention_world_info`), else `tp_size`.
    pub fn attn_tp_size(&self) -> u64 {
        let tp = self.tp_size.max(1) as u64;
        if self.enable_dp_attention {
            (tp / self.dp_size.max(1) as u64).max(1)
        } else {
            tp
        }
    }

    /// Ranks sharing one host: mirrors `mem_cache/pool_host/base.py: ranks_per_host`
    /// (V2 #35540 onwards): 1 for a single-rank world, else `max(world_size // nnodes, 1)`.
    pub fn ranks_per_host(&self) -> u64 {
        crate::sizing::ranks_per_host(self.world_size(), self.nnodes.max(1) as u64)
    }
}
