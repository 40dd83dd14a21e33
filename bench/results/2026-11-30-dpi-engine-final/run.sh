#!/usr/bin/env bash
# Session 11, call 1: the final dpi engine (stage 2 from membership lists, packet-order bursts,
# per-thread scratch): bench dpi (rules_batched per engine) at 1 and 16 threads, then bench cores
# --app dpi per engine (aho-corasick, literal, hyperscan), match-free and match-heavy. The device
# returns at most 8 files, so the bench cores JSON files come back in one tar.
set -u
cd "$(dirname "$0")/../../.."
. scripts/device/common.sh
export TARGETS="tandem"
t0=$(date +%s)
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
git log --oneline -1
timeout 170 $T bench dpi --rules "${ET_RULES[@]}" --threads 1,16 --core 0 --reps 3 --device cpu --json $OUT/bench_dpi.json > $OUT/bench_dpi.log 2>&1
echo "bench dpi exit $? at $(( $(date +%s) - t0 )) s"
grep -E "traffic:|Gbps|results" $OUT/bench_dpi.log
mkdir -p /tmp/cores
R=$SHARED/ids/et_open_2019-04-15
[ -d "$R" ] || R=data/ids/et_open_2019-04-15
for heavy in 0 0.2; do
  for e in literal hyperscan aho-corasick; do
    timeout 60 $T bench cores --app dpi --ids-rules $R --ids-skip-bad on --dpi-engine $e --match-heavy $heavy \
      --gen count=200000,size=512,proto=tcp,flows=10000,seed=9 --workers 1,16 --paths batched --reps 3 --packets 200000 \
      --json /tmp/cores/cores_dpi_${e}_heavy$heavy.json >> $OUT/bench_cores.log 2>&1
    echo "cores $e heavy $heavy exit $? at $(( $(date +%s) - t0 )) s"
  done
done
grep -E "^batched|^[0-9]+ |stage 1" $OUT/bench_cores.log | cut -c1-200
tar -C /tmp -cf $OUT/cores_json.tar cores
echo "total $(( $(date +%s) - t0 )) s"
