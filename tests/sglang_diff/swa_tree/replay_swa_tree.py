#!/usr/bin/env python3
"""Replays a trace through SGLang 0.5.23's own UnifiedRadixCache with the
sliding-window component, tree_components=(FULL, SWA), on a CPU, and writes the
per-request device hit pages (golden files under tests/golden/swa_tree/).

Release: sglang 0.5.23 (wheel from PyPI, installed with --no-deps; see run.sh,
which reuses tests/sglang_diff/tree/run.sh --install-only). No SGLang module is
edited and nothing in SGLang is monkeypatched. What the driver supplies:

  * `SlotOnlySWAKVPool`: a subclass of `mem_cache/base_swa_memory_pool.py:
    BaseSWAKVPool` holding no KV tensors, only the full->SWA index mapping the
    allocator registers (`register_mapping`, `translate_loc_from_full_to_swa`,
    copied from `swa_memory_pool.py: SWAKVPool`). The buffer accessors raise.
  * SGLang's own allocator `mem_cache/allocator/swa.py: SWATokenToKVPoolAllocator`
    (the class the scheduler builds for hybrid SWA when --enable-unified-memory
    is off, `kv_cache_configurator.py`), with its two
    `PagedTokenToKVPoolAllocator`s (full and SWA pools). On a CPU the platform
    reports no Triton, so the allocators take their torch paths
    (`alloc_extend_naive`, `_free_swa_pages_none_cuda`) by themselves.
  * SGLang's own `ReqToTokenPool` (`mem_cache/memory_pool.py`) on the CPU.
  * `FakeReq`: a duck-typed stand-in for `managers/schedule_batch.py: Req` with
    the attributes the cache code reads; its KV record is SGLang's own
    `ReqKvInfo`.

Call pattern per request (0.5.23's scheduler, one request at a time, output
length 1 so the request finishes at the end of its prefill):
  0. `SchedulePolicy.calc_priority` (default fcfs, LRU): `_touch_waiting_prefixes`
     runs `common.py: touch_waiting_prefix` (a match of the whole prompt, no
     input_len - 1 cap) on every 32nd call; one call per request is assumed, so
     requests 0, 32, 64, ... are touched first (`--waiting-touch 0` turns it off).
  1. `Req.init_next_round_input`: `mem_cache/common.py: match_kv_cache` on the
     prompt with `max_prefix_len = input_len - 1` (`Req._compute_max_prefix_len`);
     `cache_protected_len = prefix_len`. The printed hit is this match's
     `device_prefix_len / page_size` (after the FULL and SWA match validators).
  2. `PrefillAdder._commit_prefill_admission`: `req.lock = tree_cache.lock(last_node)`.
     The admission verdict is not acted on: one request at a time always runs
     (the pools must hold one prompt). The driver only counts the requests that
     `SWAPrefillBudget.check_prefill` would refuse on an idle server (stderr); with
     `--chunk`, the chunk lengths are the budget's (`check_prefill`'s
     `chunk_tokens_limit`, `available_chunk_tokens`, `fit_chunk`), and the chunks it
     made shorter than `--chunk` are counted (stderr).
  3. `mem_cache/allocation.py: alloc_for_extend`: a request-row from
     `ReqToTokenPool.alloc`, the prefix from `tree_cache.prefix_device_indices`,
     then SGLang's `alloc_paged_token_slots_extend` (demand extend + one page
     through `SWATokenToKVPoolAllocator.evict_to_free_tokens`, which asks the tree
     for the FULL and the SWA shortfall; then `alloc_extend` takes the extend in
     BOTH pools and pairs them in `full_to_swa_index_mapping`); row written;
     `kv_allocated_len = kv_committed_len = seq_len`.
  4. With `--chunk C` (chunked prefill, 0 = off): the first chunk ends at
     floor_P(prefix + floor_P(limit)) (`_select_prefill_admission`), a continuation
     at prefix_len + min(remaining, limit) (`add_chunked_req`); every chunk but the
     last is followed by `checkpoint_kv_cache` (= `UnifiedRadixCache.checkpoint_into_tree`
     for an unfinished request: `SWAComponent.free_out_of_window_slots` frees
     the request's SWA slots older than the window and sets
     `swa_evicted_seqlen`, then the insert tombstones that span), as
     `Scheduler.stash_chunked_request` does before the next chunk.
  5. The request finishes (one output token): inside the allocator's free group
     (`process_batch_result_prefill`), the body of `common.py:
     release_kv_cache(checkpoint=True)`: `claim_kv_row`, `tree_cache.checkpoint`
     (insert of the page-aligned prompt, all SWA live: a finished request frees
     no out-of-window slots, `checkpoint_into_tree` L1211; when the match was cut
     short by the SWA validator, `SWAComponent.prepare_for_caching_req` truncates
     this insert to `swa_branching_seqlen` and the rest of the prompt is freed),
     `free_kv_row` of what the tree did not take, `unlock`, `on_release`, `req_to_token_pool.free`,
     `mark_kv_released`. `_release_overallocated_kv_indices` is not called (it
     reads the scheduler's published config); the driver asserts it would free
     nothing (kv_allocated_len == owned_kv_len).

`--decode 1` (default 0; files `*.decode.txt`, header `decode=1 output_cap=N`): each
request decodes its trace's `output_length` tokens, alone in its batches, capped at
`--output-cap` when that is set (0 = no cap; the golden files use none):
  5a. `process_batch_result_prefill` appends the first output token and, the
      request being unfinished, calls `checkpoint_kv_cache` (`checkpoint_into_tree`:
      `free_out_of_window_slots(req, len(key) - 1)`, the insert of the prompt, or
      of `[0, swa_branching_seqlen)`, with the request's SWA frontier, the lock moved
      to the new last node, `cache_protected_len` = the inserted length).
  5b. every decode step (`prepare_for_decode` -> `alloc_for_decode_default`):
      `maybe_evict_swa`'s per-request part (`decode_batch_idx >= 1`, SGLang's own
      `ScheduleBatch._swa_eviction_trigger` with `SGLANG_SWA_EVICTION_INTERVAL`, then
      `evict_sliding_windows(req, seqlen - 1)` inside a free group, as
      `_evict_swa` calls it), then `alloc_paged_token_slots_decode` (one page
      through `evict_to_free_tokens`, `alloc_decode` in both pools), the slot
      written at the KV length, `kv_allocated_len`/`kv_committed_len` + 1,
      `decode_batch_idx` + 1; the sampled output token is a unique filler.
  5c. at `output_length` tokens: `release_kv_cache(checkpoint=True)` as in 5 with
      `finished_len = output_length`: the insert of the page-aligned prompt +
      output (`input_len + output_length - 1` committed tokens) with the frontier
      the decode left (tombstones below it).

`--components full` runs the same pattern on tree_components=(FULL,) with
`PagedTokenToKVPoolAllocator` (what a non-SWA model gets); it reproduces
tests/golden/tree/*.lru.scheduler.txt request for request.

Tokens: block id `h` of a trace with `B`-token blocks stands for tokens
`h*B .. h*B+B-1`; tokens past the listed ids are unique fillers.

Output: one line per request (device hit pages) after a `# key=value ...` header.
"""
import argparse
from array import array
import json
import sys
import time


def load_trace(path):
    reqs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            reqs.append(
                (int(r["input_length"]), [int(h) for h in r["hash_ids"]], int(r.get("output_length", 1)))
            )
    return reqs


def tokens_of(input_len, ids, block, filler):
    """array('q') of the request's tokens (same scheme as tests/sglang_diff/tree)."""
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
    ap.add_argument("--window", type=int, required=True, help="sliding_window_size (tokens)")
    ap.add_argument("--l1-pages", type=int, required=True, help="full-attention pool pages")
    ap.add_argument("--swa-pages", type=int, required=True, help="SWA pool pages")
    ap.add_argument("--policy", default="lru")
    ap.add_argument("--components", choices=["full,swa", "full"], default="full,swa",
                    help="full = the same call pattern on tree_components=(FULL,) with "
                    "PagedTokenToKVPoolAllocator (for comparisons)")
    ap.add_argument("--chunk", type=int, default=0, help="chunked_prefill_size (0 = off)")
    ap.add_argument("--waiting-touch", type=int, choices=[0, 1], default=1,
                    help="model calc_priority's waiting-prefix refresh (every 32nd request)")
    ap.add_argument("--prefill-checkpoint", type=int, choices=[0, 1], default=0,
                    help="1 = sensitivity variant: checkpoint the still-running request "
                    "after its prefill (output length > 1, decode not modelled)")
    ap.add_argument("--decode", type=int, choices=[0, 1], default=0,
                    help="1 = each request decodes its trace's output_length tokens, one "
                    "at a time (prefill->decode checkpoint, maybe_evict_swa, decode "
                    "allocation, final insert of prompt + output)")
    ap.add_argument("--output-cap", type=int, default=0,
                    help="with --decode: cap every output length at this many tokens (0 = none)")
    ap.add_argument("--core", choices=["python", "rust"], default="python")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--check-every", type=int, default=0,
                    help="run the tree's sanity_check every N requests (0 = never)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.decode and a.prefill_checkpoint:
        ap.error("--decode includes the prefill-to-decode checkpoint")

    import torch
    from sglang.srt.managers.schedule_batch import ReqKvInfo
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.schedule_policy import CLIP_MAX_NEW_TOKENS
    from sglang.srt.mem_cache.allocation import (
        alloc_paged_token_slots_decode,
        alloc_paged_token_slots_extend,
    )
    from sglang.srt.environ import envs
    from sglang.srt.mem_cache.allocator.paged import PagedTokenToKVPoolAllocator
    from sglang.srt.mem_cache.allocator.swa import SWATokenToKVPoolAllocator
    from sglang.srt.mem_cache.base_swa_memory_pool import BaseSWAKVPool
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.common import (
        checkpoint_kv_cache,
        match_kv_cache,
        touch_waiting_prefix,
    )
    from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache

    P = a.page_size
    W = a.window

    class SlotOnlySWAKVPool(BaseSWAKVPool):
        """Slot bookkeeping only: the allocator's full->SWA mapping, no KV."""

        def __init__(self, size, size_swa, page_size, device):
            self.size = size
            self.size_swa = size_swa
            self.page_size = page_size
            self.device = device
            self.full_kv_pool = None
            self.swa_kv_pool = None
            self.full_to_swa_index_mapping = None

        def register_mapping(self, full_to_swa_index_mapping):
            self.full_to_swa_index_mapping = full_to_swa_index_mapping

        def translate_loc_from_full_to_swa(self, kv_indices):
            assert self.full_to_swa_index_mapping is not None
            return self.full_to_swa_index_mapping[kv_indices]

        def _no_kv(self, *args, **kwargs):
            raise NotImplementedError("slot-only pool holds no KV")

        get_key_buffer = get_value_buffer = get_kv_buffer = set_kv_buffer = _no_kv
        get_state_buf_infos = _no_kv

    class FakeReq:
        """The `Req` attributes read by match/alloc/checkpoint/release."""

        def __init__(self, rid, toks):
            self.rid = rid
            self.origin_input_ids = toks
            self.output_ids = array("q")
            self.full_untruncated_fill_ids = toks
            self.extra_key = None
            self.cache_salt = None
            self.priority = None
            self.session = None
            self.session_id = None
            self.kv_rotation_base = None
            self.kv = ReqKvInfo()
            self.prefix_len = 0
            self.extend_end = 0
            self.last_node = None
            self.lock = None
            self.swa_branching_seqlen = None
            self.mamba_branching_seqlen = None
            self.finished_reason = None
            self.finished_len = None
            self.to_finish = None
            self.skip_radix_cache_insert = False
            self.return_logprob = False
            self.logprob_start_len = -1
            self.multimodal_inputs = None

        # managers/schedule_batch.py: Req
        @property
        def seqlen(self):
            return len(self.origin_input_ids) + len(self.output_ids)

        def finished(self):
            return self.finished_reason is not None

        def get_fill_ids(self):
            return self.full_untruncated_fill_ids[: self.extend_end]

        def refresh_fill_ids(self):
            if len(self.full_untruncated_fill_ids) != len(self.origin_input_ids) + len(
                self.output_ids
            ):
                self.full_untruncated_fill_ids = self.origin_input_ids + self.output_ids

        def _compute_max_prefix_len(self, input_len):
            return max(input_len - 1, 0)

        @property
        def output_ids_through_stop(self):
            if self.finished_len is not None:
                return self.output_ids[: self.finished_len]
            return self.output_ids

        def owned_kv_len(self):
            if self.finished_len is None:
                return self.kv.kv_committed_len
            return min(
                self.kv.kv_committed_len,
                len(self.origin_input_ids) + len(self.output_ids_through_stop),
            )

    reqs = load_trace(a.trace)
    if a.limit:
        reqs = reqs[: a.limit]
    def out_len(o):
        if not a.decode:
            return 1
        o = max(o, 1)
        return min(o, a.output_cap) if a.output_cap else o

    max_ctx = max(n + out_len(o) for n, _, o in reqs) + 2 * P

    rtp = ReqToTokenPool(size=2, max_context_len=max_ctx, device="cpu", enable_memory_saver=False)
    with_swa = a.components == "full,swa"
    if with_swa:
        kvpool = SlotOnlySWAKVPool(a.l1_pages * P, a.swa_pages * P, P, "cpu")
        alloc = SWATokenToKVPoolAllocator(
            a.l1_pages * P,
            a.swa_pages * P,
            page_size=P,
            dtype=torch.float16,
            device="cpu",
            kvcache=kvpool,
            need_sort=False,  # scheduler: True only for PD prefill/decode
            req_to_token_pool=rtp,
        )
    else:
        alloc = PagedTokenToKVPoolAllocator(
            a.l1_pages * P, P, torch.float16, "cpu", None, False
        )
    params = CacheInitParams(
        disable=False,
        req_to_token_pool=rtp,
        token_to_kv_pool_allocator=alloc,
        page_size=P,
        eviction_policy=a.policy,
        sliding_window_size=W if with_swa else None,
        swa_gates_prefix_match=True,
        tree_components=(
            (ComponentType.FULL, ComponentType.SWA) if with_swa else (ComponentType.FULL,)
        ),
        tree_core_backend=a.core,
    )
    cache = UnifiedRadixCache(params)
    core_name = type(cache.tree_core).__name__

    out = []
    full_hit_pages = 0
    not_admitted = 0
    t0 = time.time()
    filler = 1 << 40
    decode_tokens = 0
    chunks = 0  # chunk checkpoints (stash_chunked_request)
    budget_capped = 0  # chunks the admission budget made shorter than --chunk
    swa_interval = max(1, envs.SGLANG_SWA_EVICTION_INTERVAL.get())
    # ScheduleBatch._swa_eviction_trigger reads nothing of the batch off ROCm.
    swa_evict_due = ScheduleBatch._swa_eviction_trigger(None, W, swa_interval)
    for i, (input_len, ids, olen) in enumerate(reqs):
        olen = out_len(olen)
        filler += 1 << 20
        toks = tokens_of(input_len, ids, a.block, filler)
        req = FakeReq(str(i), toks)

        # 0. SchedulePolicy.calc_priority (fcfs): _touch_waiting_prefixes touches
        #    the queued prompts on every 32nd call (WAITING_PREFIX_REFRESH_INTERVAL);
        #    one call per request here (the queue holds just this request).
        if a.waiting_touch and a.policy.lower() == "lru" and i % 32 == 0:
            touch_waiting_prefix(req, cache)

        # 1. Req.init_next_round_input -> match_kv_cache
        req.refresh_fill_ids()
        m = match_kv_cache(
            req,
            cache,
            req.full_untruncated_fill_ids,
            max_prefix_len=req._compute_max_prefix_len(input_len),
        )
        if m.cache_protected_len is None:
            req.kv.cache_protected_len = req.prefix_len
        assert req.prefix_len % P == 0
        out.append(req.prefix_len // P)
        full_hit_pages += min(m.full_kv_hit_length, input_len - 1) // P

        # 2. admission (PrefillAdder.add_one_req -> _select_prefill_admission, with
        #    the match locked): SGLang's own budget, allocator.create_prefill_budget(
        #    cache).check_prefill, gives admission and the chunk's memory bound
        #    (chunk_tokens_limit: the chunk, or less when the SWA pool can never hold
        #    the request). A request it refuses would wait; one at a time, the driver
        #    runs it anyway and only counts it (stderr). A chunked first chunk ends
        #    at floor_P(prefix + floor_P(limit)); then _commit_prefill_admission locks.
        req.lock = cache.lock(req.last_node)
        max_new = min(olen, CLIP_MAX_NEW_TOKENS)
        budget = alloc.create_prefill_budget(cache)
        ext = input_len - req.prefix_len
        ok, limit = budget.check_prefill(
            extend_input_len=ext,
            total_tokens=ext + max_new + P,
            max_new_tokens=max_new,
            input_tokens=input_len,
            swa_host_hit_length=0,
            chunk_limit=a.chunk or None,
        )
        not_admitted += not ok
        if not ok:
            limit = a.chunk or None
        if limit is not None and -(-ext // P) * P > limit:
            budget_capped += limit < a.chunk
            req.extend_end = (req.prefix_len + limit // P * P) // P * P
            assert req.extend_end > req.prefix_len
        else:
            req.extend_end = input_len

        while True:
            # 3. alloc_for_extend (batch of one)
            pre, seq = req.prefix_len, req.extend_end
            if req.kv.holds_kv:
                prefix = rtp.req_to_token[req.kv.req_pool_idx, :pre].to(torch.int64)
            elif pre == 0:
                prefix = torch.empty((0,), dtype=torch.int64)
            else:
                prefix = cache.prefix_device_indices(req)
            idx = rtp.alloc([req])
            assert idx is not None
            last_loc = prefix[-1:] if len(prefix) else torch.full((1,), -1, dtype=torch.int64)
            loc = alloc_paged_token_slots_extend(
                tree_cache=cache,
                prefix_lens=torch.tensor([pre], dtype=torch.int64),
                prefix_lens_cpu=torch.tensor([pre], dtype=torch.int64),
                seq_lens=torch.tensor([seq], dtype=torch.int64),
                seq_lens_cpu=torch.tensor([seq], dtype=torch.int64),
                last_loc=last_loc,
                extend_num_tokens=seq - pre,
            )
            row = req.kv.req_pool_idx
            rtp.write((row, slice(0, pre)), prefix)
            rtp.write((row, slice(pre, seq)), loc)
            req.kv.kv_allocated_len = seq
            req.kv.kv_committed_len = seq

            if seq >= input_len:
                break
            # 4. next round: Scheduler.stash_chunked_request -> checkpoint_kv_cache
            #    (req.prefix_len = extend_end); then get_new_batch_prefill: a new
            #    PrefillAdder, chunked_req.init_next_round_input() (no match) and
            #    add_chunked_req: available_chunk_tokens(rem_chunk_tokens) (min of the
            #    chunk, full avail + evictable, SWA avail + evictable - P; None parks
            #    the request, which alone would never resume), fit_chunk, then
            #    extend_end = prefix_len + min(remaining, that).
            checkpoint_kv_cache(req, cache)
            chunks += 1
            req.refresh_fill_ids()
            budget = alloc.create_prefill_budget(cache)
            rem = budget.available_chunk_tokens(a.chunk)
            assert rem is not None, f"request {i}: chunked request parked with nothing running"
            remaining = len(req.full_untruncated_fill_ids) - req.prefix_len
            rem = budget.fit_chunk(
                extend_input_len=remaining, max_new_tokens=max_new, chunk_limit=rem
            )
            assert rem is not None
            budget_capped += min(remaining, rem) < min(remaining, a.chunk)
            req.extend_end = req.prefix_len + min(remaining, rem)

        if a.prefill_checkpoint:
            # Sensitivity variant, not 0.5.23's output-length-1 path: the request
            # runs on after its prefill, so process_batch_result_prefill calls
            # checkpoint_kv_cache (unfinished: frees out-of-window SWA slots, then
            # inserts); its decode tokens are not modelled.
            checkpoint_kv_cache(req, cache)

        if olen > 1:
            # 5a. process_batch_result_prefill: the first output token, then the
            #     unfinished request's checkpoint_kv_cache (frees its out-of-window
            #     SWA slots, inserts the prompt with that frontier).
            out_base = (1 << 52) + (i << 20)
            req.output_ids.append(out_base)
            checkpoint_kv_cache(req, cache)
            # 5b. decode steps, one request per batch: ScheduleBatch.prepare_for_decode
            #     -> alloc_for_decode_default: maybe_evict_swa (decode_batch_idx >= 1,
            #     the eviction trigger, then BasePrefixCache.evict_sliding_windows with
            #     pre_len = seqlen - 1 inside a free group), alloc_paged_token_slots_decode
            #     (one page through evict_to_free_tokens, alloc_decode in both pools),
            #     the row written at the current KV length; then the forward samples
            #     the next output token.
            req.decode_batch_idx = 0
            row = req.kv.req_pool_idx
            for j in range(1, olen):
                if req.decode_batch_idx >= 1 and req.kv.holds_kv and swa_evict_due(req):
                    alloc.free_group_begin()
                    cache.evict_sliding_windows(req, req.seqlen - 1, eviction_interval=1)
                    alloc.free_group_end()
                cur = req.kv.kv_committed_len
                last_loc = rtp.req_to_token[row, cur - 1 : cur].to(torch.int64)
                loc = alloc_paged_token_slots_decode(
                    tree_cache=cache,
                    seq_lens=torch.tensor([cur + 1], dtype=torch.int64),
                    seq_lens_cpu=torch.tensor([cur + 1], dtype=torch.int64),
                    last_loc=last_loc,
                    token_per_req=1,
                )
                rtp.write((row, slice(cur, cur + 1)), loc.to(torch.int32))
                req.kv.kv_allocated_len += 1
                req.kv.kv_committed_len += 1
                req.decode_batch_idx += 1
                req.output_ids.append(out_base + j)
                decode_tokens += 1

        # 5. finished: release_kv_cache(req, cache, checkpoint=True)
        alloc.free_group_begin()
        if olen == 1:
            req.output_ids.append(0)
        req.finished_reason = "length"
        req.finished_len = olen
        assert (not req.kv.holds_kv) == req.kv.is_kv_released
        assert not cache.claim_kv_row(req)
        owned = req.owned_kv_len()
        req.refresh_fill_ids()
        cache.checkpoint(req, up_to=owned)
        cache.free_kv_row(req.kv, [(req.kv.cache_protected_len, owned)])
        cache.unlock(req.lock)
        req.lock = None
        # _release_overallocated_kv_indices(req, owned, kv_allocated_len): frees
        # [ceil_align(owned, P), kv_allocated_len), empty here.
        assert -(-owned // P) * P >= req.kv.kv_allocated_len
        cache.on_release(req, checkpointed=True)
        rtp.free(req)
        req.kv.mark_kv_released()
        alloc.free_group_end()

        if a.check_every and (i + 1) % a.check_every == 0:
            cache.sanity_check()
            if with_swa:
                assert alloc.full_available_size() + cache.full_evictable_size() == a.l1_pages * P
                assert alloc.swa_available_size() + cache.swa_evictable_size() == a.swa_pages * P
            else:
                assert alloc.available_size() + cache.evictable_size() == a.l1_pages * P

    dt = time.time() - t0
    with open(a.out, "w") as f:
        f.write(
            f"# sglang=0.5.23 cache=UnifiedRadixCache components={a.components.upper()} core={core_name} "
            f"trace={a.trace.split('/')[-1]} block={a.block} page_size={P} window={W} "
            f"l1_pages={a.l1_pages} swa_pages={a.swa_pages} policy={a.policy} "
            f"pattern=scheduler chunk={a.chunk} waiting_touch={a.waiting_touch} "
            f"prefill_checkpoint={a.prefill_checkpoint} "
            + (f"decode=1 output_cap={a.output_cap} " if a.decode else "")
            + f"requests={len(reqs)}\n"
        )
        f.write("\n".join(str(x) for x in out))
        f.write("\n")
    print(
        f"{a.out}: {len(reqs)} requests, {sum(out)} device hit pages "
        f"(FULL-KV match {full_hit_pages}), {dt:.1f} s ({core_name}); "
        f"admission budget would refuse {not_admitted}; decode tokens {decode_tokens}; "
        f"chunk checkpoints {chunks}, chunks shortened by the budget {budget_capped}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
