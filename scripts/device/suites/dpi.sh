# shellcheck shell=bash
# description: the DPI tests (GPU included), tandem match per path on ET rules, bench dpi (1 and 16 threads; groups GROUPS_EXTRA)
LOG="$OUT/dpi.log"
note "== tests: DPI (GPU included) =="
ctest_log ctest_dpi.log 12 "tests passed|Failed|\*\*\*|Skipped" \
  --output-on-failure -j4 --timeout 300 -R "Ids|AhoCorasick|DpiStage2|test_match"
logged "bench dpi: ET rules, 1 and 16 threads, GPU" 300 "$T" bench dpi --rules "${ET_RULES[@]}" --threads 1,16 --core 0 \
  --reps 3 --json "$OUT/bench_dpi.json"
note "== tandem match on ET rules: scalar, batched and GPU give the same lines =="
for cap in data/pcap/example.pcap data/pcap/tls2.pcap; do
  for path in "--device cpu --cpu-path scalar" "--device cpu --cpu-path batched" "--device gpu"; do
    read -ra path_args <<< "$path"
    for po in "" --patterns-only; do
      timeout 120 "$T" match --rules "${ET_RULES[@]}" --skip-bad --pcap $cap "${path_args[@]}" ${po:+"$po"} \
        > /tmp/match.out 2> /tmp/match.err
      rc=$?
      note "$(basename $cap) $path $po: exit $rc, output md5 $(md5sum < /tmp/match.out | cut -c1-12), $(tail -n 1 /tmp/match.err)"
    done
  done
done
for g in ${GROUPS_EXTRA:-8 16}; do
  logged "bench dpi: lockstep groups of $g, one thread" 200 "$T" bench dpi --rules "${ET_RULES[@]}" --threads 1 --core 1 \
    --reps 3 --group "$g" --device cpu --json "$OUT/bench_dpi_group$g.json"
done
grep -E "^==|^exit|^gpu|^stage1|^hyperscan|^rules_|Gbps|traffic:|results|pcap --device" "$LOG" | tail -100
exit 0
