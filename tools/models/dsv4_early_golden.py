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
import os
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
    dirs = [d for d in kvg.model_dirs(a.work) if "DeepSeek-V4" in os.path.basename(d)]
    bad = kvg.run_golden(a.releases, a.check, a.work, OUT, "sglang_dsv4_early_worker.py",
                         lambda t, rel: dirs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
