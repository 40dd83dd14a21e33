#!/usr/bin/env bash
# On a GPU machine with no network: build, then run the named suites of tests, benchmarks and
# demos, each writing its logs and JSON results into OUTDIR.
#   usage: scripts/device-run.sh OUTDIR [SUITE...]   (no suite: full)
#          scripts/device-run.sh --list              (the suites, one line each)
# A suite is scripts/device/suites/NAME.sh, described by its "# description:" line; the prelude
# and the helpers they share are in scripts/device/common.sh. Suites run in the order named, after
# one build; an unknown name stops the run before the build.
# OUTDIR comes back with at most 8 files (the device tool returns no more); the suites that write a
# file per app run only as many as fit, and name the others.
# Knobs (environment):
#   TARGETS="tandem dpi_test"  build only these, to save device time;
#   SPECS="name:app flags|..."  what apps-cores and apps-lookup run instead of the registry's apps
#                               (`tandem apps --json`) and their extra tables ($URLS, $FIB expand);
#   WORKERS=1,2,4 REPS=3 PACKETS=8000000  apps-cores' worker counts, repetitions, packets per point;
#   REPS=N AB_ONLY=1  hardening: A/B repetitions (default 3), and no test run before them;
#   GROUPS_EXTRA="8 16"  dpi: the lockstep group sizes benched besides the default.
# Needs .deps/ from scripts/fetch-device-deps.sh (carried with the tree).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/device/common.sh

if [ "${1:-}" = --list ]; then
  suite_list
  exit 0
fi
OUT=${1:?usage: scripts/device-run.sh OUTDIR [SUITE...] | --list}
shift
[ $# -eq 0 ] && set -- full
for s in "$@"; do
  if ! [[ $s =~ ^[a-z0-9-]+$ && -f $SUITE_DIR/$s.sh ]]; then
    echo "unknown suite: $s; the suites:" >&2
    suite_list >&2
    exit 2
  fi
done
mkdir -p "$OUT"
device_setup || exit 1

failed=()
for s in "$@"; do
  [ $# -gt 1 ] && echo "#### suite $s"
  run_suite "$s" || failed+=("$s")
done
n=$(find "$OUT" -type f | wc -l)
[ "$n" -gt "$OUT_FILES_MAX" ] && echo "warning: $OUT holds $n files; the device tool returns only $OUT_FILES_MAX" >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "suites that could not run: ${failed[*]}" >&2
  exit 1
fi
exit 0
