//! the binary trace form (`trace convert`, read by magic bytes by every
//! command, stale and foreign files refused) and a sweep's shared parse (the CSV is
//! byte-identical to parsing the trace at every point).

use std::path::Path;
use std::process::{Command, Output};

use crate::support::repo;

use super::support::BIN;
use super::support::{gb300_host, gb300_server};

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn convert(src: &Path, dst: &Path) {
    ok(&run(
        &[
            "trace",
            "convert",
            src.to_str().unwrap(),
            "-o",
            dst.to_str().unwrap(),
        ],
        &[],
    ));
}

/// The synthetic trace converted: replays (both engines) and stats print the same
/// numbers from either file (only the file name differs); the file has the size its
/// header promises: 56 + 3,993·(8+8+4+4) + 2·4 (each u32 column padded to 8) + 3,994·8 +
/// 121,877·8 bytes.
#[test]
fn binary_trace_replays_like_its_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let src = repo("traces/synthetic_trace.jsonl");
    // no telling extension: found by its magic bytes
    let bin = dir.path().join("synthetic.data");
    convert(&src, &bin);
    let len = std::fs::metadata(&bin).unwrap().len();
    assert_eq!(len, 56 + 3_993 * 24 + 8 + 3_994 * 8 + 121_877 * 8);
    for extra in [
        &[
            "--page-size",
            "512",
            "--l1-pages",
            "3000",
            "--l2-pages",
            "9000",
            "--timing",
            "off",
        ][..],
        &[
            "--page-size",
            "512",
            "--l1-pages",
            "3000",
            "--l2-pages",
            "9000",
            "--timing",
            "on",
        ][..],
        &[
            "--engine",
            "policy-simulator",
            "--l1-pages",
            "6000",
            "--l2-pages",
            "3000",
        ][..],
    ] {
        let a = src.to_str().unwrap();
        let b = bin.to_str().unwrap();
        let ja = ok(&run(
            &[&["replay", "--trace", a, "--format", "json"][..], extra].concat(),
            &[],
        ));
        let jb = ok(&run(
            &[&["replay", "--trace", b, "--format", "json"][..], extra].concat(),
            &[],
        ));
        assert!(ja.len() > 200, "{ja}");
        assert_eq!(ja.replace(a, "TRACE"), jb.replace(b, "TRACE"), "{extra:?}");
    }
    let sa = ok(&run(
        &[
            "trace",
            "stats",
            src.to_str().unwrap(),
            "--output-format",
            "json",
        ],
        &[],
    ));
    let sb = ok(&run(
        &[
            "trace",
            "stats",
            bin.to_str().unwrap(),
            "--output-format",
            "json",
        ],
        &[],
    ));
    assert_eq!(sa, sb);
    assert!(sa.contains("\"pages\": 117888"), "{sa}");
}

fn refused(file: &Path, needle: &str) {
    let o = run(
        &[
            "replay",
            "--trace",
            file.to_str().unwrap(),
            "--page-size",
            "512",
            "--l1-pages",
            "10",
            "--timing",
            "off",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "expected `{needle}` in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Another version, a truncated file, damaged offsets: exit 2 naming the problem.
#[test]
fn stale_and_damaged_binary_traces_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("t.bin");
    convert(&repo("traces/synthetic_trace.jsonl"), &bin);
    let good = std::fs::read(&bin).unwrap();

    let mut stale = good.clone();
    stale[8..12].copy_from_slice(&7u32.to_le_bytes());
    let p = dir.path().join("stale.bin");
    std::fs::write(&p, &stale).unwrap();
    refused(
        &p,
        "binary trace format version 7, this build reads version 2",
    );

    let p = dir.path().join("cut.bin");
    std::fs::write(&p, &good[..good.len() - 8]).unwrap();
    refused(&p, "truncated or not written by `trace convert`");

    let p = dir.path().join("short.bin");
    std::fs::write(&p, &good[..20]).unwrap();
    refused(&p, "header cut short");

    // the offsets column: after 56 + 3,993·24 + 8 bytes; offset[1] set beyond the ids
    let mut damaged = good.clone();
    let off1 = 56 + 3_993 * 24 + 8 + 8;
    assert_eq!(
        good[off1..off1 + 8],
        79u64.to_le_bytes(),
        "first request: 79 ids"
    );
    damaged[off1..off1 + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    let p = dir.path().join("damaged.bin");
    std::fs::write(&p, &damaged).unwrap();
    refused(&p, "damaged");

    // converting onto the input itself is refused, the input untouched
    let o = run(
        &[
            "trace",
            "convert",
            bin.to_str().unwrap(),
            "-o",
            bin.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&bin).unwrap(), good);
    // a bad row is refused at its line (a binary file holds only good records)
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}\n{\"timestamp\": 1, \"input_length\": 10}\n",
    )
    .unwrap();
    let o = run(
        &[
            "trace",
            "convert",
            bad.to_str().unwrap(),
            "-o",
            dir.path().join("x").to_str().unwrap(),
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.jsonl:2"), "{err}");
    assert!(!dir.path().join("x").exists());
}

/// A sweep of replays: the shared parse writes the same bytes as one parse per point
/// (`HICACHE_SIM_NO_TRACE_SHARING=1`), on 1 and 2 threads, from JSONL and from the
/// binary form.
#[test]
fn shared_parse_sweep_csv_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = repo("traces/synthetic_trace.jsonl");
    let bin = dir.path().join("synthetic.bin");
    convert(&jsonl, &bin);
    let mut csvs = Vec::new();
    for (k, (trace, env, jobs)) in [
        (&jsonl, &[("HICACHE_SIM_NO_TRACE_SHARING", "1")][..], "1"),
        (&jsonl, &[][..], "1"),
        (&jsonl, &[][..], "2"),
        (&bin, &[][..], "2"),
    ]
    .into_iter()
    .enumerate()
    {
        let scenario = dir.path().join(format!("s{k}.yaml"));
        std::fs::write(
            &scenario,
            format!(
                concat!(
                    "\
name: shared-parse
sglang: page-cache-credit
seed: 2
runs: 5
",
                    gb300_server!(),
                    "  hicache_write_policy: write_through\n",
                    gb300_host!(),
                    "  post_load: 5s\n",
                    "\
runtime:
  trace: {}
  trace_format: mooncake
  replay:
    timing: off
sweep:
  axes:
    server.hicache_host_memory_fraction: [0.6, 1.0]
    server.hicache_ratio: [null, 2.0]
"
                ),
                trace.display()
            ),
        )
        .unwrap();
        let out = dir.path().join(format!("out{k}"));
        ok(&run(
            &[
                "sweep",
                scenario.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--quiet",
                "--jobs",
                jobs,
            ],
            env,
        ));
        let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
        csvs.push(csv.replace(&trace.display().to_string(), "TRACE"));
    }
    assert!(csvs[0].lines().count() == 5, "{}", csvs[0]);
    assert!(csvs[0].contains("hit"), "{}", csvs[0]);
    for c in &csvs[1..] {
        assert_eq!(&csvs[0], c);
    }
}

/// Replay memoisation: a sweep whose points share resolved replays (three seeds of each
/// start-up; an explicit ratio turns the fraction off) writes the same bytes with the
/// memo as with one replay per point (`HICACHE_SIM_NO_REPLAY_MEMO=1`), on 1 and 2
/// threads, and replays each distinct (L1, L2) pool pair once.
#[test]
fn replay_memo_sweep_csv_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let trace = repo("traces/synthetic_trace.jsonl");
    let mut runs = Vec::new();
    for (k, (env, jobs)) in [
        (&[("HICACHE_SIM_NO_REPLAY_MEMO", "1")][..], "1"),
        (&[][..], "1"),
        (&[][..], "2"),
    ]
    .into_iter()
    .enumerate()
    {
        let scenario = dir.path().join(format!("m{k}.yaml"));
        std::fs::write(
            &scenario,
            format!(
                concat!(
                    "\
name: replay-memo
sglang: page-cache-credit
seed: 2
runs: 3
",
                    gb300_server!(),
                    "  hicache_write_policy: write_through\n",
                    gb300_host!(),
                    "  post_load: 5s\n",
                    "\
runtime:
  trace: {}
  trace_format: mooncake
  max_requests: 1500
  replay:
    timing: off
sweep:
  axes:
    server.hicache_host_memory_fraction: [0.6, 1.0]
    server.hicache_ratio: [null, 1.0, 2.0]
  seeds: 3
"
                ),
                trace.display()
            ),
        )
        .unwrap();
        let out = dir.path().join(format!("out{k}"));
        let o = run(
            &[
                "sweep",
                scenario.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--quiet",
                "--jobs",
                jobs,
            ],
            env,
        );
        ok(&o);
        let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
        runs.push((csv, String::from_utf8_lossy(&o.stderr).to_string()));
    }
    let (csv0, err0) = &runs[0];
    // 2 fractions × 3 ratios × 3 seeds = 18 points, a header line each plus one.
    assert_eq!(csv0.lines().count(), 19, "{csv0}");
    // Per point: no memo line.
    assert!(!err0.contains("distinct replays"), "{err0}");
    // The replaying rows (they carry l1/l2 pages) and their distinct pool pairs, read
    // from the per-point CSV: the memo must replay exactly that many times.
    let mut rdr = csv::Reader::from_reader(csv0.as_bytes());
    let h = rdr.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (l1, l2, hits) = (col("l1_pages"), col("l2_pages"), col("hit_rate_total"));
    let mut replaying = 0;
    let mut pairs = std::collections::BTreeSet::new();
    for r in rdr.records() {
        let r = r.unwrap();
        if !r[hits].is_empty() {
            replaying += 1;
            pairs.insert((r[l1].to_string(), r[l2].to_string()));
        }
    }
    // Seeds share a replay at least three ways; an explicit ratio shares across fractions.
    assert!(pairs.len() * 3 <= replaying, "{replaying} rows, {pairs:?}");
    for (csv, err) in &runs[1..] {
        assert_eq!(csv0, csv);
        assert!(
            err.contains(&format!(
                "{} distinct replays for {replaying} replaying points",
                pairs.len()
            )),
            "{err}"
        );
    }
}
