"""`tandem run --pcap` streams the capture whatever the flags, --repeat included; `--preload` loads it
whole and replays it from memory. Both give the same counters and the same --out capture, for one
pass and for three, on the shipped captures and on a generated one spanning several windows;
--verify checks every decision across windows; SIGINT stops a streamed run between or inside windows
with the counters balanced and the output a prefix of the whole one; the streamed run's peak memory
stays flat as the capture grows, where --preload's grows with it; --preload with --gen is refused.

TANDEM_TEST_WINDOW_BYTES (read by cli/cmd_run.cc, for tests only) shrinks the 64 MiB window so that
small captures span many windows."""
import glob
import json
import os
import signal
import subprocess
import tempfile
import time

from e2e_util import Checker, args, run, sanitized, tmpdir

KEYS = ("received", "forwarded", "dropped", "drops", "forwarded_per_port", "expected", "balanced")


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    fib = os.path.join(a.source_dir, "data", "fib", "iprbench_tier1_fulltable_prefixes.txt.gz")

    def tandem_run(cap, extra, window=None, name="r"):
        """Runs `tandem run` on `cap`; returns (exit code, stdout, stderr, JSON report, peak RSS in KiB)."""
        js = os.path.join(d, name + ".json")
        env = dict(os.environ)
        env.pop("TANDEM_TEST_WINDOW_BYTES", None)
        if window:
            env["TANDEM_TEST_WINDOW_BYTES"] = str(window)
        with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
            p = subprocess.Popen([T, "run", "--fib", fib, "--pcap", cap, "--device", "cpu", "--json", js, *extra],
                                 stdout=so, stderr=se, env=env, text=True)
            _, status, usage = os.wait4(p.pid, 0)  # this child's own peak, not a running maximum
            p.returncode = os.waitstatus_to_exitcode(status)
            so.seek(0)
            se.seek(0)
            out, err = so.read(), se.read()
        report = json.load(open(js)) if p.returncode == 0 and os.path.exists(js) else {}
        if os.path.exists(js):
            os.remove(js)
        return p.returncode, out, err, report, usage.ru_maxrss

    def same(what, ja, jb):
        for k in KEYS:
            c.check(ja.get(k) == jb.get(k), f"{what}: {k}: {ja.get(k)} vs {jb.get(k)}")

    def compare(cap, label, window):
        """Streamed (one default window, and `window`-sized windows) against --preload, repeat 1 and 3:
        the same counters and the same --out capture (written on the first pass only)."""
        for repeat in (1, 3):
            runs = {}
            for mode, win, extra in (("preload", None, ["--preload"]), ("streamed", None, []),
                                     ("windows", window, [])):
                out = os.path.join(d, f"{mode}.pcap")
                rc, so, se, j, _ = tandem_run(cap, [*extra, "--repeat", str(repeat), "--workers", "1", "--out", out],
                                              win, mode)
                what = f"{label} {mode} repeat {repeat}"
                c.check(rc == 0 and j.get("balanced"), f"{what}: exit {rc}: {so} {se}")
                c.check(j.get("received") == j.get("expected", -1) and j.get("received", 0) > 0,
                        f"{what}: received {j.get('received')} of {j.get('expected')}")
                want_mode = "preloaded" if mode == "preload" else "streamed"
                c.check(j.get("input_mode") == want_mode and f"({want_mode}:" in so.splitlines()[1],
                        f"{what}: the input line says {want_mode}: {so.splitlines()[1:2]}")
                runs[mode] = (j, open(out, "rb").read() if rc == 0 else b"", so)
            same(f"{label} repeat {repeat}: streamed vs preloaded", runs["streamed"][0], runs["preload"][0])
            same(f"{label} repeat {repeat}: {window}-byte windows vs preloaded", runs["windows"][0], runs["preload"][0])
            forwarded = runs["preload"][0].get("forwarded", 0)
            c.check(runs["streamed"][1] == runs["preload"][1] == runs["windows"][1] and
                    (len(runs["preload"][1]) > 24) == (forwarded > 0),
                    f"{label} repeat {repeat}: the --out captures differ "
                    f"({len(runs['streamed'][1])}, {len(runs['preload'][1])}, {len(runs['windows'][1])} bytes)")
            w = runs["windows"][0].get("windows", 0)
            each = ", each reading the capture again" if repeat > 1 else ";"
            c.check(w > repeat and w % repeat == 0 and f"streamed in {w} window(s), {repeat} pass(es){each}"
                    in runs["windows"][2], f"{label} repeat {repeat}: {w} windows: {runs['windows'][2]}")
            c.check(f"read once and replayed from memory for {repeat} pass(es)" in runs["streamed"][2],
                    f"{label} repeat {repeat}: a capture within one window is read once: {runs['streamed'][2]}")
            c.check("input preloaded: loading it took" in runs["preload"][2], f"{label}: preload line")

    for cap in sorted(glob.glob(os.path.join(a.source_dir, "data", "pcap", "*.pcap"))):
        compare(cap, os.path.basename(cap), 256 << 10)

    # A generated capture over several 1 MiB windows, mixed frame sizes, mostly routed.
    gen_cap = os.path.join(d, "gen.pcap")
    rc, so, se = run([T, "gen", "--spec", "count=30000,dst=fib,flows=3000,size=imix,seed=7", "--fib", fib,
                      "--out", gen_cap])
    c.check(rc == 0, f"gen: {rc} {se}")
    compare(gen_cap, "generated", 1 << 20)

    # Several workers (RSS within each window) and --verify across windows.
    rc1, so1, _, j1, _ = tandem_run(gen_cap, ["--workers", "2", "--repeat", "2", "--verify"], 1 << 20, "w1")
    rc2, so2, _, j2, _ = tandem_run(gen_cap, ["--workers", "2", "--repeat", "2", "--verify", "--preload"], None, "w2")
    c.check(rc1 == 0 and rc2 == 0, f"2 workers: {rc1} {so1} / {rc2} {so2}")
    same("2 workers, verify: streamed vs preloaded", j1, j2)
    for name, j in (("streamed", j1), ("preloaded", j2)):
        v = j.get("verify", {})
        c.check(v.get("mismatches") == 0 and v.get("checked", 0) >= j.get("forwarded", 1),
                f"2 workers, {name}: verify {v}")

    # SIGINT while a streamed run is between windows of its second pass or inside one: the workers
    # drain, the counters balance, the output holds whole records, those of the first pass in order.
    full_out = os.path.join(d, "full.pcap")
    rc, so, se, jf, _ = tandem_run(gen_cap, ["--out", full_out], 1 << 20, "full")
    c.check(rc == 0, f"full run: {rc} {se}")
    # At 0.02 Mpps a pass takes 1.5 s. The signal goes once the temporary output has its first
    # MiB (forwarding has begun, whatever the build's speed), then after `delay` more: within the
    # first pass, or in the second.
    for delay, want_pass in ((0.3, 1), (2.0, 2)):
        part_out = os.path.join(d, "part.pcap")
        env = dict(os.environ, TANDEM_TEST_WINDOW_BYTES=str(1 << 20))
        js = os.path.join(d, "int.json")
        p = subprocess.Popen([T, "run", "--fib", fib, "--pcap", gen_cap, "--device", "cpu", "--repeat", "3",
                              "--rate-mpps", "0.02", "--out", part_out, "--json", js],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None and not any(
                os.path.getsize(t) > 0 for t in glob.glob(os.path.join(d, ".part.pcap.tmp-*")) if os.path.exists(t)):
            time.sleep(0.02)
        time.sleep(delay)
        if p.poll() is not None:
            c.check(False, f"SIGINT after {delay} s: the run ended first: {p.stdout.read()} {p.stderr.read()}")
            continue
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=120)
        so, se = p.stdout.read(), p.stderr.read()
        c.check(rc == 130 and "accounting OK" in so and f"of pass {want_pass} of 3 over the streamed capture" in so,
                f"SIGINT after {delay} s: exit {rc}: {so} {se}")
        if rc == 130:
            j = json.load(open(js))
            c.check(j.get("balanced") and 0 < j.get("received", 0) < 3 * jf.get("received", 0),
                    f"SIGINT after {delay} s: {j.get('received')} received")
            part = open(part_out, "rb").read()
            full = open(full_out, "rb").read()
            c.check(len(part) > 24 and full.startswith(part) and f"output: {part_out}:" in so,
                    f"SIGINT after {delay} s: the output ({len(part)} bytes) is not a prefix of the whole one")

    # Memory: a streamed capture 37 windows long peaks where a 2-window one does, with --repeat 2
    # (the capture read twice) as without; --preload grows with the capture. Windows of 4 MiB keep
    # the captures small; each figure is that run's own peak (wait4).
    small_cap = os.path.join(d, "mem_small.pcap")
    big_cap = os.path.join(d, "mem_big.pcap")
    run([T, "gen", "--spec", "count=5000,size=1518,flows=5000,seed=3", "--out", small_cap])
    run([T, "gen", "--spec", "count=100000,size=1518,flows=5000,seed=3", "--out", big_cap])
    grown = (os.path.getsize(big_cap) - os.path.getsize(small_cap)) >> 10
    peaks = {}
    for cap_name, cap in (("small", small_cap), ("big", big_cap)):
        for mode, extra, win in (("streamed", ["--repeat", "2"], 4 << 20), ("preload", ["--repeat", "2", "--preload"], None)):
            rc, so, se, j, peak = tandem_run(cap, extra, win, f"mem_{cap_name}_{mode}")
            c.check(rc == 0 and j.get("balanced"), f"memory, {cap_name} {mode}: {rc} {se}")
            peaks[cap_name, mode] = peak
    print(f"peak RSS (KiB): {peaks}; the big capture is {grown} KiB larger")
    if not sanitized():
        c.check(peaks["big", "streamed"] - peaks["small", "streamed"] < 16 << 10,
                f"streamed: peak {peaks['small', 'streamed']} -> {peaks['big', 'streamed']} KiB as the capture grew "
                f"by {grown} KiB (one window: 4096 KiB)")
        c.check(peaks["big", "preload"] - peaks["small", "preload"] > grown // 2,
                f"preload: peak {peaks['small', 'preload']} -> {peaks['big', 'preload']} KiB: the capture is held whole")

    # --preload is for captures: generated traffic is in memory anyway.
    rc, so, se = run([T, "run", "--fib", fib, "--gen", "count=100", "--preload", "--device", "cpu"])
    c.check(rc != 0 and "--preload is for --pcap" in se and "packets:" not in so, f"--preload --gen: {rc} {so} {se}")
    # A window size that is not a count is refused, not taken as the default.
    rc, so, se = run([T, "run", "--fib", fib, "--pcap", small_cap, "--device", "cpu"],
                     env=dict(os.environ, TANDEM_TEST_WINDOW_BYTES="4M"))
    c.check(rc != 0 and "TANDEM_TEST_WINDOW_BYTES" in se, f"bad window size: {rc} {se}")
    c.done()


if __name__ == "__main__":
    main()
