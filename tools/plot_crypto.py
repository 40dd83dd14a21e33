#!/usr/bin/env python3
"""Plots the paper tables of `tandem bench crypto --apunet --batch-sweep --json FILE`.

  tools/plot_crypto.py FILE [--out DIR]

Writes DIR/crypto_apunet.png (APUNet's eight algorithms: grouped bars per algorithm, one bar per
column -- CPU, CPU optimised, GPU with copies, GPU mapped -- in Gbit/s on a log scale, RSA-2048 in
operations/s beside them) and DIR/crypto_sweep.png (Koromilas et al. Fig. 3: throughput and
latency per batch size for AES-128-CBC and MD5, one line per path). DIR defaults to FILE's folder.
Cells that were not measured (no GPU, n/a, a mismatch) are null in the JSON: their bars are left
out and named under the axis, so a report made without a GPU plots too. A table missing from the
report is skipped with a note.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLUMNS = [("cpu", "CPU"), ("cpu_optimised", "CPU optimised"), ("gpu_copies", "GPU with copies"),
           ("gpu_mapped", "GPU mapped")]
COLORS = ["#4c72b0", "#55a868", "#c44e52", "#8172b2"]


def machine_title(report):
    m = report.get("machine") or {}
    gpu = (m.get("gpu") or {}).get("name") or "no GPU"
    return f"{m.get('cpu_model', '?')} ({m.get('logical_cpus', '?')} CPUs), {gpu}"


def short_status(cell):
    status = (cell or {}).get("status") or "not measured"
    return status.split(":")[0]


def left_out(notes):
    """'status: what, what; status: ...' from (status, what) pairs, grouped by status."""
    groups = {}
    for status, what in notes:
        groups.setdefault(status, []).append(what)
    parts = []
    for status, whats in groups.items():
        shown = ", ".join(whats[:8]) + (f" and {len(whats) - 8} more" if len(whats) > 8 else "")
        parts.append(f"{status}: {shown}")
    return "left out -- " + "; ".join(parts)


def bars(ax, rows, key, ylabel):
    """Grouped bars of `key` (a cell field) for `rows`; returns the notes of the cells left out."""
    notes = []
    width = 0.8 / len(COLUMNS)
    values = []
    for c, (col, label) in enumerate(COLUMNS):
        xs, ys = [], []
        for i, row in enumerate(rows):
            cell = (row.get("cells") or {}).get(col) or {}
            v = cell.get(key)
            if isinstance(v, (int, float)) and v > 0:
                xs.append(i + (c - (len(COLUMNS) - 1) / 2) * width)
                ys.append(v)
            else:
                notes.append((short_status(cell), f"{row.get('algorithm', '?')} {label}"))
        values += ys
        ax.bar(xs, ys, width, label=label, color=COLORS[c])
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r.get("algorithm", "?") for r in rows], rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    if values:
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "nothing measured", ha="center", va="center", transform=ax.transAxes)
    ax.grid(axis="y", which="both", alpha=0.3)
    return notes


def plot_apunet(report, path):
    t = report.get("apunet")
    if not t or not t.get("rows"):
        print("plot_crypto: no APUNet table in the report (run bench crypto with --apunet)")
        return False
    rows = t["rows"]
    packets = [r for r in rows if r.get("unit") != "operations"]
    ops = [r for r in rows if r.get("unit") == "operations"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [max(len(packets), 1), 1.6]})
    notes = bars(axes[0], packets, "gbit_per_s", "Gbit/s (log)")
    cfg = t.get("config") or {}
    axes[0].set_title(f"lookups on {cfg.get('lookup_size', '?')}-B packets, the rest on {cfg.get('payload_size', '?')}-B")
    axes[0].legend(handles=[Patch(color=COLORS[c], label=label) for c, (_, label) in enumerate(COLUMNS)], fontsize=8)
    notes += bars(axes[1], ops, "median_per_s", "operations/s (log)")
    axes[1].set_title("RSA-2048 private key")
    fig.suptitle(f"APUNet's eight algorithms, {cfg.get('threads', '?')} CPU threads -- {machine_title(report)}", fontsize=10)
    if notes:
        fig.text(0.01, 0.01, left_out(notes), fontsize=7, wrap=True, va="bottom")
    fig.tight_layout(rect=(0, 0.08 if notes else 0, 1, 0.95))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"plot_crypto: wrote {path}")
    return True


def plot_sweep(report, path):
    t = report.get("batch_sweep")
    if not t or not t.get("rows"):
        print("plot_crypto: no batch sweep in the report (run bench crypto with --batch-sweep)")
        return False
    rows = t["rows"]
    algos = list(dict.fromkeys(r.get("algorithm", "?") for r in rows))
    fig, axes = plt.subplots(2, len(algos), figsize=(6 * len(algos), 8), squeeze=False)
    notes = []
    for a, algo in enumerate(algos):
        mine = [r for r in rows if r.get("algorithm") == algo]
        paths = list(dict.fromkeys((r.get("path", "?"), r.get("threads", 0)) for r in mine))
        for path_name, threads in paths:
            label = f"{path_name} x{threads}" if threads else path_name
            pts = sorted((r["batch"], r.get("gbit_per_s"), r.get("latency_ms")) for r in mine
                         if r.get("path") == path_name and r.get("threads", 0) == threads)
            got = [(b, g, l) for b, g, l in pts if isinstance(g, (int, float)) and isinstance(l, (int, float))]
            if not got:
                bad = next((r for r in mine if r.get("path") == path_name and r.get("threads", 0) == threads), {})
                notes.append((short_status(bad), f"{algo} {label}"))
                continue
            axes[0][a].plot([p[0] for p in got], [p[1] for p in got], marker="o", label=label)
            axes[1][a].plot([p[0] for p in got], [p[2] for p in got], marker="o", label=label)
        axes[0][a].set_title(f"{algo}: throughput")
        axes[0][a].set_ylabel("Gbit/s")
        axes[1][a].set_title(f"{algo}: latency per batch (host to host)")
        axes[1][a].set_ylabel("ms (log)")
        for row in (0, 1):
            ax = axes[row][a]
            ax.set_xscale("log", base=2)
            ax.set_xlabel("batch size (packets)")
            ax.grid(which="both", alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=8)
                if row == 1:
                    ax.set_yscale("log")
            else:
                ax.text(0.5, 0.5, "nothing measured", ha="center", va="center", transform=ax.transAxes)
    cfg = t.get("config") or {}
    fig.suptitle(f"Batch sweep (Koromilas et al. Fig. 3), {cfg.get('packet_bytes', '?')}-B packets -- {machine_title(report)}",
                 fontsize=10)
    if notes:
        fig.text(0.01, 0.01, left_out(notes), fontsize=7, wrap=True, va="bottom")
    fig.tight_layout(rect=(0, 0.04 if notes else 0, 1, 0.96))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"plot_crypto: wrote {path}")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", help="the JSON of tandem bench crypto --json")
    ap.add_argument("--out", help="output folder (default: the report's)")
    args = ap.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    out = args.out or os.path.dirname(os.path.abspath(args.report))
    os.makedirs(out, exist_ok=True)
    plot_apunet(report, os.path.join(out, "crypto_apunet.png"))
    plot_sweep(report, os.path.join(out, "crypto_sweep.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
