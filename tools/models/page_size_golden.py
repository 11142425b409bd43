#!/usr/bin/env python3
"""Writes tests/golden/page_size/<release>.jsonl: the attention backend SGLang picks when
none is given and the page size it keeps, from SGLang's own functions, release by release
(tools/models/sglang_page_size_worker.py says which). `cargo test --test it page_size`
checks every line against `model::resolve_page_size`.

It reuses kv_bytes_golden.py's wheel trees and virtual environments (the transformers each
wheel pins).

Usage: python3 tools/models/page_size_golden.py [--releases 0.5.14,...,0.5.23]
       [--work /tmp/hicache-sim-kv] [--check]
"""

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kv_bytes_golden as kvg  # noqa: E402

OUT = os.path.join(kvg.ROOT, "tests", "golden", "page_size")
ALL = ",".join(f"0.5.{n}" for n in range(14, 24))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default=ALL)
    ap.add_argument("--work", default="/tmp/hicache-sim-kv")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    bad = 0
    os.makedirs(OUT, exist_ok=True)
    for rel in a.releases.split(","):
        t = kvg.tree(a.work, rel)
        py = kvg.venv(a.work, kvg.pinned_transformers(t, rel))
        env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
        env["HF_HUB_OFFLINE"] = "1"
        res = subprocess.run([py, os.path.join(HERE, "sglang_page_size_worker.py"), t, rel],
                             capture_output=True, text=True, env=env)
        if res.returncode != 0:
            sys.exit(f"sglang {rel}: worker failed:\n{res.stderr[-3000:]}")
        lines = sorted(l for l in res.stdout.splitlines() if l.startswith("{"))
        path = os.path.join(OUT, f"{rel}.jsonl")
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
        print(f"sglang {rel}: {len(lines)} cases -> {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
