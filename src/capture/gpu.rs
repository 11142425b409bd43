//! The GPUs as the driver reports them (`nvidia-smi --query-gpu`), and the node preset
//! they suggest.

use std::process::Command;

use crate::error::InputError;
use crate::hardware::{NodePreset, node_presets};
use crate::units::MIB;

/// The fields asked of `nvidia-smi`, in order.
pub const QUERY: &str = "index,name,memory.total,driver_version";

/// One GPU line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    pub index: String,
    pub name: String,
    /// `memory.total` in MiB, as the driver reports it.
    pub memory_mib: u64,
    pub driver: String,
}

/// What running `nvidia-smi` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuRead {
    /// Not asked (`--nvidia-smi none`).
    Off,
    /// The program is not there (no NVIDIA driver on this machine).
    Absent(String),
    /// It ran and failed (exit code and its message).
    Failed(String),
    Found(Vec<Gpu>),
}

/// Parses `nvidia-smi --query-gpu=index,name,memory.total,driver_version
/// --format=csv,noheader,nounits`: one `0, NVIDIA H200, 143771, 570.86.15` line per GPU.
pub fn parse(text: &str, source: &str) -> Result<Vec<Gpu>, InputError> {
    let mut gpus = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let err = |m: String| InputError::new(source, m).at_line(i + 1);
        if f.len() != 4 {
            return Err(err(format!(
                "expected `{QUERY}` (4 comma-separated fields), got `{line}`"
            )));
        }
        let memory_mib = f[2].parse().map_err(|_| {
            err(format!(
                "memory.total: expected MiB as an integer (`--format=csv,noheader,nounits`), got `{}`",
                f[2]
            ))
        })?;
        gpus.push(Gpu {
            index: f[0].to_string(),
            name: f[1].to_string(),
            memory_mib,
            driver: f[3].to_string(),
        });
    }
    if gpus.is_empty() {
        return Err(InputError::new(source, "no GPU lines in the output"));
    }
    Ok(gpus)
}

/// Runs `program` (a path or a name on `PATH`) with the query arguments.
pub fn run(program: &str) -> Result<GpuRead, InputError> {
    let source = format!("{program} --query-gpu={QUERY} --format=csv,noheader,nounits");
    let out = match Command::new(program)
        .arg(format!("--query-gpu={QUERY}"))
        .arg("--format=csv,noheader,nounits")
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(GpuRead::Absent(format!("`{program}` not found")));
        }
        Err(e) => return Ok(GpuRead::Failed(format!("`{program}`: {e}"))),
    };
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        return Ok(GpuRead::Failed(format!(
            "`{program}` exited with {}: {}",
            out.status
                .code()
                .map_or("a signal".into(), |c| c.to_string()),
            msg.trim().lines().next().unwrap_or("")
        )));
    }
    Ok(GpuRead::Found(parse(
        &String::from_utf8_lossy(&out.stdout),
        &source,
    )?))
}

/// `memory.total` in bytes (MiB × 2^20, the preset's `gpu_memory` unit).
pub fn memory_bytes(g: &Gpu) -> u64 {
    g.memory_mib * MIB
}

/// Whether `word` (a preset's `gpu`, e.g. `H200`, `GB300`) is a whole word of the
/// driver's name (`NVIDIA H200`, `NVIDIA GB300`; `B300` is not a word of `GB300`).
fn names_gpu(name: &str, word: &str) -> bool {
    let words: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .collect();
    let want: Vec<String> = word
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .collect();
    !want.is_empty() && words.windows(want.len()).any(|w| w == want.as_slice())
}

/// The node preset whose `gpu` the driver's name spells, preferring the longest `gpu`
/// name (`H100 NVL` over `H100`), then the same GPU count, then the nearest
/// `gpu_memory`, then the id.
pub fn guess_preset(gpus: &[Gpu]) -> Option<(&'static str, &'static NodePreset)> {
    let first = gpus.first()?;
    let mem = memory_bytes(first);
    node_presets()
        .iter()
        .filter(|(_, p)| names_gpu(&first.name, &p.gpu))
        .min_by_key(|(id, p)| {
            (
                std::cmp::Reverse(p.gpu.len()),
                p.gpus_per_node as usize != gpus.len(),
                p.gpu_memory.0.abs_diff(mem),
                id.as_str(),
            )
        })
        .map(|(id, p)| (id.as_str(), p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus(name: &str, mib: u64, n: usize) -> Vec<Gpu> {
        (0..n)
            .map(|i| Gpu {
                index: i.to_string(),
                name: name.into(),
                memory_mib: mib,
                driver: "570.86.15".into(),
            })
            .collect()
    }

    #[test]
    fn parses_the_csv() {
        let g = parse(
            "0, NVIDIA H200, 143771, 570.86.15\n1, NVIDIA H200, 143771, 570.86.15\n",
            "smi",
        )
        .unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[1].name, "NVIDIA H200");
        assert_eq!(memory_bytes(&g[0]), 143_771 * 1024 * 1024);
        let e = parse("0, NVIDIA H200, 143771 MiB, 570\n", "smi").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(parse("\n", "smi").is_err());
    }

    #[test]
    fn presets_from_names() {
        assert_eq!(
            guess_preset(&gpus("NVIDIA GB300", 284208, 4)).unwrap().0,
            "gb300"
        );
        assert_eq!(
            guess_preset(&gpus("NVIDIA B300 SXM6 AC", 275040, 8))
                .unwrap()
                .0,
            "hgx-b300"
        );
        assert_eq!(
            guess_preset(&gpus("NVIDIA H200", 143771, 8)).unwrap().0,
            "hgx-h200"
        );
        assert_eq!(
            guess_preset(&gpus("NVIDIA H100 80GB HBM3", 81559, 8))
                .unwrap()
                .0,
            "hgx-h100"
        );
        assert!(guess_preset(&gpus("Tesla T4", 15360, 1)).is_none());
    }
}
