//! One side of a prefill-decode disaggregated deployment (`--disaggregation-mode`):
//! the start-up default each side reserves (`release::PdRoles`), a decode server's
//! radix cache off (`release::server_check`), and what is still left out, said in the
//! status.

use crate::support::{code, run, stderr, stdout};

fn scenario(dir: &std::path::Path, sglang: &str, flags: &str) -> String {
    let text = format!(
        "name: pd\nsglang: {sglang}\nnode: hgx-h200\nmodel: deepseek-v3\nserver:\n  launch: >-\n    python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 {flags}\nmemory:\n  host_other_used: 0GB\nruntime:\n  trace: t.jsonl\n"
    );
    std::fs::write(dir.join("s.yaml"), text).unwrap();
    std::fs::write(
        dir.join("t.jsonl"),
        "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 8, \"hash_ids\": [1, 2]}\n",
    )
    .unwrap();
    "s.yaml".into()
}

/// DeepSeek-V3 at TP8 on an HGX H200 under 0.5.23: a colocated engine reserves 16,384
/// MiB (0.886); a decode server sizes its activation by the running batch and reserves
/// no prefill graph (the 10 GiB floor: 0.929, 725,025 tokens a rank against 634,820);
/// a prefill server reserves no decode graph (15,360 MiB: 0.893). Both are
/// `unverified`, naming what the deployment leaves out.
#[test]
fn each_side_reserves_its_own_graphs() {
    let d = tempfile::tempdir().unwrap();
    for (flags, fraction, tokens, why) in [
        (
            "",
            "mem_fraction_static 0.886 (0.5.23's default: 16384 MiB reserved",
            "634820",
            None,
        ),
        (
            "--disaggregation-mode decode",
            "mem_fraction_static 0.929 (0.5.23's default: 10240 MiB reserved",
            "725025",
            Some("--disaggregation-mode decode: the pools are a PD decode server's"),
        ),
        (
            "--disaggregation-mode prefill",
            "mem_fraction_static 0.893 (0.5.23's default: 15360 MiB reserved",
            "649505",
            Some("--disaggregation-mode prefill: the pools are a PD prefill server's"),
        ),
    ] {
        let s = scenario(d.path(), "0.5.23", flags);
        let o = run(&["startup", &s], d.path());
        assert!(o.status.success(), "{flags}: {}", stderr(&o));
        let t = stdout(&o);
        assert!(t.contains(fraction), "{flags}: {t}");
        assert!(
            t.contains(&format!("Device pool: {tokens} tokens per rank")),
            "{flags}: {t}"
        );
        match why {
            Some(w) => assert!(t.contains("Status: unverified") && t.contains(w), "{t}"),
            None => assert!(!t.contains("disaggregation"), "{t}"),
        }
    }
    // 0.5.14 has no decode branch: 14,848 MiB on either side (0.897).
    let s = scenario(d.path(), "0.5.14", "--disaggregation-mode decode");
    let t = stdout(&run(&["startup", &s], d.path()));
    assert!(
        t.contains("mem_fraction_static 0.897 (0.5.14's default: 14848 MiB reserved"),
        "{t}"
    );
}

/// A decode server's radix cache is off: HiCache is SGLang's ValueError (exit 2, its
/// words), and there is no prefix to replay. With
/// `--disaggregation-decode-enable-radix-cache` both run.
#[test]
fn a_decode_server_has_no_radix_cache() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(
        d.path(),
        "0.5.23",
        "--disaggregation-mode decode --enable-hierarchical-cache",
    );
    let o = run(&["startup", &s], d.path());
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains(
            "The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive"
        ),
        "{}",
        stderr(&o)
    );

    let s = scenario(d.path(), "0.5.23", "--disaggregation-mode decode");
    let o = run(&["replay", &s], d.path());
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("the radix cache is off (a PD decode server's default"),
        "{}",
        stderr(&o)
    );
    let s = scenario(d.path(), "0.5.23", "--disable-radix-cache");
    let o = run(&["replay", &s], d.path());
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("the radix cache is off (--disable-radix-cache)"),
        "{}",
        stderr(&o)
    );

    let s = scenario(
        d.path(),
        "0.5.23",
        "--disaggregation-mode decode --disaggregation-decode-enable-radix-cache --enable-hierarchical-cache --hicache-ratio 2",
    );
    let o = run(&["replay", &s], d.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("status: unverified: --disaggregation-mode decode"),
        "{}",
        stdout(&o)
    );
}

/// A prefill server's requests end at their prefill: DeepSeek-V4-Flash at TP2 on an
/// HGX H200 (its pools a prefill server's: 28,317 full and 2,831 SWA pages) hits 86.11 %
/// of chat_agentic_mix's prompt tokens in the SWA tree, where a colocated engine's
/// decoding requests hit 85.75 % of its own pools.
#[test]
fn a_prefill_server_s_requests_end_at_their_prefill() {
    let d = tempfile::tempdir().unwrap();
    let trace = crate::support::repo("traces/generated_chat_agentic_mix.jsonl");
    let text = format!(
        "name: pd\nsglang: 0.5.23\nnode: hgx-h200\nmodel: deepseek-ai/DeepSeek-V4-Flash\nserver:\n  launch: >-\n    python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Flash --tp 2 --disaggregation-mode prefill\nmemory:\n  host_other_used: 0GB\nruntime:\n  trace: {}\n",
        trace.display()
    );
    std::fs::write(d.path().join("s.yaml"), text).unwrap();
    let o = run(&["replay", "s.yaml"], d.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains(
            "with its SWA component: 2831 SWA pages, window 128, requests ending at their prefill"
        ),
        "{t}"
    );
    assert!(t.contains("device          3427584    86.11 %"), "{t}");
}

/// `scenarios/pd-prefill-server.yaml`: DeepSeek-V3's prefill server at TP8 on an HGX
/// H200 with HiCache at ratio 2: 0.893 (649,472 tokens a rank, 10,148 pages of 64),
/// the synthetic trace hits 17.64 % (10.10 % device, 7.54 % host), `unverified` naming
/// the deployment.
#[test]
fn the_prefill_server_scenario() {
    let sc = crate::support::repo("scenarios/pd-prefill-server.yaml");
    let o = run(
        &["replay", sc.to_str().unwrap(), "--format", "json"],
        &crate::support::repo("."),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["l1_pages"], 10148);
    assert_eq!(v["metrics"]["total_hit_tokens"], 10_795_008);
    assert_eq!(v["metrics"]["host_hit_tokens"], 4_612_992);
    assert_eq!(v["status"], "unverified");
    assert!(
        v["unverified"]
            .to_string()
            .contains("--disaggregation-mode prefill")
    );
}

/// A prefill server's `--load-balance-method auto` is `follow_bootstrap_room`
/// (`serving_hook.py: handle_load_balance_method`): refused with DP ranks, never
/// replayed as round-robin; an explicit round_robin replays.
#[test]
fn a_prefill_server_s_dp_ranks_follow_the_bootstrap_room() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(
        d.path(),
        "0.5.23",
        "--disaggregation-mode prefill --dp 8 --enable-dp-attention",
    );
    let o = run(&["replay", &s], d.path());
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("follow_bootstrap_room (a PD prefill server's auto) is not modelled"),
        "{}",
        stderr(&o)
    );
    let s = scenario(
        d.path(),
        "0.5.23",
        "--disaggregation-mode prefill --dp 8 --enable-dp-attention --load-balance-method round_robin",
    );
    let o = run(&["replay", &s], d.path());
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A decode server's retraction-backup host pool is named where SGLang builds it
/// (`resolve_decode_retraction_backup`): from 0.5.18, for an MHA (here Qwen3-32B) pool
/// without the decode radix cache, at the release's ratio; never for an MLA model
/// (DeepSeek-V3 keeps `cpu_tensor`), nor before 0.5.18, nor with the radix cache.
#[test]
fn a_decode_servers_retraction_pool_is_named_where_sglang_builds_it() {
    let d = tempfile::tempdir().unwrap();
    let status = |sglang: &str, model: &str, flags: &str| {
        let p = d.path().join("d.yaml");
        std::fs::write(
            &p,
            format!(
                "name: d\nsglang: {sglang}\nnode: hgx-h200\nmodel: {model}\nserver:\n  launch: python -m sglang.launch_server --model-path {model} --tp 2 --disaggregation-mode decode {flags}\nmemory:\n  host_other_used: 0GB\n"
            ),
        )
        .unwrap();
        let o = run(&["startup", p.to_str().unwrap()], d.path());
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let qwen = "Qwen/Qwen3-32B";
    let t = status("0.5.23", qwen, "");
    assert!(
        t.contains("a pinned KV host pool of HiCache ratio max(0.2, one longest request / the device pool), auto-sized to the host's memory"),
        "{t}"
    );
    assert!(status("0.5.20", qwen, "").contains("a pinned KV host pool of HiCache ratio 0.2;"));
    assert!(status("0.5.18", qwen, "").contains("HiCache ratio 1.0, the device pool's size"));
    for t in [
        status("0.5.17", qwen, ""),
        status("0.5.23", "deepseek-v3", ""),
        status("0.5.23", qwen, "--disaggregation-decode-enable-radix-cache"),
    ] {
        assert!(!t.contains("retraction backups"), "{t}");
        assert!(t.contains("disaggregation-mode decode"), "{t}");
    }
    assert!(
        status("0.5.23", qwen, "--disaggregation-decode-enable-radix-cache")
            .contains("no prefill CUDA-graph reserve, radix cache on)")
    );
}
