"""`tandem classify --rules FILE --keys FILE`: for a ClassBench filter set and a trace drawn from
its rules (plus random headers), every line is the 1-based index of the first matching rule (0 for
none) as a brute-force matcher written here computes it, with HyperSplit and linear search, on the
CPU and with --device auto; Tandem's own rule syntax works the same; a broken rule line fails the
load naming the file and line unless --skip-bad, which reports it and loads the rest; a broken
trace line is named too."""
import os
import random

from classbench import first_match, parse_classbench
from e2e_util import Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    cb = os.path.join(os.path.dirname(a.source_dir.rstrip("/")), "shared/data/classbench/filters/acl2_1k.gz")
    rng = random.Random(5)
    if os.path.exists(cb):
        rules = parse_classbench(cb)
        trace = []
        for i in range(3000):
            if i % 3 == 0:
                trace.append((rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16), rng.choice([6, 17, 1, 47])))
            else:
                s, dd, sp, dp, pv, pm = rng.choice(rules)
                trace.append((rng.randint(*s), rng.randint(*dd), rng.randint(*sp), rng.randint(*dp), pv | (rng.getrandbits(8) & ~pm & 0xFF)))
        tp = os.path.join(d, "trace")
        open(tp, "w").write("".join(f"{h[0]}\t{h[1]}\t{h[2]}\t{h[3]}\t{h[4]}\t0\t7\n" for h in trace))
        want = [first_match(rules, h) for h in trace]
        c.check(sum(1 for w in want if w) > 1500, "the trace must mostly match")
        for extra in (["--algo", "hypersplit"], ["--algo", "linear"], ["--device", "auto"]):
            rc, so, se = run([a.tandem, "classify", "--rules", cb, "--keys", tp, *extra])
            got = so.split()
            c.check(rc == 0 and len(got) == len(want), f"{extra}: rc {rc}, {len(got)} lines: {se[-200:]}")
            bad = [i for i, (g, w) in enumerate(zip(got, want)) if int(g) != w]
            c.check(not bad, f"{extra}: {len(bad)} lines differ, first {bad[:3]}")
    # Tandem's syntax, a default policy, and broken lines.
    rp = os.path.join(d, "rules.txt")
    open(rp, "w").write("accept src 10.0.0.0/8 dport 80-443 proto tcp\ndrop proto udp sport 53\nbogus line here\n"
                        "default drop\naccept\n")
    kp = os.path.join(d, "keys")
    open(kp, "w").write(f"{(10 << 24) + 1} 1 1000 443 6\n1 2 53 9 17\n1 2 54 9 17\n")
    rc, so, se = run([a.tandem, "classify", "--rules", rp, "--keys", kp])
    c.check(rc != 0 and "rules.txt:3:" in se, f"a bad rule line must fail naming it: rc {rc} {se.strip()!r}")
    rc, so, se = run([a.tandem, "classify", "--rules", rp, "--keys", kp, "--skip-bad"])
    # The skipped line keeps its number: `accept` stays rule 4, as without the bad line numbered.
    c.check(rc == 0 and so.split() == ["1", "2", "4"] and "rules.txt:3:" in se, f"--skip-bad: rc {rc} out {so.split()} err {se.strip()!r}")
    open(kp, "a").write("1 2 3 x 6\n")
    rc, so, se = run([a.tandem, "classify", "--rules", rp, "--keys", kp, "--skip-bad"])
    c.check(rc != 0 and "keys:4:" in se, f"a bad trace line must fail naming it: rc {rc} {se.strip()!r}")
    # bench classify: every path (linear, HyperSplit scalar/batched, rte_acl where built, GPU where
    # present) agrees with linear search.
    rc, so, se = run([a.tandem, "bench", "--min-seconds", "0.02", "classify", "--random-rules", "2000", "--n", "20000", "--linear-n", "5000",
                      "--reps", "1", "--json", os.path.join(d, "c.json")])
    c.check(rc == 0 and "every path agrees with linear search" in so, f"bench classify: rc {rc} {so[-400:]} {se[-300:]}")
    c.done()


if __name__ == "__main__":
    main()
