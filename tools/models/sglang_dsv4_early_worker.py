#!/usr/bin/env python3
"""Runs inside kv_bytes_golden.py's virtual environment for one SGLang release of
0.5.14-0.5.17 (the unpacked wheel's path first, then DeepSeek-V4 model directories) and
prints one JSON line per model x parallel layout: SGLang's own
`model_executor/pool_configurator.py: DSV4PoolConfigurator`, built from the real
`configs/model_config.py: ModelConfig`, per schedule, in the record format of
sglang_kv_worker.py's `dsv4_cases` (so tests/it/kv_bytes.rs reads both alike).

These releases' configurator takes a `ModelRunner` (0.5.14-0.5.15) or a
`KVCacheConfigurator` (0.5.16-0.5.17) but reads only a few fields of it: the model
config, the layer slice `[start_layer, end_layer)` (`[0, num_hidden_layers)` with PP 1,
as the model's `make_layers` gives it), the PP and attention-DP sizes, and a handful of
server arguments. Both are given here as namespaces holding exactly those fields, so the
class's own `__init__`, `_get_bytes_per_full_token` and `calculate_pool_sizes` run
unchanged. `--swa-full-tokens-ratio` is resolved as each release does (`ServerArgs`'
default 0.8, replaced by 0.1 when equal to it: `arg_groups/deepseek_v4_hook.py:
apply_deepseek_v4_defaults` in 0.5.14, `arg_groups/overrides.py:
_deepseek_v4_overrides` in 0.5.15-0.5.17). Torch and the GPU packages are stubbed
(anystub.py).

With `--dsv4-spec` before the model directories it prints the speculative lines instead
(`case: dsv4_spec`, the record of sglang_kv_worker.py's `--dsv4-spec`): the server
arguments carry `speculative_algorithm` EAGLE and `max_speculative_num_draft_tokens`
(the draft tokens of `--speculative-eagle-topk 1 --speculative-num-steps S`: S + 1), the
runner's `spec_algorithm` is EAGLE.
"""

import json
import os
import sys
import types

TREE = sys.argv[1]
DIRS = sys.argv[2:]
SPEC_ONLY = bool(DIRS) and DIRS[0] == "--dsv4-spec"
if SPEC_ONLY:
    DIRS = DIRS[1:]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anystub  # noqa: E402

anystub.prepare_sglang(TREE)

from sglang.srt.configs.model_config import ModelConfig  # noqa: E402
import sglang.srt.model_executor.pool_configurator as pc  # noqa: E402
from sglang.srt.server_args import ServerArgs  # noqa: E402

# The same schedules as sglang_kv_worker.py's DSV4_SCHEDULES: (max_running_requests,
# chunked_prefill_size, --swa-full-tokens-ratio given or None, resolved as SGLang does).
# These releases have no cap mode: False only records the ratio as given (0.1 unset).
SCHEDULES = [(256, 8192, None, True), (64, 8192, None, True), (256, 8192, 0.25, True),
             (256, 8192, None, False), (256, 16384, None, False), (64, 8192, None, False),
             (256, 8192, None, True, "bf16"), (64, 8192, None, True, "bf16")]
AVAILABLE_GIB = [40, 100]
# (tp, attention DP size): plain TP, then DP attention.
LAYOUTS = [(1, 1), (8, 1), (2, 2), (4, 4), (4, 2), (8, 8), (8, 4)]


def resolved_ratio(arg, as_sglang):
    """The ratio the configurator reads: `ServerArgs.swa_full_tokens_ratio` (0.8) when not
    given; the DeepSeek-V4 defaults replace a value equal to it by 0.1."""
    if not as_sglang:
        return (0.1 if arg is None else arg), False
    default = ServerArgs.swa_full_tokens_ratio
    ratio = default if arg is None else arg
    if ratio == default:
        ratio = 0.1
    return ratio, True


def configurator(mc, mrr, ratio, dp, draft_tokens=None):
    spec = draft_tokens is not None
    args = types.SimpleNamespace(
        swa_full_tokens_ratio=ratio, speculative_algorithm="EAGLE" if spec else None,
        max_speculative_num_draft_tokens=draft_tokens,
        speculative_num_draft_tokens=draft_tokens, max_running_requests=mrr,
        disaggregation_mode="null", disaggregation_decode_extra_slots=0,
        enable_hisparse=False)
    start, end = 0, mc.num_hidden_layers
    mr = types.SimpleNamespace(
        # ModelRunner (0.5.14-0.5.15)
        model_config=mc, start_layer=start, end_layer=end, pp_size=1, dp_size=dp,
        server_args=args, enable_hisparse=False,
        spec_algorithm=types.SimpleNamespace(is_none=lambda: not spec, is_eagle=lambda: spec,
                                             is_dspark=lambda: False),
        # KVCacheConfigurator (0.5.16-0.5.17)
        layer_info=types.SimpleNamespace(start_layer=start, end_layer=end),
        ps=types.SimpleNamespace(pp_size=1, attn_dp_size=dp), kv_cache_dtype_str="fp8_e4m3")
    return pc.DSV4PoolConfigurator(mr)


def cases(mc, dp, schedules=SCHEDULES, draft_tokens=None):
    out = []
    for mrr, chunk, arg, as_sglang, *state in schedules:
        state_dtype = state[0] if state else None
        if state_dtype is not None:
            # `SGLANG_DSV4_COMPRESS_STATE_DTYPE`, read by the configurator as it sizes.
            os.environ["SGLANG_DSV4_COMPRESS_STATE_DTYPE"] = state_dtype
        ratio, explicit = resolved_ratio(arg, as_sglang)
        try:
            c = configurator(mc, mrr, ratio, dp, draft_tokens)
        except Exception as e:  # noqa: BLE001  (SGLang's own refusal is the record)
            if draft_tokens is None:
                raise
            out.append({"max_running_requests": mrr, "chunked_prefill_size": chunk,
                        "swa_full_tokens_ratio_arg": arg, "resolved_as_sglang": as_sglang,
                        "error": f"{type(e).__name__}: {str(e)[:300]}"})
            if state_dtype is not None:
                del os.environ["SGLANG_DSV4_COMPRESS_STATE_DTYPE"]
            continue
        rec = {"configurator": type(c).__name__, "max_running_requests": mrr,
               "chunked_prefill_size": chunk, "swa_full_tokens_ratio_arg": arg,
               "resolved_as_sglang": as_sglang, "swa_full_tokens_ratio": ratio,
               "swa_full_tokens_ratio_explicitly_set": explicit, "kv_bytes": None,
               "bytes_per_full_token": repr(c.bytes_per_full_token),
               "bytes_per_swa_token": repr(None), "swa_cap_tokens": None, "sizes": {}}
        if draft_tokens is not None:
            # The compress-state rings the configurator priced.
            rec["ring_sizes"] = {"128": c.c128_ring_size, "4": c.c4_ring_size}
        for gib in AVAILABLE_GIB:
            r = c.calculate_pool_sizes(gib << 30, 256)
            rec["sizes"][str(gib)] = {
                "full": r.full_max_total_num_tokens, "swa": r.swa_max_total_num_tokens,
                "c4": r.c4_max_total_num_tokens, "c128": r.c128_max_total_num_tokens,
                "c4_state": r.c4_state_pool_size, "c128_state": r.c128_state_pool_size}
        if state_dtype is not None:
            rec["compress_state_dtype"] = state_dtype
            del os.environ["SGLANG_DSV4_COMPRESS_STATE_DTYPE"]
        out.append(rec)
    return out


def load(d):
    """SGLang's ModelConfig, with the checkpoint's remote code if it loads, else
    transformers' native class (as sglang_kv_worker.py's `load`)."""
    try:
        return ModelConfig(model_path=d, trust_remote_code=True)
    except Exception:
        return ModelConfig(model_path=d, trust_remote_code=False)


# The speculative lines: sglang_kv_worker.py's DSV4_SPEC_* (draft tokens, ratio-mode
# schedules, layouts).
SPEC_DRAFT_TOKENS = [2, 3, 4, 8, 11]
SPEC_SCHEDULES = [(256, 8192, None, True), (48, 8192, None, True), (256, 8192, 0.25, True),
                  (256, 8192, None, True, "bf16")]
SPEC_LAYOUTS = [(4, 1), (8, 1), (4, 4), (8, 8)]

if SPEC_ONLY:
    for d in DIRS:
        try:
            mc = load(d)
        except Exception:  # noqa: BLE001  (not a checkpoint this release reads)
            continue
        if not getattr(mc, "compress_ratios", None):
            continue
        for tp, dp in SPEC_LAYOUTS:
            for n in SPEC_DRAFT_TOKENS:
                line = {"model": os.path.basename(d), "case": "dsv4_spec", "tp": tp,
                        "dp": dp, "speculative_algorithm": "EAGLE",
                        "speculative_eagle_topk": 1, "speculative_num_steps": n - 1,
                        "speculative_num_draft_tokens": n, "layers": mc.num_hidden_layers,
                        "dsv4": cases(mc, dp, SPEC_SCHEDULES, n)}
                print(json.dumps(line, sort_keys=True))
    sys.exit(0)

for d in DIRS:
    try:
        mc = load(d)
    except Exception as e:  # noqa: BLE001  (recorded, as the KV golden records it)
        print(json.dumps({"model": os.path.basename(d),
                          "error": f"ModelConfig: {type(e).__name__}: {e}"[:200]}))
        continue
    for tp, dp in LAYOUTS:
        line = {"model": os.path.basename(d), "tp": tp, "dp": dp,
                "layers": mc.num_hidden_layers, "dsv4": cases(mc, dp)}
        print(json.dumps(line, sort_keys=True))
