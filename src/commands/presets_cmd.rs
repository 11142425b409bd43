//! `hicache-sim presets`: the node and model presets a scenario can name, with every
//! field a scenario can override.

use super::{CmdResult, CommandError, OutputFormat};
use crate::hardware::node_presets;
use crate::model::catalogue::{Entry, catalogue};
use crate::model::{
    ConfigFiles, KvDtype, ParallelLayout, model_presets, preset_from_config, read_model,
};

/// One catalogue model as `presets` lists it: its architecture, quantisation, KV bytes
/// per token at TP 1 with `--kv-cache-dtype auto` on Hopper, and its source — or why it
/// is not read.
fn catalogue_row(e: &Entry) -> serde_json::Value {
    let files = ConfigFiles {
        config: e.config.clone(),
        hf_quant_config: e.hf_quant_config.clone(),
        safetensors_total_size: None,
    };
    let mut row = serde_json::json!({
        "id": e.hf_id,
        "source": e.config_source,
        "hf_quant_config_source": e.hf_quant_config_source,
    });
    match read_model(&files) {
        Ok(m) => {
            let p = preset_from_config(&m, &m.quantization, e.hf_id.clone());
            let dtype = crate::model::resolve_kv_dtype(&p, KvDtype::Auto, Some(9), m.glm_dsa)
                .unwrap_or(KvDtype::Bf16);
            let layout = ParallelLayout::default();
            row["architecture"] = m.architecture.into();
            row["layers"] = m.layers.into();
            row["quantization"] = m.quantization.method.clone().into();
            row["kv_dtype_auto_sm90"] = dtype.id().into();
            row["bytes_per_token_tp1"] = p.cell_size(&layout, dtype).into();
            row["state_bytes_per_slot_tp1"] = p.attention.state_bytes_per_slot(&layout).into();
            row["checkpoint_bytes"] = p.checkpoint_bytes(None).unwrap_or(0).into();
            row["parameters"] = m.params.total().into();
            // DeepSeek-V4: no cell size; SGLang's coefficients under its defaults
            // (0.5.21–0.5.23: --max-running-requests 256, ratio mode at 0.1).
            if let Some(g) = crate::model::dsv4::Dsv4Geometry::of(&m.attention, m.layers) {
                let co = g.coefficients(&crate::model::dsv4::Dsv4Schedule::sglang_default(8192));
                row["dsv4"] = serde_json::json!(co);
            }
        }
        Err(why) => row["not_modelled"] = why.to_string().into(),
    }
    row
}

pub fn presets(format: OutputFormat) -> CmdResult {
    match format {
        OutputFormat::Json => {
            let cat: Vec<serde_json::Value> = catalogue().iter().map(catalogue_row).collect();
            let v = serde_json::json!({
                "nodes": node_presets(),
                "models": model_presets(),
                "catalogue": cat,
            });
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
            println!(
                "Catalogue ({} Hugging Face configs: `model: ID` or --model-path ID; KV bytes per token per rank at TP1, --kv-cache-dtype auto on Hopper; source):",
                catalogue().len()
            );
            for e in catalogue() {
                let r = catalogue_row(e);
                let src = e.config_source.cite();
                match r.get("not_modelled").and_then(|v| v.as_str()) {
                    Some(why) => println!("  {:<48} not modelled: {why} [{src}]", e.hf_id),
                    None if r.get("dsv4").is_some() => println!(
                        "  {:<48} {} layers, kv {} {} B per full token (SWA {} B/token at ratio {}) + C128 state fixed; {}; {:.0} GB [{src}]",
                        e.hf_id,
                        r["layers"],
                        r["kv_dtype_auto_sm90"].as_str().unwrap_or("?"),
                        r["dsv4"]["bytes_per_full_token"],
                        r["dsv4"]["bytes_per_swa_token"],
                        r["dsv4"]["swa_ratio"],
                        r["quantization"].as_str().unwrap_or("bf16"),
                        r["checkpoint_bytes"].as_u64().unwrap_or(0) as f64 / 1e9,
                    ),
                    None => println!(
                        "  {:<48} {} layers, kv {} {} B{}; {}; {:.0} GB [{src}]",
                        e.hf_id,
                        r["layers"],
                        r["kv_dtype_auto_sm90"].as_str().unwrap_or("?"),
                        r["bytes_per_token_tp1"],
                        r["state_bytes_per_slot_tp1"]
                            .as_u64()
                            .map(|b| format!(", state {b} B/slot"))
                            .unwrap_or_default(),
                        r["quantization"].as_str().unwrap_or("bf16"),
                        r["checkpoint_bytes"].as_u64().unwrap_or(0) as f64 / 1e9,
                    ),
                }
            }
        }
    }
    Ok(0)
}
