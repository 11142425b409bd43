//! Hostile input on the surfaces — `trace convert`, the binary trace, `plan`,
//! `check`, launch files — a test per case, through the real binary. Each asserts the
//! exit code and the words a user would see, and fails without its fix:
//! `HOSTILE_BIN=/path/to/older/hicache-sim cargo test --test it hostile` runs them against
//! another build (the one before these fixes fails every test).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::{SWEEP_SCENARIO, code, exit2, ok, repo, stderr, stdout, trace_workdir};

/// The binary under test: this build's, or `HOSTILE_BIN`.
fn bin() -> String {
    std::env::var("HOSTILE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_hicache-sim").into())
}

fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn run_env(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin());
    c.args(args).current_dir(dir).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// A temp folder with `trace.jsonl`: the first 300 requests of the bundled synthetic trace.
fn workdir() -> tempfile::TempDir {
    trace_workdir()
}

/// `trace convert IN -o LINK` writes the link's target (the link stays a link), and a
/// link to a device writes the device in place (its node stays a device).
#[test]
fn trace_convert_writes_through_links_and_in_place_on_devices() {
    use std::os::unix::fs::FileTypeExt;
    let d = workdir();
    let target = d.path().join("target.bin");
    std::fs::write(&target, "old").unwrap();
    std::os::unix::fs::symlink(&target, d.path().join("link.bin")).unwrap();
    ok(&run(
        &["trace", "convert", "trace.jsonl", "-o", "link.bin"],
        d.path(),
    ));
    let meta = std::fs::symlink_metadata(d.path().join("link.bin")).unwrap();
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    assert!(std::fs::read(&target).unwrap().starts_with(b"HCSIMTRC"));
    // a dangling link: its target is created, the link stays
    std::os::unix::fs::symlink(d.path().join("new.bin"), d.path().join("dangling.bin")).unwrap();
    ok(&run(
        &["trace", "convert", "trace.jsonl", "-o", "dangling.bin"],
        d.path(),
    ));
    assert!(
        std::fs::symlink_metadata(d.path().join("dangling.bin"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read(d.path().join("new.bin"))
            .unwrap()
            .starts_with(b"HCSIMTRC")
    );
    // a link to /dev/null: written in place, the device stays a device
    std::os::unix::fs::symlink("/dev/null", d.path().join("null.bin")).unwrap();
    ok(&run(
        &["trace", "convert", "trace.jsonl", "-o", "null.bin"],
        d.path(),
    ));
    assert!(
        std::fs::symlink_metadata(d.path().join("null.bin"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    // /dev/full: the write error, exit 3, naming the path; the node stays
    let o = run(
        &["trace", "convert", "trace.jsonl", "-o", "/dev/full"],
        d.path(),
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(stderr(&o).contains("/dev/full"), "{}", stderr(&o));
    assert!(
        std::fs::metadata("/dev/full")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    // the input through a link is refused
    std::os::unix::fs::symlink("trace.jsonl", d.path().join("alias.jsonl")).unwrap();
    exit2(
        &run(
            &["trace", "convert", "trace.jsonl", "-o", "alias.jsonl"],
            d.path(),
        ),
        &["input trace"],
    );
}

/// GB300, page-cache-credit, a 2 × 2 sweep over the trace beside it.
const SCENARIO: &str = SWEEP_SCENARIO;

/// `plan S --out D` refuses (exit 2, before anything is written) when its scenario or
/// its trace sits in D under a name the plan writes; both files stay as they were.
#[test]
fn plan_out_never_overwrites_its_scenario_or_trace() {
    let d = workdir();
    std::fs::create_dir(d.path().join("o")).unwrap();
    // the scenario itself as o/plan.json
    std::fs::write(
        d.path().join("o/plan.json"),
        SCENARIO.replace("trace: trace.jsonl", "trace: ../trace.jsonl"),
    )
    .unwrap();
    let before = std::fs::read(d.path().join("o/plan.json")).unwrap();
    let o = run(
        &[
            "plan",
            "o/plan.json",
            "--runs",
            "20",
            "--no-replay",
            "--out",
            "o",
        ],
        d.path(),
    );
    exit2(&o, &["plan.json", "scenario"]);
    assert_eq!(std::fs::read(d.path().join("o/plan.json")).unwrap(), before);
    assert!(!d.path().join("o/plan.txt").exists());
    // the trace as o/report.html (the scenario's own runtime.trace)
    std::fs::remove_file(d.path().join("o/plan.json")).unwrap();
    std::fs::copy(d.path().join("trace.jsonl"), d.path().join("o/report.html")).unwrap();
    let trace = std::fs::read(d.path().join("o/report.html")).unwrap();
    std::fs::write(
        d.path().join("s.yaml"),
        SCENARIO.replace("trace: trace.jsonl", "trace: o/report.html"),
    )
    .unwrap();
    let o = run(
        &[
            "plan",
            "s.yaml",
            "--sglang",
            "0.5.21",
            "--runs",
            "20",
            "--ladder-max",
            "20",
            "--out",
            "o",
        ],
        d.path(),
    );
    exit2(&o, &["report.html", "trace"]);
    assert_eq!(
        std::fs::read(d.path().join("o/report.html")).unwrap(),
        trace
    );
    // ... and as --trace
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    let o = run(
        &[
            "plan",
            "s.yaml",
            "--sglang",
            "0.5.21",
            "--runs",
            "20",
            "--ladder-max",
            "20",
            "--trace",
            "o/report.html",
            "--out",
            "o",
        ],
        d.path(),
    );
    exit2(&o, &["report.html", "trace"]);
    assert_eq!(
        std::fs::read(d.path().join("o/report.html")).unwrap(),
        trace
    );
}

/// Shard CSVs of two scenarios that differ in their release, gathered without their
/// journals: refused (exit 2) naming `sglang` and both values; two sweeps that differ in
/// something no column shows: refused by the shards' sweep fingerprint.
#[test]
fn merge_without_journals_refuses_shards_of_other_scenarios() {
    let d = workdir();
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    std::fs::write(
        d.path().join("b.yaml"),
        SCENARIO.replace("sglang: page-cache-credit", "sglang: 0.5.23"),
    )
    .unwrap();
    std::fs::write(
        d.path().join("c.yaml"),
        SCENARIO.replace("max: 900GB", "max: 880GB"),
    )
    .unwrap();
    for (s, out, k) in [
        ("s.yaml", "a", "1/2"),
        ("b.yaml", "b", "2/2"),
        ("c.yaml", "c", "2/2"),
        ("s.yaml", "s2", "2/2"),
    ] {
        ok(&run(
            &["sweep", s, "--out", out, "--quiet", "--shard", k],
            d.path(),
        ));
    }
    // gathered from the cluster: CSVs only
    std::fs::create_dir(d.path().join("g")).unwrap();
    for (from, to) in [
        ("a/results.shard-1-of-2.csv", "g/results.shard-1-of-2.csv"),
        ("b/results.shard-2-of-2.csv", "g/b.results.shard-2-of-2.csv"),
        ("c/results.shard-2-of-2.csv", "g/c.results.shard-2-of-2.csv"),
        (
            "s2/results.shard-2-of-2.csv",
            "g/s.results.shard-2-of-2.csv",
        ),
    ] {
        std::fs::copy(d.path().join(from), d.path().join(to)).unwrap();
    }
    let o = run(
        &[
            "merge",
            "g/results.shard-1-of-2.csv",
            "g/b.results.shard-2-of-2.csv",
            "-o",
            "m.csv",
        ],
        d.path(),
    );
    exit2(
        &o,
        &[
            "different scenarios",
            "`sglang`",
            "page-cache-credit",
            "0.5.23",
        ],
    );
    assert!(!d.path().join("m.csv").exists());
    let o = run(
        &[
            "merge",
            "g/results.shard-1-of-2.csv",
            "g/c.results.shard-2-of-2.csv",
            "-o",
            "m.csv",
        ],
        d.path(),
    );
    exit2(&o, &["different sweeps", "sweep_fingerprint", "journals"]);
    assert!(!d.path().join("m.csv").exists());
    // the true pair merges into exactly the unsharded file
    ok(&run(
        &[
            "merge",
            "g/results.shard-1-of-2.csv",
            "g/s.results.shard-2-of-2.csv",
            "-o",
            "m.csv",
        ],
        d.path(),
    ));
    ok(&run(
        &["sweep", "s.yaml", "--out", "whole", "--quiet"],
        d.path(),
    ));
    assert_eq!(
        std::fs::read(d.path().join("m.csv")).unwrap(),
        std::fs::read(d.path().join("whole/results.csv")).unwrap()
    );
}

/// The binary trace carries a CRC-32 of its bytes: a bit flipped anywhere (header,
/// arrivals, lengths, offsets, hash ids — the issue's zeroed ids among them), a cut
/// file or an older format version is refused with exit 2 naming the file, by
/// `replay` (the streaming reader), `sweep` (the shared parse) and `trace stats`.
#[test]
fn damaged_binary_traces_are_refused() {
    let d = workdir();
    ok(&run(
        &["trace", "convert", "trace.jsonl", "-o", "t.bin"],
        d.path(),
    ));
    let good = std::fs::read(d.path().join("t.bin")).unwrap();
    let replay = |dir: &Path| {
        run(
            &[
                "replay",
                "--trace",
                "t.bin",
                "--page-size",
                "512",
                "--l1-pages",
                "100",
                "--l2-pages",
                "100",
            ],
            dir,
        )
    };
    ok(&replay(d.path()));
    // bits spread over the file: the header's counts and block size, every column
    let n = good.len();
    let mut bits: Vec<usize> = vec![
        8 * 16,
        8 * 24 + 3,
        8 * 60 + 1,
        8 * (n / 3) + 5,
        8 * (n / 2),
        8 * n - 1,
    ];
    bits.extend((0..8).map(|i| 8 * (n - 8 * 300 + 17 * i) + i));
    for bit in bits {
        let mut b = good.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        std::fs::write(d.path().join("t.bin"), &b).unwrap();
        let o = replay(d.path());
        exit2(&o, &["t.bin"]);
        let o = run(&["trace", "stats", "t.bin"], d.path());
        exit2(&o, &["t.bin"]);
    }
    // the issue's case: every hash id zeroed (the last 8·m bytes)
    let mut b = good.clone();
    let m = u64::from_le_bytes(b[32..40].try_into().unwrap()) as usize;
    for x in &mut b[n - 8 * m..] {
        *x = 0;
    }
    std::fs::write(d.path().join("t.bin"), &b).unwrap();
    exit2(&replay(d.path()), &["t.bin", "checksum", "trace convert"]);
    // cut short
    std::fs::write(d.path().join("t.bin"), &good[..n - 8]).unwrap();
    exit2(&replay(d.path()), &["t.bin", "truncated"]);
    // a version-1 file (no checksum): refused, saying how to re-create it
    let mut b = good.clone();
    b[8..12].copy_from_slice(&1u32.to_le_bytes());
    std::fs::write(d.path().join("t.bin"), &b).unwrap();
    exit2(&replay(d.path()), &["t.bin", "version 1", "trace convert"]);
    // a sweep's shared parse refuses it too, naming the file
    std::fs::write(d.path().join("t.bin"), {
        let mut b = good.clone();
        b[n / 2] ^= 4;
        b
    })
    .unwrap();
    std::fs::write(
        d.path().join("s.yaml"),
        SCENARIO.replace("trace: trace.jsonl", "trace: t.bin"),
    )
    .unwrap();
    let o = run(&["sweep", "s.yaml", "--out", "o", "--quiet"], d.path());
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("t.bin") && stderr(&o).contains("checksum"),
        "{}",
        stderr(&o)
    );
}

/// `HICACHE_SIM_MAX_LINE_BYTES` is a byte count from 1 to 1 TiB: anything else is exit 2
/// naming the variable (2^64 − 1 used to wrap the cap to 0 and read every trace as
/// empty, exit 0).
#[test]
fn max_line_bytes_is_validated() {
    let d = workdir();
    for v in [
        "18446744073709551615",
        "abc",
        "-1",
        "",
        "0",
        "1099511627777",
    ] {
        for args in [
            vec!["trace", "stats", "trace.jsonl"],
            vec!["trace", "convert", "trace.jsonl", "-o", "t.bin"],
            vec!["replay", "--trace", "trace.jsonl", "--l1-pages", "10"],
        ] {
            let o = run_env(&args, d.path(), &[("HICACHE_SIM_MAX_LINE_BYTES", v)]);
            exit2(&o, &["HICACHE_SIM_MAX_LINE_BYTES"]);
            assert!(!d.path().join("t.bin").exists());
        }
    }
    // a real cap still works: 300 requests at the default and at 1 MiB
    let o = run_env(
        &["trace", "stats", "trace.jsonl"],
        d.path(),
        &[("HICACHE_SIM_MAX_LINE_BYTES", "1048576")],
    );
    ok(&o);
    assert!(stdout(&o).contains("300"), "{}", stdout(&o));
}

/// `check --sglang X` and `plan --sglang X` with X not a release nor a what-if: exit 2,
/// the nearest id and the list of known releases (was: every row `skipped`, exit 0, a CI
/// gate passing).
#[test]
fn unknown_releases_are_refused_with_the_list() {
    let d = workdir();
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    for v in ["0.5.24", "bogus", "", "0.5.21,0.5.24"] {
        for fmt in ["text", "junit"] {
            let o = run(
                &[
                    "check", "s.yaml", "--sglang", v, "--runs", "5", "--format", fmt,
                ],
                d.path(),
            );
            exit2(
                &o,
                &[
                    "--sglang",
                    "unknown SGLang version",
                    "0.5.14",
                    "0.5.23",
                    "latest",
                ],
            );
            assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        }
    }
    let o = run(
        &["check", "s.yaml", "--sglang", "0.5.24", "--runs", "5"],
        d.path(),
    );
    exit2(&o, &["did you mean `0.5.23`"]);
    let o = run(
        &["check", "s.yaml", "--sglang", "O.5.21", "--runs", "5"],
        d.path(),
    );
    exit2(&o, &["did you mean `0.5.21`"]);
    let o = run(
        &[
            "plan",
            "s.yaml",
            "--sglang",
            "bogus",
            "--runs",
            "5",
            "--no-replay",
        ],
        d.path(),
    );
    exit2(&o, &["--sglang bogus", "unknown SGLang version", "0.5.23"]);
    assert!(!stdout(&o).contains("Recommendation"), "{}", stdout(&o));
}

/// `# hicache-sim:` comments: a word without `=`, a value with spaces unquoted, a key
/// set twice: errors naming the file and line (were dropped or overridden silently); a
/// quoted value with spaces is one value.
#[test]
fn directive_comments_are_strict() {
    let d = workdir();
    let cmd = "python -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 --page-size 64 --enable-hierarchical-cache --hicache-size 135\n";
    let cases = [
        (
            "# hicache-sim: node=gb300 memory.cgroup.max 900GB\n",
            1,
            "`memory.cgroup.max` is not KEY=VALUE",
        ),
        (
            "#!/bin/bash\n# hicache-sim: node=gb300 name=a b c\n",
            2,
            "`b` is not KEY=VALUE",
        ),
        (
            "# hicache-sim: node=gb300\n# hicache-sim: memory.cgroup.max=900GB\n# hicache-sim: node=hgx-b200\n",
            3,
            "`node` is set twice",
        ),
        ("# hicache-sim: node=gb300 name=\"a b\n", 1, "not closed"),
    ];
    for (head, line, words) in cases {
        std::fs::write(d.path().join("r.sh"), format!("{head}{cmd}")).unwrap();
        let o = run(&["check", "r.sh", "--runs", "5"], d.path());
        exit2(&o, &[&format!("r.sh:{line}:"), words]);
    }
    std::fs::write(
        d.path().join("r.sh"),
        format!(
            "# hicache-sim: node=gb300 name=\"a b c\" memory.cgroup.max=900GB # the tray\n{cmd}"
        ),
    )
    .unwrap();
    let o = run(
        &[
            "check", "r.sh", "--runs", "5", "--sglang", "0.5.21", "--format", "json",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Not enough host memory"),
        "{}",
        stdout(&o)
    );
}

/// `startup --sglang all --fail-on-refusal`: a scenario invalid under its own release
/// (a cgroup tree deeper than 8 levels) is exit 2 as without `all`; a release that
/// rejects the scenario (an `invalid_args` row) fails the gate (exit 1); without
/// `--fail-on-refusal` the table is exit 0.
#[test]
fn startup_all_fails_the_gate_on_rows_it_could_not_check() {
    let d = workdir();
    let below: String = (0..9)
        .map(|i| format!("      - {{name: l{i}}}\n"))
        .collect();
    std::fs::write(
        d.path().join("deep.yaml"),
        SCENARIO.replace(
            "    max: 900GB\n",
            &format!("    max: 900GB\n    below:\n{below}"),
        ),
    )
    .unwrap();
    let o = run(
        &[
            "startup",
            "deep.yaml",
            "--sglang",
            "all",
            "--fail-on-refusal",
            "--runs",
            "5",
        ],
        d.path(),
    );
    exit2(&o, &["deep.yaml", "deeper than 8"]);
    let o = run(&["startup", "deep.yaml", "--runs", "5"], d.path());
    exit2(&o, &["deep.yaml", "deeper than 8"]);
    // --hicache-host-memory-fraction exists from 0.5.21: older releases reject it
    std::fs::write(
        d.path().join("f.yaml"),
        SCENARIO
            .replace("sglang: page-cache-credit", "sglang: 0.5.23")
            .replace(
                "  hicache_write_policy: write_through\n",
                "  hicache_write_policy: write_through\n  hicache_host_memory_fraction: 0.5\n",
            ),
    )
    .unwrap();
    let o = run(
        &["startup", "f.yaml", "--sglang", "all", "--runs", "5"],
        d.path(),
    );
    ok(&o);
    assert!(stdout(&o).contains("invalid_args"), "{}", stdout(&o));
    let o = run(
        &[
            "startup",
            "f.yaml",
            "--sglang",
            "all",
            "--runs",
            "5",
            "--fail-on-refusal",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".hicache-sim."))
        .collect();
    v.sort();
    v
}

/// `plan` and `sweep` own their `--out`: what an earlier run wrote there (its manifest,
/// `.hicache-sim.outputs`) is removed before the next one writes, so no result sits
/// beside another run's; a file the user put there, a file changed since, and the
/// run's inputs are never removed; `sweep --resume` keeps its journal's rows.
#[test]
fn plan_and_sweep_own_their_out_folder() {
    let d = workdir();
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    std::fs::create_dir(d.path().join("o")).unwrap();
    std::fs::write(d.path().join("o/notes.txt"), "mine").unwrap();
    // a sweep over fraction × ratio: its CSV, journal and three plots
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let first = files_in(&d.path().join("o"));
    assert!(
        first.contains(&"hit_rate_vs_hicache_host_memory_fraction.png".to_string()),
        "{first:?}"
    );
    assert!(first.contains(&"outcome_map.svg".to_string()), "{first:?}");
    // a second sweep over another axis: the first's figures go
    std::fs::write(
        d.path().join("t.yaml"),
        SCENARIO.replace(
            "    server.hicache_host_memory_fraction: [0.5, 1.0]\n    server.hicache_ratio: [null, 2.0]\n",
            "    server.hicache_size: [40, 60]\n",
        ),
    )
    .unwrap();
    let o = run(&["sweep", "t.yaml", "--out", "o"], d.path());
    ok(&o);
    assert!(stderr(&o).contains("removed"), "{}", stderr(&o));
    let second = files_in(&d.path().join("o"));
    assert!(
        !second
            .iter()
            .any(|f| f.contains("fraction") || f.starts_with("outcome_map")),
        "{second:?}"
    );
    assert!(
        second.contains(&"hit_rate_vs_hicache_size.png".to_string()),
        "{second:?}"
    );
    assert!(second.contains(&"notes.txt".to_string()), "{second:?}");
    // a plan into the same folder: the sweep's files go, the plan's come
    ok(&run(
        &[
            "plan",
            "s.yaml",
            "--sglang",
            "0.5.21",
            "--runs",
            "20",
            "--ladder-max",
            "20",
            "--out",
            "o",
        ],
        d.path(),
    ));
    let third = files_in(&d.path().join("o"));
    assert_eq!(
        third,
        [
            "hit_rate_vs_host_pool.png",
            "hit_rate_vs_host_pool.svg",
            "notes.txt",
            "plan.json",
            "plan.txt",
            "report.html"
        ],
    );
    // a plan without a ladder: the figure of the last one does not stay beside it
    ok(&run(
        &[
            "plan",
            "s.yaml",
            "--sglang",
            "0.5.21",
            "--runs",
            "20",
            "--no-replay",
            "--out",
            "o",
        ],
        d.path(),
    ));
    assert_eq!(
        files_in(&d.path().join("o")),
        ["notes.txt", "plan.json", "plan.txt", "report.html"]
    );
    // a file the user changed since is theirs now; an input in the folder is never removed
    std::fs::write(d.path().join("o/plan.txt"), "edited by hand").unwrap();
    std::fs::copy(d.path().join("s.yaml"), d.path().join("o/input.yaml")).unwrap();
    let o = run(
        &[
            "sweep",
            "o/input.yaml",
            "--out",
            "o",
            "--quiet",
            "--set",
            "runtime.trace=../trace.jsonl",
        ],
        d.path(),
    );
    ok(&o);
    let fourth = files_in(&d.path().join("o"));
    assert!(
        fourth.contains(&"plan.txt".to_string()) && fourth.contains(&"input.yaml".to_string()),
        "{fourth:?}"
    );
    assert!(!fourth.contains(&"plan.json".to_string()), "{fourth:?}");
    assert_eq!(
        std::fs::read_to_string(d.path().join("o/plan.txt")).unwrap(),
        "edited by hand"
    );
    // --resume keeps the journal's rows (the same sweep), and the results equal a fresh run's
    let csv = std::fs::read(d.path().join("o/results.csv")).unwrap();
    let o = run(
        &[
            "sweep",
            "o/input.yaml",
            "--out",
            "o",
            "--resume",
            "--set",
            "runtime.trace=../trace.jsonl",
        ],
        d.path(),
    );
    ok(&o);
    assert!(stderr(&o).contains("4 resumed"), "{}", stderr(&o));
    assert_eq!(std::fs::read(d.path().join("o/results.csv")).unwrap(), csv);
}

/// Default plots (a sweep CSV without `--y`) from a hit-rate column holding NaN, `abc`
/// or nothing where a started point should have a value: exit 2 naming the column and
/// row, no figure drawn.
#[test]
fn default_plots_refuse_bad_hit_rate_columns() {
    let d = workdir();
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let csv = std::fs::read_to_string(d.path().join("o/results.csv")).unwrap();
    // the first started row
    let row = (0..)
        .find(|&i| {
            crate::support::csv_row(&csv, i)
                .iter()
                .any(|(c, v)| c == "outcome" && v == "started")
        })
        .unwrap();
    for bad in ["NaN", "abc", ""] {
        std::fs::create_dir_all(d.path().join("p")).unwrap();
        std::fs::write(
            d.path().join("p/r.csv"),
            crate::support::set_csv_cell(&csv, row, "hit_rate_total", bad),
        )
        .unwrap();
        let o = run(&["plot", "p/r.csv"], d.path());
        exit2(
            &o,
            &["p/r.csv", "`hit_rate_total`", &format!("row {}", row + 2)],
        );
        assert!(
            !d.path()
                .join("p/hit_rate_vs_hicache_host_memory_fraction.png")
                .exists()
        );
    }
}

// ---- Crashes, hangs, half-written files ----

/// Runs the binary under a 2 GiB address-space limit (as the fuzz test does), with
/// `SIGXFSZ` ignored and files capped at `fsize_blocks` × 512 bytes when given: a write
/// past the cap fails with EFBIG, as a full disk fails it.
fn run_limited(args: &[&str], dir: &Path, fsize_blocks: Option<u64>) -> Output {
    let fsize = fsize_blocks.map_or(String::new(), |b| format!("ulimit -f {b}; "));
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -v {}; {fsize}exec \"$0\" \"$@\"",
            2u64 << 20
        ))
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A variable that doubles itself 40 times in a launch file is refused at its line
/// (16 MiB of expanded text at most) instead of growing to 3 GB and aborting.
#[test]
fn launch_file_expansion_is_bounded() {
    let d = workdir();
    let mut text = String::from("# hicache-sim: node=gb300\nA=x\n");
    for _ in 0..40 {
        text.push_str("A=$A$A\n");
    }
    text.push_str("python -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 --served-model-name $A\n");
    std::fs::write(d.path().join("r.sh"), &text).unwrap();
    let o = run_limited(&["check", "r.sh", "--runs", "5"], d.path(), None);
    // the budget counts every expansion: 1 + 2 + 4 + … + 2^k = 2^(k+1) − 1 bytes after
    // k doublings passes 2^24 (16 MiB) at k = 24, the doubling on line 2 + 24 = 26
    exit2(&o, &["r.sh:26:", "16 MiB", "A=$A$A"]);
    assert!(
        !stderr(&o).contains("of the launch block"),
        "{}",
        stderr(&o)
    );
    // the same in a scenario's launch block
    let yaml = format!(
        "node: gb300\nserver:\n  launch: |\n{}",
        text.lines()
            .skip(1)
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    );
    std::fs::write(d.path().join("s.yaml"), yaml).unwrap();
    let o = run_limited(&["startup", "s.yaml", "--runs", "5"], d.path(), None);
    exit2(&o, &["s.yaml:", "16 MiB"]);
}

/// A sparse binary trace whose one record declares 4·10^8 hash ids (3.2 GB of zeros,
/// the length matching the header) is refused before anything is allocated or read in
/// bulk: exit 2 under a 2 GiB address-space limit (it aborted at 3.2 GB).
#[test]
fn huge_declared_lengths_are_refused_before_allocating() {
    let d = workdir();
    ok(&run(
        &["trace", "convert", "trace.jsonl", "-o", "t.bin"],
        d.path(),
    ));
    let good = std::fs::read(d.path().join("t.bin")).unwrap();
    // header of one record with m ids: 56 + 8 + 8 + 8 + 8 + 16 + 8·m bytes
    let m: u64 = 400_000_000;
    let mut head = good[..56].to_vec();
    head[24..32].copy_from_slice(&1u64.to_le_bytes());
    head[32..40].copy_from_slice(&m.to_le_bytes());
    let len = 56 + 8 + 8 + 8 + 8 + 16 + 8 * m;
    let f = std::fs::File::create(d.path().join("huge.bin")).unwrap();
    use std::io::Write;
    (&f).write_all(&head).unwrap();
    f.set_len(len).unwrap(); // sparse: no disk used
    drop(f);
    // a crafted file (the issue's): its own columns written, the ids a hole. Its offsets
    // say 0 .. 4e8, so only the content (the CRC) tells it is not a trace.
    let crafted = d.path().join("crafted.bin");
    std::fs::copy(d.path().join("huge.bin"), &crafted).unwrap();
    {
        use std::io::{Seek, SeekFrom};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&crafted)
            .unwrap();
        // arrival 0, line 1, input_length 2^31 (room for the ids at 64 tokens), output 1
        f.seek(SeekFrom::Start(56 + 8)).unwrap();
        f.write_all(&1u64.to_le_bytes()).unwrap();
        f.write_all(&(1u32 << 31).to_le_bytes()).unwrap();
        f.seek(SeekFrom::Start(56 + 24)).unwrap();
        f.write_all(&1u32.to_le_bytes()).unwrap();
        // offsets 0 and m
        f.seek(SeekFrom::Start(56 + 32 + 8)).unwrap();
        f.write_all(&m.to_le_bytes()).unwrap();
    }
    for args in [
        vec![
            "replay",
            "--trace",
            "crafted.bin",
            "--l1-pages",
            "10",
            "--block-size",
            "64",
        ],
        vec!["trace", "stats", "crafted.bin"],
    ] {
        // refused by its checksum (one pass over the 3.2 GB, nothing allocated for it);
        // it allocated 3.2 GB and aborted (exit 134) under this limit
        let o = run_limited(&args, d.path(), None);
        exit2(&o, &["crafted.bin", "checksum"]);
    }
    for args in [
        vec![
            "replay",
            "--trace",
            "huge.bin",
            "--l1-pages",
            "10",
            "--l2-pages",
            "10",
        ],
        vec!["trace", "stats", "huge.bin"],
    ] {
        let o = run_limited(&args, d.path(), None);
        // its last offset (0, a hole) is not the 4e8 ids declared: refused before the CRC
        // pass would read 3.2 GB of zeros
        exit2(&o, &["huge.bin", "damaged"]);
    }
}

/// A sweep whose trace is `/dev/zero` is refused at once, naming the scenario's
/// `runtime.trace` line (the fingerprint hashed it forever); a FIFO is refused before
/// it is opened.
#[test]
fn sweep_refuses_a_trace_that_is_not_a_file() {
    let d = workdir();
    std::fs::write(
        d.path().join("s.yaml"),
        SCENARIO.replace("trace: trace.jsonl", "trace: /dev/zero"),
    )
    .unwrap();
    let line = SCENARIO
        .lines()
        .position(|l| l.contains("trace: trace.jsonl"))
        .unwrap()
        + 1;
    let o = run(&["sweep", "s.yaml", "--out", "o", "--quiet"], d.path());
    exit2(
        &o,
        &[
            &format!("s.yaml:{line}:"),
            "runtime.trace",
            "/dev/zero",
            "not a regular file",
        ],
    );
    let fifo = d.path().join("fifo.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(
        d.path().join("s.yaml"),
        SCENARIO.replace("trace: trace.jsonl", "trace: fifo.jsonl"),
    )
    .unwrap();
    let o = run(&["sweep", "s.yaml", "--out", "o", "--quiet"], d.path());
    exit2(&o, &["runtime.trace", "fifo.jsonl", "not a regular file"]);
}

/// A disk that fills while `sweep`, `plan --out` or `plot` write (files capped with
/// `ulimit -f`): exit 3 naming the file, and every figure and CSV under its final name is
/// whole — the previous one, or none — never a truncated one; no temporary file stays.
#[test]
fn a_full_disk_never_leaves_a_truncated_file() {
    let d = workdir();
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let before: Vec<(String, Vec<u8>)> = files_in(&d.path().join("o"))
        .into_iter()
        .map(|f| {
            (
                f.clone(),
                std::fs::read(d.path().join("o").join(&f)).unwrap(),
            )
        })
        .collect();
    let png = before.iter().find(|(f, _)| f.ends_with(".png")).unwrap();
    assert!(
        png.1.len() > 40 * 1024,
        "{} is {} bytes",
        png.0,
        png.1.len()
    );
    // 40 KiB per file: the CSV fits, the PNGs do not
    let o = run_limited(&["plot", "o/results.csv"], d.path(), Some(80));
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(stderr(&o).contains(".png"), "{}", stderr(&o));
    for (f, bytes) in &before {
        assert_eq!(
            &std::fs::read(d.path().join("o").join(f)).unwrap(),
            bytes,
            "{f} changed"
        );
    }
    let o = run_limited(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
        Some(80),
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    for f in files_in(&d.path().join("o")) {
        let b = std::fs::read(d.path().join("o").join(&f)).unwrap();
        if f.ends_with(".png") {
            assert!(b.ends_with(b"IEND\xaeB`\x82"), "{f}: a truncated PNG");
        }
        assert!(!f.contains(".tmp."), "{f} left behind");
    }
    let o = run_limited(
        &[
            "plan",
            "s.yaml",
            "--sglang",
            "0.5.21",
            "--runs",
            "20",
            "--ladder-max",
            "20",
            "--out",
            "p",
        ],
        d.path(),
        Some(80),
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    for f in files_in(&d.path().join("p")) {
        let b = std::fs::read(d.path().join("p").join(&f)).unwrap();
        if f.ends_with(".png") {
            assert!(b.ends_with(b"IEND\xaeB`\x82"), "{f}: a truncated PNG");
        }
        assert!(!f.contains(".tmp."), "{f} left behind");
    }
}

// ---- Messages ----

/// `runtime.*` mistakes are named at the scenario's line and field, by `replay`, `sweep`
/// and `plan` alike, before any trace is read (they named the trace's file and line, or
/// failed point by point in a sweep).
#[test]
fn runtime_errors_name_the_scenario_field() {
    let d = workdir();
    let line_of = |text: &str, key: &str| {
        text.lines()
            .position(|l| l.trim_start().starts_with(key))
            .unwrap()
            + 1
    };
    let cases = [
        (
            "  trace_format: mooncake\n",
            "  trace_format: mooncake\n  block_size: 0\n",
            "block_size:",
            "runtime.block_size",
        ),
        (
            "  trace_format: mooncake\n",
            "  trace_format: mooncak\n",
            "trace_format:",
            "runtime.trace_format",
        ),
        (
            "  trace_format: mooncake\n",
            "  trace_format: mooncake\n  max_requests: 0\n",
            "max_requests:",
            "runtime.max_requests",
        ),
        (
            "    timing: off\n",
            "    timing: sideways\n",
            "timing:",
            "runtime.replay.timing",
        ),
    ];
    for (from, to, key, field) in cases {
        let text = SCENARIO.replace(from, to);
        std::fs::write(d.path().join("s.yaml"), &text).unwrap();
        let at = format!("s.yaml:{}: field `{field}`", line_of(&text, key));
        for args in [
            vec!["replay", "s.yaml"],
            vec!["sweep", "s.yaml", "--out", "o", "--quiet"],
            vec!["plan", "s.yaml", "--runs", "20", "--ladder-max", "20"],
        ] {
            exit2(&run(&args, d.path()), &[&at]);
        }
    }
}

/// `plan --trace F` detects F's format and block size (the scenario's `trace_format` and
/// `block_size` are its own trace's): a kv-cache-tester JSON and a CSV trace plan.
#[test]
fn plan_trace_is_read_in_its_own_format() {
    let d = workdir();
    std::fs::write(
        d.path().join("s.yaml"),
        SCENARIO.replace(
            "  trace_format: mooncake\n",
            "  trace_format: mooncake\n  block_size: 512\n",
        ),
    )
    .unwrap();
    std::fs::copy(
        repo("traces/kv-cache-tester/trace_0012.json"),
        d.path().join("kv.json"),
    )
    .unwrap();
    // the same requests as CSV
    let mut csv = String::from("timestamp_ms,input_length,output_length,hash_ids\n");
    for l in std::fs::read_to_string(d.path().join("trace.jsonl"))
        .unwrap()
        .lines()
        .take(50)
    {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let ids: Vec<String> = v["hash_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.to_string())
            .collect();
        csv.push_str(&format!(
            "{},{},{},{}\n",
            v["timestamp"],
            v["input_length"],
            v["output_length"],
            ids.join(";")
        ));
    }
    std::fs::write(d.path().join("t.csv"), csv).unwrap();
    for t in ["kv.json", "t.csv"] {
        let o = run(
            &[
                "plan",
                "s.yaml",
                "--sglang",
                "0.5.21",
                "--runs",
                "20",
                "--ladder-max",
                "20",
                "--trace",
                t,
            ],
            d.path(),
        );
        ok(&o);
        assert!(
            stdout(&o).contains("Hit rate by host pool size"),
            "{}",
            stdout(&o)
        );
    }
}

/// `plan` on a host larger than any `--hicache-size` a scenario may give plans up to that
/// largest size instead of failing on `server.hicache_size`, a field the scenario does not set.
#[test]
fn plan_on_a_huge_host_stays_within_the_flag_range() {
    let d = workdir();
    std::fs::write(
        d.path().join("s.yaml"),
        SCENARIO
            .replace("node: gb300", "node: {preset: gb300, host_dram: 100000TB}")
            .replace("    max: 900GB", "    max: 100000TB"),
    )
    .unwrap();
    let o = run(&["plan", "s.yaml", "--runs", "20", "--no-replay"], d.path());
    ok(&o);
    assert!(
        stdout(&o).contains("--hicache-size 999999"),
        "{}",
        stdout(&o)
    );
}

/// `sweep <(…)` and `plan <(…)`: the scenario is read once (a pipe cannot be read twice; it
/// said "must be a YAML mapping").
#[test]
fn scenarios_from_a_pipe_are_read_once() {
    let d = workdir();
    std::fs::write(
        d.path().join("s.yaml"),
        SCENARIO.replace(
            "trace: trace.jsonl",
            &format!("trace: {}", d.path().join("trace.jsonl").display()),
        ),
    )
    .unwrap();
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("\"{}\" sweep <(cat s.yaml) --out o --quiet && \"{}\" plan <(cat s.yaml) --runs 20 --no-replay --sglang 0.5.21,0.5.23", bin(), bin()))
        .current_dir(d.path())
        .output()
        .unwrap();
    ok(&o);
    assert!(d.path().join("o/results.csv").exists());
    assert!(stdout(&o).contains("SGLang 0.5.23"), "{}", stdout(&o));
}

/// `check`: an error about a field a `# hicache-sim:` comment sets names the file and the
/// comment's line; one about `--node` names `--node` (both said `--set node=…`); a NUL
/// byte in a launch file is named at its line (it said "invalid YAML: line 6").
#[test]
fn check_names_comment_lines_the_node_flag_and_control_bytes() {
    let d = workdir();
    let cmd = "python -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4\n";
    std::fs::write(
        d.path().join("r.sh"),
        format!("#!/bin/bash\n# hicache-sim: node=floppy\n{cmd}"),
    )
    .unwrap();
    exit2(
        &run(&["check", "r.sh", "--runs", "5"], d.path()),
        &["r.sh:2:", "node", "floppy"],
    );
    std::fs::write(
        d.path().join("r.sh"),
        format!("# hicache-sim: node=gb300 memory.cgroup.max=lots\n{cmd}"),
    )
    .unwrap();
    exit2(
        &run(&["check", "r.sh", "--runs", "5"], d.path()),
        &["r.sh:1:", "memory.cgroup.max"],
    );
    std::fs::write(d.path().join("r.sh"), cmd).unwrap();
    let o = run(
        &["check", "r.sh", "--runs", "5", "--node", "floppy"],
        d.path(),
    );
    exit2(&o, &["--node floppy"]);
    assert!(!stderr(&o).contains("--set"), "{}", stderr(&o));
    std::fs::write(
        d.path().join("r.sh"),
        format!("# hicache-sim: node=gb300\n--tp 4 \0\n{cmd}"),
    )
    .unwrap();
    let o = run(&["check", "r.sh", "--runs", "5"], d.path());
    exit2(&o, &["r.sh:2:", "NUL"]);
    assert!(!stderr(&o).contains("YAML"), "{}", stderr(&o));
}

/// `--help` into a full stdout is exit 3 naming the stream (it was 0); `--out ''` is
/// exit 2 (it wrote into the working directory); a long `plan` says so before it starts.
#[test]
fn help_to_a_full_disk_empty_out_and_long_plans() {
    let d = workdir();
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    for args in [vec!["--help"], vec!["plan", "--help"], vec!["--version"]] {
        let o = Command::new(bin())
            .args(&args)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        assert_eq!(code(&o), 3, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("<stdout>"), "{}", stderr(&o));
    }
    ok(&run(&["--help"], d.path()));
    exit2(
        &run(
            &["plan", "s.yaml", "--runs", "5", "--no-replay", "--out", ""],
            d.path(),
        ),
        &["--out", "empty"],
    );
    exit2(
        &run(&["sweep", "s.yaml", "--quiet", "--out", ""], d.path()),
        &["--out", "empty"],
    );
    assert_eq!(files_in(d.path()), ["s.yaml", "trace.jsonl"]);
    // the announcement comes before any work (here the run stops at a bad --target-start)
    let o = run(
        &[
            "plan",
            "s.yaml",
            "--runs",
            "1000000000",
            "--target-start",
            "2",
        ],
        d.path(),
    );
    exit2(&o, &["--target-start"]);
    assert!(
        stderr(&o).contains("1000000000 start-up runs per probe")
            && stderr(&o).contains("takes a while"),
        "{}",
        stderr(&o)
    );
}

// ---- Tried as a new user would ----

/// The bundled generated traces say their own block size (every line starts with
/// `"block_size": 64`): `replay --trace` and `trace stats` read them at 64 without
/// `--block-size`; an explicit other block size is refused at line 1 naming the field.
#[test]
fn generated_traces_say_their_block_size() {
    let d = workdir();
    for t in [
        "traces/generated_chat_agentic_mix.jsonl",
        "traces/generated_agentic_bursty.jsonl",
    ] {
        let p = repo(t);
        let p = p.to_str().unwrap();
        let o = run(
            &[
                "replay",
                "--trace",
                p,
                "--l1-pages",
                "500",
                "--l2-pages",
                "500",
            ],
            d.path(),
        );
        ok(&o);
        assert!(stdout(&o).contains("page 64 tokens"), "{}", stdout(&o));
        let o = run(&["trace", "stats", p], d.path());
        ok(&o);
        assert!(
            stdout(&o).contains("(mooncake, 64-token pages)"),
            "{}",
            stdout(&o)
        );
        exit2(
            &run(&["replay", "--trace", p, "--block-size", "512"], d.path()),
            &[&format!("{p}:1:"), "`block_size`", "64-token blocks"],
        );
        ok(&run(
            &[
                "replay",
                "--trace",
                p,
                "--block-size",
                "64",
                "--l1-pages",
                "500",
            ],
            d.path(),
        ));
    }
    // trace gen writes it, and the file reads back at its own block size
    ok(&run(
        &[
            "trace",
            "gen",
            "--config",
            repo("traces/recipes/agentic_bursty.json").to_str().unwrap(),
            "--requests",
            "20",
            "-o",
            "g.jsonl",
        ],
        d.path(),
    ));
    assert!(
        std::fs::read_to_string(d.path().join("g.jsonl"))
            .unwrap()
            .starts_with("{\"block_size\": 64, \"timestamp\": ")
    );
    ok(&run(
        &["replay", "--trace", "g.jsonl", "--l1-pages", "50"],
        d.path(),
    ));
}

/// `plan`: a release that fails the recommended size *below* its own frontier (0.5.14's
/// host pool must be larger than the device pool, 2,669,056 tokens = 119.92 GB of KV:
/// GLM-5.2's index-K on all 78 layers) says which sizes hold there instead of "largest
/// 170"; the fraction table and the auto-size note label the KV pool and all host pools
/// (97.20 GB of pools is a 79.08 GB KV pool on 0.5.21, whose indexer is 10,296 B/token
/// with HiCache on).
#[test]
fn plan_words_floors_and_pool_labels() {
    let d = workdir();
    let o = run(
        &[
            "plan",
            repo("scenarios/quickstart.yaml").to_str().unwrap(),
            "--sglang",
            "page-cache-credit,0.5.14,0.5.21",
            "--runs",
            "100",
            "--no-replay",
        ],
        d.path(),
    );
    ok(&o);
    let t = stdout(&o);
    assert!(
        t.contains("breaks on: 0.5.14 (too small there: only --hicache-size 120 to 170 starts)"),
        "{t}"
    );
    assert!(
        t.contains("fraction      KV pool    all pools  P(start)  outcome"),
        "{t}"
    );
    // 0.5.21 at fraction 1.0: 79.08 GB KV of 97.20 GB in both pools (DSA indexer)
    assert!(t.contains("1.0     79.08 GB     97.20 GB"), "{t}");
    assert!(
        t.contains("GB KV host pool per rank (") && t.contains("GB in all host pools)"),
        "{t}"
    );
}

/// `hicache_host_memory_fraction: null` (or `--set …=null`) is unset: a release without
/// the flag starts the scenario (it was refused as if the flag were given).
#[test]
fn null_fraction_is_unset() {
    let d = workdir();
    std::fs::write(
        d.path().join("s.yaml"),
        SCENARIO
            .replace("sglang: page-cache-credit", "sglang: 0.5.20")
            .replace(
                "  hicache_write_policy: write_through\n",
                "  hicache_write_policy: write_through\n  hicache_host_memory_fraction: null\n",
            ),
    )
    .unwrap();
    ok(&run(&["startup", "s.yaml", "--runs", "5"], d.path()));
    std::fs::write(
        d.path().join("t.yaml"),
        SCENARIO.replace("sglang: page-cache-credit", "sglang: 0.5.20"),
    )
    .unwrap();
    ok(&run(
        &[
            "startup",
            "t.yaml",
            "--runs",
            "5",
            "--set",
            "server.hicache_host_memory_fraction=null",
        ],
        d.path(),
    ));
    exit2(
        &run(
            &[
                "startup",
                "t.yaml",
                "--runs",
                "5",
                "--set",
                "server.hicache_host_memory_fraction=0.5",
            ],
            d.path(),
        ),
        &["has no --hicache-host-memory-fraction"],
    );
}

/// The HTML report's figure scales to the window (its SVG has a viewBox; the page caps it
/// at the column width): a 1500-pixel figure no longer overflows a 1400-pixel window.
#[test]
fn html_report_figure_fits_the_window() {
    let d = workdir();
    std::fs::write(d.path().join("s.yaml"), SCENARIO).unwrap();
    ok(&run(
        &[
            "plan",
            "s.yaml",
            "--sglang",
            "0.5.21",
            "--runs",
            "20",
            "--ladder-max",
            "20",
            "--out",
            "o",
        ],
        d.path(),
    ));
    let html = std::fs::read_to_string(d.path().join("o/report.html")).unwrap();
    assert!(
        html.contains(".fig svg{max-width:100%;height:auto}"),
        "{}",
        &html[..600]
    );
    assert!(html.contains("<div class=\"fig\">"));
    assert!(html.contains("viewBox=\"0 0 1500 650\""));
}

// ---- check never aborts a batch ----

/// One row per file × release whatever happens: a command SGLang's parser refuses is an
/// `invalid_args` row (a JUnit failure carrying SGLang's message), an unknown or
/// placeholder model (`your-model`, `[model_path]`, an unset `$MODEL_PATH`) or a file
/// without a machine is an `error` row naming the file, line and model path and how to
/// describe the model (a JUnit error); the good files' rows are all there. Exit 2 when
/// any file could not be checked, else 1 when any check failed.
#[test]
fn check_never_aborts_a_batch() {
    let d = workdir();
    let recipe = |model: &str, extra: &str| {
        format!(
            "#!/bin/bash\n# hicache-sim: node=gb300 memory.cgroup.max=900GB memory.host_other_used=10GB\n# hicache-sim: startup.weight_load.bytes_per_node=420GB startup.process_memory=15GB\n{extra}python -m sglang.launch_server --model-path {model} --tp 4 \\\n  --kv-cache-dtype fp8_e4m3 --page-size 64 --mem-fraction-static 0.85 \\\n  --enable-hierarchical-cache --hicache-size 135 --hicache-write-policy write_through\n"
        )
    };
    let files = [
        ("good.sh", recipe("zai-org/GLM-5.2-NVFP4", "")),
        (
            "badflag.sh",
            recipe("zai-org/GLM-5.2-NVFP4", "").replace("--hicache-size 135", "--hicache-size abc"),
        ),
        ("yours.sh", recipe("your-model", "")),
        ("bracket.sh", recipe("[model_path]", "")),
        ("unset.sh", recipe("$MODEL_PATH", "")),
        (
            "nonode.sh",
            recipe("zai-org/GLM-5.2-NVFP4", "").replace("node=gb300 ", ""),
        ),
    ];
    for (n, t) in &files {
        std::fs::write(d.path().join(n), t).unwrap();
    }
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    let mut args = vec!["check"];
    args.extend(&names);
    args.extend([
        "--sglang",
        "0.5.18,0.5.21",
        "--runs",
        "20",
        "--format",
        "json",
    ]);
    let o = run(&args, d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 12, "{v:#}");
    let row = |f: &str, r: &str| {
        rows.iter()
            .find(|x| x["file"] == f && x["sglang"] == r)
            .unwrap_or_else(|| panic!("no row {f} {r}"))
    };
    assert_eq!(row("good.sh", "0.5.18")["outcome"], "started");
    assert_eq!(row("good.sh", "0.5.21")["outcome"], "refused");
    for r in ["0.5.18", "0.5.21"] {
        let b = row("badflag.sh", r);
        assert_eq!(b["outcome"], "invalid_args");
        assert!(
            b["message"]
                .as_str()
                .unwrap()
                .contains("invalid int value: 'abc'"),
            "{b}"
        );
        for (f, path) in [("yours.sh", "your-model"), ("bracket.sh", "[model_path]")] {
            let m = row(f, r);
            assert_eq!(m["outcome"], "error");
            let msg = m["message"].as_str().unwrap();
            assert!(
                msg.contains(&format!("{f}:4:"))
                    && msg.contains(&format!("`{path}` is a placeholder")),
                "{msg}"
            );
            assert!(
                msg.contains("model=") && msg.contains("hicache-sim presets"),
                "{msg}"
            );
        }
        let u = row("unset.sh", r)["message"].as_str().unwrap().to_string();
        assert!(
            u.contains("unset.sh:4:")
                && u.contains("the model path `$MODEL_PATH` is not set")
                && u.contains("model="),
            "{u}"
        );
        assert_eq!(row("nonode.sh", r)["outcome"], "error");
    }
    assert!(stderr(&o).contains("error: yours.sh:4:"), "{}", stderr(&o));
    // JUnit: failures for SGLang's refusals, errors for what could not be checked
    let mut args = vec!["check"];
    args.extend(&names);
    args.extend([
        "--sglang",
        "0.5.18,0.5.21",
        "--runs",
        "20",
        "--format",
        "junit",
    ]);
    let o = run(&args, d.path());
    assert_eq!(code(&o), 2);
    let xml = stdout(&o);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.attribute("tests"), Some("12"));
    assert_eq!(root.attribute("failures"), Some("3")); // good 0.5.21, badflag × 2
    assert_eq!(root.attribute("errors"), Some("8"));
    // without the files that cannot be checked: exit 1, the refusals as failures
    let o = run(
        &[
            "check",
            "good.sh",
            "badflag.sh",
            "--sglang",
            "0.5.18",
            "--runs",
            "20",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("invalid_args") && stdout(&o).contains("good.sh"),
        "{}",
        stdout(&o)
    );
}

/// Launch files as bash and SGLang read them: a CRLF file keeps the CR in the
/// last word of each line, so a `\` continuation does not continue and SGLang refuses the
/// stray `\r` (an invalid_args row saying so), and a CR after a choice is not the choice;
/// a CRLF YAML scenario's launch block is YAML's (line breaks normalized) and starts;
/// `$((…))` is bash arithmetic; `--max-total-tokens 1.5M` is SGLang's human-readable int
/// (`human_readable_int`); `python -m dynamo.sglang` is read (its Dynamo flags named), not "no command".
#[test]
fn launch_files_read_as_bash_and_sglang_do() {
    let d = workdir();
    let w = |n: &str, t: &str| std::fs::write(d.path().join(n), t).unwrap();
    w(
        "crlf.sh",
        "# hicache-sim: node=gb300\r\npython -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 \\\r\n  --page-size 64 --enable-hierarchical-cache --hicache-size 100\r\n",
    );
    w(
        "one.sh",
        "# hicache-sim: node=gb300\r\npython -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 --enable-hierarchical-cache --hicache-write-policy write_back\r\n",
    );
    let o = run(
        &[
            "check", "crlf.sh", "one.sh", "--runs", "5", "--format", "json",
        ],
        d.path(),
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["outcome"], "invalid_args");
    let m0 = v[0]["message"].as_str().unwrap();
    assert!(
        m0.starts_with("line 2: SGLang 0.5.23 refuses this command: unrecognized arguments: \\r")
            && m0.contains("CRLF"),
        "{m0}"
    );
    let m1 = v[1]["message"].as_str().unwrap();
    assert!(m1.contains("invalid choice: 'write_back\\r'"), "{m1}");
    // the same recipe in a YAML scenario saved with CRLF: YAML's line breaks, it starts
    w(
        "s.yaml",
        "node: gb300\r\nserver:\r\n  launch: |\r\n    GPUS=$(( (1 + 1) * 2 ))\r\n    python -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp $GPUS \\\r\n      --page-size 64 --max-total-tokens 1.5M --enable-hierarchical-cache --hicache-size 100\r\n",
    );
    let o = run(
        &["startup", "s.yaml", "--runs", "5", "--format", "json"],
        d.path(),
    );
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["server"]["tp_size"], 4);
    assert_eq!(v["server"]["max_total_tokens"], 1_500_000);
    // arithmetic errors are bash's, at the line
    w(
        "div.sh",
        "# hicache-sim: node=gb300\nN=0\npython -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp $((4 / N))\n",
    );
    let o = run(&["check", "div.sh", "--runs", "5"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("div.sh:3:") && stderr(&o).contains("division by 0"),
        "{}",
        stderr(&o)
    );
    // an IEC size with decimals: SGLang's own message
    w(
        "iec.sh",
        "# hicache-sim: node=gb300\npython -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 --max-total-tokens 1.5Mi\n",
    );
    let o = run(&["check", "iec.sh", "--runs", "5"], d.path());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "argument --max-total-tokens: Decimals are not allowed with IEC suffixes like 'Mi'"
        ),
        "{}",
        stdout(&o)
    );
    w(
        "dyn.sh",
        "# hicache-sim: node=gb300\npython3 -m dynamo.sglang --model-path zai-org/GLM-5.2-NVFP4 --tp 4 --endpoint dyn://a.b.c\n",
    );
    // Read: Dynamo's own flags dropped and named, the rest SGLang's.
    let o = run(&["check", "dyn.sh", "--runs", "5"], d.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Dynamo flags ignored")
            && stdout(&o).contains("--endpoint dyn://a.b.c"),
        "{}",
        stdout(&o)
    );
}

/// A FIFO given as any input — a scenario, a `check` file, a model's `config.json`, a
/// trace to `trace stats`, `replay --trace` (both engines) and `plan --trace`, a
/// generator config — is refused before it is opened (it waited forever for a writer):
/// exit 2 naming the file and saying it is a FIFO.
#[test]
fn fifos_are_refused_by_every_reader() {
    let d = workdir();
    let at = |n: &str| d.path().join(n);
    for n in ["s.yaml", "cfg.json", "t.jsonl", "gen.yaml"] {
        crate::support::fifo(&at(n));
    }
    let fifo = ["a FIFO", "not a regular file"];
    let o = run(&["startup", "s.yaml"], d.path());
    exit2(&o, &["s.yaml: cannot read the scenario", fifo[0], fifo[1]]);
    let o = run(&["check", "s.yaml"], d.path());
    exit2(&o, &["s.yaml: cannot read", fifo[0]]);
    let o = run(&["sweep", "s.yaml", "--out", "o", "--quiet"], d.path());
    exit2(&o, &["s.yaml", fifo[0]]);

    std::fs::write(
        at("m.yaml"),
        "node: hgx-h200\nmodel: {config: cfg.json}\nserver:\n  tp_size: 1\n",
    )
    .unwrap();
    let o = run(&["startup", "m.yaml"], d.path());
    exit2(&o, &["cfg.json", fifo[0]]);

    let o = run(&["trace", "stats", "t.jsonl"], d.path());
    exit2(&o, &["t.jsonl", fifo[0]]);
    let o = run(&["replay", "--trace", "t.jsonl"], d.path());
    exit2(&o, &["t.jsonl", fifo[0]]);
    let o = run(
        &[
            "replay",
            "--trace",
            "t.jsonl",
            "--engine",
            "policy-simulator",
        ],
        d.path(),
    );
    exit2(&o, &["t.jsonl", fifo[0]]);
    let o = run(&["trace", "convert", "t.jsonl", "-o", "t.bin"], d.path());
    exit2(&o, &["t.jsonl", fifo[0]]);
    std::fs::write(at("p.yaml"), SCENARIO).unwrap();
    let o = run(
        &["plan", "p.yaml", "--trace", "t.jsonl", "--runs", "20"],
        d.path(),
    );
    exit2(&o, &["--trace", "t.jsonl", fifo[0]]);

    let o = run(
        &["trace", "gen", "--config", "gen.yaml", "-o", "g.jsonl"],
        d.path(),
    );
    exit2(&o, &["gen.yaml: cannot read", fifo[0]]);
    assert!(!at("g.jsonl").exists());
}

/// Devices and folders are refused the same way, and a document past its cap (64 MiB; a
/// sparse file here) before a byte of it is read.
#[test]
fn devices_folders_and_huge_documents_are_refused() {
    let d = workdir();
    let o = run(&["startup", "/dev/zero"], d.path());
    exit2(&o, &["/dev/zero", "a character device, not a regular file"]);
    let o = run(&["trace", "stats", "/dev/zero"], d.path());
    exit2(&o, &["/dev/zero", "a character device"]);
    std::fs::create_dir(d.path().join("dir.yaml")).unwrap();
    let o = run(&["check", "dir.yaml"], d.path());
    exit2(&o, &["dir.yaml", "a folder, not a regular file"]);
    let big = std::fs::File::create(d.path().join("big.yaml")).unwrap();
    big.set_len(65 << 20).unwrap();
    let o = run(&["startup", "big.yaml"], d.path());
    exit2(&o, &["big.yaml", "larger than the 64 MiB"]);
}

/// A binary trace is checked against its CRC-32 in the pass that reads it, and damage is
/// named as damage wherever the replay stops: a flipped bit that makes the first record
/// ask for 2^31 tokens is refused as a checksum mismatch (not as that record's too few
/// hash ids), and a flip in the last hash id is refused by a replay that stops after 5
/// requests (`runtime.max_requests`), before any figure is printed.
#[test]
fn a_damaged_binary_trace_is_named_damaged_wherever_the_replay_stops() {
    let d = trace_workdir();
    ok(&run(
        &["trace", "convert", "trace.jsonl", "-o", "t.bin"],
        d.path(),
    ));
    let good = std::fs::read(d.path().join("t.bin")).unwrap();
    let n = u64::from_le_bytes(good[24..32].try_into().unwrap()) as usize;
    assert_eq!(n, 300);
    // the first record's input_length: after the header (56 B) and two u64 columns
    let input0 = 56 + 16 * n;
    let mut b = good.clone();
    b[input0 + 3] ^= 0x80;
    std::fs::write(d.path().join("t.bin"), &b).unwrap();
    let o = run(
        &["replay", "--trace", "t.bin", "--l1-pages", "64"],
        d.path(),
    );
    exit2(&o, &["t.bin", "does not match its checksum", "damaged"]);
    assert!(!stderr(&o).contains("hash_ids"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());

    let mut b = good.clone();
    let last = b.len() - 1;
    b[last] ^= 1;
    std::fs::write(d.path().join("t.bin"), &b).unwrap();
    std::fs::write(
        d.path().join("s.yaml"),
        "name: t\nnode: gb300\nmodel: glm-5.2\nruntime:\n  trace: t.bin\n  max_requests: 5\n",
    )
    .unwrap();
    let o = run(&["replay", "s.yaml"], d.path());
    exit2(&o, &["t.bin", "does not match its checksum"]);
    assert!(!stdout(&o).contains("hit_rate"), "{}", stdout(&o));
    // the sound file replays
    std::fs::write(d.path().join("t.bin"), &good).unwrap();
    ok(&run(&["replay", "s.yaml"], d.path()));
}
