//! SGLang environment variables in a launch command's environment (`X=1 python -m
//! sglang.launch_server …`, `export X=1`, `env X=1`, `docker run -e X=1`) that change the
//! pools SGLang builds or what HiCache does with them, and that the simulator does not
//! model: each makes the answer `unverified`, naming the variable and which way the
//! figures may be off. A variable left at its default changes nothing and is not named.
//! The rest of the environment (NCCL, CUDA, logging) is reported, never read.

/// The variables the simulator models: they fill `server.env`
/// ([`crate::domain::SglangEnv`]).
pub const MODELLED: &[&str] = &["SGLANG_DSV4_COMPRESS_STATE_DTYPE"];

/// (variable, its default as SGLang spells it — a value equal to it, case-insensitive,
/// is no change — and what setting it leaves out). Read in 0.5.23's
/// `environ.py`, `mem_cache/` and `model_executor/pool_configurator.py`.
const MEMORY_ENV: &[(&str, &str, &str)] = &[
    (
        "SGLANG_DSV4_KV_LAYOUT",
        "v4",
        "a DeepSeek-V4 KV layout other than v4 (`deepseek_v4_memory_pool.py: select_dsv4_kv_layout`): other bytes per token",
    ),
    (
        "SGLANG_DSV4_COMPRESSED_KV_LAYOUT",
        "",
        "DeepSeek-V4's compressed-KV layout (`deepseek_v4_memory_pool.py`): other bytes per token",
    ),
    (
        "SGLANG_OPT_USE_ONLINE_COMPRESS",
        "false",
        "DeepSeek-V4's online compression (`pool_configurator.py`): the C128 compress-state rings are sized otherwise",
    ),
    (
        "SGLANG_EXPERIMENTAL_ONLINE_C128_MTP",
        "false",
        "DeepSeek-V4's online C128 state with MTP (`pool_configurator.py`): the C128 state rings are sized otherwise",
    ),
    (
        "SGLANG_SWA_EVICTION_INTERVAL",
        "128",
        "the SWA eviction interval sizes DeepSeek-V4's SWA request cap (`DSV4PoolConfigurator`): another SWA pool and full pool",
    ),
    (
        "SGLANG_DSV4_FP4_EXPERTS",
        "true",
        "DeepSeek-V4's expert weights not in FP4 (`is_fp4_experts`): other weights, so another device pool",
    ),
    (
        "SGLANG_MAMBA_CONV_DTYPE",
        "bfloat16",
        "the Mamba conv state in another dtype: other state bytes per request, so another state pool",
    ),
    (
        "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING",
        "false",
        "the KV pool sized after the CUDA graphs are captured (`model_runner.py`): the graphs' memory is measured, not reserved, so the device pool differs",
    ),
    (
        "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION",
        "false",
        "ROCm keeps an explicit --mem-fraction-static instead of scaling it by 0.85 (aiter): a larger device pool",
    ),
    (
        "SGLANG_VLM_CACHE_SIZE_MB",
        "",
        "the multimodal embedding cache's size: GPU memory the device pool does not get",
    ),
    (
        "SGLANG_MM_FEATURE_CACHE_MB",
        "",
        "the multimodal feature cache's size: GPU memory the device pool does not get",
    ),
    (
        "SGLANG_HICACHE_HOST_MEM_BACKEND",
        "",
        "another host-memory backend for the HiCache host pool (`memory_pool_host.py`): how the pool is allocated and pinned",
    ),
    (
        "SGLANG_HUGEPAGE_SIZE",
        "",
        "huge pages for the host pool: how host memory is reserved and pinned",
    ),
    (
        "SGLANG_HICACHE_SKIP_HOST_DUPLICATE_RECLAIM",
        "false",
        "write_back's host-duplicate reclaim switched off (`unified_tree_core.py: _reclaim_full_host_duplicates`): the replay's host evictions differ",
    ),
    (
        "SGLANG_ENABLE_HICACHE_SWA_TAIL_ONLY_BACKUP",
        "false",
        "SWA models back up only the window's tail to host: other host traffic and host hits",
    ),
    (
        "SGLANG_DISAGG_STAGING_POOL_SIZE_MB",
        "4096",
        "the PD staging pool's size: GPU memory the device pool does not get",
    ),
];

/// The variables of `env` that move memory and are not modelled: `(NAME, value,
/// effect)`, in the variables' order (the environment is a sorted map: deterministic).
pub fn unmodelled<'a>(
    env: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Vec<(&'a str, &'a str, &'static str)> {
    env.into_iter()
        .filter_map(|(k, v)| {
            let (_, default, effect) = MEMORY_ENV.iter().find(|(n, _, _)| n == k)?;
            (!same(v, default)).then_some((k.as_str(), v.as_str(), *effect))
        })
        .collect()
}

/// Whether `value` is true as `environ.py: EnvBool` reads it.
pub(super) fn is_true(value: &str) -> bool {
    same(value, "true")
}

/// `value` means `default` as SGLang reads it: the same text (case aside), or for a
/// boolean the spellings `environ.py: EnvBool` takes for it.
fn same(value: &str, default: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    match default {
        "true" => matches!(v.as_str(), "1" | "true" | "yes" | "y"),
        "false" => matches!(v.as_str(), "" | "0" | "false" | "no" | "n"),
        d => v == d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_changed_memory_variable_is_named_a_default_or_unknown_one_is_not() {
        let env: BTreeMap<String, String> = [
            ("SGLANG_DSV4_COMPRESS_STATE_DTYPE", "bf16"),
            ("SGLANG_SWA_EVICTION_INTERVAL", "1024"),
            ("SGLANG_HUGEPAGE_SIZE", ""),
            ("NCCL_DEBUG", "INFO"),
            ("SGLANG_MAMBA_CONV_DTYPE", "BFloat16"),
            ("SGLANG_DSV4_FP4_EXPERTS", "1"),
            ("SGLANG_OPT_USE_ONLINE_COMPRESS", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let u = unmodelled(&env);
        // The modelled variable is not named; an interval other than 128 is.
        assert_eq!(u.len(), 1);
        assert_eq!((u[0].0, u[0].1), ("SGLANG_SWA_EVICTION_INTERVAL", "1024"));
        assert!(u[0].2.contains("SWA request cap"));
    }
}
