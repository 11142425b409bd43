//! Engines behind SGLang's router (`runtime::router`, sglang-router 0.3.2): the
//! simulator's assignment against the real router's (tests/golden/router/, written by
//! tools/router/router_golden.py), hand-computed two-engine cases, refusals.

use serde_json::{Map, Value, json};

use hicache_sim::runtime::router::{RouterPolicy, RouterSpec};
use hicache_sim::runtime::{ReplayConfig, ReplayMetrics, apply_overrides};
use hicache_sim::scenario::RuntimeSection;

use crate::support::{exit2, ok, repo, run, stdout};

/// Each golden's requests, replayed by the simulator with the same router keys
/// (`replay --router-events`), go to the engines the real router chose, request by
/// request (engines are positions in the router's worker order, recovered by the
/// golden's probes), and the per-engine counts are the router's.
#[test]
fn the_assignment_is_the_real_routers() {
    // per-engine counts of the first 400 requests, as the router's golden says
    for (variant, counts) in [
        ("cache_aware", [101, 101, 101, 97]),
        ("round_robin", [100, 100, 100, 100]),
        ("cache_aware_tight", [100, 101, 99, 100]),
        // Two engines of two DP ranks behind --dp-aware: four router workers.
        ("cache_aware_dp_aware", [101, 101, 101, 97]),
    ] {
        let golden =
            std::fs::read_to_string(repo(&format!("tests/golden/router/{variant}.jsonl"))).unwrap();
        let mut lines = golden.lines();
        let meta: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        let meta = &meta["meta"];
        assert_eq!(meta["router"], "sglang-router 0.3.2");
        let want: Vec<(String, u64)> = lines
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["rid"].as_str().unwrap().to_string(),
                    v["engine"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(want.len() as u64, meta["requests"].as_u64().unwrap());
        let d = tempfile::tempdir().unwrap();
        let events = d.path().join("events.jsonl");
        let mut args: Vec<String> = [
            "replay",
            "scenarios/router-4-engines.yaml",
            "--set",
            &format!("runtime.max_requests={}", want.len()),
            "--set",
            &format!("runtime.router.policy={}", meta["policy"].as_str().unwrap()),
        ]
        .map(String::from)
        .to_vec();
        for (k, v) in meta["set"].as_object().unwrap() {
            args.push("--set".into());
            args.push(format!("{k}={}", v.as_str().unwrap()));
        }
        if let Some(dp) = meta.get("dp_ranks").and_then(Value::as_u64) {
            args.push("--set".into());
            args.push(format!("runtime.replay.dp_ranks={dp}"));
            assert_eq!(meta["router_workers"], 4, "{variant}");
        }
        args.push("--router-events".into());
        args.push(events.display().to_string());
        let o = run(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &repo(""),
        );
        ok(&o);
        let got: Vec<(String, u64)> = std::fs::read_to_string(&events)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["op"] == "send")
            .map(|v| {
                (
                    v["rid"].as_str().unwrap().to_string(),
                    v["engine"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got.len(), want.len(), "{variant}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(
                g, w,
                "{variant}: the simulator and sglang-router 0.3.2 differ"
            );
        }
        let mut per_engine = [0u64; 4];
        for (_, e) in &got {
            per_engine[*e as usize] += 1;
        }
        assert_eq!(per_engine, counts, "{variant}");
    }
}

/// The event list: a `done` for request i - in_flight before each send from
/// request in_flight on, and every outstanding request's at the end.
#[test]
fn the_event_list_is_the_completion_window() {
    let d = tempfile::tempdir().unwrap();
    let events = d.path().join("e.jsonl");
    let o = run(
        &[
            "replay",
            "scenarios/router-4-engines.yaml",
            "--set",
            "runtime.max_requests=5",
            "--set",
            "runtime.router.in_flight=2",
            "--set",
            "runtime.router.policy=round_robin",
            "--router-events",
            events.to_str().unwrap(),
        ],
        &repo(""),
    );
    ok(&o);
    let ops: Vec<String> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {}",
                v["op"].as_str().unwrap(),
                v["rid"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            "send r0", "send r1", "done r0", "send r2", "done r1", "send r3", "done r2", "send r4",
            "done r3", "done r4"
        ]
    );
}

/// Five requests, 512-token pages (one per trace block), two engines with 100 device
/// pages each. The router's ids number the pages by first appearance:
///   r0 blocks [1, 2]    -> "0 1"     1,024 tokens
///   r1 blocks [3, 4]    -> "2 3"     1,024
///   r2 blocks [1, 2]    -> "0 1"     1,024
///   r3 blocks [1, 2, 5] -> "0 1 4"   1,536
///   r4 blocks [3, 4]    -> "2 3"     1,024      (5,632 prompt tokens)
fn five_requests(d: &std::path::Path) -> RuntimeSection {
    let line = |t: u32, n: u32, ids: &str| {
        format!(
            "{{\"timestamp\": {t}, \"input_length\": {n}, \"output_length\": 1, \"hash_ids\": [{ids}]}}\n"
        )
    };
    let trace = [
        line(0, 1024, "1, 2"),
        line(1, 1024, "3, 4"),
        line(2, 1024, "1, 2"),
        line(3, 1536, "1, 2, 5"),
        line(4, 1024, "3, 4"),
    ]
    .concat();
    let path = d.join("t.jsonl");
    std::fs::write(&path, trace).unwrap();
    RuntimeSection {
        trace: Some(path.display().to_string()),
        ..RuntimeSection::default()
    }
}

fn config() -> ReplayConfig {
    config_dp(1)
}

/// 512-token pages, 100 device pages a rank, `ranks` DP ranks an engine.
fn config_dp(ranks: u32) -> ReplayConfig {
    let o: Map<String, Value> = json!({"page_size": 512, "l1_pages": 100, "dp_ranks": ranks})
        .as_object()
        .unwrap()
        .clone();
    apply_overrides(ReplayConfig::default(), &o).unwrap()
}

fn replay(section: &RuntimeSection, spec: RouterSpec) -> ReplayMetrics {
    replay_dp(section, spec, 1)
}

fn per_engine(m: &ReplayMetrics) -> Vec<(u64, u64)> {
    m.engines
        .iter()
        .map(|e| (e.requests, e.device_hit_tokens))
        .collect()
}

#[test]
fn two_engines_round_robin_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let s = five_requests(d.path());
    // r0, r2, r4 -> engine 0: miss, hit 1,024 ("0 1" again), miss ("2 3" is new there);
    // r1, r3 -> engine 1: miss, miss ("0 1 4" is new there): 1,024 of 5,632.
    let m = replay(
        &s,
        RouterSpec {
            engines: 2,
            policy: RouterPolicy::RoundRobin,
            ..RouterSpec::default()
        },
    );
    assert_eq!(per_engine(&m), [(3, 1024), (2, 0)]);
    assert_eq!((m.device_hit_tokens, m.input_tokens), (1024, 5632));
    let r = m.router.as_ref().unwrap();
    assert_eq!(r.assigned, [3, 2]);
    // requests max/mean: 3 / 2.5
    assert_eq!(r.request_imbalance, 1.2);
    assert_eq!((r.cache_hits, r.cache_misses, r.imbalanced), (0, 0, 0));
}

#[test]
fn two_engines_cache_aware_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let s = five_requests(d.path());
    // Launcher defaults (0.3 / 64 / 1.5), 16 in flight: nothing completes.
    // r0 "0 1": empty tree, a miss to the least loaded of [0, 0]: engine 0 -> [1, 0]
    // r1 "2 3": no edge starts with '2', a miss to the least loaded: engine 1 -> [1, 1]
    // r2 "0 1": 3 of 3 chars (1.0 > 0.3): engine 0, hit 1,024 -> [2, 1]
    // r3 "0 1 4": 3 of 5 chars (0.6 > 0.3): engine 0, hit 1,024 of 1,536 -> [3, 1]
    // r4 "2 3": 3 of 3: engine 1, hit 1,024
    // engine 0: 2,048, engine 1: 1,024: 3,072 of 5,632 (round-robin: 1,024)
    let m = replay(
        &s,
        RouterSpec {
            engines: 2,
            ..RouterSpec::default()
        },
    );
    assert_eq!(per_engine(&m), [(3, 2048), (2, 1024)]);
    assert_eq!(m.device_hit_tokens, 3072);
    let r = m.router.as_ref().unwrap();
    assert_eq!((r.cache_hits, r.cache_misses, r.imbalanced), (3, 2, 0));

    // Balance thresholds abs 0, rel 1.0: imbalanced as soon as one engine has more.
    // r0 -> 0 [1, 0]; r1: 1 - 0 > 0 and 1 > 0: imbalanced, least loaded: engine 1
    // [1, 1]; r2: balanced, hit -> 0 [2, 1]; r3: 2 - 1 > 0 and 2 > 1: imbalanced ->
    // engine 1 (its text inserted for engine 1; "0 1" still engine 0's edge) [2, 2];
    // r4: balanced, "2 3" 3 of 3 -> engine 1.
    // engine 0: r0 miss, r2 hit 1,024; engine 1: r1 miss, r3 miss (new there), r4 hit
    // 1,024: 2,048.
    let m = replay(
        &s,
        RouterSpec {
            engines: 2,
            balance_abs_threshold: 0,
            balance_rel_threshold: 1.0,
            ..RouterSpec::default()
        },
    );
    assert_eq!(per_engine(&m), [(2, 1024), (3, 1024)]);
    let r = m.router.as_ref().unwrap();
    assert_eq!((r.cache_hits, r.cache_misses, r.imbalanced), (2, 1, 2));

    // One request in flight (each completes before the next is sent): every load is 0
    // at each decision, so a miss goes to engine 0 too and engine 1 gets nothing:
    // r2, r3 and r4 hit 1,024 each on engine 0: 3,072.
    let m = replay(
        &s,
        RouterSpec {
            engines: 2,
            in_flight: 1,
            ..RouterSpec::default()
        },
    );
    assert_eq!(per_engine(&m), [(5, 3072), (0, 0)]);
}

/// A bad key is exit 2 naming the file, line and field; policies that draw from an
/// unseeded RNG are refused; one engine writes no `engines` or `router`.
#[test]
fn bad_router_keys_and_one_engine() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo("scenarios/router-4-engines.yaml"))
        .unwrap()
        .replace("../traces/", &format!("{}/", repo("traces").display()));
    std::fs::write(
        d.path().join("s.yaml"),
        text.replace("in_flight: 16", "in_flite: 16"),
    )
    .unwrap();
    let o = run(&["replay", "s.yaml"], d.path());
    exit2(&o, &["s.yaml:", "runtime.router.in_flite", "in_flight"]);
    std::fs::write(d.path().join("ok.yaml"), &text).unwrap();
    for (set, words) in [
        (
            "runtime.router.policy=power_of_two",
            &["runtime.router.policy", "not modelled"][..],
        ),
        ("runtime.router.engines=0", &["runtime.router.engines"][..]),
        (
            "runtime.router.version=1.13.0",
            &["runtime.router.version", "smg"][..],
        ),
        (
            "runtime.router.in_flight=0",
            &["runtime.router.in_flight"][..],
        ),
    ] {
        let mut a = vec!["replay", "ok.yaml"];
        for kv in set.split(" --set ") {
            a.extend(["--set", kv]);
        }
        let o = run(&a, d.path());
        exit2(&o, words);
    }
    let o = run(
        &[
            "replay",
            "ok.yaml",
            "--set",
            "runtime.router.engines=1",
            "--set",
            "runtime.max_requests=50",
            "--format",
            "json",
        ],
        d.path(),
    );
    ok(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["metrics"].get("engines").is_none());
    assert!(v["metrics"].get("router").is_none());
}

fn replay_dp(section: &RuntimeSection, spec: RouterSpec, ranks: u32) -> ReplayMetrics {
    let mut s = section.clone();
    s.router = Some(spec);
    hicache_sim::pipeline::run_replay(&s, &config_dp(ranks)).unwrap()
}

fn per_rank(e: &ReplayMetrics) -> Vec<(u64, u64)> {
    e.ranks
        .iter()
        .map(|r| (r.requests, r.device_hit_tokens))
        .collect()
}

/// Two engines of two DP ranks each, cache_aware, launcher defaults.
///
/// Without `--dp-aware` the router routes as in `two_engines_cache_aware_by_hand` (r0,
/// r2, r3 -> engine 0; r1, r4 -> engine 1) and each engine's DataParallelController
/// round-robins its own arrivals: engine 0 rank 0 gets r0 and r3 ("0 1 4" hits r0's
/// "0 1": 1,024), rank 1 r2 (a miss: "0 1" is on the other rank); engine 1 rank 0 r1,
/// rank 1 r4 (both misses): 1,024 in all.
///
/// With `--dp-aware` the router's four workers are (engine 0 rank 0), (0, 1), (1, 0),
/// (1, 1): r0 misses to worker 0, r1 misses to the least loaded, worker 1; r2 and r3
/// match worker 0's "0 1" (1,024 each), r4 worker 1's "2 3" (1,024): 3,072, all on
/// engine 0.
#[test]
fn dp_ranks_inside_engines_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let s = five_requests(d.path());
    let spec = RouterSpec {
        engines: 2,
        ..RouterSpec::default()
    };
    let m = replay_dp(&s, spec.clone(), 2);
    assert_eq!(per_engine(&m), [(3, 1024), (2, 0)]);
    assert_eq!(per_rank(&m.engines[0]), [(2, 1024), (1, 0)]);
    assert_eq!(per_rank(&m.engines[1]), [(1, 0), (1, 0)]);
    let r = m.router.as_ref().unwrap();
    assert_eq!((r.engines, r.dp_ranks, r.dp_aware), (2, 2, false));
    assert_eq!(r.assigned, [3, 2]);

    let m = replay_dp(
        &s,
        RouterSpec {
            dp_aware: true,
            ..spec
        },
        2,
    );
    assert_eq!(per_engine(&m), [(5, 3072), (0, 0)]);
    assert_eq!(per_rank(&m.engines[0]), [(3, 2048), (2, 1024)]);
    assert_eq!(per_rank(&m.engines[1]), [(0, 0), (0, 0)]);
    let r = m.router.as_ref().unwrap();
    assert_eq!((r.engines, r.dp_ranks, r.dp_aware), (2, 2, true));
    assert_eq!(r.assigned, [3, 2, 0, 0]);
    assert_eq!((r.cache_hits, r.cache_misses, r.imbalanced), (3, 2, 0));
}

/// The DeepSeek-V3.2 DP8 twin: one engine of eight DP-attention ranks behind the router
/// with `--dp-aware` under cache_aware against the engine's own round-robin: one JSON
/// entry per rank, and the text says by how much the totals differ.
#[test]
fn dp_aware_on_the_dp8_scenario() {
    let sc = "scenarios/deepseek-v32-dp8-gb300.yaml";
    let o = run(
        &[
            "replay",
            sc,
            "--set",
            "runtime.router.dp_aware=true",
            "--format",
            "json",
        ],
        &repo(""),
    );
    ok(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["metrics"];
    let ranks = m["engines"][0]["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8);
    let sum: u64 = ranks
        .iter()
        .map(|r| r["device_hit_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, m["device_hit_tokens"].as_u64().unwrap());
    assert_eq!(m["total_hit_tokens"], 39_845_952);
    assert_eq!(
        m["router"]["assigned"],
        json!([563, 553, 523, 540, 468, 491, 464, 391])
    );
    // The engine's own round-robin over its ranks (no router): SGLang's default.
    let o = run(&["replay", sc, "--format", "json"], &repo(""));
    ok(&o);
    let rr: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rr["metrics"]["total_hit_tokens"], 12_928_192);
    assert_eq!(rr["metrics"]["ranks"].as_array().unwrap().len(), 8);
    let o = run(
        &["replay", sc, "--set", "runtime.router.dp_aware=true"],
        &repo(""),
    );
    ok(&o);
    let t = stdout(&o);
    assert!(
        t.contains("without --dp-aware (the router picks engines, each engine's DataParallelController round-robins its ranks) the same ranks would hit 21.13 % in total (12928192 hit tokens): --dp-aware cache_aware is +43.99 points against it"),
        "{t}"
    );
    // More router workers than the router's tree tells apart.
    let o = run(
        &[
            "replay",
            sc,
            "--set",
            "runtime.router.dp_aware=true",
            "--set",
            "runtime.router.engines=9",
        ],
        &repo(""),
    );
    exit2(&o, &["72 router workers", "runtime.router.engines"]);
    let d = tempfile::tempdir().unwrap();
    let ev = d.path().join("ev.jsonl");
    let o = run(
        &[
            "replay",
            sc,
            "--set",
            "runtime.router.dp_aware=true",
            "--set",
            "runtime.router.engines=9",
            "--router-events",
            ev.to_str().unwrap(),
        ],
        &repo(""),
    );
    exit2(&o, &["72 router workers"]);
}

/// The bundled scenario: four engines under cache_aware hit 38,194,048 of 61,194,628
/// prompt tokens (62.41 %), under round_robin 16,704,256 (27.30 %); one engine of the
/// same pools 20,804,800 (34.00 %).
#[test]
fn the_bundled_scenario_by_policy() {
    let total = |sets: &[&str]| -> (u64, u64, Value) {
        let mut args = vec![
            "replay",
            "scenarios/router-4-engines.yaml",
            "--format",
            "json",
        ];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = run(&args, &repo(""));
        ok(&o);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let m = &v["metrics"];
        (
            m["total_hit_tokens"].as_u64().unwrap(),
            m["input_tokens"].as_u64().unwrap(),
            m["router"].clone(),
        )
    };
    let (ca, input, r) = total(&[]);
    assert_eq!((ca, input), (38_194_048, 61_194_628));
    assert_eq!(r["assigned"], json!([1010, 1001, 997, 985]));
    assert_eq!(
        (&r["cache_hits"], &r["cache_misses"], &r["imbalanced"]),
        (&json!(1959), &json!(2034), &json!(0))
    );
    // far below the router's --max-tree-size (2^26 characters per engine)
    assert_eq!(r["tree_chars"], json!([609_323, 563_000, 517_374, 512_491]));
    let (rr, _, r) = total(&["runtime.router.policy=round_robin"]);
    assert_eq!(rr, 16_704_256);
    assert_eq!(r["assigned"], json!([999, 998, 998, 998]));
    let (one, _, r) = total(&["runtime.router.engines=1"]);
    assert_eq!(one, 20_804_800);
    assert!(r.is_null());
}

/// A section built in code is checked as a scenario's is: an error naming the key, not
/// a silent round-robin.
#[test]
fn a_section_built_in_code_is_checked_too() {
    let d = tempfile::tempdir().unwrap();
    let mut s = five_requests(d.path());
    s.router = Some(RouterSpec {
        engines: 2,
        policy: RouterPolicy::Random,
        ..RouterSpec::default()
    });
    let e = hicache_sim::pipeline::run_replay(&s, &config()).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("runtime.router.policy"));
    assert!(e.message.contains("not modelled"), "{e}");
}

/// `--engines-csv`: a row per engine in the router's worker order, then `all`.
#[test]
fn the_engines_csv() {
    let d = tempfile::tempdir().unwrap();
    let csv = d.path().join("engines.csv");
    let o = run(
        &[
            "replay",
            "scenarios/router-4-engines.yaml",
            "--engines-csv",
            csv.to_str().unwrap(),
        ],
        &repo(""),
    );
    ok(&o);
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 6);
    assert_eq!(
        rows[0][..4],
        ["engine", "requests", "measured_requests", "input_tokens"]
    );
    assert_eq!(
        rows[1..].iter().map(|r| r[1]).collect::<Vec<_>>(),
        ["1010", "1001", "997", "985", "3993"]
    );
    assert_eq!(rows[5][0], "all");
    assert_eq!(rows[5][3], "61194628");
    // 38,194,048 / 61,194,628
    assert_eq!(rows[5][11], "0.624141");
    // one engine: nothing to write, exit 2
    let o = run(
        &[
            "replay",
            "scenarios/router-4-engines.yaml",
            "--set",
            "runtime.router.engines=1",
            "--engines-csv",
            csv.to_str().unwrap(),
        ],
        &repo(""),
    );
    exit2(&o, &["--engines-csv", "runtime.router"]);
}

/// A router behaviour that is not modelled (a policy drawing from an OS-seeded RNG, smg
/// 1.x, DP ranks inside engines) is a `not_modelled` answer naming it, not bad input:
/// `check` gives a `not_modelled` row (exit 1), `replay` labels its refusal so.
#[test]
fn an_unmodelled_router_behaviour_is_not_modelled() {
    let o = run(
        &[
            "check",
            "scenarios/router-4-engines.yaml",
            "--format",
            "json",
            "--runs",
            "3",
            "--set",
            "runtime.router.policy=random",
        ],
        &repo(""),
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["status"], "not_modelled", "{rows}");
    assert!(
        rows[0]["message"]
            .as_str()
            .unwrap()
            .contains("random is not modelled"),
        "{rows}"
    );
    for set in ["runtime.router.version=1.13.0", "server.dp_size=2"] {
        let o = run(
            &["replay", "scenarios/router-4-engines.yaml", "--set", set],
            &repo(""),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("not_modelled: "), "{set}: {err}");
        assert_eq!(o.status.code(), Some(2), "{set}: {err}");
    }
    // A bad value is still bad input.
    let o = run(
        &[
            "replay",
            "scenarios/router-4-engines.yaml",
            "--set",
            "runtime.router.engines=0",
        ],
        &repo(""),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("error: "), "{err}");
}

/// Engines behind a router read and write one L3 store, as SGLang's do: a page's
/// storage key has no engine or rank in it (`runtime::l3_store`), so under a Mooncake
/// store a page one engine wrote is an L3 hit for the others. The four engines of
/// `router-4-engines` under round_robin hit 65.11 % with the store shared against
/// 37.15 % with one store each (`runtime.replay.l3_scope: rank`); the store holds
/// 331 666 pages, where four stores held 599 082 between them (the same pages written
/// by several engines). Timed, 65.10 % against 37.15 %. Under cache_aware each prefix stays on one engine: 65.11 %
/// either way. Nothing is said where the scope is the backend's (Mooncake; a file
/// backend, one node per engine); a backend whose layout was not read says what it
/// assumes, unless the scope is given.
#[test]
fn engines_share_one_l3_store_as_their_backend_does() {
    let json = |set: &[&str]| {
        let mut args = vec![
            "replay",
            "scenarios/router-4-engines.yaml",
            "--format",
            "json",
        ];
        for s in set {
            args.extend(["--set", s]);
        }
        let o = run(&args, &repo("."));
        assert!(o.status.success(), "{}", crate::support::stderr(&o));
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()
    };
    let figures = |set: &[&str]| {
        let v = json(set);
        let m = &v["metrics"];
        (
            (m["total_hit_rate"].as_f64().unwrap() * 1e4).round() / 1e4,
            m["final_storage_pages"].as_u64().unwrap(),
        )
    };
    let mc = "server.hicache_storage_backend=mooncake";
    let rr = "runtime.router.policy=round_robin";
    assert_eq!(figures(&[mc, rr]), (0.6511, 331_666));
    assert_eq!(
        figures(&[mc, rr, "runtime.replay.l3_scope=rank"]),
        (0.3715, 599_082)
    );
    // Timed (`runtime::timed::fleet`, every engine on its own clock): the same.
    let timed = "runtime.replay.timing=on";
    assert_eq!(figures(&[mc, rr, timed]), (0.651, 331_666));
    assert_eq!(
        figures(&[mc, rr, timed, "runtime.replay.l3_scope=rank"]),
        (0.3715, 599_082)
    );
    assert_eq!(figures(&[mc]), (0.6511, 331_666));
    assert_eq!(
        figures(&[mc, "runtime.replay.l3_scope=rank"]),
        (0.6511, 331_666)
    );

    let says = |set: &[&str], words: &str| {
        json(set)["unverified"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u.as_str().unwrap().contains(words))
    };
    let assumed = "storage backend's store is taken to be";
    for set in [&[mc][..], &["server.hicache_storage_backend=file"], &[]] {
        assert!(!says(set, assumed), "{set:?}");
    }
    let nixl = "server.hicache_storage_backend=nixl";
    assert!(says(&[nixl], assumed));
    assert!(!says(&[nixl, "runtime.replay.l3_scope=node"], assumed));
    assert!(!says(&[nixl, "runtime.router.engines=1"], assumed));
    // 3FS shares only with its metadata server: said. The `sim` backend is one store
    // per process (rank), as its code keeps it: not said.
    assert!(says(&["server.hicache_storage_backend=hf3fs"], assumed));
    assert!(!says(&["server.hicache_storage_backend=sim"], assumed));
    // The shared-memory backend finds nothing: no L3.
    let shm = json(&["server.hicache_storage_backend=shm"]);
    assert_eq!(shm["metrics"]["storage_hit_tokens"], 0);
    assert!(!says(&["server.hicache_storage_backend=shm"], assumed));
}
