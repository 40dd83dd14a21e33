"""Live table updates through `tandem ctl` for the l2 and fw-router apps (apps/l2/mac_control.h,
apps/fwrouter/fw_rule_control.h): a run forwarding generated traffic with --control takes a batch
of commands, good and bad; each bad line gets its error, the good ones reach the data path (L2:
MACs moved to another port and one deleted, whose frames are flooded from then on; fw-router: a
rule inserted before the others denies traffic nothing denied before), and the run's report counts
the commands and the table version (the same on the GPU: test_ctl_gpu.py)."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

from e2e_util import SKIP, Checker, args, run, tmpdir


def start(cmd):
    """Starts a run; returns it once it says its control socket listens (or it has ended)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while True:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("control:"):
            break
    return p, "".join(lines)


def stop(p):
    """Interrupts a run; returns (exit code, stdout, stderr)."""
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return p.returncode, out, err


def updates(c, T, d, what, sock, lines, applied, errors):
    """Sends `lines` as one file; checks the count applied and each refused line's error."""
    path = os.path.join(d, what + ".upd")
    open(path, "w").write("\n".join(lines) + "\n")
    rc, so, se = run([T, "ctl", "--socket", sock, "--file", path])
    c.check(rc == (1 if errors else 0), f"{what}: ctl exit {rc}: {(so + se)[-500:]}")
    c.check(f"{len(lines)} command(s), {applied} applied, {len(errors)} refused; table version {applied}" in so,
            f"{what}: ctl summary: {so.strip()}")
    for n, want in errors.items():
        c.check(any(l.startswith(f"line {n} (") and want in l for l in se.splitlines()),
                f"{what}: line {n} should be refused with {want!r}: {se.strip()[-800:]}")


def forward_with_updates(c, T, d, what, run_args, lines, applied, errors):
    """A run with --control taking `lines` while it forwards; returns its JSON report."""
    sock = os.path.join(d, what + ".sock")
    js = os.path.join(d, what + ".json")
    p, head = start([T, "run"] + run_args + ["--gen", "count=50000,dst=fib", "--repeat", "1000000000", "--device",
                                             "cpu", "--workers", "1", "--control", sock, "--json", js])
    if "control: table updates on" not in head:
        rc, out, err = stop(p)
        c.check(False, f"{what}: no control socket: exit {rc}: {(head + out + err)[-800:]}")
        return None
    rc, so, se = run([T, "ctl", "--socket", sock, "version"])
    c.check(rc == 0 and "table version 0" in so, f"{what}: version before: exit {rc}: {so + se}")
    updates(c, T, d, what, sock, lines, applied, errors)
    time.sleep(0.5)  # traffic under the updated table
    rc, out, err = stop(p)
    c.check(rc == 130, f"{what}: run exit {rc} after SIGINT: {err.strip()[-500:]}")
    # The batches: the lines that reached the run together (the file's lines usually come at once).
    want = (rf"control: {len(lines) + 1} command\(s\) in \d+ batch\(es\), {len(errors)} refused; "
            rf"table version {applied}\n")
    c.check(re.search(want, out) is not None, f"{what}: run's control line: {out.strip()[-600:]}")
    try:
        r = json.load(open(js))
    except (OSError, ValueError) as e:
        c.check(False, f"{what}: no JSON report: {e}")
        return None
    c.check(r.get("control", {}).get("version") == applied, f"{what}: control: {r.get('control')}")
    c.check(r.get("balanced") is True,
            f"{what}: accounting: {r.get('received')} {r.get('forwarded')} {r.get('dropped')}")
    return r


def main():
    a = args()
    if not hasattr(socket, "AF_UNIX"):
        print("no Unix sockets here")
        sys.exit(SKIP)
    T = a.tandem
    c = Checker()
    d = tmpdir()

    # L2: four stations on ports 0-3; traffic to them only (dst=fib), so nothing floods unless a
    # station is deleted.
    table = os.path.join(d, "macs.txt")
    open(table, "w").write("02:00:00:00:00:01 0\n02:00:00:00:00:02 1\n02:00:00:00:00:03 2\n02:00:00:00:00:04 3\n")
    r = forward_with_updates(
        c, T, d, "l2", ["--app", "l2", "--fib", table],
        ["add 02:00:00:00:00:02 3", "add 02:00:00:00:00:05 70000", "del 02:00:00:00:00:09", "add 01:00:5e:00:00:01 1",
         "add 02:00:00:00:00:01 3", "del 02:00:00:00:00:03", "add 02:00:00:00:00:06", "add 02:00:00:00:00:07 1 2",
         "forget 02:00:00:00:00:04", "add 02-00-00-00-00-08 1"],
        3, {2: "add: port '70000': want a number from 0 to 65534", 3: "no such MAC", 4: "group (multicast/broadcast)",
            7: "add: port ''", 8: "unexpected '2' at the end", 9: "unknown command 'forget'",
            10: "bad MAC address (expected aa:bb:cc:dd:ee:ff)"})
    if r:
        per_port = r.get("forwarded_per_port", {})
        c.check(per_port.get("flood", 0) > 0, f"l2: frames to the deleted station are flooded: {per_port}")
        c.check(per_port.get("3", 0) > per_port.get("0", 0), f"l2: two stations moved to port 3: {per_port}")

    # fw-router: two routes; the rules deny no UDP at first (the generated traffic is UDP).
    fib = os.path.join(d, "fib.txt")
    open(fib, "w").write("1.0.0.0/8 1\n2.0.0.0/8 2\n")
    rules = os.path.join(d, "rules.txt")
    open(rules, "w").write("accept proto icmp\ndrop dst 2.0.0.0/8 proto tcp\ndefault accept\n")
    r = forward_with_updates(
        c, T, d, "fw", ["--app", "fw-router", "--fib", fib, "--rules", rules],
        ["add 1 drop dst 1.0.0.0/8 proto udp", "add 9 accept", "del 0", "default maybe", "add 2 reject", "del 3",
         "add 4 accept src 10.0.0.0/8", "add 3 accept dport 99999", "del 1 2", "add", "default drop"],
        3, {2: "add: position '9': want a number from 1 to 4 (4 appends)",
            3: "del: position '0': want a number from 1 to 3", 4: "default: want accept or drop, not 'maybe'",
            5: "a rule starts with accept or drop", 7: "add: position '4': want a number from 1 to 3 (3 appends)",
            8: "bad port range", 9: "unexpected '2' at the end", 10: "add: missing POS RULE"})
    if r:
        # Rule 1 now denies UDP to 1/8 and the default (drop) the rest: routes to neither port
        # after the update, and many packets denied.
        c.check(r.get("drops", {}).get("acl_denied", 0) > 0, f"fw: denied after the update: {r.get('drops')}")
        c.check(r.get("dropped", 0) > 0, f"fw: dropped: {r.get('dropped')}")
    c.done()


if __name__ == "__main__":
    main()
