"""Honest timing windows: `tandem bench --min-seconds S CMD` makes every timed repetition of the
benches that repeat a call last at least S seconds (the call repeated within it), and reports S in
the JSON. A bench whose one call takes a few milliseconds must still take reps x rows x S in all,
and its seconds per call must stay those of one call (the rate unchanged in meaning)."""
import json
import os
import time

from e2e_util import Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    js = os.path.join(d, "lookup.json")
    t0 = time.monotonic()
    # 200,000 keys a call: a few milliseconds on any build, the sanitized ones included.
    rc, so, se = run([a.tandem, "bench", "--min-seconds", "0.25", "lookup", "--app", "l2", "--l2-random", "1000",
                      "--gen", "count=200000,dst=fib,flows=0,size=64,seed=5", "--reps", "2", "--json", js])
    wall = time.monotonic() - t0
    c.check(rc == 0, f"bench lookup: exit {rc}: {se.strip()[-400:]}")
    r = json.load(open(js)) if os.path.exists(js) else {}
    c.check(r.get("min_rep_seconds") == 0.25, f"min_rep_seconds in the JSON: {r.get('min_rep_seconds')}")
    timed = [x for x in r.get("results", []) if x.get("seconds")]
    c.check(len(timed) >= 3, f"rows timed: {[x.get('path') for x in timed]}")
    # A repetition is many calls.
    c.check(all(max(x["seconds"]) < 0.25 and len(x["seconds"]) == 2 for x in timed), f"seconds per call: {timed}")
    c.check(wall >= len(timed) * 2 * 0.25, f"{len(timed)} rows x 2 repetitions x 0.25 s in {wall:.2f} s")
    # The default is 0.5 s.
    js2 = os.path.join(d, "lookup2.json")
    rc, so, se = run([a.tandem, "bench", "lookup", "--app", "l2", "--l2-random", "1000", "--reps", "1", "--json", js2])
    c.check(rc == 0 and json.load(open(js2)).get("min_rep_seconds") == 0.5, f"default: exit {rc}")
    # Out of range: a usage error, not a run.
    rc, so, se = run([a.tandem, "bench", "--min-seconds", "-1", "lookup", "--app", "l2", "--l2-random", "1000"])
    c.check(rc != 0 and "min-seconds" in se, f"--min-seconds -1: exit {rc}: {se.strip()[-200:]}")
    c.done()


if __name__ == "__main__":
    main()
