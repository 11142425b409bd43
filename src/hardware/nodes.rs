//! Node presets: one OS instance (a GB300/GB200 tray or an HGX board) and its links.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::units::{Bandwidth, ByteSize};

/// One node. Bytes as `ByteSize` and bandwidths as `Bandwidth`, so a scenario can
/// override any field with `"960GB"` or `"3.8GB/s"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodePreset {
    #[serde(default)]
    pub description: String,
    pub gpus_per_node: u32,
    /// GPU name (`GB300`, `H200`, …).
    pub gpu: String,
    /// Device memory as nvidia-smi reports it (MiB figure × 2^20), per GPU.
    pub gpu_memory: ByteSize,
    /// Host DRAM per node (what the OS can use for the job; on Grace trays MemTotal may
    /// also include HBM NUMA nodes — set `host_dram` to what you want MemTotal to be).
    pub host_dram: ByteSize,
    /// Pinned host → device copy rate per GPU.
    pub h2d_bandwidth: Bandwidth,
    /// Peak host DRAM bandwidth of the whole node (all sockets), shared by the ranks
    /// that copy to or from host memory at once ([`crate::runtime::config::host_read_share`]).
    /// Spec-sheet figures with their source in `nodes.yaml`; unset where unknown.
    /// Input only (not written, so outputs made before it keep their bytes).
    #[serde(default, skip_serializing)]
    pub host_memory_bandwidth: Option<Bandwidth>,
    /// Device → pinned host copy rate per GPU.
    pub d2h_bandwidth: Bandwidth,
    /// Checkpoint read rate per node for the weight load (local NVMe / page cache path).
    pub local_read_bandwidth: Bandwidth,
    /// Default L3 (storage backend) read rate per node.
    pub storage_read_bandwidth: Bandwidth,
    /// Default L3 write rate per node.
    pub storage_write_bandwidth: Bandwidth,
    /// Rate of populating + `cudaHostRegister`-ing a host pool, per rank.
    pub pin_bandwidth: Bandwidth,
    /// CPU sockets (Grace chips on GB trays).
    pub cpus_per_node: u32,
    /// Device memory a rank has lost before the weight load when its world has more
    /// than one GPU: nvidia-smi `memory.total` minus SGLang's `pre_model_load_memory`
    /// (`model_runner.py: init_torch_distributed`: CUDA context, NCCL communicators,
    /// custom all-reduce and symmetric-memory buffers). Measured from server logs
    /// (`Load weight begin. avail mem=`) where the corpus has one; `None`: 1 GiB.
    #[serde(default)]
    pub gpu_reserved: Option<ByteSize>,
    /// The same for a single-GPU world (no communicators).
    #[serde(default)]
    pub gpu_reserved_tp1: Option<ByteSize>,
    /// Where [`Self::gpu_reserved`] was measured (a server log's source); `None`: an
    /// estimate, and the device pool that depends on it is `unverified`. Input only.
    #[serde(default, skip_serializing)]
    pub gpu_reserved_source: Option<String>,
    /// Where [`Self::gpu_reserved_tp1`] was measured.
    #[serde(default, skip_serializing)]
    pub gpu_reserved_tp1_source: Option<String>,
    /// `nvidia` or `amd` (ROCm: the default attention backend `aiter` scales
    /// `--mem-fraction-static` by 0.85 for context lengths above 8192).
    #[serde(default)]
    pub gpu_vendor: GpuVendor,
}

/// Who made the GPU (decides the default attention backend).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuVendor {
    #[default]
    Nvidia,
    Amd,
}

impl NodePreset {
    /// Device memory lost before the weight load on a world of `world_size` GPUs
    /// ([`Self::gpu_reserved`] / [`Self::gpu_reserved_tp1`], 1 GiB when unmeasured).
    pub fn gpu_reserved_for(&self, world_size: u64) -> u64 {
        let gib = 1u64 << 30;
        let v = if world_size <= 1 {
            self.gpu_reserved_tp1
        } else {
            self.gpu_reserved
        };
        v.map(|b| b.0).unwrap_or(gib)
    }

    /// The measurement behind [`Self::gpu_reserved_for`] on a world of `world_size`
    /// GPUs; `None` when the figure is an estimate (or the 1 GiB default).
    pub fn gpu_reserved_source_for(&self, world_size: u64) -> Option<&str> {
        if world_size <= 1 {
            self.gpu_reserved_tp1_source.as_deref()
        } else {
            self.gpu_reserved_source.as_deref()
        }
    }
}

pub(super) static NODES_YAML: &str = include_str!("nodes.yaml");

/// The embedded node presets by id (`gb300`, `hgx-h200`, …).
pub fn node_presets() -> &'static BTreeMap<String, NodePreset> {
    static P: OnceLock<BTreeMap<String, NodePreset>> = OnceLock::new();
    P.get_or_init(|| {
        serde_saphyr::from_str(NODES_YAML)
            .unwrap_or_else(|e| panic!("embedded src/hardware/nodes.yaml is invalid: {e}"))
    })
}

/// A node preset by id; the error lists the ids and suggests the nearest.
pub fn node_preset(name: &str) -> Result<&'static NodePreset, crate::error::UnknownName> {
    let all = node_presets();
    all.get(name).ok_or_else(|| {
        crate::error::UnknownName::new(
            "node preset",
            name,
            all.keys().map(|k| k.as_str()),
            all.keys().cloned().collect(),
        )
    })
}
