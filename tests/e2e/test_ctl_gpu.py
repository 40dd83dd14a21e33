"""Live table updates reaching the GPU's offload path (gpu/table_updates.h): runs forwarding
generated traffic on `--device gpu` with --control take changes through `tandem ctl`, and the
traffic follows them: the ipv4 app's routes all moved to one port, then deleted; the l2 app's
stations all moved to one port, then deleted (their frames flooded); a fw-router rule that denies
one route's traffic, then deleted; a dpi drop rule over an alerting word, then deleted; the ipsec
app's outbound SAs deleted, then added again with new keys (its resident path). Runs where
updates cannot reach the device copy are refused, naming why. Skipped (visibly) without a GPU,
except the refusals."""
import json
import os
import re
import sys
import time

from e2e_util import SKIP, Checker, args, run, tmpdir
from test_ctl_l2_fw import start, stop, updates


def moved_then_deleted(c, T, d, what, run_args, sock, moves, deletes):
    """A GPU run with --control: `moves` (one ctl file) after 0.3 s, `deletes` a second later, then
    SIGINT after 0.3 s more. Returns (JSON report, standard output), or (None, output)."""
    js = os.path.join(d, what + ".json")
    p, head = start([T, "run"] + run_args + ["--repeat", "1000000000", "--device", "gpu", "--workers", "2",
                                             "--control", sock, "--json", js])
    c.check("control: table updates on" in head, f"{what}: {head.strip()[-600:]}")
    time.sleep(0.3)
    updates(c, T, d, what + "-move", sock, moves, len(moves), {})
    time.sleep(1.0)
    path = os.path.join(d, what + "-del.upd")
    open(path, "w").write("".join(line + "\n" for line in deletes))
    rc, so, se = run([T, "ctl", "--socket", sock, "--file", path])
    c.check(rc == 0 and f"table version {len(moves) + len(deletes)}" in so, f"{what}: deletes: {so}{se}")
    time.sleep(0.3)
    rc, out, err = stop(p)
    c.check(rc == 130, f"{what}: exit {rc} after SIGINT: {err.strip()[-400:]}")
    try:
        return json.load(open(js)), out
    except (OSError, ValueError) as e:
        c.check(False, f"{what}: no JSON report: {e}")
        return None, out


def rebuilt_on_gpu(c, what, r, out):
    """Checks a run whose rule set was rebuilt twice (one add, one del): every packet accounted for,
    every batch on the GPU, both rule sets uploaded to the device copy. Returns (ports, drops)."""
    ports, drops, e = r.get("forwarded_per_port", {}), r.get("drops", {}), r.get("engine", {})
    c.check(r.get("balanced") is True and e.get("ended_on_gpu") is True and e.get("cpu_batches") == 0,
            f"{what}: every batch on the GPU, accounting: {e} {out.strip()[-300:]}")
    dc = r.get("control", {}).get("device_copy", {})
    c.check(dc.get("version") == 2 and dc.get("uploads") == 2 and dc.get("uploaded_bytes", 0) > 0, f"{what}: {dc}")
    return ports, drops


def main():
    a = args()
    T = a.tandem
    c = Checker()
    d = tmpdir()
    fib = os.path.join(d, "fib.txt")
    routes = ["10.0.0.0/8 1", "10.1.0.0/16 2", "10.2.0.0/16 3", "10.3.3.0/24 4", "10.3.3.128/25 5"]
    open(fib, "w").write("\n".join(routes) + "\n")
    base = [T, "run", "--app", "ipv4", "--fib", fib, "--gen", "count=10"]
    sock = os.path.join(d, "r.sock")
    for extra, want in ((["--device", "gpu", "--gpu-mode", "persistent"], "the offload path's persistent kernel runs through table updates"),
                        (["--device", "gpu", "--gpu-path", "resident"], "not the resident path's"),
                        (["--device", "gpu", "--gpus", "0"], "not the resident path's")):
        rc, so, se = run(base + extra + ["--control", sock])
        c.check(rc != 0 and want in se, f"{' '.join(extra)} --control: exit {rc}: {se.strip()[-300:]}")

    # ipsec runs ESP on the GPU through the resident path, whose copy of the SAs takes the updates;
    # the scheduler's copies (one per device) do not.
    ipsec = [T, "run", "--app", "ipsec", "--sa-gen", "4", "--sa-cipher", "aes-128-gcm", "--gen", "count=10"]
    rc, so, se = run(ipsec + ["--schedule", "throughput", "--device", "gpu", "--control", sock])
    c.check(rc != 0 and "not the scheduler's device copies" in se, f"ipsec --schedule --control: {rc} {se[-300:]}")

    rc, so, se = run([T, "run", "--app", "ipv4", "--fib", fib, "--gen", "count=10", "--device", "gpu"])
    if "no usable GPU" in se:
        print("SKIPPED the GPU runs: no usable GPU: " + se.strip().splitlines()[-1])
        if c.failures:
            c.done()
        sys.exit(SKIP)
    for mode in ("async", "graph", "mapped"):
        # Every route to port 1 for a second, then every route deleted: ports 2-5 get traffic only
        # before the first batch (0.3 s) and port 1 all of it after, until the packets are dropped
        # as no_route.
        r, out = moved_then_deleted(c, T, d, mode, ["--app", "ipv4", "--fib", fib, "--gen", "count=50000,dst=fib",
                                                    "--gpu-mode", mode], sock,
                                    [f"add {r.split()[0]} 1" for r in routes], [f"del {r.split()[0]}" for r in routes])
        if r is None:
            continue
        ports = r.get("forwarded_per_port", {})
        drops = {k: v for k, v in r.get("drops", {}).items() if v}
        c.check(r.get("balanced") is True and set(drops) == {"no_route"}, f"{mode}: accounting, drops {drops}")
        e = r.get("engine", {})
        c.check("gpu (" in out and e.get("ended_on_gpu") is True and e.get("cpu_batches") == 0 and e.get("gpu_batches", 0) > 0,
                f"{mode}: every batch on the GPU: {e}")
        others = max(ports.get(str(k), 0) for k in range(2, 6))
        c.check(ports.get("1", 0) > 3 * others, f"{mode}: traffic follows the moved routes to port 1: {ports}")
        c.check(r.get("control", {}).get("version") == 2 * len(routes), f"{mode}: control {r.get('control')}")
        dc = r.get("control", {}).get("device_copy", {})
        c.check(dc.get("version") == 2 * len(routes) and dc.get("applies", 0) >= 2 and dc.get("bytes", 0) >= 256 * 1024,
                f"{mode}: device copy {dc}")
        c.check(re.search(r"control: device copy at version 10: \d+ update\(s\) applied", out) is not None,
                f"{mode}: device copy line: {out.strip()[-500:]}")

    # l2: four stations on ports 0-3, traffic to them only (dst=fib).
    macs = ["02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03", "02:00:00:00:00:04"]
    table = os.path.join(d, "macs.txt")
    open(table, "w").write("".join(f"{m} {i}\n" for i, m in enumerate(macs)))
    r, out = moved_then_deleted(c, T, d, "l2", ["--app", "l2", "--fib", table, "--gen", "count=50000,dst=fib"], sock,
                                [f"add {m} 3" for m in macs], [f"del {m}" for m in macs])
    r = r or {}
    ports = r.get("forwarded_per_port", {})
    e = r.get("engine", {})
    c.check(r.get("balanced") is True and e.get("ended_on_gpu") is True and e.get("cpu_batches") == 0,
            f"l2: every batch on the GPU, accounting: {e} {out.strip()[-300:]}")
    c.check(ports.get("3", 0) > 3 * max(ports.get(str(k), 0) for k in range(3)),
            f"l2: traffic follows the moved stations to port 3: {ports}")
    c.check(ports.get("flood", 0) > 0, f"l2: frames to deleted stations are flooded: {ports}")
    c.check(r.get("control", {}).get("device_copy", {}).get("version") == 2 * len(macs), f"l2: {r.get('control')}")

    # fw-router: two routes, every packet accepted; a rule denying UDP to 1/8 (the generated
    # traffic is UDP) for a second, then deleted.
    fw_fib = os.path.join(d, "fw-fib.txt")
    open(fw_fib, "w").write("1.0.0.0/8 1\n2.0.0.0/8 2\n")
    rules = os.path.join(d, "rules.txt")
    open(rules, "w").write("accept proto icmp\ndefault accept\n")
    r, out = moved_then_deleted(c, T, d, "fw", ["--app", "fw-router", "--fib", fw_fib, "--rules", rules,
                                                "--gen", "count=50000,dst=fib"], sock,
                                ["add 1 drop dst 1.0.0.0/8 proto udp"], ["del 1"])
    ports, drops = rebuilt_on_gpu(c, "fw", r or {}, out)
    c.check(drops.get("acl_denied", 0) > 1000 and ports.get("1", 0) > 0 and ports.get("2", 0) > drops.get("acl_denied", 0),
            f"fw: traffic to 1/8 denied while the rule was there: {ports}, {drops}")
    c.check("table version(s) uploaded whole by the control thread" in out, f"fw: upload line: {out.strip()[-500:]}")

    # The same after a GPU fault at the 50th batch: the engine goes on on the CPU, and the updates
    # still apply there (none is refused for a device copy nobody reads any more).
    r, out = moved_then_deleted(c, T, d, "fw-fault", ["--app", "fw-router", "--fib", fw_fib, "--rules", rules,
                                                      "--gen", "count=50000,dst=fib", "--inject-gpu-fault", "50"], sock,
                                ["add 1 drop dst 1.0.0.0/8 proto udp"], ["del 1"])
    r = r or {}
    drops, e = r.get("drops", {}), r.get("engine", {})
    c.check(r.get("balanced") is True and e.get("ended_on_gpu") is False and e.get("cpu_batches", 0) > 0,
            f"fw after a GPU fault: on the CPU, accounting: {e} {out.strip()[-300:]}")
    c.check(drops.get("acl_denied", 0) > 1000 and r.get("control", {}).get("version") == 2,
            f"fw after a GPU fault: the rule applied on the CPU: {drops}, {r.get('control')}")

    # ipsec: four SA pairs, cleartext to their selectors; the four outbound SAs deleted (the traffic
    # bypasses the tunnel), then four new ones with other keys and SPIs for the same selectors
    # (sealed again), through the resident path's copy of the SAs on the GPU.
    key = lambda k: "".join(f"{(31 * k + i) & 255:02x}" for i in range(20))
    r, out = moved_then_deleted(c, T, d, "ipsec", ["--app", "ipsec", "--sa-gen", "4", "--sa-cipher", "aes-128-gcm",
                                                   "--sa-room", "4", "--ipsec-traffic", "out",
                                                   "--gen", "count=50000,dst=fib"], sock,
                                [f"del out {0x10000 + k}" for k in range(4)],
                                [f"add dir=out spi={0x50000 + k} src=192.0.2.1 dst=198.51.100.1 cipher=aes-128-gcm "
                                 f"key={key(k)} selector=10.0.0.{k + 1}/32,172.16.0.{k + 1}/32" for k in range(4)])
    r = r or {}
    ports, res = r.get("forwarded_per_port", {}), r.get("resident", {})
    c.check(r.get("balanced") is True and r.get("dropped") == 0 and res.get("cpu_batches") == 0 and
            res.get("gpu_failed") is False and res.get("batches", 0) > 0,
            f"ipsec: every batch on the GPU, nothing dropped: {res} {r.get('drops')} {out.strip()[-300:]}")
    c.check(ports.get("0", 0) > 1000 and ports.get("2", 0) > 1000,
            f"ipsec: sealed, bypassed while the SAs were gone, sealed again: {ports}")
    dc = r.get("control", {}).get("device_copy", {})
    c.check(r.get("control", {}).get("version") == 8 and dc.get("path") == "resident" and dc.get("uploads") == 2 and
            dc.get("abandoned") is False, f"ipsec: the GPU's copy took both batches: {r.get('control')}")
    c.check("control: the GPU's copy (resident path): 2 version(s) published" in out, f"ipsec: {out.strip()[-500:]}")

    # dpi: a word that alerts; a drop rule over it for a second, then deleted. Frames of 300 bytes:
    # every payload fits the GPU's items (a longer one is matched by the worker on the host).
    ids = os.path.join(d, "w.rules")
    open(ids, "w").write('alert tcp any any -> any any (msg:"w"; content:"world"; sid:1;)\n')
    r, out = moved_then_deleted(c, T, d, "dpi", ["--app", "dpi", "--ids-rules", ids, "--match-heavy", "0.3",
                                                 "--gen", "count=20000,flows=100,proto=tcp,size=300,seed=3"], sock,
                                ['add drop tcp any any -> any any (msg:"d"; content:"world"; sid:2;)'], ["del 2"])
    r = r or {}
    ports, drops = rebuilt_on_gpu(c, "dpi", r, out)
    c.check(drops.get("dpi_rule_drop", 0) > 1000 and ports.get("1", 0) > 1000,
            f"dpi: alerts, then drops while the drop rule was there: {ports}, {drops}")
    c.check(r.get("dropped") == drops.get("dpi_rule_drop"), f"dpi: drops by rules only: {drops}")
    c.done()


if __name__ == "__main__":
    main()
