# shellcheck shell=bash
# description: throughput vs worker cores per registry app and extra table (bench cores, a JSON each); SPECS, WORKERS, REPS, PACKETS
LOG="$OUT/apps-cores.log"
GEN=count=4000000,dst=fib,flows=1000000,size=64,seed=7
W=${WORKERS:-1,2,4,8,12,15,16}
# Tables beyond each app's standard one: L2 past the caches, NDN names of one length. l2_1m names
# L2's standard table, as the recorded results do.
EXTRAS="l2_1m:l2 --l2-random 1000000|l2_16m:l2 --l2-random 16000000|ndn32:ndn --urls $URLS --ndn-fixed-bytes 32"
if [ -n "${SPECS:-}" ]; then list=$(user_specs); else list=$(app_specs "" "$EXTRAS") || exit 1; fi
mapfile -t specs < <(fitting_specs "$list")
for spec in "${specs[@]}"; do
  [ -n "$spec" ] || continue
  name=${spec%%:*}; app=${spec#*:}
  read -ra app_args <<< "$app"
  logged "bench cores: $app" 150 "$T" bench cores --app "${app_args[@]}" --gen $GEN --workers "$W" --reps "${REPS:-3}" \
    --packets "${PACKETS:-8000000}" --json "$OUT/bench_cores_$name.json"
done
grep -E "^==|^exit|throughput vs|^[0-9]+ |^workers|batched / scalar|GPU best|matches|does not|MISMATCH" "$LOG" | tail -120
exit 0
