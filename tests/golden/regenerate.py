#!/usr/bin/env python3
"""Re-records the golden outputs (tests/golden/manifest.txt and expected/) with a tandem binary, for a
deliberate change of output: runs every case of the manifest (or those matching --only), writes each
output's digest and listing, and rewrites the manifest. Review the diff of tests/golden/ before
committing it. A case whose data is absent keeps its recorded outputs; a failing command records
nothing (exit 1).

  python3 tests/golden/regenerate.py --tandem build/tandem [--only REGEX] [--out-dir DIR]

--out-dir writes the manifest and listings elsewhere (e.g. to record another binary and compare:
tests/e2e/test_golden_outputs.py --golden-dir DIR)."""
import argparse
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden  # noqa: E402


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tandem", required=True)
    p.add_argument("--source-dir", default=os.path.normpath(os.path.join(here, "..", "..")))
    p.add_argument("--manifest", help="the cases to run (default: tests/golden/manifest.txt)")
    p.add_argument("--out-dir", help="where to write manifest.txt and expected/ (default: tests/golden)")
    p.add_argument("--only", help="re-record only the cases whose name matches this regular expression")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    a = p.parse_args()
    src = os.path.abspath(a.source_dir)
    manifest = a.manifest or os.path.join(src, "tests", "golden", "manifest.txt")
    in_dir = os.path.dirname(os.path.abspath(manifest))
    out_dir = os.path.abspath(a.out_dir or in_dir)
    tandem = os.path.abspath(a.tandem)
    cases = golden.read_manifest(manifest)
    chosen = [c for c in cases if not a.only or re.search(a.only, c.name)]
    names = [c.name for c in cases]
    dups = {n for n in names if names.count(n) > 1}
    if dups:
        sys.exit(f"{manifest}: cases named twice: {', '.join(sorted(dups))}")

    t0 = time.monotonic()
    failed, keep = [], {c.name for c in cases} - {c.name for c in chosen}
    for r in golden.run_cases(tandem, src, chosen, a.jobs):
        c = r.case
        if r.skipped:
            print(f"skipped {c.name}: {r.skipped} (its recorded outputs are kept)")
            keep.add(c.name)
        elif r.error:
            print(f"FAILED {c.name}: {r.error}")
            failed.append(c.name)
        else:
            for out, data in r.outputs.items():
                if data is None:
                    print(f"FAILED {c.name}: no {out} written")
                    failed.append(c.name)
                    break
            else:
                for out, data in r.outputs.items():
                    golden.record(out_dir, c, out, data)
                print(f"recorded {c.name} ({r.seconds:.1f} s): {', '.join(c.outputs)}")
    if failed:
        sys.exit(f"nothing written: {len(failed)} case(s) failed: {', '.join(failed)}")

    # Kept cases' listings travel to another --out-dir; listings no case names any more go.
    wanted = set()
    for c in cases:
        for out in c.outputs:
            e = c.expected(out)
            if e:
                wanted.add(e[2])
                src_f, dst_f = os.path.join(in_dir, e[2]), os.path.join(out_dir, e[2])
                if c.name in keep and out_dir != in_dir and os.path.exists(src_f):
                    os.makedirs(os.path.dirname(dst_f), exist_ok=True)
                    shutil.copyfile(src_f, dst_f)
    exp_dir = os.path.join(out_dir, "expected")
    if os.path.isdir(exp_dir):
        for f in os.listdir(exp_dir):
            if f"expected/{f}" not in wanted:
                os.remove(os.path.join(exp_dir, f))
    golden.write_manifest(os.path.join(out_dir, "manifest.txt"), cases)
    print(f"{len(chosen) - len(keep & {c.name for c in chosen})} case(s) recorded into {out_dir} "
          f"in {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
