//! The way a request takes to the scheduler: SGLang's TokenizerManager.
//!
//! A request that arrives as text is tokenized in SGLang's HTTP / TokenizerManager
//! process before the scheduler sees it, whether its prefix is cached or not:
//! `entrypoints/openai/serving_chat.py: _render_and_encode_chat_template` →
//! `parallel_prompt_encode.py: parallel_prompt_encode` for chat completions,
//! `managers/tokenizer_manager.py: _tokenize_texts` for `/generate` with `"text"`
//! (0.5.14–0.5.23; `--tokenizer-worker-num` 1, the default). The encode is CPU work in
//! another process than the scheduler's, so it never holds the GPU: it delays the
//! request it belongs to, and with one tokenizer the requests behind it (one event loop,
//! one encode at a time). A client that sends token ids (`bench_multiturn.py`'s default
//! `--api-format sglang`, `bench_serving --tokenize-prompt`) skips it.
//!
//! The encode time per token is the scenario's: it depends on the tokenizer, the text and
//! the CPU (`tools/costs/tokenize_rate.py` measures it for corpus #19 / #20's probe
//! text with Qwen3's tokenizer: `tools/costs/tokenize_rate.json`). 0, the default, is a
//! client that sends token ids, and every figure made before this module.

use crate::units::{Duration, Nanos};

/// The TokenizerManager stage of a timed replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Frontend {
    /// Encode time per prompt token of a text request (`runtime.replay.tokenize_per_token`,
    /// e.g. `7us`); 0 = requests arrive as token ids.
    pub tokenize_per_token: Duration,
}

impl Frontend {
    /// Whether requests pay a tokenization (the default does not).
    pub fn tokenizes(&self) -> bool {
        self.tokenize_per_token.0 > 0
    }

    /// When a request sent at `sent` with `tokens` prompt tokens reaches the scheduler,
    /// given the time the tokenizer is free (`free`, updated): one encode at a time, in
    /// the order the requests were sent. With no tokenization cost this is `sent`.
    pub fn deliver(&self, sent: Nanos, tokens: u32, free: &mut Nanos) -> Nanos {
        let start = sent.max(*free);
        let done = start + u64::from(tokens) * self.tokenize_per_token.0;
        *free = done;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_encode_at_a_time_in_send_order() {
        let f = Frontend {
            tokenize_per_token: Duration(7_000),
        };
        let mut free = 0;
        // 1 000 tokens at t = 0: 7 ms. A second request sent at 1 ms waits for the first.
        assert_eq!(f.deliver(0, 1_000, &mut free), 7_000_000);
        assert_eq!(f.deliver(1_000_000, 500, &mut free), 10_500_000);
        // Sent after the tokenizer went idle: its own encode only.
        assert_eq!(f.deliver(20_000_000, 100, &mut free), 20_700_000);
    }

    #[test]
    fn token_ids_arrive_when_sent() {
        let f = Frontend::default();
        let mut free = 0;
        assert!(!f.tokenizes());
        for t in [0, 5, 5, 9] {
            assert_eq!(f.deliver(t, 32_512, &mut free), t);
        }
    }
}
