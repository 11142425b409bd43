//! Speculative decoding in the timed replay's clock: EAGLE / NextN with the model's own
//! MTP layers as the draft (`--speculative-algorithm EAGLE|NEXTN`), top-k 1.
//!
//! One decode iteration of SGLang's EAGLE worker drafts `num_steps` tokens (the MTP
//! layers run once per step), verifies `num_draft_tokens` tokens per request in one
//! target forward, and keeps on average `accept_length` of them (the verified prefix
//! plus the target's own next token). The iteration's cost follows aiconfigurator's
//! rule (the tool the cost tables come from, `aiconfigurator-core` 0.12.0
//! `sdk/engine.py: apply_nextn` and `aiconfigurator` 0.12.0
//! `sdk/inference_session.py`): the decode step of a batch widened to
//! `num_draft_tokens` tokens per request, times `(L + num_steps × draft layers) / L` for
//! the draft's layers; the request advances `accept_length` tokens per iteration
//! (`sdk/speculative.py: SpeculativeDecodingProfile.tokens_per_iteration`). The prefill
//! also runs the draft over the prompt (`forward_draft_extend`): `× (L + draft layers) /
//! L`.
//!
//! The acceptance is not a property of SGLang but of the model and the prompts: when the
//! scenario does not give one, the default is aiconfigurator's per-position acceptance
//! rates for MTP (0.85, 0.3, then 0; `sdk/task_v1_compat.py`, the V1 default it folds
//! into `nextn_accepted`), folded as a chain (`E = Σᵢ Πⱼ≤ᵢ pⱼ`): 2.105 tokens per
//! iteration at 3 steps. DeepSeek-V3's report measures 85–90 % acceptance of the first
//! drafted token (arXiv 2412.19437, §5.4.3). Outputs print the value used and where it
//! came from.

use serde::{Deserialize, Serialize};

/// aiconfigurator's default per-position acceptance rates of an MTP draft (positions
/// past the list accept nothing).
pub const DEFAULT_ACCEPT_RATES: [f64; 2] = [0.85, 0.3];

/// The most draft steps taken (SGLang has no bound; a chain this long accepts nothing
/// past a few positions).
pub const MAX_STEPS: u32 = 64;

/// Where the default acceptance comes from, as outputs print it.
pub const DEFAULT_ACCEPT_SOURCE: &str = "assumed: aiconfigurator 0.12.0's MTP acceptance rates 0.85 then 0.3 per drafted position (sdk/task_v1_compat.py); set runtime.replay.compute.speculative.accept_length to your measured value";

/// `runtime.replay.compute.speculative`: the speculative decoding a scenario's launch
/// command resolves to (`pipeline::replay_config` fills it from the server flags).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Speculative {
    /// `--speculative-algorithm` as resolved (`NEXTN` is SGLang's alias of `EAGLE`).
    pub algorithm: String,
    /// `--speculative-num-steps` (SGLang's auto choice for MTP models: 3;
    /// `arg_groups/speculative_hook.py: _auto_choose_speculative_params`, 0.5.14–0.5.23).
    pub num_steps: u32,
    /// `--speculative-eagle-topk` (auto: 1).
    pub eagle_topk: u32,
    /// `--speculative-num-draft-tokens` as resolved (top-k 1: `num_steps + 1`, SGLang's
    /// `_handle_eagle_family` adjusts any other value).
    pub num_draft_tokens: u32,
    /// The draft's layers per step (the model's own MTP layers; 0 = not an MTP draft).
    pub draft_layers: u32,
    /// The target model's layers (on this rank's pipeline stage).
    pub target_layers: u32,
    /// Mean tokens a request gains per decode iteration (accepted drafts + 1), from 1 to
    /// `num_draft_tokens`. Unset: [`DEFAULT_ACCEPT_RATES`] folded over the steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_length: Option<f64>,
}

/// Why a speculative configuration has no modelled clock.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpeculativeError {
    #[error(
        "speculative settings without a draft: the launch command sets no --speculative-algorithm"
    )]
    NoAlgorithm,
    #[error(
        "accept_length must be from 1 to num_draft_tokens ({max}): tokens a request gains per verify step, the accepted drafts plus the target's own token; got {got}"
    )]
    AcceptLength { got: f64, max: u32 },
    #[error("num_steps must be from 1 to {MAX_STEPS}, got {0}")]
    Steps(u32),
    #[error(
        "num_draft_tokens {draft} with eagle_topk 1: SGLang sets it to num_steps + 1 ({want}) (`_handle_eagle_family`)"
    )]
    DraftTokens { draft: u32, want: u32 },
}

impl Speculative {
    /// Whether the replay's clock models this draft: an MTP draft of the model's own
    /// layers with top-k 1 (a chain). Otherwise the reason, for the speeds record.
    pub fn not_modelled(&self) -> Option<String> {
        if self.draft_layers == 0 {
            return Some(format!(
                "{}: a draft other than the model's own MTP layers (EAGLE3 / STANDALONE / NGRAM / a separate draft model) is not in the clock: decode runs without speculation",
                self.algorithm
            ));
        }
        if self.eagle_topk != 1 {
            return Some(format!(
                "{} with --speculative-eagle-topk {}: only a chain (top-k 1) is in the clock: decode runs without speculation",
                self.algorithm, self.eagle_topk
            ));
        }
        None
    }

    /// Tokens per iteration used: the scenario's, else the default folded over the steps.
    pub fn accept_length(&self) -> f64 {
        self.accept_length
            .unwrap_or_else(|| 1.0 + folded_acceptance(self.num_steps, &DEFAULT_ACCEPT_RATES))
    }

    /// Where [`Speculative::accept_length`] comes from.
    pub fn accept_source(&self) -> &'static str {
        if self.accept_length.is_some() {
            "the scenario's runtime.replay.compute.speculative.accept_length"
        } else {
            DEFAULT_ACCEPT_SOURCE
        }
    }

    /// No algorithm (an `accept_length` set on a scenario without a draft), or an accept
    /// length outside [1, num_draft_tokens], is an error.
    pub fn validate(&self) -> Result<(), SpeculativeError> {
        if self.algorithm.is_empty() {
            return Err(SpeculativeError::NoAlgorithm);
        }
        if !(1..=MAX_STEPS).contains(&self.num_steps) {
            return Err(SpeculativeError::Steps(self.num_steps));
        }
        if self.eagle_topk == 1 && self.num_draft_tokens != self.num_steps + 1 {
            return Err(SpeculativeError::DraftTokens {
                draft: self.num_draft_tokens,
                want: self.num_steps + 1,
            });
        }
        if let Some(a) = self.accept_length
            && !(a.is_finite() && a >= 1.0 && a <= f64::from(self.num_draft_tokens.max(1)))
        {
            return Err(SpeculativeError::AcceptLength {
                got: a,
                max: self.num_draft_tokens,
            });
        }
        Ok(())
    }

    /// The clock's terms, when modelled.
    pub fn step(&self) -> Option<SpecStep> {
        if self.not_modelled().is_some() {
            return None;
        }
        let l = f64::from(self.target_layers.max(1));
        let d = f64::from(self.draft_layers);
        Some(SpecStep {
            verify_width: u64::from(self.num_draft_tokens.max(1)),
            decode_scale: (l + f64::from(self.num_steps) * d) / l,
            prefill_scale: (l + d) / l,
            accept_length: self.accept_length(),
        })
    }
}

/// Expected accepted drafts per iteration of a chain of `steps` drafts whose position
/// `i` is accepted with `rates[i]` given the ones before (aiconfigurator's
/// `_fold_accept_rates`): `Σᵢ Πⱼ≤ᵢ pⱼ`.
pub fn folded_acceptance(steps: u32, rates: &[f64]) -> f64 {
    // Positions past the list accept nothing, nor anything after them.
    let (mut e, mut p) = (0.0, 1.0);
    for &r in rates.iter().take(steps as usize) {
        p *= r;
        e += p;
    }
    e
}

/// A modelled draft's terms in the cost model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecStep {
    /// Tokens per request in the verify forward.
    pub verify_width: u64,
    /// The draft's layers on top of the target's, per iteration.
    pub decode_scale: f64,
    /// The draft's extend over the prompt.
    pub prefill_scale: f64,
    /// Tokens a request gains per iteration.
    pub accept_length: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mtp(steps: u32) -> Speculative {
        Speculative {
            algorithm: "EAGLE".into(),
            num_steps: steps,
            eagle_topk: 1,
            num_draft_tokens: steps + 1,
            draft_layers: 1,
            target_layers: 61,
            accept_length: None,
        }
    }

    #[test]
    fn default_acceptance_folds_the_rates_by_hand() {
        // 1 step: 0.85; 2 and 3 steps: 0.85 + 0.85 × 0.3 = 1.105 (the third rate is 0).
        assert!((mtp(1).accept_length() - 1.85).abs() < 1e-12);
        assert!((mtp(2).accept_length() - 2.105).abs() < 1e-12);
        assert!((mtp(3).accept_length() - 2.105).abs() < 1e-12);
    }

    #[test]
    fn step_terms_of_deepseek_v3_mtp() {
        // 61 layers + 3 passes of the one MTP layer: 64/61; prefill 62/61; width 4.
        let s = mtp(3).step().unwrap();
        assert_eq!(s.verify_width, 4);
        assert!((s.decode_scale - 64.0 / 61.0).abs() < 1e-12);
        assert!((s.prefill_scale - 62.0 / 61.0).abs() < 1e-12);
    }

    #[test]
    fn unmodelled_drafts_say_why() {
        let mut s = mtp(3);
        s.eagle_topk = 4;
        assert!(s.step().is_none());
        assert!(s.not_modelled().unwrap().contains("top-k 1"));
        let mut s = mtp(3);
        s.draft_layers = 0;
        assert!(s.not_modelled().unwrap().contains("EAGLE3"));
    }

    #[test]
    fn accept_length_is_bounded_by_the_verify_width() {
        let mut s = mtp(3);
        s.accept_length = Some(4.5);
        assert!(s.validate().is_err());
        s.accept_length = Some(0.9);
        assert!(s.validate().is_err());
        s.accept_length = Some(3.2);
        assert!(s.validate().is_ok());
        assert_eq!(s.accept_length(), 3.2);
    }
}
