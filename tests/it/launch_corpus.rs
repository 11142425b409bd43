//! The launch-command corpus (`tests/launch_corpus/*.sh`, real commands from SGLang's docs,
//! benchmark scripts, storage-backend READMEs and issues, each citing its source) against
//! the verdicts real bash + SGLang's real parser gave (`verdicts.json`, `variants.json`,
//! written by `python3 tools/flags/launch_verdicts.py corpus|variants`).

use std::collections::BTreeMap;

use hicache_sim::scenario::launch::read_text;
use hicache_sim::scenario::shell::Src;
use serde_json::Value;

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/launch_corpus")
}

fn load(name: &str) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(dir().join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Where the simulator and the truth differ (None = they agree).
fn disagreement(text: &str, v: &Value) -> Option<String> {
    let release = v["release"].as_str().unwrap();
    let release = release
        .parse::<hicache_sim::release::Sglang>()
        .unwrap()
        .release();
    let reading = read_text(&Src::literal(text), release);
    if v["launches"] != 1 {
        return match reading {
            Err(_) => None,
            Ok(r) => Some(format!(
                "bash ran {} SGLang commands, simulator found one: {:?}",
                v["launches"], r.argv
            )),
        };
    }
    let r = match reading {
        Ok(r) => r,
        Err(e) => {
            return Some(format!(
                "simulator could not read the text: line {}: {}",
                e.line, e.message
            ));
        }
    };
    let argv: Vec<String> = serde_json::from_value(v["argv"].clone()).unwrap();
    if r.argv != argv {
        return Some(format!(
            "argv differs:\n  bash:      {argv:?}\n  simulator: {:?}",
            r.argv
        ));
    }
    match (&r.result, v["ok"].as_bool().unwrap()) {
        (Ok(p), true) => {
            for (k, want) in v["values"].as_object().unwrap() {
                let got = p.values.get(k).cloned().unwrap_or(Value::Null);
                if !same(&got, want) {
                    return Some(format!("{k}: SGLang {want}, simulator {got}"));
                }
            }
            None
        }
        (Err(e), false) => {
            let want = v["error"].as_str().unwrap();
            // Choices held in a Python set print in hash order: compare up to the list.
            let cut = |m: &str| {
                m.split(" (choose from")
                    .next()
                    .unwrap_or(m)
                    .trim()
                    .to_string()
            };
            (cut(&e.message) != cut(want)).then(|| {
                format!(
                    "error differs:\n  SGLang:    {want}\n  simulator: {}",
                    e.message
                )
            })
        }
        (Ok(_), false) => Some(format!(
            "SGLang refuses ({}), simulator accepts",
            v["error"]
        )),
        (Err(e), true) => Some(format!("SGLang accepts, simulator refuses: {}", e.message)),
    }
}

#[test]
fn corpus_agrees_with_sglang_on_every_command() {
    let verdicts = load("verdicts.json");
    let mut files: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sh"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{} commands", files.len());
    assert_eq!(
        files.len(),
        verdicts.len(),
        "verdicts.json is stale: rerun the script"
    );
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(dir().join(f)).unwrap();
        assert!(text.starts_with("# source: "), "{f} cites no source");
        if let Some(d) = disagreement(&text, &verdicts[f]) {
            bad.push(format!("{f}: {d}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The corpus holds both verdicts.
    let refused = verdicts
        .values()
        .filter(|v| v["ok"] == Value::Bool(false))
        .count();
    assert!(refused >= 2 && refused < verdicts.len());
}

#[test]
fn generated_variants_agree_at_least_99_percent() {
    let variants = load("variants.json");
    assert!(variants.len() >= 400, "{} variants", variants.len());
    let mut bad = Vec::new();
    for (id, v) in &variants {
        if let Some(d) = disagreement(v["text"].as_str().unwrap(), v) {
            bad.push(format!("{id}: {d}\n{}", v["text"].as_str().unwrap()));
        }
    }
    let rate = 1.0 - bad.len() as f64 / variants.len() as f64;
    println!(
        "variants: {} of {} agree ({:.2} %)",
        variants.len() - bad.len(),
        variants.len(),
        100.0 * rate
    );
    for b in bad.iter().take(20) {
        println!("{b}\n");
    }
    assert!(rate >= 0.99, "agreement {:.2} % < 99 %", 100.0 * rate);
}
