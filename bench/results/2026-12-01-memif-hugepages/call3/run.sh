#!/usr/bin/env bash
# memif at 64 B, one queue, third call: bench io now runs Tandem's worker on testpmd's forwarding
# lcore (the vCPUs are not equally fast under load). Six pairs on 2 MiB hugepages, then four on
# 4 KiB pages, the CPU path. The machine's hugepage reserve is set for the call and put back.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
orig=$(cat /proc/sys/vm/nr_hugepages)
echo "user $(id -u); nr_hugepages before: $orig"
echo 2048 > /proc/sys/vm/nr_hugepages 2>/dev/null || echo "cannot set nr_hugepages"
grep -E "HugePages_(Total|Free)|Hugepagesize" /proc/meminfo | tee "$OUT/hugepages.txt"
bio() {  # NAME REPEAT ARGS...
  local name=$1 rep=$2
  shift 2
  echo "== $name: $*" | tee -a "$OUT/io.log"
  timeout 240 "$T" bench io --fib "$FIB" --backends memif --sizes 64 --queues 1 --cores 1-15 --seconds 3 --repeat "$rep" \
    "$@" --json "$OUT/$name.json" > "/tmp/$name.log" 2>&1
  echo "exit $?" >> "/tmp/$name.log"
  grep -E "^memif|p50|EAL memory|hugepages|copied|exit|error" "/tmp/$name.log" | tee -a "$OUT/io.log"
}
bio io_huge_cpu_6 6 --hugepages --tandem-args "--device cpu"
bio io_4k_cpu_4 4 --tandem-args "--device cpu"
echo "$orig" > /proc/sys/vm/nr_hugepages 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
