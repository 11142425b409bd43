//! The GPUs as the driver reports them (`nvidia-smi --query-gpu`), and the node preset
//! they suggest.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

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

/// How long `nvidia-smi` may run (10 s; it answers in well under a second, a hung
/// driver never does).
pub const DEFAULT_TIMEOUT_SECS: f64 = 10.0;

/// The environment variable that sets another deadline, in seconds.
pub const TIMEOUT_VAR: &str = "HICACHE_SIM_NVIDIA_SMI_TIMEOUT";

/// The most `nvidia-smi` may write on each of stdout and stderr (1 MiB; a line per GPU is
/// ~50 bytes).
pub const OUTPUT_CAP: usize = 1 << 20;

/// The deadline in force: [`DEFAULT_TIMEOUT_SECS`] unless [`TIMEOUT_VAR`] says, which
/// must be a number of seconds above 0 and at most a day.
pub fn timeout() -> Result<Duration, InputError> {
    let Some(v) = std::env::var_os(TIMEOUT_VAR) else {
        return Ok(Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS));
    };
    let t = v.to_string_lossy();
    match t.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err(InputError::new(
            TIMEOUT_VAR,
            format!(
                "expected seconds, a number above 0 and at most 86400, got `{t}`; unset it for the default {DEFAULT_TIMEOUT_SECS} s"
            ),
        )),
    }
}

/// What a bounded run of a program gave.
struct Bounded {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Why a bounded run was stopped.
enum Stopped {
    Deadline,
    Output(&'static str),
}

/// Reads `r` to its end into a buffer of at most [`OUTPUT_CAP`] bytes; past the cap,
/// raises `over` and stops reading (the writer then blocks, and is killed).
fn capped(mut r: impl Read, over: Arc<AtomicBool>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) if out.len() + n > OUTPUT_CAP => {
                over.store(true, Ordering::SeqCst);
                return out;
            }
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// SIGKILL to the process group `pgid` (the child's own: every process it started dies
/// with it, and none keeps its pipes open). A group already gone is no error.
fn kill_group(pgid: u32) {
    if let Ok(id) = libc::pid_t::try_from(pgid) {
        // SAFETY: killpg takes plain integers and touches no memory of ours.
        unsafe {
            libc::killpg(id, libc::SIGKILL);
        }
    }
}

/// Runs `cmd` in a process group of its own with its output piped, killing the group
/// past `deadline` or past [`OUTPUT_CAP`] bytes on either stream. A command that exits
/// while a process it started still holds its output open has that group killed at
/// the deadline too.
fn run_bounded(cmd: &mut Command, deadline: Duration) -> std::io::Result<Result<Bounded, Stopped>> {
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let over_out = Arc::new(AtomicBool::new(false));
    let over_err = Arc::new(AtomicBool::new(false));
    let (tx_out, rx_out) = mpsc::channel();
    let (tx_err, rx_err) = mpsc::channel();
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let o = over_out.clone();
    std::thread::spawn(move || {
        let _ = tx_out.send(out.map(|r| capped(r, o)).unwrap_or_default());
    });
    let o = over_err.clone();
    std::thread::spawn(move || {
        let _ = tx_err.send(err.map(|r| capped(r, o)).unwrap_or_default());
    });
    let start = Instant::now();
    let pgid = child.id();
    let stop = |child: &mut std::process::Child, why| {
        kill_group(pgid);
        let _ = child.kill();
        let _ = child.wait();
        Ok(Err(why))
    };
    let status = loop {
        if over_out.load(Ordering::SeqCst) {
            return stop(&mut child, Stopped::Output("stdout"));
        }
        if over_err.load(Ordering::SeqCst) {
            return stop(&mut child, Stopped::Output("stderr"));
        }
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() >= deadline {
            return stop(&mut child, Stopped::Deadline);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Exited: its output is whole once the pipes close (or a grandchild holds them
    // until the deadline).
    let left = || deadline.saturating_sub(start.elapsed());
    let stdout = rx_out.recv_timeout(left()).map_err(|_| Stopped::Deadline);
    let stderr = rx_err.recv_timeout(left()).map_err(|_| Stopped::Deadline);
    if stdout.is_err() || stderr.is_err() {
        // A process it started holds a pipe open past the deadline: kill what is left
        // of its group (the group outlives the reaped leader while a member lives, so
        // its id is not reused).
        kill_group(pgid);
    }
    if over_out.load(Ordering::SeqCst) {
        return Ok(Err(Stopped::Output("stdout")));
    }
    if over_err.load(Ordering::SeqCst) {
        return Ok(Err(Stopped::Output("stderr")));
    }
    Ok(match (stdout, stderr) {
        (Ok(stdout), Ok(stderr)) => Ok(Bounded {
            status,
            stdout,
            stderr,
        }),
        (Err(e), _) | (_, Err(e)) => Err(e),
    })
}

/// Runs `program` (a path or a name on `PATH`) with the query arguments, within
/// [`timeout`] and [`OUTPUT_CAP`] (past either it is killed, and the read fails).
pub fn run(program: &str) -> Result<GpuRead, InputError> {
    let source = format!("{program} --query-gpu={QUERY} --format=csv,noheader,nounits");
    let deadline = timeout()?;
    let out = match run_bounded(
        Command::new(program)
            .arg(format!("--query-gpu={QUERY}"))
            .arg("--format=csv,noheader,nounits"),
        deadline,
    ) {
        Ok(Ok(o)) => o,
        Ok(Err(Stopped::Deadline)) => {
            return Ok(GpuRead::Failed(format!(
                "`{source}` did not finish within {} s ({TIMEOUT_VAR} sets another deadline): killed",
                deadline.as_secs_f64()
            )));
        }
        Ok(Err(Stopped::Output(stream))) => {
            return Ok(GpuRead::Failed(format!(
                "`{source}` wrote more than {} MiB to {stream} (a GPU line is ~50 bytes): killed",
                OUTPUT_CAP >> 20
            )));
        }
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
