#!/usr/bin/env bash
# Execute every notebook in this folder headless against a sweep results CSV.
#
#   notebooks/run.sh [RESULTS.csv]
#
# The CSV comes from the argument, else $SWEEP_CSV, else notebooks/sample/results.csv.
# Creates notebooks/.venv (or $NOTEBOOK_VENV) from requirements.txt with pip from PyPI
# when missing or when requirements.txt changed; writes the executed notebooks and their
# figures to notebooks/out (or $NOTEBOOK_OUT). Exits non-zero if any cell fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
csv="${1:-${SWEEP_CSV:-$here/sample/results.csv}}"
if [ ! -f "$csv" ]; then
  echo "run.sh: no such CSV: $csv" >&2
  exit 2
fi
csv="$(cd "$(dirname "$csv")" && pwd)/$(basename "$csv")"
venv="${NOTEBOOK_VENV:-$here/.venv}"
out="${NOTEBOOK_OUT:-$here/out}"

if [ ! -x "$venv/bin/jupyter" ] || ! cmp -s "$here/requirements.txt" "$venv/.requirements.txt"; then
  echo "run.sh: installing the notebook environment into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/.requirements.txt"
fi

# The default output folder is ours: start it afresh so no stale figure survives.
[ -z "${NOTEBOOK_OUT:-}" ] && rm -rf "$out"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export SWEEP_CSV="$csv" NOTEBOOK_OUT="$out" MPLBACKEND=Agg
status=0
for nb in "$here"/*.ipynb; do
  echo "run.sh: executing $(basename "$nb") on $csv" >&2
  if ! (cd "$here" && "$venv/bin/jupyter" nbconvert --to notebook --execute \
        --ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 \
        --output-dir "$out" "$nb"); then
    echo "run.sh: FAILED: $(basename "$nb")" >&2
    status=1
  fi
done
exit $status
