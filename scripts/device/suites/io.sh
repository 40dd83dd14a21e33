# shellcheck shell=bash
# description: live ports between processes over memif (issue 19): the DPDK port unit tests and the memif test (source, router and sink, every packet checked), then `tandem bench io`: Tandem's IPv4 router on the full BGP table against testpmd io forwarding, between a testpmd generator and a testpmd sink, 64 B and 1,500 B, 1 and 2 queues, the forwarders taking turns (bench_io.json; testpmd from scripts/fetch-testpmd.sh's packages, carried in .deps/testpmd), over memif and over veth (testpmd on net_af_packet, Tandem on af_packet:). Knobs: IO_BACKENDS (memif,veth), IO_SIZES, IO_QUEUES, IO_SECONDS, IO_REPEAT; IO_PROBES="ARGS|ARGS": 64 B, 1 queue again with these flags for Tandem (bench_io_probeN.json)
LOG="$OUT/io.log"
# iproute2's ip for the veth rows, carried where the machine has none (scripts/fetch-device-deps.sh).
[ -x .deps/iproute/bin/ip ] && ! command -v ip > /dev/null && export PATH="$PWD/.deps/iproute/bin:$PATH"
[ -x build-device/tests/dpdk_port_test ] && logged "dpdk port tests" 120 build-device/tests/dpdk_port_test
logged "e2e dpdk memif" 300 python3 tests/e2e/test_dpdk_memif.py --tandem "$T" --source-dir .
logged "bench io" 900 "$T" bench io --fib "$FIB" --backends "${IO_BACKENDS:-memif,veth}" --sizes "${IO_SIZES:-64,1500}" --queues "${IO_QUEUES:-1,2}" --cores 1-15 \
  --seconds "${IO_SECONDS:-5}" --repeat "${IO_REPEAT:-3}" --json "$OUT/bench_io.json"
n=0
IFS='|' read -r -a probes <<< "${IO_PROBES:-}"
for p in "${probes[@]}"; do
  n=$((n + 1))
  logged "bench io probe $n: $p" 600 "$T" bench io --fib "$FIB" --sizes 64 --queues 1 --cores 1-15 \
    --seconds "${IO_SECONDS:-5}" --repeat "${IO_REPEAT:-3}" --tandem-args "$p" --json "$OUT/bench_io_probe$n.json"
done
grep -E "^==|^exit|passed|FAIL|SKIPPED|^memif|^veth|^backend|bench io|PASSED|FAILED" "$LOG" | tail -60
exit 0
