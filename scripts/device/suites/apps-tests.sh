# shellcheck shell=bash
# description: every app through the pipeline on the GPU (tests), then `tandem run` per registry app: CPU scalar, CPU batched, GPU
echo "== app tests on the GPU: pipeline per app, every mode; lookups; run per app =="
ctest_log ctest_apps.log 30 "tests passed|Failed|\*\*\*|Timeout|Skipped" \
  --output-on-failure -j4 --timeout 300 -R "AppsPipeline|NdnApp|Ipv6Gpu|Workers|test_run_apps|test_lookup"
list=$(app_specs "") || exit 1
gpu_apps=" $(app_names gpu | tr '\n' ' ') "
mapfile -t specs <<< "$list"
for spec in "${specs[@]}"; do
  [ -n "$spec" ] || continue
  app=${spec#*:}
  read -ra app_args <<< "$app"
  devs=("cpu --cpu-path scalar" "cpu --cpu-path batched")
  [[ $gpu_apps == *" ${spec%%:*} "* ]] && devs+=(gpu)
  for dev in "${devs[@]}"; do
    read -ra dev_args <<< "$dev"
    timeout 120 taskset -c 2-3 "$T" run --app "${app_args[@]}" --gen count=4000000,dst=fib,size=64 --device "${dev_args[@]}" \
      --verify 2>&1 | grep -E "^app|device:|packets:|throughput:|verify:" | sed "s|^|[$app \| $dev] |"
  done
done
exit 0
