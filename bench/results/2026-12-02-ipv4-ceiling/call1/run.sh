#!/usr/bin/env bash
# Issue 21 item 6: how close the IPv4 lookup and rte_fib come to one core's rate of random reads of
# a table the size of DIR-24-8's tbl24 (64 MiB of 64-byte lines, in the L3). The memory probe runs
# before and after the lookups (the VM's two speed levels), and once at 16 MiB.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
mem() {  # mem MIB NAME
  timeout 200 "$T" bench memory --mib "$1" --cores 2 --reps 3 --accesses 134217728 --json "$OUT/$2.json" > "/tmp/$2.log" 2>&1
  echo "exit $?" >> "/tmp/$2.log"; echo "== $2"; cat "/tmp/$2.log"
}
{
  mem 64 memory_64mib_before
  echo "== anchors ipv4"
  timeout 300 "$T" bench anchors --fib "$FIB" --only ipv4 --core 2 --reps 5 --json "$OUT/anchors_ipv4.json" 2>&1
  echo "exit $?"
  mem 64 memory_64mib_after
  mem 16 memory_16mib
  echo "total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$OUT/log.txt"
