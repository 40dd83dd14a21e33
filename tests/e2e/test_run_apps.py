"""`tandem run --app ipv4|ipv6|l2|ndn|echo|fw-router|dpi`: each app forwards generated traffic (and, for
IPv4/IPv6 and DPI, a real capture) with --verify on the CPU scalar and batched paths and with --device auto
(the GPU where there is one), accounts for every packet, agrees with its reference (0 differ), and
gives the same per-port and per-reason counts on every path (the fw-router denies some packets, DPI
alerts on some and, as an IPS, drops them);
`bench cores --app` runs for a second app, `bench lookup` agrees with itself across paths for five
apps, and `bench fw-router` agrees with linear search.
Missing or conflicting table flags, and broken table files, fail with a message naming the flag or
the file and line."""
import json
import os

from e2e_util import Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    fib = os.path.join(a.source_dir, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")
    et = os.path.join(a.source_dir, "data/ids/et_open_2019-04-15")
    urls = os.path.join(os.path.dirname(a.source_dir.rstrip("/")), "shared/data/names/iscx_url2016_benign_list_big_final.csv.gz")
    acl1 = os.path.join(os.path.dirname(a.source_dir.rstrip("/")), "shared/data/classbench/filters/acl1_1k.gz")
    ndn_fib = os.path.join(d, "names.fib")
    open(ndn_fib, "w").write("/com/example 1\n/com 2\n/org/wikipedia/en 3\n/ 0\n")
    l2_fib = os.path.join(d, "macs.txt")
    open(l2_fib, "w").write("02:00:00:00:00:01 5\naa:bb:cc:dd:ee:01 2\n")
    cases = [
        ("ipv4", ["--fib", fib], "count=20000,dst=fib,flows=500,seed=2"),
        ("ipv6", ["--fib", fib], "count=20000,dst=fib,flows=0,seed=3"),
        ("l2", ["--l2-random", "20000"], "count=20000,dst=fib,seed=4"),
        ("l2", ["--fib", l2_fib], "count=2000,dst=uniform,seed=5"),
        ("ndn", ["--fib", ndn_fib], "count=5000,dst=fib,seed=6"),
        ("echo", [], "count=20000,proto=tcp,seed=7"),
        ("fw-router", ["--fib", fib, "--acl-random", "2000"], "count=20000,dst=uniform,proto=tcp,seed=10"),
        ("dpi", ["--ids-rules", et, "--ids-skip-bad", "on", "--match-heavy", "0.1"], "count=20000,flows=2000,proto=tcp,size=imix,seed=12"),
        ("dpi", ["--ids-rules", et, "--ids-skip-bad", "on", "--match-heavy", "0.1", "--on-match", "drop"], "count=10000,flows=0,proto=tcp,size=imix,seed=13"),
    ]
    if os.path.exists(acl1):
        cases.append(("fw-router", ["--fib", fib, "--rules", acl1], "count=20000,dst=fib,flows=2000,seed=11"))
    if os.path.exists(urls):
        cases.append(("ndn", ["--urls", urls], "count=20000,dst=fib,seed=8"))
        cases.append(("ndn", ["--urls", urls, "--ndn-fixed-bytes", "32"], "count=20000,dst=fib,seed=9"))
    for app, table, gen in cases:
        reports = []
        for path in (["--device", "cpu", "--cpu-path", "scalar"], ["--device", "cpu", "--cpu-path", "batched", "--workers", "2"],
                     ["--device", "auto"]):
            out = os.path.join(d, "r.json")
            cmd = [a.tandem, "run", "--app", app, *table, "--gen", gen, "--verify", "--json", out, *path]
            rc, so, se = run(cmd)
            what = f"{app} {' '.join(table[:1])} {' '.join(path)}"
            c.check(rc == 0, f"{what}: exit code {rc}: {se.strip()[-300:]}")
            c.check("accounting OK" in so, f"{what}: accounting: {so[-500:]}")
            c.check(" 0 differ" in so, f"{what}: verify: {so[-300:]}")
            if rc == 0 and os.path.exists(out):
                r = json.load(open(out))
                c.check(r.get("app") == app and r.get("balanced") is True, f"{what}: json app/balanced {r.get('app')} {r.get('balanced')}")
                c.check(r.get("verify", {}).get("checked", 0) > 0, f"{what}: nothing verified")
                reports.append((r.get("forwarded_per_port"), r.get("drops")))
                if app == "fw-router":
                    c.check(r.get("drops", {}).get("acl_denied", 0) > 0, f"{what}: nothing denied: {r.get('drops')}")
                if app == "dpi" and "--on-match" in table:
                    c.check(r.get("drops", {}).get("dpi_rule_drop", 0) > 0, f"{what}: nothing dropped: {r.get('drops')}")
                elif app == "dpi":
                    c.check(r.get("forwarded_per_port", {}).get("1", 0) > 0, f"{what}: no alert: {r.get('forwarded_per_port')}")
                os.remove(out)
        c.check(len(reports) == 3 and all(x == reports[0] for x in reports), f"{app}: counts differ between paths: {reports}")

    # A real capture through the IPv6 router: its IPv4 packets are not handled, counted as such.
    pcap = os.path.join(a.source_dir, "data/pcap/many-protocols.pcap")
    if os.path.exists(pcap):
        rc, so, se = run([a.tandem, "run", "--app", "ipv6", "--fib", fib, "--pcap", pcap, "--verify", "--device", "cpu"])
        c.check(rc == 0 and "accounting OK" in so and "not_handled_by_app" in so, f"ipv6 on a capture: rc {rc} {so[-400:]} {se[-200:]}")

    # Real captures through DPI: some packets alert, every decision is DpiEngine's one at a time.
    for cap in ("example", "tls2"):
        pcap = os.path.join(a.source_dir, f"data/pcap/{cap}.pcap")
        out = os.path.join(d, "dpi.json")
        rc, so, se = run([a.tandem, "run", "--app", "dpi", "--ids-rules", et, "--ids-skip-bad", "on", "--pcap", pcap, "--verify",
                          "--device", "cpu", "--workers", "2", "--json", out])
        c.check(rc == 0 and "accounting OK" in so and " 0 differ" in so, f"dpi on {cap}: rc {rc} {so[-400:]} {se[-200:]}")
        if rc == 0 and cap == "example":
            r = json.load(open(out))
            c.check(r.get("forwarded_per_port", {}).get("1", 0) > 0, f"dpi on {cap}: no alert: {r.get('forwarded_per_port')}")

    # bench cores for another app.
    out = os.path.join(d, "cores.json")
    rc, so, se = run([a.tandem, "bench", "cores", "--app", "l2", "--l2-random", "10000", "--gen", "count=20000,dst=fib,seed=3",
                      "--workers", "1", "--paths", "scalar,batched", "--packets", "100000", "--reps", "1", "--json", out])
    c.check(rc == 0 and os.path.exists(out), f"bench cores --app l2: rc {rc} {se.strip()[-300:]}")
    if os.path.exists(out):
        r = json.load(open(out))
        c.check(r.get("app") == "l2" and r.get("all_balanced") is True and "1" in r.get("batched_over_scalar", {}),
                f"bench cores --app l2 json: {r.get('app')} {r.get('all_balanced')} {r.get('batched_over_scalar')}")

    # bench lookup: every app's lookup paths agree on its traffic's keys.
    for app, table in (("ipv6", ["--fib", fib]), ("l2", ["--l2-random", "5000"]), ("ndn", ["--fib", ndn_fib]), ("echo", []),
                       ("fw-router", ["--fib", fib, "--acl-random", "1000"])):
        out = os.path.join(d, "lookup.json")
        rc, so, se = run([a.tandem, "bench", "--min-seconds", "0.02", "lookup", "--app", app, *table, "--gen", "count=20000,dst=fib,seed=2",
                          "--reps", "1", "--json", out])
        c.check(rc == 0 and "every path agrees" in so, f"bench lookup --app {app}: rc {rc} {so[-300:]} {se[-300:]}")
        if os.path.exists(out):
            r = json.load(open(out))
            rows = {x.get("path"): x for x in r.get("results", [])}
            c.check(r.get("app") == app and "cpu_scalar" in rows and "cpu_batched" in rows and
                    all(v == 0 for v in r.get("mismatches_vs_scalar", {}).values()), f"bench lookup --app {app} json: {r}")
            os.remove(out)

    # bench fw-router: every CPU path (and the GPU's two plans, where there is a GPU) agrees with
    # linear search + DIR-24-8.
    out = os.path.join(d, "fw.json")
    rc, so, se = run([a.tandem, "bench", "--min-seconds", "0.02", "fw-router", "--fib", fib, "--acl-random", "1000", "--n", "20000",
                      "--linear-n", "5000", "--reps", "1", "--gpu-batches", "1024,8192", "--gpu-reps", "2", "--json", out])
    c.check(rc == 0 and "every path agrees" in so, f"bench fw-router: rc {rc} {so[-400:]} {se[-300:]}")
    if os.path.exists(out):
        r = json.load(open(out))
        rows = {x.get("path"): x for x in r.get("results", [])}
        c.check(r.get("bench") == "fw-router" and "cpu_hypersplit_lpm_batched" in rows and
                all(v == 0 for v in r.get("mismatches_vs_reference", {}).values()) and
                (r.get("gpu") or r.get("gpu_skipped")), f"bench fw-router json: {r.get('mismatches_vs_reference')}")

    # Flags and broken tables.
    bad = os.path.join(d, "bad.fib")
    open(bad, "w").write("/com 1\n/com/x notanumber\n")
    # --stage-times: each path's stages, printed and in the JSON; the scheduler's groups are not timed.
    for path, stages in [("batched", ["receive", "parse", "lookup", "apply", "counters", "transmit"]), ("scalar", ["receive", "app_whole"])]:
        js = os.path.join(d, f"stages-{path}.json")
        rc, so, se = run([a.tandem, "run", "--app", "ipv4", "--fib", fib, "--gen", "count=50000,dst=fib,seed=3", "--device", "cpu",
                          "--cpu-path", path, "--burst", "32", "--stage-times", "--json", js])
        st = json.load(open(js)).get("stages_ns_per_packet", {}) if rc == 0 else {}
        c.check(rc == 0 and "stages, ns of a worker per packet (time-stamp counter): receive" in so, f"--stage-times {path}: rc {rc}: {(so + se)[-300:]}")
        c.check(all(st.get(n, 0) > 0 for n in stages) and abs(st.get("total", 0) - st.get("framework", 0) - st.get("app", 0)) < 1e-6,
                f"--stage-times {path}: {st}")
        # Generated input: every receive gives a full burst of 32 (50,000 = 1,562 x 32 + 16) but the one
        # that finds the input's end.
        c.check(31.9 < st.get("frames_per_burst", 0) <= 32 and st.get("empty_receives", 9) <= 1, f"--stage-times {path}: bursts {st}")
    rc, so, se = run([a.tandem, "run", "--app", "ipv4", "--fib", fib, "--gen", "count=1000", "--schedule", "throughput",
                      "--device", "cpu:1,cpu:1", "--workers", "2", "--stage-times"])
    c.check(rc != 0 and "--stage-times" in se and "no --schedule" in se, f"--stage-times with --schedule: rc {rc}: {se[-300:]}")
    for cmd, want in [
        (["--app", "l2", "--gen", "count=10"], "--l2-random"),
        (["--app", "ndn", "--gen", "count=10"], "--urls"),
        (["--app", "ipv6", "--gen", "count=10"], "--fib"),
        (["--app", "echo", "--fib", fib, "--gen", "count=10"], "no table"),
        (["--app", "ipv4", "--fib", fib, "--l2-random", "5", "--gen", "count=10"], "--l2-random"),
        (["--app", "ndn", "--fib", bad, "--gen", "count=10"], "bad.fib:2:"),
        (["--app", "l2", "--fib", bad, "--gen", "count=10"], "bad.fib:1:"),
        (["--app", "ipv6", "--fib", fib, "--gen", "count=10,size=9000"], "--gen"),
        (["--app", "fw-router", "--fib", fib, "--gen", "count=10"], "--rules"),
        (["--app", "fw-router", "--acl-random", "10", "--gen", "count=10"], "--fib"),
        (["--app", "ipv4", "--fib", fib, "--acl-random", "10", "--gen", "count=10"], "--app fw-router"),
        (["--app", "fw-router", "--fib", fib, "--rules", bad, "--gen", "count=10"], "bad.fib:1:"),
    ]:
        rc, so, se = run([a.tandem, "run", *cmd])
        c.check(rc != 0 and want in se, f"{' '.join(cmd)}: rc {rc}, want {want!r} in stderr {se.strip()[-300:]!r}")
    c.done()


if __name__ == "__main__":
    main()
