# shellcheck shell=bash
# description: firewall, fw-router and DPI tests (GPU included), bench classify (ClassBench 10k sets), bench fw-router, bench dpi (ET rules)
LOG="$OUT/acl-dpi.log"
note "== tests: firewall (GPU included) and DPI =="
ctest_log ctest_acl_dpi.log 12 "tests passed|Failed|\*\*\*|Skipped" \
  --output-on-failure -j4 --timeout 300 -R "Acl|Ids|AhoCorasick|LiteralFilter|DpiStage2|FwRouter|test_classify|test_match"
for set in acl1_10k fw1_10k ipc1_10k; do
  logged "bench classify: $set" 120 "$T" bench classify --rules "$CB/$set.gz" --core 2 --reps 5 --n 4000000 \
    --json "$OUT/bench_classify_$set.json"
done
logged "bench fw-router: acl1_10k + the full BGP table, CPU and GPU fused vs split" 150 "$T" bench fw-router --fib "$FIB" \
  --rules "$CB/acl1_10k.gz" --core 2 --json "$OUT/bench_fw_router_acl1_10k.json"
logged "bench dpi: ET rules, 1 and 16 threads, GPU" 300 "$T" bench dpi --rules "${ET_RULES[@]}" --threads 1,16 --core 0 \
  --reps 3 --json "$OUT/bench_dpi.json"
logged "bench dpi: lockstep groups of 8, one thread" 200 "$T" bench dpi --rules "${ET_RULES[@]}" --threads 1 --core 1 \
  --reps 3 --group 8 --device cpu --json "$OUT/bench_dpi_group8.json"
grep -E "^==|^exit|^rules|^cpu|^dpdk|^gpu|^stage1|^hyperscan|^rules_|Gbps|traffic:|results|batch bytes|^cpu_|^gpu_|split" "$LOG" | tail -120
exit 0
