//! Prefill-decode disaggregation (`--disaggregation-mode prefill|decode`): the
//! scenario's `runtime.pd:` section and the figures of its replay
//! (`runtime::timed::pd`).
//!
//! The scenario's server is the prefill server (its pools, tree and HiCache, one or
//! more of them behind the router of `runtime.router`); the decode servers are the same
//! launch in decode mode, sized by the start-up half as SGLang sizes a decode server
//! (`release::PdRoles`), their radix cache off as SGLang's default leaves it.

use serde::{Deserialize, Serialize};

use crate::units::{Bandwidth, Duration};

/// `disaggregation/decode.py: CLIP_MAX_NEW_TOKEN` (`SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION`,
/// 4096, 0.5.14–0.5.23): the `max_new_tokens` a decode admission reserves at most.
pub const CLIP_MAX_NEW_TOKENS: u64 = 4096;

/// One rank's KV transfer bandwidth when the scenario does not say: the Mooncake
/// Transfer Engine's published 190 GB/s per node over 8 × 400 Gbps RoCE
/// (kvcache-ai/Mooncake `doc/en/transfer-engine.md`), per rank of eight. SGLang's code
/// has no figure (it measures `sglang:kv_transfer_speed_gb_s` at run time).
pub const MOONCAKE_RANK_BANDWIDTH: f64 = 23.75e9;

/// The scenario's `runtime.pd:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PdSpec {
    /// Decode servers; each request goes to one of them in turn (the router's
    /// `--decode-policy round_robin`).
    pub decode_engines: u32,
    /// The bandwidth one rank's KV transfer reaches (each TP rank sends its own shard
    /// on its own NIC); default [`MOONCAKE_RANK_BANDWIDTH`].
    pub transfer_bandwidth: Bandwidth,
    /// A fixed cost per request's transfer (handshake, the status message); default 0.
    pub transfer_latency: Duration,
    /// `--num-reserved-decode-tokens` (512, every modelled release): the decode tokens a
    /// decode server reserves per active request when it admits another.
    pub num_reserved_decode_tokens: u64,
    /// The decode server's `--max-running-requests` (the server's: each DP-attention rank
    /// takes its share); unset: the scenario's, else SGLang's estimate
    /// ([`DecodeServer`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_max_running_requests: Option<u32>,
    /// The decode servers' radix cache (`--disaggregation-decode-enable-radix-cache` on
    /// their launch; also on when the scenario's launch carries the flag, a command
    /// shared by both roles): each decode server keeps the prompts it finished in a
    /// tree, and a request whose prefix it holds has only the rest of its KV sent
    /// (`timed::decode_cache`). Off by default, as in SGLang.
    pub decode_radix_cache: bool,
    /// HiCache on the decode servers (`Scheduler.enable_decode_hicache`: the radix cache
    /// and `--enable-hierarchical-cache` on their launch, 0.5.14–0.5.23): a host tier
    /// behind each decode rank's tree, the host pool the decode server's start-up
    /// makes, whose hits join the prefix the prefill server does not send and are
    /// loaded back before the request runs (`timed::decode_cache`). Unset: as the
    /// scenario's launch (the decode servers' too) has it, with the radix cache on;
    /// `false`: a decode launch without HiCache. Its L3 is not modelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_hicache: Option<bool>,
    /// Whether the decode servers run HiCache, resolved (set where the scenario is read).
    #[serde(skip)]
    pub decode_hicache_on: bool,
    /// The decode server's host pool, tokens per rank (set where the scenario is read).
    #[serde(skip)]
    pub decode_host_tokens: u64,
    /// The decode server as its start-up sizes it (set where the scenario is read, not a
    /// key of the section).
    #[serde(skip)]
    pub decode: Option<DecodeServer>,
    /// The scenario's `seed` (set where the scenario is read): the stream the router's
    /// bootstrap rooms come from.
    #[serde(skip)]
    pub seed: u64,
    /// Bytes per token, per rank, a transfer sends for every prompt token (set from the
    /// start-up; 0 with `swa_bytes_per_token` 0: the replay's bytes per token).
    #[serde(skip)]
    pub full_bytes_per_token: u64,
    /// A sliding-window model's SWA pools, bytes per token (set from the start-up): a
    /// transfer sends only the window's pages of them.
    #[serde(skip)]
    pub swa_bytes_per_token: u64,
    /// The model's sliding window, tokens (0: the replay's SWA pool's, or none).
    #[serde(skip)]
    pub window: u64,
    /// Request-scoped state a transfer sends (DeepSeek-V4's C128 compress state) unless
    /// the prompt is a whole number of `state_period` tokens.
    #[serde(skip)]
    pub state_bytes_per_request: u64,
    #[serde(skip)]
    pub state_period: u64,
}

impl Default for PdSpec {
    fn default() -> Self {
        PdSpec {
            decode_engines: 1,
            transfer_bandwidth: Bandwidth(MOONCAKE_RANK_BANDWIDTH),
            transfer_latency: Duration(0),
            num_reserved_decode_tokens: 512,
            decode_max_running_requests: None,
            decode_radix_cache: false,
            decode_hicache: None,
            decode_hicache_on: false,
            decode_host_tokens: 0,
            decode: None,
            seed: 0,
            full_bytes_per_token: 0,
            swa_bytes_per_token: 0,
            window: 0,
            state_bytes_per_request: 0,
            state_period: 0,
        }
    }
}

/// The most decode servers a replay takes.
pub const MAX_DECODE_ENGINES: u32 = 256;

impl PdSpec {
    /// The first key with a value the replay does not take: its name and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(1..=MAX_DECODE_ENGINES).contains(&self.decode_engines) {
            return Err((
                "decode_engines",
                format!(
                    "{}: expected 1 to {MAX_DECODE_ENGINES} decode servers",
                    self.decode_engines
                ),
            ));
        }
        if self.decode_max_running_requests == Some(0) {
            return Err((
                "decode_max_running_requests",
                "0: a decode server runs at least one request".into(),
            ));
        }
        Ok(())
    }
}

/// One decode server as the replay runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DecodeServer {
    /// Its KV pool, tokens per rank (`max_total_num_tokens`).
    pub pool_tokens: u64,
    pub page_size: u32,
    /// `max_running_requests` per worker (`kv_cache_configurator.py:
    /// resolve_max_num_reqs`).
    pub max_running_requests: u32,
    /// Its request slots: `max_running_requests` + `--disaggregation-decode-extra-slots`
    /// (`pool_configurator.py: _get_num_req_slots`; the extra slots default to twice a
    /// per-worker batch of 32 or fewer, else 0: `pd_disaggregation_hook.py`).
    pub req_slots: u32,
}

impl DecodeServer {
    /// A decode server of `pool_tokens`, with the `--max-running-requests` given
    /// (`requested`, per worker) or SGLang's estimate from the model's context length
    /// (`resolve_max_num_reqs`, 0.5.23: min(max(min(pool / context_len × 512, 4096),
    /// 2048), pool / 2)); without a context length the estimate's floor, 2048, is taken
    /// ([`DECODE_MAX_RUNNING_ASSUMED`] says so in the status).
    pub fn new(
        pool_tokens: u64,
        page_size: u32,
        requested: Option<u32>,
        context_len: Option<u64>,
    ) -> Self {
        let half = u32::try_from(pool_tokens / 2).unwrap_or(u32::MAX).max(1);
        let estimated = context_len.filter(|&c| c > 0).map_or(2048, |c| {
            ((pool_tokens as f64 / c as f64 * 512.0) as u64).clamp(2048, 4096) as u32
        });
        let max_running_requests = requested.unwrap_or(estimated).min(half);
        let extra = match requested {
            Some(m) if m <= 32 => m * 2,
            _ => 0,
        };
        DecodeServer {
            pool_tokens,
            page_size,
            max_running_requests,
            req_slots: max_running_requests + extra,
        }
    }
}

/// `utils/hf_transformers/common.py: get_context_length` (0.5.14–0.5.23): the first of
/// `max_sequence_length`, `seq_length`, `max_seq_len`, `model_max_length`,
/// `max_position_embeddings` in the (text) config, times the rope scaling factor unless
/// the scaling has `original_max_position_embeddings` or is `llama3`; 2048 without any.
pub fn hf_context_length(config: &serde_json::Value) -> u64 {
    let text = config.get("text_config").unwrap_or(config);
    let factor = match text.get("rope_scaling").filter(|r| r.is_object()) {
        Some(r)
            if r.get("original_max_position_embeddings").is_none()
                && r.get("rope_type").and_then(|t| t.as_str()) != Some("llama3") =>
        {
            r.get("factor")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(1.0)
        }
        _ => 1.0,
    };
    [
        "max_sequence_length",
        "seq_length",
        "max_seq_len",
        "model_max_length",
        "max_position_embeddings",
    ]
    .iter()
    .find_map(|k| text.get(*k).and_then(serde_json::Value::as_f64))
    .map_or(2048, |v| (factor * v) as u64)
}

/// Why a decode server's `max_running_requests` may not be SGLang's when no flag sets it.
pub const DECODE_MAX_RUNNING_ASSUMED: &str = "the decode server's max_running_requests is SGLang's estimate's floor (2048, or half the pool): `resolve_max_num_reqs` reads the model's context length, which is not known for this model (set runtime.pd.decode_max_running_requests)";

/// What the PD replay leaves out: every answer of it is `unverified`, naming these.
pub const PD_UNMODELLED: &str = "PD replay: the KV transfer runs at runtime.pd.transfer_bandwidth per rank (default: the Mooncake Transfer Engine's published 190 GB/s per 8-GPU node) plus runtime.pd.transfer_latency; a decode server retracts no request (its admission reserves 512 tokens per active request; decode_overflow_steps counts the steps whose KV outgrew the pool) and its overlap scheduler is not modelled (a request joining a busy decode server makes its decode tokens one step later in SGLang: TPOT slightly higher); the prefill server's L3 prefetch starts when the decode server has preallocated (SGLang issues it at the request's arrival) and its metadata buffers (2 x max_running_requests) are not counted; with DP attention a prefill server's controller picks a request's rank when the request leaves the bootstrap queue (SGLang's, when its TokenizerManager sends the request on: earlier, the same rank under follow_bootstrap_room; under another method SGLang's decode server also waits for that receipt to learn the rank, `decode.py: _resolve_prefill_dp_rank`)";

/// What a PD replay of a sliding-window model leaves out.
pub const PD_SWA_UNMODELLED: &str = "PD replay of a sliding-window model: the decode server's admission counts its full pool only (SGLang also reserves its SWA pool's tail, `_swa_tail_allocatable_token_budget`); DeepSeek-V4's transfer is its compressed pages per token, the window's SWA pages and the C128 state per request under SGLang's default schedule (the draft's pages left out)";

/// What a PD replay with DP attention leaves out of its decode servers.
pub const PD_DECODE_DP_UNMODELLED: &str = "PD replay with DP attention: a decode server's DP ranks step independently (SGLang syncs their forwards, prepare_mlp_sync_batch), a rank's decode step is costed on its own batch, and its ranks are dealt round-robin (a decode server's auto; another --load-balance-method is not applied there); a prefill rank chosen by load is chosen at the preallocation, not at the arrival, and its registration with the bootstrap server is not timed";

/// What a PD replay with the decode servers' radix cache leaves out.
pub const PD_DECODE_RADIX_UNMODELLED: &str = "PD replay with the decode servers' radix cache: a request's prompt pages go into its decode server's tree when it joins the running batch, its output's never (SGLang's `release_kv_cache` inserts them at the finish; a trace does not know the outputs' page hashes), so a next turn's match stops where the last prompt ended";

/// What the PD replay leaves out of a decode server's HiCache (`runtime.pd.decode_hicache`).
pub const PD_DECODE_HICACHE_UNMODELLED: &str = "PD replay with HiCache on the decode servers: their host tier is modelled (the host hits promised to the prefill server and loaded back before the request runs, the backups on the write policy), their L3 is not (SGLang queries the decode server's storage too and prefetches the hit into decode_prefix_len; the replay's decode tree has no storage); a restore SGLang fails (no device room, or a host span under load_back_threshold) has its pages sent by the prefill server here (`decode_restore_failed` counts them); a prompt's pages are counted once per request (0.5.14–0.5.21 count them again at the finish, which under write_through_selective backs a single request's prompt up)";

/// The figures of a PD replay (`metrics.pd`): where a request's time to first token
/// goes, and what the decode servers held.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PdFigures {
    pub prefill_engines: u32,
    pub decode_engines: u32,
    /// DP-attention ranks of each server (each decode rank its own pool and queue).
    pub dp_ranks: u32,
    /// One decode rank's pool and limits.
    pub decode: Option<DecodeServer>,
    /// Bytes/s one rank's transfer reaches.
    pub transfer_bandwidth: f64,
    /// Means over the measured requests, seconds: from the client's send to the decode
    /// server's preallocation (`pop_preallocated`: the decode server's TokenizerManager
    /// — its encode and fixed way in — and its preallocation queue) before the prefill
    /// server queues it; in the prefill server (its queue and forward, and its own
    /// TokenizerManager's when that delivers the request after the preallocation); the KV transfer (its wait for the link
    /// included); from the transfer's end to the first token's stream (the decode
    /// server's loop iteration).
    pub prealloc_wait_mean_s: f64,
    pub prefill_mean_s: f64,
    pub transfer_mean_s: f64,
    pub first_token_wait_mean_s: f64,
    /// The prefill servers' own TTFT (from the later of the preallocation and the
    /// prefill server's receipt to the prefill's end), p50.
    pub prefill_ttft_p50_s: Option<f64>,
    /// Decode steps run, their mean batch, the most KV tokens a decode server held at
    /// once (per rank) and the steps whose KV outgrew the pool (SGLang would retract).
    pub decode_steps: u64,
    pub decode_batch_mean: f64,
    pub decode_peak_tokens: u64,
    pub decode_overflow_steps: u64,
    /// Requests each decode server took.
    pub decode_assigned: Vec<u64>,
    /// The decode servers keep a radix cache (`runtime.pd.decode_radix_cache`).
    pub decode_radix_cache: bool,
    /// The measured requests' prompt tokens, and those of them their decode server
    /// already held (`decode_prefix_len`, not sent).
    pub decode_prompt_tokens: u64,
    pub decode_prefix_tokens: u64,
    /// The decode servers run HiCache behind their tree (`runtime.pd.decode_hicache`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub decode_hicache: bool,
    /// Of `decode_prefix_tokens`, those restored from the decode servers' host tier.
    #[serde(skip_serializing_if = "is_zero")]
    pub decode_host_prefix_tokens: u64,
    /// Restores SGLang fails (no device room, or a host span under
    /// `load_back_threshold`: it aborts the request; the replay has the prefill server
    /// send those pages).
    #[serde(skip_serializing_if = "is_zero")]
    pub decode_restore_failed: u64,
    /// Pages the decode servers backed up to their host tier.
    #[serde(skip_serializing_if = "is_zero")]
    pub decode_backup_pages: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}
