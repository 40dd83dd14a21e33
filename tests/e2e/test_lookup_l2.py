"""`tandem lookup --app l2`: a MAC table file (duplicates: last wins; upper and lower case; the
all-zero and all-ones-but-group MACs) and random MACs looked up in input order, `mac port` or '-',
checked against a Python dict; a malformed MAC fails naming the line."""
import os
import random

from e2e_util import Checker, args, run, tmpdir


def fmt(m):
    return ":".join(f"{(m >> (40 - 8 * i)) & 0xFF:02x}" for i in range(6))


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    rnd = random.Random(4)
    table = {}
    lines = ["# mac port"]
    for _ in range(20000):
        m = rnd.getrandbits(48) & ~(1 << 40)  # unicast: group MACs always flood
        p = rnd.randrange(0, 65535)
        table[m] = p
        lines.append((fmt(m).upper() if rnd.random() < 0.3 else fmt(m)) + f" {p}")
    for m in list(table)[:500]:  # duplicates: the later line wins
        table[m] = rnd.randrange(0, 65535)
        lines.append(f"{fmt(m)} {table[m]}")
    table[0] = 7
    lines.append("00:00:00:00:00:00 7")
    fp = os.path.join(d, "macs.txt")
    open(fp, "w").write("\n".join(lines) + "\n")
    keys = list(table)[:5000] + [rnd.getrandbits(48) & ~(1 << 40) for _ in range(2000)]
    kp = os.path.join(d, "keys.txt")
    open(kp, "w").write("\n".join(fmt(k) for k in keys) + "\n")
    rc, so, se = run([a.tandem, "lookup", "--app", "l2", "--fib", fp, "--keys", kp])
    c.check(rc == 0, f"exit code {rc}: {se.strip()}")
    out = so.strip().split("\n")
    c.check(len(out) == len(keys), f"{len(out)} lines for {len(keys)} keys")
    bad = sum(1 for k, line in zip(keys, out) if line != f"{fmt(k)} {table.get(k, '-')}")
    c.check(bad == 0, f"{bad} of {len(keys)} results differ from the Python reference")
    open(kp, "w").write("aa:bb:cc:dd:ee:ff\naa:bb:cc:dd:ee\n")
    rc, so, se = run([a.tandem, "lookup", "--app", "l2", "--fib", fp, "--keys", kp])
    c.check(rc != 0 and "keys.txt:2:" in se and "not a MAC" in se, f"bad MAC: rc {rc}, stderr {se.strip()!r}")
    c.done()


if __name__ == "__main__":
    main()
