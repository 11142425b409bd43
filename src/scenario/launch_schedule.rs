//! Launch flags that change how SGLang's scheduler orders and runs requests and that the
//! replay does not model. A command that gives one with a value that changes the run
//! makes every replay answer of its scenario `unverified`, naming the flag and which
//! way the figures may be off (flags that move memory are `launch`'s
//! `MEMORY_UNMODELLED`; scheduling flags the replay models fill `server:` fields:
//! `--max-running-requests`, `--chunked-prefill-size`, `--max-prefill-tokens`,
//! `--schedule-conservativeness`, `--load-balance-method`, the HiCache flags).
//!
//! Flags a modelled release accepts but that change nothing here are not named:
//! `--num-continuous-decode-steps` has no reader in 0.5.14–0.5.23 (only its field), and
//! `--enable-priority-scheduling` over a trace without priorities gives every request
//! the same default (`scheduler.py: _set_or_validate_priority`), so its sort is FCFS
//! and it preempts nothing.

use serde_json::Value;

use super::launch::LaunchArgs;

/// Flags whose `true` changes the timed replay's clock, with what is left out.
const TIMED_UNMODELLED: &[(&str, &str)] = &[
    (
        "enable_mixed_chunk",
        "SGLang runs the running requests' decode rows in the prefill chunk's forward (`scheduler.py: get_new_batch_prefill` → `ScheduleBatch.mix_with_running`, 0.5.14–0.5.23); the replay runs a chunk and a decode step apart: TTFT and TPOT under load may be off",
    ),
    (
        "disable_overlap_schedule",
        "without the overlap scheduler (`scheduler.py: event_loop_normal`) each iteration's CPU work (batch formation, result processing: ~0.3 ms a decode step on a CPU-mocked server, tenstorrent/tt-inference-server#3560) adds to every forward, where the replay's clock takes it as hidden behind the GPU: TTFT and TPOT may be low",
    ),
    (
        "enable_two_batch_overlap",
        "two-batch overlap splits each forward into two micro-batches whose communication overlaps the other's compute; the replay's forwards cost one batch's profile: forward times may be off",
    ),
    (
        "enable_single_batch_overlap",
        "single-batch overlap runs a forward's MoE communication beside its compute; the replay's forwards cost the profile without it: forward times may be off",
    ),
    (
        "enable_prefill_delayer",
        "the prefill delayer (`managers/prefill_delayer.py`) holds a DP-attention rank's prefill back until the other ranks have prefills too; the replay prefills as soon as a rank can: TTFT may be low",
    ),
];

/// `--schedule-policy` values that reorder admissions (every one but SGLang's default
/// `fcfs`), and whether the policy reads the tree (with the radix cache off SGLang
/// runs those as FCFS: `schedule_policy.py: _validate_and_adjust_policy`).
fn reorders(policy: &str, radix_cache_off: bool) -> bool {
    let cache_aware = matches!(
        policy,
        "lpm" | "dfs-weight" | "hrrn" | "shortest-prefill-first"
    );
    policy != "fcfs" && !(cache_aware && radix_cache_off)
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
    let mut out = Vec::new();
    if let Some(p) = given("schedule_policy").and_then(Value::as_str)
        && reorders(p, is_on("disable_radix_cache"))
    {
        out.push(format!(
            "{} {p} is not modelled: the replay admits the waiting queue first come, first served (SGLang's default fcfs); {p} reorders it before every admission scan (`managers/schedule_policy.py: SchedulePolicy.calc_priority`, 0.5.14-0.5.23; lpm and hrrn fall back to fcfs above 128 waiting requests): hit rates and TTFT under load may differ",
            typed("schedule_policy")
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
    if !is_on("enable_prefill_delayer")
        && launch
            .env
            .get("SGLANG_SCHEDULER_DECREASE_PREFILL_IDLE")
            .is_some_and(|v| super::launch_env::is_true(v))
    {
        out.push(format!(
            "SGLANG_SCHEDULER_DECREASE_PREFILL_IDLE (the prefill delayer, `serving_hook.py`) is not modelled: {}",
            TIMED_UNMODELLED
                .iter()
                .find(|(d, _)| *d == "enable_prefill_delayer")
                .map_or("", |(_, w)| w)
        ));
    }
    if let Some(n) = given("max_queued_requests").and_then(Value::as_u64) {
        out.push(format!(
            "{} {n} is not modelled: SGLang aborts a request that arrives with the waiting queue full (`scheduler.py: _abort_on_queued_limit`); the replay queues every request: under overload its TTFT counts requests SGLang would have refused",
            typed("max_queued_requests")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_reordering_policy_is_named() {
        assert!(!reorders("fcfs", false));
        assert!(reorders("lpm", false));
        assert!(!reorders("lpm", true));
        assert!(reorders("lof", true));
        assert!(reorders("random", false));
    }
}
