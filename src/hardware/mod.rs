//! Hardware: node presets (embedded `nodes.yaml`) and host memory as Linux accounts it —
//! MemAvailable as psutil reads it, and a cgroup tree (v1 or v2) with limits, charges,
//! page-cache reclaim and OOM kills. The start-up simulator mutates a [`HostMemory`] over
//! virtual time and hands [`HostMemoryView`]s to the sizing rules (`crate::sizing`).

mod memory;
mod nodes;
mod view;

/// The node presets bundled in the binary, by name (see [`crate::model::bundled_data`]).
pub fn bundled_data() -> [(&'static str, &'static str); 1] {
    [("nodes.yaml", nodes::NODES_YAML)]
}

pub use memory::{CgroupLimits, ChargeKind, ChargeOutcome, Charges, HostMemory, MemoryError, Oom};
pub use nodes::{GpuVendor, NodePreset, node_preset, node_presets};
pub use view::{
    CgroupChain, CgroupId, CgroupLevel, CgroupRead, CgroupVersion, HostMemoryView,
    MAX_CGROUP_DEPTH, MemStat, V1_UNLIMITED,
};
