#!/usr/bin/env python3
"""Compute-cost tables for the simulator, derived from NVIDIA's aiconfigurator-core.

What it writes (one JSON file per GPU system under ``tools/costs/tables/``):
for every (model, quantisation, TP) that fits the GPU, the time of

* a **prefill (extend) forward** as two parts that compose the way a batch does:
  ``linear_us[T]`` — every operator whose time depends only on the batch's total new
  tokens T (GEMMs, MoE, norms, all-reduce, logits), and ``attn_us[b][n][p]`` — the
  operators whose time depends on the context (attention, MLA/DSA modules, indexers),
  for a batch of ``b`` identical requests with ``n`` new tokens over a cached prefix of
  ``p`` tokens. A batch of requests (n_i, p_i) costs
  ``linear(sum n_i) + sum_i attn(b, n_i, p_i) / b`` (exact for identical requests; the
  split is found by probing which operators change with the prefix, see
  ``context_dependent_ops``);
* a **decode step** ``step_us[B][C]``: one token for each of B running requests whose
  context is C tokens (aiconfigurator's own uniform-context step).

Source: aiconfigurator-core 0.12.0 (PyPI, Apache-2.0). The script downloads the wheel
itself (``pip download aiconfigurator-core==0.12.0 --no-deps``), unpacks it, and asks
its compiled engine (``AicEngine.run_static_per_op``) for per-operator times. The
engine answers from the package's profiled SGLang operator data
(``systems/data/<gpu>/<op>/sglang/<version>/*.parquet``) where it has rows and from
its own estimator (empirical / speed-of-light) where it has not; every table records,
per operator, which (``op_sources``), and every file records the data files the
engine resolved (``data_files``). Times are integers in microseconds.

Run (needs Python 3.11+ with numpy, pandas, pyarrow, scipy, pyyaml, packaging — the
wheel's own requirements)::

    python3 tools/costs/gen_cost_tables.py --work /tmp/timecost/aic
    python3 tools/costs/gen_cost_tables.py --work /tmp/timecost/aic --systems gb300 --models glm-5.2

The output is deterministic: same package, same arguments, same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import re
import subprocess
import sys
import time
import zipfile

PACKAGE = "aiconfigurator-core"
VERSION = "0.12.0"
BACKEND = "sglang"
SCHEMA = "hicache-sim/cost-table/1"

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODELS_YAML = os.path.join(REPO, "src", "model", "models.yaml")

# Simulator node id -> aiconfigurator system name.
SYSTEMS = {
    "gb300": "gb300",
    "gb200": "gb200",
    "hgx-b300": "b300_sxm",
    "hgx-b200": "b200_sxm",
    "hgx-h200": "h200_sxm",
    "hgx-h100": "h100_sxm",
}

# (simulator model id, quantisation key of models.yaml `checkpoint`, aiconfigurator
# model path). Only paths in aiconfigurator's DefaultHFModels are used: their
# config.json ships in the wheel, so nothing is fetched from Hugging Face.
MODELS = [
    ("glm-5.2", "nvfp4", "nvidia/GLM-5.2-NVFP4"),
    ("glm-5.2", "fp8", "zai-org/GLM-5.2-FP8"),
    ("glm-5", "nvfp4", "nvidia/GLM-5-NVFP4"),
    ("glm-5", "fp8", "zai-org/GLM-5-FP8"),
    ("deepseek-v3", "fp8", "deepseek-ai/DeepSeek-V3"),
    ("deepseek-v3", "nvfp4", "nvidia/DeepSeek-V3.1-NVFP4"),
    ("deepseek-v3.2", "fp8", "deepseek-ai/DeepSeek-V3.2"),
    ("kimi-k2", "int4", "moonshotai/Kimi-K2.5"),
    ("kimi-k3", "mxfp4", "moonshotai/Kimi-K3"),
    ("qwen3-235b-a22b", "bf16", "Qwen/Qwen3-235B-A22B"),
    ("qwen3-235b-a22b", "fp8", "Qwen/Qwen3-235B-A22B-FP8"),
    ("qwen3-235b-a22b", "nvfp4", "nvidia/Qwen3-235B-A22B-NVFP4"),
    ("llama-3.1-70b", "bf16", "meta-llama/Meta-Llama-3.1-70B"),
    ("llama-3.1-70b", "fp8", "nvidia/Llama-3.1-70B-Instruct-FP8"),
    ("llama-3.1-405b", "bf16", "meta-llama/Meta-Llama-3.1-405B"),
    ("gpt-oss-120b", "mxfp4", "openai/gpt-oss-120b"),
]

TP_SIZES = [4, 8]
# Checkpoint bytes per GPU must leave room for the KV pool and activations.
WEIGHT_FRACTION_MAX = 0.80
# 4-bit float formats need Blackwell tensor cores (sm_version >= 100).
FP4_QUANTS = {"nvfp4"}

# Grids (tokens). Prefill chunks in SGLang are at most --chunked-prefill-size
# (8192 or 16384 by default on these GPUs); 65536 covers --max-prefill-tokens.
LINEAR_T = [1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 49152, 65536]
ATTN_B = [1, 2, 4, 8, 16]
ATTN_N = [64, 256, 1024, 2048, 4096, 8192, 16384, 32768]
ATTN_P = [0, 4096, 16384, 65536, 131072]
ATTN_MAX_BATCH_TOKENS = 32768
DECODE_B = [1, 2, 4, 8, 16, 32, 64, 128, 256]
DECODE_C = [1024, 4096, 16384, 32768, 65536, 131072]
MAX_CONTEXT = 131072 + 32768

# Off-grid points where the tables are checked against the engine (interpolation
# error the simulator inherits): (b, n, p) for prefill, (B, C) for decode.
CHECK_PREFILL = [(1, 3000, 5000), (1, 700, 40000), (2, 1500, 12000), (3, 1000, 6000), (6, 512, 24000), (1, 12000, 0)]
CHECK_DECODE = [(3, 3000), (24, 20000), (100, 50000), (200, 8000)]

log = logging.getLogger("gen_cost_tables")


# --------------------------------------------------------------------------- package


def fetch_package(work: str) -> tuple[str, str, str]:
    """Downloads the wheel with pip (once), unpacks it, returns (wheel, sha256, dir)."""
    dl = os.path.join(work, "download")
    os.makedirs(dl, exist_ok=True)
    wheels = [f for f in os.listdir(dl) if f.startswith("aiconfigurator_core-" + VERSION + "-")]
    if not wheels:
        cmd = [sys.executable, "-m", "pip", "download", f"{PACKAGE}=={VERSION}", "--no-deps", "-d", dl]
        log.info("running %s", " ".join(cmd))
        subprocess.run(cmd, check=True)
        wheels = [f for f in os.listdir(dl) if f.startswith("aiconfigurator_core-" + VERSION + "-")]
    if len(wheels) != 1:
        sys.exit(f"error: expected one {PACKAGE} {VERSION} wheel in {dl}, found {wheels}")
    wheel = os.path.join(dl, wheels[0])
    h = hashlib.sha256()
    with open(wheel, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    unpacked = os.path.join(work, "unpacked")
    if not os.path.isdir(os.path.join(unpacked, "aiconfigurator_core")):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(unpacked)
    return wheels[0], h.hexdigest(), unpacked


def import_package(unpacked: str):
    sys.path.insert(0, unpacked)
    try:
        import aiconfigurator_core  # noqa: F401
        from aiconfigurator_core.sdk import engine as aic_engine  # noqa: F401
    except ImportError as e:  # a missing numpy/pandas/pyarrow/scipy/yaml
        sys.exit(f"error: cannot import {PACKAGE} from {unpacked}: {e}\n"
                 "install its requirements: pip install numpy pandas pyarrow scipy pyyaml packaging")
    import aiconfigurator_core as core
    from aiconfigurator_core.sdk import engine as aic_engine
    from aiconfigurator_core.sdk import perf_database

    return core, aic_engine, perf_database


# --------------------------------------------------------------------------- helpers


def parse_bytes(s) -> int:
    """`688GB`, `1.37TB`, `65GB` (decimal units, as models.yaml writes them)."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT]?B)\s*", str(s))
    if not m:
        raise ValueError(f"{MODELS_YAML}: cannot read byte size {s!r}")
    mult = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}[m.group(2)]
    return int(round(float(m.group(1)) * mult))


def us(ms: float) -> int:
    return int(round(ms * 1000.0))


def interp1(xs, ys, x):
    """Piecewise-linear, clamped at the ends."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return ys[i - 1] + t * (ys[i] - ys[i - 1])
    return ys[-1]


def interp_grid(xs, ys, grid, x, y):
    """Bilinear over a grid with possibly missing (None) cells: along y first."""
    rows = []
    for i, row in enumerate(grid):
        pts = [(ys[j], v) for j, v in enumerate(row) if v is not None]
        if pts:
            rows.append((xs[i], interp1([p[0] for p in pts], [p[1] for p in pts], y)))
    return interp1([r[0] for r in rows], [r[1] for r in rows], x)


def prefill_from_table(linear, attn, reqs):
    """The rule the simulator applies to a prefill batch of requests (n_i, p_i):
    linear(sum n_i) + sum_i attn_b(n_i, p_i) / b, where attn_b / b is the per-request
    context cost at batch size b = len(reqs), interpolated linearly in log2(b) between
    the planes that cover n_i (a plane covers n when b * n <= attn_max_batch_tokens),
    and within a plane bilinearly in (n, p), clamped at the grid's edges."""
    b = len(reqs)
    total = interp1(LINEAR_T, linear, sum(n for n, _ in reqs))
    for n, p in reqs:
        xs, ys = [], []
        for i, bb in enumerate(ATTN_B):
            if n <= max(ATTN_N[j] for j, row in enumerate(attn[i]) if any(v is not None for v in row)):
                xs.append(math.log2(bb))
                ys.append(interp_grid(ATTN_N, ATTN_P, attn[i], n, p) / bb)
        total += interp1(xs, ys, math.log2(b))
    return total


# --------------------------------------------------------------------------- engine


class Engine:
    """One compiled aiconfigurator engine (model x system x TP), as ``compile_engine``
    builds it, keeping the model to report the quantisation the package resolved."""

    def __init__(self, core, aic_engine, hf_id, system, version, tp, kv_override=None):
        from aiconfigurator_core.sdk.config_builders import build_model_config
        from aiconfigurator_core.sdk.models import get_model

        cfg = build_model_config(tp_size=tp, pp_size=1, attention_dp_size=1, moe_tp_size=tp, moe_ep_size=1,
                                 kvcache_quant_mode=kv_override, fmha_quant_mode=kv_override)
        model = get_model(hf_id, cfg, BACKEND)
        database = aic_engine._maybe_load_database(system, BACKEND, version, None)
        spec = aic_engine.build_engine_spec_json(model, model_path=hf_id, system=system, backend=BACKEND,
                                                 backend_version=version, kv_block_size=None, systems_path=None,
                                                 nextn=cfg.nextn, database=database)
        self.e = core.AicEngine.from_spec(bytes(core.engine_spec_bincode_from_json(spec)))
        mc = model.config
        self.quant = {k: getattr(getattr(mc, k + "_quant_mode", None), "name", None)
                      for k in ("gemm", "moe", "kvcache", "fmha", "comm")}
        self.sources: dict[str, set] = {}
        self.calls = 0

    def ops(self, b, isl, prefix, phase):
        ctx, gen = self.e.run_static_per_op(b, 1, isl, 2, prefix, 1.0, 1.0, "static", 32)
        self.calls += 1
        rows = ctx if phase == "context" else gen
        for name, lat, _energy, src in rows:
            self.sources.setdefault(name, set()).add(src)
        return {name: lat for name, lat, _e, _s in rows}

    def context_dependent_ops(self):
        """Operators whose time changes with the cached prefix (same new tokens)."""
        a = self.ops(1, 2048, 0, "context")
        z = self.ops(1, 2048 + 32768, 32768, "context")
        dep = sorted(k for k in a if abs(z.get(k, 0.0) - a[k]) > 1e-9 * max(1.0, abs(a[k])))
        return dep

    def prefill_split(self, b, n, p, dep):
        o = self.ops(b, p + n, p, "context")
        attn = sum(v for k, v in o.items() if k in dep)
        return attn, sum(o.values()) - attn

    def decode_step(self, B, C):
        return sum(self.ops(B, C, 0, "generation").values())


def build_table(eng: Engine, max_ctx: int) -> dict:
    dep = eng.context_dependent_ops()
    linear = []
    for T in LINEAR_T:
        _attn, lin = eng.prefill_split(1, T, 0, dep)
        linear.append(us(lin))
    attn = []
    for b in ATTN_B:
        plane = []
        for n in ATTN_N:
            row = []
            for p in ATTN_P:
                if b * n > ATTN_MAX_BATCH_TOKENS or n + p > max_ctx:
                    row.append(None)
                else:
                    row.append(us(eng.prefill_split(b, n, p, dep)[0]))
            plane.append(row)
        attn.append(plane)
    step = [[us(eng.decode_step(B, C)) if C <= max_ctx else None for C in DECODE_C] for B in DECODE_B]

    # Off-grid checks: the table's interpolation against the engine itself.
    def table_prefill(b, n, p):
        return prefill_from_table(linear, attn, [(n, p)] * b)

    checks = []
    for b, n, p in CHECK_PREFILL:
        if n + p > max_ctx:
            continue
        a, lin = eng.prefill_split(b, n, p, dep)
        direct = us(a + lin)
        checks.append(["prefill", b, n, p, direct, int(round(table_prefill(b, n, p)))])
    for B, C in CHECK_DECODE:
        direct = us(eng.decode_step(B, C))
        checks.append(["decode", B, C, direct, int(round(interp_grid(DECODE_B, DECODE_C, step, B, C)))])
    worst = max(abs(c[-1] - c[-2]) / max(1, c[-2]) for c in checks)

    # Monotonicity: time should not fall when work grows.
    def non_monotone(seq):
        vals = [v for v in seq if v is not None]
        return sum(1 for i in range(1, len(vals)) if vals[i] < vals[i - 1])

    nm = non_monotone(linear)
    for plane in attn:
        for row in plane:
            nm += non_monotone(row)
        for j in range(len(ATTN_P)):
            nm += non_monotone([row[j] for row in plane])
    for row in step:
        nm += non_monotone(row)
    for j in range(len(DECODE_C)):
        nm += non_monotone([row[j] for row in step])

    return {
        "context_dependent_ops": dep,
        "prefill": {"linear_us": linear, "attn_us": attn},
        "decode": {"step_us": step},
        # offgrid rows: [kind, b, n, p | B, C, engine_us, table_us]
        "checks": {"offgrid": checks, "max_rel_error": round(worst, 4), "non_monotone_steps": nm},
    }


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/timecost/aic", help="download/unpack directory (scratch)")
    ap.add_argument("--out", default=os.path.join(HERE, "tables"), help="output directory")
    ap.add_argument("--systems", nargs="*", default=list(SYSTEMS), help="simulator node ids")
    ap.add_argument("--models", nargs="*", default=None, help="simulator model ids (default: all)")
    ap.add_argument("--tp", nargs="*", type=int, default=TP_SIZES)
    ap.add_argument("--backend-version", default=None, help="SGLang data version (default: the package's current)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    # The package logs every low-fidelity fallback it loads; those are recorded in
    # the tables' op_sources instead.
    logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)

    import yaml

    with open(MODELS_YAML) as f:
        presets = yaml.safe_load(f)

    wheel, sha, unpacked = fetch_package(args.work)
    core, aic_engine, perf_database = import_package(unpacked)
    pkg_root = os.path.join(unpacked, "aiconfigurator_core")
    os.makedirs(args.out, exist_ok=True)

    for node in args.systems:
        if node not in SYSTEMS:
            sys.exit(f"error: unknown system {node!r}: expected one of {', '.join(SYSTEMS)}")
        system = SYSTEMS[node]
        with open(os.path.join(pkg_root, "systems", system + ".yaml")) as f:
            spec = yaml.safe_load(f)
        db = perf_database.get_database(system, BACKEND, args.backend_version or "current")
        version = db.version
        db._materialize_source_reports()
        data_files = {}
        for op_file, records in sorted(db.data_provenance.items()):
            kept = [
                {"version": r["version"], "channel": r["channel"],
                 "path": os.path.relpath(r["path"], pkg_root)}
                for r in records if r["exists"]
            ]
            if kept:
                data_files[op_file] = kept
        gpu = spec["gpu"]
        out = {
            "schema": SCHEMA,
            "generator": "tools/costs/gen_cost_tables.py",
            "source": {"package": PACKAGE, "version": VERSION, "license": "Apache-2.0",
                       "wheel": wheel, "sha256": sha},
            "node": node,
            "system": system,
            "backend": BACKEND,
            "backend_version": version,
            "gpu": {k: gpu.get(k) for k in ("mem_capacity", "mem_bw", "bfloat16_tc_flops", "fp8_tc_flops",
                                             "fp4_tc_flops", "sm_version")},
            "interconnect": {k: spec["node"].get(k) for k in ("num_gpus_per_node", "intra_node_bw",
                                                               "inter_node_bw", "pcie_bw")},
            "data_files": data_files,
            "grids": {"linear_T": LINEAR_T, "attn_b": ATTN_B, "attn_n": ATTN_N, "attn_p": ATTN_P,
                      "attn_max_batch_tokens": ATTN_MAX_BATCH_TOKENS,
                      "decode_B": DECODE_B, "decode_C": DECODE_C, "max_context": MAX_CONTEXT},
            "tables": [],
            "skipped": [],
        }
        for model, quant, hf_id in MODELS:
            if args.models and model not in args.models:
                continue
            ckpt = parse_bytes(presets[model]["checkpoint"][quant])
            for tp in args.tp:
                key = {"model": model, "quant": quant, "hf_id": hf_id, "tp": tp}
                if quant in FP4_QUANTS and gpu["sm_version"] < 100:
                    out["skipped"].append({**key, "reason": f"{quant} needs sm_100+ (this GPU: sm_{gpu['sm_version']})"})
                    continue
                per_gpu = ckpt / tp
                if per_gpu > WEIGHT_FRACTION_MAX * gpu["mem_capacity"]:
                    out["skipped"].append({**key, "reason": f"checkpoint {ckpt} B / TP{tp} = {int(per_gpu)} B per GPU "
                                           f"> {WEIGHT_FRACTION_MAX} x {gpu['mem_capacity']} B"})
                    continue
                t0 = time.time()
                # The checkpoint's own KV/attention dtype first; where the package has
                # no attention rows for it (e.g. MLA with an fp8 KV cache), SGLang's
                # default `--kv-cache-dtype auto` (bf16 KV, bf16 attention).
                eng, body, errors = None, None, []
                for kv in (None, "bfloat16"):
                    try:
                        eng = Engine(core, aic_engine, hf_id, system, version, tp, kv_override=kv)
                        body = build_table(eng, MAX_CONTEXT)
                        break
                    except Exception as e:  # the engine refuses a shape: try the next
                        msg = str(e).replace(unpacked + os.sep, "").split(" at ")[0][:200]
                        errors.append(f"kv={kv or 'checkpoint'}: {type(e).__name__}: {msg}")
                        body = None
                if body is None:
                    out["skipped"].append({**key, "reason": "aiconfigurator: " + " | ".join(errors)})
                    log.warning("%s %s %s TP%d: skipped: %s", node, model, quant, tp, errors)
                    continue
                # Where each operator's time came from: "silicon" (the profiled
                # SGLang rows) for most; the others listed by label, e.g.
                # {"empirical": ["c:add_norm_1", …], "mixed": ["g:moe_overlap"]}
                # (c = prefill/context operator, g = decode/generation operator).
                by_label: dict = {"silicon_ops": 0}
                for op, labels in sorted(eng.sources.items()):
                    if labels == {"silicon"}:
                        by_label["silicon_ops"] += 1
                        continue
                    short = op.replace("context_", "c:", 1).replace("generation_", "g:", 1)
                    by_label.setdefault("+".join(sorted(labels)), []).append(short)
                table = {**key, "moe_tp": tp, "moe_ep": 1, "aic_quant": eng.quant, "op_sources": by_label, **body}
                if errors:
                    table["note"] = "retried: " + " | ".join(errors)
                out["tables"].append(table)
                log.warning("%s %s %s TP%d: %d engine calls, %.1f s, max off-grid error %.1f%%",
                            node, model, quant, tp, eng.calls, time.time() - t0,
                            100 * body["checks"]["max_rel_error"])
        path = os.path.join(args.out, f"{node}.json")
        with open(path, "w") as f:
            f.write(dumps(out))
        log.warning("wrote %s (%d tables, %d skipped)", path, len(out["tables"]), len(out["skipped"]))
    return 0


def dumps(obj) -> str:
    """Stable JSON: the header indented, each table (and each skipped entry and data
    file list) compact on one line, so a regeneration diffs table by table."""

    def compact(v):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))

    lines = ["{"]
    keys = sorted(obj)
    for i, k in enumerate(keys):
        v = obj[k]
        end = "," if i + 1 < len(keys) else ""
        if k in ("tables", "skipped") and v:
            lines.append(f" {json.dumps(k)}: [")
            lines.extend("  " + compact(t) + ("," if j + 1 < len(v) else "") for j, t in enumerate(v))
            lines.append(" ]" + end)
        elif isinstance(v, dict) and v:
            lines.append(f" {json.dumps(k)}: {{")
            sub = sorted(v)
            lines.extend(f"  {json.dumps(sk)}: {compact(v[sk])}" + ("," if j + 1 < len(sub) else "")
                         for j, sk in enumerate(sub))
            lines.append(" }" + end)
        else:
            lines.append(f" {json.dumps(k)}: {compact(v)}{end}")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
