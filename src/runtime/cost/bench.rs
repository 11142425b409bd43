//! Closed-loop benchmark clients over the timed replay: the published HiCache runs
//! (`tests/bench_corpus/`) are closed loops — a client's next round exists only when
//! its answer returns, and `--max-parallel` / `--max-concurrency` gate sending — while
//! the timed replay takes arrival times. The client is simulated against per-request
//! latencies, the replay gives new latencies for those send times, and the two are
//! iterated to a fixed point (the system is causal: each pass fixes at least the
//! earliest request whose send time was wrong, so it converges; the pass count is
//! reported).
//!
//! Clients mirror SGLang's `benchmark/hicache/bench_multiturn.py` (`WorkloadGenerator`:
//! a sender pops a ready request while fewer than `max_parallel` are in flight, then
//! sleeps an exponential gap of mean `1/request_rate`; a client's next round becomes
//! ready when its response returns, or with `--enable-round-barrier` when every
//! client finished the round; round r's prompt is the conversation so far plus a new
//! question) and `sglang.bench_serving` with `--max-concurrency` and
//! `--request-rate inf` (a multi-turn of one round, FIFO, no gaps).

use crate::engine::derive_seed;
use crate::units::Nanos;
use crate::workload::Request;

use super::super::{ReplayConfig, ReplayError, replay_timed};

/// A `bench_multiturn`-style client population.
#[derive(Debug, Clone, PartialEq)]
pub struct Multiturn {
    pub clients: u32,
    pub rounds: u32,
    /// `--request-length` (and the sub-question length), tokens.
    pub request_len: u32,
    /// `--output-length`.
    pub output_len: u32,
    /// `--max-parallel` / `--max-concurrency`.
    pub max_parallel: u32,
    /// `--request-rate` (requests/s, Poisson gaps); `None` = infinite (no gaps).
    pub request_rate: Option<f64>,
    /// `--enable-round-barrier`.
    pub round_barrier: bool,
    /// `--ready-queue-policy random` (else FIFO).
    pub random_ready: bool,
    pub seed: u64,
}

impl Multiturn {
    /// `sglang.bench_serving --dataset-name random-ids --random-range-ratio 1
    /// --request-rate inf --max-concurrency c`: `prompts` independent prompts.
    pub fn fixed_concurrency(
        prompts: u32,
        input_len: u32,
        output_len: u32,
        concurrency: u32,
    ) -> Self {
        Multiturn {
            clients: prompts,
            rounds: 1,
            request_len: input_len,
            output_len,
            max_parallel: concurrency,
            request_rate: None,
            round_barrier: false,
            random_ready: false,
            seed: 0,
        }
    }

    /// Round r's prompt: r earlier questions and answers plus a new question,
    /// `L·(r+1) + O·r` tokens.
    pub fn prompt_len(&self, round: u32) -> u32 {
        self.request_len * (round + 1) + self.output_len * round
    }

    /// The whole pages of client `c`'s round-`r` prompt. A conversation is one growing
    /// token stream, so page j has the same content (hash) in every round that holds
    /// it whole; clients share nothing (`--disable-random-sample` ids).
    pub fn pages(&self, client: u32, round: u32, page_size: u32) -> Vec<u64> {
        let n = self.prompt_len(round) / page_size;
        (0..u64::from(n))
            .map(|j| derive_seed(0xB0C0_u64 ^ self.seed, (u64::from(client) << 32) | j) | 1)
            .collect()
    }

    fn id(&self, client: u32, round: u32) -> u64 {
        u64::from(round) * u64::from(self.clients) + u64::from(client)
    }

    fn uniform(&self, stream: u64, k: u64) -> f64 {
        (derive_seed(self.seed ^ stream, k) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Send times of every request (by id) given each request's latency to its last
    /// token (`None`: not known yet, taken as 0).
    fn send_times(&self, latency: &[Nanos]) -> Vec<Nanos> {
        let total = (self.clients * self.rounds) as usize;
        let mut send = vec![0; total];
        let mut ready: Vec<(u32, u32)> = (0..self.clients).map(|c| (c, 0)).collect();
        // (return time, client, round) of requests in flight.
        let mut flight: Vec<(Nanos, u32, u32)> = Vec::new();
        let mut done_in_round = vec![0u32; self.rounds as usize];
        let mut held: Vec<(u32, u32)> = Vec::new(); // barrier: next-round requests
        let mut now: Nanos = 0;
        let mut next_allowed: Nanos = 0;
        let mut k = 0u64;
        let mut sent = 0usize;
        while sent < total {
            let can_send = !ready.is_empty() && (flight.len() as u32) < self.max_parallel;
            if can_send && next_allowed <= now {
                let i = if self.random_ready {
                    ((self.uniform(1, k) * ready.len() as f64) as usize).min(ready.len() - 1)
                } else {
                    0
                };
                let (c, r) = ready.remove(i);
                let id = self.id(c, r) as usize;
                send[id] = now;
                flight.push((now + latency[id], c, r));
                sent += 1;
                if let Some(rate) = self.request_rate {
                    let u = self.uniform(2, k);
                    let gap = -(1.0 - u).ln() / rate;
                    next_allowed = now + (gap * 1e9).round() as Nanos;
                }
                k += 1;
                continue;
            }
            if !can_send && flight.is_empty() {
                break; // nothing in flight and nothing ready: cannot happen (defensive)
            }
            // Advance to the next event: a return, or the end of the gap.
            let next_return = flight.iter().map(|f| f.0).min();
            let t = match (can_send, next_return) {
                (true, Some(r)) => r.min(next_allowed),
                (true, None) => next_allowed,
                (false, Some(r)) => r.max(now),
                (false, None) => next_allowed.max(now),
            };
            now = now.max(t);
            let mut j = 0;
            while j < flight.len() {
                if flight[j].0 <= now {
                    let (_, c, r) = flight.swap_remove(j);
                    done_in_round[r as usize] += 1;
                    if r + 1 < self.rounds {
                        if self.round_barrier {
                            held.push((c, r + 1));
                        } else {
                            ready.push((c, r + 1));
                        }
                    }
                    if self.round_barrier && done_in_round[r as usize] == self.clients {
                        held.sort_unstable();
                        ready.append(&mut held);
                    }
                } else {
                    j += 1;
                }
            }
        }
        send
    }
}

/// The figures the benchmark scripts print, from a converged closed loop.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    pub ttft_mean_s: f64,
    pub ttft_p50_s: f64,
    pub ttft_p99_s: f64,
    /// Σ prompt tokens ÷ (last answer − first send).
    pub input_tok_s: f64,
    /// Σ cached tokens ÷ Σ prompt tokens (device, host and storage hits).
    pub cache_hit_rate: f64,
    pub per_round_ttft_mean_s: Vec<f64>,
    pub per_round_hit_rate: Vec<f64>,
    pub duration_s: f64,
    /// Fixed-point passes until the send times stopped changing.
    pub passes: u32,
    /// Each request's send time (by id = round · clients + client) in the last pass.
    pub send_ns: Vec<Nanos>,
}

/// Runs `bench` against the timed replay of `cfg` (with `preload` pages already in
/// L3) until the send times are a fixed point, at most `max_passes` passes.
pub fn run(
    cfg: &ReplayConfig,
    bench: &Multiturn,
    preload: &[u64],
    max_passes: u32,
) -> Result<BenchResult, ReplayError> {
    run_warmed(cfg, bench, 0, preload, max_passes)
}

/// Idle time between the warm-up requests of [`run_warmed`] and the measured run.
const WARM_GAP_NS: Nanos = 100_000_000_000_000;

/// [`run`], after a warm-up: each prompt's first `warm_tokens` (whole pages) sent once,
/// all at time 0, and left to finish, so the measured prompts find that prefix wherever
/// the tree left it (in L1 when it fits: the "HBM hit at a given hit rate" setups,
/// where a warm-up pass writes the shared part of each prompt before the timed pass).
/// The warm-up requests are not in the figures; the measured run starts 10⁵ s later.
pub fn run_warmed(
    cfg: &ReplayConfig,
    bench: &Multiturn,
    warm_tokens: u32,
    preload: &[u64],
    max_passes: u32,
) -> Result<BenchResult, ReplayError> {
    let total = (bench.clients * bench.rounds) as usize;
    let warm_pages = (warm_tokens / cfg.capacities.page_size) as usize;
    let ps = cfg.capacities.page_size;
    let pages: Vec<Vec<u64>> = (0..total as u64)
        .map(|id| {
            let (c, r) = (
                (id % u64::from(bench.clients)) as u32,
                (id / u64::from(bench.clients)) as u32,
            );
            bench.pages(c, r, ps)
        })
        .collect();
    let mut latency = vec![0; total];
    let mut send = bench.send_times(&latency);
    let mut passes = 0;
    loop {
        passes += 1;
        let mut order: Vec<usize> = (0..total).collect();
        order.sort_by_key(|&i| (send[i], i));
        let warm: Vec<Request> = if warm_pages == 0 {
            Vec::new()
        } else {
            (0..total)
                .map(|i| Request {
                    id: (total + i) as u64,
                    arrival_ns: 0,
                    input_tokens: (warm_pages as u32) * cfg.capacities.page_size,
                    output_tokens: 1,
                    page_hashes: pages[i][..warm_pages.min(pages[i].len())].to_vec(),
                })
                .collect()
        };
        let w = warm.len();
        let offset = if w == 0 { 0 } else { WARM_GAP_NS };
        let reqs: Vec<Request> = warm
            .into_iter()
            .chain(order.iter().map(|&i| Request {
                id: i as u64,
                arrival_ns: offset + send[i],
                input_tokens: bench.prompt_len(i as u32 / bench.clients),
                output_tokens: bench.output_len,
                page_hashes: pages[i].clone(),
            }))
            .collect();
        let (_, times) = replay_timed(cfg, reqs, preload)?;
        let mut first = vec![0; total];
        let mut cached = vec![0u64; total];
        for t in &times {
            let Some(k) = (t.index as usize).checked_sub(w) else {
                continue; // a warm-up request
            };
            let id = order[k];
            latency[id] = t.finish_ns - t.arrival_ns;
            first[id] = t.first_token_ns - t.arrival_ns;
            cached[id] = t.cached_tokens;
        }
        let next = bench.send_times(&latency);
        if next == send || passes >= max_passes {
            let finish = (0..total).map(|i| send[i] + latency[i]).max().unwrap_or(0);
            let start = send.iter().copied().min().unwrap_or(0);
            let duration = (finish - start) as f64 / 1e9;
            let prompt = |i: usize| u64::from(bench.prompt_len(i as u32 / bench.clients));
            let mut ttft: Vec<f64> = first.iter().map(|&f| f as f64 / 1e9).collect();
            let rounds = bench.rounds as usize;
            let per = bench.clients as usize;
            let per_round_ttft_mean_s = (0..rounds)
                .map(|r| ttft[r * per..(r + 1) * per].iter().sum::<f64>() / per as f64)
                .collect();
            let per_round_hit_rate = (0..rounds)
                .map(|r| {
                    let ids = r * per..(r + 1) * per;
                    let c: u64 = ids.clone().map(|i| cached[i]).sum();
                    let p: u64 = ids.map(prompt).sum();
                    c as f64 / p as f64
                })
                .collect();
            let total_prompt: u64 = (0..total).map(prompt).sum();
            let mean = ttft.iter().sum::<f64>() / total as f64;
            ttft.sort_by(f64::total_cmp);
            let pct = |p: f64| {
                let i = ((p * total as f64).ceil() as usize).clamp(1, total) - 1;
                ttft[i]
            };
            return Ok(BenchResult {
                ttft_mean_s: mean,
                ttft_p50_s: pct(0.5),
                ttft_p99_s: pct(0.99),
                input_tok_s: total_prompt as f64 / duration,
                cache_hit_rate: cached.iter().sum::<u64>() as f64 / total_prompt as f64,
                per_round_ttft_mean_s,
                per_round_hit_rate,
                duration_s: duration,
                passes,
                send_ns: send.clone(),
            });
        }
        send = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_concurrency_sends_when_a_slot_frees() {
        // 5 prompts, concurrency 2, latencies 10, 20, 30, 40, 50:
        // 0 and 1 at t=0; 0 returns at 10 → 2 at 10; 1 returns at 20 → 3 at 20;
        // 2 returns at 40 → 4 at 40.
        let b = Multiturn::fixed_concurrency(5, 128, 1, 2);
        assert_eq!(b.send_times(&[10, 20, 30, 40, 50]), vec![0, 0, 10, 20, 40]);
    }

    #[test]
    fn barrier_holds_the_next_round() {
        // 2 clients × 2 rounds, parallel 2, no gaps; ids: round·clients + client.
        // Round 0 latencies 5 and 50: client 0's round 1 waits for client 1 (50).
        let mut b = Multiturn::fixed_concurrency(2, 64, 1, 2);
        b.rounds = 2;
        b.round_barrier = true;
        assert_eq!(b.send_times(&[5, 50, 1, 1]), vec![0, 0, 50, 50]);
        b.round_barrier = false;
        assert_eq!(b.send_times(&[5, 50, 1, 1]), vec![0, 0, 5, 50]);
    }

    #[test]
    fn prompts_grow_and_share_their_pages() {
        let mut b = Multiturn::fixed_concurrency(2, 2048, 16, 1);
        b.rounds = 3;
        // L·(r+1) + O·r: 2048, 4112, 6176.
        assert_eq!(b.prompt_len(2), 6176);
        let p1 = b.pages(0, 1, 64);
        assert_eq!(p1.len(), 64); // 4112 / 64
        assert_eq!(b.pages(0, 0, 64)[..], p1[..32]);
        assert_ne!(b.pages(1, 0, 64)[0], p1[0]);
    }
}
