#!/usr/bin/env bash
# Writes tests/golden/host/*.txt: per-request device / host / storage hits of SGLang
# 0.5.23's own HiCache tiers (UnifiedRadixCache + HybridCacheController + HostKVCache,
# HiCacheFile for L3), replayed on a CPU by tests/sglang_diff/host/replay_host.py.
#
#   tests/sglang_diff/host/run.sh                     # the whole grid (about 1 h on 2 cores)
#   SKIP_EXISTING=1 tests/sglang_diff/host/run.sh     # only the files not written yet
#   JOBS=1 tests/sglang_diff/host/run.sh
#
# Needs Python 3.11, a C++ compiler and the OpenSSL headers (SGLang's storage key
# hash is a C++ extension torch builds with ninja on first use), and PyPI. Shares
# the venv of tests/sglang_diff/tree/run.sh ($VENV, default /tmp/venv-tree: the
# sglang 0.5.23 wheel --no-deps, torch 2.14.1) and adds ninja. Prints one line and
# exits 0 when PyPI cannot be reached. Not run by CI (too heavy); `cargo test --test
# it host_golden` reads the files.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV=${VENV:-/tmp/venv-tree}
JOBS=${JOBS:-2}
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

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import sglang, torch; assert sglang.__version__ == '0.5.23'" 2>/dev/null; then
  VENV=$VENV tests/sglang_diff/tree/run.sh --install-only
fi
"$VENV/bin/python" -c "import ninja" 2>/dev/null || "$VENV/bin/pip" install -q ninja
export TORCH_EXTENSIONS_DIR="$VENV/torch_extensions"

mkdir -p "$OUT"
# trace  block  page  L1 pages  requests (0 = all)
# L1 holds the largest request of the trace; the synthetic trace is cut to its first
# 1,000 requests (the full 3,993 take about 10 CPU-minutes a point).
POINTS="
generated_agentic_bursty.jsonl 64 64 500 0
generated_chat_agentic_mix.jsonl 64 64 1000 0
synthetic_trace.jsonl 512 64 8000 1000
generated_agentic_bursty.jsonl 64 512 64 0
generated_chat_agentic_mix.jsonl 64 512 128 0
synthetic_trace.jsonl 512 512 1000 1000
"
jobs_file=$(mktemp)
add() { # trace block ps l1 limit ratio wp policy storage
  local name="${1%.jsonl}.p$3.l1_$4.l2x$6.$7.$8.$9.txt"
  if [ -n "${SKIP_EXISTING:-}" ] && [ -s "$OUT/$name" ]; then return; fi
  echo "--trace traces/$1 --block $2 --page-size $3 --l1-pages $4 --limit $5 --l2-ratio $6 --write-policy $7 --policy $8 --storage $9 --out $OUT/$name"
}
echo "$POINTS" | while read -r trace block ps l1 limit; do
  [ -z "$trace" ] && continue
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
  # L3 through HiCacheFile at L2 = 1x L1 (the two generated traces).
  if [ "$trace" != synthetic_trace.jsonl ]; then
    for wp in write_through write_through_selective write_back; do
      add "$trace" "$block" "$ps" "$l1" "$limit" 1 "$wp" lru file
    done
  fi
done > "$jobs_file"
xargs -P "$JOBS" -L 1 "$VENV/bin/python" -W ignore tests/sglang_diff/host/replay_host.py < "$jobs_file" 2>&1 | grep -v -i "warn\|does not support timing\|stale PyTorch" || true
rm -f "$jobs_file"
ls "$OUT"/*.txt | wc -l
