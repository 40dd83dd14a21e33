"""`tandem run --schedule`: traffic shared by CPU groups (and a simulated device) by flow-hash shard,
with the usual report plus each device's share, "reordered: N" and "lost: N" (both must be 0),
switches and energy with its source; the JSON's "schedule" object; an output capture whose
per-flow sequence trailers (--gen seq=1) an independent checker finds in order; a machine without
a GPU says it schedules among CPU groups; and usage errors refused before anything runs. Needs no
GPU."""
import json
import os
import sys

from e2e_util import Checker, args, run, tmpdir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def flow_key(f):
    """(src, dst, proto, sport, dport) of an unfragmented IPv4 TCP or UDP frame, else None."""
    off, et = 14, int.from_bytes(f[12:14], "big")
    while et in (0x8100, 0x88A8) and len(f) >= off + 4:
        et, off = int.from_bytes(f[off + 2:off + 4], "big"), off + 4
    if et != 0x0800 or len(f) < off + 20:
        return None
    ihl = (f[off] & 15) * 4
    frag = int.from_bytes(f[off + 6:off + 8], "big") & 0x3FFF
    proto = f[off + 9]
    if frag or proto not in (6, 17) or len(f) < off + ihl + 4:
        return None
    return (f[off + 12:off + 16], f[off + 16:off + 20], proto, f[off + ihl:off + ihl + 4])


def switches(so):
    for line in so.splitlines():
        if line.startswith("switches: "):
            return int(line.split()[1])
    return 0


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    fib = os.path.join(d, "fib.txt")
    open(fib, "w").write("10.0.0.0/8 1\n20.0.0.0/8 2\n0.0.0.0/0 3\n")
    base = [T, "run", "--fib", fib, "--gen", "count=200000,flows=2000,seed=3"]

    def expect_error(cmd, *needles, what):
        rc, so, se = run(cmd)
        c.check(rc not in (0, None) and rc > 0, f"{what}: exit {rc}")
        for n in needles:
            c.check(n in so + se, f"{what}: message lacks {n!r}: {(so + se).strip()[:300]}")
        c.check("packets:" not in so, f"{what}: ran anyway")

    def shares(so):
        out = {}
        for line in so.splitlines():
            if line.startswith("device ") and "% of packets" in line:
                dev = line.split()[1].rstrip(":")
                out[dev] = float(line.split(":")[1].split("%")[0])
        return out

    # Adaptive, two CPU groups, verified, with JSON.
    j = os.path.join(d, "s.json")
    rc, so, se = run(base + ["--schedule", "throughput", "--device", "cpu:1,cpu:1", "--workers", "2", "--repeat", "5",
                             "--verify", "--json", j, "--tick-ms", "5"])
    c.check(rc == 0, f"throughput over cpu:1,cpu:1: exit {rc}: {se[-500:]}")
    c.check("accounting OK" in so, "accounting")
    c.check("reordered: 0\n" in so, f"reordered line: {so[-800:]}")
    c.check("\nlost: 0 " in so, "lost line")
    c.check("0 differ" in so, "verification")
    sh = shares(so)
    c.check(set(sh) == {"cpu0", "cpu1"} and abs(sum(sh.values()) - 100) < 0.5, f"share lines: {sh}")
    c.check("energy:" in so and "model" in so, f"energy line names its source: {so[-600:]}")
    if os.path.exists(j):
        r = json.load(open(j))
        s = r.get("schedule", {})
        for key in ("policy", "controller", "devices", "reordered", "lost", "switches", "timeline", "energy"):
            c.check(key in s, f"JSON schedule lacks {key}")
        c.check(s.get("reordered") == 0 and s.get("lost") == 0, "JSON reordered/lost")
        c.check(len(s.get("devices", [])) == 2 and all(x["packets"] > 0 for x in s["devices"]),
                f"JSON devices: {s.get('devices')}")
        c.check(r.get("received") == 1000000 and r.get("balanced"), "JSON accounting")
    else:
        c.check(False, "no JSON written")

    # Static shares with a simulated slow device, and NBA's balancer: both carry every packet.
    for sched, dev in (("static:3,1", "cpu:1,sim:50/0"), ("nba", "cpu:1,sim:20/0"), ("energy", "cpu:1,cpu:1"),
                       ("latency", "cpu:1,sim:20/0")):
        rc, so, se = run(base + ["--schedule", sched, "--device", dev, "--tick-ms", "5"])
        c.check(rc == 0 and "reordered: 0\n" in so and "\nlost: 0 " in so and "accounting OK" in so,
                f"--schedule {sched} --device {dev}: exit {rc}: {so[-400:]} {se[-300:]}")
        if sched.startswith("static"):
            sh = shares(so)
            c.check(abs(sh.get("cpu0", 0) - 75) < 10, f"static 3:1 gives about 75% to cpu0: {sh}")

    # The default devices: a GPU and a CPU group, or two CPU groups where there is no GPU.
    rc, so, se = run(base + ["--schedule", "throughput"])
    c.check(rc == 0, f"--device auto: exit {rc}: {se[-300:]}")
    if "gpu0" not in so:
        c.check("no GPU (" in so and "scheduling among 2 CPU worker groups" in so, f"no-GPU note: {so[:600]}")

    # An output capture of traffic carrying per-flow sequence trailers: in order per flow.
    out = os.path.join(d, "o.pcap")
    rc, so, se = run([T, "run", "--fib", fib, "--gen", "count=50000,flows=500,seed=4,seq=1", "--schedule", "nba",
                      "--device", "cpu:1,sim:100/0", "--tick-ms", "2", "--out", out])
    c.check(rc == 0 and os.path.exists(out), f"--out under --schedule: exit {rc}: {se[-300:]}")
    try:
        import check_order
        res = check_order.check_order(out)
        c.check(res.reordered == 0 and res.duplicated == 0 and res.no_trailer == 0 and res.packets > 0,
                f"check_order: {res}")
    except ImportError:
        c.check(False, "tests/e2e/check_order.py is missing")

    # Real captures through the scheduler, shards moving between unlike devices, against the CPU
    # path's output: the same frames, and within each TCP/UDP flow the same order.
    try:
        import check_order
        for name in ("example.pcap", "many-protocols.pcap"):
            cap = os.path.join(a.source_dir, "data/pcap", name)
            want_out, got_out = os.path.join(d, "cpu-" + name), os.path.join(d, "sched-" + name)
            rc1, so1, se1 = run([T, "run", "--fib", fib, "--pcap", cap, "--device", "cpu", "--out", want_out])
            # A capture of a few thousand frames passes in milliseconds: on a busy machine a run may
            # end before the controller moves a shard; such a run proves little, so it is run again.
            for _ in range(5):
                rc2, so2, se2 = run([T, "run", "--fib", fib, "--pcap", cap, "--schedule", "nba", "--device", "cpu:1,sim:100/0",
                                     "--tick-ms", "1", "--out", got_out])
                if rc2 != 0 or switches(so2) > 0:
                    break
            c.check(rc1 == 0 and rc2 == 0 and "reordered: 0\n" in so2, f"{name}: exit {rc1}/{rc2}: {se1[-200:]} {se2[-200:]}")
            if rc1 or rc2:
                continue
            want, got = list(check_order.frames(want_out)), list(check_order.frames(got_out))
            c.check(len(want) > 1000 and sorted(want) == sorted(got),
                    f"{name}: the scheduled run forwards other frames ({len(got)}) than the CPU path ({len(want)})")
            c.check(switches(so2) > 0, f"{name}: no shard moved, so the run proves little: {so2[-300:]}")
            def per_flow(fs):
                m = {}
                for f in fs:
                    k = flow_key(f)
                    if k:
                        m.setdefault(k, []).append(f)
                return m
            w, g = per_flow(want), per_flow(got)
            bad = [k for k in w if w[k] != g.get(k)]
            c.check(len(w) > 10 and not bad, f"{name}: {len(bad)} of {len(w)} flows in another order than the CPU path's")
    except ImportError:
        c.check(False, "tests/e2e/check_order.py is missing")

    # IPsec under the scheduler: SAs move between unlike devices with their sequence numbers and
    # replay windows, so the ESP frames (each sealed with its SA's next number) and the decrypted
    # ones are byte for byte those of one CPU thread taking the frames in order.
    try:
        import check_order
        ipsec = [T, "run", "--app", "ipsec", "--sa-gen", "64", "--ipsec-traffic", "both",
                 "--gen", "count=40000,flows=256,seed=5,size=200,dst=fib"]
        want_out, got_out = os.path.join(d, "esp-cpu.pcap"), os.path.join(d, "esp-sched.pcap")
        rc1, so1, se1 = run(ipsec + ["--device", "cpu", "--out", want_out])
        rc2, so2, se2 = run(ipsec + ["--schedule", "nba", "--device", "cpu:1,sim:100/0", "--tick-ms", "1",
                                     "--verify", "--out", got_out])
        c.check(rc1 == 0 and rc2 == 0, f"ipsec under the scheduler: exit {rc1}/{rc2}: {se1[-300:]} {se2[-300:]}")
        if rc1 == 0 and rc2 == 0:
            c.check("reordered: 0\n" in so2 and "\nlost: 0 " in so2 and "0 differ" in so2 and "accounting OK" in so2,
                    f"ipsec under the scheduler: report: {so2[-600:]}")
            c.check(switches(so2) > 0, f"ipsec: no shard moved, so the run proves little: {so2[-300:]}")
            want, got = sorted(check_order.frames(want_out)), sorted(check_order.frames(got_out))
            c.check(len(want) > 30000 and want == got,
                    f"ipsec: the scheduled run's frames ({len(got)}) differ from one CPU thread's ({len(want)})")
    except ImportError:
        c.check(False, "tests/e2e/check_order.py is missing")

    # A paced run whose offered load steps.
    rc, so, se = run(base + ["--schedule", "throughput", "--device", "cpu:1,cpu:1", "--rate-schedule", "0:0.2,300:0.5",
                             "--json", j])
    c.check(rc == 0 and "reordered: 0\n" in so, f"--rate-schedule: exit {rc}: {se[-300:]}")
    if rc == 0:
        tl = json.load(open(j))["schedule"]["timeline"]
        c.check(len(tl) > 10 and any(p["offered_mpps"] > 0.35 for p in tl) and any(0.1 < p["offered_mpps"] < 0.3 for p in tl),
                f"timeline follows the offered steps: {[round(p['offered_mpps'], 2) for p in tl][:60]}")

    # The run's timeline as a plot (tools/plots/plot_schedule.py), where matplotlib is installed.
    try:
        import matplotlib  # noqa: F401
        have_mpl = True
    except ImportError:
        have_mpl = os.environ.get("CI") == "true"  # CI installs it: its absence there is a failure
    if have_mpl and os.path.exists(j):
        tool = os.path.join(a.source_dir, "tools/plots/plot_schedule.py")
        rc, so, se = run([sys.executable, tool, j, "--out", d])
        png = os.path.join(d, "s.png")
        c.check(rc == 0 and os.path.exists(png) and os.path.getsize(png) > 10000, f"plot_schedule: {rc} {so} {se[-300:]}")
        bad = os.path.join(d, "bad.json")
        open(bad, "w").write('{"schedule": {"timeline": []}}')
        rc, so, se = run([sys.executable, tool, bad, "--out", d])
        c.check(rc == 1 and "cannot plot" in se, f"plot_schedule on an empty timeline: {rc} {se}")

    # A schedule table: written by a run, reused by the same run again, not used for other traffic,
    # refused when it is not a table.
    tbl = os.path.join(d, "table.json")
    cmd = base + ["--schedule", "throughput", "--device", "cpu:1,cpu:1", "--repeat", "3", "--schedule-table", tbl]
    rc, so, se = run(cmd)
    c.check(rc == 0 and "none yet" in so and "schedule table" in so and "written" in so and os.path.exists(tbl),
            f"table written: {rc} {so[-400:]} {se[-300:]}")
    if os.path.exists(tbl):
        t = json.load(open(tbl))
        c.check(t.get("format") == "tandem-schedule-table/1" and t["key"]["devices"] == ["cpu0:1", "cpu1:1"],
                f"table format and key: {str(t)[:300]}")
        rc, so, se = run(cmd)
        c.check(rc == 0 and "reused: starting from shares" in so and "moved halfway" in so, f"table reused: {so[-500:]}")
        rc, so, se = run([T, "run", "--fib", fib, "--gen", "count=200000,flows=2000,seed=9", "--schedule", "throughput",
                          "--device", "cpu:1,cpu:1", "--schedule-table", tbl])
        c.check(rc == 0 and "not used (made for traffic" in so, f"table for other traffic: {so[-500:]}")
    # The Koromilas controller: the first run profiles the grid (each device alone, 1:3, 1:1, 3:1, two
    # batch sizes each) and writes it; the next reuses it; a model run over the same table keeps it.
    ktbl = os.path.join(d, "koromilas.json")
    kcmd = base + ["--schedule", "throughput", "--controller", "koromilas", "--device", "cpu:1,cpu:1",
                   "--profile-seconds", "0.05", "--schedule-table", ktbl, "--json", os.path.join(d, "k.json")]
    rc, so, se = run(kcmd)
    profiled = [x for x in so.splitlines() if x.startswith("profile ")]
    c.check(rc == 0 and len(profiled) == 10 and "10 profiled configurations" in so and "Koromilas controller" in so
            and "reordered: 0" in so and "\nlost: 0" in so, f"koromilas, profiled: {rc} {so[-900:]} {se[-300:]}")
    if os.path.exists(ktbl):
        t = json.load(open(ktbl))
        prof = [e for e in t["entries"] if e.get("profiled")]
        c.check(len(prof) == 10 and all(e["mpps_max"] > 0 and e["p99_us"] > 0 and e["latency_at_mpps"] > 0 for e in prof)
                and {tuple(e["share"]) for e in prof} == {(1, 0), (0, 1), (0.25, 0.75), (0.5, 0.5), (0.75, 0.25)},
                f"koromilas table: {str(t)[:600]}")
        rc, so, se = run(kcmd)
        c.check(rc == 0 and "10 profiled configurations reused" in so and not any(
            x.startswith("profile ") for x in so.splitlines()), f"koromilas, reused: {rc} {so[-600:]}")
        rc, so, se = run(base + ["--schedule", "throughput", "--device", "cpu:1,cpu:1", "--schedule-table", ktbl])
        t = json.load(open(ktbl))
        c.check(rc == 0 and len([e for e in t["entries"] if e.get("profiled")]) == 10,
                f"a model run kept the profile: {rc} {so[-300:]} {len(t['entries'])}")
    # bench schedule's Koromilas rows: the profile of the splits measured first, each row verified.
    bj = os.path.join(d, "bench.json")
    rc, so, se = run([T, "bench", "schedule", "--fib", fib, "--gen", "count=50000,dst=fib,flows=2000,seed=3",
                      "--device", "cpu:1,cpu:1", "--workers", "1", "--reps", "1", "--min-seconds", "0.05",
                      "--policies", "static:1,0;koromilas;koromilas:energy", "--json", bj])
    rows = json.load(open(bj)).get("rows", []) if rc == 0 and os.path.exists(bj) else []
    c.check(rc == 0 and [r.get("schedule") for r in rows] == ["static:1,0", "koromilas", "koromilas:energy"]
            and all(not r.get("error") and r.get("mpps", 0) > 0 for r in rows)
            and len([x for x in so.splitlines() if ": profile " in x]) == 5, f"bench schedule koromilas: {rc} {so[-900:]} {se[-300:]}")
    expect_error(kcmd + ["--profile-splits", "1:0:1"], "--profile-splits", "3 shares for 2 devices",
                 what="a split of the wrong size")
    expect_error(kcmd + ["--profile-splits", "0:0"], "--profile-splits", what="a split of nothing")
    expect_error(base + ["--schedule", "throughput", "--controller", "oracle"], "--controller", what="an unknown controller")
    garbage = os.path.join(d, "garbage.json")
    open(garbage, "w").write("\x00not a table")
    expect_error(base + ["--schedule", "throughput", "--schedule-table", garbage], "--schedule-table", "garbage.json",
                 what="a schedule table that is not one")
    c.check(open(garbage).read() == "\x00not a table", "a refused table file was changed")
    expect_error(base + ["--schedule-table", tbl], "--schedule-table", what="a schedule table without --schedule")

    # Refusals, before anything runs.
    expect_error(base + ["--schedule", "sideways"], "--schedule sideways", what="unknown policy")
    expect_error(base + ["--schedule", "static:1", "--device", "cpu:1,cpu:1"], "one share per device", what="shares")
    expect_error(base + ["--schedule", "throughput", "--device", "cpu,gpu3"], "gpu3", what="a second GPU")
    expect_error(base + ["--schedule", "throughput", "--device", "cpu,fpga"], "fpga", what="an unknown device")
    expect_error(base + ["--schedule", "throughput", "--device", "cpu:0"], "cpu:0", what="a group of 0 threads")
    expect_error(base + ["--device", "cpu,cpu"], "--schedule", what="a device list without --schedule")
    expect_error(base + ["--schedule", "throughput", "--device", "cpu:2.5,cpu"], "cpu:2.5", "whole number",
                 what="a fractional thread count")
    expect_error(base + ["--schedule", "throughput", "--device", "cpu,sim:2000000/0"], "sim:2000000/0",
                 what="a simulated device slower than 1 s a batch")
    expect_error(base + ["--schedule", "throughput", "--device", "cpu:1024,cpu:1024,cpu:1024,cpu:1024"], "threads",
                 what="more threads than the machine can hold")
    expect_error(base + ["--schedule", "throughput", "--rate-mpps", "1", "--rate-schedule", "0:1"], "--rate-mpps",
                 what="two offered loads")
    expect_error(base + ["--schedule", "throughput", "--gpu-mode", "async"], "persistent", what="the DMA variant")
    expect_error(base + ["--schedule", "throughput", "--rate-schedule", "0:1e-300"], "--rate-schedule",
                 what="a rate too small to arrive")
    expect_error(base + ["--schedule", "throughput", "--rate-schedule", "5:1"], "--rate-schedule", what="rate schedule")
    expect_error(base + ["--rate-schedule", "0:1"], "--rate-schedule", what="rate schedule without --schedule")
    expect_error(base + ["--schedule", "throughput", "--gpu-path", "offload"], "resident", what="offload path")
    c.done()


if __name__ == "__main__":
    main()
