//! Time values out of any real setup's range are exit 2 naming the key, never a replay
//! whose clock overflows (TTFTs near 1.8e10 s were printed) or silently takes a default:
//! per-token durations need their unit, rates and factors have bounds, a bare number of
//! seconds is bounded like `20s`.

use crate::support::{exit2, sim, stdout};

const TRACE: &str = "traces/generated_chat_agentic_mix.jsonl";

fn replay(extra: &[&str]) -> std::process::Output {
    sim()
        .args(["replay", "--trace", TRACE, "--timing", "on"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn per_token_durations_need_their_unit_and_a_bound() {
    // 6756 meant as ns was read as 6756 s a token.
    exit2(
        &replay(&["--config", "tokenize_per_token=6756"]),
        &[
            "tokenize_per_token",
            "6756 has no unit: write one (`6756ns`, `6756us`): a bare number would be seconds",
        ],
    );
    exit2(
        &replay(&["--config", "tokenize_per_token=2ms"]),
        &["tokenize_per_token", "more than 1 ms"],
    );
    // With its unit it is read, and it shows in the speeds record.
    let o = replay(&["--config", "tokenize_per_token=6756ns", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o).contains("\"tokenize_per_token_ns\": 6756"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn rates_and_factors_are_bounded() {
    exit2(
        &replay(&["--config", "bandwidth_efficiency=1e-300"]),
        &["bandwidth_efficiency", "1e-300 must be in [0.01, 1]"],
    );
    // 1e-300 tokens/s and 1e300 gave the same makespan.
    exit2(
        &replay(&["--config", "decode_tokens_per_s=1e-300"]),
        &[
            "decode_tokens_per_s",
            "1e-300 must be from 0.001 to 1e12 tokens/s",
        ],
    );
    exit2(
        &replay(&["--config", "decode_tokens_per_s=1e300"]),
        &[
            "decode_tokens_per_s",
            "1e300 must be from 0.001 to 1e12 tokens/s",
        ],
    );
    exit2(
        &replay(&["--slowdown-factor", "1e20"]),
        &[
            "--slowdown-factor",
            "1e20: the slowdown factor must be from 1e-6 to 1e6",
        ],
    );
}

/// A bare number of seconds where a duration is expected is bounded as `20s` is: 1e300
/// saturated the clock.
#[test]
fn a_bare_number_of_seconds_is_bounded() {
    let o = sim()
        .args([
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--set",
            "startup.post_load=1e300",
        ])
        .output()
        .unwrap();
    exit2(&o, &["startup.post_load", "longer than 10000000 s"]);
}

/// `trace gen` refuses a configuration whose sessions could build a prompt past
/// 100,000,000 tokens (2^32 wrapped `input_length` to a short prompt, and the trace's own
/// reader refused the file) and more than 1,000,000 system prompts (2^32 − 1 of them was
/// a 17 GB allocation and an abort), naming the field.
#[test]
fn trace_gen_sizes_are_bounded() {
    let recipe: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("traces/recipes/chat_agentic_mix.json").unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let generate = |name: &str, cfg: &serde_json::Value| {
        let f = dir.path().join(format!("{name}.json"));
        std::fs::write(&f, cfg.to_string()).unwrap();
        sim()
            .args(["trace", "gen", "--config"])
            .arg(&f)
            .arg("-o")
            .arg(dir.path().join(format!("{name}.jsonl")))
            .output()
            .unwrap()
    };
    let mut many = recipe.clone();
    many["system_prompts"]["count"] = u32::MAX.into();
    exit2(
        &generate("many", &many),
        &["system_prompts.count", "4294967295 is more than 1000000"],
    );
    // Agentic: 20,000 context + 10,000,000 loops × (600 + 300) tokens.
    let mut long = recipe.clone();
    long["sessions"][1]["loops"]["max"] = 10_000_000.into();
    exit2(
        &generate("long", &long),
        &["sessions[1]", "can grow to 9000023000 tokens"],
    );
    // The recipe itself is well inside both.
    let o = generate("ok", &recipe);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A start-up Monte Carlo of a million runs or more announces itself on stderr (a line
/// every 30 s follows while it runs, off a terminal), so `--runs 1e9` is not 30 silent
/// minutes; its result is the same as without the note.
#[test]
fn a_long_monte_carlo_says_so() {
    let o = sim()
        .args([
            "startup",
            "scenarios/gb300-glm52-135g.yaml",
            "--sglang",
            "0.5.21",
            "--runs",
            "1000000",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("note: 1000000 start-up runs: this takes a while; progress on stderr"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
