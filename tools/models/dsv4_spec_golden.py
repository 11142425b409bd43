#!/usr/bin/env python3
"""Writes tests/golden/dsv4_spec/<release>.jsonl: DeepSeek-V4's device pools under
speculative decoding (`--speculative-algorithm EAGLE --speculative-eagle-topk 1
--speculative-num-steps S`, the draft being the checkpoint's own MTP layer), as each
release's own `model_executor/pool_configurator.py: DSV4PoolConfigurator` sizes them.

0.5.18-0.5.23 run tools/models/sglang_kv_worker.py --dsv4-spec, 0.5.14-0.5.17
tools/models/sglang_dsv4_early_worker.py --dsv4-spec (see their docstrings), in
kv_bytes_golden.py's wheel trees and virtual environments, on the catalogue's
DeepSeek-V4 model directories. One line per model x layout (TP, attention DP) x draft
tokens, each with the ratio-mode schedules at 40 and 100 GiB (or SGLang's error);
`cargo test --test it dsv4_spec` checks every line against the simulator.

Usage: python3 tools/models/dsv4_spec_golden.py [--releases 0.5.14,...,0.5.23]
       [--work /tmp/hicache-sim-kv] [--check]
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kv_bytes_golden as kvg  # noqa: E402

OUT = os.path.join(kvg.ROOT, "tests", "golden", "dsv4_spec")
EARLY = {"0.5.14", "0.5.15", "0.5.16", "0.5.17"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default=",".join(
        f"0.5.{n}" for n in range(14, 24)))
    ap.add_argument("--work", default="/tmp/hicache-sim-kv")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    dirs = [d for d in kvg.model_dirs(a.work) if "DeepSeek-V4" in os.path.basename(d)]
    bad = 0
    for rel in a.releases.split(","):
        worker = ("sglang_dsv4_early_worker.py" if rel in EARLY
                  else "sglang_kv_worker.py")
        bad += kvg.run_golden(rel, a.check, a.work, OUT, worker,
                              lambda t, r: ["--dsv4-spec", *dirs])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
