//! One sweep point: scenario value → start-up → host pool → replay → CSV row.

use serde_json::Value;

use super::{host_pool_tokens, replay_config, replay_memo, replay_unverified};
use crate::release::Sglang;
use crate::scenario::lines::LineIndex;
use crate::scenario::load::typed_as;
use crate::scenario::resolve::resolve_file;
use crate::startup::{self, Outcome, StartupPlan};
use crate::sweep::{Point, Row};

/// The pipeline's columns, in CSV order (after the sweep's own `point`, axes, `seed`).
pub const COLUMNS: &[&str] = &[
    "sglang",
    "outcome",
    "status",
    "ranks_started",
    "ranks_refused",
    "ranks_oom_killed",
    "budget_bytes",
    "requested_bytes",
    "margin_bytes",
    "binding_pool",
    "fitted_ratio",
    "refusal_probability",
    "oom_probability",
    "start_probability",
    "device_pool_tokens",
    "host_pool_tokens",
    "l1_pages",
    "l2_pages",
    "message",
    "unverified",
    "requests",
    "input_tokens",
    "hit_rate_device",
    "hit_rate_host",
    "hit_rate_storage",
    "hit_rate_miss",
    "hit_rate_total",
    "page_hit_rate_device",
    "page_hit_rate_host",
    "page_hit_rate_storage",
    "page_hit_rate_miss",
    "page_hit_rate_total",
    "load_back_bytes",
    "backup_bytes",
    "prefetch_bytes",
    "l3_write_bytes",
    "device_evicted_pages",
    "host_evicted_pages",
    "failed_backups",
    "tokens_dropped_without_backup",
    "peak_host_pages",
    "ttft_p50_s",
    "ttft_p99_s",
    "cost_model",
    "speeds",
];

/// Runs one point under `sglang` (typed once for the sweep). `base_source` names the
/// scenario file for errors.
/// `launch`: what the base scenario's launch command sets that a replay does not model
/// (the point's tree has no launch text).
pub fn point_row(
    scenario: &Value,
    point: &Point,
    sglang: Sglang,
    base_source: &str,
    launch: &crate::scenario::launch_schedule::ReplayUnmodelled,
) -> Result<Row, crate::sweep::PointError> {
    let mut value = scenario.clone();
    // The point's seed drives the start-up jitter and the replay.
    if let Some(o) = value.as_object_mut() {
        o.insert("seed".into(), Value::from(point.seed));
    }
    let file = typed_as(value, sglang, base_source, &LineIndex::default())?;
    let s = resolve_file(&file, base_source, &LineIndex::default(), &[])?;
    let plan = StartupPlan::new(&s)?;
    let mc = startup::run(&plan, s.seed, s.runs);
    let ranks = &mc.first_run;
    let worst = ranks
        .iter()
        .map(|r| r.outcome)
        .max()
        .unwrap_or(Outcome::Started);
    let count = |o: Outcome| ranks.iter().filter(|r| r.outcome == o).count();
    let binding = ranks
        .iter()
        .filter(|r| r.margin_bytes.is_some())
        .min_by_key(|r| r.margin_bytes);
    let host_tokens = host_pool_tokens(&mc);
    // The replay's configuration, when the start-up serves (a refused or killed start-up
    // serves nothing: the row says so, no hit rates).
    let cfg = match &s.runtime {
        Some(section) if worst == Outcome::Started => {
            Some(replay_config(&s, &plan, host_tokens, &section.replay)?)
        }
        _ => None,
    };
    // With a replay, its hit rates carry what the tree leaves out too.
    let unverified = match &s.runtime {
        Some(_) => {
            let mut u = replay_unverified(
                &s,
                &plan,
                cfg.as_ref().is_some_and(|c| c.capacities.swa.is_some()),
            );
            if let Some(c) = cfg.as_ref() {
                u.extend(super::replay_config_unverified(Some(&s), c));
                u.extend_from_slice(
                    launch.of_replay(c.measurement.timing == crate::runtime::Timing::On),
                );
            }
            u
        }
        None => s.unmodelled.iter().map(ToString::to_string).collect(),
    };
    let mut row = Row::new()
        .with("sglang", s.version.id())
        .with("outcome", worst.id())
        .with(
            "status",
            startup::status(worst.id(), !unverified.is_empty()),
        )
        .with("ranks_started", count(Outcome::Started))
        .with("ranks_refused", count(Outcome::Refused))
        .with("ranks_oom_killed", count(Outcome::OomKilled))
        .with(
            "budget_bytes",
            binding
                .and_then(|r| r.budget_bytes)
                .map(|b| b.to_string())
                .unwrap_or_default(),
        )
        .with(
            "requested_bytes",
            binding
                .and_then(|r| r.requested_bytes)
                .map(|b| b.to_string())
                .unwrap_or_default(),
        )
        .with(
            "margin_bytes",
            binding
                .and_then(|r| r.margin_bytes)
                .map(|b| b.to_string())
                .unwrap_or_default(),
        )
        .with(
            "binding_pool",
            binding.and_then(|r| r.binding_pool).unwrap_or_default(),
        )
        .with(
            "fitted_ratio",
            ranks
                .iter()
                .filter_map(|r| r.fitted_ratio)
                .next()
                .map(|x| format!("{x:.6}"))
                .unwrap_or_default(),
        )
        .with(
            "refusal_probability",
            format!("{:.6}", mc.refusal_probability),
        )
        .with("oom_probability", format!("{:.6}", mc.oom_probability))
        .with("start_probability", format!("{:.6}", mc.start_probability))
        .with("device_pool_tokens", plan.device_tokens)
        .with(
            "host_pool_tokens",
            host_tokens.map(|t| t.to_string()).unwrap_or_default(),
        )
        .with(
            "message",
            // The binding rank's message when it failed, else the first failure's.
            binding
                .filter(|r| r.outcome != Outcome::Started)
                .or_else(|| ranks.iter().find(|r| r.outcome != Outcome::Started))
                .and_then(|r| r.message.clone())
                .unwrap_or_default(),
        )
        .with("unverified", unverified.join("; "));
    let (Some(section), Some(cfg)) = (&s.runtime, cfg) else {
        return Ok(row);
    };
    let section = &super::pd::with_decode_server(&s, section)?;
    row.push("l1_pages", cfg.capacities.l1_pages);
    row.push("l2_pages", cfg.capacities.l2_pages);
    if section.engine != crate::scenario::Engine::Hiradix {
        return Err("sweeps replay with the hiradix engine; the policy-simulator engine is for `hicache-sim replay`".into());
    }
    // Memoised across the sweep's points when on: same resolved config, same result.
    let m = replay_memo::replay(section, &cfg)?;
    let f = |x: f64| format!("{x:.6}");
    row.push("requests", m.measured_requests);
    row.push("input_tokens", m.input_tokens);
    row.push("hit_rate_device", f(m.device_hit_rate));
    row.push("hit_rate_host", f(m.host_hit_rate));
    row.push("hit_rate_storage", f(m.storage_hit_rate));
    row.push("hit_rate_miss", f(1.0 - m.total_hit_rate));
    row.push("hit_rate_total", f(m.total_hit_rate));
    row.push("page_hit_rate_device", f(m.device_page_hit_rate));
    row.push("page_hit_rate_host", f(m.host_page_hit_rate));
    row.push("page_hit_rate_storage", f(m.storage_page_hit_rate));
    row.push("page_hit_rate_miss", f(1.0 - m.total_page_hit_rate));
    row.push("page_hit_rate_total", f(m.total_page_hit_rate));
    row.push("load_back_bytes", m.load_back_bytes);
    row.push("backup_bytes", m.backup_bytes);
    row.push("prefetch_bytes", m.prefetch_bytes);
    row.push("l3_write_bytes", m.l3_write_bytes);
    row.push("device_evicted_pages", m.device_evicted_pages);
    row.push("host_evicted_pages", m.host_evicted_pages);
    row.push("failed_backups", m.failed_backups);
    row.push(
        "tokens_dropped_without_backup",
        m.tokens_dropped_without_backup,
    );
    row.push("peak_host_pages", m.peak_host_pages);
    row.push("ttft_p50_s", m.ttft_p50_s.map(f).unwrap_or_default());
    row.push("ttft_p99_s", m.ttft_p99_s.map(f).unwrap_or_default());
    // The speeds behind the TTFT columns, on timed rows only.
    if cfg.measurement.timing == crate::runtime::Timing::On {
        let sp = crate::runtime::Speeds::of(&cfg);
        row.push("cost_model", sp.cost_model);
        // Arrivals not the trace's own are part of what made the times.
        let slowdown = match section.slowdown_factor.filter(|&f| f != 1.0) {
            Some(f) => format!("; arrivals x {f} (slowdown factor)"),
            None => String::new(),
        };
        row.push("speeds", format!("{}{slowdown}", sp.line()));
    }
    // A `runtime.bench` run: the whole run's figures, then each round's.
    if let Some(b) = &m.bench {
        row.push("ttft_mean_s", f(b.ttft_mean_s));
        row.push("input_tok_s", format!("{:.1}", b.input_tok_s));
        row.push("tpot_mean_s", b.tpot_mean_s.map(f).unwrap_or_default());
        row.push("bench_passes", b.passes);
        for r in &m.rounds {
            for (name, cell) in crate::runtime::rounds::ROUND_FIGURES
                .iter()
                .zip(r.figure_cells())
            {
                row.push(format!("round_{name}_{}", r.round), cell);
            }
        }
    }
    Ok(row)
}
