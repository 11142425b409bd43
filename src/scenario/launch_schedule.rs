//! Launch flags that change how SGLang's scheduler orders and runs requests and that the
//! replay does not model. A command that gives one with a value that changes the run
//! makes every replay answer of its scenario `unverified`, naming the flag and which
//! way the figures may be off (flags that move memory are `launch`'s
//! `MEMORY_UNMODELLED`; scheduling flags the replay models fill `server:` fields:
//! `--max-running-requests`, `--chunked-prefill-size`, `--max-prefill-tokens`,
//! `--schedule-conservativeness`, `--schedule-policy`, `--load-balance-method`, the
//! HiCache flags; a policy the timed replay does not run is named by
//! `pipeline::replay_config_unverified`).
//!
//! Flags a modelled release accepts but that change nothing here are not named:
//! `--num-continuous-decode-steps` has no reader in 0.5.14–0.5.23 (only its field);
//! `--enable-priority-scheduling` over a trace without priorities gives every request
//! the same default (`scheduler.py: _set_or_validate_priority`), so its sort is
//! arrival order, and it preempts only past a priority difference above
//! `--priority-scheduling-preemption-threshold` (named when that is below 0);
//! `--schedule-policy routing-key` sorts nothing when no request has a routing key
//! (`_sort_by_routing_key`); `--enable-mixed-chunk` without chunked prefill or on a PD
//! server mixes nothing. Not named either (said in the docs): where SGLang turns the
//! overlap scheduler off or a flag on by itself (a Mamba model whose radix cache has no
//! extra buffer, DFLASH's free-slot delay); what depends on the model, the GPU or the
//! release (PP > 1, Qwen3-VL's interval on Hopper) is `pipeline::replay_config_unverified`'s.
//! Scheduling flags SGLang refuses at start are refused ([`start_refusal`]).

use serde_json::Value;

use super::launch::LaunchArgs;

/// Flags whose `true` changes the timed replay's clock, with what is left out.
const TIMED_UNMODELLED: &[(&str, &str)] = &[
    (
        "disable_overlap_schedule",
        "without the overlap scheduler (`scheduler.py: event_loop_normal`) each iteration's CPU work (batch formation, result processing) adds to the GPU's forwards, where the replay's clock takes it as hidden behind them: TTFT and TPOT may be low",
    ),
    (
        "enable_two_batch_overlap",
        "two-batch overlap splits each forward into two micro-batches whose communication overlaps the other's compute; the replay's forwards cost one batch's profile: forward times may be off",
    ),
    (
        "enable_single_batch_overlap",
        "single-batch overlap runs a forward's MoE communication beside its compute; the replay's forwards cost the profile without it: forward times may be off",
    ),
];

/// Deterministic inference, named on every replay: with an attention backend outside
/// `RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND` SGLang turns the radix cache off
/// (`server_args.py: _handle_deterministic_inference` 0.5.14–0.5.18,
/// `arg_groups/attention_hook.py` 0.5.19–0.5.23), which moves hit rates too.
const DETERMINISTIC: &str = "deterministic inference aligns prefill chunks (`init_deterministic_inference_config`) and, with an attention backend outside its list (`RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND`), turns the radix cache off (`_handle_deterministic_inference`): no cached prefix at all; the replay chunks and caches as without it";

/// The prefill delayer's reason (the flag, or the environment variable that turns it
/// on: `server_args.py: _handle_prefill_delayer_env_compat` in 0.5.14–0.5.18,
/// `arg_groups/serving_hook.py` from 0.5.19).
const PREFILL_DELAYER: &str = "the prefill delayer (`managers/prefill_delayer.py`) holds prefills back (until the other DP-attention ranks have some too, while the queue or the token usage stays under its watermarks); the replay prefills as soon as it can: TTFT may be low";

/// Flags whose value (other than the default) changes the timed replay's clock.
const TIMED_VALUED: &[(&str, &str)] = &[
    (
        "prefill_max_requests",
        "caps the requests of a prefill batch (`schedule_policy.py: PrefillAdder.add_one_req`); the replay admits to the token budget and the running cap only",
    ),
    (
        "pp_max_micro_batch_size",
        "caps the running batch (`scheduler.py: get_num_allocatable_reqs`); the replay caps it at --max-running-requests only",
    ),
    (
        "min_free_slots_delay",
        "holds prefills until that many request slots are free (`min_free_slots_delayer.py: MinFreeSlotsDelayer`); the replay admits at the first free slot",
    ),
    (
        "prefill_decode_interval",
        "runs that many decode rounds after each prefill before the next (`scheduler.py: _should_defer_prefill`); the replay prefills first whenever it can",
    ),
];

/// SGLang's scheduler variables the replay holds at their defaults (`environ.py`).
const TIMED_ENV: &[&str] = &[
    "SGLANG_INIT_NEW_TOKEN_RATIO",
    "SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR",
    "SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS",
    "SGLANG_RETRACT_DECODE_STEPS",
    "SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION",
    "SGLANG_REQ_WAITING_TIMEOUT",
    "SGLANG_REQ_RUNNING_TIMEOUT",
];

/// What `--schedule-policy p` does under SGLang 0.5.14–0.5.23
/// (`schedule_policy.py: SchedulePolicy._validate_and_adjust_policy`, `calc_priority`).
#[derive(Debug, PartialEq, Eq)]
pub enum Policy {
    /// Admission in arrival order: `fcfs`; a cache-aware policy with the radix cache off
    /// (run as FCFS); `routing-key` over requests without keys.
    Fcfs,
    /// Longest prefix match, which the timed replay runs (`runtime::SchedulePolicy::Lpm`).
    Lpm,
    /// A reordering the replay does not model.
    Reorders,
    /// The scheduler raises at start ([`policy_refusal`]): `priority` (accepted by
    /// argparse, in neither policy enum) and `shortest-prefill-first` (a choice from
    /// 0.5.21) without prefix caching.
    Refused,
}

/// What SGLang's scheduler makes of policy `p` with its tree cache off or on
/// (`getattr(tree_cache, "disable", True)`: `--disable-radix-cache`, or a PD decode
/// server without its radix cache, as `release::check_server` resolves them).
pub fn policy(p: &str, radix_cache_off: bool) -> Policy {
    match p {
        "fcfs" | "routing-key" => Policy::Fcfs,
        "priority" => Policy::Refused,
        "shortest-prefill-first" if radix_cache_off => Policy::Refused,
        "lpm" | "dfs-weight" | "hrrn" if radix_cache_off => Policy::Fcfs,
        "lpm" => Policy::Lpm,
        _ => Policy::Reorders,
    }
}

/// `--enable-priority-scheduling` with a `--schedule-policy` other than `fcfs` or `lof`:
/// the server-argument check's `AssertionError`, every release 0.5.14–0.5.23
/// (`server_args.py: check_server_args` to 0.5.18, `arg_groups/validation_hook.py`
/// from 0.5.19), in SGLang's own words (the message follows "SGLang X's").
pub fn start_refusal(launch: &LaunchArgs) -> Option<String> {
    let p = launch
        .given
        .get("schedule_policy")
        .and_then(Value::as_str)?;
    let priority = launch
        .given
        .get("enable_priority_scheduling")
        .and_then(Value::as_bool)
        == Some(true);
    (priority && !matches!(p, "fcfs" | "lof")).then(|| {
        format!(
            "launch fails with `AssertionError: To use priority scheduling, schedule_policy must be 'fcfs' or 'lof'. '{p}' is not supported.`"
        )
    })
}

/// The scheduler's `ValueError` at start (the message follows "SGLang X's"), every
/// release 0.5.14–0.5.23: `priority` (in argparse's choices, in neither policy enum)
/// and, from 0.5.21 (a choice from then), `shortest-prefill-first` with the tree cache
/// off (`managers/schedule_policy.py:
/// SchedulePolicy._validate_and_adjust_policy`, raised from
/// `Scheduler.init_schedule_policy` in every role; the prefix-caching error is caught
/// there and re-raised as an unknown policy). Where SGLang turns the radix cache off by
/// itself (deterministic inference on a backend outside its list, embedding models, …)
/// a refusal is missed, never made up.
pub fn policy_refusal(p: &str, radix_cache_off: bool) -> Option<String> {
    (policy(p, radix_cache_off) == Policy::Refused).then(|| {
        format!(
            "scheduler fails at start with `ValueError: Unknown schedule_policy: policy='{p}'`{}",
            if p == "priority" {
                " (`priority` is a choice of the flag but no policy: priority scheduling is --enable-priority-scheduling with --schedule-policy fcfs or lof)"
            } else {
                " (shortest-prefill-first requires prefix caching: the radix cache is off)"
            }
        )
    })
}

/// What `launch` sets that a replay (timed when `timed`) does not model, each a reason
/// for `unverified`, in a fixed order.
pub fn replay_unmodelled(launch: &LaunchArgs, timed: bool) -> Vec<String> {
    let given = |dest: &str| launch.given.get(dest);
    let is_on = |dest: &str| given(dest).and_then(Value::as_bool) == Some(true);
    let typed = |dest: &str| {
        launch
            .given_as
            .get(dest)
            .cloned()
            .unwrap_or_else(|| format!("--{}", dest.replace('_', "-")))
    };
    let pd = given("disaggregation_mode")
        .and_then(Value::as_str)
        .is_some_and(|m| m != "null");
    let mut out = Vec::new();
    if is_on("enable_deterministic_inference") {
        out.push(format!(
            "{} is not modelled: {DETERMINISTIC}",
            typed("enable_deterministic_inference")
        ));
    }
    if !timed {
        return out;
    }
    for (dest, what) in TIMED_UNMODELLED {
        if is_on(dest) {
            out.push(format!("{} is not modelled: {what}", typed(dest)));
        }
    }
    let chunked = given("chunked_prefill_size")
        .and_then(Value::as_i64)
        .is_none_or(|c| c > 0);
    if is_on("enable_mixed_chunk") && chunked && !pd {
        out.push(format!(
            "{} is not modelled: SGLang runs the running requests' decode rows in the prefill chunk's forward and takes them off the chunk's budget (`scheduler.py: _get_new_batch_prefill_raw` → `ScheduleBatch.mix_with_running`); the replay runs a chunk and a decode step apart: TTFT and TPOT under load may be off",
            typed("enable_mixed_chunk")
        ));
    }
    let delayer_env = launch
        .env
        .get("SGLANG_SCHEDULER_DECREASE_PREFILL_IDLE")
        .is_some_and(|v| super::launch_env::is_true(v));
    if is_on("enable_prefill_delayer") {
        out.push(format!(
            "{} is not modelled: {PREFILL_DELAYER}",
            typed("enable_prefill_delayer")
        ));
    } else if delayer_env {
        out.push(format!(
            "SGLANG_SCHEDULER_DECREASE_PREFILL_IDLE is not modelled: {PREFILL_DELAYER}"
        ));
    }
    for (dest, what) in TIMED_VALUED {
        if let Some(Value::Number(n)) = given(dest)
            && n.as_f64().is_some_and(|x| x > 0.0)
        {
            out.push(format!("{} {n} is not modelled: it {what}", typed(dest)));
        }
    }
    if let Some(n) = given("scheduler_recv_interval").and_then(Value::as_u64)
        && n > 1
    {
        out.push(format!(
            "{} {n} is not modelled: SGLang polls for new requests every {n} iterations (`SchedulerRecvSkipper`); the replay receives each at once",
            typed("scheduler_recv_interval")
        ));
    }
    if let Some(n) = given("max_queued_requests").and_then(Value::as_u64)
        && !pd
    {
        out.push(format!(
            "{} {n} is not modelled: SGLang aborts a request that arrives (or is retracted) with the waiting queue full (`scheduler.py: _abort_on_queued_limit`); the replay queues every request: under overload its TTFT and hit rates count requests SGLang would have refused",
            typed("max_queued_requests")
        ));
    }
    if is_on("enable_priority_scheduling")
        && !is_on("disable_priority_preemption")
        && given("priority_scheduling_preemption_threshold")
            .and_then(Value::as_f64)
            .is_some_and(|t| t < 0.0)
    {
        out.push(format!(
            "{} with a negative {} is not modelled: requests of equal priority preempt each other (`scheduler.py: preempt_to_schedule`); the replay preempts none",
            typed("enable_priority_scheduling"),
            typed("priority_scheduling_preemption_threshold")
        ));
    }
    for name in TIMED_ENV {
        if let Some(v) = launch.env.get(*name) {
            out.push(format!(
                "{name}={v} is not modelled: the replay's scheduler holds SGLang's default"
            ));
        }
    }
    out
}

/// [`replay_unmodelled`] for both clocks, kept for drivers that re-type a patched
/// scenario tree, which has no launch text (a sweep's points, `plan`'s probes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayUnmodelled {
    timed: Vec<String>,
    untimed: Vec<String>,
}

impl ReplayUnmodelled {
    pub fn of(launch: Option<&LaunchArgs>) -> Self {
        launch.map_or_else(Self::default, |l| ReplayUnmodelled {
            timed: replay_unmodelled(l, true),
            untimed: replay_unmodelled(l, false),
        })
    }

    /// The reasons of a replay with a clock (`timed`) or without.
    pub fn of_replay(&self, timed: bool) -> &[String] {
        if timed { &self.timed } else { &self.untimed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_policy_is_run_named_or_refused() {
        assert_eq!(policy("fcfs", false), Policy::Fcfs);
        assert_eq!(policy("lpm", false), Policy::Lpm);
        assert_eq!(policy("hrrn", false), Policy::Reorders);
        assert_eq!(policy("lpm", true), Policy::Fcfs);
        assert_eq!(policy("lof", true), Policy::Reorders);
        assert_eq!(policy("routing-key", false), Policy::Fcfs);
        assert_eq!(policy("priority", false), Policy::Refused);
        assert_eq!(policy("shortest-prefill-first", true), Policy::Refused);
        assert_eq!(policy("shortest-prefill-first", false), Policy::Reorders);
    }
}
