#!/usr/bin/env python3
"""Verdicts of real bash + SGLang's real parser on the launch-command corpus.

    python3 tools/flags/launch_verdicts.py corpus     # -> tests/launch_corpus/verdicts.json
    python3 tools/flags/launch_verdicts.py variants   # -> tests/launch_corpus/variants.json

For every text (a corpus file, or a generated variant of one), real `bash` runs it in a
scratch directory with fake `python`/`python3`/`sglang` executables first on PATH that only
record their argv; the recorded SGLang invocation is then parsed by the release's own
`ServerArgs.add_cli_args` parser (tools/flags/sglang_argparse.py, heavy imports stubbed;
`sglang serve` argv goes through the release's own `cli/serve.py` helpers). Nothing here
reads the simulator's code: the Rust tests compare against these files.

Needs: bash, python3 >= 3.11, and the unpacked wheels + venv that gen_flag_table.py makes
(--work, default /tmp/hicache-sim-flags; run gen_flag_table.py first, it downloads them).
"""

import argparse
import json
import os
import random
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "tests", "launch_corpus")
# The dests compared by the Rust test (SGLang's names).
KEYS = ["model_path", "tp_size", "pp_size", "dp_size", "attn_dp_size", "enable_dp_attention",
        "page_size", "kv_cache_dtype", "mem_fraction_static", "enable_hierarchical_cache",
        "hicache_ratio", "hicache_size", "hicache_host_memory_fraction", "hicache_write_policy",
        "hicache_storage_backend", "hicache_io_backend", "hicache_mem_layout",
        "hicache_storage_prefetch_policy", "radix_eviction_policy", "disable_radix_cache"]

FAKE = r'''#!/usr/bin/env python3
import json, os, sys
with open(os.environ["LAUNCH_CAPTURE"], "a") as f:
    f.write(json.dumps({"exe": os.path.basename(sys.argv[0]), "argv": sys.argv[1:]}) + "\n")
'''


# `docker run … IMAGE cmd` / `srun … cmd`: run the command (the first python/sglang/shell word).
WRAPPER = r'''#!/usr/bin/env python3
import os, re, sys
a = sys.argv[1:]
for i, w in enumerate(a):
    if re.fullmatch(r"(python[0-9.]*|sglang|bash|sh)", os.path.basename(w)):
        os.execvp(a[i], a[i:])
sys.exit(127)
'''


def header(text, key):
    m = re.search(r"^# %s: (.+)$" % key, text, re.M)
    return m.group(1).strip() if m else None


def run_bash(text):
    """argv of the SGLang invocations bash makes when it runs `text`."""
    with tempfile.TemporaryDirectory() as d:
        fake = os.path.join(d, "bin")
        os.makedirs(fake)
        home = os.path.join(d, "home")
        os.makedirs(os.path.join(home, "ve_sgl_dev", "bin"))
        for p in [os.path.join(fake, n) for n in ("python", "python3", "sglang")] + [
                os.path.join(home, "ve_sgl_dev", "bin", "sglang")]:
            with open(p, "w") as f:
                f.write(FAKE.replace("/usr/bin/env python3", sys.executable, 1))
            os.chmod(p, os.stat(p).st_mode | stat.S_IEXEC)
        for n in ("docker", "srun"):
            p = os.path.join(fake, n)
            with open(p, "w") as f:
                f.write(WRAPPER.replace("/usr/bin/env python3", sys.executable, 1))
            os.chmod(p, os.stat(p).st_mode | stat.S_IEXEC)
        script = os.path.join(d, "cmd.sh")
        with open(script, "w", newline="") as f:
            # Byte for byte: bash keeps a CR in the last word of each line and `\`+CR
            # quotes the CR instead of continuing the line (a file saved on Windows).
            f.write(text)
        cap = os.path.join(d, "capture.jsonl")
        open(cap, "w").close()
        work = os.path.join(d, "work")
        os.makedirs(work)
        env = {"PATH": fake + ":/usr/bin:/bin", "HOME": home, "LAUNCH_CAPTURE": cap, "LANG": "C.UTF-8"}
        subprocess.run(["bash", "-c", '. "$0"; wait', script], cwd=work, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        calls = [json.loads(l) for l in open(cap) if l.strip()]
    out = []
    for c in calls:
        a = c["argv"]
        if c["exe"].startswith("python"):
            # python [opts] -m sglang.launch_server ... | python path/launch_server.py ...
            i = 0
            while i < len(a) and a[i].startswith("-") and a[i] not in ("-m",) and not a[i].startswith("-m"):
                i += 2 if a[i] in ("-W", "-X") else 1
            if i + 1 < len(a) and a[i] == "-m" and a[i + 1] == "sglang.launch_server":
                out.append({"serve": False, "argv": a[i + 2:]})
            elif i < len(a) and a[i].endswith("launch_server.py"):
                out.append({"serve": False, "argv": a[i + 1:]})
        elif c["exe"] == "sglang" and a[:1] == ["serve"]:
            out.append({"serve": True, "argv": a[1:]})
    return out


class Parsers:
    """SGLang's parser of each release (wheels and venv made as gen_flag_table.py makes them)."""

    def __init__(self, work):
        sys.path.insert(0, HERE)
        import gen_flag_table as gen

        self.gen = gen
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.py = gen.ensure_venv(work)

    def parse(self, release, cases):
        tree = self.gen.unpacked(self.work, release)
        inp = "\n".join(json.dumps(c) for c in cases) + "\n"
        r = subprocess.run([self.py, os.path.join(HERE, "sglang_argparse.py"), tree, "parse"],
                           input=inp, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"parser of {release} failed:\n{r.stderr[-2000:]}")
        return json.loads(r.stdout)


def verdicts(texts, parsers):
    """texts: list of (id, release, text) -> dict id -> verdict."""
    runs = {}
    by_release = {}
    for tid, rel, text in texts:
        calls = run_bash(text)
        runs[tid] = (rel, calls)
        if len(calls) == 1:
            by_release.setdefault(rel, []).append((tid, calls[0]))
    parsed = {}
    for rel, items in by_release.items():
        res = parsers.parse(rel, [c for _, c in items])
        for (tid, _), r in zip(items, res):
            parsed[tid] = r
    out = {}
    for tid, (rel, calls) in runs.items():
        v = {"release": rel, "launches": len(calls)}
        if len(calls) == 1:
            r = parsed[tid]
            v["argv"] = r["argv"]
            v["ok"] = r["ok"]
            if r["ok"]:
                v["values"] = {k: r["values"][k] for k in KEYS if k in r["values"]}
            else:
                v["error"] = r["error"]
        out[tid] = v
    return out


def corpus_texts():
    out = []
    for name in sorted(os.listdir(CORPUS)):
        if name.endswith(".sh"):
            text = open(os.path.join(CORPUS, name), newline="").read()
            out.append((name, header(text, "release"), text))
    return out


# ---------------------------------------------------------------- variants

def q(rng, w):
    """One word, quoted one of the ways bash reads back as the same word."""
    style = rng.randrange(4)
    if style == 0 or re.fullmatch(r"[A-Za-z0-9_./:=,@%+-]+", w) and style == 1:
        return shlex.quote(w)
    if style == 1:
        return "'" + w.replace("'", "'\\''") + "'"
    if style == 2:
        return '"' + re.sub(r'([\\"$`])', r"\\\1", w) + '"'
    return re.sub(r"([^A-Za-z0-9_./:=,@%+-])", r"\\\1", w)


def mutate_argv(rng, argv, flags):
    """Argparse-level changes: abbreviations, =, value changes that SGLang may refuse."""
    a = list(argv)
    opts = [i for i, w in enumerate(a) if w.startswith("--") and "=" not in w]
    if not opts:
        return a
    for _ in range(rng.randrange(1, 3)):
        i = rng.choice(opts)
        w = a[i]
        kind = rng.randrange(6)
        takes = i + 1 < len(a) and not a[i + 1].startswith("--")
        if kind <= 1:
            # A prefix: unambiguous or not, argparse decides.
            cut = rng.randrange(3, len(w) + 1)
            a[i] = w[:cut]
        elif kind == 2 and takes:
            a[i] = w + "=" + a[i + 1]
            del a[i + 1]
            opts = [j for j, x in enumerate(a) if x.startswith("--") and "=" not in x]
        elif kind == 3 and takes:
            a[i + 1] = rng.choice(["2.5", "x", "-1", "0", "1e3", "fp8", "tlru", "moonkake", "true",
                                   "32k", "1.5M", "2Mi", "1.5Ki", "1_000", " 64"])
        elif kind == 4 and not takes:
            a[i] = w + "=" + rng.choice(["true", "false", "1"])
        elif kind == 5:
            a.insert(i + 1, rng.choice(["--pp", "--tp", "--hicache", "--kv-cache-dtype", "--cuda-graph-bs", "--page"]))
            a.insert(i + 2, rng.choice(["2", "4", "fp8_e4m3"]))
        if not opts:
            break
        opts = [j for j, x in enumerate(a) if x.startswith("--") and "=" not in x]
        if not opts:
            break
    return a


def render(rng, argv, serve, release):
    """A shell text running SGLang with `argv`, in one of many recipe styles."""
    if serve or (rng.random() < 0.15 and release not in ("0.5.14", "0.5.15")):
        launcher = ["sglang", "serve"]
    else:
        launcher = rng.choice([["python3", "-m", "sglang.launch_server"],
                               ["python", "-m", "sglang.launch_server"],
                               ["python3", "-u", "-m", "sglang.launch_server"],
                               ["python3", "/sgl-workspace/sglang/python/sglang/launch_server.py"]])
    arith = ""
    if rng.random() < 0.15:
        # bash arithmetic ($((…)): integers, C precedence), exported so `bash -c` sees it
        arith = "TP_BASE=2\nexport GPUS=%s\n" % rng.choice(
            ["$((2*4))", "$(( 16 / 2 ))", "$((TP_BASE * 2))", "$((7 % 4 + 1))", "$(((1 + 1) << 1))",
             "$((-9 / 2 + 6))", "$((TP_BASE ** 2))"])
    quoted = [q(rng, w) for w in argv]
    if arith:
        for j in range(1, len(argv)):
            if argv[j - 1] in ("--tp", "--tp-size", "--dp", "--dp-size") and argv[j].isdigit():
                quoted[j] = rng.choice(["$GPUS", '"$GPUS"', "${GPUS}", "$((GPUS / 2))", "$(( $GPUS ))"])
                break
    words = launcher + quoted
    # Continuations between some words, comments on their own lines before.
    text = ""
    for j, w in enumerate(words):
        text += w
        if j + 1 < len(words):
            text += " \\\n    " if rng.random() < 0.3 else " "
    pre = ""
    if rng.random() < 0.4:
        pre += "# launch the server\n"
    if rng.random() < 0.4:
        pre += "export SGLANG_HICACHE_X=1\n"
    if rng.random() < 0.3:
        pre += "TP=%d\n" % rng.choice([1, 2, 8])
    wrap = rng.randrange(9)
    if wrap == 1:
        text = "nohup " + text + " > server.log 2>&1 &"
    elif wrap == 2:
        text = "CUDA_VISIBLE_DEVICES=0,1 " + text + " 2>&1 | tee out.log"
    elif wrap == 3:
        text = "env SGLANG_X=1 " + text + " >> x.log"
    elif wrap == 4:
        inner = text.replace("\\\n    ", "")
        text = 'bash -c "' + re.sub(r'([\\"$`])', r"\\\1", inner) + '"'
    elif wrap == 5:
        text = "nohup bash -c " + shlex.quote(text.replace("\\\n    ", "")) + " &"
    elif wrap == 6:
        text = "time " + text + "; echo done"
    elif wrap == 7:
        text = ("docker run --gpus all --shm-size 32g --ipc=host -e HF_TOKEN=x "
                "-v /models:/models lmsysorg/sglang:latest " + text)
    elif wrap == 8:
        text = "srun -N 1 --ntasks-per-node=1 --gpus-per-node 8 " + text + " &> srun.log"
    text = arith + pre + text + ("  # end\n" if rng.random() < 0.3 else "\n")
    if rng.random() < 0.2:
        text = text.replace("\n", "\r\n")
    return text


def variant_texts(base, n_per, seed):
    rng = random.Random(seed)
    out = []
    for name, v in base.items():
        if v.get("launches") != 1:
            continue
        for k in range(n_per):
            argv = v["argv"]
            serve = False
            if rng.random() < 0.6:
                argv = mutate_argv(rng, argv, None)
            text = render(rng, argv, serve, v["release"])
            out.append((f"{name}#{k}", v["release"], text))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["corpus", "variants"])
    ap.add_argument("--work", default="/tmp/hicache-sim-flags")
    ap.add_argument("--per", type=int, default=25, help="variants per corpus command")
    ap.add_argument("--seed", type=int, default=9)
    args = ap.parse_args()
    if shutil.which("bash") is None:
        print("launch_verdicts: skipped, no bash on this machine")
        return 0
    fresh = not os.path.exists(os.path.join(args.work, "venv"))
    if fresh:
        sys.path.insert(0, HERE)
        import gen_flag_table as gen

        if not gen.registry_reachable():
            print("launch_verdicts: skipped, PyPI (https://pypi.org) cannot be reached")
            return 0
    parsers = Parsers(args.work)
    if args.what == "corpus":
        out = verdicts(corpus_texts(), parsers)
        path = os.path.join(CORPUS, "verdicts.json")
    else:
        base = json.load(open(os.path.join(CORPUS, "verdicts.json")))
        texts = variant_texts(base, args.per, args.seed)
        v = verdicts(texts, parsers)
        out = {tid: {"text": text, **v[tid]} for tid, _, text in texts}
        path = os.path.join(CORPUS, "variants.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    ok = sum(1 for v in out.values() if v.get("ok"))
    print(f"wrote {path}: {len(out)} texts, {ok} accepted by SGLang")
    return 0


if __name__ == "__main__":
    sys.exit(main())
