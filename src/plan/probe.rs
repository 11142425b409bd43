//! One start-up probe: the scenario with a few fields patched (the way a sweep applies a
//! point: value tree → typed file → resolved scenario), its start-up plan, and a Monte
//! Carlo over rank jitter with the planner's seed (common random numbers: every probe
//! of a search draws the same jitter, so the search is deterministic and P(start)
//! compares like with like).

use serde::Serialize;
use serde_json::Value;

use crate::error::InputError;
use crate::release::Sglang;
use crate::scenario::Scenario;
use crate::scenario::lines::LineIndex;
use crate::scenario::load::{Draft, set_path, typed_as};
use crate::scenario::resolve::{resolve, resolve_file};
use crate::startup::{self, Failure, MonteCarlo, Outcome, StartupPlan};

/// A scenario ready to be patched and started many times.
#[derive(Debug, Clone)]
pub struct Prober {
    base: Value,
    source: String,
    /// The release or what-if every probe runs under (typed once, at the loader).
    pub sglang: Sglang,
    pub seed: u64,
    pub runs: u64,
    /// The launch command's notes (flags not modelled, Dynamo's flags dropped, …).
    pub launch_notes: Vec<String>,
    /// What the launch command sets that a replay does not model
    /// ([`crate::scenario::launch_schedule`]): the hit rates' reasons for `unverified`.
    pub replay_unmodelled: crate::scenario::launch_schedule::ReplayUnmodelled,
}

/// A field patch: path (`server.hicache_size`) and value.
pub type Patch = (&'static str, Value);

impl Prober {
    /// Loads `path` with `--set` overrides under `sglang` (the scenario's own when
    /// `None`); the scenario must resolve as it stands.
    pub fn load(
        path: &str,
        sets: &[String],
        sglang: Option<Sglang>,
        seed: Option<u64>,
        runs: u64,
    ) -> Result<Prober, InputError> {
        let text =
            crate::input::read_to_string(std::path::Path::new(path), crate::input::DOCUMENT_CAP)
                .map_err(|e| InputError::new(path, format!("cannot read the scenario: {e}")))?;
        Self::from_text(&text, path, sets, sglang, seed, runs)
    }

    /// As [`load`](Self::load), from scenario text already in memory (`source` names it
    /// in errors).
    pub fn from_text(
        text: &str,
        path: &str,
        sets: &[String],
        sglang: Option<Sglang>,
        seed: Option<u64>,
        runs: u64,
    ) -> Result<Prober, InputError> {
        Self::from_draft(Draft::read(text, path, sets, sglang)?, seed, runs)
    }

    /// As [`from_text`](Self::from_text), from a scenario read as far as its release.
    pub fn from_draft(draft: Draft, seed: Option<u64>, runs: u64) -> Result<Prober, InputError> {
        let path = draft.source();
        let loaded = draft.load()?;
        let s = resolve(&loaded)?;
        let mut base =
            serde_json::to_value(&loaded.file).map_err(|e| InputError::new(path, e.to_string()))?;
        if let Some(o) = base.as_object_mut() {
            o.remove("sweep");
            // Typed already: every probe takes it as it is (`typed_as`), not as text.
            o.remove("sglang");
        }
        Ok(Prober {
            base,
            source: path.to_string(),
            sglang: s.version,
            seed: seed.unwrap_or(s.seed),
            runs,
            launch_notes: loaded.not_modelled_flags.clone(),
            replay_unmodelled: crate::scenario::launch_schedule::ReplayUnmodelled::of(
                loaded.launch.as_ref(),
            ),
        })
    }

    /// The same prober with `headroom` bytes more host memory used on every node by
    /// processes the plan does not see: `memory.host_other_used` (outside the job) and,
    /// when the scenario has a job cgroup, its `preexisting_anon` (inside it), both
    /// raised together — a size that starts under this keeps that much room on every
    /// limit that can refuse it.
    pub fn with_headroom(&self, headroom: u64) -> Result<Prober, ProbeError> {
        let s = self.scenario(&[])?;
        let mut p = self.clone();
        set_path(
            &mut p.base,
            "memory.host_other_used",
            Value::from(s.memory.host_other_used.0.saturating_add(headroom)),
        )?;
        if let Some(cg) = &s.memory.cgroup {
            set_path(
                &mut p.base,
                "memory.cgroup.preexisting_anon",
                Value::from(cg.preexisting_anon.0.saturating_add(headroom)),
            )?;
        }
        Ok(p)
    }

    /// The scenario with `patches` applied.
    pub fn scenario(&self, patches: &[Patch]) -> Result<Scenario, ProbeError> {
        let mut v = self.base.clone();
        for (p, x) in patches {
            set_path(&mut v, p, x.clone())?;
        }
        let file = typed_as(v, self.sglang, &self.source, &LineIndex::default())?;
        Ok(resolve_file(
            &file,
            &self.source,
            &LineIndex::default(),
            &[],
        )?)
    }

    /// The scenario and its start-up plan.
    pub fn plan(&self, patches: &[Patch]) -> Result<(Scenario, StartupPlan), ProbeError> {
        let s = self.scenario(patches)?;
        let plan = StartupPlan::new(&s)?;
        Ok((s, plan))
    }

    /// P(start) of the patched scenario over `runs` runs: what a search step needs (the
    /// same streams as [`start`](Self::start), without the report or the failure scan).
    pub fn start_probability(&self, patches: &[Patch]) -> Result<f64, ProbeError> {
        let (_, plan) = self.plan(patches)?;
        let p = startup::run(&plan, self.seed, self.runs).start_probability;
        PROBES_DONE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(p)
    }

    /// Starts the patched scenario `runs` times.
    pub fn start(&self, patches: &[Patch]) -> Result<StartProbe, ProbeError> {
        let (s, plan) = self.plan(patches)?;
        let mc = startup::run(&plan, self.seed, self.runs);
        PROBES_DONE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut p = StartProbe::of(&plan, &mc);
        p.failure = startup::first_failure(&plan, &mc, self.seed, self.runs);
        p.unverified = s.unmodelled.iter().map(ToString::to_string).collect();
        if let (Some(f), Some(d)) = (p.failure.as_mut(), &plan.device_failure) {
            f.message = format!("{} (what would help: {})", f.message, d.hint);
        }
        Ok(p)
    }
}

/// Why a patched scenario could not be probed: the patch, the scenario it makes, or its
/// start-up plan (each in its own words: the patched tree has no file lines).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Patch(#[from] crate::scenario::load::SetPathError),
    #[error(transparent)]
    Scenario(#[from] InputError),
    #[error(transparent)]
    Plan(#[from] crate::error::FieldError),
}

impl ProbeError {
    /// The error at `source`, its kind kept (a `not_modelled` refusal stays one).
    pub fn into_input(self, source: &str) -> InputError {
        let mut e = InputError::new(source, self.to_string());
        e.kind = self.kind();
        e
    }

    /// Whose verdict it is ([`crate::error::ErrorKind`]; a bad patch is the input's).
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            ProbeError::Patch(_) => crate::error::ErrorKind::Input,
            ProbeError::Scenario(e) => e.kind,
            ProbeError::Plan(e) => e.kind,
        }
    }
}

/// Probes finished in this process (each `runs` Monte Carlo start-ups): what the
/// progress line of a long `plan` counts.
pub static PROBES_DONE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What one probe found.
#[derive(Debug, Clone, Serialize)]
pub struct StartProbe {
    pub start_probability: f64,
    pub refusal_probability: f64,
    pub oom_probability: f64,
    /// Run 0's worst rank outcome (`started`, `refused`, `oom_killed`, `failed`).
    pub outcome: &'static str,
    /// The tightest started rank of run 0: budget − request.
    pub margin_bytes: Option<i64>,
    pub budget_bytes: Option<i64>,
    pub requested_bytes: Option<u64>,
    /// The pool that binds in that rank (`kv`, `indexer`, …; `all` for one booking of
    /// every pool).
    pub binding_pool: Option<&'static str>,
    /// Host pool tokens of run 0 (smallest over started ranks).
    pub host_pool_tokens: Option<u64>,
    pub device_pool_tokens: u64,
    /// Bytes per token of the first host pool (the KV pool).
    pub pool_bytes_per_token: u64,
    /// The first failure seen (run 0, else the first failing run): outcome and SGLang's
    /// message.
    pub failure: Option<Failure>,
    /// What the scenario does that moves these figures and is not modelled
    /// (`Scenario::unmodelled`): a start is then `unverified`, not `ok`.
    pub unverified: Vec<String>,
}

impl StartProbe {
    /// What run 0 and the Monte Carlo say (the failure is found apart: it may scan
    /// further runs).
    fn of(plan: &StartupPlan, mc: &MonteCarlo) -> StartProbe {
        let worst = mc
            .first_run
            .iter()
            .map(|r| r.outcome)
            .max()
            .unwrap_or(Outcome::Started);
        let binding = startup::binding_rank(&mc.first_run);
        let clamp = |x: i128| x.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        StartProbe {
            start_probability: mc.start_probability,
            refusal_probability: mc.refusal_probability,
            oom_probability: mc.oom_probability,
            outcome: worst.id(),
            margin_bytes: binding.and_then(|r| r.margin_bytes).map(clamp),
            budget_bytes: binding.and_then(|r| r.budget_bytes).map(clamp),
            requested_bytes: binding.and_then(|r| r.requested_bytes),
            binding_pool: binding.and_then(|r| r.binding_pool),
            host_pool_tokens: crate::pipeline::host_pool_tokens(mc),
            device_pool_tokens: plan.device_tokens,
            pool_bytes_per_token: plan.host_bytes_per_token(),
            failure: None,
            unverified: Vec::new(),
        }
    }
}
