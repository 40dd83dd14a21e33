"""DPDK ports between processes over memif (`--dpdk "... --vdev net_memif0,..."`, `dpdk:PORT`), no
hugepages, no root: three Tandem processes in a line. A source replays a capture out of a memif port
(`--pcap --tx dpdk:0`); a router (the ipv4 app) receives it on one memif port and forwards out of
another, with the next hop's MAC; a sink receives that and writes it to a capture. Every packet is
checked: each flow complete and in order, TTL and header checksum rewritten, the MACs set, and the
counts: sent = received by the router = forwarded + dropped (each drop with its reason) = received
by the sink. Where the machine has a GPU, the router runs again on the GPU's resident path, with the
frames left in their mbufs (zero copy) and copied into the ring.
Skipped (visibly) where the build has no DPDK ports, except in CI."""
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import types

from e2e_util import SKIP, Checker, args, run, tmpdir

MARK = b"TNDMEMIF"
NEXT_HOP_MAC = "02:00:00:00:00:77"
EAL = "--no-huge --no-pci -m 256 --no-shconf --no-telemetry"


def memif(d, name, role, index=0):
    return f"--vdev net_memif{index},role={role},socket={os.path.join(d, name)},socket-abstract=no"


def start(cmd):
    """Starts a run and returns once its ports are open (its input line)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if line.startswith("input:"):
            return p, lines
    p.wait()
    return p, lines


def line_run(c, t, router_path, tag):
    """Source -> router -> sink over memif, the router on `router_path`; every packet of t.frames
    (t.pin) checked."""
    from scapy.all import IP, UDP, rdpcap
    T, d, fib, frames, pin, routed, drops = t.T, t.d, t.fib, t.frames, t.pin, t.routed, t.drops

    def check(cond, what):
        c.check(cond, f"{tag}: {what}")

    sink_js, router_js, source_js = (os.path.join(d, f"{n}-{tag}.json") for n in ("sink", "router", "source"))
    sink_out = os.path.join(d, f"sink-{tag}.pcap")
    m0, m1 = f"m0-{tag}.sock", f"m1-{tag}.sock"
    sink, _ = start([T, "run", "--app", "echo", "--device", "cpu", "--dpdk", f"{EAL} {memif(d, m1, 'server')}",
                     "--rx", "dpdk:0", "--out", sink_out, "--packets", str(routed), "--duration", "120", "--json", sink_js])
    router, head = start([T, "run", "--app", "ipv4", "--fib", fib] + router_path + ["--dpdk",
                          f"{EAL} {memif(d, m0, 'server', 0)} {memif(d, m1, 'client', 1)}",
                          "--rx", "dpdk:net_memif0", "--tx", "dpdk:net_memif1", "--tx-dst-mac", NEXT_HOP_MAC,
                          "--packets", str(len(frames)), "--duration", "120", "--json", router_js])
    check(any(l.startswith("input: dpdk:net_memif0 (net_memif") for l in head), f"router input line: {head}")
    rc, so, se = run([T, "run", "--app", "echo", "--device", "cpu", "--pcap", pin, "--dpdk", f"{EAL} {memif(d, m0, 'client')}",
                      "--tx", "dpdk:0", "--json", source_js])
    check(rc == 0, f"source: exit {rc}: {se.strip()[-600:]}")
    _, err_r = router.communicate(timeout=180)
    _, err_s = sink.communicate(timeout=180)
    check(router.returncode == 0, f"router: exit {router.returncode}: {err_r.strip()[-600:]}")
    check(sink.returncode == 0, f"sink: exit {sink.returncode}: {err_s.strip()[-600:]}")
    src = json.load(open(source_js)) if os.path.exists(source_js) else {}
    r = json.load(open(router_js)) if os.path.exists(router_js) else {}
    s = json.load(open(sink_js)) if os.path.exists(sink_js) else {}
    check(src.get("tx", {}).get("sent") == len(frames), f"source sent {src.get('tx')}, want {len(frames)}")
    check(r.get("received") == len(frames), f"router received {r.get('received')}, want {len(frames)}")
    check(r.get("forwarded") == routed and r.get("balanced"), f"router forwarded {r.get('forwarded')}, want {routed}")
    check({k: v for k, v in r.get("drops", {}).items() if v} == drops, f"router drops {r.get('drops')}, want {drops}")
    check(r.get("live", {}).get("sent") == routed and r.get("live", {}).get("kernel_ring_drops") == 0,
            f"router live: {r.get('live')}")
    check(s.get("received") == routed and s.get("forwarded") == routed, f"sink received {s.get('received')}")
    if "resident" in router_path:
        want_zc = "off" not in router_path
        check(r.get("resident", {}).get("zero_copy") == want_zc,
              f"router's frames {'in' if want_zc else 'copied out of'} the mbufs: {r.get('resident', {}).get('gpu_side')}")
    got = rdpcap(sink_out) if os.path.exists(sink_out) else []
    check(len(got) == routed, f"sink wrote {len(got)} frames, want {routed}")
    seen = {}
    bad = 0
    for p in got:
        raw = bytes(p[UDP].payload) if UDP in p else b""
        if not raw.startswith(MARK):
            bad += 1
            continue
        f, seq = struct.unpack("!HI", raw[len(MARK):len(MARK) + 6])
        ip = bytes(p[IP])[:20]
        csum = sum(struct.unpack("!10H", ip))
        while csum >> 16:
            csum = (csum & 0xFFFF) + (csum >> 16)
        ok = (p.dst == NEXT_HOP_MAC and p[IP].ttl == 63 - f and csum == 0xFFFF and len(raw) == len(MARK) + 6 + seq % 300)
        bad += not ok
        seen.setdefault(f, []).append(seq)
    check(bad == 0, f"{bad} frames at the sink with a wrong MAC, TTL, checksum or payload")
    for f in range(t.flows):
        check(seen.get(f) == list(range(t.per_flow)), f"flow {f}: {len(seen.get(f, []))} of {t.per_flow} packets, in order")


def main():
    a = args()
    T = os.path.abspath(a.tandem)
    rc, so, se = run([T, "run", "--gen", "count=1", "--tx", "dpdk:0", "--dpdk", "--no-such-eal-flag"])
    if "this build has no DPDK ports" in se:
        if os.environ.get("CI") == "true":
            print(f"FAIL: CI builds have DPDK ports (scripts/fetch-dpdk.sh): {se.strip()}")
            sys.exit(1)
        print("SKIPPED: this build has no DPDK ports")
        sys.exit(SKIP)
    from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap
    c = Checker()
    d = tmpdir()
    fib = os.path.join(d, "fib.txt")
    open(fib, "w").write("10.1.0.0/16 1\n10.2.0.0/16 2\n")
    flows, per_flow = 16, 300
    frames, drops = [], {"ttl_exceeded": 0, "no_route": 0}
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    for seq in range(per_flow):
        for f in range(flows):
            frames.append(eth / IP(src=f"192.0.2.{f + 1}", dst=f"10.{1 + f % 2}.{f}.1", ttl=64 - f) /
                          UDP(sport=1000 + f, dport=2000) / Raw(MARK + struct.pack("!HI", f, seq) + bytes(seq % 300)))
        if seq % 10 == 0:
            frames.append(eth / IP(src="192.0.2.99", dst="10.1.0.9", ttl=1) / UDP() / Raw(MARK))
            drops["ttl_exceeded"] += 1
            frames.append(eth / IP(src="192.0.2.99", dst="10.9.0.1") / UDP() / Raw(MARK))
            drops["no_route"] += 1
    pin = os.path.join(d, "in.pcap")
    wrpcap(pin, frames)
    routed = flows * per_flow

    line = types.SimpleNamespace(T=T, d=d, fib=fib, frames=frames, pin=pin, routed=routed, drops=drops, flows=flows,
                                 per_flow=per_flow)
    line_run(c, line, ["--device", "cpu"], "cpu")
    # The GPU's resident path takes the router's ports too, where the machine has a GPU.
    rc, _, _ = run([T, "run", "--app", "echo", "--gen", "count=1", "--device", "gpu"])
    if rc == 0:
        line_run(c, line, ["--device", "gpu", "--gpu-path", "resident"], "gpu-resident")
        line_run(c, line, ["--device", "gpu", "--gpu-path", "resident", "--zero-copy", "off"], "gpu-resident-copy")
    else:
        print("(no GPU here: the router on the GPU's resident path is not run)")

    # A sink that is slow to read: the router's last frames wait in the memif ring while the router
    # finishes; it must not close the ring (losing them) before the sink has read them. The sink is
    # stopped from before the first frame until the router has reported (it then waits for its
    # peer up to 2 s before closing its ports).
    few = frames[:100]
    few_routed = sum(1 for p in few if p[IP].ttl > 1 and p[IP].dst.startswith(("10.1.", "10.2.")))
    pin2, slow_out, slow_js = (os.path.join(d, n) for n in ("few.pcap", "slow.pcap", "slow.json"))
    wrpcap(pin2, few)
    slow, _ = start([T, "run", "--app", "echo", "--device", "cpu", "--dpdk", f"{EAL} {memif(d, 'm3.sock', 'server')}",
                     "--rx", "dpdk:0", "--out", slow_out, "--packets", str(few_routed), "--duration", "60", "--json", slow_js])
    router, _ = start([T, "run", "--app", "ipv4", "--fib", fib, "--device", "cpu", "--dpdk",
                       f"{EAL} {memif(d, 'm2.sock', 'server', 0)} {memif(d, 'm3.sock', 'client', 1)}",
                       "--rx", "dpdk:net_memif0", "--tx", "dpdk:net_memif1", "--packets", str(len(few)), "--duration", "60"])
    os.kill(slow.pid, signal.SIGSTOP)
    # The router's report (its "packets:" line) comes once it has forwarded all it will, before its
    # ports close: the sink resumes only then.
    reported = threading.Event()

    def read_router():
        for line in router.stdout:
            if line.startswith("packets:"):
                reported.set()
    reader = threading.Thread(target=read_router)
    reader.start()
    source = subprocess.Popen([T, "run", "--app", "echo", "--device", "cpu", "--pcap", pin2, "--dpdk",
                               f"{EAL} {memif(d, 'm2.sock', 'client')}", "--tx", "dpdk:0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    c.check(reported.wait(60), "slow sink: the router reported within 60 s")
    os.kill(slow.pid, signal.SIGCONT)
    _, se = source.communicate(timeout=90)
    router.wait(timeout=90)
    reader.join()
    slow.communicate(timeout=90)
    rc = source.returncode
    s = json.load(open(slow_js)) if os.path.exists(slow_js) else {}
    c.check(rc == 0 and router.returncode == 0 and slow.returncode == 0,
            f"slow sink: exits {rc}, {router.returncode}, {slow.returncode}")
    c.check(s.get("received") == few_routed, f"slow sink received {s.get('received')}, want {few_routed}")

    # A memif server port no client connects to: the source's frames cannot leave; after the stall
    # limit they are counted as dropped (tx_error), not lost and not hanging. A client with no server
    # is refused at the start, naming the port.
    t0 = time.time()
    rc, so, se = run([T, "run", "--app", "echo", "--device", "cpu", "--gen", "count=100", "--json", os.path.join(d, "lone.json"),
                      "--dpdk", f"{EAL} {memif(d, 'lone.sock', 'server')}", "--tx", "dpdk:0"])
    lone = json.load(open(os.path.join(d, "lone.json"))) if os.path.exists(os.path.join(d, "lone.json")) else {}
    c.check(rc == 0 and "link down" in so, f"lone memif: exit {rc}: {(so + se).strip()[-400:]}")
    c.check(lone.get("dropped") == 100 and lone.get("drops", {}).get("tx_error") == 100 and lone.get("balanced"),
            f"lone memif: {lone.get('drops')}")
    c.check(time.time() - t0 < 60, f"lone memif took {time.time() - t0:.0f} s")
    rc, so, se = run([T, "run", "--app", "echo", "--device", "cpu", "--gen", "count=100",
                      "--dpdk", f"{EAL} {memif(d, 'nobody.sock', 'client')}", "--tx", "dpdk:0"])
    c.check(rc != 0 and "dpdk:0: start (net_memif" in se, f"memif client without a server: exit {rc}: {se.strip()[-300:]}")
    c.done()


if __name__ == "__main__":
    main()
