//! What a release's argument parser and `arg_groups/hicache_hook.py` do with the
//! scenario's SGLang flags: flags the release does not have, its choices, and its
//! coercions. Called once by scenario resolution.

use super::{BufferOnlyWriteBack, Sglang};
use crate::scenario::ServerArgs;

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
    // with "unrecognized arguments" (0.5.14–0.5.20, and the what-ifs before #40135).
    if fraction_given && !rr.flags.hicache_host_memory_fraction {
        return Err((
            "server.hicache_host_memory_fraction",
            format!(
                "SGLang {} has no --hicache-host-memory-fraction (added in 0.5.21 by #40135): launch_server exits with `error: unrecognized arguments: --hicache-host-memory-fraction`",
                sglang.id()
            ),
        ));
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
    // `server_args.py: RADIX_EVICTION_POLICY_CHOICES` of the release.
    let choices = rr.controller.eviction_choices.choices();
    if !choices.contains(&server.radix_eviction_policy.as_str()) {
        let hint = crate::error::nearest(&server.radix_eviction_policy, choices.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err((
            "server.radix_eviction_policy",
            format!(
                "invalid choice `{}`{hint}: SGLang {} accepts {}",
                server.radix_eviction_policy,
                sglang.id(),
                choices.join(", ")
            ),
        ));
    }
    if server.radix_eviction_policy == "tlru" {
        notes.push(
            "--radix-eviction-policy tlru is accepted (SGLang 0.5.21+) but the replay does not model it".into(),
        );
    }
    // `arg_groups/hicache_hook.py`: buffer_only + write_back.
    if server.hicache_host_memory_mode == "buffer_only"
        && server.hicache_write_policy == "write_back"
    {
        match rr.controller.buffer_only_write_back {
            BufferOnlyWriteBack::Error => {} // the sizing-argument check raises SGLang's ValueError
            BufferOnlyWriteBack::CoerceWriteThrough => {
                server.hicache_write_policy = "write_through".into();
                notes.push(format!(
                    "SGLang {} switches --hicache-write-policy write_back to write_through in buffer_only mode",
                    sglang.id()
                ));
            }
        }
    }
    Ok(notes)
}
