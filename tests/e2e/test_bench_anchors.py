"""`tandem bench anchors` (Tandem's CPU lookups against DPDK on the same tables and keys): on a
slice of the real table (IPv4 and IPv6 routes), a small random IPv6 worst-case table, a small
hash table and a small L2 MAC table, the command must succeed, every row of every section must agree with the section's
reference results, and the DPDK rows must be measured when the build has DPDK (the JSON's "dpdk"
is its version) or be listed as skipped with the reason when it has not. Only correctness and
structure are checked here, never a time (the ratios are for the device machine)."""
import gzip
import json
import os

from e2e_util import Checker, args, run, tmpdir

V4_LINES, V6_LINES = 5000, 3000


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    src = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    lines = gzip.open(src, "rt").read().split("\n")
    v4 = [x for x in lines if x and ":" not in x][:V4_LINES]
    v6 = [x for x in lines if ":" in x][:V6_LINES]
    fib = os.path.join(d, "slice.txt")
    with open(fib, "w") as f:
        f.write("\n".join(v4 + v6) + "\n")
    out = os.path.join(d, "anchors.json")
    rc, so, se = run([a.tandem, "bench", "--min-seconds", "0.02", "anchors", "--fib", fib, "--n", "20000", "--hash-keys", "20000",
                      "--ipv6-random", "2000", "--reps", "1", "--dpdk-mem-mib", "1024", "--json", out])
    print(so, end="")
    c.check(rc == 0, f"bench anchors exit code {rc}: {se.strip()}")
    c.check("every row agrees with its section's reference" in so, "results line missing or a mismatch")
    if not os.path.exists(out):
        c.check(False, "no JSON report written")
        c.done()
    rep = json.load(open(out))
    c.check(rep.get("bench") == "anchors" and rep.get("all_agree") is True, f"JSON: bench/all_agree {rep.get('all_agree')}")
    secs = rep.get("sections", [])
    c.check(len(secs) == 5, f"expected 5 sections (ipv4, ipv6 real, ipv6 random, hash, l2), got {len(secs)}")
    have_dpdk = rep.get("dpdk") is not None
    print(f"DPDK in this build: {rep.get('dpdk')}")
    tandem_rows = {"L2": "tandem_l2_batched_all", "IPv4": "tandem_dir24_8_batched_all",
                   "IPv6": "tandem_lpm6_window_all", "cuckoo": "tandem_cuckoo_naive"}
    dpdk_rows = {"L2": "dpdk_hash_bulk_b32", "IPv4": "dpdk_lpm_bulk_b32", "IPv6": "dpdk_lpm6_bulk_b32",
                 "cuckoo": "dpdk_hash_bulk_b32"}
    for s in secs:
        title = s.get("title", "")
        kind = next((k for k in tandem_rows if title.startswith(k) or k in title), None)
        paths = {r["path"]: r for r in s.get("results", [])}
        c.check(all(v == 0 for v in s.get("differing_results", {}).values()), f"{title}: differing results")
        c.check(all(r.get("median_rate_per_s") for r in paths.values()), f"{title}: a row has no rate")
        if kind is None:
            c.check(False, f"unexpected section {title!r}")
            continue
        c.check(tandem_rows[kind] in paths, f"{title}: row {tandem_rows[kind]} missing")
        if kind == "IPv6":  # the AVX-512 lookup measured, or said to be skipped
            c.check("tandem_lpm6_avx512_all" in paths or "tandem_lpm6_avx512_*" in s.get("skipped", {}),
                    f"{title}: no AVX-512 row and no reason")
        if have_dpdk:
            c.check(dpdk_rows[kind] in paths and s.get("baseline") == dpdk_rows[kind],
                    f"{title}: DPDK row {dpdk_rows[kind]} missing or not the baseline")
        else:
            c.check(any("DPDK" in why for why in s.get("skipped", {}).values()),
                    f"{title}: without DPDK the section must say the DPDK rows are skipped")
    c.done()


if __name__ == "__main__":
    main()
