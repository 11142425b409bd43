//! The device-pool log corpus (`tests/log_corpus/*.yaml`: real SGLang start-up logs from
//! public issues, PRs and blog posts, each citing its source) against the simulator.
//!
//! Two checks per case:
//! - **rule** (`profile_tokens`): SGLang's `profile_max_num_token` fed with the log's own
//!   free memory before the load and weights as loaded (`Load weight begin/end`) and the
//!   fraction the server resolved: the `max_total_num_tokens` it printed must come back.
//!   This checks `rest = available − pre × (1 − f)`, the cell size and page alignment.
//! - **simulation** (`sim_tokens`, `sim_weights`): what a planner gets. The case's
//!   `launch:` command, as the log ran it, with `# hicache-sim: node=… sglang=…` naming
//!   the node preset and the release (`simulate:`), goes through `hicache-sim startup
//!   --format json` itself: the launch parser, the model catalogue, the node preset's GPU
//!   memory before the load, the release's `--mem-fraction-static` default, the weights
//!   as loaded, the release's pools. A log whose release predates the modelled ones
//!   states what `simulate.set` adds (the fraction that release resolved) and why.
//!
//! Each case records the largest error it may show (`bounds`); the run prints the table the
//! README quotes (`cargo test --test it log_corpus -- --nocapture`).

use std::path::Path;

use hicache_sim::model::dsv4::{Dsv4Formula, Dsv4Geometry, Dsv4Schedule};
use hicache_sim::model::{
    DevicePoolInputs, KvDtype, ModelPreset, ModelQuery, ParallelLayout, ResolvedModel,
    profile_rest_gib, resolve,
};
use hicache_sim::pools::{PoolSetInputs, SpecDraft, device_pools};
use hicache_sim::release::Release;
use serde::Deserialize;

const GIB: f64 = (1u64 << 30) as f64;

#[derive(Debug, Deserialize)]
struct Sglang {
    version: String,
}

#[derive(Debug, Deserialize)]
struct ModelBlock {
    id: String,
    /// A catalogue id of the same architecture when `id` is not in the catalogue
    /// (`Qwen/QwQ-32B` is `Qwen/Qwen2.5-32B`'s config): a fact the case records.
    #[serde(default)]
    catalogue: Option<String>,
    /// models.yaml format, for a model neither `id` nor `catalogue` resolves.
    #[serde(default)]
    preset: Option<ModelPreset>,
}

/// The model of a case as the simulator reads it: `model::resolve` on `catalogue` (else
/// `id`) as a `--model-path`, else the case's own `preset`.
fn resolved(c: &Case) -> Option<(ModelPreset, Option<ResolvedModel>)> {
    let path = c.model.catalogue.as_deref().unwrap_or(&c.model.id);
    match resolve(&ModelQuery {
        model_path: Some(path),
        ..Default::default()
    }) {
        Ok(r) => {
            let mut m = r.preset.clone();
            // A preset picked by name takes the path's checkpoint format (`-FP8`), as
            // the scenario does.
            if let Some(q) = hicache_sim::model::quant::suffix_of(path)
                && m.checkpoint.contains_key(&q.format.key())
            {
                m.default_quant = q.format.key();
            }
            Some((m, Some(r)))
        }
        Err(_) => c.model.preset.clone().map(|p| (p, None)),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Flags {
    tp: u32,
    pp: Option<u32>,
    dp: Option<u32>,
    enable_dp_attention: bool,
    kv_cache_dtype: Option<String>,
    page_size: Option<u64>,
    speculative_mtp_layers: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Logged {
    mem_fraction_static: Option<f64>,
    free_before_load_gib: Option<f64>,
    weights_gib: Option<f64>,
    avail_after_load_gib: Option<f64>,
    max_total_num_tokens: Option<u64>,
    refused: bool,
    min_viable_fraction: Option<f64>,
    /// `Allocating … GB host memory for hierarchical KV cache` (decimal GB: that line
    /// divides by 1e9) and the `--hicache-ratio` it came from.
    host_pool_gb: Option<f64>,
    host_pool_ratio: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Bounds {
    profile_tokens: Option<f64>,
    sim_tokens: Option<f64>,
    sim_weights: Option<f64>,
}

/// How the simulation runs a case's `launch:` command.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Simulate {
    /// The release whose rules run (`# hicache-sim: sglang=`): the log's own when it is a
    /// modelled one, else the nearest, said in `why`.
    sglang: String,
    /// Scenario fields set beside the command (`# hicache-sim: KEY=VALUE`), for what a
    /// release before the modelled ones resolved by its own rules (its default
    /// `--mem-fraction-static`), each explained in `why`.
    #[serde(default)]
    set: Vec<String>,
    #[serde(default)]
    why: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Case {
    source: String,
    sglang: Sglang,
    /// The node preset the simulation runs on (none when the GPU is unknown).
    #[serde(default)]
    node: Option<String>,
    /// The launch command as the log ran it (SGLang's or Dynamo's).
    #[serde(default)]
    launch: Option<String>,
    #[serde(default)]
    simulate: Option<Simulate>,
    model: ModelBlock,
    flags: Flags,
    logged: Logged,
    #[serde(default)]
    bounds: Bounds,
    /// Why the simulation is not run on this log (a release whose rules are not
    /// modelled and whose log does not print the fraction, an unknown GPU or model): the
    /// case still checks the rule where it can and counts in the corpus, not in the
    /// simulation's error statistic.
    #[serde(default)]
    not_simulated: Option<String>,
    /// Why the logged weights are not compared with the catalogue model's (a quantised or
    /// offloaded build of a catalogued architecture: `model.catalogue` names the
    /// architecture, not the checkpoint that was loaded).
    #[serde(default)]
    weights_not_compared: Option<String>,
    /// Why the rule check may exceed 0.2 %: the log's build computes the release's rule
    /// on other inputs (named), so `bounds.profile_tokens` applies instead.
    #[serde(default)]
    rule_differs: Option<String>,
}

/// One row of the README table.
#[derive(Debug)]
struct Row {
    name: String,
    logged_tokens: Option<u64>,
    profile_tokens: Option<u64>,
    sim_tokens: Option<u64>,
    logged_weights: Option<f64>,
    sim_weights: Option<f64>,
    sim_fraction: Option<f64>,
    /// The simulated start-up's status (`ok`, `unverified`, `refused`, `failed`).
    sim_status: Option<String>,
    /// How far the printed figures' rounding (±0.005 GiB on `Load weight begin` and on the
    /// post-load `avail mem`) can move the rule check, relative to the pool: `0.005 × (2 −
    /// f) / rest` plus one page. A log with a small pool cannot check the rule more finely.
    profile_rounding: Option<f64>,
}

fn rel(sim: f64, logged: f64) -> f64 {
    sim / logged - 1.0
}

fn kv_dtype(s: Option<&str>) -> KvDtype {
    match s.unwrap_or("auto") {
        "fp8_e4m3" | "fp8_e5m2" | "fp8" => KvDtype::Fp8,
        _ => KvDtype::Bf16,
    }
}

fn tokens(
    model: &ModelPreset,
    layout: &ParallelLayout,
    dtype: KvDtype,
    device: DevicePoolInputs,
    draft: u32,
) -> u64 {
    let inp = PoolSetInputs {
        model,
        layout,
        dtype,
        rules: Release::V0_5_14.rules().pools,
        device,
        draft: SpecDraft { mtp_layers: draft },
        swa_full_tokens_ratio: 0.8,
        mamba_full_memory_ratio: 0.9,
        max_mamba_cache_size: None,
        enable_hierarchical_cache: false,
        pd_disaggregation: false,
    };
    // DeepSeek-V4: `DSV4PoolConfigurator` (the release's formula, SGLang's schedule:
    // page 256, 256 running requests, the 0.1 SWA ratio) on `profile_max_num_token`'s
    // rest in bytes.
    if let Some(geo) = Dsv4Geometry::of(&model.attention, model.layers) {
        let rules = Release::V0_5_14.rules().pools;
        let sched = Dsv4Schedule {
            page_size: device.page_size,
            attn_dp_size: if layout.enable_dp_attention {
                layout.dp_size as u64
            } else {
                1
            },
            ..Dsv4Schedule::sglang_default(8192)
        };
        let rest = (profile_rest_gib(&device) * GIB) as u64;
        return geo
            .pool_sizes_for(Dsv4Formula::of(rules.dsv4_pools), &sched, rest, None)
            .map(|p| p.full)
            .unwrap_or(0);
    }
    device_pools(&inp).map(|p| p.full_tokens).unwrap_or(0)
}

fn run(name: &str, c: &Case) -> Row {
    let layout = ParallelLayout {
        tp_size: c.flags.tp.max(1),
        pp_size: c.flags.pp.unwrap_or(1),
        dp_size: c.flags.dp.unwrap_or(1),
        enable_dp_attention: c.flags.enable_dp_attention,
        nnodes: 1,
    };
    let dtype = kv_dtype(c.flags.kv_cache_dtype.as_deref());
    let page = c.flags.page_size.unwrap_or(1);
    let draft = c.flags.speculative_mtp_layers.unwrap_or(0);
    let model = resolved(c);
    let mut row = Row {
        name: name.to_string(),
        logged_tokens: c.logged.max_total_num_tokens,
        profile_tokens: None,
        sim_tokens: None,
        logged_weights: c.logged.weights_gib,
        sim_weights: None,
        sim_fraction: None,
        sim_status: None,
        profile_rounding: None,
    };

    // Rule check: the log's own free memory, weights and fraction.
    if let (Some(pre), Some(w), Some(f)) = (
        c.logged.free_before_load_gib,
        c.logged.weights_gib,
        c.logged.mem_fraction_static,
    ) {
        let dev = DevicePoolInputs {
            free_before_load: (pre * GIB) as u64,
            weights_per_rank: (w * GIB) as u64,
            mem_fraction_static: f,
            cell_size: 0,
            page_size: page,
            max_total_tokens: None,
        };
        if c.logged.refused {
            // `_profile_available_bytes`: rest ≤ 0 → ValueError with 1 − available / pre.
            assert!(
                profile_rest_gib(&dev) <= 0.0,
                "{name}: SGLang refused, rest > 0"
            );
            // Releases that print the minimum viable fraction (0.5.14+): it must match;
            // older ones only say "Not enough memory".
            let min = 1.0 - c.logged.avail_after_load_gib.unwrap() / pre;
            if let Some(want) = c.logged.min_viable_fraction {
                assert!(
                    (min - want).abs() < 5e-4,
                    "{name}: minimum viable fraction {min:.4} vs logged {want}"
                );
            }
        } else if let Some((m, _)) = &model {
            let rest = profile_rest_gib(&dev);
            let t = tokens(m, &layout, dtype, dev, draft);
            row.profile_tokens = Some(t);
            row.profile_rounding = Some(0.005 * (2.0 - f) / rest + page as f64 / t.max(1) as f64);
            // The host pool of a HiCache log: `--hicache-ratio` × the device pool's
            // tokens × the same cell (`HostKVCache.__init__`: `host_size =
            // int(device_pool.size * hicache_ratio)`), printed in decimal GB.
            if let (Some(gb), Some(ratio), Some(logged_tokens)) = (
                c.logged.host_pool_gb,
                c.logged.host_pool_ratio,
                c.logged.max_total_num_tokens,
            ) {
                let cell: u64 = m
                    .host_pools(&layout, dtype)
                    .iter()
                    .map(|p| p.bytes_per_token)
                    .sum();
                let host = (logged_tokens as f64 * ratio).floor() * cell as f64 / 1e9;
                assert!(
                    (host - gb).abs() <= 0.005 + gb * 1e-3,
                    "{name}: host pool {host:.3} GB vs logged {gb} GB"
                );
            }
        }
    }

    // Simulation: the launch command through `hicache-sim startup` on the node preset.
    if c.not_simulated.is_none()
        && let (Some(launch), Some(sim)) = (&c.launch, &c.simulate)
    {
        let node = c
            .node
            .as_deref()
            .unwrap_or_else(|| panic!("{name}: a simulated case needs `node:`"));
        assert!(
            sim.set.is_empty() || sim.why.is_some(),
            "{name}: `simulate.set` needs `simulate.why`"
        );
        let json = simulate(name, node, sim, launch);
        let status = json["status"].as_str().unwrap().to_string();
        let profile = &json["device_profile"];
        row.sim_fraction = profile["mem_fraction_static"].as_f64();
        row.sim_weights = profile["weights_per_rank_bytes"]
            .as_u64()
            .map(|w| w as f64 / GIB);
        if c.weights_not_compared.is_some() {
            row.sim_weights = None;
        }
        if !matches!(status.as_str(), "refused" | "failed") {
            row.sim_tokens = json["device_pool_tokens"].as_u64();
        }
        row.sim_status = Some(status);
    }
    row
}

/// `hicache-sim startup --format json` on the case's command with the node and release
/// named in `# hicache-sim:` comments.
fn simulate(name: &str, node: &str, sim: &Simulate, launch: &str) -> serde_json::Value {
    let d = tempfile::tempdir().unwrap();
    let mut text = format!("# hicache-sim: node={node} sglang={}\n", sim.sglang);
    for kv in &sim.set {
        text.push_str(&format!("# hicache-sim: {kv}\n"));
    }
    text.push_str(launch);
    text.push('\n');
    let f = d.path().join(format!("{name}.sh"));
    std::fs::write(&f, text).unwrap();
    let out = crate::support::run(
        &["startup", f.to_str().unwrap(), "--format", "json"],
        d.path(),
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{name}: startup gave no JSON ({e}; exit {:?}): {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn cases() -> Vec<(String, Case)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/log_corpus");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap();
            let c: Case = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert!(
                c.source.starts_with("https://"),
                "{n}: source must be a URL"
            );
            assert!(!c.model.id.is_empty(), "{n}: model id");
            assert!(!c.sglang.version.is_empty(), "{n}: sglang.version");
            (n.trim_end_matches(".yaml").to_string(), c)
        })
        .collect()
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:+.1} %", v * 100.0))
        .unwrap_or_else(|| "–".into())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn every_case_within_its_recorded_bounds() {
    let mut problems = Vec::new();
    let mut sim_errs = Vec::new();
    let mut profile_errs = Vec::new();
    let mut weight_errs = Vec::new();
    let mut rule_checks = Vec::new();
    let (mut cases_n, mut simulated, mut verdicts) = (0usize, 0usize, 0usize);
    use std::fmt::Write as _;
    let mut table = String::from(
        "| case | logged tokens | rule check | err | simulated | err | status | f | logged weights | simulated | err |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (name, c) in cases() {
        let r = run(&name, &c);
        let e_prof = r
            .profile_tokens
            .zip(r.logged_tokens)
            .map(|(s, l)| rel(s as f64, l as f64));
        let e_sim = r
            .sim_tokens
            .zip(r.logged_tokens)
            .map(|(s, l)| rel(s as f64, l as f64));
        let e_w = r.sim_weights.zip(r.logged_weights).map(|(s, l)| rel(s, l));
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            r.logged_tokens
                .map(|t| t.to_string())
                .unwrap_or(if c.logged.refused {
                    "refused".into()
                } else {
                    "–".into()
                }),
            r.profile_tokens
                .map(|t| t.to_string())
                .unwrap_or("–".into()),
            pct(e_prof),
            r.sim_tokens.map(|t| t.to_string()).unwrap_or("–".into()),
            pct(e_sim),
            r.sim_status.as_deref().unwrap_or("–"),
            r.sim_fraction
                .map(|f| format!("{f:.3}"))
                .unwrap_or("–".into()),
            r.logged_weights
                .map(|w| format!("{w:.2} GiB"))
                .unwrap_or("–".into()),
            r.sim_weights
                .map(|w| format!("{w:.2} GiB"))
                .unwrap_or("–".into()),
            pct(e_w),
        );
        for (what, err, bound) in [
            ("profile_tokens", e_prof, c.bounds.profile_tokens),
            ("sim_tokens", e_sim, c.bounds.sim_tokens),
            ("sim_weights", e_w, c.bounds.sim_weights),
        ] {
            match (err, bound) {
                (Some(e), None) => problems.push(format!(
                    "{name}: {what} error {e:+.4} has no recorded bound"
                )),
                (Some(e), Some(b)) if e.abs() > b => problems.push(format!(
                    "{name}: {what} error {:+.2} % exceeds the recorded {:.2} %",
                    e * 100.0,
                    b * 100.0
                )),
                _ => {}
            }
        }
        if r.sim_status.is_none() && c.not_simulated.is_none() {
            problems.push(format!(
                "{name}: not simulated (no `launch:` and `simulate:`) and no `not_simulated` reason"
            ));
        }
        if let Some(st) = &r.sim_status {
            simulated += 1;
            // SGLang refused or failed at start-up: so must the simulation.
            let sim_refused = matches!(st.as_str(), "refused" | "failed");
            if c.logged.refused != sim_refused {
                problems.push(format!(
                    "{name}: SGLang {} but the simulation's status is {st}",
                    if c.logged.refused {
                        "refused"
                    } else {
                        "started"
                    }
                ));
            } else if c.logged.refused {
                verdicts += 1;
            }
            if c.logged.max_total_num_tokens.is_some() && !c.logged.refused && e_sim.is_none() {
                problems.push(format!("{name}: simulated but no device pool to compare"));
            }
        }
        cases_n += 1;
        if let (Some(e), Some(r)) = (e_prof, r.profile_rounding) {
            // A build between releases whose rule is known to differ from the modelled
            // release's by a stated amount may take its own bound (`rule_differs`).
            let allowed = match &c.rule_differs {
                Some(_) => r.max(c.bounds.profile_tokens.unwrap_or(0.0)),
                None => r,
            };
            rule_checks.push((name.clone(), e, allowed));
        }
        profile_errs.extend(e_prof.map(f64::abs));
        sim_errs.extend(e_sim.map(f64::abs));
        weight_errs.extend(e_w.map(f64::abs));
    }
    let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    let _ = writeln!(
        table,
        "\nrule check: {} cases, median |err| {:.2} %, max {:.2} %  ",
        profile_errs.len(),
        median(&mut profile_errs.clone()) * 100.0,
        max(&profile_errs) * 100.0
    );
    let _ = writeln!(
        table,
        "simulation: {simulated} of {cases_n} cases simulated ({verdicts} refusals refused); tokens: {} cases, median |err| {:.2} %, max {:.2} %; weights: median {:.2} %, max {:.2} %",
        sim_errs.len(),
        median(&mut sim_errs.clone()) * 100.0,
        max(&sim_errs) * 100.0,
        median(&mut weight_errs.clone()) * 100.0,
        max(&weight_errs) * 100.0
    );
    print!("{table}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    crate::support::check_doc("docs/src/fidelity/log-corpus.md", "log corpus", &table).unwrap();
    // The rule reproduces what SGLang printed from what it measured, to 0.2 % or to what
    // the printed figures' rounding allows on a small pool (`Row::profile_rounding`).
    for (name, err, rounding) in &rule_checks {
        assert!(
            err.abs() <= rounding.max(0.002),
            "{name}: rule check off by {:+.3} %, beyond 0.2 % and the printed figures' rounding ({:.3} %)",
            err * 100.0,
            rounding * 100.0
        );
    }
}

/// The docs check fails on a table edited by hand (a copy of the page with one figure
/// changed), and passes on the page as the test wrote it.
#[test]
fn a_hand_edited_docs_table_is_stale() {
    let d = tempfile::tempdir().unwrap();
    let page = "intro\n<!-- BEGIN generated: t -->\n| a | 1 |\n<!-- END generated: t -->\n";
    let p = d.path().join("p.md");
    std::fs::write(&p, page).unwrap();
    let rel = p.to_str().unwrap();
    assert!(crate::support::check_doc(rel, "t", "| a | 1 |\n").is_ok());
    std::fs::write(&p, page.replace("| a | 1 |", "| a | 2 |")).unwrap();
    if std::env::var_os("UPDATE_DOCS").is_none() {
        let e = crate::support::check_doc(rel, "t", "| a | 1 |\n").unwrap_err();
        assert!(e.contains("stale or was edited by hand"), "{e}");
    }
}
