#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test. GPU tests are reported as skipped where no
# GPU is usable; scripts/device-run.sh runs them on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 1200
