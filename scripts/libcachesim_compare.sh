#!/usr/bin/env bash
# hicache-sim's plain-page LRU (`--config lru_mode=plain_page`) next to libCacheSim's
# LRU, same page references, same capacities: hit counts must be equal; requests/s of
# each. Builds the ×K Mooncake conversation trace like scripts/bench_trace_scale.sh.
#
# usage: scripts/libcachesim_compare.sh [K] [WORKDIR] [CAPACITY...]
#        (defaults: K=50, target/libcachesim, capacities 1000 10000 20000 60000 200000)
# Needs: cargo, python3, and libCacheSim's Python bindings: pip install libcachesim;
# about 1 GB of disk at K=50 (the flattened trace in both forms, kept for re-runs).
set -euo pipefail
cd "$(dirname "$0")/.."
K=${1:-50}
W=${2:-target/libcachesim}
shift $(( $# < 2 ? $# : 2 ))
CAPS=${*:-1000 10000 20000 60000 200000}
python3 -c 'import libcachesim' 2>/dev/null || { echo "skip: pip install libcachesim first"; exit 0; }
mkdir -p "$W/x$K"
cargo build --release --quiet
A=${CARGO_TARGET_DIR:-target}/release/hicache-sim
[ -s "$W/x$K.jsonl" ] || python3 scripts/make_scaled_trace.py traces/conversation_trace.jsonl.gz "$K" "$W/x$K.jsonl"
# shellcheck disable=SC2086
python3 scripts/libcachesim_compare.py "$A" "$W/x$K.jsonl" "$W/x$K" $CAPS
