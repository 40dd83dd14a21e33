#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs the IPv4 router on the full BGP table
# (901,899 prefixes) with real captures and generated traffic, on the GPU when one is usable,
# otherwise on the CPU. Every lookup decision is checked against the reference trie (--verify).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
FIB=data/fib/iprbench_tier1_fulltable_prefixes.txt.gz
mkdir -p build/demo
for cap in example many-protocols tls2; do
  echo; echo "== tandem run: real capture data/pcap/$cap.pcap =="
  ./build/tandem run --app ipv4 --fib "$FIB" --pcap "data/pcap/$cap.pcap" --device auto --verify \
    --out "build/demo/$cap-forwarded.pcap"
done
echo; echo "== tandem run: 4M generated 64 B packets, destinations sampled from the table, Zipf flows =="
./build/tandem run --app ipv4 --fib "$FIB" --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 \
  --device auto --verify
echo; echo "Forwarded captures are in build/demo/. Benchmarks: ./build/tandem bench ipv4 --fib $FIB"
