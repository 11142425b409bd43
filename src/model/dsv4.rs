//! DeepSeek-V4's device KV pools: compressed sparse attention, as SGLang sizes it.
//!
//! A DeepSeek-V4 layer keeps the last `sliding_window` tokens of its latent in a paged
//! SWA pool, and — by its `compress_ratios[layer]` — a compressed copy of the whole
//! sequence: one latent per 4 tokens plus C4 indexer keys (ratio 4), or one latent per
//! 128 tokens (ratio 128); ratio 0 layers keep the window only. SGLang does not size
//! these with a cell size: `model_executor/pool_configurator.py: DSV4PoolConfigurator`
//! (chosen by `create_memory_pool_configurator` for `is_deepseek_v4` models, which are
//! hybrid SWA) solves `available = fixed + full_tokens × bytes_per_full_token`, with a
//! *fractional* coefficient and fixed request-scoped bytes (the C128 compress-state
//! rings and, in cap mode, the whole SWA pool).
//!
//! DeepSeek-V4 (`model_type: deepseek_v4`) is always sized in *ratio mode* in
//! 0.5.21–0.5.23: `arg_groups/model_overrides/deepseek_v4.py: _deepseek_v4_overrides`
//! declares `swa_full_tokens_ratio = 0.1` when the flag is unset, and
//! `arg_groups/kv_cache_hook.py: handle_cache_compatibility`, which runs later, records
//! `_swa_full_tokens_ratio_explicitly_set = swa_full_tokens_ratio is not None` — true —
//! so `_resolve_swa_cap_tokens` returns None and the SWA share (0.1 × the SWA slot)
//! joins the coefficient ([`crate::release::Dsv4Pools`]). Cap mode (the SWA request cap
//! as fixed bytes) is the configurator's path for a ratio nobody set — DeepSeek-V4.1,
//! whose model type the override skips — and is kept here, checked against SGLang's
//! configurator, for a [`Dsv4Schedule`] that asks for it.
//!
//! 0.5.15–0.5.20 ship another formula ([`Dsv4Formula::FlatKvBytes0518`]: unpadded
//! latents, the C4 state rings per SWA token, no cap mode), and 0.5.14 a third
//! ([`Dsv4Formula::C128PerSwaToken0514`]: the C128 state rings per SWA token too, no
//! fixed bytes).
//!
//! Modelled path (0.5.14–0.5.23, checked against each release's own
//! `DSV4PoolConfigurator` by `tests/it/kv_bytes.rs`): CUDA, `SGLANG_DSV4_KV_LAYOUT`
//! `v4` (its default: `deepseek_v4_memory_pool.py: select_dsv4_kv_layout` →
//! `KVLayout.V4`), `dsv4_attn_backend` `flashmla` (`deepseek_v4_hook.py:
//! _default_dsv4_attention_backend` for every V4 — not V4.1 — checkpoint), no unified
//! KV (`SGLANG_DSV4_UNIFIED_KV*` unset), fp32 compress state
//! (`SGLANG_DSV4_COMPRESS_STATE_DTYPE`), no HiSparse, no PD disaggregation, no encoder
//! SWA replay. Speculative decoding is EAGLE with top-k 1 and the checkpoint's own MTP
//! layer as the draft (the only kind `deepseek_v4_hook.py: apply_deepseek_v4_defaults`
//! admits besides DSpark, which is not modelled): the configurator widens the
//! compress-state rings to 16 / 256 rows and inflates its coefficients by `(T + 1) /
//! T`; the draft worker builds its own one-layer pools at the target's full / SWA token
//! counts (`kv_cache_configurator.py: _derive_pool_sizes`, the draft's C4 / C128 /
//! state pools zeroed) and runs no configurator of its own — the inflation is its
//! budget ([`Dsv4Schedule::speculative_num_draft_tokens`]). `--kv-cache-dtype` does not change the
//! bytes on this path (the V4 layout is fp8 nope + bf16 rope whatever it says).

use serde::Serialize;

/// Why a DeepSeek-V4 geometry cannot be sized: a shape the modelled path does not cover,
/// or SGLang's own refusal (`DSV4PoolConfigurator`, `validate_swa_pool_size`; its words).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Dsv4Error {
    #[error("`compress_ratios` has {entries} entries for {layers} layers")]
    RatioCount { entries: usize, layers: u32 },
    #[error(
        "`compress_ratios` holds ratio {0}: DeepSeek-V4.1's ratio-1/2 layers (`kv_source_layer_ids`) are not modelled (ratios 0, 4 and 128 are)"
    )]
    UnmodelledRatio(u32),
    #[error("`head_dim` must exceed `qk_rope_head_dim`")]
    HeadDim,
    #[error("page_size must be multiple of 128 for compressed attention (got {0})")]
    PageSize(u64),
    #[error(
        "The DSV4 SWA pool cap ({cap_tokens} tokens, {cap_gb:.2} GB) leaves no room for the full KV pool within the available {available_gb:.2} GB. Reduce --max-running-requests, lower --swa-prefix-tails or SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static."
    )]
    SwaCapLeavesNoRoom {
        cap_tokens: u64,
        cap_gb: f64,
        available_gb: f64,
    },
    #[error(
        "SWA pool ({tokens} tokens) cannot hold even one request: the prefill admission floor is sliding_window_size ({window}) + page_size ({page}). Increase --swa-full-tokens-ratio or the total KV budget."
    )]
    SwaBelowFloor { tokens: u64, window: u64, page: u64 },
    /// `pool_configurator.py: _assert_ring_serves_draft_tokens` (0.5.18–0.5.23), its
    /// AssertionError's words.
    #[error(
        "speculative_num_draft_tokens={draft_tokens} exceeds what the c{ratio} compress state ring can keep resident (ring_size={ring_size} serves at most {max_draft_tokens} draft tokens). Lower the draft count, or grow the ring in get_compress_state_ring_size()."
    )]
    DraftTokensExceedRing {
        draft_tokens: u64,
        ratio: u32,
        ring_size: u64,
        max_draft_tokens: u64,
    },
    /// Cap mode with speculative decoding: `compute_swa_request_cap`'s draft-aware
    /// request cap (`eviction_interval × draft_tokens`, the spec-v1 / spec-v2 decode
    /// allocation) is not modelled; DeepSeek-V4 never reaches cap mode in 0.5.21–0.5.23.
    #[error(
        "DeepSeek-V4's SWA cap mode with speculative decoding (`compute_swa_request_cap`'s draft-aware request cap) is not modelled; ratio mode is"
    )]
    SpeculativeCapMode,
}

/// `kv_layout.py: KVLayout.V4`: 448 fp8 nope + 64 bf16 rope = 576 data bytes, 8 scale
/// bytes per token; a page is padded to a multiple of 576 (`page_align`).
const V4_BYTES_PER_TOKEN: u64 = 576 + 8;
const V4_PAGE_ALIGN: u64 = 576;
/// `deepseek_v4_memory_pool.py: get_compress_state_ring_size` without speculative
/// decoding: 8 rows per request for ratio 4, 128 for ratio 128.
const C4_RING: u64 = 8;
const C128_RING: u64 = 128;
/// `get_compress_state_ring_size` with speculative decoding (0.5.14–0.5.23): 16 rows
/// for ratio 4, 256 for ratio 128.
const C4_RING_SPEC: u64 = 16;
const C128_RING_SPEC: u64 = 256;
/// `SGLANG_DSV4_COMPRESS_STATE_DTYPE` default `float32`: 4 bytes an element.
pub const STATE_ITEMSIZE: u64 = 4;
/// `environ.py: SGLANG_SWA_EVICTION_INTERVAL` default.
const SWA_EVICTION_INTERVAL: u64 = 128;
pub use crate::release::DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO;
/// `model_overrides/deepseek_v4.py: _deepseek_v4_overrides`: `page_size = 256` on CUDA
/// (the attention backend asserts it).
pub const DSV4_PAGE_SIZE: u64 = 256;
/// `deepseek_v4_hook.py: apply_deepseek_v4_defaults`: `--max-running-requests` 256 when
/// not given.
pub const DSV4_DEFAULT_MAX_RUNNING_REQUESTS: u64 = 256;

/// A DeepSeek-V4 attention geometry, as `configs/model_config.py` reads it for
/// `DeepseekV4ForCausalLM` (`qk_nope_head_dim = head_dim - qk_rope_head_dim`,
/// `window_size = sliding_window`, `index_head_dim`, `compress_ratios`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dsv4Geometry {
    pub head_dim: u32,
    pub qk_rope_head_dim: u32,
    pub index_head_dim: u32,
    pub sliding_window: u32,
    /// `compress_ratios`, one per layer (the target model reads the first
    /// `num_hidden_layers`; the last entry belongs to the MTP layer).
    pub compress_ratios: Vec<u32>,
    /// `num_hidden_layers`.
    pub layers: u32,
}

/// The schedule figures the pools depend on (per attention-DP worker where SGLang
/// divides).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dsv4Schedule {
    /// `--page-size` (256 unless given).
    pub page_size: u64,
    /// `--max-running-requests` (256 unless given).
    pub max_running_requests: u64,
    /// `--chunked-prefill-size` as resolved (cap mode needs it > 0).
    pub chunked_prefill_size: i64,
    /// The ratio `DSV4PoolConfigurator` takes as the operator's
    /// (`_operator_swa_full_tokens_ratio`: the resolved `--swa-full-tokens-ratio` when
    /// `_swa_full_tokens_ratio_explicitly_set`): ratio mode. `None` is cap mode, which
    /// DeepSeek-V4 does not reach in 0.5.21–0.5.23 (see the module doc).
    pub operator_swa_full_tokens_ratio: Option<f64>,
    pub attn_dp_size: u64,
    pub disable_radix_cache: bool,
    /// `--disable-overlap-schedule` (one prefill chunk in flight instead of two).
    pub disable_overlap_schedule: bool,
    /// Bytes an element of the device compress-state rings
    /// (`pool_configurator.py: _get_dsv4_compress_state_dtype_sizes`: 4 for
    /// `SGLANG_DSV4_COMPRESS_STATE_DTYPE` `float32`/`fp32`, its default; 2 for
    /// `bfloat16`/`bf16`), every release 0.5.14–0.5.23.
    pub compress_state_itemsize: u64,
    /// `--speculative-num-draft-tokens` as SGLang resolves it for an EAGLE draft of the
    /// checkpoint's MTP layer (`--speculative-num-steps` + 1 with top-k 1,
    /// `speculative_hook.py: _handle_eagle_family`); `None` without speculative
    /// decoding. Read by [`Dsv4Schedule::ring_sizes`], [`Dsv4Geometry::spec_inflation`]
    /// and [`Dsv4Geometry::check_draft_tokens`].
    pub speculative_num_draft_tokens: Option<u64>,
}

impl Dsv4Schedule {
    /// SGLang's schedule for DeepSeek-V4 with no flags given (0.5.21–0.5.23): page 256,
    /// `--max-running-requests` 256, ratio mode at the override's 0.1
    /// (`_deepseek_v4_overrides`, recorded as explicit by `handle_cache_compatibility`),
    /// the GPU's `--chunked-prefill-size` (which only cap mode reads).
    pub fn sglang_default(chunked_prefill_size: i64) -> Self {
        Dsv4Schedule {
            page_size: DSV4_PAGE_SIZE,
            max_running_requests: DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
            chunked_prefill_size,
            operator_swa_full_tokens_ratio: Some(DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO),
            attn_dp_size: 1,
            disable_radix_cache: false,
            disable_overlap_schedule: false,
            compress_state_itemsize: STATE_ITEMSIZE,
            speculative_num_draft_tokens: None,
        }
    }

    /// The compress-state rows per request of ratio 4 and ratio 128:
    /// `deepseek_v4_memory_pool.py: get_compress_state_ring_size` (no online C128), 8 /
    /// 128 without speculative decoding and 16 / 256 with it. 0.5.14–0.5.20 key it on
    /// `speculative_algorithm is not None`, 0.5.21–0.5.23 on
    /// `speculative_num_draft_tokens > 0` (`resolve_compress_state_ring_size`): the
    /// same for EAGLE, whose draft tokens are at least 2.
    pub fn ring_sizes(&self) -> (u64, u64) {
        match self.speculative_num_draft_tokens {
            Some(n) if n > 0 => (C4_RING_SPEC, C128_RING_SPEC),
            _ => (C4_RING, C128_RING),
        }
    }
}

/// Which release's `DSV4PoolConfigurator` formula sizes the pools (the modelled path of
/// the module doc); a release picks it through [`crate::release::Dsv4Pools`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dsv4Formula {
    /// 0.5.14: as [`Self::FlatKvBytes0518`] with the C128 compress-state rings in the
    /// coefficient (`r × 128 / window × 2 × head_dim × 4 B` per ratio-128 layer) and no
    /// fixed bytes; its configurator records a C128 state pool of `swa // window × 128`
    /// rows.
    C128PerSwaToken0514,
    /// 0.5.15–0.5.20: FlashMLA `kv_bytes` for every pool, the SWA ratio in the
    /// coefficient, no cap mode ([`Dsv4Geometry::coefficients_for`]); `swa_floor`:
    /// `validate_swa_pool_size` runs (0.5.20).
    FlatKvBytes0518 { swa_floor: bool },
    /// 0.5.21–0.5.23: the paged V4 layout, per-ratio compressed bytes, cap mode for a
    /// ratio nobody set ([`Dsv4Geometry::coefficients`]).
    Paged0521,
}

impl Dsv4Formula {
    /// The formula of a release's [`Dsv4Pools`](crate::release::Dsv4Pools) rule.
    pub fn of(pools: crate::release::Dsv4Pools) -> Self {
        use crate::release::Dsv4Pools;
        match pools {
            Dsv4Pools::C128PerSwaToken0514 => Dsv4Formula::C128PerSwaToken0514,
            Dsv4Pools::FlatKvBytes0518 => Dsv4Formula::FlatKvBytes0518 { swa_floor: false },
            Dsv4Pools::FlatKvBytes0520 => Dsv4Formula::FlatKvBytes0518 { swa_floor: true },
            Dsv4Pools::RatioMode0521 => Dsv4Formula::Paged0521,
        }
    }
}

/// The per-token coefficients of [`Dsv4Geometry`] under a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Dsv4Coefficients {
    /// One FlashMLA-layout latent slot: `qk_nope + 2 × qk_rope + 8`.
    pub kv_bytes: u64,
    /// Bytes one SWA slot costs across the layers (`_get_bytes_per_swa_token`,
    /// 0.5.21 on; `None` before, where the SWA share is inside the full token's).
    pub bytes_per_swa_token: Option<f64>,
    /// Bytes one full token costs (`_get_bytes_per_full_token`).
    pub bytes_per_full_token: f64,
    /// The SWA pool of cap mode (`_resolve_swa_cap_tokens`), fixed bytes.
    pub swa_cap_tokens: Option<u64>,
    /// The ratio SWA tokens follow in ratio mode.
    pub swa_ratio: f64,
    /// Layers with ratio 4 / 128.
    pub c4_layers: u64,
    pub c128_layers: u64,
}

/// The pools `calculate_pool_sizes` returns (`_DSV4PoolSizes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dsv4PoolSizes {
    pub full: u64,
    pub swa: u64,
    pub c4: u64,
    pub c128: u64,
    pub c4_state: u64,
    /// Fixed (request-scoped) bytes taken before the full pool.
    pub fixed_bytes: u64,
}

fn ceil_align(x: u64, a: u64) -> u64 {
    x.div_ceil(a.max(1)) * a.max(1)
}

/// `KVLayout.page_bytes(page) / page`: bytes per token of a paged V4 cache whose page
/// holds `page` tokens (`_get_paged_kv_bytes_per_token`).
fn paged_bytes_per_token(page: u64) -> f64 {
    let page = page.max(1);
    let raw = page * V4_BYTES_PER_TOKEN;
    (raw.div_ceil(V4_PAGE_ALIGN) * V4_PAGE_ALIGN) as f64 / page as f64
}

impl Dsv4Geometry {
    /// The geometry of a [`super::Attention::Dsv4`] model of `layers` layers.
    pub fn of(a: &super::Attention, layers: u32) -> Option<Self> {
        match a {
            super::Attention::Dsv4 {
                head_dim,
                qk_rope_head_dim,
                index_head_dim,
                sliding_window,
                compress_ratios,
            } => Some(Dsv4Geometry {
                head_dim: *head_dim,
                qk_rope_head_dim: *qk_rope_head_dim,
                index_head_dim: *index_head_dim,
                sliding_window: *sliding_window,
                compress_ratios: compress_ratios.clone(),
                layers,
            }),
            _ => None,
        }
    }

    /// Ratios of the target's layers `[0, num_hidden_layers)`
    /// (`layer_setup.py: resolve_layer_indices`, PP 1).
    fn stage(&self) -> &[u32] {
        let n = (self.layers as usize).min(self.compress_ratios.len());
        &self.compress_ratios[..n]
    }

    /// Checks what the modelled path supports: ratios 0 / 4 / 128 (ratios 1 and 2 are
    /// DeepSeek-V4.1's, sized from `kv_source_layer_ids`).
    pub fn check(&self) -> Result<(), Dsv4Error> {
        if self.compress_ratios.len() < self.layers as usize {
            return Err(Dsv4Error::RatioCount {
                entries: self.compress_ratios.len(),
                layers: self.layers,
            });
        }
        if let Some(r) = self.stage().iter().find(|r| !matches!(r, 0 | 4 | 128)) {
            return Err(Dsv4Error::UnmodelledRatio(*r));
        }
        if self.head_dim <= self.qk_rope_head_dim {
            return Err(Dsv4Error::HeadDim);
        }
        Ok(())
    }

    fn count(&self, ratio: u32) -> u64 {
        self.stage().iter().filter(|&&r| r == ratio).count() as u64
    }

    /// `kv_bytes`: `qk_nope_head_dim + qk_rope_head_dim * 2 + 8` (FlashMLA layout).
    pub fn kv_bytes(&self) -> u64 {
        let rope = self.qk_rope_head_dim as u64;
        (self.head_dim as u64 - rope) + 2 * rope + 8
    }

    /// `get_dsv4_indexer_bytes_per_token(index_head_dim, use_fp4_indexer=False)`:
    /// `index_head_dim + index_head_dim // 128 * 4` (fp8 keys + fp32 scale per 128).
    pub fn indexer_bytes_per_token(&self) -> u64 {
        let d = self.index_head_dim as u64;
        d + d / 128 * 4
    }

    /// The draft worker's share of the coefficients: `(T + 1) / T` with `T` the
    /// target's layers (`draft_layers = 1`, whatever the MTP layers, and computed as a
    /// float before the multiplication), `None` without speculative decoding.
    /// `DSV4PoolConfigurator.__init__` multiplies `bytes_per_full_token` by it in
    /// 0.5.14–0.5.20 (`model_executor/pool_configurator.py`), `bytes_per_full_token`
    /// and `bytes_per_swa_token` (`_spec_infl`) in 0.5.21–0.5.23; the request-scoped
    /// fixed bytes (the C128 rings) are not inflated.
    pub fn spec_inflation(&self, s: &Dsv4Schedule) -> Option<f64> {
        s.speculative_num_draft_tokens?;
        let t = self.stage().len().max(1) as f64;
        Some((t + 1.0) / t)
    }

    /// `pool_configurator.py: DSV4PoolConfigurator._assert_ring_serves_draft_tokens`
    /// under the release's [`Dsv4DraftTokenBound`](crate::release::Dsv4DraftTokenBound)
    /// (0.5.18–0.5.23; none before): for ratio 4 then 128, when the stage has such
    /// layers, the draft tokens may not exceed `get_compress_state_write_pad(ratio,
    /// ring)` = `ring - window + 2` (`window` = 8 for ratio 4, 128 for ratio 128; 0 when
    /// the ring is not wider). With the 16 / 256-row rings: 10 draft tokens with C4
    /// layers, 130 with C128 ones.
    pub fn check_draft_tokens(
        &self,
        bound: crate::release::Dsv4DraftTokenBound,
        s: &Dsv4Schedule,
    ) -> Result<(), Dsv4Error> {
        use crate::release::Dsv4DraftTokenBound;
        let Some(n) = s.speculative_num_draft_tokens else {
            return Ok(());
        };
        if bound == Dsv4DraftTokenBound::Unbounded {
            return Ok(());
        }
        let (c4_ring, c128_ring) = s.ring_sizes();
        for (ratio, ring) in [(4u32, c4_ring), (128, c128_ring)] {
            if self.count(ratio) == 0 {
                continue;
            }
            let window = ratio as u64 * if ratio == 4 { 2 } else { 1 };
            let pad = if ring > window { ring - window + 2 } else { 0 };
            if n > pad {
                return Err(Dsv4Error::DraftTokensExceedRing {
                    draft_tokens: n,
                    ratio,
                    ring_size: ring,
                    max_draft_tokens: pad,
                });
            }
        }
        Ok(())
    }

    /// The coefficients of `DSV4PoolConfigurator.__init__` (0.5.21–0.5.23).
    ///
    /// `bytes_per_swa_token = paged(page) × layers + ring4/page × (2·2·head_dim +
    /// 2·2·index_head_dim) × 4 B × c4_layers`; `bytes_per_full_token = swa_ratio ×
    /// bytes_per_swa_token + c4_layers × (paged(page/4)/4 + indexer/4) + c128_layers ×
    /// paged(page/128)/128`, `swa_ratio` 0 in cap mode. Cap mode
    /// (`_resolve_swa_cap_tokens`): no operator ratio, `max_running_requests` and
    /// `chunked_prefill_size > 0` given: `ceil_align(compute_swa_request_cap + tails ×
    /// (window + page), page)` with `tails = 4 × max_running_requests` (0 without radix
    /// cache) and `compute_swa_request_cap = (window + eviction_interval + page + page)
    /// × max(1, mrr // attn_dp) + chunks_in_flight × chunked_prefill_size + page`.
    /// With speculative decoding the C4 ring is 16 rows ([`Dsv4Schedule::ring_sizes`])
    /// and both coefficients are multiplied by [`Self::spec_inflation`] (cap mode's
    /// draft-aware cap is not modelled: [`Self::pool_sizes`] refuses it).
    pub fn coefficients(&self, s: &Dsv4Schedule) -> Dsv4Coefficients {
        let page = s.page_size.max(1);
        let layers = self.stage().len() as u64;
        let (c4_layers, c128_layers) = (self.count(4), self.count(128));
        let head = self.head_dim as u64;
        let idx = self.index_head_dim as u64;
        let item = s.compress_state_itemsize;
        let c4_state_bytes = 2 * 2 * head * item;
        let c4_indexer_state_bytes = 2 * 2 * idx * item;
        let c4_state_ratio = s.ring_sizes().0 as f64 / page as f64;
        let bytes_per_swa_token = paged_bytes_per_token(page) * layers as f64
            + c4_state_ratio * (c4_state_bytes + c4_indexer_state_bytes) as f64 * c4_layers as f64;
        let mrr_per_worker = (s.max_running_requests / s.attn_dp_size.max(1)).max(1);
        let window = self.sliding_window as u64;
        let swa_cap_tokens =
            if s.operator_swa_full_tokens_ratio.is_none() && s.chunked_prefill_size > 0 {
                // `compute_swa_request_cap`, no speculative decoding (draft tokens 1,
                // decode_alloc = page), not a PD decode worker.
                let per_request = window + SWA_EVICTION_INTERVAL + page + page;
                let in_flight = if s.disable_overlap_schedule { 1 } else { 2 };
                let cap =
                    per_request * mrr_per_worker + in_flight * s.chunked_prefill_size as u64 + page;
                let tails = if s.disable_radix_cache {
                    0
                } else {
                    4 * mrr_per_worker
                };
                Some(ceil_align(cap + tails * (window + page), page))
            } else {
                None
            };
        let swa_ratio = s
            .operator_swa_full_tokens_ratio
            .unwrap_or(DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO);
        let coeff_ratio = if swa_cap_tokens.is_some() {
            0.0
        } else {
            swa_ratio
        };
        let compressed = self.compressed_bytes_per_full_token(page);
        let mut bytes_per_full_token = coeff_ratio * bytes_per_swa_token + compressed;
        let mut bytes_per_swa_token = bytes_per_swa_token;
        // `self.bytes_per_full_token *= self._spec_infl; self.bytes_per_swa_token *=
        // self._spec_infl` (0.5.21–0.5.23), after both are computed.
        if let Some(infl) = self.spec_inflation(s) {
            bytes_per_full_token *= infl;
            bytes_per_swa_token *= infl;
        }
        Dsv4Coefficients {
            kv_bytes: self.kv_bytes(),
            bytes_per_swa_token: Some(bytes_per_swa_token),
            bytes_per_full_token,
            swa_cap_tokens,
            swa_ratio,
            c4_layers,
            c128_layers,
        }
    }

    /// `_compressed_bytes_per_full_token`: ratio 4 `1/4 × paged(page/4) + 1/4 × indexer`,
    /// ratio 128 `1/128 × paged(page/128)`, summed in dict order (4, 128): the
    /// compressed KV and indexer pages one full token owns (what a PD transfer sends per
    /// prompt token, beside the window's SWA pages).
    pub fn compressed_bytes_per_full_token(&self, page: u64) -> f64 {
        let page = page.max(1);
        let (c4_layers, c128_layers) = (self.count(4), self.count(128));
        let c4 =
            0.25 * paged_bytes_per_token(page / 4) + 0.25 * self.indexer_bytes_per_token() as f64;
        let c128 = (1.0 / 128.0) * paged_bytes_per_token(page / 128);
        let mut compressed = 0.0;
        if c4_layers > 0 {
            compressed += c4 * c4_layers as f64;
        }
        if c128_layers > 0 {
            compressed += c128 * c128_layers as f64;
        }
        compressed
    }

    /// The request-scoped C128 compress state one request's PD transfer sends
    /// (`prefill.py: _request_state_payload`, `deepseek_v4_compress_state.py:
    /// request_scoped_state_transfer_indices`, 0.5.23): its ring's rows × `2 ×
    /// head_dim` × the state item size, per ratio-128 layer; none when the prompt is a
    /// whole number of 128-token blocks.
    pub fn c128_state_bytes_per_request(&self, s: &Dsv4Schedule) -> u64 {
        s.ring_sizes().1 * 2 * self.head_dim as u64 * s.compress_state_itemsize * self.count(128)
    }

    /// The coefficients of `DSV4PoolConfigurator.__init__` under a release's
    /// [`Dsv4Formula`].
    pub fn coefficients_for(&self, formula: Dsv4Formula, s: &Dsv4Schedule) -> Dsv4Coefficients {
        match formula {
            Dsv4Formula::Paged0521 => self.coefficients(s),
            Dsv4Formula::FlatKvBytes0518 { .. } => self.flat_coefficients(s, false),
            Dsv4Formula::C128PerSwaToken0514 => self.flat_coefficients(s, true),
        }
    }

    /// `DSV4PoolConfigurator._get_bytes_per_full_token` of 0.5.14–0.5.20 (CUDA, no
    /// unified KV, no drafts, no HiSparse, no online C128): every pool priced at the
    /// FlashMLA `kv_bytes` (no page padding); the SWA pool and the C4 compress-state
    /// rings (`c4_ring_size / swa_page_size` rows per SWA token, `swa_page_size` being
    /// the model's `window_size`) join the coefficient at the SWA ratio; no cap mode.
    /// `c128_per_swa_token` (0.5.14): the C128 rings too (`128 / window` rows of `2 ×
    /// head_dim` fp32, at the ratio), where 0.5.15 on charge them as fixed bytes and
    /// add `0 × …`. The terms are summed in SGLang's order, so the float is SGLang's to
    /// the bit: `r·kv·L + ¼·kv·c4 + kv/128·c128 + ¼·indexer·c4 + r·(8/window)·state·c4
    /// + c128 term + r·(8/window)·indexer_state·c4`. With speculative decoding the rings
    /// are 16 / 256 rows and the sum is multiplied by [`Self::spec_inflation`].
    fn flat_coefficients(&self, s: &Dsv4Schedule, c128_per_swa_token: bool) -> Dsv4Coefficients {
        let layers = self.stage().len() as f64;
        let (c4_layers, c128_layers) = (self.count(4), self.count(128));
        let (c4, c128) = (c4_layers as f64, c128_layers as f64);
        let kv = self.kv_bytes() as f64;
        let head = self.head_dim as u64;
        let item = s.compress_state_itemsize;
        let c4_state_bytes = (2 * 2 * head * item) as f64;
        let c4_indexer_state_bytes = (2 * 2 * self.index_head_dim as u64 * item) as f64;
        let (c4_ring, c128_ring) = s.ring_sizes();
        let c4_state_ratio = c4_ring as f64 / self.sliding_window.max(1) as f64;
        let r = s
            .operator_swa_full_tokens_ratio
            .unwrap_or(DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO);
        // `self.swa_ratio * c128_state_ratio * c128_state_bytes * num_layers_ca128`
        // (0.5.14), `0 * c128_state_bytes * num_layers_ca128` after.
        let c128_state_term = if c128_per_swa_token {
            let c128_state_ratio = c128_ring as f64 / self.sliding_window.max(1) as f64;
            r * c128_state_ratio * (2 * head * item) as f64 * c128
        } else {
            0.0
        };
        let mut bytes_per_full_token = r * kv * layers
            + 0.25 * kv * c4
            + 1.0 / 128.0 * kv * c128
            + 0.25 * self.indexer_bytes_per_token() as f64 * c4
            + r * c4_state_ratio * c4_state_bytes * c4
            + c128_state_term
            + r * c4_state_ratio * c4_indexer_state_bytes * c4;
        // `self.bytes_per_full_token *= (target_layers + draft_layers) / target_layers`.
        if let Some(infl) = self.spec_inflation(s) {
            bytes_per_full_token *= infl;
        }
        Dsv4Coefficients {
            kv_bytes: self.kv_bytes(),
            bytes_per_swa_token: None,
            bytes_per_full_token,
            swa_cap_tokens: None,
            swa_ratio: r,
            c4_layers,
            c128_layers,
        }
    }

    /// `DSV4PoolConfigurator.calculate_pool_sizes` under a release's [`Dsv4Formula`].
    pub fn pool_sizes_for(
        &self,
        formula: Dsv4Formula,
        s: &Dsv4Schedule,
        available_bytes: u64,
        max_total_tokens: Option<u64>,
    ) -> Result<Dsv4PoolSizes, Dsv4Error> {
        match formula {
            Dsv4Formula::Paged0521 => self.pool_sizes(s, available_bytes, max_total_tokens),
            Dsv4Formula::FlatKvBytes0518 { .. } | Dsv4Formula::C128PerSwaToken0514 => {
                self.flat_pool_sizes(formula, s, available_bytes, max_total_tokens)
            }
        }
    }

    /// `DSV4PoolConfigurator.calculate_pool_sizes` of 0.5.14–0.5.20: fixed bytes =
    /// the C128 compress-state rings (as 0.5.21's; none in 0.5.14, which prices them
    /// per SWA token); `full = int((available − fixed) /
    /// bytes_per_full_token) // page × page` (no padding loop); `_compute_dsv4_sizes`:
    /// SWA `int(full × ratio) // page × page`, checked by `validate_swa_pool_size`
    /// from 0.5.20 (`swa_floor`), C4 `full // 4`, C128 `full // 128`, C4 state `swa //
    /// window × 8` (the SWA pool's rings per window, not per page). `--max-total-tokens`
    /// caps `full` and the pools are re-derived from it (`config_from_budget`).
    fn flat_pool_sizes(
        &self,
        formula: Dsv4Formula,
        s: &Dsv4Schedule,
        available_bytes: u64,
        max_total_tokens: Option<u64>,
    ) -> Result<Dsv4PoolSizes, Dsv4Error> {
        let page = self.checked_page(s)?;
        let co = self.coefficients_for(formula, s);
        // 0.5.14 keeps the C128 rings in the coefficient: no fixed bytes.
        let fixed = match formula {
            Dsv4Formula::C128PerSwaToken0514 => 0,
            _ => self.c128_state_fixed_bytes(s, co.c128_layers),
        };
        let for_tokens = available_bytes.saturating_sub(fixed);
        let mut full = (for_tokens as f64 / co.bytes_per_full_token) as u64 / page * page;
        if let Some(m) = max_total_tokens {
            full = full.min(m) / page * page;
        }
        let swa = (full as f64 * co.swa_ratio) as u64 / page * page;
        if matches!(formula, Dsv4Formula::FlatKvBytes0518 { swa_floor: true }) {
            self.validate_swa_pool_size(swa, page)?;
        }
        let window = self.sliding_window as u64;
        Ok(Dsv4PoolSizes {
            full,
            swa,
            c4: full / 4,
            c128: full / 128,
            c4_state: swa / window.max(1) * s.ring_sizes().0,
            fixed_bytes: fixed,
        })
    }

    /// [`Self::check`], and the page size `calculate_pool_sizes` asserts: a multiple of
    /// 128 ("page_size must be multiple of 128 for compressed attention").
    fn checked_page(&self, s: &Dsv4Schedule) -> Result<u64, Dsv4Error> {
        self.check()?;
        let page = s.page_size.max(1);
        if !page.is_multiple_of(128) {
            return Err(Dsv4Error::PageSize(page));
        }
        Ok(page)
    }

    /// `pool_configurator.py: MemoryPoolConfigurator.validate_swa_pool_size` (0.5.20–0.5.23):
    /// an SWA pool at or below `sliding_window + page_size` tokens cannot admit a request.
    fn validate_swa_pool_size(&self, swa: u64, page: u64) -> Result<(), Dsv4Error> {
        let window = self.sliding_window as u64;
        if window + page >= swa {
            return Err(Dsv4Error::SwaBelowFloor {
                tokens: swa,
                window,
                page,
            });
        }
        Ok(())
    }

    /// `_get_c128_state_fixed_bytes(max_running_requests per worker)` (0.5.15–0.5.23,
    /// no online compression): `ceil((slots × ring + ring + 1) / 128) × 128` rows of `2
    /// × head_dim` fp32 per ratio-128 layer, `slots = max_running_requests + 1`, `ring`
    /// 128 (256 with speculative decoding; the fixed bytes are not inflated).
    fn c128_state_fixed_bytes(&self, s: &Dsv4Schedule, c128_layers: u64) -> u64 {
        if c128_layers == 0 {
            return 0;
        }
        let slots = (s.max_running_requests / s.attn_dp_size.max(1)).max(1) + 1;
        let ring = s.ring_sizes().1;
        let rows = (slots * ring + ring + 1).div_ceil(128) * 128;
        rows * 2 * self.head_dim as u64 * s.compress_state_itemsize * c128_layers
    }

    /// `DSV4PoolConfigurator.calculate_pool_sizes(available_bytes, page_size)`
    /// (0.5.21–0.5.23): fixed bytes = the C128 compress-state rings
    /// (`_get_c128_state_fixed_bytes`: `ceil((slots × 128 + 128 + 1) / 128) × 128` rows
    /// of `2 × head_dim` fp32 per ratio-128 layer, `slots = max_running_requests + 1`)
    /// plus, in cap mode, `swa_cap_tokens × bytes_per_swa_token`; `full =
    /// int((available - fixed) / bytes_per_full_token) // page × page`; SWA = the cap,
    /// or `int(full × ratio) // page × page` checked by `validate_swa_pool_size`; C4 =
    /// `full // 4`, C128 = `full // 128`, C4 state = `swa // page × 8`. Then
    /// `kv_cache_configurator.py: config_from_budget`: `--max-total-tokens` caps `full`
    /// (page-aligned) and the pools are re-derived from it. Errors are SGLang's.
    pub fn pool_sizes(
        &self,
        s: &Dsv4Schedule,
        available_bytes: u64,
        max_total_tokens: Option<u64>,
    ) -> Result<Dsv4PoolSizes, Dsv4Error> {
        let page = self.checked_page(s)?;
        if s.speculative_num_draft_tokens.is_some() && s.operator_swa_full_tokens_ratio.is_none() {
            return Err(Dsv4Error::SpeculativeCapMode);
        }
        let co = self.coefficients(s);
        let c128_fixed = self.c128_state_fixed_bytes(s, co.c128_layers);
        let swa_fixed = co
            .swa_cap_tokens
            .map(|t| t as f64 * co.bytes_per_swa_token.unwrap_or(0.0))
            .unwrap_or(0.0);
        let fixed = c128_fixed as f64 + swa_fixed;
        let for_tokens = (available_bytes as f64 - fixed).max(0.0);
        let mut full = (for_tokens / co.bytes_per_full_token) as u64 / page * page;
        // No ratio-1/2 layers: `_get_low_ratio_kv_padding_bytes` is 0.
        while full > 0 && full as f64 * co.bytes_per_full_token > for_tokens {
            full -= page;
        }
        if full == 0 && co.swa_cap_tokens.is_some() {
            return Err(Dsv4Error::SwaCapLeavesNoRoom {
                cap_tokens: co.swa_cap_tokens.unwrap_or(0),
                cap_gb: swa_fixed / (1u64 << 30) as f64,
                available_gb: available_bytes as f64 / (1u64 << 30) as f64,
            });
        }
        if let Some(m) = max_total_tokens {
            let capped = full.min(m) / page * page;
            full = capped;
        }
        let swa = match co.swa_cap_tokens {
            Some(cap) => cap,
            None => {
                let t = (full as f64 * co.swa_ratio) as u64 / page * page;
                self.validate_swa_pool_size(t, page)?;
                t
            }
        };
        Ok(Dsv4PoolSizes {
            full,
            swa,
            c4: full / 4,
            c128: full / 128,
            c4_state: swa / page * s.ring_sizes().0,
            fixed_bytes: fixed as u64,
        })
    }
}

/// What one DeepSeek-V4 host pool counts its pages in: the full pool's pages or the
/// SWA pool's (`hybrid_pool_assembler.py: _deepseek_v4_num_host_pages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dsv4HostBasis {
    Full,
    Swa,
}

/// One host pool `hybrid_pool_assembler.py: build_deepseek_v4_hicache_stack` builds
/// (0.5.18–0.5.23, CUDA, the modelled path of [`crate::model::dsv4`]): a
/// `memory_pool_host.py: DeepSeekV4PagedHostPool` or `DeepSeekV4StateHostPool`. Its
/// request is `layer_num × num_host_pages × item_bytes` (the constructor's
/// `requested_bytes`; no padding page: neither class runs `HostKVCache.__init__`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dsv4HostPool {
    /// `str(PoolName.…)`: `swa`, `deepseek_v4_c4`, `deepseek_v4_c4_indexer`,
    /// `deepseek_v4_c4_state`, `deepseek_v4_c4_indexer_state`, `deepseek_v4_c128`.
    pub name: &'static str,
    /// `layer_num`: `len(device_buffers)` / `len(state_pools)`.
    pub layers: u64,
    /// `item_bytes` (paged pools) or `state_page_bytes` (state pools): bytes of one
    /// host page of one layer.
    pub item_bytes: u64,
    pub basis: Dsv4HostBasis,
    /// A `DeepSeekV4StateHostPool` (its own refusal text).
    pub state: bool,
}

impl Dsv4HostPool {
    /// Bytes of one host page across the pool's layers.
    pub fn bytes_per_page(&self) -> u64 {
        self.layers * self.item_bytes
    }
}

/// `KVLayout.page_bytes(page)` of the V4 layout: `ceil(page × 584 / 576) × 576`
/// (`bytes_per_page_padded` of a `DeepSeekV4SingleKVPool` of `page` tokens).
fn v4_page_bytes(page: u64) -> u64 {
    (page.max(1) * V4_BYTES_PER_TOKEN).div_ceil(V4_PAGE_ALIGN) * V4_PAGE_ALIGN
}

/// `--hicache-size` is refused for DeepSeek-V4 (`_deepseek_v4_num_host_pages`,
/// 0.5.21–0.5.23).
pub const DSV4_HICACHE_SIZE_REFUSAL: &str =
    "DeepSeek V4 HiCache currently does not support --hicache-size; use --hicache-ratio instead.";

/// `hicache_auto_size.py: _estimate_hicache_bytes` (0.5.21–0.5.23): the auto-size
/// (`--enable-hierarchical-cache` with neither `--hicache-ratio` nor `--hicache-size`)
/// refuses a pool outside `_SIZEABLE_POOLS`, and `DeepSeekV4TokenToKVPool` is not one.
pub const DSV4_AUTO_SIZE_REFUSAL: &str = "HiCache auto-sizing does not support DeepSeekV4TokenToKVPool; set --hicache-ratio or --hicache-size explicitly.";

impl Dsv4Geometry {
    /// The host pools of `build_deepseek_v4_hicache_stack`, in the order it builds them
    /// (0.5.18–0.5.23; the modelled path: paged SWA, no unified KV, fp8 fused C4
    /// indexer, no HiSparse, no speculative draft layers, CUDA). The `kv` anchor is a
    /// `LogicalHostPool` that holds no bytes and is not listed.
    ///
    /// - `swa`: one layer per target layer (`swa_kv_pool.kv_buffer`), item
    ///   `swa_kv_pool.bytes_per_page_padded` = V4 `page_bytes(page)`, SWA pages;
    /// - `deepseek_v4_c4`: ratio-4 layers, `c4_kv_pool.bytes_per_page_padded` =
    ///   `page_bytes(page / 4)`, full pages;
    /// - `deepseek_v4_c4_indexer` (`_dsv4_indexer_regions`, the fused fp8 buffer):
    ///   `index_k_with_scale_buffer[0].shape[1]` = `page / 4 ×
    ///   get_dsv4_indexer_bytes_per_token`, full pages;
    /// - `deepseek_v4_c4_state` / `deepseek_v4_c4_indexer_state`
    ///   (`DeepSeekV4StateHostPool`): `state_page_bytes = ring_size × slot bytes`, the
    ///   `CompressStatePool` slot of ratio 4 being `2 × (1 + overlap) × head_dim` fp32
    ///   (`head_dim` = `qk_nope + qk_rope` for attention, `index_head_dim` for the
    ///   indexer), ring 8; SWA pages;
    /// - `deepseek_v4_c128`: ratio-128 layers, `page_bytes(page / 128)`, full pages
    ///   (`c128_host_pages = full_host_pages` on GPU). Its state pool is "intentionally
    ///   not registered with hicache".
    pub fn host_pools(&self, page: u64) -> Vec<Dsv4HostPool> {
        let page = page.max(1);
        let layers = self.stage().len() as u64;
        let (c4, c128) = (self.count(4), self.count(128));
        let mut out = vec![Dsv4HostPool {
            name: "swa",
            layers,
            item_bytes: v4_page_bytes(page),
            basis: Dsv4HostBasis::Swa,
            state: false,
        }];
        if c4 > 0 {
            let slot = |head: u64| 2 * 2 * head * STATE_ITEMSIZE;
            out.extend([
                Dsv4HostPool {
                    name: "deepseek_v4_c4",
                    layers: c4,
                    item_bytes: v4_page_bytes(page / 4),
                    basis: Dsv4HostBasis::Full,
                    state: false,
                },
                Dsv4HostPool {
                    name: "deepseek_v4_c4_indexer",
                    layers: c4,
                    item_bytes: page / 4 * self.indexer_bytes_per_token(),
                    basis: Dsv4HostBasis::Full,
                    state: false,
                },
                Dsv4HostPool {
                    name: "deepseek_v4_c4_state",
                    layers: c4,
                    item_bytes: C4_RING * slot(self.head_dim as u64),
                    basis: Dsv4HostBasis::Swa,
                    state: true,
                },
                Dsv4HostPool {
                    name: "deepseek_v4_c4_indexer_state",
                    layers: c4,
                    item_bytes: C4_RING * slot(self.index_head_dim as u64),
                    basis: Dsv4HostBasis::Swa,
                    state: true,
                },
            ]);
        }
        if c128 > 0 {
            out.push(Dsv4HostPool {
                name: "deepseek_v4_c128",
                layers: c128,
                item_bytes: v4_page_bytes(page / 128),
                basis: Dsv4HostBasis::Full,
                state: false,
            });
        }
        out
    }
}

/// `hybrid_pool_assembler.py: _deepseek_v4_num_host_pages` (0.5.18–0.5.23, GPU):
/// `int(ceil(device tokens / page) × hicache_ratio)` host pages for the full basis
/// (`allocator.size_full`) and the SWA basis (`kvcache.swa_size`, SWA pages of
/// `swa_page_size` = the page size, 256).
pub fn dsv4_host_pages(device_tokens: u64, page: u64, ratio: f64) -> u64 {
    let pages = device_tokens.div_ceil(page.max(1));
    crate::sizing::py_int(pages as f64 * ratio).max(0) as u64
}

/// The refusal text of a DeepSeek-V4 host pool (`DeepSeekV4PagedHostPool.__init__` /
/// `DeepSeekV4StateHostPool.__init__`, 0.5.18–0.5.23): GB = 1e9, two decimals.
pub fn dsv4_refusal_message(pool: &str, state: bool, requested: u64, budget: i128) -> String {
    format!(
        "Not enough host memory for V4 {} pool {pool}. Requesting {} GB but only have {} GB free.",
        if state { "state" } else { "paged" },
        crate::units::fmt_gb(requested as i128),
        crate::units::fmt_gb(budget)
    )
}

/// `--chunked-prefill-size`'s default by GPU memory (`arg_groups/memory_hook.py:
/// _handle_gpu_memory_settings`, 0.5.23; `server_args.py` in earlier releases): under
/// 20 GiB 2048, under 60 GiB 4096, under 160 GiB 8192, else 16384 (`gpu_mem` in MiB
/// as SGLang measures the device's total memory).
pub fn default_chunked_prefill_size(gpu_memory_bytes: u64) -> i64 {
    let mib = gpu_memory_bytes >> 20;
    if mib < 20 * 1024 {
        2048
    } else if mib < 60 * 1024 {
        4096
    } else if mib < 160 * 1024 {
        8192
    } else {
        16384
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DeepSeek-V4-Pro's geometry (aiconfigurator-core 0.12.0,
    /// `deepseek-ai--DeepSeek-V4-Pro_config.json`): head_dim 512, rope 64, index 128,
    /// window 128, 61 layers, ratios [128, 128, then 4/128 alternating, …, 4 | 0 MTP].
    fn pro() -> Dsv4Geometry {
        let mut r = vec![128, 128];
        for l in 2..61 {
            r.push(if l % 2 == 0 { 4 } else { 128 });
        }
        r.push(0);
        Dsv4Geometry {
            head_dim: 512,
            qk_rope_head_dim: 64,
            index_head_dim: 128,
            sliding_window: 128,
            compress_ratios: r,
            layers: 61,
        }
    }

    /// The configurator's cap mode (no operator ratio): not what DeepSeek-V4 runs in
    /// 0.5.21–0.5.23, kept for a schedule that asks for it.
    fn sched() -> Dsv4Schedule {
        Dsv4Schedule {
            page_size: 256,
            max_running_requests: 256,
            chunked_prefill_size: 8192,
            operator_swa_full_tokens_ratio: None,
            attn_dp_size: 1,
            disable_radix_cache: false,
            disable_overlap_schedule: false,
            compress_state_itemsize: 4,
            speculative_num_draft_tokens: None,
        }
    }

    #[test]
    fn sglang_default_is_ratio_mode_at_the_overrides_ratio() {
        let d = Dsv4Schedule::sglang_default(8192);
        assert_eq!(d.operator_swa_full_tokens_ratio, Some(0.1));
        let c = pro().coefficients(&d);
        assert_eq!(c.swa_cap_tokens, None);
        // 0.1 × 45,285 + 5,586.75 = 4,528.5 + 5,586.75.
        assert_eq!(c.bytes_per_full_token, 10_115.25);
    }

    #[test]
    fn pro_ratio_mode_pool_sizes_by_hand() {
        let g = pro();
        // Fixed: the C128 rings only, 4,209,508,352 (see below). 100 GiB − fixed =
        // 103,164,674,048 / 10,115.25 = 10,198,973.2 → 10,198,784 (39,839 pages); SWA
        // int(1,019,878.4) → 3,983 pages = 1,019,648; C4 / 4, C128 / 128, C4 state
        // 3,983 × 8.
        let p = g
            .pool_sizes(&Dsv4Schedule::sglang_default(8192), 100 << 30, None)
            .unwrap();
        assert_eq!(p.fixed_bytes, 4_209_508_352);
        assert_eq!(
            (p.full, p.swa, p.c4, p.c128, p.c4_state),
            (10_198_784, 1_019_648, 2_549_696, 79_678, 31_864)
        );
        // The chunk does not enter ratio mode.
        let q = g
            .pool_sizes(&Dsv4Schedule::sglang_default(16384), 100 << 30, None)
            .unwrap();
        assert_eq!(q, p);
        // --swa-full-tokens-ratio 0.25: 0.25 × 45,285 + 5,586.75 = 16,908 B per full
        // token; 103,164,674,048 / 16,908 = 6,101,530.8 → 6,101,504 (23,834 pages); SWA
        // int(1,525,376.0) → 5,958 pages = 1,525,248.
        let quarter = Dsv4Schedule {
            operator_swa_full_tokens_ratio: Some(0.25),
            ..Dsv4Schedule::sglang_default(8192)
        };
        assert_eq!(g.coefficients(&quarter).bytes_per_full_token, 16_908.0);
        let p = g.pool_sizes(&quarter, 100 << 30, None).unwrap();
        assert_eq!((p.full, p.swa), (6_101_504, 1_525_248));
    }

    /// EAGLE with 4 draft tokens (0.5.21–0.5.23): 16-row C4 rings, 256-row C128 rings,
    /// both coefficients × 62/61 (SGLang's figures in tests/golden/dsv4_spec/).
    #[test]
    fn pro_with_an_eagle_draft_by_hand() {
        let g = pro();
        let s = Dsv4Schedule {
            speculative_num_draft_tokens: Some(4),
            ..Dsv4Schedule::sglang_default(8192)
        };
        assert_eq!(s.ring_sizes(), (16, 256));
        assert_eq!(g.spec_inflation(&s), Some(62.0 / 61.0));
        let c = g.coefficients(&s);
        // 585 × 61 + 16/256 × 10,240 × 30 = 54,885, then × 62/61.
        assert_eq!(c.bytes_per_swa_token, Some(54_885.0 * (62.0 / 61.0)));
        // (0.1 × 54,885 + 5,586.75) × 62/61.
        assert_eq!(c.bytes_per_full_token, 11_256.811475409837);
        // C128 rings: 257 × 256 + 257 = 66,049 → 66,176 rows × 4,096 B × 31 =
        // 8,402,763,776; (100 GiB − that) / 11,256.81 → 8,792,064; SWA 879,104; C4
        // state 3,434 pages × 16.
        let p = g.pool_sizes(&s, 100 << 30, None).unwrap();
        assert_eq!(p.fixed_bytes, 8_402_763_776);
        assert_eq!((p.full, p.swa, p.c4_state), (8_792_064, 879_104, 54_944));
        // Cap mode's draft-aware request cap is not modelled.
        let cap = Dsv4Schedule {
            operator_swa_full_tokens_ratio: None,
            ..s
        };
        assert_eq!(
            g.pool_sizes(&cap, 100 << 30, None),
            Err(Dsv4Error::SpeculativeCapMode)
        );
    }

    #[test]
    fn pro_coefficients_by_hand() {
        let g = pro();
        let c = g.coefficients(&sched());
        // 30 ratio-4 layers (even 2..60), 31 ratio-128 (0, 1 and odd 3..59).
        assert_eq!((c.c4_layers, c.c128_layers), (30, 31));
        // kv_bytes = 448 + 2·64 + 8 = 584.
        assert_eq!(c.kv_bytes, 584);
        // paged(256) = ceil(256·584/576)·576/256 = 260·576/256 = 585;
        // c4 state: 8/256 · (2·2·512·4 + 2·2·128·4) = 320 per ratio-4 layer.
        // 585·61 + 320·30 = 35,685 + 9,600 = 45,285.
        assert_eq!(c.bytes_per_swa_token, Some(45_285.0));
        // Cap mode: ratio 4 (585/4 + 132/4 = 179.25) × 30 + ratio 128 (paged(2) =
        // ceil(1168/576)·576/2 = 864; 864/128 = 6.75) × 31 = 5,377.5 + 209.25.
        assert_eq!(c.bytes_per_full_token, 5_586.75);
        // (128 + 128 + 256 + 256) · 256 + 2 · 8192 + 256 = 213,248; tails 1024 ·
        // (128 + 256) = 393,216; 606,464 is a multiple of 256.
        assert_eq!(c.swa_cap_tokens, Some(606_464));
    }

    #[test]
    fn pro_pool_sizes_by_hand() {
        let g = pro();
        // Fixed: C128 rows ceil((257·128 + 129)/128)·128 = 33,152 × 1024 × 4 B × 31 =
        // 4,209,508,352; SWA cap 606,464 × 45,285 = 27,463,722,240.
        // 100 GiB = 107,374,182,400 → 75,700,951,808 for tokens / 5,586.75 =
        // 13,550,128.4 → 13,550,080 (page 256).
        let p = g.pool_sizes(&sched(), 100 << 30, None).unwrap();
        assert_eq!(p.fixed_bytes, 4_209_508_352 + 27_463_722_240);
        assert_eq!(p.full, 13_550_080);
        assert_eq!(p.swa, 606_464);
        assert_eq!(p.c4, 3_387_520);
        assert_eq!(p.c128, 105_860);
        // 606,464 / 256 × 8.
        assert_eq!(p.c4_state, 18_952);
    }

    #[test]
    fn cap_mode_per_attention_dp_worker() {
        // Pro, --max-running-requests 256 over 2 attention-DP workers (128 each), the
        // chunk after `handle_data_parallelism` (8192 // 2): cap ceil_align((128 + 128 +
        // 256 + 256) × 128 + 2 × 4096 + 256 + 4 × 128 × (128 + 256), 256) = 98,304 +
        // 8,192 + 256 + 196,608 = 303,360; fixed C128 (129 slots: 16,768 rows × 4 KiB ×
        // 31 = 2,129,133,568) + 303,360 × 45,285 = 13,737,657,600; on 34,498,661,632 B
        // (18,631,870,464 / 5,586.75 = 3,335,010.6) → 3,334,912, SGLang's configurator's
        // figure for that budget. The undivided chunk 8192 gives its 311,552 / 3,268,608.
        let s = Dsv4Schedule {
            attn_dp_size: 2,
            chunked_prefill_size: 4096,
            ..sched()
        };
        assert_eq!(pro().coefficients(&s).swa_cap_tokens, Some(303_360));
        let p = pro().pool_sizes(&s, 34_498_661_632, None).unwrap();
        assert_eq!((p.full, p.swa), (3_334_912, 303_360));
        let undivided = Dsv4Schedule {
            chunked_prefill_size: 8192,
            ..s
        };
        let p = pro().pool_sizes(&undivided, 34_498_661_632, None).unwrap();
        assert_eq!((p.full, p.swa), (3_268_608, 311_552));
    }

    #[test]
    fn cap_larger_than_budget_is_sglangs_error() {
        let e = pro()
            .pool_sizes(&sched(), 20 << 30, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("The DSV4 SWA pool cap (606464 tokens"), "{e}");
    }

    #[test]
    fn ratio_four_one_is_refused() {
        let mut g = pro();
        g.compress_ratios[5] = 2;
        assert_eq!(g.check(), Err(Dsv4Error::UnmodelledRatio(2)));
    }
}
