#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan), seeds each from real data, runs each for
# SECONDS and prints one line per target: executions, coverage, corpus size and whether anything
# was found. Usage: fuzz/run.sh SECONDS [TARGET...] (default: every target). Two targets run at a
# time (JOBS=N to change), niced so that builds on the same machine keep their cores.
# Work files (corpora, seeds, logs, findings) go to $FUZZ_WORK (default build-fuzz/work).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
((${#targets[@]})) || targets=(parse_fuzz mrt_fuzz ndn_tlv_fuzz ids_rules_fuzz acl_rules_fuzz table_fuzz)
jobs=${JOBS:-2}
work=${FUZZ_WORK:-build-fuzz/work}
shared=../shared/data

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DTANDEM_FUZZ=ON -DTANDEM_WITH_CUDA=OFF >/dev/null
ninja -C build-fuzz "${targets[@]}" >/dev/null

seed() {  # seed TARGET DIR: real inputs for the target
  local t=$1 d=$2
  mkdir -p "$d"
  case $t in
    parse_fuzz)
      python3 - "$d" <<'PY'
import struct, sys
for name in ("example", "many-protocols", "tls2"):
    d, off = open(f"data/pcap/{name}.pcap", "rb").read(), 24
    while off + 16 <= len(d):
        n = struct.unpack_from("<I", d, off + 8)[0]
        open(f"{sys.argv[1]}/{name}-{off}", "wb").write(d[off + 16:off + 16 + n])
        off += 16 + n
PY
      ;;
    mrt_fuzz) (zcat "$shared/fib/ripe_ris_bview.20020722.2337.mrt.gz" | head -c 4096 > "$d/bview-head") || true ;;
    ndn_tlv_fuzz)
      python3 - "$d" <<'PY'
import sys
def tlv(t, v): return bytes([t, len(v)]) + v
for i, name in enumerate([["com", "example", "www"], ["a"], ["org", "ndn", "x" * 40]]):
    n = tlv(7, b"".join(tlv(8, c.encode()) for c in name))
    open(f"{sys.argv[1]}/interest-{i}", "wb").write(tlv(5, n + tlv(10, b"\x01\x02\x03\x04")))
PY
      ;;
    ids_rules_fuzz) (zcat "$shared/ids/et_open_2019-04-15/emerging-web_server.rules.gz" | grep content: | head -60 | split -l 3 - "$d/web-") || true ;;
    acl_rules_fuzz) (zcat "$shared/classbench/filters/acl1_1k.gz" | head -60 | split -l 5 - "$d/acl1-") || true ;;
    table_fuzz)
      (zcat data/fib/iprbench_tier1_fulltable_prefixes.txt.gz | head -40 | split -l 4 - "$d/fib-") || true
      printf '2001:db8::/32 7\n2a00:1450::/29\n' > "$d/v6"
      printf '/com/example/www 3\n/org/ndn 12\n' > "$d/ndn"
      printf '02:00:5e:00:53:01 4\n0a:1b:2c:3d:4e:5f 65534\n' > "$d/l2" ;;
  esac
}

run_one() {
  local t=$1
  mkdir -p "$work/$t/corpus" "$work/$t/findings"
  [ -d "$work/$t/seeds" ] || seed "$t" "$work/$t/seeds"
  nice -n 19 "./build-fuzz/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 -timeout=30 -rss_limit_mb=4096 \
    -artifact_prefix="$work/$t/findings/" "$work/$t/corpus" "$work/$t/seeds" > "$work/$t/log" 2>&1 || true
  local execs cov corp found
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/$t/log" | awk '{print $2}' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$work/$t/log" | tail -1 | awk '{print $2}')
  corp=$(ls "$work/$t/corpus" | wc -l)
  found=$(ls "$work/$t/findings" | wc -l)
  printf '%-16s %6ss %12s execs  cov %6s  corpus %6s  findings %s\n' "$t" "$secs" "${execs:-?}" "${cov:-?}" "$corp" "$found"
}

running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
done
wait
