"""ClassBench filter sets as ranges, and a brute-force first-match classifier: the reference the
classification tests and the golden inputs are checked against, written apart from Tandem's
parser."""
import gzip
import ipaddress


def parse_classbench(path):
    """Rules of a gzipped ClassBench filter file, in order: ((src lo, hi), (dst lo, hi),
    (sport lo, hi), (dport lo, hi), proto value, proto mask)."""
    rules = []
    with gzip.open(path, "rt") as f:
        for line in f:
            c = line.split()
            if not c:
                continue

            def prefix(t):
                a, ln = t.lstrip("@").split("/")
                v = int(ipaddress.IPv4Address(a))
                ln = int(ln)
                mask = ((1 << 32) - 1) ^ ((1 << (32 - ln)) - 1) if ln else 0
                return v & mask, (v & mask) | (((1 << 32) - 1) ^ mask)

            pv, pm = (int(x, 16) for x in c[8].split("/"))
            rules.append((prefix(c[0]), prefix(c[1]), (int(c[2]), int(c[4])), (int(c[5]), int(c[7])), pv & pm, pm))
    return rules


def first_match(rules, h):
    """1-based index of the first rule matching header h = (src, dst, sport, dport, proto); 0: none."""
    for i, (s, d, sp, dp, pv, pm) in enumerate(rules):
        if s[0] <= h[0] <= s[1] and d[0] <= h[1] <= d[1] and sp[0] <= h[2] <= sp[1] and dp[0] <= h[3] <= dp[1] and (h[4] & pm) == pv:
            return i + 1
    return 0
