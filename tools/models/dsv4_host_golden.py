#!/usr/bin/env python3
"""Writes tests/golden/dsv4_host/<release>.jsonl: DeepSeek-V4's HiCache host pools as
SGLang's own code builds them, release by release (0.5.18 on).

For each release it reuses kv_bytes_golden.py's wheel tree and virtual environment (the
transformers the wheel pins) and the catalogue's model directories, and runs
tools/models/sglang_dsv4_host_worker.py on the DeepSeek-V4 models (see its docstring:
DSV4PoolConfigurator, DeepSeekV4TokenToKVPool, build_deepseek_v4_hicache_stack with the
real DeepSeekV4PagedHostPool / DeepSeekV4StateHostPool constructors; torch stubbed with
a shape-recording tensor).

One line per model x schedule (max_running_requests, chunked_prefill_size,
--swa-full-tokens-ratio given or not, resolved as SGLang resolves the flags or forced
into the configurator's cap mode: see the worker's SCHEDULES) x device budget, each with
the host pools at --hicache-ratio 1, 2 and 3.5 and SGLang's two refusals. `cargo test --test it dsv4_host` checks every
line against the simulator (tests/it/dsv4_host.rs).

Usage: python3 tools/models/dsv4_host_golden.py [--releases 0.5.18,...,0.5.23]
       [--work /tmp/hicache-sim-kv] [--check]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kv_bytes_golden as kvg  # noqa: E402

OUT = os.path.join(kvg.ROOT, "tests", "golden", "dsv4_host")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default="0.5.18,0.5.19,0.5.20,0.5.21,0.5.22,0.5.23")
    ap.add_argument("--work", default="/tmp/hicache-sim-kv")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    bad = 0
    os.makedirs(OUT, exist_ok=True)
    dirs = [d for d in kvg.model_dirs(a.work) if "DeepSeek-V4" in os.path.basename(d)]
    for rel in a.releases.split(","):
        t = kvg.tree(a.work, rel)
        py = kvg.venv(a.work, kvg.pinned_transformers(t, rel))
        env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
        env["HF_HUB_OFFLINE"] = "1"
        res = subprocess.run([py, os.path.join(HERE, "sglang_dsv4_host_worker.py"), t, *dirs],
                             capture_output=True, text=True, env=env)
        if res.returncode != 0:
            sys.exit(f"sglang {rel}: worker failed:\n{res.stderr[-3000:]}")
        lines = []
        for l in res.stdout.splitlines():
            if l.startswith("{"):
                d = json.loads(l)
                d["model"] = d["model"].replace("--", "/", 1)
                lines.append(json.dumps(d, sort_keys=True, separators=(",", ":")))
        lines.sort()
        path = os.path.join(OUT, f"{rel}.jsonl")
        errs = sum('"error"' in l for l in lines)
        if a.check:
            want = open(path).read().splitlines() if os.path.exists(path) else []
            if lines != want:
                bad += 1
                diff = [(x, y) for x, y in zip(lines, want) if x != y] or [("(line count)", f"{len(lines)} vs {len(want)}")]
                print(f"sglang {rel}: SGLang now says\n  {diff[0][0]}\nthe golden {path} says\n  {diff[0][1]}")
            else:
                print(f"sglang {rel}: {len(lines)} cases equal to {path}")
            continue
        open(path, "w").write("\n".join(lines) + "\n")
        print(f"sglang {rel}: {len(lines)} cases ({errs} SGLang could not size) -> {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
