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
