"""tools/plots/plot_gpu.py draws a PNG for each kind of GPU benchmark report (gpu-offload,
gpu-load, gpu-stream, gpu-router), from tiny synthetic reports and from reports with the optional
keys left out; skips reports of other benches; fails cleanly on a broken file. Needs matplotlib
(skipped without it, but failed where CI=true: scripts/install-deps.sh installs it there), no GPU,
no network; does not run `tandem`."""
import json
import os
import shutil
import struct
import sys

from e2e_util import SKIP, Checker, args, run, tmpdir

try:
    import matplotlib  # noqa: F401
except ImportError:
    if os.environ.get("CI") == "true":
        print("FAIL: matplotlib is not installed, and CI=true: scripts/install-deps.sh should have installed it "
              "(python3-matplotlib)")
        sys.exit(1)
    print("matplotlib is not installed: skipping (scripts/install-deps.sh or scripts/plots.sh installs it)")
    sys.exit(SKIP)

MACHINE = {"cpu_model": "Test CPU", "logical_cpus": 2, "gpu": {"name": "Test GPU", "sm_count": 4,
                                                                "compute_capability": "9.0"},
           "date_utc": "2026-01-01T00:00:00Z"}


def offload_report():
    def pts(base):
        return [{"n": n, "median_us": base + n / 1000, "min_us": base * 0.9 + n / 1000,
                 "p99_us": base * 1.5 + n / 1000, "reps": 10, "wrong_results": 0} for n in (1, 64, 4096, 262144)]
    return {"bench": "gpu-offload", "machine": MACHINE,
            "config": {"modes": ["async", "persistent"], "reps": 10, "persistent_blocks": 0},
            "echo": {"async": pts(14), "persistent": pts(8)}, "ipv4": {"async": pts(15), "persistent": pts(9)}}


def load_report():
    def cfg(name, mode, wait, peak, base):
        points = [{"fraction": 0, "offered_mpps": 0, "achieved_mpps": peak,
                   "latency_us": {"min": 1, "p50": base * 10, "p99": base * 30, "p999": base * 40, "max": base * 90}}]
        for f in (0.25, 0.5, 0.9):
            points.append({"fraction": f, "offered_mpps": f * peak, "achieved_mpps": f * peak,
                           "latency_us": {"min": 1, "p50": base * (1 + f), "p99": base * (2 + 3 * f),
                                          "p999": base * 6, "max": base * 9}})
        c = {"config": name, "path": "cpu" if mode == "" else "gpu", "mode": mode, "max_wait_us": wait,
             "peak_mpps": peak, "points": points}
        if mode:
            c["p99_half_load_us"] = points[2]["latency_us"]["p99"]
            c["p99_half_load_limit_us"] = 13.5 + wait
        return c
    return {"bench": "gpu-load", "machine": MACHINE, "config": {"workers": 2, "batch": 8192, "slots": 4},
            "configs": [cfg("cpu batched", "", 0, 40, 1), cfg("async wait 10us", "async", 10, 30, 10),
                        cfg("persistent wait 50us", "persistent", 50, 35, 8)]}


def stream_report():
    runner = [{"mode": m, "batch": b, "slots": s, "rates": [r * 0.98, r, r * 1.01], "median_rate": r,
               "wrong_results": 0}
              for m, s, k in (("async", 4, 1.0), ("persistent", 1, 0.8)) for b, r in ((262144, 3e9 * k), (1048576, 5e9 * k))]
    return {"bench": "gpu-stream", "machine": MACHINE, "config": {"engine_workers": 4, "engine_request": 8192},
            "pcie": {"h2d_gbs": 27, "d2h_gbs": 27.5, "both_h2d_gbs": 22, "both_d2h_gbs": 23},
            "bound_items_per_s": {"each": 6.75e9, "both": 5.5e9}, "runner": runner,
            "engine": [{"mode": "async", "rates": [4e9], "median_rate": 4e9, "avg_batch": 1048576},
                       {"mode": "persistent", "median_rate": 3.5e9}]}


def router_report():
    its = [("1 whole packets", True, "async", 1, 9e6), ("2 headers only", False, "async", 1, 14e6),
           ("4 streams", False, "async", 4, 28e6), ("  persistent", False, "persistent", 1, 18e6)]
    return {"bench": "gpu-router", "machine": MACHINE, "config": {"batch": 8192, "gen": "count=1000,size=64"},
            "iterations": [{"iteration": n, "whole_packets": w, "mode": m, "slots": s, "rates_pps": [p, p * 1.01],
                            "median_pps": p, "batch_latency_us": {"min": 300, "p50": 600, "p99": 900, "max": 2000},
                            "identical_to_cpu": True} for n, w, m, s, p in its]}


def png_size(path):
    """(width, height) of a PNG file, or None if it is not one."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    tool = os.path.join(a.source_dir, "tools/plots/plot_gpu.py")
    env = dict(os.environ, MPLCONFIGDIR=os.path.join(d, "mplconfig"), MPLBACKEND="Agg")

    def write(name, obj):
        p = os.path.join(d, name)
        with open(p, "w") as f:
            json.dump(obj, f)
        return p

    full = {"offload": offload_report(), "load": load_report(), "stream": stream_report(), "router": router_report()}
    inputs = [write(f"full_{k}.json", v) for k, v in full.items()]
    # The same reports with every optional part left out: no machine, no ipv4, no p99 target, ...
    sparse = {
        "offload": {"bench": "gpu-offload", "echo": {"async": [{"n": 1, "median_us": 10}, {"n": 16, "median_us": 11}]}},
        "load": {"bench": "gpu-load", "machine": {"gpu": None, "gpu_unavailable_reason": "no device"},
                 "configs": [{"config": "cpu batched", "path": "cpu",
                              "points": [{"fraction": 0.5, "offered_mpps": 5, "latency_us": {"p50": 2}}]}]},
        "stream": {"bench": "gpu-stream", "runner": [{"mode": "async", "batch": 1024, "median_rate": 1e9}]},
        "router": {"bench": "gpu-router", "iterations": [{"iteration": "2 headers only", "median_pps": 1e7}]},
    }
    inputs += [write(f"sparse_{k}.json", v) for k, v in sparse.items()]
    empty = [write(f"empty_{k}.json", {"bench": "gpu-" + k}) for k in ("offload", "load", "stream", "router")]
    other = write("other_bench.json", {"bench": "ipv4", "rows": []})
    out = os.path.join(d, "png")

    rc, so, se = run([sys.executable, tool, *inputs, *empty, other, "--out", out], env=env)
    c.check(rc == 0, f"plot_gpu.py exit code {rc}: {se.strip()[-600:]}")
    c.check("Traceback" not in se, f"plot_gpu.py raised: {se.strip()[-600:]}")
    for src in inputs + empty:
        png = os.path.join(out, os.path.splitext(os.path.basename(src))[0] + ".png")
        c.check(png in so.split("\n"), f"{png} not printed: {so.strip()[-400:]}")
        ok = os.path.isfile(png) and os.path.getsize(png) > 1000
        c.check(ok, f"{png}: missing or empty")
        size = png_size(png) if ok else None
        c.check(size is not None and size[0] >= 400 and size[1] >= 300, f"{png}: not a PNG of a sensible size: {size}")
    c.check("other_bench.json: skipped" in so and "'ipv4'" in so, f"unknown bench not reported as skipped: {so.strip()[-400:]}")
    c.check(not os.path.exists(os.path.join(out, "other_bench.png")), "a PNG was drawn for an unknown bench")

    # A real report from the repository, when present.
    real = os.path.join(a.source_dir, "bench/results/2026-11-21-h200/offload/bench_gpu_offload.json")
    if os.path.isfile(real):
        rc, so, se = run([sys.executable, tool, real, "--out", out], env=env)
        png = os.path.join(out, "bench_gpu_offload.png")
        c.check(rc == 0 and os.path.isfile(png) and os.path.getsize(png) > 1000,
                f"real report {real}: exit {rc}: {se.strip()[-400:]}")

    # A broken file: a message naming it and a non-zero exit, the other inputs still drawn.
    bad = os.path.join(d, "broken.json")
    with open(bad, "w") as f:
        f.write('{"bench": "gpu-offload", ')
    out2 = os.path.join(d, "png2")
    rc, so, se = run([sys.executable, tool, bad, inputs[0], "--out", out2], env=env)
    c.check(rc != 0 and "broken.json" in se and "Traceback" not in se, f"broken report: exit {rc}: {se.strip()[-400:]}")
    c.check(os.path.isfile(os.path.join(out2, "full_offload.png")), "a broken report stopped the next one")
    if not c.failures:
        shutil.rmtree(d, ignore_errors=True)
    else:
        print(f"inputs and PNGs kept in {d}")
    c.done()


if __name__ == "__main__":
    main()
