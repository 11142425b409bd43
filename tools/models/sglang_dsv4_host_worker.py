#!/usr/bin/env python3
"""Runs inside a virtual environment with one SGLang release's unpacked wheel (see
dsv4_host_golden.py). For every DeepSeek-V4 model directory given, it runs SGLang's own
code on a CPU and prints one JSON line per case:

- `configs/model_config.py: ModelConfig(model_path=DIR)`;
- `model_executor/pool_configurator.py: DSV4PoolConfigurator.calculate_pool_sizes`
  (chosen by `create_memory_pool_configurator`) for a schedule and a device budget;
- `mem_cache/deepseek_v4_memory_pool.py: DeepSeekV4TokenToKVPool(...)` built from those
  sizes as `kv_cache_configurator.py: _build_dsv4_kv_pool` builds it (page 256, SWA
  page 256, fp8, fp32 compress state, no HiSparse, no speculative decoding);
- `mem_cache/hybrid_cache/hybrid_pool_assembler.py: build_deepseek_v4_hicache_stack`
  with `--hicache-ratio` R: every host pool it constructs (the real
  `DeepSeekV4PagedHostPool` / `DeepSeekV4StateHostPool` constructors), as
  `(name, layer_num, num_host_pages, item_bytes or state_page_bytes, requested_bytes)`;
- the two refusals: `--hicache-size` (`_deepseek_v4_num_host_pages`) and the auto-size
  (`hicache_auto_size.py: _estimate_hicache_bytes`), with SGLang's messages.

Torch is stubbed (tools/models/anystub.py) with a shape-recording tensor: every buffer
SGLang allocates is a `FakeTensor` that knows its shape and dtype and holds no memory,
so the pools' geometry is SGLang's own. The host budget check is given 2**62 bytes
(the sizes, not the machine, are under test); allocation, kernel pointer tables, the
pool group and the cache controller are inert.

Usage: sglang_dsv4_host_worker.py TREE MODEL_DIR...   (one JSON object per line)
"""
import inspect
import json
import logging
import math
import os
import sys
import types

TREE = sys.argv[1]
DIRS = sys.argv[2:]
# (max_running_requests, chunked_prefill_size, --swa-full-tokens-ratio given or None,
# resolved as SGLang resolves the flags): True runs `_deepseek_v4_overrides` and the
# explicit-ratio rule (`swa_ratio` below), what a server with these flags sizes; False
# forces the configurator's cap mode (`_swa_full_tokens_ratio_explicitly_set` False), a
# state DeepSeek-V4 does not reach in 0.5.21–0.5.23, kept to check the simulator's
# cap-mode arithmetic against SGLang's.
SCHEDULES = [(256, 8192, None, True), (64, 8192, None, True), (256, 8192, 0.25, True),
             (256, 8192, None, False), (256, 16384, None, False), (64, 8192, None, False)]
AVAILABLE_GIB = [40, 100]
RATIOS = [1.0, 2.0, 3.5]

import transformers  # noqa: E402,F401  (before the stubs: transformers must see no torch)

# transformers 5.12 exposes AutoImageProcessor as a placeholder needing torch; SGLang's
# config modules register their processors with it at import (as sglang_kv_worker.py).
from transformers.utils import import_utils as _iu  # noqa: E402

_dummy_getattribute = _iu.DummyObject.__getattribute__


def _lenient(cls, key):
    if key == "register":
        return lambda *a, **k: None
    return _dummy_getattribute(cls, key)


_iu.DummyObject.__getattribute__ = _lenient

logging.disable(logging.WARNING)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anystub  # noqa: E402

anystub.install()
sys.path.insert(0, TREE)
os.environ.pop("SGLANG_PLATFORM", None)
import torch  # noqa: E402  (the stub)


class FakeTensor:
    """A tensor that records its shape and dtype and owns no memory."""

    def __init__(self, shape, dtype):
        self.shape = tuple(int(x) for x in shape)
        self.dtype = dtype

    def element_size(self):
        return self.dtype.itemsize

    def numel(self):
        return math.prod(self.shape)

    @property
    def nbytes(self):
        return self.numel() * self.dtype.itemsize

    @property
    def device(self):
        return types.SimpleNamespace(type="cuda")

    def __getitem__(self, k):
        if isinstance(k, int):
            return FakeTensor(self.shape[1:], self.dtype)
        if isinstance(k, slice):
            n = len(range(*k.indices(self.shape[0])))
            return FakeTensor((n,) + self.shape[1:], self.dtype)
        return self

    def __len__(self):
        return self.shape[0]

    def view(self, *a):
        if len(a) == 1 and isinstance(a[0], anystub.dtype):
            d = a[0]
            return FakeTensor(self.shape[:-1] + (self.shape[-1] * self.dtype.itemsize // d.itemsize,), d)
        shp = list(a[0] if len(a) == 1 and isinstance(a[0], (tuple, list)) else a)
        if -1 in shp:
            i = shp.index(-1)
            shp[i] = self.numel() // math.prod(x for x in shp if x != -1)
        return FakeTensor(shp, self.dtype)

    reshape = view

    def flatten(self, start=0):
        return FakeTensor(self.shape[:start] + (math.prod(self.shape[start:]),), self.dtype)

    def size(self, i=None):
        return self.shape if i is None else self.shape[i]

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return 0

    def __getattr__(self, n):
        if n.startswith("__"):
            raise AttributeError(n)
        return lambda *a, **k: self


def _make(*shape, dtype=None, **_):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return FakeTensor(shape, dtype or torch.float32)


for _n in ("zeros", "empty", "ones", "full"):
    setattr(torch, _n, _make)
torch.Tensor = FakeTensor

from sglang.srt.configs.model_config import ModelConfig, is_deepseek_v4  # noqa: E402
import sglang.srt.model_executor.pool_configurator as pc  # noqa: E402
from sglang.srt.model_executor.model_runner_components import layer_setup  # noqa: E402
import sglang.srt.mem_cache.deepseek_v4_memory_pool as v4pool  # noqa: E402
import sglang.srt.mem_cache.hybrid_cache.hybrid_pool_assembler as hpa  # noqa: E402
import sglang.srt.mem_cache.memory_pool_host as mph  # noqa: E402
try:
    # 0.5.21 on; before, no auto-size (an unset --hicache-ratio is its default 2.0).
    import sglang.srt.mem_cache.hicache_auto_size as auto  # noqa: E402
except ImportError:
    auto = None
try:
    from sglang.srt.arg_groups.model_overrides.deepseek_v4 import _deepseek_v4_overrides  # noqa: E402
except ImportError:
    # 0.5.18: the override lives in `arg_groups/overrides.py`.
    from sglang.srt.arg_groups.overrides import _deepseek_v4_overrides  # noqa: E402


try:
    from sglang.srt.server_args import ServerArgs  # noqa: E402

    SERVER_ARGS_SWA_DEFAULT = ServerArgs.swa_full_tokens_ratio
    if not isinstance(SERVER_ARGS_SWA_DEFAULT, float):
        # A slots dataclass's field descriptor (0.5.20 on): the default is None.
        SERVER_ARGS_SWA_DEFAULT = None
except Exception:  # noqa: BLE001  (a release whose ServerArgs does not import here)
    SERVER_ARGS_SWA_DEFAULT = None


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


STATE = {"schedule": {}, "memory": {}}


def parallel():
    return Cfg(attn_tp_size=1, tp_size=1, attn_dcp_size=1, attn_cp_size=1, pp_size=1,
               attn_dp_size=1, moe_tp_size=1, moe_ep_size=1)


def memory():
    return Cfg(**STATE["memory"])


def exec_():
    # `deepseek_v4_hook.py: _default_dsv4_attention_backend`: flashmla for V4.
    return Cfg(kernel=Cfg(dsv4_attn_backend="flashmla"), features=Cfg(), graph=Cfg())


def schedule():
    return Cfg(**{"page_size": 256, **STATE["schedule"]})


def spec():
    return Cfg(speculative_algorithm=None, speculative_num_draft_tokens=None)


def disagg():
    return Cfg(disaggregation_mode="null")


def platform():
    return Cfg(is_blackwell=False, is_sm100=False, is_sm90=True, is_hopper=True,
               is_cuda=True, is_cuda_alike=True, is_sm120=False)


PATCH = {"get_parallel": parallel, "get_memory": memory, "get_exec": exec_,
         "get_schedule": schedule, "get_disagg": disagg, "get_platform": platform,
         "get_spec": spec}


def patch_all():
    for name, mod in list(sys.modules.items()):
        if not name.startswith("sglang") or mod is None:
            continue
        for attr, fn in PATCH.items():
            if attr in getattr(mod, "__dict__", {}):
                setattr(mod, attr, fn)


class _Alloc(dict):
    def __getitem__(self, k):
        return lambda shape, dtype=None, **kw: FakeTensor(shape, dtype)


class _Group:
    def __init__(self, entries):
        self.entries = entries


mph.host_memory_budget_bytes = lambda *a, **k: 1 << 62
if hasattr(mph, "psutil"):
    # 0.5.18 checks `psutil.virtual_memory().available` inside the constructors.
    mph.psutil = types.SimpleNamespace(
        virtual_memory=lambda: types.SimpleNamespace(available=1 << 62, total=1 << 62))
mph.ALLOC_MEMORY_FUNCS = _Alloc()
mph.make_kernel_ptr_table = lambda *a, **k: None
hpa.HostPoolGroup = _Group
hpa.HybridCacheController = lambda *a, **k: None
patch_all()


class Spec:
    def is_eagle(self): return False
    def is_standalone(self): return False
    def is_dflash_family(self): return False
    def is_none(self): return True


def swa_ratio(mc, ratio, as_sglang):
    """`--swa-full-tokens-ratio` (None: not given) as the configurator sees it: the ratio
    and `_swa_full_tokens_ratio_explicitly_set`. As SGLang resolves it:
    `arg_groups/model_overrides/deepseek_v4.py: _deepseek_v4_overrides` (SGLang's own,
    run on a view of the flags) declares 0.1 when it is unset (model_type not
    deepseek_v41), and `arg_groups/kv_cache_hook.py: handle_cache_compatibility`, later in
    `run_resolution_pipeline`, records `explicitly_set = cfg.swa_full_tokens_ratio is not
    None` over that declaration. Otherwise the configurator's cap mode: not explicit."""
    if not as_sglang:
        return (0.1 if ratio is None else ratio), False
    if ratio is None:
        # Not given: the flag's default (`ServerArgs.swa_full_tokens_ratio`: 0.8 in
        # 0.5.18–0.5.19, whose override compares against it; None from 0.5.20).
        ratio = SERVER_ARGS_SWA_DEFAULT
    view = types.SimpleNamespace(
        swa_full_tokens_ratio=ratio, device="cuda", moe_runner_backend="triton",
        fp8_gemm_runner_backend="auto", moe_a2a_backend="none", _resolved_overrides=[])
    ratio = _deepseek_v4_overrides(view, mc.hf_config).get("swa_full_tokens_ratio", ratio)
    return ratio, ratio is not None


def device_pools(mc, mrr, chunk, ratio, explicit, gib):
    STATE["schedule"] = {
        "page_size": 256, "max_running_requests": mrr, "chunked_prefill_size": chunk,
        "swa_full_tokens_ratio": ratio,
        "_swa_full_tokens_ratio_explicitly_set": explicit,
        "disable_overlap_schedule": False, "swa_prefix_tails": None,
    }
    patch_all()
    kw = {}
    if "spec_algorithm" in inspect.signature(layer_setup.resolve_layer_indices).parameters:
        # 0.5.18–0.5.20 take it (no draft here).
        kw["spec_algorithm"] = Spec()
    info = layer_setup.resolve_layer_indices(model=types.SimpleNamespace(), model_config=mc,
                                             is_draft_worker=False, **kw)
    kvc = types.SimpleNamespace(
        model_config=mc, kv_cache_dtype_str="fp8_e4m3", layer_info=info, pp_size=1,
        page_size=256, sliding_window_size=mc.sliding_window_size,
        is_hybrid_swa=mc.is_hybrid_swa, spec_algorithm=Spec(), spec_aux_config=Cfg(),
        attn_dp_size=1, ps=Cfg(pp_size=1, attn_dp_size=1),
        # 0.5.18 reads the schedule from `server_args`, later releases from `get_schedule`.
        server_args=Cfg(swa_full_tokens_ratio=ratio, max_running_requests=mrr,
                        chunked_prefill_size=chunk, disaggregation_mode="null"))
    c = pc.create_memory_pool_configurator(kvc)
    return info, c.calculate_pool_sizes(gib << 30, 256)


def kv_pool(mc, info, r, mrr):
    # `kv_cache_configurator.py: _build_dsv4_kv_pool` (num_req_slots = the req_to_token
    # rows: max_running_requests + 1).
    kw = dict(
        max_num_reqs=mrr, num_req_slots=mrr + 1,
        swa_size=r.swa_max_total_num_tokens, c4_size=r.c4_max_total_num_tokens,
        c128_size=r.c128_max_total_num_tokens, c4_state_pool_size=r.c4_state_pool_size,
        c128_state_pool_size=r.c128_state_pool_size, page_size=256, swa_page_size=256,
        sliding_window=mc.window_size, dtype=torch.float8_e4m3fn,
        c4_state_dtype=torch.float32, c128_state_dtype=torch.float32,
        qk_nope_head_dim=mc.qk_nope_head_dim, qk_rope_head_dim=mc.qk_rope_head_dim,
        indexer_head_dim=mc.index_head_dim, layer_num=info.num_effective_layers,
        device="cuda", enable_memory_saver=False, compression_ratios=mc.compress_ratios,
        start_layer=info.start_layer, end_layer=info.end_layer, enable_hisparse=False,
        online_mtp_max_draft_tokens=0, unified_fp8=False,
        kv_source_layers=list(getattr(mc.hf_config, "kv_source_layer_ids", None) or []),
        full_size=r.full_max_total_num_tokens)
    # Arguments a release's constructor does not take (0.5.18–0.5.20 have no
    # `unified_fp8`, `kv_source_layers`, `full_size`) are left out, as its
    # `_build_dsv4_kv_pool` leaves them out.
    params = inspect.signature(v4pool.DeepSeekV4TokenToKVPool.__init__).parameters
    return v4pool.DeepSeekV4TokenToKVPool(**{k: v for k, v in kw.items() if k in params})


def host_stack(kv, r, hicache_ratio, hicache_size=0):
    STATE["memory"] = {"hicache_size": hicache_size, "hicache_ratio": hicache_ratio,
                       "hicache_mem_layout": "page_first", "hicache_write_policy": "write_through",
                       "hicache_io_backend": "kernel", "hicache_host_memory_mode": None,
                       "hicache_host_memory_fraction": 0.8}
    patch_all()
    alloc = types.SimpleNamespace(
        size_full=r.full_max_total_num_tokens,
        swa_attn_allocator=types.SimpleNamespace(alloc=None, free=None),
        get_kvcache=lambda: kv)
    params = types.SimpleNamespace(
        token_to_kv_pool_allocator=alloc, page_size=256, mtp_draft_device_pools=[],
        tp_cache_group=None, attn_cp_cache_group=None, attn_tp_cache_group=None,
        pp_cache_group=None, req_to_token_pool=None)
    kw = {}
    if "server_args" in inspect.signature(hpa.build_deepseek_v4_hicache_stack).parameters:
        # 0.5.18 reads the HiCache flags from `server_args`.
        kw["server_args"] = memory()
    return params, hpa.build_deepseek_v4_hicache_stack(
        params=params, kvcache=kv, load_cache_event=None, storage_backend=None, **kw)[0]


for d in DIRS:
    name = os.path.basename(d.rstrip("/"))
    try:
        mc = ModelConfig(model_path=d, trust_remote_code=False)
    except Exception as e:
        print(json.dumps({"model": name, "error": f"ModelConfig: {type(e).__name__}"}))
        continue
    if not is_deepseek_v4(mc.hf_config):
        continue
    for mrr, chunk, arg, as_sglang in SCHEDULES:
        ratio, explicit = swa_ratio(mc, arg, as_sglang)
        for gib in AVAILABLE_GIB:
            rec = {"model": name, "max_running_requests": mrr, "chunked_prefill_size": chunk,
                   "swa_full_tokens_ratio_arg": arg, "resolved_as_sglang": as_sglang,
                   "swa_full_tokens_ratio": ratio,
                   "swa_full_tokens_ratio_explicitly_set": explicit, "available_gib": gib}
            try:
                info, r = device_pools(mc, mrr, chunk, ratio, explicit, gib)
                rec["full"] = r.full_max_total_num_tokens
                rec["swa"] = r.swa_max_total_num_tokens
                kv = kv_pool(mc, info, r, mrr)
                rec["hosts"] = {}
                for hr in RATIOS:
                    _, g = host_stack(kv, r, hr)
                    pools = []
                    for e in g.entries:
                        hp = e.host_pool
                        if type(hp).__name__ == "LogicalHostPool":
                            pools.append([str(e.name), 0, hp.size // hp.page_size, 0, 0])
                            continue
                        item = getattr(hp, "item_bytes", None) or hp.state_page_bytes
                        pools.append([str(e.name), hp.layer_num, hp.num_host_pages, item,
                                      hp.layer_num * hp.num_host_pages * item])
                    rec["hosts"][repr(hr)] = pools
                try:
                    host_stack(kv, r, 2.0, hicache_size=100)
                    rec["hicache_size_error"] = None
                except ValueError as e:
                    rec["hicache_size_error"] = str(e)
                if auto is not None:
                    try:
                        params, _ = host_stack(kv, r, 2.0)
                        auto._estimate_hicache_bytes(params, None)
                        rec["auto_size_error"] = None
                    except ValueError as e:
                        rec["auto_size_error"] = str(e)
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            print(json.dumps(rec, sort_keys=True))
    sys.stdout.flush()
