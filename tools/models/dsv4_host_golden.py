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
import os
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
    dirs = [d for d in kvg.model_dirs(a.work) if "DeepSeek-V4" in os.path.basename(d)]
    bad = kvg.run_golden(a.releases, a.check, a.work, OUT, "sglang_dsv4_host_worker.py",
                         lambda t, rel: dirs, kvg.could_not_size)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
