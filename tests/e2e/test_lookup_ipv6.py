"""`tandem lookup --app ipv6`: on the real table's IPv6 routes (with derived next hops) and on a
hand-made table with ::/0, /128 and nested prefixes, every address's output must equal an
independent longest-prefix match written here with Python's ipaddress module; output in input
order, canonical addresses, '-' where nothing matches, the same with --device auto (the GPU where
there is one); malformed keys fail naming the line."""
import gzip
import ipaddress
import os
import random

from e2e_util import Checker, args, run, tmpdir


def lpm(routes, addr):
    a = int(addr)
    best = None
    for net, nh in routes:  # longest first
        if (a >> (128 - net.prefixlen) if net.prefixlen else 0) == (int(net.network_address) >> (128 - net.prefixlen) if net.prefixlen else 0):
            best = nh
            break
    return best


def check_table(c, a, d, name, lines, keys):
    fib = os.path.join(d, name + ".txt")
    with open(fib, "w") as f:
        f.write("\n".join(lines) + "\n")
    kf = os.path.join(d, name + ".keys")
    with open(kf, "w") as f:
        f.write("# a comment\n\n" + "\n".join(keys) + "\n")
    rc, so, se = run([a.tandem, "lookup", "--app", "ipv6", "--fib", fib, "--keys", kf])
    c.check(rc == 0, f"{name}: exit code {rc}: {se.strip()}")
    routes = []
    for ln in lines:
        p, nh = ln.split()
        routes.append((ipaddress.IPv6Network(p, strict=False), int(nh)))
    seen = {}
    for net, nh in routes:  # last line wins
        seen[net] = nh
    routes = sorted(seen.items(), key=lambda x: -x[0].prefixlen)
    out = so.strip().split("\n") if so.strip() else []
    c.check(len(out) == len(keys), f"{name}: {len(out)} output lines for {len(keys)} keys")
    bad = 0
    for k, line in zip(keys, out):
        addr = ipaddress.IPv6Address(k)
        want = lpm(routes, addr)
        want_line = f"{addr.compressed} {want if want is not None else '-'}"
        if line != want_line:
            bad += 1
            if bad <= 5:
                print(f"{name}: got {line!r}, want {want_line!r}")
    c.check(bad == 0, f"{name}: {bad} of {len(keys)} results differ from the Python reference")
    # --device auto takes the GPU where there is one: its output must be the same.
    rc, so2, se = run([a.tandem, "lookup", "--app", "ipv6", "--device", "auto", "--fib", fib, "--keys", kf])
    c.check(rc == 0 and so2 == so, f"{name}: --device auto differs from the CPU (rc {rc}: {se.strip()[:200]})")


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    rnd = random.Random(7)
    # 1. A slice of the real table, explicit next hops, addresses inside prefixes and random ones.
    src = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    v6 = [x for x in gzip.open(src, "rt").read().split("\n") if ":" in x]
    slice_ = rnd.sample(v6, 2000)
    lines = [f"{p} {rnd.randrange(1 << 24)}" for p in slice_]
    keys = []
    for p in slice_[:1500]:
        net = ipaddress.IPv6Network(p, strict=False)
        keys.append(str(net.network_address + rnd.randrange(net.num_addresses)))
    keys += [str(ipaddress.IPv6Address(rnd.getrandbits(128))) for _ in range(300)]
    keys += [str(ipaddress.IPv6Address((0x2001 << 112) | rnd.getrandbits(112))) for _ in range(300)]
    check_table(c, a, d, "real_slice", lines, keys)
    # 2. Edge cases: ::/0, /128 at both ends, nesting at many lengths, a replaced next hop.
    lines = ["::/0 1", "::/128 2", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128 3", "2001:db8::/32 4",
             "2001:db8::/48 5", "2001:db8:0:1::/64 6", "2001:db8:0:1::1/128 7", "2001:db8:0:1::/64 8",
             "2001:db8:ff00::/40 9", "2001:db8:ff00::/41 10"]
    keys = ["::", "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe",
            "2001:db8::1", "2001:db8:0:1::1", "2001:db8:0:1::2", "2001:db8:0:2::1", "2001:db9::",
            "2001:db8:ff00::1", "2001:db8:ff80::1", "2001:0DB8:0000:0001:0000:0000:0000:0001"]
    check_table(c, a, d, "edges", lines, keys)
    # 3. Bad keys: exit 1 naming the line.
    kf = os.path.join(d, "bad.keys")
    with open(kf, "w") as f:
        f.write("2001:db8::1\n\n2001:db8::zz\n")
    rc, so, se = run([a.tandem, "lookup", "--app", "ipv6", "--fib", os.path.join(d, "edges.txt"), "--keys", kf])
    c.check(rc != 0 and "bad.keys:3:" in se and "not an IPv6 address" in se, f"bad key: rc {rc}, stderr {se.strip()!r}")
    c.done()


if __name__ == "__main__":
    main()
