#!/usr/bin/env python3
"""Plots one GPU against several from `tandem bench gpu-path --gpus 1,2 --json F`, one PNG per input.

    python3 tools/plots/plot_gpus.py RESULT_JSON... --out DIR

Per frame size, the resident rows' Mpps against receive threads, one line per GPU count, and, where
the report has them, the ceilings (kernels that do no app work) on one GPU and on all at once.
Reports without a `gpus` field in their rows are skipped with a message. Output: DIR/<stem>.png.
"""
import argparse
import json
import os
import sys
import textwrap

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover - reported to the user
    print("plot_gpus.py needs matplotlib: run scripts/plots.sh, or python3 -m pip install --user matplotlib",
          file=sys.stderr)
    sys.exit(2)


def threads_of(row):
    return int(row["threads"].split()[0])


def plot(report, path):
    rows = [r for r in report.get("rows", []) if "gpus" in r and r["path"].startswith("GPU resident")]
    if not rows:
        raise ValueError("no resident rows with a GPU count")
    sizes = sorted({r["size"] for r in rows}, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    ceilings = report.get("ceilings", [])
    panels = len(sizes) + (1 if ceilings else 0)
    fig, axes = plt.subplots(1, panels, figsize=(5.6 * panels, 4.6), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        # One line per resident mode and GPU count ("GPU resident (persistent, cells) x 2 GPUs").
        lines = sorted({(r["path"].split(" x ")[0], r["gpus"]) for r in rows if r["size"] == size})
        modes = {m for m, _ in lines}
        for way, n in lines:
            pts = sorted((threads_of(r), r["mpps"]) for r in rows
                         if r["size"] == size and r["gpus"] == n and r["path"].split(" x ")[0] == way)
            mode = way[len("GPU resident "):] + ", " if len(modes) > 1 else ""
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{mode}{n} GPU" + ("s" if n > 1 else ""))
        ax.set_title(f"{report.get('app', '?')}, {size} B frames")
        ax.set_xlabel("receive threads")
        ax.set_ylabel("Mpps")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    if ceilings:
        ax = axes[0][-1]
        one = [c for c in ceilings if "GPUs at once" not in c["name"]]
        names = [textwrap.fill(c["name"], 44) for c in one]
        many = {c["name"].rsplit(",", 1)[0]: c["mpps"] for c in ceilings if "GPUs at once" in c["name"]}
        ratio = [many.get(c["name"], 0) / c["mpps"] if c["mpps"] else 0 for c in one]
        ax.barh(range(len(one)), ratio, color="tab:gray")
        ax.set_yticks(range(len(one)))
        ax.set_yticklabels(names, fontsize=6)
        ax.axvline(2.0, color="tab:red", linestyle="--", linewidth=1)
        ax.set_xlabel("all GPUs at once / one GPU")
        ax.set_title("ceilings (no app work)")
    m = report.get("machine", {})
    fig.suptitle(f"tandem bench gpu-path: {m.get('gpu_count', '?')} x {(m.get('gpu') or {}).get('name', '?')}, "
                 f"{m.get('cpu_model', '?')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    made = 0
    for f in a.inputs:
        try:
            with open(f) as fh:
                report = json.load(fh)
            out = os.path.join(a.out, os.path.splitext(os.path.basename(f))[0] + ".png")
            plot(report, out)
            print(f"{f} -> {out}")
            made += 1
        except (OSError, ValueError, KeyError) as e:
            print(f"{f}: skipped ({e})", file=sys.stderr)
    return 0 if made else 1


if __name__ == "__main__":
    sys.exit(main())
