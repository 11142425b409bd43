//! What the replay's full-attention tree leaves out for a sliding-window model, measured
//! against SGLang's own tree: `tests/golden/swa_tree/` holds the per-request device hit
//! pages of sglang 0.5.23's `UnifiedRadixCache` with `tree_components=(FULL, SWA)` and
//! its `SWATokenToKVPoolAllocator` (written by `tests/sglang_diff/swa_tree/run.sh`), on
//! the bundled traces at a full pool and an SWA pool of the sizes named. The replay runs
//! one tree over the full pool (what it does for GPT-OSS and the other SWA models, whose
//! answers are therefore `unverified`); this test writes the gap into the hit-rates
//! chapter, so the label's size is SGLang's figure, not a guess.

use std::path::PathBuf;

use hicache_sim::cache::TreeKind;
use hicache_sim::runtime::{CallPattern, Capacities, ReplayConfig, TreePolicy, replay_hits};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One golden file: its header fields and the sum of its per-request pages.
struct Point {
    trace: String,
    l1: u64,
    swa: u64,
    sglang_swa_pages: u64,
    replay_pages: u64,
}

fn points() -> Vec<Point> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("tests/golden/swa_tree"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        // The prefill-only points: the full tree's replay ends every request at its
        // prefill too (`*.decode.txt` decode their output tokens); unchunked, as the
        // full tree's replay here (`*.c<C>.txt`: chunked prefill).
        .filter(|p| !p.to_string_lossy().ends_with(".decode.txt"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().contains(".c"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let mut lines = text.lines();
            let h = crate::support::golden_header(lines.next().unwrap());
            assert_eq!(h["sglang"], "0.5.23");
            assert_eq!(h["components"], "FULL,SWA");
            assert_eq!(
                (h["pattern"].as_str(), h["chunk"].as_str()),
                ("scheduler", "0")
            );
            let pages: Vec<u64> = lines.map(|l| l.trim().parse().unwrap()).collect();
            let block: u32 = h["block"].parse().unwrap();
            let page_size: u32 = h["page_size"].parse().unwrap();
            let reqs = crate::support::bundled_trace(&h["trace"], block, page_size);
            assert_eq!(reqs.len(), pages.len(), "{}", p.display());
            let l1: u64 = h["l1_pages"].parse().unwrap();
            let cfg = ReplayConfig {
                capacities: Capacities {
                    page_size,
                    l1_pages: l1,
                    l2_pages: 0,
                    ..Default::default()
                },
                policy: TreePolicy {
                    tree: TreeKind::Unified0523,
                    call_pattern: CallPattern::Scheduler0523,
                    ..Default::default()
                },
                ..ReplayConfig::default()
            };
            let (_, hits) = replay_hits(&cfg, reqs).unwrap();
            Point {
                trace: h["trace"].trim_end_matches(".jsonl").to_string(),
                l1,
                swa: h["swa_pages"].parse().unwrap(),
                sglang_swa_pages: pages.iter().sum(),
                replay_pages: hits.iter().map(|x| x.device).sum(),
            }
        })
        .collect()
}

/// The gap per point; with an SWA pool as large as the full pool the two trees agree
/// within 0.5 %, with a smaller one SGLang's hits fall by up to about half.
#[test]
fn the_replay_s_full_tree_against_sglang_s_swa_tree() {
    let pts = points();
    assert_eq!(pts.len(), 8);
    let mut table = String::from(
        "| trace | full pool pages | SWA pool pages | SGLang's tree (FULL + SWA) | the replay (one full tree) | replay / SGLang |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for p in &pts {
        let ratio = p.replay_pages as f64 / p.sglang_swa_pages as f64;
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.2} |\n",
            p.trace, p.l1, p.swa, p.sglang_swa_pages, p.replay_pages, ratio
        ));
        if p.swa >= p.l1 {
            assert!((ratio - 1.0).abs() < 0.005, "{} {}: {ratio}", p.trace, p.l1);
        }
    }
    // The worst point: chat_agentic_mix at 2,000 full / 500 SWA pages, 12,664 pages
    // in SGLang's tree against the full tree's 29,152 (2.30×).
    let worst = pts
        .iter()
        .map(|p| p.replay_pages as f64 / p.sglang_swa_pages as f64)
        .fold(0.0, f64::max);
    assert!((worst - 29152.0 / 12664.0).abs() < 1e-9, "{worst}");
    crate::support::check_doc("docs/src/fidelity/hit-rates.md", "swa tree gap", &table).unwrap();
}

/// `replay` of a sliding-window model on the device tier alone answers with SGLang's
/// tree with its SWA component, and prints beside it what the other two trees hit (text
/// and JSON `swa_tree`): GPT-OSS-120B's scenario at 2,000 full pages (`--l1-pages`), its
/// SWA pool scaled with it (13,656 × 2,000 / 17,071 = 1,599 pages, SGLang's 0.8 ratio),
/// chat_agentic_mix (3,980,639 prompt tokens), the H100's 8,192-token chunked prefill:
/// 1,837,248 on the device when each request decodes its output (the answer, `status`
/// without the SWA reason), 1,864,768 when every request ends at its prefill, 1,865,728
/// in the full tree. Engines behind a router run it in each engine. With a host tier,
/// or timed, the SWA tree does not run: the full tree answers, `unverified` naming the
/// SWA component.
#[test]
fn replay_answers_with_the_swa_tree_on_the_device_tier() {
    use crate::support::{repo, run, stdout};
    let sc = repo("scenarios/gpt-oss-swa-split.yaml");
    let trace = repo("traces/generated_chat_agentic_mix.jsonl");
    let args = |extra: &[&'static str]| {
        let mut v = vec![
            "replay".to_string(),
            sc.display().to_string(),
            "--trace".into(),
            trace.display().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let go = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        run(&a, &root())
    };
    let o = go(args(&[
        "--l2-pages",
        "0",
        "--l1-pages",
        "2000",
        "--format",
        "json",
    ]));
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["swa_tree"];
    assert_eq!(
        (s["swa_pages"].as_u64(), s["window"].as_u64()),
        (Some(1599), Some(128))
    );
    assert_eq!(v["config"]["swa"]["pages"], 1599);
    assert_eq!(v["config"]["swa"]["decode"], true);
    assert_eq!(v["config"]["call_pattern"], "scheduler_0_5_23");
    let input = v["metrics"]["input_tokens"].as_f64().unwrap();
    assert_eq!(input, 3_980_639.0);
    let tokens = |x: &serde_json::Value| (x.as_f64().unwrap() * input).round();
    assert_eq!(tokens(&v["metrics"]["device_hit_rate"]), 1_837_248.0);
    assert_eq!(tokens(&s["device_hit_rate"]), 1_837_248.0);
    assert_eq!(tokens(&s["prefill_only_device_hit_rate"]), 1_864_768.0);
    assert_eq!(tokens(&s["full_tree_device_hit_rate"]), 1_865_728.0);
    // The SWA component is in the answer and the H100 preset's reserve is measured:
    // nothing is left unverified.
    assert_eq!(v["status"], "ok");
    assert!(v.get("unverified").is_none(), "{}", v["unverified"]);
    let t = stdout(&go(args(&["--l2-pages", "0", "--l1-pages", "2000"])));
    assert!(
        t.contains("engine hiradix (tree unified_0_5_23 with its SWA component: 1599 SWA pages, window 128, requests decoding their output, one request at a time, chunked prefill at 8192 tokens)"),
        "{t}"
    );
    assert!(t.contains("device          1837248    46.15 %"), "{t}");
    assert!(
        t.contains("beside it (two more replays): device 46.85 % of prompt tokens with every request ending at its prefill (a PD prefill server); 46.87 % for a full-attention tree without the SWA component"),
        "{t}"
    );
    // Timed on the device tier: the SWA tree, with the requests on one clock,
    // unverified for its decode KV taken at once.
    let o = go(args(&[
        "--l2-pages",
        "0",
        "--config",
        "timing=on",
        "--format",
        "json",
    ]));
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["swa"]["window"], 128);
    assert_eq!(v["status"], "unverified");
    let why = v["unverified"].to_string();
    assert!(
        !why.contains("the tree's SWA component is not modelled"),
        "{why}"
    );
    assert!(
        why.contains("the timed replay with the SWA tree takes a request's decode KV"),
        "{why}"
    );
    // With the scenario's host tier: the full tree, unverified, no SWA figure.
    {
        let extra = &["--format", "json"][..];
        let o = go(args(extra));
        assert!(o.status.success(), "{extra:?}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v.get("swa_tree").is_none(), "{extra:?}");
        assert!(v["config"]["swa"].is_null(), "{extra:?}");
        assert_eq!(v["status"], "unverified");
        assert!(
            v["unverified"]
                .to_string()
                .contains("the tree's SWA component is not modelled"),
            "{extra:?}"
        );
    }
    // Engines behind a router: the SWA tree in each engine.
    let o = go(args(&[
        "--l2-pages",
        "0",
        "--set",
        "runtime.router.engines=2",
        "--format",
        "json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["swa"]["pages"], 13656);
    assert_eq!(v["metrics"]["engines"].as_array().unwrap().len(), 2);
    assert!(!v["unverified"].to_string().contains("SWA component"));
    // The scenario's own choice of call pattern stands: the SWA tree needs the
    // scheduler's, so the full tree answers.
    let o = go(args(&[
        "--l2-pages",
        "0",
        "--config",
        "call_pattern=simulator",
        "--format",
        "json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("swa_tree").is_none());
}
