//! A launch file (one pasted `python -m sglang.launch_server …` command with its machine
//! in `# hicache-sim:` comments) is a scenario for every command: `startup`, `plan`,
//! `check`; `sweep` refuses it saying to write YAML; a Dynamo worker is read; an unset
//! `$MODEL_PATH` takes `model=`; a file that is neither form names both.

use serde_json::Value;

use crate::support::{code, repo, run, stderr, stdout};

/// The 135 GB incident of `scenarios/gb300-glm52-135g.yaml` as a pasted command: the
/// same machine, cgroup, page cache and process memory, given by comments.
const RECIPE: &str = r#"#!/bin/bash
# hicache-sim: node=gb300 memory.cgroup.max=900GB memory.host_other_used=10GB
# hicache-sim: startup.weight_load.bytes_per_node=420GB startup.process_memory=15GB
python -m sglang.launch_server --model-path zai-org/GLM-5.2-NVFP4 --tp 4 \
  --kv-cache-dtype fp8_e4m3 --page-size 64 --mem-fraction-static 0.85 \
  --enable-hierarchical-cache --hicache-size 135 --hicache-write-policy write_through \
  --trust-remote-code
"#;

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// `startup FILE.sh` gives the YAML scenario's verdict and figures under 0.5.21: every
/// rank refused, 135.00 GB asked of a 102.32 GB budget (margin −32.69 GB).
#[test]
fn startup_reads_a_launch_file_like_the_yaml_scenario() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("glm.sh"), RECIPE).unwrap();
    let args = ["--sglang", "0.5.21", "--runs", "20", "--format", "json"];
    let sh = run(&[&["startup", "glm.sh"][..], &args].concat(), d.path());
    assert_eq!(code(&sh), 0, "{}", stderr(&sh));
    let yaml_path = repo("scenarios/gb300-glm52-135g.yaml");
    let y = run(
        &[&["startup", yaml_path.to_str().unwrap()][..], &args].concat(),
        d.path(),
    );
    assert_eq!(code(&y), 0, "{}", stderr(&y));
    let (s, y) = (json(&sh), json(&y));
    assert_eq!(s["scenario"], "glm");
    assert_eq!(s["refusal_probability"], 1.0);
    assert_eq!(s["refusal_probability"], y["refusal_probability"]);
    for k in [
        "outcome",
        "requested_bytes",
        "budget_bytes",
        "margin_bytes",
        "message",
    ] {
        assert_eq!(s["ranks"][0][k], y["ranks"][0][k], "{k}");
    }
    assert_eq!(s["ranks"][0]["margin_bytes"], -32686884352i64);
    // Text: the verdict and the refusal.
    let t = run(
        &["startup", "glm.sh", "--sglang", "0.5.21", "--runs", "5"],
        d.path(),
    );
    assert!(
        stdout(&t).contains("hicache-sim startup: glm"),
        "{}",
        stdout(&t)
    );
    assert!(
        stdout(&t).contains("Requesting 135.00 GB but only have 102.32 GB free"),
        "{}",
        stdout(&t)
    );
}

/// `plan FILE.sh` plans the launch file: under 0.5.21 the largest --hicache-size that
/// starts is 83 GB (the DSA indexer pool refuses 84).
#[test]
fn plan_reads_a_launch_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("glm.sh"), RECIPE).unwrap();
    let o = run(
        &["plan", "glm.sh", "--sglang", "0.5.21", "--runs", "50"],
        d.path(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Plan for glm: node gb300, model glm-5.2, TP4"),
        "{out}"
    );
    assert!(out.contains("--hicache-size 83 "), "{out}");
}

/// `sweep FILE.sh`: a launch file has no `sweep:` section; the refusal says to write YAML
/// and that the other commands read the file as it is (exit 2, nothing written).
#[test]
fn sweep_refuses_a_launch_file_saying_to_use_yaml() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("glm.sh"), RECIPE).unwrap();
    let o = run(&["sweep", "glm.sh", "--out", "o"], d.path());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("glm.sh: field `sweep`: a launch file has no `sweep:` section"),
        "{e}"
    );
    assert!(e.contains("write a YAML scenario"), "{e}");
    assert!(!d.path().join("o").exists());
}

/// A Dynamo worker's command: SGLang's flags go to SGLang's parser, Dynamo's own are
/// named as ignored (with their values), and the start-up verdict is printed.
#[test]
fn check_reads_a_dynamo_worker() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("dyn.sh"),
        "# hicache-sim: node=gb300\npython3 -m dynamo.sglang --model-path zai-org/GLM-5.2-NVFP4 --tp 4 \\\n  --endpoint dyn://dynamo.backend.generate --dyn-reasoning-parser glm45 \\\n  --enable-hierarchical-cache --hicache-size 100 --page-size 64 --migration-limit=3\n",
    )
    .unwrap();
    let o = run(
        &["check", "dyn.sh", "--runs", "5", "--format", "json"],
        d.path(),
    );
    // `--migration-limit` is no Dynamo 1.6.1 flag: SGLang's parser refuses it, line 4.
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v = json(&o);
    assert_eq!(v[0]["outcome"], "invalid_args");
    assert!(
        v[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("line 4: SGLang 0.5.23 has no flag --migration-limit"),
        "{v}"
    );
    std::fs::write(
        d.path().join("dyn.sh"),
        "# hicache-sim: node=gb300\npython3 -m dynamo.sglang --model-path zai-org/GLM-5.2-NVFP4 --tp 4 \\\n  --endpoint dyn://dynamo.backend.generate --dyn-reasoning-parser glm45 \\\n  --enable-hierarchical-cache --hicache-size 100 --page-size 64\n",
    )
    .unwrap();
    let o = run(
        &["check", "dyn.sh", "--runs", "5", "--format", "json"],
        d.path(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v[0]["outcome"], "started");
    assert_eq!(v[0]["status"], "ok");
    assert_eq!(v[0]["margin_bytes"].as_i64().map(|m| m > 0), Some(true));
    assert_eq!(
        v[0]["notes"][0],
        "Dynamo flags ignored (NVIDIA Dynamo's own, not passed to SGLang; ai-dynamo 1.6.1 `dynamo/sglang/args.py`): --endpoint dyn://dynamo.backend.generate, --dyn-reasoning-parser glm45"
    );
    let t = run(&["check", "dyn.sh", "--runs", "5"], d.path());
    assert!(
        stdout(&t).contains("note: Dynamo flags ignored"),
        "{}",
        stdout(&t)
    );
    // The older module names are the same worker.
    for m in ["dynamo.sglang.worker", "dynamo.sglang.decode_worker"] {
        let text = std::fs::read_to_string(d.path().join("dyn.sh"))
            .unwrap()
            .replace("dynamo.sglang ", &format!("{m} "));
        std::fs::write(d.path().join("old.sh"), text).unwrap();
        let o = run(
            &["check", "old.sh", "--runs", "5", "--format", "json"],
            d.path(),
        );
        assert_eq!(code(&o), 0, "{m}: {}", stderr(&o));
        assert_eq!(json(&o)[0]["outcome"], "started", "{m}");
    }
}

/// `--model-path $MODEL_PATH`, never set: `model=` in the comment names the model (the
/// error without it recommends `model=`, at the variable's line).
#[test]
fn unset_model_path_takes_the_comments_model() {
    let d = tempfile::tempdir().unwrap();
    let cmd = "python -m sglang.launch_server --model-path $MODEL_PATH --tp 4 \\\n  --enable-hierarchical-cache --hicache-size 100\n";
    std::fs::write(
        d.path().join("m.sh"),
        format!("# hicache-sim: node=gb300 model=glm-5.2\n{cmd}"),
    )
    .unwrap();
    let o = run(
        &["startup", "m.sh", "--runs", "5", "--format", "json"],
        d.path(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["start_probability"], 1.0);
    let notes = v["notes"].to_string();
    assert!(notes.contains("--model-path `$MODEL_PATH` is not set in the text: the model is the scenario's `model:`"), "{notes}");
    let c = run(
        &["check", "m.sh", "--runs", "5", "--format", "json"],
        d.path(),
    );
    assert_eq!(json(&c)[0]["outcome"], "started", "{}", stdout(&c));
    // Without model=: exit 2 at line 2, naming model=.
    std::fs::write(
        d.path().join("n.sh"),
        format!("# hicache-sim: node=gb300\n{cmd}"),
    )
    .unwrap();
    let o = run(&["startup", "n.sh", "--runs", "5"], d.path());
    assert_eq!(code(&o), 2);
    let e = stderr(&o);
    assert!(
        e.contains("n.sh:2:")
            && e.contains("`$MODEL_PATH` is not set")
            && e.contains("`model=` in a `# hicache-sim:` comment"),
        "{e}"
    );
}

/// A file that is neither a YAML mapping nor a launch command: both forms named, and
/// `check`'s doc pointed to, for every command.
#[test]
fn a_file_that_is_neither_names_both_forms() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("notes.txt"),
        "run the server with eight GPUs\n",
    )
    .unwrap();
    for cmd in ["startup", "plan", "check", "replay"] {
        let o = run(&[cmd, "notes.txt"], d.path());
        assert_eq!(code(&o), 2, "{cmd}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("notes.txt: neither a YAML mapping nor a launch command"),
            "{cmd}: {e}"
        );
        assert!(
            e.contains("server: {launch:") && e.contains("# hicache-sim: node=gb300"),
            "{cmd}: {e}"
        );
        assert!(e.contains("hicache-sim check --help"), "{cmd}: {e}");
    }
    // An error in a comment's field is at the comment's line of the launch file.
    std::fs::write(
        d.path().join("bad.sh"),
        RECIPE.replace("memory.cgroup.max=900GB", "memory.cgroup.max=900GBs"),
    )
    .unwrap();
    let o = run(&["startup", "bad.sh", "--runs", "5"], d.path());
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("bad.sh:2:"), "{}", stderr(&o));
}

/// A `# hicache-sim:` comment may not change what the file's own command runs: the 135 GB
/// recipe with `server.hicache_size=1` in a comment is an error at the comment's line
/// (check would otherwise pass a recipe SGLang refuses), as is a comment that replaces
/// the command; an equal value and a `--set` on the command line are fine.
#[test]
fn a_comment_contradicting_the_command_is_an_error_at_its_line() {
    let d = tempfile::tempdir().unwrap();
    let contradicting = RECIPE.replace(
        "# hicache-sim: node=gb300 ",
        "# hicache-sim: node=gb300 server.hicache_size=1 ",
    );
    std::fs::write(d.path().join("c.sh"), &contradicting).unwrap();
    let o = run(&["startup", "c.sh"], d.path());
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("c.sh:2: field `server.hicache_size`: `# hicache-sim: server.hicache_size=1` contradicts the command's --hicache-size 135"),
        "{e}"
    );
    let o = run(&["check", "c.sh"], d.path());
    assert_eq!(code(&o), 2, "check must not pass it: {}", stdout(&o));
    // The same value is no contradiction.
    std::fs::write(
        d.path().join("same.sh"),
        RECIPE.replace(
            "# hicache-sim: node=gb300 ",
            "# hicache-sim: node=gb300 server.hicache_size=135 ",
        ),
    )
    .unwrap();
    let o = run(&["startup", "same.sh"], d.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A comment replacing the command.
    std::fs::write(
        d.path().join("r.sh"),
        format!("# hicache-sim: server.launch=x\n{RECIPE}"),
    )
    .unwrap();
    let o = run(&["startup", "r.sh"], d.path());
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("r.sh:1: field `server.launch`: `# hicache-sim: server.launch=…` would replace the file's own command"),
        "{}",
        stderr(&o)
    );
}
