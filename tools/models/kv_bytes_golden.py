#!/usr/bin/env python3
"""Writes tests/golden/kv_bytes/<release>.jsonl: KV bytes per token per rank of every
catalogue model, as SGLang's own code computes them, release by release.

For each release (0.5.18 on) it downloads the wheel (`pip download sglang==X --no-deps`),
makes a virtual environment with the transformers version the wheel pins (read from its
METADATA) and the few pure-Python packages the import chain needs (PACKAGES), writes
each catalogue model's config.json (+ hf_quant_config.json) into a directory, and runs
tools/models/sglang_kv_worker.py in it (see its docstring: ModelConfig, the DSA
dtype/backend hooks, configure_kv_cache_dtype, the pool configurators; torch stubbed).

One line per model x TP (1, 2, 4, 8) x `--kv-cache-dtype` (auto, bfloat16, fp8_e4m3)
x `--enable-hierarchical-cache` off / on (the `hicache` key: 0.5.18-0.5.21 keep a DSA
model's index-K on every layer with HiCache on; DSA lines with HiCache on also carry
the host indexer pool's bytes per token, `pools.host_indexer`) [x GPU generation SM90 /
SM100 for DSA models], sorted. Lines with a `case` key add the configurations beyond
plain TP (the worker's docstring says how each is computed):

- `dp_attention`: `--enable-dp-attention` with dp = tp (TP 2, 4, 8) and dp = tp / 2
  (TP 4, 8), `--kv-cache-dtype auto`, HiCache off, SM90;
- `draft`: `--speculative-algorithm NEXTN` on a checkpoint with an MTP head (TP 1, TP 8,
  TP 8 under DP attention 8; auto and fp8_e4m3; HiCache off / on): the draft layers
  charged to the target's cell, that cell, the draft worker's own pool;
- `profile`: max_total_num_tokens (and the SWA tokens, the Mamba state slots, or
  SGLang's error) from fixed (free memory before the load, weights, mem fraction)
  figures at page sizes 1 and 64 and one `--max-total-tokens` cap (TP 1 and 8).

`cargo test --test it kv_bytes` checks every line against the simulator
(tests/it/kv_bytes.rs).

Offline: the work folder is a cache. A wheel already in `WORK/wheels/sglang-X-*.whl`
(or an unpacked `WORK/tree/X/`) skips the download; an existing
`WORK/venv-transformers-V/bin/python` with transformers V and PACKAGES installed (the
folder may be a symlink to such a virtual environment) skips the installs.

Usage: python3 tools/models/kv_bytes_golden.py
       [--releases 0.5.18,0.5.19,0.5.20,0.5.21,0.5.22,0.5.23]
       [--work /tmp/hicache-sim-kv] [--check]

--check writes nothing: it runs SGLang again and exits 1 naming the first line that
differs from the committed golden (tests/sglang_diff/run.sh runs it in CI).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CATALOGUE = os.path.join(ROOT, "src", "model", "catalogue.json")
OUT = os.path.join(ROOT, "tests", "golden", "kv_bytes")
PACKAGES = ["pillow", "dill", "msgspec", "pydantic", "pyyaml", "psutil", "requests", "numpy"]


def sh(*cmd, **kw):
    subprocess.check_call(list(cmd), **kw)


def tree(work, version):
    dest = os.path.join(work, "tree", version)
    if os.path.exists(os.path.join(dest, "sglang", "srt", "configs", "model_config.py")):
        return dest
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels, exist_ok=True)
    have = [w for w in os.listdir(wheels) if w.startswith(f"sglang-{version}-")]
    if not have:
        sh(sys.executable, "-m", "pip", "download", "-q", f"sglang=={version}", "--no-deps",
           "--only-binary=:all:", "--python-version", "3.11", "-d", wheels)
    whl = [w for w in os.listdir(wheels) if w.startswith(f"sglang-{version}-")][0]
    with zipfile.ZipFile(os.path.join(wheels, whl)) as z:
        z.extractall(dest, [n for n in z.namelist()
                            if n.startswith("sglang/") or ".dist-info/" in n])
    return dest


def pinned_transformers(t, version):
    meta = open(os.path.join(t, f"sglang-{version}.dist-info", "METADATA")).read()
    return re.search(r"^Requires-Dist: transformers==([\w.]+)", meta, re.M).group(1)


def venv(work, tf):
    d = os.path.join(work, f"venv-transformers-{tf}")
    py = os.path.join(d, "bin", "python")
    if not os.path.exists(py):
        sh(sys.executable, "-m", "venv", d)
        sh(py, "-m", "pip", "install", "-q", f"transformers=={tf}", *PACKAGES)
    return py


def run_golden(releases, check, work, out, worker, worker_args, summary=lambda lines: ""):
    """Each release: `worker` (a script next to this one) run in the release's virtual
    environment as `worker TREE *worker_args(TREE, release)`; its JSON lines (a `model`
    of `org--name` written `org/name`) sorted into `out/<release>.jsonl`, or, with
    `check`, compared with that file. `summary(lines)` adds to each release's line.
    Returns the count of releases whose golden differs (`check`), else 0."""
    bad = 0
    os.makedirs(out, exist_ok=True)
    for rel in releases.split(","):
        t = tree(work, rel)
        py = venv(work, pinned_transformers(t, rel))
        env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
        env["HF_HUB_OFFLINE"] = "1"
        res = subprocess.run([py, os.path.join(HERE, worker), t, *worker_args(t, rel)],
                             capture_output=True, text=True, env=env)
        if res.returncode != 0:
            sys.exit(f"sglang {rel}: worker failed:\n{res.stderr[-3000:]}")
        lines = []
        for l in res.stdout.splitlines():
            if l.startswith("{"):
                d = json.loads(l)
                if "model" in d:
                    d["model"] = d["model"].replace("--", "/", 1)
                lines.append(json.dumps(d, sort_keys=True, separators=(",", ":")))
        lines.sort()
        path = os.path.join(out, f"{rel}.jsonl")
        if check:
            want = open(path).read().splitlines() if os.path.exists(path) else []
            diff = [(x, y) for x, y in zip(lines, want) if x != y]
            if len(lines) != len(want) or diff:
                bad += 1
                first = diff[0] if diff else ("(line count)", f"{len(lines)} vs {len(want)}")
                print(f"sglang {rel}: SGLang now says\n  {first[0]}\nthe golden {path} says\n  {first[1]}")
            else:
                print(f"sglang {rel}: {len(lines)} cases equal to {path}{summary(lines)}")
            continue
        open(path, "w").write("\n".join(lines) + "\n")
        print(f"sglang {rel}: {len(lines)} cases{summary(lines)} -> {path}")
    return bad


def could_not_size(lines):
    """The count of cases SGLang itself could not size (an `error` record)."""
    errors = sum('"error"' in l for l in lines)
    return f" ({errors} SGLang could not size)"


def unslim(v):
    """The catalogue's "Infinity" / "-Infinity" / "NaN" strings back to numbers."""
    if isinstance(v, dict):
        return {k: unslim(x) for k, x in v.items()}
    if isinstance(v, list):
        return [unslim(x) for x in v]
    if v in ("Infinity", "-Infinity", "NaN"):
        return float(v.replace("Infinity", "inf").replace("NaN", "nan"))
    return v


def model_dirs(work):
    root = os.path.join(work, "models")
    out = []
    for m in json.load(open(CATALOGUE))["models"]:
        d = os.path.join(root, m["hf_id"].replace("/", "--"))
        os.makedirs(d, exist_ok=True)
        json.dump(unslim(m["config"]), open(os.path.join(d, "config.json"), "w"))
        q = os.path.join(d, "hf_quant_config.json")
        if "hf_quant_config" in m:
            json.dump(unslim(m["hf_quant_config"]), open(q, "w"))
        elif os.path.exists(q):
            os.remove(q)
        out.append(d)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default="0.5.18,0.5.19,0.5.20,0.5.21,0.5.22,0.5.23")
    ap.add_argument("--work", default="/tmp/hicache-sim-kv")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    dirs = model_dirs(a.work)
    bad = run_golden(a.releases, a.check, a.work, OUT, "sglang_kv_worker.py",
                     lambda t, rel: dirs, could_not_size)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
