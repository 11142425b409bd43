#!/usr/bin/env python3
"""Concatenate K copies of a Mooncake JSONL trace into one (the "×K" traces).

Copy k (0-based) has every timestamp shifted by k * SHIFT_MS and every hash id by
k * ID_STRIDE, so the copies are distinct conversations one after another and each
copy's prefix tree is the original's. Lines keep the source's style
(`{"timestamp": 0, "input_length": ..., "output_length": ..., "hash_ids": [...]}`).

usage: make_scaled_trace.py SOURCE.jsonl[.gz] K OUT.jsonl
"""
import gzip
import json
import sys

SHIFT_MS = 3_600_000   # the conversation trace spans 3,537 s
ID_STRIDE = 1_000_000  # its hash ids are below 200,000


def main() -> None:
    src, k, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    assert max((max(r["hash_ids"], default=0) for r in rows), default=0) < ID_STRIDE
    with open(out, "w") as o:
        for c in range(k):
            for r in rows:
                r2 = dict(r)
                r2["timestamp"] = r["timestamp"] + c * SHIFT_MS
                r2["hash_ids"] = [h + c * ID_STRIDE for h in r["hash_ids"]]
                o.write(json.dumps(r2) + "\n")


if __name__ == "__main__":
    main()
