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
//!
//! Every request, text or token ids, also takes a fixed way through the server outside
//! its forwards ([`Frontend::request_overhead`]): the HTTP request and response, the
//! TokenizerManager's ZMQ hop to the scheduler, the scheduler's receive and the
//! detokenizer's. It is charged as a latency, not a queue — an assumption: the HTTP
//! parsing, chat template and response run on the TokenizerManager's event loop (in
//! the HTTP server's process), so under load that share would queue behind the
//! encodes; only the ZMQ hops, the scheduler's receive and the detokenizer are off it.
//!
//! A server has one TokenizerManager, in front of its `DataParallelController`: the
//! DP-attention ranks of an engine share its encode queue, and the controller picks a
//! request's rank once the request has taken its encode and fixed way in. The drivers
//! of several schedulers run it that way (`timed::rank::Inbound`); a lone scheduler's
//! replay runs its own ([`Frontend::deliver`]).

use crate::units::{Duration, Nanos};

/// The TokenizerManager stage of a timed replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Frontend {
    /// Encode time per prompt token of a text request (`runtime.replay.tokenize_per_token`,
    /// e.g. `7us`); 0 = requests arrive as token ids.
    pub tokenize_per_token: Duration,
    /// The fixed time of every request's way through the server outside its forwards
    /// and its encode (`runtime.replay.request_overhead`, e.g. `6ms`): SGLang's HTTP
    /// server, the TokenizerManager → scheduler ZMQ hop and the scheduler's receive
    /// (`managers/scheduler_components/request_receiver.py: RequestReceiver.recv_requests`),
    /// the scheduler → detokenizer → TokenizerManager hops and the response
    /// (0.5.14–0.5.23). One latency per request; where in the way it falls is not
    /// measured, so the replay charges it before the scheduler sees the request
    /// (the TTFT is the same on an idle server). A scenario with a modelled clock
    /// sets [`REQUEST_OVERHEAD_DEFAULT`]; 0, the default, is no charge (not written
    /// into outputs, every figure made before it).
    pub request_overhead: Duration,
}

/// [`Frontend::request_overhead`]'s default under a modelled clock: 6 ms. Source:
/// SGLang with its forward mocked on a CPU (tenstorrent/tt-inference-server issue
/// 3560, <https://github.com/tenstorrent/tt-inference-server/issues/3560>, 2026-05: the
/// `tt-sglang-plugin` mock busy-waits 2.632 ms a forward): a median TTFT of 9.54 ms for
/// 128-token chat prompts at concurrency 1, `vllm bench serve` over
/// `/v1/chat/completions`. Less the one mocked prefill forward (2.632 ms) and the
/// encode of 128 tokens at the rate `tools/costs/tokenize_rate.json` measured (6 756
/// ns a token: 0.865 ms), 6.04 ms; 6 ms, as four requests allow. The host CPU is the
/// source's, not stated; the figure also holds the prefill iteration's own loop
/// (~0.3 ms, the same source's per-step overhead).
pub const REQUEST_OVERHEAD_DEFAULT: Duration = Duration(6_000_000);

impl Frontend {
    /// Whether requests pay a tokenization (the default does not).
    pub fn tokenizes(&self) -> bool {
        self.tokenize_per_token.0 > 0
    }

    /// When a request sent at `sent` with `tokens` prompt tokens reaches the scheduler,
    /// given the time the tokenizer is free (`free`, updated): one encode at a time, in
    /// the order the requests were sent, then the fixed [`Frontend::request_overhead`]
    /// (which holds no one else). With neither cost this is `sent`.
    pub fn deliver(&self, sent: Nanos, tokens: u32, free: &mut Nanos) -> Nanos {
        let start = sent.max(*free);
        let done = start + u64::from(tokens) * self.tokenize_per_token.0;
        *free = done;
        done + self.request_overhead.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_encode_at_a_time_in_send_order() {
        let f = Frontend {
            tokenize_per_token: Duration(7_000),
            ..Frontend::default()
        };
        let mut free = 0;
        // 1 000 tokens at t = 0: 7 ms. A second request sent at 1 ms waits for the first.
        assert_eq!(f.deliver(0, 1_000, &mut free), 7_000_000);
        assert_eq!(f.deliver(1_000_000, 500, &mut free), 10_500_000);
        // Sent after the tokenizer went idle: its own encode only.
        assert_eq!(f.deliver(20_000_000, 100, &mut free), 20_700_000);
    }

    #[test]
    fn the_fixed_way_delays_its_request_and_holds_no_one() {
        let f = Frontend {
            tokenize_per_token: Duration(7_000),
            request_overhead: Duration(6_000_000),
        };
        let mut free = 0;
        // 1 000 tokens at t = 0: encoded by 7 ms, seen at 13 ms.
        assert_eq!(f.deliver(0, 1_000, &mut free), 13_000_000);
        // The next encode starts when the first one ends (7 ms), not at 13 ms.
        assert_eq!(f.deliver(1_000_000, 500, &mut free), 16_500_000);
        // Token ids: the fixed way alone.
        let ids = Frontend {
            request_overhead: Duration(6_000_000),
            ..Frontend::default()
        };
        let mut free = 0;
        assert_eq!(ids.deliver(5, 32_512, &mut free), 6_000_005);
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
