#!/usr/bin/env bash
# memif at 64 B, one queue, every EAL on 2 MiB hugepages: the forwarder as the zero-copy client of
# both links (bench io --memif-zero-copy) and in copy mode, Tandem's router and testpmd io taking
# turns in each; then zero copy with Tandem's stages timed. The hugepage reserve is set for the call
# and put back.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
orig=$(cat /proc/sys/vm/nr_hugepages)
echo 2048 > /proc/sys/vm/nr_hugepages 2>/dev/null || echo "cannot set nr_hugepages"
grep -E "HugePages_(Total|Free)|Hugepagesize" /proc/meminfo > "$OUT/hugepages.txt"
io() {  # name, then bench io's flags
  local name=$1
  shift
  timeout 220 "$T" bench io --fib "$FIB" --backends memif --sizes 64 --queues 1 --cores 1-15 --seconds 3 --hugepages \
    "$@" --json "$OUT/$name.json" > "/tmp/$name.log" 2>&1
  echo "exit $?" >> "/tmp/$name.log"
  { echo "== $name: $*"; grep -E "^memif|p50|stages|EAL memory|copied|exit|rror" "/tmp/$name.log"; } | tee -a "$OUT/io.log"
}
io zero_copy --memif-zero-copy --repeat 4 --tandem-args "--device cpu"
io copy --repeat 4 --tandem-args "--device cpu"
io zero_copy_stages --memif-zero-copy --repeat 2 --tandem-args "--device cpu --stage-times"
echo "$orig" > /proc/sys/vm/nr_hugepages 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
