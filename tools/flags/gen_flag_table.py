#!/usr/bin/env python3
"""Generates src/flags/sglang_flags.json: SGLang's server flags, release by release.

One command (from the repository root; needs only python3 >= 3.11 and network access to PyPI):

    python3 tools/flags/gen_flag_table.py

For each release in RELEASES it downloads the wheel (`pip download sglang==X --no-deps`),
unpacks it, and runs SGLang's own `ServerArgs.add_cli_args(parser)` in a fresh interpreter
with heavy imports stubbed (tools/flags/sglang_argparse.py), then records every argparse
action: option strings, dest, action, nargs, type, choices, default. The output keeps one
record per flag (keyed by its first option string) with the releases that have it and the
releases where an attribute changed -- facts about the parser, no SGLang source.

Options: --work DIR (default /tmp/hicache-sim-flags: venv, wheels, unpacked trees),
--out FILE (default src/flags/sglang_flags.json).
"""

import argparse
import json
import os
import subprocess
import sys
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# Releases the simulator models (docs: /work/shared/spec/releases.md), oldest first.
RELEASES = ["0.5.14", "0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20",
            "0.5.21", "0.5.22", "0.5.23"]
# Post releases published on PyPI inside that range; recorded only if their parser differs.
POST_RELEASES = {"0.5.15.post1": "0.5.15"}
# Pure-Python packages SGLang's import chain needs for real (everything else is stubbed).
VENV_PACKAGES = ["msgspec==0.23.0", "pydantic==2.14.4", "pyyaml==6.0.4", "dill==0.4.1"]
ATTRS = ["options", "action", "nargs", "type", "choices", "default", "const", "dest", "required"]


def registry_reachable():
    try:
        urllib.request.urlopen("https://pypi.org/simple/sglang/", timeout=15)
        return True
    except Exception:
        return False


def ensure_venv(work):
    venv = os.path.join(work, "venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
        subprocess.check_call([py, "-m", "pip", "install", "-q", *VENV_PACKAGES])
    return py


def unpacked(work, version):
    """Downloads and unpacks the wheel of `version`; returns the directory holding `sglang/`."""
    dest = os.path.join(work, "tree", version)
    if os.path.exists(os.path.join(dest, "sglang", "srt", "server_args.py")):
        return dest
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels, exist_ok=True)
    subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", f"sglang=={version}",
                           "--no-deps", "--only-binary=:all:", "--python-version", "3.11",
                           "-d", wheels])
    whl = [w for w in os.listdir(wheels) if w.startswith(f"sglang-{version}-")]
    if not whl:
        sys.exit(f"no wheel of sglang {version} in {wheels}")
    with zipfile.ZipFile(os.path.join(wheels, whl[0])) as z:
        z.extractall(dest, [n for n in z.namelist() if n.startswith("sglang/")])
    return dest


def dump(py, tree):
    env = dict(os.environ)
    env.pop("SGLANG_PLATFORM", None)
    out = subprocess.run([py, os.path.join(HERE, "sglang_argparse.py"), tree, "dump"],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"building the parser of {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def merge(per_release):
    """One record per flag: attributes at its first release, changes after, presence."""
    flags = {}
    order = []
    for rel in RELEASES:
        for a in per_release[rel]["actions"]:
            key = a["options"][0]
            if key not in flags:
                flags[key] = {"key": key, "present": [], "first": rel,
                              **{k: a[k] for k in ATTRS}, "changes": {}}
                order.append(key)
            rec = flags[key]
            # The attributes as of the latest release recorded so far.
            cur = {k: rec[k] for k in ATTRS}
            for r in rec["present"]:
                cur.update(rec["changes"].get(r, {}))
            diff = {k: a[k] for k in ATTRS if a[k] != cur[k]}
            if diff:
                rec["changes"][rel] = diff
            rec["present"].append(rel)
    out = []
    keys = sorted(order)
    for key in keys:
        rec = flags[key]
        if not rec["changes"]:
            del rec["changes"]
        out.append(rec)
    # Registration order per release (argparse lists ambiguous candidates in this order),
    # as indices into the sorted flag list.
    index = {k: i for i, k in enumerate(keys)}
    registration = {rel: [index[a["options"][0]] for a in per_release[rel]["actions"]]
                    for rel in RELEASES}
    return out, registration


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/tmp/hicache-sim-flags")
    ap.add_argument("--out", default=os.path.join(ROOT, "src", "flags", "sglang_flags.json"))
    args = ap.parse_args()
    if not registry_reachable():
        print("gen_flag_table: skipped, PyPI (https://pypi.org) cannot be reached")
        return 0
    os.makedirs(args.work, exist_ok=True)
    py = ensure_venv(args.work)
    per_release = {}
    for rel in RELEASES + list(POST_RELEASES):
        per_release[rel] = dump(py, unpacked(args.work, rel))
        print(f"sglang {rel}: {len(per_release[rel]['actions'])} actions, "
              f"{sum(len(a['options']) for a in per_release[rel]['actions'])} option strings",
              file=sys.stderr)
    posts = {}
    for post, base in POST_RELEASES.items():
        posts[post] = base if per_release[post] == per_release[base] else "DIFFERS"
        if posts[post] == "DIFFERS":
            sys.exit(f"{post} parses differently from {base}: add it to RELEASES")
    for rel in RELEASES:
        assert per_release[rel]["allow_abbrev"] and per_release[rel]["prefix_chars"] == "-"
    table = {
        "generated_by": "tools/flags/gen_flag_table.py",
        "argparse": f"Python {sys.version_info.major}.{sys.version_info.minor} argparse, "
                    "ArgumentParser(prog='sglang serve') + ServerArgs.add_cli_args",
        "releases": RELEASES,
        "post_releases_same_as": posts,
        "option_strings": {rel: sum(len(a["options"]) for a in per_release[rel]["actions"])
                           for rel in RELEASES},
    }
    table["flags"], table["registration_order"] = merge(per_release)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        # One flag per line: reviewable diffs when a release is added.
        flags = table.pop("flags")
        head = json.dumps(table, sort_keys=True, separators=(",", ":"))
        f.write(head[:-1] + ',"flags":[\n')
        f.write(",\n".join(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in flags))
        f.write("\n]}\n")
    print(f"wrote {args.out}: {len(flags)} flags over {len(RELEASES)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
