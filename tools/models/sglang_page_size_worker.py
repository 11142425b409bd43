#!/usr/bin/env python3
"""Runs inside kv_bytes_golden.py's virtual environment for one SGLang release (the
unpacked wheel's path, then the release id) and prints one JSON line per case: the
attention backend SGLang picks when `--attention-backend` is not given and the page size
the backend then keeps, from SGLang's own functions:

- `get_default_attn_backend(server_args, use_mla_backend, model_config)`
  (`arg_groups/model_override_base.py`, 0.5.19 on) or the `ServerArgs` method
  `_get_default_attn_backend` (0.5.14-0.5.18), on a namespace holding the flags it
  reads, with the platform answering Hopper (SM90, CUDA >= 12.3), SM100 or SM120;
- `arg_groups/overrides.py: _mla_backend_page_constraints` and `_fa4_page_constraint`
  (0.5.15 on; 0.5.14 applies them inside a larger `ServerArgs` method, not run here:
  its lines carry `page` "not run"). `page` null is an unset `--page-size` kept.

Cases: GPU x attention (plain, plain with unequal K/V widths, MLA) x speculative
decoding (none; EAGLE with top-k unset, 1 or 4) x `--page-size` (unset, 1, 16, 64, 128)
x `--attention-backend` (unset or one of BACKENDS). Model-specific overrides (DSA's 64,
DeepSeek-V3's trtllm_mla) are not these functions' and are not run here.
"""

import json
import os
import sys
import types

TREE, REL = sys.argv[1], sys.argv[2]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anystub  # noqa: E402

anystub.prepare_sglang(TREE)

import sglang.srt.server_args as sa  # noqa: E402

try:
    import sglang.srt.arg_groups.model_override_base as mob  # 0.5.19 on
except ModuleNotFoundError:
    mob = None
try:
    import sglang.srt.arg_groups.overrides as ov  # 0.5.15 on
except ModuleNotFoundError:
    ov = None

SMS = [9, 10, 12]
KINDS = ["mha", "mha_asymmetric", "mla"]
SPECS = [(None, None), ("EAGLE", None), ("EAGLE", 1), ("EAGLE", 4)]
PAGES = [None, 1, 16, 64, 128]
BACKENDS = [None, "flashmla", "trtllm_mla", "cutedsl_mla", "trtllm_mha", "fa4", "fa3",
            "flashinfer", "triton"]


def platform(sm):
    return types.SimpleNamespace(
        is_hopper_with_cuda_12_3=sm == 9, is_sm100=sm == 10, is_hip=False, is_npu=False,
        is_xpu=False, has_flashinfer=True, is_blackwell=sm in (10, 12), is_cuda=True,
        is_out_of_tree=lambda: False)


def patch(sm):
    p = platform(sm)
    oot = types.SimpleNamespace(is_out_of_tree=lambda: False)
    for mod in (m for m in (sa, mob, ov) if m is not None):
        d = mod.__dict__
        for name, fn in {"get_platform": lambda: p, "is_mps": lambda: False,
                         "is_hip": lambda: False, "is_npu": lambda: False,
                         "is_hopper_with_cuda_12_3": lambda: sm == 9,
                         "is_sm100_supported": lambda *a: sm == 10,
                         "is_flashinfer_available": lambda: True,
                         "resolving_view": lambda x: x, "resolved_view": lambda x: x}.items():
            if name in d:
                d[name] = fn
        if "current_platform" in d:
            d["current_platform"] = oot


def model_config(kind):
    return types.SimpleNamespace(
        hf_config=types.SimpleNamespace(architectures=["LlamaForCausalLM"]),
        has_attention_sinks=False, has_asymmetric_kv=kind == "mha_asymmetric",
        get_num_kv_heads=lambda tp: 8)


def view(kind, spec, topk, page, backend):
    mla = kind == "mla"
    mc = model_config(kind)
    return types.SimpleNamespace(
        speculative_algorithm=spec, speculative_eagle_topk=topk, page_size=page,
        attention_backend=backend, prefill_attention_backend=None,
        decode_attention_backend=None, speculative_draft_attention_backend=None,
        tp_size=1, device="cuda", _mla=mla, get_model_config=lambda: mc,
        use_mla_backend=lambda: mla)


def default_backend(v, kind):
    mla, mc = kind == "mla", model_config(kind)
    if mob is not None and hasattr(mob, "get_default_attn_backend"):
        return mob.get_default_attn_backend(v, mla, mc)
    return sa.ServerArgs._get_default_attn_backend(v, mla, mc)


def page_constraints(v):
    """The page after `_mla_backend_page_constraints` and `_fa4_page_constraint`, or "not
    run" where the release has no such pass."""
    if ov is None or not hasattr(ov, "_mla_backend_page_constraints"):
        return "not run"
    page = ov._mla_backend_page_constraints(v).get("page_size", v.page_size)
    if hasattr(ov, "_fa4_page_constraint"):
        v.page_size = page
        ov.__dict__["use_mla_backend"] = lambda x: x._mla
        ov.__dict__["model_config_of"] = lambda x: x.get_model_config()
        page = ov._fa4_page_constraint(v).get("page_size", page)
    return page


for sm in SMS:
    patch(sm)
    for kind in KINDS:
        for spec, topk in SPECS:
            for page in PAGES:
                for arg in BACKENDS:
                    v = view(kind, spec, topk, page, arg)
                    backend = arg if arg is not None else default_backend(v, kind)
                    v.attention_backend = backend
                    try:
                        out = page_constraints(v)
                    except Exception as e:  # noqa: BLE001  (SGLang refuses: recorded)
                        out = f"error: {type(e).__name__}"
                    print(json.dumps({"release": REL, "sm": sm, "kind": kind,
                                      "speculative": spec, "eagle_topk": topk,
                                      "page_size": page, "attention_backend": arg,
                                      "backend": backend,
                                      "page": out},
                                     sort_keys=True))
