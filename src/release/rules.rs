//! The complete rule set of each release, as data: a struct-update chain from the oldest
//! modelled release, each change citing the wheel file and function it was read from.

use serde::Serialize;

use super::Release;
use crate::sizing::{
    AutoSizeRule, AvailableReading, HeadroomVariant, PrefetchCapRule, Rules, SglangVersion,
};

/// Which prefix tree a plain model's HiCache path runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TreeVariant {
    /// `mem_cache/hiradix_cache.py: HiRadixCache` (≤ 0.5.18 for plain models).
    V1HiRadix,
    /// `mem_cache/unified_radix_cache.py: UnifiedRadixCache` (every model from 0.5.19;
    /// `registry.py`). The tree itself is issue 8; this only selects it.
    Unified,
}

/// The prefetch timeout formula `base + tokens / 1024 × per_ki`, optionally capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PrefetchTimeout {
    pub base_ms: u64,
    pub per_ki_token_ms: u64,
    /// `None`: no cap.
    pub max_ms: Option<u64>,
}

/// When the prefetch timeout clock starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefetchTimeoutClock {
    /// At the prefetch's issue (`operation.start_time`, `_prefetch_timeout_check_linear_func`).
    Issue,
    /// At the first blocked admission poll (0.5.23 `utils/poll_timer.py: PollTimer`,
    /// `unified_radix_cache.py: _start_storage_prefetch_wait`).
    FirstBlockedPoll,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferOnlyWriteBack {
    /// `arg_groups/hicache_hook.py` ≤ 0.5.21: `ValueError`.
    Error,
    /// 0.5.22+: coerced to `write_through` with a warning.
    CoerceWriteThrough,
}

/// Which new pages are written to storage (L3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageWriteGate {
    /// Every page backed up to host is also written to storage.
    EveryBackup,
    /// The write threshold (`write_through_selective`) also gates storage writes
    /// (0.5.22+, per `releases.md`; the runtime does not read it yet — see the report).
    WriteThreshold,
}

/// The HiCache controller and scheduler defaults a release ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ControllerRules {
    /// `prefetch_capacity_limit` (`managers/cache_controller.py`).
    pub prefetch_cap: PrefetchCapRule,
    /// buffer_only mode's cap is `int(0.9 × host)` (0.5.19+ `cache_controller.py`).
    pub buffer_only_cap_090: bool,
    pub prefetch_timeout: PrefetchTimeout,
    pub prefetch_timeout_clock: PrefetchTimeoutClock,
    pub prefetch_retries: PrefetchRetries,
    /// `--hicache-storage-prefetch-policy` default: `timeout` in every modelled release.
    pub default_prefetch_policy: &'static str,
    pub eviction_choices: EvictionChoices,
    pub buffer_only_write_back: BufferOnlyWriteBack,
    pub storage_write_gate: StorageWriteGate,
    /// Device eviction asks only for the shortfall (`allocator/base.py`: `shortfall =
    /// num_tokens - self.available_size()`, 0.5.17+), else the whole request.
    pub device_evict_shortfall: bool,
    /// Before #28614 (0.5.14): write_back demotes leaves in one loop (`EvictVersion::V0`).
    pub evict_v0: bool,
}

/// Which sizing flags exist (`server_args.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FlagRules {
    /// `--hicache-host-memory-fraction` (0.5.21+, #40135). Before, argparse rejects it.
    pub hicache_host_memory_fraction: bool,
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

/// The pools a release builds for a model (issue 11): the data behind
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
}

/// DeepSeek-V4's device pools (`model_executor/pool_configurator.py:
/// DSV4PoolConfigurator`, present in every modelled release; its rules changed release
/// by release).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dsv4Pools {
    /// 0.5.14–0.5.20: the release's own configurator is not modelled (the simulator's
    /// figures are checked against 0.5.21–0.5.23 only): start-up refuses to guess.
    NotModelled,
    /// 0.5.21–0.5.23: the SWA request cap (`_resolve_swa_cap_tokens`), fractional
    /// bytes per full token and the C128 state rings as fixed bytes
    /// (`crate::model::dsv4`; the three releases agree on V4's ratios 0 / 4 / 128).
    CapOrRatio0521,
}

/// Everything a release (or a what-if) decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReleaseRules {
    pub sizing: Rules,
    pub controller: ControllerRules,
    pub tree: TreeVariant,
    pub flags: FlagRules,
    pub pools: PoolRules,
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
            },
            prefetch_timeout_clock: PrefetchTimeoutClock::Issue,
            prefetch_retries: PrefetchRetries {
                poll_interval: 0,
                max_attempts: 0,
            },
            default_prefetch_policy: "timeout",
            eviction_choices: EvictionChoices::Four,
            buffer_only_write_back: BufferOnlyWriteBack::Error,
            storage_write_gate: StorageWriteGate::EveryBackup,
            device_evict_shortfall: false,
            evict_v0: true,
        },
        tree: TreeVariant::V1HiRadix,
        flags: FlagRules {
            hicache_host_memory_fraction: false,
        },
        pools: PoolRules {
            hicache_size_split: HicacheSizeSplit::WholeSizeEachPool,
            mtp_draft_host: MtpDraftHost::SeparatePool,
            mamba_slots: MambaSlotFormula::Floor,
            swa_floor_check: false,
            dsv4_pools: Dsv4Pools::NotModelled,
        },
    }
}

/// The rules of `r`.
pub(super) fn of_release(r: Release) -> ReleaseRules {
    use Release as R;
    let v0_5_14 = r0_5_14();
    // 0.5.15 (#28614): `pool_host/base.py` only warns when host <= device;
    // `cache_controller.py`: `int(0.5 * self.mem_pool_host.size)`.
    let v0_5_15 = ReleaseRules {
        sizing: SglangVersion::Pr28614.rules(),
        controller: ControllerRules {
            prefetch_cap: PrefetchCapRule::HalfHost,
            evict_v0: false,
            ..v0_5_14.controller
        },
        ..v0_5_14
    };
    // 0.5.17: `allocator/base.py` evicts the shortfall only;
    // `hybrid_pool_assembler.py: _split_hicache_size` splits `--hicache-size` by device
    // bytes; `kv_cache_configurator.py` reserves the Mamba pool's padding slot.
    let v0_5_17 = ReleaseRules {
        controller: ControllerRules {
            device_evict_shortfall: true,
            ..v0_5_15.controller
        },
        pools: PoolRules {
            hicache_size_split: HicacheSizeSplit::ByDeviceBytes,
            mamba_slots: MambaSlotFormula::PaddingSlot,
            ..v0_5_15.pools
        },
        ..v0_5_15
    };
    // 0.5.18: `base_spec_worker.py: _can_pack_hicache_mtp` packs NextN drafts (only
    // `UnifiedRadixCache` honours it, see `MtpDraftHost::PackedUnifiedTreeOnly`).
    let v0_5_18 = ReleaseRules {
        pools: PoolRules {
            mtp_draft_host: MtpDraftHost::PackedUnifiedTreeOnly,
            ..v0_5_17.pools
        },
        ..v0_5_17
    };
    // 0.5.19 (#35540): `pool_host/base.py: host_memory_budget_bytes` = (psutil available
    // - 10 GiB) // ranks_per_host(); `registry.py` routes every model to
    // `UnifiedRadixCache` (timeout 1.0 s + 0.25 s/Ki, uncapped, from the issue;
    // `server_args.py`: retry poll interval 0 = off, max attempts 4); buffer_only cap
    // `int(0.9 * size)`.
    let v0_5_19 = ReleaseRules {
        sizing: SglangVersion::Pr35540.rules(),
        controller: ControllerRules {
            buffer_only_cap_090: true,
            prefetch_timeout: PrefetchTimeout {
                base_ms: 1000,
                per_ki_token_ms: 250,
                max_ms: None,
            },
            prefetch_retries: PrefetchRetries {
                poll_interval: 0,
                max_attempts: 4,
            },
            ..v0_5_17.controller
        },
        tree: TreeVariant::Unified,
        pools: PoolRules {
            mtp_draft_host: MtpDraftHost::Packed,
            ..v0_5_18.pools
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
            ..v0_5_19.pools
        },
        ..v0_5_19
    };
    // 0.5.21 (#40135): `mem_cache/host_memory.py: available_host_memory_bytes()` (no
    // fallback; `_cgroup_memory_headroom` charges page cache), `hicache_auto_size.py`,
    // `--hicache-host-memory-fraction`; `RADIX_EVICTION_POLICY_CHOICES` gains `tlru`.
    let v0_5_21 = ReleaseRules {
        sizing: SglangVersion::Pr40135.rules(),
        controller: ControllerRules {
            eviction_choices: EvictionChoices::WithTlru,
            ..v0_5_20.controller
        },
        flags: FlagRules {
            hicache_host_memory_fraction: true,
        },
        pools: PoolRules {
            dsv4_pools: Dsv4Pools::CapOrRatio0521,
            ..v0_5_20.pools
        },
        ..v0_5_20
    };
    // 0.5.22: `host_memory.py: _cgroup_memory_headroom` credits active + inactive file
    // unless `_has_protected_descendants`; `available_host_memory_bytes(*,
    // allow_cgroup_fallback)` with `pool_host/base.py: host_memory_budget_bytes(...,
    // auto_size=False)` passing `allow_cgroup_fallback=not auto_size`;
    // `arg_groups/hicache_hook.py` coerces buffer_only + write_back to write_through.
    let v0_5_22 = ReleaseRules {
        sizing: Rules {
            available: AvailableReading::CgroupMin(HeadroomVariant::ProtectedDescendants),
            allow_cgroup_fallback: true,
            ..v0_5_21.sizing
        },
        controller: ControllerRules {
            buffer_only_write_back: BufferOnlyWriteBack::CoerceWriteThrough,
            storage_write_gate: StorageWriteGate::WriteThreshold,
            ..v0_5_21.controller
        },
        ..v0_5_21
    };
    // 0.5.23: `unified_radix_cache.py: _start_storage_prefetch_wait` starts the clock at
    // the first blocked admission poll (`utils/poll_timer.py`).
    let v0_5_23 = ReleaseRules {
        controller: ControllerRules {
            prefetch_timeout_clock: PrefetchTimeoutClock::FirstBlockedPoll,
            ..v0_5_22.controller
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
pub(super) fn of_what_if(v: SglangVersion, nearest: Release) -> ReleaseRules {
    let base = of_release(nearest);
    let sizing = v.rules();
    ReleaseRules {
        sizing,
        controller: ControllerRules {
            prefetch_cap: sizing.prefetch_cap,
            evict_v0: v == SglangVersion::Pre28614,
            ..base.controller
        },
        flags: FlagRules {
            hicache_host_memory_fraction: sizing.auto_size != AutoSizeRule::None,
        },
        ..base
    }
}
