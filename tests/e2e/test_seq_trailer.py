"""Sequence trailers (--spec/--gen ... seq=1, io/traffic_gen.h): `tandem gen` writes them (pcap and
pcapng) and `tandem run --gen ... --out` keeps them, in order, through the ipv4, ipv6, l2 and
fw-router apps and through a replay of a generated capture: the independent checker
(tests/e2e/check_order.py) finds every flow in order, no packet duplicated, and as many packets as
the run reports forwarded. The checker is checked too: a capture with two packets of a flow
swapped reports reordered 1 and exits 1, a duplicated packet duplicated 1, a removed one a gap
(exit 0), and traffic without trailers (seq=0) only frames without one. Where scapy is installed
it confirms that the trailer is Ethernet padding after valid IP/UDP/TCP headers."""
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_order  # noqa: E402
from e2e_util import Checker, args, run, tmpdir  # noqa: E402


def read_pcap(path):
    """(global header, [(record header, frame)]) of a classic little-endian pcap."""
    data = open(path, "rb").read()
    head, off, recs = data[:24], 24, []
    while off < len(data):
        cap = struct.unpack_from("<I", data, off + 8)[0]
        recs.append((data[off:off + 16], data[off + 16:off + 16 + cap]))
        off += 16 + cap
    return head, recs


def write_pcap(path, head, recs):
    with open(path, "wb") as f:
        f.write(head)
        for h, d in recs:
            f.write(h + d)


def checker_cli(path, *extra):
    r = subprocess.run([sys.executable, check_order.__file__, path, *extra], capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout.strip()


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    fib = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")

    def counts(path, what):
        try:
            return check_order.check_order(path)
        except (check_order.CaptureError, OSError) as e:
            c.check(False, f"{what}: check_order: {e}")
            return check_order.OrderCounts()

    # ---- tandem gen ----
    gen = os.path.join(d, "gen.pcap")
    spec = "count=20000,flows=100,zipf=1.1,size=imix,proto=tcp,seed=3,seq=1"
    rc, so, se = run([T, "gen", "--spec", spec, "--out", gen])
    c.check(rc == 0, f"gen: exit {rc}: {se}")
    c.check("seed=3,seq=1)" in so, f"gen: the canonical spec names seq=1: {so}")
    k = counts(gen, "gen")
    c.check((k.packets, k.no_trailer, k.reordered, k.duplicated, k.gaps) == (20000, 0, 0, 0, 0), f"gen: {k.line()}")
    c.check(50 <= k.flows <= 100, f"gen: flows {k.flows}")
    rc, so = checker_cli(gen, "--all-trailers")
    c.check(rc == 0 and so == k.line(), f"gen: check_order.py exit {rc}: {so}")
    head, recs = read_pcap(gen) if os.path.exists(gen) else (b"", [])
    sizes = {len(f) for _, f in recs}
    c.check(sizes == {62, 590, 1514}, f"gen: IMIX TCP sizes with trailers {sorted(sizes)} (60 grows to 62)")

    for name, s in (("gen-flows0.pcapng", "count=3000,flows=0,size=64,seed=4,seq=1"),
                    ("gen-v4udp.pcapng", "count=3000,flows=7,size=1518,proto=udp,seed=5,seq=1")):
        p = os.path.join(d, name)
        rc, so, se = run([T, "gen", "--spec", s, "--out", p])
        c.check(rc == 0, f"{name}: exit {rc}: {se}")
        k = counts(p, name)
        want_flows = 3000 if "flows=0" in s else 7
        c.check((k.flows, k.packets, k.no_trailer, k.reordered, k.duplicated, k.gaps) == (want_flows, 3000, 0, 0, 0, 0),
                f"{name} (pcapng): {k.line()}")

    plain = os.path.join(d, "plain.pcap")
    rc, so, se = run([T, "gen", "--spec", "count=2000,flows=10,size=imix,seed=6", "--out", plain])
    c.check(rc == 0 and "seq" not in so, f"gen without seq: exit {rc}: {so} {se}")
    k = counts(plain, "seq=0")
    c.check((k.packets, k.no_trailer, k.flows) == (2000, 2000, 0), f"seq=0: every frame without a trailer: {k.line()}")
    c.check(checker_cli(plain)[0] == 0, "seq=0: check_order.py exits 0 without --all-trailers")
    c.check(checker_cli(plain, "--all-trailers")[0] == 1, "seq=0: check_order.py --all-trailers exits 1")

    # ---- the checker can fail ----
    if recs:
        seen = {}
        pair = None
        for i, (_, f) in enumerate(recs):
            t = check_order.trailer(f)
            if t[0] in seen and pair is None:
                pair = (seen[t[0]], i)
            seen[t[0]] = i
        i, j = pair
        c.check(check_order.trailer(recs[j][1])[1] == check_order.trailer(recs[i][1])[1] + 1, "consecutive packets of a flow")
        swapped = list(recs)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        sp = os.path.join(d, "swapped.pcap")
        write_pcap(sp, head, swapped)
        k = counts(sp, "swapped")
        c.check((k.reordered, k.duplicated, k.gaps, k.packets) == (1, 0, 0, 20000), f"swapped: {k.line()}")
        rc, so = checker_cli(sp)
        c.check(rc == 1 and "reordered 1," in so, f"swapped: check_order.py exit {rc}: {so}")

        dup = os.path.join(d, "dup.pcap")
        write_pcap(dup, head, recs[:j + 1] + [recs[i]] + recs[j + 1:])
        k = counts(dup, "duplicated")
        c.check((k.reordered, k.duplicated, k.gaps) == (0, 1, 0), f"duplicated: {k.line()}")
        c.check(checker_cli(dup)[0] == 1, "duplicated: check_order.py exits 1")

        lost = os.path.join(d, "lost.pcap")
        write_pcap(lost, head, recs[:i] + recs[i + 1:])  # a flow's packet with a later one after it
        k = counts(lost, "lost")
        c.check((k.reordered, k.duplicated, k.gaps, k.packets) == (0, 0, 1, 19999), f"lost: {k.line()}")
        rc, so = checker_cli(lost)
        c.check(rc == 0 and "gaps 1," in so, f"lost: check_order.py exit {rc} (gaps are allowed): {so}")

    # ---- tandem run: the apps keep the trailers, in order ----
    runs = [
        ("ipv4", ["--app", "ipv4", "--fib", fib, "--gen", "count=20000,dst=fib,flows=500,zipf=1.1,size=imix,seed=2,seq=1"]),
        ("ipv4 batched", ["--app", "ipv4", "--fib", fib, "--cpu-path", "batched",
                          "--gen", "count=20000,dst=fib,flows=300,proto=tcp,seed=7,seq=1"]),
        ("ipv6", ["--app", "ipv6", "--fib", fib, "--gen", "count=10000,dst=fib,flows=200,size=imix,seed=3,seq=1"]),
        ("l2", ["--app", "l2", "--l2-random", "20000", "--gen", "count=20000,dst=fib,flows=400,seed=4,seq=1"]),
        ("fw-router", ["--app", "fw-router", "--fib", fib, "--acl-random", "2000",
                       "--gen", "count=20000,dst=uniform,flows=1000,proto=tcp,seed=10,seq=1"]),
        ("ipv4 replaying gen.pcap", ["--app", "ipv4", "--fib", fib, "--pcap", gen]),
    ]
    for what, cmd in runs:
        out = os.path.join(d, "out.pcap")
        js = os.path.join(d, "out.json")
        for p in (out, js):
            if os.path.exists(p):
                os.remove(p)
        rc, so, se = run([T, "run", *cmd, "--device", "cpu", "--out", out, "--json", js])
        c.check(rc == 0, f"{what}: exit {rc}: {se.strip()[-400:]}")
        if rc != 0:
            continue
        rep = json.load(open(js))
        k = counts(out, what)
        print(f"{what}: {k.line()} (forwarded {rep['forwarded']} of {rep['received']})")
        c.check(k.ok(), f"{what}: {k.line()}")
        c.check(k.packets == rep["forwarded"] and k.packets > 0, f"{what}: {k.packets} packets out, forwarded {rep['forwarded']}")
        c.check(k.no_trailer == 0, f"{what}: frames lost their trailer: {k.line()}")
        if rep["dropped"] == 0:
            c.check(k.gaps == 0, f"{what}: gaps without drops: {k.line()}")

    # ---- scapy, independently: the trailer is padding after valid headers ----
    try:
        from scapy.all import IP, TCP, Ether, Padding
    except ImportError:
        print("scapy is not installed: the padding check is left out")
    else:
        bad = 0
        for _, f in recs[:3000]:
            p = Ether(f)
            q = Ether(f)
            del q[IP].chksum
            del q[IP].len
            del q[TCP].chksum
            rebuilt = bytes(Ether(bytes(q)))
            pad = bytes(p[Padding]) if Padding in p else b""
            if len(pad) != 8 or pad != f[-8:] or rebuilt != f or p[IP].len != len(f) - 14 - 8:
                bad += 1
        c.check(bad == 0, f"scapy: {bad} frames whose trailer is not 8 bytes of padding after valid headers")
    c.done()


if __name__ == "__main__":
    main()
