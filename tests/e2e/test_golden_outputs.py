"""Golden outputs (issue 15): `tandem run` of every app over the shipped captures and over seeded
generated traffic (the forwarded capture, --out, and the --json counters and drops per reason),
`tandem lookup` of the ipv4, ipv6, l2 and ndn tables, `tandem classify` over ClassBench sets and
`tandem match` over the ET Open rules give exactly the outputs recorded in tests/golden/manifest.txt
(recorded with the binary before the app registry, commit 1e69467). Each case runs in its own
temporary directory; a failure names the case, the output and its first differing line (or, for a
capture or a long text, the first differing block of 64 packets or lines, with the output there).
A case whose file in data/ is absent is skipped and said; exit 77 when every case is.
For a deliberate change of output, see tests/golden/regenerate.py (the manifest's header)."""
import argparse
import os
import re
import sys
import time

SKIP = 77


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tandem", required=True)
    p.add_argument("--source-dir", required=True)
    p.add_argument("--golden-dir", help="manifest.txt and expected/ (default: SOURCE/tests/golden)")
    p.add_argument("--only", help="run only the cases whose name matches this regular expression")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    a = p.parse_args()
    src = os.path.abspath(a.source_dir)
    sys.path.insert(0, os.path.join(src, "tests", "golden"))
    import golden

    gdir = os.path.abspath(a.golden_dir or os.path.join(src, "tests", "golden"))
    cases = [c for c in golden.read_manifest(os.path.join(gdir, "manifest.txt")) if not a.only or re.search(a.only, c.name)]
    t0 = time.monotonic()
    passed, failed, skipped = 0, [], []
    for r in golden.run_cases(os.path.abspath(a.tandem), src, cases, a.jobs):
        c = r.case
        if r.skipped:
            skipped.append(c.name)
            print(f"SKIPPED {c.name}: {r.skipped}", flush=True)
            continue
        problems = []
        if r.error:
            problems.append(r.error)
        else:
            for out in c.outputs:
                m = golden.compare(gdir, c, out, r.outputs.get(out))
                if m:
                    problems.append(f"{out}: {m}")
        if problems:
            failed.append(c.name)
            where = f"   (in {src}; OUT: an empty directory)" if "{tmp}" in c.cmd else f"   (in {src})"
            print(f"FAIL: {c.name}: {golden.shown_cmd(c, src)}{where}", flush=True)
            for m in problems:
                print(f"  {m}", flush=True)
        else:
            passed += 1
            print(f"ok {c.name} ({r.seconds:.1f} s)", flush=True)
    print(f"{passed} passed, {len(failed)} failed, {len(skipped)} skipped in {time.monotonic() - t0:.0f} s")
    if failed:
        print("failed: " + " ".join(failed))
        sys.exit(1)
    if not passed:
        sys.exit(SKIP)


if __name__ == "__main__":
    main()
