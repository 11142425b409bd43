//! A launch command's scheduling flags in the replay (`scenario::launch_schedule`): the
//! ones the replay models fill its configuration (`--schedule-conservativeness`), the
//! ones it does not make every answer `unverified`, naming the flag — never a plain
//! `ok` on a run SGLang would schedule otherwise.

use crate::support::{csv_row, ok, repo, run};

/// A GB300 GLM-5.2 TP4 scenario with HiCache whose launch command ends in `extra`,
/// replaying the bundled Mooncake trace's first 200 requests, timed or not.
fn scenario(dir: &std::path::Path, extra: &str, timing: &str) -> std::path::PathBuf {
    scenario_of(
        dir,
        &format!("--enable-hierarchical-cache --hicache-ratio 1 {extra}"),
        timing,
    )
}

/// [`scenario`] without HiCache: the launch ends in `extra` alone.
fn scenario_of(dir: &std::path::Path, extra: &str, timing: &str) -> std::path::PathBuf {
    let text = format!(
        "name: launch-schedule
sglang: 0.5.23
node: gb300
model: glm-5.2
server:
  launch: python -m sglang.launch_server --model-path zai-org/GLM-5.2 --tp 4 --page-size 64 --kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.85 {extra}
memory:
  host_other_used: 10GB
startup:
  gpu_reserved: 1GiB
runtime:
  trace: {}
  max_requests: 200
  replay: {{timing: {timing}}}
",
        repo("traces/synthetic_trace.jsonl").display()
    );
    let p = dir.join("s.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

/// The replay's JSON for the scenario.
fn replay_json(extra: &str, timing: &str) -> serde_json::Value {
    let d = tempfile::tempdir().unwrap();
    let p = scenario(d.path(), extra, timing);
    let o = run(
        &["replay", p.to_str().unwrap(), "--format", "json"],
        d.path(),
    );
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The reasons for `unverified` that name a launch flag's scheduling.
fn named(v: &serde_json::Value) -> Vec<String> {
    v["unverified"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r.as_str())
                .filter(|r| r.contains("is not modelled: ") && r.starts_with("--"))
                .map(|r| r.split(" is not modelled").next().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A `--schedule-policy` the timed replay does not run (`hrrn`) reorders its waiting
/// queue: a timed answer is `unverified` and names it. A replay without a clock admits
/// each request alone, so no policy is named there. `lpm` is run (`server.
/// schedule_policy` reaches the replay's configuration), with its in-batch check at the
/// page's granularity said; SGLang's default `fcfs` given explicitly is not named.
#[test]
fn a_reordering_schedule_policy_is_named() {
    let v = replay_json("--schedule-policy hrrn", "on");
    assert_eq!(v["status"], "unverified");
    assert_eq!(named(&v), ["--schedule-policy hrrn"]);
    let reason = v["unverified"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r.as_str().filter(|r| r.starts_with("--schedule-policy")))
        .unwrap()
        .to_string();
    assert!(reason.contains("SchedulePolicy.calc_priority"), "{reason}");
    assert!(named(&replay_json("--schedule-policy hrrn", "off")).is_empty());
    assert!(named(&replay_json("--schedule-policy fcfs", "on")).is_empty());
    let v = replay_json("--schedule-policy lpm", "on");
    assert_eq!(v["config"]["schedule_policy"], "lpm");
    assert!(named(&v).is_empty());
    assert!(
        v["unverified"].as_array().unwrap().iter().any(|r| r
            .as_str()
            .unwrap()
            .starts_with("--schedule-policy lpm: its in-batch prefix check")),
        "{v}"
    );
}

/// Scheduling flags SGLang refuses at start are refused, with SGLang's own words and
/// the flag's line, never replayed: `--schedule-policy priority` (argparse takes it, the
/// scheduler raises), a policy other than fcfs or lof with priority scheduling (the
/// server-argument assert), and from 0.5.21 shortest-prefill-first without the radix
/// cache. `check` makes each an `invalid_args` row (exit 1).
#[test]
fn a_scheduling_flag_sglang_refuses_refuses_the_launch() {
    let cases = [
        (
            "--schedule-policy priority",
            "off",
            "ValueError: Unknown schedule_policy: policy='priority'",
        ),
        (
            "--schedule-policy lpm --enable-priority-scheduling",
            "on",
            "AssertionError: To use priority scheduling, schedule_policy must be 'fcfs' or 'lof'. 'lpm' is not supported.",
        ),
        (
            "--schedule-policy shortest-prefill-first --disable-radix-cache",
            "on",
            "ValueError: Unknown schedule_policy: policy='shortest-prefill-first'",
        ),
    ];
    for (extra, timing, said) in cases {
        let d = tempfile::tempdir().unwrap();
        // Without HiCache: it refuses the radix cache off before the scheduler starts.
        let p = scenario_of(d.path(), extra, timing);
        let o = run(&["replay", p.to_str().unwrap()], d.path());
        assert_eq!(o.status.code(), Some(2), "{extra}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(said), "{extra}: {e}");
        assert!(e.contains("s.yaml:6: field `server."), "{extra}: {e}");
        let o = run(
            &["check", p.to_str().unwrap(), "--format", "json"],
            d.path(),
        );
        assert_eq!(o.status.code(), Some(1), "{extra}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v[0]["status"], "invalid_args", "{extra}");
        assert!(v[0]["message"].as_str().unwrap().contains(said), "{extra}");
    }
    // SGLang's server-argument checks come before: a chunk that is no whole number of
    // pages is what it says, not the priority assert.
    let check = |extra: &str| {
        let d = tempfile::tempdir().unwrap();
        let p = scenario(d.path(), extra, "off");
        let o = run(
            &["check", p.to_str().unwrap(), "--format", "json"],
            d.path(),
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v[0].clone()
    };
    let v = check("--enable-priority-scheduling --schedule-policy lpm --chunked-prefill-size 1000");
    assert_eq!(v["status"], "invalid_args");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("chunked_prefill_size must be divisible by page_size"),
        "{v}"
    );
    // A decode server's radix cache is its own flag's, whatever --disable-radix-cache
    // says: shortest-prefill-first starts there.
    let v = check(
        "--disaggregation-mode decode --disaggregation-decode-enable-radix-cache --disable-radix-cache --schedule-policy shortest-prefill-first",
    );
    assert_ne!(v["status"], "invalid_args", "{v}");
    // With priority scheduling, fcfs and lof start; so does shortest-prefill-first on
    // the radix cache.
    for extra in [
        "--schedule-policy fcfs --enable-priority-scheduling",
        "--schedule-policy shortest-prefill-first",
    ] {
        let v = replay_json(extra, "off");
        assert_ne!(v["status"], "refused", "{extra}");
    }
}

/// Flags that change the clock are named on a timed replay only (hit rates without a
/// clock do not depend on them); `--max-queued-requests` with its value.
#[test]
fn clock_flags_are_named_on_a_timed_replay() {
    let flags = "--enable-mixed-chunk --disable-overlap-schedule --max-queued-requests 64 --prefill-max-requests 8";
    assert_eq!(
        named(&replay_json(flags, "on")),
        [
            "--disable-overlap-schedule",
            "--enable-mixed-chunk",
            "--prefill-max-requests 8",
            "--max-queued-requests 64"
        ]
    );
    assert!(named(&replay_json(flags, "off")).is_empty());
    // Deterministic inference may turn the radix cache off: named without a clock too.
    for timing in ["on", "off"] {
        assert_eq!(
            named(&replay_json("--enable-deterministic-inference", timing)),
            ["--enable-deterministic-inference"],
            "{timing}"
        );
    }
    // Flags that change nothing here are not named: one with no reader in the release,
    // mixed chunks without chunked prefill, a routing-key sort over requests without
    // keys, priority scheduling over requests without priorities.
    for quiet in [
        "--num-continuous-decode-steps 4",
        "--enable-mixed-chunk --chunked-prefill-size -1",
        "--schedule-policy routing-key",
        "--enable-priority-scheduling",
    ] {
        assert!(named(&replay_json(quiet, "on")).is_empty(), "{quiet}");
    }
}

/// `--schedule-conservativeness` is modelled: it reaches the replay's configuration (the
/// admission's decode reserve), as `runtime.replay.schedule_conservativeness` would,
/// and names nothing.
#[test]
fn the_schedule_conservativeness_flag_reaches_the_replay() {
    let v = replay_json("--schedule-conservativeness 0.3", "on");
    assert_eq!(v["config"]["schedule_conservativeness"], 0.3);
    assert!(named(&v).is_empty());
    let v = replay_json("", "on");
    assert!(v["config"].get("schedule_conservativeness").is_none());
}

/// `plan`'s hit-rate ladder replays the trace without a clock, each request alone: a
/// schedule policy reorders nothing there and is not named on its hit rates.
#[test]
fn plan_does_not_name_the_schedule_policy_on_its_hit_rates() {
    let d = tempfile::tempdir().unwrap();
    let p = scenario(d.path(), "--schedule-policy hrrn", "off");
    let o = run(&["plan", p.to_str().unwrap()], d.path());
    ok(&o);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(!t.contains("--schedule-policy"), "{t}");
    assert!(t.contains("hit rate"), "{t}");
}

/// A sweep's points re-type the scenario without its launch text: every row still
/// names the launch's scheduling flags in its `unverified` cell.
#[test]
fn every_sweep_row_names_the_launchs_scheduling_flags() {
    let d = tempfile::tempdir().unwrap();
    let p = scenario(
        d.path(),
        "--schedule-policy hrrn --enable-mixed-chunk",
        "on",
    );
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str(
        "sweep:\n  axes:\n    server.hicache_write_policy: [write_through, write_back]\n",
    );
    std::fs::write(&p, text).unwrap();
    let o = run(
        &["sweep", p.to_str().unwrap(), "--out", "out", "--quiet"],
        d.path(),
    );
    ok(&o);
    let csv = std::fs::read_to_string(d.path().join("out/results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "a header and two rows");
    for row in 0..2 {
        let cells = csv_row(&csv, row);
        let cell = |name: &str| cells.iter().find(|(c, _)| c == name).unwrap().1.clone();
        assert_eq!(cell("status"), "unverified");
        let u = cell("unverified");
        assert!(u.contains("--schedule-policy hrrn is not modelled"), "{u}");
        assert!(u.contains("--enable-mixed-chunk is not modelled"), "{u}");
    }
}
