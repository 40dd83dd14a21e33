# shellcheck shell=bash
# description: full with 3 repetitions of bench ipv4 and without its in-table addresses
QUICK=1 run_suite full
