//! SGLang's own start-up log lines, by release. The simulation records numbers
//! ([`LogEvent`], `Copy`, no strings); the report renders them with the format strings
//! copied from each wheel ([`LogRules`] of the release a version maps to).
//!
//! Sources (paths under `sglang/srt/mem_cache/`):
//! - `pool_host/base.py: HostKVCache.__init__`: the host-smaller-than-device warning and
//!   the `Allocating …` line (0.5.14–0.5.16: `Allocating X GB host memory for
//!   hierarchical KV cache.`, no pool label in the warning; 0.5.14 asserts instead of
//!   warning; 0.5.17+: labelled). The warning's literal pieces are joined without a
//!   space (`…tokens);L2 cache…reduced.Consider…`), as SGLang prints it.
//! - `pool_host/dsa.py` (0.5.19+; `memory_pool_host.py` before): the DSA indexer's own
//!   `Allocating %.2f GB host memory for DSA indexer (layout=%s).`.
//! - `host_memory.py: available_host_memory_bytes` (0.5.21+): `HiCache memory headroom:
//!   host %.1f GiB, cgroup %.1f GiB`, each time `available` is read with a cgroup limit.
//! - `hicache_auto_size.py: auto_size_hicache` (0.5.21+): the auto-size line.
//! - `pool_host/common.py: _cuda_host_register`: the registration error (one call
//!   with the buffer's pointer up to 0.5.18; chunked by
//!   `SGLANG_HICACHE_HOST_REGISTER_CHUNK_GB` = 256 from 0.5.19).
//! - V5 `hicache_auto.py` (the `auto-hicache` what-if, in no release): the
//!   `HiCache auto: …` lines of `build_tree_cache_with_auto_hicache` and
//!   `AutoHiCacheAttachGate.run`.

use serde::Serialize;

use crate::domain::MemLayout;

/// The `Allocating …` line of a host KV pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum AllocatingLine {
    /// 0.5.14–0.5.16: `Allocating {:.2f} GB host memory for hierarchical KV cache.`
    Unlabelled,
    /// 0.5.17+: `Allocating %s hierarchical KV host pool: %d tokens, %.2f GB host memory.`
    Labelled,
}

/// The host-smaller-than-device message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SmallHostLine {
    /// 0.5.14: an `AssertionError` instead (no warning).
    Asserts,
    /// 0.5.15–0.5.16: `HiCache host KV pool (%d tokens) is smaller than …`.
    Unlabelled,
    /// 0.5.17+: `HiCache %s host pool (%d tokens) is smaller than …`.
    Labelled,
}

/// How `_cuda_host_register` registers a pool and words its failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HostRegister {
    /// Up to 0.5.18: one `cudaHostRegister` for the whole buffer; the error names the
    /// buffer's pointer (not modelled: printed as a fixed placeholder).
    SingleCall,
    /// 0.5.19+: chunks of `(256 GiB // granularity) * granularity` for page-first
    /// layouts (granularity = `page_size * layout_dim`), one call otherwise.
    Chunked,
}

/// `SGLANG_HICACHE_HOST_REGISTER_CHUNK_GB` default (0.5.19+ `environ.py`).
pub const REGISTER_CHUNK_LIMIT: u64 = 256 << 30;

/// The log formats of one release: a part of [`super::ReleaseRules`] (`rules.rs`, where
/// each change cites the wheel's file and function).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LogRules {
    pub allocating: AllocatingLine,
    pub small_host: SmallHostLine,
    /// `HiCache memory headroom: …` (0.5.21+).
    pub headroom_line: bool,
    /// `HiCache auto-sizing: …` (0.5.21+, where auto-size exists).
    pub auto_size_line: bool,
    pub register: HostRegister,
    /// `pool_host/mamba.py: MambaPoolHost.__init__`: the state pool's `Allocating …`
    /// line names its slot count from 0.5.23 (`… Mamba cache (%d state slots,
    /// layout=%s).`); 0.5.15–0.5.22 print `… Mamba cache (layout=%s).`
    pub mamba_allocating_slots: bool,
}

/// Which exception ended a rank (rendered with its message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ErrorKind {
    ValueError,
    RuntimeError,
    AssertionError,
    /// `torch.OutOfMemoryError` (CUDA out of memory).
    OutOfMemoryError,
    /// Raised while the model is built (OffloaderV2 on a model outside the DeepSeek-V2
    /// family: `crate::model::offload::V2_TYPE_ERROR`).
    TypeError,
}

impl ErrorKind {
    /// The exception's name as Python prints it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ValueError => "ValueError",
            ErrorKind::RuntimeError => "RuntimeError",
            ErrorKind::AssertionError => "AssertionError",
            ErrorKind::OutOfMemoryError => "torch.OutOfMemoryError",
            ErrorKind::TypeError => "TypeError",
        }
    }
}

/// Why a V5 build failed on a rank (`_RECOVERABLE_ATTACH_ERRORS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum AttachFailure {
    /// `cudaHostRegister` failed at `offset` (`size` bytes) of `total`.
    Register {
        offset: u64,
        size: u64,
        total: u64,
        chunk: u64,
    },
    /// The pool did not fit the booking allowance (`HostMemoryBudgetError`).
    Budget {
        pool: &'static str,
        requested: u64,
        allowance: i128,
    },
}

/// What rendering needs besides the events: the release's formats and the scenario's
/// `startup.pin.failure_rc` / `failure_error`.
#[derive(Debug, Clone, Copy)]
pub struct RenderContext<'a> {
    pub rules: LogRules,
    pub pin_failure_rc: i64,
    pub pin_failure_error: &'a str,
}

/// One log line as numbers, recorded during the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum LogEvent {
    /// The host pool is not larger than the device pool.
    SmallHost {
        pool: &'static str,
        host_tokens: u64,
        device_tokens: u64,
    },
    /// `available` read with a cgroup limit: psutil's figure and the cgroup headroom.
    Headroom { host: u64, cgroup: u64 },
    /// #40135 auto-size after the world MIN.
    AutoSize {
        requested: f64,
        ratio: f64,
        budget: i128,
        fraction: f64,
        ranks_per_host: u64,
        device_bytes: u64,
    },
    /// A pool passed its check and is about to be allocated and pinned.
    Allocating {
        pool: &'static str,
        tokens: u64,
        bytes: u64,
        /// `--hicache-mem-layout` (the DSA and Mamba lines print it).
        layout: MemLayout,
    },
    /// A DeepSeek-V4 host pool passed its check (`DeepSeekV4PagedHostPool` /
    /// `DeepSeekV4StateHostPool`, 0.5.21–0.5.23).
    AllocatingV4 {
        pool: &'static str,
        state: bool,
        layers: u64,
        pages: u64,
        item_bytes: u64,
        bytes: u64,
        layout: MemLayout,
    },
    /// The rank raised; the text is the rank's message.
    Error(ErrorKind),
    /// V5: this rank's build failed inside the attach gate.
    AttachFailedHere(AttachFailure),
    /// V5: the gate's SUM found failures; every rank retries at `ratio`.
    AutoRetry { failed_ranks: u32, ratio: f64 },
    /// V5: on, at `ratio`.
    AutoOn {
        ratio: f64,
        budget: i128,
        ranks_per_host: u64,
        memlock: Option<u64>,
    },
    /// V5: off; the reason is the rank's message, or the gate's failure count.
    AutoOff { failed_ranks: u32 },
}

const GIB: f64 = (1u64 << 30) as f64;

/// `HiCache … is smaller than the device pool …`: SGLang's adjacent string literals
/// join with no space between the sentences.
fn small_host(style: SmallHostLine, pool: &str, host: u64, device: u64) -> String {
    let tail = "L2 cache effectiveness is reduced.Consider increasing --hicache-ratio (or --hicache-size) for higher L2 cache hit rate.";
    match style {
        // `pool_host/mamba.py: MambaPoolHost.__init__` (0.5.15–0.5.23) keeps the
        // unlabelled "host KV pool" text for the state pool, counting slots as tokens.
        SmallHostLine::Labelled if pool != "state" => format!(
            "HiCache {pool} host pool ({host} tokens) is smaller than the device pool ({device} tokens);{tail}"
        ),
        _ => format!(
            "HiCache host KV pool ({host} tokens) is smaller than the device pool ({device} tokens);{tail}"
        ),
    }
}

/// The text of one event. `message` is the rank's message (error, off reason).
pub fn render(ctx: &RenderContext, e: &LogEvent, message: Option<&str>) -> String {
    let rules = &ctx.rules;
    match *e {
        LogEvent::SmallHost {
            pool,
            host_tokens,
            device_tokens,
        } => small_host(rules.small_host, pool, host_tokens, device_tokens),
        LogEvent::Headroom { host, cgroup } => format!(
            "HiCache memory headroom: host {:.1} GiB, cgroup {:.1} GiB",
            host as f64 / GIB,
            cgroup as f64 / GIB
        ),
        LogEvent::AutoSize {
            requested,
            ratio,
            budget,
            fraction,
            ranks_per_host,
            device_bytes,
        } => format!(
            "HiCache auto-sizing: ratio {requested:.3} -> {ratio:.3}; {:.1} GiB host memory per rank (fraction {fraction:.2}, {ranks_per_host} ranks on this host), host pools {:.1} GiB.",
            budget as f64 / GIB,
            device_bytes as f64 * ratio / GIB
        ),
        LogEvent::Allocating {
            pool,
            tokens,
            bytes,
            layout,
        } => {
            let gb = bytes as f64 / 1e9;
            if pool == "indexer" {
                format!("Allocating {gb:.2} GB host memory for DSA indexer (layout={layout}).")
            } else if pool == "state" {
                // `pool_host/mamba.py: MambaPoolHost.__init__`; `tokens` counts slots.
                if rules.mamba_allocating_slots {
                    format!(
                        "Allocating {gb:.2} GB host memory for hierarchical Mamba cache ({tokens} state slots, layout={layout})."
                    )
                } else {
                    format!(
                        "Allocating {gb:.2} GB host memory for hierarchical Mamba cache (layout={layout})."
                    )
                }
            } else {
                match rules.allocating {
                    AllocatingLine::Unlabelled => {
                        format!("Allocating {gb:.2} GB host memory for hierarchical KV cache.")
                    }
                    AllocatingLine::Labelled => format!(
                        "Allocating {pool} hierarchical KV host pool: {tokens} tokens, {gb:.2} GB host memory."
                    ),
                }
            }
        }
        // `memory_pool_host.py: DeepSeekV4PagedHostPool.__init__` /
        // `DeepSeekV4StateHostPool.__init__` (0.5.21–0.5.23).
        LogEvent::AllocatingV4 {
            pool,
            state,
            layers,
            pages,
            item_bytes,
            bytes,
            layout,
        } => format!(
            "Allocating {:.2} GB host memory for V4 {} pool '{pool}' (layers={layers}, pages={pages}, {}={item_bytes}, layout={layout}).",
            bytes as f64 / 1e9,
            if state { "state" } else { "paged" },
            if state {
                "state_page_bytes"
            } else {
                "item_bytes"
            },
        ),
        LogEvent::Error(kind) => format!("{}: {}", kind.name(), message.unwrap_or("")),
        LogEvent::AttachFailedHere(f) => {
            let why = match f {
                AttachFailure::Register {
                    offset,
                    size,
                    total,
                    chunk,
                } => register_error(
                    rules.register,
                    ctx.pin_failure_rc,
                    ctx.pin_failure_error,
                    offset,
                    size,
                    total,
                    chunk,
                ),
                AttachFailure::Budget {
                    pool,
                    requested,
                    allowance,
                } => crate::sizing::refusal_message_for(pool, requested, allowance),
            };
            format!("HiCache host pools could not be built here: {why}")
        }
        LogEvent::AutoRetry {
            failed_ranks,
            ratio,
        } => format!(
            "HiCache auto: host pools could not be pinned ({failed_ranks} rank(s) could not build their host pools); retrying at {ratio:.2}x."
        ),
        LogEvent::AutoOn {
            ratio,
            budget,
            ranks_per_host,
            memlock,
        } => format!(
            "HiCache auto: on, host tier {ratio:.2}x the device cache (budget {:.1} GiB per rank, {ranks_per_host} rank(s) on this host, {}).",
            budget as f64 / GIB,
            match memlock {
                None => "memlock unlimited".to_string(),
                Some(b) => format!("memlock limit {:.1} GiB", b as f64 / GIB),
            }
        ),
        LogEvent::AutoOff { failed_ranks } => {
            if failed_ranks > 0 {
                format!(
                    "HiCache auto: off, host pools could not be pinned ({failed_ranks} rank(s) could not build their host pools)."
                )
            } else {
                let reason = message
                    .map(|m| m.strip_prefix("HiCache off: ").unwrap_or(m))
                    .unwrap_or("");
                format!("HiCache auto: off, {reason}.")
            }
        }
    }
}

/// `_cuda_host_register`'s `RuntimeError` text for a registration that failed at
/// `offset` (`size` bytes) of a `total`-byte buffer registered in `chunk`-byte calls.
pub fn register_error(
    style: HostRegister,
    rc: i64,
    error: &str,
    offset: u64,
    size: u64,
    total: u64,
    chunk: u64,
) -> String {
    match style {
        HostRegister::Chunked => format!(
            "cudaHostRegister failed (rc={rc}, {error}) at offset={offset} size={size} (total={total}, chunk_limit={chunk}); host buffer is not pinned and device transfers may silently return stale data."
        ),
        // The pointer is the process's own address: a fixed placeholder here.
        HostRegister::SingleCall => format!(
            "cudaHostRegister failed (rc={rc}, {error}) for ptr=0x7f0000000000 size={total}; host buffer is not pinned and device transfers may silently return stale data."
        ),
    }
}

/// Bytes per `cudaHostRegister` call: `(limit // g) * g` with `g = page_size ×
/// bytes_per_token` for page-first layouts (`pool_host/mla.py`, `mha.py`:
/// `registration_granularity_bytes`), else the whole buffer.
pub fn register_chunk(style: HostRegister, page_first: bool, granularity: u64, total: u64) -> u64 {
    match style {
        HostRegister::Chunked if page_first && granularity > 0 => {
            (REGISTER_CHUNK_LIMIT / granularity) * granularity
        }
        _ => total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    fn ctx(r: Release) -> RenderContext<'static> {
        RenderContext {
            rules: r.rules().log,
            pin_failure_rc: 2,
            pin_failure_error: "out of memory",
        }
    }

    const TAIL: &str = "L2 cache effectiveness is reduced.Consider increasing --hicache-ratio (or --hicache-size) for higher L2 cache hit rate.";

    #[test]
    fn formats_follow_each_wheel() {
        let small = LogEvent::SmallHost {
            pool: "kv",
            host_tokens: 100,
            device_tokens: 200,
        };
        // 0.5.14 asserts instead (the simulator fails the rank before this line).
        assert_eq!(
            Release::V0_5_14.rules().log.small_host,
            SmallHostLine::Asserts
        );
        assert_eq!(
            render(&ctx(Release::V0_5_16), &small, None),
            format!(
                "HiCache host KV pool (100 tokens) is smaller than the device pool (200 tokens);{TAIL}"
            )
        );
        assert_eq!(
            render(&ctx(Release::V0_5_17), &small, None),
            format!(
                "HiCache kv host pool (100 tokens) is smaller than the device pool (200 tokens);{TAIL}"
            )
        );
        let alloc = LogEvent::Allocating {
            pool: "kv",
            tokens: 895_808,
            bytes: 24_770_000_000,
            layout: MemLayout::PageFirst,
        };
        assert_eq!(
            render(&ctx(Release::V0_5_15), &alloc, None),
            "Allocating 24.77 GB host memory for hierarchical KV cache."
        );
        assert_eq!(
            render(&ctx(Release::V0_5_23), &alloc, None),
            "Allocating kv hierarchical KV host pool: 895808 tokens, 24.77 GB host memory."
        );
        let dsa = LogEvent::Allocating {
            pool: "indexer",
            tokens: 895_808,
            bytes: 1_234_567_890,
            layout: MemLayout::PageFirst,
        };
        assert_eq!(
            render(&ctx(Release::V0_5_21), &dsa, None),
            "Allocating 1.23 GB host memory for DSA indexer (layout=page_first)."
        );
        // 0.5.21+ only.
        assert!(!Release::V0_5_20.rules().log.headroom_line);
        assert!(Release::V0_5_21.rules().log.headroom_line);
        // 3 GiB and 1.5 GiB.
        let head = LogEvent::Headroom {
            host: 3 << 30,
            cgroup: 3 << 29,
        };
        assert_eq!(
            render(&ctx(Release::V0_5_22), &head, None),
            "HiCache memory headroom: host 3.0 GiB, cgroup 1.5 GiB"
        );
        // budget 45,852,516,352 B = 42.7 GiB; 31,481,856,000 × 1.38365 / 2^30 = 40.6 GiB.
        let auto = LogEvent::AutoSize {
            requested: 2.0,
            ratio: 1.383_650_650_533_437_4,
            budget: 45_852_516_352,
            fraction: 0.8,
            ranks_per_host: 4,
            device_bytes: 31_481_856_000,
        };
        assert_eq!(
            render(&ctx(Release::V0_5_21), &auto, None),
            "HiCache auto-sizing: ratio 2.000 -> 1.384; 42.7 GiB host memory per rank (fraction 0.80, 4 ranks on this host), host pools 40.6 GiB."
        );
        assert_eq!(
            render(
                &ctx(Release::V0_5_21),
                &LogEvent::Error(ErrorKind::ValueError),
                Some("x")
            ),
            "ValueError: x"
        );
    }

    #[test]
    fn registration_is_chunked_from_0_5_19() {
        assert_eq!(
            Release::V0_5_18.rules().log.register,
            HostRegister::SingleCall
        );
        assert_eq!(Release::V0_5_19.rules().log.register, HostRegister::Chunked);
        // Page-first: (256 GiB // g) × g; layer-first: the whole buffer.
        assert_eq!(
            register_chunk(HostRegister::Chunked, true, 4_497_408, 10),
            274_877_079_552
        );
        assert_eq!(
            register_chunk(HostRegister::Chunked, false, 4_497_408, 10),
            10
        );
        assert_eq!(
            register_chunk(HostRegister::SingleCall, true, 4_497_408, 10),
            10
        );
    }
}
