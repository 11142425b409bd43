//! `hicache-sim replay`: a trace through the tiers, from a scenario (pools from its
//! start-up) or from flags alone (a trace and two capacities are enough).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value};

use super::{CmdResult, CommandError, OutputFormat, ReplayArgs};
use crate::error::InputError;
use crate::pipeline;
use crate::policy_sim::{self, PolicySimConfig, SimPolicy};
use crate::runtime::dp::DpBalance;
use crate::runtime::router::{RouterFigures, RouterPolicy};
use crate::runtime::sensitivity::Row;
use crate::runtime::{ReplayConfig, ReplayMetrics, definitions};
use crate::scenario::lines::LineIndex;
use crate::scenario::{Engine, RuntimeSection};
use crate::startup::{self, StartupPlan};
use crate::workload::read::{RecordReader, TraceFormat, TraceOptions};

/// The `runtime.replay` overrides the flags make.
fn flag_overrides(a: &ReplayArgs) -> Result<Map<String, Value>, InputError> {
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    if let Some(p) = a.page_size {
        put("page_size", p.into());
    }
    if let Some(p) = a.l1_pages {
        put("l1_pages", p.into());
    }
    if let Some(p) = a.l2_pages {
        put("l2_pages", p.into());
    }
    match a.l3_pages.as_deref() {
        None => {}
        Some("unbounded") => put("l3_unbounded", true.into()),
        Some(n) => {
            let n: u64 = n.parse().map_err(|_| {
                InputError::new(
                    "--l3-pages",
                    format!("expected a page count or `unbounded`, got `{n}`"),
                )
            })?;
            put("l3_pages", n.into());
        }
    }
    if let Some(w) = a.write_policy.as_deref().filter(|w| *w != "boundary_l1_l2") {
        put("write_policy", w.into());
    }
    if let Some(e) = &a.eviction_policy {
        put("eviction_policy", e.as_str().into());
    }
    if let Some(t) = &a.timing {
        put("timing", t.as_str().into());
    }
    if let Some(w) = a.warmup {
        put("warmup_requests", w.into());
    }
    if a.timeline.is_some() {
        put("timeline_samples", 200.into());
    }
    for kv in &a.config {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            InputError::new(
                format!("--config {kv}"),
                "expected KEY=VALUE, e.g. lru_mode=plain_page",
            )
        })?;
        let v = crate::scenario::load::parse_yaml_value(v, &format!("--config {kv}"))?;
        put(k.trim(), v);
    }
    Ok(m)
}

pub fn replay(a: ReplayArgs) -> CmdResult {
    let mut overrides = Map::new();
    // Where the scenario's fields came from, for errors about `runtime.*` found later.
    let mut provenance = None;
    // An open PR's rule set (`sglang: pr39395`, …): labelled in every output.
    let mut proposal = None;
    // What the replay of the scenario does not model (its answers are `unverified`):
    // with the SWA tree as its device tier, and without.
    let mut unverified_swa: Vec<String> = Vec::new();
    let mut unverified_full: Vec<String> = Vec::new();
    // The scenario, for the reasons its final replay configuration adds.
    let mut scenario_for_reasons: Option<crate::scenario::Scenario> = None;
    // A model's SWA pool: the SWA tree runs where it can (`pipeline::adopt_swa_tree`).
    let mut swa_plan = None;
    // The scenario's default HiCache per-step synchronisation, filled in once its
    // `runtime.replay` keys (the clock among them) are applied.
    let mut step_sync = None;
    let (mut section, base_cfg): (RuntimeSection, Option<(ReplayConfig, (String, String))>) =
        match &a.scenario {
            Some(path) => {
                let mut f = crate::scenario::load::load_file_as(path, &a.sets, a.sglang)?;
                // A replay's answers depend on the device pool whether or not the file has
                // a `runtime:` section (an estimated GPU reserve is then `unverified`).
                f.file
                    .runtime
                    .get_or_insert_with(|| Value::Object(Map::new()));
                let s = crate::scenario::resolve::resolve(&f)?;
                provenance = Some(s.provenance.clone());
                if let crate::release::Sglang::Proposal(p) = s.version {
                    proposal = Some(p);
                }
                let plan = super::startup_cmd::plan_for(&s)?;
                let section =
                    pipeline::pd::with_decode_server(&s, &s.runtime.clone().unwrap_or_default())
                        .map_err(|e| locate(e, Some((path.as_str(), &s.provenance))))?;
                let mc = startup::run(&plan, s.seed, 1);
                let host = pipeline::host_pool_tokens(&mc);
                // A rank refused or killed: SGLang would not serve, whatever the others hold.
                let down = mc
                    .first_run
                    .iter()
                    .filter(|r| r.outcome != startup::Outcome::Started)
                    .count();
                let note = match host {
                    Some(t) if down > 0 => format!(
                        "the start-up of {path} did not start {down} of {} ranks (refused or killed: SGLang would not serve); replaying one started rank's pools anyway: device {} tokens, host {t} tokens (the smallest started rank's)",
                        mc.first_run.len(),
                        plan.device_tokens
                    ),
                    Some(t) => format!(
                        "pools from the start-up of {path}: device {} tokens, host {t} tokens",
                        plan.device_tokens
                    ),
                    None if down > 0 => format!(
                        "the start-up of {path} did not start {down} of {} ranks (refused or killed: SGLang would not serve); replaying anyway with L2 = 0",
                        mc.first_run.len()
                    ),
                    None => format!(
                        "the start-up of {path} gave no rank a host pool (HiCache off): replaying with L2 = 0"
                    ),
                };
                unverified_swa = pipeline::replay_unverified(&s, &plan, true);
                unverified_full = pipeline::replay_unverified(&s, &plan, false);
                swa_plan = pipeline::swa_pool(&s, &plan);
                scenario_for_reasons = Some(s.clone());
                step_sync = Some(pipeline::ClockDefaults::of(&s));
                // An open PR's rule set is labelled as such, with what it assumes (after
                // the status line, which waits for the final configuration).
                let note = match s.version {
                    crate::release::Sglang::Proposal(p) => (
                        note,
                        format!(
                            "\nwhat-if {} (in no release; {}): {}\nassumed: {}",
                            p.id(),
                            p.url(),
                            p.summary(),
                            p.assumptions()
                        ),
                    ),
                    _ => (note, String::new()),
                };
                overrides.extend(section.replay.clone());
                pipeline::scheduler_chunk(&s, &section.replay)
                    .map_err(|e| locate(e, Some((path.as_str(), &s.provenance))))?;
                (section, Some((derive(&s, &plan, host, &Map::new())?, note)))
            }
            None => (RuntimeSection::default(), None),
        };
    overrides.extend(flag_overrides(&a)?);
    let scenario = a.scenario.as_deref().zip(provenance.as_ref());
    if let Some(t) = &a.trace {
        section.trace = Some(t.clone());
        // A trace given on the command line is read in its own format (detected from the
        // file), not in the scenario's `trace_format`, unless --trace-format says.
        if a.trace_format.is_none() {
            section.trace_format = None;
            section.block_size = None;
        }
    }
    if let Some(tl) = &a.timeline {
        refuse_input_as_output(&a, &section, "--timeline", tl)?;
    }
    if let Some(r) = &a.rounds {
        let mut inputs: Vec<(&str, &Path)> = Vec::new();
        if let Some(sc) = &a.scenario {
            inputs.push(("scenario", Path::new(sc)));
        }
        crate::output::refuse_input_as_output("--rounds", Path::new(r), &inputs)?;
    }
    if let Some(f) = &a.trace_format {
        section.trace_format = Some(f.clone());
    }
    if let Some(b) = a.block_size {
        section.block_size = Some(b);
    }
    if let Some(f) = a.slowdown_factor {
        crate::workload::slowdown::check_factor(f)
            .map_err(|m| InputError::new("--slowdown-factor", m.to_string()))?;
        section.slowdown_factor = Some(f);
    }
    let engine = match a.engine.as_deref() {
        None if a.write_policy.as_deref() == Some("boundary_l1_l2") => Engine::PolicySimulator,
        None => section.engine,
        Some("hiradix") => Engine::Hiradix,
        Some("policy-simulator") => Engine::PolicySimulator,
        Some(e) => {
            return Err(InputError::new(
                "--engine",
                format!("unknown engine `{e}`: expected hiradix or policy-simulator"),
            )
            .into());
        }
    };
    if engine == Engine::Hiradix && a.write_policy.as_deref() == Some("boundary_l1_l2") {
        return Err(InputError::new(
            "--write-policy",
            "boundary_l1_l2 is a policy of SGLang's policy simulator: use --engine policy-simulator (or --config evict_host_rule=boundary_l1_l2 for the runtime what-if)",
        )
        .into());
    }
    let scenario_ranks = base_cfg.as_ref().map_or(1, |(c, _)| c.capacities.dp_ranks);
    if engine == Engine::PolicySimulator
        && section
            .router
            .as_ref()
            .is_some_and(|r| r.is_fleet(scenario_ranks))
    {
        return Err(InputError::new(
            "--engine",
            "the policy simulator replays one tree: engines behind a router (runtime.router) are replayed by the hiradix engine",
        )
        .field("runtime.router.engines")
        .into());
    }
    if engine == Engine::PolicySimulator && swa_plan.is_some_and(|p| p.required) {
        return Err(InputError::new(
            "--engine",
            "DeepSeek-V4 is replayed by the hiradix engine's SWA tree (SGLang's tree with its SWA component); the policy simulator has one full-attention tree",
        )
        .into());
    }
    if engine == Engine::PolicySimulator {
        return policy_simulator(&a, &section, &overrides, base_cfg.map(|(c, _)| c));
    }
    let (cfg, note) = match base_cfg {
        Some((c, note)) => {
            let c = apply(c, &overrides).map_err(|e| locate(e, scenario))?;
            let c = match step_sync {
                Some(d) => d.fill(c, &overrides),
                None => c,
            };
            (c, Some(note))
        }
        None => {
            let rules = a
                .sglang
                .unwrap_or(crate::release::Sglang::DEFAULT)
                .release_rules();
            let base = ReplayConfig::for_release(&rules);
            (
                apply(base, &overrides).map_err(|e| locate(e, scenario))?,
                None,
            )
        }
    };
    if let Some(out) = &a.router_events {
        refuse_input_as_output(&a, &section, "--router-events", out)?;
        let mut buf = Vec::new();
        pipeline::router_events(&section, &cfg, &mut buf).map_err(|e| locate(e, scenario))?;
        crate::output::write_file(Path::new(out), &buf)
            .map_err(|e| CommandError::Other(format!("{out}: {e}")))?;
        return Ok(0);
    }
    if let Some(out) = &a.engines_csv {
        refuse_input_as_output(&a, &section, "--engines-csv", out)?;
        if !section
            .router
            .as_ref()
            .is_some_and(|r| r.is_fleet(cfg.capacities.dp_ranks))
        {
            return Err(InputError::new(
                "--engines-csv",
                "no engines behind a router: the scenario needs runtime.router with engines of 2 or more",
            )
            .into());
        }
    }
    if let Some(out) = &a.ranks_csv {
        refuse_input_as_output(&a, &section, "--ranks-csv", out)?;
        if cfg.capacities.dp_ranks < 2
            || section
                .router
                .as_ref()
                .is_some_and(|r| r.is_fleet(cfg.capacities.dp_ranks))
        {
            return Err(InputError::new(
                "--ranks-csv",
                "no data-parallel ranks of one engine: the scenario needs --dp-size 2 or more with --enable-dp-attention, and no router fleet (its engines: --engines-csv)",
            )
            .into());
        }
    }
    // The SWA tree as the device tier where it runs: SGLang's tree, so its answer is.
    let full_cfg = cfg.clone();
    let (cfg, swa_adopted) = match &swa_plan {
        Some(p) => pipeline::adopt_swa_tree(cfg, p, &overrides).map_err(|e| {
            InputError::new(a.scenario.as_deref().unwrap_or("--scenario"), e.to_string())
                .field("runtime.replay")
        })?,
        None => (cfg, false),
    };
    let trace_error = |e: InputError| {
        // A trace named by the scenario that cannot be opened: say where it was named.
        match (&a.scenario, &a.trace, &section.trace) {
            (Some(_), None, Some(t)) if e.line.is_none() && e.source == *t => locate(
                InputError::new("runtime.trace", format!("trace `{t}`: {}", e.message)),
                scenario,
            ),
            _ => locate(e, scenario),
        }
    };
    let mut unverified = if swa_adopted {
        unverified_swa
    } else {
        unverified_full.clone()
    };
    if a.sensitivity {
        pipeline::sensitivity_needs_timing(&cfg)?;
    }
    let (cfg, m) = match pipeline::run_replay(&section, &cfg) {
        Ok(m) => (cfg, m),
        // A prompt the SWA pool cannot hold (SGLang's "Prefill out of memory" with no
        // chunked prefill in the SWA tree): the full tree answers, `unverified`.
        Err(e) if swa_adopted && !swa_plan.is_some_and(|p| p.required) => {
            let m = pipeline::run_replay(&section, &full_cfg).map_err(trace_error)?;
            unverified = unverified_full;
            unverified.push(format!(
                "the SWA tree stopped ({}): the full tree's figures stand in",
                e.message
            ));
            (full_cfg, m)
        }
        Err(e) => return Err(trace_error(e).into()),
    };
    unverified.extend(pipeline::replay_config_unverified(
        scenario_for_reasons.as_ref(),
        &cfg,
    ));
    let swa_adopted = cfg.capacities.swa.is_some();
    let sensitivity = match a.sensitivity {
        true => Some(pipeline::sensitivity(&section, &cfg, &m).map_err(trace_error)?),
        false => None,
    };
    // The start-up's note, then the status, then an open PR's label.
    let note = note.map(|(head, what_if)| match unverified.as_slice() {
        [] => format!("{head}{what_if}"),
        u => format!("{head}\nstatus: unverified: {}{what_if}", u.join("; ")),
    });
    if let Some(path) = &a.timeline {
        write_timeline(
            &m,
            path,
            cfg.measurement.timing == crate::runtime::Timing::Off,
            &unverified,
        )?;
    }
    if let Some(path) = &a.rounds {
        write_rounds(&m, &cfg, path, &unverified)?;
    }
    if let Some(path) = &a.engines_csv {
        write_engines(
            &m,
            cfg.measurement.timing == crate::runtime::Timing::On,
            path,
            &unverified,
        )?;
    }
    if let Some(path) = &a.ranks_csv {
        write_ranks(
            &m,
            cfg.measurement.timing == crate::runtime::Timing::On,
            path,
            &unverified,
        )?;
    }
    match a.format {
        OutputFormat::Json => {
            let mut v = serde_json::json!({ "status": if unverified.is_empty() { "ok" } else { "unverified" }, "config": cfg, "trace": section.trace, "metrics": m, "definitions": definitions() });
            if !unverified.is_empty() {
                v["unverified"] = unverified.clone().into();
            }
            if let Some(f) = swa_adopted.then(|| swa_figures(&section, &cfg)).flatten() {
                v["swa_tree"] = serde_json::json!({
                    "swa_pages": f.pool.pages,
                    "window": f.pool.window,
                    "device_hit_rate": m.device_hit_rate,
                    "prefill_only_device_hit_rate": f.prefill_only,
                    "full_tree_device_hit_rate": f.full,
                });
            }
            // The speeds behind the times, whenever the replay is timed.
            if cfg.measurement.timing == crate::runtime::Timing::On {
                v["speeds"] = serde_json::to_value(crate::runtime::Speeds::of(&cfg))
                    .map_err(|e| CommandError::Other(e.to_string()))?;
            }
            // The arrivals behind the times, when not the trace's own.
            if let Some(f) = section.slowdown_factor.filter(|&f| f != 1.0) {
                v["slowdown_factor"] = f.into();
            }
            if let Some(rows) = &sensitivity {
                v["sensitivity"] = serde_json::json!({
                    "step": crate::runtime::sensitivity::STEP,
                    "base": {
                        "ttft_mean_s": crate::runtime::sensitivity::ttft_mean(&m),
                        "ttft_p99_s": m.ttft_p99_s,
                        "tpot_mean_s": m.tpot_mean_s,
                        "makespan_s": m.makespan_s,
                    },
                    "rows": rows,
                    "not_in_the_model": crate::runtime::sensitivity::not_in_the_model(rows),
                });
            }
            // An open PR's rules: in no release, and what the simulator assumed.
            if let Some(p) = proposal {
                v["what_if"] = serde_json::json!({
                    "id": p.id(),
                    "status": "unverified",
                    "pull_request": p.url(),
                    "summary": p.summary(),
                    "assumed": p.assumptions(),
                });
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&v).map_err(|e| CommandError::Other(e.to_string()))?
            );
        }
        OutputFormat::Text => {
            // With DP ranks, what one tree of the same pools would have hit (one more
            // replay, text only).
            let one_tree = (cfg.capacities.dp_ranks > 1 && m.router.is_none())
                .then(|| {
                    let mut c = cfg.clone();
                    c.capacities.dp_ranks = 1;
                    pipeline::run_replay(&section, &c)
                        .ok()
                        .map(|x| x.total_hit_rate)
                })
                .flatten();
            // With a load-reading DP method, what round-robin would have hit (one more
            // replay, text only).
            let round_robin = (cfg.capacities.dp_ranks > 1
                && cfg.capacities.dp_balance != DpBalance::RoundRobin
                && m.router.is_none())
            .then(|| {
                let mut c = cfg.clone();
                c.capacities.dp_balance = DpBalance::RoundRobin;
                pipeline::run_replay(&section, &c)
                    .ok()
                    .map(|x| x.total_hit_rate)
            })
            .flatten();
            // Behind a router, what the other deterministic policy would have hit (one
            // more replay, text only).
            let other = m.router.as_ref().and_then(|_| {
                let mut s = section.clone();
                let r = s.router.as_mut()?;
                r.policy = match r.policy {
                    RouterPolicy::CacheAware => RouterPolicy::RoundRobin,
                    _ => RouterPolicy::CacheAware,
                };
                let p = r.policy;
                pipeline::run_replay(&s, &cfg).ok().map(|x| (p, x))
            });
            // With --dp-aware, what the engines' own controllers over their ranks would
            // have hit (one more replay, text only).
            let engine_rr = m
                .router
                .as_ref()
                .filter(|r| r.dp_aware && r.dp_ranks > 1)
                .and_then(|_| {
                    let mut s = section.clone();
                    s.router.as_mut()?.dp_aware = false;
                    pipeline::run_replay(&s, &cfg).ok()
                });
            let mut text = render(&cfg, &section, &m, note.as_deref(), (one_tree, round_robin));
            if let Some(f) = swa_adopted.then(|| swa_figures(&section, &cfg)).flatten() {
                let _ = writeln!(
                    text,
                    "beside it (two more replays): device {:.2} % of prompt tokens with every request ending at its prefill (a PD prefill server); {:.2} % for a full-attention tree without the SWA component",
                    100.0 * f.prefill_only,
                    100.0 * f.full
                );
            }
            if let Some(r) = &m.router {
                render_engines(&mut text, &m, r, other.as_ref(), engine_rr.as_ref());
            }
            if let Some(rows) = &sensitivity {
                render_sensitivity(&mut text, &m, rows);
            }
            print!("{text}")
        }
    }
    Ok(0)
}

/// `--sensitivity`'s table: each cost term 25 % dearer, ranked by how far it moves the
/// mean TTFT, with the change of the TTFT's mean and p99, the TPOT and the makespan.
fn render_sensitivity(text: &mut String, m: &ReplayMetrics, rows: &[Row]) {
    use crate::runtime::sensitivity::{STEP, change_pct, not_in_the_model, ttft_mean};
    let pct = |b: Option<f64>, x: Option<f64>| match change_pct(b, x) {
        Some(p) => format!("{p:+.1} %"),
        None => "-".into(),
    };
    let s = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3} s"));
    let base = ttft_mean(m);
    let _ = writeln!(
        text,
        "\nsensitivity ({} more timed replays, each term {:.0} % dearer on its own; here TTFT mean {}, p99 {}, TPOT mean {}, makespan {}):",
        rows.len(),
        100.0 * (STEP - 1.0),
        s(base),
        s(m.ttft_p99_s),
        m.tpot_mean_s
            .map_or("-".into(), |x| format!("{:.2} ms", 1e3 * x)),
        m.makespan_s.map_or("-".into(), |x| format!("{x:.1} s")),
    );
    let _ = writeln!(
        text,
        "{:<18} {:>10} {:>10} {:>10} {:>10}  change",
        "term", "TTFT mean", "TTFT p99", "TPOT", "makespan"
    );
    for r in rows {
        let _ = writeln!(
            text,
            "{:<18} {:>10} {:>10} {:>10} {:>10}  {}",
            r.term.id(),
            pct(base, r.ttft_mean_s),
            pct(m.ttft_p99_s, r.ttft_p99_s),
            pct(m.tpot_mean_s, r.tpot_mean_s),
            pct(m.makespan_s, r.makespan_s),
            r.change
        );
    }
    let _ = writeln!(text, "{}", not_in_the_model(rows));
}

fn derive(
    s: &crate::scenario::Scenario,
    plan: &StartupPlan,
    host: Option<u64>,
    o: &Map<String, Value>,
) -> Result<ReplayConfig, InputError> {
    pipeline::replay_config_without_swa(s, plan, host, o)
        .map_err(|m| InputError::new(&s.source, m.to_string()).field("runtime.replay"))
}

/// An error about a `runtime.*` field (its `source` is the field path) at the field's
/// origin in the scenario (its provenance: `file:line`, or the `--set` that gave it) when
/// a scenario was given, else as the flags that stand for it.
fn locate(mut e: InputError, scenario: Option<(&str, &LineIndex)>) -> InputError {
    if !e.source.starts_with("runtime") {
        return e;
    }
    let field = e.field.clone().unwrap_or_else(|| e.source.clone());
    match scenario {
        Some((path, lines)) => {
            let (source, line) = lines.locate(path, &field);
            e.line = line;
            e.source = source;
            e.field = Some(field);
        }
        None if field == "runtime.trace" => e.source = "--trace".into(),
        None => e.source = "--config".into(),
    }
    e
}

fn apply(cfg: ReplayConfig, overrides: &Map<String, Value>) -> Result<ReplayConfig, InputError> {
    pipeline::apply_overrides(cfg, overrides)
}

/// The exact port of SGLang's `benchmark/hicache/hicache_policy_simulator.py`: one page
/// per trace block, L1/L2 page capacities, `main_write_through` or `boundary_l1_l2`.
fn policy_simulator(
    a: &ReplayArgs,
    section: &RuntimeSection,
    o: &Map<String, Value>,
    base: Option<ReplayConfig>,
) -> CmdResult {
    let trace = section
        .trace
        .as_deref()
        .ok_or_else(|| InputError::new("--trace", "the policy simulator needs a trace"))?;
    // Its page is one trace block: capacities derived from a scenario (in pages of the
    // engine's page size) are converted to blocks; flags are taken as blocks.
    let block = u64::from(section.block_size.unwrap_or(512));
    let to_blocks =
        |c: &ReplayConfig, pages: u64| pages * u64::from(c.capacities.page_size) / block.max(1);
    let get = |k: &str, d: u64| o.get(k).and_then(Value::as_u64).unwrap_or(d);
    let (l1, l2) = match &base {
        Some(c) => (
            get("l1_pages", to_blocks(c, c.capacities.l1_pages)),
            get("l2_pages", to_blocks(c, c.capacities.l2_pages)),
        ),
        None => {
            let c = ReplayConfig::default();
            (
                get("l1_pages", c.capacities.l1_pages),
                get("l2_pages", c.capacities.l2_pages),
            )
        }
    };
    let policy = match a.write_policy.as_deref().unwrap_or("write_through") {
        "write_through" => SimPolicy::MainWriteThrough,
        "boundary_l1_l2" => SimPolicy::BoundaryL1L2,
        w => {
            return Err(InputError::new("--write-policy", format!("the policy simulator models `write_through` (its main_write_through) and `boundary_l1_l2`, not `{w}`")).into());
        }
    };
    let format = section
        .trace_format
        .as_deref()
        .map(|f| {
            TraceFormat::from_id(f)
                .ok_or_else(|| InputError::new(trace, format!("unknown trace format `{f}`")))
        })
        .transpose()?;
    let opts = TraceOptions {
        format,
        block_size: section.block_size,
        require_monotonic: false,
    };
    if let (Some(p), Some(b)) = (a.page_size, section.block_size)
        && p != b
    {
        return Err(InputError::new(
            "--page-size",
            format!("the policy simulator's page is one trace block ({b} tokens), not {p}"),
        )
        .into());
    }
    let reader = RecordReader::open(Path::new(trace), &opts)?;
    let records = policy_sim::records_from_blocks(reader)?;
    if records.is_empty() {
        return Err(InputError::new(trace, "nothing to measure: the trace has no requests").into());
    }
    let cfg = PolicySimConfig::new(policy, l1, l2);
    let rep = policy_sim::run(&cfg, &records).map_err(|e| InputError::new(trace, e.to_string()))?;
    match a.format {
        OutputFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&rep).map_err(|e| CommandError::Other(e.to_string()))?
        ),
        OutputFormat::Text => {
            println!(
                "engine: policy-simulator (exact port of SGLang benchmark/hicache/hicache_policy_simulator.py; page = one trace block; page-counted hit rates)"
            );
            println!("trace: {trace}; L1 {l1} pages, L2 {l2} pages");
            print!("{}", policy_sim::format_summary(std::slice::from_ref(&rep)));
        }
    }
    Ok(0)
}

/// Refuses an output file `flag` names (`out`) that is one of the replay's inputs (the
/// trace, the scenario): writing it would destroy what the figures came from.
fn refuse_input_as_output(
    a: &ReplayArgs,
    section: &RuntimeSection,
    flag: &str,
    out: &str,
) -> Result<(), InputError> {
    let mut inputs: Vec<(&str, &Path)> = Vec::new();
    if let Some(t) = &section.trace {
        inputs.push(("trace", Path::new(t)));
    }
    if let Some(sc) = &a.scenario {
        inputs.push(("scenario", Path::new(sc)));
    }
    crate::output::refuse_input_as_output(flag, Path::new(out), &inputs)
}

fn pct(x: f64) -> String {
    format!("{:6.2} %", 100.0 * x)
}

/// The data-parallel ranks' lines: each rank's share and hits, the imbalance, and what
/// one tree of the same pools taking every request would have hit (`one_tree`), and
/// under a load-reading method what round-robin would have (`round_robin`).
fn render_ranks(
    o: &mut String,
    m: &ReplayMetrics,
    method: DpBalance,
    one_tree: Option<f64>,
    round_robin: Option<f64>,
) {
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "data-parallel ranks: {}, each its own tree with the pools above; requests {}; prompt tokens max/mean {:.3}",
        m.ranks.len(),
        match method {
            DpBalance::RoundRobin => "round-robin (DataParallelController.round_robin_scheduler)",
            DpBalance::TotalRequests =>
                "to the fewest running + waiting requests (total_requests_scheduler, loads read every 20 ms)",
            DpBalance::TotalTokens =>
                "to the fewest KV + queued tokens (total_tokens_scheduler, loads read every 20 ms)",
            DpBalance::FollowBootstrapRoom =>
                "to rank bootstrap_room mod N (follow_bootstrap_room; the router's room is a random draw per PD request, a seeded one here)",
        },
        crate::runtime::dp::imbalance(&m.ranks).unwrap_or(1.0)
    );
    // Timed ranks (lockstep) add their TTFT and the wait for the slowest rank.
    let timed = m.ranks.iter().any(|r| r.ttft_p50_s.is_some());
    let _ = write!(
        o,
        "{:<6} {:>9} {:>14} {:>10} {:>10} {:>10} {:>10}",
        "rank", "requests", "input tokens", "device", "host", "storage", "total"
    );
    let _ = writeln!(
        o,
        "{}",
        if timed {
            format!(
                " {:>10} {:>10} {:>12}",
                "TTFT p50", "TTFT p99", "DP wait mean"
            )
        } else {
            String::new()
        }
    );
    for (i, r) in m.ranks.iter().enumerate() {
        let _ = write!(
            o,
            "{i:<6} {:>9} {:>14} {:>10} {:>10} {:>10} {:>10}",
            r.measured_requests,
            r.input_tokens,
            pct(r.device_hit_rate),
            pct(r.host_hit_rate),
            pct(r.storage_hit_rate),
            pct(r.total_hit_rate)
        );
        let secs = |x: Option<f64>| x.map_or("-".to_string(), |s| format!("{s:.3} s"));
        let _ = writeln!(
            o,
            "{}",
            if timed {
                format!(
                    " {:>10} {:>10} {:>12}",
                    secs(r.ttft_p50_s),
                    secs(r.ttft_p99_s),
                    secs(r.ttft_breakdown.map(|b| b.dp_wait_s))
                )
            } else {
                String::new()
            }
        );
    }
    if let Some(t) = round_robin {
        let _ = writeln!(
            o,
            "round-robin over the same ranks would hit {} in total: {} changes it by {:+.2} points",
            pct(t).trim(),
            method.id(),
            (m.total_hit_rate - t) * 100.0
        );
    }
    if let Some(t) = one_tree {
        let _ = writeln!(
            o,
            "one tree of these pools taking every request would hit {} in total: the split over {} ranks changes it by {:+.2} points",
            pct(t).trim(),
            m.ranks.len(),
            (m.total_hit_rate - t) * 100.0
        );
    }
}

/// The engines behind the router: each engine's share and hits, the imbalance, the
/// router's decisions, and what the other policy would have hit (`other`).
fn render_engines(
    o: &mut String,
    m: &ReplayMetrics,
    r: &RouterFigures,
    other: Option<&(RouterPolicy, ReplayMetrics)>,
    engine_round_robin: Option<&ReplayMetrics>,
) {
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "engines behind the router: {} ({}, policy {}), each its own tree with the pools above; {}; per router worker: requests max/mean {:.3}, prompt tokens max/mean {:.3}",
        r.engines,
        r.router,
        r.policy,
        if r.clock_loads && m.pd.is_some() {
            "each a PD prefill server on its own clock, the router's load of an engine its requests sent and not yet transferred; an engine's TTFT is its prefill server's (from the decode server's preallocation, or the prefill server's receipt when later, to its prefill's end), the `all` row's the client's".to_string()
        } else if r.clock_loads && r.policy == "dynamo_kv" {
            "each on its own clock; Dynamo's load of an engine (of a rank, when it routes ranks), tracked by the router itself: the prompt tokens it did not find cached of the requests sent whose first token has not come back, and the blocks of those not finished".to_string()
        } else if r.clock_loads {
            "each on its own clock, the router's load of an engine its requests in flight (sent, not finished) at each arrival".to_string()
        } else {
            format!(
                "{} requests in flight (request i completes before request i + {} is sent)",
                r.in_flight, r.in_flight
            )
        },
        r.request_imbalance,
        r.token_imbalance
    );
    if r.dp_ranks > 1 {
        let _ = writeln!(
            o,
            "each engine has {} data-parallel ranks, each its own tree and pools: {}",
            r.dp_ranks,
            if r.dp_aware {
                format!(
                    "the router picks the rank (--dp-aware: {} workers, engine-major; the request's data_parallel_rank)",
                    r.assigned.len()
                )
            } else if r.policy == "dynamo_kv" {
                format!(
                    "the router picks the rank (Dynamo scores every (worker, dp_rank) from that rank's KV events: {} workers, engine-major; the request's data_parallel_rank)",
                    r.assigned.len()
                )
            } else if let Some(b) = &r.dp_balance {
                format!(
                    "the router picks the engine, the engine's DataParallelController its rank by --load-balance-method {b} (each engine's ranks in lockstep on its clock)"
                )
            } else {
                "the router picks the engine, the engine's DataParallelController round-robins its ranks".to_string()
            }
        );
    }
    if r.policy == "cache_aware" {
        let _ = writeln!(
            o,
            "router decisions: {} above the cache threshold (to the matched engine), {} at or below it (least load), {} under imbalance (least load)",
            r.cache_hits, r.cache_misses, r.imbalanced
        );
    }
    if r.policy == "dynamo_kv" {
        let _ = writeln!(
            o,
            "router decisions: {} to a worker (an engine, or a rank) holding some of the prompt's prefix (device or host, from its KV events), {} drawn among workers of equal least cost (seeded: the scenario's seed)",
            r.overlap_routed, r.tie_draws
        );
    }
    // Timed, each engine's TTFT p50 / p99 too.
    let secs = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.3} s"));
    let times = |x: &ReplayMetrics| {
        if r.clock_loads {
            format!(" {:>10} {:>10}", secs(x.ttft_p50_s), secs(x.ttft_p99_s))
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        o,
        "{:<6} {:>9} {:>14} {:>14} {:>14} {:>14} {:>10}{}",
        "engine",
        "requests",
        "input tokens",
        "device hit",
        "host hit",
        "storage hit",
        "total",
        if r.clock_loads {
            format!(" {:>10} {:>10}", "TTFT p50", "TTFT p99")
        } else {
            String::new()
        }
    );
    for (i, e) in m.engines.iter().enumerate() {
        let _ = writeln!(
            o,
            "{i:<6} {:>9} {:>14} {:>14} {:>14} {:>14} {:>10}{}",
            e.measured_requests,
            e.input_tokens,
            e.device_hit_tokens,
            e.host_hit_tokens,
            e.storage_hit_tokens,
            pct(e.total_hit_rate),
            times(e)
        );
    }
    let _ = writeln!(
        o,
        "{:<6} {:>9} {:>14} {:>14} {:>14} {:>14} {:>10}{}",
        "all",
        m.measured_requests,
        m.input_tokens,
        m.device_hit_tokens,
        m.host_hit_tokens,
        m.storage_hit_tokens,
        pct(m.total_hit_rate),
        times(m)
    );
    if let Some((p, x)) = other {
        let _ = writeln!(
            o,
            "under {} the same engines would hit {} in total ({} hit tokens): {} is {:+.2} points against it{}",
            p.as_str(),
            pct(x.total_hit_rate).trim(),
            x.total_hit_tokens,
            r.policy,
            (m.total_hit_rate - x.total_hit_rate) * 100.0,
            match (r.clock_loads, m.ttft_p50_s, x.ttft_p50_s) {
                (true, Some(a), Some(b)) => format!("; TTFT p50 {a:.3} s against {b:.3} s"),
                _ => String::new(),
            }
        );
    }
    if let Some(x) = engine_round_robin {
        // The engines' controllers pick by the scenario's method (a load-reading one
        // only timed).
        let how = match x.router.as_ref().and_then(|r| r.dp_balance.as_deref()) {
            Some(method) => format!("picks its rank by --load-balance-method {method}"),
            None => "round-robins its ranks".to_string(),
        };
        let _ = writeln!(
            o,
            "without --dp-aware (the router picks engines, each engine's DataParallelController {how}) the same ranks would hit {} in total ({} hit tokens): --dp-aware {} is {:+.2} points against it",
            pct(x.total_hit_rate).trim(),
            x.total_hit_tokens,
            r.policy,
            (m.total_hit_rate - x.total_hit_rate) * 100.0
        );
    }
}

fn render(
    cfg: &ReplayConfig,
    section: &RuntimeSection,
    m: &ReplayMetrics,
    note: Option<&str>,
    (one_tree, round_robin): (Option<f64>, Option<f64>),
) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "hicache-sim replay: {}",
        section.trace.as_deref().unwrap_or("-")
    );
    if let Some(n) = note {
        let _ = writeln!(o, "{n}");
    }
    let _ = writeln!(
        o,
        "engine hiradix (tree {}{}); page {} tokens; L1 {} pages, L2 {} pages, L3 {}; write policy {}; eviction {}; timing {}",
        cfg.policy.tree.id(),
        match cfg.capacities.swa {
            Some(p) => format!(
                " with its SWA component: {} SWA pages, window {}, {}, {}{}",
                p.pages,
                p.window,
                if p.decode {
                    "requests decoding their output"
                } else {
                    "requests ending at their prefill"
                },
                if cfg.measurement.timing == crate::runtime::Timing::On {
                    "requests overlapping on the clock"
                } else {
                    "one request at a time"
                },
                match cfg.scheduler.compute.chunked_prefill_size {
                    0 => String::new(),
                    c => format!(", chunked prefill at {c} tokens"),
                }
            ),
            None => String::new(),
        },
        cfg.capacities.page_size,
        cfg.capacities.l1_pages,
        cfg.capacities.l2_pages,
        if cfg.capacities.l3_unbounded {
            "unbounded".to_string()
        } else {
            cfg.capacities
                .l3_pages
                .map(|p| format!("{p} pages"))
                .unwrap_or_else(|| "none".into())
        },
        serde_json::to_value(cfg.policy.write_policy)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        serde_json::to_value(cfg.policy.eviction_policy)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        serde_json::to_value(cfg.measurement.timing)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
    );
    let _ = writeln!(
        o,
        "requests {} (measured {}), input tokens {}, whole pages {}",
        m.requests, m.measured_requests, m.input_tokens, m.input_pages
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<8} {:>14} {:>10} {:>14}",
        "tier", "hit tokens", "hit_rate", "page_hit_rate"
    );
    for (t, tok, r, pr) in [
        (
            "device",
            m.device_hit_tokens,
            m.device_hit_rate,
            m.device_page_hit_rate,
        ),
        (
            "host",
            m.host_hit_tokens,
            m.host_hit_rate,
            m.host_page_hit_rate,
        ),
        (
            "storage",
            m.storage_hit_tokens,
            m.storage_hit_rate,
            m.storage_page_hit_rate,
        ),
        (
            "miss",
            m.miss_tokens,
            1.0 - m.total_hit_rate,
            1.0 - m.total_page_hit_rate,
        ),
        (
            "total",
            m.total_hit_tokens,
            m.total_hit_rate,
            m.total_page_hit_rate,
        ),
    ] {
        let _ = writeln!(o, "{t:<8} {tok:>14} {:>10} {:>14}", pct(r), pct(pr));
    }
    if !m.ranks.is_empty() {
        render_ranks(&mut o, m, cfg.capacities.dp_balance, one_tree, round_robin);
    }
    let _ = writeln!(o);
    let gb = |b: u64| format!("{:.2} GB", b as f64 / 1e9);
    let _ = writeln!(
        o,
        "traffic: load-back {}, backup {}, prefetch {}, L3 writes {}",
        gb(m.load_back_bytes),
        gb(m.backup_bytes),
        gb(m.prefetch_bytes),
        gb(m.l3_write_bytes)
    );
    if cfg.has_storage() {
        // SGLang's prefetch budget (`cache_controller.py: prefetch_rate_limited`) binds
        // when prefetches in flight hold `prefetch_capacity_limit` tokens.
        // The polls' all-reduces, where charged (outputs without them keep their bytes).
        let polls = if m.prefetch_poll_all_reduces > 0 {
            format!(
                "; {} all-reduces in admission polls and terminations ({} ms)",
                m.prefetch_poll_all_reduces,
                m.prefetch_poll_all_reduces * cfg.prefetch_poll_sync_ns() / 1_000_000
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "prefetches: {} issued, {} refused by the prefetch capacity limit ({} tokens), {} retries{polls}",
            m.prefetches_issued,
            m.prefetches_rate_limited,
            cfg.prefetch_capacity_limit_tokens(),
            m.prefetch_retries
        );
    }
    let _ = writeln!(
        o,
        "evictions: device {} pages, host {} pages, storage {} pages; failed backups {}; tokens dropped without backup {}",
        m.device_evicted_pages,
        m.host_evicted_pages,
        m.storage_evicted_pages,
        m.failed_backups,
        m.tokens_dropped_without_backup
    );
    let _ = writeln!(
        o,
        "host occupancy: final {} pages backing device-resident nodes + {} host-only; peak {}",
        m.final_host_device_resident_pages, m.final_host_only_pages, m.peak_host_pages
    );
    if let (Some(p50), Some(p90), Some(p99)) = (m.ttft_p50_s, m.ttft_p90_s, m.ttft_p99_s) {
        let _ = writeln!(
            o,
            "TTFT: p50 {p50:.3} s, p90 {p90:.3} s, p99 {p99:.3} s; makespan {:.1} s",
            m.makespan_s.unwrap_or(0.0)
        );
        if let Some(t) = m.tpot_mean_s {
            let _ = writeln!(
                o,
                "TPOT mean {:.2} ms (decode time over output tokens after the first)",
                t * 1e3
            );
        }
        if let Some(pd) = &m.pd {
            write_pd(&mut o, pd);
        }
        if m.retracted_requests + m.decode_oom_aborts > 0 {
            let _ = writeln!(
                o,
                "decode KV: {} requests retracted at {} decode steps (retract_decode: re-queued, prompt and outputs prefilled again), {} aborted out of memory",
                m.retracted_requests, m.retraction_steps, m.decode_oom_aborts
            );
        }
        if let Some(b) = &m.ttft_breakdown {
            let parts: Vec<String> = b
                .shares()
                .iter()
                // One rank has no DP wait, a replay without HiCache's per-step
                // synchronisation no sync part, one without the fixed per-request way
                // no overhead part: its line keeps its five parts.
                .filter(|(name, s, _)| {
                    !matches!(*name, "DP wait" | "HiCache sync" | "request overhead") || *s > 0.0
                })
                .map(|(name, s, share)| format!("{name} {:.3} s ({:.1} %)", s, share * 100.0))
                .collect();
            // The per-iteration costs charged (HiCache's per-step synchronisation, the
            // L3 prefetch polls' all-reduces) are in the model; without them the line
            // keeps its bytes.
            let modelled: Vec<&str> = [
                (
                    cfg.hicache_step_sync_ns() > 0,
                    "HiCache's per-step synchronisation",
                ),
                (
                    cfg.prefetch_poll_sync_ns() > 0,
                    "the L3 prefetch polls' all-reduces",
                ),
            ]
            .into_iter()
            .filter_map(|(on, what)| on.then_some(what))
            .collect();
            // With the fixed per-request way charged, only the per-iteration costs are
            // left out.
            let fixed = if cfg.frontend.request_overhead.0 > 0 {
                "fixed per-iteration costs"
            } else {
                "fixed per-request and per-iteration costs"
            };
            let missing = if modelled.is_empty() {
                format!("{fixed}, HiCache's own bookkeeping")
            } else {
                format!(
                    "{fixed} other than {}, HiCache's own bookkeeping",
                    modelled.join(" and ")
                )
            };
            let _ = writeln!(
                o,
                "TTFT mean {:.3} s = {} (not modelled: {missing})",
                b.mean_s,
                parts.join(" + ")
            );
        }
        let _ = writeln!(o, "speeds: {}", crate::runtime::Speeds::of(cfg).line());
        if let Some(f) = section.slowdown_factor.filter(|&f| f != 1.0) {
            let _ = writeln!(
                o,
                "arrivals: the trace's gaps x {f} (slowdown factor, as bench_serving --mooncake-slowdown-factor)"
            );
        }
    }
    if let Some(b) = &m.bench {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "bench_multiturn: {} clients x {} rounds (converged in {} passes): TTFT mean {:.3} s, input {:.0} tok/s, TPOT {}, cache hit rate {}, duration {:.1} s",
            b.clients,
            b.rounds,
            b.passes,
            b.ttft_mean_s,
            b.input_tok_s,
            b.tpot_mean_s
                .map_or("-".into(), |t| format!("{:.1} ms", t * 1e3)),
            pct(b.hit_rate).trim(),
            b.duration_s
        );
        let _ = writeln!(
            o,
            "{:>5} {:>8} {:>11} {:>11} {:>11} {:>12} {:>10} {:>10}",
            "round",
            "requests",
            "ttft mean",
            "ttft p50",
            "ttft p99",
            "input tok/s",
            "tpot",
            "hit rate"
        );
        for r in &m.rounds {
            let _ = writeln!(
                o,
                "{:>5} {:>8} {:>9.3} s {:>9.3} s {:>9.3} s {:>12.0} {:>10} {:>10}",
                r.round,
                r.requests,
                r.ttft_mean_s,
                r.ttft_p50_s,
                r.ttft_p99_s,
                r.input_tok_s,
                r.tpot_mean_s
                    .map_or("-".into(), |t| format!("{:.1} ms", t * 1e3)),
                pct(r.hit_rate)
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Definitions: {}", definitions());
    o
}

/// A `runtime.bench` run's per-round figures as CSV (one row per round, with the speeds
/// that produced them) and the plot of TTFT and hit rate per round next to it.
fn write_rounds(
    m: &ReplayMetrics,
    cfg: &ReplayConfig,
    path: &str,
    unverified: &[String],
) -> Result<(), CommandError> {
    if m.rounds.is_empty() {
        return Err(InputError::new(
            "--rounds",
            "per-round figures need a multi-turn run: set runtime.bench in the scenario",
        )
        .into());
    }
    let sp = crate::runtime::Speeds::of(cfg);
    let header: Vec<String> = crate::runtime::rounds::CSV_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(["cost_model", "speeds", "status", "unverified"].map(String::from))
        .collect();
    let (status, why) = status_cells(unverified);
    let rows: Vec<Vec<String>> = m
        .rounds
        .iter()
        .map(|r| {
            let mut v = r.csv_cells();
            v.push(sp.cost_model.to_string());
            v.push(sp.line());
            v.push(status.clone());
            v.push(why.clone());
            v
        })
        .collect();
    let bytes = crate::sweep::row::csv_bytes(&header, &rows);
    crate::output::write_file(Path::new(path), &bytes)
        .map_err(|e| CommandError::Other(format!("{path}: {e}")))?;
    let csv_path = Path::new(path);
    let dir = csv_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stem = dir.join(
        csv_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "rounds".into()),
    );
    let series = vec![("".to_string(), m.rounds.clone())];
    let info = crate::report::plot::per_round(&series, &sp.short(), &stem)
        .map_err(super::sweep_cmd::plot_error)?;
    for f in &info.files {
        eprintln!("plot: {}", f.display());
    }
    Ok(())
}

/// `--engines-csv`: each engine behind the router, then the whole, with the engine's
/// TTFT when timed.
fn write_engines(
    m: &ReplayMetrics,
    timed: bool,
    path: &str,
    unverified: &[String],
) -> Result<(), CommandError> {
    write_parts("engine", &m.engines, m, timed, path, unverified)
}

/// `--ranks-csv`: each data-parallel rank, then the whole, with the rank's TTFT when
/// timed; and the hit rates per rank plotted next to it.
fn write_ranks(
    m: &ReplayMetrics,
    timed: bool,
    path: &str,
    unverified: &[String],
) -> Result<(), CommandError> {
    write_parts("rank", &m.ranks, m, timed, path, unverified)?;
    let csv_path = Path::new(path);
    let dir = csv_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stem = dir.join(format!(
        "{}_hit_rates",
        csv_path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("ranks")
    ));
    let t = crate::report::plot::Table::read(csv_path).map_err(super::sweep_cmd::plot_error)?;
    let info = crate::report::plot::hit_rate_vs(&t, "rank", None, &stem)
        .map_err(super::sweep_cmd::plot_error)?;
    for f in &info.files {
        eprintln!("plot: {}", f.display());
    }
    Ok(())
}

/// One row per part (an engine, a rank: `first` names the column), then `all`: requests,
/// hit tokens and rates per tier, and with `timed` TTFT p50 / p99, the mean DP wait and
/// the makespan; then the replay's status.
fn write_parts(
    first: &str,
    parts: &[ReplayMetrics],
    whole: &ReplayMetrics,
    timed: bool,
    path: &str,
    unverified: &[String],
) -> Result<(), CommandError> {
    let err = |e: &dyn std::fmt::Display| CommandError::Other(format!("{path}: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        first,
        "requests",
        "measured_requests",
        "input_tokens",
        "device_hit_tokens",
        "host_hit_tokens",
        "storage_hit_tokens",
        "miss_tokens",
        "hit_rate_device",
        "hit_rate_host",
        "hit_rate_storage",
        "hit_rate_total",
    ];
    if timed {
        header.extend(["ttft_p50_s", "ttft_p99_s", "dp_wait_mean_s", "makespan_s"]);
    }
    header.extend(["status", "unverified"]);
    w.write_record(&header).map_err(|e| err(&e))?;
    let (status, why) = status_cells(unverified);
    let rows = parts
        .iter()
        .enumerate()
        .map(|(i, e)| (i.to_string(), e))
        .chain(std::iter::once(("all".to_string(), whole)));
    let secs = |x: Option<f64>| x.map_or(String::new(), |s| format!("{s:.6}"));
    for (name, e) in rows {
        let mut r = vec![
            name,
            e.requests.to_string(),
            e.measured_requests.to_string(),
            e.input_tokens.to_string(),
            e.device_hit_tokens.to_string(),
            e.host_hit_tokens.to_string(),
            e.storage_hit_tokens.to_string(),
            e.miss_tokens.to_string(),
            format!("{:.6}", e.device_hit_rate),
            format!("{:.6}", e.host_hit_rate),
            format!("{:.6}", e.storage_hit_rate),
            format!("{:.6}", e.total_hit_rate),
        ];
        if timed {
            r.extend([
                secs(e.ttft_p50_s),
                secs(e.ttft_p99_s),
                secs(e.ttft_breakdown.map(|b| b.dp_wait_s)),
                secs(e.makespan_s),
            ]);
        }
        r.extend([status.clone(), why.clone()]);
        w.write_record(&r).map_err(|e| err(&e))?;
    }
    let bytes = w.into_inner().map_err(|e| err(&e))?;
    crate::output::write_file(Path::new(path), &bytes).map_err(|e| err(&e))
}

/// The timeline as CSV (one row per sample) and its plot next to it.
fn write_timeline(
    m: &ReplayMetrics,
    path: &str,
    untimed: bool,
    unverified: &[String],
) -> Result<(), CommandError> {
    let (status, why) = status_cells(unverified);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "request_index",
        "time_s",
        "device_pages",
        "host_device_resident_pages",
        "host_only_pages",
        "hit_rate_device",
        "hit_rate_host",
        "hit_rate_storage",
        "hit_rate_total",
        "status",
        "unverified",
    ])
    .map_err(|e| CommandError::Other(format!("{path}: {e}")))?;
    for p in &m.timeline {
        w.write_record([
            p.request_index.to_string(),
            format!("{:.6}", p.time_ns as f64 / 1e9),
            p.device_pages.to_string(),
            p.host_device_resident_pages.to_string(),
            p.host_only_pages.to_string(),
            format!("{:.6}", p.device_hit_rate),
            format!("{:.6}", p.host_hit_rate),
            format!("{:.6}", p.storage_hit_rate),
            format!("{:.6}", p.total_hit_rate),
            status.clone(),
            why.clone(),
        ])
        .map_err(|e| CommandError::Other(format!("{path}: {e}")))?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| CommandError::Other(format!("{path}: {e}")))?;
    // Atomically, through links, in place on devices (never a half-written CSV).
    crate::output::write_file(Path::new(path), &bytes)
        .map_err(|e| CommandError::Other(format!("{path}: {e}")))?;
    let csv_path = Path::new(path);
    let dir = csv_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // Without timing every sample is at t = 0: plot against the request index.
    let x = untimed.then_some("request_index");
    crate::report::plot::plot_csv(csv_path, x, None, None, dir)
        .map_err(super::sweep_cmd::plot_error)?;
    Ok(())
}

/// The `status` and `unverified` cells of every replay CSV row: `ok` and empty, or
/// `unverified` and the reasons (`pipeline::replay_unverified`), `; `-joined.
fn status_cells(unverified: &[String]) -> (String, String) {
    match unverified {
        [] => ("ok".into(), String::new()),
        u => ("unverified".into(), u.join("; ")),
    }
}

/// The figures beside a replay whose device tier is the SWA tree.
struct SwaFigures {
    pool: crate::runtime::SwaPool,
    /// Every request ending at its prefill (one output token, a PD prefill server).
    prefill_only: f64,
    /// A full-attention tree without the SWA component, same call pattern and pools.
    full: f64,
}

/// Two more replays of a replay `cfg` that runs the SWA tree
/// (`pipeline::adopt_swa_tree`): every request ending at its prefill, and the full tree
/// alone. `None` when one stops.
fn swa_figures(section: &RuntimeSection, cfg: &ReplayConfig) -> Option<SwaFigures> {
    let pool = cfg.capacities.swa?;
    let run = |c: &ReplayConfig| {
        pipeline::run_replay(section, c)
            .ok()
            .map(|m| m.device_hit_rate)
    };
    let mut c = cfg.clone();
    c.capacities.swa = Some(crate::runtime::SwaPool {
        decode: false,
        ..pool
    });
    let prefill_only = run(&c)?;
    c.capacities.swa = None;
    let full = run(&c)?;
    Some(SwaFigures {
        pool,
        prefill_only,
        full,
    })
}

/// A PD deployment's lines (`metrics.pd`): its servers, where the client's TTFT goes,
/// and what the decode servers held.
fn write_pd(o: &mut String, pd: &crate::runtime::pd::PdFigures) {
    use std::fmt::Write as _;
    let decode = pd
        .decode
        .map(|d| {
            format!(
                " (pool {} tokens per rank, max_running_requests {}, {} request slots)",
                d.pool_tokens, d.max_running_requests, d.req_slots
            )
        })
        .unwrap_or_default();
    let dp = if pd.dp_ranks > 1 {
        format!(", each of {} DP-attention ranks", pd.dp_ranks)
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "PD: {} prefill server(s), {} decode server(s){dp}{decode}; requests per decode server {:?}",
        pd.prefill_engines, pd.decode_engines, pd.decode_assigned
    );
    let total = pd.prealloc_wait_mean_s
        + pd.prefill_mean_s
        + pd.transfer_mean_s
        + pd.first_token_wait_mean_s;
    let share = |x: f64| if total > 0.0 { x / total * 100.0 } else { 0.0 };
    let _ = writeln!(
        o,
        "PD TTFT mean {total:.3} s = decode preallocation wait {:.3} s ({:.1} %) + prefill server {:.3} s ({:.1} %) + KV transfer {:.3} s ({:.1} %; {:.2} GB/s per rank) + first-token wait {:.3} s ({:.1} %); the prefill servers' own TTFT p50 {}",
        pd.prealloc_wait_mean_s,
        share(pd.prealloc_wait_mean_s),
        pd.prefill_mean_s,
        share(pd.prefill_mean_s),
        pd.transfer_mean_s,
        share(pd.transfer_mean_s),
        pd.transfer_bandwidth / 1e9,
        pd.first_token_wait_mean_s,
        share(pd.first_token_wait_mean_s),
        pd.prefill_ttft_p50_s
            .map(|t| format!("{t:.3} s"))
            .unwrap_or_else(|| "-".into()),
    );
    let _ = writeln!(
        o,
        "PD decode: {} steps, mean batch {:.2}, peak KV {} tokens per rank, {} steps over the pool (SGLang would retract: not modelled)",
        pd.decode_steps, pd.decode_batch_mean, pd.decode_peak_tokens, pd.decode_overflow_steps
    );
    if pd.decode_radix_cache {
        let share = if pd.decode_prompt_tokens > 0 {
            pd.decode_prefix_tokens as f64 / pd.decode_prompt_tokens as f64 * 100.0
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "PD decode radix cache: {} of {} prompt tokens ({share:.2} %) already on their decode server, not sent",
            pd.decode_prefix_tokens, pd.decode_prompt_tokens
        );
    }
    if pd.decode_hicache {
        let _ = writeln!(
            o,
            "PD decode HiCache: {} of them restored from the decode servers' host tier; {} pages backed up to it; {} restores SGLang would fail (sent by the prefill server instead)",
            pd.decode_host_prefix_tokens, pd.decode_backup_pages, pd.decode_restore_failed
        );
    }
}
