# shellcheck shell=bash
# description: live route and MAC updates on the GPU's offload path (issue 19): the route- and MAC-control tests (10,000 updates while forwarding through the GPU engine, each packet checked against the versions it may have seen), tandem ctl against a GPU run, the GPU engine's tests; then the IPv4 router on the full BGP table through the GPU with and without 10,000 route updates during the run
LOG="$OUT/gpu-updates.log"
ctest_log ctest_gpu_updates.log 20 "tests passed|Failed|\*\*\*|Timeout|packets checked" \
  --output-on-failure -V -j1 --timeout 300 -R "RouteControl|MacControl|test_ctl_gpu|Ipv4App|Ipv4Gpu|OffloadEngine|GpuOffload|GpuMode"
# 10,000 updates (adds of /24s and /25s under five busy /8s, deletes of earlier adds) in 1,000 files
# of 10, each sent by its own `tandem ctl`: about 1,000 batches over a few seconds.
rm -rf /tmp/route_updates && mkdir -p /tmp/route_updates
python3 - <<'PY'
import random
r = random.Random(7)
live = []
for f in range(1000):
    with open(f"/tmp/route_updates/{f:04d}.txt", "w") as out:
        for i in range(10):
            if live and r.random() < 0.4:
                out.write("del " + live.pop(r.randrange(len(live))) + "\n")
            else:
                p = f"{r.choice([12, 24, 38, 64, 66])}.{r.randrange(256)}.{r.randrange(256)}.{r.choice([0, 128])}/25"
                p = p if r.random() < 0.3 else p.rsplit(".", 1)[0] + ".0/24"
                if p in live:
                    continue
                live.append(p)
                out.write(f"add {p} {1 + r.randrange(200)}\n")
PY
for mode in async graph; do
  for upd in 0 1; do
    tag="gpu-$mode-upd$upd"
    ctl=()
    [ "$upd" = 1 ] && ctl=(--control /tmp/gpu_upd.sock)
    "$T" run --app ipv4 --fib "$FIB" --gen count=4000000,dst=fib,size=64 --repeat 100 --device gpu --gpu-mode "$mode" \
      --workers 4 "${ctl[@]}" --json "/tmp/$tag.json" > "/tmp/$tag.log" 2>&1 &
    pid=$!
    if [ "$upd" = 1 ]; then
      for _ in $(seq 100); do [ -S /tmp/gpu_upd.sock ] && break; sleep 0.1; done
      sleep 1
      t0=$(date +%s%N)
      for f in /tmp/route_updates/*.txt; do
        kill -0 "$pid" 2> /dev/null || break  # the run has ended
        "$T" ctl --socket /tmp/gpu_upd.sock --file "$f" > /dev/null 2>> "$LOG"
      done
      note "ctl: 1000 files sent in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    fi
    wait "$pid"
    note "== $tag: exit $? =="
    grep -E "^device|^packets|^throughput|^control|^dropped|^input" "/tmp/$tag.log" | tee -a "$LOG"
  done
done
exit 0
