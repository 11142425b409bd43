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
}

static NODES_YAML: &str = include_str!("nodes.yaml");

/// The embedded node presets by id (`gb300`, `hgx-h200`, …).
pub fn node_presets() -> &'static BTreeMap<String, NodePreset> {
    static P: OnceLock<BTreeMap<String, NodePreset>> = OnceLock::new();
    P.get_or_init(|| {
        serde_saphyr::from_str(NODES_YAML)
            .unwrap_or_else(|e| panic!("embedded src/hardware/nodes.yaml is invalid: {e}"))
    })
}

/// A node preset by id; the error lists the ids and suggests the nearest.
pub fn node_preset(name: &str) -> Result<&'static NodePreset, String> {
    let all = node_presets();
    all.get(name).ok_or_else(|| {
        let hint = crate::error::nearest(name, all.keys().map(|k| k.as_str()))
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        format!(
            "unknown node preset `{name}`{hint}: expected one of {}",
            all.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    })
}
