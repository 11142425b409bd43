#!/usr/bin/env bash
# Writes tests/golden/swa_tree/*.txt: per-request device hit pages of SGLang 0.5.23's
# own UnifiedRadixCache with tree_components=(FULL, SWA) and its
# SWATokenToKVPoolAllocator (tests/sglang_diff/swa_tree/replay_swa_tree.py) on the
# bundled traces.
#
#   tests/sglang_diff/swa_tree/run.sh                 # the grid below (a few minutes on 2 cores)
#   JOBS=1 CORE=rust tests/sglang_diff/swa_tree/run.sh
#   SKIP_EXISTING=1 tests/sglang_diff/swa_tree/run.sh # only the files not written yet
#   CHUNK=8192 tests/sglang_diff/swa_tree/run.sh      # chunked prefill; names get .c8192
#   DECODE=1 tests/sglang_diff/swa_tree/run.sh        # requests decode their output_length
#                                                     # tokens; names get .decode
#   GRID=dsv4 tests/sglang_diff/swa_tree/run.sh       # DeepSeek-V4's tree (page 256, window
#   GRID=dsv4 DECODE=1 tests/sglang_diff/swa_tree/run.sh  # 128) into tests/golden/dsv4_tree
#                                                     # (tests/golden/dsv4_tree/README.md)
#   TRACES=generated_chat_agentic_mix tests/sglang_diff/swa_tree/run.sh  # one trace only
#
# The committed files (GRID=swa): the grid as is, with DECODE=1, with CHUNK=8192, with
# CHUNK=8192 DECODE=1, and with CHUNK=4096 [DECODE=1] TRACES=generated_chat_agentic_mix.
#
# The venv ($VENV, default /tmp/venv-tree) comes from
# tests/sglang_diff/tree/run.sh --install-only (sglang 0.5.23 --no-deps, torch 2.14.1).
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV=${VENV:-/tmp/venv-tree}
JOBS=${JOBS:-2}
CORE=${CORE:-python}
CHUNK=${CHUNK:-0}
DECODE=${DECODE:-0}
GRID_NAME=${GRID:-swa}
TRACES=${TRACES:-}

VENV="$VENV" tests/sglang_diff/tree/run.sh --install-only
if ! "$VENV/bin/python" -c "import sglang, torch" 2>/dev/null; then
  echo "skip: no sglang venv at $VENV (PyPI unreachable?); golden files left as committed"
  exit 0
fi

suffix=""
if [ "$CHUNK" != "0" ]; then suffix=".c$CHUNK"; fi
if [ "$DECODE" != "0" ]; then suffix="$suffix.decode"; fi
# trace block page window  (l1_pages/swa_pages)...
case "$GRID_NAME" in
  swa)
    OUT=tests/golden/swa_tree
    GRID="
generated_agentic_bursty.jsonl 64 64 128 1000/1000 2000/500 4000/1000 4000/4000
generated_chat_agentic_mix.jsonl 64 64 128 1000/1000 2000/500 4000/1000 4000/4000
"
    ;;
  dsv4)
    # DeepSeek-V4 (CUDA, default flags): page 256, the config's sliding_window 128,
    # full:SWA pages 10:1 as SGLang sizes them (swa_full_tokens_ratio 0.1), and one
    # pair of equal pools; the SWA pool holds the longest prompt (97 pages) + 1.
    OUT=tests/golden/dsv4_tree
    GRID="
generated_agentic_bursty.jsonl 64 256 128 1000/100 1500/150 2000/200 150/150
generated_chat_agentic_mix.jsonl 64 256 128 1000/100 2000/200 4000/400 500/500
"
    ;;
  *) echo "GRID must be swa or dsv4, not $GRID_NAME" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
jobs_file=$(mktemp)
echo "$GRID" | while read -r trace block ps win pairs; do
  [ -z "$trace" ] && continue
  if [ -n "$TRACES" ] && [[ " $TRACES " != *" ${trace%.jsonl} "* ]]; then continue; fi
  for pair in $pairs; do
    l1=${pair%/*}; swa=${pair#*/}
    name="${trace%.jsonl}.p${ps}.w${win}.l1_${l1}.swa_${swa}${suffix}.txt"
    if [ -n "${SKIP_EXISTING:-}" ] && [ -s "$OUT/$name" ]; then continue; fi
    echo "--trace traces/$trace --block $block --page-size $ps --window $win --l1-pages $l1 --swa-pages $swa --policy lru --chunk $CHUNK --decode $DECODE --core $CORE --out $OUT/$name"
  done
done > "$jobs_file"
xargs -P "$JOBS" -L 1 "$VENV/bin/python" -W ignore tests/sglang_diff/swa_tree/replay_swa_tree.py < "$jobs_file" 2>&1 | grep -v -i "warn" || true
rm -f "$jobs_file"
ls "$OUT" | wc -l
