"""`tandem run --pcap` streams a capture (64 MiB of frames at a time): a capture larger than a
window gives the same counters as the same capture loaded whole (--preload --repeat 2 counts every
packet twice, as a streamed --repeat 2 does by reading it twice), the same output capture, and a
peak memory that stays near one window rather than the capture's size, for one pass or two."""
import json
import os
import resource
import subprocess

from e2e_util import Checker, args, run, sanitized, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    fib = os.path.join(d, "fib.txt")
    open(fib, "w").write("0.0.0.0/1 1\n128.0.0.0/2 2\n10.0.0.0/8 3\n")
    cap = os.path.join(d, "big.pcap")
    rc, so, se = run([T, "gen", "--spec", "count=150000,size=1518,flows=5000,seed=3", "--out", cap])
    c.check(rc == 0, f"gen: {rc} {se}")
    size = os.path.getsize(cap)
    c.check(size > 200 * 2**20, f"the capture spans several windows: {size} bytes")

    def forward(extra, js):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        r = subprocess.run([T, "run", "--fib", fib, "--pcap", cap, "--device", "cpu", "--json", js, *extra],
                           capture_output=True, text=True, timeout=600)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        return r, (json.load(open(js)) if r.returncode == 0 else {}), max(peak, before)

    # The same command on a capture of 100 frames: what the run holds besides its input (the
    # table's arrays, pools). ru_maxrss of the children is a running maximum: measure in this order.
    small = os.path.join(d, "small.pcap")
    run([T, "gen", "--spec", "count=100,size=1518", "--out", small])
    subprocess.run([T, "run", "--fib", fib, "--pcap", small, "--device", "cpu"], capture_output=True, timeout=600)
    base = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = os.path.join(d, "out.pcap")
    r1, j1, peak1 = forward(["--out", out], os.path.join(d, "s.json"))
    c.check(r1.returncode == 0 and "streamed in 4 window(s)" in r1.stdout, f"streamed run: {r1.returncode} {r1.stdout} {r1.stderr}")
    c.check(sanitized() or peak1 - base < 100 * 1024,
            f"streamed run: {peak1 - base} KiB above the run's own {base} KiB for a {size >> 20} MiB capture (one window: 64 MiB)")
    r2s, j2s, peak2 = forward(["--repeat", "2"], os.path.join(d, "s2.json"))
    c.check(r2s.returncode == 0 and "streamed in 8 window(s), 2 pass(es)" in r2s.stdout,
            f"streamed twice: {r2s.returncode} {r2s.stdout} {r2s.stderr}")
    c.check(sanitized() or peak2 - base < 100 * 1024,
            f"streamed twice: {peak2 - base} KiB above the run's own {base} KiB (one window: 64 MiB)")
    r2, j2, _ = forward(["--repeat", "2", "--preload"], os.path.join(d, "w.json"))
    c.check(r2.returncode == 0 and "streamed" not in r2.stdout and "(preloaded:" in r2.stdout,
            f"loaded run: {r2.returncode} {r2.stderr}")
    for k in ("received", "forwarded", "dropped", "forwarded_per_port", "drops"):
        c.check(j2s.get(k) == j2.get(k), f"{k}: streamed twice {j2s.get(k)}, loaded twice {j2.get(k)}")
    c.check(j1.get("received") == 150000 and j1.get("balanced"), f"streamed counters: {j1}")
    for k in ("received", "forwarded", "dropped"):
        c.check(j2.get(k) == 2 * j1.get(k, -1), f"{k}: streamed {j1.get(k)}, loaded twice {j2.get(k)}")
    c.check(j2.get("forwarded_per_port") == {p: 2 * n for p, n in j1.get("forwarded_per_port", {}).items()},
            "per port: streamed x2 = loaded twice")
    # The output holds every forwarded frame, in order, whole.
    r3, j3, _ = forward(["--out", os.path.join(d, "out2.pcap"), "--workers", "1", "--verify"], os.path.join(d, "v.json"))
    c.check(r3.returncode == 0 and j3.get("verify", {}).get("mismatches") == 0, f"verify: {r3.stdout} {r3.stderr}")
    c.check(open(out, "rb").read() == open(os.path.join(d, "out2.pcap"), "rb").read(), "the same output twice")
    c.check(os.path.getsize(out) > 0 and j1.get("forwarded") > 0, "something was forwarded")
    # The GPU path over the windows, where a GPU is usable: the same counters, every decision checked.
    r4 = subprocess.run([T, "run", "--fib", fib, "--pcap", cap, "--device", "gpu", "--verify", "--json", os.path.join(d, "g.json")],
                        capture_output=True, text=True, timeout=600)
    if "no usable GPU" not in r4.stderr:
        j4 = json.load(open(os.path.join(d, "g.json"))) if r4.returncode == 0 else {}
        c.check(r4.returncode == 0 and "streamed in 4 window(s)" in r4.stdout, f"gpu: {r4.returncode} {r4.stdout} {r4.stderr}")
        c.check(j4.get("verify", {}).get("mismatches") == 0 and j4.get("verify", {}).get("checked", 0) > 0, f"gpu verify: {j4.get('verify')}")
        for k in ("received", "forwarded", "dropped", "forwarded_per_port"):
            c.check(j4.get(k) == j1.get(k), f"gpu {k}: {j4.get(k)} vs cpu {j1.get(k)}")
    c.done()


if __name__ == "__main__":
    main()
