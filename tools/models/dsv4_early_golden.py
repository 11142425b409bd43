#!/usr/bin/env python3
"""Writes tests/golden/dsv4_early/<release>.jsonl: DeepSeek-V4's device pools as SGLang's
own `DSV4PoolConfigurator` sizes them under 0.5.14-0.5.17, whose configurator reads a
`ModelRunner` (0.5.14-0.5.15) or a `KVCacheConfigurator` (0.5.16-0.5.17) that
sglang_kv_worker.py does not build (see tools/models/sglang_dsv4_early_worker.py).

It reuses kv_bytes_golden.py's wheel tree, virtual environment (the transformers the
wheel pins) and the catalogue's model directories. One line per DeepSeek-V4 model x
layout (TP, attention DP) with the schedules of sglang_kv_worker.py's DSV4_SCHEDULES at
40 and 100 GiB; `cargo test --test it kv_bytes` checks every line against the simulator.

Usage: python3 tools/models/dsv4_early_golden.py [--releases 0.5.14,...,0.5.17]
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

OUT = os.path.join(kvg.ROOT, "tests", "golden", "dsv4_early")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default="0.5.14,0.5.15,0.5.16,0.5.17")
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
        res = subprocess.run([py, os.path.join(HERE, "sglang_dsv4_early_worker.py"), t, *dirs],
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
        if a.check:
            want = open(path).read().splitlines() if os.path.exists(path) else []
            if lines != want:
                bad += 1
                diff = [(x, y) for x, y in zip(lines, want) if x != y] or [("(line count)", f"{len(lines)} vs {len(want)}")]
                print(f"sglang {rel}: SGLang now says\n  {diff[0][0]}\nthe golden {path} says\n  {diff[0][1]}")
            else:
                print(f"sglang {rel}: {len(lines)} lines equal to {path}")
            continue
        open(path, "w").write("\n".join(lines) + "\n")
        print(f"sglang {rel}: {len(lines)} lines -> {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
