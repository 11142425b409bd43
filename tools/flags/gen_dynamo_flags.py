#!/usr/bin/env python3
"""Generates src/flags/dynamo_flags.json: NVIDIA Dynamo's own flags of its SGLang worker.

One command (from the repository root; needs python3 >= 3.11 and network access to PyPI):

    python3 tools/flags/gen_dynamo_flags.py

For each release in RELEASES it downloads the wheel (`pip download ai-dynamo==X
--no-deps`), unpacks it, and in a fresh interpreter (heavy or compiled imports stubbed,
`dynamo._core` above all) builds the argparse parser Dynamo's `dynamo/sglang/args.py:
parse_args` builds before SGLang's: `DynamoRuntimeArgGroup().add_arguments`,
`DynamoSGLangArgGroup().add_arguments` and the router advertisement flags
(`common/configuration/groups/router_args.py: add_worker_router_arguments`). It records
every option string and how many words it takes (0 for a switch, 1, or argparse's nargs),
so the simulator can drop Dynamo's flags and hand the rest to SGLang's parser unchanged.
SGLang's own flags (which Dynamo appends to its parser) are not in the table.

Options: --work DIR (default /tmp/hicache-sim-dynamo), --out FILE.
"""

import argparse
import json
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RELEASES = ["1.6.1"]
VENV_PACKAGES = ["msgspec", "packaging", "typing_extensions", "pyyaml", "pydantic"]

# Run inside the venv with the unpacked wheel first on sys.path.
PROBE = r'''
import argparse, importlib.abc, importlib.machinery, json, sys, types
REAL = ("dynamo.common.configuration", "dynamo.sglang.backend_args", "dynamo.common.constants",
        "dynamo.common.utils.namespace", "dynamo.common.utils.output_modalities")
class Anything:
    """A stubbed name: any attribute is another, a call gives an empty list."""
    def __init__(self, name):
        self._name = name
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything(f"{self._name}.{name}")
    def __call__(self, *a, **k):
        return []
    def __iter__(self):
        return iter(())
class Stub(types.ModuleType):
    __path__ = []
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything(name)
class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # Last on sys.meta_path: only what is not installed or not in the wheel (the
    # compiled runtime, SGLang, torch) is stubbed.
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top in ("org", "java") or top.startswith("_"):
            return None
        return importlib.machinery.ModuleSpec(name, self)
    def create_module(self, spec):
        return Stub(spec.name)
    def exec_module(self, m):
        pass
sys.meta_path.append(Finder())
# `dynamo.sglang/__init__` and `dynamo/__init__` may import the runtime: bypass them.
import importlib.util, os
root = sys.argv[1]
for pkg in ("dynamo", "dynamo.sglang", "dynamo.common", "dynamo.common.utils"):
    m = types.ModuleType(pkg); m.__path__ = [os.path.join(root, *pkg.split("."))]
    m.__version__ = sys.argv[2]
    sys.modules[pkg] = m
from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup
from dynamo.sglang.backend_args import DynamoSGLangArgGroup
from dynamo.common.configuration.groups import router_args
p = argparse.ArgumentParser(add_help=False)
DynamoRuntimeArgGroup().add_arguments(p)
DynamoSGLangArgGroup().add_arguments(p)
router_args.add_worker_router_arguments(p)
out = []
for a in p._actions:
    if not a.option_strings:
        continue
    if a.nargs == 0 or isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction,
            argparse._StoreConstAction, argparse._CountAction, argparse._AppendConstAction)):
        words = 0
    elif a.nargs is None:
        words = 1
    else:
        words = a.nargs
    if isinstance(a, argparse.BooleanOptionalAction):
        words = 0
    out.append({"options": list(a.option_strings), "dest": a.dest, "words": words})
print(json.dumps(out))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/hicache-sim-dynamo")
    ap.add_argument("--out", default=os.path.join(ROOT, "src", "flags", "dynamo_flags.json"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    py = os.path.join(a.work, "venv", "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", os.path.join(a.work, "venv")])
        subprocess.check_call([py, "-m", "pip", "install", "-q", *VENV_PACKAGES])
    releases = {}
    for v in RELEASES:
        dest = os.path.join(a.work, "tree", v)
        if not os.path.exists(os.path.join(dest, "dynamo", "sglang", "args.py")):
            wheels = os.path.join(a.work, "wheels", v)
            subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                   f"ai-dynamo=={v}", "-d", wheels])
            whl = [f for f in os.listdir(wheels) if f.endswith(".whl")][0]
            zipfile.ZipFile(os.path.join(wheels, whl)).extractall(dest)
        res = subprocess.run([py, "-c", PROBE, dest, v], capture_output=True, text=True,
                             cwd=dest, env={**os.environ, "PYTHONPATH": dest})
        if res.returncode != 0:
            sys.exit(f"ai-dynamo {v}: {res.stderr}")
        releases[v] = json.loads(res.stdout)
    doc = {
        "generator": "tools/flags/gen_dynamo_flags.py",
        "source": "ai-dynamo wheels: dynamo/sglang/args.py parse_args (DynamoRuntimeArgGroup, "
                  "DynamoSGLangArgGroup, add_worker_router_arguments)",
        "releases": releases,
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{a.out}: " + ", ".join(f"{v}: {len(r)} flags" for v, r in releases.items()))


if __name__ == "__main__":
    main()
