"""`tandem bench memory` (random memory accesses per second, the G-Opt paper's Table 1 question):
on a small table and few accesses, the command must succeed, report positive rates for the three
CPU access patterns on 1 thread (and on all threads when there are several CPUs), agree on its
checksums, and independent reads must beat pointer chasing on 1 thread (out-of-order execution
overlaps independent misses). Only ratios measured in the same run are checked, never an absolute
time. The GPU row must be either measured or skipped with a reason."""
import json
import os
import tempfile

from e2e_util import Checker, args, run

MIB = 64  # beyond the L2 of any machine and the L3 of a small one
MIN_SPEEDUP = 2.0  # independent / dependent on 1 thread; typically 10x or more


def main():
    a = args()
    c = Checker()
    with tempfile.TemporaryDirectory(prefix="tandem_e2e_") as d:
        out = os.path.join(d, "memory.json")
        rc, so, se = run([a.tandem, "bench", "memory", "--mib", str(MIB), "--reps", "2", "--accesses", "200000",
                          "--gpu-accesses", "1000000", "--json", out])
        print(so, end="")
        c.check(rc == 0, f"bench memory exit code {rc}: {se.strip()}")
        c.check("checksums: all agree" in so, "checksums line missing or a mismatch")
        if not os.path.exists(out):
            c.check(False, "no JSON report written")
            c.done()
        rep = json.load(open(out))
        c.check(rep.get("bench") == "memory", "JSON: bench is not memory")
        c.check(rep.get("checksums_ok") is True, f"JSON: checksums_ok is {rep.get('checksums_ok')}")
        cfg = rep.get("config", {})
        c.check(cfg.get("mib") == MIB and cfg.get("reps") == 2, f"JSON: config {cfg}")
        ncores = len(cfg.get("cores", []))
        rows = {(r["pattern"], r["threads"]): r for r in rep.get("cpu", [])}
        want = {(p, 1) for p in ("dependent", "independent", "prefetch")}
        if ncores > 1:
            want |= {(p, ncores) for p in ("dependent", "independent", "prefetch")}
        c.check(set(rows) == want, f"CPU rows {sorted(rows)}, expected {sorted(want)}")
        for k, r in rows.items():
            rate = r.get("median_rate_per_s") or 0
            c.check(rate > 0, f"{k}: rate {rate}")
            c.check(len(r.get("seconds", [])) == 2, f"{k}: {len(r.get('seconds', []))} repetitions, expected 2")
            c.check(abs(r.get("rate_per_core_per_s", 0) * k[1] - rate) <= 1e-6 * rate, f"{k}: per-core rate")
            c.check(r.get("checksum_ok") is True, f"{k}: checksum")
        dep = rows.get(("dependent", 1), {}).get("median_rate_per_s")
        ind = rows.get(("independent", 1), {}).get("median_rate_per_s")
        if dep and ind:
            c.check(ind > MIN_SPEEDUP * dep, f"1 thread: independent reads {ind / 1e6:.1f} M/s are not "
                                             f"{MIN_SPEEDUP}x pointer chasing {dep / 1e6:.1f} M/s")
        g = rep.get("gpu") or {}
        c.check((g.get("median_rate_per_s") or 0) > 0 or bool(g.get("skipped")),
                f"JSON: gpu is neither measured nor skipped with a reason: {g}")
    c.done()


if __name__ == "__main__":
    main()
