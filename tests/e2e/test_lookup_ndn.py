"""`tandem lookup --app ndn`: a FIB of NDN names in URI form (default route, empty components, a
replaced entry), names looked up in input order with the longest-prefix next hop or '-', checked
against a reference written here; a malformed name fails naming the line."""
import os

from e2e_util import Checker, args, run, tmpdir


def parse(uri):
    parts = [p for p in uri.split("/")[1:]]
    if parts and parts[-1] == "":
        parts.pop()
    return tuple("" if p == "..." else p for p in parts)


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    fib_lines = ["/com/example 3", "/com 1", "/org/.../x 5", "/com/example 4", "/net/a/b/c/d/e/f 6"]
    fib = {}
    for ln in fib_lines:
        name, nh = ln.split()
        fib[parse(name)] = int(nh)
    keys = ["/com/example/www/a", "/com/other", "/net", "/org/.../x/y", "/org/x", "/com", "/",
            "/net/a/b/c/d/e/f/g", "/net/a/b/c/d/e"]
    fp, kp = os.path.join(d, "n.fib"), os.path.join(d, "n.keys")
    open(fp, "w").write("# names\n" + "\n".join(fib_lines) + "\n")
    open(kp, "w").write("\n".join(keys) + "\n")
    for with_default in (False, True):
        if with_default:
            open(fp, "a").write("/ 7\n")
            fib[()] = 7
        rc, so, se = run([a.tandem, "lookup", "--app", "ndn", "--fib", fp, "--keys", kp])
        c.check(rc == 0, f"exit code {rc}: {se.strip()}")
        out = so.strip().split("\n")
        c.check(len(out) == len(keys), f"{len(out)} lines for {len(keys)} keys")
        for k, line in zip(keys, out):
            n = parse(k)
            want = "-"
            for i in range(len(n), -1, -1):
                if n[:i] in fib:
                    want = str(fib[n[:i]])
                    break
            c.check(line == f"{k} {want}", f"default={with_default}: {k}: got {line!r}, want {want}")
    open(kp, "w").write("/com\n/a/../b\n")
    rc, so, se = run([a.tandem, "lookup", "--app", "ndn", "--fib", fp, "--keys", kp])
    c.check(rc != 0 and "n.keys:2:" in se, f"bad name: rc {rc}, stderr {se.strip()!r}")
    c.done()


if __name__ == "__main__":
    main()
