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
    bad = kvg.run_golden(a.releases, a.check, a.work, OUT, "sglang_page_size_worker.py",
                         lambda t, rel: [rel])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
