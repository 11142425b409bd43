//! Per-round figures of a multi-turn benchmark: a scenario's
//! `runtime.bench` runs `bench_multiturn`-style closed-loop clients
//! ([`super::cost::bench`]) against the timed replay instead of a trace, and the replay
//! reports, per round, what the published HiCache runs plot per round: TTFT (mean, p50,
//! p99), input-token throughput, TPOT and the cache hit rate (SGLang's
//! `benchmark/hicache/bench_multiturn.py` prints the same per-round figures).

use serde::{Deserialize, Serialize};

use super::cost::bench::{self, Multiturn};
use super::{ReplayConfig, ReplayError, ReplayMetrics, RequestTime, Timing, replay_timed};
use crate::units::Nanos;
use crate::workload::Request;

/// `runtime.bench`: the client population (flag names of `bench_multiturn.py`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchSpec {
    /// `--num-clients`.
    pub clients: u32,
    /// `--num-rounds`.
    #[serde(default = "one")]
    pub rounds: u32,
    /// `--request-length`: tokens of each new question.
    pub request_length: u32,
    /// `--output-length`: tokens of each answer.
    pub output_length: u32,
    /// `--max-parallel`: requests in flight at once.
    pub max_parallel: u32,
    /// `--request-rate` (requests/s, Poisson gaps); absent = infinite (no gaps).
    #[serde(default)]
    pub request_rate: Option<f64>,
    /// `--enable-round-barrier`.
    #[serde(default)]
    pub round_barrier: bool,
    /// `--ready-queue-policy random` (else FIFO).
    #[serde(default)]
    pub random_ready: bool,
    /// Seeds the Poisson gaps, the random ready queue and the prompts' content.
    #[serde(default)]
    pub seed: u64,
    /// Fixed-point passes at most (client send times against replay latencies).
    #[serde(default = "fifty")]
    pub max_passes: u32,
}

fn one() -> u32 {
    1
}
fn fifty() -> u32 {
    50
}

impl BenchSpec {
    pub fn multiturn(&self) -> Multiturn {
        Multiturn {
            clients: self.clients,
            rounds: self.rounds,
            request_len: self.request_length,
            output_len: self.output_length,
            max_parallel: self.max_parallel,
            request_rate: self.request_rate,
            round_barrier: self.round_barrier,
            random_ready: self.random_ready,
            seed: self.seed,
        }
    }

    /// Rejects a population that cannot run, naming the field.
    pub fn validate(&self) -> Result<(), BenchSpecError> {
        let err = |field, message: String| Err(BenchSpecError { field, message });
        for (f, v) in [
            ("clients", self.clients),
            ("rounds", self.rounds),
            ("request_length", self.request_length),
            ("max_parallel", self.max_parallel),
            ("max_passes", self.max_passes),
        ] {
            if v == 0 {
                return err(f, "must be at least 1".into());
            }
        }
        if let Some(r) = self.request_rate
            && !(r > 0.0 && r.is_finite())
        {
            return err(
                "request_rate",
                format!("{r}: must be a positive number (leave it out for infinite)"),
            );
        }
        if u64::from(self.clients) * u64::from(self.rounds) > 10_000_000 {
            return err(
                "clients",
                "clients x rounds above 10 000 000 requests".into(),
            );
        }
        Ok(())
    }
}

/// A `runtime.bench` population that cannot run: the field (under `runtime.bench`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BenchSpecError {
    pub field: &'static str,
    pub message: String,
}

/// One round's figures. Round numbers start at 0 (the first question), as
/// `bench_multiturn.py` counts them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundFigures {
    pub round: u32,
    pub requests: u64,
    /// Time to first token (send → end of prefill), seconds.
    pub ttft_mean_s: f64,
    pub ttft_p50_s: f64,
    pub ttft_p99_s: f64,
    /// Σ prompt tokens of the round ÷ (its last answer − its first send), tokens/s.
    pub input_tok_s: f64,
    /// Mean over the round's requests of (last token − first token) ÷ (output − 1), s
    /// (`bench_serving`'s TPOT; requests of one output token excluded).
    pub tpot_mean_s: Option<f64>,
    /// Σ cached prompt tokens (device, host and storage hits) ÷ Σ prompt tokens.
    pub hit_rate: f64,
}

/// The per-round CSV's columns (`replay --rounds`), one row per round.
pub const CSV_COLUMNS: &[&str] = &[
    "round",
    "requests",
    "ttft_mean_s",
    "ttft_p50_s",
    "ttft_p99_s",
    "input_tok_s",
    "tpot_mean_s",
    "hit_rate",
];

/// The per-round figures a sweep row carries, as `round_{figure}_{r}` columns (wide:
/// `pandas.wide_to_long(df, [f"round_{f}" for f in ROUND_FIGURES], i="point",
/// j="round", sep="_")` gives one row per point and round).
pub const ROUND_FIGURES: &[&str] = &[
    "ttft_mean_s",
    "ttft_p50_s",
    "ttft_p99_s",
    "input_tok_s",
    "tpot_mean_s",
    "hit_rate",
];

impl RoundFigures {
    /// The cells of [`CSV_COLUMNS`].
    pub fn csv_cells(&self) -> Vec<String> {
        let f = |x: f64| format!("{x:.6}");
        vec![
            self.round.to_string(),
            self.requests.to_string(),
            f(self.ttft_mean_s),
            f(self.ttft_p50_s),
            f(self.ttft_p99_s),
            format!("{:.1}", self.input_tok_s),
            self.tpot_mean_s.map(f).unwrap_or_default(),
            f(self.hit_rate),
        ]
    }

    /// The cells of [`ROUND_FIGURES`], in order.
    pub fn figure_cells(&self) -> Vec<String> {
        self.csv_cells()[2..].to_vec()
    }
}

/// The whole run's figures, as `bench_multiturn.py` prints them at the end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchFigures {
    pub clients: u32,
    pub rounds: u32,
    pub ttft_mean_s: f64,
    /// Σ prompt tokens ÷ (last answer − first send), tokens/s.
    pub input_tok_s: f64,
    pub tpot_mean_s: Option<f64>,
    pub hit_rate: f64,
    pub duration_s: f64,
    /// Fixed-point passes until the clients' send times stopped changing.
    pub passes: u32,
}

/// Nearest-rank percentile of sorted values (the timed replay's rule).
fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Figures of one group of requests (`(time, round)` pairs of one round).
fn figures(round: u32, ts: &[&RequestTime]) -> RoundFigures {
    let n = ts.len();
    let mut ttft: Vec<f64> = ts
        .iter()
        .map(|t| (t.first_token_ns - t.arrival_ns) as f64 / 1e9)
        .collect();
    let mean = ttft.iter().sum::<f64>() / n.max(1) as f64;
    ttft.sort_by(f64::total_cmp);
    let start = ts.iter().map(|t| t.arrival_ns).min().unwrap_or(0);
    let end = ts.iter().map(|t| t.finish_ns).max().unwrap_or(0);
    let prompt: u64 = ts.iter().map(|t| u64::from(t.input_tokens)).sum();
    let cached: u64 = ts.iter().map(|t| t.cached_tokens).sum();
    RoundFigures {
        round,
        requests: n as u64,
        ttft_mean_s: mean,
        ttft_p50_s: if n == 0 { 0.0 } else { pct(&ttft, 0.5) },
        ttft_p99_s: if n == 0 { 0.0 } else { pct(&ttft, 0.99) },
        input_tok_s: span_rate(prompt, start, end),
        tpot_mean_s: tpot(ts),
        hit_rate: if prompt == 0 {
            0.0
        } else {
            cached as f64 / prompt as f64
        },
    }
}

fn span_rate(tokens: u64, start: Nanos, end: Nanos) -> f64 {
    if end > start {
        tokens as f64 / ((end - start) as f64 / 1e9)
    } else {
        0.0
    }
}

fn tpot(ts: &[&RequestTime]) -> Option<f64> {
    let v: Vec<f64> = ts
        .iter()
        .filter(|t| t.output_tokens > 1)
        .map(|t| (t.finish_ns - t.first_token_ns) as f64 / 1e9 / f64::from(t.output_tokens - 1))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Per-round figures of `times`, whose request `i` (by `RequestTime::index`, the trace
/// position) is in round `round_of[i]`; rounds `0..rounds`.
pub fn per_round(times: &[RequestTime], round_of: &[u32], rounds: u32) -> Vec<RoundFigures> {
    (0..rounds)
        .map(|r| {
            let ts: Vec<&RequestTime> = times
                .iter()
                .filter(|t| round_of[t.index as usize] == r)
                .collect();
            figures(r, &ts)
        })
        .collect()
}

/// Runs `spec`'s clients against the timed replay of `cfg` to their fixed point, then
/// replays the converged send times once more for the tiers' metrics; the metrics carry
/// the per-round and whole-run figures (`rounds`, `bench`).
pub fn run_bench(cfg: &ReplayConfig, spec: &BenchSpec) -> Result<ReplayMetrics, ReplayError> {
    if cfg.measurement.timing != Timing::On {
        return Err(ReplayError::InvalidConfig {
            field: "bench",
            message:
                "runs closed-loop clients against the timed replay: set runtime.replay.timing: on"
                    .into(),
        });
    }
    if let Err(e) = spec.validate() {
        return Err(ReplayError::InvalidConfig {
            field: "bench",
            message: e.to_string(),
        });
    }
    let b = spec.multiturn();
    let converged = bench::run(cfg, &b, &[], spec.max_passes)?;
    let send = &converged.send_ns;
    let total = send.len();
    // The last pass's own input: the requests in send order (ties by id).
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by_key(|&i| (send[i], i));
    let reqs: Vec<Request> = order
        .iter()
        .map(|&i| {
            let (c, r) = (i as u32 % b.clients, i as u32 / b.clients);
            Request {
                id: i as u64,
                arrival_ns: send[i],
                input_tokens: b.prompt_len(r),
                output_tokens: b.output_len,
                page_hashes: b.pages(c, r, cfg.capacities.page_size),
            }
        })
        .collect();
    let (mut m, times) = replay_timed(cfg, reqs, &[])?;
    let round_of: Vec<u32> = order.iter().map(|&i| i as u32 / b.clients).collect();
    m.rounds = per_round(&times, &round_of, b.rounds);
    let all: Vec<&RequestTime> = times.iter().collect();
    let whole = figures(0, &all);
    m.bench = Some(BenchFigures {
        clients: b.clients,
        rounds: b.rounds,
        ttft_mean_s: whole.ttft_mean_s,
        input_tok_s: whole.input_tok_s,
        tpot_mean_s: whole.tpot_mean_s,
        hit_rate: whole.hit_rate,
        duration_s: converged.duration_s,
        passes: converged.passes,
    });
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(index: u64, arrival: u64, first: u64, finish: u64, out: u32, cached: u64) -> RequestTime {
        RequestTime {
            index,
            arrival_ns: arrival,
            first_token_ns: first,
            finish_ns: finish,
            input_tokens: 1000,
            output_tokens: out,
            cached_tokens: cached,
        }
    }

    #[test]
    fn round_figures_by_hand() {
        // Round 0: requests 0 and 1; round 1: request 2.
        // r0 TTFTs 1 s and 3 s: mean 2, p50 = 1 (nearest rank ⌈0.5·2⌉ = 1st), p99 = 3.
        // Input: 2 000 tokens over [0, 5 s] = 400 tok/s. TPOT: (4−1)/(11−1) = 0.3 and
        // (5−3)/(11−1) = 0.2 → mean 0.25. Hit rate (0 + 500) / 2 000 = 0.25.
        let s = 1_000_000_000;
        let times = vec![
            t(0, 0, s, 4 * s, 11, 0),
            t(1, 0, 3 * s, 5 * s, 11, 500),
            t(2, 5 * s, 6 * s, 7 * s, 1, 1000),
        ];
        let r = per_round(&times, &[0, 0, 1], 2);
        assert_eq!(r[0].requests, 2);
        assert_eq!(r[0].ttft_mean_s, 2.0);
        assert_eq!(r[0].ttft_p50_s, 1.0);
        assert_eq!(r[0].ttft_p99_s, 3.0);
        assert_eq!(r[0].input_tok_s, 400.0);
        assert!((r[0].tpot_mean_s.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(r[0].hit_rate, 0.25);
        // Round 1: one request of one output token: no TPOT; 1 000 tokens over 2 s.
        assert_eq!(r[1].tpot_mean_s, None);
        assert_eq!(r[1].input_tok_s, 500.0);
        assert_eq!(r[1].hit_rate, 1.0);
    }
}
