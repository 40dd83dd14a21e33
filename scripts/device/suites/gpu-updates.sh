# shellcheck shell=bash
# description: live route updates on the GPU's offload path (issue 19): the route-control tests (10,000 updates while forwarding through the GPU engine, each packet checked against the versions it may have seen), tandem ctl against a GPU run, the GPU engine's tests; then the IPv4 router on the full BGP table through the GPU with and without 10,000 route updates during the run
LOG="$OUT/gpu-updates.log"
ctest_log ctest_gpu_updates.log 20 "tests passed|Failed|\*\*\*|Timeout|packets checked" \
  --output-on-failure -V -j1 --timeout 300 -R "RouteControl|test_ctl_ipv4_gpu|Ipv4App|Ipv4Gpu|OffloadEngine|GpuMode"
python3 - > /tmp/route_updates.txt <<'PY'
import random
r = random.Random(7)
live = []
for i in range(10000):
    if live and r.random() < 0.4:
        print("del " + live.pop(r.randrange(len(live))))
    else:
        p = f"{r.choice([12, 24, 38, 64, 66])}.{r.randrange(256)}.{r.randrange(256)}.0/{r.choice([24, 24, 25])}"
        live.append(p)
        print(f"add {p} {1 + r.randrange(200)}")
PY
for mode in async graph; do
  for upd in 0 1; do
    tag="gpu-$mode-upd$upd"
    ctl=()
    [ "$upd" = 1 ] && ctl=(--control /tmp/gpu_upd.sock)
    "$T" run --app ipv4 --fib "$FIB" --gen count=4000000,dst=fib,size=64 --repeat 40 --device gpu --gpu-mode "$mode" \
      --workers 4 "${ctl[@]}" --json "/tmp/$tag.json" > "/tmp/$tag.log" 2>&1 &
    pid=$!
    if [ "$upd" = 1 ]; then
      for _ in $(seq 100); do [ -S /tmp/gpu_upd.sock ] && break; sleep 0.1; done
      sleep 1
      { /usr/bin/time -f "ctl wall %e s" "$T" ctl --socket /tmp/gpu_upd.sock --file /tmp/route_updates.txt; } >> "$LOG" 2>&1
    fi
    wait "$pid"
    note "== $tag: exit $? =="
    grep -E "^device|^packets|^throughput|^control|^dropped" "/tmp/$tag.log" | tee -a "$LOG"
  done
done
exit 0
