//! What a prefill forward and a decode step cost, and how a host hit's load-back
//! overlaps the forward (the design is `docs/src/design/time-model.md`).
//!
//! Sources of compute time, chosen per scenario (`runtime.compute.source`):
//! - `fixed` (the default, and every replay before this module): the old
//!   `prefill_tokens_per_s` / `decode_tokens_per_s` speeds and the SGLang Simulator's
//!   non-overlapped clock (`H2D + forward`);
//! - `table`: the generated cost tables (`tools/costs/tables`, profiled SGLang 0.5.14
//!   kernels through `aiconfigurator-core` 0.12.0) of a node preset × model × quant × TP;
//! - `roofline`: FLOPs and bytes from the model over a GPU's peaks (`roofline.rs`).
//!
//! With `table` or `roofline` the load-back of a batch's host hits is layer-pipelined
//! with its forward ([`layer_pipelined_end`]), and `chunked_prefill_size` cuts a batch
//! into forwards of at most that many new tokens.

pub mod bench;
pub mod roofline;
pub mod speculative;
pub mod table;

use serde::{Deserialize, Serialize};

use crate::model::quant::CheckpointQuant;
use crate::units::{Duration, Nanos};

pub use roofline::{GpuSpec, ModelFacts, Roofline};
pub use speculative::{SpecStep, Speculative};
pub use table::CostTable;

/// Where compute times come from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ComputeSource {
    /// `prefill_tokens_per_s` and `decode_tokens_per_s`, H2D then forward.
    #[default]
    Fixed,
    /// A generated cost table (`tools/costs/tables/<node>.json`).
    Table {
        node: String,
        model: String,
        quant: CheckpointQuant,
        tp: u32,
    },
    /// A roofline (see [`Roofline::derive`] for the defaults).
    Roofline(Roofline),
}

/// `runtime.compute`: the compute-time model of a timed replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Compute {
    pub source: ComputeSource,
    /// `--chunked-prefill-size`: new tokens per forward (0 = no chunking). In a
    /// scenario it is the server's (`server.chunked_prefill_size`, else its GPU-tier
    /// default, per DP worker: [`crate::pools::device::scheduler_chunked_prefill_size`]);
    /// 0 for a replay without a scenario.
    pub chunked_prefill_size: u32,
    /// Multiplies every compute time (a sibling GPU's table on a slower chip).
    pub compute_scale: f64,
    /// **Not an SGLang rule**: a time per cached (prefix-hit) token of a request,
    /// charged once when the request's prefill batch is scheduled, before the batch's
    /// load-back and forward start (`runtime::timed`). Default 0 (no charge, and not
    /// written into outputs). It stands for a cost SGLang's published single-probe
    /// runs measure and no modelled rule explains: an L1 hit, which moves no KV, takes
    /// 0.159 / 0.251 s (corpus #19) and 0.156 / 0.281 s (corpus #20) at 16 384 / 32 512
    /// tokens where the replay's 64-token extend takes a few ms. What in SGLang it is
    /// (prefix matching, index building, the attention backend's extend over a long
    /// prefix) is not known; it is a stated sensitivity (README, "Published results
    /// replayed"), not a fit per case.
    #[serde(skip_serializing_if = "is_zero")]
    pub hit_cost_per_cached_token: Duration,
    /// HiCache's per-step synchronisation: the time every scheduler iteration (each
    /// prefill forward, a chunk each, and each decode step) spends in the blocking
    /// all-reduces of `check_hicache_events` before its forward
    /// ([`crate::release::step_sync`]: SGLang 0.5.14–0.5.23 `managers/scheduler.py:
    /// get_next_batch_to_run` → `mem_cache/unified_radix_cache.py` /
    /// `hiradix_cache.py: check_hicache_events` → `_all_reduce_attn_groups`). Charged
    /// only with a host tier (`l2_pages` > 0). A scenario sets it to 0.5 ms (sglang PR
    /// <https://github.com/sgl-project/sglang/pull/39903>'s 4-rank gloo all-reduce) ×
    /// the release's all-reduces per iteration when HiCache is on and the attention-TP
    /// group has more than one rank, with a modelled clock (`table`, `roofline`);
    /// default 0 (not written into outputs). Needs a unit (`500us`).
    #[serde(
        skip_serializing_if = "is_zero",
        deserialize_with = "crate::units::duration_with_unit"
    )]
    pub hicache_step_sync: Duration,
    /// One blocking all-reduce of an L3 prefetch's admission poll or termination
    /// ([`crate::release::step_sync::prefetch_poll_all_reduces`],
    /// [`crate::release::step_sync::prefetch_finalise_all_reduces`]: how many each tree
    /// and policy make). The scheduler iteration that polls pays them before its forward:
    /// the prefill batch's, or the decode step's when no batch forms. A scenario sets it
    /// to 0.5 ms (the 4-rank gloo all-reduce of sglang PR
    /// <https://github.com/sgl-project/sglang/pull/39903>) with an L3 tier, a modelled
    /// clock and more than one rank in the attention-TP group; default 0 (not written into
    /// outputs). Needs a unit (`500us`).
    #[serde(
        skip_serializing_if = "is_zero",
        deserialize_with = "crate::units::duration_with_unit"
    )]
    pub prefetch_poll_sync: Duration,
    /// Speculative decoding from the launch command (`speculative`): in the clock of
    /// `table` and `roofline` when it is an MTP chain; not written while unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<Speculative>,
}

fn is_zero(d: &Duration) -> bool {
    d.0 == 0
}

impl Default for Compute {
    fn default() -> Self {
        Compute {
            source: ComputeSource::Fixed,
            chunked_prefill_size: 0,
            compute_scale: 1.0,
            hit_cost_per_cached_token: Duration(0),
            hicache_step_sync: Duration(0),
            prefetch_poll_sync: Duration(0),
            speculative: None,
        }
    }
}

impl Compute {
    /// The default (fixed speeds): not written into outputs, so figures made before
    /// this module keep their exact bytes.
    pub fn is_fixed(&self) -> bool {
        *self == Compute::default()
    }

    /// The hit cost of a batch whose requests have `cached_tokens` prompt tokens
    /// served from a cache (any tier), ns ([`Compute::hit_cost_per_cached_token`]).
    pub fn hit_cost_ns(&self, cached_tokens: u64) -> Nanos {
        self.hit_cost_per_cached_token
            .0
            .saturating_mul(cached_tokens)
    }
}

/// A resolved compute model.
#[derive(Debug, Clone)]
pub enum CostModel {
    Fixed {
        prefill_tokens_per_s: f64,
        decode_tokens_per_s: f64,
    },
    Table {
        table: &'static CostTable,
        chunk: u32,
        scale: f64,
        spec: Option<SpecStep>,
    },
    Roofline {
        roofline: Roofline,
        chunk: u32,
        scale: f64,
        spec: Option<SpecStep>,
    },
}

/// Why a scenario's `compute:` section gives no cost model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CostError {
    #[error("compute_scale must be from 1e-6 to 1e6 (a factor on the modelled compute times), got {}", crate::units::fmt_num(*.0))]
    BadScale(f64),
    #[error(transparent)]
    NoTable(#[from] table::NoCostTable),
    #[error(transparent)]
    Speculative(#[from] speculative::SpeculativeError),
}

impl CostModel {
    pub fn new(
        c: &Compute,
        prefill_tokens_per_s: f64,
        decode_tokens_per_s: f64,
    ) -> Result<CostModel, CostError> {
        if !(1e-6..=1e6).contains(&c.compute_scale) {
            return Err(CostError::BadScale(c.compute_scale));
        }
        if let Some(sp) = &c.speculative {
            sp.validate()?;
        }
        let spec = c.speculative.as_ref().and_then(Speculative::step);
        Ok(match &c.source {
            ComputeSource::Fixed => CostModel::Fixed {
                prefill_tokens_per_s,
                decode_tokens_per_s,
            },
            ComputeSource::Table {
                node,
                model,
                quant,
                tp,
            } => CostModel::Table {
                table: table::find(node, model, *quant, *tp)?,
                chunk: c.chunked_prefill_size,
                scale: c.compute_scale,
                spec,
            },
            ComputeSource::Roofline(r) => CostModel::Roofline {
                roofline: r.clone(),
                chunk: c.chunked_prefill_size,
                scale: c.compute_scale,
                spec,
            },
        })
    }

    /// The scheduler iterations a prefill batch of requests `(new tokens, cached
    /// prefix)` takes: one forward, or with chunking one per chunk of at most `chunk`
    /// new tokens ([`CostModel::prefill_ns`] fills them in batch order).
    pub fn prefill_forwards(&self, reqs: &[(u64, u64)]) -> u64 {
        match self {
            CostModel::Table { chunk, .. } | CostModel::Roofline { chunk, .. } if *chunk > 0 => {
                let t: u64 = reqs.iter().map(|r| r.0).sum();
                t.div_ceil(u64::from(*chunk)).max(1)
            }
            _ => 1,
        }
    }

    /// Whether load-back overlaps the forward layer by layer (table and roofline) or
    /// precedes it (fixed: the SGLang Simulator's clock, kept for existing figures).
    pub fn pipelined(&self) -> bool {
        !matches!(self, CostModel::Fixed { .. })
    }

    /// New tokens one prefill batch may admit: `--max-prefill-tokens`, and with
    /// chunking at most one chunk (`PrefillAdder`: `rem_chunk_tokens` is charged every
    /// admitted extend; SGLang 0.5.23 `managers/schedule_policy.py:
    /// PrefillAdder._update_prefill_budget`). The first request is always admitted.
    pub fn batch_token_budget(&self, max_prefill_tokens: u64) -> u64 {
        match self {
            CostModel::Table { chunk, .. } | CostModel::Roofline { chunk, .. } if *chunk > 0 => {
                max_prefill_tokens.min(u64::from(*chunk))
            }
            _ => max_prefill_tokens,
        }
    }

    /// A prefill batch of requests `(new tokens, cached prefix)`, ns. With chunking the
    /// batch runs as consecutive forwards of at most `chunk` new tokens, filled in
    /// batch order; a request cut by a chunk boundary continues in the next forward
    /// over a prefix that includes its computed part (`PrefillAdder`'s chunked request,
    /// run back to back here: other requests do not interleave between its chunks).
    pub fn prefill_ns(&self, reqs: &[(u64, u64)]) -> Nanos {
        self.prefill_forward_ends(reqs, None)
    }

    /// [`Self::prefill_ns`], with each forward's end from the batch's start (ns, the
    /// last the batch's forward) pushed onto `ends` when given: the chunk boundaries a
    /// PD prefill server sends each chunk's KV at (`send_kv_chunk`).
    pub fn prefill_forward_ends(
        &self,
        reqs: &[(u64, u64)],
        mut ends: Option<&mut Vec<Nanos>>,
    ) -> Nanos {
        let (chunk, scale) = match self {
            CostModel::Fixed {
                prefill_tokens_per_s,
                ..
            } => {
                let t: u64 = reqs.iter().map(|r| r.0).sum();
                let ns = (t as f64 / prefill_tokens_per_s * 1e9).round() as Nanos;
                if let Some(e) = ends {
                    e.push(ns);
                }
                return ns;
            }
            CostModel::Table {
                chunk, scale, spec, ..
            }
            | CostModel::Roofline {
                chunk, scale, spec, ..
            } => (*chunk, *scale * spec.map_or(1.0, |s| s.prefill_scale)),
        };
        let forward = |pieces: &[(u64, u64)]| match self {
            CostModel::Table { table, .. } => table.prefill_us(pieces),
            CostModel::Roofline { roofline, .. } => roofline.prefill_us(pieces),
            CostModel::Fixed { .. } => 0.0,
        };
        let ns = |us: f64| (us * scale * 1e3).round() as Nanos;
        let us = if chunk == 0 {
            forward(reqs)
        } else {
            let mut total = 0.0;
            let mut pieces: Vec<(u64, u64)> = Vec::new();
            let mut room = u64::from(chunk);
            for &(n, p) in reqs {
                let mut done = 0;
                while done < n {
                    let take = (n - done).min(room);
                    pieces.push((take, p + done));
                    done += take;
                    room -= take;
                    if room == 0 {
                        total += forward(&pieces);
                        if let Some(e) = ends.as_deref_mut() {
                            e.push(ns(total));
                        }
                        pieces.clear();
                        room = u64::from(chunk);
                    }
                }
            }
            if !pieces.is_empty() {
                total += forward(&pieces);
                if let Some(e) = ends.as_deref_mut() {
                    e.push(ns(total));
                }
            }
            total
        };
        if let Some(e) = ends
            && e.is_empty()
        {
            e.push(ns(us));
        }
        ns(us)
    }

    /// New tokens per forward when the scheduler chunks (`--chunked-prefill-size`), or 0.
    pub fn chunk_tokens(&self) -> u64 {
        match self {
            CostModel::Table { chunk, .. } | CostModel::Roofline { chunk, .. } => u64::from(*chunk),
            CostModel::Fixed { .. } => 0,
        }
    }

    /// Decode of `output` tokens for a request at context `ctx` while `batch` requests
    /// decode, ns: `output × step(batch, ctx + output/2)` (fixed: `output ÷ speed`).
    /// With a modelled speculative draft, `output ÷ accept_length` iterations of
    /// [`CostModel::decode_iteration_ns`]. Decode steps do not take the prefill's GPU
    /// time (not modelled: SGLang runs them on one timeline, prefill first).
    pub fn decode_ns(&self, output: u64, batch: u64, ctx: u64) -> Nanos {
        if let CostModel::Fixed {
            decode_tokens_per_s,
            ..
        } = self
        {
            return (output as f64 / decode_tokens_per_s * 1e9).round() as Nanos;
        }
        let iterations = output as f64 / self.tokens_per_iteration();
        (iterations * self.iteration_us(batch, ctx + output / 2) * 1e3).round() as Nanos
    }

    /// One decode iteration of `batch` requests at mean context `ctx`, ns: one step
    /// (fixed: one token at the decode speed), or with a modelled speculative draft the
    /// verify of `num_draft_tokens` per request with the draft's layers on top.
    pub fn decode_iteration_ns(&self, batch: u64, ctx: u64) -> Nanos {
        if let CostModel::Fixed {
            decode_tokens_per_s,
            ..
        } = self
        {
            return (1e9 / decode_tokens_per_s).round() as Nanos;
        }
        (self.iteration_us(batch, ctx) * 1e3).round() as Nanos
    }

    /// Tokens a request gains per decode iteration: 1, or a modelled draft's
    /// `accept_length`.
    pub fn tokens_per_iteration(&self) -> f64 {
        self.spec().map_or(1.0, |s| s.accept_length)
    }

    /// The modelled speculative draft's terms, if any (never with fixed speeds: they
    /// are end-to-end rates).
    pub fn spec(&self) -> Option<SpecStep> {
        match self {
            CostModel::Fixed { .. } => None,
            CostModel::Table { spec, .. } | CostModel::Roofline { spec, .. } => *spec,
        }
    }

    fn iteration_us(&self, batch: u64, ctx: u64) -> f64 {
        let (width, draft) = self
            .spec()
            .map_or((1, 1.0), |s| (s.verify_width, s.decode_scale));
        let b = batch.max(1) * width;
        match self {
            CostModel::Fixed { .. } => 0.0,
            CostModel::Table { table, scale, .. } if b > table.decode_max_batch() => {
                // A decode (or speculative verify) batch past the profiled grid, which
                // clamps: the largest profiled step, linear in the tokens
                // (throughput-bound there), never the clamp's flat step.
                let top = table.decode_max_batch().max(1);
                table.decode_step_us(top, ctx) * (b as f64 / top as f64) * scale * draft
            }
            CostModel::Table { table, scale, .. } => table.decode_step_us(b, ctx) * scale * draft,
            CostModel::Roofline {
                roofline, scale, ..
            } => roofline.decode_step_us(b, ctx) * scale * draft,
        }
    }

    /// One line naming the source, for outputs.
    pub fn describe(&self) -> String {
        match self {
            CostModel::Fixed {
                prefill_tokens_per_s,
                decode_tokens_per_s,
            } => format!(
                "fixed: prefill {prefill_tokens_per_s} tok/s, decode {decode_tokens_per_s} tok/s"
            ),
            CostModel::Table {
                table,
                chunk,
                scale,
                ..
            } => format!(
                "table {} {} {} tp{} from {}, chunk {chunk}, scale {scale}",
                table.node, table.model, table.quant, table.tp, table.source
            ),
            CostModel::Roofline {
                roofline,
                chunk,
                scale,
                ..
            } => format!(
                "roofline: MFU linear {} attention {}, peak {:.0} TFLOPS, chunk {chunk}, scale {scale}",
                roofline.mfu_linear,
                roofline.mfu_attn,
                roofline.linear_peak / 1e12
            ),
        }
    }
}

/// End of a forward that starts at `start` and whose attention at layer i waits for
/// layer i of the load-back, which occupies the H2D link from `load_start` for
/// `load_ns` in `layers` equal slices (`HiCacheController.start_loading` →
/// `L2TransferEngine.submit_host_to_device`, one `load_to_device_per_layer` per layer;
/// the forward's `layer_transfer_counter.wait_until(layer_id)`; SGLang 0.5.23):
/// `doneᵢ = max(doneᵢ₋₁, load_start + (i+1)·ℓ) + c`, `ℓ = load_ns / L`,
/// `c = forward_ns / L`.
pub fn layer_pipelined_end(
    start: Nanos,
    forward_ns: Nanos,
    load_start: Nanos,
    load_ns: Nanos,
    layers: u32,
) -> Nanos {
    if load_ns == 0 {
        return start + forward_ns;
    }
    let l = u64::from(layers.max(1));
    let mut done = start;
    for i in 0..l {
        // Integer slices: layer i's load ends at load_start + ⌈(i+1)·load/L⌉, its
        // compute takes the (i+1)-th share of the forward.
        let arrived = load_start + ((i + 1) * load_ns).div_ceil(l);
        let c = (i + 1) * forward_ns / l - i * forward_ns / l;
        done = done.max(arrived) + c;
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipeline_hides_a_short_load_and_exposes_a_long_one() {
        // 4 layers, forward 400 (c = 100). Load 200 (ℓ = 50): layer 0 waits until 50,
        // then 150, 250, 350, 450 → 450 = 400 + 50 (one slice exposed).
        assert_eq!(layer_pipelined_end(0, 400, 0, 200, 4), 450);
        // Load 800 (ℓ = 200): done = 300, 500, 700, 900 = L·ℓ + c.
        assert_eq!(layer_pipelined_end(0, 400, 0, 800, 4), 900);
        // The non-overlapped clock would give 600 and 1 200.
        assert_eq!(layer_pipelined_end(10, 400, 0, 0, 4), 410);
    }

    #[test]
    fn chunking_splits_a_long_prompt() {
        // Roofline-free check through the fixed-speed path is meaningless; use a table:
        // Llama-3.1-70B bf16 TP4 on GB300, one 20 000-token prompt, chunk 8 192 →
        // forwards (8192, 0), (8192, 8192), (3616, 16384).
        let t = table::find("gb300", "llama-3.1-70b", CheckpointQuant::Bf16, 4).unwrap();
        let m = CostModel::Table {
            table: t,
            chunk: 8192,
            scale: 1.0,
            spec: None,
        };
        let want = t.prefill_us(&[(8192, 0)])
            + t.prefill_us(&[(8192, 8192)])
            + t.prefill_us(&[(3616, 16384)]);
        assert_eq!(m.prefill_ns(&[(20_000, 0)]), (want * 1e3).round() as u64);
        // Two requests of 6 000 with chunk 8 192: (6000, 0) + (2192, 0) in one forward,
        // then (3808, 2192).
        let want = t.prefill_us(&[(6000, 0), (2192, 0)]) + t.prefill_us(&[(3808, 2192)]);
        assert_eq!(
            m.prefill_ns(&[(6000, 0), (6000, 0)]),
            (want * 1e3).round() as u64
        );
    }

    #[test]
    fn fixed_is_the_old_clock() {
        let m = CostModel::new(&Compute::default(), 20_000.0, 50.0).unwrap();
        // 10 000 tokens at 20 000 tok/s = 0.5 s; 100 tokens at 50 tok/s = 2 s.
        assert_eq!(m.prefill_ns(&[(4000, 9), (6000, 0)]), 500_000_000);
        assert_eq!(m.decode_ns(100, 7, 1000), 2_000_000_000);
        assert!(!m.pipelined());
    }
}
