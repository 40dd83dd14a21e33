#!/usr/bin/env bash
# The build VM (AMD EPYC, 2 vCPUs): bench dpi at one thread, then the dpi app through bench cores
# per engine, after the stage-2 changes (relative figures only).
set -u
O=${1:-bench/results/2026-11-30-dpi-engine/build-vm}
R=data/ids/et_open_2019-04-15
build/tandem bench dpi --rules $R/*.rules.gz --threads 1 --core 1 --reps 3 --device cpu --json $O/bench_dpi.json > $O/bench_dpi.log 2>&1
for heavy in 0 0.2; do
  for e in literal hyperscan aho-corasick; do
    build/tandem bench cores --app dpi --ids-rules $R --ids-skip-bad on --dpi-engine $e --match-heavy $heavy \
      --gen count=200000,size=512,proto=tcp,flows=10000,seed=9 --workers 1 --paths batched --reps 3 --packets 200000 \
      --json $O/cores_dpi_${e}_heavy$heavy.json >> $O/bench_cores.log 2>&1
  done
done
