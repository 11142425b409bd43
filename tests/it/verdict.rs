//! One verdict vocabulary for `startup`, `check`, `plan` and `sweep`: a start is `ok` only
//! when everything that moves the figures is modelled, else `unverified` naming what is
//! not (and `check --strict` fails it); a model that leaves no GPU memory for the KV cache
//! is `failed` with SGLang's own words and a hint that names the flag that would help.

use crate::support::{SWEEP_SCENARIO, exit2, run, stdout, trace_workdir};

/// An H200 TP8 GLM-5.2-FP8 recipe with one flag that moves memory and is not modelled.
const LORA: &str = "# hicache-sim: node=hgx-h200\npython3 -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 --tp 8 --enable-hierarchical-cache --hicache-size 100 --enable-lora\n";
const LORA_EFFECT: &str = "--enable-lora: LoRA adapters are not modelled: their GPU memory makes the real device pool smaller";

#[test]
fn an_unmodelled_flag_is_unverified_in_every_check_format_and_strict_fails_it() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("r.sh"), LORA).unwrap();
    let args = ["check", "r.sh", "--runs", "20"];
    let o = run(&args, d.path());
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let t = stdout(&o);
    assert!(t.contains(" unverified ") && !t.contains(" ok "), "{t}");
    assert!(t.contains(&format!("not modelled: {LORA_EFFECT}")), "{t}");
    assert!(t.contains("1 started but unverified"), "{t}");
    // --strict: exit 1, the row not passed
    let o = run(
        &[&args[..], &["--strict", "--format", "json"]].concat(),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["outcome"], "started");
    assert_eq!(v[0]["status"], "unverified");
    assert_eq!(v[0]["passed"], false);
    assert_eq!(v[0]["unverified"][0], LORA_EFFECT);
    // JUnit: skipped (not a pass), a failure of type `unverified` under --strict
    let o = run(&[&args[..], &["--format", "junit"]].concat(), d.path());
    let x = stdout(&o);
    let doc = roxmltree::Document::parse(&x).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase"))
        .unwrap();
    let skipped = case.children().find(|n| n.has_tag_name("skipped")).unwrap();
    assert!(
        skipped.attribute("message").unwrap().contains(LORA_EFFECT),
        "{x}"
    );
    let o = run(
        &[&args[..], &["--format", "junit", "--strict"]].concat(),
        d.path(),
    );
    let x = stdout(&o);
    let doc = roxmltree::Document::parse(&x).unwrap();
    let f = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    assert_eq!(f.attribute("type"), Some("unverified"), "{x}");
    // a recipe without it is `ok`
    std::fs::write(
        d.path().join("plain.sh"),
        LORA.replace(" --enable-lora", ""),
    )
    .unwrap();
    let o = run(&["check", "plain.sh", "--runs", "20", "--strict"], d.path());
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains(" ok "), "{}", stdout(&o));
}

/// `startup` and `plan` say it too: a `Status:` line naming it, `status` / `unverified`
/// in JSON; a user's own `unmodelled:` entry counts the same.
#[test]
fn startup_and_plan_carry_the_status() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("r.yaml"),
        "node: hgx-h200\nserver:\n  launch: python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 --tp 8 --enable-hierarchical-cache --hicache-size 100 --enable-lora\n",
    )
    .unwrap();
    let o = run(&["startup", "r.yaml"], d.path());
    let t = stdout(&o);
    assert!(
        t.contains("Status: unverified — these figures may not be SGLang's; not modelled:"),
        "{t}"
    );
    assert!(t.contains(&format!("  - {LORA_EFFECT}")), "{t}");
    let o = run(&["startup", "r.yaml", "--format", "json"], d.path());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "unverified");
    assert_eq!(v["unverified"][0], LORA_EFFECT);
    let o = run(
        &[
            "plan",
            "r.yaml",
            "--no-replay",
            "--runs",
            "10",
            "--format",
            "json",
        ],
        d.path(),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["recommendation"]["status"], "unverified");
    assert_eq!(v["recommendation"]["unverified"][0], LORA_EFFECT);
    // declared by hand in a scenario
    std::fs::write(
        d.path().join("own.yaml"),
        "node: hgx-h200\nmodel: glm-5.2\nserver:\n  tp_size: 8\nunmodelled:\n  - what: sidecar\n    effect: a 20 GB pinned buffer per node (real host margin smaller)\n",
    )
    .unwrap();
    let o = run(&["startup", "own.yaml", "--format", "json"], d.path());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "unverified");
    assert_eq!(
        v["unverified"][0],
        "sidecar: a 20 GB pinned buffer per node (real host margin smaller)"
    );
    // and a typo in it is a located error
    std::fs::write(
        d.path().join("bad.yaml"),
        "node: hgx-h200\nmodel: glm-5.2\nunmodelled:\n  - what: sidecar\n    efect: x\n",
    )
    .unwrap();
    exit2(
        &run(&["startup", "bad.yaml"], d.path()),
        &["bad.yaml:5", "efect"],
    );
}

/// A sweep's CSV has `status` and `unverified` columns: the GB300 tray's device memory
/// before the load on 4 GPUs is an estimate (no multi-GPU GB300 log), and the rows
/// replay a trace, so every started row is `unverified`, naming it.
#[test]
fn sweep_rows_carry_the_status() {
    let d = trace_workdir();
    std::fs::write(d.path().join("s.yaml"), SWEEP_SCENARIO).unwrap();
    let o = run(&["sweep", "s.yaml", "--out", "o", "--quiet"], d.path());
    assert!(o.status.success());
    let mut r = csv::Reader::from_path(d.path().join("o/results.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let (st, un) = (
        h.iter().position(|c| c == "status").unwrap(),
        h.iter().position(|c| c == "unverified").unwrap(),
    );
    for rec in r.records() {
        let rec = rec.unwrap();
        assert!(["unverified", "refused"].contains(&&rec[st]), "{:?}", rec);
        assert!(
            rec[un].starts_with("GPU memory before the load: the gb300 preset's 1.00 GiB gone before the weight load on a 4-GPU world is an estimate"),
            "{:?}",
            rec
        );
    }
}

/// DeepSeek-R1 (fp8, 688 GB) at TP8 on H100 80 GB: 86.00 GB of weights per rank
/// against 81,559 MiB − 2.32 GiB = 85,520,809,984 − 2,491,081,032 B = 83.03 GB free: the
/// load raises CUDA's OOM; a `failed` verdict (exit 1 in `check`, not an `error` row), the
/// hint names `--tp`. Llama-3.1-70B bf16 at TP2 with `--mem-fraction-static 0.8`: 70.50 GB
/// of 83.03 GB = 84.9 %, so SGLang's "Loaded weights leave no GPU memory" with the
/// fraction that would do (1 − 12.53 / 83.03 = 0.8491).
#[test]
fn a_model_that_does_not_fit_is_failed_with_sglangs_words_and_a_hint() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("r1.yaml"),
        "node: hgx-h100\nserver:\n  launch: python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8\n",
    )
    .unwrap();
    let o = run(
        &["check", "r1.yaml", "--runs", "5", "--format", "json"],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["outcome"], "failed");
    assert_eq!(
        v[0]["message"],
        "CUDA out of memory while loading the weights: 86.00 GB per rank, 83.03 GB free on the GPU (what would help: the weights alone exceed the GPU's free memory: raise --tp (TP8 → TP16 halves the weights per rank), or serve a smaller checkpoint format)"
    );
    let o = run(&["startup", "r1.yaml"], d.path());
    assert_eq!(o.status.code(), Some(0));
    let t = stdout(&o);
    assert!(
        t.contains("[TP0] torch.OutOfMemoryError: CUDA out of memory"),
        "{t}"
    );
    assert!(t.contains("Status: failed"), "{t}");
    std::fs::write(
        d.path().join("l.yaml"),
        "node: hgx-h100\nmodel: llama-3.1-70b\nserver:\n  tp_size: 2\n  mem_fraction_static: 0.8\n",
    )
    .unwrap();
    let o = run(&["startup", "l.yaml", "--format", "json"], d.path());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "failed");
    assert_eq!(
        v["ranks"][0]["message"],
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.8. Raise --mem-fraction-static above 0.850 (minimum viable = 1 - available/pre = 0.8491). If using speculative decoding, draft weights are now counted."
    );
    assert!(
        v["verdict"].as_str().unwrap().contains(
            "what would help: the weights (70.50 GB per rank) take 84.9 % of the 83.03 GB free before the load: raise --mem-fraction-static above 0.849, or raise --tp (TP2 → TP4 halves the weights per rank)"
        ),
        "{}",
        v["verdict"]
    );
    let o = run(&["plan", "l.yaml", "--no-replay", "--runs", "5"], d.path());
    assert!(
        stdout(&o).contains("failed: the model leaves no GPU memory for the KV cache"),
        "{}",
        stdout(&o)
    );
}

/// The GPU memory gone before the load is measured for some presets and worlds (a
/// server log named in `nodes.yaml`) and estimated for the rest: an answer that depends
/// on the device pool is `unverified` when it rests on an estimate, until the scenario
/// gives its own figure.
#[test]
fn an_estimated_gpu_reserve_is_unverified_where_the_answer_depends_on_it() {
    use hicache_sim::hardware::node_preset;
    // measured: GB300 at TP1 (277.55 − 275.75 GiB), H20 at TP8 (95.58 − 93.56 GiB),
    // GB200 multi-GPU (185.03 − 182.18 GiB), H100 at TP8 (79.65 − 77.33 GiB)
    let gib = |x: f64| (x * (1u64 << 30) as f64).round() as u64;
    let gb300 = node_preset("gb300").unwrap();
    assert_eq!(gb300.gpu_reserved_for(1), gib(1.80));
    assert!(
        gb300
            .gpu_reserved_source_for(1)
            .unwrap()
            .contains("avail mem=275.75")
    );
    assert!(gb300.gpu_reserved_source_for(4).is_none());
    assert_eq!(
        node_preset("hgx-h20").unwrap().gpu_reserved_for(8),
        gib(2.02)
    );
    assert_eq!(node_preset("gb200").unwrap().gpu_reserved_for(4), gib(2.85));
    let h100 = node_preset("hgx-h100").unwrap();
    assert_eq!(h100.gpu_reserved_for(8), gib(2.32));
    assert!(
        h100.gpu_reserved_source_for(8)
            .unwrap()
            .contains("avail mem=77.33")
    );
    let d = tempfile::tempdir().unwrap();
    let status = |name: &str, text: &str| {
        std::fs::write(d.path().join(name), text).unwrap();
        let o = run(&["startup", name, "--format", "json"], d.path());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (
            v["status"].as_str().unwrap().to_string(),
            v["unverified"].clone(),
        )
    };
    let ratio = "model: glm-5.2\nserver:\n  tp_size: 4\n  enable_hierarchical_cache: true\n  hicache_ratio: 1.1\n";
    let (s, u) = status("a.yaml", &format!("node: gb300\n{ratio}"));
    assert_eq!(s, "unverified");
    assert!(
        u[0].as_str()
            .unwrap()
            .starts_with("GPU memory before the load: the gb300 preset's 1.00 GiB"),
        "{u}"
    );
    // the user's own figure
    let (s, _) = status(
        "b.yaml",
        &format!("node: gb300\n{ratio}startup:\n  gpu_reserved: 2.9GiB\n"),
    );
    assert_eq!(s, "ok");
    let (s, _) = status(
        "c.yaml",
        &format!("node: {{preset: gb300, gpu_reserved: 2.9GiB}}\n{ratio}"),
    );
    assert_eq!(s, "ok");
    // a measured preset
    let (s, _) = status(
        "e.yaml",
        &format!(
            "node: hgx-h200\n{}",
            ratio.replace("tp_size: 4", "tp_size: 8")
        ),
    );
    assert_eq!(s, "ok");
    // an explicit --hicache-size's verdict does not depend on the device pool
    let (s, _) = status(
        "f.yaml",
        &format!(
            "node: gb300\n{}",
            ratio.replace("hicache_ratio: 1.1", "hicache_size: 100")
        ),
    );
    assert_eq!(s, "ok");
}

/// A plan that holds on a rule set no release ships says so: the quickstart set to
/// `page-cache-credit`, a proposal.
#[test]
fn a_plan_on_a_proposal_says_it_is_in_no_release() {
    let o = crate::support::sim()
        .args([
            "plan",
            "scenarios/quickstart.yaml",
            "--set",
            "sglang=page-cache-credit",
            "--no-replay",
            "--runs",
            "20",
        ])
        .output()
        .unwrap();
    let t = stdout(&o);
    assert!(
        t.contains("  holds on: page-cache-credit (what-if: in no release)"),
        "{t}"
    );
}

/// `--disable-custom-all-reduce` moves the GPU memory before the load (the presets were
/// measured with its buffers: 8 × RTX PRO 6000 at TP8 logged 94.08 and 93.99 GiB free
/// with it off, 93.30 with it on): `check` says unverified and names it, `--strict`
/// fails it, where it said `ok`.
#[test]
fn custom_all_reduce_off_is_unverified() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("car.sh"),
        "# hicache-sim: node=rtx-pro-6000x8\npython -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 8 --disable-custom-all-reduce\n",
    )
    .unwrap();
    let o = run(&["check", "car.sh"], d.path());
    let out = stdout(&o);
    assert!(
        out.contains("unverified")
            && out.contains("--disable-custom-all-reduce: custom all-reduce off is not modelled"),
        "{out}"
    );
    let o = run(&["check", "car.sh", "--strict"], d.path());
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

/// `--context-length` sizes no KV pool: a full-attention model's answer and DeepSeek-V4's
/// (whose hook sets the request slots before the configurator could read the context,
/// 0.5.21–0.5.23) stay `ok`; a hybrid-state model's (Qwen3-Next: the state pool's
/// request slots follow the context length) is `unverified`, naming it.
#[test]
fn context_length_is_unverified_only_where_it_moves_a_pool() {
    let d = tempfile::tempdir().unwrap();
    let check = |model: &str, tp: u32| {
        std::fs::write(
            d.path().join("c.sh"),
            format!("# hicache-sim: node=hgx-h200\npython -m sglang.launch_server --model-path {model} --tp {tp} --context-length 65536\n"),
        )
        .unwrap();
        stdout(&run(&["check", "c.sh"], d.path()))
    };
    for (m, tp) in [
        ("meta-llama/Llama-3.1-70B-Instruct", 8),
        ("deepseek-ai/DeepSeek-V4-Flash", 8),
    ] {
        let out = check(m, tp);
        assert!(
            out.contains(" ok ") && !out.contains("--context-length"),
            "{m}: {out}"
        );
    }
    let out = check("Qwen/Qwen3-Next-80B-A3B-Instruct", 4);
    assert!(
        out.contains("unverified")
            && out.contains("--context-length: the context length is not modelled"),
        "{out}"
    );
}

/// Two answers that were a plain `ok` though the simulator ignored what moves them: a
/// `--config` YAML file (its flags are not read) and a `--model-path` in a checkpoint
/// format the picked preset has no size for (kimi-k3 knows only its MXFP4 size; an FP8
/// path used it). Both are `unverified` now, naming what is left out; without them the
/// same H200 TP8 recipe is `ok`.
#[test]
fn an_unread_config_file_and_a_guessed_checkpoint_size_are_unverified() {
    let d = tempfile::tempdir().unwrap();
    let check = |name: &str, text: &str| {
        std::fs::write(d.path().join(name), text).unwrap();
        stdout(&run(&["check", name, "--runs", "3"], d.path()))
    };
    let out = check(
        "cfg.sh",
        "# hicache-sim: node=hgx-h200\npython -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 8 --config cfg.yaml\n",
    );
    assert!(
        out.contains("unverified")
            && out.contains("--config: the flags of a --config YAML file are not read"),
        "{out}"
    );
    let out = check(
        "plain.sh",
        "# hicache-sim: node=hgx-h200\npython -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 8\n",
    );
    assert!(out.contains(" ok "), "{out}");
    std::fs::write(
        d.path().join("k3.yaml"),
        "name: k3\nnode: hgx-h200\nmodel: kimi-k3\nserver:\n  launch: python -m sglang.launch_server --model-path /models/kimi-k3-FP8 --tp 8\n",
    )
    .unwrap();
    let o = run(&["startup", "k3.yaml", "--format", "json"], d.path());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let why: Vec<&str> = v["unverified"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(
        why.iter().any(|w| w.starts_with(
            "--model-path: a checkpoint format preset `kimi-k3` has no size for: its mxfp4 weights are used"
        )),
        "{why:?}"
    );
}

/// An SGLang variable in the command's environment that moves memory or HiCache's rules
/// and is not modelled (`scenario::launch_env`) is named like a flag: `unverified`, and
/// `check --strict` fails it. The same variable at its default changes nothing and is
/// not named.
#[test]
fn an_unmodelled_sglang_environment_variable_is_unverified_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let recipe = |env: &str| {
        format!(
            "# hicache-sim: node=hgx-h200\n{env} python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 --tp 8 --enable-hierarchical-cache --hicache-size 100 --hicache-write-policy write_back\n"
        )
    };
    std::fs::write(
        d.path().join("on.sh"),
        recipe("SGLANG_HICACHE_SKIP_HOST_DUPLICATE_RECLAIM=1"),
    )
    .unwrap();
    std::fs::write(
        d.path().join("default.sh"),
        recipe("SGLANG_HICACHE_SKIP_HOST_DUPLICATE_RECLAIM=false NCCL_DEBUG=INFO"),
    )
    .unwrap();
    let o = run(
        &[
            "check", "on.sh", "--runs", "5", "--strict", "--format", "json",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["status"], "unverified");
    let why = v[0]["unverified"][0].as_str().unwrap();
    assert!(
        why.starts_with("SGLANG_HICACHE_SKIP_HOST_DUPLICATE_RECLAIM=1: write_back's host-duplicate reclaim switched off"),
        "{why}"
    );
    let o = run(
        &[
            "check",
            "default.sh",
            "--runs",
            "5",
            "--strict",
            "--format",
            "json",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["status"], "ok");
}

/// A replay of a sliding-window or hybrid linear-attention model runs one full-attention
/// tree: SGLang's tree has an SWA (GPT-OSS) or a Mamba (Qwen3-Next) component the replay
/// leaves out, so its hit rates are `unverified`, naming the component, in the text, the
/// JSON, every CSV it writes, a sweep's rows and the plan's ladder; a plain tree replay
/// (no scenario) and a model without them stay `ok`.
#[test]
fn a_replay_of_a_hybrid_model_is_unverified_naming_the_tree_component() {
    let d = tempfile::tempdir().unwrap();
    let trace = crate::support::repo("traces/generated_chat_agentic_mix.jsonl");
    let trace = trace.to_str().unwrap();
    for (scenario, component) in [
        ("scenarios/gpt-oss-swa-split.yaml", "SWA component"),
        ("scenarios/qwen3-next-state-pool.yaml", "Mamba component"),
    ] {
        let sc = crate::support::repo(scenario);
        let sc = sc.to_str().unwrap();
        let o = run(
            &["replay", sc, "--trace", trace, "--format", "json"],
            d.path(),
        );
        assert!(o.status.success(), "{}", crate::support::stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["status"], "unverified", "{scenario}");
        // The tree's component alone: the H100 preset's reserve is measured (TP8), so the
        // device pool is not a reason.
        let why = v["unverified"].as_array().unwrap();
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0]
                .as_str()
                .unwrap()
                .starts_with(&format!("the tree's {component} is not modelled")),
            "{why:?}"
        );
        let t = stdout(&run(&["replay", sc, "--trace", trace], d.path()));
        assert!(
            t.contains(&format!(
                "\nstatus: unverified: the tree's {component} is not modelled"
            )),
            "{t}"
        );
    }
    // The CSVs: the timeline's rows carry it, and its plot's title.
    let sc = crate::support::repo("scenarios/gpt-oss-swa-split.yaml");
    let tl = d.path().join("tl.csv");
    let o = run(
        &[
            "replay",
            sc.to_str().unwrap(),
            "--trace",
            trace,
            "--timeline",
            tl.to_str().unwrap(),
        ],
        d.path(),
    );
    assert!(o.status.success());
    let mut r = csv::Reader::from_path(&tl).unwrap();
    let h = r.headers().unwrap().clone();
    let st = h.iter().position(|c| c == "status").unwrap();
    let un = h.iter().position(|c| c == "unverified").unwrap();
    let rec = r.records().next().unwrap().unwrap();
    assert_eq!(&rec[st], "unverified");
    assert!(rec[un].starts_with("the tree's SWA component"), "{rec:?}");
    // The plan's ladder replays it too.
    let t = stdout(&run(
        &[
            "plan",
            sc.to_str().unwrap(),
            "--trace",
            trace,
            "--runs",
            "20",
        ],
        d.path(),
    ));
    assert!(
        t.contains("\n  hit rates unverified: the tree's SWA component is not modelled"),
        "{t}"
    );
    // A plain tree replay: nothing left out.
    let o = run(&["replay", "--trace", trace, "--format", "json"], d.path());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert!(v.get("unverified").is_none());
}

/// A sweep over a sliding-window model: every started row `unverified`, naming the SWA
/// component (the H100 preset's reserve is measured: the only reason).
#[test]
fn sweep_rows_of_a_hybrid_model_name_the_tree_component() {
    let d = trace_workdir();
    let spec = format!(
        "{}runtime:\n  trace: trace.jsonl\n  replay:\n    timing: off\nsweep:\n  axes:\n    memory.host_other_used: [0GB, 10GB]\n",
        std::fs::read_to_string(crate::support::repo("scenarios/gpt-oss-swa-split.yaml")).unwrap()
    );
    std::fs::write(d.path().join("s.yaml"), spec).unwrap();
    let o = run(&["sweep", "s.yaml", "--out", "o", "--quiet"], d.path());
    assert!(o.status.success(), "{}", crate::support::stderr(&o));
    let mut r = csv::Reader::from_path(d.path().join("o/results.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let (st, un) = (
        h.iter().position(|c| c == "status").unwrap(),
        h.iter().position(|c| c == "unverified").unwrap(),
    );
    let mut n = 0;
    for rec in r.records() {
        let rec = rec.unwrap();
        assert_eq!(&rec[st], "unverified", "{rec:?}");
        assert!(rec[un].starts_with("the tree's SWA component"), "{rec:?}");
        n += 1;
    }
    assert_eq!(n, 2);
}
