#!/usr/bin/env python3
"""Plots the scheduler's runs (the paper's Fig. 7 in shape), one PNG per input.

    python3 tools/plots/plot_schedule.py RESULT_JSON... --out DIR

Inputs:
  `tandem run --schedule ... --json F`   over time: offered and delivered Mpps, each device's share
                                         and Mpps, batch targets, power per device, switches marked
  `tandem bench schedule --json F`       per frame size, each row's Mpps (each device alone, static
                                         splits, the controllers), with its ratio to the best single
                                         device; with --rate-schedule, delivered Mpps per segment
  `tandem scenario KIND --json F`        over time, every row (each device alone, static splits, the
                                         controllers): delivered Mpps against the offered load, the
                                         adaptive rows' shares, power; the hog's window shaded
Other reports are skipped with a message. Output: DIR/<input stem>.png.
"""
import argparse
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover - reported to the user
    print("plot_schedule.py needs matplotlib: run scripts/plots.sh, or python3 -m pip install --user matplotlib",
          file=sys.stderr)
    sys.exit(2)


def device_ids(sched):
    return [d.get("id", f"dev{i}") for i, d in enumerate(sched.get("devices", []))]


def plot_run(report, path):
    s = report["schedule"]
    tl = s.get("timeline", [])
    if not tl:
        raise ValueError("the schedule has no timeline")
    ids = device_ids(s) or [f"dev{i}" for i in range(len(tl[0].get("share", [])))]
    t = [p["t_s"] for p in tl]
    fig, ax = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    ax[0].plot(t, [p["offered_mpps"] for p in tl], label="offered", color="black", linestyle="--")
    ax[0].plot(t, [p["achieved_mpps"] for p in tl], label="delivered", color="tab:blue")
    for i, dev in enumerate(ids):
        ax[0].plot(t, [p["mpps"][i] if i < len(p["mpps"]) else 0 for p in tl], label=dev, linewidth=0.8)
    ax[0].set_ylabel("Mpps")
    ax[0].legend(loc="upper right", fontsize=8)
    shares = [[p["share"][i] if i < len(p["share"]) else 0 for p in tl] for i in range(len(ids))]
    ax[1].stackplot(t, shares, labels=ids)
    ax[1].set_ylabel("share of shards")
    ax[1].set_ylim(0, 1)
    ax[1].legend(loc="upper right", fontsize=8)
    for i, dev in enumerate(ids):
        ax[2].plot(t, [p["watts"][i] if i < len(p["watts"]) else 0 for p in tl], label=dev)
    ax[2].set_ylabel("W (device's source)")
    ax[2].set_xlabel("s")
    ax[2].legend(loc="upper right", fontsize=8)
    for sw in s.get("switches", []):
        for a in ax:
            a.axvline(sw["t_ms"] / 1e3, color="gray", linewidth=0.4, alpha=0.5)
    energy = s.get("energy", {})
    fig.suptitle(f"{report.get('app', '?')}: {s.get('controller', s.get('policy', '?'))}; "
                 f"reordered {s.get('reordered')}, lost {s.get('lost')}, {len(s.get('switches', []))} switches"
                 + (f"; {energy.get('watts', 0):.0f} W" if energy else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_bench(report, path):
    rows = report.get("rows", [])
    if not rows:
        raise ValueError("the report has no rows")
    sizes = sorted({r["size"] for r in rows}, key=lambda x: (not x.isdigit(), int(x) if x.isdigit() else 0, x))
    steps = any(r.get("segments_achieved_mpps") for r in rows)
    fig, axes = plt.subplots(len(sizes), 1, figsize=(10, 3.2 * len(sizes)), squeeze=False)
    for ax, size in zip(axes[:, 0], sizes):
        these = [r for r in rows if r["size"] == size]
        if steps:
            for r in these:
                seg = r.get("segments_achieved_mpps", [])
                ax.step(range(len(seg)), seg, where="mid", label=r["schedule"])
            offered = these[0].get("segments_offered_mpps", [])
            ax.step(range(len(offered)), offered, where="mid", color="black", linestyle="--", label="offered")
            ax.set_xlabel("segment")
            ax.legend(fontsize=7, ncol=2)
        else:
            names = [r["schedule"] for r in these]
            ax.bar(range(len(these)), [r["mpps"] for r in these],
                   color=["tab:red" if r.get("error") else "tab:blue" for r in these])
            ax.set_xticks(range(len(these)), names, rotation=20, fontsize=8)
            for k, r in enumerate(these):
                ax.text(k, r["mpps"], f"{r.get('ratio_to_best_single', 0):.2f}x", ha="center", va="bottom", fontsize=7)
        ax.set_ylabel("Mpps")
        ax.set_title(f"{report.get('app', '?')}, {size} B, devices {','.join(report.get('devices', []))}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scenario(report, path):
    rows = report.get("rows", [])
    if not rows:
        raise ValueError("the report has no rows")
    ids = report.get("devices", [])
    fig, ax = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    seg = report.get("segments", [])
    if seg:
        xs, ys = [], []
        for k, g in enumerate(seg):
            end = seg[k + 1]["start_ms"] if k + 1 < len(seg) else g["start_ms"]
            xs += [g["start_ms"] / 1e3, end / 1e3]
            ys += [g["mpps"], g["mpps"]]
        ax[0].plot(xs, ys, color="black", linestyle="--", label="offered")
    for r in rows:
        tl = r.get("timeline", [])
        t = [p["t_s"] for p in tl]
        adaptive = not r["schedule"].startswith("static:")
        ax[0].plot(t, [p["achieved_mpps"] for p in tl], label=r["schedule"], linewidth=1.6 if adaptive else 0.8)
        if adaptive:
            for i, dev in enumerate(ids[:-1] if len(ids) > 1 else ids):
                ax[1].plot(t, [p["share"][i] if i < len(p["share"]) else 0 for p in tl], label=f"{r['schedule']}: {dev}")
        ax[2].plot(t, [sum(p.get("watts", [])) for p in tl], label=r["schedule"], linewidth=1.6 if adaptive else 0.8)
    ax[0].set_ylabel("delivered Mpps")
    ax[0].legend(fontsize=7, ncol=3)
    ax[1].set_ylabel("share of shards")
    ax[1].set_ylim(0, 1)
    ax[1].legend(fontsize=7)
    ax[2].set_ylabel("W (devices' sources)")
    ax[2].set_xlabel("s")
    ax[2].legend(fontsize=7, ncol=3)
    h0, h1 = report.get("hog_from_ms", -1), report.get("hog_to_ms", -1)
    if h0 is not None and h0 >= 0:
        for a in ax:
            a.axvspan(h0 / 1e3, h1 / 1e3, color="tab:red", alpha=0.08)
    fig.suptitle(f"scenario {report.get('kind')}: {report.get('app', '?')} on {','.join(ids)}; {report.get('what', '')}"
                 f"\nscale {report.get('scale', '')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    failed = 0
    for f in a.inputs:
        out = os.path.join(a.out, os.path.splitext(os.path.basename(f))[0] + ".png")
        try:
            with open(f) as fh:
                report = json.load(fh)
            if isinstance(report, dict) and "schedule" in report:
                plot_run(report, out)
            elif isinstance(report, dict) and report.get("command") == "bench schedule":
                plot_bench(report, out)
            elif isinstance(report, dict) and report.get("command") == "scenario":
                plot_scenario(report, out)
            else:
                print(f"{f}: not a scheduled run or a bench schedule report: skipped")
                continue
            print(f"{f} -> {out}")
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            print(f"{f}: cannot plot: {e}", file=sys.stderr)
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
