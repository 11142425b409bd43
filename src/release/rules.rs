//! The complete rule set of each release, as data: a struct-update chain from the oldest
//! modelled release, each change citing the wheel file and function it was read from.

use serde::{Deserialize, Serialize};

use super::Release;
use super::copy_kernel::LoadBackKernel;
use super::log_lines::{AllocatingLine, HostRegister, LogRules, SmallHostLine};
use super::proposal::{L3WriteRule, LoadBackMode, Proposal, WriteBackTrigger};
use crate::cache::{DeviceEvictAmount, EvictVersion, TreeKind};
use crate::domain::PrefetchPolicy;
use crate::sizing::{
    AutoSizeRule, AvailableReading, HeadroomVariant, PrefetchCapRule, Rules, SglangVersion,
};

/// `pool_configurator.py: DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO` (and
/// `model_overrides/deepseek_v4.py`'s `swa_full_tokens_ratio` default), 0.5.21–0.5.23:
/// the ratio DeepSeek-V4's SWA pool takes when none is given.
pub const DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO: f64 = 0.1;

/// Which parameters OffloaderV1 keeps on the GPU, by release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuOffloadResident {
    /// 0.5.14–0.5.20 `OffloaderV1.maybe_offload_to_cpu`: every parameter of the layer in
    /// `module.parameters()` order, MLA `kv_b_proj` included. (`post_load_weights` then
    /// derives those layers' bf16 `w_kc` / `w_vc` from a host tensor; where they end up
    /// is not modelled: they stay counted on the GPU.)
    Nothing,
    /// 0.5.21–0.5.23 `_get_resident_parameter_ids`: an MLA attention's `kv_b_proj`
    /// parameters stay (its owner has `w_kc` / `w_vc`, which `post_load_weights` derives
    /// from them on their device). 0.5.23 also keeps any parameter whose storage a
    /// cached tensor attribute shares, which for these models is the same set.
    MlaKvB,
}

/// [`ReleaseRules::tree`] as the rule tables name it: `v1_hi_radix`
/// (`mem_cache/hiradix_cache.py: HiRadixCache`, ≤ 0.5.18 for plain models) or `unified`
/// (`mem_cache/unified_radix_cache.py: UnifiedRadixCache`, every model from 0.5.19;
/// `registry.py`).
fn tree_id<S: serde::Serializer>(t: &TreeKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match t {
        TreeKind::HiRadix => "v1_hi_radix",
        TreeKind::V1 => "v1",
        TreeKind::Unified0523 => "unified",
    })
}

/// The prefetch timeout formula `base + tokens / 1024 × per_ki`, optionally capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PrefetchTimeout {
    pub base_ms: u64,
    pub per_ki_token_ms: u64,
    /// `None`: no cap.
    pub max_ms: Option<u64>,
    /// Which tokens the formula counts.
    pub tokens: PrefetchTimeoutTokens,
}

/// When the prefetch timeout clock starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefetchTimeoutClock {
    /// At the prefetch's issue (`operation.start_time`, `_prefetch_timeout_check_linear_func`).
    #[default]
    Issue,
    /// At the first blocked admission poll (0.5.23 `utils/poll_timer.py: PollTimer`,
    /// `unified_radix_cache.py: _start_storage_prefetch_wait`).
    FirstBlockedPoll,
}

/// The tokens the prefetch timeout formula counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefetchTimeoutTokens {
    /// `len(operation.hash_value) * page_size`: the pages the hit got host slots for
    /// (≤ 0.5.18 `hiradix_cache.py: _prefetch_timeout_check_linear_func`, 0.5.19 –
    /// 0.5.22 `unified_radix_cache.py: _prefetch_timeout_check_linear_func`).
    #[default]
    Fetched,
    /// `operation.stats_requested_tokens`: the requested span, hit or not (0.5.23
    /// `unified_radix_cache.py: _start_storage_prefetch_wait`).
    Requested,
}

/// Storage-availability re-issues of a queued request (`mem_cache/storage_prefetch.py:
/// StoragePrefetchRetries.pop_ready`; `--hicache-storage-prefetch-retry-poll-interval`,
/// `--hicache-storage-prefetch-retry-max-attempts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PrefetchRetries {
    /// Scheduling passes between re-issues; 0 disables miss retries.
    pub poll_interval: u32,
    pub max_attempts: u32,
}

/// `--radix-eviction-policy` choices (`server_args.py: RADIX_EVICTION_POLICY_CHOICES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvictionChoices {
    /// `lru, lfu, slru, priority` (≤ 0.5.20).
    Four,
    /// `lru, lfu, slru, priority, tlru` (0.5.21+).
    WithTlru,
}

impl EvictionChoices {
    pub fn choices(self) -> &'static [&'static str] {
        match self {
            EvictionChoices::Four => &["lru", "lfu", "slru", "priority"],
            EvictionChoices::WithTlru => &["lru", "lfu", "slru", "priority", "tlru"],
        }
    }
}

/// `--hicache-host-memory-mode buffer_only` with `--hicache-write-policy write_back`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferOnlyWriteBack {
    /// `arg_groups/hicache_hook.py` ≤ 0.5.21: `ValueError`.
    #[default]
    Error,
    /// 0.5.22+: coerced to `write_through` with a warning.
    CoerceWriteThrough,
}

/// Which new pages a `buffer_only` host (a bounce buffer, no L2) writes to storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageWriteGate {
    /// Every page an insert adds (no release has this rule: `buffer_only` appears in
    /// 0.5.19 with the gate below; kept as the what-if default).
    #[default]
    EveryBackup,
    /// Only what a cache-mode host would back up: the insert's backup action
    /// (`unified_tree_core.py: _inc_hit_count_and_check`, `hit_count >=
    /// write_through_threshold`, so `write_through_selective` writes a node at its
    /// second hit) becomes `BufferModePipeline.enqueue_backup_intent` for the node and
    /// its ancestors (`_build_backup_kv_action`; the storage existence cache drops
    /// pages already stored). 0.5.19+.
    WriteThreshold,
}

/// The controller fields a release sets that no simulation reads: reported (`versions
/// --format json`), not modelled.
/// - `buffer_only_cap_090`: the replay takes buffer_only's cap from
///   [`PrefetchCapRule::in_mode`] (the mode exists from 0.5.19, the first release where
///   this is true).
/// - `default_prefetch_policy`: a scenario's default is `ServerArgs::default` (`timeout`,
///   the same in every release).
///
/// Every other field runs: the replay's controller ([`crate::runtime::ReplayConfig::
/// for_release`]) or the server checks (`eviction_choices`, `buffer_only_write_back`).
pub const REPORTED_NOT_MODELLED: [&str; 2] = ["buffer_only_cap_090", "default_prefetch_policy"];

/// The HiCache controller and scheduler defaults a release ships (two of them reported,
/// not modelled: [`REPORTED_NOT_MODELLED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ControllerRules {
    /// `prefetch_capacity_limit` (`managers/cache_controller.py`) in cache mode
    /// ([`PrefetchCapRule::in_mode`] gives buffer_only's).
    #[serde(serialize_with = "PrefetchCapRule::serialize_id")]
    pub prefetch_cap: PrefetchCapRule,
    /// buffer_only mode's cap is `int(0.9 × host)` (0.5.19+ `cache_controller.py`).
    pub buffer_only_cap_090: bool,
    pub prefetch_timeout: PrefetchTimeout,
    pub prefetch_timeout_clock: PrefetchTimeoutClock,
    pub prefetch_retries: PrefetchRetries,
    /// `--hicache-storage-prefetch-policy` default: `timeout` in every modelled release.
    pub default_prefetch_policy: PrefetchPolicy,
    pub eviction_choices: EvictionChoices,
    pub buffer_only_write_back: BufferOnlyWriteBack,
    pub storage_write_gate: StorageWriteGate,
    /// How much device eviction asks for: the shortfall (`allocator/base.py`: `shortfall =
    /// num_tokens - self.available_size()`, 0.5.17+), else the whole request.
    #[serde(
        rename = "device_evict_shortfall",
        serialize_with = "DeviceEvictAmount::serialize_is_shortfall"
    )]
    pub device_evict: DeviceEvictAmount,
    /// The device-eviction code path: before #28614 (0.5.14) write_back demotes leaves
    /// in one loop (`EvictVersion::V0`).
    #[serde(rename = "evict_v0", serialize_with = "EvictVersion::serialize_is_v0")]
    pub evict_version: EvictVersion,
    /// The SM copy kernel a `--hicache-io-backend kernel` load-back runs
    /// ([`super::copy_kernel`]): the register kernel at 2 CTAs (≤ 0.5.20), the TMA
    /// kernel at 4 CTAs (0.5.21+ `kernels/ops/kvcache/hicache.py:
    /// use_hicache_tma_kernel`, `SGLANG_HICACHE_TMA_TRANSFER` default on). Not in
    /// `versions --format json`, whose output is kept as it was.
    #[serde(skip)]
    pub load_back_kernel: LoadBackKernel,
    /// How a host hit is loaded back: batched in every release, per node under the
    /// what-if of sglang PR 39395 ([`super::proposal`]). Not in `versions --format json`.
    #[serde(skip)]
    pub load_back: LoadBackMode,
    /// When write_back copies to host: at eviction in every release, above a watermark
    /// under the what-if of sglang PR 40576. Not in `versions --format json`.
    #[serde(skip)]
    pub write_back_trigger: WriteBackTrigger,
    /// When cache mode writes L3: at host admission in every release, at host eviction
    /// under the what-if of sglang PR 39845. Not in `versions --format json`.
    #[serde(skip)]
    pub l3_write: L3WriteRule,
    /// What a running request reserves in the timed replay's admission. Not in
    /// `versions --format json`.
    #[serde(skip)]
    pub running_offset: RunningOffset,
    /// Which requests a PD decode server's HiCache restore holds back. Not in
    /// `versions --format json`.
    #[serde(skip)]
    pub decode_restore_gate: DecodeRestoreGate,
}

/// When a PD decode server with HiCache lets a preallocated request run
/// (`disaggregation/decode_hicache_mixin.py: _process_hicache_local_restores`, its
/// readiness gating the KV poll through `HiCacheRestoreGatedKVReceiver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeRestoreGate {
    /// 0.5.14–0.5.22: a request waits for its own restore's copy only; one with
    /// nothing to restore is ready at once.
    OwnCopy,
    /// 0.5.23: every pending request, with a restore or not, is bound to the newest
    /// load event when it is queued ("L1 followers can see indices published before
    /// the restoring DMA ends"), so it waits for the copies in flight then.
    #[default]
    LatestCopy,
}

/// A running request's term of `PrefillAdder`'s `rem_total_token_offset`
/// (`managers/schedule_policy.py: _get_running_request_total_token_offset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunningOffset {
    /// 0.5.14–0.5.21: `min(max_new_tokens − len(output_ids), CLIP) × new_token_ratio`,
    /// whatever the request's `ignore_eos`.
    Ratio,
    /// 0.5.22+: the ratio is 1 for an `ignore_eos` request ("Fixed-length requests
    /// cannot benefit from the early-EOS estimate").
    #[default]
    WholeUnderIgnoreEos,
}

/// Which sizing flags exist (`server_args.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FlagRules {
    /// `--hicache-host-memory-fraction` (0.5.21+, sglang PR 40135). Before, argparse rejects it.
    pub hicache_host_memory_fraction: bool,
    /// SM100's default backend for plain attention and the pages it keeps.
    pub sm100_attention: Sm100Attention,
    /// The page a DSA model runs.
    pub dsa_page: DsaPage,
}

/// How `--hicache-size` reaches the host pools of a model with more than one
/// independently sized pool (SWA full + sliding window, KV + Mamba/linear state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HicacheSizeSplit {
    /// 0.5.14–0.5.16 (`mem_cache/hybrid_cache/hybrid_pool_assembler.py` has no split):
    /// every pool is built with the whole `--hicache-size`.
    WholeSizeEachPool,
    /// 0.5.17+ `hybrid_pool_assembler.py: _split_hicache_size`: each pool gets
    /// `hicache_size * device_bytes / Σ device_bytes` (`get_kv_size_bytes`).
    ByDeviceBytes,
}

/// Where the KV of MTP (NextN) draft layers lives on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MtpDraftHost {
    /// ≤ 0.5.17 `mem_cache/kv_cache_builder.py: maybe_register_hicache_draft`: a
    /// separate draft host pool with `host_to_device_ratio = primary.size / pool.size`,
    /// `host_size = 0` (the target's slot count, plus its own padding page).
    SeparatePool,
    /// 0.5.18 `speculative/base_spec_worker.py: _build_hicache_draft_plan` chooses
    /// `HiCacheDraftMode.PACKED` for NextN MTP, which only `UnifiedRadixCache`'s host
    /// pools honour (`pool_host/mla.py` / `mha.py`: `layer_num = target + drafts`);
    /// `hiradix_cache.py: HiRadixCache` (plain MHA/MLA models in 0.5.18) builds the
    /// target pool alone and `maybe_register_hicache_draft` returns for `PACKED`: the
    /// draft KV gets no host copy.
    PackedUnifiedTreeOnly,
    /// 0.5.19+: every model runs `UnifiedRadixCache`; draft layers packed into the
    /// target host pools (`layer_num = target_layer_num + len(mtp_draft_device_pools)`).
    Packed,
}

/// How the device Mamba/linear-state pool's slot count is derived
/// (`max_mamba_cache_size`, `kv_cache_configurator.py: _handle_max_mamba_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MambaSlotFormula {
    /// ≤ 0.5.16: `int(mamba_budget_bytes // per_req)`; state memory `K * per_req`.
    Floor,
    /// 0.5.17+: `int((mamba_budget_bytes - per_slot) // per_slot)`; state memory
    /// `(K + 1) * per_slot` (the pool's padding slot).
    PaddingSlot,
}

/// The pools a release builds for a model: the data behind
/// [`crate::sizing::pool_set`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PoolRules {
    pub hicache_size_split: HicacheSizeSplit,
    pub mtp_draft_host: MtpDraftHost,
    pub mamba_slots: MambaSlotFormula,
    /// 0.5.20+ `model_executor/pool_configurator.py: validate_swa_pool_size`: an SWA
    /// device pool of at most `sliding_window_size + page_size` tokens is a `ValueError`.
    pub swa_floor_check: bool,
    /// How DeepSeek-V4's compressed-attention pools are sized.
    pub dsv4_pools: Dsv4Pools,
    /// How DeepSeek-V4's HiCache host pools are built, where modelled.
    pub dsv4_host: Dsv4HostPools,
    /// Whether DeepSeek-V4's configurator bounds the speculative draft tokens by its
    /// compress-state rings.
    pub dsv4_draft_token_bound: Dsv4DraftTokenBound,
    /// How an EAGLE / NextN draft's KV enters the target's device cell size.
    pub draft_cell: DraftCell,
    /// Which layers of a DSA model (GLM-5.x, DeepSeek-V3.2) hold index-K, on the device
    /// and in the HiCache host indexer pool.
    pub dsa_index_k: DsaIndexK,
    /// What a multimodal model's KV budget leaves out for the allocations made after
    /// the pools are sized.
    pub mm_reservation: MmReservation,
}

/// The multimodal reservation `profile_max_num_token`'s budget leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MmReservation {
    /// ≤ 0.5.17: none (`rest_memory = available - slack`; the embedding cache fits in
    /// the runtime slack).
    None,
    /// 0.5.18+: `mem_cache/kv_cache_configurator.py: mm_runtime_reservation_gb` (called
    /// by `_profile_available_bytes`): a multimodal model (`ModelConfig.is_multimodal`)
    /// reserves `SGLANG_VLM_CACHE_SIZE_MB` (100) MiB, plus `SGLANG_MM_FEATURE_CACHE_MB`
    /// for a CUDA IPC / VMM feature transport, which a one-node server does not
    /// resolve to (`handle_multimodal_feature_transport`: `cpu`; multi-node GB200 /
    /// GB300 MNNVL transports are not modelled).
    VlmCache100Mib,
}

impl MmReservation {
    /// GiB taken from the budget of a model that is (or is not) multimodal.
    pub fn gib(self, multimodal: bool) -> f64 {
        match self {
            MmReservation::VlmCache100Mib if multimodal => 100.0 / 1024.0,
            _ => 0.0,
        }
    }
}

/// Which layers of a DSA model hold index-K (the indexer keys, 132 B per layer per token
/// in every release): all of them, or only those that compute their own top-k (the
/// others, `indexer_types` `shared`, reuse the previous layer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DsaIndexK {
    /// 0.5.14–0.5.17: never elided. `model_executor/pool_configurator.py:
    /// DefaultPoolConfigurator._compute_cell_size` charges the indexer on every layer
    /// (`× effective_num_layers`), `memory_pool.py:
    /// DSATokenToKVPool` allocates it per layer, `memory_pool_host.py:
    /// DSAIndexerPoolHost.__init__` mirrors `device_pool.layer_num`.
    AllLayers,
    /// 0.5.18–0.5.21: `mem_cache/kv_cache_configurator.py: _should_elide_dsa_index_k`
    /// elides (device pool and cell size on the owned layers) only `not
    /// enable_hierarchical_cache and disaggregation_mode == "null"` (and no HiSparse,
    /// not a draft worker, from 0.5.20 no external linker); the host indexer pool
    /// (`pool_host/dsa.py: DSAIndexerPoolHost.__init__`, 0.5.19+) mirrors the device
    /// pool's `layer_num`: with HiCache on, every layer on both.
    ElideUnlessHicacheOrPd,
    /// 0.5.22+: `_should_elide_dsa_index_k` elides on CUDA with HiCache or PD on (it keeps
    /// every layer only on NPU with PD or HiCache, not modelled), and `pool_host/dsa.py:
    /// make_dsa_indexer_pool_decl` gives the host pool only the owned layers
    /// (`owned_device_layers`).
    ElideOwned,
}

/// Defaults of GPUs whose nvidia-smi total is 20–35 GiB (`gpu_mem < 35 * 1024` MiB) in
/// `_handle_gpu_memory_settings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MidGpuTier {
    /// 0.5.14–0.5.19: `chunked_prefill_size` 2048, decode `max_bs` 24 (TP < 4) or 80.
    Chunk2kBs24,
    /// 0.5.20+ (`arg_groups/memory_hook.py: handle_gpu_memory_settings`): 4096, 48 or 160.
    Chunk4kBs48,
}

/// The default prefill CUDA-graph backend on CUDA and the configurations that turn it
/// off before `_handle_gpu_memory_settings` runs (its reserve is `len(prefill bs) * 8`
/// MiB, or 1.5 GiB for an MLA model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefillGraphDefault {
    /// 0.5.14 (`model_executor/cuda_graph_config.py: CudaGraphConfig`, `tc_piecewise`;
    /// `server_args.py: _disable_tc_piecewise_cudagraph_if_incompatible`): off under
    /// HiCache, DP attention, PP > 1, HIP.
    TcPiecewise,
    /// 0.5.15–0.5.16 (`default_prefill_backend` = `breakable`;
    /// `_disable_breakable_cudagraph_if_incompatible`): off for MLA models and DP
    /// attention.
    BreakableNoMla,
    /// 0.5.17: `breakable`, off for MLA models without a DSA indexer
    /// ("MLA attention (non-DSA)").
    BreakableNoPlainMla,
    /// 0.5.18+ (`arg_groups/cuda_graph_hook.py: disable_breakable_cudagraph_if_incompatible`
    /// from 0.5.19): `breakable` for every modelled model on CUDA.
    Breakable,
}

/// How a release sizes the device pools: the `--mem-fraction-static` default
/// (`server_args.py: _handle_gpu_memory_settings` ≤ 0.5.18,
/// `arg_groups/memory_hook.py: handle_gpu_memory_settings` 0.5.19+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DevicePoolRules {
    pub mid_gpu_tier: MidGpuTier,
    pub prefill_graph: PrefillGraphDefault,
    /// 0.5.14 reserves `decode max_bs * 2` MiB even with CUDA graphs disabled; 0.5.15+
    /// only when the decode backend is on (`reserve_for_graph_mb`).
    pub decode_reserve_without_graph: bool,
    /// 0.5.22+: a default decode `max_bs` is capped by `--max-running-requests`.
    pub decode_max_bs_capped_by_running: bool,
    /// 0.5.15+: 2 GiB more for DeepEP all-to-all buffers (`reserve_for_deepep_a2a_mb`).
    pub deepep_reserve: bool,
    /// How a PD prefill or decode server's default differs from a colocated engine's.
    pub pd_roles: PdRoles,
}

/// The `--mem-fraction-static` default of one side of a prefill-decode disaggregated
/// deployment (`--disaggregation-mode prefill|decode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PdRoles {
    /// 0.5.14: the colocated formula, with `arg_groups/pd_disaggregation_hook.py:
    /// handle_pd_disaggregation` setting `disable_cuda_graph = True` on a prefill
    /// server (both graph phases off; the decode `max_bs × 2` stays, as 0.5.14 reserves
    /// it without graphs), and `server_args.py: _disable_tc_piecewise_cudagraph_if_incompatible`
    /// turning the prefill graph off on either side ("PD disaggregation").
    PrefillWithoutGraphs0514,
    /// 0.5.15+ (`server_args.py: _handle_gpu_memory_settings` to 0.5.18,
    /// `arg_groups/memory_hook.py: handle_gpu_memory_settings` and `reserve_for_graph_mb`
    /// from 0.5.19): a decode server's activation is `max(running × draft tokens, 2048)`
    /// tokens (`--max-running-requests`, else the decode graph's max_bs; the
    /// `--speculative-num-draft-tokens` flag as given, else 1) and it reserves no prefill
    /// graph; a prefill server reserves no decode graph, DP-attention padding or DeepEP
    /// buffers (`apply_cuda_graph_disaggregation_roles` turns its decode graph off).
    RoleAware,
}

/// The target's `cell_size` with an EAGLE / NextN draft of `d` layers over `n` target
/// layers (`model_executor/pool_configurator.py: DefaultPoolConfigurator.__init__`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DraftCell {
    /// 0.5.14–0.5.17: `int(cell * (1 + d / n))` for every model (a DSA model's indexer
    /// scaled with the KV).
    Scale,
    /// 0.5.18–0.5.21: a DSA model adds `int(kv * d / n)` of KV and the draft's own
    /// indexer on all `d` layers (`_compute_dsa_indexer_cell_size(allocate_all_layers=
    /// True)`; 0.5.18 `pool_configurator.py:188-209`), which differs from
    /// [`Self::Scale`] when the target shares or elides its indexer; every other model
    /// keeps `int(cell * (1 + d / n))`.
    DsaAddPerLayer,
    /// 0.5.22+: the DSA branch as [`Self::DsaAddPerLayer`]; every other model adds
    /// `int(cell * d / n)`.
    AddPerLayer,
}

/// DeepSeek-V4's device pools (`model_executor/pool_configurator.py:
/// DSV4PoolConfigurator`, present in every modelled release; its rules changed release
/// by release).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dsv4Pools {
    /// 0.5.14: as [`Self::FlatKvBytes0518`] but the C128 compress-state rings are
    /// charged per SWA token (`c128_ring_size / window_size` rows of `2 × head_dim`
    /// fp32 per ratio-128 layer, at the SWA ratio) instead of as fixed request-scoped
    /// bytes (`model::dsv4::Dsv4Formula::C128PerSwaToken0514`); the ratio resolved by
    /// `arg_groups/deepseek_v4_hook.py: apply_deepseek_v4_defaults` (0.8 → 0.1).
    C128PerSwaToken0514,
    /// 0.5.15–0.5.19: `pool_configurator.py: DSV4PoolConfigurator` prices every pool at
    /// the FlashMLA `kv_bytes` with the SWA ratio in the coefficient
    /// (`model::dsv4::Dsv4Formula::FlatKvBytes0518`), no SWA
    /// floor; `model_overrides/deepseek_v4.py` (`overrides.py` in 0.5.15–0.5.18) sets
    /// `swa_full_tokens_ratio = 0.1` when it equals `ServerArgs`' default 0.8 — an
    /// explicit `--swa-full-tokens-ratio 0.8` too. (0.5.15–0.5.17's configurator reads
    /// a `ModelRunner` or an early `KVCacheConfigurator`: checked by
    /// `tools/models/dsv4_early_golden.py`, the later ones by the KV differential.)
    FlatKvBytes0518,
    /// 0.5.20: as [`Self::FlatKvBytes0518`] with `validate_swa_pool_size`, the ratio's
    /// default now `None` (set to 0.1 when unset, an explicit 0.8 kept).
    FlatKvBytes0520,
    /// 0.5.21–0.5.23: fractional bytes per full token and the C128 state rings as fixed
    /// bytes (`crate::model::dsv4`; the three releases agree on V4's ratios 0 / 4 /
    /// 128), the SWA pool always in ratio mode: `arg_groups/model_overrides/
    /// deepseek_v4.py: _deepseek_v4_overrides` declares `swa_full_tokens_ratio = 0.1`
    /// when the flag is unset (`model_type` not `deepseek_v41`), and
    /// `arg_groups/kv_cache_hook.py: handle_cache_compatibility`, later in
    /// `pipeline.py: run_resolution_pipeline`, records
    /// `_swa_full_tokens_ratio_explicitly_set = cfg.swa_full_tokens_ratio is not None`,
    /// true, so `pool_configurator.py: _operator_swa_full_tokens_ratio` returns the ratio
    /// and `_resolve_swa_cap_tokens` None: the SWA request cap is never used.
    RatioMode0521,
}

/// Whether `DSV4PoolConfigurator.__init__` refuses more speculative draft tokens than
/// its compress-state rings can keep resident (`model::dsv4::Dsv4Geometry::
/// check_draft_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dsv4DraftTokenBound {
    /// 0.5.14–0.5.17: no bound; the rings are 16 / 256 rows whatever the draft count.
    Unbounded,
    /// 0.5.18–0.5.23: `pool_configurator.py: _assert_ring_serves_draft_tokens` asserts
    /// `max_speculative_num_draft_tokens <= get_compress_state_write_pad(ratio, ring)`
    /// (`deepseek_v4_memory_pool.py`: `ring - window + 2`, window 8 for ratio 4 and
    /// 128 for ratio 128: at most 10 draft tokens with C4 layers, 130 with C128 ones).
    RingWritePad,
}

impl Dsv4Pools {
    /// The ratio `DSV4PoolConfigurator` sees as the operator's
    /// (`model::dsv4::Dsv4Schedule::operator_swa_full_tokens_ratio`) for the
    /// `--swa-full-tokens-ratio` given (`None`: not given).
    pub fn operator_swa_full_tokens_ratio(self, given: Option<f64>) -> Option<f64> {
        match self {
            Dsv4Pools::C128PerSwaToken0514 | Dsv4Pools::FlatKvBytes0518 => match given {
                // `ServerArgs.swa_full_tokens_ratio`'s default 0.8, given or not.
                None => Some(DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO),
                Some(r) if r == 0.8 => Some(DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO),
                Some(r) => Some(r),
            },
            Dsv4Pools::FlatKvBytes0520 | Dsv4Pools::RatioMode0521 => {
                Some(given.unwrap_or(DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO))
            }
        }
    }
}

/// The attention backend SGLang picks on SM100 (B200, B300, GB200, GB300) for a
/// plain-attention model and the pages it keeps (`get_default_attn_backend`,
/// `_mla_backend_page_constraints`; `model::resolve_page_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sm100Attention {
    /// 0.5.14–0.5.16: `trtllm_mha`, which keeps pages of 16, 32 or 64.
    Trtllm64,
    /// 0.5.17–0.5.23: `trtllm_mha` keeps 128 too (trtllm-gen's dynamic tokens-per-page
    /// kernels); a model with unequal K and V widths gets `fa4` (128-token pages).
    Trtllm128Fa4,
}

/// The page a DSA model (DeepSeek-V3.2, GLM-5.x) runs on CUDA whatever `--page-size`
/// says (`Setting page size to … for DeepSeek DSA.`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DsaPage {
    /// 0.5.14–0.5.21: 64 (`server_args.py`, then `model_overrides/deepseek_v2.py`).
    Fixed64,
    /// 0.5.22–0.5.23: `64 × index_kpool`, so a prefix hit never ends inside a pooled
    /// index group.
    KpoolTimes64,
}

/// DeepSeek-V4's HiCache host pools (`hybrid_pool_assembler.py:
/// build_deepseek_v4_hicache_stack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dsv4HostPools {
    /// 0.5.14–0.5.17: built by other code (their `DeepSeekV4PagedHostPool`,
    /// `DeepSeekV4StateHostPool` and assembler differ from 0.5.18's) that no
    /// differential runs: a start-up with HiCache on is `not_modelled`.
    NotModelled,
    /// 0.5.18–0.5.23: `model::dsv4::Dsv4Geometry::host_pools`, checked against each
    /// release's own stack by `tools/models/dsv4_host_golden.py`.
    Stack0518,
}

/// Everything a release (or a what-if) decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReleaseRules {
    pub sizing: Rules,
    pub controller: ControllerRules,
    /// Which prefix tree a plain model's HiCache path runs (the replay's `tree`).
    #[serde(serialize_with = "tree_id")]
    pub tree: TreeKind,
    pub flags: FlagRules,
    pub pools: PoolRules,
    pub device: DevicePoolRules,
    /// The wording of SGLang's own start-up log lines (`release::log_lines`). Not in
    /// `versions --format json`, whose output is kept as it was. (The refusal text,
    /// `Not enough host memory available. Requesting … GB but only have … GB free. …`,
    /// and the DSA indexer's are the same in every release 0.5.14–0.5.23:
    /// `sizing::refusal_message`.)
    #[serde(skip)]
    pub log: LogRules,
    /// Which parameters `--cpu-offload-gb` leaves on the GPU
    /// ([`CpuOffloadResident`]). Not in `versions --format json`,
    /// whose output is kept as it was.
    #[serde(skip)]
    pub cpu_offload_resident: CpuOffloadResident,
}

/// 0.5.14 (`mem_cache/pool_host/base.py: HostKVCache.__init__`: `assert self.size >
/// device_pool.size` before `psutil.virtual_memory()`; `managers/cache_controller.py`:
/// `max(0, int(0.8 * (host.size - device.size)))`; `mem_cache/hicache_storage.py:
/// PrefetchTimeoutConfig` 2.0 s + 0.1 s/Ki, max 30 s for `hiradix_cache.py`).
fn r0_5_14() -> ReleaseRules {
    ReleaseRules {
        sizing: SglangVersion::Pre28614.rules(),
        controller: ControllerRules {
            prefetch_cap: PrefetchCapRule::ExcessOverDevice,
            buffer_only_cap_090: false,
            prefetch_timeout: PrefetchTimeout {
                base_ms: 2000,
                per_ki_token_ms: 100,
                max_ms: Some(30_000),
                tokens: PrefetchTimeoutTokens::Fetched,
            },
            prefetch_timeout_clock: PrefetchTimeoutClock::Issue,
            prefetch_retries: PrefetchRetries {
                poll_interval: 0,
                max_attempts: 0,
            },
            default_prefetch_policy: PrefetchPolicy::Timeout,
            eviction_choices: EvictionChoices::Four,
            buffer_only_write_back: BufferOnlyWriteBack::Error,
            storage_write_gate: StorageWriteGate::EveryBackup,
            device_evict: DeviceEvictAmount::Requested,
            evict_version: EvictVersion::V0,
            // `kernels/ops/kvcache/hicache.py: DEFAULT_BLOCK_QUOTA = 2` on CUDA; no TMA
            // kernel (`hicache_tma.cuh` first ships in 0.5.21).
            load_back_kernel: LoadBackKernel::Register2Cta,
            load_back: LoadBackMode::Batched,
            write_back_trigger: WriteBackTrigger::AtEviction,
            l3_write: L3WriteRule::AtHostAdmission,
            running_offset: RunningOffset::Ratio,
            decode_restore_gate: DecodeRestoreGate::OwnCopy,
        },
        tree: TreeKind::HiRadix,
        flags: FlagRules {
            hicache_host_memory_fraction: false,
            sm100_attention: Sm100Attention::Trtllm64,
            dsa_page: DsaPage::Fixed64,
        },
        pools: PoolRules {
            hicache_size_split: HicacheSizeSplit::WholeSizeEachPool,
            mtp_draft_host: MtpDraftHost::SeparatePool,
            mamba_slots: MambaSlotFormula::Floor,
            swa_floor_check: false,
            dsv4_pools: Dsv4Pools::C128PerSwaToken0514,
            dsv4_host: Dsv4HostPools::NotModelled,
            dsv4_draft_token_bound: Dsv4DraftTokenBound::Unbounded,
            draft_cell: DraftCell::Scale,
            dsa_index_k: DsaIndexK::AllLayers,
            mm_reservation: MmReservation::None,
        },
        device: DevicePoolRules {
            mid_gpu_tier: MidGpuTier::Chunk2kBs24,
            prefill_graph: PrefillGraphDefault::TcPiecewise,
            decode_reserve_without_graph: true,
            decode_max_bs_capped_by_running: false,
            deepep_reserve: false,
            pd_roles: PdRoles::PrefillWithoutGraphs0514,
        },
        // `pool_host/base.py: HostKVCache.__init__` asserts host > device (no warning)
        // and logs `Allocating {:.2f} GB host memory for hierarchical KV cache.`;
        // `memory_pool_host.py: _cuda_host_register` registers the buffer in one call;
        // no headroom or auto-size line (those functions do not exist yet).
        log: LogRules {
            allocating: AllocatingLine::Unlabelled,
            small_host: SmallHostLine::Asserts,
            headroom_line: false,
            auto_size_line: false,
            register: HostRegister::SingleCall,
            mamba_allocating_slots: false,
        },
        // `utils/offloader.py: OffloaderV1.maybe_offload_to_cpu` offloads every
        // parameter of a layer in order.
        cpu_offload_resident: CpuOffloadResident::Nothing,
    }
}

/// The rules of `r`.
pub(super) fn of_release(r: Release) -> ReleaseRules {
    use Release as R;
    let v0_5_14 = r0_5_14();
    // 0.5.15 (sglang PR 28614): `pool_host/base.py` only warns when host <= device;
    // `cache_controller.py`: `int(0.5 * self.mem_pool_host.size)`;
    // `DSV4PoolConfigurator` takes the C128 state rings as fixed request-scoped bytes.
    let v0_5_15 = ReleaseRules {
        sizing: SglangVersion::Pr28614.rules(),
        controller: ControllerRules {
            prefetch_cap: PrefetchCapRule::HalfHost,
            evict_version: EvictVersion::V1,
            ..v0_5_14.controller
        },
        // `cuda_graph_config.py: default_prefill_backend` (breakable on CUDA);
        // `reserve_for_graph_mb` skips the decode reserve without decode graphs; DeepEP
        // buffers reserved on top of the 10 GiB floor.
        pools: PoolRules {
            dsv4_pools: Dsv4Pools::FlatKvBytes0518,
            ..v0_5_14.pools
        },
        device: DevicePoolRules {
            prefill_graph: PrefillGraphDefault::BreakableNoMla,
            decode_reserve_without_graph: false,
            deepep_reserve: true,
            pd_roles: PdRoles::RoleAware,
            ..v0_5_14.device
        },
        // `pool_host/base.py: HostKVCache.__init__` warns `HiCache host KV pool (%d
        // tokens) is smaller than …` instead of asserting.
        log: LogRules {
            small_host: SmallHostLine::Unlabelled,
            ..v0_5_14.log
        },
        ..v0_5_14
    };
    // 0.5.17: `allocator/base.py` evicts the shortfall only;
    // `hybrid_pool_assembler.py: _split_hicache_size` splits `--hicache-size` by device
    // bytes; `kv_cache_configurator.py` reserves the Mamba pool's padding slot.
    let v0_5_17 = ReleaseRules {
        // `TensorRT-LLM MHA only supports page_size of 16, 32, 64 or 128`; `fa4` for
        // unequal K/V widths.
        flags: FlagRules {
            sm100_attention: Sm100Attention::Trtllm128Fa4,
            ..v0_5_15.flags
        },
        controller: ControllerRules {
            device_evict: DeviceEvictAmount::Shortfall,
            ..v0_5_15.controller
        },
        pools: PoolRules {
            hicache_size_split: HicacheSizeSplit::ByDeviceBytes,
            mamba_slots: MambaSlotFormula::PaddingSlot,
            ..v0_5_15.pools
        },
        // `_disable_breakable_cudagraph_if_incompatible`: "MLA attention (non-DSA)".
        device: DevicePoolRules {
            prefill_graph: PrefillGraphDefault::BreakableNoPlainMla,
            ..v0_5_15.device
        },
        // `pool_host/base.py: HostKVCache.__init__` names the pool: `Allocating %s
        // hierarchical KV host pool: …` and `HiCache %s host pool (%d tokens) is smaller
        // than …`.
        log: LogRules {
            allocating: AllocatingLine::Labelled,
            small_host: SmallHostLine::Labelled,
            ..v0_5_15.log
        },
        ..v0_5_15
    };
    // 0.5.18: `base_spec_worker.py: _can_pack_hicache_mtp` packs NextN drafts (only
    // `UnifiedRadixCache` honours it, see `MtpDraftHost::PackedUnifiedTreeOnly`);
    // `kv_cache_configurator.py: _should_elide_dsa_index_k` keeps a DSA model's
    // index-K on its owned layers unless HiCache or PD is on; `pool_configurator.py`:
    // a DSA draft's KV added per layer, its indexer on every draft layer;
    // `_profile_available_bytes` reserves a multimodal model's embedding cache;
    // `build_deepseek_v4_hicache_stack` builds DeepSeek-V4's host pools as every later
    // release does (the first release the KV differential runs DeepSeek-V4 in);
    // `DSV4PoolConfigurator` bounds the speculative draft tokens by its state rings.
    let v0_5_18 = ReleaseRules {
        pools: PoolRules {
            mtp_draft_host: MtpDraftHost::PackedUnifiedTreeOnly,
            dsa_index_k: DsaIndexK::ElideUnlessHicacheOrPd,
            draft_cell: DraftCell::DsaAddPerLayer,
            mm_reservation: MmReservation::VlmCache100Mib,
            dsv4_host: Dsv4HostPools::Stack0518,
            dsv4_draft_token_bound: Dsv4DraftTokenBound::RingWritePad,
            ..v0_5_17.pools
        },
        // The breakable prefill graph no longer turns off for MLA models.
        device: DevicePoolRules {
            prefill_graph: PrefillGraphDefault::Breakable,
            ..v0_5_17.device
        },
        ..v0_5_17
    };
    // 0.5.19 (sglang PR 35540): `pool_host/base.py: host_memory_budget_bytes` = (psutil available
    // - 10 GiB) // ranks_per_host(); `registry.py` routes every model to
    // `UnifiedRadixCache` (timeout 1.0 s + 0.25 s/Ki, uncapped, from the issue;
    // `server_args.py`: retry poll interval 0 = off, max attempts 4); buffer_only cap
    // `int(0.9 * size)`; buffer_only (new) writes to storage what the tree backs up.
    let v0_5_19 = ReleaseRules {
        sizing: SglangVersion::Pr35540.rules(),
        controller: ControllerRules {
            buffer_only_cap_090: true,
            prefetch_timeout: PrefetchTimeout {
                base_ms: 1000,
                per_ki_token_ms: 250,
                max_ms: None,
                tokens: PrefetchTimeoutTokens::Fetched,
            },
            prefetch_retries: PrefetchRetries {
                poll_interval: 0,
                max_attempts: 4,
            },
            // `--hicache-host-memory-mode buffer_only` appears with the unified tree;
            // its storage writes are the tree's backup actions (see `StorageWriteGate`).
            storage_write_gate: StorageWriteGate::WriteThreshold,
            ..v0_5_17.controller
        },
        tree: TreeKind::Unified0523,
        pools: PoolRules {
            mtp_draft_host: MtpDraftHost::Packed,
            ..v0_5_18.pools
        },
        // `pool_host/common.py: _cuda_host_register` registers page-first layouts in
        // chunks of `SGLANG_HICACHE_HOST_REGISTER_CHUNK_GB` (256).
        log: LogRules {
            register: HostRegister::Chunked,
            ..v0_5_18.log
        },
        ..v0_5_18
    };
    // 0.5.20: `server_args.py` retry poll interval 8, max attempts 8;
    // `pool_configurator.py: validate_swa_pool_size` (the SWA admission floor).
    let v0_5_20 = ReleaseRules {
        controller: ControllerRules {
            prefetch_retries: PrefetchRetries {
                poll_interval: 8,
                max_attempts: 8,
            },
            ..v0_5_19.controller
        },
        pools: PoolRules {
            swa_floor_check: true,
            dsv4_pools: Dsv4Pools::FlatKvBytes0520,
            ..v0_5_19.pools
        },
        // `memory_hook.py: handle_gpu_memory_settings`: 20–35 GiB GPUs get chunked
        // prefill 4096 and decode max_bs 48 / 160.
        device: DevicePoolRules {
            mid_gpu_tier: MidGpuTier::Chunk4kBs48,
            ..v0_5_19.device
        },
        ..v0_5_19
    };
    // 0.5.21 (sglang PR 40135): `mem_cache/host_memory.py: available_host_memory_bytes()` (no
    // fallback; `_cgroup_memory_headroom` charges page cache), `hicache_auto_size.py`,
    // `--hicache-host-memory-fraction`; `RADIX_EVICTION_POLICY_CHOICES` gains `tlru`.
    let v0_5_21 = ReleaseRules {
        sizing: SglangVersion::Pr40135.rules(),
        controller: ControllerRules {
            eviction_choices: EvictionChoices::WithTlru,
            // `kernels/jit/csrc/kvcacheio/hicache_tma.cuh`, `hicache.py:
            // use_hicache_tma_kernel` (`TMA_BLOCK_QUOTA = 4`; sglang PR 40278).
            load_back_kernel: LoadBackKernel::Tma4Cta,
            ..v0_5_20.controller
        },
        flags: FlagRules {
            hicache_host_memory_fraction: true,
            ..v0_5_20.flags
        },
        pools: PoolRules {
            dsv4_pools: Dsv4Pools::RatioMode0521,
            ..v0_5_20.pools
        },
        // `host_memory.py: available_host_memory_bytes` logs `HiCache memory headroom:
        // host %.1f GiB, cgroup %.1f GiB`; `hicache_auto_size.py: auto_size_hicache`
        // its auto-size line.
        log: LogRules {
            headroom_line: true,
            auto_size_line: true,
            ..v0_5_20.log
        },
        // `utils/offloader.py: _get_resident_parameter_ids`: `--cpu-offload-gb` keeps an
        // MLA attention's `kv_b_proj` on the GPU.
        cpu_offload_resident: CpuOffloadResident::MlaKvB,
        ..v0_5_20
    };
    // 0.5.22: `host_memory.py: _cgroup_memory_headroom` credits active + inactive file
    // unless `_has_protected_descendants`; `available_host_memory_bytes(*,
    // allow_cgroup_fallback)` with `pool_host/base.py: host_memory_budget_bytes(...,
    // auto_size=False)` passing `allow_cgroup_fallback=not auto_size`;
    // `arg_groups/hicache_hook.py` coerces buffer_only + write_back to write_through.
    let v0_5_22 = ReleaseRules {
        // `model_overrides/deepseek_v2.py`: a DSA page is `64 * index_kpool`.
        flags: FlagRules {
            dsa_page: DsaPage::KpoolTimes64,
            ..v0_5_21.flags
        },
        sizing: Rules {
            available: AvailableReading::CgroupMin(HeadroomVariant::ProtectedDescendants),
            allow_cgroup_fallback: true,
            ..v0_5_21.sizing
        },
        controller: ControllerRules {
            buffer_only_write_back: BufferOnlyWriteBack::CoerceWriteThrough,
            running_offset: RunningOffset::WholeUnderIgnoreEos,
            ..v0_5_21.controller
        },
        // `memory_hook.py: handle_gpu_memory_settings`: a default decode max_bs is
        // capped by `--max-running-requests`.
        device: DevicePoolRules {
            decode_max_bs_capped_by_running: true,
            ..v0_5_21.device
        },
        // `kv_cache_configurator.py: _should_elide_dsa_index_k` elides index-K on CUDA
        // whatever HiCache and PD say, `pool_host/dsa.py: make_dsa_indexer_pool_decl`
        // keeps the owned layers on the host; `pool_configurator.py`: a non-DSA draft
        // adds `int(cell * d / n)`.
        pools: PoolRules {
            dsa_index_k: DsaIndexK::ElideOwned,
            draft_cell: DraftCell::AddPerLayer,
            ..v0_5_21.pools
        },
        ..v0_5_21
    };
    // 0.5.23: `unified_radix_cache.py: _start_storage_prefetch_wait` starts the clock at
    // the first blocked admission poll (`utils/poll_timer.py`) and sizes the budget by
    // the requested span (`stats_requested_tokens`), not the fetched pages.
    let v0_5_23 = ReleaseRules {
        controller: ControllerRules {
            prefetch_timeout_clock: PrefetchTimeoutClock::FirstBlockedPoll,
            prefetch_timeout: PrefetchTimeout {
                tokens: PrefetchTimeoutTokens::Requested,
                ..v0_5_22.controller.prefetch_timeout
            },
            decode_restore_gate: DecodeRestoreGate::LatestCopy,
            ..v0_5_22.controller
        },
        // `pool_host/mamba.py: MambaPoolHost.__init__`: `… Mamba cache (%d state slots,
        // layout=%s).`
        log: LogRules {
            mamba_allocating_slots: true,
            ..v0_5_22.log
        },
        ..v0_5_22
    };
    match r {
        R::V0_5_14 => v0_5_14,
        R::V0_5_15 | R::V0_5_15Post1 | R::V0_5_16 => v0_5_15,
        R::V0_5_17 => v0_5_17,
        R::V0_5_18 => v0_5_18,
        R::V0_5_19 => v0_5_19,
        R::V0_5_20 => v0_5_20,
        R::V0_5_21 => v0_5_21,
        R::V0_5_22 => v0_5_22,
        R::V0_5_23 => v0_5_23,
    }
}

/// A what-if: its own sizing rules and flags (the fraction exists from #40135 on), the
/// rest of the release it is nearest to.
/// An open PR's rule set ([`Proposal`]): 0.5.23's rules with the PR's one rule.
pub(super) fn of_proposal(p: Proposal) -> ReleaseRules {
    let base = of_release(Release::V0_5_23);
    let mut controller = base.controller;
    match p {
        Proposal::SerializeLoadBack => controller.load_back = LoadBackMode::SerializedPerNode,
        Proposal::WriteBackWatermark => controller.write_back_trigger = WriteBackTrigger::Watermark,
        Proposal::ExclusiveL3 => controller.l3_write = L3WriteRule::AtHostEviction,
    }
    ReleaseRules { controller, ..base }
}

pub(super) fn of_what_if(v: SglangVersion, nearest: Release) -> ReleaseRules {
    let base = of_release(nearest);
    let sizing = v.rules();
    ReleaseRules {
        sizing,
        controller: ControllerRules {
            prefetch_cap: sizing.prefetch_cap,
            evict_version: if v == SglangVersion::Pre28614 {
                EvictVersion::V0
            } else {
                EvictVersion::V1
            },
            ..base.controller
        },
        flags: FlagRules {
            hicache_host_memory_fraction: sizing.auto_size != AutoSizeRule::None,
            ..base.flags
        },
        ..base
    }
}
