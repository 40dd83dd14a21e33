#!/usr/bin/env python3
"""Plots the JSON reports of Tandem's GPU offload benchmarks, one PNG per input.

    python3 tools/plots/plot_gpu.py RESULT_JSON... --out DIR

Each report's "bench" key picks the figure:
  gpu-offload  round trip (median, min..p99 band) and items/s vs batch size N, per offload mode;
               echo and, when present, the IPv4 lookup side by side (G-Opt Fig. 2/3)
  gpu-load     p50 and p99 per-packet latency vs achieved load, one line per configuration, with
               each GPU configuration's p99 target at half of its peak (G-Opt Fig. 11)
  gpu-stream   IPv4 lookups/s per mode and batch (runner) and through the engine, against the
               two PCIe bounds measured in the same run
  gpu-router   Mpps per GPU-router iteration and each iteration's batch latency range
  cores, anchors  the CPU benchmarks' figures (tools/plots/plot_cpu.py)
  dpi, classify, fw-router   the firewall and DPI figures (tools/plots/plot_apps.py)
Other "bench" values are skipped with a message. Output: DIR/<input stem>.png.
"""
import argparse
import json
import math
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import EngFormatter, FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator
except ImportError:  # pragma: no cover - reported to the user
    print("plot_gpu.py needs matplotlib: run scripts/plots.sh, or python3 -m pip install --user matplotlib",
          file=sys.stderr)
    sys.exit(2)

# One colour per offload mode in every figure.
MODE_COLORS = {"async": "tab:blue", "graph": "tab:orange", "mapped": "tab:green", "persistent": "tab:red",
               "cpu": "black", "": "black"}
SPARE_COLORS = ["tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"]
LINESTYLES = ["-", "--", ":", "-."]


def mode_color(mode):
    mode = mode or ""
    if mode not in MODE_COLORS:
        MODE_COLORS[mode] = SPARE_COLORS[(len(MODE_COLORS) - 6) % len(SPARE_COLORS)]
    return MODE_COLORS[mode]


def num(x):
    """x as a finite float, or None (missing, null, a string, a bool, NaN)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def pos(x):
    """A number usable on a log axis, or None."""
    x = num(x)
    return x if x is not None and x > 0 else None


def dget(d, *keys):
    """d[k1][k2]... or None where any level is missing or not an object."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def as_list(x):
    return x if isinstance(x, list) else []


def as_dict(x):
    return x if isinstance(x, dict) else {}


def size_label(n):
    n = int(n)
    for div, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return str(n)


def machine_line(report):
    """'NVIDIA H200 (132 SMs, cc 9.0) | Intel Xeon ..., 16 logical CPUs | 2026-11-21'."""
    m = as_dict(report.get("machine"))
    if not m:
        return "machine: not recorded"
    parts = []
    gpu = m.get("gpu")
    if isinstance(gpu, dict) and gpu.get("name"):
        extra = []
        if num(gpu.get("sm_count")):
            extra.append(f"{int(gpu['sm_count'])} SMs")
        if gpu.get("compute_capability"):
            extra.append(f"cc {gpu['compute_capability']}")
        parts.append(str(gpu["name"]) + (f" ({', '.join(extra)})" if extra else ""))
    elif "gpu" in m:
        why = m.get("gpu_unavailable_reason")
        parts.append("no GPU" + (f" ({why})" if why else ""))
    if m.get("cpu_model"):
        cpu = " ".join(str(m["cpu_model"]).split())
        if num(m.get("logical_cpus")):
            cpu += f", {int(m['logical_cpus'])} logical CPUs"
        parts.append(cpu)
    if m.get("date_utc"):
        parts.append(str(m["date_utc"])[:10])
    return " | ".join(parts) if parts else "machine: not recorded"


def finish(fig, report, title, src, out_path):
    """Titles (the bench, then the machine), the source file at the bottom, and the PNG."""
    fig.suptitle(f"{title}\n{machine_line(report)}", fontsize=12)
    fig.supxlabel(f"source: {src}", x=0.005, ha="left", fontsize=7, color="0.45")
    fig.savefig(out_path, dpi=110)
    plt.close(fig)


def log_ticks(ax):
    """Plain numbers at 1, 2, 5 x 10^k on a log y axis (few decades: otherwise only 10^k)."""
    lo, hi = ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if hi / max(lo, 1e-300) < 1e4 else (1.0,)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def no_data(ax, what="no data in the report"):
    ax.text(0.5, 0.5, what, transform=ax.transAxes, ha="center", va="center", color="0.4", fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])


# --- gpu-offload -------------------------------------------------------------------------------

def plot_offload(report, src, out_path):
    cfg = as_dict(report.get("config"))
    kinds = []
    for key, title in (("echo", "echo: 4-byte items, no work (the cost of involving the GPU)"),
                       ("ipv4", "IPv4 lookup" + (f" ({os.path.basename(str(cfg['fib']))})" if cfg.get("fib") else ""))):
        if isinstance(report.get(key), dict):
            kinds.append((key, title))
    if not kinds:
        kinds = [("echo", "echo")]
    fig, axes = plt.subplots(2, len(kinds), figsize=(max(11, 7.5 * len(kinds)), 10.5), squeeze=False, sharey="row",
                             constrained_layout=True)
    all_n = set()
    any_wrong = False
    for col, (key, title) in enumerate(kinds):
        ax_t, ax_r = axes[0][col], axes[1][col]
        modes = as_dict(report.get(key))
        drawn = 0
        for mode, points in modes.items():
            rows = []
            for p in as_list(points):
                n, med = pos(dget(p, "n")), pos(dget(p, "median_us"))
                if n is None or med is None:
                    continue
                rows.append((n, med, pos(dget(p, "min_us")), pos(dget(p, "p99_us")), num(dget(p, "wrong_results")) or 0))
            if not rows:
                continue
            rows.sort()
            c = mode_color(mode)
            ns = [r[0] for r in rows]
            all_n.update(ns)
            ax_t.plot(ns, [r[1] for r in rows], "o-", color=c, label=mode, lw=2, ms=5)
            band = [r for r in rows if r[2] is not None and r[3] is not None]
            if band:
                ax_t.fill_between([r[0] for r in band], [r[2] for r in band], [r[3] for r in band], color=c,
                                  alpha=0.12, lw=0)
            ax_r.plot(ns, [r[0] / (r[1] * 1e-6) for r in rows], "o-", color=c, label=mode, lw=2, ms=5)
            wrong = [r for r in rows if r[4] > 0]
            if wrong:
                any_wrong = True
                ax_t.plot([r[0] for r in wrong], [r[1] for r in wrong], "x", color="red", ms=12, mew=3)
            drawn += 1
        if not drawn:
            no_data(ax_t)
            no_data(ax_r)
            ax_t.set_title(title, fontsize=11)
            continue
        ax_t.set_title(title, fontsize=11)
        ax_t.set_ylabel("round trip, median (µs)\nshaded: min .. p99")
        ax_r.set_title("throughput of one batch at a time (N / median round trip)", fontsize=10)
        ax_r.set_ylabel("items per second")
        ax_r.set_xlabel("batch size N (items)")
        for ax in (ax_t, ax_r):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.35)
            ax.grid(True, which="minor", axis="y", alpha=0.12)
            ax.legend(title="mode", fontsize=9, loc="upper left")
            ax.tick_params(axis="y", labelleft=True)
        log_ticks(ax_t)
        ax_r.yaxis.set_major_formatter(EngFormatter(sep=" "))
    ticks = sorted(all_n)
    if len(ticks) > 12:
        ticks = ticks[:: math.ceil(len(ticks) / 12)]
    for ax in axes.flat:
        if ticks and ax.get_xscale() == "log":
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_label(v) if v >= 1 else f"{v:g}"))
            ax.tick_params(axis="x", labelbottom=True)
    sub = []
    if num(cfg.get("reps")):
        sub.append(f"{int(cfg['reps'])} round trips per size")
    if num(cfg.get("persistent_blocks")) is not None:
        pb = int(cfg["persistent_blocks"])
        sub.append(f"persistent blocks: {pb if pb else 'one per SM'}")
    if any_wrong:
        sub.append("red x: WRONG RESULTS")
    title = "tandem bench gpu-offload: round trip through the GPU vs batch size N"
    if sub:
        title += "\n" + "; ".join(sub)
    finish(fig, report, title, src, out_path)


# --- gpu-load ----------------------------------------------------------------------------------

def plot_load(report, src, out_path, xkey):
    configs = [c for c in as_list(report.get("configs")) if isinstance(c, dict)]
    cfg = as_dict(report.get("config"))
    legend_rows = math.ceil((len(configs) + 3) / 2)  # configs + peak, target and measured markers
    fig = plt.figure(figsize=(15, 7.4 + 0.26 * legend_rows), constrained_layout=True)
    gs = fig.add_gridspec(2, 2, height_ratios=[7, 0.26 * legend_rows + 0.1])
    axes = [fig.add_subplot(gs[0, 0])]
    axes.append(fig.add_subplot(gs[0, 1], sharex=axes[0], sharey=axes[0]))
    ax_leg = fig.add_subplot(gs[1, :])
    ax_leg.axis("off")
    waits = sorted({w for w in (num(c.get("max_wait_us")) for c in configs if c.get("path") != "cpu") if w is not None})
    style_of_wait = {w: LINESTYLES[i % len(LINESTYLES)] for i, w in enumerate(waits)}
    used_fallback = False
    handles, any_target, any_peak = [], False, False
    for c in configs:
        cpu = c.get("path") == "cpu" or c.get("mode") in ("", None) and "cpu" in str(c.get("config", ""))
        mode = "cpu" if cpu else str(c.get("mode") or c.get("config") or "?")
        color = mode_color(mode)
        wait = num(c.get("max_wait_us"))
        ls = "-" if cpu else style_of_wait.get(wait, "-")
        label = str(c.get("config") or mode)
        paced, peak = [], []
        for p in as_list(c.get("points")):
            if not isinstance(p, dict):
                continue
            unpaced = (num(p.get("fraction")) or 0) <= 0  # the peak run: offered 0, placed at its achieved rate
            x = num(p.get("achieved_mpps" if unpaced else xkey))
            if (x is None or x <= 0) and not unpaced:
                other = "offered_mpps" if xkey == "achieved_mpps" else "achieved_mpps"
                x = num(p.get(other))
                used_fallback = used_fallback or x is not None
            lat = as_dict(p.get("latency_us"))
            row = (x, pos(lat.get("p50")), pos(lat.get("p99")), num(p.get("fraction")))
            if x is None:
                continue
            (peak if (row[3] or 0) <= 0 else paced).append(row)
        paced.sort()
        p99_half, limit = num(c.get("p99_half_load_us")), pos(c.get("p99_half_load_limit_us"))
        if p99_half is not None and limit is not None:
            label += f"  (p99 at ½ peak {p99_half:.1f} µs, target {limit:.1f}: {'met' if p99_half < limit else 'NOT met'})"
        for i, ax in enumerate(axes):
            pts = [(r[0], r[1 + i]) for r in paced if r[1 + i] is not None]
            if pts:
                ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o", ls=ls, color=color, lw=2, ms=5)
            for r in peak:
                if r[1 + i] is not None:
                    any_peak = True
                    ax.plot([r[0]], [r[1 + i]], marker="D", mfc="none", mec=color, mew=1.5, ms=8, ls="none")
        if limit is not None:
            any_target = True
            half = [r for r in paced if r[3] is not None and abs(r[3] - 0.5) < 1e-9]
            peak_x = num(c.get("peak_mpps"))
            xc = half[0][0] if half else (peak_x / 2 if peak_x else None)
            if xc is not None:
                axes[1].hlines(limit, xc * 0.88, xc * 1.12, colors=color, linestyles="--", lw=2.5)
                axes[1].plot([xc], [limit], marker="v", color=color, ms=8, ls="none")
            else:
                axes[1].axhline(limit, color=color, ls="--", lw=1, alpha=0.6)
            if half and half[0][2] is not None:
                axes[1].plot([half[0][0]], [half[0][2]], marker="o", mfc="none", mec=color, mew=2, ms=13, ls="none")
        handles.append(Line2D([], [], color=color, ls=ls, marker="o", lw=2, label=label))
    xlabel = "achieved load (Mpps)" if xkey == "achieved_mpps" else "offered load (Mpps)"
    if used_fallback:
        xlabel = xlabel[:-1] + ("; offered where achieved is missing)" if xkey == "achieved_mpps"
                                else "; achieved where offered is missing)")
    for ax, what in zip(axes, ("p50", "p99")):
        ax.set_title(f"{what} latency per packet (scheduled arrival to verdict)", fontsize=11)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"{what} latency (µs, log)")
        ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", axis="y", alpha=0.12)
        ax.tick_params(axis="y", labelleft=True)
        if not configs:
            no_data(ax)
    if configs:
        log_ticks(axes[0])
        log_ticks(axes[1])
    if any_peak:
        handles.append(Line2D([], [], marker="D", mfc="none", mec="0.3", ls="none", ms=8,
                              label="unpaced peak run (latency from receive, not schedule)"))
    if any_target:
        handles.append(Line2D([], [], color="0.3", ls="--", lw=2.5, marker="v",
                              label="p99 target at ½ peak: 3 × floor + MAX_WAIT (right panel)"))
        handles.append(Line2D([], [], marker="o", mfc="none", mec="0.3", mew=2, ms=11, ls="none",
                              label="measured p99 at ½ peak"))
    if handles:
        ax_leg.legend(handles=handles, loc="upper center", ncol=2, fontsize=9, frameon=False)
    sub = []
    if num(cfg.get("workers")):
        sub.append(f"{int(cfg['workers'])} workers")
    if num(cfg.get("batch")):
        sub.append(f"GPU batches of up to {int(cfg['batch'])}")
    if num(cfg.get("slots")):
        sub.append(f"{int(cfg['slots'])} slots")
    title = "tandem bench gpu-load: per-packet latency vs load" + (f" ({', '.join(sub)})" if sub else "")
    finish(fig, report, title, src, out_path)


# --- gpu-stream --------------------------------------------------------------------------------

def bound_lines(ax, report, with_labels):
    """The two PCIe bounds as horizontal lines, labelled on the line where with_labels."""
    bounds = as_dict(report.get("bound_items_per_s"))
    pcie = as_dict(report.get("pcie"))
    each, both = pos(bounds.get("each")), pos(bounds.get("both"))
    lines = []
    if each:
        lab = f"PCIe bound, each direction at its own rate: {each / 1e9:.2f} G/s"
        if pos(pcie.get("h2d_gbs")) and pos(pcie.get("d2h_gbs")):
            lab += f"  (H2D {pcie['h2d_gbs']:.1f} GB/s, D2H {pcie['d2h_gbs']:.1f} GB/s; 4 B in + 4 B out per lookup)"
        lines.append((each / 1e9, lab, "0.15", "--"))
    if both:
        lab = f"PCIe bound, both directions at once: {both / 1e9:.2f} G/s"
        if pos(pcie.get("both_h2d_gbs")) and pos(pcie.get("both_d2h_gbs")):
            lab += f"  ({pcie['both_h2d_gbs']:.1f} + {pcie['both_d2h_gbs']:.1f} GB/s)"
        lines.append((both / 1e9, lab, "tab:red", ":"))
    close = len(lines) == 2 and abs(lines[0][0] - lines[1][0]) < 0.04 * max(lines[0][0], lines[1][0])
    for y, lab, color, ls in lines:
        ax.axhline(y, color=color, ls=ls, lw=2)
        if with_labels:
            below = close and y == min(l[0] for l in lines)
            ax.annotate(lab, (0.01, y), xycoords=("axes fraction", "data"), xytext=(0, -3 if below else 3),
                        textcoords="offset points", va="top" if below else "bottom", fontsize=9, color=color)
    return [l[0] for l in lines]


def fmt_items(x):
    if x < 1024:
        return f"{x:.0f}"
    if x < 1 << 20:
        return f"{x / 1024:.0f}K"
    return f"{x / (1 << 20):.1f}".rstrip("0").rstrip(".") + "M"


def rate_err(row, med):
    rates = [r for r in (num(x) for x in as_list(row.get("rates"))) if r is not None]
    if not rates:
        return None
    return (max(0.0, med - min(rates) / 1e9), max(0.0, max(rates) / 1e9 - med))


def bar_label(ax, x, h, text):
    ax.annotate(text, (x, h), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8)


def plot_stream(report, src, out_path):
    runner = [r for r in as_list(report.get("runner")) if isinstance(r, dict)]
    # Engine rows: the gathering engine's, then the staged engine's (one per mode and worker count).
    engine = [dict(r, _label="gather\n" + str(r.get("mode", "?")))
              for r in as_list(report.get("engine")) if isinstance(r, dict)]
    engine += [dict(r, _label=f"staged, {int(num(r.get('workers')) or 0)} w\n" + str(r.get("mode", "?")))
               for r in as_list(report.get("staged_engine")) if isinstance(r, dict)]
    cfg = as_dict(report.get("config"))
    fig, (ax_r, ax_e) = plt.subplots(1, 2, figsize=(17, 7.6), sharey=True, gridspec_kw={"width_ratios": [3, 2.2]},
                                     constrained_layout=True)
    modes, batches, slots = [], [], {}
    for r in runner:
        m = str(r.get("mode", "?"))
        if m not in modes:
            modes.append(m)
        b = num(r.get("batch"))
        if b is not None and b not in batches:
            batches.append(b)
        if num(r.get("slots")):
            slots.setdefault(m, set()).add(int(r["slots"]))
    batches.sort()
    cmap = plt.get_cmap("viridis")
    bcolor = {b: cmap(0.15 + 0.7 * i / max(1, len(batches) - 1)) for i, b in enumerate(batches)}
    width = 0.8 / max(1, len(batches))
    top = 0
    for r in runner:
        med = num(r.get("median_rate"))
        b = num(r.get("batch"))
        if med is None or b is None:
            continue
        med /= 1e9
        x = modes.index(str(r.get("mode", "?"))) + (batches.index(b) - (len(batches) - 1) / 2) * width
        err = rate_err(r, med)
        bad = (num(r.get("wrong_results")) or 0) > 0
        ax_r.bar(x, med, width * 0.92, color=bcolor[b], edgecolor="red" if bad else "none", lw=2,
                 yerr=None if err is None else [[err[0]], [err[1]]], capsize=3, ecolor="0.3")
        bar_label(ax_r, x, med + (err[1] if err else 0), f"{med:.2f}" + (" WRONG" if bad else ""))
        top = max(top, med + (err[1] if err else 0))
    if runner and batches:
        ax_r.set_xticks(range(len(modes)))
        ax_r.set_xticklabels([m + (f"\n({', '.join(map(str, sorted(slots[m])))} slot{'s' if max(slots[m]) > 1 else ''})"
                                    if m in slots else "") for m in modes])
        ax_r.legend(handles=[Patch(color=bcolor[b], label=f"batch {fmt_items(b)}") for b in batches],
                    fontsize=9, loc="upper right", ncol=len(batches), framealpha=0.95, title="addresses per batch")
    else:
        no_data(ax_r, "no runner rows in the report")
    bound_lines(ax_r, report, True)
    ax_r.set_title("runner: batches back to back from pinned slot buffers, slots pipelined", fontsize=11)
    ax_r.set_ylabel("IPv4 lookups per second (G/s)\nmedian of repetitions, whiskers: min..max")
    ax_r.set_xlabel("offload mode")
    ax_r.tick_params(axis="y", labelleft=True)

    emodes = []
    for i, r in enumerate(engine):
        med = num(r.get("median_rate"))
        m = str(r.get("mode", "?"))
        emodes.append(r.get("_label", m))
        if med is None:
            continue
        med /= 1e9
        err = rate_err(r, med)
        bad = (num(r.get("wrong_results")) or 0) > 0
        ax_e.bar(i, med, 0.6, color=mode_color(m), edgecolor="red" if bad else "none", lw=2,
                 yerr=None if err is None else [[err[0]], [err[1]]], capsize=3, ecolor="0.3")
        text = f"{med:.2f}"
        if num(r.get("avg_batch")):
            text += f"\navg batch {fmt_items(r['avg_batch'])}"
        if bad:
            text += "\nWRONG"
        bar_label(ax_e, i, med + (err[1] if err else 0), text)
        top = max(top, med + (err[1] if err else 0))
    bound_lines(ax_e, report, False)
    if engine:
        ax_e.set_xticks(range(len(emodes)))
        ax_e.set_xticklabels(emodes, fontsize=8)
        ax_e.set_xlim(-0.6, len(emodes) - 0.4)
    else:
        no_data(ax_e, "no engine rows")
    sub = []
    if num(cfg.get("engine_workers")):
        sub.append(f"{int(cfg['engine_workers'])} workers")
    if num(cfg.get("engine_request")):
        sub.append(f"requests of {int(cfg['engine_request'])}")
    ax_e.set_title("through the engines (gathering; staged: workers write and read in place)"
                   + (f"\n({', '.join(sub)})" if sub else ""), fontsize=11)
    ax_e.set_xlabel("offload mode")
    ax_e.tick_params(axis="y", labelleft=True)
    bounds = as_dict(report.get("bound_items_per_s"))
    top = max([top] + [b / 1e9 for b in (pos(bounds.get("each")), pos(bounds.get("both"))) if b])
    for ax in (ax_r, ax_e):
        ax.grid(True, axis="y", alpha=0.35)
        ax.set_axisbelow(True)
    if top > 0:
        ax_r.set_ylim(0, top * 1.32)
    finish(fig, report, "tandem bench gpu-stream: IPv4 lookup throughput through the GPU vs the PCIe bound",
           src, out_path)


# --- gpu-router --------------------------------------------------------------------------------

def plot_router(report, src, out_path):
    its = [r for r in as_list(report.get("iterations")) if isinstance(r, dict)]
    cfg = as_dict(report.get("config"))
    fig, (ax_t, ax_l) = plt.subplots(2, 1, figsize=(max(11, 1.5 * len(its) + 2), 10.5), sharex=True,
                                     constrained_layout=True)
    labels, modes_seen, any_whole, any_diff = [], [], False, False
    lat_lo, lat_hi = [], []
    top = 0
    for i, r in enumerate(its):
        name = str(r.get("iteration", f"#{i + 1}")).strip()
        mode = str(r.get("mode", "?"))
        if mode not in modes_seen:
            modes_seen.append(mode)
        sl = num(r.get("slots"))
        labels.append(name + f"\n{mode}" + (f", {int(sl)} slot{'s' if sl > 1 else ''}" if sl else ""))
        color = mode_color(mode)
        whole = r.get("whole_packets") is True
        diff = r.get("identical_to_cpu") is False
        any_whole |= whole
        any_diff |= diff
        pps = num(r.get("median_pps"))
        if pps is not None:
            mpps = pps / 1e6
            rates = [x for x in (num(v) for v in as_list(r.get("rates_pps"))) if x is not None]
            err = [[max(0, mpps - min(rates) / 1e6)], [max(0, max(rates) / 1e6 - mpps)]] if rates else None
            ax_t.bar(i, mpps, 0.65, color=color, hatch="//" if whole else None, edgecolor="red" if diff else "white",
                     lw=2 if diff else 0.5, yerr=err, capsize=3, ecolor="0.3")
            h = mpps + (err[1][0] if err else 0)
            bar_label(ax_t, i, h, f"{mpps:.1f}" + ("\nDIFFERENT" if diff else ""))
            top = max(top, h)
        lat = as_dict(r.get("batch_latency_us"))
        lo, hi, p50, p99 = pos(lat.get("min")), pos(lat.get("max")), pos(lat.get("p50")), pos(lat.get("p99"))
        lat_lo += [v for v in (lo, p50) if v is not None]
        lat_hi += [v for v in (hi, p99) if v is not None]
        if lo is not None and hi is not None:
            ax_l.bar(i, hi - lo, 0.5, bottom=lo, color=color, alpha=0.35, hatch="//" if whole else None,
                     edgecolor=color, lw=1)
            ax_l.annotate(f"{hi:.0f}", (i, hi), xytext=(0, 2), textcoords="offset points", ha="center",
                          va="bottom", fontsize=7, color="0.3")
            ax_l.annotate(f"{lo:.0f}", (i, lo), xytext=(0, -2), textcoords="offset points", ha="center",
                          va="top", fontsize=7, color="0.3")
        if p50 is not None:
            ax_l.plot([i], [p50], "o", color=color, mec="black", ms=8)
        if p99 is not None:
            ax_l.plot([i], [p99], "^", color=color, mec="black", ms=8)
    if top <= 0 or not lat_hi:
        for ax, empty in ((ax_t, top <= 0), (ax_l, not lat_hi)):
            if empty:
                ax.text(0.5, 0.5, "no numbers in the report" if its else "no iterations in the report",
                        transform=ax.transAxes, ha="center", va="center", color="0.4", fontsize=11)
    if its:
        ax_l.set_xticks(range(len(its)))
        if len(its) <= 10:
            ax_l.set_xticklabels(labels, fontsize=9)
        else:
            ax_l.set_xticklabels(labels, rotation=30, ha="right", fontsize=9)
        if any(str(r.get("iteration", "")).strip()[:1].isdigit() for r in its):
            ax_l.set_xlabel("numbered: the GPU-router report's iterations; the others go beyond it")
        ax_l.set_xlim(-0.6, len(its) - 0.4)
        handles = [Patch(color=mode_color(m), label=m) for m in modes_seen]
        if any_whole:
            handles.append(Patch(facecolor="white", edgecolor="0.3", hatch="//", label="whole packets to the GPU"))
        if any_diff:
            handles.append(Patch(facecolor="white", edgecolor="red", lw=2, label="differs from the CPU path"))
        ax_t.legend(handles=handles, fontsize=9, loc="upper center", ncol=len(handles), framealpha=0.95)
        ax_l.legend(handles=[Patch(color="0.6", alpha=0.5, label="min .. max"),
                             Line2D([], [], marker="o", color="0.6", mec="black", ls="none", label="p50"),
                             Line2D([], [], marker="^", color="0.6", mec="black", ls="none", label="p99")],
                    fontsize=9, loc="upper left", ncol=3)
    if lat_hi:
        ax_l.set_yscale("log")
        if lat_lo and lat_hi:
            ax_l.set_ylim(min(lat_lo) / 1.8, max(lat_hi) * 1.8)
        log_ticks(ax_l)
    ax_t.set_ylabel("packets per second (M), median\nwhiskers: min..max of repetitions")
    ax_t.set_title("throughput through the whole loop, one thread", fontsize=11)
    if top > 0:
        ax_t.set_ylim(0, top * 1.3)
    ax_l.set_ylabel("batch latency (µs, log)")
    ax_l.set_title("batch latency: start of gathering to last verdict (last repetition)", fontsize=11)
    for ax in (ax_t, ax_l):
        ax.grid(True, axis="y", alpha=0.35)
        ax.set_axisbelow(True)
    sub = []
    if num(cfg.get("batch")):
        sub.append(f"batches of {int(cfg['batch'])}")
    gen = str(cfg.get("gen", ""))
    if "size=" in gen:
        sub.append(gen[gen.index("size="):].split(",")[0].replace("size=", "") + " B packets")
    title = "tandem bench gpu-router: IPv4 forwarding through the GPU, per iteration"
    if sub:
        title += f" ({', '.join(sub)})"
    finish(fig, report, title, src, out_path)


# --- driver ------------------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", metavar="RESULT_JSON", help="reports written by tandem bench gpu-* --json")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for the PNGs (created if missing)")
    p.add_argument("--load-x", choices=("achieved", "offered"), default="achieved",
                   help="gpu-load: x axis is the achieved (default) or the offered load")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    failures = 0
    used = set()
    for src in a.results:
        try:
            with open(src) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{src}: cannot read the report: {e}", file=sys.stderr)
            failures += 1
            continue
        bench = report.get("bench") if isinstance(report, dict) else None
        kind = {"gpu-offload": "offload", "gpu-load": "load", "gpu-stream": "stream", "gpu-router": "router",
                "cores": "cores", "anchors": "anchors", "dpi": "dpi", "classify": "classify", "fw-router": "fw_router"}.get(bench)
        if kind is None:
            print(f"{src}: skipped: " + (f"unknown bench {bench!r}" if bench is not None else "no \"bench\" key"))
            continue
        stem = os.path.splitext(os.path.basename(src))[0]
        name, k = stem, 2
        while name in used:
            name, k = f"{stem}-{k}", k + 1
        if name != stem:
            print(f"{src}: another input is also named {stem}: writing {name}.png")
        used.add(name)
        out_path = os.path.join(a.out, name + ".png")
        try:
            if kind == "offload":
                plot_offload(report, src, out_path)
            elif kind == "load":
                plot_load(report, src, out_path, a.load_x + "_mpps")
            elif kind == "stream":
                plot_stream(report, src, out_path)
            elif kind in ("dpi", "classify", "fw_router"):
                import plot_apps  # imports this module's helpers
                getattr(plot_apps, "plot_" + kind)(report, src, out_path)
            elif kind in ("cores", "anchors"):
                import plot_cpu  # imports this module's helpers
                getattr(plot_cpu, "plot_" + kind)(report, src, out_path)
            else:
                plot_router(report, src, out_path)
        except Exception as e:  # one bad report must not stop the others
            plt.close("all")
            print(f"{src}: cannot plot ({bench}): {type(e).__name__}: {e}", file=sys.stderr)
            failures += 1
            continue
        print(out_path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
