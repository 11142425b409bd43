//! SGLang releases as versions: release ids, the 0.5.22+ memory.min rule on a
//! hand-built cgroup tree and as a scenario, the incidents under the releases that ship
//! them, `--sglang all`, `versions`, and the two defects (0.5.14's assertion, the
//! fraction flag before 0.5.21).

use super::support::{gb300_host, gb300_server};
use crate::support::{sim, succeeded};
use hicache_sim::hardware::*;
use hicache_sim::sizing::{HeadroomVariant as HV, cgroup_memory_headroom};

fn run_json(args: &[&str]) -> serde_json::Value {
    let out = sim().args(args).output().unwrap();
    assert!(
        out.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A worked case: parent `task` (max 900, usage 850 of which 600 is inactive
/// file cache of a sibling with memory.min 100); the engine (max 1000, usage 250).
fn worked_case(sibling_min: u64, engine_min: u64) -> HostMemoryView {
    let mut m = HostMemory::new(CgroupVersion::V2, 10_000);
    let task = m
        .add_cgroup(m.root(), "task", CgroupLimits::max(900))
        .unwrap();
    let sib = m
        .add_cgroup(
            task,
            "sibling",
            CgroupLimits {
                min: sibling_min,
                ..Default::default()
            },
        )
        .unwrap();
    let eng = m
        .add_cgroup(
            task,
            "engine",
            CgroupLimits {
                max: Some(1000),
                min: engine_min,
                ..Default::default()
            },
        )
        .unwrap();
    m.charge(sib, ChargeKind::PageCache, 600).unwrap();
    m.charge(eng, ChargeKind::Anon, 250).unwrap();
    assert_eq!(m.usage(task), 850);
    m.snapshot(eng)
}

#[test]
fn worked_memory_min_case_by_hand() {
    let h = |v: &HostMemoryView, var| cgroup_memory_headroom(v, var).unwrap();
    let v = worked_case(100, 0);
    // 0.5.22/0.5.23: a descendant of task has memory.min != 0 -> no credit: 900 - 850.
    assert_eq!(h(&v, HV::ProtectedDescendants), Some(50));
    assert_eq!(h(&v, HV::Raw), Some(50));
    // page-cache-credit credits all 600: min(1000 - 250, 900 - 250).
    assert_eq!(h(&v, HV::ActiveInactiveCredit), Some(650));
    // explicit-snapshot's rule keeps the 100 memory.min protects: 900 - 350.
    assert_eq!(h(&v, HV::ProtectedSibling), Some(550));
    // Sibling min 0: credit applies again.
    assert_eq!(h(&worked_case(0, 0), HV::ProtectedDescendants), Some(650));
    // The engine's own min of 1 protects it from task's reclaim: no credit at task.
    assert_eq!(h(&worked_case(0, 1), HV::ProtectedDescendants), Some(50));
}

#[test]
fn unreadable_descendant_min_counts_as_protected() {
    // A hand-built chain: the flag is what `_has_protected_descendants` returns for an
    // unreadable memory.min, too.
    let stat = MemStat {
        inactive_file: 600,
        ..Default::default()
    };
    let level = |max, usage, protected| CgroupLevel {
        max: Some(max),
        usage: Some(usage),
        stat: Some(stat),
        protected_descendants: protected,
        ..Default::default()
    };
    let v = |p| HostMemoryView {
        psutil_available: 1 << 40,
        cgroup: CgroupRead::Found(CgroupChain::from_levels(
            CgroupVersion::V2,
            &[level(900, 850, p)],
        )),
    };
    assert_eq!(
        cgroup_memory_headroom(&v(true), HV::ProtectedDescendants),
        Ok(Some(50))
    );
    assert_eq!(
        cgroup_memory_headroom(&v(false), HV::ProtectedDescendants),
        Ok(Some(650))
    );
    // cgroup v1 has no memory.min: the flag is never consulted there.
    let v1 = HostMemoryView {
        psutil_available: 1 << 40,
        cgroup: CgroupRead::Found(CgroupChain::from_levels(
            CgroupVersion::V1,
            &[level(900, 850, true)],
        )),
    };
    assert_eq!(
        cgroup_memory_headroom(&v1, HV::ProtectedDescendants),
        Ok(Some(650))
    );
}

#[test]
fn memory_min_scenario_gives_50_gb_of_headroom_under_0_5_22_and_0_5_23() {
    // (50 GB - 10 GiB) // 4 ranks.
    let budget = (50_000_000_000i64 - 10 * (1 << 30)) / 4;
    for v in ["0.5.22", "0.5.23", "latest"] {
        let j = run_json(&[
            "startup",
            "scenarios/memory-min-sibling.yaml",
            "--sglang",
            v,
            "--format",
            "json",
        ]);
        for r in j["ranks"].as_array().unwrap() {
            assert_eq!(r["available_bytes"], 50_000_000_000i64, "{v}");
            assert_eq!(r["budget_bytes"], budget, "{v}");
            assert_eq!(r["outcome"], "refused", "{v}");
            assert_eq!(
                r["message"],
                "Not enough host memory available. Requesting 20.00 GB but only have 9.82 GB free. Please reduce the size of the hierarchical cache."
            );
        }
    }
    // page-cache-credit: 650 GB; explicit-snapshot: 550 GB. Both start.
    for (v, avail) in [
        ("page-cache-credit", 650_000_000_000i64),
        ("explicit-snapshot", 550_000_000_000),
    ] {
        let j = run_json(&[
            "startup",
            "scenarios/memory-min-sibling.yaml",
            "--sglang",
            v,
            "--format",
            "json",
        ]);
        assert_eq!(j["ranks"][0]["available_bytes"], avail, "{v}");
        assert_eq!(j["outcomes"]["started"], 1, "{v}");
    }
    // Without the sibling's memory.min, 0.5.23 credits the cache and starts.
    let j = run_json(&[
        "startup",
        "scenarios/memory-min-sibling.yaml",
        "--set",
        "memory.cgroup.siblings=[{name: cache-holder, page_cache: 600GB}]",
        "--format",
        "json",
    ]);
    assert_eq!(j["sglang"], "0.5.23");
    assert_eq!(j["ranks"][0]["available_bytes"], 650_000_000_000i64);
}

#[test]
fn gb300_135g_under_0_5_21_is_the_pr40135_report_to_the_character() {
    let out = sim()
        .args([
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--sglang",
            "0.5.21",
            "--format",
            "json",
            "--runs",
            "200",
        ])
        .output()
        .unwrap();
    let got = String::from_utf8(out.stdout).unwrap();
    let golden = std::fs::read_to_string("tests/golden/gb300-glm52-135g.json").unwrap();
    let mut want: serde_json::Value = serde_json::from_str(&golden).unwrap();
    want["sglang"] = "0.5.21".into();
    want["sglang_summary"] = hicache_sim::release::Release::V0_5_21.summary().into();
    want["verdict"] = want["verdict"]
        .as_str()
        .unwrap()
        .replace("Under pr40135", "Under 0.5.21")
        .into();
    let got_v: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got_v, want);
    assert!(got.contains(
        "Not enough host memory available. Requesting 135.00 GB but only have 102.32 GB free. Please reduce the size of the hierarchical cache."
    ));
}

#[test]
fn the_startup_race_remains_in_0_5_23() {
    let j = run_json(&[
        "startup",
        "scenarios/tp8-startup-race.yaml",
        "--sglang",
        "0.5.23",
        "--runs",
        "2000",
        "--format",
        "json",
    ]);
    let p = j["refusal_probability"].as_f64().unwrap();
    assert!(p > 0.0 && p < 1.0, "{p}");
    // The proposal that removes it is not a release.
    let j = run_json(&[
        "startup",
        "scenarios/tp8-startup-race.yaml",
        "--sglang",
        "explicit-snapshot",
        "--runs",
        "2000",
        "--format",
        "json",
    ]);
    assert_eq!(j["refusal_probability"], 0.0);
}

#[test]
fn pre_28614_small_host_pool_fails_before_reading_memory() {
    // Defect: a host pool not larger than the device pool was reported as `refused` with
    // a psutil budget and margin; 0.5.14 asserts before `psutil.virtual_memory()`.
    for v in ["pre-28614", "0.5.14"] {
        let j = run_json(&[
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--sglang",
            v,
            "--set",
            "server.hicache_size=20",
            "--format",
            "json",
        ]);
        assert_eq!(j["outcomes"]["failed"], 1, "{v}");
        assert_eq!(j["outcomes"]["refused"], 0, "{v}");
        assert_eq!(j["refusal_probability"], 0.0, "{v}");
        for r in j["ranks"].as_array().unwrap() {
            assert_eq!(r["outcome"], "failed");
            assert!(r["budget_bytes"].is_null(), "{r}");
            assert!(r["margin_bytes"].is_null(), "{r}");
            assert!(r["sampled_at_s"].is_null(), "{r}");
            assert_eq!(
                r["message"],
                "The host memory should be larger than the device memory with the current protocol"
            );
        }
    }
    // 0.5.15 only warns.
    let j = run_json(&[
        "startup",
        "scenarios/gb300-glm52-135g.yaml",
        "--sglang",
        "0.5.15",
        "--set",
        "server.hicache_size=20",
        "--format",
        "json",
    ]);
    assert_eq!(j["ranks"][0]["outcome"], "started");
}

#[test]
fn fraction_flag_is_an_unknown_argument_before_0_5_21() {
    for v in ["0.5.20", "pr35540", "pr28614", "0.5.14"] {
        let out = sim()
            .args([
                "startup",
                "scenarios/gb300-glm52-135g.yaml",
                "--sglang",
                v,
                "--set",
                "server.hicache_host_memory_fraction=0.5",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{v}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("server.hicache_host_memory_fraction"), "{e}");
        assert!(
            e.contains("unrecognized arguments: --hicache-host-memory-fraction"),
            "{e}"
        );
    }
    // Written in the file, even at the default value.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.yaml");
    std::fs::write(
        &p,
        "sglang: 0.5.19\nnode: gb300\nmodel: glm-5.2\nserver:\n  tp_size: 4\n  hicache_host_memory_fraction: 0.8\n",
    )
    .unwrap();
    let out = sim()
        .args(["startup", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(":6:"));
    // 0.5.21 has it.
    let out = sim()
        .args([
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--sglang",
            "0.5.21",
            "--set",
            "server.hicache_host_memory_fraction=0.5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn eviction_policy_choices_follow_the_release() {
    let go = |v: &str, p: &str| {
        sim()
            .args([
                "startup",
                "scenarios/gb300-glm52-135g.yaml",
                "--sglang",
                v,
                "--set",
                &format!("server.radix_eviction_policy={p}"),
            ])
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(go("0.5.23", "tlru"), Some(0));
    assert_eq!(go("0.5.20", "tlru"), Some(2));
    assert_eq!(go("0.5.23", "fifo"), Some(2));
}

#[test]
fn startup_all_has_one_row_per_release_and_what_if() {
    let j = run_json(&[
        "startup",
        "scenarios/memory-min-sibling.yaml",
        "--sglang",
        "all",
        "--format",
        "json",
    ]);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 11 + 9);
    let row = |id: &str| rows.iter().find(|r| r["sglang"] == id).unwrap().clone();
    assert_eq!(row("0.5.23")["outcome"], "refused");
    assert_eq!(
        row("0.5.23")["budget_bytes"],
        (50_000_000_000i64 - 10 * (1 << 30)) / 4
    );
    assert_eq!(row("0.5.23")["shipped"], "2026-10-30");
    assert_eq!(row("page-cache-credit")["outcome"], "started");
    assert_eq!(row("pr40135")["shipped"], "0.5.21 (2026-10-01)");
    assert_eq!(
        row("explicit-snapshot")["shipped"],
        "in no release up to 0.5.23 (a proposal)"
    );
    assert_eq!(row("0.5.14")["outcome"], "failed");
}

#[test]
fn versions_lists_releases_with_dates_and_what_ifs() {
    let out = sim().args(["versions"]).output().unwrap();
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("0.5.23"), "{t}");
    assert!(t.contains("2026-10-30"), "{t}");
    assert!(!t.to_lowercase().contains("newest:"), "{t}");
    let j = run_json(&["versions", "--format", "json"]);
    let all = j.as_array().unwrap();
    let get = |id: &str| all.iter().find(|v| v["id"] == id).unwrap().clone();
    assert_eq!(get("latest")["same_as"], "0.5.23");
    assert_eq!(get("0.5.16")["same_as"], "0.5.15");
    assert_eq!(
        get("auto-hicache")["first_shipped"],
        serde_json::Value::Null
    );
    assert_eq!(
        get("auto-hicache")["shipped"],
        "in no release up to 0.5.23 (a proposal)"
    );
    assert_eq!(get("pr40135")["first_shipped"], "0.5.21");
    assert_eq!(get("0.5.22")["kind"], "release");
    // A DSA model's index-K per release (`PoolRules::dsa_index_k`), what-ifs as their
    // nearest release.
    let index_k = |id: &str| get(id)["rules"]["pools"]["dsa_index_k"].clone();
    assert_eq!(index_k("0.5.17"), "all_layers");
    assert_eq!(index_k("0.5.18"), "elide_unless_hicache_or_pd");
    assert_eq!(index_k("0.5.21"), "elide_unless_hicache_or_pd");
    assert_eq!(index_k("pr40135"), "elide_unless_hicache_or_pd");
    assert_eq!(index_k("0.5.22"), "elide_owned");
    assert_eq!(index_k("latest"), "elide_owned");
    let draft = |id: &str| get(id)["rules"]["pools"]["draft_cell"].clone();
    assert_eq!(draft("0.5.17"), "scale");
    assert_eq!(draft("0.5.18"), "dsa_add_per_layer");
    assert_eq!(draft("0.5.22"), "add_per_layer");
}

/// `sglang` as a sweep axis: one CSV row group per release, the release ids in the
/// `sglang` column and in the plots' legends.
#[test]
fn sglang_is_a_sweep_axis_labelled_in_the_plots() {
    let dir = tempfile::tempdir().unwrap();
    let scen = dir.path().join("s.yaml");
    std::fs::write(
        &scen,
        concat!(
            "\
name: sweep-sglang
seed: 2
runs: 20
",
            gb300_server!(),
            gb300_host!(),
            "  post_load: 5s\n",
            "\
sweep:
  axes:
    server.hicache_size: [60, 100, 135]
    sglang: ['0.5.21', '0.5.23', page-cache-credit]
"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = sim()
        .args([
            "sweep",
            scen.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "sglang").unwrap();
    let ids: std::collections::BTreeSet<String> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().to_string())
        .collect();
    assert_eq!(
        ids.into_iter().collect::<Vec<_>>(),
        ["0.5.21", "0.5.23", "page-cache-credit"]
    );
    // The budget-vs-request plot groups by the sglang axis and names each release.
    let svgs: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension().is_some_and(|x| x == "svg")).then(|| std::fs::read_to_string(p).unwrap())
        })
        .collect();
    assert!(!svgs.is_empty());
    assert!(
        svgs.iter()
            .any(|s| s.contains("0.5.21") && s.contains("0.5.23")),
        "no plot names the releases"
    );
}

#[test]
fn buffer_only_write_back_is_coerced_from_0_5_22_and_an_error_before() {
    let args = |v: &str| {
        vec![
            "startup".to_string(),
            "scenarios/gb300-glm52-135g.yaml".into(),
            "--sglang".into(),
            v.into(),
            "--set".into(),
            "server.hicache_host_memory_mode=buffer_only".into(),
            "--set".into(),
            "server.hicache_write_policy=write_back".into(),
            "--set".into(),
            "server.hicache_storage_backend=file".into(),
            "--format".into(),
            "json".into(),
        ]
    };
    let out = sim().args(args("0.5.21")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("does not support --hicache-write-policy write_back")
    );
    let j = run_json(
        &args("0.5.22")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let notes = j["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("switches --hicache-write-policy write_back to write_through")),
        "{notes:?}"
    );
}

#[test]
fn replay_takes_the_controller_defaults_of_the_release() {
    use hicache_sim::cache::{DeviceEvictAmount, EvictVersion};
    use hicache_sim::release::Release;
    use hicache_sim::runtime::ReplayConfig;
    use hicache_sim::sizing::PrefetchCapRule;
    let c = |r: Release| ReplayConfig::default().with_release(&r.rules().controller);
    let c14 = c(Release::V0_5_14);
    assert_eq!(c14.policy.evict_version, EvictVersion::V0);
    assert_eq!(
        c14.prefetch.prefetch_capacity_rule,
        PrefetchCapRule::ExcessOverDevice
    );
    assert_eq!(c14.policy.device_evict_amount, DeviceEvictAmount::Requested);
    assert_eq!(c14.prefetch.prefetch_timeout_max.0, 30_000_000_000);
    assert_eq!(c14.prefetch.prefetch_timeout_base.0, 2_000_000_000);
    let c23 = c(Release::V0_5_23);
    assert_eq!(c23.policy.evict_version, EvictVersion::V1);
    assert_eq!(c23.policy.device_evict_amount, DeviceEvictAmount::Shortfall);
    assert_eq!(c23.prefetch.prefetch_timeout_base.0, 1_000_000_000);
    assert_eq!(c23.prefetch.prefetch_timeout_per_ki_token.0, 250_000_000);
    assert!(c23.prefetch.prefetch_timeout_max.0 > 1_000_000 * 1_000_000_000);
    // The README's figure: device hit rate at 2,000 pages of 64 tokens, 0.5.16 vs 0.5.23.
    let rate = |v: &str| {
        let out = sim()
            .args([
                "replay",
                "--trace",
                "traces/synthetic_trace.jsonl",
                "--page-size",
                "64",
                "--l1-pages",
                "2000",
                "--l2-pages",
                "0",
                "--sglang",
                v,
            ])
            .output()
            .unwrap();
        let t = String::from_utf8(out.stdout).unwrap();
        t.lines()
            .find(|l| l.starts_with("device"))
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_string()
    };
    assert_eq!(rate("0.5.16"), "1.92");
    assert_eq!(rate("latest"), "2.12");
}

#[test]
fn debug_sizing_reads_states_and_names_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    // The worked memory.min case as files: task (max 900, current 850) holding the
    // sibling's 600 inactive file pages, the engine (max 1000, current 250).
    let cg = |path: &str, max: serde_json::Value, min: u64, cur: u64, inactive: u64| {
        serde_json::json!({"path": path, "max": max, "high": "max", "min": min,
            "current": cur, "stat": {"inactive_file": inactive}, "stat_file": "ok"})
    };
    let state = serde_json::json!({
        "id": "worked", "cgroup_version": "v2", "psutil_available": 5000u64,
        "procfs": true, "mounted": true, "engine": "task/engine",
        "cgroups": [
            cg("", "missing".into(), 0, 2000, 600),
            cg("task", 900.into(), 0, 850, 600),
            cg("task/sibling", "max".into(), 100, 600, 600),
            cg("task/engine", 1000.into(), 0, 250, 0),
        ],
        "ranks_per_host": 1, "pools": [],
        "auto": {"fraction": 0.8, "ratio": 2.0, "device_bytes": 1000}
    });
    std::fs::write(&p, format!("{state}\n")).unwrap();
    let out = sim()
        .args(["debug-sizing", p.to_str().unwrap(), "--sglang", "0.5.23"])
        .output()
        .unwrap();
    succeeded(&out);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["headroom"], 50);
    let out = sim()
        .args([
            "debug-sizing",
            p.to_str().unwrap(),
            "--sglang",
            "page-cache-credit",
        ])
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["headroom"], 650);
    std::fs::write(&p, format!("{state}\n{{\"id\": 3}}\n")).unwrap();
    let out = sim()
        .args(["debug-sizing", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(":2"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A buffer_only scenario replays with buffer_only's prefetch cap, 0.9 × host (0.5.19+
/// `cache_controller.py`: `int(HICACHE_LOAD_POOL_USAGE_FRACTION * host.size)`); the
/// pipeline used to name it by a spelling the replay refused (`buffer_only` for
/// `buffer-only`), so the replay stopped with an error.
#[test]
fn buffer_only_scenario_replays_with_its_staging_cap() {
    use hicache_sim::sizing::PrefetchCapRule;
    let q = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/quickstart.yaml");
    let sets: Vec<String> = [
        "server.hicache_host_memory_mode=buffer_only",
        "server.hicache_storage_backend=file",
        "server.hicache_ratio=1.5",
        "sglang=0.5.19",
    ]
    .map(String::from)
    .to_vec();
    let s = hicache_sim::commands::startup_cmd::load_scenario(q, &sets, None).unwrap();
    let plan = hicache_sim::commands::startup_cmd::plan_for(&s).unwrap();
    let mc = hicache_sim::startup::run(&plan, s.seed, 1);
    let host = hicache_sim::pipeline::host_pool_tokens(&mc);
    let cfg = hicache_sim::pipeline::replay_config(&s, &plan, host, &Default::default()).unwrap();
    assert_eq!(
        cfg.prefetch.prefetch_capacity_rule,
        PrefetchCapRule::BufferOnly
    );
    // The start-up's host pool, 4,003,648 tokens = 62,557 pages of 64 (ratio 1.5 of the
    // 2,669,056-token device pool — 0.5.19 keeps GLM-5.2's index-K on all 78 layers with
    // HiCache on — in whole pages): int(0.9 × 4,003,648) = 3,603,283.
    assert_eq!(cfg.capacities.l2_pages, 62_557);
    assert_eq!(cfg.prefetch_capacity_limit_tokens(), 3_603_283);
}

/// `tlru` from the server arguments (a `--set`, or `--radix-eviction-policy` in a launch
/// command) reaches the replay typed and is refused there as a `runtime.replay`
/// `eviction_policy: tlru` is: same message, same field, exit code 2. A
/// `runtime.replay.eviction_policy` of the scenario's own replaces it.
#[test]
fn tlru_from_the_server_arguments_is_refused_by_the_replay() {
    let refusal = "error: scenarios/quickstart.yaml: field `runtime.replay`: runtime.replay: field `runtime.replay.eviction_policy`: unknown variant `tlru`, expected one of `lru`, `lfu`, `fifo`, `mru`, `filo`, `priority`, `slru`\n";
    for set in [
        "server.radix_eviction_policy=tlru",
        "server.launch=python -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 --tp 4 --enable-hierarchical-cache --hicache-size 100 --radix-eviction-policy tlru",
    ] {
        let out = sim()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "replay",
                "scenarios/quickstart.yaml",
                "--sglang",
                "0.5.21",
                "--set",
                set,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{set}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), refusal, "{set}");
        assert!(out.stdout.is_empty(), "{set}");
    }
    // The library's view: the field and the message, from `replay_config`.
    let q = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/quickstart.yaml");
    let s = hicache_sim::commands::startup_cmd::load_scenario(
        q,
        &["server.radix_eviction_policy=tlru".to_string()],
        Some("0.5.21".parse().unwrap()),
    )
    .unwrap();
    let plan = hicache_sim::commands::startup_cmd::plan_for(&s).unwrap();
    let e = hicache_sim::pipeline::replay_config(&s, &plan, Some(64_000), &Default::default())
        .unwrap_err();
    let hicache_sim::pipeline::ReplayConfigError::Override(e) = e else {
        panic!("{e}")
    };
    assert_eq!(e.field.as_deref(), Some("runtime.replay.eviction_policy"));
    assert_eq!(
        e.message,
        "unknown variant `tlru`, expected one of `lru`, `lfu`, `fifo`, `mru`, `filo`, `priority`, `slru`"
    );
    // The scenario's own `runtime.replay.eviction_policy` wins over the server's.
    let mut o = serde_json::Map::new();
    o.insert("eviction_policy".into(), "lfu".into());
    let cfg = hicache_sim::pipeline::replay_config(&s, &plan, Some(64_000), &o).unwrap();
    assert_eq!(
        cfg.policy.eviction_policy,
        hicache_sim::cache::EvictionPolicy::Lfu
    );
}

/// `tlru` (0.5.21+): one note, from the release check.
#[test]
fn tlru_is_noted_once() {
    let q = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/quickstart.yaml");
    let sets = vec!["server.radix_eviction_policy=tlru".to_string()];
    let s = hicache_sim::commands::startup_cmd::load_scenario(
        q,
        &sets,
        Some("0.5.21".parse().unwrap()),
    )
    .unwrap();
    let tlru: Vec<&String> = s.notes.iter().filter(|n| n.contains("tlru")).collect();
    assert_eq!(
        tlru,
        [
            "warning: radix eviction policy tlru (SGLang 0.5.21+) is not modelled by the runtime replay: start-up sizing is unaffected, a replay refuses it"
        ]
    );
}
