#!/usr/bin/env python3
"""Writes tests/golden/inputs/: the key files, tables, traces and rules the golden cases read besides
data/. Run once; the files are committed, so the cases do not depend on this script or on Python's
random module staying the same. Everything is drawn from the real data in data/ where it can be:

  ipv4.keys     addresses inside sampled prefixes of the BGP table (first, last, random), random
                addresses (many unrouted) and a few special ones
  ipv6.keys     the same for the table's IPv6 prefixes, in several spellings (compressed, full,
                upper case, v4-mapped)
  l2.fib        MAC PORT lines: most of the MACs seen in data/pcap (some left out: misses flood)
  l2.keys       every MAC of data/pcap, the table's MACs upper-cased, broadcast/multicast, random
  ndn.fib       NAME NEXTHOP lines: a small name tree (hand written; the URL list is not shipped)
  ndn.keys      names under, beside and above those prefixes, with escaped components
  acl1_10k.trace, fw1_10k.trace
                ClassBench traces (src dst sport dport proto, integers): two of three headers drawn
                from a rule of the set, one of three random, as tests/e2e/test_classify.py draws them
  dpi.rules     a few Snort rules (content, nocase, |hex|, offset/depth, distance/within, ports)

Usage: python3 tests/golden/make_inputs.py [--source-dir DIR]   (then regenerate.py)"""
import argparse
import gzip
import ipaddress
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from classbench import parse_classbench  # noqa: E402  (the shared reference parser)


def fib_prefixes(path):
    v4, v6 = [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            t = line.split("#")[0].split()
            if not t:
                continue
            (v6 if ":" in t[0] else v4).append(ipaddress.ip_network(t[0], strict=False))
    return v4, v6


def addr_in(rng, net):
    return net.network_address + rng.randrange(net.num_addresses)


def pcap_macs(paths):
    macs = []
    for p in paths:
        if not os.path.exists(p):
            continue
        d = open(p, "rb").read()
        off = 24
        while off + 16 <= len(d):
            incl = struct.unpack_from("<I", d, off + 8)[0]
            frame = d[off + 16:off + 16 + incl]
            off += 16 + incl
            for m in (frame[0:6], frame[6:12]):
                if len(m) == 6 and m not in macs:
                    macs.append(m)
    return macs


def mac(b):
    return ":".join(f"{x:02x}" for x in b)


DPI_RULES = r'''# Golden-test rules: each exercises one part of the matcher.
alert tcp any any -> any 80 (msg:"admin page"; content:"/admin"; nocase; sid:1;)
alert tcp any any -> any any (msg:"shell"; content:"|2f|bin|2f|sh"; sid:2;)
alert tcp any any -> any any (msg:"http response"; content:"HTTP/1."; offset:0; depth:7; sid:3;)
alert tcp any any -> any any (msg:"host header"; content:"Host|3a| "; nocase; content:"|0d 0a|"; distance:0; within:64; sid:4;)
alert tcp any any -> any any (msg:"get"; content:"GET "; depth:4; content:!"zzzz"; sid:5;)
alert udp any any -> any 53 (msg:"dns com"; content:"|03|com|00|"; sid:6;)
alert tcp any any -> any 443 (msg:"tls handshake"; content:"|16 03|"; depth:2; sid:7;)
alert ip any any -> any any (msg:"any ip"; content:"google"; nocase; sid:8;)
alert tcp any any -> any any (msg:"cookie"; content:"Cookie|3a|"; content:"="; distance:1; sid:9;)
'''


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    a = p.parse_args()
    src = os.path.abspath(a.source_dir)
    out = os.path.join(src, "tests", "golden", "inputs")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(15)
    v4, v6 = fib_prefixes(os.path.join(src, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"))

    keys = ["0.0.0.0", "255.255.255.255", "127.0.0.1", "10.0.0.1", "192.168.1.1", "8.8.8.8", "1.1.1.1", "224.0.0.1"]
    for net in v4[::2000]:
        keys += [str(net.network_address), str(net.broadcast_address), str(addr_in(rng, net))]
    keys += [str(ipaddress.IPv4Address(rng.getrandbits(32))) for _ in range(300)]
    open(os.path.join(out, "ipv4.keys"), "w").write("\n".join(keys) + "\n")

    keys = ["::", "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::1", "fe80::1", "::ffff:8.8.8.8",
            "2001:0200:0000:0000:0000:0000:0000:0001", "2001:200::1", "2001:4860:4860::8888", "2606:4700:4700::1111"]
    for i, net in enumerate(v6[::500]):
        for x in (net.network_address, net.broadcast_address, addr_in(rng, net)):
            keys.append(x.exploded if i % 7 == 0 else str(x).upper() if i % 5 == 0 else str(x))
    keys += [str(ipaddress.IPv6Address((0x2 << 124) | rng.getrandbits(124))) for _ in range(150)]
    open(os.path.join(out, "ipv6.keys"), "w").write("\n".join(keys) + "\n")

    macs = pcap_macs([os.path.join(src, "data/pcap", f) for f in ("example.pcap", "many-protocols.pcap", "tls2.pcap")])
    table = [m for i, m in enumerate(macs) if i % 4 != 3 and not m[0] & 1]  # group MACs always flood
    rows = [f"{mac(m)} {rng.randrange(16)}" for m in table]
    rows += [f"02:00:00:{rng.getrandbits(8):02x}:{rng.getrandbits(8):02x}:{rng.getrandbits(8):02x} {rng.randrange(16)}"
             for _ in range(40)]
    open(os.path.join(out, "l2.fib"), "w").write("\n".join(rows) + "\n")
    keys = [mac(m) for m in macs] + [mac(m).upper() for m in table[:5]] + ["ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01",
                                                                          "00:00:00:00:00:00"]
    keys += [r.split()[0] for r in rows[-40::4]]
    keys += [mac(bytes(rng.getrandbits(8) for _ in range(6))) for _ in range(20)]
    open(os.path.join(out, "l2.keys"), "w").write("\n".join(keys) + "\n")

    fib = [("/", 0), ("/com", 1), ("/com/example", 2), ("/com/example/www", 3), ("/com/google", 4),
           ("/com/google/mail", 5), ("/org", 6), ("/org/wikipedia/en", 7), ("/org/wikipedia/de/wiki", 8),
           ("/net/cdn/a/b/c/d", 9), ("/edu/mit", 10), ("/uk/co/bbc/news", 11), ("/com/%20space", 12),
           ("/jp/co/example/%E3%81%82", 13), ("/de/heise/ct", 14), ("/com/github/torvalds/linux", 15)]
    open(os.path.join(out, "ndn.fib"), "w").write("".join(f"{n} {h}\n" for n, h in fib))
    names = []
    for n, _ in fib:
        names += [n, n.rstrip("/") + "/x", n.rstrip("/") + "/x/y/z/1/2/3"]
    names += ["/com/exampl", "/com/examples/www", "/COM/example", "/org/wikipedia", "/org/wikipedia/de",
              "/org/wikipedia/de/wiki/Main_Page", "/net/cdn/a/b/c", "/com/%41b", "/com/%20space/x", "/com/github/torvalds",
              "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p", "/" + "x" * 200]
    open(os.path.join(out, "ndn.keys"), "w").write("\n".join(names) + "\n")

    for name in ("acl1_10k", "fw1_10k"):
        rules = parse_classbench(os.path.join(src, "data/classbench/filters", name + ".gz"))
        lines = []
        for i in range(1500):
            if i % 3 == 0:
                h = (rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16), rng.choice([6, 17, 1, 47]))
            else:
                s, d, sp, dp, pv, pm = rng.choice(rules)
                h = (rng.randint(*s), rng.randint(*d), rng.randint(*sp), rng.randint(*dp), pv | (rng.getrandbits(8) & ~pm & 0xFF))
            lines.append("\t".join(map(str, h)))
        open(os.path.join(out, name + ".trace"), "w").write("\n".join(lines) + "\n")

    open(os.path.join(out, "dpi.rules"), "w").write(DPI_RULES)
    for f in sorted(os.listdir(out)):
        print(f"{f}: {os.path.getsize(os.path.join(out, f))} bytes")


if __name__ == "__main__":
    main()
