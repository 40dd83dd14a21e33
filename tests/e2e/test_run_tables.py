"""`tandem run --app ipv4 --table dir24-8|poptrie`: the two tables forward data/pcap/example.pcap
identically (the same --out bytes, the same counters, every decision verified against the
reference trie) on the scalar and batched CPU paths, on the real BGP table and on a small table of
overlapping prefixes; Poptrie with --device gpu is refused before anything is read (it has no GPU
path), and runs on the CPU with --device auto; an unknown table and --table for another app are
refused. Needs no GPU."""
import os
import re

from e2e_util import Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    cap = os.path.join(a.source_dir, "data/pcap/example.pcap")
    real = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    small = os.path.join(d, "small.txt")
    # Nested prefixes down to /32 over the capture's busiest destinations (10.0.0.6, 212.199.202.9,
    # 212.199.202.53, 10.0.0.138, 146.185.23.162, ...); no default route, so some have none.
    open(small, "w").write("10.0.0.0/8 2\n10.0.0.0/25 3\n10.0.0.6/32 4\n10.0.0.128/25 5\n212.199.0.0/16 6\n"
                           "212.199.202.0/26 7\n212.199.202.9/32 8\n212.199.202.48/29 9\n146.185.23.160/27 10\n"
                           "92.0.0.0/6 11\n31.13.72.49/32 12\n")

    for fib_name, fib in (("real", real), ("small", small)):
        outs = {}
        for table in ("dir24-8", "poptrie"):
            for path in ("scalar", "batched"):
                out = os.path.join(d, f"{fib_name}-{table}-{path}.pcap")
                rc, so, se = run([T, "run", "--app", "ipv4", "--fib", fib, "--table", table, "--pcap", cap, "--out", out,
                                  "--device", "cpu", "--cpu-path", path, "--verify"])
                what = f"{fib_name} table, --table {table}, {path}"
                c.check(rc == 0, f"{what}: exit {rc}: {se}")
                title = "DIR-24-8" if table == "dir24-8" else "Poptrie"
                c.check(f"{title} built in" in so, f"{what}: the table line does not name {title}: {so}")
                c.check(re.search(r"verify: \d+ lookup decisions checked .*: 0 differ", so) is not None,
                        f"{what}: verification: {so}")
                counts = re.search(r"packets: received (\d+), forwarded (\d+), dropped (\d+)", so)
                c.check(counts is not None and int(counts.group(2)) > 0 and int(counts.group(3)) > 0,
                        f"{what}: nothing forwarded or nothing without a route: {so}")
                outs[(table, path)] = (open(out, "rb").read() if os.path.exists(out) else b"",
                                       counts.groups() if counts else None)
        want = outs[("dir24-8", "batched")]
        c.check(len(want[0]) > 24, f"{fib_name} table: empty --out")
        for k, v in outs.items():
            c.check(v[0] == want[0], f"{fib_name} table: {k} wrote other bytes than dir24-8 batched")
            c.check(v[1] == want[1], f"{fib_name} table: {k} counted {v[1]}, dir24-8 batched {want[1]}")

    base = [T, "run", "--app", "ipv4", "--fib", small, "--pcap", cap]
    rc, so, se = run(base + ["--table", "poptrie", "--device", "gpu"])
    c.check(rc == 1 and "--table poptrie has no GPU path" in se and "--device cpu" in se,
            f"poptrie on the GPU: exit {rc}: {se}")
    c.check("app:" not in so, f"poptrie on the GPU: started before refusing: {so}")
    rc, so, se = run(base + ["--table", "poptrie", "--device", "auto"])
    c.check(rc == 0 and "device: cpu" in so, f"poptrie, --device auto: exit {rc}: {so} {se}")
    rc, so, se = run(base + ["--table", "trie"])
    c.check(rc != 0 and "--table" in se and "dir24-8" in se, f"unknown table: exit {rc}: {se}")
    rc, so, se = run([T, "run", "--app", "ipv6", "--fib", small, "--pcap", cap, "--table", "poptrie"])
    c.check(rc == 1 and "--table is for --app ipv4" in se, f"--table for ipv6: exit {rc}: {se}")
    c.done()


if __name__ == "__main__":
    main()
