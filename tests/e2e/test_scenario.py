"""`tandem scenario KIND`: every row runs the offered load over time, paced, on a CPU group and a
simulated device; the table and the JSON give each row's delivered rate per segment (the steps'
offered rates as the scale says), its timeline, 0 reordered and 0 lost; cpu-hog records the hog's
window; flip runs over two traffics (DPI payloads free of patterns, then match-heavy) and says
which segment plays which (that each segment's packets come from its traffic is
sched/hetero_test.cc's InputPhasesFollowTheSegmentsTheyPlay); the plot script draws the report; usage errors are refused before anything runs. Rates are
not checked (a 2-core machine under test says nothing about them). Needs no GPU."""
import json
import os
import subprocess
import sys

from e2e_util import Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    fib = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    base = [a.tandem, "scenario", "--app", "ipv4", "--fib", fib, "--gen", "count=20000,dst=fib,flows=500,seed=3",
            "--device", "cpu:1,sim:20/0.05", "--workers", "1", "--scale", "0.2", "--step-ms", "100"]

    out = os.path.join(d, "steps.json")
    rc, so, se = run([base[0], base[1], "steps", *base[2:], "--policies", "static:1,0;static:0,1;throughput;koromilas", "--json", out])
    c.check(rc == 0, f"steps: exit {rc}: {se.strip()[-400:]}")
    c.check("0.2, 0.5, 0.9, 1.2, 0.5, 0.2 x scale" in so and "scale 0.20 Mpps, given" in so, f"steps: header: {so[:600]}")
    if rc == 0:
        r = json.load(open(out))
        c.check(r.get("command") == "scenario" and r.get("kind") == "steps", f"steps json: {r.get('command')} {r.get('kind')}")
        rows = r.get("rows", [])
        c.check([x["schedule"] for x in rows] == ["static:1,0", "static:0,1", "throughput", "koromilas"],
                f"rows: {[x['schedule'] for x in rows]}")
        # The Koromilas row's profile: each device alone and the splits 1:3, 1:1, 3:1, measured first.
        c.check(len([x for x in so.splitlines() if x.startswith("profile ")]) == 5, f"steps: profile lines: {so[:900]}")
        for x in rows:
            off = x.get("segments_offered_mpps", [])
            c.check([round(v, 3) for v in off] == [0.04, 0.1, 0.18, 0.24, 0.1, 0.04], f"{x['schedule']}: offered {off}")
            c.check(len(x.get("segments_achieved_mpps", [])) == 6, f"{x['schedule']}: achieved {x.get('segments_achieved_mpps')}")
            c.check(x.get("reordered") == 0 and x.get("lost") == 0 and not x.get("error"), f"{x['schedule']}: {x.get('error')}")
            c.check(len(x.get("timeline", [])) > 20, f"{x['schedule']}: timeline of {len(x.get('timeline', []))} ticks")
            c.check(0 < x.get("received", 0) <= x.get("offered", 0), f"{x['schedule']}: received {x.get('received')} of {x.get('offered')}")
        # The plot, where matplotlib is installed.
        try:
            import matplotlib  # noqa: F401
            plot = os.path.join(a.source_dir, "tools/plots/plot_schedule.py")
            p = subprocess.run([sys.executable, plot, out, "--out", d], capture_output=True, text=True, timeout=300)
            c.check(p.returncode == 0 and os.path.exists(os.path.join(d, "steps.png")), f"plot: {p.stdout} {p.stderr}")
        except ImportError:
            print("matplotlib absent: plot not checked")

    out = os.path.join(d, "hog.json")
    rc, so, se = run([base[0], base[1], "cpu-hog", *base[2:], "--policies", "static:1,0", "--hog-cores", "0", "--json", out])
    c.check(rc == 0, f"cpu-hog: exit {rc}: {se.strip()[-400:]}")
    if rc == 0:
        r = json.load(open(out))
        c.check(r.get("hog_from_ms") == 100 and r.get("hog_to_ms") == 200, f"cpu-hog window: {r.get('hog_from_ms')} {r.get('hog_to_ms')}")
        c.check(len(r["rows"][0]["segments_achieved_mpps"]) == 3, f"cpu-hog segments: {r['rows'][0]}")

    out = os.path.join(d, "custom.json")
    rc, so, se = run([base[0], base[1], "custom", *base[2:], "--policies", "static:1,1", "--segments", "0:0.5,150:0.1,300:0",
                      "--json", out])
    c.check(rc == 0 and os.path.exists(out), f"custom: exit {rc}: {se.strip()[-400:]}")
    if rc == 0:
        r = json.load(open(out))
        c.check([round(v, 3) for v in r["rows"][0]["segments_offered_mpps"]] == [0.1, 0.02], f"custom: {r['rows'][0]['segments_offered_mpps']}")

    # flip: DPI payloads free of the rules' patterns, then match-heavy, then free again.
    rules = os.path.join(d, "my.rules")
    open(rules, "w").write('alert tcp any any -> any 80 (msg:"admin"; content:"/admin"; nocase; sid:1;)\n'
                           'alert tcp any any -> any any (msg:"shell"; content:"|2f|bin|2f|sh"; sid:2;)\n')
    out = os.path.join(d, "flip.json")
    flip = [a.tandem, "scenario", "flip", "--app", "dpi", "--ids-rules", rules, "--gen", "count=5000,flows=500,proto=tcp,size=512",
            "--device", "cpu:1,sim:20/0.05", "--workers", "1", "--scale", "0.05", "--step-ms", "100", "--policies", "static:1,0;nba"]
    rc, so, se = run([*flip, "--flip", "match-heavy=0/0.5", "--json", out])
    c.check(rc == 0, f"flip: exit {rc}: {se.strip()[-400:]}")
    if rc == 0:
        r = json.load(open(out))
        c.check(r.get("segment_traffic") == [0, 1, 0, 0], f"flip: segment traffic {r.get('segment_traffic')}")
        for x in r.get("rows", []):
            c.check(len(x["segments_achieved_mpps"]) == 3 and x["reordered"] == 0 and x["lost"] == 0 and not x["error"],
                    f"flip {x['schedule']}: {x['segments_achieved_mpps']} {x['error']}")

    def expect_error(cmd, *words, what):
        rc, so, se = run(cmd)
        c.check(rc != 0 and all(w in se for w in words), f"{what}: exit {rc}, stderr {se.strip()[-300:]}")

    expect_error([base[0], base[1], "cpu-hog", *base[2:]], "--hog-cores", what="cpu-hog without its cores")
    expect_error([base[0], base[1], "custom", *base[2:], "--segments", "0:1,100:1"], "--segments", what="segments not ending at 0")
    expect_error([base[0], base[1], "custom", *base[2:]], "--segments", what="custom without segments")
    expect_error([base[0], base[1], "flood", *base[2:]], "kind", what="an unknown kind")
    expect_error([*flip, "--flip", "match-heavy"], "--flip", what="a flip without its two values")
    expect_error([base[0], base[1], "steps", *base[2:], "--scale=-1"], "--scale", what="a negative scale")
    rc, so, se = run([a.tandem, "run", "--app", "echo", "--gen", "count=10", "--device", "gpu"])
    if rc != 0:  # no usable GPU here
        expect_error([base[0], base[1], "gpu-hog", *base[2:]], "no GPU", what="gpu-hog without a GPU")
    c.done()


if __name__ == "__main__":
    main()
