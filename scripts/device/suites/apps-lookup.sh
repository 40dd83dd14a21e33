# shellcheck shell=bash
# description: each app's lookups alone, one core (bench lookup: scalar, batched, GPU), with extra tables
LOG="$OUT/apps-lookup.log"
for spec in "ipv6:ipv6 --fib $FIB" "l2_1m:l2 --l2-random 1000000" "l2_16m:l2 --l2-random 16000000" \
            "ndn:ndn --urls $URLS" "ndn_x100:ndn --urls $URLS --ndn-replicas 100" "ndn32:ndn --urls $URLS --ndn-fixed-bytes 32" \
            "echo:echo"; do
  name=${spec%%:*}; app=${spec#*:}
  read -ra app_args <<< "$app"
  logged "bench lookup: $app" 120 "$T" bench lookup --app "${app_args[@]}" --core 2 --reps 5 --json "$OUT/bench_lookup_$name.json"
done
grep -E "^==|^exit|^cpu|^gpu|results" "$LOG"
exit 0
