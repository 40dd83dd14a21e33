# shellcheck shell=bash
# description: live SA updates on the ipsec app's resident GPU path (issue 19): the SA control tests (every frame checked against the SA sets it could see, with and without a GPU fault), tandem ctl against GPU runs; then 64 B outbound traffic over 1,024 SA pairs through the persistent kernel with and without SA batches during the run, and (OLD_T=path, a build of the commit before) the same without updates from that build, in turns (RUNS_ONLY=1: the runs alone)
LOG="$OUT/ipsec-sa-updates.log"
failed=0
if [ -z "${RUNS_ONLY:-}" ]; then
  ctest_log ctest_ipsec_sa_updates.log 30 "tests passed|Failed|\*\*\*|Timeout|frames checked|packets checked" \
    --output-on-failure -V -j1 --timeout 300 -R "EspResident|SaControl|test_ctl_gpu"
  grep -q "100% tests passed" "$OUT/ctest_ipsec_sa_updates.log" || failed=1
fi
# Batches of two lines: outbound SA k (of the 100 first) replaced by one with a new SPI and key for
# the same selector; the traffic keeps being sealed (by the SA there at the time).
rm -rf /tmp/sa_updates && mkdir -p /tmp/sa_updates
python3 - /tmp/sa_updates <<'PY'
import os, sys
spi = {k: 0x10000 + k for k in range(100)}
for b in range(200):
    k = b % 100
    new = 0x60000 + b
    key = os.urandom(20).hex()
    with open(os.path.join(sys.argv[1], f"{b:03d}.txt"), "w") as f:
        f.write(f"del out {spi[k]}\nadd dir=out spi={new} src=192.0.2.1 dst=198.51.100.1 cipher=aes-128-gcm "
                f"key={key} selector=10.0.0.{k + 1}/32,172.16.0.{k + 1}/32\n")
    spi[k] = new
PY
# ipsec_run TAG BINARY UPDATE_DIR|-: the 64-byte outbound run over 1,024 SA pairs (common.sh's run_with_updates).
ipsec_run() {
  run_with_updates "$1" "$2" "$3" --app ipsec --sa-gen 1024 --sa-cipher aes-128-gcm --sa-room 128 --ipsec-traffic out \
    --gen count=2000000,dst=fib,size=64 --repeat 400 --device gpu --workers 12 --cores 1-15
}
for rep in 1 2; do
  [ -n "${OLD_T:-}" ] && ipsec_run "old-upd0-$rep" "$OLD_T" -
  ipsec_run "new-upd0-$rep" "$T" -
  ipsec_run "new-upd1-$rep" "$T" /tmp/sa_updates
done
exit "$failed"
