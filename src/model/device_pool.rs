//! The device (GPU) KV pool size, as SGLang profiles it at start-up.

use serde::{Deserialize, Serialize};

/// Inputs of [`device_pool_tokens`]. All bytes per rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicePoolInputs {
    /// Free GPU memory before the model load (`pre_model_load_memory` /
    /// `total_gpu_memory` in SGLang): the nvidia-smi capacity minus the CUDA context and
    /// NCCL buffers.
    pub free_before_load: u64,
    /// Weights resident on this rank (checkpoint bytes / (tp*pp) unless overridden).
    pub weights_per_rank: u64,
    /// `--mem-fraction-static`.
    pub mem_fraction_static: f64,
    /// Bytes per token summed over the device pools (`cell_size`).
    pub cell_size: u64,
    /// `--page-size`.
    pub page_size: u64,
    /// `--max-total-tokens`, if given.
    pub max_total_tokens: Option<u64>,
}

/// Tokens of the device KV pool (its usable `size`).
///
/// Mirrors `model_executor/model_runner.py: profile_max_num_token` (all versions):
/// `rest = available_after_load - total_before_load * (1 - mem_fraction_static)` in GiB
/// floats, `max_num_token = int(rest * (1 << 30) // cell_size)`; then
/// `init_memory_pool`: `min(max_total_tokens, profiled)` if the user gave one, and page
/// alignment `tokens // page_size * page_size`. A negative rest gives 0 (SGLang then
/// raises "Not enough memory"; the caller decides what to report).
pub fn device_pool_tokens(inp: &DevicePoolInputs) -> u64 {
    tokens_from_rest(
        profile_rest_gib(inp),
        inp.cell_size.max(1) as f64,
        inp.max_total_tokens,
        inp.page_size,
    )
}

/// `rest = available_after_load - total_before_load * (1 - mem_fraction_static)` in GiB
/// floats (`profile_max_num_token`, every modelled release).
pub fn profile_rest_gib(inp: &DevicePoolInputs) -> f64 {
    const GIB: f64 = (1u64 << 30) as f64;
    let before = inp.free_before_load as f64 / GIB;
    let after = inp.free_before_load.saturating_sub(inp.weights_per_rank) as f64 / GIB;
    after - before * (1.0 - inp.mem_fraction_static)
}

/// `int(rest * (1 << 30) // cell_size)` (0 when negative), capped by `--max-total-tokens`
/// and page-aligned: the tail of [`device_pool_tokens`] for a rest and a cell size the
/// caller worked out (a hybrid model's rest after its state pool, a sliding-window
/// model's cell).
pub fn tokens_from_rest(rest_gib: f64, cell: f64, max_total_tokens: Option<u64>, page: u64) -> u64 {
    const GIB: f64 = (1u64 << 30) as f64;
    let profiled = crate::sizing::py_float_floordiv(rest_gib * GIB, cell);
    let mut tokens = if profiled > 0.0 { profiled as u64 } else { 0 };
    if let Some(m) = max_total_tokens {
        tokens = tokens.min(m);
    }
    let page = page.max(1);
    tokens / page * page
}

/// Bytes of one device pool as `get_kv_size_bytes` reports them: the buffers hold
/// `size + page_size` rows (one padding page, `mem_cache/memory_pool.py`).
pub fn device_pool_bytes(tokens: u64, page_size: u64, bytes_per_token: u64) -> u64 {
    (tokens + page_size) * bytes_per_token
}

/// What `--mem-fraction-static`'s default depends on (the resolved server arguments
/// `_handle_gpu_memory_settings` reads).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemFractionInputs {
    /// `get_device_memory_capacity`: the smallest nvidia-smi `memory.total` of the
    /// node's GPUs, in MiB (`utils/common.py: get_nvgpu_memory_capacity`; rocminfo's
    /// pool size on HIP).
    pub gpu_mem_mib: f64,
    pub tp_size: u32,
    pub pp_size: u32,
    pub dp_size: u32,
    pub enable_dp_attention: bool,
    /// The model runs the MLA backend (`use_mla_backend`).
    pub use_mla: bool,
    /// The model has a DSA indexer (`is_deepseek_dsa`).
    pub is_dsa: bool,
    /// A DeepSeek-V4 model (`is_deepseek_v4`): its prefill CUDA graph is off in every
    /// modelled release ([`mem_fraction_static_default`]).
    pub is_dsv4: bool,
    /// `--chunked-prefill-size` if given (-1 disables chunking).
    pub chunked_prefill_size: Option<i64>,
    /// `--max-prefill-tokens` (16384 by default).
    pub max_prefill_tokens: i64,
    /// `--cuda-graph-max-bs` if given.
    pub cuda_graph_max_bs: Option<u32>,
    /// `--disable-cuda-graph`.
    pub disable_cuda_graph: bool,
    /// `--enable-hierarchical-cache` (turns the 0.5.14 `tc_piecewise` prefill graph off).
    pub enable_hierarchical_cache: bool,
    /// `--max-running-requests` if given.
    pub max_running_requests: Option<u64>,
    /// `--moe-a2a-backend deepep` (reserves 2 GiB for its buffers, 0.5.15+).
    pub deepep: bool,
    /// A model served as multimodal ([`crate::model::multimodal`]): its prefill graph
    /// off unless allowlisted, and the fraction lowered by `adjust_mem_fraction_for_vlm`.
    pub multimodal: Option<crate::model::multimodal::Served>,
    /// A ROCm (HIP) node: no prefill CUDA graph (`tc_piecewise` is turned off on HIP,
    /// "non-CUDA hardware", and from 0.5.23 `default_prefill_backend` is `disabled` off
    /// CUDA).
    pub hip: bool,
    /// `--disaggregation-mode` ([`crate::release::PdRoles`]).
    pub pd_role: crate::domain::DisaggregationMode,
    /// `--speculative-num-draft-tokens` as given (a decode server's activation reads
    /// the flag before the speculative hook resolves it).
    pub speculative_num_draft_tokens: Option<u32>,
}

/// The `--mem-fraction-static` a release chooses when the user gives none, and the
/// defaults it chose on the way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemFractionDefault {
    pub mem_fraction_static: f64,
    /// `chunked_prefill_size` after the GPU-tier default.
    pub chunked_prefill_size: i64,
    /// Decode CUDA graph `max_bs`.
    pub decode_max_bs: u32,
    /// Whether a prefill CUDA graph backend stays on (its reserve is counted).
    pub prefill_graph: bool,
    /// `reserved_mem` in MiB.
    pub reserved_mib: f64,
}

/// Prefill CUDA-graph batch sizes for a `max_bs` (`_generate_prefill_cuda_graph_batch_sizes`,
/// every modelled release): 4..32 by 4, 48..256 by 16, 288..512 by 32, 576..1024 by 64,
/// 1280..4096 by 256, 4608..max_bs by 512, cut at `max_bs`.
pub fn prefill_cuda_graph_batch_count(max_bs: i64) -> usize {
    let mut n = 0;
    let mut add = |start: i64, end_incl: i64, step: i64| {
        let mut x = start;
        while x <= end_incl {
            if x <= max_bs {
                n += 1;
            }
            x += step;
        }
    };
    add(4, 32, 4);
    add(48, 256, 16);
    add(288, 512, 32);
    add(576, 1024, 64);
    add(1280, 4096, 256);
    add(4608, max_bs, 512);
    n
}

/// `--mem-fraction-static`'s default.
///
/// Mirrors `server_args.py: _handle_gpu_memory_settings` (0.5.14–0.5.18) and
/// `arg_groups/memory_hook.py: handle_gpu_memory_settings` with `reserve_for_graph_mb`
/// and `reserve_for_deepep_a2a_mb` (0.5.19+), for a CUDA node outside PD
/// disaggregation, a text model and `SGLANG_ENABLE_POST_CAPTURE_KV_SIZING` unset (its
/// default in every modelled release):
///
/// 1. GPU tier (nvidia-smi MiB): < 20 GiB: chunked prefill 2048, decode max_bs 8;
///    < 35 GiB: [`MidGpuTier`]; < 60 GiB: 4096, 32 (TP < 4) or 160; < 160 GiB: 8192, 256
///    or 512; else 16384, 512. Explicit flags win.
/// 2. `reserved_mem = 512 + max(chunk, 2048) * 1.5 + tp * pp / 8 * 1024` MiB, plus the
///    decode graph `max_bs * 2`, plus with DP attention `max_bs * dp * 3` (and
///    `* 1.5` more above max_bs 300), plus the prefill graph (`len(bs) * 8`, or
///    1.5 GiB for MLA) when [`PrefillGraphDefault`] leaves it on; at least 10 GiB on a
///    GPU above 60 GiB; plus 2 GiB for DeepEP (0.5.15+). DeepSeek-V4's prefill graph is
///    off before this runs in every modelled release, the same outcome through three
///    rules: 0.5.14 `configs/model_config.py: piecewise_cuda_graph_disabled_model_archs`
///    lists `DeepseekV4ForCausalLM` (`server_args.py:
///    _disable_tc_piecewise_cudagraph_if_incompatible`, "model-arch blacklist");
///    0.5.15–0.5.18 `server_args.py: _disable_breakable_cudagraph_if_incompatible` and
///    0.5.19–0.5.23 `arg_groups/cuda_graph_hook.py:
///    disable_breakable_cudagraph_if_incompatible` turn the breakable graph off for
///    "DeepSeek-V4 (heavy capture-pool memory pressure)" (0.5.23: unless
///    `supports_prefill_cp_bcg`, prefill context parallelism, not modelled).
/// 3. `round((gpu_mem - reserved_mem) / gpu_mem, 3)`.
///
/// Speculative decoding does not enter the default outside PD decode nodes (it enters
/// the pool through the draft's weights and cell size instead).
pub fn mem_fraction_static_default(
    inp: &MemFractionInputs,
    rules: crate::release::DevicePoolRules,
) -> MemFractionDefault {
    use crate::domain::DisaggregationMode as Pd;
    use crate::release::{MidGpuTier, PdRoles, PrefillGraphDefault};
    let g = inp.gpu_mem_mib;
    let role_aware = rules.pd_roles == PdRoles::RoleAware;
    let prefill_server = inp.pd_role == Pd::Prefill;
    let decode_server = inp.pd_role == Pd::Decode;
    // 0.5.14's prefill server runs without CUDA graphs (`handle_pd_disaggregation`).
    let disable_cuda_graph = inp.disable_cuda_graph || (!role_aware && prefill_server);
    let tp = inp.tp_size.max(1);
    let (chunk_default, bs_small_tp, bs_large_tp): (i64, u32, u32) = if g < 20.0 * 1024.0 {
        (2048, 8, 8)
    } else if g < 35.0 * 1024.0 {
        match rules.mid_gpu_tier {
            MidGpuTier::Chunk2kBs24 => (2048, 24, 80),
            MidGpuTier::Chunk4kBs48 => (4096, 48, 160),
        }
    } else if g < 60.0 * 1024.0 {
        (4096, 32, 160)
    } else if g < 160.0 * 1024.0 {
        (8192, 256, 512)
    } else {
        (16384, 512, 512)
    };
    let chunk = inp.chunked_prefill_size.unwrap_or(chunk_default);
    let mut max_bs =
        inp.cuda_graph_max_bs
            .unwrap_or(if tp < 4 { bs_small_tp } else { bs_large_tp });
    if inp.cuda_graph_max_bs.is_none()
        && rules.decode_max_bs_capped_by_running
        && let Some(r) = inp.max_running_requests
        && (max_bs as u64) > r
    {
        max_bs = r as u32;
    }
    let prefill_graph = !disable_cuda_graph
        && !inp.hip
        // Off on a decode server (0.5.15+), on either side in 0.5.14 ("PD disaggregation").
        && !(decode_server || (!role_aware && inp.pd_role != Pd::Null))
        && !inp.is_dsv4
        && inp
            .multimodal
            .as_ref()
            .is_none_or(|m| m.keeps_prefill_graph)
        && match rules.prefill_graph {
            PrefillGraphDefault::TcPiecewise => {
                !inp.enable_hierarchical_cache && !inp.enable_dp_attention && inp.pp_size <= 1
            }
            PrefillGraphDefault::BreakableNoMla => !inp.use_mla && !inp.enable_dp_attention,
            PrefillGraphDefault::BreakableNoPlainMla => !inp.use_mla || inp.is_dsa,
            PrefillGraphDefault::Breakable => true,
        };
    let activation_tokens = if role_aware && decode_server {
        let running = inp.max_running_requests.unwrap_or(max_bs.max(1) as u64) as i64;
        let draft = i64::from(inp.speculative_num_draft_tokens.unwrap_or(1));
        (running * draft).max(2048)
    } else if chunk > 0 {
        chunk.max(2048)
    } else {
        inp.max_prefill_tokens.max(2048)
    };
    // A 0.5.15+ prefill server has no decode graph, DP padding or DeepEP buffers.
    let decode_side = !(role_aware && prefill_server);
    let mut reserved = 512.0 + activation_tokens as f64 * 1.5;
    reserved += (tp * inp.pp_size.max(1)) as f64 / 8.0 * 1024.0;
    if decode_side && (!disable_cuda_graph || rules.decode_reserve_without_graph) {
        reserved += max_bs as f64 * 2.0;
    }
    if inp.enable_dp_attention && decode_side {
        let dp = inp.dp_size.max(1) as f64;
        reserved += max_bs as f64 * dp * 3.0;
        if max_bs > 300 {
            reserved += max_bs as f64 * dp * 1.5;
        }
    }
    if prefill_graph {
        if inp.use_mla {
            reserved += 1.5 * 1024.0;
        } else {
            let prefill_max_bs = chunk.max(0);
            reserved += prefill_cuda_graph_batch_count(prefill_max_bs) as f64 * 8.0;
        }
    }
    if g > 60.0 * 1024.0 {
        reserved = reserved.max(10.0 * 1024.0);
    }
    if inp.deepep && rules.deepep_reserve && !disable_cuda_graph && decode_side {
        reserved += 2.0 * 1024.0;
    }
    let f = crate::sizing::py_round((g - reserved) / g, 3);
    MemFractionDefault {
        mem_fraction_static: inp
            .multimodal
            .as_ref()
            .map_or(f, |m| m.adjust_mem_fraction_for_vlm(f)),
        chunked_prefill_size: chunk,
        decode_max_bs: max_bs,
        prefill_graph,
        reserved_mib: reserved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    fn inp(gpu_mem_mib: f64, tp: u32) -> MemFractionInputs {
        MemFractionInputs {
            gpu_mem_mib,
            tp_size: tp,
            pp_size: 1,
            dp_size: 1,
            enable_dp_attention: false,
            use_mla: false,
            is_dsa: false,
            is_dsv4: false,
            chunked_prefill_size: None,
            max_prefill_tokens: 16384,
            cuda_graph_max_bs: None,
            disable_cuda_graph: false,
            enable_hierarchical_cache: false,
            max_running_requests: None,
            deepep: false,
            multimodal: None,
            hip: false,
            pd_role: crate::domain::DisaggregationMode::Null,
            speculative_num_draft_tokens: None,
        }
    }

    #[test]
    fn prefill_graph_batch_counts() {
        // 8 (4..32) + 14 (48..256) + 8 (288..512) + 8 (576..1024) + 12 (1280..4096)
        // + 8 (4608..8192) = 58; 16384 adds 16 more (9216..16384) = 74; 2048: 8+14+8+8+4 = 42.
        assert_eq!(prefill_cuda_graph_batch_count(8192), 58);
        assert_eq!(prefill_cuda_graph_batch_count(16384), 74);
        assert_eq!(prefill_cuda_graph_batch_count(2048), 42);
        assert_eq!(prefill_cuda_graph_batch_count(-1), 0);
    }

    #[test]
    fn default_fraction_by_gpu_and_release() {
        let d =
            |i: &MemFractionInputs, r: Release| mem_fraction_static_default(i, r.rules().device);
        // H200 (143,771 MiB) TP8, GQA, 0.5.23: 512 + 8192 × 1.5 + 8 / 8 × 1024 + 512 × 2
        // + 58 × 8 = 15,312 MiB → round((143771 − 15312) / 143771, 3) = 0.893.
        let h200 = d(&inp(143_771.0, 8), Release::V0_5_23);
        assert_eq!(h200.reserved_mib, 15_312.0);
        assert_eq!(h200.mem_fraction_static, 0.893);
        // MLA on 0.5.23: the prefill graph reserves 1.5 GiB: 16,384 MiB → 0.886.
        let mla = MemFractionInputs {
            use_mla: true,
            ..inp(143_771.0, 8)
        };
        assert_eq!(d(&mla, Release::V0_5_23).mem_fraction_static, 0.886);
        // 0.5.15 turns the breakable prefill graph off for MLA: 14,848 → 0.897.
        assert_eq!(d(&mla, Release::V0_5_15).reserved_mib, 14_848.0);
        assert_eq!(d(&mla, Release::V0_5_15).mem_fraction_static, 0.897);
        // H100 (81,559 MiB) TP2: 512 + 12,288 + 256 + 256 × 2 + 464 = 14,032 → 0.828
        // (sglang#29092 reports 0.828 for Qwen3-32B on H100).
        assert_eq!(
            d(&inp(81_559.0, 2), Release::V0_5_23).mem_fraction_static,
            0.828
        );
        // B200 (183,359 MiB) TP8: 512 + 16,384 × 1.5 + 1,024 + 1,024 + 74 × 8 = 27,728
        // → 0.849.
        let b200 = d(&inp(183_359.0, 8), Release::V0_5_23);
        assert_eq!(b200.reserved_mib, 27_728.0);
        assert_eq!(b200.mem_fraction_static, 0.849);
        // RTX 4090 (24,564 MiB) TP1, no 10 GiB floor below 60 GiB:
        // 0.5.19: 512 + 2048 × 1.5 + 128 + 24 × 2 + 42 × 8 = 4,096 → 0.833;
        // 0.5.20: 512 + 4096 × 1.5 + 128 + 48 × 2 + 50 × 8 = 7,280 → 0.704.
        let r19 = d(&inp(24_564.0, 1), Release::V0_5_19);
        assert_eq!((r19.chunked_prefill_size, r19.decode_max_bs), (2048, 24));
        assert_eq!(r19.reserved_mib, 4_096.0);
        assert_eq!(r19.mem_fraction_static, 0.833);
        let r20 = d(&inp(24_564.0, 1), Release::V0_5_20);
        assert_eq!((r20.chunked_prefill_size, r20.decode_max_bs), (4096, 48));
        assert_eq!(r20.reserved_mib, 7_280.0);
        assert_eq!(r20.mem_fraction_static, 0.704);
        // 0.5.14 with HiCache: the tc_piecewise prefill graph is off; H200 TP8:
        // 15,312 − 464 = 14,848 → 0.897.
        let hicache = MemFractionInputs {
            enable_hierarchical_cache: true,
            ..inp(143_771.0, 8)
        };
        assert!(!d(&hicache, Release::V0_5_14).prefill_graph);
        assert_eq!(d(&hicache, Release::V0_5_14).mem_fraction_static, 0.897);
        assert!(d(&hicache, Release::V0_5_15).prefill_graph);
        // MI300X (196,592 MiB) TP8 / DP8 attention, MLA, 0.5.23: no prefill graph on HIP:
        // 512 + 16,384 × 1.5 + 1,024 + 512 × 2 + 512 × 8 × 4.5 = 45,568 → 0.768 (the
        // aiter × 0.85 comes after, in `pools::resolve_mem_fraction`).
        let mi300 = MemFractionInputs {
            hip: true,
            use_mla: true,
            dp_size: 8,
            enable_dp_attention: true,
            ..inp(196_592.0, 8)
        };
        assert_eq!(d(&mi300, Release::V0_5_23).reserved_mib, 45_568.0);
        assert_eq!(d(&mi300, Release::V0_5_23).mem_fraction_static, 0.768);
    }

    #[test]
    fn deepseek_v4_reserves_no_prefill_graph() {
        let d =
            |i: &MemFractionInputs, r: Release| mem_fraction_static_default(i, r.rules().device);
        let v4 = |gpu: f64, tp: u32| MemFractionInputs {
            is_dsv4: true,
            ..inp(gpu, tp)
        };
        // L20 (46,068 MiB) TP8: 512 + 4,096 × 1.5 + 1,024 + 160 × 2 = 8,000 MiB, no
        // 10 GiB floor below 60 GiB → round(38,068 / 46,068, 3) = 0.826; with the prefill
        // graph's 50 × 8 = 400 it was 8,400 → 0.818.
        for r in [
            Release::V0_5_14,
            Release::V0_5_17,
            Release::V0_5_21,
            Release::V0_5_23,
        ] {
            let l20 = d(&v4(46_068.0, 8), r);
            assert!(!l20.prefill_graph, "{r:?}");
            assert_eq!(
                (l20.reserved_mib, l20.mem_fraction_static),
                (8_000.0, 0.826)
            );
        }
        assert_eq!(d(&inp(46_068.0, 8), Release::V0_5_23).reserved_mib, 8_400.0);
        // H20 (97,871 MiB) TP8: 512 + 12,288 + 1,024 + 512 × 2 = 14,848 → 0.848 (15,312
        // → 0.844 with the graph's 58 × 8).
        let h20 = d(&v4(97_871.0, 8), Release::V0_5_23);
        assert_eq!(
            (h20.reserved_mib, h20.mem_fraction_static),
            (14_848.0, 0.848)
        );
        // H20 TP16 / DP2 attention: 512 + 12,288 + 2,048 + 1,024 + 512 × 2 × 3 + 512 × 2 ×
        // 1.5 = 20,480 → 0.791 (20,944 → 0.786).
        let dp = MemFractionInputs {
            dp_size: 2,
            enable_dp_attention: true,
            ..v4(97_871.0, 16)
        };
        let h20dp = d(&dp, Release::V0_5_23);
        assert_eq!(
            (h20dp.reserved_mib, h20dp.mem_fraction_static),
            (20_480.0, 0.791)
        );
    }

    #[test]
    fn dp_attention_and_running_cap() {
        let d =
            |i: &MemFractionInputs, r: Release| mem_fraction_static_default(i, r.rules().device);
        // H200 TP8 / DP8 attention, max_bs 512 > 300, 0.5.23 (breakable on with DP
        // attention): 15,312 + 512 × 8 × 3 + 512 × 8 × 1.5 = 33,744 → 0.765.
        let dpa = MemFractionInputs {
            dp_size: 8,
            enable_dp_attention: true,
            ..inp(143_771.0, 8)
        };
        assert_eq!(d(&dpa, Release::V0_5_23).reserved_mib, 33_744.0);
        assert_eq!(d(&dpa, Release::V0_5_23).mem_fraction_static, 0.765);
        // 0.5.15–0.5.16 turn the prefill graph off under DP attention: 33,280.
        assert_eq!(d(&dpa, Release::V0_5_16).reserved_mib, 33_280.0);
        // 0.5.22+: --max-running-requests 64 caps the default decode max_bs (512 → 64):
        // 512 + 12,288 + 1,024 + 128 + 464 = 14,416 → floor 10 GiB not binding → 0.900.
        let capped = MemFractionInputs {
            max_running_requests: Some(64),
            ..inp(143_771.0, 8)
        };
        assert_eq!(d(&capped, Release::V0_5_22).decode_max_bs, 64);
        assert_eq!(d(&capped, Release::V0_5_22).mem_fraction_static, 0.9);
        assert_eq!(d(&capped, Release::V0_5_21).decode_max_bs, 512);
    }

    /// A PD prefill or decode server's default (`release::PdRoles`), by hand from
    /// `handle_gpu_memory_settings` / `reserve_for_graph_mb`.
    #[test]
    fn pd_servers_reserve_their_own_side() {
        use crate::domain::DisaggregationMode as Pd;
        let d =
            |i: &MemFractionInputs, r: Release| mem_fraction_static_default(i, r.rules().device);
        let role = |i: MemFractionInputs, pd_role| MemFractionInputs { pd_role, ..i };
        // H200 TP8, MLA, 0.5.23. Colocated: 16,384 MiB → 0.886. Decode: activation
        // max(512 × 1, 2048) → 512 + 3,072 + 1,024 + 512 × 2 = 5,632, the 10 GiB floor
        // → 0.929. Prefill: 512 + 12,288 + 1,024 + 1,536 (MLA prefill graph), no decode
        // graph = 15,360 → 0.893.
        let mla = MemFractionInputs {
            use_mla: true,
            ..inp(143_771.0, 8)
        };
        let dec = d(&role(mla, Pd::Decode), Release::V0_5_23);
        assert_eq!(dec.reserved_mib, 10_240.0);
        assert_eq!(dec.mem_fraction_static, 0.929);
        let pre = d(&role(mla, Pd::Prefill), Release::V0_5_23);
        assert_eq!(pre.reserved_mib, 15_360.0);
        assert_eq!(pre.mem_fraction_static, 0.893);
        // 0.5.14: no decode branch; the prefill graph off on either side ("PD
        // disaggregation"), a prefill server without graphs but still the decode
        // max_bs × 2: 512 + 12,288 + 1,024 + 1,024 = 14,848 → 0.897 on both.
        for r in [Pd::Decode, Pd::Prefill] {
            let x = d(&role(mla, r), Release::V0_5_14);
            assert_eq!(x.reserved_mib, 14_848.0, "{r:?}");
            assert_eq!(x.mem_fraction_static, 0.897, "{r:?}");
            assert!(!x.prefill_graph);
        }
        // 46,068 MiB (an L20 / L40S), TP4, GQA, 0.5.23: chunk 4,096, decode max_bs 160,
        // below the 10 GiB floor's 60 GiB. Colocated: 512 + 6,144 + 512 + 320 + 50 × 8
        // = 7,888 → 0.829. Prefill: 7,568 → 0.836. Decode: max(256 × 4, 2048) with
        // --max-running-requests 256 and 4 draft tokens → 512 + 3,072 + 512 + 320 (the
        // cap by the running requests is above 160) = 4,416 → 0.904; with 1,024
        // requests, 4,096 tokens → 7,488 → 0.837.
        let l20 = inp(46_068.0, 4);
        assert_eq!(d(&l20, Release::V0_5_23).reserved_mib, 7_888.0);
        assert_eq!(
            d(&role(l20, Pd::Prefill), Release::V0_5_23).mem_fraction_static,
            0.836
        );
        let spec = |mrr| MemFractionInputs {
            max_running_requests: Some(mrr),
            speculative_num_draft_tokens: Some(4),
            pd_role: Pd::Decode,
            ..l20
        };
        assert_eq!(d(&spec(256), Release::V0_5_23).reserved_mib, 4_416.0);
        assert_eq!(d(&spec(256), Release::V0_5_23).mem_fraction_static, 0.904);
        assert_eq!(d(&spec(1024), Release::V0_5_23).mem_fraction_static, 0.837);
        // DP attention's padding is a decode-side reserve: a prefill server has none.
        let dpa = MemFractionInputs {
            enable_dp_attention: true,
            dp_size: 8,
            ..mla
        };
        assert_eq!(
            d(&role(dpa, Pd::Prefill), Release::V0_5_23).reserved_mib,
            15_360.0
        );
        assert!(d(&role(dpa, Pd::Decode), Release::V0_5_23).reserved_mib > 10_240.0);
    }
}
