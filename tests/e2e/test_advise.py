"""`tandem advise`: a short calibration of each device and a split, then a pick for the policy with
its predicted figures and reasons. Without a GPU it chooses among simulated devices whose speeds
are known: a device that takes 20 ms per batch (under 13,000 packets per second, too slow to earn a
share of a split) must lose to one that takes 1 us, under every policy; --verify-pick must agree; the JSON carries the candidates; bad flags are refused."""
import json
import os
import sys

from e2e_util import Checker, args, run, tmpdir


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    fib = os.path.join(d, "fib.txt")
    open(fib, "w").write("10.0.0.0/8 1\n20.0.0.0/8 2\n0.0.0.0/0 3\n")
    common = [T, "advise", "--app", "ipv4", "--fib", fib, "--workers", "1", "--seconds", "0.05"]
    traffic = ["--traffic", "count=5000,flows=200,size=64,seed=3"]
    devices = ["--device", "sim:20000/0,sim:1/0"]
    base = common + traffic + devices

    for policy in ("throughput", "latency", "energy"):
        j = os.path.join(d, f"advise-{policy}.json")
        extra = ["--rate-mpps", "0.005"] if policy != "throughput" else []
        # Three repetitions: the pick is judged on medians, so one repetition stalled by a busy
        # machine (the whole suite runs on two cores) does not decide it.
        # The prediction comes from one short calibration of each device: a calibration stalled by
        # the suite's other tests can make the fast device look as if it did not sustain the load.
        # Such a run is tried once more (said so); an advisor that is wrong twice fails.
        for attempt in (1, 2):
            rc, so, se = run(base + ["--policy", policy, "--json", j, "--verify-pick", "--reps", "3", "--min-seconds", "0.1"] + extra)
            if rc != 0 or "pick: sim1 alone" in so or attempt == 2:
                break
            print(f"{policy}: the pick was not the fast device on the first try, trying again: {so[-300:]}")
        c.check(rc == 0, f"{policy}: exit {rc}: {se[-400:]}")
        c.check("pick: sim1 alone" in so, f"{policy}: the fast device is not the pick: {so[-900:]}")
        c.check("predicted:" in so and "why: sim0 alone" in so and "why: sim1 alone" in so, f"{policy}: no prediction or reasons: {so[-600:]}")
        c.check("the pick is the measured best: yes" in so, f"{policy}: verify-pick disagrees: {so[-500:]}")
        if rc == 0:
            r = json.load(open(j))
            names = [x["name"] for x in r["candidates"]]
            c.check(r["pick"] == "sim1 alone" and "sim0 alone" in names and "sim1 alone" in names,
                    f"{policy}: JSON pick/candidates: {r['pick']} {names}")
            c.check(r["verify_pick"]["pick_is_measured_best"] is True, f"{policy}: JSON verify_pick: {r['verify_pick']}")
            c.check(r["policy"] == policy and all(x["error"] == "" for x in r["candidates"]), f"{policy}: JSON: {r}")
            if policy != "throughput":
                c.check(abs(r["offered_mpps"] - 0.005) < 1e-9, f"{policy}: offered load {r['offered_mpps']}")
                slow = [x for x in r["candidates"] if x["name"] == "sim0 alone"][0]
                fast = [x for x in r["candidates"] if x["name"] == "sim1 alone"][0]
                c.check(slow["p99_us"] > fast["p99_us"], f"latency: slow {slow['p99_us']} fast {fast['p99_us']}")

    # A split: two devices of like speed are both kept in a "split by capacity" candidate.
    js = os.path.join(d, "split.json")
    rc, so, se = run([T, "advise", "--app", "ipv4", "--fib", fib, "--traffic", "count=5000,flows=200,size=64,seed=3",
                      "--device", "sim:200/0,sim:200/0", "--workers", "1", "--seconds", "0.05", "--check", "--reps", "1",
                      "--min-seconds", "0.05", "--json", js])
    c.check(rc == 0 and "split by capacity" in so and "check: the pick run" in so, f"split and --check: {rc} {so[-700:]} {se[-300:]}")
    if rc == 0:
        r = json.load(open(js))
        split = [x for x in r["candidates"] if x["name"] == "split by capacity"]
        c.check(len(split) == 1 and split[0]["error"] == "" and all(v > 0.2 for v in split[0]["share"]),
                f"the split candidate ran over both devices: {split}")
        c.check(r["check"] is not None and r["check"]["mpps"] > 0, f"--check in the JSON: {r['check']}")

    # A load no candidate sustains: nothing to advise, said so.
    rc, so, se = run(base + ["--policy", "latency", "--rate-mpps", "1000"])
    c.check(rc != 0 and "no candidate sustains" in so and "pick:" not in so, f"an unsustainable load: {rc} {so[-400:]}")

    # A capture as the traffic.
    cap = os.path.join(a.source_dir, "data/pcap/example.pcap")
    rc, so, se = run([T, "advise", "--app", "ipv4", "--fib", fib, "--pcap", cap, "--device", "cpu:1,sim:20000/0",
                      "--workers", "1", "--seconds", "0.05"])
    c.check(rc == 0 and "pick: " in so and cap in so and "cpu0 alone" in so, f"--pcap: {rc} {so[-600:]} {se[-300:]}")

    def refused(extra, needle, what):
        rc, so, se = run(common + (traffic if "--traffic" not in extra else []) + (devices if "--device" not in extra else [])
                         + extra)
        c.check(rc not in (0, None) and needle in so + se and "pick:" not in so, f"{what}: {rc} {(so + se)[-300:]}")

    refused(["--policy", "cheapest"], "--policy", "an unknown policy")
    refused(["--seconds", "nan"], "--seconds", "--seconds nan")
    refused(["--traffic", "count=10,flows=99"], "flows", "a traffic spec it cannot make")
    refused(["--device", "tpu"], "tpu", "an unknown device")
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
