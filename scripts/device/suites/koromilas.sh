# shellcheck shell=bash
# description: the Koromilas controller against the static rows and the model controller (issue 18; PARTS to pick "energy crypto ipv4"): energy per Mbit at a low constant load for IPsec (64 B, 4 Mpps) and MD5 (256 B, 1 Mpps) with the energy policy of both controllers; unpaced throughput for IPsec and IPv4 at 64 B, each device alone, splits, both controllers (bench schedule, a profile of the splits measured first)
LOG="$OUT/koromilas.log"
parts=" ${PARTS:-energy crypto ipv4} "
want() { [[ $parts == *" $1 "* ]]; }
cores="0-$(($(nproc) - 1))"
esp=(--app ipsec --sa-gen 1024 --sa-cipher aes-128-cbc)
list=$(app_specs gpu) || exit 1
ipv4=$(grep '^ipv4:' <<< "$list" | head -1); ipv4=${ipv4#*:}
read -ra ipv4_args <<< "$ipv4"
want energy && logged "energy at 4 Mpps: ipsec 64 B" 200 "$T" bench schedule "${esp[@]}" --cores "$cores" --device cpu:9,gpu \
  --workers 6 --gen count=1000000,flows=100000,seed=3,size=64,dst=fib --rate-schedule 0:4,4000:0 \
  --policies "static:1,0;static:0,1;energy;koromilas:energy" --json "$OUT/energy_ipsec.json"
want energy && logged "energy at 1 Mpps: md5 256 B" 200 "$T" bench schedule --app hashing --digest md5 --cores "$cores" \
  --device cpu:11,gpu --workers 4 --gen count=1000000,flows=100000,seed=3,size=256 --rate-schedule 0:1,4000:0 \
  --policies "static:1,0;static:0,1;energy;koromilas:energy" --json "$OUT/energy_md5.json"
want crypto && logged "bench schedule: ipsec 64 B" 200 "$T" bench schedule "${esp[@]}" --cores "$cores" --device cpu:9,gpu \
  --workers 6 --gen count=1000000,flows=100000,dst=fib,seed=3 --sizes 64 \
  --policies "static:1,0;static:0,1;static:1,3;static:1,1;static:3,1;throughput;koromilas" --json "$OUT/bench_schedule_ipsec.json"
want ipv4 && logged "bench schedule: ipv4 64 B" 200 "$T" bench schedule --app "${ipv4_args[@]}" --cores "$cores" \
  --device cpu:7,gpu --workers 8 --gen count=2000000,dst=fib,flows=100000,seed=3 --sizes 64 \
  --policies "static:1,0;static:0,1;static:1,3;static:1,1;static:3,1;throughput;koromilas" --json "$OUT/bench_schedule_ipv4.json"
grep -E "^==|^exit|profile|^size|^[0-9]+ +|^medians|^bench" "$LOG" | tail -80
exit 0
