#!/usr/bin/env python3
"""Writes src/model/multimodal_archs.json: per SGLang release, the architecture lists of
`configs/model_config.py` that decide whether a model is served as multimodal and what
that changes at start-up:

- `multimodal_model_archs` (`is_multimodal_model`): a multimodal model's default
  `--mem-fraction-static` is lowered for its vision encoder
  (`adjust_mem_fraction_for_vlm`) and its prefill CUDA graph is off;
- `mm_disabled_models` (`ModelConfig.__init__`, `enable_multimodal is None`): archs
  served text-only unless `--enable-multimodal` is given (Gemma 3, Llama 4, ...);
- `multimodal_piecewise_cuda_graph_supported_model_archs` and (0.5.16+)
  `multimodal_breakable_cuda_graph_supported_model_archs`: multimodal archs that keep the
  prefill graph (the rule "multimodal model" of `_disable_*_cudagraph_if_incompatible`
  does not turn it off for them; a piecewise-listed arch switches to tc_piecewise).

The lists are read with `ast` from each release's wheel (nothing imported):
`pip download sglang==X --no-deps` into WORK/wheels (kept as a cache).

Usage: python3 tools/models/gen_multimodal_archs.py [--work /tmp/hicache-sim-mm] [--check]
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "src", "model", "multimodal_archs.json")
RELEASES = ["0.5.14", "0.5.15", "0.5.15.post1", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20",
            "0.5.21", "0.5.22", "0.5.23"]
MODULE_LISTS = {
    "multimodal_model_archs": "multimodal",
    "multimodal_piecewise_cuda_graph_supported_model_archs": "prefill_graph_piecewise",
    "multimodal_breakable_cuda_graph_supported_model_archs": "prefill_graph_breakable",
}


def model_config_source(work, version):
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels, exist_ok=True)
    have = [w for w in os.listdir(wheels) if w.startswith(f"sglang-{version}-")]
    if not have:
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q",
                               f"sglang=={version}", "--no-deps", "--only-binary=:all:",
                               "--python-version", "3.11", "-d", wheels])
        have = [w for w in os.listdir(wheels) if w.startswith(f"sglang-{version}-")]
    with zipfile.ZipFile(os.path.join(wheels, have[0])) as z:
        return z.read("sglang/srt/configs/model_config.py").decode()


def str_list(node):
    assert isinstance(node, ast.List), ast.dump(node)[:80]
    return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def lists(src):
    out = {v: [] for v in MODULE_LISTS.values()}
    out["mm_disabled"] = []
    tree = ast.parse(src)
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in MODULE_LISTS:
            out[MODULE_LISTS[node.targets[0].id]] = str_list(node.value)
    found = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == "mm_disabled_models":
            out["mm_disabled"] = str_list(node.value)
            found = True
    assert found, "mm_disabled_models not found"
    assert out["multimodal"], "multimodal_model_archs not found"
    return {k: sorted(set(v)) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/hicache-sim-mm")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    doc = {
        "generated_by": "tools/models/gen_multimodal_archs.py",
        "source": "sglang/srt/configs/model_config.py of each release's wheel (PyPI), read with ast",
        "releases": {v: lists(model_config_source(a.work, v)) for v in RELEASES},
    }
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if a.check:
        if open(OUT).read() != text:
            sys.exit(f"{OUT} differs from SGLang's lists: run {sys.argv[0]}")
        return
    with open(OUT, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
