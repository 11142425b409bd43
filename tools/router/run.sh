#!/usr/bin/env bash
# Differential test of the router replay against the router's own code: runs
# tools/router/router_golden.py --check (the real sglang-router 0.3.2 from PyPI behind
# four mock workers, the simulator's event sequence) and fails naming the first request
# whose engine differs from tests/golden/router/. Called by .ci/run after the Rust tests
# (which check the simulator against the same goldens). Without PyPI it says NOT RUN
# and exits 0 by hand, 1 under CI (ROUTER_DIFF_ALLOW_SKIP=1 accepts it, loudly).
#
#   tools/router/run.sh                               # venv in ~/.cache/hicache-sim
#   ROUTER_PYTHON=/path/venv/bin/python tools/router/run.sh   # an existing install
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python3}"
VENV="${ROUTER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hicache-sim/venv-sglang-router-0.3.2}"
ROUTER_PY="${ROUTER_PYTHON:-$VENV/bin/python}"

has_router() {
    "$1" -c "import importlib.metadata as m, sys; sys.exit(m.version('sglang-router') != '0.3.2')" 2>/dev/null
}

if ! has_router "$ROUTER_PY"; then
    # Can PyPI be reached? (pip's own client: the package's version list only.)
    if ! "$PY" -m pip index versions sglang-router --disable-pip-version-check --retries 1 --timeout 15 >/dev/null 2>&1; then
        echo "router_diff: NOT RUN: PyPI cannot be reached (the test installs sglang-router==0.3.2 from it)" >&2
        if [ -n "${CI:-}" ] && [ -z "${ROUTER_DIFF_ALLOW_SKIP:-}" ]; then
            echo "router_diff: failing: CI is set and the differential test against the router's code did not run" >&2
            exit 1
        fi
        exit 0
    fi
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "sglang-router==0.3.2"
    ROUTER_PY="$VENV/bin/python"
fi

TARGET="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet
exec "$PY" tools/router/router_golden.py --python "$ROUTER_PY" \
    --bin "$TARGET/release/hicache-sim" --check
