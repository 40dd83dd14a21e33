#!/usr/bin/env bash
# memif at 64 B, one queue, hugepages, both link modes: Tandem without (`before`) and with
# (`after`) the burst's frame prefetch on receipt (prefetch.patch), each binary's bench io run in
# turn, every run with testpmd io beside it and Tandem's stages timed. The hugepage reserve is set
# for the call and put back.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
here=bench/results/2026-12-01-memif-zero-copy/call2
export TARGETS="tandem"
. scripts/device/common.sh
# One hunk: its old and new text from the patch (without `patch`, which the machine may lack).
apply() {  # new|old: the text of io/dpdk_port.cc to leave
  python3 - "$1" "$here/prefetch.patch" <<'PY' || exit 1
import sys
want, patch = sys.argv[1], open(sys.argv[2]).read().split("\n")
body = [l for l in patch[patch.index(next(l for l in patch if l.startswith("@@"))) + 1:] if l != ""]
old = "\n".join(l[1:] for l in body if not l.startswith("+")) + "\n"
new = "\n".join(l[1:] for l in body if not l.startswith("-")) + "\n"
src = open("io/dpdk_port.cc").read()
frm, to = (old, new) if want == "new" else (new, old)
if to in src and frm not in src: sys.exit(0)
assert src.count(frm) == 1, "hunk not found"
open("io/dpdk_port.cc", "w").write(src.replace(frm, to))
PY
}
apply old
device_setup || exit 1
cp build-device/tandem /tmp/tandem_before
apply new
device_setup || exit 1
cp build-device/tandem /tmp/tandem_after
echo "built in $(( $(date +%s) - t0 )) s"
orig=$(cat /proc/sys/vm/nr_hugepages)
echo 2048 > /proc/sys/vm/nr_hugepages 2>/dev/null || echo "cannot set nr_hugepages"
io() {  # binary, name, then bench io's flags
  local bin=$1 name=$2
  shift 2
  timeout 150 "/tmp/tandem_$bin" bench io --fib "$FIB" --backends memif --sizes 64 --queues 1 --cores 1-15 --seconds 3 \
    --hugepages --repeat 2 "$@" --tandem-args "--device cpu --stage-times" --json "/tmp/${name}_${bin}_r$round.json" > "/tmp/$name.log" 2>&1
  echo "exit $?" >> "/tmp/$name.log"
  { echo "== $bin $name: $*"; grep -E "^memif|stages|exit|rror" "/tmp/$name.log"; } | tee -a "$OUT/ab.log"
}
for round in 1 2; do
  io before zc --memif-zero-copy
  io after zc --memif-zero-copy
  io after copy
  io before copy
done
tar czf "$OUT/ab_json.tgz" -C /tmp $(cd /tmp && ls zc_*.json copy_*.json)
echo "$orig" > /proc/sys/vm/nr_hugepages 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
