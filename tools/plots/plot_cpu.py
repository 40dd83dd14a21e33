"""Figures of Tandem's CPU benchmarks, called by plot_gpu.py's driver (scripts/plots.sh):
  cores    Mpps vs worker cores per lookup path, the GPU path at workers + its master core
           (G-Opt Fig. 10 shape), with the CPU cores that match the GPU's best rate
  anchors  lookups/s per row of each section (Tandem vs DPDK), as ratios to the section's baseline
"""
import plot_gpu as pg
from plot_gpu import plt

PATH_COLORS = {"scalar": "tab:gray", "batched": "tab:blue", "gpu": "tab:red"}


def plot_cores(report, src, out_path):
    fig, ax = plt.subplots(figsize=(9, 5.5), constrained_layout=True)
    paths = pg.as_dict(report.get("paths"))
    drawn = 0
    for name, pts in paths.items():
        if not isinstance(pts, list) or not pts:
            continue
        xs = [p.get("cores") for p in pts if pg.num(p.get("mpps_median"))]
        ys = [p["mpps_median"] for p in pts if pg.num(p.get("mpps_median"))]
        label = {"scalar": "CPU scalar", "batched": "CPU batched (prefetch)",
                 "gpu": f"GPU ({pg.dget(report, 'config', 'gpu_mode') or 'offload'}), workers + master"}.get(name, name)
        ax.plot(xs, ys, marker="o", color=PATH_COLORS.get(name, "black"), label=label)
        drawn += 1
    if not drawn:
        pg.no_data(ax)
    else:
        ax.set_xlabel("CPU cores used (workers; + 1 master for the GPU path)")
        ax.set_ylabel("throughput (Mpps, median of repetitions)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left")
        match = pg.as_dict(report.get("cpu_cores_to_match_gpu"))
        if pg.num(match.get("gpu_best_mpps")):
            ax.axhline(match["gpu_best_mpps"], color="tab:red", ls=":", lw=1)
            text = ", ".join(f"{k}: {v if v is not None else 'not within range'}" for k, v in match.items()
                             if k not in ("gpu_best_mpps", "gpu_best_cores"))
            ax.text(0.99, 0.02, f"CPU cores to match the GPU's best {match['gpu_best_mpps']:.1f} Mpps: {text}",
                    transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
    cfg = pg.as_dict(report.get("config"))
    size = next((p.split('=')[1] for p in str(cfg.get('gen', '')).split(',') if p.startswith('size=')), '?')
    app = report.get("app", "ipv4")  # reports before apps were generic are the IPv4 router's
    mean = report.get("mean_frame_bytes")
    frames = f"{mean + 4:.0f} B frames on average" if pg.num(mean) else f"{size} B packets"
    pg.finish(fig, report, f"tandem bench cores: {app}, {frames}, throughput vs cores", src, out_path)


def plot_anchors(report, src, out_path):
    sections = [s for s in report.get("sections", []) if isinstance(s, dict) and s.get("results")]
    n = max(1, len(sections))
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.2 + 0.32 * sum(len(s["results"]) for s in sections) + n),
                             constrained_layout=True, squeeze=False)
    if not sections:
        pg.no_data(axes[0][0])
    for ax, s in zip((a[0] for a in axes), sections):
        rows = s["results"]
        base = next((r for r in rows if r.get("path") == s.get("baseline")), None)
        base_rate = base.get("median_rate_per_s") if base else None
        names = [r["path"] for r in rows]
        rates = [r.get("median_rate_per_s") or 0 for r in rows]
        colors = ["tab:green" if nm.startswith("tandem") else "tab:gray" for nm in names]
        ax.barh(range(len(rows)), [x / 1e6 for x in rates], color=colors)
        ax.set_yticks(range(len(rows)), names, fontsize=8)
        ax.invert_yaxis()
        for i, r in enumerate(rates):
            ratio = f"  {r / base_rate:.2f}x" if pg.num(base_rate) and base_rate > 0 else ""
            ax.text(r / 1e6, i, f" {r / 1e6:.1f}{ratio}", va="center", fontsize=7)
        ax.set_xlabel("M lookups/s, one core (ratio to " + str(s.get("baseline")) + ")")
        ax.set_title(s.get("title", ""), fontsize=10)
        ax.grid(True, axis="x", alpha=0.3)
    pg.finish(fig, report, "tandem bench anchors: Tandem (green) vs DPDK (grey)", src, out_path)
