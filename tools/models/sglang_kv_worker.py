#!/usr/bin/env python3
"""Runs inside a virtual environment with one SGLang release's unpacked wheel and the
transformers it pins (see kv_bytes_golden.py). For every model directory given, every
TP size, every `--kv-cache-dtype`, GPU generation and `--enable-hierarchical-cache`
off / on (the record's `hicache`), it runs SGLang's own code on a CPU and prints one
JSON line:

- `configs/model_config.py: ModelConfig(model_path=DIR)` (the real constructor;
  transformers' native config class when the config's remote code is not available
  offline: trust_remote_code falls back to False);
- `arg_groups/overrides.py: _dsa_kv_cache_dtype_default` and
  `_dsa_split_backend_resolution` (the DSA model's default KV dtype and attention
  backends, which decide the FP8 layout) for DSA models;
- `mem_cache/kv_cache_dtype.py: configure_kv_cache_dtype` with the checkpoint's
  quantization config from `model_loader/weight_utils.py: get_quant_config`
  (`auto` on a ModelOpt checkpoint with kv_cache_quant_algo FP8 is FP8);
- `model_executor/model_runner_components/layer_setup.py: resolve_layer_indices`;
- `model_executor/pool_configurator.py: DefaultPoolConfigurator` (cell size,
  `_compute_dsa_indexer_cell_size`, which reads
  `kv_cache_configurator.py: _should_elide_dsa_index_k`: HiCache keeps every layer's
  index-K in 0.5.18-0.5.21) or `HybridSWAPoolConfigurator` (full and SWA bytes per
  token);
- DSA models with HiCache on: the host indexer pool's `size_per_token`
  (`pools.host_indexer`) from `mem_cache/pool_host/dsa.py: DSAIndexerPoolHost` in its
  allocation-free `is_dummy` mode, built from `make_dsa_indexer_pool_decl` (0.5.22+) or
  from the device pool (0.5.21; 0.5.18-0.5.20, with no such mode and the class in
  `memory_pool_host.py` in 0.5.18, its own `__init__` with the allocation calls
  skipped, after `size_per_token` is set), the device pool a namespace with the
  `skip_topk_layers` `_build_dsa_kv_pool` would pass (`dsa_layer_skips_topk` per layer
  when `_should_elide_dsa_index_k`, else none skipped) and 64-token pages;
- for hybrid linear-attention models
  `configs/hybrid_arch.py: mambaish_config(...).mamba2_cache_params.mamba_cache_per_req`;
- DeepSeek-V4: `create_memory_pool_configurator` → `DSV4PoolConfigurator` (its kv dtype
  from `overrides.py: _deepseek_v4_kv_cache_dtype`), per schedule in DSV4_SCHEDULES:
  `kv_bytes`, `bytes_per_full_token`, `bytes_per_swa_token` (Python `repr`), the SWA
  cap, and `calculate_pool_sizes` at each budget of DSV4_AVAILABLE_GIB.

After each model's plain TP lines, the lines with a `case`:

- `dp_attention`: the same pools with `--enable-dp-attention --dp-size D`: the parallel
  context answers `attn_tp_size = tp // D`, `attn_dp_size = D` (`runtime_context.py:
  derive_attn_tp_size`), and `get_attention_tp_size` / `linear_attn_tp_size` the
  attention-TP width; DeepSeek-V4's configurator gets `attn_dp_size = D`;
- `draft` (`draft_case`): `--speculative-algorithm NEXTN` (EAGLE, no draft path) on a
  checkpoint with an MTP head (`has_mtp_draft`): `spec_aux_hidden_state.py:
  resolve_spec_aux_hidden_state_config` (`eagle_draft_num_layers`), the target's
  `DefaultPoolConfigurator._cell_size` with it, and the draft worker's own
  `ModelConfig(is_draft_model=True)` (`_config_draft_model`'s NextN / MTP override),
  `resolve_layer_indices(is_draft_worker=True)` and pool cell (KV, DSA indexer; not
  for a hybrid Mamba / linear-attention draft);
- `profile` (`profile_cases`): a real `KVCacheConfigurator` (fields set, no model
  loaded): `_profile_available_bytes` (the stubbed `get_available_gpu_memory` answers
  the case's free memory after the load) and `config_from_budget` for each of
  PROFILE_MEMORY x PROFILE_SCHEDULES.

Stubbed (tools/models/anystub.py): torch (dtypes carry their real element sizes; CUDA
"available" with the device capability of the case), GPU kernel packages, and the
runtime context getters (`get_parallel`, `get_memory`, `get_exec`, `get_schedule`,
`get_disagg`, `linear_attn_tp_size`, `get_platform`, `get_spec`, `get_mm`,
`get_context`, `get_available_gpu_memory`) which answer with the case's TP / DP size,
HiCache switch and speculative algorithm and SGLang's defaults (no HiSparse, no
unified memory, no disaggregation, PP 1, DCP 1, one node: the multimodal feature
transport `cpu`).

Releases 0.5.18-0.5.20 run the same cases: where their code reads a figure elsewhere
(0.5.18: the server args rather than the runtime context, `get_world_group`,
`configured_pp_size`; 0.5.18-0.5.20: the configurator's `ps`) the worker answers with
the same case values.

With `--dsv4-spec` before the model directories it prints only the DeepSeek-V4
speculative lines (`case: dsv4_spec`, tools/models/dsv4_spec_golden.py): the same
configurator under `--speculative-algorithm EAGLE --speculative-eagle-topk 1
--speculative-num-steps S` (draft tokens S + 1, `_handle_eagle_family`), per
DSV4_SPEC_DRAFT_TOKENS x DSV4_SPEC_SCHEDULES x DSV4_SPEC_LAYOUTS: `get_spec()` answers
EAGLE with those figures (and `max_speculative_num_draft_tokens` = the draft tokens, as
a non-adaptive server resolves it), the configurator's `kvc.spec_algorithm` is EAGLE.

Usage: sglang_kv_worker.py TREE [--dsv4-spec] MODEL_DIR...   (one JSON object per line)
"""
import contextlib
import inspect
import json
import os
import sys
import traceback
import types

TREE = sys.argv[1]
DIRS = sys.argv[2:]
DSV4_SPEC_ONLY = bool(DIRS) and DIRS[0] == "--dsv4-spec"
if DSV4_SPEC_ONLY:
    DIRS = DIRS[1:]
TPS = [1, 2, 4, 8]
DTYPES = ["auto", "bfloat16", "fp8_e4m3"]
# Hopper (SM90) and Blackwell (SM100): the DSA defaults differ; other models do not
# read the capability.
SMS = [(9, 0), (10, 0)]

import transformers  # noqa: E402  (before the stubs: transformers must see no torch)

# transformers 5.12 exposes AutoImageProcessor as a placeholder needing torch and
# torchvision; SGLang's config modules register their processors with it at import.
# Registering a processor changes no model config: the placeholder accepts and drops it.
from transformers.utils import import_utils as _iu  # noqa: E402

_dummy_getattribute = _iu.DummyObject.__getattribute__


def _lenient(cls, key):
    if key == "register":
        return lambda *a, **k: None
    return _dummy_getattribute(cls, key)


_iu.DummyObject.__getattribute__ = _lenient
import logging  # noqa: E402

logging.disable(logging.WARNING)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anystub  # noqa: E402

anystub.install()
sys.path.insert(0, TREE)
os.environ.pop("SGLANG_PLATFORM", None)

import torch  # noqa: E402  (the stub)
from sglang.srt.configs.model_config import ModelConfig, AttentionArch, is_deepseek_dsa  # noqa: E402
from sglang.srt.configs.model_config import is_deepseek_v4  # noqa: E402
import sglang.srt.model_executor.pool_configurator as pc  # noqa: E402
import sglang.srt.mem_cache.kv_cache_configurator as kcc  # noqa: E402
import sglang.srt.arg_groups.overrides as ov  # noqa: E402
from sglang.srt.configs import hybrid_arch  # noqa: E402
from sglang.srt.model_executor.model_runner_components import layer_setup  # noqa: E402
from sglang.srt.mem_cache import kv_cache_dtype as kvd  # noqa: E402


class Cfg:
    """A runtime-context bag: explicit values, else SGLang's off/None/1 defaults."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name.endswith("_size"):
            return 1
        if name.endswith("_rank"):
            return 0
        if name.startswith(("enable_", "is_", "disable_", "use_")):
            return False
        return None


STATE = {"tp": 1, "dp": 1, "sm": (9, 0), "backends": (None, None), "schedule": {},
         "memory": {}, "spec": None, "available_gb": 0.0, "draft_path": None}
HICACHE = [False, True]
# (tp, attention DP) with --enable-dp-attention: dp = tp, and tp / 2 from TP 4.
DP_LAYOUTS = [(2, 2), (4, 4), (4, 2), (8, 8), (8, 4)]
# The MTP draft's cases: TP 1 and 8, and TP 8 under DP attention 8.
DRAFT_LAYOUTS = [(1, 1), (8, 1), (8, 8)]
DRAFT_DTYPES = ["auto", "fp8_e4m3"]
PROFILE_TPS = [1, 8]


def parallel():
    # `--enable-dp-attention --dp-size D`: the attention runs D groups of tp // D ranks
    # inside the TP group (`runtime_context.py: derive_attn_tp_size`,
    # `layers/dp_attention.py: compute_dp_attention_world_info`).
    tp, dp = STATE["tp"], STATE["dp"]
    return Cfg(attn_tp_size=tp // dp, tp_size=tp, attn_dcp_size=1, attn_cp_size=1, pp_size=1,
               attn_dp_size=dp, moe_tp_size=tp, moe_ep_size=1,
               enable_dp_attention=dp > 1, attn_dp_enabled=dp > 1, launch_world_size=tp,
               world_group=Cfg(cpu_group=None))


def memory():
    return Cfg(**STATE["memory"])


def exec_():
    p, d = STATE["backends"]
    # dsv4_attn_backend: `deepseek_v4_hook.py: _default_dsv4_attention_backend` answers
    # "flashmla" for every DeepSeek-V4 (not V4.1) checkpoint.
    return Cfg(kernel=Cfg(dsa_prefill_backend=p, dsa_decode_backend=d,
                          dsv4_attn_backend="flashmla"),
               features=Cfg(), graph=Cfg(cuda_graph_config=Cfg(prefill=Cfg())), mamba=Cfg())


def schedule():
    return Cfg(**{"swa_full_tokens_ratio": 0.8, "page_size": 1,
                  "mamba_full_memory_ratio": 0.9, **STATE["schedule"]})


def spec():
    # NEXTN is resolved to EAGLE by `speculative_hook.py`; the draft is the target's own
    # MTP head (no --speculative-draft-model-path).
    if STATE.get("spec_draft_tokens"):
        # `--speculative-eagle-topk 1 --speculative-num-steps S`: draft tokens S + 1.
        n = STATE["spec_draft_tokens"]
        return Cfg(speculative_algorithm="EAGLE", speculative_num_draft_tokens=n,
                   speculative_num_steps=n - 1, speculative_eagle_topk=1,
                   max_speculative_num_draft_tokens=n, speculative_adaptive=False,
                   speculative_draft_model_path=None,
                   speculative_draft_model_revision=None)
    if STATE["spec"]:
        return Cfg(speculative_algorithm="EAGLE", speculative_num_draft_tokens=4,
                   speculative_num_steps=3, speculative_eagle_topk=1,
                   speculative_draft_model_path=STATE["draft_path"],
                   speculative_draft_model_revision=None)
    return Cfg(speculative_algorithm=None, speculative_num_draft_tokens=None)


def mm():
    # `serving_hook.py: handle_multimodal_feature_transport`: one node, no
    # --mm-feature-transport: "cpu" (no CUDA IPC pool).
    return Cfg(mm_feature_transport="cpu")


class Context:
    """`get_context()`: `override(scope, **fields)` writes the schedule fields the
    profiling reads back (`max_mamba_cache_size`)."""

    def override(self, _scope, **kw):
        STATE["schedule"].update(kw)
        return contextlib.nullcontext(self)


def disagg():
    return Cfg(disaggregation_mode="null")


def platform():
    major = STATE["sm"][0]
    return Cfg(is_blackwell=major >= 10, is_sm100=major == 10, is_sm90=major == 9,
               is_hopper=major == 9, is_cuda=True, is_cuda_alike=True)


def linear_tp():
    """`linear_attn_tp_size` / `get_attention_tp_size`: the attention-TP width."""
    return STATE["tp"] // STATE["dp"]


def world_group():
    """0.5.18's `parallel_state.get_world_group` (0.5.19+: `get_parallel()`)."""
    return Cfg(world_size=STATE["tp"], cpu_group=None)


PATCH = {"get_parallel": parallel, "get_world_group": world_group,
         "configured_pp_size": lambda: 1, "get_memory": memory, "get_exec": exec_,
         "get_schedule": schedule, "get_disagg": disagg, "get_platform": platform,
         "linear_attn_tp_size": linear_tp, "get_spec": spec, "get_attention_tp_size": linear_tp,
         "get_mm": mm, "get_context": lambda: Context(),
         "get_available_gpu_memory": lambda *a, **k: STATE["available_gb"]}


def patch_all():
    for name, mod in list(sys.modules.items()):
        if not name.startswith("sglang") or mod is None:
            continue
        for attr, fn in PATCH.items():
            if attr in getattr(mod, "__dict__", {}):
                setattr(mod, attr, fn)


patch_all()


def layer_indices(mc, is_draft, spec=None):
    """`layer_setup.py: resolve_layer_indices` of a target or draft worker (0.5.18-0.5.20
    also take the speculative algorithm, for their PP / MTP assert only)."""
    kw = {}
    if "spec_algorithm" in inspect.signature(layer_setup.resolve_layer_indices).parameters:
        kw["spec_algorithm"] = spec or Spec()
    return layer_setup.resolve_layer_indices(model=types.SimpleNamespace(), model_config=mc,
                                             is_draft_worker=is_draft, **kw)


TRUST = [True]


def load(d):
    """The target's ModelConfig; TRUST[0] the trust_remote_code it was built with."""
    try:
        TRUST[0] = True
        return ModelConfig(model_path=d, trust_remote_code=True)
    except Exception:
        TRUST[0] = False
        return ModelConfig(model_path=d, trust_remote_code=False)


# Checkpoints that ship an MTP head their config.json does not count (SGLang's
# `_config_draft_model` sets `num_nextn_predict_layers = 1` on the draft).
MTP_WITHOUT_COUNT = {"Qwen3NextForCausalLM"}


def has_mtp_draft(d, mc):
    """A checkpoint with an MTP head: its config counts MTP layers
    (`num_nextn_predict_layers`, `mtp_num_hidden_layers`) or its architecture is in
    MTP_WITHOUT_COUNT. (`_config_draft_model` rewrites any DeepSeek-V3, GLM-4.5, Qwen3-MoE
    or Nemotron-H architecture to its NextN / MTP form, with or without MTP weights in
    the checkpoint; those without are not a configuration anyone runs.) DeepSeek-V4's
    draft is sized by its DSV4PoolConfigurator (compress-state rings, the draft-aware
    SWA cap): not recorded here."""
    if is_deepseek_v4(mc.hf_config):
        return False
    # config.json as the checkpoint writes it (a transformers config class may default
    # `num_nextn_predict_layers` to 1 for a checkpoint without MTP weights).
    raw = json.load(open(os.path.join(d, "config.json")))
    counted = 0
    for c in (raw, raw.get("text_config") or {}):
        for k in ("num_nextn_predict_layers", "mtp_num_hidden_layers"):
            counted = max(counted, c.get(k) or 0)
    return counted > 0 or mc.hf_config.architectures[0] in MTP_WITHOUT_COUNT


def run_case(rec, fn):
    try:
        rec.update(fn())
    except Exception as e:
        rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        if os.environ.get("KV_DEBUG"):
            traceback.print_exc()
    print(json.dumps(rec, sort_keys=True))


def quant_config(mc):
    """The checkpoint's quantization config object, as the model loader builds it."""
    if not mc.quantization:
        return None
    try:
        from sglang.srt.model_loader.weight_utils import get_quant_config
        from sglang.srt.configs.load_config import LoadConfig
        patch_all()
        return get_quant_config(mc, LoadConfig(), {})
    except Exception as e:  # reported, never guessed
        return e


def dsa_resolve(mc, kv):
    """(kv dtype string, prefill backend, decode backend) after SGLang's DSA hooks."""
    view = Cfg(kv_cache_dtype=kv, dsa_prefill_backend=None, dsa_decode_backend=None,
               dsa_topk_backend=None, enable_hisparse=False, dcp_size=1, device="cuda",
               model_path=mc.model_path, get_model_config=lambda: mc)  # 0.5.18-0.5.20
    ov.model_config_of = lambda v: mc
    ov.get_platform = platform
    out = ov._dsa_kv_cache_dtype_default(view) or {}
    view.kv_cache_dtype = out.get("kv_cache_dtype", kv)
    b = ov._dsa_split_backend_resolution(view) or {}
    return view.kv_cache_dtype, b.get("dsa_prefill_backend"), b.get("dsa_decode_backend")


class Spec:
    """`SpeculativeAlgorithm.NONE`."""
    def is_eagle(self): return False
    def is_eagle3(self): return False
    def is_standalone(self): return False
    def is_dflash_family(self): return False
    def is_dspark(self): return False
    def is_none(self): return True


class SpecEagle(Spec):
    """`SpeculativeAlgorithm.EAGLE`, what `--speculative-algorithm NEXTN` resolves to."""
    def is_eagle(self): return True
    def is_none(self): return False


# DeepSeek-V4 (`pool_configurator.py: DSV4PoolConfigurator`, chosen by
# `create_memory_pool_configurator` for `is_deepseek_v4` + hybrid SWA): the KV pool is
# a coefficient (bytes per full token, fractional) plus fixed request-scoped bytes, and
# depends on the schedule: `deepseek_v4_hook.py: apply_deepseek_v4_defaults` sets
# --max-running-requests 256 and `model_overrides/deepseek_v4.py` page_size 256.
# One case per (max_running_requests, chunked_prefill_size, --swa-full-tokens-ratio
# given or None, resolved as SGLang resolves the flags) x available bytes: the figures
# calculate_pool_sizes returns. True runs `_deepseek_v4_overrides` and the explicit-ratio
# rule (`dsv4_swa_ratio`), what a server with these flags sizes; False forces the
# configurator's cap mode (`_swa_full_tokens_ratio_explicitly_set` False), a state
# DeepSeek-V4 does not reach in 0.5.21–0.5.23, kept to check the simulator's cap-mode
# arithmetic against SGLang's (0.5.18-0.5.19's configurator has no cap mode and reads
# no such flag: ratio mode at the ratio given).
DSV4_SCHEDULES = [(256, 8192, None, True), (64, 8192, None, True), (256, 8192, 0.25, True),
                  (256, 8192, None, False), (256, 16384, None, False), (64, 8192, None, False),
                  # `SGLANG_DSV4_COMPRESS_STATE_DTYPE=bf16` (a 5th element: the variable's
                  # value, set while the configurator is built and sizes its pools)
                  (256, 8192, None, True, "bf16"), (64, 8192, None, True, "bf16")]
DSV4_AVAILABLE_GIB = [40, 100]


def dsv4_swa_ratio(mc, ratio, as_sglang):
    """`--swa-full-tokens-ratio` (None: not given) as the configurator sees it: the ratio
    and `_swa_full_tokens_ratio_explicitly_set`. As SGLang resolves it:
    `arg_groups/model_overrides/deepseek_v4.py: _deepseek_v4_overrides` (SGLang's own,
    run on a view of the flags) declares 0.1 when it is unset (model_type not
    deepseek_v41), and `arg_groups/kv_cache_hook.py: handle_cache_compatibility`, later in
    `run_resolution_pipeline`, records `explicitly_set = cfg.swa_full_tokens_ratio is not
    None` over that declaration. Otherwise the configurator's cap mode: not explicit."""
    if not as_sglang:
        return (0.1 if ratio is None else ratio), False
    try:
        from sglang.srt.arg_groups.model_overrides.deepseek_v4 import _deepseek_v4_overrides
    except ModuleNotFoundError:  # 0.5.18: in overrides.py
        _deepseek_v4_overrides = ov._deepseek_v4_overrides
    patch_all()
    if ratio is None:
        # Not given: the flag's default (0.5.18-0.5.19: 0.8, which their
        # `_deepseek_v4_overrides` compares against `ServerArgs.swa_full_tokens_ratio`;
        # 0.5.20+: None).
        from sglang.srt.server_args import ServerArgs
        default = getattr(ServerArgs, "swa_full_tokens_ratio", None)
        ratio = default if isinstance(default, float) else None  # 0.5.20+: a slot
        patch_all()
    view = types.SimpleNamespace(
        swa_full_tokens_ratio=ratio, device="cuda", moe_runner_backend="triton",
        fp8_gemm_runner_backend="auto", moe_a2a_backend="none", _resolved_overrides=[],
        get_model_config=lambda: mc)
    ratio = _deepseek_v4_overrides(view, mc.hf_config).get("swa_full_tokens_ratio", ratio)
    return ratio, ratio is not None


def dsv4_cases(mc, kv, schedules=None, spec_algorithm=None):
    out = []
    for mrr, chunk, arg, as_sglang, *state in (schedules or DSV4_SCHEDULES):
        state_dtype = state[0] if state else None
        if state_dtype is not None:
            os.environ["SGLANG_DSV4_COMPRESS_STATE_DTYPE"] = state_dtype
        ratio, explicit = dsv4_swa_ratio(mc, arg, as_sglang)
        STATE["schedule"] = {
            "page_size": 256, "max_running_requests": mrr, "chunked_prefill_size": chunk,
            "swa_full_tokens_ratio": ratio,
            "_swa_full_tokens_ratio_explicitly_set": explicit,
            "disable_overlap_schedule": False, "swa_prefix_tails": None,
        }
        patch_all()
        info = layer_indices(mc, False)
        kvc = types.SimpleNamespace(
            model_config=mc, kv_cache_dtype_str=kv, layer_info=info, pp_size=1,
            page_size=256, sliding_window_size=mc.sliding_window_size,
            is_hybrid_swa=mc.is_hybrid_swa, spec_algorithm=spec_algorithm or Spec(),
            spec_aux_config=Cfg(), attn_dp_size=STATE["dp"], ps=parallel(),
            server_args=server_args_018())
        if spec_algorithm is not None:
            # SGLang's own refusal (`_assert_ring_serves_draft_tokens`) is the record.
            try:
                c = pc.create_memory_pool_configurator(kvc)
            except Exception as e:
                out.append({"max_running_requests": mrr, "chunked_prefill_size": chunk,
                            "swa_full_tokens_ratio_arg": arg,
                            "resolved_as_sglang": as_sglang,
                            "error": f"{type(e).__name__}: {str(e)[:300]}"})
                if state_dtype is not None:
                    del os.environ["SGLANG_DSV4_COMPRESS_STATE_DTYPE"]
                continue
        else:
            c = pc.create_memory_pool_configurator(kvc)
        rec = {"configurator": type(c).__name__, "max_running_requests": mrr,
               "chunked_prefill_size": chunk, "swa_full_tokens_ratio_arg": arg,
               "resolved_as_sglang": as_sglang, "swa_full_tokens_ratio": ratio,
               "swa_full_tokens_ratio_explicitly_set": explicit,
               # 0.5.18-0.5.20's configurator keeps no `kv_bytes`, `bytes_per_swa_token`
               # or SWA cap (None)
               "kv_bytes": getattr(c, "kv_bytes", None),
               "bytes_per_full_token": repr(c.bytes_per_full_token),
               "bytes_per_swa_token": repr(getattr(c, "bytes_per_swa_token", None)),
               "swa_cap_tokens": getattr(c, "swa_cap_tokens", None), "sizes": {}}
        if spec_algorithm is not None:
            # The compress-state rings the configurator priced (`ring_sizes` 0.5.21+,
            # `c4_ring_size` / `c128_ring_size` before).
            rings = getattr(c, "ring_sizes", None) or {
                4: getattr(c, "c4_ring_size", None), 128: getattr(c, "c128_ring_size", None)}
            rec["ring_sizes"] = {str(k): v for k, v in sorted(rings.items())}
        for gib in DSV4_AVAILABLE_GIB:
            r = c.calculate_pool_sizes(gib << 30, 256)
            rec["sizes"][str(gib)] = {
                "full": r.full_max_total_num_tokens, "swa": r.swa_max_total_num_tokens,
                "c4": r.c4_max_total_num_tokens, "c128": r.c128_max_total_num_tokens,
                "c4_state": r.c4_state_pool_size}
        if state_dtype is not None:
            rec["compress_state_dtype"] = state_dtype
            del os.environ["SGLANG_DSV4_COMPRESS_STATE_DTYPE"]
        out.append(rec)
    STATE["schedule"] = {}
    return out


HOST_PAGE = 64


def host_indexer_size_per_token(mc, info):
    """`pool_host/dsa.py: DSAIndexerPoolHost(..., is_dummy=True).size_per_token`: the
    host indexer pool's bytes per token, its layers as the release keeps them."""
    try:
        import sglang.srt.mem_cache.pool_host.dsa as hd
    except ModuleNotFoundError:  # 0.5.18: in memory_pool_host.py
        import sglang.srt.mem_cache.memory_pool_host as hd
    from sglang.srt.configs.model_config import dsa_layer_skips_topk, get_dsa_index_head_dim
    from sglang.srt.mem_cache.memory_pool import DSATokenToKVPool
    patch_all()
    layers = range(info.start_layer, info.end_layer)
    # `kv_cache_configurator.py: _build_dsa_kv_pool`: skip_topk_layers only when elided.
    if kcc._should_elide_dsa_index_k(is_draft_worker=False):
        skip = [dsa_layer_skips_topk(mc.hf_config, l) for l in layers]
    else:
        skip = [False] * len(layers)
    dev = types.SimpleNamespace(
        store_dtype=torch.uint8, start_layer=info.start_layer, end_layer=info.end_layer,
        layer_num=info.num_effective_layers, layer_shard_enabled=False, device="cuda",
        index_head_dim=get_dsa_index_head_dim(mc.hf_config),
        quant_block_size=DSATokenToKVPool.quant_block_size, index_page_size=HOST_PAGE,
        page_size=HOST_PAGE, skip_topk_layers=skip)
    # The anchor (the MLA host pool): its slots only; the indexer copies them.
    anchor = types.SimpleNamespace(page_size=HOST_PAGE, layout="page_first",
                                   size=2 * HOST_PAGE, page_num=2,
                                   mtp_draft_device_pools=())
    if hasattr(hd, "make_dsa_indexer_pool_decl"):
        h = hd.DSAIndexerPoolHost(hd.make_dsa_indexer_pool_decl(dev), anchor, is_dummy=True)
    elif "is_dummy" in inspect.signature(hd.DSAIndexerPoolHost.__init__).parameters:
        h = hd.DSAIndexerPoolHost(dev, anchor, "page_first", is_dummy=True)
    else:
        # 0.5.18-0.5.20: no allocation-free mode. The release's own `__init__` sets
        # `size_per_token` before it allocates: a subclass skips only the allocation
        # (`init_kv_buffer`, the staging buffers, `clear`).
        class NoAlloc(hd.DSAIndexerPoolHost):
            def init_kv_buffer(self): pass
            def _init_write_back_staging_buffers(self): pass
            def clear(self): pass
        h = NoAlloc(dev, anchor, "page_first")
    return int(h.size_per_token)


def kv_dtype_of(mc, qc, resolved, is_draft):
    """`configure_kv_cache_dtype` of a target or draft worker."""
    model = types.SimpleNamespace(quant_config=None if isinstance(qc, Exception) else qc)
    _, dtype = kvd.configure_kv_cache_dtype(
        server_args_kv_cache_dtype=resolved, model=model, model_dtype=mc.dtype,
        is_draft_worker=is_draft, is_dflash=False, speculative_draft_attention_backend=None)
    return model, dtype


def server_args_018():
    """The server args 0.5.18's configurators read where 0.5.19+ read the runtime
    context: the schedule's fields, the DSA backends (`calculate_mla_kv_cache_dim`),
    the speculative algorithm, the disaggregation mode, `mm_feature_transport`. (0.5.21+
    read only `enable_hisparse` here: off.)"""
    p, d = STATE["backends"]
    return Cfg(mm_feature_transport=mm().mm_feature_transport, dsa_prefill_backend=p,
               dsa_decode_backend=d, disaggregation_mode=disagg().disaggregation_mode,
               speculative_algorithm=spec().speculative_algorithm,
               # 0.5.18's DSV4PoolConfigurator bounds the draft tokens by the rings
               max_speculative_num_draft_tokens=spec().max_speculative_num_draft_tokens,
               **schedule().__dict__)


def kv_configurator(mc, qc, resolved, *, is_draft=False, spec=None, spec_aux=None,
                    page_size=1):
    """A `mem_cache/kv_cache_configurator.py: KVCacheConfigurator` (the real class,
    its fields set as `model_runner` sets them on a CPU: no model, no streams, no
    pools yet), for the target (`is_draft` False) or the MTP draft worker."""
    model, dtype = kv_dtype_of(mc, qc, resolved, is_draft)
    info = layer_indices(mc, is_draft, spec)
    k = object.__new__(kcc.KVCacheConfigurator)
    vals = dict(
        device="cuda", gpu_id=0, attn_dp_size=STATE["dp"], pp_size=1, pp_group=None,
        model=model, model_config=mc, server_args=server_args_018(), kv_cache_dtype=dtype,
        model_dtype=mc.dtype, page_size=page_size,
        sliding_window_size=mc.sliding_window_size, spec_algorithm=spec or Spec(),
        is_draft_worker=is_draft, post_capture_kv_active=False,
        spec_aux_config=spec_aux or Cfg(), is_hybrid_swa=mc.is_hybrid_swa,
        is_hybrid_swa_compress=getattr(mc, "is_hybrid_swa_compress", False),
        use_mla_backend=mc.attention_arch == AttentionArch.MLA, layer_info=info,
        forward_stream=None, req_to_token_pool=None, token_to_kv_pool_allocator=None,
        memory_pool_config=None, draft_parallel_layout=None,
        dflash_draft_cell_size_per_token=None, draft_model_idx=None,
        kv_cache_dtype_str=resolved, extra_mamba_cache_bytes_per_req=0,
        mambaish_config=hybrid_arch.mambaish_config(mc),
        hybrid_gdn_config=getattr(kcc, "hybrid_gdn_config", lambda m: None)(mc),
        hybrid_kda_config=getattr(kcc, "hybrid_kda_config", lambda m: None)(mc),
        ps=parallel(),  # 0.5.18-0.5.20 read the parallel sizes from `self.ps`
        kv_shard_rank=None, kv_shard_size=1, kv_shard_spec=None, kv_shard_group=None,
        is_hybrid_swa_mtp_draft=getattr(info, "is_hybrid_swa_mtp_draft", False),
        draft_swa_full_capacity=False, fused_entry_bytes=lambda kind: None,
        server_args_view=None)
    for key, v in vals.items():
        try:
            setattr(k, key, v)
        except AttributeError:  # a property of this release's class
            pass
    return k


def cell_split(mc, c, kvc):
    """A DefaultPoolConfigurator's cell: (KV bytes, DSA indexer bytes) per token."""
    cell = c._cell_size
    idx = 0
    if is_deepseek_dsa(mc.hf_config) and kvc.use_mla_backend:
        layers = (len(list(kvc.mambaish_config.full_attention_layer_ids))
                  if kvc.mambaish_config and not kvc.is_draft_worker
                  else kvc.layer_info.num_effective_layers)
        idx = c._compute_dsa_indexer_cell_size(kvc=kvc, num_layers=layers)
    return cell - idx, idx


def nextn_draft_path(d, mc):
    """`--speculative-draft-model-path` after `arg_groups/speculative_hook.py:
    _handle_eagle_family`: the target's path for the architectures its list names (their
    MTP head is in the target checkpoint), else unset. 0.5.18-0.5.19's
    `resolve_spec_aux_hidden_state_config` charges no draft layers to the target's cell
    without it; 0.5.20+ fall back to the target's config. The list is read from the
    release's own source."""
    import ast
    import sglang.srt.arg_groups.speculative_hook as sh
    for f in ast.walk(ast.parse(inspect.getsource(sh))):
        if isinstance(f, ast.FunctionDef) and f.name == "_handle_eagle_family":
            for n in ast.walk(f):
                if isinstance(n, ast.List) and any(
                        isinstance(e, ast.Constant) and e.value == "DeepseekV3ForCausalLM"
                        for e in n.elts):
                    archs = {e.value for e in n.elts if isinstance(e, ast.Constant)}
                    return d if mc.hf_config.architectures[0] in archs else None
    raise RuntimeError("speculative_hook.py: no _handle_eagle_family architecture list")


def draft_case(d, mc, qc, kv, trust):
    """`--speculative-algorithm NEXTN` with the model's own MTP head, as SGLang sizes it:

    - `spec_aux_hidden_state.py: resolve_spec_aux_hidden_state_config` on the target
      (`eagle_draft_num_layers`: the draft config's `num_nextn_predict_layers` with
      the `--speculative-draft-model-path` `_handle_eagle_family` gives
      (`nextn_draft_path`); without one, the target config's from 0.5.20 and none
      before; 0.5.22+ also build the draft-mode config for `draft_kv_num_layers`);
    - the target's `DefaultPoolConfigurator._cell_size` with that draft (the cell
      `calculate_pool_sizes` divides by: the draft's KV shares the target's slots);
    - the draft worker's own pool: `ModelConfig(is_draft_model=True)` (the NextN / MTP
      architecture override of `_config_draft_model`), `resolve_layer_indices(
      is_draft_worker=True)`, its `DefaultPoolConfigurator` cell (KV and DSA indexer).
    """
    import sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state as sah
    import sglang.srt.configs.model_config as mcm
    resolved = kv
    if is_deepseek_dsa(mc.hf_config):
        resolved, p, dd = dsa_resolve(mc, kv)
        STATE["backends"] = (p, dd)
    else:
        STATE["backends"] = (None, None)
    STATE["spec"] = "EAGLE"
    STATE["draft_path"] = nextn_draft_path(d, mc)
    patch_all()
    server_args = types.SimpleNamespace(
        speculative_draft_model_path=STATE["draft_path"], speculative_draft_model_revision=None,
        model_path=d, trust_remote_code=trust, revision=None, context_length=None,
        json_model_override_args="{}", is_embedding=False, enable_multimodal=None,
        dtype="auto", quantization=None, speculative_draft_model_quantization=None,
        model_impl="auto", sampling_defaults="openai", quantize_and_serve=False,
        decrypted_config_file=None, decrypted_draft_config_file=None,
        enable_multi_layer_eagle=False, language_only=False, language_model_only=False,
        encoder_only=False, _speculative_draft_quantization_explicitly_set=False,
        disable_hybrid_swa_memory=False, model_config_parser="auto",
        speculative_algorithm="EAGLE", _resolved_overrides=[])
    saved = getattr(mcm, "resolving_view", None)  # 0.5.21+
    if saved is not None:
        mcm.resolving_view = lambda v: v  # the namespace is already the resolved view
    try:
        aux = sah.resolve_spec_aux_hidden_state_config(
            server_args=server_args, model_config=mc, spec_algorithm=SpecEagle(),
            is_draft_worker=False)
    finally:
        if saved is not None:
            mcm.resolving_view = saved
    out = {"kv_cache_dtype": resolved, "draft_layers": aux.eagle_draft_num_layers}
    if isinstance(qc, Exception) and resolved == "auto":
        raise RuntimeError(f"get_quant_config: {type(qc).__name__}: {str(qc)[:160]}")
    tk = kv_configurator(mc, qc, resolved, spec=SpecEagle(), spec_aux=aux)
    if mc.is_hybrid_swa:
        c = pc.HybridSWAPoolConfigurator(tk)
        out["target"] = {"kv": c._full_per_token * c._full_layers_num,
                         "swa": c._swa_per_token * c._swa_layers_num}
    else:
        c = pc.DefaultPoolConfigurator(tk)
        out["target_cell"] = c._cell_size
    try:
        dmc = ModelConfig(model_path=d, trust_remote_code=trust, is_draft_model=True,
                          speculative_algorithm="EAGLE")
        patch_all()
        dk = kv_configurator(dmc, qc, resolved, is_draft=True, spec=SpecEagle())
        out["draft_arch"] = dmc.hf_config.architectures[0]
        out["draft_worker_layers"] = dk.layer_info.num_effective_layers
        if dk.mambaish_config is not None:
            # A hybrid (Mamba / linear-attention) draft: its pools are not a
            # DefaultPoolConfigurator cell (the state layers and the draft's
            # attention layer ids); not recorded.
            pass
        elif dmc.is_hybrid_swa:
            c = pc.HybridSWAPoolConfigurator(dk)
            out["draft_pool"] = {"kv": c._full_per_token * c._full_layers_num,
                                 "swa": c._swa_per_token * c._swa_layers_num}
        else:
            c = pc.DefaultPoolConfigurator(dk)
            kvb, idx = cell_split(dmc, c, dk)
            out["draft_pool"] = {"kv": kvb, **({"indexer": idx} if idx else {})}
    except Exception as e:
        out["draft_pool_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    return out


# `--mem-fraction-static` profiling from given memory figures (per rank, bytes):
# (free GPU memory before the load, weights resident after it, the fraction). The
# stubbed `get_available_gpu_memory` answers (free - weights) / 2**30 GB.
PROFILE_MEMORY = [(85_094_861_619, 33_822_867_456, 0.851),
                  (150_110_000_000, 71_190_000_000, 0.9),
                  (191_771_000_000, 23_300_000_000, 0.88),
                  (85_094_861_619, 80_000_000_000, 0.85)]
# (page size, --max-total-tokens)
PROFILE_SCHEDULES = [(1, None), (64, None), (64, 100_003)]


def profile_cases(mc, qc, kv):
    """`kv_cache_configurator.py: KVCacheConfigurator._profile_available_bytes`
    (`profile_max_num_token`'s budget: free after the load minus free before x (1 -
    mem_fraction_static), minus the multimodal reservation, minus the Mamba state pool)
    then `config_from_budget` (the pool configurator's `calculate_pool_sizes`, the
    `--max-total-tokens` cap, page alignment): max_total_num_tokens, the SWA pool's
    tokens and the Mamba state slots."""
    resolved = kv
    if is_deepseek_dsa(mc.hf_config):
        resolved, p, d = dsa_resolve(mc, kv)
        STATE["backends"] = (p, d)
    else:
        STATE["backends"] = (None, None)
    if isinstance(qc, Exception) and resolved == "auto":
        raise RuntimeError(f"get_quant_config: {type(qc).__name__}: {str(qc)[:160]}")
    out = []
    for free, weights, frac in PROFILE_MEMORY:
        for page, cap in PROFILE_SCHEDULES:
            STATE["schedule"] = {"page_size": page, "max_total_tokens": cap,
                                 "mem_fraction_static": frac, "max_mamba_cache_size": None,
                                 "max_running_requests": None, "prefill_max_requests": None}
            STATE["available_gb"] = (free - weights) / (1 << 30)
            patch_all()
            # [free before the load, weights, --mem-fraction-static, --page-size,
            # --max-total-tokens]
            rec = {"in": [free, weights, frac, page, cap]}
            try:
                k = kv_configurator(mc, qc, resolved, page_size=page)
                budget = k._profile_available_bytes(free / (1 << 30))
                cfg = k.config_from_budget(budget)
                rec["tokens"] = cfg.max_total_num_tokens
                if cfg.swa_max_total_num_tokens is not None:
                    rec["swa_tokens"] = cfg.swa_max_total_num_tokens
                if k.mambaish_config is not None:
                    rec["state_slots"] = STATE["schedule"].get("max_mamba_cache_size")
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {str(e)[:160]}"
                if os.environ.get("KV_DEBUG"):
                    traceback.print_exc()
            out.append(rec)
    STATE["schedule"] = {}
    return {"kv_cache_dtype": resolved, "is_multimodal": bool(mc.is_multimodal),
            "profile": out}


def one_case(mc, qc, kv):
    resolved = kv
    if is_deepseek_dsa(mc.hf_config):
        resolved, p, d = dsa_resolve(mc, kv)
        STATE["backends"] = (p, d)
    else:
        STATE["backends"] = (None, None)
    if isinstance(qc, Exception) and resolved == "auto":
        # `auto` reads the checkpoint's quant config (kv_cache_quant_algo): unknown here.
        raise RuntimeError(f"get_quant_config: {type(qc).__name__}: {str(qc)[:160]}")
    model = types.SimpleNamespace(quant_config=None if isinstance(qc, Exception) else qc)
    if is_deepseek_v4(mc.hf_config):
        # `overrides.py: _deepseek_v4_kv_cache_dtype`: auto is fp8_e4m3.
        resolved = "fp8_e4m3" if kv == "auto" else kv
        return {"kv_cache_dtype": resolved, "quantization": mc.quantization,
                "dsv4": dsv4_cases(mc, resolved)}
    _, dtype = kvd.configure_kv_cache_dtype(
        server_args_kv_cache_dtype=resolved, model=model, model_dtype=mc.dtype,
        is_draft_worker=False, is_dflash=False, speculative_draft_attention_backend=None)
    info = layer_indices(mc, False)
    kvc = types.SimpleNamespace(
        model_config=mc, kv_cache_dtype=dtype, kv_cache_dtype_str=resolved,
        server_args=server_args_018(), layer_info=info, ps=parallel(),
        use_mla_backend=mc.attention_arch == AttentionArch.MLA, is_draft_worker=False,
        spec_algorithm=Spec(), spec_aux_config=Cfg(), fused_entry_bytes=lambda k: None,
        mambaish_config=hybrid_arch.mambaish_config(mc), pp_size=1, page_size=1,
        sliding_window_size=mc.sliding_window_size, is_hybrid_swa=mc.is_hybrid_swa,
        device="cuda", model=model, model_dtype=mc.dtype, server_args_view=None)
    pools = {}
    if mc.is_hybrid_swa:
        c = pc.HybridSWAPoolConfigurator(kvc)
        pools["kv"] = c._full_per_token * c._full_layers_num
        pools["swa"] = c._swa_per_token * c._swa_layers_num
    else:
        c = pc.DefaultPoolConfigurator(kvc)
        cell = c._cell_size
        idx = 0
        if is_deepseek_dsa(mc.hf_config) and kvc.use_mla_backend:
            layers = (len([i for i in kvc.mambaish_config.full_attention_layer_ids])
                      if kvc.mambaish_config else info.num_effective_layers)
            idx = c._compute_dsa_indexer_cell_size(kvc=kvc, num_layers=layers)
        pools["kv"] = cell - idx
        if idx:
            pools["indexer"] = idx
            if STATE["memory"].get("enable_hierarchical_cache"):
                pools["host_indexer"] = host_indexer_size_per_token(mc, info)
    if kvc.mambaish_config is not None:
        pools["state_per_slot"] = int(kvc.mambaish_config.mamba2_cache_params.mamba_cache_per_req)
    return {"kv_cache_dtype": resolved, "store_dtype": dtype.name, "pools": pools,
            "quantization": mc.quantization,
            "backends": list(STATE["backends"]) if any(STATE["backends"]) else None}


# DeepSeek-V4 under `--speculative-algorithm EAGLE --speculative-eagle-topk 1
# --speculative-num-steps S` (`deepseek_v4_hook.py: apply_deepseek_v4_defaults` admits
# only EAGLE with top-k 1; `_handle_eagle_family` makes the draft tokens S + 1): draft
# tokens 2, 3, 4 (steps 1-3), 8 and 11 (past the C4 ring's write pad in 0.5.18+).
DSV4_SPEC_DRAFT_TOKENS = [2, 3, 4, 8, 11]
# Ratio mode as SGLang resolves it (the only mode DeepSeek-V4 runs in), with
# --max-running-requests 256 (the DeepSeek-V4 default, set before the speculative
# handler's 48) and 48, --swa-full-tokens-ratio 0.25, and the bf16 compress state.
DSV4_SPEC_SCHEDULES = [(256, 8192, None, True), (48, 8192, None, True),
                       (256, 8192, 0.25, True), (256, 8192, None, True, "bf16")]
# (tp, attention DP size).
DSV4_SPEC_LAYOUTS = [(4, 1), (8, 1), (4, 4), (8, 8)]


def dsv4_spec_lines(d):
    name = os.path.basename(d.rstrip("/"))
    try:
        mc = load(d)
    except Exception:  # not a checkpoint this release reads (its KV lines record why)
        return
    if not is_deepseek_v4(mc.hf_config):
        return
    STATE["backends"] = (None, None)
    for tp, dp in DSV4_SPEC_LAYOUTS:
        STATE["tp"], STATE["dp"] = tp, dp
        for n in DSV4_SPEC_DRAFT_TOKENS:
            STATE["spec_draft_tokens"] = n
            patch_all()
            rec = {"model": name, "case": "dsv4_spec", "tp": tp, "dp": dp,
                   "speculative_algorithm": "EAGLE", "speculative_eagle_topk": 1,
                   "speculative_num_steps": n - 1, "speculative_num_draft_tokens": n,
                   "layers": mc.num_hidden_layers}
            run_case(rec, lambda: {"dsv4": dsv4_cases(mc, "fp8_e4m3", DSV4_SPEC_SCHEDULES,
                                                      SpecEagle())})
    STATE["spec_draft_tokens"], STATE["tp"], STATE["dp"] = None, 1, 1
    patch_all()


if DSV4_SPEC_ONLY:
    for d in DIRS:
        dsv4_spec_lines(d)
    sys.exit(0)

for d in DIRS:
    name = os.path.basename(d.rstrip("/"))
    try:
        mc = load(d)
    except Exception as e:
        # The model folder's path (and its resolved form, when the work folder is a
        # symlink) is machine-specific: named as <model dir> before the message is cut,
        # so the golden line is the same on every machine.
        msg = str(e)
        for p in sorted({os.path.realpath(d), d.rstrip("/")}, key=len, reverse=True):
            msg = msg.replace(p, "<model dir>")
        print(json.dumps({"model": name, "error": f"ModelConfig: {type(e).__name__}: {msg[:200]}"}))
        continue
    qc = quant_config(mc)
    dsa = is_deepseek_dsa(mc.hf_config)
    for sm in (SMS if dsa else SMS[:1]):
        STATE["sm"] = sm
        anystub.CAPABILITY[0] = sm
        for tp in TPS:
            STATE["tp"] = tp
            for kv in DTYPES:
                for hicache in HICACHE:
                    STATE["memory"] = {"enable_hierarchical_cache": hicache}
                    rec = {"model": name, "tp": tp, "kv_cache_dtype_arg": kv,
                           "hicache": hicache}
                    if dsa:
                        rec["sm"] = sm[0] * 10 + sm[1]
                    try:
                        rec.update(one_case(mc, qc, kv))
                    except Exception as e:
                        rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                        if os.environ.get("KV_DEBUG"):
                            traceback.print_exc()
                    print(json.dumps(rec, sort_keys=True))
    STATE["sm"] = SMS[0]
    anystub.CAPABILITY[0] = SMS[0]
    STATE["memory"] = {"enable_hierarchical_cache": False}
    # DP attention (`--enable-dp-attention --dp-size D`, attention TP tp // D).
    for tp, dp in DP_LAYOUTS:
        STATE["tp"], STATE["dp"] = tp, dp
        rec = {"model": name, "case": "dp_attention", "tp": tp, "dp": dp,
               "kv_cache_dtype_arg": "auto", "hicache": False}
        if dsa:
            rec["sm"] = 90
        run_case(rec, lambda: one_case(mc, qc, "auto"))
    STATE["dp"] = 1
    # The MTP (NextN) draft of a model with MTP layers.
    if has_mtp_draft(d, mc):
        for tp, dp in DRAFT_LAYOUTS:
            STATE["tp"], STATE["dp"] = tp, dp
            for kv in DRAFT_DTYPES:
                for hicache in HICACHE:
                    STATE["memory"] = {"enable_hierarchical_cache": hicache}
                    rec = {"model": name, "case": "draft", "tp": tp, "dp": dp,
                           "kv_cache_dtype_arg": kv, "hicache": hicache}
                    if dsa:
                        rec["sm"] = 90
                    run_case(rec, lambda: draft_case(d, mc, qc, kv, TRUST[0]))
        STATE["spec"], STATE["dp"], STATE["draft_path"] = None, 1, None
        STATE["memory"] = {"enable_hierarchical_cache": False}
        patch_all()
    # max_total_num_tokens from given memory figures.
    if not is_deepseek_v4(mc.hf_config):
        for tp in PROFILE_TPS:
            STATE["tp"] = tp
            rec = {"model": name, "case": "profile", "tp": tp, "dp": 1,
                   "kv_cache_dtype_arg": "auto", "hicache": False}
            if dsa:
                rec["sm"] = 90
            run_case(rec, lambda: profile_cases(mc, qc, "auto"))
    sys.stdout.flush()
