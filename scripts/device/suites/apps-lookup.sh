# shellcheck shell=bash
# description: every registry app's lookups alone, one core (bench lookup: scalar, batched, GPU), with extra tables; SPECS
LOG="$OUT/apps-lookup.log"
# Tables beyond each app's standard one: L2 past the caches, NDN with 100 copies of the names (a
# FIB beyond the caches) and names of one length. l2_1m names L2's standard table, as the recorded
# results do.
EXTRAS="l2_1m:l2 --l2-random 1000000|l2_16m:l2 --l2-random 16000000|ndn_x100:ndn --urls $URLS --ndn-replicas 100"
EXTRAS+="|ndn32:ndn --urls $URLS --ndn-fixed-bytes 32"
if [ -n "${SPECS:-}" ]; then
  list=$(user_specs)
else
  # IPv4's lookups have their own bench with more variants (bench ipv4, in cpu-b and full).
  list=$(app_specs "" "$EXTRAS") || exit 1
  list=$(grep -v '^ipv4:' <<< "$list")
fi
mapfile -t specs < <(fitting_specs "$list")
for spec in "${specs[@]}"; do
  [ -n "$spec" ] || continue
  name=${spec%%:*}; app=${spec#*:}
  read -ra app_args <<< "$app"
  logged "bench lookup: $app" 120 "$T" bench lookup --app "${app_args[@]}" --core 2 --reps 5 --json "$OUT/bench_lookup_$name.json"
done
grep -E "^==|^exit|^cpu|^gpu|results" "$LOG"
exit 0
