//! Synthetic workloads, streamed: sessions start by a Poisson or gamma process; each
//! session is a multi-turn chat (context grows by a user message and the previous
//! answer every turn) or an agentic tool loop (a long task context, then many short
//! tool-result appends); every session opens with one of a pool of shared system
//! prompts picked by Zipf popularity. Requests come out in arrival order, and memory is
//! proportional to the sessions alive at once, so a 1 M-request trace costs no memory.
//!
//! Determinism: the arrival process draws from `engine::stream(seed, 0)`, session `k`
//! from `engine::stream(seed, k + 1)` (its kind, lengths, think times), and system
//! prompt lengths from `engine::stream(seed, u64::MAX)`. Same config and seed → same
//! requests, byte for byte; the draws of one session do not depend on the others.
//!
//! Content identity: a prompt is a list of segments (system prompt `k`, a session's
//! task context, a user message, an answer), each with a unique 64-bit id. Block `j`'s
//! chained hash folds the previous block's hash with the segment pieces inside it, so
//! equal token prefixes give equal block hashes and nothing else does.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::RngExt;
use rand_distr::{Distribution, Exp, Gamma, Zipf};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::read::BlockRecord;
use super::reblock::{Reblocker, mix};
use super::{PageHash, Request};
use crate::engine::{SimRng, stream};
use crate::units::NS_PER_S;

/// Most requests one `trace gen` writes.
pub const MAX_REQUESTS: u64 = 100_000_000;
/// Longest prompt segment (system prompt, user message, context, answer) in tokens.
pub const MAX_SEGMENT_TOKENS: u32 = 10_000_000;

/// The longest prompt a session may build (its system prompt, and every earlier turn's
/// input and output before the last turn's): far above any model's context, and far
/// below the u32 `input_length` a trace line holds (2^32 wrapped to a short prompt the
/// reader then refused).
pub const MAX_PROMPT_TOKENS: u64 = 100_000_000;

/// The most distinct system prompts (each gets a drawn length up front: 2^32 of them
/// was a 17 GB allocation).
pub const MAX_SYSTEM_PROMPTS: u32 = 1_000_000;
/// Session arrival rates that keep timestamps within u64 nanoseconds and apart.
pub const MIN_RATE_PER_S: f64 = 1e-6;
pub const MAX_RATE_PER_S: f64 = 1e9;
/// Longest mean think time between a session's turns.
pub const MAX_THINK_TIME_S: f64 = 1e6;

/// An inclusive uniform range of tokens or counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Range {
    pub min: u32,
    pub max: u32,
}

impl Range {
    pub const fn fixed(v: u32) -> Self {
        Range { min: v, max: v }
    }

    fn draw(&self, rng: &mut SimRng) -> u32 {
        if self.max <= self.min {
            self.min
        } else {
            rng.random_range(self.min..=self.max)
        }
    }
}

/// When sessions start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "process", rename_all = "snake_case", deny_unknown_fields)]
pub enum Arrivals {
    /// Exponential gaps, `rate_per_s` sessions per second.
    Poisson { rate_per_s: f64 },
    /// Gamma gaps with mean `1 / rate_per_s` and coefficient of variation `cv`
    /// (shape `1/cv²`): `cv > 1` is burstier than Poisson.
    Gamma { rate_per_s: f64, cv: f64 },
}

/// The pool of shared system prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemPrompts {
    /// How many distinct prompts (0: sessions have none).
    pub count: u32,
    /// Zipf exponent of their popularity (prompt 1 most popular).
    pub zipf_s: f64,
    pub tokens: Range,
}

/// One kind of session, with its weight in the mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SessionKind {
    /// Multi-turn chat: each turn appends a user message; the answer joins the context
    /// of the next turn.
    Chat {
        weight: f64,
        turns: Range,
        user_tokens: Range,
        output_tokens: Range,
        /// Mean seconds between a turn and the next (exponential).
        think_time_s: f64,
    },
    /// Agentic tool loop: a long task context once, then `loops` requests, each
    /// appending the previous answer (the tool call) and a short tool result. The
    /// context shared *across* sessions (tool definitions, a repository map) is the
    /// system prompt: give the pool long prompts for that.
    Agentic {
        weight: f64,
        context_tokens: Range,
        loops: Range,
        append_tokens: Range,
        output_tokens: Range,
        think_time_s: f64,
    },
}

impl SessionKind {
    fn weight(&self) -> f64 {
        match self {
            SessionKind::Chat { weight, .. } | SessionKind::Agentic { weight, .. } => *weight,
        }
    }
}

fn default_block_size() -> u32 {
    16
}
fn default_page_size() -> u32 {
    64
}

/// A workload generator's whole configuration (YAML/JSON; unknown keys are errors).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// Requests to produce.
    pub requests: u64,
    /// Tokens per block of the written trace's `hash_ids` (default 16).
    #[serde(default = "default_block_size")]
    pub block_size: u32,
    /// Tokens per page of [`Request::page_hashes`] (default 64).
    #[serde(default = "default_page_size")]
    pub page_size: u32,
    pub arrivals: Arrivals,
    pub system_prompts: SystemPrompts,
    pub sessions: Vec<SessionKind>,
}

/// A configuration that cannot generate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("generator config: field `{field}`: {message}")]
pub struct GeneratorError {
    pub field: String,
    pub message: String,
}

fn gerr(field: &str, message: impl Into<String>) -> GeneratorError {
    GeneratorError {
        field: field.into(),
        message: message.into(),
    }
}

impl GeneratorConfig {
    /// A small mixed workload: chat and agentic sessions, 8 Zipf(1.1) system prompts.
    pub fn example(requests: u64) -> Self {
        GeneratorConfig {
            requests,
            block_size: 16,
            page_size: 64,
            arrivals: Arrivals::Poisson { rate_per_s: 2.0 },
            system_prompts: SystemPrompts {
                count: 8,
                zipf_s: 1.1,
                tokens: Range {
                    min: 500,
                    max: 3000,
                },
            },
            sessions: vec![
                SessionKind::Chat {
                    weight: 0.6,
                    turns: Range { min: 1, max: 8 },
                    user_tokens: Range { min: 50, max: 1500 },
                    output_tokens: Range { min: 50, max: 800 },
                    think_time_s: 20.0,
                },
                SessionKind::Agentic {
                    weight: 0.4,
                    context_tokens: Range {
                        min: 4000,
                        max: 20000,
                    },
                    loops: Range { min: 5, max: 30 },
                    append_tokens: Range { min: 50, max: 600 },
                    output_tokens: Range { min: 20, max: 300 },
                    think_time_s: 2.0,
                },
            ],
        }
    }

    pub fn validate(&self) -> Result<(), GeneratorError> {
        Reblocker::new(self.block_size, self.page_size)
            .map_err(|e| gerr("page_size", e.to_string()))?;
        if self.requests > MAX_REQUESTS {
            return Err(gerr(
                "requests",
                format!(
                    "{} is more than {MAX_REQUESTS} (the writer keeps one entry per distinct block to renumber ids; generate in parts)",
                    self.requests
                ),
            ));
        }
        let range = |field: &str, r: &Range| -> Result<(), GeneratorError> {
            if r.min > r.max {
                return Err(gerr(
                    field,
                    format!("min {} is larger than max {}", r.min, r.max),
                ));
            }
            if r.max > MAX_SEGMENT_TOKENS {
                return Err(gerr(
                    field,
                    format!(
                        "max {} is more than {MAX_SEGMENT_TOKENS} tokens: no prompt segment is that long",
                        r.max
                    ),
                ));
            }
            Ok(())
        };
        range("system_prompts.tokens", &self.system_prompts.tokens)?;
        if self.system_prompts.count > MAX_SYSTEM_PROMPTS {
            return Err(gerr(
                "system_prompts.count",
                format!(
                    "{} is more than {MAX_SYSTEM_PROMPTS} distinct system prompts",
                    self.system_prompts.count
                ),
            ));
        }
        let system = u64::from(self.system_prompts.tokens.max);
        for (i, s) in self.sessions.iter().enumerate() {
            let f = |k: &str| format!("sessions[{i}].{k}");
            // The longest prompt the session can reach: the system prompt, the base and
            // every earlier request's new tokens and output (u64: no wrap).
            let longest = match s {
                SessionKind::Chat {
                    turns,
                    user_tokens,
                    output_tokens,
                    ..
                } => {
                    range(&f("user_tokens"), user_tokens)?;
                    range(&f("output_tokens"), output_tokens)?;
                    system
                        + u64::from(turns.max)
                            * (u64::from(user_tokens.max) + u64::from(output_tokens.max))
                }
                SessionKind::Agentic {
                    loops,
                    context_tokens,
                    append_tokens,
                    output_tokens,
                    ..
                } => {
                    range(&f("context_tokens"), context_tokens)?;
                    range(&f("append_tokens"), append_tokens)?;
                    range(&f("output_tokens"), output_tokens)?;
                    system
                        + u64::from(context_tokens.max)
                        + u64::from(loops.max)
                            * (u64::from(append_tokens.max) + u64::from(output_tokens.max))
                }
            };
            if longest > MAX_PROMPT_TOKENS {
                return Err(gerr(
                    &format!("sessions[{i}]"),
                    format!(
                        "a session's prompt can grow to {longest} tokens (its turns/loops times its new tokens and output, plus the system prompt): more than {MAX_PROMPT_TOKENS}; lower the turns or the token ranges"
                    ),
                ));
            }
        }
        let rate = match self.arrivals {
            Arrivals::Poisson { rate_per_s } => rate_per_s,
            Arrivals::Gamma { rate_per_s, cv } => {
                if !(cv.is_finite() && cv > 0.0) {
                    return Err(gerr("arrivals.cv", "must be a positive number"));
                }
                rate_per_s
            }
        };
        if !(rate.is_finite() && rate > 0.0) {
            return Err(gerr("arrivals.rate_per_s", "must be a positive number"));
        }
        if !(MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&rate) {
            return Err(gerr(
                "arrivals.rate_per_s",
                format!(
                    "{rate} sessions/s is outside [{MIN_RATE_PER_S}, {MAX_RATE_PER_S}]: timestamps would overflow or collapse"
                ),
            ));
        }
        let sp = &self.system_prompts;
        if sp.count > 0 && !(sp.zipf_s.is_finite() && sp.zipf_s >= 0.0) {
            return Err(gerr("system_prompts.zipf_s", "must be a number ≥ 0"));
        }
        if self.sessions.is_empty() {
            return Err(gerr("sessions", "needs at least one session kind"));
        }
        let mut total = 0.0;
        for (i, s) in self.sessions.iter().enumerate() {
            let w = s.weight();
            if !(w.is_finite() && w >= 0.0) {
                return Err(gerr(&format!("sessions[{i}].weight"), "must be ≥ 0"));
            }
            total += w;
            let (count, think) = match s {
                SessionKind::Chat {
                    turns,
                    think_time_s,
                    ..
                } => (turns, think_time_s),
                SessionKind::Agentic {
                    loops,
                    think_time_s,
                    ..
                } => (loops, think_time_s),
            };
            if count.min == 0 || count.max < count.min {
                return Err(gerr(
                    &format!("sessions[{i}]"),
                    "turns/loops must be a range with 1 ≤ min ≤ max",
                ));
            }
            if !(think.is_finite() && *think >= 0.0) {
                return Err(gerr(&format!("sessions[{i}].think_time_s"), "must be ≥ 0"));
            }
            if *think > MAX_THINK_TIME_S {
                return Err(gerr(
                    &format!("sessions[{i}].think_time_s"),
                    format!(
                        "{think} s is more than {MAX_THINK_TIME_S} s (11.6 days) between turns"
                    ),
                ));
            }
        }
        if total <= 0.0 {
            return Err(gerr("sessions", "weights sum to zero"));
        }
        Ok(())
    }
}

/// A session in flight.
struct Session {
    rng: SimRng,
    kind: usize,
    /// Requests still to send after the current one.
    remaining: u32,
    index: u64,
    turn: u32,
    /// Chained hashes of the complete blocks so far.
    blocks: Vec<u64>,
    /// Running state of the partial tail block and how many tokens it holds.
    tail_state: u64,
    tail_tokens: u32,
    tokens: u32,
    /// The answer of the previous request, appended before the next one.
    pending_output: u32,
}

const BLOCK_SEED: u64 = 0x6B76_6361_6368_6500; // "kvcache\0"

impl Session {
    /// Append `len` tokens of segment `seg` to the context.
    fn append(&mut self, seg: u64, len: u32, block_size: u32) {
        let mut off = 0u32;
        while off < len {
            let take = (block_size - self.tail_tokens).min(len - off);
            self.tail_state = mix(self.tail_state ^ seg, ((off as u64) << 32) | take as u64);
            self.tail_tokens += take;
            off += take;
            if self.tail_tokens == block_size {
                self.blocks.push(self.tail_state);
                // the next block folds on from this block's hash: chained
                self.tail_tokens = 0;
            }
        }
        self.tokens += len;
    }

    fn block_hashes(&self, out: &mut Vec<u64>) {
        out.clear();
        out.extend_from_slice(&self.blocks);
        if self.tail_tokens > 0 {
            out.push(mix(self.tail_state, 0xFFFF));
        }
    }
}

/// Streams [`BlockRecord`]s (block hashes at `cfg.block_size`) in arrival order.
pub struct RecordGenerator {
    cfg: GeneratorConfig,
    seed: u64,
    arrivals_rng: SimRng,
    gap: GapDist,
    zipf: Option<Zipf<f64>>,
    system_lens: Vec<u32>,
    weights_total: f64,
    next_start_ns: u64,
    next_session: u64,
    emitted: u64,
    /// (arrival, session) of each session's next request.
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    sessions: FxHashMap<u64, Session>,
}

enum GapDist {
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
}

impl GapDist {
    fn draw_ns(&self, rng: &mut SimRng) -> u64 {
        let s = match self {
            GapDist::Exp(d) => d.sample(rng),
            GapDist::Gamma(d) => d.sample(rng),
        };
        secs_to_us_ns(s)
    }
}

/// Seconds to nanoseconds, quantised to whole microseconds (so a written trace with
/// millisecond timestamps to three decimals reads back exactly).
fn secs_to_us_ns(s: f64) -> u64 {
    ((s * 1e6).round().max(0.0) as u64) * 1_000
}

impl RecordGenerator {
    pub fn new(cfg: GeneratorConfig, seed: u64) -> Result<Self, GeneratorError> {
        cfg.validate()?;
        let gap = match cfg.arrivals {
            Arrivals::Poisson { rate_per_s } => GapDist::Exp(
                Exp::new(rate_per_s).map_err(|e| gerr("arrivals.rate_per_s", e.to_string()))?,
            ),
            Arrivals::Gamma { rate_per_s, cv } => {
                let shape = 1.0 / (cv * cv);
                GapDist::Gamma(
                    Gamma::new(shape, 1.0 / (rate_per_s * shape))
                        .map_err(|e| gerr("arrivals", e.to_string()))?,
                )
            }
        };
        let sp = &cfg.system_prompts;
        let zipf = if sp.count > 0 {
            Some(
                Zipf::new(sp.count as f64, sp.zipf_s)
                    .map_err(|e| gerr("system_prompts", e.to_string()))?,
            )
        } else {
            None
        };
        let mut sys_rng = stream(seed, u64::MAX);
        let system_lens = (0..sp.count)
            .map(|_| sp.tokens.draw(&mut sys_rng))
            .collect();
        let weights_total = cfg.sessions.iter().map(SessionKind::weight).sum();
        Ok(RecordGenerator {
            seed,
            arrivals_rng: stream(seed, 0),
            gap,
            zipf,
            system_lens,
            weights_total,
            next_start_ns: 0,
            next_session: 0,
            emitted: 0,
            queue: BinaryHeap::new(),
            sessions: FxHashMap::default(),
            cfg,
        })
    }

    /// Create session `k` arriving at `now`.
    fn start_session(&mut self, now: u64) -> u64 {
        let k = self.next_session;
        self.next_session += 1;
        let mut rng = stream(self.seed, k + 1);
        // kind by weight
        let mut x = rng.random::<f64>() * self.weights_total;
        let mut kind = self.cfg.sessions.len() - 1;
        for (i, s) in self.cfg.sessions.iter().enumerate() {
            if x < s.weight() {
                kind = i;
                break;
            }
            x -= s.weight();
        }
        let mut s = Session {
            rng,
            kind,
            remaining: 0,
            index: k,
            turn: 0,
            blocks: Vec::new(),
            tail_state: BLOCK_SEED,
            tail_tokens: 0,
            tokens: 0,
            pending_output: 0,
        };
        let bs = self.cfg.block_size;
        if let Some(z) = &self.zipf {
            let p = (z.sample(&mut s.rng) as u32).clamp(1, self.system_lens.len() as u32) - 1;
            s.append(
                mix(0x5359_5354_454D, p as u64),
                self.system_lens[p as usize],
                bs,
            );
        }
        match &self.cfg.sessions[kind] {
            SessionKind::Chat { turns, .. } => {
                s.remaining = turns.draw(&mut s.rng);
            }
            SessionKind::Agentic {
                context_tokens,
                loops,
                ..
            } => {
                let ctx = context_tokens.draw(&mut s.rng);
                s.append(mix(k, 0xC0_17E7), ctx, bs);
                s.remaining = loops.draw(&mut s.rng);
            }
        }
        self.sessions.insert(k, s);
        self.queue.push(Reverse((now, k)));
        k
    }

    /// Build session `k`'s next request at `now` into `rec`, schedule its successor.
    fn emit(&mut self, k: u64, now: u64, rec: &mut BlockRecord) {
        let bs = self.cfg.block_size;
        let kind = self.sessions[&k].kind;
        let s = self.sessions.get_mut(&k).expect("live session");
        if s.pending_output > 0 {
            let out = s.pending_output;
            s.append(mix(s.index, 0x0A00_0000 | s.turn as u64), out, bs);
        }
        let (append, output, think) = match &self.cfg.sessions[kind] {
            SessionKind::Chat {
                user_tokens,
                output_tokens,
                think_time_s,
                ..
            } => (*user_tokens, *output_tokens, *think_time_s),
            SessionKind::Agentic {
                append_tokens,
                output_tokens,
                think_time_s,
                ..
            } => {
                // the first loop request carries the task context only
                let a = if s.turn == 0 {
                    Range::fixed(0)
                } else {
                    *append_tokens
                };
                (a, *output_tokens, *think_time_s)
            }
        };
        let a = append.draw(&mut s.rng);
        if a > 0 {
            s.append(mix(s.index, 0x0B00_0000 | s.turn as u64), a, bs);
        }
        let out = output.draw(&mut s.rng).max(1);
        s.pending_output = out;
        rec.index = self.emitted;
        rec.line = self.emitted as usize + 1;
        rec.arrival_ns = now;
        rec.input_tokens = s.tokens;
        rec.output_tokens = out;
        s.block_hashes(&mut rec.block_hashes);
        s.turn += 1;
        s.remaining -= 1;
        if s.remaining == 0 {
            self.sessions.remove(&k);
        } else {
            let gap = if think > 0.0 {
                let d = Exp::new(1.0 / think).expect("validated think time");
                secs_to_us_ns(d.sample(&mut s.rng))
            } else {
                0
            };
            self.queue.push(Reverse((now + gap, k)));
        }
        self.emitted += 1;
    }

    /// The next record into `rec`; `false` once `cfg.requests` were produced.
    pub fn next_into(&mut self, rec: &mut BlockRecord) -> bool {
        if self.emitted >= self.cfg.requests {
            return false;
        }
        // sessions already waiting go first on a tie with a new session's start
        loop {
            match self.queue.peek() {
                Some(&Reverse((t, k))) if t <= self.next_start_ns => {
                    self.queue.pop();
                    self.emit(k, t, rec);
                    return true;
                }
                _ => {
                    let now = self.next_start_ns;
                    self.start_session(now);
                    self.next_start_ns = now + self.gap.draw_ns(&mut self.arrivals_rng);
                }
            }
        }
    }

    pub fn config(&self) -> &GeneratorConfig {
        &self.cfg
    }
}

impl Iterator for RecordGenerator {
    type Item = BlockRecord;

    fn next(&mut self) -> Option<BlockRecord> {
        let mut rec = BlockRecord::default();
        self.next_into(&mut rec).then_some(rec)
    }
}

/// Streams [`Request`]s at `cfg.page_size`.
pub struct RequestGenerator {
    records: RecordGenerator,
    reblocker: Reblocker,
    rec: BlockRecord,
}

impl Iterator for RequestGenerator {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if !self.records.next_into(&mut self.rec) {
            return None;
        }
        let mut page_hashes: Vec<PageHash> = Vec::new();
        self.reblocker
            .page_hashes(
                &self.rec.block_hashes,
                self.rec.input_tokens,
                &mut page_hashes,
            )
            .expect("generated rows list every block");
        Some(Request {
            id: self.rec.index,
            arrival_ns: self.rec.arrival_ns,
            input_tokens: self.rec.input_tokens,
            output_tokens: self.rec.output_tokens,
            page_hashes,
        })
    }
}

/// Generated trace rows (block hashes at `cfg.block_size`), e.g. to write a file.
pub fn generate_records(
    cfg: &GeneratorConfig,
    seed: u64,
) -> Result<RecordGenerator, GeneratorError> {
    RecordGenerator::new(cfg.clone(), seed)
}

/// Generated requests at `cfg.page_size`.
pub fn generate(cfg: &GeneratorConfig, seed: u64) -> Result<RequestGenerator, GeneratorError> {
    let records = RecordGenerator::new(cfg.clone(), seed)?;
    let reblocker = Reblocker::new(cfg.block_size, cfg.page_size)
        .map_err(|e| gerr("page_size", e.to_string()))?;
    Ok(RequestGenerator {
        records,
        reblocker,
        rec: BlockRecord::default(),
    })
}

/// Seconds as virtual nanoseconds (for callers building configs in code).
pub fn secs_ns(s: f64) -> u64 {
    (s * NS_PER_S as f64).round() as u64
}
