#!/usr/bin/env python3
"""Replays a trace through SGLang's own HiCache tiers on a CPU and writes per-request
device / host / storage hits (golden files for `tests/it/host_golden.rs`).

Release: the sglang wheel installed in the venv (`run.sh`: 0.5.23 for
`UnifiedRadixCache`; the `HiRadixCache` releases are `replay_hiradix.py`). No SGLang
module is edited. SGLang's own code runs:
  * `mem_cache/unified_radix_cache.py: UnifiedRadixCache` with `init_hicache` (tree
    `tree_components=(FULL,)`, Python tree core), which builds through
    `hybrid_pool_assembler.py` the `HostPoolGroup` and `HybridCacheController`
    (`managers/cache_controller.py`) of a plain KV model;
  * `pool_host/base.py: HostKVCache`'s slot allocator (`alloc`, `free`, the padding
    page), `write`, `load`, `start_writing`, `start_loading`, `writing_check`,
    `loading_check`, `check_hicache_events`, `init_load_back`, `checkpoint`,
    `evict_to_free_tokens`, `prefetch_from_storage`, `check_prefetch_progress`, and
    with L3 the `HiCacheFile` backend (`mem_cache/hicache_storage.py`) in a temporary
    folder;
  * `managers/scheduler.py: Scheduler._prefetch_kvcache` (called on a stand-in `self`);
  * `Req.init_next_round_input` (match limited to `input_len - 1`).

Shims (only these):
  1. `NoCopyHostKVCache`, a `HostKVCache` subclass without the pinned buffer whose
     copy kernels do nothing (its slot bookkeeping is `HostKVCache`'s own); picked
     by replacing `hybrid_pool_assembler.get_mha_host_pool_cls`.
  2. CUDA streams and events: on a CPU SGLang's `get_device_module()` is `torch.cpu`,
     whose `Stream` / `Event` report done at once; nothing else is needed.
  3. `DevicePoolStub`: the device KV pool with only its size and layers, under an
     allocator that hands out page ids (`BaseTokenToKVPoolAllocator` subclass).
  Storage threads (L3 only): `cache_controller.py`'s threads are created by SGLang's
  own `_start_storage_threads` but not started (`ManualThread`); the driver runs each
  thread's own function on the main thread until its queue is empty, in a fixed
  order, so the run is deterministic.

Scheduler order for a one-request batch (0.5.23 `managers/scheduler.py`,
`schedule_policy.py: PrefillAdder.add_one_req`, `schedule_batch.py:
prepare_for_extend`):
  arrival: `init_next_round_input` (match) + `_prefetch_kvcache`; the storage work is
           stepped until `check_prefetch_progress` reports the prefetch done;
  admission: `init_next_round_input`; lock the device match; with a host hit, pin the
           best match (host + device) and `init_load_back`; `req.lock` on the new
           last node; `evict_to_free_tokens(extend + 1 page)`; allocate the extend;
  insert:  `checkpoint(req, up_to=whole pages)`; the tail (partial page) freed; unlock;
  idle:    `check_hicache_events` (D2H / H2D acks, storage queues) until nothing is
           pending; SGLang's `sanity_check()` then runs.
  The acks of a request's own transfers therefore come at the next iteration: the
  nodes a request loads back stay pinned (`ongoing_load_back`) through its own
  allocation and insert.

Tokens: block id `h` of a trace with `B`-token blocks stands for tokens
`h*B .. h*B+B-1` (as `tests/sglang_diff/tree/replay_tree.py`).

Output: a header `# key=value ...`, then one line per request:
  `device host storage host_used device_used` — device hit tokens (the match before
  load-back), host hit tokens loaded back (`host_loaded_length`, L3-fetched tokens
  included), tokens that arrived from storage for the request
  (`pop_prefetch_loaded_span`), host pool slots in use and device slots in use after
  the request and its acks (all in tokens).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import types
from array import array
from queue import Empty


def load_trace(path, limit):
    reqs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            reqs.append((int(r["input_length"]), [int(h) for h in r["hash_ids"]]))
            if limit and len(reqs) >= limit:
                break
    return reqs


def tokens_of(input_len, ids, block):
    toks = array("q")
    for h in ids:
        base = h * block
        toks.extend(range(base, base + block))
        if len(toks) >= input_len:
            break
    del toks[input_len:]
    assert len(toks) == input_len, "trace ids cover fewer tokens than input_length"
    return toks


def scheduler_method(name):
    """A method of `managers/scheduler.py: Scheduler`, its source cut out with `ast`
    and executed alone (importing the scheduler module needs the serving stack)."""
    import ast
    import importlib.util
    from typing import Optional

    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.runtime_context import get_memory

    path = importlib.util.find_spec("sglang.srt.managers.scheduler").origin
    src = open(path).read()
    tree = ast.parse(src)
    cls = next(
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Scheduler"
    )
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)
    fn.decorator_list = []
    mod = ast.Module(body=[fn], type_ignores=[])
    scope = {"Optional": Optional, "get_memory": get_memory, "Req": Req}
    exec(compile(mod, path, "exec"), scope)
    return scope[name]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", required=True)
    ap.add_argument("--block", type=int, required=True)
    ap.add_argument("--page-size", type=int, required=True)
    ap.add_argument("--l1-pages", type=int, required=True)
    ap.add_argument("--l2-ratio", type=float, required=True)
    ap.add_argument(
        "--write-policy",
        choices=["write_through", "write_through_selective", "write_back"],
        required=True,
    )
    ap.add_argument("--policy", default="lru")
    ap.add_argument("--storage", choices=["none", "file"], default="none")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--sanity-every", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    # The storage key hash (`mem_cache/cpp_utils/native_hash.py`) is a C++ extension
    # that torch builds with the venv's `ninja` on first use.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]

    import torch

    from sglang.srt.environ import envs
    from sglang.srt.managers import cache_controller as cc_mod
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.mem_cache.allocator.base import BaseTokenToKVPoolAllocator
    from sglang.srt.mem_cache.base_prefix_cache import InitLoadBackParams
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.hybrid_cache import hybrid_pool_assembler as asm
    from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
    from sglang.srt.mem_cache.pool_host.base import HostKVCache
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache
    from sglang.srt.runtime_context import get_parallel
    from sglang.srt.sampling.sampling_params import SamplingParams
    from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler

    P = a.page_size
    reqs = load_trace(a.trace, a.limit)
    max_len = max(n for n, _ in reqs) + P

    server_args = ServerArgs(
        model_path="dummy",
        page_size=P,
        enable_hierarchical_cache=True,
        hicache_ratio=a.l2_ratio,
        hicache_io_backend="kernel",
        hicache_write_policy=a.write_policy,
        hicache_storage_backend=None if a.storage == "none" else a.storage,
        hicache_storage_prefetch_policy="wait_complete",
        radix_eviction_policy=a.policy,
    )
    set_global_server_args_for_scheduler(server_args)
    storage_dir = None
    if a.storage == "file":
        storage_dir = tempfile.mkdtemp(prefix="hicache-file-")
        # As SGLang's own unit fixtures do: one rank, HiCacheFile in a folder.
        get_parallel().override_permanently(tp_rank=0, tp_size=1, pp_rank=0, pp_size=1)
        storage_env = envs.SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR.override(storage_dir)
        storage_env.__enter__()


    # --- shim 1: the host pool without a buffer -------------------------------------
    class NoCopyHostKVCache(HostKVCache):
        """`HostKVCache` with SGLang's slot bookkeeping, no buffer, no-op copies."""

        def __init__(
            self,
            info,
            host_to_device_ratio,
            host_size,
            page_size,
            layout,
            *,
            allocator_type="default",
            pool_label="kv",
            device_capacity_tokens,
            start_layer,
            end_layer,
            **_,
        ):
            self.layer_num = self.target_layer_num = info.layer_num
            super().__init__(
                dtype=torch.float16,
                device_capacity_tokens=device_capacity_tokens,
                size_per_token=self.get_size_per_token(),
                start_layer=start_layer,
                end_layer=end_layer,
                host_to_device_ratio=host_to_device_ratio,
                host_size=host_size,
                page_size=page_size,
                layout=layout,
                pin_memory=False,
                device="cpu",
                allocator_type=allocator_type,
                pool_label=pool_label,
            )

        def get_size_per_token(self):
            return 2 * self.layer_num

        def init_kv_buffer(self):
            return None

        def load_to_device_per_layer(self, *args, **kwargs):
            pass

        def backup_from_device_all_layer(self, *args, **kwargs):
            pass

        def get_data_page(self, index, flat=True):
            return torch.zeros(2, dtype=torch.float16)

        def get_dummy_flat_data_page(self):
            return torch.zeros(2, dtype=torch.float16)

        def set_from_flat_data_page(self, index, data_page):
            pass

    asm.get_mha_host_pool_cls = lambda info: NoCopyHostKVCache

    # --- shim 3: the device pool: size and layers only -------------------------------
    class DevicePoolStub:
        def __init__(self, size, layer_num):
            self.size = size
            self.layer_num = layer_num
            self.start_layer = 0
            self.end_layer = layer_num
            self.device = "cpu"
            self.host_capacity_tokens = None
            self.hicache_write_back_staging = None

        def register_layer_transfer_counter(self, counter):
            self.layer_transfer_counter = counter

        def host_pool_decls(self):
            return ()

        def get_device_pool_infos(self):
            return [types.SimpleNamespace(buffer_info=self)]

    class PageIdAllocator(BaseTokenToKVPoolAllocator):
        """Hands out page ids 1..N; a page's token slots are page*P + 0..P-1."""

        def __init__(self, num_pages, kvcache):
            super().__init__(num_pages * P, P, torch.float16, "cpu", kvcache, False)
            self.num_pages = num_pages
            self.clear()

        def clear(self):
            self.free_pages = list(range(self.num_pages, 0, -1))
            self.release_pages = []

        def alloc(self, need_size):
            assert need_size % P == 0
            n = need_size // P
            if n > len(self.free_pages):
                return None
            pages = [self.free_pages.pop() for _ in range(n)]
            if not pages:
                return torch.empty((0,), dtype=torch.int64)
            base = torch.tensor(pages, dtype=torch.int64) * P
            return (base[:, None] + torch.arange(P, dtype=torch.int64)).reshape(-1)

        def free(self, free_index):
            if self.free_group is not None:
                self.free_group.append(self._copy_for_free_group(free_index))
                return
            if free_index.numel() == 0:
                return
            self.free_pages.extend(torch.unique(free_index // P).tolist())

    # --- storage threads: created by SGLang, run by the driver ----------------------
    class ManualThread:
        def __init__(self, target=None, daemon=None, **_):
            self.target = target

        def start(self):
            pass

        def join(self, timeout=None):
            pass

        def is_alive(self):
            return False

    import threading as _threading

    cc_mod.threading = types.SimpleNamespace(
        Thread=ManualThread, Event=_threading.Event, Lock=_threading.Lock
    )

    dev = DevicePoolStub(a.l1_pages * P, 1)
    alloc = PageIdAllocator(a.l1_pages, dev)
    req_pool = ReqToTokenPool(
        size=2, max_context_len=max_len, device="cpu", enable_memory_saver=False
    )
    params = CacheInitParams(
        disable=False,
        req_to_token_pool=req_pool,
        token_to_kv_pool_allocator=alloc,
        page_size=P,
        eviction_policy=a.policy,
        tree_components=(ComponentType.FULL,),
        tree_core_backend="python",
    )
    cache = UnifiedRadixCache(params)
    cache.init_hicache(server_args, params)
    cc = cache.cache_controller
    host_pool = cc.mem_pool_host.anchor_entry.host_pool
    assert isinstance(host_pool, NoCopyHostKVCache)

    def run_thread_until_idle(func, queue):
        """Runs a storage thread's own loop on this thread until `queue` is empty."""
        stop = cc.storage_stop_event

        def get(block=True, timeout=None):
            try:
                return type(queue).get(queue, block=False)
            except Empty:
                stop.set()
                raise

        queue.get = get
        try:
            func()
        finally:
            del queue.get
            stop.clear()

    def step_storage():
        """One pass of every storage thread, in pipeline order."""
        if not cache.enable_storage:
            return
        run_thread_until_idle(cc.prefetch_thread_func, cc.prefetch_queue)
        run_thread_until_idle(cc.prefetch_io_aux_func, cc.prefetch_buffer)
        run_thread_until_idle(cc.prefetch_sync_thread_func, cc.prefetch_sync_queue)
        run_thread_until_idle(cc.backup_thread_func, cc.backup_queue)

    def storage_pending():
        if not cache.enable_storage:
            return False
        qs = (
            cc.prefetch_queue,
            cc.prefetch_buffer,
            cc.prefetch_sync_queue,
            cc.backup_queue,
            cc.prefetch_hit_queue,
            cc.ack_prefetch_queue,
            cc.ack_backup_queue,
            cc.host_mem_release_queue,
        )
        return any(not q.empty() for q in qs) or bool(cache.ongoing_backup)

    def settle():
        """Idle scheduler iterations until no transfer or storage work is pending."""
        for _ in range(100):
            cache.check_hicache_events()
            step_storage()
            if not (
                cc.ack_write_queue
                or cc.ack_load_queue
                or cc.write_queue
                or cc.load_queue
                or cache.ongoing_write_through
                or cache.ongoing_load_back
                or storage_pending()
            ):
                return
        raise RuntimeError("HiCache work did not settle")

    prefetch_kvcache = scheduler_method("_prefetch_kvcache")
    # `Scheduler._prefetch_kvcache` reads only these attributes of the scheduler.
    sched = types.SimpleNamespace(
        enable_hicache_storage=a.storage != "none",
        enable_lmcache=False,
        tree_cache=cache,
    )

    out = []
    t0 = time.time()
    for i, (input_len, ids) in enumerate(reqs):
        toks = tokens_of(input_len, ids, a.block)
        whole = input_len // P
        req = Req(
            rid=f"r{i}",
            origin_input_text="",
            origin_input_ids=toks,
            sampling_params=SamplingParams(temperature=0, max_new_tokens=1),
        )
        req_pool.alloc([req])
        req.last_node = cache.root_node_handle()
        req.kv.cache_protected_len = 0
        req.lock = None
        req.extra_key = None

        # Arrival (`_add_request_to_queue` -> `_prefetch_kvcache`).
        storage_tokens = 0
        if a.storage != "none":
            prefetch_kvcache(sched, req)
            handle = req.cache_request_handle
            for _ in range(1000):
                step_storage()
                cache.check_hicache_events()
                if cache.check_prefetch_progress(handle):
                    break
            else:
                raise RuntimeError(f"request {i}: prefetch did not finish")
            storage_tokens, _start = cache.pop_prefetch_loaded_span(handle)

        # Admission (`PrefillAdder.add_one_req`).
        req.init_next_round_input(cache)
        device_hit = req.prefix_len
        assert device_hit % P == 0
        outer = cache.lock(req.last_node)
        loaded = 0
        if req.host_hit_length > 0:
            host_pin = cache.inc_host_lock_ref(req.best_match_node).to_dec_params()
            pin = cache.lock(req.best_match_node)
            res = cache.init_load_back(
                InitLoadBackParams(
                    best_match_node=req.best_match_node,
                    host_hit_length=req.host_hit_length,
                    req=req,
                )
            )
            cache.unlock(pin)
            cache.dec_host_lock_ref(req.best_match_node, host_pin)
            loaded, req.last_node = res
            req.host_loaded_length = loaded
            req.prefix_len += loaded
            req.kv.cache_protected_len = req.prefix_len
        req.lock = cache.lock(req.last_node)
        cache.unlock(outer)
        # `ScheduleBatch.init_new` is followed by `ready_to_load_host_cache`: the
        # queued H2D starts (its ack is read at the next iteration).
        cache.ready_to_load_host_cache()

        # `prepare_for_extend`: evict for extend + 1 page, allocate the extend.
        prefix = req.prefix_len
        prefix_idx = cache.path_device_indices(req.last_node)
        assert prefix_idx.numel() == prefix
        total_pages = -(-input_len // P)
        need = total_pages - prefix // P
        alloc.evict_to_free_tokens(cache, input_len - prefix + P)
        got = min(need, alloc.available_size() // P)
        new = alloc.alloc(got * P)
        value = torch.cat([prefix_idx.to(torch.int64), new])
        req_pool.write((req.kv.req_pool_idx, slice(0, len(value))), value.to(torch.int32))
        upto = min(prefix // P + got, whole)

        # `cache_unfinished_req` -> `checkpoint` of the whole pages, also when they
        # are all cached already (`checkpoint_kv_cache` always inserts: the walk
        # counts a hit on every node of the path, which write_through_selective's
        # threshold reads).
        req.full_untruncated_fill_ids = toks
        if upto > 0:
            cache.checkpoint(req, up_to=upto * P)
        # Release: the request's slots not taken by the tree (partial page,
        # truncation), then its lock.
        kept = req.kv.cache_protected_len
        rest = value[kept:]
        if rest.numel():
            alloc.free(rest)
        cache.unlock(req.lock)
        req.lock = None
        req_pool.free(req)

        settle()
        if a.sanity_every and (i + 1) % a.sanity_every == 0:
            cache.sanity_check()
        host_used = host_pool.size - host_pool.available_size()
        device_used = alloc.size - alloc.available_size()
        out.append((device_hit, loaded, storage_tokens, host_used, device_used))
    cache.sanity_check()
    dt = time.time() - t0
    import sglang

    with open(a.out, "w") as f:
        f.write(
            f"# sglang={sglang.__version__} cache=UnifiedRadixCache "
            f"core={type(cache.tree_core).__name__} trace={os.path.basename(a.trace)} "
            f"block={a.block} page_size={P} l1_pages={a.l1_pages} "
            f"l2_ratio={a.l2_ratio:g} l2_pages={host_pool.size // P} "
            f"write_policy={a.write_policy} policy={a.policy} storage={a.storage} "
            f"prefetch_policy=wait_complete pattern=scheduler requests={len(reqs)}\n"
        )
        for row in out:
            f.write(" ".join(str(x) for x in row) + "\n")
    if storage_dir:
        shutil.rmtree(storage_dir, ignore_errors=True)
    tot = [sum(r[k] for r in out) for k in range(3)]
    print(
        f"{a.out}: {len(reqs)} requests, device/host/storage hit tokens {tot}, "
        f"{dt:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
