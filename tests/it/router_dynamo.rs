//! Dynamo's KV router (`runtime.router.policy: dynamo_kv`, dynamo-kv-router 1.6.1):
//! its costs and choices against Dynamo's own selection code
//! (tests/golden/dynamo_kv/selection.jsonl, written by tests/dynamo_diff/run.sh),
//! hand-computed two-engine cases, the bundled four-engine scenario, refusals.

use serde_json::{Map, Value, json};

use hicache_sim::runtime::router::dynamo_kv::{
    DynamoKv, DynamoKvSpec, TierOverlap, WorkerLoad, softmax_sample_index, worker_cost,
};
use hicache_sim::runtime::router::{RouterPolicy, RouterSpec};
use hicache_sim::runtime::{ReplayConfig, ReplayMetrics, apply_overrides};
use hicache_sim::scenario::RuntimeSection;

use crate::support::{exit2, ok, repo, run};

/// Every generated case of the golden file: at temperature 0 the engines of least cost
/// under the simulator's cost are exactly the workers Dynamo's selector picks over 64
/// seeds (its ties are drawn, so the set is its least-cost set); above 0, the
/// simulator's softmax on its costs with the sample Dynamo's seeded RNG drew picks
/// Dynamo's worker.
#[test]
fn costs_and_choices_are_dynamos() {
    let golden = std::fs::read_to_string(repo("tests/golden/dynamo_kv/selection.jsonl")).unwrap();
    let (mut argmin, mut ties, mut softmax) = (0, 0, 0);
    for line in golden.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let f = |k: &str| v[k].as_f64().unwrap();
        let costs: Vec<f64> = v["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                let w: Vec<u64> = w
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect();
                worker_cost(
                    f("overlap_score_credit"),
                    f("prefill_load_scale"),
                    f("host_cache_hit_weight"),
                    f("disk_cache_hit_weight"),
                    v["block_size"].as_u64().unwrap() as u32,
                    v["isl"].as_u64().unwrap(),
                    TierOverlap {
                        device: w[0],
                        host: w[1],
                        disk: w[2],
                    },
                    WorkerLoad {
                        active_prefill_tokens: w[3],
                        active_decode_blocks: w[4],
                        additional_active_blocks: w[5],
                    },
                )
            })
            .collect();
        let case = &v["case"];
        if let Some(want) = v.get("dynamo_least_cost") {
            let min = costs.iter().copied().fold(f64::INFINITY, f64::min);
            let least: Vec<u64> = (0..costs.len() as u64)
                .filter(|&w| costs[w as usize] == min)
                .collect();
            assert_eq!(json!(least), *want, "case {case}: costs {costs:?}");
            argmin += 1;
            ties += usize::from(least.len() > 1);
        } else {
            let got = softmax_sample_index(&costs, f("router_temperature"), f("sample"));
            assert_eq!(
                got as u64,
                v["dynamo_choice"].as_u64().unwrap(),
                "case {case}: costs {costs:?}"
            );
            softmax += 1;
        }
    }
    assert_eq!((argmin, ties, softmax), (300, 53, 100));
}

/// The router's own bookkeeping by hand: host blocks weigh 0.75 of a device block, and
/// the blocks of requests in flight are load.
#[test]
fn host_blocks_and_load_by_hand() {
    let rng = |s| hicache_sim::engine::stream(s, 1);
    // 4 blocks of 16 tokens, nothing in flight. Engine 0 holds 4 on the host, engine 1
    // 3 on the device: credits 4 x 0.75 = 3 and 3; prefill 64 / 16 - 3 = 1, decode 4
    // (the request's own blocks): 5 and 5, a tie drawn.
    let blocks = [11, 12, 13, 14];
    let two = |h0: u64, d1: u64| {
        [
            TierOverlap {
                host: h0,
                ..TierOverlap::default()
            },
            TierOverlap {
                device: d1,
                ..TierOverlap::default()
            },
        ]
    };
    let mut r = DynamoKv::new(&DynamoKvSpec::default(), 2, 16, 1, rng(0));
    r.select(&blocks, 64, &two(4, 3));
    assert_eq!((r.costs.as_slice(), r.tie_draws), (&[5.0, 5.0][..], 1));
    // 5 host blocks (3.75) beat 3 on the device: 64 / 16 - 3.75 + 4 = 4.25
    let mut r = DynamoKv::new(&DynamoKvSpec::default(), 2, 16, 1, rng(0));
    assert_eq!(r.select(&blocks, 64, &two(5, 3)), 0);
    assert_eq!(r.costs, [4.25, 5.0]);
    // Two in flight: the first request's 4 blocks stay active on its engine; a second
    // request of other blocks with no overlap anywhere: engine e has 4 active decode
    // blocks + 2 of its own, the other 0 + 2: it goes to the other engine.
    let mut r = DynamoKv::new(&DynamoKvSpec::default(), 2, 16, 2, rng(0));
    let e = r.select(&blocks, 64, &two(0, 0));
    let f = r.select(&[21, 22], 32, &two(0, 0));
    assert_eq!(f, 1 - e);
    assert_eq!(r.costs[usize::from(e)], 2.0 + 4.0 + 2.0);
    assert_eq!(r.costs[usize::from(f)], 2.0 + 2.0);
    // The third completes the first (in_flight 2): its engine has no active block.
    let g = r.select(&[31], 16, &two(0, 0));
    assert_eq!(g, e);
    assert_eq!(r.costs[usize::from(e)], 1.0 + 1.0);
}

/// Five requests of 512-token pages (one per trace block), two engines of 100 device
/// pages: r0 [1, 2], r1 [3, 4], r2 [1, 2], r3 [1, 2, 5], r4 [3, 4].
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
    let o: Map<String, Value> = json!({"page_size": 512, "l1_pages": 100})
        .as_object()
        .unwrap()
        .clone();
    apply_overrides(ReplayConfig::default(), &o).unwrap()
}

fn replay(section: &RuntimeSection, spec: RouterSpec) -> ReplayMetrics {
    let mut s = section.clone();
    s.router = Some(spec);
    hicache_sim::pipeline::run_replay(&s, &config()).unwrap()
}

fn per_engine(m: &ReplayMetrics) -> Vec<(u64, u64)> {
    m.engines
        .iter()
        .map(|e| (e.requests, e.device_hit_tokens))
        .collect()
}

fn dynamo(in_flight: u32, seed: u64) -> RouterSpec {
    RouterSpec {
        engines: 2,
        policy: RouterPolicy::DynamoKv,
        in_flight,
        seed,
        ..RouterSpec::default()
    }
}

#[test]
fn two_engines_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let s = five_requests(d.path());
    // Defaults (credit 1, scale 1), 16 in flight (nothing completes); costs in blocks,
    // prefill = prompt blocks - device overlap, decode = active blocks + the request's
    // blocks not active there:
    // r0 [1, 2]: 2 + 2 on both: a tie, drawn: engine A
    // r1 [3, 4]: A 2 + (2 + 2) = 6, B 2 + 2 = 4: B
    // r2 [1, 2]: A (2 - 2) + (2 + 0) = 2 (hit 1,024), B 2 + (2 + 2) = 6: A
    // r3 [1, 2, 5]: A (3 - 2) + (2 + 1) = 4 (hit 1,024), B 3 + (2 + 3) = 8: A
    // r4 [3, 4]: A 2 + (3 + 2) = 7, B (2 - 2) + (2 + 0) = 2 (hit 1,024): B
    // A: 3 requests, 2,048; B: 2 requests, 1,024: 3,072 of 5,632, one tie drawn.
    let m = replay(&s, dynamo(16, 0));
    let r = m.router.as_ref().unwrap();
    assert_eq!(r.router, "dynamo-kv-router 1.6.1");
    assert_eq!((r.tie_draws, r.overlap_routed), (1, 3));
    assert_eq!(m.device_hit_tokens, 3072);
    let a = per_engine(&m);
    // The draw of r0 is the scenario's seed's: seed 0 draws engine 1, seed 2 engine 0.
    assert_eq!(a, [(2, 1024), (3, 2048)]);
    let m = replay(&s, dynamo(16, 2));
    assert_eq!(per_engine(&m), [(3, 2048), (2, 1024)]);

    // One in flight (a sequential client): no block is ever active, so decode is the
    // request's own blocks on both engines and only overlap tells them apart.
    // r0: tie -> A; r1 [3, 4]: 2 + 2 on both: tie -> X; r2 -> A (hit 1,024); r3 -> A
    // (hit 1,024); r4 -> X (hit 1,024): 3,072 whatever the draws, two ties drawn.
    for seed in [0, 1, 2, 3] {
        let m = replay(&s, dynamo(1, seed));
        let r = m.router.as_ref().unwrap();
        assert_eq!((r.tie_draws, r.overlap_routed), (2, 3), "seed {seed}");
        assert_eq!(m.device_hit_tokens, 3072, "seed {seed}");
    }
}

/// `scenarios/router-4-engines.yaml` (four GB300 engines of GLM-5.2, the synthetic trace
/// of 3,993 requests, 16 in flight, seed 2) under Dynamo's router with its defaults.
#[test]
fn the_bundled_scenario_under_dynamo() {
    let json = |sets: &[&str]| -> Value {
        let mut args = vec![
            "replay",
            "scenarios/router-4-engines.yaml",
            "--format",
            "json",
            "--set",
            "runtime.router.policy=dynamo_kv",
        ];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = run(&args, &repo(""));
        ok(&o);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["metrics"].clone()
    };
    let m = json(&[]);
    assert_eq!(
        (
            &m["device_hit_tokens"],
            &m["host_hit_tokens"],
            &m["total_hit_tokens"]
        ),
        (&json!(28_661_248), &json!(535_040), &json!(29_196_288))
    );
    let r = &m["router"];
    assert_eq!(r["router"], "dynamo-kv-router 1.6.1");
    assert_eq!(r["assigned"], json!([954, 986, 1061, 992]));
    assert_eq!(
        (&r["tie_draws"], &r["overlap_routed"]),
        (&json!(12), &json!(1153))
    );
    let engines: Vec<(u64, u64, u64)> = m["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["input_tokens"].as_u64().unwrap(),
                e["device_hit_tokens"].as_u64().unwrap(),
                e["host_hit_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        engines,
        [
            (16_175_204, 7_941_760, 139_264),
            (15_269_679, 6_824_064, 131_072),
            (14_490_352, 6_590_016, 56_320),
            (15_259_393, 7_305_408, 208_384),
        ]
    );
    // A sequential client: no load, the largest weighted overlap wins: 62.21 %.
    let m = json(&["runtime.router.in_flight=1"]);
    assert_eq!(m["total_hit_tokens"], json!(38_070_144));
    assert_eq!(m["router"]["assigned"], json!([933, 1017, 1054, 989]));
}

/// Bad Dynamo keys are exit 2 naming the field; what is not modelled says so.
#[test]
fn bad_dynamo_keys() {
    let with = |set: &str| {
        run(
            &[
                "replay",
                "scenarios/router-4-engines.yaml",
                "--set",
                "runtime.router.policy=dynamo_kv",
                "--set",
                set,
            ],
            &repo(""),
        )
    };
    exit2(
        &with("runtime.router.dynamo_kv.router_temperature=-1"),
        &["runtime.router.dynamo_kv.router_temperature", "0 or more"],
    );
    exit2(
        &with("runtime.router.dynamo_kv.overlap_score_credit=-0.5"),
        &["runtime.router.dynamo_kv.overlap_score_credit"],
    );
    exit2(
        &with("runtime.router.dynamo_kv.use_kv_events=false"),
        &["runtime.router.dynamo_kv.use_kv_events", "not modelled"],
    );
    exit2(
        &with("runtime.router.dynamo_kv.version=1.5.0"),
        &["runtime.router.dynamo_kv.version", "1.6.1"],
    );
    exit2(
        &with("runtime.router.dynamo_kv.overlap_weight=1"),
        &["runtime.router.dynamo_kv.overlap_weight", "unknown key"],
    );
    exit2(
        &with("runtime.router.dp_aware=true"),
        &["runtime.router.dp_aware", "not modelled"],
    );
}

/// What an engine's KV events tell the router of a prompt (`HiRadixTree::peek_tiers`):
/// the device prefix, then the host-only pages after it, the same split as SGLang's
/// `match_prefix`, read without splitting or touching the tree.
#[test]
fn the_kv_events_view_of_an_engines_tree() {
    use hicache_sim::cache::{HiRadixTree, TreeConfig, V1, WritePolicy};
    let mut t = HiRadixTree::<V1>::new(TreeConfig {
        l1_pages: 100,
        l2_pages: 100,
        page_size: 1,
        write_policy: WritePolicy::WriteBack,
        debug_checks: true,
        ..TreeConfig::default()
    });
    let serve = |t: &mut HiRadixTree, pages: &[u64]| {
        let m = t.match_prefix(pages);
        t.inc_lock_ref(m.last_node);
        let need = pages.len() as u64 - m.device_pages;
        assert!(t.alloc_device(need));
        t.insert(pages, need);
        t.dec_lock_ref(m.last_node);
    };
    serve(&mut t, &[1, 2, 3]);
    serve(&mut t, &[1, 2, 3, 4, 5]);
    // write_back backs the leaf [4, 5] up as it leaves the device: host only.
    assert_eq!(t.evict(2), 2);
    assert_eq!(t.host_only_pages(), 2);
    let nodes = t.node_count();
    for (q, want) in [
        (&[1, 2, 3, 4, 5, 9][..], (3, 2)),
        (&[1, 2, 3, 4][..], (3, 1)),
        (&[1, 2][..], (2, 0)),
        (&[7, 1][..], (0, 0)),
    ] {
        assert_eq!(t.peek_tiers(q), want, "{q:?}");
        let m = t.clone().match_prefix(q);
        assert_eq!((m.device_pages, m.host_pages), want, "{q:?}");
    }
    // No split ([1, 2] of [1, 2, 3] and [4] of [4, 5] matched in part), no new node.
    assert_eq!(t.node_count(), nodes);
}

/// Two engines of two DP ranks behind Dynamo (untimed): its four workers are the ranks,
/// engine-major, each with its own tree and load; the five requests go as to four
/// one-rank engines. Whatever the seed: 3,072 tokens hit, two ties drawn, three requests
/// to a worker holding part of their prefix; each worker's `assigned` is its rank's
/// requests, and the rank that took three holds 2,048 of the hits.
#[test]
fn dp_ranks_behind_dynamo_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let s = five_requests(d.path());
    let mut cfg = config();
    cfg.capacities.dp_ranks = 2;
    for seed in [0, 1, 2, 3, 4, 5, 6, 7] {
        let mut sec = s.clone();
        sec.router = Some(dynamo(16, seed));
        let m = hicache_sim::pipeline::run_replay(&sec, &cfg).unwrap();
        let r = m.router.as_ref().unwrap();
        assert_eq!((r.tie_draws, r.overlap_routed), (2, 3), "seed {seed}");
        assert_eq!(m.device_hit_tokens, 3072, "seed {seed}");
        assert_eq!(r.assigned.len(), 4);
        for (w, &k) in r.assigned.iter().enumerate() {
            let rank = &m.engines[w / 2].ranks[w % 2];
            assert_eq!(rank.requests, k, "seed {seed} worker {w}");
            if k == 3 {
                assert_eq!(rank.device_hit_tokens, 2048, "seed {seed}");
            }
        }
    }
}
