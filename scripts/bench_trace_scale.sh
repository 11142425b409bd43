#!/usr/bin/env bash
# Trace-scale figures, reproducibly: builds the ×10 and ×50 Mooncake conversation traces
# from traces/conversation_trace.jsonl.gz, converts them to the binary form, and times
# (GNU time: wall, user, peak RSS):
#   - untimed replay from JSONL and from the binary form (×10, ×50);
#   - the policy simulator on the conversation trace and on one 10,000-page request;
#   - a 20-point sweep (GB300 quickstart scenario, ×50 trace) from JSONL and binary;
#   - the 200-point sweep (same scenario, host-memory fraction ×10, ratio auto/1.0,
#     10 seeds; written to $W/sweep200.yaml) from JSONL and binary, and with one replay
#     per point (HICACHE_SIM_NO_REPLAY_MEMO=1) to show what the replay memo saves.
# With BEFORE=/path/to/old/hicache-sim it runs the same commands with that binary too
# and checks that every output is byte-identical. The baseline is the
# binary built from 05e0111^1 (one parse and one replay per point).
# The machine may be shared: compare user (CPU) seconds as well as wall.
#
# usage: scripts/bench_trace_scale.sh [WORKDIR]   (default: target/trace-scale)
# Needs: cargo, python3 (standard library only), GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-target/trace-scale}
mkdir -p "$W"
if [ ! -x /usr/bin/time ]; then echo "skip: /usr/bin/time (GNU time) not installed"; exit 0; fi
cargo build --release --quiet
A=${CARGO_TARGET_DIR:-target}/release/hicache-sim
for k in 1 10 50; do
  [ -s "$W/x$k.jsonl" ] || python3 scripts/make_scaled_trace.py traces/conversation_trace.jsonl.gz "$k" "$W/x$k.jsonl"
  [ -s "$W/x$k.bin" ] || "$A" trace convert "$W/x$k.jsonl" -o "$W/x$k.bin"
done
python3 - "$W/long.jsonl" <<'PY'
import json, sys
ids = list(range(10000))
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"timestamp": 0, "input_length": 512 * 10000, "output_length": 1, "hash_ids": ids}) + "\n")
    f.write(json.dumps({"timestamp": 1, "input_length": 512 * 5000, "output_length": 1, "hash_ids": ids[:5000]}) + "\n")
PY
sed -e "s#trace: ../traces/synthetic_trace.jsonl.*#trace: $(realpath "$W")/x50.jsonl#" -e 's/^runs: 200.*/runs: 1/' scenarios/quickstart.yaml \
  | python3 -c '
import sys
t = sys.stdin.read()
t = t[: t.index("sweep:")] + "sweep:\n  axes:\n    server.hicache_host_memory_fraction: [0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]\n  seeds: 2\n"
print(t)' > "$W/sweep20.yaml"
sed "s#x50.jsonl#x50.bin#" "$W/sweep20.yaml" > "$W/sweep20b.yaml"
python3 - "$W/sweep20.yaml" "$W/sweep200.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read()
t = t[: t.index("sweep:")] + (
    "sweep:\n  axes:\n"
    "    server.hicache_host_memory_fraction: [0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]\n"
    "    server.hicache_ratio: [null, 1.0]\n"
    "  seeds: 10\n")
open(sys.argv[2], "w").write(t)
PY
sed "s#x50.jsonl#x50.bin#" "$W/sweep200.yaml" > "$W/sweep200b.yaml"

R="--page-size 512 --l1-pages 20000 --l2-pages 60000 --timing off"
P="--engine policy-simulator --l1-pages 6000 --l2-pages 12000"
t() { # name, binary, args...
  local name=$1 bin=$2; shift 2
  /usr/bin/time -f "%e %U %M" -o "$W/time" "$bin" "$@" > "$W/$name.out" 2>/dev/null
  read -r wall user rss < "$W/time"
  awk -v n="$name" -v w="$wall" -v u="$user" -v r="$rss" 'BEGIN { printf "%-34s wall %6.2f s  user %6.2f s  peak RSS %7.1f MB\n", n, w, u, r / 1024 }'
}
run_all() { # tag, binary
  local g=$1 b=$2
  for k in 10 50; do
    t "$g.replay.x$k.jsonl" "$b" replay --trace "$W/x$k.jsonl" $R
    [ "$g" = before ] || t "$g.replay.x$k.bin" "$b" replay --trace "$W/x$k.bin" $R
  done
  t "$g.policy.x1" "$b" replay --trace "$W/x1.jsonl" $P
  t "$g.policy.long" "$b" replay --trace "$W/long.jsonl" --engine policy-simulator --l1-pages 4000 --l2-pages 20000
  rm -rf "$W/$g.sweep"; t "$g.sweep20.jsonl" "$b" sweep "$W/sweep20.yaml" --out "$W/$g.sweep" --quiet --jobs 2
  cp "$W/$g.sweep/results.csv" "$W/$g.sweep20.csv"
  if [ "$g" != before ]; then
    rm -rf "$W/$g.sweepb"; t "$g.sweep20.bin" "$b" sweep "$W/sweep20b.yaml" --out "$W/$g.sweepb" --quiet --jobs 2
    cmp "$W/$g.sweep20.csv" "$W/$g.sweepb/results.csv" && echo "sweep CSV from binary: byte-identical"
  fi
  rm -rf "$W/$g.s200"; t "$g.sweep200.jsonl" "$b" sweep "$W/sweep200.yaml" --out "$W/$g.s200" --quiet --jobs 2
  cp "$W/$g.s200/results.csv" "$W/$g.sweep200.csv"
  if [ "$g" != before ]; then
    rm -rf "$W/$g.s200b"; t "$g.sweep200.bin" "$b" sweep "$W/sweep200b.yaml" --out "$W/$g.s200b" --quiet --jobs 2
    cmp "$W/$g.sweep200.csv" "$W/$g.s200b/results.csv" && echo "sweep200 CSV from binary: byte-identical"
    rm -rf "$W/$g.s200n"
    HICACHE_SIM_NO_REPLAY_MEMO=1 t "$g.sweep200.bin.no-memo" "$b" sweep "$W/sweep200b.yaml" --out "$W/$g.s200n" --quiet --jobs 2
    cmp "$W/$g.sweep200.csv" "$W/$g.s200n/results.csv" && echo "sweep200 CSV without the replay memo: byte-identical"
  fi
}
run_all after "$A"
echo "page references (whole 512-token pages): $(python3 -c "
import json
print(sum(json.loads(l)['input_length'] // 512 for l in open('$W/x50.jsonl')))") in x50"
if [ -n "${BEFORE:-}" ]; then
  run_all before "$BEFORE"
  for f in replay.x10.jsonl replay.x50.jsonl policy.x1 policy.long; do
    cmp -s "$W/after.$f.out" "$W/before.$f.out" && echo "$f: output byte-identical before/after" || echo "$f: OUTPUT DIFFERS"
  done
  cmp "$W/after.sweep20.csv" "$W/before.sweep20.csv" && echo "sweep20 CSV byte-identical before/after"
  cmp "$W/after.sweep200.csv" "$W/before.sweep200.csv" && echo "sweep200 CSV byte-identical before/after"
fi
