#!/usr/bin/env bash
# Writes tests/golden/host/<release>/*.txt: per-request device / host / storage hits of
# SGLang's own HiCache tiers, replayed on a CPU:
#   0.5.23          tests/sglang_diff/host/replay_host.py    (UnifiedRadixCache +
#                   HybridCacheController + HostKVCache, HiCacheFile for L3)
#   0.5.16, 0.5.18  tests/sglang_diff/host/replay_hiradix.py (HiRadixCache +
#                   HiCacheController + HostKVCache)
#
#   tests/sglang_diff/host/run.sh                     # every release (hours on 2 busy cores)
#   SKIP_EXISTING=1 tests/sglang_diff/host/run.sh     # only the files not written yet
#   RELEASES="0.5.18" JOBS=1 tests/sglang_diff/host/run.sh
#
# Needs Python 3.11, a C++ compiler and the OpenSSL headers (0.5.23's storage key hash
# is a C++ extension torch builds with ninja on first use), and PyPI. Virtual
# environments: 0.5.23 shares tests/sglang_diff/tree/run.sh's ($VENV, default
# /tmp/venv-tree: the wheel --no-deps, torch 2.14.1) and adds ninja; 0.5.16 and 0.5.18
# get /tmp/venv-hiradix-<release> with the torch each wheel pins (2.11.0, 2.13.0; the
# CUDA wheels run on a CPU, about 6 GB each). Prints one line and exits 0 when PyPI
# cannot be reached. Not run by CI (too heavy); `cargo test --test it host_golden`
# reads the files.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV=${VENV:-/tmp/venv-tree}
JOBS=${JOBS:-2}
RELEASES=${RELEASES:-"0.5.23 0.5.18 0.5.16"}
OUT=tests/golden/host
PY=python3.11; command -v $PY >/dev/null || PY=python3

if ! $PY - <<'PYEOF' 2>/dev/null
import urllib.request
urllib.request.urlopen("https://pypi.org/simple/sglang/", timeout=10)
PYEOF
then
  echo "skip: PyPI (https://pypi.org) cannot be reached; golden files left as committed"
  exit 0
fi

venv_of() { # release -> venv folder (installed on first use)
  local r=$1 v torch vision
  if [ "$r" = 0.5.23 ]; then
    if ! "$VENV/bin/python" -c "import sglang; assert sglang.__version__ == '0.5.23'" 2>/dev/null; then
      VENV=$VENV tests/sglang_diff/tree/run.sh --install-only >&2
    fi
    "$VENV/bin/python" -c "import ninja" 2>/dev/null || "$VENV/bin/pip" install -q ninja >&2
    echo "$VENV"
    return
  fi
  case $r in
    0.5.16) torch=2.11.0; vision=0.26.0 ;;
    0.5.18) torch=2.13.0; vision=0.28.0 ;;
    *) echo "no HiRadixCache driver for $r" >&2; exit 2 ;;
  esac
  v=/tmp/venv-hiradix-$r
  if ! "$v/bin/python" -c "import sglang, torch; assert sglang.__version__ == '$r' and torch.__version__.startswith('$torch')" 2>/dev/null; then
    $PY -m venv "$v"
    "$v/bin/pip" install -q torch==$torch numpy psutil >&2
    "$v/bin/pip" install -q --no-deps sglang==$r torchvision==$vision >&2
    "$v/bin/pip" install -q msgspec pydantic requests orjson pybase64 packaging pillow \
      starlette pyzmq tqdm IPython aiohttp dill sentencepiece gguf partial_json_parser \
      transformers==5.12.1 apache-tvm-ffi==0.1.11 compressed-tensors openai einops \
      xgrammar==0.2.1 >&2
  fi
  echo "$v"
}

# trace  block  page  L1 pages  requests (0 = all)
# L1 holds the largest request of the trace; the synthetic trace is cut to its first
# 1,000 requests (the full 3,993 take about 10 CPU-minutes a point under 0.5.23).
POINTS="
generated_agentic_bursty.jsonl 64 64 500 0
generated_chat_agentic_mix.jsonl 64 64 1000 0
synthetic_trace.jsonl 512 64 8000 1000
generated_agentic_bursty.jsonl 64 512 64 0
generated_chat_agentic_mix.jsonl 64 512 128 0
synthetic_trace.jsonl 512 512 1000 1000
"
jobs_file=$(mktemp)
for rel in $RELEASES; do
  venv=$(venv_of "$rel")
  mkdir -p "$OUT/$rel"
  if [ "$rel" = 0.5.23 ]; then driver=replay_host.py; else driver=replay_hiradix.py; fi
  add() { # trace block ps l1 limit ratio wp policy storage
    local name="${1%.jsonl}.p$3.l1_$4.l2x$6.$7.$8.$9.txt"
    if [ -n "${SKIP_EXISTING:-}" ] && [ -s "$OUT/$rel/$name" ]; then return; fi
    local extra=""
    if [ "$rel" = 0.5.23 ]; then extra="--storage $9"; fi
    echo "$venv/bin/python -W ignore tests/sglang_diff/host/$driver --trace traces/$1 --block $2 --page-size $3 --l1-pages $4 --limit $5 --l2-ratio $6 --write-policy $7 --policy $8 $extra --out $OUT/$rel/$name"
  }
  echo "$POINTS" | while read -r trace block ps l1 limit; do
    [ -z "$trace" ] && continue
    # HiRadixCache: the two generated traces only.
    if [ "$rel" != 0.5.23 ] && [ "$trace" = synthetic_trace.jsonl ]; then continue; fi
    for ratio in 1 2 4; do
      for wp in write_through write_through_selective write_back; do
        add "$trace" "$block" "$ps" "$l1" "$limit" "$ratio" "$wp" lru none
      done
    done
    # LFU at L2 = 2x L1, every write policy (64-token pages).
    if [ "$ps" = 64 ]; then
      for wp in write_through write_through_selective write_back; do
        add "$trace" "$block" "$ps" "$l1" "$limit" 2 "$wp" lfu none
      done
    fi
    # L3 through HiCacheFile at L2 = 1x L1 (0.5.23, the two generated traces).
    if [ "$rel" = 0.5.23 ] && [ "$trace" != synthetic_trace.jsonl ]; then
      for wp in write_through write_through_selective write_back; do
        add "$trace" "$block" "$ps" "$l1" "$limit" 1 "$wp" lru file
      done
    fi
  done
done > "$jobs_file"
export TORCH_EXTENSIONS_DIR="$VENV/torch_extensions"
xargs -P "$JOBS" -I CMD sh -c CMD < "$jobs_file" 2>&1 | grep -v -i "warn\|does not support timing\|stale PyTorch\|^\[rank0\]" || true
rm -f "$jobs_file"
find "$OUT" -name '*.txt' | wc -l
