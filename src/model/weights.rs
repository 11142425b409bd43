//! Parameters of a model by part, from its `config.json`, and the bytes of weights each
//! rank holds.
//!
//! The count follows the module shapes of SGLang's model files (`models/llama.py`,
//! `qwen2.py`, `qwen3_moe.py`, `deepseek_v2.py`, `gpt_oss.py`, …): per decoder layer the
//! attention projections (GQA: q/k/v/o; MLA: q_a/q_b or q, kv_a, kv_b, o, plus the DSA
//! indexer), a dense MLP (gate/up/down) or a MoE block (router, routed experts, shared
//! experts), two norms; the embedding and the LM head (none when tied); MTP layers
//! (one decoder layer plus `eh_proj` each). Biases and small tensors (norms, rotary
//! tables, expert-score corrections) are a few MB at most and not all counted: when the
//! checkpoint's `model.safetensors.index.json` is at hand its `metadata.total_size` is
//! the exact total and the counts only split it into parts.

use serde::Serialize;
use serde_json::Value;

use super::geometry::Attention;
use super::parallel::ParallelLayout;
use super::quant::{Quantization, WeightFormat};

/// Parameters (elements, not bytes) of one model, by part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ParamCounts {
    pub embed: u64,
    /// 0 when `tie_word_embeddings`.
    pub lm_head: u64,
    /// Attention of all decoder layers (projections; linear-attention / SSM mixers).
    pub attention: u64,
    /// Dense MLPs (layers before `first_k_dense_replace`, or every layer of a dense model).
    pub dense_mlp: u64,
    pub routed_experts: u64,
    pub shared_experts: u64,
    /// MoE routers (`gate`): kept in bf16 by every quantisation.
    pub router: u64,
    /// RMSNorm weights.
    pub norms: u64,
    /// MTP / NextN layers (loaded by the draft worker only).
    pub mtp: u64,
    /// The routed experts of the MTP layers (already in `mtp`): stored in
    /// `routed_expert_format` like the decoder's (DeepSeek-V4's `mtp.0.ffn.experts` are
    /// MXFP4 in the official checkpoints).
    pub mtp_routed_experts: u64,
    /// `kv_b_proj` of the decoder layers of an MLA / MLA-DSA model
    /// (`kv_lora_rank × heads × (qk_nope_head_dim + v_head_dim)` a layer; already in
    /// `attention`): the matrix SGLang copies into `w_kc` / `w_vc` after the load
    /// ([`PartBytes::mla_absorbed`]). 0 for other attention kinds.
    pub mla_kv_b: u64,
    /// The vision encoder and its projector (`vision_config`: [`vision_params`]); loaded
    /// by the target model, in bf16 whatever the checkpoint's format.
    pub vision: u64,
    /// Decoder layers (for per-layer exclusions of a quantisation).
    pub layers: u32,
    /// The routed experts' own format when the checkpoint stores them unlike the rest
    /// (DeepSeek-V4: `expert_dtype: fp4` is MXFP4 — `model_config.py`'s
    /// `is_fp4_experts`, `SGLANG_DSV4_FP4_EXPERTS` on by default — and the ModelOpt
    /// builds' `moe_quant_algo: NVFP4`).
    pub routed_expert_format: Option<WeightFormat>,
    /// One routed expert's shape: the width it works in, its intermediate size and its
    /// matrices (3 gated, 2 for relu²); 0 without experts.
    pub expert_hidden: u64,
    pub moe_intermediate: u64,
    pub expert_mats: u64,
    /// The input embedding is whole on every rank under `--enable-dp-attention`
    /// ([`PartBytes::embed_replicated_under_dp_attention`]).
    #[serde(skip)]
    pub embed_replicated_under_dp_attention: bool,
    /// Linear layers every rank holds whole, in the checkpoint's attention format
    /// (DeepSeek-V4: [`dsv4_replicated_params`]'s fused `wqkv_a` and C4 indexer `wq_b`).
    /// Not in `attention`.
    pub replicated_linear: u64,
    /// bf16 linear layers every rank holds whole whatever the checkpoint's format
    /// (DeepSeek-V4: the compressors' `wkv_gate`, the indexers' `weights_proj`).
    pub replicated_bf16: u64,
    /// 4-byte (fp32 / int32) parameters every rank holds whole (DeepSeek-V4: the
    /// hyper-connection mixers, compressor `ape` and norms, attention sinks, router
    /// biases, the hash layers' `tid2eid`).
    pub replicated_4byte: u64,
    /// Bytes of non-parameter buffers every rank builds with the model, before the
    /// weights load (DeepSeek-V4's RoPE tables: [`dsv4_rope_table_bytes`]). Not in
    /// the checkpoint: counted by `ResolvedModel::weights_as_loaded_on`.
    pub load_buffers: u64,
}

impl ParamCounts {
    pub fn total(&self) -> u64 {
        self.embed
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.router
            + self.norms
            + self.mtp
            + self.vision
            + self.replicated_linear
            + self.replicated_bf16
            + self.replicated_4byte
    }

    /// Counts from a config (the text config of a multimodal model; vision towers are
    /// not counted).
    pub fn from_config(
        root: &Value,
        text: &Value,
        attention: &Attention,
        layers: u32,
        mtp_layers: u32,
    ) -> ParamCounts {
        let g = |k: &str| text.get(k).and_then(Value::as_u64);
        let hidden = g("hidden_size").unwrap_or(0);
        let vocab = g("vocab_size").unwrap_or(0);
        let heads = g("num_attention_heads").unwrap_or(0);
        let tied = text
            .get("tie_word_embeddings")
            .or_else(|| root.get("tie_word_embeddings"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let per_layer_attn = attention_params(text, attention, hidden, heads);
        let per_layer_kv_b = mla_kv_b_params(text, attention, heads);
        let per_layer_linear = linear_mixer_params(text, attention, hidden);
        // Gated MLPs (SwiGLU: gate, up, down) unless the activation is relu² (up, down).
        let act = text
            .get("mlp_hidden_act")
            .or_else(|| text.get("hidden_act"))
            .and_then(Value::as_str)
            .unwrap_or("silu");
        let mats = if act == "relu2" { 2 } else { 3 };
        // MoE layout.
        let experts = g("n_routed_experts")
            .or_else(|| g("num_experts"))
            .or_else(|| g("num_local_experts"))
            .unwrap_or(0);
        let inter = g("intermediate_size_mlp")
            .or_else(|| g("intermediate_size"))
            .unwrap_or(0);
        let moe_inter = g("moe_intermediate_size")
            .or_else(|| g("intermediate_size"))
            .unwrap_or(inter);
        let shared_inter = g("shared_expert_intermediate_size")
            .or_else(|| g("moe_shared_expert_intermediate_size"))
            .unwrap_or_else(|| {
                g("n_shared_experts")
                    .or_else(|| g("num_shared_experts"))
                    .unwrap_or(0)
                    * moe_inter
            });
        // Latent MoE (Nemotron-3 Super/Ultra `moe_latent_size`, Kimi-K3
        // `routed_expert_hidden_size`): the routed experts work in a smaller width, with
        // a down- and an up-projection around them.
        let expert_hidden = g("moe_latent_size")
            .or_else(|| g("routed_expert_hidden_size"))
            .unwrap_or(hidden);
        let latent_proj = if expert_hidden != hidden {
            2 * hidden * expert_hidden
        } else {
            0
        };
        let first_dense = g("first_k_dense_replace").unwrap_or(0);
        let moe_freq = g("moe_layer_freq").unwrap_or(1).max(1);
        let interleave = g("interleave_moe_layer_step").unwrap_or(1).max(1);
        let mlp_only: Vec<u64> = text
            .get("mlp_only_layers")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let mlp_types = text.get("mlp_layer_types").and_then(Value::as_array);
        let sparse_step = g("decoder_sparse_step").unwrap_or(1).max(1);
        // Nemotron-H: each layer is one block (`M` Mamba, `*` attention, `-` MLP, `E`
        // MoE).
        let pattern: Option<Vec<char>> = match text.get("layers_block_type") {
            Some(Value::Array(list)) => Some(
                list.iter()
                    .map(|v| match v.as_str() {
                        Some("mamba") => 'M',
                        Some("attention") => '*',
                        Some("moe") => 'E',
                        _ => '-',
                    })
                    .collect(),
            ),
            _ => text
                .get("hybrid_override_pattern")
                .and_then(Value::as_str)
                .map(|p| p.chars().collect()),
        };
        let is_moe_layer = |l: u64| match mlp_types {
            Some(t) => t.get(l as usize).and_then(Value::as_str) == Some("sparse"),
            None => {
                experts > 0
                    && l >= first_dense
                    && l.is_multiple_of(moe_freq)
                    && !mlp_only.contains(&l)
                    && (l + 1).is_multiple_of(sparse_step)
                    && (l + 1).is_multiple_of(interleave)
            }
        };
        let full_layer = |l: u64| attention.is_full_attention_layer(text, l as u32);
        let routed_expert_format = match (
            text.get("expert_dtype").and_then(Value::as_str),
            root.pointer("/quantization_config/moe_quant_algo")
                .and_then(Value::as_str),
        ) {
            (_, Some(a)) if a.eq_ignore_ascii_case("NVFP4") => Some(WeightFormat::Nvfp4),
            (Some("fp4"), _) => Some(WeightFormat::Mxfp4),
            _ => None,
        };
        let mut p = ParamCounts {
            layers,
            routed_expert_format,
            expert_hidden: if experts > 0 { expert_hidden } else { 0 },
            moe_intermediate: if experts > 0 { moe_inter } else { 0 },
            expert_mats: if experts > 0 { mats } else { 0 },
            embed: vocab * hidden,
            lm_head: if tied { 0 } else { vocab * hidden },
            norms: hidden, // final norm
            vision: root.get("vision_config").map(vision_params).unwrap_or(0),
            embed_replicated_under_dp_attention: matches!(attention, Attention::Dsv4 { .. }),
            ..Default::default()
        };
        for l in 0..layers as u64 {
            if let Some(pat) = &pattern {
                p.norms += hidden;
                match pat.get(l as usize) {
                    Some('*') => p.attention += per_layer_attn,
                    Some('M') => p.attention += per_layer_linear,
                    Some('E') => {
                        p.routed_experts += experts * mats * expert_hidden * moe_inter;
                        p.shared_experts += mats * hidden * shared_inter + latent_proj;
                        p.router += experts * hidden;
                    }
                    _ => p.dense_mlp += mats * hidden * inter,
                }
                continue;
            }
            p.attention += if full_layer(l) {
                p.mla_kv_b += per_layer_kv_b;
                per_layer_attn
            } else {
                per_layer_linear
            };
            p.norms += 2 * hidden;
            if let Attention::Dsv4 {
                compress_ratios, ..
            } = attention
            {
                let ratio = compress_ratios.get(l as usize).copied().unwrap_or(0);
                let r = dsv4_replicated_params(text, ratio, l < g("num_hash_layers").unwrap_or(0));
                p.replicated_linear += r.linear;
                p.replicated_bf16 += r.bf16;
                p.replicated_4byte += r.four_byte;
                p.norms += r.norms;
            }
            if is_moe_layer(l) {
                p.routed_experts += experts * mats * expert_hidden * moe_inter;
                p.shared_experts += mats * hidden * shared_inter + latent_proj;
                p.router += experts * hidden;
            } else {
                p.dense_mlp += mats * hidden * inter;
            }
        }
        // An MTP layer: a decoder layer (MoE when the model is) + eh_proj (2h → h) +
        // its norms.
        let mtp_layer = per_layer_attn
            + if experts > 0 {
                experts * mats * expert_hidden * moe_inter
                    + mats * hidden * shared_inter
                    + latent_proj
                    + experts * hidden
            } else {
                mats * hidden * inter
            }
            + 2 * hidden * hidden
            + 4 * hidden;
        // DeepSeek-V4: the MTP layer's own replicated `wqkv_a` (its `compress_ratios`
        // entry is 0: no compressor); the model's `hc_head` mixer (fp32, whole on every
        // rank: `models/deepseek_v4.py: make_hc_head_params`).
        let mtp_layer = mtp_layer
            + if matches!(attention, Attention::Dsv4 { .. }) {
                dsv4_replicated_params(text, 0, false).linear
            } else {
                0
            };
        if let Attention::Dsv4 {
            compress_ratios, ..
        } = attention
        {
            let hc = g("hc_mult").unwrap_or(0);
            p.replicated_4byte += hc * hc * hidden + hc + 1;
            let n = (layers as usize).min(compress_ratios.len());
            p.load_buffers = dsv4_rope_table_bytes(text, &compress_ratios[..n]);
        }
        p.mtp = mtp_layers as u64 * mtp_layer;
        p.mtp_routed_experts = mtp_layers as u64 * experts * mats * expert_hidden * moe_inter;
        p
    }

    /// Bytes of the checkpoint under `quant`: Linear layers in the quantised format
    /// unless excluded; embeddings, LM head, norms and routers in bf16 (SGLang's
    /// quantised linear methods: `layers/quantization/*`, every format leaves
    /// `VocabParallelEmbedding`, `ParallelLMHead`, `RMSNorm` and the MoE `gate` alone).
    /// ModelOpt / compressed-tensors / mxfp4 exclusions are matched on the part names
    /// `self_attn`, `shared_experts`, `mlp`, `experts` (`lm_head` and `embed_tokens` are
    /// bf16 anyway). W4AFP8: routed experts int4 (group 128), the rest fp8.
    pub fn bytes(&self, quant: &Quantization) -> PartBytes {
        let f = quant.format;
        // The share of a part's layers the exclusions keep unquantised.
        let kept = |part: &str| excluded_share(&quant.exclude, part, self.layers);
        let q = |n: u64, part: &str| {
            if f == WeightFormat::Bf16 {
                return 2 * n;
            }
            let bf16 = (n as f64 * kept(part)).round() as u64;
            2 * bf16 + f.bytes(n - bf16)
        };
        let experts = match f {
            WeightFormat::W4aFp8 => {
                WeightFormat::Int4 { group_size: 128 }.bytes(self.routed_experts)
            }
            _ if self.routed_expert_format.is_some() && f != WeightFormat::Bf16 => self
                .routed_expert_format
                .map(|e| e.bytes(self.routed_experts))
                .unwrap_or(0),
            // gpt-oss (mxfp4) quantises the experts only (`modules_to_not_convert`:
            // attention, router, embeddings, LM head).
            _ => q(self.routed_experts, "experts"),
        };
        let (attn, dense, shared) = match f {
            WeightFormat::Mxfp4 => (
                2 * self.attention,
                2 * self.dense_mlp,
                2 * self.shared_experts,
            ),
            _ => (
                q(self.attention, "self_attn"),
                q(self.dense_mlp, "mlp"),
                q(self.shared_experts, "shared_experts"),
            ),
        };
        PartBytes {
            embed: 2 * self.embed,
            lm_head: 2 * self.lm_head,
            attention: attn,
            dense_mlp: dense,
            routed_experts: experts,
            shared_experts: shared,
            replicated: 2 * (self.router + self.norms + self.replicated_bf16)
                + 4 * self.replicated_4byte
                // In the attention's format, like `attn` above.
                + match f {
                    WeightFormat::Mxfp4 => 2 * self.replicated_linear,
                    _ => q(self.replicated_linear, "self_attn"),
                },
            mla_absorbed: 2 * self.mla_kv_b,
            vision: 2 * self.vision,
            embed_replicated_under_dp_attention: self.embed_replicated_under_dp_attention,
            mtp: match (f, self.routed_expert_format) {
                (WeightFormat::Bf16, _) => 2 * self.mtp,
                (_, Some(e)) => {
                    f.bytes(self.mtp - self.mtp_routed_experts) + e.bytes(self.mtp_routed_experts)
                }
                _ => f.bytes(self.mtp),
            },
        }
    }
}

/// The share of `layers` whose `part` module an exclusion list names: each layer's
/// module (`model.layers.{l}.self_attn.q_proj`, `….mlp.experts.0.up_proj`,
/// `….mlp.shared_experts.up_proj`, `….mlp.up_proj`, under the `model.`,
/// `model.language_model.` and `language_model.model.` prefixes) matched against ModelOpt
/// globs (`fnmatch`) and compressed-tensors `re:` patterns (`re.match`: anchored at the
/// start; one level of `(a|b)` alternation, `.*`, `\.`).
fn excluded_share(patterns: &[String], part: &str, layers: u32) -> f64 {
    if patterns.is_empty() || layers == 0 {
        return 0.0;
    }
    let module = match part {
        "self_attn" => "self_attn.q_proj",
        "experts" => "mlp.experts.0.up_proj",
        "shared_experts" => "mlp.shared_experts.up_proj",
        _ => "mlp.up_proj",
    };
    let globs: Vec<String> = patterns.iter().flat_map(|p| to_globs(p)).collect();
    let hit = (0..layers)
        .filter(|l| {
            [
                "model.layers.",
                "model.language_model.layers.",
                "language_model.model.layers.",
            ]
            .iter()
            .any(|pre| {
                let name = format!("{pre}{l}.{module}");
                globs
                    .iter()
                    .any(|g| glob_match(g.as_bytes(), name.as_bytes()))
            })
        })
        .count();
    hit as f64 / layers as f64
}

/// A ModelOpt glob as is; a `re:` regex as globs (anchored at the start, so a trailing
/// `*`; `(a|b)` expanded; `.*` → `*`; `\.` → `.`; a lone `.` → `?`).
fn to_globs(p: &str) -> Vec<String> {
    let Some(re) = p.strip_prefix("re:") else {
        return vec![p.to_string()];
    };
    let mut alts = vec![String::new()];
    let mut rest = re;
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let opts: Vec<&str> = inner[..end].split('|').collect();
            alts = alts
                .iter()
                .flat_map(|a| opts.iter().map(move |o| format!("{a}{o}")))
                .collect();
            rest = &inner[end + 1..];
            continue;
        }
        let c = rest.chars().next().expect("not empty");
        let (tok, n): (String, usize) = if rest.starts_with(".*") {
            ("*".into(), 2)
        } else if rest.starts_with("\\.") {
            (".".into(), 2)
        } else if c == '.' {
            ("?".into(), 1)
        } else {
            (c.to_string(), c.len_utf8())
        };
        for a in alts.iter_mut() {
            a.push_str(&tok);
        }
        rest = &rest[n..];
    }
    alts.into_iter().map(|a| format!("{a}*")).collect()
}

/// `fnmatch`: `*` any run, `?` one character.
fn glob_match(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob_match(&p[1..], s) || (!s.is_empty() && glob_match(p, &s[1..])),
        (Some(b'?'), Some(_)) => glob_match(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => glob_match(&p[1..], &s[1..]),
        _ => false,
    }
}

/// Bytes of a checkpoint by part (see [`ParamCounts::bytes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PartBytes {
    pub embed: u64,
    pub lm_head: u64,
    pub attention: u64,
    pub dense_mlp: u64,
    pub routed_experts: u64,
    pub shared_experts: u64,
    /// Norms, routers and the other parts every rank holds whole (DeepSeek-V4:
    /// [`dsv4_replicated_params`]).
    pub replicated: u64,
    pub mtp: u64,
    /// Not in the checkpoint: the bf16 `w_kc` / `w_vc` an MLA model's attention keeps
    /// beside its `kv_b_proj` once loaded (2 bytes a `kv_b_proj` parameter, whatever the
    /// checkpoint's format). `models/deepseek_common/deepseek_weight_loader.py:
    /// DeepseekV2WeightLoaderMixin.post_load_weights` (0.5.14–0.5.23, the same rule in
    /// each; `DeepseekV2/V3/V32ForCausalLM`, `GlmMoeDsaForCausalLM`, `Glm4MoeLite…`,
    /// `MistralLarge3…`): the kv_b weight — an fp8 one with 128×128 blocks dequantised
    /// to bf16 by `block_quant_dequant` on CUDA, an AWQ one by `awq_dequantize`, a bf16
    /// one as is — is split into `w_kc` and `w_vc` and each made `.contiguous()` in a
    /// transposed layout, so both are new bf16 tensors, while `kv_b_proj` stays for the
    /// MHA prefill path. Not modelled: `SGLANG_USE_DEEPGEMM_BMM=1` on Hopper (fp8 copies,
    /// off by default) and ROCm (`block_quant_to_tensor_quant`: fp8 copies).
    pub mla_absorbed: u64,
    /// The vision encoder (bf16), sharded over the TP group like the decoder's
    /// projections (its `VisionAttention` and MLP are TP-parallel linears unless
    /// `--mm-enable-dp-encoder`, not modelled).
    pub vision: u64,
    /// The model's `VocabParallelEmbedding` is built with `enable_tp=not
    /// is_dp_attention_enabled()`, so under DP attention every rank holds all of it:
    /// DeepSeek-V4 (`models/deepseek_v4.py: DeepseekV4Model.__init__`, 0.5.14–0.5.23,
    /// the same line in each). Other models shard it over the attention-TP group
    /// ([`Self::per_rank`]).
    #[serde(skip)]
    pub embed_replicated_under_dp_attention: bool,
}

impl PartBytes {
    /// The target model's bytes (MTP layers excluded: they load with a NextN draft).
    pub fn target(&self) -> u64 {
        self.embed
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.replicated
            + self.vision
    }

    pub fn total(&self) -> u64 {
        self.target() + self.mtp
    }

    /// Scales every part so they add up to `total` (the safetensors index's
    /// `metadata.total_size`, MTP included): the exact checkpoint split like the count.
    pub fn scaled_to(&self, total: u64) -> PartBytes {
        let sum = self.total().max(1) as u128;
        let s = |x: u64| (x as u128 * total as u128 / sum) as u64;
        PartBytes {
            embed: s(self.embed),
            lm_head: s(self.lm_head),
            attention: s(self.attention),
            dense_mlp: s(self.dense_mlp),
            routed_experts: s(self.routed_experts),
            shared_experts: s(self.shared_experts),
            replicated: s(self.replicated),
            mtp: s(self.mtp),
            vision: s(self.vision),
            // Not on disk: the copies are 2 bytes a `kv_b_proj` parameter, not a share
            // of the checkpoint.
            mla_absorbed: self.mla_absorbed,
            embed_replicated_under_dp_attention: self.embed_replicated_under_dp_attention,
        }
    }

    /// Bytes of weights one rank holds after loading, without the MTP draft.
    ///
    /// SGLang's sharding (0.5.21–0.5.23):
    /// - attention projections over the attention-TP group (`layers/linear.py` with
    ///   `layers/dp_attention.py`: `attn_tp_size = tp / dp` under
    ///   `--enable-dp-attention`, so DP attention replicates them `dp` times);
    /// - the input embedding over the attention-TP group too
    ///   (`layers/vocab_parallel_embedding.py: get_embedding_tp_kwargs`, `models/qwen2.py`,
    ///   `glm4_moe.py`, `gpt_oss.py`: `use_attn_tp_group=is_dp_attention_enabled()`),
    ///   except where the model replicates it under DP attention
    ///   ([`Self::embed_replicated_under_dp_attention`]: DeepSeek-V4);
    /// - the LM head over the whole TP group (`ParallelLMHead`, `--enable-dp-lm-head`
    ///   off);
    /// - routed experts over TP × EP together (`--ep-size` splits the experts, the rest of
    ///   TP splits each expert: `tp` shares either way), shared experts and dense MLPs
    ///   over TP (`--moe-dense-tp-size` unset);
    /// - norms and routers on every rank;
    /// - an MLA model's bf16 `w_kc` / `w_vc` ([`Self::mla_absorbed`]) over the
    ///   attention-TP group, like the `kv_b_proj` they copy.
    ///
    /// PP: the decoder layers divide by `pp_size`; the first stage holds the embedding,
    /// the last the LM head; the larger is taken.
    pub fn per_rank(&self, layout: &ParallelLayout) -> u64 {
        let tp = layout.tp_size.max(1) as u64;
        let attn_tp = layout.attn_tp_size().max(1);
        let pp = layout.pp_size.max(1) as u64;
        let layers = self.attention.div_ceil(attn_tp)
            + self.mla_absorbed.div_ceil(attn_tp)
            + (self.routed_experts + self.shared_experts + self.dense_mlp).div_ceil(tp)
            + self.replicated;
        let vision = self.vision.div_ceil(tp);
        let embed = if self.embed_replicated_under_dp_attention && layout.enable_dp_attention {
            self.embed
        } else {
            self.embed.div_ceil(attn_tp)
        };
        let lm_head = self.lm_head.div_ceil(tp);
        // The vision encoder sits with the embedding on the first PP stage.
        if pp == 1 {
            layers + embed + lm_head + vision
        } else {
            layers.div_ceil(pp) + (embed + vision).max(lm_head)
        }
    }
}

/// Parameters of a vision encoder and its projector, from `vision_config`.
///
/// The Qwen-VL family's shapes (`models/qwen2_5_vl.py`, `qwen3_vl.py`, `qwen3_5.py`:
/// `depth` blocks of LayerNorm × 2, fused `qkv` and `proj` with biases and an MLP —
/// `fc1`/`fc2`, or gate/up/down when `hidden_act` is `silu` — a Conv3d patch embedding,
/// learned position embeddings, and one patch merger per `deepstack_visual_indexes`
/// entry besides the final one: LayerNorm, `h·m² → h·m²`, `h·m² → out_hidden_size`);
/// other encoders (SigLIP, CLIP, MoonViT: `num_hidden_layers` / `vt_num_hidden_layers`)
/// by the same block shape without the Qwen mergers. Biases of the blocks are counted;
/// a few MB of small tensors (class tokens, norms of projectors) are not. Checked against
/// two Qwen3-VL start-up logs (the log corpus: weights within 0.3 %), not against each
/// release's model files.
pub fn vision_params(v: &Value) -> u64 {
    let g = |keys: &[&str]| keys.iter().find_map(|k| v.get(*k).and_then(Value::as_u64));
    let depth = g(&["depth", "num_hidden_layers", "vt_num_hidden_layers"]).unwrap_or(0);
    let h = g(&["hidden_size", "embed_dim", "vt_hidden_size"]).unwrap_or(0);
    if depth == 0 || h == 0 {
        return 0;
    }
    let inter = g(&["intermediate_size", "vt_intermediate_size"]).unwrap_or(4 * h);
    let gated = v.get("hidden_act").and_then(Value::as_str) == Some("silu");
    let mlp = if gated {
        3 * h * inter + 2 * inter + h
    } else {
        2 * h * inter + inter + h
    };
    let block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + mlp;
    let patch = g(&["patch_size"]).unwrap_or(14);
    let temporal = g(&["temporal_patch_size"]).unwrap_or(1);
    let channels = g(&["in_channels", "num_channels"]).unwrap_or(3);
    let patch_embed = channels * temporal * patch * patch * h + h;
    let pos = g(&["num_position_embeddings"]).unwrap_or(0) * h;
    let mergers = match g(&["out_hidden_size"]) {
        Some(out) => {
            let m = g(&["spatial_merge_size"]).unwrap_or(2);
            let hm = h * m * m;
            let one = 2 * hm + (hm * hm + hm) + (hm * out + out);
            let deepstack = v
                .get("deepstack_visual_indexes")
                .and_then(Value::as_array)
                .map_or(0, |a| a.len() as u64);
            one * (1 + deepstack)
        }
        None => 0,
    };
    depth * block + patch_embed + pos + mergers
}

/// Bytes SGLang's mxfp4 MoE method allocates on one rank beyond the checkpoint's
/// routed experts, for a checkpoint whose `quant_method` is `mxfp4` (gpt-oss) at TP
/// `tp`, on a GPU of compute capability `sm_major` (0.5.21–0.5.23, the default MoE
/// runner, EP 1).
///
/// `layers/quantization/mxfp4.py: Mxfp4MoEMethod.create_weights` allocates per local
/// expert `w13` (`2·I × H/2` u8) and `w2` (`H × I/2`) with ue8m0 scales per 32
/// (`2·I × H/32`, `H × I/32`) and bf16 biases (`2·I`, `H`) at padded sizes:
/// - SM100: `arg_groups/model_overrides/gpt_oss.py` picks `flashinfer_mxfp4`, so
///   `layers/moe/fused_moe_triton/layer.py: FusedMoE.__init__` rounds `H` up to 256 and
///   `create_weights` the per-partition `I` up to 128 (`H` to 128);
/// - SM90: `triton_kernel` (EP 1): `I` up to 64, `H` as is.
///
/// Other GPUs: 0 (not modelled). The padding is the difference between the padded
/// buffers and the same buffers at the checkpoint's `I / tp` and `H`.
pub fn mxfp4_moe_padding_per_rank(p: &ParamCounts, tp: u64, sm_major: Option<u32>) -> u64 {
    let (h, i, mats) = (p.expert_hidden, p.moe_intermediate, p.expert_mats);
    if h == 0 || i == 0 || mats == 0 {
        return 0;
    }
    let up = |x: u64, a: u64| x.div_ceil(a) * a;
    let i_part = i / tp.max(1);
    let (h_pad, i_pad) = match sm_major {
        Some(10) => (up(up(h, 256), 128), up(i_part, 128)),
        Some(9) => (h, up(i_part, 64)),
        _ => return 0,
    };
    // One expert's buffers: weights (½ B), scales (1/32 B) and bf16 biases.
    let buffers = |i: u64, h: u64| {
        let w = 2 * i * h / 2 + h * i / 2;
        let scales = 2 * i * (h / 32) + h * (i / 32);
        w + scales + 2 * (2 * i) + 2 * h
    };
    // Experts over all layers: every one is local at EP 1.
    let experts = p.routed_experts / (mats * h * i);
    experts * buffers(i_pad, h_pad).saturating_sub(buffers(i_part, h))
}

/// Parameters of one linear-attention / SSM mixer (Gated DeltaNet: `in_proj_qkvz`,
/// `in_proj_ba`, `conv1d`, `out_proj`; Mamba2: `in_proj` to `2 × intermediate + 2 ×
/// n_groups × state + heads`, `conv1d`, `out_proj`; KDA: q/k/v/g/o projections of
/// `heads × head_dim`). 0 for models without such layers.
fn linear_mixer_params(text: &Value, attention: &Attention, hidden: u64) -> u64 {
    use super::geometry::LinearState;
    let g = |k: &str| text.get(k).and_then(Value::as_u64).unwrap_or(0);
    match attention {
        Attention::GqaLinear { .. } => {
            let (kh, kd, vh, vd) = (
                g("linear_num_key_heads"),
                g("linear_key_head_dim"),
                g("linear_num_value_heads"),
                g("linear_value_head_dim"),
            );
            let conv_dim = 2 * kh * kd + vh * vd;
            hidden * (2 * kh * kd + 2 * vh * vd)
                + hidden * 2 * vh
                + conv_dim * g("linear_conv_kernel_dim")
                + vh * vd * hidden
        }
        _ => match attention.linear_state() {
            Some(LinearState::Mamba2 {
                intermediate_size,
                n_groups,
                num_heads,
                state_size,
                conv_kernel,
                ..
            }) => {
                let i = intermediate_size as u64;
                let conv_dim = i + 2 * n_groups as u64 * state_size as u64;
                hidden * (i + conv_dim + num_heads as u64)
                    + conv_dim * conv_kernel as u64
                    + i * hidden
            }
            Some(LinearState::Kda {
                num_heads,
                head_dim,
                ..
            }) => 5 * hidden * num_heads as u64 * head_dim as u64,
            None => 0,
        },
    }
}

/// Parameters of one DeepSeek-V4 decoder layer that SGLang holds whole on every rank,
/// by the dtype they have once loaded ([`dsv4_replicated_params`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dsv4Replicated {
    /// Quantised linear layers (the checkpoint's attention format: fp8 with 128 × 128
    /// block scales for the official and FP8 builds).
    pub linear: u64,
    /// bf16 linear layers.
    pub bf16: u64,
    /// fp32 / int32 parameters.
    pub four_byte: u64,
    /// bf16 RMSNorm weights (`q_norm`, `kv_norm`).
    pub norms: u64,
}

/// The parameters of DeepSeek-V4 decoder layer `l` (its `compress_ratios[l]` is
/// `ratio`; `hash` when `l < num_hash_layers`) that every rank holds whole, whatever the
/// TP size and with or without DP attention: SGLang builds them as `ReplicatedLinear` or
/// plain `nn.Parameter`s. The same in 0.5.18–0.5.23 (each release's files read):
/// - `models/deepseek_v4.py: MqaAttentionBase.__init__`: `wqkv_a`, a `ReplicatedLinear`
///   of `hidden → q_lora_rank + head_dim` with the model's quant config (fp8), the
///   checkpoint's `wq_a` and `wkv` fused (`SGLANG_OPT_FUSE_WQA_WKV`, on by default;
///   off, the two are `ReplicatedLinear`s of the same bytes); `attn_sink`, fp32
///   `[heads]`; `q_norm`, `kv_norm` (bf16). Only `wq_b`, `wo_a`, `wo_b` are split over
///   the attention-TP group ([`attention_params`]).
/// - `MQALayer.__init__`: a ratio-4 or ratio-128 layer builds a `Compressor`
///   (`layers/attention/dsv4/compressor.py: Compressor.__init__`): `wkv_gate`, a
///   `ReplicatedLinear` of `hidden → 2 · coff · head_dim` in bf16 with no quant config
///   (`coff` 2 at ratio 4, whose windows overlap, 1 at ratio 128; the checkpoint's
///   `wkv` and `wgate`), `ape` fp32 `[ratio, coff · head_dim]`, its norm's fp32 weight
///   `[head_dim]`. A ratio-4 layer also builds a `C4Indexer`
///   (`layers/attention/dsv4/indexer.py: C4Indexer.__init__`): `wq_b`, a
///   `ReplicatedLinear` of `q_lora_rank → index_n_heads · index_head_dim` with the
///   model's quant config (fp8); `weights_proj`, `hidden → index_n_heads` in bf16; and
///   its own ratio-4 `Compressor` of `index_head_dim`.
/// - `DeepseekV4DecoderLayerBase.__init__` → `make_hc_mixing_params`: the attention and
///   FFN hyper-connection mixers, fp32 `[(2 + hc_mult) · hc_mult, hc_mult · hidden]`
///   each, with `[(2 + hc_mult) · hc_mult]` bases and `[3]` scales.
/// - `models/deepseek_v2.py: MoEGate` (the router's bf16 weight is counted in
///   `router`): an fp32 `e_score_correction_bias` `[n_routed_experts]` (`noaux_tc`), or
///   on a hash layer `layers/moe/hash_topk.py`'s int32 `tid2eid` `[vocab_size,
///   num_experts_per_tok]` instead.
pub fn dsv4_replicated_params(text: &Value, ratio: u32, hash: bool) -> Dsv4Replicated {
    let g = |k: &str| text.get(k).and_then(Value::as_u64).unwrap_or(0);
    let hidden = g("hidden_size");
    let hd = g("head_dim");
    let q_lora = text
        .get("q_lora_rank")
        .and_then(Value::as_u64)
        .unwrap_or(hidden);
    let (idx_heads, idx_dim) = (g("index_n_heads"), g("index_head_dim"));
    let hc = g("hc_mult");
    let mix = (2 + hc) * hc;
    let mut r = Dsv4Replicated {
        linear: hidden * (q_lora + hd),
        norms: q_lora + hd,
        four_byte: g("num_attention_heads") + 2 * (mix * hc * hidden + mix + 3),
        ..Default::default()
    };
    r.four_byte += if hash {
        g("vocab_size") * g("num_experts_per_tok")
    } else {
        g("n_routed_experts")
    };
    // A `Compressor` of `dim` at `ratio`: bf16 `wkv_gate`, fp32 `ape` and norm.
    let compressor = |r: &mut Dsv4Replicated, ratio: u64, dim: u64| {
        let coff = if ratio == 4 { 2 } else { 1 };
        r.bf16 += hidden * 2 * coff * dim;
        r.four_byte += ratio * coff * dim + dim;
    };
    if ratio == 4 || ratio == 128 {
        compressor(&mut r, ratio as u64, hd);
    }
    if ratio == 4 {
        r.linear += q_lora * idx_heads * idx_dim;
        r.bf16 += hidden * idx_heads;
        compressor(&mut r, 4, idx_dim);
    }
    r
}

/// Bytes of the RoPE tables a DeepSeek-V4 model builds on every rank while SGLang
/// constructs it (on the GPU: `model_loader/loader.py` builds the model under `with
/// target_device`), so `Load weight end … mem usage=` counts them; `compress_ratios`
/// are the decoder layers' entries. The same in 0.5.18–0.5.23 (each release's files
/// read), on CUDA:
/// - `models/deepseek_v4.py: MqaAttentionBase.__init__` registers `freqs_cis` from
///   `precompute_freqs_cis(dim=qk_rope_head_dim, seqlen=max_position_embeddings, …)`
///   (`kernels/ops/attention/…v4…rope.py`, `@lru_cache(2)`): complex64 `[seqlen,
///   qk_rope_head_dim / 2]`, 8 B an element. A ratio-0 (sliding-window) layer calls it
///   with `rope_theta` and no YaRN, a compressed one with `compress_rope_theta` and
///   the YaRN `original_max_position_embeddings`: two tables at most, each shared by
///   its layers.
/// - `MQALayer.__init__` → `get_rope_wrapper` → `layers/rotary_embedding/factory.py:
///   get_rope`, cached by its arguments: a ratio-0 layer a `RotaryEmbedding` of
///   `max_position_embeddings` positions, a compressed one a
///   `DeepseekScalingRotaryEmbedding` (`deepseek_yarn`) of
///   `original_max_position_embeddings × factor`; `cos_sin_cache` is
///   `[positions, qk_rope_head_dim]` and stays fp32 on CUDA
///   (`layers/rotary_embedding/base.py: RotaryEmbedding.__init__`).
///
/// Not modelled: ROCm's per-layer bf16 `cos_cache` / `sin_cache` copies.
pub fn dsv4_rope_table_bytes(text: &Value, compress_ratios: &[u32]) -> u64 {
    let g = |k: &str| text.get(k).and_then(Value::as_u64).unwrap_or(0);
    let rope = g("qk_rope_head_dim");
    let max_pos = g("max_position_embeddings");
    let yarn_positions = {
        let s = text.get("rope_scaling");
        let orig = s
            .and_then(|s| s.get("original_max_position_embeddings"))
            .and_then(Value::as_u64)
            .unwrap_or(max_pos);
        let factor = s
            .and_then(|s| s.get("factor"))
            .and_then(Value::as_f64)
            .unwrap_or(1.0);
        (orig as f64 * factor) as u64
    };
    let freqs_cis = max_pos * (rope / 2) * 8;
    let mut bytes = 0;
    if compress_ratios.contains(&0) {
        bytes += freqs_cis + max_pos * rope * 4;
    }
    if compress_ratios.iter().any(|&r| r != 0) {
        bytes += freqs_cis + yarn_positions * rope * 4;
    }
    bytes
}

/// `kv_b_proj` parameters of one MLA / MLA-DSA decoder layer: `kv_lora_rank × heads ×
/// (qk_nope_head_dim + v_head_dim)` (`models/deepseek_v2.py: DeepseekV2AttentionMLA`'s
/// `kv_b_proj`). 0 for other attention kinds (DeepSeek-V4 and the hybrid MLA of
/// `kimi_linear.py` are other model files).
fn mla_kv_b_params(text: &Value, attention: &Attention, heads: u64) -> u64 {
    let g = |k: &str| text.get(k).and_then(Value::as_u64);
    match attention {
        Attention::Mla { .. } | Attention::MlaDsa { .. } => {
            let nope = g("qk_nope_head_dim").unwrap_or(0);
            let v = g("v_head_dim").unwrap_or(nope);
            g("kv_lora_rank").unwrap_or(0) * heads * (nope + v)
        }
        _ => 0,
    }
}

/// Attention parameters of one decoder layer (GQA q/k/v/o; MLA; linear mixers use the
/// layer's own projections, counted as GQA here).
fn attention_params(text: &Value, attention: &Attention, hidden: u64, heads: u64) -> u64 {
    let g = |k: &str| text.get(k).and_then(Value::as_u64);
    match attention {
        Attention::Mla { .. } | Attention::MlaDsa { .. } | Attention::HybridMla { .. } => {
            let rank = g("kv_lora_rank").unwrap_or(0);
            let rope = g("qk_rope_head_dim").unwrap_or(0);
            let nope = g("qk_nope_head_dim").unwrap_or(0);
            let v = g("v_head_dim").unwrap_or(nope);
            let qk = nope + rope;
            let q = match g("q_lora_rank") {
                Some(r) => hidden * r + r * heads * qk,
                None => hidden * heads * qk,
            };
            let indexer = match (g("index_head_dim"), g("index_n_heads")) {
                (Some(d), Some(n)) => {
                    g("q_lora_rank").unwrap_or(hidden) * n * d + hidden * d + hidden * n
                }
                _ => 0,
            };
            q + hidden * (rank + rope) + rank * heads * (nope + v) + heads * v * hidden + indexer
        }
        // DeepSeek-V4 (`models/deepseek_v4.py: MqaAttentionBase.__init__`): the
        // projections split over the attention-TP group, `wq_b` (`ColumnParallelLinear`
        // q_lora × heads·head_dim), `wo_a` (`ColumnParallelLinear` heads·head_dim /
        // o_groups × o_groups·o_lora) and `wo_b` (`RowParallelLinear` o_groups·o_lora ×
        // hidden). `wo_a` keeps the checkpoint's fp8 (`wo_a_fp8_gemm_enabled`: an
        // `Fp8Config` with 128 × 128 blocks, the official and FP8 builds). The fused
        // `wqkv_a`, the compressors, C4 indexers and hyper-connection mixers are whole on
        // every rank: [`dsv4_replicated_params`].
        Attention::Dsv4 { head_dim, .. } => {
            let hd = *head_dim as u64;
            let q_lora = g("q_lora_rank").unwrap_or(hidden);
            let o_lora = g("o_lora_rank").unwrap_or(hidden);
            let groups = g("o_groups").unwrap_or(1);
            q_lora * heads * hd + heads * hd * o_lora + groups * o_lora * hidden
        }
        _ => {
            let hd = g("head_dim").unwrap_or(hidden.checked_div(heads).unwrap_or(0));
            let kv = g("num_key_value_heads").unwrap_or(heads);
            hidden * heads * hd + 2 * hidden * kv * hd + heads * hd * hidden
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// gpt-oss-20b (24 layers × 32 experts, hidden 2880, intermediate 2880) at TP1: on
    /// SM100 the buffers are 3072 × 2944 — per expert 2944·3072·51/32 + 4·2944 + 2·3072 =
    /// 14,431,744 B against 2880·2880·51/32 + 4·2880 + 2·2880 = 13,236,480 B: 768 ×
    /// 1,195,264 = 917,962,752 B. On SM90 (`triton_kernel`, intermediate to 64) 2880 is
    /// aligned: 0; at TP8 360 → 384: per expert 2·24·2880/2 + 24·2880/2 = 103,680 B of
    /// weights, + 2·24·90 + 2880·(384/32 − 360/32) = 7,200 of scales, + 4·24 = 96 of bias.
    #[test]
    fn gpt_oss_20b_mxfp4_padding() {
        let p = ParamCounts {
            routed_experts: 24 * 32 * 3 * 2880 * 2880,
            expert_hidden: 2880,
            moe_intermediate: 2880,
            expert_mats: 3,
            ..Default::default()
        };
        assert_eq!(mxfp4_moe_padding_per_rank(&p, 1, Some(10)), 917_962_752);
        assert_eq!(mxfp4_moe_padding_per_rank(&p, 1, Some(9)), 0);
        assert_eq!(
            mxfp4_moe_padding_per_rank(&p, 8, Some(9)),
            768 * (103_680 + 7_200 + 96)
        );
        assert_eq!(mxfp4_moe_padding_per_rank(&p, 1, None), 0);
    }

    /// DeepSeek-V4's RoPE tables: per layer kind a complex64 `freqs_cis` of 1,048,576 ×
    /// 32 × 8 B = 256 MiB and an fp32 `cos_sin_cache` of 1,048,576 × 64 × 4 B = 256 MiB
    /// (the compressed kind's YaRN cache is 65,536 × 16 positions). V4-Flash has both
    /// kinds (layers 0 and 1 are ratio 0): 1 GiB; V4-Pro's 61 decoder layers are all
    /// compressed (its ratio-0 entry is the MTP layer's): 512 MiB. One C4 layer of
    /// V4-Flash holds whole: `wqkv_a` 4,096 × 1,536 + indexer `wq_b` 1,024 × 8,192 in
    /// fp8; `wkv_gate` 4,096 × 2,048, `weights_proj` 4,096 × 64 and the indexer's
    /// `wkv_gate` 4,096 × 512 in bf16; mixers 2 × (24 × 16,384 + 27), 64 sinks, 256
    /// biases, `ape` 4 × 1,024 + 4 × 256 and norms 512 + 128 in fp32.
    #[test]
    fn dsv4_rope_tables_and_replicated_parts() {
        let c = json!({"qk_rope_head_dim": 64, "max_position_embeddings": 1_048_576,
            "rope_scaling": {"factor": 16, "original_max_position_embeddings": 65_536},
            "hidden_size": 4096, "head_dim": 512, "q_lora_rank": 1024, "index_n_heads": 64,
            "index_head_dim": 128, "hc_mult": 4, "num_attention_heads": 64,
            "n_routed_experts": 256, "vocab_size": 129_280, "num_experts_per_tok": 6});
        assert_eq!(dsv4_rope_table_bytes(&c, &[0, 0, 4, 128]), 1 << 30);
        assert_eq!(dsv4_rope_table_bytes(&c, &[128, 128, 4]), 1 << 29);
        let r = dsv4_replicated_params(&c, 4, false);
        assert_eq!(r.linear, 4096 * 1536 + 1024 * 8192);
        assert_eq!(r.bf16, 4096 * 2048 + 4096 * 64 + 4096 * 512);
        assert_eq!(
            r.four_byte,
            2 * (24 * 16_384 + 27) + 64 + 256 + (4 * 1024 + 512) + (4 * 256 + 128)
        );
        assert_eq!(r.norms, 1024 + 512);
        // A hash layer's `tid2eid` (129,280 × 6) replaces the bias; a ratio-0 layer has
        // no compressor or indexer.
        let h = dsv4_replicated_params(&c, 0, true);
        assert_eq!((h.linear, h.bf16), (4096 * 1536, 0));
        assert_eq!(h.four_byte, 2 * (24 * 16_384 + 27) + 64 + 129_280 * 6);
    }

    /// Llama-3.1-8B (meta-llama/Meta-Llama-3.1-8B config.json): hidden 4096, 32 layers,
    /// 32 heads, 8 KV heads, head_dim 128, intermediate 14336, vocab 128256, untied.
    #[test]
    fn llama_8b_parameters() {
        let c = json!({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
            "tie_word_embeddings": false});
        let a = Attention::Gqa {
            kv_heads: 8,
            head_dim: 128,
            v_head_dim: None,
        };
        let p = ParamCounts::from_config(&c, &c, &a, 32, 0);
        // attention per layer: 4096×4096 (q) + 2×4096×1024 (k, v) + 4096×4096 (o)
        //   = 41,943,040; × 32 = 1,342,177,280.
        assert_eq!(p.attention, 1_342_177_280);
        // MLP: 3 × 4096 × 14336 × 32 = 5,637,144,576.
        assert_eq!(p.dense_mlp, 5_637_144_576);
        // embed = lm_head = 128256 × 4096 = 525,336,576; norms 4096 × 65 = 266,240.
        assert_eq!(p.embed, 525_336_576);
        assert_eq!(p.norms, 266_240);
        // 8,030,261,248 parameters: the published "8.03B".
        assert_eq!(p.total(), 8_030_261_248);
        let b = p.bytes(&Quantization::none());
        assert_eq!(b.total(), 16_060_522_496);
        // TP 4: attention and MLP / 4, vocab / 4, norms replicated:
        // 671,088,640 + 2,818,572,288 + 525,336,576 + 532,480 = 4,015,529,984.
        assert_eq!(b.per_rank(&ParallelLayout::tp(4)), 4_015_529_984);
    }

    /// DeepSeek-V3's MLA (deepseek-ai/DeepSeek-V3 config.json: hidden 7168, 128 heads,
    /// kv_lora_rank 512, qk_nope_head_dim 128, v_head_dim 128, 61 layers): the bf16
    /// `w_kc` / `w_vc` copies of `kv_b_proj` that `post_load_weights` keeps.
    #[test]
    fn mla_keeps_bf16_w_kc_w_vc() {
        let c = json!({"hidden_size": 7168, "num_attention_heads": 128, "kv_lora_rank": 512,
            "qk_nope_head_dim": 128, "v_head_dim": 128, "qk_rope_head_dim": 64,
            "q_lora_rank": 1536, "vocab_size": 129280, "intermediate_size": 18432});
        let a = Attention::Mla {
            kv_lora_rank: 512,
            qk_rope_head_dim: 64,
        };
        let p = ParamCounts::from_config(&c, &c, &a, 61, 0);
        // kv_b_proj: 512 × 128 × (128 + 128) = 16,777,216 a layer; × 61 = 1,023,410,176.
        assert_eq!(p.mla_kv_b, 1_023_410_176);
        let fp8 = Quantization {
            format: WeightFormat::Fp8Block,
            ..Quantization::none()
        };
        let b = p.bytes(&fp8);
        // bf16 copies whatever the checkpoint's format: 2 B a parameter = 2,046,820,352 B
        // (1.906 GiB), not in the checkpoint's total.
        assert_eq!(b.mla_absorbed, 2_046_820_352);
        assert_eq!(b.scaled_to(b.total() * 2).mla_absorbed, 2_046_820_352);
        // Over the attention-TP group: TP8 holds 2,046,820,352 / 8 = 255,852,544 more than
        // without the copies; TP4 DP4 with DP attention (attn_tp_size 1) all of them.
        let no_copies = PartBytes {
            mla_absorbed: 0,
            ..b
        };
        let tp8 = ParallelLayout::tp(8);
        assert_eq!(b.per_rank(&tp8) - no_copies.per_rank(&tp8), 255_852_544);
        let dp = ParallelLayout {
            dp_size: 4,
            enable_dp_attention: true,
            ..ParallelLayout::tp(4)
        };
        assert_eq!(b.per_rank(&dp) - no_copies.per_rank(&dp), 2_046_820_352);
        // GQA has no kv_b_proj.
        let gqa = Attention::Gqa {
            kv_heads: 8,
            head_dim: 128,
            v_head_dim: None,
        };
        assert_eq!(ParamCounts::from_config(&c, &c, &gqa, 61, 0).mla_kv_b, 0);
    }
}
