"""Outputs never destroy inputs and are never seen half-written: `--out` or `--json` naming an input
(directly, through a symbolic link) or each other is refused before anything is read and leaves the
input byte for byte as it was; two runs writing one output leave a valid capture; SIGINT or SIGTERM
during `tandem run --out` ends with the summary, whole records in the output, balanced accounting
and exit code 130 or 143; a second signal ends the run at once, leaving no temporary file and the
previous output as it was. Needs no GPU; scapy, when present, reads the interrupted output too."""
import glob
import json
import os
import shutil
import signal
import struct
import subprocess
import time

from e2e_util import Checker, args, run, tmpdir


def pcap_records(path):
    """Records of a classic pcap if the file is whole (header, then only whole records), else None."""
    data = open(path, "rb").read()
    if len(data) < 24 or struct.unpack("<I", data[:4])[0] not in (0xA1B2C3D4, 0xA1B23C4D):
        return None
    off, n = 24, 0
    while off < len(data):
        if off + 16 > len(data):
            return None
        cap = struct.unpack("<I", data[off + 8:off + 12])[0]
        off += 16 + cap
        if off > len(data):
            return None
        n += 1
    return n


def temporaries(d):
    return glob.glob(os.path.join(d, ".*.tmp-*"))


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    cap = os.path.join(d, "in.pcap")
    shutil.copy(os.path.join(a.source_dir, "data/pcap/example.pcap"), cap)
    fib = os.path.join(d, "fib.txt")
    open(fib, "w").write("10.0.0.0/8 1\n20.0.0.0/8 2\n0.0.0.0/0 3\n")
    originals = {p: open(p, "rb").read() for p in (cap, fib)}

    def untouched(what):
        for p, data in originals.items():
            c.check(open(p, "rb").read() == data, f"{what}: {p} changed")

    def expect_refused(cmd, *needles, what):
        rc, so, se = run(cmd)
        c.check(rc == 1, f"{what}: exit {rc}: {so} {se}")
        for n in needles:
            c.check(n in se, f"{what}: message lacks {n!r}: {se.strip()}")
        c.check("app:" not in so, f"{what}: started before refusing: {so}")
        untouched(what)

    base = [T, "run", "--fib", fib, "--device", "cpu"]
    expect_refused(base + ["--pcap", cap, "--out", cap], f"--out {cap}", f"--pcap {cap}", "refusing to overwrite an input",
                   what="--out is the input capture")
    expect_refused(base + ["--pcap", cap, "--out", fib], f"--fib {fib}", what="--out is the FIB")
    expect_refused(base + ["--pcap", cap, "--json", fib], f"--json {fib}", what="--json is the FIB")
    link = os.path.join(d, "link.pcap")
    os.symlink(cap, link)
    expect_refused(base + ["--pcap", cap, "--out", link], f"--out {link}", f"--pcap {cap}", what="--out links to the input")
    hard = os.path.join(d, "hard.pcap")
    os.link(cap, hard)
    expect_refused(base + ["--pcap", cap, "--out", hard], f"--out {hard}", what="--out is a hard link to the input")
    both = os.path.join(d, "both.pcap")
    expect_refused(base + ["--pcap", cap, "--out", both, "--json", both], f"--json {both}", f"--out {both}",
                   what="--json is --out")
    c.check(not os.path.exists(both), "--json is --out: a file was made")
    expect_refused([T, "gen", "--spec", "count=10,dst=fib", "--fib", fib, "--out", fib], f"--fib {fib}",
                   what="gen --out is its FIB")
    expect_refused([T, "bench", "ipv4", "--fib", fib, "--json", fib], f"--json {fib}", what="bench --json is its FIB")
    c.check(not temporaries(d), f"temporary files left: {temporaries(d)}")

    # An existing output is replaced whole; the input stays as it was.
    out = os.path.join(d, "out.pcap")
    open(out, "wb").write(b"a previous run's output")
    rc, so, se = run(base + ["--pcap", cap, "--out", out])
    n = pcap_records(out)
    c.check(rc == 0 and n is not None and f"output: {out}: {n} packets" in so, f"plain --out: {rc} {n} {so} {se}")
    untouched("plain --out")

    # Two runs writing one output at once: the file is one of their outputs, whole.
    gen = "count=300000,dst=fib,flows=1000,size=imix,seed=3"
    runs = [subprocess.Popen(base + ["--gen", gen, "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    results = [(p.wait(timeout=600), p.stdout.read(), p.stderr.read()) for p in runs]
    n = pcap_records(out)
    c.check(all(rc == 0 for rc, _, _ in results), f"concurrent runs: {[(rc, se) for rc, _, se in results]}")
    c.check(n is not None and all(f"output: {out}: {n} packets" in so for _, so, _ in results),
            f"concurrent runs: {n} records, {[so[-300:] for _, so, _ in results]}")
    c.check(not temporaries(d), f"concurrent runs: temporary files left: {temporaries(d)}")

    # Interrupted runs: generated traffic at a set rate, so that the output is being written when the
    # signal comes; it is sent once the temporary output holds a few MB.
    slow = base + ["--gen", "count=2000000,dst=fib,flows=1000,size=64,seed=4", "--rate-mpps", "0.25"]

    def start_and_wait(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            if any(os.path.getsize(t) > 3 << 20 for t in temporaries(d) if os.path.exists(t)):
                return p
            time.sleep(0.05)
        return p

    for sig, code, name in ((signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")):
        js = os.path.join(d, f"{name}.json")
        p = start_and_wait(slow + ["--out", out, "--json", js])
        if p.poll() is not None:
            c.check(False, f"{name}: the run ended before the signal: {p.stdout.read()} {p.stderr.read()}")
            continue
        p.send_signal(sig)
        rc = p.wait(timeout=120)
        so, se = p.stdout.read(), p.stderr.read()
        c.check(rc == code, f"{name}: exit {rc}, want {code}: {se}")
        c.check(f"interrupted by {name}" in so, f"{name}: no interruption line: {so}")
        c.check("accounting OK" in so, f"{name}: accounting: {so}")
        n = pcap_records(out)
        c.check(n is not None and n > 0 and f"output: {out}: {n} packets" in so,
                f"{name}: output not whole or not as reported: {n} records: {so}")
        try:
            from scapy.utils import rdpcap
            c.check(len(rdpcap(out)) == n, f"{name}: scapy reads another number of packets")
        except ImportError:
            pass
        report = json.load(open(js))
        c.check(report["interrupted"] == name and report["balanced"] and 0 < report["received"] < report["expected"],
                f"{name}: JSON report: {report.get('interrupted')} {report.get('received')} {report.get('expected')}")
        c.check(not temporaries(d), f"{name}: temporary files left: {temporaries(d)}")

    # A second signal ends the run at once. Sent right after the first, it lands while the workers
    # drain: the previous output stays and no temporary file is left. (Should the run have put its
    # output in place in between, that output must be whole.)
    previous = open(out, "rb").read()
    p = start_and_wait(slow + ["--out", out])
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=120)
    c.check(rc in (-signal.SIGINT, 130), f"second SIGINT: exit {rc}")
    c.check(open(out, "rb").read() == previous or pcap_records(out) is not None, "second SIGINT: the output is cut")
    c.check(not temporaries(d), f"second SIGINT: temporary files left: {temporaries(d)}")

    untouched("the end")
    shutil.rmtree(d, ignore_errors=True)
    c.done()


main()
