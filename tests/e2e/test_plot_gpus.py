"""tools/plots/plot_gpus.py on a real two-GPU report (bench/results/2026-11-26-multigpu): a PNG per
report with the resident rows per GPU count and the ceilings' ratios; a report without GPU counts
is skipped with a message and a failing exit. Needs matplotlib (CI installs it), no GPU."""
import json
import os
import sys

from e2e_util import SKIP, Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if os.environ.get("CI") != "true":  # CI installs it: its absence there is a failure
            print("matplotlib is not installed: skipped")
            return SKIP
    d = tmpdir()
    tool = os.path.join(a.source_dir, "tools/plots/plot_gpus.py")
    report = os.path.join(a.source_dir, "bench/results/2026-11-26-multigpu/run2/bench_gpu_path_ipv4.json")
    rc, so, se = run([sys.executable, tool, report, "--out", d])
    png = os.path.join(d, "bench_gpu_path_ipv4.png")
    c.check(rc == 0 and os.path.exists(png) and os.path.getsize(png) > 10000, f"plot_gpus: {rc} {so} {se[-300:]}")
    old = os.path.join(d, "old.json")
    json.dump({"rows": [{"path": "GPU resident (persistent, cells)", "threads": "8 receive", "size": "64",
                         "mpps": 10}]}, open(old, "w"))
    rc, so, se = run([sys.executable, tool, old, "--out", d])
    c.check(rc == 1 and "skipped" in se and "GPU count" in se, f"plot_gpus on a report without GPU counts: {rc} {se}")
    c.check(not os.path.exists(os.path.join(d, "old.png")), "a PNG was made for a report it skipped")
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
