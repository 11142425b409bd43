#!/usr/bin/env python3
"""hicache-sim's plain-page LRU next to libCacheSim's LRU on the same page references.

The Mooncake trace is flattened to its page references: a request's whole pages are
its first min(input_length // 512, len(hash_ids)) hash ids (page size = block size =
512, as `hicache-sim replay --page-size 512` reads them; hicache-sim's page hash is a
bijective mix of the hash id, so page identity = hash id). Each page reference becomes
  - for hicache-sim: a one-page request (input_length 512, hash_ids [id]) in a Mooncake
    JSONL, converted to hicache-sim's binary form; with one page per request the
    longest-prefix rule counts every hit, so the device page hit ratio is the plain
    LRU hit ratio;
  - for libCacheSim: a request of size 1 for object id+1 (oracleGeneral binary:
    uint32 time, uint64 id, uint32 size, int64 next access; ids shifted by one so no
    object is 0).
Then, at each capacity N, `hicache-sim replay --config lru_mode=plain_page --l1-pages N
--l2-pages 0 --timing off --format json` against libCacheSim's `LRU(N)`
(`process_trace`), and a table: hits of each (integers: must be equal), hit ratio,
requests/s (hicache-sim: whole process incl. reading the trace; libCacheSim: the
`process_trace` call only).

Each side runs RUNS times at each capacity (env LCS_RUNS, default 3), the two in turn,
and the table gives the median CPU seconds of each as requests/s and their ratio. With
LCS_DOCS=FILE the table (with the date, the machine, the load average and the build)
replaces the block between `<!-- BEGIN generated: libcachesim -->` and
`<!-- END generated: libcachesim -->` in FILE (docs/src/design/speed.md).

usage: libcachesim_compare.py HICACHE_SIM_BINARY TRACE.jsonl WORKDIR CAPACITY...
Needs: pip install libcachesim (PyPI), numpy (comes with it).
"""
import datetime
import json
import platform
import statistics
import os
import resource
import subprocess
import sys
import time

import numpy as np
import libcachesim as lcs

PAGE = 512


def page_refs(path):
    ids = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            n = min(r["input_length"] // PAGE, len(r["hash_ids"]))
            ids.extend(r["hash_ids"][:n])
    return np.asarray(ids, dtype=np.uint64)


def write_inputs(ids, work, sim):
    lcs_path = os.path.join(work, "pages.oracleGeneral.bin")
    one_page = os.path.join(work, "pages.jsonl")
    bin_path = os.path.join(work, "pages.bin")
    if not os.path.exists(lcs_path):
        rec = np.zeros(len(ids), dtype=np.dtype(
            [("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")], align=False))
        rec["t"] = np.arange(len(ids), dtype=np.uint64) // 1000  # any non-decreasing clock
        rec["id"] = ids + np.uint64(1)
        rec["size"] = 1
        rec["next"] = -1
        rec.tofile(lcs_path + ".tmp")
        os.replace(lcs_path + ".tmp", lcs_path)
    if not os.path.exists(bin_path):
        with open(one_page, "w") as f:
            for i, x in enumerate(ids.tolist()):
                f.write('{"timestamp": %d, "input_length": 512, "output_length": 1, "hash_ids": [%d]}\n' % (i, x))
        subprocess.run([sim, "trace", "convert", one_page, "-o", bin_path], check=True,
                       stdout=subprocess.DEVNULL)
        os.remove(one_page)
    return lcs_path, bin_path


def run_hicache(sim, bin_path, n):
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sim, "replay", "--trace", bin_path, "--page-size", str(PAGE), "--l1-pages", str(n),
         "--l2-pages", "0", "--timing", "off", "--config", "lru_mode=plain_page",
         "--format", "json"], check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    m = json.loads(out)["metrics"]
    assert m["device_hit_tokens"] % PAGE == 0
    return m["device_hit_tokens"] // PAGE, m["input_pages"], wall, cpu


def run_lcs(lcs_path, n):
    reader = lcs.TraceReader(lcs_path, lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = lcs.LRU(n)
    t0 = time.perf_counter()
    c0 = time.process_time()
    miss_ratio, _byte_miss = cache.process_trace(reader)
    return miss_ratio, time.perf_counter() - t0, time.process_time() - c0


def main():
    sim, trace, work = sys.argv[1], sys.argv[2], sys.argv[3]
    caps = [int(x) for x in sys.argv[4:]] or [1000, 10000, 100000]
    os.makedirs(work, exist_ok=True)
    ids = page_refs(trace)
    refs = len(ids)
    lcs_path, bin_path = write_inputs(ids, work, sim)
    print(f"trace {trace}: {refs} page references, {len(np.unique(ids))} distinct pages")
    runs = int(os.environ.get("LCS_RUNS", "3"))
    load0 = os.getloadavg()[0]
    print(f"requests/s from the median CPU seconds of {runs} runs each, the two in turn: "
          "hicache-sim's whole process (it reads its binary trace), libCacheSim's "
          "process_trace call only")
    print(f"{'capacity':>9} | {'hicache-sim hits':>16} | {'libCacheSim hits':>16} | "
          f"{'hit ratio':>10} | {'equal':>5} | {'hicache-sim req/s':>17} | "
          f"{'libCacheSim req/s':>17} | {'ratio':>6}")
    ok = True
    rows = []
    for n in caps:
        h_cpus, l_cpus = [], []
        for _ in range(runs):
            h_hits, h_refs, _h_wall, h_cpu = run_hicache(sim, bin_path, n)
            miss, _l_wall, l_cpu = run_lcs(lcs_path, n)
            h_cpus.append(h_cpu)
            l_cpus.append(l_cpu)
        # libCacheSim reports a float miss ratio (misses / requests); the hit count is
        # the integer that ratio came from.
        l_hits = refs - round(miss * refs)
        eq = h_hits == l_hits and h_refs == refs
        ok &= eq
        h_rate = refs / statistics.median(h_cpus) / 1e6
        l_rate = refs / statistics.median(l_cpus) / 1e6
        rows.append((n, h_hits, l_hits, h_hits / refs, eq, h_rate, l_rate))
        print(f"{n:>9} | {h_hits:>16} | {l_hits:>16} | {h_hits / refs:>10.6f} | "
              f"{'yes' if eq else 'NO':>5} | {h_rate:>15.2f} M | {l_rate:>15.2f} M | "
              f"{h_rate / l_rate:>5.2f}x")
    docs = os.environ.get("LCS_DOCS")
    if docs:
        write_docs(docs, rows, refs, len(np.unique(ids)), runs, load0, os.getloadavg()[0], sim)
    sys.exit(0 if ok else 1)


def write_docs(path, rows, refs, distinct, runs, load0, load1, sim):
    """The table between the libcachesim markers of `path`, with how it was made."""
    build = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                           text=True).stdout.strip() or "unknown"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
    except OSError:
        pass
    lines = [
        f"Written by `LCS_DOCS={path} scripts/libcachesim_compare.sh` on "
        f"{datetime.date.today().isoformat()}: build {build}, libCacheSim "
        f"{getattr(lcs, '__version__', '?')}, {os.cpu_count()} × {cpu}, load average "
        f"{load0:.2f} at the start and {load1:.2f} at the end; {refs:,} page references, "
        f"{distinct:,} distinct pages; requests/s from the median CPU seconds of {runs} "
        "runs each, the two in turn.",
        "",
        "| capacity (pages) | hicache-sim hits | libCacheSim hits | hit ratio (both) | "
        "hicache-sim req/s (CPU) | libCacheSim req/s (CPU) | ratio |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n, h, l, ratio, eq, hr, lr in rows:
        lines.append(f"| {n:,} | {h:,} | {l:,}{'' if eq else ' (NOT EQUAL)'} | {ratio:.6f} | "
                     f"{hr:.2f} M | {lr:.2f} M | {hr / lr:.2f}× |")
    begin, end = "<!-- BEGIN generated: libcachesim -->", "<!-- END generated: libcachesim -->"
    with open(path) as f:
        text = f.read()
    i, j = text.index(begin) + len(begin), text.index(end)
    with open(path, "w") as f:
        f.write(text[:i] + "\n" + "\n".join(lines) + "\n" + text[j:])


if __name__ == "__main__":
    main()
