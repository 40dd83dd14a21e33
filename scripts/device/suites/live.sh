# shellcheck shell=bash
# description: live ports between veth pairs in a network namespace (issue 19): the live-port test (AF_PACKET; AF_XDP where the build has libxdp); then the IPv4 router on the full BGP table forwarding a1 -> b1 over AF_PACKET with 1, 2 and 4 workers on the CPU and through the GPU offload path, Tandem itself sending 64 B frames into a0 and counting on b0; stats lines every 0.5 s give the rates (live_rates.json)
LOG="$OUT/live.log"
# iproute2's ip, carried where the machine has none (scripts/fetch-device-deps.sh).
[ -x .deps/iproute/bin/ip ] && ! command -v ip > /dev/null && export PATH="$PWD/.deps/iproute/bin:$PATH"
logged "e2e live ports" 300 python3 tests/e2e/test_live_ports.py --tandem "$T" --source-dir .
ns=tndlive$$
ip netns add "$ns" || { echo "no network namespaces here" >> "$LOG"; exit 0; }
trap 'ip netns del "$ns"' EXIT
nx() { ip netns exec "$ns" "$@"; }
nx sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6'
for p in a b; do
  nx ip link add ${p}0 type veth peer name ${p}1
  nx ip link set ${p}0 up && nx ip link set ${p}1 up
done
# The sender's destinations: /8s the full table routes, drawn by the generator (dst=fib).
printf '%s\n' 12.0.0.0/8 24.0.0.0/8 38.0.0.0/8 64.0.0.0/8 66.0.0.0/8 > /tmp/send_fib.txt
tmp=$(mktemp -d)
summary="$OUT/live_rates.json"
echo "[" > "$summary"
first=1
for dev in ${LIVE_DEVICES:-cpu gpu}; do
  for w in ${LIVE_WORKERS:-1 2 4}; do
    tag="$dev-w$w"
    nx "$T" run --app echo --rx af_packet:b0 --workers 2 --device cpu --duration 16 --stats-json "$tmp/count-$tag.jsonl" \
      --stats-interval 0.5 --json "$tmp/count-$tag.json" > "$tmp/count-$tag.log" 2>&1 &
    cpid=$!
    nx "$T" run --app ipv4 --fib "$FIB" --rx af_packet:a1 --tx af_packet:b1 --workers "$w" --device "$dev" --duration 12 \
      --cores "1-$w" --stats-json "$tmp/fwd-$tag.jsonl" --stats-interval 0.5 --json "$tmp/fwd-$tag.json" > "$tmp/fwd-$tag.log" 2>&1 &
    fpid=$!
    sleep 5  # the full table loads
    logged "send into a0 ($tag)" 60 ip netns exec "$ns" "$T" run --app ipv4 --fib /tmp/send_fib.txt --device cpu --workers 4 --cores "${SEND_CORES:-8-11}" \
      --gen count=2000000,dst=fib,flows=10000,size=64,seed=3 --repeat 3 --tx af_packet:a0 --json "$tmp/send-$tag.json"
    wait "$fpid" "$cpid"
    cat "$tmp/fwd-$tag.log" >> "$LOG"
    grep -E "^packets|^live ports" "$tmp/count-$tag.log" >> "$LOG"
    python3 - "$tag" "$tmp" >> "$summary" <<'PY'
import json, sys, statistics
tag, d = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(f"{d}/fwd-{tag}.jsonl") if l.strip()]
busy = [l for l in lines if l["rx_pps"] > 1000]
fwd, cnt, snd = (json.load(open(f"{d}/{k}-{tag}.json")) for k in ("fwd", "count", "send"))
row = {"config": tag, "rx_mpps_median": statistics.median(l["rx_pps"] for l in busy) / 1e6 if busy else 0,
       "fwd_mpps_median": statistics.median(l["forwarded_pps"] for l in busy) / 1e6 if busy else 0,
       "intervals": len(busy), "received": fwd["received"], "forwarded": fwd["forwarded"], "dropped": fwd["dropped"],
       "kernel_ring_drops": fwd["live"]["kernel_ring_drops"], "sent_by_source": snd["tx"]["sent"],
       "counted_on_b0": cnt["received"], "device": fwd["device"]}
print(("," if tag != "cpu-w1" else "") + json.dumps(row))
print(f"{tag}: {row['fwd_mpps_median']:.3f} Mpps forwarded (median of {len(busy)} intervals); source sent "
      f"{row['sent_by_source']}, router received {row['received']} (kernel ring drops {row['kernel_ring_drops']}), "
      f"b0 counted {row['counted_on_b0']}", file=sys.stderr)
PY
  done
done 2>> "$LOG"
echo "]" >> "$summary"
grep -E "^==|^exit|Mpps forwarded|passed|FAIL|SKIPPED" "$LOG" | tail -40
exit 0
