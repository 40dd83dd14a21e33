"""`tandem bench cores` (IPv4 router throughput against worker cores, G-Opt Fig. 10): a short run
with 1 and 2 workers on the CPU paths must succeed, account for every packet at every point, write
one point per path and worker count, and report the GPU path as skipped (with a reason) where there
is no GPU. No time is checked."""
import json
import os

from e2e_util import Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    out = os.path.join(d, "cores.json")
    fib = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    rc, so, se = run([a.tandem, "bench", "cores", "--fib", fib, "--gen", "count=50000,dst=uniform,flows=1000,size=64,seed=3",
                      "--workers", "1,2", "--packets", "200000", "--reps", "2", "--json", out])
    print(so, end="")
    c.check(rc == 0, f"bench cores exit code {rc}: {se.strip()}")
    c.check("ACCOUNTING MISMATCH" not in so, "a point lost or invented packets")
    if not os.path.exists(out):
        c.check(False, "no JSON report written")
        c.done()
    rep = json.load(open(out))
    c.check(rep.get("bench") == "cores" and rep.get("all_balanced") is True, f"JSON: all_balanced {rep.get('all_balanced')}")
    paths = rep.get("paths", {})
    for p in ("scalar", "batched"):
        pts = paths.get(p)
        c.check(isinstance(pts, list) and [x["workers"] for x in pts] == [1, 2], f"{p}: points {pts}")
        for x in pts or []:
            c.check(x.get("balanced") and x.get("mpps_median", 0) > 0 and len(x.get("mpps", [])) == 2, f"{p}: point {x}")
    gpu = paths.get("gpu")
    gpu_present = rep.get("machine", {}).get("gpu") is not None
    if not gpu_present:
        c.check(isinstance(gpu, str) and gpu.startswith("skipped"), f"gpu path without a GPU: {gpu!r}")
    c.done()


if __name__ == "__main__":
    main()
