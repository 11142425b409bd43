//! One enum per SGLang choice. Each variant carries SGLang's spelling once: its serde name
//! (the YAML value, the replay configuration's value) and [`Choice::id`] (the text in
//! messages and reports) are the same string, generated from one literal.
//!
//! The choices lists are SGLang's `choices=` (0.5.23 `arg_groups/fields/memory.py`;
//! `server_args.py: ServerArgs.add_cli_args` before 0.5.21), as recorded release by
//! release in the generated flag table (`src/flags/sglang_flags.json`). Where the list
//! changed between releases (storage backends, eviction policies, KV dtypes) an enum
//! holds every spelling of every modelled release; which ones a release accepts is
//! decided by the release module (`crate::release::check_server`) from the flag table.

use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};

/// A closed SGLang choice.
pub trait Choice: Copy + Eq + 'static {
    /// Every value the simulator knows, in declaration order.
    const ALL: &'static [Self];
    /// What SGLang's parser lists (`choices=`), in its order: the list an "invalid
    /// choice" message gives.
    const CHOICES: &'static [Self];
    /// SGLang's spelling.
    fn id(self) -> &'static str;

    /// The value SGLang spells `s`, if any.
    fn from_id(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.id() == s)
    }

    /// "invalid choice `s` (did you mean `x`?): expected one of a, b, c" (a scenario field
    /// holding something SGLang does not spell).
    fn invalid(s: &str) -> String {
        let ids = || Self::CHOICES.iter().map(|c| c.id());
        let hint = crate::error::nearest(s, ids())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        format!(
            "invalid choice `{s}`{hint}: expected one of {}",
            ids().collect::<Vec<_>>().join(", ")
        )
    }
}

/// A scenario field holding a [`Choice`]: SGLang's spelling, else [`Choice::invalid`]'s
/// message. (`#[serde(deserialize_with = "flag")]`; the replay configuration keeps serde's
/// own enum messages.)
pub fn flag<'de, D: Deserializer<'de>, T: Choice>(d: D) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    T::from_id(&s).ok_or_else(|| D::Error::custom(T::invalid(&s)))
}

/// [`flag`] for an optional field (`null` = unset).
pub fn flag_opt<'de, D: Deserializer<'de>, T: Choice>(d: D) -> Result<Option<T>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(s) => T::from_id(&s)
            .map(Some)
            .ok_or_else(|| D::Error::custom(T::invalid(&s))),
    }
}

/// Defines a [`Choice`]: the variants with SGLang's spelling, then the `choices=` order
/// (0.5.23's where releases differ).
macro_rules! sglang_choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $id:literal, )+
        }
        choices = [$($choice:ident),+ $(,)?];
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $id)] $variant, )+
        }

        impl Choice for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];
            const CHOICES: &'static [Self] = &[$($name::$choice),+];
            fn id(self) -> &'static str {
                match self {
                    $($name::$variant => $id,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.id())
            }
        }
    };
}
/// Also used for the simulator's own closed vocabularies that share SGLang's spelling
/// rules (`model::quant::CheckpointQuant`).
pub(crate) use sglang_choice;

sglang_choice! {
    /// `--hicache-write-policy`: when a device node is backed up to the host
    /// (`mem_cache/hiradix_cache.py: HiRadixCache.__init__`, `write_through_threshold`).
    #[derive(Default)]
    pub enum WritePolicy {
        /// Back up every node the first time insert touches it (threshold 1).
        #[default]
        WriteThrough = "write_through",
        /// Back up a node the second time insert touches it (threshold 2).
        WriteThroughSelective = "write_through_selective",
        /// Back up only when the node is evicted from the device.
        WriteBack = "write_back",
    }
    choices = [WriteBack, WriteThrough, WriteThroughSelective];
}

impl WritePolicy {
    /// `write_through_threshold` (`hiradix_cache.py: HiRadixCache.__init__`, V1).
    pub fn write_through_threshold(self) -> u32 {
        match self {
            WritePolicy::WriteThrough => 1,
            WritePolicy::WriteThroughSelective => 2,
            WritePolicy::WriteBack => u32::MAX,
        }
    }
}

sglang_choice! {
    /// `--disaggregation-mode`: a colocated engine (`null`), or one side of a
    /// prefill-decode disaggregated deployment (`arg_groups/fields/disagg.py`, 0.5.21+;
    /// `server_args.py` before).
    #[derive(Default)]
    pub enum DisaggregationMode {
        #[default]
        Null = "null",
        /// Runs prefills only and sends each request's KV to a decode server.
        Prefill = "prefill",
        /// Receives the KV and decodes; its radix cache is off unless
        /// `--disaggregation-decode-enable-radix-cache`.
        Decode = "decode",
    }
    choices = [Null, Prefill, Decode];
}

impl DisaggregationMode {
    /// A colocated engine (the default, not written into outputs).
    pub fn is_null(&self) -> bool {
        *self == DisaggregationMode::Null
    }

    /// A PD prefill server: its requests end at their prefill.
    pub fn is_prefill(self) -> bool {
        self == DisaggregationMode::Prefill
    }
}

sglang_choice! {
    /// `--hicache-host-memory-mode` (0.5.19+ `cache_controller.py`,
    /// `arg_groups/hicache_hook.py: validate_hicache_host_memory_mode`).
    #[derive(Default)]
    pub enum HostMemoryMode {
        /// The host is an L2 tier holding `host_value`s.
        #[default]
        Cache = "cache",
        /// The host is a bounce buffer between GPU and L3: no `host_value` in the tree,
        /// `evict_host` returns 0; requires storage.
        BufferOnly = "buffer_only",
    }
    choices = [Cache, BufferOnly];
}

sglang_choice! {
    /// `--hicache-storage-prefetch-policy` (`hiradix_cache.py: can_terminate_prefetch`).
    /// SGLang's default is `timeout` (`ServerArgs::default`); a replay without a scenario
    /// defaults to `best_effort` (`ReplayConfig::default`).
    #[derive(Default)]
    pub enum PrefetchPolicy {
        /// Terminate at the first scheduling check with whatever has arrived.
        #[default]
        BestEffort = "best_effort",
        /// Wait until every requested page has arrived.
        WaitComplete = "wait_complete",
        /// Wait until complete or the release's prefetch timeout elapsed.
        Timeout = "timeout",
    }
    choices = [BestEffort, WaitComplete, Timeout];
}

sglang_choice! {
    /// `--radix-eviction-policy`: the priority key of a leaf; smaller keys are evicted
    /// first, ties broken by node id (creation order). Every strategy of
    /// `mem_cache/utils.py: _EVICTION_POLICY_FACTORIES` (0.5.23; `mem_cache/evict_policy.py`).
    /// The command line accepts fewer (`RADIX_EVICTION_POLICY_CHOICES`: `tlru` from 0.5.21,
    /// [`crate::release::EvictionChoices`]); the replay models all but `tlru` (`fifo`,
    /// `mru`, `filo` as what-ifs).
    #[derive(Default)]
    pub enum EvictionPolicy {
        /// `LRUStrategy`: `last_access_time`.
        #[default]
        Lru = "lru",
        /// `LFUStrategy`: `(hit_count, last_access_time)`.
        Lfu = "lfu",
        /// `FIFOStrategy`: `creation_time`.
        Fifo = "fifo",
        /// `MRUStrategy`: `-last_access_time`.
        Mru = "mru",
        /// `FILOStrategy`: `-creation_time`.
        Filo = "filo",
        /// `PriorityStrategy`: `(priority, last_access_time)`.
        Priority = "priority",
        /// `SLRUStrategy`: `(hit_count >= protected_threshold(2), last_access_time)`.
        Slru = "slru",
        /// `TLRUStrategy` (0.5.21+): tail-optimized LRU over per-node history lengths only
        /// `UnifiedRadixCache` keeps. Not modelled by the replay.
        Tlru = "tlru",
    }
    choices = [Lru, Lfu, Slru, Priority, Tlru];
}

sglang_choice! {
    /// `--hicache-io-backend`: how host ↔ device copies run (informational here).
    pub enum IoBackend {
        Direct = "direct",
        Kernel = "kernel",
        /// Ascend NPUs (`hardware_backend/npu`).
        KernelAscend = "kernel_ascend",
    }
    choices = [Direct, Kernel, KernelAscend];
}

sglang_choice! {
    /// `--hicache-mem-layout`: the host pool's layout (`mem_cache/memory_pool_host.py`).
    pub enum MemLayout {
        LayerFirst = "layer_first",
        PageFirst = "page_first",
        PageFirstDirect = "page_first_direct",
        PageFirstKvSplit = "page_first_kv_split",
        PageHead = "page_head",
    }
    choices = [LayerFirst, PageFirst, PageFirstDirect, PageFirstKvSplit, PageHead];
}

impl MemLayout {
    /// `page_first` / `page_first_direct`: pinning is registered in chunks of whole
    /// pages from 0.5.19 (`pool_host/mla.py`, `mha.py: registration_granularity_bytes`).
    pub fn is_page_first(self) -> bool {
        matches!(self, MemLayout::PageFirst | MemLayout::PageFirstDirect)
    }
}

sglang_choice! {
    /// `--hicache-storage-backend` (L3): every backend of 0.5.14–0.5.23. Each release
    /// accepts its own list (the flag table: `sim` from 0.5.19, `npu_memcache` 0.5.20,
    /// `tensorcast` 0.5.21, `seaweedfs` 0.5.22, `mori` 0.5.15, `shm` 0.5.17).
    pub enum StorageBackend {
        File = "file",
        Sim = "sim",
        Mooncake = "mooncake",
        NpuMemcache = "npu_memcache",
        Hf3fs = "hf3fs",
        Nixl = "nixl",
        Aibrix = "aibrix",
        Dynamic = "dynamic",
        Eic = "eic",
        Simm = "simm",
        Mori = "mori",
        Shm = "shm",
        Tensorcast = "tensorcast",
        Seaweedfs = "seaweedfs",
    }
    choices = [
        File, Sim, Mooncake, NpuMemcache, Hf3fs, Nixl, Aibrix, Dynamic, Eic, Simm, Mori, Shm,
        Tensorcast, Seaweedfs,
    ];
}

sglang_choice! {
    /// `--kv-cache-dtype` as written: SGLang's spellings (each release's list in the flag
    /// table: `fp4_e2m1` up to 0.5.20, `mxfp8` / `nvfp4` / `fp4_mx_block16` from 0.5.16)
    /// and the simulator's own (`fp16`, `float16`, `half`, `fp8`, `fp8_ds_mla`: the
    /// storage dtypes of `model::KvDtype`). The spelling is kept (a report prints
    /// what was written); `model::KvDtype::from_flag` gives the bytes.
    pub enum KvCacheDtype {
        /// The model's dtype.
        Auto = "auto",
        Bf16 = "bf16",
        Bfloat16 = "bfloat16",
        Fp16 = "fp16",
        Float16 = "float16",
        Half = "half",
        Fp8 = "fp8",
        Fp8E4m3 = "fp8_e4m3",
        Fp8E5m2 = "fp8_e5m2",
        /// FlashMLA's FP8 MLA cache layout.
        Fp8DsMla = "fp8_ds_mla",
        Mxfp8 = "mxfp8",
        Nvfp4 = "nvfp4",
        Fp4MxBlock16 = "fp4_mx_block16",
        Fp4E2m1 = "fp4_e2m1",
    }
    choices = [Auto, Fp8E5m2, Fp8E4m3, Mxfp8, Bf16, Bfloat16, Nvfp4, Fp4MxBlock16];
}

impl KvCacheDtype {
    /// Valid SGLang choices whose packed values + block scales the simulator does not size.
    pub fn is_packed(self) -> bool {
        matches!(
            self,
            KvCacheDtype::Mxfp8
                | KvCacheDtype::Nvfp4
                | KvCacheDtype::Fp4MxBlock16
                | KvCacheDtype::Fp4E2m1
        )
    }

    /// A scenario's `kv_cache_dtype`: any spelling above, else "unknown kv cache dtype".
    pub fn deserialize_field<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::from_id(&s).ok_or_else(|| {
            D::Error::custom(format!(
                "unknown kv cache dtype `{s}`: expected auto, bf16, fp16, fp8_e4m3, fp8_e5m2 or fp8_ds_mla"
            ))
        })
    }
}

/// The algorithms of `--speculative-algorithm` the simulator tells apart. SGLang's parser
/// takes any string (`type=str`); `speculative/spec_info.py:
/// SpeculativeAlgorithm.from_string` upper-cases it and maps the builtins (0.5.23:
/// `DFLASH`, `UNO`, `DSPARK`, `EAGLE`, `EAGLE3`, `FROZEN_KV_MTP`, `STANDALONE`, `NGRAM`),
/// the reserved alias `NEXTN` (= EAGLE, `spec_registry.py: _RESERVED_ALIASES`), and
/// names plugins register at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecAlgorithm {
    Eagle,
    /// NextN: EAGLE with the model's own MTP layers.
    Nextn,
    Eagle3,
    Standalone,
    Ngram,
    /// Any other name (another builtin, or a plugin's): no MTP draft of the model's own
    /// layers is modelled for it.
    Other,
}

/// `--speculative-algorithm` as written (SGLang keeps the user's spelling in its server
/// arguments; the notes print it back) and what it selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeculativeAlgorithm {
    spelling: String,
    algorithm: SpecAlgorithm,
}

impl SpeculativeAlgorithm {
    pub fn new(spelling: &str) -> Self {
        let algorithm = match spelling.to_ascii_uppercase().as_str() {
            "EAGLE" => SpecAlgorithm::Eagle,
            "NEXTN" => SpecAlgorithm::Nextn,
            "EAGLE3" => SpecAlgorithm::Eagle3,
            "STANDALONE" => SpecAlgorithm::Standalone,
            "NGRAM" => SpecAlgorithm::Ngram,
            _ => SpecAlgorithm::Other,
        };
        Self {
            spelling: spelling.to_string(),
            algorithm,
        }
    }

    pub fn algorithm(&self) -> SpecAlgorithm {
        self.algorithm
    }

    /// As the user wrote it.
    pub fn as_written(&self) -> &str {
        &self.spelling
    }
}

impl From<&str> for SpeculativeAlgorithm {
    fn from(spelling: &str) -> Self {
        Self::new(spelling)
    }
}

impl Serialize for SpeculativeAlgorithm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.spelling)
    }
}

impl<'de> Deserialize<'de> for SpeculativeAlgorithm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| Self::new(&s))
    }
}

impl std::fmt::Display for SpeculativeAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.spelling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serde name and `id()` are one literal; this holds them to each other and to the
    /// flag table's lists.
    fn spelled_once<T: Choice + Serialize + std::fmt::Debug>() {
        for &c in T::ALL {
            assert_eq!(serde_json::to_value(c).unwrap(), c.id());
            assert_eq!(T::from_id(c.id()), Some(c));
        }
    }

    #[test]
    fn serde_names_are_sglang_spellings() {
        spelled_once::<WritePolicy>();
        spelled_once::<HostMemoryMode>();
        spelled_once::<PrefetchPolicy>();
        spelled_once::<EvictionPolicy>();
        spelled_once::<IoBackend>();
        spelled_once::<MemLayout>();
        spelled_once::<StorageBackend>();
        spelled_once::<KvCacheDtype>();
    }

    /// Every spelling a release's parser accepts is a value here.
    #[test]
    fn every_release_choice_is_spelled() {
        let t = crate::flags::table();
        for &rel in &t.releases {
            let r = t.release(rel);
            let check = |dest: &str, known: &dyn Fn(&str) -> bool| {
                let a = r.actions.iter().find(|a| a.dest == dest).unwrap();
                for c in a.choices.as_deref().unwrap_or_default() {
                    assert!(known(c), "{rel}: {dest} choice `{c}`");
                }
            };
            check("hicache_write_policy", &|c| {
                WritePolicy::from_id(c).is_some()
            });
            check("hicache_io_backend", &|c| IoBackend::from_id(c).is_some());
            check("hicache_mem_layout", &|c| MemLayout::from_id(c).is_some());
            check("hicache_storage_backend", &|c| {
                StorageBackend::from_id(c).is_some()
            });
            check("hicache_storage_prefetch_policy", &|c| {
                PrefetchPolicy::from_id(c).is_some()
            });
            check("radix_eviction_policy", &|c| {
                EvictionPolicy::from_id(c).is_some()
            });
            check("kv_cache_dtype", &|c| KvCacheDtype::from_id(c).is_some());
            if r.actions
                .iter()
                .any(|a| a.dest == "hicache_host_memory_mode")
            {
                check("hicache_host_memory_mode", &|c| {
                    HostMemoryMode::from_id(c).is_some()
                });
            }
        }
    }

    #[test]
    fn invalid_choice_names_the_nearest() {
        assert_eq!(
            WritePolicy::invalid("write_bak"),
            "invalid choice `write_bak` (did you mean `write_back`?): expected one of write_back, write_through, write_through_selective"
        );
    }

    #[test]
    fn speculative_algorithm_keeps_its_spelling() {
        let a = SpeculativeAlgorithm::new("nextn");
        assert_eq!(a.algorithm(), SpecAlgorithm::Nextn);
        assert_eq!(a.to_string(), "nextn");
        assert_eq!(
            SpeculativeAlgorithm::new("my-plugin").algorithm(),
            SpecAlgorithm::Other
        );
    }
}
