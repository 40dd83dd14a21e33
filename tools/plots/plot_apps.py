"""Figures of the firewall and DPI benchmarks, called by plot_gpu.py's driver (scripts/plots.sh):
  dpi       payload Gbps per path (baseline, batched, Hyperscan, GPU, rules; 1 and T threads)
            for match-free and match-heavy traffic, log scale (G-Opt Fig. 12, Koromilas Fig. 3c)
  classify  headers/s per classifier (linear, HyperSplit scalar/batched, rte_acl, GPU), log scale
  fw_router LPM + firewall: CPU decisions/s per path; GPU fused vs split kernel time per batch
            (device resident and host to host): the GPU-router report's Fig. 8 question
"""
import plot_gpu as pg
from plot_gpu import plt

TRAFFIC_COLORS = {"match-free": "tab:blue", "match-heavy": "tab:orange"}


def plot_dpi(report, src, out_path):
    fig, ax = plt.subplots(figsize=(11, 5.5), constrained_layout=True)
    traffic = pg.as_list(report.get("traffic"))
    paths = []
    for t in traffic:
        for r in pg.as_list(t.get("results")):
            if pg.num(r.get("median_seconds")) and r.get("path") not in paths:
                paths.append(r["path"])
    if not paths:
        pg.no_data(ax)
    else:
        width = 0.8 / max(len(traffic), 1)
        for k, t in enumerate(traffic):
            bits = 8.0 * float(t.get("payload_bytes", 0))
            rates = {r["path"]: bits / r["median_seconds"] / 1e9 for r in pg.as_list(t.get("results"))
                     if pg.num(r.get("median_seconds"))}
            xs = [i + (k - (len(traffic) - 1) / 2) * width for i in range(len(paths))]
            ys = [rates.get(p, 0) for p in paths]
            name = t.get("traffic", "?")
            ax.bar(xs, ys, width, label=name, color=TRAFFIC_COLORS.get(name))
            for x, y in zip(xs, ys):
                if y > 0:
                    ax.text(x, y * 1.05, f"{y:.2g}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(paths)))
        labels = [p.replace("stage1_", "").replace("_t", "\n") + (" thr" if "_t" in p else "") for p in paths]
        ax.set_xticklabels([lb.replace("rules_", "rules\n") if "\n" not in lb else lb for lb in labels], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("payload throughput (Gbps, median of repetitions)")
        ax.legend()
    pg.finish(fig, report, f"tandem bench dpi: {report.get('patterns', '?')} patterns, Aho-Corasick vs Hyperscan vs GPU",
              src, out_path)


def plot_classify(report, src, out_path):
    fig, ax = plt.subplots(figsize=(9, 5), constrained_layout=True)
    rows = [r for r in pg.as_list(report.get("results")) if pg.num(r.get("median_rate_per_s"))]
    if not rows:
        pg.no_data(ax)
    else:
        names = [r["path"] for r in rows]
        ys = [r["median_rate_per_s"] / 1e6 for r in rows]
        colors = ["tab:gray" if "linear" in n else "tab:green" if "dpdk" in n else "tab:red" if "gpu" in n else "tab:blue"
                  for n in names]
        ax.bar(range(len(rows)), ys, color=colors)
        for i, y in enumerate(ys):
            ax.text(i, y * 1.05, f"{y:.3g}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([n.replace("_", "\n", 1) for n in names], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("M headers/s (median of repetitions)")
    rules = pg.dget(report, "config", "rules") or "random rules"
    pg.finish(fig, report, f"tandem bench classify: {rules}", src, out_path)


def plot_fw_router(report, src, out_path):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5), constrained_layout=True)
    rows = [r for r in pg.as_list(report.get("results")) if pg.num(r.get("median_rate_per_s"))]
    if not rows:
        pg.no_data(ax1)
    else:
        names = [r["path"] for r in rows]
        ys = [r["median_rate_per_s"] / 1e6 for r in rows]
        ax1.bar(range(len(rows)), ys, color=["tab:gray" if "linear" in n else "tab:blue" for n in names])
        for i, y in enumerate(ys):
            ax1.text(i, y * 1.05, f"{y:.3g}", ha="center", va="bottom", fontsize=8)
        ax1.set_xticks(range(len(rows)))
        ax1.set_xticklabels([n.replace("cpu_", "").replace("_", "\n") for n in names], fontsize=8)
        ax1.set_yscale("log")
        ax1.set_ylabel("M decisions/s, one core (median of repetitions)")
        ax1.set_title("CPU", fontsize=10)
    gpu = [g for g in pg.as_list(report.get("gpu")) if isinstance(g.get("median_us"), dict)]
    if not gpu:
        pg.no_data(ax2)
    else:
        batches = [g["batch"] for g in gpu]
        for key, label, style in (("fused", "fused kernel", "o-"), ("split", "classify + LPM kernels", "s-"),
                                  ("fused_h2h", "fused, host to host", "o--"), ("split_h2h", "split, host to host", "s--")):
            ax2.plot(batches, [g["median_us"].get(key, float("nan")) for g in gpu], style, label=label)
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log")
        ax2.set_xlabel("batch (headers)")
        ax2.set_ylabel("time per batch (us, median, CUDA events)")
        ax2.set_title("GPU: one thread doing both vs one kernel per function", fontsize=10)
        ax2.legend(fontsize=8)
    rules = pg.dget(report, "config", "firewall") or "?"
    pg.finish(fig, report, f"tandem bench fw-router: {rules}", src, out_path)
