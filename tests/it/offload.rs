//! Weight offload at start-up (`--offload-group-size`, `--cpu-offload-gb`): the layers
//! that move, the pinned host bytes each rank takes before the host pools are sized, the
//! GPU bytes the device pool gains, and the arguments SGLang cannot start with.

use std::path::Path;

use hicache_sim::commands::startup_cmd::{load_scenario, plan_for};
use hicache_sim::model::offload::OffloadEffect;
use serde_json::Value;

use super::support::run;

/// The InferenceX-style GLM-5.2-FP8 command on one 8 × H200 node.
const GLM_OFFLOAD: &str = "python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 --tp 8 --offload-group-size 5 --offload-num-in-group 2 --enable-hierarchical-cache --hicache-size 167 --page-size 64 --trust-remote-code --port 30000";

/// Writes `name.yaml` (a scenario running `launch` on hgx-h200 under 0.5.23) in `dir`.
fn scenario(dir: &Path, name: &str, launch: &str) -> String {
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &p,
        format!("name: {name}\nsglang: \"0.5.23\"\nnode: hgx-h200\nserver:\n  launch: {launch}\n"),
    )
    .unwrap();
    p.display().to_string()
}

/// Writes a launch-command file for `check` (machine named in its comment).
fn launch_file(dir: &Path, name: &str, launch: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, format!("# hicache-sim: node=hgx-h200\n{launch}\n")).unwrap();
    p.display().to_string()
}

/// GLM-5.2-FP8 (catalogue config: 78 layers, `first_k_dense_replace` 3, 256 routed
/// experts + 1 shared, hidden 6144, `moe_intermediate_size` 2048, fp8) at TP8 with
/// `--offload-group-size 5 --offload-num-in-group 2`: layers with `l % 5 ∈ {3, 4}` are
/// 3, 4, 8, 9, …, 73, 74 — 30 layers, all MoE. Shared-expert fusion is on
/// (`GlmMoeDsaForCausalLM`, 256 + 1 experts, SM90, EP 1), so each rank's `FusedMoE`
/// holds 257 experts of intermediate 2048 / 8 = 256:
/// - w13 = 257 × 512 × 6144 = 808,452,096 B, w2 = 257 × 6144 × 256 = 404,226,048 B,
///   1,212,678,144 B (1.129 GiB) a layer;
/// - host: 30 × 1,212,678,144 = 36,380,344,320 B (33.88 GiB) moved; pinned, each tensor
///   rounded up to a power of two: 30 × (2^30 + 2^29) = 48,318,382,080 B (45.00 GiB);
/// - GPU: the prefetch (step 1) onloads layer 3 back, so the device pool gains
///   36,380,344,320 − 1,212,678,144 = 35,167,666,176 B (32.75 GiB).
#[test]
fn glm52_fp8_tp8_group_offload_is_the_worked_example() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "glm", GLM_OFFLOAD);
    let s = load_scenario(&path, &[], None).unwrap();
    let OffloadEffect::Modelled(f) = &s.offload else {
        panic!("{:?}", s.offload)
    };
    let expected: Vec<u32> = (0..78).filter(|l| l % 5 >= 3).collect();
    assert_eq!(expected.len(), 30);
    assert_eq!(f.layers, expected);
    assert_eq!(f.offloader, "v2");
    assert_eq!(f.tensors, 60);
    assert_eq!(f.host_logical_bytes, 36_380_344_320);
    assert_eq!(f.host_pinned_bytes, 48_318_382_080);
    assert_eq!(f.gpu_prefetched_bytes, 1_212_678_144);
    assert_eq!(f.gpu_freed_bytes(), 35_167_666_176);
    // The weights the device pool is sized after: the preset's 756 GB / 8 = 94.5 GB, less
    // the freed bytes.
    assert_eq!(s.weights_with_offload().unwrap(), 94_500_000_000);
    assert_eq!(
        s.weights_per_rank().unwrap(),
        94_500_000_000 - 35_167_666_176
    );
    let plan = plan_for(&s).unwrap();
    assert_eq!(plan.offload_host_bytes, 48_318_382_080);
    // Without the offload: 389,824 tokens a rank. With it the pool grows by
    // 35,167,666,176 B / 92,628 B a token (KV 89,856 + indexer 2,772) = 379,665.8 tokens,
    // 5,932 whole pages of 64 = 379,648: 769,472.
    let off = load_scenario(&path, &["server.offload_group_size=-1".into()], None).unwrap();
    assert_eq!(off.offload, OffloadEffect::Off);
    let base = plan_for(&off).unwrap();
    assert_eq!(base.device_tokens, 389_824);
    assert_eq!(base.offload_host_bytes, 0);
    assert_eq!(plan.device_tokens, 769_472);
    assert_eq!(plan.device_tokens - base.device_tokens, 5_932 * 64);
    // No "not modelled" warning for the offload flags any more.
    assert!(
        !s.notes.iter().any(|n| n.contains("offload")),
        "{:?}",
        s.notes
    );
    // A larger prefetch keeps more on the GPU: step 3 onloads slots 3, 4 and 8 (all MoE).
    let p3 = load_scenario(&path, &["server.offload_prefetch_step=3".into()], None).unwrap();
    let f3 = p3.offload.figures().unwrap();
    assert_eq!(f3.gpu_prefetched_bytes, 3 * 1_212_678_144);
    assert_eq!(f3.host_pinned_bytes, 48_318_382_080);
    // `meta` (debugging) takes no host memory, frees the same GPU bytes.
    let meta = load_scenario(&path, &["server.offload_mode=meta".into()], None).unwrap();
    let fm = meta.offload.figures().unwrap();
    assert_eq!(
        (fm.host_pinned_bytes, fm.gpu_freed_bytes()),
        (0, 35_167_666_176)
    );
}

/// The launch-command path: every one of the node's 8 ranks pins 48,318,382,080 B while
/// its model is built, before any rank sizes its host pools, so each rank's sample sees
/// 8 × 48,318,382,080 = 386,547,056,640 B less available memory, and its per-rank budget
/// ((available − 10 GiB) // 8) — hence its margin — 48,318,382,080 B less.
#[test]
fn the_host_margin_shrinks_by_every_local_ranks_pinned_offload() {
    let dir = tempfile::tempdir().unwrap();
    let plain = GLM_OFFLOAD.replace("--offload-group-size 5 --offload-num-in-group 2 ", "");
    let json = |path: &str| -> Value {
        let out = run(
            &["startup", path, "--runs", "1", "--format", "json"],
            dir.path(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let with = json(&scenario(dir.path(), "with", GLM_OFFLOAD));
    let without = json(&scenario(dir.path(), "without", &plain));
    let rank0 = |v: &Value, k: &str| v["ranks"][0][k].as_i64().unwrap();
    assert_eq!(
        rank0(&without, "psutil_available_bytes") - rank0(&with, "psutil_available_bytes"),
        386_547_056_640
    );
    assert_eq!(
        rank0(&without, "budget_bytes") - rank0(&with, "budget_bytes"),
        48_318_382_080
    );
    assert_eq!(
        rank0(&without, "margin_bytes") - rank0(&with, "margin_bytes"),
        48_318_382_080
    );
    let o = &with["offload"];
    assert_eq!(o["status"], "modelled");
    assert_eq!(o["host_logical_bytes_per_rank"], 36_380_344_320u64);
    assert_eq!(o["host_pinned_bytes_per_rank"], 48_318_382_080u64);
    assert_eq!(o["host_pinned_bytes_per_host"], 386_547_056_640u64);
    assert_eq!(o["gpu_freed_bytes_per_rank"], 35_167_666_176u64);
    assert!(without.get("offload").is_none());
    // The text report says it.
    let out = run(
        &[
            "startup",
            &scenario(dir.path(), "text", GLM_OFFLOAD),
            "--runs",
            "1",
        ],
        dir.path(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Weight offload: v2 (cpu), 60 tensor(s) of 30 layer(s) (3, 4, 8, 9, 13, 14, …) per rank: 33.88 GiB moved to the host, 45.00 GiB pinned (360.00 GiB per host of 8 ranks); GPU 33.88 GiB offloaded - 1.13 GiB prefetched = 32.75 GiB more for the device pool"),
        "{text}"
    );
    // `check` on the bare launch-command file: the tightest rank's margin falls by the
    // same 48,318,382,080 B (61.50 GB → 13.18 GB).
    let check = |name: &str, cmd: &str| -> i64 {
        let f = launch_file(dir.path(), name, cmd);
        let out = run(
            &[
                "check", &f, "--sglang", "0.5.23", "--runs", "5", "--format", "json",
            ],
            dir.path(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v[0]["margin_bytes"].as_i64().unwrap()
    };
    let m_with = check("with.sh", GLM_OFFLOAD);
    let m_without = check("without.sh", &plain);
    assert_eq!(m_without - m_with, 48_318_382_080);
    assert_eq!(m_with, 13_184_744_960);
}

/// `--cpu-offload-gb 20` on DeepSeek-V3 (fp8, TP8, catalogue config: hidden 7168, 128
/// heads, q_lora 1536, kv_lora 512, 3 dense layers then MoE, 256 + 1 fused experts of
/// 2048): per rank a dense layer is 86,233,760 B and a MoE layer 1,455,484,064 B
/// (w13 257 × 512 × 7168 = 943,194,112; w2 471,597,056; their scales 345,408; attention,
/// router and correction bias 40,318,816; norms 28,672). Layers 0–16
/// are 3 × 86,233,760 + 14 × 1,455,484,064 = 20,635,478,176 B < 20 GiB
/// (21,474,836,480); layer 17 adds its attention, router and bias (40,318,816 B), then
/// its w13 (943,194,112 B) while still under: 21,618,991,104 B, one parameter past the
/// budget, 313 tensors. Under 0.5.21+ the 18 layers' `kv_b_proj` (2,097,152 B + its
/// 512 B of scales each) stay: 21,618,991,104 − 18 × 2,097,664 = 21,581,233,152 B.
/// Pinned, per tensor rounded up: 24,635,353,088 B (0.5.20) and 24,597,595,136 B. The
/// GPU also gets back 1 MiB of allocator rounding per moved tensor above 1 MiB: six a
/// dense layer (fused_qkv_a, q_b, kv_b, o, gate_up, down), seven a MoE layer (the four of
/// attention, the router, w13, w2), six of layer 17: 3 × 6 + 14 × 7 + 6 = 122 MiB on
/// 0.5.20 (21,746,917,376 B freed), 18 fewer (the kept kv_b) on 0.5.21.
#[test]
fn cpu_offload_gb_moves_whole_parameters_and_keeps_kv_b_from_0_5_21() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --cpu-offload-gb 20 --enable-hierarchical-cache --hicache-size 150 --page-size 64";
    let path = scenario(dir.path(), "ds", cmd);
    let fig = |v: &str| {
        let s = load_scenario(&path, &[], Some(v.parse().unwrap())).unwrap();
        let f = s.offload.figures().cloned().unwrap();
        let plan = plan_for(&s).unwrap();
        (f, plan.device_tokens, plan.offload_host_bytes)
    };
    let (f20, tokens20, host20) = fig("0.5.20");
    assert_eq!(f20.offloader, "v1");
    assert_eq!(f20.host_logical_bytes, 21_618_991_104);
    assert_eq!(f20.tensors, 313);
    assert_eq!(f20.layers, (0..18).collect::<Vec<u32>>());
    assert_eq!(f20.host_pinned_bytes, 24_635_353_088);
    assert_eq!(host20, 24_635_353_088);
    assert_eq!(f20.gpu_freed_bytes(), 21_618_991_104 + 122 * (1 << 20));
    let (f21, tokens21, _) = fig("0.5.21");
    assert_eq!(f21.host_logical_bytes, 21_581_233_152);
    assert_eq!(f21.tensors, 313 - 36);
    assert_eq!(f21.host_pinned_bytes, 24_597_595_136);
    assert_eq!(f21.gpu_freed_bytes(), 21_581_233_152 + 104 * (1 << 20));
    // The device pool (70,272 B a token: 576 × 2 B × 61 layers) gains the freed bytes:
    // 21,746,917,376 / 70,272 = 309,467.7 tokens on 0.5.20 (634,816 → 944,256: the
    // whole pages of 64 below 944,283.7); 0.5.21 frees 56,632,320 B (805.9 tokens) less:
    // 943,477.8, whole pages 943,424.
    let base = load_scenario(
        &path,
        &["server.cpu_offload_gb=0".into()],
        Some("0.5.20".parse().unwrap()),
    )
    .unwrap();
    assert_eq!(base.offload, OffloadEffect::Off);
    assert_eq!(plan_for(&base).unwrap().device_tokens, 634_816);
    assert_eq!(tokens20, 944_256);
    assert_eq!(tokens21, 943_424);
}

/// What SGLang cannot start with is an error at the field (exit 2, SGLang's reason);
/// group offload outside the DeepSeek-V2 family is a failed start-up with SGLang's
/// TypeError; a negative `--cpu-offload-gb` is no offload.
#[test]
fn offload_arguments_sglang_cannot_start_with() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "glm", GLM_OFFLOAD);
    for (set, field, says) in [
        (
            "server.offload_mode=shm_cpu",
            "server.offload_mode",
            "--offload-mode shm_cpu needs --tp-size 1 (this is TP8): `OffloaderV2.__init__` asserts `not yet support tp_size!=1`",
        ),
        (
            "server.offload_mode=disk",
            "server.offload_mode",
            "raises KeyError: 'disk' while the model is built",
        ),
        (
            "server.offload_prefetch_step=31",
            "server.offload_prefetch_step",
            "--offload-prefetch-step 31 is more than the 30 layers offloaded: `OffloaderV2.post_init` raises IndexError (list index out of range)",
        ),
        (
            "server.offload_prefetch_step=0",
            "server.offload_prefetch_step",
            "onloads nothing ahead",
        ),
        (
            "server.offload_num_in_group=0",
            "server.offload_num_in_group",
            "offloads no layer",
        ),
    ] {
        let out = run(&["startup", &path, "--runs", "1", "--set", set], dir.path());
        assert_eq!(out.status.code(), Some(2), "{set}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("field `{field}`")), "{set}: {err}");
        assert!(err.contains(says), "{set}: {err}");
    }
    // In a launch command the error names the flag's line (`check`: invalid_args).
    let bad = launch_file(
        dir.path(),
        "shm.sh",
        &GLM_OFFLOAD.replace(
            "--offload-num-in-group 2",
            "--offload-num-in-group 2 --offload-mode shm_cpu",
        ),
    );
    let out = run(
        &["check", &bad, "--sglang", "0.5.23", "--runs", "5"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("invalid_args"), "{text}");
    assert!(
        text.contains("line 2: launch command flag `--offload-mode shm_cpu`"),
        "{text}"
    );
    // N > G is not an error in SGLang: every layer's slot is offloaded (75 MoE layers of
    // the 78; layers 0–2 are dense and move nothing).
    let all = load_scenario(&path, &["server.offload_num_in_group=7".into()], None).unwrap();
    let f = all.offload.figures().unwrap();
    assert_eq!(f.layers, (3..78).collect::<Vec<u32>>());
    // Qwen3-235B-A22B-FP8 is not a DeepseekV2Model: OffloaderV2 calls the missing
    // `submodule_accessor` at layer 3 (4 − 1) and every rank raises TypeError.
    let qwen = launch_file(
        dir.path(),
        "qwen.sh",
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B-FP8 --tp 8 --offload-group-size 4 --enable-hierarchical-cache --hicache-size 100 --page-size 64",
    );
    let out = run(
        &[
            "check", &qwen, "--sglang", "0.5.23", "--runs", "5", "--format", "json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["outcome"], "failed");
    assert_eq!(v[0]["passed"], false);
    let msg = v[0]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("'NoneType' object is not callable (OffloaderV2.wrap_modules: Qwen3MoeForCausalLM builds its layers without a `submodule_accessor`"),
        "{msg}"
    );
    // Its log line is SGLang's exception.
    let qy = scenario(
        dir.path(),
        "qwen",
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B-FP8 --tp 8 --offload-group-size 4 --enable-hierarchical-cache --hicache-size 100 --page-size 64",
    );
    let out = run(&["startup", &qy, "--runs", "1"], dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[TP0] TypeError: 'NoneType' object is not callable"),
        "{text}"
    );
    // --cpu-offload-gb on the same model is modelled (Qwen3-MoE's layers); on a model
    // whose layers are not, a warning.
    let q = load_scenario(
        &qy,
        &[
            "server.offload_group_size=-1".into(),
            "server.cpu_offload_gb=10".into(),
        ],
        None,
    )
    .unwrap();
    assert_eq!(q.offload.figures().unwrap().offloader, "v1");
    let mx = scenario(
        dir.path(),
        "mixtral",
        "python3 -m sglang.launch_server --model-path mistralai/Mixtral-8x7B-v0.1 --tp 8 --cpu-offload-gb 10",
    );
    let q = load_scenario(&mx, &[], None).unwrap();
    assert!(matches!(q.offload, OffloadEffect::NotModelled(_)));
    assert!(
        q.notes.iter().any(|n| n.starts_with(
            "warning: --cpu-offload-gb is not modelled here: the parameter order of MixtralForCausalLM decoder layers"
        )),
        "{:?}",
        q.notes
    );
    // A negative budget: `cpu_offload_gb > 0` fails, no offload, a note.
    let neg = load_scenario(
        &path,
        &[
            "server.offload_group_size=-1".into(),
            "server.cpu_offload_gb=-4".into(),
        ],
        None,
    )
    .unwrap();
    assert_eq!(neg.offload, OffloadEffect::Off);
    assert!(
        neg.notes
            .iter()
            .any(|n| n.starts_with("--cpu-offload-gb -4 is not positive: SGLang offloads nothing")),
        "{:?}",
        neg.notes
    );
}

/// `--cpu-offload-gb` on a model whose decoder layers are not modelled (Mixtral:
/// OffloaderV1 moves whole parameters in the layers' order, modelled for the DeepSeek-V2
/// family and the Llama-style decoders) was a plain `ok` in `check`, the figures
/// those of no offload: now `unverified`, naming the flag and which way the margins move;
/// `--strict` fails it (exit 1).
#[test]
fn unmodelled_cpu_offload_is_never_a_plain_ok() {
    let dir = tempfile::tempdir().unwrap();
    let f = launch_file(
        dir.path(),
        "qwen.sh",
        "python -m sglang.launch_server --model-path mistralai/Mixtral-8x7B-v0.1 --tp 8 --cpu-offload-gb 8",
    );
    let out = run(
        &[
            "check", &f, "--sglang", "0.5.23", "--runs", "3", "--format", "json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["status"], "unverified", "{rows}");
    let why = rows[0]["unverified"][0].as_str().unwrap();
    assert!(
        why.starts_with("--cpu-offload-gb: weight offload is not modelled here")
            && why.contains("MixtralForCausalLM")
            && why.contains("the real host margin is smaller and the device pool larger"),
        "{why}"
    );
    let strict = run(
        &["check", &f, "--sglang", "0.5.23", "--runs", "3", "--strict"],
        dir.path(),
    );
    assert_eq!(strict.status.code(), Some(1));
    // Without the flag the same recipe is `ok` (H200 TP8's reserve is measured).
    let plain = launch_file(
        dir.path(),
        "plain.sh",
        "python -m sglang.launch_server --model-path mistralai/Mixtral-8x7B-v0.1 --tp 8",
    );
    let out = run(
        &[
            "check", &plain, "--sglang", "0.5.23", "--runs", "3", "--format", "json",
        ],
        dir.path(),
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["status"], "ok", "{rows}");
}

/// `--cpu-offload-gb 8` on Qwen3-32B (TP8, bf16; hidden 5,120, 64 heads and 8 KV heads of
/// 128, intermediate 25,600, 64 layers), by hand per rank and layer: q_norm, k_norm 256 B
/// each; qkv (8 + 2 × 1) × 128 = 1,280 × 5,120 × 2 = 13,107,200; o 5,120 × 1,024 × 2 =
/// 10,485,760; gate_up 6,400 × 5,120 × 2 = 65,536,000; down 5,120 × 3,200 × 2 =
/// 32,768,000; two norms of 10,240: 121,917,952 B. All 64 layers fit the 8 GiB budget
/// (7,802,748,928 B, 512 tensors); pinned, each rounded up to a power of two: 134,251,008
/// a layer, 8,592,064,512; the GPU also gets back 1 MiB of allocator rounding for each of
/// the four tensors above 1 MiB a layer: 7,802,748,928 + 256 MiB = 8,071,184,384 B. Modelled
/// now: `check` says `ok`, and the device pool grows by the freed bytes (32,768 B a
/// token: 64 layers × 2 × 1 × 128 × 2 B, KV heads replicated to one a rank).
#[test]
fn cpu_offload_gb_on_a_dense_qwen3_moves_its_layers() {
    let dir = tempfile::tempdir().unwrap();
    let cmd =
        "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 8 --cpu-offload-gb 8";
    let path = scenario(dir.path(), "q", cmd);
    let s = load_scenario(&path, &[], Some("0.5.23".parse().unwrap())).unwrap();
    let f = s.offload.figures().cloned().unwrap();
    assert_eq!(f.offloader, "v1");
    assert_eq!(f.layers, (0..64).collect::<Vec<u32>>());
    assert_eq!(f.tensors, 512);
    assert_eq!(f.host_logical_bytes, 64 * 121_917_952);
    assert_eq!(f.host_pinned_bytes, 64 * 134_251_008);
    assert_eq!(f.gpu_freed_bytes(), 8_071_184_384);
    let tokens = plan_for(&s).unwrap().device_tokens;
    let base = load_scenario(
        &path,
        &["server.cpu_offload_gb=0".into()],
        Some("0.5.23".parse().unwrap()),
    )
    .unwrap();
    let base_tokens = plan_for(&base).unwrap().device_tokens;
    assert_eq!(tokens - base_tokens, 246_313); // 8,071,184,384 / 32,768 = 246,313.0
    let f = launch_file(dir.path(), "q.sh", cmd);
    let out = run(
        &[
            "check", &f, "--sglang", "0.5.23", "--runs", "3", "--format", "json",
        ],
        dir.path(),
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["status"], "ok", "{rows}");
}
