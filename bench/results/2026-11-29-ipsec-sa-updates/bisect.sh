#!/usr/bin/env bash
# After scripts/device-run.sh built build-device: build variants of tandem by putting files of
# fd5f463 in place (incremental), then run them in turns. Writes $OUT/bisect.log.
set -u
cd "$(dirname "$0")/.."
L=$OUT/bisect.log
export LD_LIBRARY_PATH="$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$PWD/.deps/root/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PATH="$PATH:/usr/local/cuda/bin"
SCHED="sched/resident.h sched/resident.cc cli/cmd_run.cc"
ESP="apps/ipsec/esp_resident.cu apps/ipsec/esp_resident.h apps/ipsec/ipsec_app.cc"
ALL="$SCHED $ESP apps/ipsec/ipsec_app.h apps/ipsec/sa_control.cc apps/ipsec/sa_control.h apps/ipsec/sa_table.h apps/table_control.h"
put() { local from=$1; shift; for f in "$@"; do cp ".gl/files/$from/$f" "$f"; done; }
variant() {
  local name=$1; shift
  put new $ALL
  put old "$@"
  local t0=$(date +%s)
  if ninja -C build-device -j16 tandem > /tmp/b-$name.log 2>&1; then
    cp build-device/tandem /tmp/t-$name
    echo "built $name in $(( $(date +%s) - t0 )) s" | tee -a $L
  else
    echo "build $name FAILED" | tee -a $L; grep -E "error" -A3 /tmp/b-$name.log | head -20 | tee -a $L
  fi
}
ninja -C build-device -j16 tandem > /tmp/b-new.log 2>&1; echo "new: $(grep -c "Building" /tmp/b-new.log) steps" >> $L; cp build-device/tandem /tmp/t-new
variant oldsched $SCHED
variant old $ALL
put new $ALL
run1() {
  local tag=$1 bin=/tmp/t-$1
  [ -x "$bin" ] || return
  timeout 100 "$bin" run --app ipsec --sa-gen 1024 --sa-cipher aes-128-gcm --sa-room 128 --ipsec-traffic out \
    --gen count=2000000,dst=fib,size=64 --repeat ${REPEAT:-400} --device gpu --workers 12 --cores 1-15 > /tmp/r.log 2>&1
  echo "$rep $tag: $(grep -E '^throughput' /tmp/r.log | cut -c1-60) | $(grep -E '^resident' /tmp/r.log | cut -c1-120)" | tee -a $L
}
for rep in 1 2 3; do
  case $rep in
    1) order="new old oldsched";;
    2) order="oldsched new old";;
    3) order="old oldsched new";;
  esac
  for v in $order; do run1 $v; done
done
