#!/usr/bin/env python3
"""Replays a trace through SGLang's own `HiRadixCache` (the HiCache tree of plain
models in 0.5.14 – 0.5.18) on a CPU and writes per-request device / host hits
(golden files for `tests/it/host_golden.rs`, the same format as `replay_host.py`).

Release: the sglang wheel installed in the venv (`run.sh`: 0.5.16 and 0.5.18, each
with the torch it pins). No SGLang module is edited. SGLang's own code runs:
`mem_cache/hiradix_cache.py: HiRadixCache` (match, insert, evict, evict_host,
write_backup, load_back, init_load_back, writing_check, loading_check,
check_hicache_events) over `mem_cache/radix_cache.py: RadixCache`
(`cache_unfinished_req`, locks, leaf sets), `managers/cache_controller.py:
HiCacheController` (write / load / start_writing / start_loading, acks) and
`pool_host/base.py: HostKVCache`'s slot allocator; `mem_cache/common.py:
evict_from_tree_cache` for the extend's device demand; `Req.init_next_round_input`.

Shims (only these):
  1. `NoCopyHostKVCache`, a `HostKVCache` subclass without a buffer whose copy
     kernels do nothing (the slot bookkeeping is `HostKVCache`'s own); picked by
     replacing `hiradix_cache.get_mha_host_pool_cls`.
  2. CUDA streams and events: on a CPU `get_device_module()` is `torch.cpu`, whose
     `Stream` / `Event` report done at once.
  3. `DevicePoolStub`: an `MHATokenToKVPool` (the class `HiRadixCache` checks for)
     holding only its size and layers, under an allocator handing out page ids.
  Plus a logical clock for the tree's `time.monotonic()` (`radix_cache.py` and
  `hiradix_cache.py` stamp `last_access_time` with it): the same order, repeatable.
  A one-rank gloo process group stands in for the TP group.

Scheduler order for a one-request batch (`managers/schedule_policy.py:
PrefillAdder.add_one_req`, `_req_inc_lock_ref`, `schedule_batch.py:
prepare_for_extend`, `radix_cache.py: cache_unfinished_req`):
  admission: `init_next_round_input` (match limited to `input_len - 1`); the device
           match is locked (`_lock_node`) while the host hit is loaded back
           (`init_load_back`); the request locks its last node; `ready_to_load_host_cache`;
  extend:  `evict_from_tree_cache(extend + 1 page)`, allocation of the extend;
  insert:  `cache_unfinished_req` (insert of the whole pages, duplicates freed, the key
           matched again, the lock moved to the new last node);
  release: the tail (partial page) freed, the lock released;
  idle:    `check_hicache_events` (D2H / H2D acks) until nothing is pending, then the
           driver checks that device and host slots add up and nothing is locked.

Output: as `replay_host.py` (`device host storage host_used device_used` in tokens per
request, after a `# key=value` header).
"""
import argparse
import itertools
import json
import os
import sys
import tempfile
import time
import types
from array import array


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
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    import torch
    import torch.distributed as dist

    import sglang
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.mem_cache import hiradix_cache as hiradix_mod
    from sglang.srt.mem_cache import radix_cache as radix_mod
    from sglang.srt.mem_cache.allocator.base import BaseTokenToKVPoolAllocator
    from sglang.srt.mem_cache.base_prefix_cache import InitLoadBackParams
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.common import evict_from_tree_cache
    from sglang.srt.mem_cache.hiradix_cache import HiRadixCache
    from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, ReqToTokenPool
    from sglang.srt.mem_cache.pool_host.base import HostKVCache
    from sglang.srt.sampling.sampling_params import SamplingParams
    from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler

    P = a.page_size
    reqs = load_trace(a.trace, a.limit)
    max_len = max(n for n, _ in reqs) + P

    fd, dist_file = tempfile.mkstemp(prefix="hiradix-gloo-")
    os.close(fd)
    dist.init_process_group(
        "gloo", init_method=f"file://{dist_file}", rank=0, world_size=1
    )

    server_args = ServerArgs(
        model_path="dummy",
        page_size=P,
        enable_hierarchical_cache=True,
        hicache_ratio=a.l2_ratio,
        hicache_io_backend="kernel",
        hicache_write_policy=a.write_policy,
        radix_eviction_policy=a.policy,
    )
    set_global_server_args_for_scheduler(server_args)

    # The tree's clock: a counter in place of `time.monotonic()` (same order).
    tick = itertools.count(1)
    clock = types.SimpleNamespace(
        monotonic=lambda: float(next(tick)),
        perf_counter=time.perf_counter,
        time=time.time,
    )
    radix_mod.time = clock
    hiradix_mod.time = clock

    # --- shim 1: the host pool without a buffer -------------------------------------
    class NoCopyHostKVCache(HostKVCache):
        def __init__(
            self, device_pool, host_to_device_ratio, host_size, page_size, layout,
            allocator_type="default", **_,
        ):
            self.layer_num = self.target_layer_num = device_pool.layer_num
            super().__init__(
                device_pool,
                host_to_device_ratio,
                host_size,
                page_size,
                layout,
                False,
                "cpu",
                allocator_type,
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

        def get_page_buffer_meta(self, indices):
            return [], []

    NoCopyHostKVCache.__abstractmethods__ = frozenset()
    hiradix_mod.get_mha_host_pool_cls = lambda *args, **kwargs: NoCopyHostKVCache

    # --- shim 3: the device pool: size and layers only -------------------------------
    class DevicePoolStub(MHATokenToKVPool):
        def __init__(self, size, layer_num):
            self.size = size
            self.page_size = P
            self.layer_num = layer_num
            self.start_layer = 0
            self.end_layer = layer_num
            self.device = "cpu"
            self.dtype = self.store_dtype = torch.float16

        def register_layer_transfer_counter(self, counter):
            self.layer_transfer_counter = counter

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
            if not self.is_not_in_free_group:
                self.free_group.append(free_index.clone())
                return
            if free_index.numel() == 0:
                return
            self.free_pages.extend(torch.unique(free_index // P).tolist())

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
        tp_cache_group=dist.group.WORLD,
    )
    cache = HiRadixCache(params, server_args)
    cc = cache.cache_controller
    host_pool = cache.token_to_kv_pool_host
    assert isinstance(host_pool, NoCopyHostKVCache)

    def settle():
        for _ in range(100):
            cache.check_hicache_events()
            if not (
                cc.ack_write_queue
                or cc.ack_load_queue
                or cc.write_queue
                or cc.load_queue
                or cache.ongoing_write_through
                or cache.ongoing_load_back
            ):
                return
        raise RuntimeError("HiCache work did not settle")

    def nodes():
        stack = [cache.root_node]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(n.children.values())

    def check_idle():
        """Device and host slots add up; nothing but the root is locked."""
        dev_tokens = host_tokens = 0
        for n in nodes():
            if n is cache.root_node:
                continue
            assert n.lock_ref == 0 and n.host_ref_counter == 0, f"node {n.id} pinned"
            assert n.value is not None or n.host_value is not None, f"node {n.id} dead"
            dev_tokens += 0 if n.value is None else len(n.value)
            host_tokens += 0 if n.host_value is None else len(n.host_value)
        assert dev_tokens + alloc.available_size() == alloc.size, f"device slots leak {dev_tokens} {alloc.available_size()} {alloc.size}"
        assert host_tokens + host_pool.available_size() == host_pool.size, "host leak"
        assert cache.evictable_size_ == dev_tokens and cache.protected_size_ == 0

    out = []
    t0 = time.time()
    for i, (input_len, ids) in enumerate(reqs):
        toks = tokens_of(input_len, ids, a.block)
        req = Req(
            rid=f"r{i}",
            origin_input_text="",
            origin_input_ids=toks,
            sampling_params=SamplingParams(temperature=0, max_new_tokens=1),
        )
        req_pool.alloc([req])

        # Admission (`PrefillAdder.add_one_req`).
        req.init_next_round_input(cache)
        device_hit = len(req.prefix_indices)
        assert device_hit % P == 0
        outer = req.last_node
        cache.inc_lock_ref(outer)
        loaded = 0
        if req.host_hit_length > 0:
            new_indices, req.last_node = cache.init_load_back(
                InitLoadBackParams(
                    best_match_node=req.best_match_node,
                    host_hit_length=req.host_hit_length,
                    req=req,
                )
            )
            loaded = len(new_indices)
            req.prefix_indices = torch.cat([req.prefix_indices, new_indices])
        req.cache_protected_len = len(req.prefix_indices)
        cache.inc_lock_ref(req.last_node)
        cache.dec_lock_ref(outer)
        cache.ready_to_load_host_cache()

        # `prepare_for_extend`: evict for extend + 1 page, allocate the extend.
        prefix = len(req.prefix_indices)
        need = -(-input_len // P) - prefix // P
        evict_from_tree_cache(cache, input_len - prefix + P)
        new = alloc.alloc(need * P)
        assert new is not None, f"request {i}: the device cannot hold the request"
        value = torch.cat([req.prefix_indices.to(torch.int64), new])
        req_pool.write((req.req_pool_idx, slice(0, len(value))), value.to(torch.int32))

        # `cache_unfinished_req` after the prefill of the whole input.
        if hasattr(req, "set_extend_range"):
            req.set_extend_range(prefix, input_len)
        else:
            req.extend_end = input_len
        cache.cache_unfinished_req(req)
        # Release: the slots the tree did not take (partial page), then the lock.
        rest = value[req.cache_protected_len :]
        if rest.numel():
            alloc.free(rest)
        cache.dec_lock_ref(req.last_node)
        req_pool.free(req)

        settle()
        check_idle()
        host_used = host_pool.size - host_pool.available_size()
        device_used = alloc.size - alloc.available_size()
        out.append((device_hit, loaded, 0, host_used, device_used))
    dt = time.time() - t0
    with open(a.out, "w") as f:
        f.write(
            f"# sglang={sglang.__version__} cache=HiRadixCache core=HiRadixCache "
            f"trace={os.path.basename(a.trace)} block={a.block} page_size={P} "
            f"l1_pages={a.l1_pages} l2_ratio={a.l2_ratio:g} "
            f"l2_pages={host_pool.size // P} write_policy={a.write_policy} "
            f"policy={a.policy} storage=none prefetch_policy=none pattern=scheduler "
            f"requests={len(reqs)}\n"
        )
        for row in out:
            f.write(" ".join(str(x) for x in row) + "\n")
    os.unlink(dist_file)
    tot = [sum(r[k] for r in out) for k in range(2)]
    print(
        f"{a.out}: {len(reqs)} requests, device/host hit tokens {tot}, {dt:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
