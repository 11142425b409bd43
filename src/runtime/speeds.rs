//! The speeds and cost model a timed figure was made with. Every output that
//! carries a time (the replay's JSON and text, the sweep CSV's `cost_model` / `speeds`
//! columns, the captions of plots that show a TTFT) records them, so a TTFT is never
//! read without the compute model, link bandwidths and storage backend behind it.

use serde::Serialize;

use super::config::ReplayConfig;
use super::cost::{ComputeSource, Roofline};

/// What produced a timed replay's times: compute model and links.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Speeds {
    /// `fixed`, `table` or `roofline` (`runtime.replay.compute.source.kind`).
    pub cost_model: &'static str,
    /// `table`: the table's id, `node/model/quant/tpN`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// `roofline`: every parameter (peaks, efficiencies, bytes moved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roofline: Option<Roofline>,
    /// `fixed`: prefill speed, new tokens per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_tokens_per_s: Option<f64>,
    /// `fixed`: decode speed of one request, tokens per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_tokens_per_s: Option<f64>,
    /// `--chunked-prefill-size` the cost model cuts batches at (0 = none).
    pub chunked_prefill_size: u32,
    /// Multiplier on every compute time.
    pub compute_scale: f64,
    /// `compute.hit_cost_per_cached_token` in ns, when not 0 (an opt-in sensitivity,
    /// not an SGLang rule: `runtime::cost::Compute`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_cost_per_cached_token_ns: Option<u64>,
    /// `tokenize_per_token` in ns, when not 0: the TokenizerManager's encode of a text
    /// prompt before the scheduler (`runtime::frontend`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenize_per_token_ns: Option<u64>,
    /// `request_overhead` in ns, when not 0: every request's fixed way through the
    /// server outside its forwards (`runtime::frontend`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_overhead_ns: Option<u64>,
    /// HiCache's per-step synchronisation in ns per scheduler iteration, when charged
    /// (`compute.hicache_step_sync` with a host tier: `crate::release::step_sync`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hicache_step_sync_ns: Option<u64>,
    /// One admission-poll all-reduce of an L3 prefetch in ns, when charged
    /// (`compute.prefetch_poll_sync` with an L3 tier:
    /// `crate::release::step_sync::prefetch_poll_all_reduces`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefetch_poll_sync_ns: Option<u64>,
    /// How a host hit's load-back meets the forward: `layer_pipelined` (table,
    /// roofline) or `before_forward` (fixed: the SGLang Simulator's clock).
    pub load_back: &'static str,
    /// Where decode runs: `beside_prefill` or `interleaved` (`decode_timeline`).
    pub decode: &'static str,
    /// Link bandwidths, GB/s (10^9 B/s), as configured (before `bandwidth_efficiency`).
    pub h2d_gb_s: f64,
    /// The SM copy kernel of a `kernel`-backend load-back, when one is modelled
    /// (`load_back_kernel`: `register_2cta`, `tma_4cta`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_back_kernel: Option<&'static str>,
    pub d2h_gb_s: f64,
    /// Fraction of the H2D / D2H bandwidth reached.
    pub bandwidth_efficiency: f64,
    /// `runtime.replay.storage_backend` (a preset of `storage_backends.yaml`), if named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_backend: Option<crate::domain::StorageBackend>,
    pub storage_read_gb_s: f64,
    pub storage_write_gb_s: f64,
    /// Fixed cost of one storage operation (a prefetch or a write), µs.
    pub storage_latency_us: f64,
    /// Speculative decoding from the launch command, when set: what the clock did with
    /// it (`runtime::cost::speculative`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpecSpeeds>,
    /// DP-attention ranks (`dp_ranks` > 1): how the clock runs them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp_attention: Option<DpSpeeds>,
}

/// A timed replay's DP-attention ranks: their count and the clock's rule for them
/// (`runtime::timed::lockstep`), with what it leaves out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DpSpeeds {
    pub ranks: u32,
    /// `--load-balance-method`.
    pub balance: &'static str,
    pub clock: &'static str,
    /// What a `total_tokens` load counts, where it differs from SGLang's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<&'static str>,
    /// When a rank publishes its load (the load-reading methods).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publish: Option<&'static str>,
    /// With a speculative draft: prefills before decodes across the ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_sync: Option<&'static str>,
}

/// [`DpSpeeds::load`] under `total_tokens`.
pub const DP_TOKEN_LOAD: &str = "a rank's load in tokens is its running and waiting prompts: SGLang's num_total_tokens counts the KV pool's used tokens (a shared prefix once and the decoded tokens too) plus the waiting prompts";

/// [`DpSpeeds::publish`] under a load-reading method.
pub const DP_PUBLISH: &str = "a rank publishes its load after each prefill and every 15 decode iterations (decode_timeline interleaved) and with nothing to run at once when idle or every 50 ms; with decode beside the prefill its decode iterations are not simulated: the 50 ms refresh stands in for them";

/// [`DpSpeeds::spec_sync`] with decode on the GPU's timeline (no commas: CSV cell).
pub const DP_SPEC_SYNC: &str = "with a speculative draft a step runs prefills or decodes and never both: while any rank prefills the others' decodes wait (get_next_batch_to_run syncs the new prefill batch first)";

/// [`DpSpeeds::spec_sync`] with decode beside the prefill (no commas: CSV cell).
pub const DP_SPEC_SYNC_BESIDE: &str = "with a speculative draft SGLang's decodes wait while any rank prefills; with decode beside the prefill the clock does not hold them: decode_timeline interleaved models it";

/// [`DpSpeeds::clock`] (no commas: it is part of a CSV cell).
pub const DP_LOCKSTEP: &str = "lockstep: every forward ends when the slowest rank's does (prepare_mlp_sync_batch; idle ranks join); a rank's forward is costed on its own batch: the MoE layers' work on the other ranks' gathered tokens is not charged";

/// A timed replay's speculative decoding: the resolved flags, the acceptance used and
/// its source, or why the clock runs without it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecSpeeds {
    pub algorithm: String,
    pub num_steps: u32,
    pub eagle_topk: u32,
    pub num_draft_tokens: u32,
    pub draft_layers: u32,
    /// Whether decode iterations verify drafts in the clock.
    pub in_clock: bool,
    /// Tokens a request gains per decode iteration (in the clock only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_length: Option<f64>,
    /// Where `accept_length` comes from (in the clock), or why it is not in the clock.
    pub source: String,
}

impl SpecSpeeds {
    fn of(sp: &super::cost::Speculative, fixed: bool) -> SpecSpeeds {
        let why_not = if fixed {
            Some("fixed speeds are end-to-end rates: decode_tokens_per_s is taken as the speed with speculation".to_string())
        } else {
            sp.not_modelled()
        };
        SpecSpeeds {
            algorithm: sp.algorithm.clone(),
            num_steps: sp.num_steps,
            eagle_topk: sp.eagle_topk,
            num_draft_tokens: sp.num_draft_tokens,
            draft_layers: sp.draft_layers,
            in_clock: why_not.is_none(),
            accept_length: why_not.is_none().then(|| sp.accept_length()),
            source: why_not.unwrap_or_else(|| sp.accept_source().to_string()),
        }
    }

    /// `speculative EAGLE 3 steps x 1 MTP layer(s) / 4 draft tokens / accept length 2.105
    /// (source)`, or why it is not in the clock (no commas: it goes into the CSV's
    /// `speeds` cell).
    pub fn text(&self) -> String {
        match self.accept_length {
            Some(a) => format!(
                "speculative {} {} steps x {} MTP layer(s) / {} draft tokens / accept length {} ({})",
                self.algorithm,
                self.num_steps,
                self.draft_layers,
                self.num_draft_tokens,
                a,
                self.source
            ),
            None => format!(
                "speculative {} not in the clock ({})",
                self.algorithm, self.source
            ),
        }
    }
}

impl Speeds {
    /// The speeds of `cfg` (whatever its `timing`; callers record them where a time is
    /// written).
    pub fn of(cfg: &ReplayConfig) -> Speeds {
        let c = &cfg.scheduler.compute;
        let (cost_model, table, roofline) = match &c.source {
            ComputeSource::Fixed => ("fixed", None, None),
            ComputeSource::Table {
                node,
                model,
                quant,
                tp,
            } => (
                "table",
                Some(format!("{node}/{model}/{quant}/tp{tp}")),
                None,
            ),
            ComputeSource::Roofline(r) => ("roofline", None, Some(r.clone())),
        };
        let fixed = cost_model == "fixed";
        let gb = |b: f64| b / 1e9;
        Speeds {
            cost_model,
            table,
            roofline,
            prefill_tokens_per_s: fixed.then_some(cfg.scheduler.prefill_tokens_per_s),
            decode_tokens_per_s: fixed.then_some(cfg.scheduler.decode_tokens_per_s),
            chunked_prefill_size: c.chunked_prefill_size,
            compute_scale: c.compute_scale,
            hit_cost_per_cached_token_ns: (c.hit_cost_per_cached_token.0 > 0)
                .then_some(c.hit_cost_per_cached_token.0),
            tokenize_per_token_ns: cfg
                .frontend
                .tokenizes()
                .then_some(cfg.frontend.tokenize_per_token.0),
            request_overhead_ns: Some(cfg.frontend.request_overhead.0).filter(|&ns| ns > 0),
            hicache_step_sync_ns: Some(cfg.hicache_step_sync_ns()).filter(|&ns| ns > 0),
            prefetch_poll_sync_ns: Some(cfg.prefetch_poll_sync_ns()).filter(|&ns| ns > 0),
            load_back: if fixed {
                "before_forward"
            } else if cfg.serializes_load_back() {
                // The what-if of sglang PR 39395: synchronous in admission.
                "serialized_before_forward"
            } else {
                "layer_pipelined"
            },
            decode: match cfg.scheduler.decode_timeline {
                super::config::DecodeTimeline::BesidePrefill => "beside_prefill",
                super::config::DecodeTimeline::Interleaved => "interleaved",
            },
            h2d_gb_s: gb(cfg.links.h2d_bandwidth.0),
            load_back_kernel: cfg.links.load_back_kernel.map(|k| k.id()),
            d2h_gb_s: gb(cfg.links.d2h_bandwidth.0),
            bandwidth_efficiency: cfg.links.bandwidth_efficiency,
            storage_backend: cfg.links.storage_backend,
            storage_read_gb_s: gb(cfg.links.storage_read_bandwidth.0),
            storage_write_gb_s: gb(cfg.links.storage_write_bandwidth.0),
            storage_latency_us: cfg.links.storage_latency.0 as f64 / 1e3,
            speculative: c.speculative.as_ref().map(|sp| SpecSpeeds::of(sp, fixed)),
            dp_attention: (cfg.capacities.dp_ranks > 1).then_some(DpSpeeds {
                ranks: cfg.capacities.dp_ranks,
                balance: cfg.capacities.dp_balance.id(),
                clock: DP_LOCKSTEP,
                load: (cfg.capacities.dp_balance == crate::runtime::dp::DpBalance::TotalTokens)
                    .then_some(DP_TOKEN_LOAD),
                // Only the load-reading methods read what the ranks publish.
                publish: matches!(
                    cfg.capacities.dp_balance,
                    crate::runtime::dp::DpBalance::TotalRequests
                        | crate::runtime::dp::DpBalance::TotalTokens
                )
                .then_some(DP_PUBLISH),
                spec_sync: c
                    .speculative
                    .as_ref()
                    .map(|_| match cfg.scheduler.decode_timeline {
                        super::config::DecodeTimeline::Interleaved => DP_SPEC_SYNC,
                        super::config::DecodeTimeline::BesidePrefill => DP_SPEC_SYNC_BESIDE,
                    }),
            }),
        }
    }

    /// `; hit cost N ns per cached token` when the sensitivity is on, `; tokenize N
    /// ns per prompt token` when requests arrive as text, `; request overhead N ns per
    /// request` when charged, `; HiCache step sync N ns
    /// per scheduler iteration` and `; prefetch poll N ns per all-reduce` when charged,
    /// else nothing (outputs made without them keep their bytes).
    fn opt_in_text(&self) -> String {
        let hit = self
            .hit_cost_per_cached_token_ns
            .map(|ns| format!("; hit cost {ns} ns per cached token"))
            .unwrap_or_default();
        let tok = self
            .tokenize_per_token_ns
            .map(|ns| format!("; tokenize {ns} ns per prompt token"))
            .unwrap_or_default();
        let fixed = self
            .request_overhead_ns
            .map(|ns| format!("; request overhead {ns} ns per request"))
            .unwrap_or_default();
        let sync = self
            .hicache_step_sync_ns
            .map(|ns| format!("; HiCache step sync {ns} ns per scheduler iteration"))
            .unwrap_or_default();
        let poll = self
            .prefetch_poll_sync_ns
            .map(|ns| format!("; prefetch poll {ns} ns per all-reduce"))
            .unwrap_or_default();
        let spec = self
            .speculative
            .as_ref()
            .map(|sp| format!("; {}", sp.text()))
            .unwrap_or_default();
        let dp = self
            .dp_attention
            .as_ref()
            .map(|d| {
                let load = [d.load, d.publish, d.spec_sync]
                    .iter()
                    .flatten()
                    .map(|l| format!("; {l}"))
                    .collect::<String>();
                format!(
                    "; DP attention {} ranks {} {}{load}",
                    d.ranks, d.balance, d.clock
                )
            })
            .unwrap_or_default();
        hit + &tok + &fixed + &sync + &poll + &spec + &dp
    }

    /// A short line for plot captions: the compute model, then the links.
    pub fn short(&self) -> String {
        let compute = match (self.cost_model, &self.table, &self.roofline) {
            ("table", Some(t), _) => format!("table {t}"),
            ("roofline", _, Some(r)) => format!(
                "roofline MFU {}/{} of {:.0}/{:.0} TFLOPS",
                r.mfu_linear,
                r.mfu_attn,
                r.linear_peak / 1e12,
                r.attn_peak / 1e12
            ),
            _ => format!(
                "fixed prefill {} / decode {} tok/s",
                self.prefill_tokens_per_s.unwrap_or_default(),
                self.decode_tokens_per_s.unwrap_or_default()
            ),
        };
        let backend = self
            .storage_backend
            .map(|b| format!(" {b}"))
            .unwrap_or_default();
        format!(
            "{compute}; chunk {}{}{}; H2D {} GB/s; storage{backend} {}/{} GB/s",
            self.chunked_prefill_size,
            self.opt_in_text(),
            if self.decode == "interleaved" {
                "; decode interleaved"
            } else {
                ""
            },
            self.h2d_gb_s,
            self.storage_read_gb_s,
            self.storage_write_gb_s
        )
    }

    /// One line for text outputs and the CSV's `speeds` cell (`;`-separated, no commas
    /// so a spreadsheet shows it whole either way).
    pub fn line(&self) -> String {
        let compute = match (self.cost_model, &self.table, &self.roofline) {
            ("table", Some(t), _) => format!("table {t}"),
            ("roofline", _, Some(r)) => format!(
                "roofline: linear {:.0} TFLOPS x MFU {} / attention {:.0} TFLOPS x MFU {}; HBM {:.0} GB/s x {}; interconnect {:.0} GB/s",
                r.linear_peak / 1e12,
                r.mfu_linear,
                r.attn_peak / 1e12,
                r.mfu_attn,
                r.hbm_bandwidth / 1e9,
                r.hbm_util,
                r.interconnect / 1e9
            ),
            _ => format!(
                "fixed: prefill {} tok/s; decode {} tok/s",
                self.prefill_tokens_per_s.unwrap_or_default(),
                self.decode_tokens_per_s.unwrap_or_default()
            ),
        };
        let backend = self
            .storage_backend
            .map(|b| format!(" ({b})"))
            .unwrap_or_default();
        // The fixed speeds cut no batch (the SGLang Simulator's clock): a chunk the
        // server sets is named as unused there, not as if it shaped the figures.
        let chunk = match self.cost_model {
            "table" | "roofline" => self.chunked_prefill_size.to_string(),
            _ if self.chunked_prefill_size == 0 => "0".to_string(),
            _ => format!("{} (unused by fixed speeds)", self.chunked_prefill_size),
        };
        format!(
            "{compute}; chunk {chunk}; scale {}{}; load-back {}; decode {}; H2D {} GB/s{}; D2H {} GB/s; efficiency {}; storage{backend} read {} GB/s write {} GB/s latency {} us",
            self.compute_scale,
            self.opt_in_text(),
            self.load_back,
            self.decode,
            self.h2d_gb_s,
            self.load_back_kernel
                .map(|k| format!(" (kernel {k})"))
                .unwrap_or_default(),
            self.d2h_gb_s,
            self.bandwidth_efficiency,
            self.storage_read_gb_s,
            self.storage_write_gb_s,
            self.storage_latency_us
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_records_the_fixed_speeds() {
        let s = Speeds::of(&ReplayConfig::default());
        assert_eq!(s.cost_model, "fixed");
        assert_eq!(s.prefill_tokens_per_s, Some(20_000.0));
        assert_eq!(
            s.line(),
            "fixed: prefill 20000 tok/s; decode 50 tok/s; chunk 0; scale 1; load-back before_forward; decode beside_prefill; H2D 55 GB/s; D2H 55 GB/s; efficiency 0.85; storage read 10 GB/s write 5 GB/s latency 0 us"
        );
        assert_eq!(s.hit_cost_per_cached_token_ns, None);
    }

    /// A scenario's chunk under the fixed speeds (which cut no batch) is named unused.
    #[test]
    fn a_chunk_under_fixed_speeds_is_named_unused() {
        let mut c = ReplayConfig::default();
        c.scheduler.compute.chunked_prefill_size = 16384;
        assert!(
            Speeds::of(&c)
                .line()
                .contains("; chunk 16384 (unused by fixed speeds); scale 1;")
        );
    }

    #[test]
    fn a_hit_cost_is_recorded_when_set() {
        let mut c = ReplayConfig::default();
        c.scheduler.compute.hit_cost_per_cached_token = crate::units::Duration(8_000);
        let s = Speeds::of(&c);
        assert_eq!(s.hit_cost_per_cached_token_ns, Some(8_000));
        assert!(
            s.line()
                .starts_with("fixed: prefill 20000 tok/s; decode 50 tok/s; chunk 0; scale 1; hit cost 8000 ns per cached token; load-back"),
            "{}",
            s.line()
        );
        assert!(
            s.short()
                .contains("chunk 0; hit cost 8000 ns per cached token; H2D")
        );
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["hit_cost_per_cached_token_ns"], 8_000);
    }

    #[test]
    fn a_tokenizer_cost_is_recorded_when_set() {
        assert_eq!(
            Speeds::of(&ReplayConfig::default()).tokenize_per_token_ns,
            None
        );
        let mut c = ReplayConfig::default();
        c.frontend.tokenize_per_token = crate::units::Duration(7_000);
        let s = Speeds::of(&c);
        assert!(
            s.line()
                .contains("scale 1; tokenize 7000 ns per prompt token; load-back"),
            "{}",
            s.line()
        );
        assert!(
            s.short()
                .contains("chunk 0; tokenize 7000 ns per prompt token; H2D")
        );
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["tokenize_per_token_ns"], 7_000);
    }
}
