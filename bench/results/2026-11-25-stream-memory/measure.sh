#!/usr/bin/env bash
# Peak RSS and wall time of tandem run, streamed and preloaded, on captures of 0.5 and 5 GB that it
# generates under $D (about 5.5 GB of disk; delete $D afterwards). Run from the repo root after
# scripts/build.sh. The figures of README.md were taken with D=/tmp/wtp_mem.
set -u
FIB=data/fib/iprbench_tier1_fulltable_prefixes.txt.gz
OUT=${OUT:-bench/results/2026-11-25-stream-memory}
T=build/tandem
D=${D:-/tmp/stream-memory}
mkdir -p $D
[ -f $D/big5g.pcap ] || $T gen --spec count=13400000,dst=fib,flows=100000,size=imix,seed=1 --fib $FIB --out $D/big5g.pcap
[ -f $D/half.pcap ] || $T gen --spec count=1340000,dst=fib,flows=100000,size=imix,seed=1 --fib $FIB --out $D/half.pcap
[ -f $D/tiny.pcap ] || $T gen --spec count=100,dst=fib,flows=100,size=imix,seed=1 --fib $FIB --out $D/tiny.pcap >/dev/null
one() {  # name, then the arguments after the common ones
  local name=$1; shift
  /usr/bin/time -v $T run --app ipv4 --fib $FIB --workers 1 "$@" --json $OUT/$name.json > $OUT/$name.txt 2> $D/$name.time
  echo "rc=$?" >> $OUT/$name.txt
  grep -E "Maximum resident|Elapsed \(wall" $D/$name.time | sed 's/^\t//' >> $OUT/$name.txt
  printf '%-22s %s | %s\n' "$name" "$(grep -o 'Maximum resident set size (kbytes): [0-9]*' $D/$name.time)" "$(grep -o 'Elapsed (wall clock) time (h:mm:ss or m:ss): .*' $D/$name.time)"
}
for rep in 1 2; do
  one tiny_streamed_r$rep     --pcap $D/tiny.pcap
  one half_streamed_r$rep     --pcap $D/half.pcap
  one big5g_streamed_r$rep    --pcap $D/big5g.pcap
  one half_preload_r$rep      --pcap $D/half.pcap --preload
done
one half_streamed_repeat2   --pcap $D/half.pcap --repeat 2
one big5g_streamed_repeat2  --pcap $D/big5g.pcap --repeat 2
one half_preload_repeat2    --pcap $D/half.pcap --preload --repeat 2
