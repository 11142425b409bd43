#!/usr/bin/env python3
"""Generates src/model/catalogue.json: the bundled model catalogue.

Every architecture fact in the catalogue is a Hugging Face `config.json` (and, for
ModelOpt checkpoints, its `hf_quant_config.json`) read from a recorded source, never
typed by hand:

1. NVIDIA's `aiconfigurator-core` 0.12.0 from PyPI (Apache-2.0): the script runs
   `pip download aiconfigurator-core==0.12.0 --no-deps`, checks the wheel's sha256
   (WHEEL_SHA256 below), and reads every `aiconfigurator_core/model_configs/*.json`.
2. Public GitHub files for models the package lacks (GITHUB_SOURCES: repository, commit,
   path, sha256 of the file). They are read from local snapshots of those repositories
   (`--mirror DIR`, laid out as DIR/<owner>+<name>/repo, a bare git directory such as
   the search tool's `fetch` produces) with `git show COMMIT:PATH`; without `--mirror`
   the entries already in the catalogue are kept as they are (their sha256 recorded).
3. Configuration classes of the `transformers` wheel (TRANSFORMERS_SOURCES), for a model
   whose config.json has no citable copy but whose class defaults the file documents as
   that model's configuration (Qwen3_5TextConfig: "the Qwen3.5-9B style configuration").
   The script downloads the pinned wheel, checks its sha256 and the file's, checks the
   docstring still says so, and reads the class-level `name: type = value` defaults with
   `ast` (nothing imported): the config.json that `Config().to_dict()` would write, less
   keys whose default is None, plus the defaults `__post_init__` takes from kwargs
   (`full_attention_interval`, which SGLang's `configs/qwen3_next.py:
   layers_block_type` reads, and the `layer_types` it builds).

Per model the catalogue records its Hugging Face id, the config (keys as in the file;
ModelOpt's per-layer `quantized_layers` map, megabytes of layer names, keeps one layer
per distinct setting and its length as `quantized_layers_count`; JSON has no Infinity, so
non-finite numbers are the strings "Infinity" / "-Infinity" / "NaN"), the hf_quant_config.json when there is one, and for each file the source:
package + version + path + sha256, or repository + commit + path + sha256.

Usage: python3 tools/models/gen_catalogue.py [--mirror /work/.mirror] [--work DIR]
"""

import argparse
import ast
import hashlib
import json
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "src", "model", "catalogue.json")

PACKAGE = "aiconfigurator-core"
VERSION = "0.12.0"
WHEEL = "aiconfigurator_core-0.12.0-cp311-abi3-manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "aadc4aad0a00bf8a61c477c62bef43de479849c3aa0b1c3078068e08309eccc4"
PREFIX = "aiconfigurator_core/model_configs/"

# Models the package lacks. `section`: the file holds several configs as markdown
# sections ("Name\n{json}"); the named one is read.
GITHUB_SOURCES = [
    # ai-dynamo/aiconfigurator (the package's own repository): files its history held,
    # each at the last commit whose tree holds it (later commits removed them).
    *[
        {"hf_id": hf, "repo": "ai-dynamo/aiconfigurator", "commit": commit,
         "path": f"src/aiconfigurator/model_configs/{hf.replace('/', '--')}_config.json"}
        for hf, commit in [
            ("Qwen/Qwen2.5-1.5B", "b5369e1fb89f7ad67b160c749227b415f4e7fe01"),
            ("Qwen/Qwen2.5-7B", "b5369e1fb89f7ad67b160c749227b415f4e7fe01"),
            ("Qwen/Qwen2.5-32B", "b5369e1fb89f7ad67b160c749227b415f4e7fe01"),
            ("Qwen/Qwen2.5-72B", "b5369e1fb89f7ad67b160c749227b415f4e7fe01"),
            ("Qwen/Qwen3-Next-80B-A3B-Thinking", "1b7cfb10a6fa06880ad7911db5ddb949882ff76a"),
            ("deepseek-ai/DeepSeek-V3.1", "39033e8cd1f8aa03770a7820bce974ea9238eff9"),
            ("meta-llama/Llama-3.3-70B-Instruct", "473ce5b6b44c7dd36516648be9b2fc7077aa7769"),
            ("moonshotai/Kimi-K2-Thinking", "d9219759f08e23642435057b0bd1e3d99e3940d5"),
            ("zai-org/GLM-4.7-FP8", "19d098add98ab8ba2366c94795e9e886cdcc915c"),
            ("zai-org/GLM-4.7-Flash", "19d098add98ab8ba2366c94795e9e886cdcc915c"),
        ]
    ],
    # alibaba/rtp-llm: the GLM-4.5 checkpoint's config.json, tokenizer and chat template,
    # copied as test data by "feat: add GLM-4.5 support with tokenizer, renderer and
    # tests" (2025-07-31); unchanged at 4b8d39cd (the newest snapshot read).
    {"hf_id": "zai-org/GLM-4.5", "repo": "alibaba/rtp-llm",
     "commit": "de8bee30fef7ca69da189c1c2f1998fac85773d4",
     "path": "rtp_llm/test/model_test/fake_test/testdata/glm45/tokenizer/config.json"},
    # citsjtu2020/LLM-Prof: sglang/Model_Config.md holds HF config.json files by name.
    *[
        {"hf_id": f"Qwen/{name}", "repo": "citsjtu2020/LLM-Prof",
         "commit": "8434c8d19c396b2f95d92a67845a7c0a0e0dd512",
         "path": "sglang/Model_Config.md", "section": name}
        for name in ["Qwen2.5-3B", "Qwen2.5-14B", "Qwen3-4B", "Qwen3-14B"]
    ],
    # The same file's Llama-3.2-3B section: the base model's config.json
    # (`transformers_version` 4.45.0.dev0; the Instruct model's differs only in
    # `eos_token_id`). A start-up log of it is a corpus case.
    {"hf_id": "meta-llama/Llama-3.2-3B", "repo": "citsjtu2020/LLM-Prof",
     "commit": "8434c8d19c396b2f95d92a67845a7c0a0e0dd512",
     "path": "sglang/Model_Config.md", "section": "Llama-3.2-3B"},
]

# Models whose config.json is a transformers configuration class's defaults (see 3.).
TRANSFORMERS_SOURCES = [
    # transformers 5.25.0, models/qwen3_5/configuration_qwen3_5.py: Qwen3_5TextConfig's
    # and Qwen3_5Config's docstrings: "Initializing a model from the Qwen3.5-9B style
    # configuration" with the defaults. The architecture is the model class that
    # docstring instantiates (Qwen3_5ForConditionalGeneration). No dtype default: the
    # entry has none (SGLang's `_get_and_verify_dtype` then reads float32 and serves
    # float16 under `--dtype auto`: 2 bytes, as bf16).
    {"hf_id": "Qwen/Qwen3.5-9B", "package": "transformers", "version": "5.25.0",
     "wheel": "transformers-5.25.0-py3-none-any.whl",
     "wheel_sha256": "8ca7a96cc329e5a053c9e770711e73d7bd9d77240ff62049fca6d253965cda52",
     "path": "transformers/models/qwen3_5/configuration_qwen3_5.py",
     "file_sha256": "8124bf8c60552159339ea35d6f1e5ca46743473e83bd68a4311684c9e4f68178",
     "class": "Qwen3_5Config", "text_class": "Qwen3_5TextConfig",
     "architectures": ["Qwen3_5ForConditionalGeneration"],
     "documented_as": "Qwen3.5-9B style configuration"},
]


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def slim(cfg):
    """The config as written, less ModelOpt's per-layer `quantized_layers` map. Python's
    json reads `Infinity` / `NaN` (Nemotron-H's `time_step_limit`), which JSON does not
    have: they are kept as the strings "Infinity" / "-Infinity" / "NaN"."""
    def walk(d):
        if isinstance(d, float) and (d != d or d in (float("inf"), float("-inf"))):
            return "NaN" if d != d else ("Infinity" if d > 0 else "-Infinity")
        if isinstance(d, list):
            return [walk(x) for x in d]
        if not isinstance(d, dict):
            return d
        out = {}
        for k, v in d.items():
            if k == "quantized_layers" and isinstance(v, dict):
                # One layer (the first by name) per distinct per-layer setting: what
                # SGLang reads of it (`_parse_modelopt_quant_config`: is any layer NVFP4)
                # survives; the full per-layer map (megabytes) does not.
                firsts = {}
                for name in sorted(v):
                    firsts.setdefault(json.dumps(v[name], sort_keys=True), name)
                out[k] = {name: v[name] for name in sorted(firsts.values())}
                out["quantized_layers_count"] = len(v)
            else:
                out[k] = walk(v)
        return out
    return walk(cfg)


def from_package(work):
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels, exist_ok=True)
    path = os.path.join(wheels, WHEEL)
    if not os.path.exists(path):
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q",
                               f"{PACKAGE}=={VERSION}", "--no-deps", "--only-binary=:all:",
                               "--python-version", "3.11", "--platform",
                               "manylinux_2_28_x86_64", "-d", wheels])
    data = open(path, "rb").read()
    if sha256(data) != WHEEL_SHA256:
        sys.exit(f"{WHEEL}: sha256 {sha256(data)} is not the recorded {WHEEL_SHA256}")
    models = {}
    with zipfile.ZipFile(path) as z:
        for n in sorted(z.namelist()):
            if not n.startswith(PREFIX) or not n.endswith("_config.json"):
                continue
            base = n[len(PREFIX):]
            if base.endswith("_hf_quant_config.json"):
                continue
            stem = base[: -len("_config.json")]
            hf_id = stem.replace("--", "/", 1)
            raw = z.read(n)
            src = {"package": PACKAGE, "version": VERSION, "path": n, "sha256": sha256(raw)}
            entry = {"hf_id": hf_id, "config": slim(json.loads(raw)), "config_source": src}
            q = f"{PREFIX}{stem}_hf_quant_config.json"
            if q in z.namelist():
                qraw = z.read(q)
                entry["hf_quant_config"] = slim(json.loads(qraw))
                entry["hf_quant_config_source"] = {"package": PACKAGE, "version": VERSION,
                                                   "path": q, "sha256": sha256(qraw)}
            models[hf_id] = entry
    return models


def markdown_section(text, name):
    """The JSON object that follows the line `name` in a markdown file."""
    lines = text.splitlines()
    i = lines.index(name)
    depth, buf = 0, []
    for line in lines[i + 1:]:
        buf.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0 and buf and "}" in line:
            break
    return json.loads("\n".join(buf))


def from_github(mirror, previous):
    models = {}
    for s in GITHUB_SOURCES:
        s = dict(s)
        s["commit"] = COMMITS.get(s["commit"], s["commit"])
        git = None if mirror is None else os.path.join(mirror, s["repo"].replace("/", "+"), "repo")
        # Without a snapshot of this repository the catalogue's entry is kept as it is
        # (its source and sha256 recorded when it was read).
        if git is None or not os.path.isdir(git):
            if s["hf_id"] in previous:
                models[s["hf_id"]] = previous[s["hf_id"]]
            elif git is not None:
                sys.exit(f"{s['hf_id']}: no snapshot of {s['repo']} at {git} (fetch it)")
            continue
        raw = subprocess.check_output(["git", "--git-dir", git, "show",
                                       f"{s['commit']}:{s['path']}"])
        want = FILE_SHA256.get((s["repo"], s["path"], s["commit"]))
        if want and sha256(raw) != want:
            sys.exit(f"{s['repo']}:{s['path']}@{s['commit']}: sha256 {sha256(raw)} != {want}")
        text = raw.decode()
        cfg = markdown_section(text, s["section"]) if "section" in s else json.loads(text)
        src = {"repo": s["repo"], "commit": s["commit"], "path": s["path"], "sha256": sha256(raw)}
        if "section" in s:
            src["section"] = s["section"]
        models[s["hf_id"]] = {"hf_id": s["hf_id"], "config": slim(cfg), "config_source": src}
    return models


def class_defaults(tree, name):
    """A class's `model_type`, its class-level `name: type = value` defaults (literals
    only; None left out, as a config.json of the checkpoint would not carry them), and
    the `kwargs.pop(k, v)` / `kwargs.setdefault(k, v)` defaults of its `__post_init__`."""
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    out, post, doc = {}, {}, ast.get_docstring(cls) or ""
    for n in cls.body:
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value:
            v = ast.literal_eval(n.value)
            if v is not None:
                out[n.target.id] = v
        elif isinstance(n, ast.Assign) and [getattr(t, "id", None) for t in n.targets] == ["model_type"]:
            out["model_type"] = ast.literal_eval(n.value)
        elif isinstance(n, ast.FunctionDef) and n.name == "__post_init__":
            for c in ast.walk(n):
                if (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                        and getattr(c.func.value, "id", None) == "kwargs"
                        and c.func.attr in ("pop", "setdefault") and len(c.args) == 2):
                    post[ast.literal_eval(c.args[0])] = ast.literal_eval(c.args[1])
    return out, post, doc


def from_transformers(work):
    models = {}
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels, exist_ok=True)
    for s in TRANSFORMERS_SOURCES:
        path = os.path.join(wheels, s["wheel"])
        if not os.path.exists(path):
            subprocess.check_call([sys.executable, "-m", "pip", "download", "-q",
                                   f"{s['package']}=={s['version']}", "--no-deps",
                                   "--only-binary=:all:", "-d", wheels])
        data = open(path, "rb").read()
        if sha256(data) != s["wheel_sha256"]:
            sys.exit(f"{s['wheel']}: sha256 {sha256(data)} is not the recorded {s['wheel_sha256']}")
        with zipfile.ZipFile(path) as z:
            raw = z.read(s["path"])
        if sha256(raw) != s["file_sha256"]:
            sys.exit(f"{s['path']}: sha256 {sha256(raw)} is not the recorded {s['file_sha256']}")
        tree = ast.parse(raw.decode())
        text, post, tdoc = class_defaults(tree, s["text_class"])
        top, _, doc = class_defaults(tree, s["class"])
        for d in (tdoc, doc):
            if s["documented_as"] not in d:
                sys.exit(f"{s['path']}: docstring no longer says {s['documented_as']!r}")
        # `__post_init__`: layer l is linear attention unless (l + 1) % interval == 0.
        interval = post.pop("full_attention_interval")
        text["full_attention_interval"] = interval
        text["layer_types"] = ["linear_attention" if (i + 1) % interval else "full_attention"
                               for i in range(text["num_hidden_layers"])]
        text.update(post)
        cfg = dict(top, architectures=s["architectures"], text_config=text)
        src = {"package": s["package"], "version": s["version"], "path": s["path"],
               "sha256": sha256(raw),
               "class": f"{s['class']}({s['text_class']}) defaults, documented as the {s['documented_as']}"}
        models[s["hf_id"]] = {"hf_id": s["hf_id"], "config": cfg, "config_source": src}
    return models


COMMITS = {}
# sha256 of each GitHub file as read (checked when --mirror is given).
FILE_SHA256 = {
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/Qwen--Qwen2.5-1.5B_config.json", "b5369e1fb89f7ad67b160c749227b415f4e7fe01"):
        "40047675cec8a9c620bdf32e3d8b05cbed71fed3ccb8b67c131fea7cbdadbcc6",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/Qwen--Qwen2.5-7B_config.json", "b5369e1fb89f7ad67b160c749227b415f4e7fe01"):
        "19e692d1a1fa58f561b40c3d3f7c6f7625f62766309785b1f98ed5cf456cd31c",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/Qwen--Qwen2.5-32B_config.json", "b5369e1fb89f7ad67b160c749227b415f4e7fe01"):
        "f7674d480602fc39532342eb106b375d8e3dff102fd541326437e7d713a4d14c",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/Qwen--Qwen2.5-72B_config.json", "b5369e1fb89f7ad67b160c749227b415f4e7fe01"):
        "84fe4e9d88dfbb2e7a87d78502530aa7ae59511f11b8c1382e70503e008a8c9a",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/Qwen--Qwen3-Next-80B-A3B-Thinking_config.json", "1b7cfb10a6fa06880ad7911db5ddb949882ff76a"):
        "39a8676a19151719ed769532c68a48de1c82ad20443f734ab591b50412e13950",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/deepseek-ai--DeepSeek-V3.1_config.json", "39033e8cd1f8aa03770a7820bce974ea9238eff9"):
        "3e5d192d745758862b0a3e6338ee181991db49933dbbd3185e1bde34944e7bad",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/meta-llama--Llama-3.3-70B-Instruct_config.json", "473ce5b6b44c7dd36516648be9b2fc7077aa7769"):
        "15ab4d645aea157575e6364380c882bad91197f60125ebef2aa01d640c8458f5",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/moonshotai--Kimi-K2-Thinking_config.json", "d9219759f08e23642435057b0bd1e3d99e3940d5"):
        "cbf22fe02445f3e76414e7d296ebff27d3796ee6a65b362f181d0d309555a57c",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/zai-org--GLM-4.7-FP8_config.json", "19d098add98ab8ba2366c94795e9e886cdcc915c"):
        "212991b903cabec70890a14bacb15cadd519bc539cd78a2ffc9837578efda906",
    ("ai-dynamo/aiconfigurator", "src/aiconfigurator/model_configs/zai-org--GLM-4.7-Flash_config.json", "19d098add98ab8ba2366c94795e9e886cdcc915c"):
        "408dd48ddd48a0c363841cf9c2af84c2a67a07492ef4981ed87e594c3a1739ef",
    ("alibaba/rtp-llm", "rtp_llm/test/model_test/fake_test/testdata/glm45/tokenizer/config.json", "de8bee30fef7ca69da189c1c2f1998fac85773d4"):
        "a5dbd07371a8a51b0013a63a7a70543a7094af1a9598812b537133e6da78dda7",
    ("citsjtu2020/LLM-Prof", "sglang/Model_Config.md", "8434c8d19c396b2f95d92a67845a7c0a0e0dd512"):
        "0366cb9aa3d99b09b572b55d279ac7c2bd235d454433a015e204e929a7e70def",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=None)
    ap.add_argument("--work", default="/tmp/hicache-sim-models")
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    previous = {}
    if os.path.exists(a.out):
        previous = {m["hf_id"]: m for m in json.load(open(a.out))["models"]}
    models = from_package(a.work)
    for k, v in from_github(a.mirror, previous).items():
        if k in models:
            sys.exit(f"{k}: in the package and in GITHUB_SOURCES")
        models[k] = v
    for k, v in from_transformers(a.work).items():
        if k in models:
            sys.exit(f"{k}: in two sources")
        models[k] = v
    out = {
        "generated_by": "tools/models/gen_catalogue.py",
        "package": {"name": PACKAGE, "version": VERSION, "wheel": WHEEL,
                    "wheel_sha256": WHEEL_SHA256, "license": "Apache-2.0"},
        "models": [models[k] for k in sorted(models, key=str.lower)],
    }
    with open(a.out, "w") as f:
        # One model per line: reviewable diffs.
        head = json.dumps({k: v for k, v in out.items() if k != "models"}, sort_keys=True)
        f.write(head[:-1] + ',"models":[\n')
        f.write(",\n".join(json.dumps(m, sort_keys=True, separators=(",", ":"))
                           for m in out["models"]))
        f.write("\n]}\n")
    print(f"wrote {a.out}: {len(models)} models")


if __name__ == "__main__":
    main()
