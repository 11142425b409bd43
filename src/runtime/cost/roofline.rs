//! The roofline fallback (docs/src/design/time-model.md §6) for a (model, GPU, TP) without a cost
//! table: FLOPs and bytes from the model's `config.json`, peaks from the GPU's data
//! sheet, efficiencies fitted on the tables (`tools/costs/roofline_fit.md`, the Hopper
//! rows: the GPUs the roofline serves here — H20, H800, A10 — have no profiled data).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the roofline needs of a GPU. Dense (not sparse) tensor FLOPS.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuSpec {
    pub name: &'static str,
    pub bf16_flops: f64,
    /// `None`: no FP8 tensor cores (Ampere): FP8 weights run at the BF16 rate.
    pub fp8_flops: Option<f64>,
    pub hbm_bandwidth: f64,
    /// GPU-to-GPU bandwidth one all-reduce sees (NVLink, else PCIe), bytes/s.
    pub interconnect: f64,
    /// Hopper or Blackwell efficiencies (`roofline_fit.md`); Ampere borrows Hopper's.
    pub family: &'static str,
}

/// Data-sheet figures. H100/H200: `aiconfigurator-core` 0.12.0 `systems/*.yaml` (the
/// tables' `gpu` block); H100-PCIe: NVIDIA H100 data sheet, PCIe 80 GB column (756
/// TFLOPS BF16 / 1 513 FP8 dense, 2.0 TB/s; no NVLink bridge assumed: PCIe Gen5 x16,
/// 64 GB/s); H800: the H100 SXM die with NVLink cut to 400 GB/s (NVIDIA
/// H800 data sheet); H20: 148 TFLOPS BF16 / 296 FP8 dense, 4.0 TB/s, NVLink 900 GB/s
/// (NVIDIA H20 product brief); A10: 125 TFLOPS BF16 dense, 600 GB/s GDDR6, no NVLink —
/// the ranks all-reduce over PCIe Gen4 x16 (≈ 25 GB/s achieved, an estimate).
pub const GPUS: [GpuSpec; 6] = [
    GpuSpec {
        name: "H100",
        bf16_flops: 989e12,
        fp8_flops: Some(1978e12),
        hbm_bandwidth: 3.35e12,
        interconnect: 450e9,
        family: "hopper",
    },
    GpuSpec {
        name: "H100-PCIe",
        bf16_flops: 756e12,
        fp8_flops: Some(1513e12),
        hbm_bandwidth: 2.0e12,
        interconnect: 64e9,
        family: "hopper",
    },
    GpuSpec {
        name: "H200",
        bf16_flops: 989e12,
        fp8_flops: Some(1978e12),
        hbm_bandwidth: 4.8e12,
        interconnect: 450e9,
        family: "hopper",
    },
    GpuSpec {
        name: "H800",
        bf16_flops: 989e12,
        fp8_flops: Some(1978e12),
        hbm_bandwidth: 3.35e12,
        interconnect: 200e9,
        family: "hopper",
    },
    GpuSpec {
        name: "H20",
        bf16_flops: 148e12,
        fp8_flops: Some(296e12),
        hbm_bandwidth: 4.0e12,
        interconnect: 450e9,
        family: "hopper",
    },
    GpuSpec {
        name: "A10",
        bf16_flops: 125e12,
        fp8_flops: None,
        hbm_bandwidth: 600e9,
        interconnect: 25e9,
        family: "ampere",
    },
];

/// A GPU the roofline has no figures for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no roofline GPU `{name}` (known: {})",
    GPUS.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
)]
pub struct UnknownGpu {
    pub name: String,
}

pub fn gpu(name: &str) -> Result<&'static GpuSpec, UnknownGpu> {
    GPUS.iter()
        .find(|g| g.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| UnknownGpu {
            name: name.to_string(),
        })
}

/// A roofline for one (model, GPU, TP), per rank. Every field can be set in a scenario
/// (`compute: {source: {kind: roofline, …}}`); [`Roofline::derive`] fills them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Roofline {
    /// Decoder layers (the all-reduces: two per layer).
    pub layers: u32,
    /// Matmul FLOPs per new token per rank: 2 × active matmul parameters ÷ TP.
    pub linear_flops_per_token: f64,
    /// Attention FLOPs per (new token, attended token) pair per rank:
    /// 2 × heads × (d_qk + d_v) × attention layers ÷ TP.
    pub attn_flops_per_pair: f64,
    /// Attended tokens per new token at most (sparse attention: index top-k plus the
    /// sliding window); `None` = the whole context.
    pub attn_context_cap: Option<u64>,
    /// Dense peak for the weights' dtype, and for attention (BF16), FLOPS.
    pub linear_peak: f64,
    pub attn_peak: f64,
    pub mfu_linear: f64,
    pub mfu_attn: f64,
    /// Bytes per token one all-reduce moves (hidden × 2 B × 2(TP−1)/TP); 0 at TP 1.
    pub allreduce_bytes_per_token: f64,
    pub interconnect: f64,
    /// Fixed time of one all-reduce, µs.
    pub allreduce_latency_us: f64,
    /// Weights one decode step reads per rank (dense + one token's experts), bytes.
    pub decode_weight_bytes: f64,
    /// KV bytes per token per rank.
    pub kv_bytes_per_token: f64,
    pub hbm_bandwidth: f64,
    pub hbm_util: f64,
    /// Per decode step: launches, sampling, all-reduce latencies, µs.
    pub step_fixed_us: f64,
}

fn num(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// The inputs of [`Roofline::derive`] that come from the model description.
#[derive(Debug, Clone, Copy)]
pub struct ModelFacts {
    pub layers: u32,
    pub hidden: f64,
    /// Matmul parameters a token goes through (attention projections, dense MLPs,
    /// shared experts, top-k routed experts; not the embedding, not the LM head: in
    /// prefill the logits are computed for the last token only).
    pub active_matmul_params: f64,
    pub heads: f64,
    pub d_qk: f64,
    pub d_v: f64,
    pub attn_context_cap: Option<u64>,
    pub moe: bool,
    /// Weights stored in 8 bits or fewer (FP8 GEMMs where the GPU has them).
    pub low_precision: bool,
    pub weight_bytes_per_param: f64,
    pub kv_bytes_per_token_rank: f64,
}

impl ModelFacts {
    /// From a Hugging Face text config and the model's parameter counts.
    pub fn from_config(
        text: &Value,
        params: &crate::model::weights::ParamCounts,
        low_precision: bool,
        weight_bytes_per_param: f64,
        kv_bytes_per_token_rank: f64,
    ) -> ModelFacts {
        let heads = num(text, "num_attention_heads").unwrap_or(1.0);
        let hidden = num(text, "hidden_size").unwrap_or(0.0);
        let head_dim = num(text, "head_dim").unwrap_or(hidden / heads);
        let (d_qk, d_v) = match (num(text, "qk_nope_head_dim"), num(text, "qk_rope_head_dim")) {
            (Some(nope), Some(rope)) => (nope + rope, num(text, "v_head_dim").unwrap_or(nope)),
            _ => (head_dim, head_dim),
        };
        let experts = num(text, "n_routed_experts")
            .or_else(|| num(text, "num_experts"))
            .or_else(|| num(text, "num_local_experts"));
        let topk = num(text, "num_experts_per_tok").unwrap_or(0.0);
        let routed = match experts {
            Some(e) if e > 0.0 => params.routed_experts as f64 * topk / e,
            _ => 0.0,
        };
        let cap = num(text, "index_topk")
            .map(|k| (k + num(text, "sliding_window").unwrap_or(0.0)) as u64);
        ModelFacts {
            layers: params.layers,
            hidden,
            active_matmul_params: (params.attention + params.dense_mlp + params.shared_experts)
                as f64
                + routed,
            heads,
            d_qk,
            d_v,
            attn_context_cap: cap,
            moe: params.routed_experts > 0,
            low_precision,
            weight_bytes_per_param,
            kv_bytes_per_token_rank,
        }
    }
}

impl Roofline {
    /// Efficiencies: Hopper rows of `tools/costs/roofline_fit.md` (MFU of the linear
    /// operators at 16K tokens: dense Llama-3.1-70B bf16 0.52 at TP4 / 0.44 at TP8, fp8
    /// 0.40 / 0.29; MoE Qwen3-235B-A22B bf16 0.36 / 0.23, fp8 0.18; attention 0.63;
    /// decode HBM utilisation 0.55 at B = 1, fixed 3.8 ms per step).
    pub fn derive(m: &ModelFacts, g: &GpuSpec, tp: u32) -> Roofline {
        let tpf = f64::from(tp.max(1));
        let big_tp = tp >= 8;
        let mfu_linear = match (m.moe, m.low_precision && g.fp8_flops.is_some(), big_tp) {
            (false, false, false) => 0.52,
            (false, false, true) => 0.44,
            (false, true, false) => 0.40,
            (false, true, true) => 0.29,
            (true, false, false) => 0.36,
            (true, false, true) => 0.23,
            (true, true, _) => 0.18,
        };
        let linear_peak = if m.low_precision {
            g.fp8_flops.unwrap_or(g.bf16_flops)
        } else {
            g.bf16_flops
        };
        Roofline {
            layers: m.layers,
            linear_flops_per_token: 2.0 * m.active_matmul_params / tpf,
            attn_flops_per_pair: 2.0 * m.heads * (m.d_qk + m.d_v) * f64::from(m.layers) / tpf,
            attn_context_cap: m.attn_context_cap,
            linear_peak,
            attn_peak: g.bf16_flops,
            mfu_linear,
            mfu_attn: 0.63,
            allreduce_bytes_per_token: if tp > 1 {
                m.hidden * 2.0 * 2.0 * (tpf - 1.0) / tpf
            } else {
                0.0
            },
            interconnect: g.interconnect,
            allreduce_latency_us: if tp > 1 { 10.0 } else { 0.0 },
            decode_weight_bytes: m.active_matmul_params * m.weight_bytes_per_param / tpf,
            kv_bytes_per_token: m.kv_bytes_per_token_rank,
            hbm_bandwidth: g.hbm_bandwidth,
            hbm_util: 0.55,
            step_fixed_us: 3800.0,
        }
    }

    /// Attention work of `n` new tokens over a prefix of `p`: Σ over the new tokens of
    /// the tokens each attends to (causal: p + i + 1), capped for sparse attention.
    fn attended_pairs(&self, n: f64, p: f64) -> f64 {
        match self.attn_context_cap {
            None => n * (p + n / 2.0),
            Some(cap) => {
                let cap = cap as f64;
                // Tokens whose context is below the cap attend to all of it.
                let below = (cap - p).clamp(0.0, n);
                below * (p + below / 2.0) + (n - below) * cap
            }
        }
    }

    /// One prefill forward of `(new, prefix)` requests, µs.
    pub fn prefill_us(&self, reqs: &[(u64, u64)]) -> f64 {
        let t: f64 = reqs.iter().map(|r| r.0 as f64).sum();
        if t == 0.0 {
            return 0.0;
        }
        let linear = t * self.linear_flops_per_token / (self.linear_peak * self.mfu_linear);
        let pairs: f64 = reqs
            .iter()
            .map(|&(n, p)| self.attended_pairs(n as f64, p as f64))
            .sum();
        let attn = pairs * self.attn_flops_per_pair / (self.attn_peak * self.mfu_attn);
        let comm = if self.allreduce_bytes_per_token > 0.0 {
            2.0 * f64::from(self.layers)
                * (t * self.allreduce_bytes_per_token / self.interconnect
                    + self.allreduce_latency_us * 1e-6)
        } else {
            0.0
        };
        (linear + attn + comm) * 1e6
    }

    /// One decode step of `batch` requests at mean context `ctx`, µs.
    pub fn decode_step_us(&self, batch: u64, ctx: u64) -> f64 {
        let bytes = self.decode_weight_bytes + (batch * ctx) as f64 * self.kv_bytes_per_token;
        self.step_fixed_us + bytes / (self.hbm_bandwidth * self.hbm_util) * 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Roofline {
        Roofline {
            layers: 10,
            linear_flops_per_token: 1e9,
            attn_flops_per_pair: 1e5,
            attn_context_cap: None,
            linear_peak: 1e14,
            attn_peak: 1e14,
            mfu_linear: 0.5,
            mfu_attn: 0.5,
            allreduce_bytes_per_token: 1000.0,
            interconnect: 1e11,
            allreduce_latency_us: 10.0,
            decode_weight_bytes: 1e9,
            kv_bytes_per_token: 1e5,
            hbm_bandwidth: 1e12,
            hbm_util: 0.5,
            step_fixed_us: 1000.0,
        }
    }

    #[test]
    fn prefill_hand_computed() {
        // 1 000 new tokens over 3 000 cached:
        // linear 1000 · 1e9 / (1e14 · 0.5) = 20 ms;
        // attention 1000 · (3000 + 500) pairs · 1e5 / 5e13 = 7 ms;
        // all-reduce 2 · 10 · (1000 · 1000 / 1e11 + 10 µs) = 0.4 ms. Total 27.4 ms.
        let t = toy().prefill_us(&[(1000, 3000)]);
        assert!((t - 27_400.0).abs() < 1e-6, "{t}");
    }

    #[test]
    fn sparse_attention_caps_the_context() {
        // cap 2 000, 1 000 new over 3 000 cached: every token attends 2 000 →
        // 2e6 pairs · 1e5 / 5e13 = 4 ms instead of 7 ms.
        let mut r = toy();
        r.attn_context_cap = Some(2000);
        let t = r.prefill_us(&[(1000, 3000)]);
        assert!((t - 24_400.0).abs() < 1e-6, "{t}");
        // Below the cap the whole causal context counts: 1 000 new over 500:
        // 1000 · (500 + 500) = 1e6 pairs → 2 ms (cap 2 000 not reached).
        let t = r.prefill_us(&[(1000, 500)]);
        assert!((t - 22_400.0).abs() < 1e-6, "{t}");
    }

    #[test]
    fn decode_hand_computed() {
        // 1e9 + 4 · 5000 · 1e5 = 3e9 bytes at 0.5 TB/s = 6 ms, + 1 ms fixed.
        let t = toy().decode_step_us(4, 5000);
        assert!((t - 7000.0).abs() < 1e-6, "{t}");
    }
}
