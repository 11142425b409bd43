//! What a sweep's result depends on is in its fingerprint, and every finished row carries
//! a checksum: `--resume` and `merge` refuse to join rows computed from different inputs
//! (a model's `config.json` edited between two runs) or rows edited by hand (a journal
//! entry, a shard CSV cell), with exit 2 naming the file.

use crate::support::{SWEEP_SCENARIO, exit2, ok, run, trace_workdir};
use hicache_sim::model::catalogue::catalogue;

/// `SWEEP_SCENARIO` with its model read from `cfg/config.json` (Qwen3-8B's).
fn config_workdir() -> tempfile::TempDir {
    let d = trace_workdir();
    let cfg = &catalogue()
        .iter()
        .find(|e| e.hf_id == "Qwen/Qwen3-8B")
        .unwrap()
        .config;
    std::fs::create_dir(d.path().join("cfg")).unwrap();
    std::fs::write(d.path().join("cfg/config.json"), cfg.to_string()).unwrap();
    std::fs::write(
        d.path().join("s.yaml"),
        SWEEP_SCENARIO.replace("model: glm-5.2", "model: {config: cfg/config.json}"),
    )
    .unwrap();
    d
}

fn edit_config(d: &std::path::Path) {
    let p = d.join("cfg/config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["num_key_value_heads"] = serde_json::json!(4);
    std::fs::write(&p, v.to_string()).unwrap();
}

/// A `config.json` edited between two runs: `--resume` refused naming the file's
/// content; shards of the two runs refused by `merge`, with their journals (naming the
/// file) and without (their sweep fingerprints differ).
#[test]
fn an_edited_model_config_is_not_joined() {
    let d = config_workdir();
    ok(&run(
        &["sweep", "s.yaml", "--out", "a", "--quiet", "--shard", "1/2"],
        d.path(),
    ));
    ok(&run(
        &["sweep", "s.yaml", "--out", "full", "--quiet"],
        d.path(),
    ));
    edit_config(d.path());
    let o = run(
        &["sweep", "s.yaml", "--out", "full", "--quiet", "--resume"],
        d.path(),
    );
    exit2(
        &o,
        &["--resume refused", "model file content", "cfg/config.json"],
    );
    ok(&run(
        &["sweep", "s.yaml", "--out", "b", "--quiet", "--shard", "2/2"],
        d.path(),
    ));
    let o = run(
        &[
            "merge",
            "a/results.shard-1-of-2.csv",
            "b/results.shard-2-of-2.csv",
            "-o",
            "m.csv",
        ],
        d.path(),
    );
    exit2(&o, &["different sweeps", "model file content"]);
    std::fs::create_dir(d.path().join("g")).unwrap();
    for (from, to) in [
        ("a/results.shard-1-of-2.csv", "g/results.shard-1-of-2.csv"),
        ("b/results.shard-2-of-2.csv", "g/b.results.shard-2-of-2.csv"),
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
    exit2(&o, &["different sweeps", "sweep_fingerprint"]);
    assert!(!d.path().join("m.csv").exists());
}

/// A journal entry whose cell was changed by hand: `--resume` refuses it at its line.
#[test]
fn a_tampered_journal_row_is_refused_on_resume() {
    let d = trace_workdir();
    std::fs::write(d.path().join("s.yaml"), SWEEP_SCENARIO).unwrap();
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let j = d.path().join("o/results.journal.jsonl");
    let text = std::fs::read_to_string(&j).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut e: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    let row = e["row"].as_array_mut().unwrap();
    // the last non-empty cell before `error`, whatever it is: a figure of the point
    let i = row.len() - 2;
    row[i] = serde_json::json!(format!("{}9", row[i].as_str().unwrap()));
    lines[2] = e.to_string();
    std::fs::write(&j, lines.join("\n") + "\n").unwrap();
    let o = run(
        &["sweep", "s.yaml", "--out", "o", "--quiet", "--resume"],
        d.path(),
    );
    exit2(&o, &["results.journal.jsonl:3", "checksum", "edited"]);
}

/// A shard CSV cell edited by hand: `merge` refuses it at its line (without the journal
/// by the row's checksum, with it by the journal's row); a shard of an older build
/// (no `row_checksum` column) is refused as unverifiable.
#[test]
fn an_edited_shard_row_is_refused_by_merge() {
    let d = trace_workdir();
    std::fs::write(d.path().join("s.yaml"), SWEEP_SCENARIO).unwrap();
    for k in ["1/2", "2/2"] {
        ok(&run(
            &["sweep", "s.yaml", "--out", "o", "--quiet", "--shard", k],
            d.path(),
        ));
    }
    let shard = d.path().join("o/results.shard-2-of-2.csv");
    let text = std::fs::read_to_string(&shard).unwrap();
    let cells = crate::support::csv_row(&text, 0);
    let names: Vec<&str> = cells.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        &names[names.len() - 2..],
        ["sweep_fingerprint", "row_checksum"]
    );
    let edited = crate::support::set_csv_cell(&text, 0, "margin_bytes", "999999999999");
    let args = [
        "merge",
        "o/results.shard-1-of-2.csv",
        "o/results.shard-2-of-2.csv",
        "-o",
        "m.csv",
    ];
    std::fs::write(&shard, &edited).unwrap();
    exit2(
        &run(&args, d.path()),
        &["results.shard-2-of-2.csv:2", "row_checksum", "edited"],
    );
    // with the checksum recomputed as the sweep computes it, the journal beside the
    // shard still holds the true row
    let row: Vec<String> = crate::support::csv_row(&edited, 0)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let n = row.len();
    let sum = hicache_sim::sweep::journal::row_checksum(&row[n - 2], &row[..n - 2]);
    std::fs::write(
        &shard,
        crate::support::set_csv_cell(&edited, 0, "row_checksum", &sum),
    )
    .unwrap();
    exit2(
        &run(&args, d.path()),
        &[
            "results.shard-2-of-2.csv",
            "point",
            "not the one its journal",
            "edited",
        ],
    );
    // the pristine shard merges
    std::fs::write(&shard, &text).unwrap();
    ok(&run(&args, d.path()));
    // an older build's shard: sweep_fingerprint but no row_checksum
    let mut r = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
    let h: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    w.write_record(&h[..h.len() - 1]).unwrap();
    for rec in r.records() {
        let rec: Vec<String> = rec.unwrap().iter().map(str::to_string).collect();
        w.write_record(&rec[..rec.len() - 1]).unwrap();
    }
    std::fs::write(&shard, w.into_inner().unwrap()).unwrap();
    exit2(
        &run(&args, d.path()),
        &["older hicache-sim", "row_checksum"],
    );
}

/// `-o /dev/stdout` into a pipe (`trace convert … -o /dev/stdout | …`): the magic link
/// is opened as the kernel resolves it and the bytes reach the pipe (it was exit 3 "No
/// such file or directory": `pipe:[N]` followed as a path).
#[test]
fn dev_stdout_into_a_pipe_is_written() {
    let d = trace_workdir();
    let o = run(
        &["trace", "convert", "trace.jsonl", "-o", "/dev/stdout"],
        d.path(),
    );
    ok(&o);
    assert!(
        o.stdout.starts_with(b"HCSIMTRC"),
        "{:?}",
        &o.stdout[..o.stdout.len().min(16)]
    );
    let o = run(
        &["trace", "gen", "--requests", "5", "-o", "/dev/stdout"],
        d.path(),
    );
    ok(&o);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 5);
}

/// The journal `o/results.journal.jsonl` rewritten as an earlier build would have written
/// it: without the scenario key `drop_key` and the column `binding_pool`, keeping only its
/// first `keep` rows, each re-summed under the header's fingerprint. The kept points.
fn as_earlier_build(j: &std::path::Path, drop_key: &str, keep: usize) -> Vec<usize> {
    use hicache_sim::sweep::journal::row_checksum;
    let text = std::fs::read_to_string(j).unwrap();
    let mut lines = text.lines();
    let mut h: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let fp = h["fingerprint"].as_str().unwrap().to_string();
    let cols = h["columns"].as_array_mut().unwrap();
    let bp = cols.iter().position(|c| c == "binding_pool").unwrap();
    cols.remove(bp);
    assert!(
        h["scenario"]
            .as_object_mut()
            .unwrap()
            .remove(drop_key)
            .is_some()
    );
    let mut out = vec![h.to_string()];
    let mut kept = Vec::new();
    for l in lines.take(keep) {
        let mut e: serde_json::Value = serde_json::from_str(l).unwrap();
        kept.push(e["point"].as_u64().unwrap() as usize);
        let row = e["row"].as_array_mut().unwrap();
        row.remove(bp);
        let cells: Vec<String> = row
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        e["sum"] = serde_json::json!(row_checksum(&fp, &cells));
        out.push(e.to_string());
    }
    std::fs::write(j, out.join("\n") + "\n").unwrap();
    kept
}

/// A journal of an earlier build that lacked a key this build added at its default and
/// the `binding_pool` column: `--resume` takes its rows (saying so, and that the added
/// column is empty in them), computes the rest, and upgrades the journal so that the
/// next `--resume` takes it as this build's own. Every other cell is the full run's.
/// A key missing at a value other than its default is still refused, naming it.
#[test]
fn an_earlier_builds_journal_with_only_added_defaults_resumes() {
    let d = trace_workdir();
    std::fs::write(d.path().join("s.yaml"), SWEEP_SCENARIO).unwrap();
    ok(&run(
        &["sweep", "s.yaml", "--out", "full", "--quiet"],
        d.path(),
    ));
    ok(&run(
        &["sweep", "s.yaml", "--out", "o", "--quiet"],
        d.path(),
    ));
    let j = d.path().join("o/results.journal.jsonl");
    let h: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&j).unwrap().lines().next().unwrap()).unwrap();
    let defaults = hicache_sim::scenario::load::flattened_defaults();
    let scen = h["scenario"].as_object().unwrap();
    let defaulted = scen
        .iter()
        .find(|(k, v)| defaults.get(*k) == v.as_str().map(str::to_string).as_ref())
        .map(|(k, _)| k.clone())
        .expect("a key at its default");
    let changed = scen
        .iter()
        .find(|(k, v)| {
            defaults.contains_key(*k) && defaults.get(*k) != v.as_str().map(str::to_string).as_ref()
        })
        .map(|(k, _)| k.clone())
        .expect("a key set away from its default");
    let kept = as_earlier_build(&j, &defaulted, 2);
    let o = run(
        &["sweep", "s.yaml", "--out", "o", "--quiet", "--resume"],
        d.path(),
    );
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("resumed a journal written by an earlier build")
            && err.contains(&defaulted)
            && err.contains("binding_pool are empty in its 2 row(s)"),
        "{err}"
    );
    let read = |p: &str| -> Vec<Vec<String>> {
        let mut r = csv::Reader::from_path(d.path().join(p)).unwrap();
        r.records()
            .map(|x| x.unwrap().iter().map(str::to_string).collect())
            .collect()
    };
    let full = read("full/results.csv");
    let resumed = read("o/results.csv");
    let hdr = csv::Reader::from_path(d.path().join("full/results.csv"))
        .unwrap()
        .headers()
        .unwrap()
        .clone();
    let bp = hdr.iter().position(|c| c == "binding_pool").unwrap();
    assert_eq!(full.len(), 4);
    for (i, (f, r)) in full.iter().zip(&resumed).enumerate() {
        for (c, (a, b)) in f.iter().zip(r).enumerate() {
            if c == bp && kept.contains(&i) {
                assert_eq!(b, "", "row {i}: the added column is empty in a resumed row");
                assert!(!a.is_empty());
            } else {
                assert_eq!(a, b, "row {i} column {}", &hdr[c]);
            }
        }
    }
    // upgraded: the next --resume is this build's own journal (no note, nothing computed)
    let o = run(&["sweep", "s.yaml", "--out", "o", "--resume"], d.path());
    ok(&o);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("earlier build"));
    assert_eq!(read("o/results.csv"), resumed);

    // a key missing from the journal whose value here is not its default: refused
    ok(&run(
        &["sweep", "s.yaml", "--out", "p", "--quiet"],
        d.path(),
    ));
    as_earlier_build(&d.path().join("p/results.journal.jsonl"), &changed, 2);
    let o = run(
        &["sweep", "s.yaml", "--out", "p", "--quiet", "--resume"],
        d.path(),
    );
    exit2(&o, &["--resume refused", &changed, "(unset)"]);
}
