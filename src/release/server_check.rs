//! What a release's argument parser and `arg_groups/hicache_hook.py` do with the
//! scenario's SGLang flags: flags the release does not have, its choices, and its
//! coercions. Called once by scenario resolution.

use super::{BufferOnlyWriteBack, Sglang};
use crate::domain::{Choice, EvictionPolicy, HostMemoryMode, ServerArgs, WritePolicy};

/// An error about one scenario field: `(field path, message)`.
pub type FieldError = (&'static str, String);

/// Checks `server` against `sglang`'s flags and choices and applies its coercions.
/// `fraction_given`: the user wrote `--hicache-host-memory-fraction` (in the file, the
/// launch command, a `--set` or a sweep axis). Returns the notes SGLang would log.
pub fn check_server(
    sglang: Sglang,
    server: &mut ServerArgs,
    fraction_given: bool,
) -> Result<Vec<String>, FieldError> {
    let rr = sglang.release_rules();
    let mut notes = Vec::new();
    // `server_args.py` of releases before 0.5.21 has no such argument: argparse exits
    // with "unrecognized arguments" (0.5.14–0.5.20, and the what-ifs before sglang PR 40135).
    if fraction_given && !rr.flags.hicache_host_memory_fraction {
        return Err((
            "server.hicache_host_memory_fraction",
            format!(
                "SGLang {} has no --hicache-host-memory-fraction (added in 0.5.21 by sglang PR 40135): launch_server exits with `error: unrecognized arguments: --hicache-host-memory-fraction`",
                sglang.id()
            ),
        ));
    }
    // `--hicache-write-back-threshold` exists only in sglang PR 40576 (open).
    if let Some(t) = server.hicache_write_back_threshold {
        if rr.controller.write_back_trigger != super::proposal::WriteBackTrigger::Watermark {
            return Err((
                "server.hicache_write_back_threshold",
                format!(
                    "SGLang {} has no --hicache-write-back-threshold: it is sglang PR 40576's (open, in no release); select `sglang: pr40576` to replay it",
                    sglang.id()
                ),
            ));
        }
        if !(0.0..=1.0).contains(&t) {
            return Err((
                "server.hicache_write_back_threshold",
                format!(
                    "{t}: expected a fraction of the device pool in [0, 1] (1: write_back at eviction only, as every release)"
                ),
            ));
        }
    }
    // `server_args.py` (0.5.14–0.5.20) / `arg_groups/kv_cache_hook.py` (0.5.21+): the
    // SWA ratio's range check, every modelled release.
    if let Some(r) = server.swa_full_tokens_ratio
        && !(r > 0.0 && r <= 1.0)
    {
        return Err((
            "server.swa_full_tokens_ratio",
            format!("{r}: --swa-full-tokens-ratio should be in range (0, 1.0]."),
        ));
    }
    if let Some(m) = eviction_policy_refusal(sglang, server.radix_eviction_policy.id()) {
        return Err(("server.radix_eviction_policy", m));
    }
    pd_decode_radix_cache(sglang, server)?;
    if let Some(b) = server.hicache_storage_backend
        && let Some(m) = storage_backend_refusal(sglang, b.id())
    {
        return Err(("server.hicache_storage_backend", m));
    }
    if server.radix_eviction_policy == EvictionPolicy::Tlru {
        notes.push("warning: radix eviction policy tlru (SGLang 0.5.21+) is not modelled by the runtime replay: start-up sizing is unaffected, a replay refuses it".into());
    }
    // `arg_groups/hicache_hook.py`: buffer_only + write_back.
    if server.hicache_host_memory_mode == HostMemoryMode::BufferOnly
        && server.hicache_write_policy == WritePolicy::WriteBack
    {
        match rr.controller.buffer_only_write_back {
            BufferOnlyWriteBack::Error => {} // the sizing-argument check raises SGLang's ValueError
            BufferOnlyWriteBack::CoerceWriteThrough => {
                server.hicache_write_policy = WritePolicy::WriteThrough;
                notes.push(format!(
                    "SGLang {} switches --hicache-write-policy write_back to write_through in buffer_only mode",
                    sglang.id()
                ));
            }
        }
    }
    Ok(notes)
}

/// `--kv-cache-dtype` as written (`given`, the spelling kept) for a DeepSeek-V4 model
/// (`DeepseekV4ForCausalLM`), the refusal if SGLang refuses it: it turns `auto` into
/// `fp8_e4m3` and asserts the result is `fp8_e4m3` or `bfloat16`, comparing spellings, so
/// the parser's own `bf16` (and `fp8_e5m2`, the packed dtypes) fail with
/// `AssertionError: {kv_cache_dtype} is not supported for {model_arch}`. The same assert
/// in every modelled release: 0.5.14 `arg_groups/deepseek_v4_hook.py:
/// apply_deepseek_v4_defaults`, 0.5.15–0.5.23 `arg_groups/overrides.py:
/// _deepseek_v4_kv_cache_dtype` (CUDA; NPU forces `bfloat16`, not modelled).
pub fn dsv4_kv_cache_dtype_refusal(given: &str) -> Option<String> {
    if matches!(given, "auto" | "fp8_e4m3" | "bfloat16") {
        return None;
    }
    Some(format!(
        "{given} is not supported for DeepseekV4ForCausalLM (SGLang's AssertionError: DeepSeek-V4 takes --kv-cache-dtype auto, fp8_e4m3 or bfloat16, spelled so)"
    ))
}

/// DeepSeek-V4's own asserts on the speculative flags, every release 0.5.14–0.5.23:
/// `arg_groups/deepseek_v4_hook.py: apply_deepseek_v4_defaults` (run by
/// `handle_model_specific_adjustments`, before `handle_speculative_decoding` upper-cases
/// the name or turns `NEXTN` into `EAGLE`) takes the algorithm spelled `EAGLE` (or
/// `DSPARK`, 0.5.16+) and, for EAGLE, `--speculative-eagle-topk 1` as given (unset is
/// `None`); `speculative_hook.py: _handle_eagle_family` then asserts that a top-k given
/// without `--speculative-num-steps` (and no `--speculative-adaptive`) is `None`, so
/// DeepSeek-V4's EAGLE needs the steps too: `_auto_choose_speculative_params`' (3, 1,
/// 4) is never reached. `None` when SGLang goes on.
pub fn dsv4_speculative_refusal(server: &ServerArgs) -> Option<String> {
    let algo = server.speculative_algorithm.as_ref()?;
    let written = algo.as_written();
    if written != "EAGLE" && written != "DSPARK" {
        return Some(format!(
            "{written} is refused: SGLang's AssertionError \"Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM\" (0.5.14–0.5.15: \"Only EAGLE …\"; `apply_deepseek_v4_defaults` reads the name before `NEXTN` becomes `EAGLE` or it is upper-cased: spell it EAGLE)"
        ));
    }
    if written != "EAGLE" {
        return None;
    }
    if server.speculative_eagle_topk != Some(1) {
        return Some(
            "Only EAGLE speculative algorithm with topk == 1 is supported for DeepseekV4ForCausalLM (SGLang's AssertionError: give --speculative-eagle-topk 1)".into(),
        );
    }
    if server.speculative_num_steps.is_none() {
        return Some(
            "--speculative-eagle-topk 1 without --speculative-num-steps: SGLang's bare AssertionError in `_handle_eagle_family` (with no steps it expects top-k and draft tokens unset, and DeepSeek-V4 needs top-k 1): give --speculative-num-steps".into(),
        );
    }
    None
}

/// `--radix-eviction-policy` as `sglang`'s parser checks it
/// (`server_args.py: RADIX_EVICTION_POLICY_CHOICES`): the refusal, if it refuses `given`.
pub fn eviction_policy_refusal(sglang: Sglang, given: &str) -> Option<String> {
    let choices = sglang.release_rules().controller.eviction_choices.choices();
    if choices.contains(&given) {
        return None;
    }
    let hint = crate::error::nearest(given, choices.iter().copied())
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    Some(format!(
        "invalid choice `{given}`{hint}: SGLang {} accepts {}",
        sglang.id(),
        choices.join(", ")
    ))
}

/// `--hicache-storage-backend` as the release's parser checks it (its `choices=`, as
/// recorded in the generated flag table; 0.5.23: `arg_groups/fields/memory.py`): any
/// other string (`""`, `none`, a typo) would switch on an L3 SGLang never builds.
pub fn storage_backend_refusal(sglang: Sglang, given: &str) -> Option<String> {
    let flags = sglang.release().flags();
    let choices: Vec<&str> = flags
        .actions
        .iter()
        .find(|a| a.dest == "hicache_storage_backend")
        .and_then(|a| a.choices.as_ref())
        .map(|c| c.iter().map(String::as_str).collect())
        .unwrap_or_default();
    if choices.contains(&given) {
        return None;
    }
    let hint = crate::error::nearest(given, choices.iter().copied())
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    Some(format!(
        "invalid choice `{given}`{hint}: SGLang {} accepts {} (or leave it unset for no storage tier)",
        flags.release,
        choices.join(", ")
    ))
}

/// The scenario fields whose accepted spellings depend on the release.
pub const RELEASE_CHOICE_FIELDS: [&str; 2] = [
    "server.radix_eviction_policy",
    "server.hicache_storage_backend",
];

/// One of [`RELEASE_CHOICE_FIELDS`] holding `given`: the release's refusal (the loader's
/// text for a value no release spells).
pub fn choice_refusal(sglang: Sglang, field: &str, given: &str) -> Option<String> {
    match field {
        "server.radix_eviction_policy" => eviction_policy_refusal(sglang, given),
        "server.hicache_storage_backend" => storage_backend_refusal(sglang, given),
        _ => None,
    }
}

/// A PD decode server's radix cache (`arg_groups/pd_disaggregation_hook.py:
/// handle_pd_disaggregation`, every modelled release): off ("KV cache is forced as chunk
/// cache for decode server") unless `--disaggregation-decode-enable-radix-cache`; with it
/// off, `--enable-hierarchical-cache` is refused (`kv_cache_hook.py:
/// handle_cache_compatibility`, `server_args.py` before 0.5.21: "The arguments
/// enable-hierarchical-cache and disable-radix-cache are mutually exclusive").
fn pd_decode_radix_cache(sglang: Sglang, server: &mut ServerArgs) -> Result<(), FieldError> {
    if server.disaggregation_mode != crate::domain::DisaggregationMode::Decode {
        return Ok(());
    }
    if server.disaggregation_decode_enable_radix_cache {
        if let Some(m) = decode_radix_speculative_refusal(sglang, server) {
            return Err(("server.speculative_algorithm", m));
        }
        server.disable_radix_cache = false;
        return Ok(());
    }
    server.disable_radix_cache = true;
    if server.hicache_enabled() {
        return Err((
            "server.enable_hierarchical_cache",
            "a PD decode server runs without a radix cache unless --disaggregation-decode-enable-radix-cache, and SGLang raises ValueError: \"The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive and cannot be used at the same time. Please use only one of them.\"".into(),
        ));
    }
    Ok(())
}

/// A decode server's radix cache with a speculative algorithm, as each release's argument
/// hook takes it: refused for any algorithm in 0.5.14–0.5.20
/// (`arg_groups/pd_disaggregation_hook.py: handle_pd_disaggregation`), for any but DSPARK
/// in 0.5.21–0.5.22 (the same hook), for any but DSPARK, EAGLE and EAGLE3 (NEXTN being
/// EAGLE by then) in 0.5.23 (`speculative_hook.py: handle_speculative_decoding`). The
/// message SGLang raises, or `None`.
/// `server_args.py: check_server_args` (0.5.14–0.5.18) / `arg_groups/validation_hook.py`
/// (0.5.19+), every modelled release, after the hooks set the page size: a chunk is a
/// whole number of pages, except on a decode server. SGLang's `AssertionError`, or
/// `None`.
pub fn chunk_page_refusal(server: &ServerArgs) -> Option<String> {
    let c = server.chunked_prefill_size?;
    let ps = i64::from(server.page_size.max(1));
    (c > 0
        && !matches!(
            server.disaggregation_mode,
            crate::domain::DisaggregationMode::Decode
        )
        && c % ps != 0)
        .then(|| {
            format!(
                "{c} is not a multiple of the page size {ps}: SGLang's launch fails with `AssertionError: chunked_prefill_size must be divisible by page_size`"
            )
        })
}

pub fn decode_radix_speculative_refusal(sglang: Sglang, server: &ServerArgs) -> Option<String> {
    use crate::domain::SpecAlgorithm as A;
    use crate::wheel::Release;
    let algo = server.speculative_algorithm.as_ref()?;
    let allowed = match sglang.release() {
        r if r >= Release::V0_5_23 => {
            matches!(algo.algorithm(), A::Eagle | A::Eagle3 | A::Nextn)
                || algo.as_written().eq_ignore_ascii_case("DSPARK")
        }
        r if r >= Release::V0_5_21 => algo.as_written().eq_ignore_ascii_case("DSPARK"),
        _ => false,
    };
    (!allowed).then(|| {
        format!(
            "SGLang {} raises ValueError: \"--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding (--speculative-algorithm {})\"",
            sglang.id(),
            algo.as_written()
        )
    })
}
