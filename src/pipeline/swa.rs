//! The SWA tree in a scenario's replay: which pool and window a model gives it, where
//! it becomes the replay's device tier, and what it still leaves out.

use serde_json::{Map, Value};

use super::ReplayConfigError;
use crate::runtime::ReplayConfig;
use crate::scenario::Scenario;
use crate::startup::StartupPlan;

/// A model's SWA pool for the SWA tree (`crate::cache::SwaRadixTree`):
/// `SWATokenToKVPoolAllocator`'s second pool, the start-up's `swa_max_total_num_tokens`
/// in pages, and the tree's window.
///
/// - A sliding-window model: `None` where the page size divides `window − 1`: most
///   architectures' `get_attention_sliding_window_size` return `sliding_window − 1`
///   (`models/gpt_oss.py`, `gemma3_causal.py`, …, 0.5.23), which moves the tree's window
///   comparisons only then.
/// - DeepSeek-V4 (`required`): its paged SWA pool is the tree's SWA component
///   (`kv_cache_builder.py: build_kv_cache`, `is_hybrid_swa` while the pool
///   `needs_paged_swa_allocator`, the default without encoder replay; 0.5.23), window the
///   config's `sliding_window` as is (`model_config.py: _get_sliding_window_size`; the
///   model defines no `get_attention_sliding_window_size`). Its C4 / C128 compressed
///   states are per request, not in the tree.
pub fn swa_pool(s: &Scenario, plan: &StartupPlan) -> Option<SwaPlan> {
    let page = plan.page_size.max(1);
    let tokens = plan.device_swa_tokens?;
    let (window, required) = match s.model.attention {
        crate::model::Attention::GqaSwa { window, .. } => {
            if window <= 1 || (u64::from(window) - 1) % page == 0 {
                return None;
            }
            (window, false)
        }
        crate::model::Attention::Dsv4 { sliding_window, .. } => (sliding_window, true),
        _ => return None,
    };
    Some(SwaPlan {
        pool: crate::runtime::SwaPool {
            pages: tokens / page,
            window,
            // A PD prefill server's requests end at their prefill (`max_new_tokens`
            // forced to 1, `PrefillBootstrapQueue._process_req`; the prompt inserted,
            // `checkpoint_disagg_prefill`): no decode, no output in the tree.
            decode: !s.server.disaggregation_mode.is_prefill(),
        },
        plan_l1: plan.device_tokens / page,
        required,
    })
}

/// The SWA tree a scenario's replay runs when it can ([`adopt_swa_tree`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwaPlan {
    /// The start-up's SWA pool, the window, requests decoding their output.
    pub pool: crate::runtime::SwaPool,
    /// The start-up's full pool in pages: a replay with another `l1_pages` scales the
    /// SWA pool with it, as `--swa-full-tokens-ratio` sizes one from the other.
    pub plan_l1: u64,
    /// DeepSeek-V4: no other tree stands for it, so a replay the SWA tree cannot run is
    /// refused, never answered by the full tree.
    pub required: bool,
}

/// `cfg` with the SWA tree as its device tier (`capacities.swa`, the scheduler's call
/// pattern it is checked under), where the SWA tree runs: SGLang 0.5.23's tree, the
/// device tier alone, LRU, timing off or on (`ReplayConfig::validate`); with DP ranks
/// or engines behind a router, one such tree per rank or engine, each with the
/// start-up's per-rank pools. The answer is then SGLang's tree's, and the SWA component
/// is no longer a reason for `unverified` (timed, the decode's KV taken at once is:
/// `pipeline::replay_config_unverified`). Elsewhere `cfg` unchanged (`false`), or for
/// DeepSeek-V4 a refusal naming what stands in the way. `overrides` naming `swa` or
/// `call_pattern` keep the scenario's own choice.
pub fn adopt_swa_tree(
    cfg: ReplayConfig,
    swa: &SwaPlan,
    overrides: &Map<String, Value>,
) -> Result<(ReplayConfig, bool), ReplayConfigError> {
    if overrides.contains_key("swa") {
        let on = cfg.capacities.swa.is_some();
        return Ok((cfg, on));
    }
    let mut pool = swa.pool;
    if cfg.capacities.l1_pages != swa.plan_l1 && swa.plan_l1 > 0 {
        pool.pages = (u128::from(pool.pages) * u128::from(cfg.capacities.l1_pages)
            / u128::from(swa.plan_l1)) as u64;
    }
    if swa.required && pool.pages == 0 {
        return Err(ReplayConfigError::Dsv4NotModelled(
            "the start-up built no SWA pool (no rank started: see `startup`)".into(),
        ));
    }
    let mut c = cfg.clone();
    c.capacities.swa = Some(pool);
    if !overrides.contains_key("call_pattern") {
        c.policy.call_pattern = crate::runtime::CallPattern::Scheduler0523;
    }
    match c.validate() {
        Ok(()) => Ok((c, true)),
        Err(e) if swa.required => Err(ReplayConfigError::Dsv4NotModelled(e.to_string())),
        Err(_) => Ok((cfg, false)),
    }
}
