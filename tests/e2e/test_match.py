"""`tandem match`: a rule file of our own over a real capture. With --patterns-only every line is
the packet's number and the sorted ids of the patterns found by a naive search written here
(payloads cut out by a small parser of our own: IPv4/IPv6 without extension headers, TCP/UDP);
without it, the sids of the rules whose conditions hold. --match-heavy makes generated traffic
match; a broken rule names its file and line unless --skip-bad."""
import os
import struct

from e2e_util import Checker, args, run, tmpdir

RULES = r'''# patterns: 1 "HTTP", 2 "host" nocase, 3 CRLFCRLF, 4 "GET "
alert tcp any any -> any any (msg:"http"; content:"HTTP"; sid:10;)
alert tcp any any -> any 80 (msg:"host"; content:"host"; nocase; content:"|0d 0a 0d 0a|"; distance:0; sid:20;)
#alert tcp any any -> any any (content:"disabled"; sid:30;)
alert tcp any any -> any any (content:"GET "; offset:0; depth:4; content:!"zzzz"; sid:40;)
alert udp any any -> any 53 (content:"HTTP"; sid:50;)
'''
PATTERNS = [(b"HTTP", False), (b"host", True), (b"\r\n\r\n", False), (b"GET ", False)]


def payloads(path):
    """(payload bytes or None, proto, sport, dport) per packet; None where our parser gives up."""
    d = open(path, "rb").read()
    off, out = 24, []
    while off + 16 <= len(d):
        incl = struct.unpack_from("<I", d, off + 8)[0]
        f = d[off + 16:off + 16 + incl]
        off += 16 + incl
        out.append(parse(f))
    return out


def parse(f):
    if len(f) < 14:
        return None
    et = struct.unpack_from("!H", f, 12)[0]
    o = 14
    if et == 0x0800 and len(f) >= o + 20:
        ihl = (f[o] & 15) * 4
        total = struct.unpack_from("!H", f, o + 2)[0]
        proto = f[o + 9]
        frag = struct.unpack_from("!H", f, o + 6)[0] & 0x3FFF
        if frag or ihl < 20:
            return None
        l4, end = o + ihl, o + total
    elif et == 0x86DD and len(f) >= o + 40:
        proto = f[o + 6]
        l4, end = o + 40, o + 40 + struct.unpack_from("!H", f, o + 4)[0]
    else:
        return ("none",)
    if end > len(f):
        return None
    if proto == 6 and end >= l4 + 20:
        sp, dp = struct.unpack_from("!HH", f, l4)
        return (f[l4 + (f[l4 + 12] >> 4) * 4:end], 6, sp, dp)
    if proto == 17 and end >= l4 + 8:
        sp, dp, ul = struct.unpack_from("!HHH", f, l4)
        return (f[l4 + 8:min(end, l4 + ul)], 17, sp, dp)
    return None


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    rp = os.path.join(d, "r.rules")
    open(rp, "w").write(RULES)
    cap = os.path.join(a.source_dir, "data/pcap/example.pcap")
    pk = payloads(cap)
    rc, so, se = run([a.tandem, "match", "--rules", rp, "--pcap", cap, "--patterns-only"])
    lines = so.strip().split("\n")
    c.check(rc == 0 and len(lines) == len(pk), f"--patterns-only: rc {rc}, {len(lines)} lines for {len(pk)} packets: {se[-300:]}")
    found = compared = 0
    for i, (line, p) in enumerate(zip(lines, pk)):
        if p is None:
            continue
        want = []
        if p[0] != "none":
            for k, (pat, nocase) in enumerate(PATTERNS):
                hay = p[0].lower() if nocase else p[0]
                if (pat.lower() if nocase else pat) in hay:
                    want.append(k + 1)
        compared += 1
        found += bool(want)
        c.check(line.split() == [str(i + 1)] + [str(w) for w in want], f"packet {i + 1}: got {line!r}, want {want}")
        if c.failures > 5:
            break
    c.check(found > 10 and compared > 1000, f"{found} packets with patterns of {compared} compared")
    # Rules: sid 10 wherever HTTP occurs in TCP; 40 where a TCP payload starts with "GET ".
    rc, so, se = run([a.tandem, "match", "--rules", rp, "--pcap", cap])
    lines = so.strip().split("\n")
    c.check(rc == 0 and len(lines) == len(pk), f"rules: rc {rc}: {se[-300:]}")
    for i, (line, p) in enumerate(zip(lines, pk)):
        if p is None or p[0] == "none":
            continue
        pay, proto, sp, dp = p
        want = []
        if proto == 6 and b"HTTP" in pay:
            want.append(10)
        if proto == 6 and dp == 80 and b"host" in pay.lower() and b"\r\n\r\n" in pay[pay.lower().find(b"host") + 4:]:
            want.append(20)
        if proto == 6 and pay.startswith(b"GET "):
            want.append(40)
        if proto == 17 and dp == 53 and b"HTTP" in pay:
            want.append(50)
        c.check(line.split() == [str(i + 1)] + [str(w) for w in sorted(want)], f"rules, packet {i + 1}: got {line!r}, want {want}")
        if c.failures > 10:
            break
    # Every path gives the same lines: Aho-Corasick one packet at a time, batched, Hyperscan (where
    # built), the literal filter batched and one at a time, the default, the GPU (where one is
    # usable), for rules and for patterns.
    for extra in ([], ["--patterns-only"]):
        base = run([a.tandem, "match", "--rules", rp, "--pcap", cap, "--cpu-path", "scalar", "--device", "cpu",
                    "--dpi-engine", "aho-corasick"] + extra)
        c.check(base[0] == 0, f"scalar {extra}: rc {base[0]}: {base[2][-300:]}")
        for path in (["--device", "cpu", "--dpi-engine", "aho-corasick"], ["--device", "cpu", "--dpi-engine", "hyperscan"],
                     ["--device", "cpu", "--dpi-engine", "literal"],
                     ["--device", "cpu", "--dpi-engine", "literal", "--cpu-path", "scalar"],
                     ["--device", "cpu"], ["--device", "gpu"]):
            rc, so, se = run([a.tandem, "match", "--rules", rp, "--pcap", cap] + path + extra)
            if path[1] == "gpu" and rc != 0 and "no usable GPU" in se:
                print("SKIPPED: --device gpu: no usable GPU")
                continue
            if "hyperscan" in path and rc != 0 and "this build has no Hyperscan" in se:
                print("SKIPPED: --dpi-engine hyperscan: built without Hyperscan")
                continue
            c.check("hyperscan" not in path or "Hyperscan stage 1" in se, f"{path}: the path line does not say Hyperscan: {se[-300:]}")
            c.check("literal" not in path or "literal filter stage 1" in se, f"{path}: the path line does not say literal: {se[-300:]}")
            c.check(rc == 0 and so == base[1], f"{path} {extra}: rc {rc}, same as scalar: {so == base[1]}: {se[-300:]}")
    rc, so, se = run([a.tandem, "match", "--rules", rp, "--pcap", cap, "--cpu-path", "sideways"])
    c.check(rc != 0 and "--cpu-path" in se, f"bad --cpu-path: rc {rc} {se.strip()[-200:]!r}")
    rc, so, se = run([a.tandem, "match", "--rules", rp, "--pcap", cap, "--dpi-engine", "regex"])
    c.check(rc != 0 and "--dpi-engine" in se, f"bad --dpi-engine: rc {rc} {se.strip()[-200:]!r}")
    # Generated, match-heavy traffic matches; match-free traffic mostly does not.
    rc, so, se = run([a.tandem, "match", "--rules", rp, "--gen", "count=2000,size=512,proto=tcp,seed=3", "--patterns-only",
                      "--match-heavy", "0.2"])
    heavy = sum(1 for ln in so.split("\n") if len(ln.split()) > 1)
    c.check(rc == 0 and heavy > 1500, f"--match-heavy: rc {rc}, {heavy} of 2000 packets matched: {se[-200:]}")
    # bench dpi: every stage-1 variant (batched, Hyperscan where built) agrees with the baseline.
    rc, so, se = run([a.tandem, "bench", "--min-seconds", "0.02", "dpi", "--rules", rp, "--gen", "count=3000,size=256,proto=tcp,seed=4", "--reps", "1",
                      "--threads", "1,2", "--json", os.path.join(d, "dpi.json")])
    c.check(rc == 0 and "every stage-1 variant agrees" in so, f"bench dpi: rc {rc} {so[-400:]} {se[-300:]}")
    # A broken rule.
    open(rp, "a").write('alert tcp any any -> any any (content:"|4"; sid:60;)\n')
    rc, so, se = run([a.tandem, "match", "--rules", rp, "--pcap", cap])
    c.check(rc != 0 and "r.rules:7:" in se, f"broken rule: rc {rc} {se.strip()[-200:]!r}")
    rc, so, se = run([a.tandem, "match", "--rules", rp, "--pcap", cap, "--skip-bad"])
    c.check(rc == 0 and "r.rules:7:" in se, f"--skip-bad: rc {rc} {se.strip()[-200:]!r}")
    c.done()


if __name__ == "__main__":
    main()
