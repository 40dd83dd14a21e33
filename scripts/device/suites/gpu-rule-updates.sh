# shellcheck shell=bash
# description: live firewall and IDS rule updates on the GPU's offload path (issue 19): the rule-control tests through the GPU engine, tandem ctl against GPU runs, bench fw-router's fused kernel with the tables read by value vs through the device root; then fw-router (BGP table, ClassBench acl1 10K) and dpi (ET open) through the GPU with and without rule updates during the run
LOG="$OUT/gpu-rule-updates.log"
# RUNS_ONLY=1: the runs alone, without the tests and the bench.
failed=0
if [ -z "${RUNS_ONLY:-}" ]; then
ctest_log ctest_gpu_rule_updates.log 30 "tests passed|Failed|\*\*\*|Timeout|packets checked" \
  --output-on-failure -V -j1 --timeout 300 -R "RuleControl|FwRouterPlans|DeviceTable|test_ctl_gpu|test_ctl_l2_fw|RouteControl|MacControl"
grep -q "100% tests passed" "$OUT/ctest_gpu_rule_updates.log" || failed=1
logged "bench fw-router: fused by value vs through the device root" 300 \
  "$T" bench fw-router --fib "$FIB" --rules "$CB/acl1_10k.gz" --gpu-batches 8192,65536,1048576 --gpu-reps 30 \
  --json "$OUT/bench_fw_router.json"
grep -E "^ +[0-9]+ +[0-9.]+ " "$LOG" | tail -3
fi
# Rule batches of two lines: the first rule replaced by another that drops TCP from one source
# (the generated traffic is UDP: the verdicts stay, the rule set is rebuilt and uploaded each time).
rm -rf /tmp/fw_updates && mkdir -p /tmp/fw_updates
echo "add 1 drop src 198.51.100.0/32 proto tcp" > /tmp/fw_updates/000.txt
for k in $(seq 1 99); do
  printf 'del 1\nadd 1 drop src 198.51.100.%d/32 proto tcp\n' $((k % 250)) > "/tmp/fw_updates/$(printf %03d "$k").txt"
done
for mode in async graph; do
  for upd in 0 1; do
    dir=-
    [ "$upd" = 1 ] && dir=/tmp/fw_updates
    run_with_updates "fw-$mode-upd$upd" "$T" "$dir" --app fw-router --fib "$FIB" --rules "$CB/acl1_10k.gz" \
      --gen count=4000000,dst=fib,size=64 --repeat 100 --gpu-mode "$mode" --device gpu --workers 4
  done
done
# dpi: three IDS rules added, one batch each (each rebuilds and uploads the whole program).
rm -rf /tmp/dpi_updates && mkdir -p /tmp/dpi_updates
for k in 1 2 3; do
  echo "add alert tcp any any -> any 80 (msg:\"t$k\"; content:\"zqxj$k-tandem\"; sid:$((9100000 + k));)" > "/tmp/dpi_updates/$k.txt"
done
for upd in 0 1; do
  dir=-
  [ "$upd" = 1 ] && dir=/tmp/dpi_updates
  run_with_updates "dpi-upd$upd" "$T" "$dir" --app dpi --ids-rules "$SHARED/ids/et_open_2019-04-15" --ids-skip-bad on \
    --gen count=1000000,proto=tcp,size=imix --repeat 100 --gpu-mode async --device gpu --workers 4
done
exit "$failed"
