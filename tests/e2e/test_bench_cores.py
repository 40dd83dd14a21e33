"""`tandem bench cores` (IPv4 router throughput against worker cores, G-Opt Fig. 10): a short run
with 1 and 2 workers on the CPU paths must succeed, account for every packet at every point, write
one point per path and worker count, and report the GPU path as skipped (with a reason) where there
is no GPU. Each CPU point carries its stage times (ns per packet, framework and app apart), and the
packet count grows so that a repetition lasts --min-seconds. The cores alone (the probe) come first
for each worker count, and each path's per-core share of one worker's rate is reported beside
theirs. No rate is checked."""
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
                      "--workers", "1,2", "--packets", "200000", "--reps", "2", "--min-seconds", "0.3", "--json", out])
    print(so, end="")
    c.check("stages, ns of a worker per packet:" in so and "framework" in so, "the stage lines are printed")
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
            # 200,000 packets take well under 0.3 s on any machine this runs on: the count grew.
            c.check(x.get("packets", 0) > 200000 and len(x.get("seconds", [])) == 2 and
                    sorted(x["seconds"])[-1] >= 0.15, f"{p}: repetitions' packets and seconds: {x}")
            st = x.get("stages_ns_per_packet", {})
            names = ["receive", "latency", "transmit"] + (["parse", "lookup", "apply", "counters"] if p == "batched" else ["app_whole"])
            c.check(all(st.get(n, 0) > 0 for n in names), f"{p}: stages {st}")
            c.check(abs(st.get("framework", 0) + st.get("app", 0) - st.get("total", -1)) < 1e-6 and st.get("app", 0) > 0,
                    f"{p}: framework + app = total: {st}")
            c.check(x.get("stages_timed_mpps", 0) > 0, f"{p}: the timed run's rate: {x}")
            # The workers' own rates summed are at least the stopwatch's (the run ends with the slowest).
            own, first = x.get("own_mpps", []), x.get("first_done_share", [])
            c.check(len(own) == 2 and len(first) == 2 and all(0 < f <= 1 for f in first) and
                    all(o >= m * 0.999 for o, m in zip(own, x["mpps"])), f"{p}: own rates {own}, first done {first}")
    probe = rep.get("core_probe", [])
    c.check([x.get("threads") for x in probe] == [1, 2], f"core_probe: one entry per worker count: {probe}")
    for x in probe:
        c.check(all(0 < x.get(k + "_min_" + u, 0) <= x.get(k + "_" + u, 0)
                    for k, u in (("chain", "gops"), ("ports", "gops"), ("stream", "gbps"))),
                f"core_probe: rates, slowest <= mean: {x}")
    share = rep.get("per_core_share_of_one_worker", {})
    for k in ("scalar", "batched", "cores_chain", "cores_ports", "cores_stream"):
        c.check(share.get(k, {}).get("2", 0) > 0, f"per_core_share_of_one_worker[{k}]['2']: {share}")
    c.check("per-core rate, % of one worker's:" in so and "cores alone" in so, "the scaling lines are printed")
    gpu = paths.get("gpu")
    gpu_present = rep.get("machine", {}).get("gpu") is not None
    if not gpu_present:
        c.check(isinstance(gpu, str) and gpu.startswith("skipped"), f"gpu path without a GPU: {gpu!r}")
    c.done()


if __name__ == "__main__":
    main()
