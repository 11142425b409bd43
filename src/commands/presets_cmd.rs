//! `hicache-sim presets`: the node and model presets a scenario can name, with every
//! field a scenario can override.

use super::{CmdResult, CommandError, OutputFormat};
use crate::hardware::node_presets;
use crate::model::{KvDtype, ParallelLayout, model_presets};

pub fn presets(format: OutputFormat) -> CmdResult {
    match format {
        OutputFormat::Json => {
            let v = serde_json::json!({ "nodes": node_presets(), "models": model_presets() });
            println!(
                "{}",
                serde_json::to_string_pretty(&v).map_err(|e| CommandError::Other(e.to_string()))?
            );
        }
        OutputFormat::Text => {
            println!("Nodes (override any field: node: {{preset: NAME, FIELD: VALUE}}):");
            for (name, n) in node_presets() {
                println!(
                    "  {name:<10} {} x {} ({:.1} GiB {}), host {:.0} GB, H2D {:.0} GB/s, pin {:.1} GB/s",
                    n.gpus_per_node,
                    n.gpu,
                    n.gpu_memory.0 as f64 / (1u64 << 30) as f64,
                    match n.gpu_vendor {
                        crate::hardware::GpuVendor::Amd => "rocminfo",
                        crate::hardware::GpuVendor::Nvidia => "nvidia-smi",
                    },
                    n.host_dram.0 as f64 / 1e9,
                    n.h2d_bandwidth.0 / 1e9,
                    n.pin_bandwidth.0 / 1e9
                );
            }
            println!(
                "Models (bytes per token per rank at TP1, default KV dtype; checkpoint sizes):"
            );
            for (name, m) in model_presets() {
                let mut pools: Vec<String> = m
                    .host_pools(&ParallelLayout::default(), m.default_kv_dtype)
                    .iter()
                    .map(|p| format!("{} {} B", p.name, p.bytes_per_token))
                    .collect();
                // Hybrid models: the linear-attention state pool, per slot.
                if let Some(b) = m.attention.state_bytes_per_slot(&ParallelLayout::default()) {
                    pools.push(format!("state {b} B/slot"));
                }
                let ckpt: Vec<String> = m
                    .checkpoint
                    .iter()
                    .map(|(q, b)| format!("{q} {:.0} GB", b.0 as f64 / 1e9))
                    .collect();
                let dtype: &str = KvDtype::id(m.default_kv_dtype);
                println!(
                    "  {name:<16} {} layers, kv {dtype}: {}; {}",
                    m.layers,
                    pools.join(", "),
                    ckpt.join(", ")
                );
            }
        }
    }
    Ok(0)
}
