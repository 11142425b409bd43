//! The outputs: the speeds behind every time figure, per-round figures of a
//! multi-turn bench (replay JSON / text / `--rounds` CSV and plot, sweep columns and
//! plot), and the storage backend presets.

use std::process::Command;

use hicache_sim::domain::StorageBackend;
use hicache_sim::runtime::rounds::{BenchSpec, run_bench};
use hicache_sim::runtime::{
    Capacities, Measurement, ReplayConfig, Scheduler, Speeds, Timing, apply_overrides,
};
use serde_json::{Map, Value};

use super::support::{code, stderr, stdout};

use super::support::BIN;
use super::support::gb300_tray;

/// The GB300 GLM-5.2 tray of the quickstart, closed-loop clients instead of a trace,
/// fixed speeds (20 000 / 50 tok/s), and a 512-page (32 768-token) device pool.
const BENCH_SCENARIO: &str = concat!(
    "\
name: bench
sglang: page-cache-credit
seed: 2
runs: 5
",
    gb300_tray!(),
    "\
runtime:
  bench:
    clients: 8
    rounds: 3
    request_length: 2048
    output_length: 16
    max_parallel: 4
  replay:
    timing: on
    l1_pages: 512
"
);

fn cfg_fixed() -> ReplayConfig {
    ReplayConfig {
        capacities: Capacities {
            l1_pages: 100_000,
            l2_pages: 0,
            ..Default::default()
        },
        measurement: Measurement {
            timing: Timing::On,
            ..Default::default()
        },
        ..ReplayConfig::default()
    }
}

#[test]
fn one_client_two_rounds_by_hand() {
    // One client, 2 rounds, questions of 1 000 tokens, answers of 10, fixed speeds.
    // Round 0: 1 000 new tokens at 20 000 tok/s = 50 ms TTFT (the prefill makes the
    // first token); decode the other 9 at 50 tok/s = 180 ms, so round 1 is sent at
    // 230 ms. Its prompt is 1 000·2 + 10 = 2 010 tokens; the 15 whole pages (960
    // tokens) of round 0 are device hits, so it prefills 1 050 tokens: 52.5 ms.
    // TPOT = 180 ms ÷ (10 − 1) = 20 ms.
    let spec = BenchSpec {
        clients: 1,
        rounds: 2,
        request_length: 1000,
        output_length: 10,
        max_parallel: 1,
        request_rate: None,
        round_barrier: false,
        random_ready: false,
        seed: 0,
        max_passes: 10,
    };
    let m = run_bench(&cfg_fixed(), &spec).unwrap();
    let r = &m.rounds;
    assert_eq!(r.len(), 2);
    assert!(
        (r[0].ttft_mean_s - 0.05).abs() < 1e-6,
        "{}",
        r[0].ttft_mean_s
    );
    assert_eq!(r[0].hit_rate, 0.0);
    assert!(
        (r[1].ttft_mean_s - 0.0525).abs() < 1e-6,
        "{}",
        r[1].ttft_mean_s
    );
    assert_eq!(r[1].hit_rate, 960.0 / 2010.0);
    assert!((r[1].tpot_mean_s.unwrap() - 0.02).abs() < 1e-6);
    // Round 0's throughput: 1 000 tokens over its 230 ms.
    assert!(
        (r[0].input_tok_s - 1000.0 / 0.23).abs() < 1e-3,
        "{}",
        r[0].input_tok_s
    );
    let b = m.bench.as_ref().unwrap();
    // Whole run: 3 010 prompt tokens over 0 … 0.23 + 0.0525 + 0.18 = 0.4625 s.
    assert!(
        (b.input_tok_s - 3010.0 / 0.4625).abs() < 1e-3,
        "{}",
        b.input_tok_s
    );
    assert_eq!(b.hit_rate, 960.0 / 3010.0);
    // The replay's own TTFT percentiles agree with the rounds'.
    assert!((m.ttft_p99_s.unwrap() - 0.0525).abs() < 1e-6);
}

#[test]
fn bench_needs_timing_on() {
    let spec: BenchSpec =
        serde_json::from_value(serde_json::json!({"clients": 2, "request_length": 64, "output_length": 1, "max_parallel": 1}))
            .unwrap();
    let e = run_bench(&ReplayConfig::default(), &spec).unwrap_err();
    assert!(e.to_string().contains("timing: on"), "{e}");
}

#[test]
fn storage_backend_presets_fill_what_the_scenario_leaves() {
    let mut o = Map::new();
    o.insert("storage_backend".into(), Value::from("mooncake"));
    let c = apply_overrides(ReplayConfig::default(), &o).unwrap();
    // 190 GB/s per node over 8×400 Gbps RoCE ÷ 8 ranks.
    assert_eq!(c.links.storage_read_bandwidth.0, 23.75e9);
    assert_eq!(c.links.storage_write_bandwidth.0, 23.75e9);
    assert_eq!(c.links.storage_backend, Some(StorageBackend::Mooncake));
    // A figure the scenario sets wins over the preset's.
    o.insert("storage_read_bandwidth".into(), Value::from("1GB/s"));
    let c = apply_overrides(ReplayConfig::default(), &o).unwrap();
    assert_eq!(c.links.storage_read_bandwidth.0, 1e9);
    assert_eq!(c.links.storage_write_bandwidth.0, 23.75e9);
    // EIC as corpus #08 measured; hf3fs has no write figure: the default 5 GB/s stays.
    let eic = ReplayConfig::default().with_storage_backend(StorageBackend::Eic);
    assert_eq!(
        (
            eic.links.storage_read_bandwidth.0,
            eic.links.storage_write_bandwidth.0
        ),
        (0.57e9, 0.16e9)
    );
    let fs = ReplayConfig::default().with_storage_backend(StorageBackend::Hf3fs);
    assert_eq!(
        (
            fs.links.storage_read_bandwidth.0,
            fs.links.storage_write_bandwidth.0
        ),
        (5.37e9, 5e9)
    );
    // `file` has no figures of its own: the node's.
    let f = ReplayConfig::default().with_storage_backend(StorageBackend::File);
    assert_eq!(f.links.storage_read_bandwidth.0, 10e9);
    // An unknown name is an error naming the field and the nearest preset.
    o.insert("storage_backend".into(), Value::from("3fs"));
    let e = apply_overrides(ReplayConfig::default(), &o).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("runtime.replay.storage_backend"));
    assert!(
        e.message.contains("unknown storage backend `3fs`"),
        "{}",
        e.message
    );
    // Recorded in the speeds.
    let s = Speeds::of(&eic);
    assert_eq!(s.storage_backend, Some(StorageBackend::Eic));
    assert!(
        s.line()
            .contains("storage (eic) read 0.57 GB/s write 0.16 GB/s")
    );
}

/// A storage latency of 0 and no backend (the defaults) are not written in a config's
/// text form (outputs made before the fields existed keep their bytes); what the latency
/// costs is `l3_write_back::storage_latency_is_paid_once_per_prefetch`.
#[test]
fn default_storage_fields_are_not_written() {
    let j = serde_json::to_value(ReplayConfig::default()).unwrap();
    assert!(j.get("storage_latency").is_none());
    assert!(j.get("storage_backend").is_none());
}

#[test]
fn replay_records_speeds_and_rounds() {
    let d = tempfile::tempdir().unwrap();
    let sc = d.path().join("bench.yaml");
    std::fs::write(&sc, BENCH_SCENARIO).unwrap();
    let rounds = d.path().join("rounds.csv");
    let o = Command::new(BIN)
        .arg("replay")
        .arg(&sc)
        .args(["--format", "json", "--rounds"])
        .arg(&rounds)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["speeds"]["cost_model"], "fixed");
    assert_eq!(v["speeds"]["prefill_tokens_per_s"], 20000.0);
    assert_eq!(v["speeds"]["load_back"], "before_forward");
    let r = v["metrics"]["rounds"].as_array().unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0]["requests"], 8);
    // Round 0 prompts share nothing: no hit. Later rounds hit their own history.
    assert_eq!(r[0]["hit_rate"], 0.0);
    assert!(r[2]["hit_rate"].as_f64().unwrap() > 0.5, "{}", r[2]);
    assert_eq!(v["metrics"]["bench"]["clients"], 8);
    // The per-round CSV: a header, one row per round, the speeds on every row.
    let csv = std::fs::read_to_string(&rounds).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "round,requests,ttft_mean_s,ttft_p50_s,ttft_p99_s,input_tok_s,tpot_mean_s,hit_rate,cost_model,speeds,status,unverified"
    );
    assert_eq!(lines.len(), 4);
    assert!(lines[1].starts_with("0,8,"), "{}", lines[1]);
    assert!(lines[1].contains(",fixed,fixed: prefill 20000 tok/s"));
    assert!(d.path().join("rounds.png").exists());
    assert!(d.path().join("rounds.svg").exists());
    // Text: the speeds line and the per-round table.
    let o = Command::new(BIN).arg("replay").arg(&sc).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains("\nspeeds: fixed: prefill 20000 tok/s; decode 50 tok/s;"),
        "{t}"
    );
    assert!(t.contains("bench_multiturn: 8 clients x 3 rounds"), "{t}");
    assert!(t.contains("round requests"), "{t}");
}

#[test]
fn sweep_rows_carry_speeds_and_round_columns() {
    let d = tempfile::tempdir().unwrap();
    let sc = d.path().join("bench.yaml");
    std::fs::write(
        &sc,
        format!(
            "{BENCH_SCENARIO}sweep:\n  axes:\n    server.enable_hierarchical_cache: [false, true]\n"
        ),
    )
    .unwrap();
    let out = d.path().join("out");
    let o = Command::new(BIN)
        .arg("sweep")
        .arg(&sc)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<Vec<String>> = rd
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    let col = |n: &str| {
        h.iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    for n in [
        "cost_model",
        "speeds",
        "ttft_mean_s",
        "round_hit_rate_2",
        "round_ttft_p99_s_0",
    ] {
        col(n);
    }
    assert!(!h.iter().any(|x| x == "round_hit_rate_3"));
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r[col("cost_model")], "fixed", "{r:?}");
        assert!(r[col("speeds")].starts_with("fixed: prefill 20000 tok/s"));
        assert_eq!(r[col("round_hit_rate_0")], "0.000000");
    }
    // L1 only vs L1+L2: the host tier can only add hits in the last round.
    let hit = |i: usize| rows[i][col("round_hit_rate_2")].parse::<f64>().unwrap();
    let off = rows
        .iter()
        .position(|r| r[col("server.enable_hierarchical_cache")] == "false")
        .unwrap();
    assert!(hit(1 - off) >= hit(off), "{} vs {}", hit(1 - off), hit(off));
    assert!(out.join("per_round.png").exists(), "{}", stderr(&o));
}

#[test]
fn interleaved_decode_takes_gpu_time_from_prefill() {
    use hicache_sim::runtime::{DecodeTimeline, replay_timed};
    use hicache_sim::workload::Request;
    // Fixed speeds: 1 000 new tokens prefill in 50 ms; one decode step is 1/50 s = 20 ms.
    // A arrives at 0 (4 output tokens: the prefill makes the first, 3 decode steps the
    // rest), B at 60 ms (1 000 tokens, 2 output tokens: one decode step).
    let reqs = || {
        vec![
            Request {
                id: 0,
                arrival_ns: 0,
                input_tokens: 1000,
                output_tokens: 4,
                page_hashes: (1..=15).collect(),
            },
            Request {
                id: 1,
                arrival_ns: 60_000_000,
                input_tokens: 1000,
                output_tokens: 2,
                page_hashes: (101..=115).collect(),
            },
        ]
    };
    let ms = 1_000_000;
    // beside_prefill (the default): A's decode never holds the GPU. A: prefill 0-50,
    // decode 3 × 20 ms → done at 110. B: prefill 60-110, TTFT 50 ms, done at 130.
    let (_, t) = replay_timed(&cfg_fixed(), reqs(), &[]).unwrap();
    assert_eq!((t[0].first_token_ns, t[0].finish_ns), (50 * ms, 110 * ms));
    assert_eq!((t[1].first_token_ns, t[1].finish_ns), (110 * ms, 130 * ms));
    // interleaved: at 50 the GPU runs A's first decode step (50-70): B, arriving at 60,
    // waits for it, prefills 70-120 (TTFT 60 ms). Then steps of both: 120-140 (B done,
    // A's 2nd), 140-160 (A's 3rd) → A done at 160.
    let cfg = {
        let start = cfg_fixed();
        ReplayConfig {
            scheduler: Scheduler {
                decode_timeline: DecodeTimeline::Interleaved,
                ..start.scheduler
            },
            ..start
        }
    };
    let (m, t) = replay_timed(&cfg, reqs(), &[]).unwrap();
    assert_eq!((t[0].first_token_ns, t[0].finish_ns), (50 * ms, 160 * ms));
    assert_eq!((t[1].first_token_ns, t[1].finish_ns), (120 * ms, 140 * ms));
    assert_eq!(m.ttft_p99_s, Some(0.06));
    assert_eq!(m.makespan_s, Some(0.16));
    // Selectable per scenario, recorded in the speeds.
    let mut o = Map::new();
    o.insert("decode_timeline".into(), Value::from("interleaved"));
    let c = apply_overrides(ReplayConfig::default(), &o).unwrap();
    assert_eq!(c.scheduler.decode_timeline, DecodeTimeline::Interleaved);
    assert!(Speeds::of(&c).line().contains("decode interleaved"));
}

/// [`BENCH_SCENARIO`] with `axes` (YAML lines under `sweep: axes:`), swept: the folder
/// (kept while the caller holds it), the scenario's path, the CSV header and its rows.
fn swept(
    axes: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Vec<String>,
    Vec<Vec<String>>,
) {
    let d = tempfile::tempdir().unwrap();
    let sc = d.path().join("bench.yaml");
    std::fs::write(&sc, format!("{BENCH_SCENARIO}sweep:\n  axes:\n{axes}")).unwrap();
    let out = d.path().join("out");
    let o = Command::new(BIN)
        .arg("sweep")
        .arg(&sc)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let rows = rd
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    (d, sc, h, rows)
}

/// The index of CSV column `name` in `header`.
fn column(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|x| x == name)
        .unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn sweep_axes_reach_the_keys_written_only_when_set() {
    // `decode_timeline`, `storage_backend`, `storage_latency` and `compute` are left out
    // of the serialized config while default; a sweep may still vary them.
    let (_d, _, h, rows) = swept(
        "    runtime.replay.decode_timeline: [beside_prefill, interleaved]\n    runtime.replay.storage_backend: [eic]\n",
    );
    let col = |n: &str| column(&h, n);
    assert_eq!(rows.len(), 2);
    for r in &rows {
        let sp = &r[col("speeds")];
        assert!(
            sp.contains("storage (eic) read 0.57 GB/s write 0.16 GB/s"),
            "{sp}"
        );
        let want = format!("decode {}", r[col("runtime.replay.decode_timeline")]);
        assert!(sp.contains(&want), "{sp}");
    }
}

#[test]
fn a_text_prompt_waits_for_the_tokenizer_not_the_gpu() {
    use hicache_sim::runtime::replay_timed;
    use hicache_sim::units::Duration;
    use hicache_sim::workload::Request;
    // Fixed speeds (20 000 new tokens/s), `tokenize_per_token: 7us`. A: 1 000 tokens
    // sent at 0, encoded 0-7 ms, prefilled 7-57 ms: TTFT 57 ms. B: 500 tokens sent at
    // 1 ms waits for A's encode, encoded 7-10.5 ms, then for the GPU: prefilled 57-82
    // ms, TTFT 81 ms. C: 100 tokens sent at 200 ms, tokenizer and GPU idle: 0.7 ms +
    // 5 ms. TTFT always runs from the send.
    let req = |id: u64, at: u64, tokens: u32| Request {
        id,
        arrival_ns: at,
        input_tokens: tokens,
        output_tokens: 1,
        page_hashes: (0..u64::from(tokens) / 64)
            .map(|j| (id << 32) + j + 1)
            .collect(),
    };
    let reqs = || {
        vec![
            req(0, 0, 1000),
            req(1, 1_000_000, 500),
            req(2, 200_000_000, 100),
        ]
    };
    let mut c = cfg_fixed();
    c.frontend.tokenize_per_token = Duration(7_000);
    let (m, t) = replay_timed(&c, reqs(), &[]).unwrap();
    let ttft: Vec<u64> = t.iter().map(|r| r.first_token_ns - r.arrival_ns).collect();
    assert_eq!(ttft, [57_000_000, 81_000_000, 5_700_000]);
    assert_eq!(t[1].arrival_ns, 1_000_000);
    assert_eq!(m.ttft_p99_s, Some(0.081));
    // Token ids (the default): no encode. A 50 ms, B waits for the GPU (50-75): 74 ms.
    let (_, t) = replay_timed(&cfg_fixed(), reqs(), &[]).unwrap();
    let ttft: Vec<u64> = t.iter().map(|r| r.first_token_ns - r.arrival_ns).collect();
    assert_eq!(ttft, [50_000_000, 74_000_000, 5_000_000]);
}

#[test]
fn tokenize_per_token_from_a_scenario_is_in_the_speeds_and_a_sweep_axis() {
    let (_d, sc, h, rows) = swept("    runtime.replay.tokenize_per_token: [0ns, 7us]\n");
    let col = |n: &str| column(&h, n);
    assert_eq!(rows.len(), 2);
    let sp = |i: usize| rows[i][col("speeds")].clone();
    assert!(!sp(0).contains("tokenize"), "{}", sp(0));
    assert!(
        sp(1).contains("; tokenize 7000 ns per prompt token;"),
        "{}",
        sp(1)
    );
    let ttft = |i: usize| rows[i][col("ttft_mean_s")].parse::<f64>().unwrap();
    assert!(ttft(1) > ttft(0) + 0.014, "{} vs {}", ttft(1), ttft(0));
    // The replay's JSON records it; a bad duration is a located exit 2.
    let o = Command::new(BIN)
        .arg("replay")
        .arg(&sc)
        .args(["--format", "json", "--config", "tokenize_per_token=7us"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["speeds"]["tokenize_per_token_ns"], 7000);
    let o = Command::new(BIN)
        .arg("replay")
        .arg(&sc)
        .args(["--config", "tokenize_per_token=7xs"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("runtime.replay.tokenize_per_token") && stderr(&o).contains("`7xs`"),
        "{}",
        stderr(&o)
    );
}

/// The prefill makes the first output token (SGLang's `process_batch_result_prefill`):
/// a one-token answer finishes with its prefill, on either decode timeline, and a
/// two-token answer one decode step (20 ms at 50 tok/s) later.
#[test]
fn the_prefill_makes_the_first_output_token() {
    use hicache_sim::runtime::{DecodeTimeline, replay_timed};
    use hicache_sim::workload::Request;
    let reqs = |out: u32| {
        vec![Request {
            id: 0,
            arrival_ns: 0,
            input_tokens: 1000,
            output_tokens: out,
            page_hashes: (1..=15).collect(),
        }]
    };
    let ms = 1_000_000;
    for timeline in [DecodeTimeline::BesidePrefill, DecodeTimeline::Interleaved] {
        let cfg = {
            let start = cfg_fixed();
            ReplayConfig {
                scheduler: Scheduler {
                    decode_timeline: timeline,
                    ..start.scheduler
                },
                ..start
            }
        };
        for (out, finish) in [(1, 50 * ms), (2, 70 * ms)] {
            let (m, t) = replay_timed(&cfg, reqs(out), &[]).unwrap();
            assert_eq!((t[0].first_token_ns, t[0].finish_ns), (50 * ms, finish));
            // TPOT: 20 ms over the one token after the first; none for one token.
            assert_eq!(m.tpot_mean_s, (out == 2).then_some(0.02), "{timeline:?}");
        }
    }
}
