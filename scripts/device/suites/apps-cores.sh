# shellcheck shell=bash
# description: throughput vs worker cores per app and extra table (bench cores, a JSON each); SPECS, WORKERS, REPS, PACKETS
LOG="$OUT/apps-cores.log"
GEN=count=4000000,dst=fib,flows=1000000,size=64,seed=7
W=${WORKERS:-1,2,4,8,12,15,16}
SPECS=${SPECS:-"echo:echo|ipv4:ipv4 --fib $FIB|ipv6:ipv6 --fib $FIB|l2_1m:l2 --l2-random 1000000|l2_16m:l2 --l2-random 16000000|ndn:ndn --urls \$URLS|ndn32:ndn --urls \$URLS --ndn-fixed-bytes 32"}
mapfile -t specs < <(user_specs)
for spec in "${specs[@]}"; do
  name=${spec%%:*}; app=${spec#*:}
  read -ra app_args <<< "$app"
  logged "bench cores: $app" 150 "$T" bench cores --app "${app_args[@]}" --gen $GEN --workers "$W" --reps "${REPS:-3}" \
    --packets "${PACKETS:-8000000}" --json "$OUT/bench_cores_$name.json"
done
grep -E "^==|^exit|throughput vs|^[0-9]+ |^workers|batched / scalar|GPU best|matches|does not|MISMATCH" "$LOG" | tail -120
exit 0
