//! HiCache's per-step synchronisation (`compute.hicache_step_sync`,
//! `release::step_sync`): hand-computed charges on a lone request, none without a host
//! tier or at 0, and the default a scenario derives from its release and layout.

use hicache_sim::cache::WritePolicy;
use hicache_sim::release::step_sync::default_step_sync;
use hicache_sim::runtime::{
    Capacities, Measurement, ReplayConfig, ReplayMetrics, Scheduler, Speeds, Timing, TreePolicy,
    replay,
};
use hicache_sim::units::Duration;
use hicache_sim::wheel::Release;
use hicache_sim::workload::Request;

/// One request of `pages` pages of 64 tokens, `out` output tokens, at 0.
fn lone(pages: u64, out: u32) -> Vec<Request> {
    vec![Request {
        id: 0,
        arrival_ns: 0,
        input_tokens: pages as u32 * 64,
        output_tokens: out,
        page_hashes: (1..=pages).collect(),
    }]
}

/// Fixed speeds (prefill 10 000 tok/s, decode 100 tok/s), L1 64 / L2 `l2` pages of 64,
/// the step sync at `sync_ns`.
fn cfg(l2: u64, sync_ns: u64) -> ReplayConfig {
    let mut c = ReplayConfig {
        capacities: Capacities {
            page_size: 64,
            l1_pages: 64,
            l2_pages: l2,
            bytes_per_token: 1024,
            num_layers: 1,
            ..Default::default()
        },
        policy: TreePolicy {
            write_policy: WritePolicy::WriteThrough,
            ..Default::default()
        },
        scheduler: Scheduler {
            prefill_tokens_per_s: 10_000.0,
            decode_tokens_per_s: 100.0,
            ..Default::default()
        },
        measurement: Measurement {
            timing: Timing::On,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    c.scheduler.compute.hicache_step_sync = Duration(sync_ns);
    c
}

fn run(c: &ReplayConfig, reqs: Vec<Request>) -> ReplayMetrics {
    replay(c, reqs).unwrap()
}

#[test]
fn a_lone_request_pays_one_sync_per_iteration() {
    // 2 pages = 128 tokens: a 12.8 ms prefill forward, then 3 decode steps of 10 ms.
    let off = run(&cfg(64, 0), lone(2, 4));
    let close = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() < 1e-12;
    assert!(close(off.ttft_p50_s, 0.0128), "{off:?}");
    assert!(close(off.makespan_s, 0.0428), "{off:?}");
    // 0.5 ms a scheduler iteration: the prefill's one iteration before the forward,
    // the three decode steps after.
    let on = run(&cfg(64, 500_000), lone(2, 4));
    assert!(close(on.ttft_p50_s, 0.0133), "{on:?}");
    assert!(close(on.makespan_s, 0.0428 + 4.0 * 0.0005), "{on:?}");
    let b = on.ttft_breakdown.unwrap();
    assert!((b.hicache_sync_s - 0.0005).abs() < 1e-12, "{b:?}");
    assert!((b.forward_s - 0.0128).abs() < 1e-12, "{b:?}");
    assert_eq!(b.hit_cost_s, 0.0);
    // Its TPOT: 10.5 ms a step.
    assert!((on.tpot_mean_s.unwrap() - 0.0105).abs() < 1e-12);
}

#[test]
fn chunked_prefill_pays_one_sync_per_chunk() {
    use hicache_sim::runtime::cost::{ComputeSource, CostModel};
    // The chunk count the timed replay charges: one per forward of at most `chunk` new
    // tokens (the fixed clock cuts no batch: one).
    let table = ComputeSource::Table {
        node: "gb300".into(),
        model: "glm-5.2".into(),
        quant: hicache_sim::model::quant::CheckpointQuant::Nvfp4,
        tp: 4,
    };
    let mut c = hicache_sim::runtime::cost::Compute {
        source: table,
        chunked_prefill_size: 8192,
        ..Default::default()
    };
    let m = CostModel::new(&c, 1.0, 1.0).unwrap();
    assert_eq!(m.prefill_forwards(&[(20_000, 0)]), 3);
    assert_eq!(m.prefill_forwards(&[(6_000, 0), (2_192, 0)]), 1);
    assert_eq!(m.prefill_forwards(&[(6_000, 0), (2_193, 0)]), 2);
    c.chunked_prefill_size = 0;
    let m = CostModel::new(&c, 1.0, 1.0).unwrap();
    assert_eq!(m.prefill_forwards(&[(20_000, 0)]), 1);
}

#[test]
fn no_host_tier_or_zero_restores_the_old_figures() {
    let base = run(&cfg(64, 0), lone(3, 5));
    // Without a host tier SGLang runs no check_hicache_events: nothing charged, even
    // with the term set.
    assert_eq!(
        run(&cfg(0, 500_000), lone(3, 5)),
        run(&cfg(0, 0), lone(3, 5))
    );
    // At 0 the replay is the one before the term.
    let mut d = cfg(64, 0);
    d.scheduler.compute = Default::default();
    assert_eq!(run(&d, lone(3, 5)), base);
    // The speeds record names it only when charged.
    assert_eq!(Speeds::of(&cfg(64, 0)).hicache_step_sync_ns, None);
    assert_eq!(Speeds::of(&cfg(0, 500_000)).hicache_step_sync_ns, None);
    let s = Speeds::of(&cfg(64, 500_000));
    assert_eq!(s.hicache_step_sync_ns, Some(500_000));
    assert!(
        s.line()
            .contains("; HiCache step sync 500000 ns per scheduler iteration"),
        "{}",
        s.line()
    );
    assert!(!Speeds::of(&cfg(64, 0)).line().contains("step sync"));
    let j = serde_json::to_value(&s).unwrap();
    assert_eq!(j["hicache_step_sync_ns"], 500_000);
    let j = serde_json::to_value(Speeds::of(&cfg(64, 0))).unwrap();
    assert!(j.get("hicache_step_sync_ns").is_none());
}

#[test]
fn the_default_follows_the_release_and_the_group() {
    // 0.5.17+: one merged all-reduce; 0.5.14–0.5.16: writing + loading (+ storage).
    assert_eq!(
        default_step_sync(Release::V0_5_23, true, true, false, 2),
        Duration(500_000)
    );
    assert_eq!(
        default_step_sync(Release::V0_5_16, true, false, false, 8),
        Duration(1_000_000)
    );
    assert_eq!(
        default_step_sync(Release::V0_5_14, true, true, false, 8),
        Duration(1_500_000)
    );
    // TP 1 (or DP attention at dp = tp) or HiCache off: none.
    assert_eq!(
        default_step_sync(Release::V0_5_23, true, true, false, 1),
        Duration(0)
    );
    assert_eq!(
        default_step_sync(Release::V0_5_23, false, false, false, 8),
        Duration(0)
    );
}

/// `replay scenarios/quickstart-timed.yaml` (TP4, HiCache, a cost table, sglang
/// page-cache-credit = 0.5.22's rules): the speeds line names 0.5 ms a scheduler
/// iteration; `--set runtime.replay.compute.hicache_step_sync=0ns` removes it.
#[test]
fn a_tp4_hicache_scenario_charges_the_default_and_a_set_overrides_it() {
    let speeds = |sets: &[&str]| -> String {
        let mut args = vec!["replay", "scenarios/quickstart-timed.yaml"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = crate::support::run(&args, &crate::support::repo(""));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .find(|l| l.starts_with("speeds: "))
            .unwrap()
            .to_string()
    };
    assert!(speeds(&[]).contains("; HiCache step sync 500000 ns per scheduler iteration"));
    let zero = speeds(&["runtime.replay.compute.hicache_step_sync=0ns"]);
    assert!(!zero.contains("step sync"), "{zero}");
    let two = speeds(&["runtime.replay.compute.hicache_step_sync=2ms"]);
    assert!(
        two.contains("; HiCache step sync 2000000 ns per scheduler iteration"),
        "{two}"
    );
}

/// The TTFT breakdown's "not modelled" list and the sensitivity's closing line name
/// HiCache's per-step synchronisation, and each request's fixed way through the server,
/// as modelled where they are charged, and keep their old text where neither is.
#[test]
fn the_not_modelled_lines_follow_the_charge() {
    let out = |sets: &[&str]| -> String {
        let mut args = vec!["replay", "scenarios/quickstart-timed.yaml", "--sensitivity"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = crate::support::run(&args, &crate::support::repo(""));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let charged = out(&[]);
    assert!(charged.contains(
        "(not modelled: fixed per-iteration costs other than HiCache's per-step synchronisation, HiCache's own bookkeeping)"
    ), "{charged}");
    assert!(
        charged.contains(
            "fixed per-iteration costs (the scheduler's loop, CUDA-graph launch; HiCache's per-step synchronisation is in the model: hicache_sync)"
        ),
        "{charged}"
    );
    let no_sync = out(&["runtime.replay.compute.hicache_step_sync=0ns"]);
    assert!(
        no_sync.contains("(not modelled: fixed per-iteration costs, HiCache's own bookkeeping)"),
        "{no_sync}"
    );
    assert!(
        no_sync.contains(
            "fixed per-iteration costs (the scheduler's loop, CUDA-graph launch) and HiCache's own bookkeeping are not in the time model"
        ),
        "{no_sync}"
    );
    let zero = out(&[
        "runtime.replay.compute.hicache_step_sync=0ns",
        "runtime.replay.request_overhead=0ns",
    ]);
    assert!(
        zero.contains(
            "(not modelled: fixed per-request and per-iteration costs, HiCache's own bookkeeping)"
        ),
        "{zero}"
    );
    assert!(
        zero.contains(hicache_sim::runtime::sensitivity::NOT_IN_THE_MODEL),
        "{zero}"
    );
    assert!(!zero.contains("synchronisation"), "{zero}");
}
