//! One start-up run as events. Per rank: process start (after its arrival offset and
//! jitter), the weight load filling the page cache, the device pool, then the host pools
//! sized under the version's rules — sampled live per pool, or from one snapshot agreed
//! by a world MIN all-reduce — and pinned step by step, so that a later rank's sample
//! sees what earlier ranks have pinned so far. Outcome: started, refused (SGLang's exact
//! message) or OOM-killed.
//!
//! A rank that is refused or killed exits and its memory is freed (the page cache it
//! read stays charged to the job, as in the kernel).

use crate::engine::{SimRng, SmallEventQueue};
use crate::hardware::{CgroupRead, ChargeKind, HostMemory, HostMemoryView};
use crate::release::log_lines::{self, AttachFailure, ErrorKind, LogEvent, SmallHostLine};
use crate::sizing::{self, BudgetScope, ExplicitPath, SmallHostCheck};
use crate::units::Nanos;

use super::plan::{HicacheSizing, MAX_HOST_POOLS, StartupPlan};

/// How a rank's start-up ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Started,
    Refused,
    /// Start-up raised before sizing read any memory: 0.5.14's (`pre-28614`)
    /// `AssertionError` for a host pool not larger than the device pool.
    Failed,
    /// `cudaHostRegister` failed (a pin limit): SGLang raises `RuntimeError`.
    PinFailed,
    OomKilled,
}

impl Outcome {
    pub fn id(self) -> &'static str {
        match self {
            Outcome::Started => "started",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
            Outcome::PinFailed => "pin_failed",
            Outcome::OomKilled => "oom_killed",
        }
    }
}

/// The binding pool's name where one booking covers every host pool a rank builds
/// (auto-size's budget is the sum of the pools).
pub const ALL_HOST_POOLS: &str = "all";

/// One host pool a rank built (or tried to).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PoolResult {
    pub name: &'static str,
    pub tokens: u64,
    pub requested_bytes: u64,
    /// The figure the pool was checked against (per-rank share, or the remaining
    /// booking allowance).
    pub budget_bytes: i128,
}

/// What happened to one rank in one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RankResult {
    pub rank: u32,
    pub node: u32,
    pub outcome: Outcome,
    pub arrived_at: Nanos,
    /// When the rank (first) read host memory for its pools.
    pub sampled_at: Option<Nanos>,
    pub ready_at: Option<Nanos>,
    /// psutil's `available` at that sample.
    pub psutil_available: Option<u64>,
    /// `available_host_memory_bytes()` (psutil bounded by the cgroup, per version).
    pub available_bytes: Option<i128>,
    /// Budget of the binding pool (the refused one, or the one with the least margin).
    pub budget_bytes: Option<i128>,
    pub requested_bytes: Option<u64>,
    /// `budget - requested` of the binding pool.
    pub margin_bytes: Option<i128>,
    /// The binding pool's name (`kv`, `indexer`, …), or [`ALL_HOST_POOLS`] where one
    /// booking covers every pool (auto-size).
    pub binding_pool: Option<&'static str>,
    /// The ratio auto-sizing settled on (after the MIN all-reduce).
    pub fitted_ratio: Option<f64>,
    pub pools: Vec<PoolResult>,
    /// SGLang's message when refused, the OOM kill's description when killed.
    pub message: Option<String>,
    /// Page cache the kernel reclaimed while this rank charged memory.
    pub reclaimed_bytes: u64,
    /// HiCache was switched off (auto-hicache below its minimum ratio).
    pub hicache_off: bool,
    /// SGLang's log lines of this rank as numbers, in the order it prints them
    /// (rendered by `release::log_lines::render` at report time).
    pub log: Vec<LogEvent>,
}

impl RankResult {
    fn new(rank: u32, node: u32, arrived_at: Nanos) -> Self {
        RankResult {
            rank,
            node,
            outcome: Outcome::Started,
            arrived_at,
            sampled_at: None,
            ready_at: None,
            psutil_available: None,
            available_bytes: None,
            budget_bytes: None,
            requested_bytes: None,
            margin_bytes: None,
            binding_pool: None,
            fitted_ratio: None,
            pools: Vec::new(),
            message: None,
            reclaimed_bytes: 0,
            hicache_off: false,
            log: Vec::new(),
        }
    }

    /// As `new`, keeping the pools and log buffers.
    fn reset(&mut self, rank: u32, node: u32, arrived_at: Nanos) {
        let mut pools = std::mem::take(&mut self.pools);
        pools.clear();
        let mut log = std::mem::take(&mut self.log);
        log.clear();
        *self = RankResult {
            pools,
            log,
            ..RankResult::new(rank, node, arrived_at)
        };
    }
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Start(u32),
    LoadStep(u32, u32),
    Size(u32),
    PinStep(u32),
    /// V5's attach gate completed with this many failed ranks.
    GateDone(u32, u32),
}

/// Per-rank progress.
#[derive(Debug, Clone, Default)]
struct RankState {
    node: u32,
    alive: bool,
    /// Index of the pool being built.
    pool: usize,
    /// Bytes of the current pool still to pin, and per step.
    pin_left: u64,
    pin_step_bytes: u64,
    pin_step_ns: Nanos,
    /// Bytes pinned so far (all pools), to free on exit.
    pinned: u64,
    /// Booking allowance when pools book against one budget, and what it opened with.
    scope: Option<BudgetScope>,
    scope_budget: i128,
    /// Host tokens (or state slots) of each pool, in pool order.
    host_tokens: [u64; MAX_HOST_POOLS],
    /// Value this rank contributes to the world MIN all-reduce.
    reduce_value: f64,
    reduce_budget: i128,
    /// V5: this rank's build failed inside the attach gate this attempt.
    attach_failed: bool,
    /// The weight offload's pinned host memory is charged (freed on an OOM kill).
    offload_charged: bool,
}

/// Copies a plan's per-pool counts into a rank's fixed slots (no allocation per run).
fn set_pools(dst: &mut [u64; MAX_HOST_POOLS], src: &[u64]) {
    dst[..src.len()].copy_from_slice(src);
}

/// Reusable buffers for runs (Monte Carlo keeps allocations out of the loop).
#[derive(Debug)]
pub struct Scratch {
    /// Whether refused, failed and killed ranks get their message text (default). The
    /// Monte Carlo turns it off for the runs it only tallies: formatting SGLang's text
    /// is most of a refused rank's cost, and the tally reads only numbers.
    pub messages: bool,
    queue: SmallEventQueue<Ev>,
    nodes: Vec<HostMemory>,
    /// Whether each node's pre-sizing reclaim has happened.
    reclaimed: Vec<bool>,
    ranks: Vec<RankState>,
    pub results: Vec<RankResult>,
    /// Ranks waiting in the world all-reduce.
    waiting: Vec<u32>,
    /// Ranks waiting in V5's attach gate (SUM all-reduce of failures).
    gate: Vec<u32>,
    /// What the last sample read (overwritten in place: it holds the cgroup chain inline).
    view: Option<HostMemoryView>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            messages: true,
            queue: SmallEventQueue::default(),
            nodes: Vec::new(),
            reclaimed: Vec::new(),
            ranks: Vec::new(),
            results: Vec::new(),
            waiting: Vec::new(),
            gate: Vec::new(),
            view: None,
        }
    }
}

/// Runs one start-up with `rng` drawing the jitter; results land in `scratch.results`.
pub fn simulate(plan: &StartupPlan, rng: &mut SimRng, scratch: &mut Scratch) {
    let world = plan.world_size as usize;
    scratch.reclaimed.clear();
    scratch.reclaimed.resize(plan.nnodes as usize, false);
    scratch.queue.reset();
    scratch.waiting.clear();
    scratch.gate.clear();
    scratch.nodes.truncate(plan.nnodes as usize);
    for n in 0..plan.nnodes as usize {
        let template = &plan.nodes[n].memory;
        if n < scratch.nodes.len() {
            scratch.nodes[n].reset_to(template);
        } else {
            scratch.nodes.push(template.clone());
        }
    }
    scratch.ranks.clear();
    // Results are reset in place so a Monte Carlo run allocates nothing but messages.
    scratch.results.truncate(world);
    for r in 0..world as u32 {
        let node = r / plan.ranks_per_node.max(1);
        let arrive = plan.offsets[r as usize].saturating_add(plan.jitter.draw(rng));
        scratch.ranks.push(RankState {
            node,
            alive: true,
            ..RankState::default()
        });
        if let Some(res) = scratch.results.get_mut(r as usize) {
            res.reset(r, node, arrive);
        } else {
            scratch.results.push(RankResult::new(r, node, arrive));
        }
        scratch.queue.schedule_at(arrive, Ev::Start(r));
    }
    Sim { plan, s: scratch }.run();
}

struct Sim<'a> {
    plan: &'a StartupPlan,
    s: &'a mut Scratch,
}

impl Sim<'_> {
    fn run(&mut self) {
        while let Some(s) = self.s.queue.pop() {
            match s.event {
                Ev::Start(r) => self.start(r),
                Ev::LoadStep(r, k) => self.load_step(r, k),
                Ev::Size(r) => self.size(r),
                Ev::PinStep(r) => self.pin_step(r),
                Ev::GateDone(r, failed) => self.gate_done(r, failed),
            }
        }
        // A collective that never completed (a peer died before reaching it): the
        // survivors hang in SGLang; report them as refused with the reason.
        for &r in self.s.waiting.iter().chain(self.s.gate.iter()) {
            let res = &mut self.s.results[r as usize];
            res.outcome = Outcome::Refused;
            res.message = Some("a peer rank exited before the host-memory all-reduce; this rank would hang until the collective times out".into());
        }
    }

    /// Charges `bytes` to the job cgroup for rank `r`. If the kernel cannot make room,
    /// the charging rank is the OOM victim — an estimate: the kernel's OOM killer picks
    /// the task with the largest badness score (`mm/oom_kill.c: oom_badness`), usually
    /// but not always the one allocating; `memory.oom.group` would kill every rank.
    fn charge(&mut self, r: u32, kind: ChargeKind, bytes: u64) -> bool {
        let node = self.s.ranks[r as usize].node as usize;
        match self.s.nodes[node].charge(self.plan.nodes[node].job_cgroup, kind, bytes) {
            Ok(o) => {
                self.s.results[r as usize].reclaimed_bytes += o.reclaimed;
                true
            }
            Err(oom) => {
                self.oom_killed(r, &oom);
                false
            }
        }
    }

    /// Out of line: rare, and it formats the kill's text.
    #[cold]
    #[inline(never)]
    fn oom_killed(&mut self, r: u32, oom: &crate::hardware::Oom) {
        if self.s.messages {
            self.s.results[r as usize].message = Some(oom.to_string());
        }
        self.exit(r, Outcome::OomKilled);
    }

    /// The rank's process exits: its anonymous memory and pinned pools are freed.
    /// The rank stops. A refused rank raises `ValueError` and holds its memory until the
    /// launcher tears the job down (`launch_server` kills the whole process tree), so
    /// peers that sample meanwhile still see it; an OOM-killed rank's memory is freed
    /// by the kernel at once.
    fn exit(&mut self, r: u32, outcome: Outcome) {
        let kind = match outcome {
            Outcome::Refused => Some(ErrorKind::ValueError),
            Outcome::Failed => Some(ErrorKind::AssertionError),
            Outcome::PinFailed => Some(ErrorKind::RuntimeError),
            Outcome::Started | Outcome::OomKilled => None,
        };
        self.exit_raising(r, outcome, kind)
    }

    /// [`Self::exit`] with the exception SGLang raises (`None`: killed, or started).
    fn exit_raising(&mut self, r: u32, outcome: Outcome, kind: Option<ErrorKind>) {
        let st = &mut self.s.ranks[r as usize];
        if !st.alive {
            return;
        }
        st.alive = false;
        if let Some(k) = kind {
            self.s.results[r as usize].log.push(LogEvent::Error(k));
        }
        if outcome != Outcome::OomKilled {
            self.s.results[r as usize].outcome = outcome;
            return;
        }
        let (node, pinned, offload) = (st.node as usize, st.pinned, st.offload_charged);
        let cg = self.plan.nodes[node].job_cgroup;
        let mem = &mut self.s.nodes[node];
        mem.uncharge(cg, self.plan.pin_kind, pinned);
        if offload {
            mem.uncharge(cg, self.plan.offload_kind, self.plan.offload_host_bytes);
        }
        mem.uncharge(cg, ChargeKind::Anon, self.plan.process_memory);
        self.s.results[r as usize].outcome = outcome;
    }

    /// The process starts and builds its model: the weight offload pins its host copies
    /// layer by layer as the model is built (`utils/offloader.py: _CpuParamOffloader`,
    /// `OffloaderV1.maybe_offload_to_cpu`), before the weights are read — or the build
    /// raises (`StartupPlan::build_failure`).
    fn start(&mut self, r: u32) {
        let p = self.plan;
        if !self.charge(r, ChargeKind::Anon, p.process_memory) {
            return;
        }
        if let Some((kind, message)) = &p.build_failure {
            if self.s.messages {
                self.s.results[r as usize].message = Some(message.clone());
            }
            return self.exit_raising(r, Outcome::Failed, Some(*kind));
        }
        if p.offload_host_bytes > 0 {
            if !self.charge(r, p.offload_kind, p.offload_host_bytes) {
                return;
            }
            self.s.ranks[r as usize].offload_charged = true;
        }
        self.schedule_load(r, 0);
    }

    fn schedule_load(&mut self, r: u32, k: u32) {
        let p = self.plan;
        self.s.queue.schedule_in(p.load_step_ns, Ev::LoadStep(r, k));
    }

    fn load_step(&mut self, r: u32, k: u32) {
        let p = self.plan;
        let steps = p.load_steps.max(1);
        if p.load_through_cache {
            let bytes = p.load_bytes_per_rank / steps as u64
                + if k + 1 == steps {
                    p.load_bytes_per_rank % steps as u64
                } else {
                    0
                };
            if !self.charge(r, ChargeKind::PageCache, bytes) {
                return;
            }
        }
        if k + 1 < steps {
            self.schedule_load(r, k + 1);
        } else {
            self.s.queue.schedule_in(p.post_load, Ev::Size(r));
        }
    }

    /// The host pools are about to be built: sample, or join the all-reduce.
    fn size(&mut self, r: u32) {
        let p = self.plan;
        // The model runner raises after the load, before any host pool.
        if let Some(f) = &p.device_failure {
            if self.s.messages {
                self.s.results[r as usize].message = Some(f.message.clone());
            }
            return self.exit_raising(r, Outcome::Failed, Some(f.kind));
        }
        let node = self.s.ranks[r as usize].node as usize;
        if p.reclaimed_per_node > 0 && !self.s.reclaimed[node] {
            self.s.reclaimed[node] = true;
            self.s.nodes[node].drop_page_cache(p.nodes[node].job_cgroup, p.reclaimed_per_node);
        }
        match p.sizing {
            HicacheSizing::Off => self.ready(r),
            HicacheSizing::Explicit { .. } => match p.rules.explicit_path {
                ExplicitPath::LivePerPool | ExplicitPath::LiveWholeHeadroom => {
                    self.build_pool_live(r)
                }
                ExplicitPath::SnapshotMinAllReduce => {
                    let Some(budget) = self.sample_budget(r) else {
                        return;
                    };
                    self.s.ranks[r as usize].reduce_budget = budget;
                    self.arrive_collective(r);
                }
            },
            HicacheSizing::AutoSize {
                fraction,
                default_ratio,
            } => {
                let Some(share) = self.sample_budget(r) else {
                    return;
                };
                let budget = sizing::auto_size_budget(share, fraction);
                let st = &mut self.s.ranks[r as usize];
                st.reduce_budget = budget;
                st.reduce_value = sizing::auto_size_ratio(default_ratio, budget, p.device_bytes);
                self.arrive_collective(r);
            }
            HicacheSizing::AutoHicache { fraction } => {
                let Some(share) = self.sample_budget(r) else {
                    return;
                };
                // A rank below the minimum votes 0, with SGLang's reason; its peers then
                // report that another rank cannot host the tier.
                let vote = match sizing::auto_hicache_ratio(share, fraction, p.device_bytes) {
                    Ok(plan) => plan.ratio,
                    Err(reason) => {
                        let res = &mut self.s.results[r as usize];
                        if res.message.is_none() {
                            res.message = Some(format!("HiCache off: {reason}"));
                        }
                        0.0
                    }
                };
                let st = &mut self.s.ranks[r as usize];
                st.reduce_budget = sizing::auto_size_budget(share, fraction);
                st.reduce_value = vote;
                self.arrive_collective(r);
            }
        }
    }

    /// Reads `available` now (`Rules::available`, or `available_auto` when auto-sizing,
    /// which never falls back to psutil) and turns it into the figure this version checks:
    /// the per-rank share, or the whole headroom (`LiveWholeHeadroom`). A cgroup read error
    /// refuses the rank with SGLang's message.
    fn sample_budget(&mut self, r: u32) -> Option<i128> {
        let p = self.plan;
        let node = self.s.ranks[r as usize].node as usize;
        let s = &mut *self.s;
        let view = s.view.get_or_insert(HostMemoryView {
            psutil_available: 0,
            cgroup: CgroupRead::NoProcfs,
        });
        s.nodes[node].snapshot_into(p.nodes[node].job_cgroup, view);
        let now = s.queue.now();
        // The figure checked comes from the sizing rules' own entry points (the ones
        // SGLang's unit-test cases are asserted against): `explicit_budget` for explicit
        // sizes, `per_rank_share` (never falling back to psutil) for auto-sizing — here
        // as `read_available` (one headroom walk) and their `_of` halves.
        let explicit = matches!(p.sizing, HicacheSizing::Explicit { .. });
        let read = p.rules.read_available(view, explicit);
        let res = &mut s.results[r as usize];
        // 0.5.21+ `available_host_memory_bytes` logs both figures when a cgroup bounds.
        if p.log_rules.headroom_line
            && let Some(h) = read.headroom
        {
            res.log.push(LogEvent::Headroom {
                host: view.psutil_available,
                cgroup: h,
            });
        }
        if res.sampled_at.is_none() {
            res.sampled_at = Some(now);
            res.psutil_available = Some(view.psutil_available);
        }
        let budget = read.available.map(|avail| {
            // For the report only: what `available_host_memory_bytes()` returned.
            if res.available_bytes.is_none() {
                res.available_bytes = Some(avail);
            }
            if explicit {
                p.rules.explicit_budget_of(avail, p.ranks_per_host)
            } else {
                p.rules.per_rank_share_of(avail, p.ranks_per_host)
            }
        });
        match budget {
            Ok(budget) => Some(budget),
            Err(e) if matches!(p.sizing, HicacheSizing::AutoHicache { .. }) => {
                // V5 (`hicache_auto.py`): an unreadable limit blocks auto mode on this
                // rank; it votes 0 in the MIN and the tier stays off everywhere.
                res.message = Some(format!(
                    "HiCache off: the host memory limit cannot be read ({e})"
                ));
                Some(0)
            }
            Err(e) => {
                res.message = Some(e.to_string());
                self.exit(r, Outcome::Refused);
                None
            }
        }
    }

    /// The one world MIN all-reduce before any pool is built: of the explicit-size
    /// snapshot (`pool_host/base.py: explicit_host_memory_budget`, int64 MIN over the
    /// world group) or of the auto-size ratio (`mem_cache/hicache_auto_size.py:
    /// auto_size_hicache`, float64 MIN over the world CPU group).
    fn arrive_collective(&mut self, r: u32) {
        self.s.waiting.push(r);
        // A world collective completes only when every rank of the world has joined; if
        // a peer exited first, the others wait forever (reported at the end of the run).
        if self.s.waiting.len() < self.plan.world_size as usize {
            return;
        }
        // The whole world is here: MIN over it, then all proceed at this instant.
        let min_budget = self
            .s
            .waiting
            .iter()
            .map(|&w| self.s.ranks[w as usize].reduce_budget)
            .min()
            .unwrap_or(0);
        let min_ratio = self
            .s
            .waiting
            .iter()
            .map(|&w| self.s.ranks[w as usize].reduce_value)
            .fold(f64::INFINITY, f64::min);
        // Taken out (and put back) to call `&mut self` methods while iterating, keeping
        // the buffer's allocation for the next run.
        let members = std::mem::take(&mut self.s.waiting);
        for &w in &members {
            self.after_collective(w, min_budget, min_ratio);
        }
        self.s.waiting = members;
        self.s.waiting.clear();
    }

    fn after_collective(&mut self, r: u32, min_budget: i128, min_ratio: f64) {
        let p = self.plan;
        match p.sizing {
            HicacheSizing::Off => return self.ready(r),
            HicacheSizing::Explicit { .. } => {
                let st = &mut self.s.ranks[r as usize];
                st.scope = Some(BudgetScope::new(min_budget));
                st.scope_budget = min_budget;
                set_pools(&mut st.host_tokens, &p.fixed_host_tokens);
            }
            HicacheSizing::AutoHicache { .. } if min_ratio < sizing::AUTO_HICACHE_MIN_RATIO => {
                let res = &mut self.s.results[r as usize];
                res.hicache_off = true;
                if res.message.is_none() {
                    res.message =
                        Some("HiCache off: another rank cannot host the tier".to_string());
                }
                res.log.push(LogEvent::AutoOff { failed_ranks: 0 });
                return self.ready(r);
            }
            HicacheSizing::AutoSize { .. } | HicacheSizing::AutoHicache { .. } => {
                if let Err(e) = sizing::check_auto_size_ratio(min_ratio) {
                    self.s.results[r as usize].message = Some(e.to_string());
                    return self.exit(r, Outcome::Refused);
                }
                let tokens = p.host_tokens(Some(min_ratio));
                if let HicacheSizing::AutoSize {
                    fraction,
                    default_ratio,
                } = p.sizing
                    && p.log_rules.auto_size_line
                {
                    let budget = self.s.ranks[r as usize].reduce_budget;
                    self.s.results[r as usize].log.push(LogEvent::AutoSize {
                        requested: default_ratio,
                        ratio: min_ratio,
                        budget,
                        fraction,
                        ranks_per_host: p.ranks_per_host,
                        device_bytes: p.device_bytes,
                    });
                }
                self.s.results[r as usize].fitted_ratio = Some(min_ratio);
                let st = &mut self.s.ranks[r as usize];
                st.scope = Some(BudgetScope::new(st.reduce_budget));
                st.scope_budget = st.reduce_budget;
                set_pools(&mut st.host_tokens, &tokens);
            }
        }
        self.build_pool_booked(r);
    }

    fn pool_request(&self, pool: usize, tokens: u64) -> u64 {
        tokens * self.plan.pools[pool].bytes_per_token
    }

    /// Live path: each pool samples `available` in its constructor.
    fn build_pool_live(&mut self, r: u32) {
        let p = self.plan;
        let pool = self.s.ranks[r as usize].pool;
        if pool >= p.pools.len() {
            return self.ready(r);
        }
        if pool == 0 {
            let fixed = &self.plan.fixed_host_tokens;
            set_pools(&mut self.s.ranks[r as usize].host_tokens, fixed);
        }
        let tokens = self.s.ranks[r as usize].host_tokens[pool];
        // 0.5.14 `pool_host/base.py: HostKVCache.__init__` asserts `self.size >
        // device_pool.size` *before* `psutil.virtual_memory()`: no budget was read, so
        // none is reported, and the rank fails rather than being refused.
        if let SmallHostCheck::AssertionFailed(m) = sizing::check_small_host(
            p.rules.small_host,
            tokens,
            p.pools[pool].spec.device_capacity,
        ) {
            self.s.results[r as usize].message = Some(m.to_string());
            return self.exit(r, Outcome::Failed);
        }
        self.log_small_host(r, pool, tokens);
        let Some(budget) = self.sample_budget(r) else {
            return;
        };
        let requested = self.pool_request(pool, tokens);
        self.check_and_pin(r, pool, tokens, requested, budget);
    }

    /// `HostKVCache.__init__` warns before its budget check when the host pool is not
    /// larger than the device pool (0.5.15+; the DSA indexer pool copies the KV pool's
    /// slots and does not warn).
    fn log_small_host(&mut self, r: u32, pool: usize, tokens: u64) {
        let p = self.plan;
        let name = p.pools[pool].name;
        let device = p.pools[pool].spec.device_capacity;
        // Neither the DSA indexer pool (it copies the KV pool's slots) nor the
        // DeepSeek-V4 pools (no `HostKVCache.__init__`) warn.
        if p.log_rules.small_host != SmallHostLine::Asserts
            && name != "indexer"
            && p.pools[pool].dsv4.is_none()
            && tokens <= device
        {
            let label = p.pools[pool].label;
            self.s.results[r as usize].log.push(LogEvent::SmallHost {
                pool: label,
                host_tokens: tokens,
                device_tokens: device,
            });
        }
    }

    fn log_allocating(&mut self, r: u32, pool: usize, tokens: u64, bytes: u64) {
        let p = self.plan;
        let label = p.pools[pool].label;
        let event = match p.pools[pool].dsv4 {
            Some(v4) => LogEvent::AllocatingV4 {
                pool: label,
                state: v4.state,
                layers: v4.layers,
                pages: tokens,
                item_bytes: v4.item_bytes,
                bytes,
                layout: p.mem_layout,
            },
            None => LogEvent::Allocating {
                pool: label,
                tokens,
                bytes,
                layout: p.mem_layout,
            },
        };
        self.s.results[r as usize].log.push(event);
    }

    /// Booking path: each pool books against the rank's one budget.
    fn build_pool_booked(&mut self, r: u32) {
        let pool = self.s.ranks[r as usize].pool;
        if pool >= self.plan.pools.len() {
            return self.pools_built(r);
        }
        let tokens = self.s.ranks[r as usize].host_tokens[pool];
        self.log_small_host(r, pool, tokens);
        let requested = self.pool_request(pool, tokens);
        let scope = self.s.ranks[r as usize]
            .scope
            .as_mut()
            .expect("booking path has a scope");
        let allowance = scope.remaining();
        let booked = scope.book(requested);
        // The rank's figures on this path are the whole booking: the budget the scope
        // opened with, everything requested so far, and what is left.
        let budget = self.s.ranks[r as usize].scope_budget;
        let res = &mut self.s.results[r as usize];
        let total = res.pools.iter().map(|p| p.requested_bytes).sum::<u64>() + requested;
        let name = self.plan.pools[pool].name;
        res.pools.push(PoolResult {
            name,
            tokens,
            requested_bytes: requested,
            budget_bytes: allowance,
        });
        res.budget_bytes = Some(budget);
        res.requested_bytes = Some(total);
        res.margin_bytes = Some(budget - total as i128);
        res.binding_pool = Some(ALL_HOST_POOLS);
        if booked.is_ok() {
            self.log_allocating(r, pool, tokens, requested);
            self.start_pin(r, pool, requested);
        } else {
            // SGLang's message names this pool against the allowance left.
            if let HicacheSizing::AutoHicache { .. } = self.plan.sizing {
                // `HostMemoryBudgetError` is recoverable inside the attach gate.
                self.attach_failed(
                    r,
                    AttachFailure::Budget {
                        pool: name,
                        requested,
                        allowance,
                    },
                );
            } else {
                if self.s.messages {
                    res.message = Some(self.plan.pools[pool].refusal_message(requested, allowance));
                }
                self.exit(r, Outcome::Refused);
            }
        }
    }

    /// Every pool of the rank is pinned: V5 waits in the attach gate, the others are
    /// ready.
    fn pools_built(&mut self, r: u32) {
        if let HicacheSizing::AutoHicache { .. } = self.plan.sizing {
            self.gate_arrive(r);
        } else {
            self.ready(r);
        }
    }

    /// V5 (`hicache_auto.py: AutoHiCacheAttachGate.run`): a recoverable build error
    /// (pin failure, budget) on this rank; it logs why and joins the gate.
    fn attach_failed(&mut self, r: u32, why: AttachFailure) {
        self.s.ranks[r as usize].attach_failed = true;
        self.s.results[r as usize]
            .log
            .push(LogEvent::AttachFailedHere(why));
        self.gate_arrive(r);
    }

    /// The gate's SUM all-reduce of failures over the world: when every rank is in,
    /// all commit (none failed) or all unpin and retry at half the agreed ratio while
    /// the half is ≥ 1.5, else serve without HiCache
    /// (`build_tree_cache_with_auto_hicache`). The ratio was agreed world-wide, so
    /// every rank halves to the same figure.
    fn gate_arrive(&mut self, r: u32) {
        self.s.gate.push(r);
        if self.s.gate.len() < self.plan.world_size as usize {
            return;
        }
        let failed = self
            .s
            .gate
            .iter()
            .filter(|&&w| self.s.ranks[w as usize].attach_failed)
            .count() as u32;
        // Every rank leaves the collective at this instant; each continues as its own
        // event, so a retry that fails at once joins the next gate cleanly.
        for i in 0..self.s.gate.len() {
            let w = self.s.gate[i];
            self.s.queue.schedule_in(0, Ev::GateDone(w, failed));
        }
        self.s.gate.clear();
    }

    fn gate_done(&mut self, r: u32, failed: u32) {
        if failed > 0 {
            return self.auto_hicache_retry(r, failed);
        }
        let p = self.plan;
        let node = self.s.ranks[r as usize].node as usize;
        let res = &mut self.s.results[r as usize];
        res.log.push(LogEvent::AutoOn {
            ratio: res.fitted_ratio.unwrap_or(0.0),
            budget: self.s.ranks[r as usize].scope_budget,
            ranks_per_host: p.ranks_per_host,
            memlock: p.nodes[node].pin_limit,
        });
        self.ready(r);
    }

    /// V5 auto-HiCache never refuses: after a failed gate every rank unpins what it
    /// pinned and halves the ratio while the half stays ≥ 1.5, else switches the tier
    /// off (`hicache_auto.py`, `auto_hicache_halve_on_pin_failure`).
    fn auto_hicache_retry(&mut self, r: u32, failed_ranks: u32) {
        let p = self.plan;
        let node = self.s.ranks[r as usize].node as usize;
        let pinned = std::mem::take(&mut self.s.ranks[r as usize].pinned);
        self.s.nodes[node].uncharge(p.nodes[node].job_cgroup, p.pin_kind, pinned);
        self.s.ranks[r as usize].attach_failed = false;
        let res = &mut self.s.results[r as usize];
        res.pools.clear();
        match res
            .fitted_ratio
            .and_then(sizing::auto_hicache_halve_on_pin_failure)
        {
            Some(half) => {
                res.fitted_ratio = Some(half);
                res.message = None;
                res.log.push(LogEvent::AutoRetry {
                    failed_ranks,
                    ratio: half,
                });
                let tokens = self.plan.host_tokens(Some(half));
                let st = &mut self.s.ranks[r as usize];
                st.pool = 0;
                set_pools(&mut st.host_tokens, &tokens);
                st.scope = Some(BudgetScope::new(st.scope_budget));
                self.build_pool_booked(r);
            }
            None => {
                res.hicache_off = true;
                res.fitted_ratio = None;
                res.message = Some(format!(
                    "HiCache off: host pools could not be pinned ({failed_ranks} rank(s) could not build their host pools)"
                ));
                res.log.push(LogEvent::AutoOff { failed_ranks });
                self.s.ranks[r as usize].scope = None;
                self.ready(r);
            }
        }
    }

    fn record_pool(&mut self, r: u32, pool: usize, tokens: u64, requested: u64, budget: i128) {
        let res = &mut self.s.results[r as usize];
        res.pools.push(PoolResult {
            name: self.plan.pools[pool].name,
            tokens,
            requested_bytes: requested,
            budget_bytes: budget,
        });
        let margin = budget - requested as i128;
        if res.margin_bytes.is_none_or(|m| margin < m) {
            res.margin_bytes = Some(margin);
            res.budget_bytes = Some(budget);
            res.requested_bytes = Some(requested);
            res.binding_pool = Some(self.plan.pools[pool].name);
        }
    }

    fn check_and_pin(&mut self, r: u32, pool: usize, tokens: u64, requested: u64, budget: i128) {
        if requested as i128 > budget {
            // Refusal: the binding pool is this one, whatever earlier pools had.
            let res = &mut self.s.results[r as usize];
            res.pools.push(PoolResult {
                name: self.plan.pools[pool].name,
                tokens,
                requested_bytes: requested,
                budget_bytes: budget,
            });
            res.margin_bytes = Some(budget - requested as i128);
            res.budget_bytes = Some(budget);
            res.requested_bytes = Some(requested);
            res.binding_pool = Some(self.plan.pools[pool].name);
            if self.s.messages {
                res.message = Some(self.plan.pools[pool].refusal_message(requested, budget));
            }
            return self.exit(r, Outcome::Refused);
        }
        self.record_pool(r, pool, tokens, requested, budget);
        self.log_allocating(r, pool, tokens, requested);
        self.start_pin(r, pool, requested);
    }

    /// `_cuda_host_register` of one pool: past the node's pin limit the call fails
    /// (`RuntimeError` with the release's text; V5 recovers inside the attach gate).
    /// The failing call is the chunk that crosses the limit; chunks registered before
    /// it are rolled back at once and not charged here.
    fn start_pin(&mut self, r: u32, pool: usize, bytes: u64) {
        let p = self.plan;
        let node = self.s.ranks[r as usize].node as usize;
        if let Some(limit) = p.nodes[node].pin_limit {
            let pinned = self.s.ranks[r as usize].pinned;
            if pinned.saturating_add(bytes) > limit {
                let style = p.log_rules.register;
                // DeepSeek-V4 pools register `layer_num × item_bytes` per page.
                let granularity = match p.pools[pool].dsv4 {
                    Some(_) => p.pools[pool].bytes_per_token,
                    None => p.page_size * p.pools[pool].bytes_per_token,
                };
                let chunk = log_lines::register_chunk(
                    style,
                    p.mem_layout.is_page_first(),
                    granularity,
                    bytes,
                );
                let offset = (limit.saturating_sub(pinned) / chunk.max(1)) * chunk;
                let size = chunk.min(bytes - offset);
                if let HicacheSizing::AutoHicache { .. } = p.sizing {
                    let why = AttachFailure::Register {
                        offset,
                        size,
                        total: bytes,
                        chunk,
                    };
                    return self.attach_failed(r, why);
                }
                if self.s.messages {
                    self.s.results[r as usize].message = Some(log_lines::register_error(
                        style,
                        p.pin_failure_rc,
                        &p.pin_failure_error,
                        offset,
                        size,
                        bytes,
                        chunk,
                    ));
                }
                return self.exit(r, Outcome::PinFailed);
            }
        }
        let steps = self.plan.pin_steps.max(1) as u64;
        let st = &mut self.s.ranks[r as usize];
        st.pin_left = bytes;
        st.pin_step_bytes = bytes.div_ceil(steps).max(1);
        st.pin_step_ns = StartupPlan::duration(st.pin_step_bytes, self.plan.pin_bw);
        self.schedule_pin(r);
    }

    fn schedule_pin(&mut self, r: u32) {
        let st = &self.s.ranks[r as usize];
        // Every step but a short last one takes the precomputed time.
        let step = st.pin_step_bytes.min(st.pin_left);
        let ns = if step == st.pin_step_bytes {
            st.pin_step_ns
        } else {
            StartupPlan::duration(step, self.plan.pin_bw)
        };
        self.s.queue.schedule_in(ns, Ev::PinStep(r));
    }

    fn pin_step(&mut self, r: u32) {
        if !self.s.ranks[r as usize].alive {
            return;
        }
        let st = &self.s.ranks[r as usize];
        let step = st.pin_step_bytes.min(st.pin_left);
        if !self.charge(r, self.plan.pin_kind, step) {
            return;
        }
        let st = &mut self.s.ranks[r as usize];
        st.pinned += step;
        st.pin_left -= step;
        if st.pin_left > 0 {
            return self.schedule_pin(r);
        }
        st.pool += 1;
        if st.scope.is_some() {
            self.build_pool_booked(r)
        } else {
            self.build_pool_live(r)
        }
    }

    fn ready(&mut self, r: u32) {
        let now = self.s.queue.now();
        let res = &mut self.s.results[r as usize];
        res.ready_at = Some(now);
        res.outcome = Outcome::Started;
    }
}
