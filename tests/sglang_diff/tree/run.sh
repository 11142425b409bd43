#!/usr/bin/env bash
# Writes tests/golden/tree/*.txt: per-request device hit pages of SGLang 0.5.23's own
# UnifiedRadixCache (tests/sglang_diff/tree/replay_tree.py) on the bundled traces.
#
#   tests/sglang_diff/tree/run.sh            # the whole grid (about 40 min on 2 cores)
#   JOBS=1 CORE=rust tests/sglang_diff/tree/run.sh
#   SKIP_EXISTING=1 tests/sglang_diff/tree/run.sh   # only the files not written yet
#   tests/sglang_diff/tree/run.sh --install-only    # the venv only
#
# Needs Python 3.11 and PyPI. Installs into $VENV (default /tmp/venv-tree): the
# sglang 0.5.23 wheel (--no-deps), torch 2.14.1 (the version the wheel pins; the
# default CUDA wheel runs on a CPU, about 6 GB) and the pure-Python packages the
# imports need. Prints one line and exits 0 when PyPI cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV=${VENV:-/tmp/venv-tree}
JOBS=${JOBS:-2}
CORE=${CORE:-python}
OUT=tests/golden/tree
PY=python3.11; command -v $PY >/dev/null || PY=python3

if ! $PY - <<'PYEOF' 2>/dev/null
import urllib.request
urllib.request.urlopen("https://pypi.org/simple/sglang/", timeout=10)
PYEOF
then
  echo "skip: PyPI (https://pypi.org) cannot be reached; golden files left as committed"
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then $PY -m venv "$VENV"; fi
if ! "$VENV/bin/python" -c "import sglang, torch; assert torch.__version__.startswith('2.14.1')" 2>/dev/null; then
  "$VENV/bin/pip" install -q torch==2.14.1 numpy psutil
  "$VENV/bin/pip" install -q --no-deps sglang==0.5.23
  "$VENV/bin/pip" install -q --no-deps torchvision==0.29.2
  "$VENV/bin/pip" install -q msgspec pydantic requests orjson pybase64 packaging pillow \
    starlette pyzmq tqdm IPython aiohttp apache-tvm-ffi==0.1.11 transformers==5.19.0 \
    dill sentencepiece==0.2.1 compressed-tensors==0.18.0 gguf openai==2.8.0 partial_json_parser
fi
# `--install-only`: the venv for tests/sglang_diff/host/run.sh.
if [ "${1:-}" = "--install-only" ]; then exit 0; fi

mkdir -p "$OUT"
# trace block  page  capacities (pages)
# Shortest first; the synthetic trace at 64-token pages (about 5 CPU-minutes a file) last.
GRID="
generated_agentic_bursty.jsonl 64 64 250 500 1000 2000
generated_agentic_bursty.jsonl 64 512 32 64 128 256
generated_chat_agentic_mix.jsonl 64 64 500 1000 2000 4000
generated_chat_agentic_mix.jsonl 64 512 64 128 256 512
synthetic_trace.jsonl 512 512 250 1000 4000 6000
synthetic_trace.jsonl 512 64 2000 8000 32000 48000
"
jobs_file=$(mktemp)
echo "$GRID" | while read -r trace block ps c1 c2 c3 c4; do
  [ -z "$trace" ] && continue
  for cap in $c1 $c2 $c3 $c4; do
    for pol in lru lfu; do
      for pat in sim scheduler; do
        name="${trace%.jsonl}.p${ps}.l1_${cap}.${pol}.${pat}.txt"
        if [ -n "${SKIP_EXISTING:-}" ] && [ -s "$OUT/$name" ]; then continue; fi
        echo "--trace traces/$trace --block $block --page-size $ps --l1-pages $cap --policy $pol --pattern $pat --evict shortfall --core $CORE --out $OUT/$name"
      done
    done
  done
done > "$jobs_file"
xargs -P "$JOBS" -L 1 "$VENV/bin/python" -W ignore tests/sglang_diff/tree/replay_tree.py < "$jobs_file" 2>&1 | grep -v -i "warn" || true
rm -f "$jobs_file"
ls "$OUT" | wc -l
