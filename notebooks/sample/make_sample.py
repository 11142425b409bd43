"""Write notebooks/sample/results.csv: a stand-in shaped like `hicache-sim sweep`'s
results.csv, so the notebooks run before the real pipeline exists. Python stdlib only,
deterministic. The numbers are made up (a plausible GB300 tray: 4 ranks, ~420 GB of
cgroup headroom, 135 GB-class host pools); regenerate the real thing with
`hicache-sim sweep scenarios/<file>.yaml --out notebooks/sample` and copy results.csv.
"""

import csv
import math
import random

FRACTIONS = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
RATIOS = ["", "1.5", "2.0", "2.5"]  # "" = unset: auto-size
SEEDS = 3
GIB = 1 << 30
BYTES_PER_TOKEN = 44_928
PAGE = 64
DEVICE_TOKENS = 1_000_000


def main(path="results.csv"):
    rng = random.Random(20261130)
    header = [
        "point", "server.hicache_host_memory_fraction", "server.hicache_ratio", "seed",
        "sglang", "outcome", "budget_bytes", "requested_bytes", "margin_bytes", "fitted_ratio",
        "refusal_probability", "host_pool_tokens", "device_pool_tokens",
        "hit_rate_device", "hit_rate_host", "hit_rate_storage", "hit_rate_miss", "hit_rate_total",
        "page_hit_rate_device", "page_hit_rate_host", "page_hit_rate_storage",
        "page_hit_rate_miss", "page_hit_rate_total", "error",
    ]
    rows = []
    point = 0
    for f in FRACTIONS:
        for r in RATIOS:
            for rep in range(SEEDS):
                seed = 7 if rep == 0 else rng.getrandbits(63)
                headroom = 420e9 + rng.gauss(0, 6e9)
                share = (int(headroom) - 10 * GIB) // 4
                if r == "":
                    # Auto-size: budget = share × fraction, ratio fitted under it, all pools
                    # booked against one snapshot, so the guard never refuses; what can
                    # fail is the cgroup OOM killer when the pinned pools leave too little
                    # for the page cache (made-up logistic around fraction 0.95).
                    budget = int(share * f)
                    ratio = min(2.0, budget * 0.95 / (DEVICE_TOKENS * BYTES_PER_TOKEN))
                    tokens = int(DEVICE_TOKENS * ratio)
                    p_fail = 1.0 / (1.0 + math.exp(-(f - 0.95) / 0.015))
                    bad = "oom_killed"
                else:
                    # Explicit ratio: auto-size off, the fraction is ignored; each rank
                    # re-reads a live figure, so a late rank may be refused when the margin
                    # is thin (made-up logistic, 1 GB wide).
                    budget = share
                    ratio = float(r)
                    tokens = int(DEVICE_TOKENS * ratio)
                    p_fail = None
                    bad = "refused"
                pages = tokens // PAGE + 1
                requested = pages * PAGE * BYTES_PER_TOKEN
                margin = budget - requested
                if p_fail is None:
                    p_fail = 1.0 / (1.0 + math.exp(min(margin / 1e9, 700)))
                p_refuse = 0.0 if p_fail < 1e-7 else round(p_fail, 7)
                outcome = bad if rng.random() < p_fail else "started"
                row = {
                    "point": point, "server.hicache_host_memory_fraction": f,
                    "server.hicache_ratio": r, "seed": seed, "sglang": "pr40135",
                    "outcome": outcome, "budget_bytes": budget, "requested_bytes": requested,
                    "margin_bytes": margin, "fitted_ratio": f"{ratio:.6f}",
                    "refusal_probability": p_refuse,
                    "host_pool_tokens": pages * PAGE if outcome == "started" else "",
                    "device_pool_tokens": DEVICE_TOKENS, "error": "",
                }
                if outcome == "started":
                    host_share = 1.0 - math.exp(-pages * PAGE / 2.5e6)
                    dev = 0.38 + rng.gauss(0, 0.003)
                    host = (0.62 - dev) * host_share * 0.8 + rng.gauss(0, 0.002)
                    tiers = {"device": dev, "host": max(host, 0.0), "storage": 0.0}
                    tiers["total"] = sum(tiers.values())
                    tiers["miss"] = 1.0 - tiers["total"]
                    for k, v in tiers.items():
                        row[f"hit_rate_{k}"] = f"{v:.6f}"
                        row[f"page_hit_rate_{k}"] = f"{v * 0.97 if k != 'miss' else 1 - tiers['total'] * 0.97:.6f}"
                rows.append(row)
                point += 1
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        w.writeheader()
        for row in rows:
            w.writerow({k: row.get(k, "") for k in header})


if __name__ == "__main__":
    import os
    main(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.csv"))
