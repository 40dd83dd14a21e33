"""`tandem run --app fw-router --rules R --pcap P --verify`: packets crafted (with scapy) to slip past
`drop proto tcp dport 22` by malformation (RFC 1858, RFC 3128) are dropped with their own reasons
(tiny_fragment, bad_l4_header, fragment_overlap), later fragments and ICMP match only rules without
ports, IPv4 option lists with a bad length are dropped (bad_ip_options, by the ipv4 app too) and so
are IPv6 type 0 routing headers with segments left (ipv6_rh0, by the ipv6 app too). On every path
(scalar, batched, --device auto) the counts per reason are the expected ones, --verify finds no
difference, and no forwarded packet, read back by scapy, is TCP to port 22."""
import json
import os
import sys

from e2e_util import SKIP, Checker, args, load_fib_python, run, tmpdir

try:
    from scapy.all import (ICMP, IP, TCP, UDP, Ether, IPOption_Router_Alert, IPv6, IPv6ExtHdrFragment,
                           IPv6ExtHdrRouting, PcapReader, Raw, raw, wrpcap)
    from scapy.utils import checksum
except ImportError:
    print("scapy is not installed: skipping (scripts/install-deps.sh installs it)")
    sys.exit(SKIP)

RULES = """drop proto tcp dport 22
accept dport 0-1023
accept src 10.9.0.0/16
default drop
"""
DST = "8.8.8.8"
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def ip(src="10.1.0.1", **kw):
    return IP(src=src, dst=DST, ttl=64, **kw)


def bad_tcp_offset(words):
    """TCP to 22 whose data offset field says `words` (< 5): the header is 20 bytes regardless."""
    b = bytearray(raw(TCP(sport=40000, dport=22, flags="S")))
    b[12] = words << 4
    return ETH / ip(proto=6) / Raw(bytes(b) + b"x" * 20)


def with_option_length(length):
    """TCP to 80 behind a router alert option whose length byte is `length`, checksum fixed."""
    b = bytearray(raw(ip(options=IPOption_Router_Alert()) / TCP(sport=40000, dport=80)))
    b[21] = length
    b[10:12] = b"\0\0"
    b[10:12] = checksum(bytes(b[:24])).to_bytes(2, "big")
    return Ether(src=ETH.src, dst=ETH.dst, type=0x0800) / Raw(bytes(b))


def frames():
    """(packet, expected outcome): 'fwd' or a drop reason of fw-router."""
    syn22 = raw(TCP(sport=40000, dport=22, flags="S"))
    syn80 = raw(TCP(sport=40000, dport=80, flags="S"))
    v6 = IPv6(src="2001:db8::1", dst="2001:4860:4860::8888")
    return [
        (ETH / ip() / TCP(sport=40000, dport=22, flags="S"), "acl_denied"),
        (ETH / ip() / TCP(sport=40000, dport=80, flags="S"), "fwd"),
        (ETH / ip() / UDP(sport=40000, dport=53) / Raw(b"q" * 12), "fwd"),
        (ETH / ip(flags="MF", proto=6) / Raw(syn22 + b"p" * 8), "acl_denied"),
        # Tiny first fragments: ports only, or ports without the TCP flags.
        (ETH / ip(flags="MF", proto=6) / Raw(syn22[:8]), "tiny_fragment"),
        (ETH / ip(flags="MF", proto=6) / Raw(syn22[:16]), "tiny_fragment"),
        (ETH / ip(flags="MF", proto=17) / Raw(raw(UDP(sport=1, dport=53))[:4]), "tiny_fragment"),
        # Malformed transport headers, whose ports would read as 0.
        *[(bad_tcp_offset(w), "bad_l4_header") for w in range(5)],
        (ETH / ip(proto=17) / Raw(raw(UDP(sport=1, dport=53, len=7)) + b"u" * 8), "bad_l4_header"),
        # A TCP fragment at offset 8 bytes could rewrite the first one's ports (RFC 3128).
        (ETH / ip(flags="MF", frag=1, proto=6) / Raw(syn22), "fragment_overlap"),
        # Later fragments and ICMP have no ports: `accept dport 0-1023` is not for them.
        (ETH / ip(frag=185, proto=6) / Raw(syn80 + b"d" * 20), "acl_denied"),
        (ETH / ip(src="10.9.0.1", frag=185, proto=6) / Raw(syn80 + b"d" * 20), "fwd"),
        (ETH / ip() / ICMP(), "acl_denied"),
        (ETH / ip(src="10.9.0.1") / ICMP(), "fwd"),
        # IPv4 option lists: a well-framed one passes, a bad length is dropped.
        (with_option_length(4), "fwd"),
        (with_option_length(0), "bad_ip_options"),
        (with_option_length(1), "bad_ip_options"),
        (with_option_length(9), "bad_ip_options"),
        # IPv6 is not the fw-router's; a type 0 routing header with segments left is dropped first.
        (ETH / v6 / IPv6ExtHdrFragment(m=1, offset=0, nh=6) / Raw(syn22[:8]), "not_handled_by_app"),
        (ETH / v6 / IPv6ExtHdrRouting(type=0, segleft=1, addresses=["2001:db8::2"]) / TCP(dport=80),
         "ipv6_rh0"),
        (ETH / v6 / IPv6ExtHdrRouting(type=0, segleft=0, addresses=["2001:db8::2"]) / TCP(dport=80),
         "not_handled_by_app"),
    ]


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    fib = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    lookup = load_fib_python(fib)
    dst = int.from_bytes(bytes(map(int, DST.split("."))), "big")
    if lookup(dst) is None:
        c.check(False, f"{DST} has no route in {fib}: the test needs one")
        c.done()
    rules = os.path.join(d, "rules.txt")
    open(rules, "w").write(RULES)
    cases = frames()
    cap = os.path.join(d, "evasion.pcap")
    wrpcap(cap, [p for p, _ in cases])
    want = {}
    for _, outcome in cases:
        want[outcome] = want.get(outcome, 0) + 1
    for path in (["--cpu-path", "scalar"], ["--cpu-path", "batched"], ["--device", "auto"]):
        what = " ".join(path)
        out = os.path.join(d, "out.pcap")
        js = os.path.join(d, "r.json")
        rc, so, se = run([a.tandem, "run", "--app", "fw-router", "--rules", rules, "--fib", fib, "--pcap", cap,
                          "--verify", "--json", js, "--out", out, *path])
        c.check(rc == 0, f"{what}: exit {rc}: {so[-500:]} {se[-500:]}")
        if rc != 0:
            continue
        r = json.load(open(js))
        c.check(r["received"] == len(cases) and r["balanced"],
                f"{what}: received {r['received']}, balanced {r['balanced']}")
        c.check(r["verify"]["mismatches"] == 0, f"{what}: verify: {r['verify']}")
        c.check(r["forwarded"] == want["fwd"], f"{what}: forwarded {r['forwarded']}, want {want['fwd']}")
        got = {k: v for k, v in r["drops"].items() if v}
        c.check(got == {k: v for k, v in want.items() if k != "fwd"}, f"{what}: drops {got}, want {want}")
        sent = list(PcapReader(out))
        c.check(len(sent) == want["fwd"], f"{what}: {len(sent)} packets written")
        to22 = [p for p in sent if IP in p and TCP in p and p[IP].frag == 0 and p[TCP].dport == 22]
        c.check(not to22, f"{what}: forwarded TCP to port 22: {[p.summary() for p in to22]}")

    # The routers drop the same headers for the same reasons.
    for app, reason, n in (("ipv4", "bad_ip_options", 3), ("ipv6", "ipv6_rh0", 1)):
        js = os.path.join(d, app + ".json")
        rc, so, se = run([a.tandem, "run", "--app", app, "--fib", fib, "--pcap", cap, "--verify", "--json", js])
        c.check(rc == 0, f"{app}: exit {rc}: {se[-500:]}")
        if rc == 0:
            r = json.load(open(js))
            c.check(r["drops"].get(reason) == n and r["balanced"],
                    f"{app}: {reason} {r['drops'].get(reason)}, want {n}")
    c.done()


if __name__ == "__main__":
    main()
