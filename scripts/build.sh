#!/usr/bin/env bash
# Configures and builds Tandem in ./build (Release). CUDA paths are built when nvcc is found.
# Extra arguments go to cmake, e.g. scripts/build.sh -DTANDEM_WITH_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
ninja -C build -j"$(nproc)"
