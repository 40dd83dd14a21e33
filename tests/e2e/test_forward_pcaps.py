"""Forwards the real captures and checks the output with an independent decoder (scapy) and an
independent longest-prefix match written in Python: which packets leave, their TTL and header
checksum, every other byte unchanged, per-port counts, and received = forwarded + dropped."""
import json
import os
import sys

from e2e_util import SKIP, Checker, args, load_fib_python, run, tmpdir

try:
    from scapy.all import IP, Ether, PcapReader, raw  # noqa: F401
    from scapy.utils import checksum
except ImportError:
    print("scapy is not installed: skipping (scripts/install-deps.sh installs it)")
    sys.exit(SKIP)


def martian(a):
    top = a >> 24
    return top == 0 or top == 127 or top >= 224


def expected_forward(pkt, lookup):
    """The next hop an RFC 1812 router with this FIB uses for pkt, or None to drop it."""
    if IP not in pkt or pkt[IP].version != 4:
        return None
    ip = pkt[IP]
    hdr = raw(ip)[: ip.ihl * 4]
    if ip.ihl < 5 or checksum(hdr) != 0 or ip.len < ip.ihl * 4 or ip.len > len(raw(ip)):
        return None
    src = int.from_bytes(bytes(map(int, ip.src.split("."))), "big")
    dst = int.from_bytes(bytes(map(int, ip.dst.split("."))), "big")
    if martian(dst) or (src >> 24) in (0, 127) or (src >> 24) >= 224 or ip.ttl <= 1:
        return None
    return lookup(dst)


def main():
    a = args()
    c = Checker()
    fib = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    lookup = load_fib_python(fib)
    out_dir = tmpdir()
    for name in ("example", "many-protocols", "tls2"):
        cap = os.path.join(a.source_dir, "data/pcap", name + ".pcap")
        for device in ("cpu", "auto"):
            out = os.path.join(out_dir, f"{name}-{device}.pcap")
            js = os.path.join(out_dir, f"{name}-{device}.json")
            rc, so, se = run([a.tandem, "run", "--app", "ipv4", "--fib", fib, "--pcap", cap, "--device", device,
                              "--verify", "--out", out, "--json", js])
            c.check(rc == 0, f"{name}/{device}: exit {rc}: {se}")
            if rc != 0:
                continue
            rep = json.load(open(js))
            inp = list(PcapReader(cap))
            outp = list(PcapReader(out))
            c.check(rep["received"] == len(inp), f"{name}: received {rep['received']} != {len(inp)} packets")
            c.check(rep["received"] == rep["forwarded"] + rep["dropped"], f"{name}: accounting")
            c.check(sum(rep["drops"].values()) == rep["dropped"], f"{name}: drop reasons sum")
            c.check(rep["verify"]["mismatches"] == 0, f"{name}: verify mismatches")
            lat = rep["latency_ns"]
            c.check(0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"],
                    f"{name}: latency percentiles out of order: {lat}")
            want = [(p, expected_forward(p, lookup)) for p in inp]
            fwd = [(p, nh) for p, nh in want if nh is not None]
            c.check(len(outp) == len(fwd) == rep["forwarded"],
                    f"{name}/{device}: forwarded {len(outp)} (json {rep['forwarded']}), expected {len(fwd)}")
            per_port = {}
            for _, nh in fwd:
                per_port[str(nh)] = per_port.get(str(nh), 0) + 1
            c.check(per_port == rep["forwarded_per_port"], f"{name}/{device}: per-port counts differ")
            bad = 0
            for (pin, _), pout in zip(fwd, outp):
                ri, ro = raw(pin), raw(pout)
                ipo = pout[IP]
                hdr = raw(ipo)[: ipo.ihl * 4]
                ok = (ipo.ttl == pin[IP].ttl - 1 and checksum(hdr) == 0 and len(ri) == len(ro))
                # Every byte but TTL and checksum is unchanged.
                off = len(ri) - len(raw(pin[IP]))
                diff = [i for i in range(min(len(ri), len(ro))) if ri[i] != ro[i]]
                ok = ok and all(i in (off + 8, off + 10, off + 11) for i in diff)
                ok = ok and pout.time == pin.time
                bad += not ok
            c.check(bad == 0, f"{name}/{device}: {bad} forwarded packets with wrong TTL/checksum/bytes")
            print(f"{name}/{device}: {len(inp)} in, {len(outp)} forwarded, drops {rep['drops']}", flush=True)
    c.done()


main()
