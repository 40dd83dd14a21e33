#!/usr/bin/env bash
# Builds Tandem with AddressSanitizer and UndefinedBehaviorSanitizer (CPU paths; CUDA off) into
# ./build-asan and runs the whole test suite there: any sanitizer report fails the test that
# triggered it. CI runs this after scripts/test.sh. Installs nothing that scripts/test.sh does not.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# -O1 with line tables only: instrumented -O2 with full debug info compiles 2.5 times slower, and
# a report needs no more than file and line to point at the fault.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DTANDEM_SANITIZE=ON -DTANDEM_WITH_CUDA=OFF "$@" >/dev/null
ninja -C build-asan -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
cd build-asan
ctest --output-on-failure -j"$(nproc)" --timeout 2400
