#!/usr/bin/env bash
# Writes tests/golden/dynamo_kv/selection.jsonl: dynamo-kv-router 1.6.1's own default
# worker selection (crates.io, built here as an ordinary dependency of this small
# program, outside the simulator's build) on 400 generated cases.
# tests/it/router_dynamo.rs checks the simulator's dynamo_kv costs and choices against it.
#
#   bash tests/dynamo_diff/run.sh          # rewrite the golden file
#   bash tests/dynamo_diff/run.sh --check  # fail if it would change
#   DYNAMO_DIFF_TARGET=DIR                # build in DIR (default target/dynamo_diff)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=tests/golden/dynamo_kv/selection.jsonl
TARGET="${DYNAMO_DIFF_TARGET:-${CARGO_TARGET_DIR:-target}/dynamo_diff}"
mkdir -p "$(dirname "$OUT")"
TMP="$(mktemp)"
trap 'rm -f "$TMP"' EXIT
CARGO_TARGET_DIR="$TARGET" cargo run --release --quiet \
    --manifest-path tests/dynamo_diff/Cargo.toml -- 400 >"$TMP"
if [ "${1:-}" = "--check" ]; then
    diff -q "$OUT" "$TMP" >/dev/null || { echo "dynamo_diff: $OUT differs from Dynamo's selection" >&2; exit 1; }
    echo "dynamo_diff: $(wc -l <"$OUT") cases equal"
else
    mv "$TMP" "$OUT"
    trap - EXIT
    echo "dynamo_diff: wrote $(wc -l <"$OUT") cases to $OUT"
fi
