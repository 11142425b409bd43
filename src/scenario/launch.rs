//! A pasted SGLang launch command (`python -m sglang.launch_server --model-path … --tp 8
//! --enable-hierarchical-cache --hicache-size 176 …`) turned into `server:` fields.
//!
//! Flags that matter to HiCache are mapped onto [`ServerArgs`](super::server::ServerArgs)
//! fields; other real SGLang flags are accepted and reported as not modelled; a flag
//! SGLang does not have is an error (with the nearest real flag).

use serde_json::{Map, Value};

use crate::error::{InputError, nearest};

/// How a modelled flag's value is read.
#[derive(Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Float,
    Str,
}

/// (flag, field, kind): the flags this simulator models, with SGLang's aliases.
const MODELLED: &[(&str, &str, Kind)] = &[
    ("--model-path", "model_path", Kind::Str),
    ("--model", "model_path", Kind::Str),
    ("--tp-size", "tp_size", Kind::Int),
    ("--tp", "tp_size", Kind::Int),
    ("--tensor-parallel-size", "tp_size", Kind::Int),
    ("--pp-size", "pp_size", Kind::Int),
    ("--pp", "pp_size", Kind::Int),
    ("--pipeline-parallel-size", "pp_size", Kind::Int),
    ("--dp-size", "dp_size", Kind::Int),
    ("--dp", "dp_size", Kind::Int),
    ("--data-parallel-size", "dp_size", Kind::Int),
    ("--enable-dp-attention", "enable_dp_attention", Kind::Bool),
    ("--nnodes", "nnodes", Kind::Int),
    ("--page-size", "page_size", Kind::Int),
    ("--mem-fraction-static", "mem_fraction_static", Kind::Float),
    ("--max-total-tokens", "max_total_tokens", Kind::Int),
    ("--kv-cache-dtype", "kv_cache_dtype", Kind::Str),
    (
        "--enable-hierarchical-cache",
        "enable_hierarchical_cache",
        Kind::Bool,
    ),
    ("--hicache-ratio", "hicache_ratio", Kind::Float),
    ("--hicache-size", "hicache_size", Kind::Float),
    (
        "--hicache-host-memory-fraction",
        "hicache_host_memory_fraction",
        Kind::Float,
    ),
    ("--hicache-write-policy", "hicache_write_policy", Kind::Str),
    (
        "--hicache-host-memory-mode",
        "hicache_host_memory_mode",
        Kind::Str,
    ),
    ("--hicache-io-backend", "hicache_io_backend", Kind::Str),
    ("--hicache-mem-layout", "hicache_mem_layout", Kind::Str),
    (
        "--hicache-storage-backend",
        "hicache_storage_backend",
        Kind::Str,
    ),
    (
        "--hicache-storage-prefetch-policy",
        "hicache_storage_prefetch_policy",
        Kind::Str,
    ),
    (
        "--radix-eviction-policy",
        "radix_eviction_policy",
        Kind::Str,
    ),
    ("--disable-radix-cache", "disable_radix_cache", Kind::Bool),
    ("--max-running-requests", "max_running_requests", Kind::Int),
    ("--chunked-prefill-size", "chunked_prefill_size", Kind::Int),
    ("--max-prefill-tokens", "max_prefill_tokens", Kind::Int),
];

/// Real SGLang flags (`server_args.py`) that do not change what this simulator
/// computes: accepted, reported as not modelled. `true` = takes a value.
const NOT_MODELLED: &[(&str, bool)] = &[
    ("--host", true),
    ("--port", true),
    ("--trust-remote-code", false),
    ("--tokenizer-path", true),
    ("--tokenizer-mode", true),
    ("--served-model-name", true),
    ("--context-length", true),
    ("--dtype", true),
    ("--quantization", true),
    ("--load-format", true),
    ("--revision", true),
    ("--download-dir", true),
    ("--attention-backend", true),
    ("--prefill-attention-backend", true),
    ("--decode-attention-backend", true),
    ("--sampling-backend", true),
    ("--grammar-backend", true),
    ("--moe-runner-backend", true),
    ("--moe-a2a-backend", true),
    ("--ep-size", true),
    ("--ep", true),
    ("--enable-ep-moe", false),
    ("--enable-deepep-moe", false),
    ("--deepep-mode", true),
    ("--cuda-graph-max-bs", true),
    ("--cuda-graph-bs", true),
    ("--disable-cuda-graph", false),
    ("--enable-torch-compile", false),
    ("--torch-compile-max-bs", true),
    ("--speculative-algorithm", true),
    ("--speculative-draft-model-path", true),
    ("--speculative-num-steps", true),
    ("--speculative-eagle-topk", true),
    ("--speculative-num-draft-tokens", true),
    ("--dist-init-addr", true),
    ("--node-rank", true),
    ("--schedule-policy", true),
    ("--schedule-conservativeness", true),
    ("--stream-interval", true),
    ("--random-seed", true),
    ("--log-level", true),
    ("--log-requests", false),
    ("--enable-metrics", false),
    ("--watchdog-timeout", true),
    ("--dist-timeout", true),
    ("--disaggregation-mode", true),
    ("--disaggregation-transfer-backend", true),
    ("--disaggregation-ib-device", true),
    ("--hicache-storage-backend-extra-config", true),
    ("--hicache-storage-prefetch-retry-poll-interval", true),
    ("--hicache-storage-prefetch-retry-max-attempts", true),
    ("--enable-mixed-chunk", false),
    ("--enable-nan-detection", false),
    ("--reasoning-parser", true),
    ("--tool-call-parser", true),
    ("--chat-template", true),
    ("--api-key", true),
    ("--skip-server-warmup", false),
    ("--enable-two-batch-overlap", false),
    ("--enable-dp-lm-head", false),
    ("--moe-dense-tp-size", true),
    ("--max-queued-requests", true),
    ("--model-loader-extra-config", true),
    ("--enable-multimodal", false),
    ("--swa-full-tokens-ratio", true),
    ("--disable-hybrid-swa-memory", false),
    ("--enable-cache-report", false),
    ("--decode-log-interval", true),
    ("--nsa-prefill-backend", true),
    ("--nsa-decode-backend", true),
];

/// Parsed launch command: the `server:` fields it sets, and the flags not modelled.
#[derive(Debug, Clone, Default)]
pub struct LaunchArgs {
    pub fields: Map<String, Value>,
    pub not_modelled: Vec<String>,
}

/// Splits a command line like a POSIX shell would for plain words and quotes
/// (backslash-newline continuations included).
fn shell_words(cmd: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut chars = cmd.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(n) => {
                    cur.push(n);
                    has = true;
                }
                None => {}
            },
            '\'' | '"' => {
                has = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(x) => cur.push(x),
                        None => return Err(format!("unclosed {c} quote")),
                    }
                }
            }
            c if c.is_whitespace() => {
                if has {
                    words.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            c => {
                cur.push(c);
                has = true;
            }
        }
    }
    if has {
        words.push(cur);
    }
    Ok(words)
}

/// Parses `cmd`; `source` and `line` locate it for errors.
pub fn parse_launch(
    cmd: &str,
    source: &str,
    line: Option<usize>,
) -> Result<LaunchArgs, InputError> {
    let err = |field: &str, msg: String| {
        InputError::new(source, msg)
            .line_opt(line)
            .field(field.to_string())
    };
    let words = shell_words(cmd).map_err(|m| err("server.launch", m))?;
    // Skip everything up to the launcher (`python -m sglang.launch_server`, `sglang serve`).
    let start = words
        .iter()
        .position(|w| {
            w == "sglang.launch_server" || w.ends_with("launch_server.py") || w == "serve"
        })
        .map(|i| i + 1)
        .unwrap_or_else(|| {
            words
                .iter()
                .position(|w| w.starts_with("--"))
                .unwrap_or(words.len())
        });
    let mut out = LaunchArgs::default();
    let mut i = start;
    while i < words.len() {
        let w = &words[i];
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (w.clone(), None),
        };
        if !flag.starts_with("--") {
            return Err(err(
                "server.launch",
                format!("unexpected word `{w}` in the launch command: expected a `--flag`"),
            ));
        }
        i += 1;
        let next_is_value = |i: usize| i < words.len() && !words[i].starts_with("--");
        if let Some(&(_, field, kind)) = MODELLED.iter().find(|(f, _, _)| *f == flag) {
            let value = match (kind, inline) {
                (Kind::Bool, Some(v)) => Value::Bool(v != "false" && v != "False" && v != "0"),
                (Kind::Bool, None) => Value::Bool(true),
                (_, Some(v)) => typed(kind, &v).map_err(|m| err(field, format!("{flag}: {m}")))?,
                (_, None) => {
                    if !next_is_value(i) {
                        return Err(err(field, format!("{flag} needs a value")));
                    }
                    i += 1;
                    typed(kind, &words[i - 1]).map_err(|m| err(field, format!("{flag}: {m}")))?
                }
            };
            out.fields.insert(field.to_string(), value);
        } else if let Some(&(_, takes)) = NOT_MODELLED.iter().find(|(f, _)| *f == flag) {
            if takes && inline.is_none() && next_is_value(i) {
                i += 1;
            }
            out.not_modelled.push(flag);
        } else {
            let all = MODELLED
                .iter()
                .map(|(f, _, _)| *f)
                .chain(NOT_MODELLED.iter().map(|(f, _)| *f));
            let hint = nearest(&flag, all)
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err(err(
                "server.launch",
                format!(
                    "SGLang has no flag `{flag}`{hint} (checked against the {} SGLang flags hicache-sim knows; drop it, or set the matching `server:` field)",
                    MODELLED.len() + NOT_MODELLED.len()
                ),
            ));
        }
    }
    Ok(out)
}

fn typed(kind: Kind, v: &str) -> Result<Value, String> {
    Ok(match kind {
        Kind::Int => Value::from(
            v.parse::<u64>()
                .map_err(|_| format!("expected a whole number, got `{v}`"))?,
        ),
        Kind::Float => {
            let f = v
                .parse::<f64>()
                .map_err(|_| format!("expected a number, got `{v}`"))?;
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| format!("`{v}` is not finite"))?
        }
        Kind::Str => Value::String(v.to_string()),
        Kind::Bool => Value::Bool(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_real_command() {
        let cmd = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --tp 8 \\\n --enable-hierarchical-cache --hicache-size 176 --page-size 64 --trust-remote-code --port=30000";
        let a = parse_launch(cmd, "s.yaml", Some(3)).unwrap();
        assert_eq!(a.fields["tp_size"], Value::from(8u64));
        assert_eq!(a.fields["hicache_size"], Value::from(176.0));
        assert_eq!(a.fields["page_size"], Value::from(64u64));
        assert_eq!(a.fields["enable_hierarchical_cache"], Value::Bool(true));
        assert_eq!(a.not_modelled, vec!["--trust-remote-code", "--port"]);
    }

    #[test]
    fn unknown_flag_is_an_error_with_a_suggestion() {
        let e = parse_launch(
            "python -m sglang.launch_server --hicache-sise 135",
            "s.yaml",
            Some(7),
        )
        .unwrap_err();
        assert_eq!(e.line, Some(7));
        assert!(
            e.message.contains("SGLang has no flag `--hicache-sise`"),
            "{}",
            e.message
        );
        assert!(e.message.contains("--hicache-size"), "{}", e.message);
        let e = parse_launch("sglang serve --tp eight", "s.yaml", None).unwrap_err();
        assert!(e.message.contains("whole number"));
    }
}
