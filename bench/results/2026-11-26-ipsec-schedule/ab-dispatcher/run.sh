#!/usr/bin/env bash
# A/B of the dispatcher change on one machine: old = ab/old/* over the tree, new = the tree.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/newfiles
(cd ab/old && find . -type f) | while read -r f; do mkdir -p "/tmp/newfiles/$(dirname "$f")"; cp "$f" "/tmp/newfiles/$f"; cp "ab/old/$f" "$f"; done
export TARGETS=tandem SKIP_TESTS=1 PARTS=none
scripts/device-run.sh /tmp/o-old ipsec-schedule > /tmp/b-old.log 2>&1 || { tail -20 /tmp/b-old.log; exit 1; }
cp build-device/tandem /tmp/tandem-old
(cd /tmp/newfiles && find . -type f) | while read -r f; do cp "/tmp/newfiles/$f" "$f"; done
scripts/device-run.sh /tmp/o-new ipsec-schedule > /tmp/b-new.log 2>&1 || { tail -20 /tmp/b-new.log; exit 1; }
ROOT=$PWD/.deps/root
export LD_LIBRARY_PATH="$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
T=build-device/tandem
cores="0-$(($(nproc) - 1))"
esp=(--app ipsec --sa-gen 1024 --sa-cipher aes-128-cbc --cores "$cores" --device cpu:9,gpu --workers 6 --ring-slots 32
     --gen count=1000000,flows=100000,dst=fib,seed=3 --sizes 64,1420)
pol="static:1,0;static:0,1;static:1,3;static:1,1;throughput"
for round in 1 2; do
  for v in old new; do
    bin=$T; [ $v = old ] && bin=/tmp/tandem-old
    echo "#### $v round $round"
    timeout 150 "$bin" bench schedule "${esp[@]}" --policies "$pol" --json "$OUT/ab_${v}_$round.json" 2>&1 | grep -E "^[0-9]+ +|^bench"
  done
done
echo "#### new, packed"
timeout 150 $T bench schedule "${esp[@]}" --frame-layout packed --policies "$pol" --json "$OUT/ab_new_packed.json" 2>&1 | grep -E "^[0-9]+ +|^bench"
