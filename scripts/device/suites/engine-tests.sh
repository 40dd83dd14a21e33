# shellcheck shell=bash
# description: the offload engine's GPU tests alone (a fast check before spending device time on benchmarks)
echo "== GPU tests: offload runners, engine, whole-frame forwarding (each test in its own process) =="
gpu_engine_tests 20
exit 0
