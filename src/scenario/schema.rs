//! The scenario file, field by field. Every struct denies unknown keys so a typo is an
//! error with the nearest valid key; sizes, bandwidths and durations take the units a
//! person writes (`880GB`, `135GiB`, `5GB/s`, `20s`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::ServerArgs;
use crate::error::FieldError;
use crate::release::Sglang;
use crate::units::{Bandwidth, ByteSize, Duration};

/// A preset by name with field-by-field overrides: `node: gb300` or
/// `node: {preset: gb300, host_dram: 880GB}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PresetRef {
    Name(String),
    WithOverrides(BTreeMap<String, Value>),
}

impl PresetRef {
    /// The preset name and the overrides (without the `preset` key).
    pub fn split(&self) -> (Option<String>, BTreeMap<String, Value>) {
        match self {
            PresetRef::Name(n) => (Some(n.clone()), BTreeMap::new()),
            PresetRef::WithOverrides(m) => {
                let mut m = m.clone();
                let name = m
                    .remove("preset")
                    .and_then(|v| v.as_str().map(str::to_string));
                (name, m)
            }
        }
    }
}

/// cgroup interface version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersionSpec {
    V1,
    #[default]
    V2,
}

/// Charges that exist in a cgroup before any rank starts (its own, not its children's).
/// File pages by LRU state: clean inactive (a first read), clean active (touched twice),
/// dirty and under writeback (charged, not reclaimable until written back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PreexistingSpec {
    pub anon: ByteSize,
    pub shmem: ByteSize,
    /// Clean page cache on the inactive list.
    pub inactive_file: ByteSize,
    /// Clean page cache on the active list.
    pub active_file: ByteSize,
    pub dirty: ByteSize,
    pub writeback: ByteSize,
}

/// One cgroup level on the engine's path: an ancestor of the job (`parents`, the
/// job's parent first) or a level below it (`below`, the job's child first, the
/// engine's own cgroup last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct CgroupLevelSpec {
    pub name: String,
    /// v2 `memory.max` / v1 `memory.limit_in_bytes`; absent = unlimited (`max`).
    pub max: Option<ByteSize>,
    /// v2 `memory.high`; absent = `max`.
    pub high: Option<ByteSize>,
    /// v2 `memory.min` (hard protection from reclaim).
    #[serde(skip_serializing_if = "is_default")]
    pub min: ByteSize,
    /// v2 `memory.low` (best-effort protection from reclaim).
    #[serde(skip_serializing_if = "is_default")]
    pub low: ByteSize,
    /// v2 `memory.min` is missing (the memory controller is not enabled here) or cannot
    /// be read: 0.5.22+ counts this level as protected when it scans the descendants of
    /// a level above (`mem_cache/host_memory.py: _has_protected_descendants`); reclaim
    /// takes it as 0.
    #[serde(skip_serializing_if = "is_default")]
    pub min_unreadable: bool,
    /// A cgroup below this level that the scenario does not list (under the engine's
    /// own cgroup) has a non-zero, missing or unreadable `memory.min`, or a directory
    /// below cannot be listed: 0.5.22+ `_has_protected_descendants` is True here and at
    /// every level above.
    #[serde(skip_serializing_if = "is_default")]
    pub protected_inside: bool,
    /// This level's own charges before start-up.
    #[serde(skip_serializing_if = "is_default")]
    pub preexisting: PreexistingSpec,
    /// Cgroups next to this level (children of the same parent).
    #[serde(skip_serializing_if = "is_default")]
    pub siblings: Vec<SiblingSpec>,
}

/// A cgroup next to a level of the engine's path (another engine, a sidecar, a
/// monitoring agent), with what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SiblingSpec {
    pub name: String,
    pub anon: ByteSize,
    /// Clean, reclaimable page cache charged to the sibling (inactive list).
    pub page_cache: ByteSize,
    pub shmem: ByteSize,
    /// v2 `memory.min`: protects this much of the sibling's memory from reclaim.
    pub min: ByteSize,
    /// v2 `memory.low`: best-effort protection (reclaimed only when nothing else is left).
    #[serde(skip_serializing_if = "is_default")]
    pub low: ByteSize,
    pub max: Option<ByteSize>,
    #[serde(skip_serializing_if = "is_default")]
    pub high: Option<ByteSize>,
    /// v2 `memory.min` of the sibling is missing or cannot be read (see
    /// [`CgroupLevelSpec::min_unreadable`]).
    #[serde(skip_serializing_if = "is_default")]
    pub min_unreadable: bool,
    /// A cgroup inside the sibling (its whole subtree is described by this entry) has a
    /// non-zero, missing or unreadable `memory.min`, or a directory inside cannot be
    /// listed: 0.5.22+ `_has_protected_descendants` finds it from every level above.
    /// Reclaim is bounded by the sibling's own `min` (a child's protection never exceeds
    /// its parent's).
    #[serde(skip_serializing_if = "is_default")]
    pub protected_inside: bool,
    /// More charges by kind (added to `anon`/`page_cache`/`shmem`).
    #[serde(skip_serializing_if = "is_default")]
    pub preexisting: PreexistingSpec,
}

/// The job's memory cgroup (Slurm job/step, Kubernetes container).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct CgroupSpec {
    pub version: CgroupVersionSpec,
    /// The job cgroup's `memory.max` (v1 `memory.limit_in_bytes`); absent = unlimited.
    pub max: Option<ByteSize>,
    /// `memory.high`; absent = `max` (Slurm's default AllowedRAMSpace=100 sets high = max).
    pub high: Option<ByteSize>,
    /// v2 `memory.min` of the job's cgroup (0.5.22+ drops the parents' page-cache credit
    /// when it is not 0).
    pub min: ByteSize,
    /// Anonymous memory already charged to the job before the ranks start.
    pub preexisting_anon: ByteSize,
    /// Clean page cache already charged to the job before the ranks start.
    pub preexisting_page_cache: ByteSize,
    /// v2 `memory.low` of the job's cgroup.
    #[serde(skip_serializing_if = "is_default")]
    pub low: ByteSize,
    /// v2 `memory.min` of the job's cgroup is missing or cannot be read (see
    /// [`CgroupLevelSpec::min_unreadable`]).
    #[serde(skip_serializing_if = "is_default")]
    pub min_unreadable: bool,
    /// See [`CgroupLevelSpec::protected_inside`].
    #[serde(skip_serializing_if = "is_default")]
    pub protected_inside: bool,
    /// More of the job's own charges by kind (added to the two fields above).
    #[serde(skip_serializing_if = "is_default")]
    pub preexisting: PreexistingSpec,
    /// Ancestors from the parent up to the mount root.
    pub parents: Vec<CgroupLevelSpec>,
    /// Cgroups next to the job (children of its parent).
    pub siblings: Vec<SiblingSpec>,
    /// Levels below the job down to the engine's own cgroup (Slurm: step, then task),
    /// the job's child first. The ranks run, charge and read in the last one.
    #[serde(skip_serializing_if = "is_default")]
    pub below: Vec<CgroupLevelSpec>,
}

/// Host memory outside the job, and the job's cgroup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySpec {
    /// Host RAM as `/proc/meminfo` MemTotal; absent = the node preset's `host_dram`.
    pub host_total: Option<ByteSize>,
    /// Unreclaimable memory used on the host outside the job (OS, daemons, other tenants).
    pub host_other_used: ByteSize,
    /// Clean page cache on the host outside the job (psutil counts it as available).
    pub host_other_page_cache: ByteSize,
    /// `psutil.virtual_memory().available` before any rank starts, as `free -b` prints
    /// it (its `available` column): derives `host_other_used` (exclusive with it).
    #[serde(skip_serializing_if = "is_default")]
    pub psutil_available: Option<ByteSize>,
    /// The most one rank can pin (`RLIMIT_MEMLOCK`, a container's locked-memory limit):
    /// a `cudaHostRegister` past it fails. Absent = no limit.
    #[serde(skip_serializing_if = "is_default")]
    pub pin_limit_per_rank: Option<ByteSize>,
    /// The job's cgroup; absent = no memory cgroup is visible (bare metal).
    pub cgroup: Option<CgroupSpec>,
    /// Per-node overrides of this block, node 0 first: each entry is merged over the
    /// block (mappings key by key, lists replaced); nodes without an entry use the block.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<Value>,
}

/// A distribution of per-rank start delays, in virtual time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum JitterSpec {
    /// Every rank starts at its offset.
    #[default]
    None,
    /// Uniform in `[low, high]`.
    Uniform { low: Duration, high: Duration },
    /// Normal, truncated at 0.
    Normal { mean: Duration, std: Duration },
    /// Exponential with the given mean.
    Exponential { mean: Duration },
    /// Log-normal given the median and the shape sigma.
    LogNormal { median: Duration, sigma: f64 },
}

/// How ranks arrive: fixed per-rank offsets plus random jitter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ArrivalSpec {
    /// Offset of each rank (index = global rank); missing ranks get 0.
    pub offsets: Vec<Duration>,
    /// Added to every rank's offset, drawn independently per rank and run.
    pub jitter: JitterSpec,
}

/// How a host pool is pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PinMethod {
    /// malloc + cudaHostRegister: charged as anon, never reclaimable.
    #[default]
    #[serde(rename = "cudaHostRegister")]
    CudaHostRegister,
    /// cudaHostAlloc (torch pin_memory): charged as shmem.
    #[serde(rename = "cudaHostAlloc")]
    CudaHostAlloc,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PinSpec {
    pub method: PinMethod,
    /// Populate + register speed; absent = the node preset's `pin_bandwidth`.
    pub bandwidth: Option<Bandwidth>,
    /// How many steps a pool's charge is applied in while it pins (a later rank sees
    /// a partly pinned pool). At least 1.
    pub steps: Option<u32>,
    /// The `rc` a failed `cudaHostRegister` returns past `memory.pin_limit_per_rank`;
    /// default 2 (`cudaErrorMemoryAllocation`, an estimate: the driver's code for a
    /// refused `mlock` is not documented).
    #[serde(skip_serializing_if = "is_default")]
    pub failure_rc: Option<i64>,
    /// `cudaGetErrorString(rc)`; default `out of memory`.
    #[serde(skip_serializing_if = "is_default")]
    pub failure_error: Option<String>,
}

/// The model-weight load that fills the page cache before the host pools are sized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct WeightLoadSpec {
    /// Checkpoint bytes read on each node; absent = the model's checkpoint for its
    /// quantisation divided by the number of nodes.
    pub bytes_per_node: Option<ByteSize>,
    /// Checkpoint quantisation key of the model preset (`fp8`, `nvfp4`, …).
    #[serde(deserialize_with = "crate::domain::choices::flag_opt")]
    pub quantization: Option<crate::model::quant::CheckpointQuant>,
    /// Read speed of the whole node; absent = the node preset's `local_read_bandwidth`.
    pub read_bandwidth: Option<Bandwidth>,
    /// Read through the page cache (safetensors mmap): the cache stays charged to the job.
    pub through_page_cache: Option<bool>,
    /// Cache already reclaimed (aged out, dropped) by the time the ranks size their pools.
    pub reclaimed_before_sizing: ByteSize,
}

/// Start-up phases and their timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct StartupSpec {
    /// Anonymous memory of each rank's process (Python, CUDA context, buffers).
    pub process_memory: Option<ByteSize>,
    /// GPU memory taken before the weight load (CUDA context, NCCL buffers) on each GPU;
    /// default: the node preset's measured `gpu_reserved` (`gpu_reserved_tp1` on one GPU),
    /// else 1 GiB [EST]. The device pool is sized from what is left.
    pub gpu_reserved: Option<ByteSize>,
    pub arrival: ArrivalSpec,
    pub weight_load: WeightLoadSpec,
    /// Time from the end of the weight load to the host-pool sizing (device pool,
    /// CUDA graphs before HiCache, …).
    pub post_load: Option<Duration>,
    pub pin: PinSpec,
}

/// The model: a preset and a KV dtype, plus overrides.
pub type ModelRef = PresetRef;

/// A whole scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// SGLang sizing rules (`hicache-sim versions`). Typed at the loader, once
    /// (`load::release_value`): a tree's `sglang:` is never read here (the tree handed to
    /// the typed scenario has none); written back out as its id.
    #[serde(skip_deserializing, default = "default_sglang")]
    pub sglang: Sglang,
    #[serde(default)]
    pub seed: u64,
    /// Monte Carlo runs of the start-up (`--runs` overrides).
    #[serde(default = "one")]
    pub runs: u64,
    pub node: PresetRef,
    /// `model: NAME` (a preset or a catalogue model), `{preset: NAME, FIELD: VALUE}`, or
    /// `{config: FILE}` (a Hugging Face config.json); absent = the launch command's
    /// `--model-path` (`crate::model::resolve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    #[serde(default)]
    pub server: ServerArgs,
    #[serde(default)]
    pub memory: MemorySpec,
    #[serde(default)]
    pub startup: StartupSpec,
    /// Runtime replay settings (`hicache-sim replay`, sweeps); see `runtime::ReplayConfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Value>,
    /// Sweep axes (`hicache-sim sweep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Value>,
    /// What the deployment does that changes SGLang's figures and that the simulator does
    /// not model: filled from the launch command's flags (`--enable-lora`, …), and open
    /// to the user (a sidecar's pinned buffers, a patched SGLang). Every answer computed
    /// from this scenario is `unverified`, naming them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmodelled: Vec<Unmodelled>,
}

/// One thing a scenario does that the simulator does not model, and which way it moves
/// the figures.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unmodelled {
    /// What: the flag as typed (`--enable-lora`), or a short name.
    pub what: String,
    /// What is left out and which way the figures may be off.
    pub effect: String,
}

impl std::fmt::Display for Unmodelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.effect)
    }
}

/// No `sglang:` means the newest modelled release (`latest`).
impl ScenarioFile {
    /// A scenario that names its node and sets nothing else: every other key at the
    /// value it takes when absent (the reference's table of keys is read from it).
    pub fn minimal(node: &str) -> ScenarioFile {
        ScenarioFile {
            name: String::new(),
            description: String::new(),
            sglang: default_sglang(),
            seed: 0,
            runs: one(),
            node: PresetRef::Name(node.to_string()),
            model: None,
            server: ServerArgs::default(),
            memory: MemorySpec::default(),
            startup: StartupSpec::default(),
            runtime: None,
            sweep: None,
            unmodelled: Vec::new(),
        }
    }
}

fn default_sglang() -> Sglang {
    Sglang::DEFAULT
}

fn one() -> u64 {
    1
}

impl MemorySpec {
    /// The memory block of node `i`: `nodes[i]` merged over this block (mappings key by
    /// key, lists and scalars replaced). A node that gives one of the exclusive pair
    /// `psutil_available` / `host_other_used` drops the other from the default block.
    /// Errors name the field under `memory.nodes[i]`.
    pub fn for_node(&self, i: usize) -> Result<MemorySpec, FieldError> {
        let field = |f: &str| format!("memory.nodes[{i}]{f}");
        let mut base = self.clone();
        base.nodes.clear();
        let Some(over) = self.nodes.get(i) else {
            return Ok(base);
        };
        let Value::Object(over) = over else {
            return Err(FieldError::new(
                field(""),
                "expected a mapping of `memory:` fields for this node",
            ));
        };
        if over.contains_key("nodes") {
            return Err(FieldError::new(
                field(".nodes"),
                "per-node blocks cannot nest `nodes`",
            ));
        }
        if over.contains_key("psutil_available") {
            base.host_other_used = ByteSize(0);
        }
        if over.contains_key("host_other_used") {
            base.psutil_available = None;
        }
        let mut v =
            serde_json::to_value(&base).map_err(|e| FieldError::new(field(""), e.to_string()))?;
        merge_json(&mut v, &Value::Object(over.clone()));
        serde_json::from_value(v).map_err(|e| FieldError::new(field(""), e.to_string()))
    }
}

/// Deep merge: mappings key by key, everything else replaced.
fn merge_json(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(bv) if bv.is_object() && v.is_object() => merge_json(bv, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Fields added after the first scenario files serialise only when set, so an older
/// scenario's serialised form (sweep fingerprints, `--resume`) does not change.
fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}
