"""Numbers out of range and flags that would do nothing are refused with a message naming them
(NaN and infinite floating-point flags, CPUs the process cannot use, GPU flags with --device cpu,
captures named for a format Tandem does not write); generator sizes are bounded (flows, counts that
cannot fit in memory) and `tandem gen` streams, so its memory stays flat; a frame over 65,535 bytes
is dropped as "oversize" with the accounting balanced; `run --verify` with more workers than cores
reports the time a stopwatch would show. Needs no GPU."""
import json
import os
import shutil
import struct
import subprocess
import time

from e2e_util import Checker, args, run, sanitized, tmpdir
from frames import udp_frame


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    cap = os.path.join(a.source_dir, "data/pcap/example.pcap")
    fib = os.path.join(d, "fib.txt")
    open(fib, "w").write("10.0.0.0/8 1\n20.0.0.0/8 2\n0.0.0.0/0 3\n")
    base = [T, "run", "--fib", fib, "--pcap", cap]

    def expect_error(cmd, *needles, what):
        rc, so, se = run(cmd)
        c.check(rc not in (0, None) and rc > 0, f"{what}: exit {rc}")
        for n in needles:
            c.check(n in so + se, f"{what}: message lacks {n!r}: {(so + se).strip()[:300]}")
        c.check("app:" not in so, f"{what}: started anyway")

    for flag in ("--rate-mpps", "--max-wait-us", "--rx-hold-us"):
        for value in ("nan", "inf", "-inf", "NaN"):
            expect_error(base + ["--device", "auto", flag, value], flag, "finite", what=f"{flag} {value}")
    expect_error([T, "match", "--rules", fib, "--gen", "count=10", "--match-heavy", "nan"], "--match-heavy",
                 what="--match-heavy nan")
    expect_error([T, "bench", "gpu-load", "--fib", fib, "--floor-us", "nan"], "--floor-us", what="--floor-us nan")
    expect_error([T, "run", "--app", "fw-router", "--fib", fib, "--acl-random", "10", "--acl-drop-share", "nan",
                  "--pcap", cap], "--acl-drop-share", what="--acl-drop-share nan")

    expect_error(base + ["--device", "cpu", "--cores", "9999"], "--cores", "CPU 9999", what="--cores beyond the machine")
    rc, so, se = run(base + ["--device", "cpu", "--cores", "0", "--workers", "2"])
    c.check(rc == 0 and "--cores 0 lists 1 CPU(s) for 2 worker(s)" in se and "share" in se,
            f"--cores with fewer CPUs than workers: {rc} {se}")

    for flags in (["--batch", "1024"], ["--gpu-mode", "graph"], ["--flush-when-idle"], ["--engine", "gather"],
                  ["--inject-gpu-fault", "3"], ["--gpu-path", "resident"], ["--frame-layout", "packed"],
                  ["--ring-slots", "8"], ["--gpus", "0,1"]):
        expect_error(base + ["--device", "cpu"] + flags, flags[0], "--device cpu", what=f"{flags[0]} with --device cpu")
    # The resident path's own refusals, before any GPU is needed.
    expect_error(base + ["--device", "gpu", "--gpu-path", "resident", "--gpu-mode", "graph"], "--gpu-mode graph",
                 "persistent", what="--gpu-path resident with a mode it does not offer")
    expect_error(base + ["--device", "gpu", "--gpu-path", "resident", "--batch", "4096"], "--batch", "2048",
                 what="--gpu-path resident with batches over 2,048 frames")
    expect_error(base + ["--device", "cpu", "--gpu-path", "sideways"], "--gpu-path", what="an unknown --gpu-path")
    # --gpus: checked before any GPU is needed.
    for gpus, needle in (("0,0", "distinct"), ("1-", "--gpus"), ("x", "--gpus"), ("0,99999", "--gpus")):
        expect_error(base + ["--device", "gpu", "--workers", "2", "--gpus", gpus], needle, what=f"--gpus {gpus}")
    expect_error(base + ["--device", "gpu", "--gpus", "0,1", "--gpu-path", "offload", "--workers", "2"], "--gpus",
                 "resident", what="--gpus with the offload path")
    expect_error(base + ["--device", "gpu", "--gpus", "0,1"], "--workers 2", what="--gpus with one receive thread")
    rc, so, se = run(base + ["--device", "auto", "--max-wait-us", "20"])
    c.check(rc == 0, f"--device auto with a GPU flag: exit {rc}: {se}")
    if "no usable GPU" in se:
        c.check("warning: --max-wait-us" in se and "running on the CPU" in se, f"--device auto fallback: no warning: {se}")

    for out in ("x.pcap.gz", "x.txt"):
        expect_error(base + ["--device", "cpu", "--out", os.path.join(d, out)], out, ".pcap or .pcapng",
                     what=f"--out {out}")
        expect_error([T, "gen", "--spec", "count=10", "--out", os.path.join(d, out)], ".pcap or .pcapng",
                     what=f"gen --out {out}")
        c.check(not os.path.exists(os.path.join(d, out)), f"--out {out}: a file was made")

    # Generator bounds: flows beyond count, counts that cannot be held in memory.
    g = os.path.join(d, "g.pcap")
    t0 = time.time()
    expect_error([T, "gen", "--spec", "count=10,flows=1000000000", "--out", g], "flows", what="gen flows=1e9")
    expect_error([T, "gen", "--spec", "count=1000,flows=2000", "--out", g], "flows=2000", "count=1000",
                 what="gen flows beyond count")
    expect_error([T, "run", "--fib", fib, "--gen", "count=1e12", "--device", "cpu"], "count=1000000000000", "memory",
                 what="run --gen count=1e12")
    c.check(time.time() - t0 < 30, "the bounds were not checked up front")
    # tandem gen streams: 3 M frames (252 MB in memory at once) in a few MB.
    p = subprocess.Popen([T, "gen", "--spec", "count=3000000,size=64", "--out", g], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(p.pid, 0)
    so = p.stdout.read()
    c.check(os.waitstatus_to_exitcode(status) == 0 and "3000000 packets" in so, f"gen 3M: {status} {so}")
    # Sanitizers keep freed memory in quarantine: the figure means something only without them.
    if not sanitized():
        c.check(usage.ru_maxrss < 120 * 1024, f"gen 3M: peak memory {usage.ru_maxrss} KiB, not streamed")
    c.check(os.path.getsize(g) == 24 + 3000000 * (16 + 60), f"gen 3M: file size {os.path.getsize(g)}")

    # A frame over 65,535 bytes: dropped as oversize, every packet accounted for.
    big = os.path.join(d, "big.pcap")
    recs = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)]
    for n in (60, 70000, 1514, 65535 + 14, 9000):
        f = udp_frame(n, dst=(10, 1, 2, 3))
        recs.append(struct.pack("<IIII", 1, 0, len(f), len(f)) + f)
    open(big, "wb").write(b"".join(recs))
    for path in (["--cpu-path", "scalar"], ["--cpu-path", "batched"]):
        js = os.path.join(d, "big.json")
        rc, so, se = run([T, "run", "--fib", fib, "--pcap", big, "--device", "cpu", "--json", js] + path)
        r = json.load(open(js)) if rc == 0 else {}
        c.check(rc == 0 and "accounting OK" in so and "oversize:2" in so, f"oversize {path}: {rc} {so} {se}")
        c.check(r.get("received") == 5 and r.get("forwarded") == 3 and r.get("drops", {}).get("oversize") == 2,
                f"oversize {path}: {r}")

    # Throughput is what a stopwatch shows: far more workers than cores, every decision verified
    # (time taken off per worker made such runs report 3x their real rate). The reported time never
    # exceeds the command's, and covers at least half of what the command spent beyond its fixed
    # costs (start, loading, 64 threads, exit), measured by the same command with one pass.
    def timed(repeat, js):
        t0 = time.time()
        rc, so, se = run([T, "run", "--fib", fib, "--gen", "count=200000,dst=fib,flows=1000,seed=5", "--repeat", str(repeat),
                          "--device", "cpu", "--workers", "64", "--verify", "--json", js])
        return rc, so, se, time.time() - t0, (json.load(open(js)) if rc == 0 else {})
    # The fixed costs jitter under a loaded test run (other suites busy-polling every core): they
    # are the larger of two one-pass runs, before and after, and the measured run forwards for
    # about 2 s (passes timed by a 20-pass run: one pass alone is mostly thread start), so that a
    # second of jitter still leaves the 3x misreport this check is for far outside the bound.
    _, _, _, wall1, r1 = timed(1, os.path.join(d, "verify1.json"))
    _, _, _, _, r20 = timed(20, os.path.join(d, "verify20.json"))
    per_pass = max(r20.get("seconds", 0) / 20, 1e-4)
    rc, so, se, wall, r = timed(min(5000, max(100, int(2.0 / per_pass) + 1)), os.path.join(d, "verify.json"))
    _, _, _, wall2, r2 = timed(1, os.path.join(d, "verify2.json"))
    fixed = max(wall1 - r1.get("seconds", 0), wall2 - r2.get("seconds", 0))
    c.check(rc == 0 and "verification included" in so and "spent" in so, f"--verify run: {rc} {so} {se}")
    c.check(r and r["seconds"] <= wall and r["seconds"] >= 0.5 * (wall - fixed),
            f"--verify run: reported {r.get('seconds')} s, the command took {wall:.2f} s, of which {fixed:.2f} s fixed costs")
    shutil.rmtree(d, ignore_errors=True)
    c.done()


main()
