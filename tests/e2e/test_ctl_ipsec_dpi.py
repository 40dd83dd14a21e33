"""Live updates of the ipsec and dpi apps through `tandem run --control` and `tandem ctl`, on generated
traffic at a low rate (two workers, a few seconds each). IPsec: every outbound SA deleted while the
gateway forwards (their packets then bypass the tunnel), one added back (tunnel again); the
control's refusals (a key of the wrong length, an SPI there already, an unknown SPI) come back
without the key. DPI: an alert rule replaced by a drop rule for the same content while matching
traffic flows (alerts, then drops); a sid there already, an unknown sid and text after a rule are
refused. Each run then ends on SIGINT with every packet accounted for and the control's figures in
its report. Needs no GPU and no scapy."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from e2e_util import SKIP, Checker, args, run

GCM_KEY = "00112233445566778899aabbccddeeff01020304"  # a test key, never for real traffic
SHORT_KEY = "a1b2c3d4e5f60718293a4b5c6d7e8f90"  # 16 bytes: aes-128-gcm takes 20


def start(cmd):
    """Starts a run; returns it once it prints its control line (or has ended)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while True:
        line = p.stdout.readline()
        if not line or line.startswith("control:"):
            return p, line


def stop(p):
    """SIGINT, then the run's exit code, stdout and stderr."""
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


def ask(path, lines):
    """Sends lines to a control socket as a raw client; returns one reply per line."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(("\n".join(lines) + "\n").encode())
    buf = b""
    while buf.count(b"\n") < len(lines):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return buf.decode().splitlines()


def report(path):
    return json.load(open(path)) if os.path.exists(path) else {}


def ipsec(c, T, d):
    sock, js = os.path.join(d, "ipsec.sock"), os.path.join(d, "ipsec.json")
    p, line = start([T, "run", "--app", "ipsec", "--sa-gen", "4", "--ipsec-traffic", "out",
                     "--gen", "count=2000,dst=fib,flows=16,seed=1", "--repeat", "1000000", "--rate-mpps", "0.02",
                     "--device", "cpu", "--workers", "2", "--control", sock, "--json", js])
    if not line:
        c.check(False, f"ipsec run did not start: {p.communicate()[1][-400:]}")
        return
    c.check("del in|out SPI" in line, f"the control line names the commands: {line.strip()}")
    time.sleep(0.5)
    dels = os.path.join(d, "dels.txt")
    open(dels, "w").write("".join(f"del out {0x10000 + k}\n" for k in range(4)))
    rc, so, se = run([T, "ctl", "--socket", sock, "--file", dels])
    c.check(rc == 0 and "4 applied, 0 refused; table version 4" in so, f"ctl dels: exit {rc}: {(so + se)[-300:]}")
    time.sleep(0.7)  # every packet bypasses the tunnel now
    common = "src=192.0.2.1 dst=198.51.100.1 cipher=aes-128-gcm"
    replies = ask(sock, [f"add dir=out spi=0x10100 {common} key={SHORT_KEY} selector=10.0.0.0/8,0.0.0.0/0",
                         f"add dir=in spi=0x20001 {common} key={GCM_KEY}",
                         "del out 0x10000",
                         "version"])
    c.check(len(replies) == 4, f"one reply per line: {replies}")
    if len(replies) == 4:
        c.check(replies[0].startswith("error add: key of 16 bytes: aes-128-gcm takes 20"), f"short key: {replies[0]}")
        c.check(replies[1].startswith("error add: an inbound SA with spi 131073 is there already"), f"dup: {replies[1]}")
        c.check(replies[2].startswith("error del: no outbound SA with spi 65536"), f"unknown: {replies[2]}")
        c.check(replies[3] == "ok 4", f"version: {replies[3]}")
    for r in replies:
        c.check(SHORT_KEY[:8] not in r and GCM_KEY[:8] not in r, f"a key in a reply: {r}")
    # `tandem ctl` names a refused line by its number and command, never by its words (a key).
    rc, so, se = run([T, "ctl", "--socket", sock, "add", "dir=out", "spi=0x10101", *common.split(), f"key={SHORT_KEY}",
                      "selector=10.0.0.0/8,0.0.0.0/0"])
    c.check(rc == 1 and "line 1 (add): add: key of 16 bytes" in se and SHORT_KEY[:8] not in so + se,
            f"ctl refused add: exit {rc}: {(so + se)[-300:]}")
    rc, so, se = run([T, "ctl", "--socket", sock, "add", "dir=out", "spi=0x10100", *common.split(), f"key={GCM_KEY}",
                      "selector=10.0.0.0/8,0.0.0.0/0"])
    c.check(rc == 0 and "1 applied, 0 refused; table version 5" in so, f"ctl add: exit {rc}: {(so + se)[-300:]}")
    time.sleep(0.7)  # into the tunnel again, under the new SA
    rc, out, err = stop(p)
    c.check(rc == 130, f"ipsec run: exit {rc}: {err[-400:]}")
    r = report(js)
    ports = r.get("forwarded_per_port", {})
    c.check(r.get("balanced") and r.get("dropped") == 0 and r.get("received", 0) > 10000,
            f"ipsec: received {r.get('received')}, dropped {r.get('dropped')}, balanced {r.get('balanced')}")
    c.check(ports.get("0", 0) > 2000 and ports.get("2", 0) > 2000, f"tunnel (0) and bypass (2): {ports}")
    ctl = r.get("control", {})
    c.check((ctl.get("commands"), ctl.get("refused"), ctl.get("version")) == (10, 4, 5), f"control: {ctl}")
    c.check(GCM_KEY[:8] not in out + err and SHORT_KEY[:8] not in out + err, "a key in the run's output")


def dpi(c, T, d):
    rules, sock, js = os.path.join(d, "hw.rules"), os.path.join(d, "dpi.sock"), os.path.join(d, "dpi.json")
    open(rules, "w").write('alert tcp any any -> any any (msg:"h"; content:"hello"; sid:1;)\n'
                           'alert tcp any any -> any any (msg:"w"; content:"world"; sid:2;)\n')
    p, line = start([T, "run", "--app", "dpi", "--ids-rules", rules, "--match-heavy", "0.3",
                     "--gen", "count=2000,flows=100,proto=tcp,size=imix,seed=3", "--repeat", "1000000",
                     "--rate-mpps", "0.02", "--device", "cpu", "--workers", "2", "--control", sock, "--json", js])
    if not line:
        c.check(False, f"dpi run did not start: {p.communicate()[1][-400:]}")
        return
    time.sleep(0.7)  # alerts on both words
    replies = ask(sock, ["del 2",
                         'add drop tcp any any -> any any (msg:"w2"; content:"world"; sid:3;)',
                         'add alert tcp any any -> any any (content:"x"; sid:1;)',
                         "del 77",
                         'add alert tcp any any -> any any (content:"y"; sid:4;) junk'])
    c.check(replies[:2] == ["ok 2", "ok 2"], f"replace sid 2 by a drop rule: {replies}")
    c.check(replies[2:] == ["error add: sid 1 is there already", "error del: no rule with sid 77",
                            "error add: text after the rule's option list"], f"refusals: {replies}")
    time.sleep(0.7)  # drops on "world"
    rc, out, err = stop(p)
    c.check(rc == 130, f"dpi run: exit {rc}: {err[-400:]}")
    r = report(js)
    ports = r.get("forwarded_per_port", {})
    drops = r.get("drops", {})
    c.check(r.get("balanced") and r.get("received", 0) > 10000, f"dpi: received {r.get('received')}")
    c.check(ports.get("1", 0) > 500 and drops.get("dpi_rule_drop", 0) > 500,
            f"alerts (port 1) then drops: {ports}, dpi_rule_drop {drops.get('dpi_rule_drop')}")
    c.check(r.get("dropped") == drops.get("dpi_rule_drop"), f"drops by rules only: {r.get('dropped')}")
    ctl = r.get("control", {})
    c.check((ctl.get("commands"), ctl.get("refused"), ctl.get("version")) == (5, 3, 2), f"control: {ctl}")


def main():
    a = args()
    if not hasattr(socket, "AF_UNIX"):
        print("skipped: no Unix sockets here")
        raise SystemExit(SKIP)
    c = Checker()
    d = tempfile.mkdtemp(prefix="tandem-ctl-", dir="/tmp")  # short: a socket path is at most 107 bytes
    try:
        ipsec(c, a.tandem, d)
        dpi(c, a.tandem, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
