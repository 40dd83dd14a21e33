#!/usr/bin/env bash
# Plots the JSON reports of the benchmarks (tandem bench gpu-offload, gpu-load, gpu-stream,
# gpu-router, cores, anchors) as PNGs, one per report: OUTDIR/<report name>.png.
#   usage: scripts/plots.sh OUTDIR RESULT_JSON...
#   e.g.   scripts/plots.sh build/plots bench/results/2026-11-21-h200/offload/bench_gpu_offload.json
# Installs matplotlib for this user (pip --user, no sudo) when python3 cannot import it.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: scripts/plots.sh OUTDIR RESULT_JSON..." >&2
  exit 2
fi
OUTDIR=$1
shift
TOOL="$(cd "$(dirname "$0")/.." && pwd)/tools/plots/plot_gpu.py"
PY=${PYTHON:-python3}
if ! "$PY" -c "import matplotlib" 2>/dev/null; then
  echo "matplotlib is missing: installing it for this user with pip" >&2
  "$PY" -m pip install --user matplotlib ||
    "$PY" -m pip install --break-system-packages --user matplotlib ||
    pip install --break-system-packages --user matplotlib || {
      echo "could not install matplotlib: install it (e.g. apt-get install python3-matplotlib) and rerun" >&2
      exit 1
    }
  "$PY" -c "import matplotlib" || { echo "matplotlib still cannot be imported by $PY" >&2; exit 1; }
fi
exec "$PY" "$TOOL" "$@" --out "$OUTDIR"
