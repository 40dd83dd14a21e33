"""`tandem run` through the GPU offload engine: every mode with several workers forwards exactly what
the reference trie decides, and a GPU fault injected mid-run (a trapping kernel, which breaks the
CUDA context) loses nothing: the run finishes on the CPU with received = forwarded + dropped.
The resident path (--gpu-path resident) forwards the real captures to the same bytes as the CPU
path, in every mode and layout, and a fault under it loses nothing either.
Skipped (exit 77) where there is no usable GPU."""
import json
import os
import sys

from e2e_util import SKIP, Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    fib = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    gen = "count=300000,dst=fib,flows=5000,zipf=1.1,size=64,seed=5"
    rc, so, se = run([T, "run", "--fib", fib, "--gen", "count=10", "--device", "gpu"])
    if "no usable GPU" in se:
        print("SKIPPED: no usable GPU: " + se.strip().splitlines()[-1])
        sys.exit(SKIP)

    def forward(extra, name):
        out = os.path.join(d, name + ".json")
        rc, so, se = run([T, "run", "--fib", fib, "--gen", gen, "--device", "gpu", "--verify", "--json", out] + extra)
        c.check(rc == 0, f"{name}: exit {rc}: {(so + se)[-400:]}")
        if rc != 0 or not os.path.exists(out):
            return None, se
        return json.load(open(out)), se

    for mode, engine in [("async", "staged"), ("graph", "staged"), ("mapped", "staged"), ("persistent", "staged"),
                         ("async", "gather"), ("persistent", "gather")]:
        r, _ = forward(["--gpu-mode", mode, "--engine", engine, "--workers", "3", "--batch", "4096"],
                       mode + "-" + engine)
        if r is None:
            continue
        c.check(r["balanced"] and r["received"] == 300000, f"{mode}: accounting {r['received']} {r['balanced']}")
        c.check(r["verify"]["mismatches"] == 0 and r["verify"]["checked"] > 0, f"{mode}: verify {r['verify']}")
        c.check(r["engine"]["ended_on_gpu"] and r["engine"]["cpu_batches"] == 0, f"{mode}: engine {r['engine']}")

    for mode, engine in [("async", "staged"), ("persistent", "staged"), ("async", "gather")]:
        r, se = forward(["--gpu-mode", mode, "--engine", engine, "--workers", "2", "--batch", "2048",
                         "--inject-gpu-fault", "4"], mode + "-" + engine + "-fault")
        if r is None:
            continue
        c.check("GPU failed, continuing on the CPU" in se, f"{mode} fault: no report of the failure: {se[-300:]}")
        c.check(se.count("GPU failed") == 1, f"{mode} fault: the failure is reported {se.count('GPU failed')} times")
        c.check(r["balanced"] and r["received"] == 300000, f"{mode} fault: accounting {r['received']}")
        c.check(r["verify"]["mismatches"] == 0, f"{mode} fault: verify {r['verify']}")
        e = r["engine"]
        c.check(not e["ended_on_gpu"] and e["cpu_batches"] > 0 and e["gpu_error"],
                f"{mode} fault: engine {e}")
    # The resident path on real captures: the output capture byte for byte the CPU path's, counters
    # the same, every decision the reference's; routers rewrite TTL, checksum and MACs.
    for cap in ("example.pcap", "many-protocols.pcap", "tls2.pcap"):
        pcap = os.path.join(a.source_dir, "data/pcap", cap)
        outs = {}
        for name, extra in [("cpu", ["--device", "cpu"]),
                            ("persistent-cells", ["--device", "gpu", "--gpu-path", "resident"]),
                            ("persistent-packed", ["--device", "gpu", "--gpu-path", "resident", "--frame-layout",
                                                   "packed", "--batch", "100"]),
                            ("dma", ["--device", "gpu", "--gpu-path", "resident", "--gpu-mode", "async",
                                     "--frame-layout", "packed", "--batch", "300"])]:
            out, js = os.path.join(d, f"{cap}.{name}.pcap"), os.path.join(d, f"{cap}.{name}.json")
            rc, so, se = run([T, "run", "--fib", fib, "--pcap", pcap, "--verify", "--out", out, "--json", js] + extra)
            c.check(rc == 0, f"{cap} {name}: exit {rc}: {(so + se)[-400:]}")
            if rc == 0:
                outs[name] = (open(out, "rb").read(), json.load(open(js)))
        if "cpu" not in outs:
            continue
        want, wr = outs.pop("cpu")
        for name, (got, r) in outs.items():
            c.check(got == want, f"{cap} {name}: the output differs from the CPU path's")
            c.check(r["verify"]["mismatches"] == 0, f"{cap} {name}: verify {r['verify']}")
            c.check((r["received"], r["forwarded"], r["drops"]) == (wr["received"], wr["forwarded"], wr["drops"]),
                    f"{cap} {name}: counters differ from the CPU path's")
            c.check(r["resident"]["cpu_batches"] == 0 and not r["resident"]["gpu_failed"], f"{cap} {name}: {r['resident']}")
    r, se = forward(["--gpu-path", "resident", "--workers", "2", "--batch", "256", "--inject-gpu-fault", "20"],
                    "resident-fault")
    if r is not None:
        c.check(r["balanced"] and r["received"] == 300000, f"resident fault: accounting {r['received']}")
        c.check(r["resident"]["gpu_failed"] and r["resident"]["cpu_batches"] > 0, f"resident fault: {r['resident']}")
        c.check(r["verify"]["mismatches"] == 0, f"resident fault: verify {r['verify']}")
    c.done()


if __name__ == "__main__":
    main()
