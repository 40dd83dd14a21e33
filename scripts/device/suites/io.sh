# shellcheck shell=bash
# description: live ports between processes over memif (issue 19): the DPDK memif test (source, router and sink, every packet checked), then `tandem bench io`: Tandem's IPv4 router on the full BGP table against testpmd io forwarding, between a testpmd generator and a testpmd sink, 64 B and 1,500 B, 1 and 2 queues (bench_io.json; testpmd from scripts/fetch-testpmd.sh's packages, carried in .deps/testpmd)
LOG="$OUT/io.log"
logged "e2e dpdk memif" 300 python3 tests/e2e/test_dpdk_memif.py --tandem "$T" --source-dir .
logged "bench io" 900 "$T" bench io --fib "$FIB" --sizes "${IO_SIZES:-64,1500}" --queues "${IO_QUEUES:-1,2}" --cores 1-15 \
  --seconds "${IO_SECONDS:-5}" --json "$OUT/bench_io.json"
grep -E "^==|^exit|passed|FAIL|SKIPPED|^memif|^backend|bench io" "$LOG" | tail -40
exit 0
