#!/usr/bin/env python3
"""Differential test: hicache-sim's host-memory sizing against SGLang's own code.

For each SGLang release from 0.5.21 on, this script installs the release's wheel from
PyPI into a temporary virtual environment (`pip install sglang==X --no-deps`; nothing
else is installed), generates memory states (cgroup v1 and v2 trees with memory.max /
high / min at several levels, active / inactive / dirty / writeback file pages, shmem,
siblings and nested children, missing and unreadable files, no procfs, no mount),
writes each state to disk as a synthetic /proc + cgroupfs tree, and runs the wheel's
own functions on it:

- `mem_cache/host_memory.py: _cgroup_memory_headroom` (its `proc_root` parameter's
  default is pointed at the fake /proc; the fake mountinfo names the fake cgroupfs
  directory as the mount point, so the function walks real files; no `open` is patched);
- `available_host_memory_bytes` with and without `allow_cgroup_fallback` (0.5.21 has no
  such parameter);
- `pool_host/base.py: host_memory_budget_bytes(auto_size=True)` (0.5.21: no argument);
- `pool_host/base.py: HostKVCache.__init__` (a subclass whose `init_kv_buffer` stops
  before allocating): host tokens, requested bytes, the budget checked and SGLang's
  refusal text;
- `hicache_auto_size.py: auto_size_hicache` (the auto-size fit): the ratio it sets and
  the budget of the booking scope it opens, on one MHA device pool of the state's bytes.

Stubbed, as import noise only: `torch` (`distributed.is_available() -> False`, so
`sync_fixed_hicache_size` returns its input as it does without a PP group), `psutil`
(`virtual_memory().available` = the state's value), the package `__init__` files of
`sglang`, `sglang.srt`, `sglang.srt.mem_cache`, `...pool_host` (not executed),
`sglang.srt.mem_cache.memory_pool` (empty pool classes, for imports and `isinstance`),
`base_swa_memory_pool`, `swa_memory_pool`, `...pool_host.common`
(`get_allocator_from_storage`, `_cuda_host_unregister`), `sglang.srt.runtime_context`
(`get_parallel`; `get_memory` / `get_context` hand over the fraction and ratio and catch
the ratio override) and `sglang.srt.utils` (`is_cuda`, `is_hip`); `ranks_per_host`
returns the state's value.

The same states go through `hicache-sim debug-sizing --sglang X`; every field must
agree exactly, or the script exits 1 naming the first differing states.

Usage: diff.py --bin PATH/TO/hicache-sim [--releases 0.5.21,0.5.22,0.5.23]
               [--states 1200] [--seed 7] [--keep DIR]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import venv

GB = 10**9
V1_UNLIMITED = (1 << 63) - 4096


# --------------------------------------------------------------------------- states


def _charges(rng, scale):
    """Own charges of one cgroup (bytes)."""
    def part(p, hi):
        return rng.randint(0, int(hi)) if rng.random() < p else 0
    return {
        "anon": part(0.8, scale),
        "shmem": part(0.2, scale / 4),
        "active_file": part(0.5, scale / 2),
        "inactive_file": part(0.7, scale),
        "file_dirty": part(0.2, scale / 20),
        "file_writeback": part(0.1, scale / 50),
    }


def _limit(rng, usage, p_set):
    """A limit around the usage: below it, near it, far above it, or unset."""
    if rng.random() >= p_set:
        return "max"
    kind = rng.random()
    if kind < 0.15:
        return max(0, usage - rng.randint(0, max(1, usage // 4)))
    if kind < 0.6:
        return usage + rng.randint(0, 40 * GB)
    return usage + rng.randint(0, 2000 * GB)


def gen_state(rng, idx):
    version = "v1" if rng.random() < 0.3 else "v2"
    scale = rng.choice([1 * GB, 20 * GB, 200 * GB])
    depth = rng.randint(1, 4)
    names = ["system.slice", "slurm", "uid_0", "job_4242", "step_0", "kubepods", "pod7"]
    chain = [""]
    for d in range(depth - 1):
        chain.append((chain[-1] + "/" if chain[-1] else "") + rng.choice(names) + str(d))
    engine = (chain[-1] + "/" if chain[-1] else "") + "engine"
    chain.append(engine)
    paths = list(chain)
    # Siblings (with nested children) at random levels, children of the engine.
    for lvl in range(len(chain) - 1):
        for s in range(rng.choice([0, 0, 1, 2])):
            sib = (chain[lvl] + "/" if chain[lvl] else "") + f"sib{lvl}_{s}"
            paths.append(sib)
            if rng.random() < 0.4:
                paths.append(sib + "/child")
                if rng.random() < 0.3:
                    paths.append(sib + "/child/leaf")
    if rng.random() < 0.2:
        paths.append(engine + "/worker")
    own = {p: _charges(rng, scale) for p in paths}
    own[""] = _charges(rng, scale / 10)

    def subtree(p):
        tot = {k: 0 for k in own[p]}
        for q in paths:
            if q == p or p == "" or q.startswith(p + "/"):
                for k, v in own[q].items():
                    tot[k] += v
        return tot

    cgroups = []
    for p in sorted(set(paths)):
        st = subtree(p)
        usage = sum(st.values())
        if version == "v2":
            if p == "":
                mx, hi = "missing", "missing"  # the v2 root has no limit files
            else:
                mx = _limit(rng, usage, 0.5 if p in chain else 0.3)
                hi = _limit(rng, usage, 0.25)
            r = rng.random()
            if p == "":
                mn = "missing"
            elif r < 0.75:
                mn = 0
            elif r < 0.93:
                mn = rng.randint(1, max(1, usage))
            elif r < 0.97:
                mn = "missing"
            else:
                mn = "unreadable"
        else:
            mx = V1_UNLIMITED if (p == "" or rng.random() < 0.4) else _limit(rng, usage, 1.0)
            if mx == "max":
                mx = V1_UNLIMITED
            hi, mn = "missing", 0
        r = rng.random()
        current = usage if r < 0.96 else ("missing" if r < 0.98 else "unreadable")
        r = rng.random()
        stat_file = "ok" if r < 0.96 else ("missing" if r < 0.98 else "unreadable")
        cgroups.append({
            "path": p, "max": mx, "high": hi, "min": mn, "current": current,
            "stat": st, "stat_file": stat_file, "own": own[p],
        })
    r = rng.random()
    procfs, mounted, engine_dir = True, True, True
    if r < 0.02:
        procfs = False
    elif r < 0.04:
        mounted = False
    elif r < 0.06:
        engine_dir = False
    if not engine_dir:
        cgroups = [c for c in cgroups if not (c["path"] == engine or c["path"].startswith(engine + "/"))]
    ranks = rng.choice([1, 2, 4, 8])
    psutil_avail = rng.randint(20, 2000) * GB + rng.randint(0, GB)
    pools = []
    for _ in range(rng.randint(1, 3)):
        spt = rng.choice([2772, 44928, 70272, 163840, 327680, rng.randint(1, 400000)])
        dev = rng.randint(1000, 5_000_000)
        page = rng.choice([1, 16, 32, 64, 128])
        if rng.random() < 0.4:
            host_size, ratio = 0, rng.choice([0.5, 1.2, 2.0, 3.7, rng.uniform(0.1, 10)])
        else:
            guess = max(1, psutil_avail // max(1, ranks) // GB)
            host_size = rng.choice([1, 20, 135, 176, rng.randint(1, 500),
                                    int(guess * rng.uniform(0.5, 1.3)) + 1])
            ratio = 2.0
        pools.append({"device_tokens": dev, "size_per_token": spt, "page_size": page,
                      "host_size": host_size, "ratio": ratio})
    auto = {"fraction": rng.choice([0.1, 0.5, 0.8, 1.0, round(rng.uniform(0.01, 1), 3)]),
            "ratio": rng.choice([2.0, 1.2, 4.0]),
            "device_bytes": rng.randint(1, 400) * GB + rng.randint(0, GB)}
    return {
        "id": f"s{idx}", "cgroup_version": version, "psutil_available": psutil_avail,
        "procfs": procfs, "mounted": mounted, "engine": engine, "cgroups": cgroups,
        "ranks_per_host": ranks, "pools": pools, "auto": auto,
    }


# ------------------------------------------------------------------ files on disk


def write_tree(state, root):
    """The state as files: <root>/proc/self/{cgroup,mountinfo}, <root>/cg/<path>/memory.*"""
    cgroot = os.path.join(root, "cg")
    os.makedirs(cgroot, exist_ok=True)
    v1 = state["cgroup_version"] == "v1"
    unreadable = "/proc/self/mem"  # reading it from offset 0 fails with EIO

    def put(d, name, value):
        path = os.path.join(d, name)
        if value == "missing":
            return
        if value == "unreadable":
            os.symlink(unreadable, path)
            return
        with open(path, "w") as f:
            f.write(f"{value}\n")

    for c in state["cgroups"]:
        d = os.path.join(cgroot, c["path"]) if c["path"] else cgroot
        os.makedirs(d, exist_ok=True)
        if v1:
            put(d, "memory.limit_in_bytes", c["max"])
            put(d, "memory.usage_in_bytes", c["current"])
        else:
            put(d, "memory.max", c["max"])
            put(d, "memory.high", c["high"])
            put(d, "memory.min", c["min"])
            put(d, "memory.current", c["current"])
        # Files every cgroup directory has that the readers must skip.
        put(d, "cgroup.procs", 0)
        st, own = c["stat"], c["own"]
        if c["stat_file"] == "ok":
            if v1:
                # Unprefixed counters are the cgroup's own; total_* are hierarchical.
                lines = [
                    f"cache {own['active_file'] + own['inactive_file'] + own['shmem']}",
                    f"rss {own['anon']}", f"shmem {own['shmem']}",
                    f"dirty {own['file_dirty']}", f"writeback {own['file_writeback']}",
                    f"active_file {own['active_file']}",
                    f"inactive_file {own['inactive_file']}",
                    f"total_rss {st['anon']}", f"total_shmem {st['shmem']}",
                    f"total_dirty {st['file_dirty']}",
                    f"total_writeback {st['file_writeback']}",
                    f"total_active_file {st['active_file']}",
                    f"total_inactive_file {st['inactive_file']}",
                ]
            else:
                lines = [
                    f"anon {st['anon']}",
                    f"file {st['active_file'] + st['inactive_file'] + st['shmem']}",
                    f"shmem {st['shmem']}", f"file_dirty {st['file_dirty']}",
                    f"file_writeback {st['file_writeback']}",
                    f"active_file {st['active_file']}",
                    f"inactive_file {st['inactive_file']}",
                ]
            with open(os.path.join(d, "memory.stat"), "w") as f:
                f.write("\n".join(lines) + "\n")
        else:
            put(d, "memory.stat", c["stat_file"])
    if not state["procfs"]:
        return
    procself = os.path.join(root, "proc", "self")
    os.makedirs(procself, exist_ok=True)
    membership = "/" + state["engine"]
    with open(os.path.join(procself, "cgroup"), "w") as f:
        if v1:
            f.write(f"12:cpu,cpuacct:/other\n5:memory:{membership}\n1:name=systemd:/x\n")
        else:
            f.write(f"0::{membership}\n")
    mounts = ["22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw"]
    if state["mounted"]:
        if v1:
            mounts.append(f"35 25 0:31 / {root}/cpu rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct")
            mounts.append(f"36 25 0:32 / {cgroot} rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory")
        else:
            mounts.append(f"30 23 0:26 / {cgroot} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate")
    with open(os.path.join(procself, "mountinfo"), "w") as f:
        f.write("\n".join(mounts) + "\n")


# ------------------------------------------------------------- worker (in the venv)


def _load_sglang():
    """Imports the wheel's host_memory.py and pool_host/base.py with stubbed noise."""
    import importlib
    import importlib.util
    import types

    spec = importlib.util.find_spec("sglang")
    pkg = spec.submodule_search_locations[0]

    def package(name, path):
        m = types.ModuleType(name)
        m.__path__ = [path]
        sys.modules[name] = m
        return m

    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    package("sglang", pkg)
    package("sglang.srt", os.path.join(pkg, "srt"))
    package("sglang.srt.mem_cache", os.path.join(pkg, "srt", "mem_cache"))
    package("sglang.srt.mem_cache.pool_host", os.path.join(pkg, "srt", "mem_cache", "pool_host"))
    dist = types.SimpleNamespace(is_available=lambda: False, is_initialized=lambda: False)
    module("torch", distributed=dist, dtype=object, Tensor=object, int64="int64",
           bool="bool", float16="float16", bfloat16="bfloat16")
    psutil = module("psutil", virtual_memory=None)
    module("sglang.srt.mem_cache.memory_pool", KVCache=object)
    module("sglang.srt.mem_cache.pool_host.common",
           _cuda_host_unregister=lambda *a, **k: None,
           get_allocator_from_storage=lambda *a, **k: types.SimpleNamespace(fd=None))

    def get_parallel():
        raise RuntimeError("no parallel context in the differential test")

    rc = module("sglang.srt.runtime_context", get_parallel=get_parallel,
                get_context=get_parallel, get_memory=get_parallel)
    module("sglang.srt.utils", is_cuda=lambda: False, is_hip=lambda: False)
    pools = {n: type(n, (), {}) for n in (
        "KVCache", "HybridLinearKVPool", "HybridReqToTokenPool", "MHATokenToKVPool",
        "MiniMaxSparseKVPool", "MLATokenToKVPool")}
    sys.modules["sglang.srt.mem_cache.memory_pool"].__dict__.update(pools)
    module("sglang.srt.mem_cache.base_swa_memory_pool", BaseSWAKVPool=type("BaseSWAKVPool", (), {}))
    module("sglang.srt.mem_cache.swa_memory_pool", SWAKVPool=type("SWAKVPool", (), {}))
    hm = importlib.import_module("sglang.srt.mem_cache.host_memory")
    base = importlib.import_module("sglang.srt.mem_cache.pool_host.base")
    auto = importlib.import_module("sglang.srt.mem_cache.hicache_auto_size")
    return hm, base, psutil, auto, rc, pools["MHATokenToKVPool"]


def _category(e):
    if isinstance(e, RuntimeError):
        return "runtime_error"
    if isinstance(e, OSError):
        return "os_error"
    return "other:" + type(e).__name__


def worker(states_path, out_path, scratch):
    import inspect
    import logging
    import types
    from pathlib import Path

    logging.disable(logging.CRITICAL)
    hm, base, psutil, auto_mod, rc, mha = _load_sglang()
    has_fallback = "allow_cgroup_fallback" in inspect.signature(hm.available_host_memory_bytes).parameters
    has_auto = "auto_size" in inspect.signature(base.host_memory_budget_bytes).parameters
    old_ctor = "device_pool" in inspect.signature(base.HostKVCache.__init__).parameters
    original_budget = base.host_memory_budget_bytes

    class Admitted(Exception):
        pass

    class Pool(base.HostKVCache):
        layer_num = 1
        target_layer_num = 1
        spt = 1

        def __init__(self, *a, **k):
            self.outcome, self.message = "error", None
            try:
                super().__init__(*a, **k)
            except Admitted:
                self.outcome = "ok"
            except ValueError as e:
                self.outcome, self.message = "refused", str(e)
            except (OSError, RuntimeError):
                self.outcome = "error"

        def get_size_per_token(self):
            return self.spt

        def init_kv_buffer(self):
            raise Admitted()

    Pool.__abstractmethods__ = frozenset()
    default_root = hm._cgroup_memory_headroom.__defaults__

    with open(states_path) as f, open(out_path, "w") as out:
        for line in f:
            if not line.strip():
                continue
            st = json.loads(line)
            root = os.path.join(scratch, st["id"])
            write_tree(st, root)
            hm._cgroup_memory_headroom.__defaults__ = (Path(root) / "proc",)
            psutil.virtual_memory = lambda a=st["psutil_available"]: types.SimpleNamespace(available=a)
            base.ranks_per_host = lambda r=st["ranks_per_host"]: r

            def call(f):
                try:
                    return f()
                except Exception:  # noqa: BLE001 - any failure is "error"
                    return "error"

            try:
                h = hm._cgroup_memory_headroom()
            except Exception as e:  # noqa: BLE001
                h = _category(e)
            if has_fallback:
                avail_fb = call(lambda: hm.available_host_memory_bytes(allow_cgroup_fallback=True))
                avail = call(lambda: hm.available_host_memory_bytes(allow_cgroup_fallback=False))
            else:
                avail_fb = avail = call(hm.available_host_memory_bytes)
            if has_auto:
                auto = call(lambda: original_budget(auto_size=True))
            else:
                auto = call(original_budget)
            pools = []
            for p in st["pools"]:
                seen = []

                def budget(*a, **k):
                    b = original_budget(*a, **k)
                    seen.append(b)
                    return b

                base.host_memory_budget_bytes = budget
                Pool.spt = p["size_per_token"]
                common = dict(host_to_device_ratio=p["ratio"], host_size=p["host_size"],
                              page_size=p["page_size"], layout="layer_first",
                              pin_memory=False, device="cpu")
                if old_ctor:
                    dev = types.SimpleNamespace(size=p["device_tokens"], store_dtype=None,
                                                start_layer=0, end_layer=1)
                    pool = Pool(dev, **common)
                else:
                    pool = Pool(dtype=None, device_capacity_tokens=p["device_tokens"],
                                size_per_token=p["size_per_token"], start_layer=0,
                                end_layer=1, **common)
                base.host_memory_budget_bytes = original_budget
                pools.append({
                    "tokens": pool.size, "requested": pool.size * p["size_per_token"],
                    "budget": seen[-1] if seen else "error", "outcome": pool.outcome,
                    "message": pool.message,
                })
            # auto_size_hicache: one MHA device pool of the state's bytes (as a (k, v)
            # tuple half the time, which `_pool_bytes` sums).
            a = st["auto"]
            dev = mha()
            kv = a["device_bytes"]
            dev.get_kv_size_bytes = (lambda kv=kv: (kv // 2, kv - kv // 2)) if kv % 2 else (lambda kv=kv: kv)
            params = types.SimpleNamespace(
                token_to_kv_pool_allocator=types.SimpleNamespace(get_kvcache=lambda d=dev: d),
                req_to_token_pool=object(), mtp_draft_device_pools=[])
            got = {}
            rc.get_memory = lambda a=a: types.SimpleNamespace(
                hicache_host_memory_fraction=a["fraction"], hicache_ratio=a["ratio"])
            rc.get_context = lambda: types.SimpleNamespace(
                override=lambda name, **kw: got.update(kw))
            auto_mod.get_memory, auto_mod.get_context = rc.get_memory, rc.get_context
            try:
                with auto_mod.auto_size_hicache(params, None, enabled=True):
                    scope = base._host_memory_budget.get()
                auto_ratio, auto_scope = got["hicache_ratio"], scope
            except ValueError:
                auto_ratio, auto_scope = "no_host_memory", "error"
            except Exception:  # noqa: BLE001
                auto_ratio, auto_scope = "error", "error"
            out.write(json.dumps({"id": st["id"], "headroom": h,
                                  "available_fallback": avail_fb, "available": avail,
                                  "auto_budget": auto, "pools": pools,
                                  "auto_ratio": auto_ratio,
                                  "auto_scope_budget": auto_scope}) + "\n")
            shutil.rmtree(root, ignore_errors=True)
    hm._cgroup_memory_headroom.__defaults__ = default_root


# ------------------------------------------------------------------------- driver


# ------------------------------------------------------------- the --hicache-size split


def gen_split_case(rng, idx):
    """Two or three device pools (SWA full + sliding, KV + Mamba state, full + SWA +
    state) and an integer --hicache-size in GB."""
    pools = []
    for _ in range(rng.choice([2, 2, 3])):
        page = rng.choice([1, 16, 64])
        bpu = rng.choice([1152, 18432, 24576, 12288, 36864, 70272, 19316736, 77266944,
                          rng.randrange(1, 10**8)])
        units = rng.randrange(1, 3_000_000) if bpu < 10**6 else rng.randrange(1, 5000)
        pools.append({"device_bytes": (units + page) * bpu, "bytes_per_unit": bpu,
                      "page_size": page})
    return {"id": idx, "hicache_size": rng.choice([1, 7, 60, 100, 150, 176, rng.randrange(1, 2000)]),
            "pools": pools}


def split_worker(cases_path, out_path):
    """Runs the wheel's own `_split_hicache_size` (its source, cut out of
    `hybrid_pool_assembler.py` with `ast` and executed alone: the module's imports pull in
    torch) on stub device pools whose `get_kv_size_bytes()` is the case's bytes, then
    `HostKVCache.__init__`'s `int(host_size * 1e9 // size_per_token)`, `size // page + 1`
    pages."""
    import ast
    import sysconfig
    import typing
    path = os.path.join(sysconfig.get_paths()["purelib"], "sglang", "srt", "mem_cache",
                        "hybrid_cache", "hybrid_pool_assembler.py")
    tree = ast.parse(open(path).read()) if os.path.exists(path) else ast.Module(body=[])
    fn = next((n for n in tree.body
               if isinstance(n, ast.FunctionDef) and n.name == "_split_hicache_size"), None)
    if fn is None:
        # 0.5.14-0.5.16 have no split: every host pool is sized from the whole
        # --hicache-size (what `debug-split` reports for those releases).
        def split(size, pools):
            return tuple(float(size) for _ in pools)
    else:
        ns = {"Any": typing.Any}
        exec(compile(ast.Module(body=[fn], type_ignores=[]), path, "exec"), ns)
        split = ns["_split_hicache_size"]

    class Pool:
        def __init__(self, b):
            self.b = b

        def get_kv_size_bytes(self):
            return self.b

    with open(out_path, "w") as out:
        for line in open(cases_path):
            if not line.strip():
                continue
            c = json.loads(line)
            shares = split(c["hicache_size"], tuple(Pool(p["device_bytes"]) for p in c["pools"]))
            sizes = []
            for share, p in zip(shares, c["pools"]):
                size = int(share * 1e9 // p["bytes_per_unit"])
                sizes.append((size // p["page_size"] + 1) * p["page_size"])
            out.write(json.dumps({"id": c["id"], "shares": list(shares), "sizes": sizes}) + "\n")


def diff_split(py, bin_, rel, work, cases):
    """`_split_hicache_size` of release `rel` against `hicache-sim debug-split`."""
    cases_path = os.path.join(work, "split-cases.jsonl")
    with open(cases_path, "w") as f:
        for c in cases:
            f.write(json.dumps(c) + "\n")
    theirs = os.path.join(work, f"split-sglang-{rel}.jsonl")
    ours = os.path.join(work, f"split-sim-{rel}.jsonl")
    r = subprocess.run([py, os.path.abspath(__file__), "--split-worker", cases_path, theirs])
    if r.returncode != 0:
        print(f"sglang_diff: FAILED: SGLang {rel}'s _split_hicache_size did not run")
        return False
    with open(ours, "w") as f:
        r = subprocess.run([bin_, "debug-split", cases_path, "--sglang", rel], stdout=f)
    if r.returncode != 0:
        print(f"sglang_diff: FAILED: hicache-sim debug-split exit {r.returncode}")
        return False
    want = [json.loads(x) for x in open(theirs) if x.strip()]
    got = [json.loads(x) for x in open(ours) if x.strip()]
    bad = [(w, g) for w, g in zip(want, got) if w != g]
    if len(want) != len(cases) or len(got) != len(cases):
        print(f"sglang_diff: FAILED {rel} split: {len(want)} SGLang results, {len(got)} simulator results")
        return False
    print(f"sglang_diff {rel}: {len(cases)} --hicache-size splits, {len(cases) - len(bad)} agree")
    for w, g in bad[:5]:
        print(f"  DIFFERS {rel} split {w['id']}:\n    sglang:      {json.dumps(w)}\n"
              f"    hicache-sim: {json.dumps(g)}")
    return not bad


# ------------------------------------------------------- `hicache-sim capture` on trees

# The fake meminfo: MemTotal 8e15 B (below 2^53, so YAML integers stay exact), psutil's
# available 7e15 B: far above any generated cgroup headroom, so `available` is the
# headroom whenever a limit binds.
MEM_TOTAL = 8 * 10**15
MEM_AVAILABLE = 7 * 10**15


def gen_capture_state(rng, idx):
    """A `gen_state` tree the start-up model can pre-charge: every numeric limit at or
    above its cgroup's usage (the kernel keeps usage under `memory.max`; a usage above
    `memory.high` is reclaimed by the model before start-up)."""
    st = gen_state(rng, idx)
    st["id"] = f"c{idx}"
    st["psutil_available"] = MEM_AVAILABLE
    for c in st["cgroups"]:
        usage = sum(c["stat"].values())
        for k in ("max", "high"):
            if isinstance(c[k], int) and c[k] < usage and c[k] != V1_UNLIMITED:
                c[k] = usage + rng.randint(0, 40 * GB)
    return st


def write_capture_tree(st, root):
    write_tree(st, root)
    os.makedirs(os.path.join(root, "proc"), exist_ok=True)
    with open(os.path.join(root, "proc", "meminfo"), "w") as f:
        f.write(f"MemTotal: {MEM_TOTAL // 1024} kB\nMemFree: {MEM_AVAILABLE // 1024} kB\n"
                f"MemAvailable: {MEM_AVAILABLE // 1024} kB\nActive(file): 0 kB\nInactive(file): 0 kB\n")


def capture_worker(states_path, out_path, trees):
    """In the venv: SGLang's `_cgroup_memory_headroom` and `available_host_memory_bytes`
    (with the cgroup fallback where the release has it) on each tree, and the
    `HiCache memory headroom: …` line it logs."""
    import inspect
    import logging
    import types
    from pathlib import Path

    hm, _base, psutil, _auto, _rc, _mha = _load_sglang()
    has_fallback = "allow_cgroup_fallback" in inspect.signature(hm.available_host_memory_bytes).parameters
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    log = logging.getLogger(hm.__name__)
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(Keep())
    psutil.virtual_memory = lambda: types.SimpleNamespace(available=MEM_AVAILABLE)
    with open(states_path) as f, open(out_path, "w") as out:
        for line in f:
            if not line.strip():
                continue
            st = json.loads(line)
            hm._cgroup_memory_headroom.__defaults__ = (Path(trees) / st["id"] / "proc",)
            try:
                h = hm._cgroup_memory_headroom()
            except Exception as e:  # noqa: BLE001
                h = _category(e)
            del lines[:]
            try:
                avail = (hm.available_host_memory_bytes(allow_cgroup_fallback=True)
                         if has_fallback else hm.available_host_memory_bytes())
            except Exception:  # noqa: BLE001
                avail = "error"
            log_line = next((x for x in lines if x.startswith("HiCache memory headroom")), None)
            out.write(json.dumps({"id": st["id"], "headroom": h, "available": avail,
                                  "log": log_line}) + "\n")


STARTUP_SETS = ["startup.process_memory=0", "startup.weight_load.through_page_cache=false",
                "server.enable_hierarchical_cache=true", "server.hicache_size=1",
                "server.tp_size=8"]


def diff_capture(py, bin_, releases, work, n, seed):
    """`hicache-sim capture` on `n` generated trees, then `startup` on what it wrote,
    against SGLang's own functions on the same trees. Per tree and release: capture
    refuses (exit 2) exactly where SGLang's `_cgroup_memory_headroom` raises (0.5.21 reads
    no memory.stat: a refusal over memory.stat alone is expected there); otherwise rank
    0's `available_bytes` before anything is charged equals SGLang's
    `available_host_memory_bytes()`, and its headroom log line SGLang's (when a limit
    below v1's "unlimited" binds)."""
    rng = random.Random(seed + 2)
    states = [gen_capture_state(rng, i) for i in range(n)]
    trees = os.path.join(work, "capture-trees")
    shutil.rmtree(trees, ignore_errors=True)
    captured = {}
    for st in states:
        root = os.path.join(trees, st["id"])
        write_capture_tree(st, root)
        out = os.path.join(root, "out.yaml")
        r = subprocess.run([bin_, "capture", "--proc-root", os.path.join(root, "proc"),
                            "--node", "hgx-h200", "--model", "llama-3.1-70b",
                            "--nvidia-smi", "none", "-o", out],
                           capture_output=True, text=True)
        if r.returncode not in (0, 2):
            print(f"sglang_diff: FAILED: capture exit {r.returncode} on {st['id']}: {r.stderr[-500:]}")
            return False
        captured[st["id"]] = (r.returncode, r.stderr, out)
    states_path = os.path.join(work, "capture-states.jsonl")
    with open(states_path, "w") as f:
        for st in states:
            f.write(json.dumps(st) + "\n")
    ok = True
    for rel, py_rel in zip(releases, py):
        theirs = os.path.join(work, f"capture-sglang-{rel}.jsonl")
        r = subprocess.run([py_rel, os.path.abspath(__file__), "--capture-worker",
                            states_path, theirs, trees])
        if r.returncode != 0:
            print(f"sglang_diff: FAILED: SGLang {rel}'s functions did not run on the capture trees")
            return False
        want = {w["id"]: w for w in map(json.loads, open(theirs)) if w}
        bad, refused_ok, stricter, agree, limited = [], 0, 0, 0, 0
        for st in states:
            w = want[st["id"]]
            code, err, out = captured[st["id"]]
            raised = isinstance(w["headroom"], str)
            if code == 2:
                if raised:
                    agree += 1
                    refused_ok += 1
                elif rel == "0.5.21" and "memory.stat" in err:
                    stricter += 1
                else:
                    bad.append((st["id"], "capture refused, SGLang did not raise", w, err.strip()[-300:]))
                continue
            if raised:
                bad.append((st["id"], "SGLang raised, capture wrote a scenario", w, ""))
                continue
            cmd = [bin_, "startup", out, "--sglang", rel, "--format", "json"]
            for x in STARTUP_SETS:
                cmd += ["--set", x]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                bad.append((st["id"], f"startup exit {r.returncode}", w, r.stderr.strip()[-300:]))
                continue
            rank = json.loads(r.stdout)["ranks"][0]
            log = next((x for x in rank["log"] if x.startswith("HiCache memory headroom")), None)
            got = {"available": rank["available_bytes"], "log": log}
            binds = isinstance(w["headroom"], int) and w["headroom"] < (1 << 62)
            limited += binds
            exp_log = w["log"] if binds else log
            if got != {"available": w["available"], "log": exp_log}:
                bad.append((st["id"], "figures differ", w, json.dumps(got)))
            else:
                agree += 1
        print(f"sglang_diff {rel}: capture on {n} trees: {agree} agree ({refused_ok} of them "
              f"refused where SGLang raises, {limited} with a limit below v1's unlimited"
              f"{f'; {stricter} refused over memory.stat, which 0.5.21 does not read' if stricter else ''})")
        for sid, why, w, extra in bad[:5]:
            print(f"  DIFFERS {rel} capture {sid}: {why}\n    sglang:  {json.dumps(w)}\n    ours:    {extra}")
        ok &= not bad
    return ok


def make_venv(release, where):
    """A venv with only the wheel (`--no-deps`). Returns its python, or None if PyPI
    cannot be reached."""
    d = os.path.join(where, f"venv-{release}")
    py = os.path.join(d, "bin", "python")
    marker = os.path.join(d, ".installed")
    if os.path.exists(marker):
        return py
    venv.create(d, with_pip=True)
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--no-deps", f"sglang=={release}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-2000:])
        return None
    open(marker, "w").close()
    return py


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--releases", default="0.5.21,0.5.22,0.5.23")
    ap.add_argument("--states", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", help="directory for venvs and outputs (reused if present)")
    ap.add_argument("--worker", nargs=3, metavar=("STATES", "OUT", "SCRATCH"))
    ap.add_argument("--split-worker", nargs=2, metavar=("CASES", "OUT"))
    ap.add_argument("--splits", type=int, default=2000)
    ap.add_argument("--captures", type=int, default=300,
                    help="trees for the `hicache-sim capture` check (0: skip it)")
    ap.add_argument("--capture-worker", nargs=3, metavar=("STATES", "OUT", "TREES"))
    a = ap.parse_args()
    if a.capture_worker:
        capture_worker(*a.capture_worker)
        return 0
    if a.worker:
        worker(*a.worker)
        return 0
    if a.split_worker:
        split_worker(*a.split_worker)
        return 0
    work = a.keep or tempfile.mkdtemp(prefix="sglang-diff-")
    os.makedirs(work, exist_ok=True)
    rng = random.Random(a.seed)
    states = [gen_state(rng, i) for i in range(a.states)]
    states_path = os.path.join(work, "states.jsonl")
    with open(states_path, "w") as f:
        for s in states:
            f.write(json.dumps(s) + "\n")
    split_rng = random.Random(a.seed + 1)
    split_cases = [gen_split_case(split_rng, i) for i in range(a.splits)]
    failed = False
    pys = []
    for rel in a.releases.split(","):
        py = make_venv(rel, work)
        if py is None:
            print(f"sglang_diff: FAILED: could not install sglang=={rel} from PyPI")
            return 1
        pys.append(py)
        failed |= not diff_split(py, a.bin, rel, work, split_cases)
        ours = os.path.join(work, f"sim-{rel}.jsonl")
        theirs = os.path.join(work, f"sglang-{rel}.jsonl")
        scratch = tempfile.mkdtemp(prefix=f"tree-{rel}-", dir=work)
        r = subprocess.run([py, os.path.abspath(__file__), "--worker", states_path, theirs, scratch])
        if r.returncode != 0:
            print(f"sglang_diff: FAILED: SGLang {rel}'s functions did not run (exit {r.returncode})")
            return 1
        with open(ours, "w") as f:
            r = subprocess.run([a.bin, "debug-sizing", states_path, "--sglang", rel], stdout=f)
        if r.returncode != 0:
            print(f"sglang_diff: FAILED: hicache-sim debug-sizing exit {r.returncode}")
            return 1
        want = [json.loads(x) for x in open(theirs) if x.strip()]
        got = [json.loads(x) for x in open(ours) if x.strip()]
        bad = [(w, g) for w, g in zip(want, got) if w != g]
        if len(want) != len(states) or len(got) != len(states):
            print(f"sglang_diff: FAILED {rel}: {len(want)} SGLang results, {len(got)} simulator results, {len(states)} states")
            return 1
        counts = {}
        for w in want:
            counts[type(w["headroom"]).__name__] = counts.get(type(w["headroom"]).__name__, 0) + 1
        refused = sum(p["outcome"] == "refused" for w in want for p in w["pools"])
        oks = sum(p["outcome"] == "ok" for w in want for p in w["pools"])
        fits = sum(isinstance(w["auto_ratio"], float) for w in want)
        print(f"sglang_diff {rel}: {len(states)} states, {len(states) - len(bad)} agree "
              f"(headroom kinds {dict(sorted(counts.items()))}; pools ok {oks}, refused {refused}; "
              f"auto-size fits {fits})")
        for w, g in bad[:5]:
            s = next(x for x in states if x["id"] == w["id"])
            print(f"  DIFFERS {rel} state {w['id']}:\n    sglang:      {json.dumps(w)}\n"
                  f"    hicache-sim: {json.dumps(g)}\n    state: {json.dumps(s)}")
        failed |= bool(bad)
    if a.captures:
        failed |= not diff_capture(pys, a.bin, a.releases.split(","), work, a.captures, a.seed)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
