#!/usr/bin/env python3
"""Replays a trace through SGLang's own UnifiedRadixCache on a CPU and writes the
per-request hit pages (golden files for `tests/it/tree_golden.rs`).

Release: sglang 0.5.23 (wheel from PyPI, installed with --no-deps; see run.sh).
No SGLang module is edited: the driver only
  * subclasses `mem_cache/allocator/base.py: BaseTokenToKVPoolAllocator` with an
    allocator that hands out page ids 1..N (so SGLang's own `available_size()`
    and `evict_to_free_tokens()` run);
  * builds `UnifiedRadixCache` with `tree_components=(FULL,)` and the chosen tree
    core (`python` = unified_tree_core.py, `rust` = the wheel's Rust core).
The tree's clock is already a counter (`unified_cache/components/base.py:
get_and_increase_time_counter`), so runs are repeatable.

Tokens: block id `h` of a trace with `B`-token blocks stands for tokens
`h*B .. h*B+B-1`; tokens past the listed ids are unique fillers (they match
nothing, as the simulator drops those pages).

Call patterns (`--pattern`):
  sim        the simulator's (src/runtime/untimed.rs): match the whole pages,
             lock, allocate the missing pages (evicting `--evict requested` =
             the whole demand with `cache.evict`, or `shortfall` = SGLang's
             `allocator.evict_to_free_tokens`), cache what fits, insert, unlock.
  scheduler  0.5.23's scheduler for one request: match limited to
             input_len - 1 tokens (`Req._compute_max_prefix_len`), demand
             extend + 1 page through `evict_to_free_tokens`
             (`alloc_paged_token_slots_extend`), allocate ceil(input/P) - prefix
             pages, insert the whole pages with `prev_prefix_len` = the prefix
             (`cache_unfinished_req`), free the partial last page, unlock.

Output: one line per request: `device_hit_pages` (text), after a header
`# key=value ...` line.
"""
import argparse
from array import array
import json
import sys
import time


def load_trace(path, block):
    reqs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            reqs.append((int(r["input_length"]), [int(h) for h in r["hash_ids"]]))
    return reqs


def tokens_of(input_len, ids, block, filler):
    """array('q') of the request's tokens (see the module doc)."""
    import numpy as np

    ids = np.asarray(ids, dtype=np.int64)
    toks = (ids[:, None] * block + np.arange(block, dtype=np.int64)).reshape(-1)
    toks = toks[:input_len]
    if len(toks) < input_len:
        fill = filler + np.arange(len(toks), input_len, dtype=np.int64)
        toks = np.concatenate([toks, fill])
    out = array("q")
    out.frombytes(toks.astype(np.int64).tobytes())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", required=True)
    ap.add_argument("--block", type=int, required=True)
    ap.add_argument("--page-size", type=int, required=True)
    ap.add_argument("--l1-pages", type=int, required=True)
    ap.add_argument("--policy", default="lru")
    ap.add_argument("--pattern", choices=["sim", "scheduler"], default="sim")
    ap.add_argument("--evict", choices=["requested", "shortfall"], default="shortfall")
    ap.add_argument("--core", choices=["python", "rust"], default="python")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    import torch
    from sglang.srt.mem_cache.allocator.base import BaseTokenToKVPoolAllocator
    from sglang.srt.mem_cache.base_prefix_cache import (
        EvictParams,
        InsertParams,
        MatchPrefixParams,
    )
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.radix_cache import RadixKey
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache

    P = a.page_size

    class PageIdAllocator(BaseTokenToKVPoolAllocator):
        """Hands out page ids 1..N; a page's token slots are page*P + 0..P-1."""

        def __init__(self, num_pages):
            super().__init__(num_pages * P, P, torch.float16, "cpu", None, False)
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
            pages = torch.unique(free_index // P).tolist()
            self.free_pages.extend(pages)

    alloc = PageIdAllocator(a.l1_pages)
    params = CacheInitParams(
        disable=False,
        req_to_token_pool=None,
        token_to_kv_pool_allocator=alloc,
        page_size=P,
        eviction_policy=a.policy,
        tree_components=(ComponentType.FULL,),
        tree_core_backend=a.core,
    )
    cache = UnifiedRadixCache(params)
    core_name = type(cache.tree_core).__name__

    reqs = load_trace(a.trace, a.block)
    if a.limit:
        reqs = reqs[: a.limit]
    out = []
    t0 = time.time()
    filler = 1 << 40
    for input_len, ids in reqs:
        filler += 1 << 20
        toks = tokens_of(input_len, ids, a.block, filler)
        # Whole pages the simulator sees: min(input // P, pages inside listed ids).
        if P <= a.block:
            whole = min(input_len // P, len(ids) * (a.block // P))
        else:
            whole = min(input_len // P, len(ids) // (P // a.block))
        if a.pattern == "sim":
            key_toks = toks[: whole * P]
        else:
            key_toks = toks[: input_len - 1]
        m = cache.match_prefix(MatchPrefixParams(key=RadixKey(key_toks)))
        dev_tokens = m.device_prefix_len
        assert dev_tokens % P == 0
        d = dev_tokens // P
        prefix_idx = cache.path_device_indices(m.last_device_node)
        assert prefix_idx.numel() == dev_tokens
        lock = cache.lock(m.last_device_node)
        if a.pattern == "sim":
            need = whole - d
            if alloc.available_size() < need * P:
                if a.evict == "requested":
                    cache.evict(EvictParams(num_tokens=need * P))
                else:
                    alloc.evict_to_free_tokens(cache, need * P)
            got = min(need, alloc.available_size() // P)
            new = alloc.alloc(got * P)
            upto = d + got
            ins_toks = toks[: upto * P]
        else:
            total_pages = -(-input_len // P)
            need = total_pages - d
            demand = (input_len - dev_tokens) + P
            alloc.evict_to_free_tokens(cache, demand)
            got = min(need, alloc.available_size() // P)
            new = alloc.alloc(got * P)
            upto = min(d + got, whole)
            ins_toks = toks[: upto * P]
        value = torch.cat([prefix_idx.to(torch.int64), new])
        ins_value = value[: upto * P]
        if upto > 0:
            cache.insert(
                InsertParams(
                    key=RadixKey(ins_toks), value=ins_value, prev_prefix_len=dev_tokens
                )
            )
        # The request's own slots not taken by the tree (partial page, truncation).
        rest = value[upto * P :]
        if rest.numel():
            alloc.free(rest)
        cache.unlock(lock)
        out.append(d)
    dt = time.time() - t0
    with open(a.out, "w") as f:
        f.write(
            f"# sglang=0.5.23 cache=UnifiedRadixCache core={core_name} trace={a.trace.split('/')[-1]} "
            f"block={a.block} page_size={P} l1_pages={a.l1_pages} policy={a.policy} "
            f"pattern={a.pattern} evict={a.evict} requests={len(reqs)}\n"
        )
        f.write("\n".join(str(x) for x in out))
        f.write("\n")
    print(f"{a.out}: {len(reqs)} requests, {sum(out)} device hit pages, {dt:.1f} s ({core_name})", file=sys.stderr)


if __name__ == "__main__":
    main()
