"""`tandem run --rx BACKEND:IF --tx BACKEND:IF,IF` (af_packet, af_xdp, dpdk over net_af_packet) between veth pairs in a private
network namespace, against the real Linux stack: frames sent from one side by a raw socket, Tandem's IPv4
router forwarding between the interfaces, captures on the far sides checking every packet (the TTL
and header checksum rewritten, the MACs set for the next hop, each flow complete and in order, out of
the interface its route names) and the counts (sent = received by Tandem = forwarded + dropped =
captured + dropped, each drop with its reason, a frame over the output MTU counted as a tx_error).
Also: the metrics endpoint and SIGINT while forwarding (a final report, balanced), 10,000 route
updates through `tandem ctl` while forwarding, --duration with no traffic, and the errors for a
missing interface or an unknown backend. Skipped (visibly) where namespaces are not allowed; the
AF_XDP part where the kernel refuses XDP sockets."""
import json
import os
import signal
import struct
import subprocess
import sys
import time

from e2e_util import SKIP, Checker, args, run, tmpdir
from netns import Capture, Netns, can_make_namespaces, send, write_frames

MARK = b"TNDLIVE1"
NEXT_HOP_MAC = "02:00:00:00:00:99"


def frames_for(src_mac, dst_mac):
    """Routed flows (seq numbers in the payload) interleaved with frames each drop reason takes."""
    from scapy.all import ARP, IP, UDP, Ether, Raw
    flows = [(f, 1 + f % 3) for f in range(12)]  # flow f goes to 10.<port>.f.1: port 1, 2 or 3
    out, expect = [], {"no_route": 0, "ttl_exceeded": 0, "bad_checksum": 0, "martian_address": 0, "not_ip": 0,
                       "tx_error": 0}
    eth = Ether(src=src_mac, dst=dst_mac)
    per_flow = 60
    for seq in range(per_flow):
        for f, port in flows:
            p = eth / IP(src=f"192.0.2.{f + 1}", dst=f"10.{port}.{f}.1", ttl=64 - f) / UDP(sport=1000 + f, dport=2000) / \
                Raw(MARK + struct.pack("!HI", f, seq) + bytes(20 + (seq * 7 + f) % 200))
            out.append(bytes(p))
        if seq % 6 == 0:
            out.append(bytes(eth / IP(src="192.0.2.99", dst="10.9.0.1") / UDP() / Raw(MARK)))
            expect["no_route"] += 1
            out.append(bytes(eth / IP(src="192.0.2.99", dst="10.1.0.1", ttl=1) / UDP() / Raw(MARK)))
            expect["ttl_exceeded"] += 1
            bad = bytearray(bytes(eth / IP(src="192.0.2.99", dst="10.2.0.1") / UDP() / Raw(MARK)))
            bad[24] ^= 0xFF  # the IPv4 header checksum
            out.append(bytes(bad))
            expect["bad_checksum"] += 1
            out.append(bytes(eth / IP(src="192.0.2.99", dst="127.0.0.1") / UDP() / Raw(MARK)))
            expect["martian_address"] += 1
            out.append(bytes(eth / ARP(psrc="192.0.2.1", pdst="192.0.2.2")))
            expect["not_ip"] += 1
            # Routed to port 1 (c1, MTU 1000) but 1,200 bytes long: the kernel refuses it on the way out.
            out.append(bytes(eth / IP(src="192.0.2.98", dst="10.1.77.1") / UDP(sport=9, dport=9) / Raw(MARK + bytes(1150))))
            expect["tx_error"] += 1
    return out, expect, flows, per_flow


def check_captured(c, frames, iface_mac, ports_here, flows, per_flow, what):
    from scapy.all import IP, UDP, Ether
    seen = {}
    for fr in frames:
        p = Ether(fr)
        if IP not in p or UDP not in p or not bytes(p[UDP].payload).startswith(MARK):
            c.check(False, f"{what}: a frame that is not ours: {p.summary()}")
            continue
        raw = bytes(p[UDP].payload)
        f, seq = struct.unpack("!HI", raw[len(MARK):len(MARK) + 6])
        c.check(p.dst == NEXT_HOP_MAC, f"{what}: flow {f} seq {seq}: destination MAC {p.dst}")
        c.check(p.src == iface_mac, f"{what}: flow {f} seq {seq}: source MAC {p.src}, want {iface_mac}")
        c.check(p[IP].ttl == 64 - f - 1, f"{what}: flow {f} seq {seq}: TTL {p[IP].ttl}, want {64 - f - 1}")
        ip = bytes(p[IP])[:20]
        s = sum(struct.unpack("!10H", ip))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        c.check(s == 0xFFFF, f"{what}: flow {f} seq {seq}: header checksum does not verify")
        c.check(len(raw) == len(MARK) + 6 + 20 + (seq * 7 + f) % 200, f"{what}: flow {f} seq {seq}: payload length")
        seen.setdefault(f, []).append(seq)
    for f, port in flows:
        if port in ports_here:
            c.check(seen.get(f) == list(range(per_flow)),
                    f"{what}: flow {f}: {len(seen.get(f, []))} of {per_flow} packets, in order: "
                    f"{seen.get(f, [])[:8] == list(range(min(8, per_flow)))}")
        else:
            c.check(f not in seen, f"{what}: flow {f} (port {port}) came out of the wrong interface")


def ports_for(backend, workers):
    """--rx, --tx and the extra flags that put a backend on a1 (in) and b1, c1 (out)."""
    if backend != "dpdk":
        return f"{backend}:a1", f"{backend}:b1,c1", []
    # DPDK's net_af_packet driver on the same interfaces, one queue pair per worker.
    vdevs = " ".join(f"--vdev net_af_packet{i},iface={n},qpairs={workers}" for i, n in enumerate(("a1", "b1", "c1")))
    return "dpdk:net_af_packet0", "dpdk:net_af_packet1,net_af_packet2", [
        "--dpdk", f"--no-huge --no-pci -m 512 --no-shconf --no-telemetry {vdevs}"]


def forward_all(c, ns, T, fib, d, backend, workers, frames, expect, flows, per_flow, routed):
    """Forwards every frame through one backend and checks each packet and count."""
    cap_b = Capture(ns, "b0", os.path.join(d, f"b0-{backend}.frames"))
    cap_c = Capture(ns, "c0", os.path.join(d, f"c0-{backend}.frames"))
    js, stats = os.path.join(d, f"run-{backend}.json"), os.path.join(d, f"stats-{backend}.jsonl")
    rx, tx, extra = ports_for(backend, workers)
    p, head = start_tandem(ns, [T, "run", "--app", "ipv4", "--fib", fib, "--device", "cpu", "--workers", str(workers),
                                "--rx", rx, "--tx", tx, "--tx-dst-mac", NEXT_HOP_MAC,
                                "--packets", str(len(frames)), "--duration", "120", "--json", js,
                                "--stats-json", stats, "--stats-interval", "0.2"] + extra)
    if backend == "dpdk" and p.poll() is not None:
        _, err = p.communicate()
        # A build without DPDK's ethdev (scripts/fetch-dpdk.sh failed); in CI, install-deps.sh fetches it.
        if "this build has no DPDK ports" in err and os.environ.get("CI") != "true":
            cap_b.stop(), cap_c.stop()
            print("SKIPPED dpdk: this build has no DPDK ports")
            return False
        c.check(False, f"dpdk: the run did not start: {err.strip()[-800:]}")
        cap_b.stop(), cap_c.stop()
        return False
    if backend == "af_xdp" and p.poll() is not None:
        _, err = p.communicate()
        cap_b.stop(), cap_c.stop()
        if "Operation not permitted" in err or "not supported" in err.lower():
            print(f"SKIPPED af_xdp: the kernel refuses it here: {err.strip()[-300:]}")
            return False
        # A build without libxdp (the GPU machine's); in CI, scripts/install-deps.sh installs it.
        if "this build has no AF_XDP" in err and os.environ.get("CI") != "true":
            print("SKIPPED af_xdp: this build has no AF_XDP (libxdp-dev)")
            return False
    c.check(any(l.startswith(f"input: {rx.split(',')[0]}") for l in head), f"{backend}: input line: {head}")
    sent = send(ns, "a0", frames, os.path.join(d, "send.frames"))
    out, err = p.communicate(timeout=180)
    time.sleep(0.2)
    got_b, drops_b = cap_b.stop()
    got_c, drops_c = cap_c.stop()
    c.check(p.returncode == 0, f"run exit {p.returncode}: {err.strip()[-800:]}")
    c.check(sent == len(frames), f"sent {sent} of {len(frames)}")
    r = json.load(open(js))
    c.check(r["received"] == sent, f"received {r['received']}, sent {sent}")
    c.check(r["forwarded"] == routed, f"forwarded {r['forwarded']}, want {routed}")
    c.check(r["received"] == r["forwarded"] + r["dropped"] and r["balanced"], "received = forwarded + dropped")
    for reason, n in expect.items():
        c.check(r["drops"].get(reason) == n, f"drops {reason}: {r['drops'].get(reason)}, want {n}")
    c.check(sum(r["drops"].values()) == sum(expect.values()), f"drops: {r['drops']}")
    c.check(r["input_mode"] == "live" and r["live"]["kernel_ring_drops"] == 0, f"live: {r.get('live')}")
    c.check(r["live"].get("sent") == routed, f"sent through --tx: {r['live'].get('sent')}, want {routed}")
    c.check(drops_b == 0 and drops_c == 0, f"capture sockets dropped {drops_b} + {drops_c}")
    c.check(len(got_b) + len(got_c) == r["forwarded"], f"captured {len(got_b)} + {len(got_c)}, forwarded {r['forwarded']}")
    check_captured(c, got_b, ns.mac("b1"), {2}, flows, per_flow, "b0")
    check_captured(c, got_c, ns.mac("c1"), {1, 3}, flows, per_flow, "c0")
    c.check("accounting OK" in out, "report says the accounting balances")
    lines = [json.loads(l) for l in open(stats) if l.strip()] if os.path.exists(stats) else []
    c.check(len(lines) >= 1 and all(l["received"] <= sent for l in lines), f"stats lines: {lines[-1:]}")
    c.check(lines and lines[-1]["final"] and lines[-1]["received"] == r["received"] and
            lines[-1]["forwarded"] == r["forwarded"], f"the last stats line has the final figures: {lines[-1:]}")
    return True


def start_tandem(ns, cmd, ready="input:"):
    """Starts a run and returns once it prints the line that says it is ready (its ports open)."""
    p = subprocess.Popen(ns.exec_cmd(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while True:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(ready):
            break
    if not lines or not lines[-1].startswith(ready):
        p.wait()  # it ended before it was ready: let the caller see its exit and errors
    return p, lines


def main():
    a = args()
    ok, why = can_make_namespaces()
    if not ok:
        print(f"SKIPPED: {why}")
        sys.exit(SKIP)
    c = Checker()
    d = tmpdir()
    T = os.path.abspath(a.tandem)
    fib = os.path.join(d, "fib.txt")
    open(fib, "w").write("10.1.0.0/16 1\n10.2.0.0/16 2\n10.3.0.0/16 3\n")

    with Netns([("a0", "a1"), ("b0", "b1"), ("c0", "c1")]) as ns:
        ns.sh("ip", "link", "set", "c1", "mtu", "1000")
        for i in ("a0", "a1", "b0", "b1", "c0", "c1"):
            ns.wait_up(i)
        frames, expect, flows, per_flow = frames_for(ns.mac("a0"), ns.mac("a1"))
        routed = len(flows) * per_flow

        # 1. Forward all of it, out of two interfaces (port 2 -> b1, ports 1 and 3 -> c1): AF_PACKET
        # with two workers (fanout), AF_XDP with one (a veth has one receive queue).
        ran = set()
        for backend, workers in (("af_packet", 2), ("af_xdp", 1), ("dpdk", 2)):
            if forward_all(c, ns, T, fib, d, backend, workers, frames, expect, flows, per_flow, routed):
                ran.add(backend)

        # 2. SIGINT while forwarding: a final report, balanced, exit 130; before it, the metrics
        # endpoint (Prometheus text format) shows what was received.
        js2 = os.path.join(d, "sigint.json")
        cmd = [T, "run", "--app", "ipv4", "--fib", fib, "--device", "cpu", "--workers", "2",
               "--rx", "af_packet:a1", "--tx", "af_packet:b1", "--json", js2]
        p, head = start_tandem(ns, cmd + ["--metrics", "127.0.0.1:19100"])
        metrics = True
        if p.poll() is not None or not head:
            _, err = p.communicate()
            # A build without cpp-httplib (the GPU machine's); in CI, scripts/install-deps.sh installs it.
            c.check("no HTTP library" in err and os.environ.get("CI") != "true", f"--metrics: {err.strip()[-300:]}")
            print("SKIPPED metrics: this build has no HTTP library (libcpp-httplib-dev)")
            metrics = False
            p, head = start_tandem(ns, cmd)
        part = frames[:500]
        send(ns, "a0", part, os.path.join(d, "send2.frames"))
        time.sleep(0.5)
        fetch = ("import urllib.request,time\n"
                 "for i in range(50):\n"
                 "  try:\n"
                 "    print(urllib.request.urlopen('http://127.0.0.1:19100/metrics', timeout=5).read().decode()); break\n"
                 "  except OSError: time.sleep(0.1)\n")
        rc, page, se = run(ns.exec_cmd([sys.executable, "-c", fetch])) if metrics else (0, "", "")
        samples = {}
        for line in page.splitlines():
            if line and not line.startswith("#"):
                name = line.split("{")[0].split(" ")[0]
                samples[name] = samples.get(name, 0) + float(line.rsplit(" ", 1)[1])
        c.check(not metrics or samples.get("tandem_received_packets_total") == len(part),
                f"metrics: received {samples.get('tandem_received_packets_total')}, want {len(part)}: {page[:300]!r}")
        c.check(not metrics or samples.get("tandem_received_packets_total") ==
                samples.get("tandem_forwarded_packets_total", -1) + samples.get("tandem_dropped_packets_total", -1),
                "metrics: received = forwarded + dropped")
        c.check(not metrics or ("# TYPE tandem_received_packets_total counter" in page and 'worker="1"' in page),
                "metrics: format")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        c.check(p.returncode == 130, f"SIGINT: exit {p.returncode}: {err.strip()[-400:]}")
        c.check("interrupted by SIGINT" in out and "accounting OK" in out, f"SIGINT report: {out[-600:]}")
        r2 = json.load(open(js2)) if os.path.exists(js2) else {}
        c.check(r2.get("received") == len(part) and r2.get("balanced") and r2.get("interrupted") == "SIGINT",
                f"SIGINT JSON: received {r2.get('received')} of {len(part)}, balanced {r2.get('balanced')}")

        # 3a. Tandem as the traffic source: generated frames sent out of a port (--gen with --tx),
        # received by another run on the far side, every one of them.
        n = 20000
        js4 = os.path.join(d, "recv.json")
        p, head = start_tandem(ns, [T, "run", "--app", "echo", "--device", "cpu", "--rx", "af_packet:a1",
                                    "--packets", str(n), "--duration", "60", "--json", js4])
        rc, so, se = run(ns.exec_cmd([T, "run", "--app", "echo", "--device", "cpu", "--gen", f"count={n},flows=100",
                                      "--tx", "af_packet:a0", "--rate-mpps", "0.2"]))
        c.check(rc == 0 and f"af_packet:a0: {n} frames sent" in so, f"sender: exit {rc}: {(so + se)[-400:]}")
        out, err = p.communicate(timeout=120)
        r4 = json.load(open(js4)) if os.path.exists(js4) else {}
        c.check(p.returncode == 0 and r4.get("received") == n and r4.get("balanced"),
                f"receiver: exit {p.returncode}, received {r4.get('received')} of {n}: {err[-300:]}")

        # 3. --duration with no traffic: ends on time, nothing received, balanced.
        t0 = time.time()
        rc, so, se = run(ns.exec_cmd([T, "run", "--app", "ipv4", "--fib", fib, "--device", "cpu", "--workers", "2",
                                      "--rx", "af_packet:a1", "--duration", "0.5"]))
        c.check(rc == 0 and "received 0, forwarded 0, dropped 0" in so, f"--duration 0.5: exit {rc}: {(so + se)[-400:]}")
        c.check(time.time() - t0 < 20, f"--duration 0.5 took {time.time() - t0:.1f} s")

        # 4. 10,000 route updates through `tandem ctl` while forwarding: nothing lost, every flow
        # complete and in order; after them, every flow leaves by the route the updates left.
        ctl_sock = os.path.join(d, "ctl.sock")
        js3 = os.path.join(d, "ctl.json")
        cap_b = Capture(ns, "b0", os.path.join(d, "b0-ctl.frames"))
        cap_c = Capture(ns, "c0", os.path.join(d, "c0-ctl.frames"))
        routed_frames = [f for f in frames if struct.unpack_from("!H", f, 12)[0] == 0x0800 and
                         1000 <= struct.unpack_from("!H", f, 34)[0] < 1012]
        p, head = start_tandem(ns, [T, "run", "--app", "ipv4", "--fib", fib, "--device", "cpu", "--workers", "2",
                                    "--rx", "af_packet:a1", "--tx", "af_packet:b1,c1", "--tx-dst-mac", NEXT_HOP_MAC,
                                    "--control", ctl_sock, "--packets", str(2 * len(routed_frames)),
                                    "--duration", "120", "--json", js3], ready="control:")
        updates = []
        for i in range(10000):
            f = i % 12
            # Flow f's /24 (10.<port>.f.0/24) flips between ports 2 and 3 (b1 and c1), or is deleted
            # (back to its /16); the last update of each flow leaves it on port 2.
            port = 1 + f % 3
            if i >= 10000 - 12:
                updates.append(f"add 10.{port}.{f}.0/24 2")
            elif i % 5 == 4:
                updates.append(f"del 10.{port}.{f}.0/24")
            else:
                updates.append(f"add 10.{port}.{f}.0/24 {2 + i % 2}")
        upd = os.path.join(d, "updates.txt")
        # Deleting a /24 that is not there is refused: start each from an add.
        open(upd, "w").write("\n".join(f"add 10.{1 + f % 3}.{f}.0/24 2" for f in range(12)) + "\n" + "\n".join(updates) + "\n")
        write_frames(os.path.join(d, "send3.frames"), routed_frames)
        sender = subprocess.Popen(ns.exec_cmd([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns.py"),
                                               "send", "a0", os.path.join(d, "send3.frames"), "300"]),
                                  stdout=subprocess.PIPE, text=True)
        rc, so, se = run([T, "ctl", "--socket", ctl_sock, "--file", upd])
        c.check(rc == 0 and "10012 applied, 0 refused" in so, f"ctl: exit {rc}: {(so + se)[-300:]}")
        # A second run does not take the socket of one that is listening on it.
        rc, so, se = run([T, "run", "--fib", fib, "--gen", "count=10", "--device", "cpu", "--control", ctl_sock])
        c.check(rc != 0 and "another run is listening" in se, f"second --control: exit {rc}: {se[-300:]}")
        sender.communicate(timeout=300)
        # Then the same flows again, after the last update.
        send(ns, "a0", routed_frames, os.path.join(d, "send4.frames"))
        out, err = p.communicate(timeout=180)
        time.sleep(0.2)
        got_b, _ = cap_b.stop()
        got_c, _ = cap_c.stop()
        c.check(p.returncode == 0, f"ctl run exit {p.returncode}: {err.strip()[-600:]}")
        r3 = json.load(open(js3)) if os.path.exists(js3) else {}
        c.check(r3.get("received") == 2 * len(routed_frames) and r3.get("forwarded") == 2 * len(routed_frames),
                f"with updates: received {r3.get('received')}, forwarded {r3.get('forwarded')}, sent {2 * len(routed_frames)}")
        c.check(r3.get("control", {}).get("version") == 10012, f"control: {r3.get('control')}")
        c.check(len(got_b) + len(got_c) == 2 * len(routed_frames), f"captured {len(got_b)} + {len(got_c)}")
        from scapy.all import UDP, Ether
        def flows_of(frs):
            out = {}
            for fr in frs:
                raw = bytes(Ether(fr)[UDP].payload)
                f, seq = struct.unpack("!HI", raw[len(MARK):len(MARK) + 6])
                out.setdefault(f, []).append(seq)
            return out
        fb, fc = flows_of(got_b), flows_of(got_c)
        for f, _ in flows:
            merged = sorted(fb.get(f, []) + fc.get(f, []))
            c.check(merged == sorted(list(range(per_flow)) * 2), f"flow {f}: {len(merged)} of {2 * per_flow} packets")
            # The second round, after the last update: all on port 2 (b1), in order.
            c.check(fb.get(f, [])[-per_flow:] == list(range(per_flow)), f"flow {f}: after the updates, not all on b1 in order")

        # 5. Errors, before anything runs.
        for cmd, needle in (([T, "run", "--fib", fib, "--rx", "af_packet:nosuch0"], "no such interface"),
                            ([T, "run", "--fib", fib, "--rx", "netmap:a1"], "not one this build has"),
                            ([T, "run", "--fib", fib, "--rx", "af_packet:a1,a1"], "named twice"),
                            ([T, "run", "--fib", fib, "--rx", "af_packet:a1", "--repeat", "2"], "--repeat"),
                            ([T, "run", "--fib", fib, "--rx", "af_packet:a1", "--tx", "af_packet:b1", "--out",
                              os.path.join(d, "x.pcap")], "--out with --tx"),
                            ([T, "run", "--fib", fib, "--gen", "count=10", "--duration", "1"], "for live ports"),
                            ([T, "run", "--fib", fib, "--gen", "count=10", "--tx-dst-mac", NEXT_HOP_MAC], "give --tx"),
                            ([T, "run", "--fib", fib, "--rx", "af_packet:a1", "--metrics", "9100"],
                             "HOST:PORT" if metrics else "no HTTP library"),
                            ([T, "run", "--fib", fib, "--rx", "af_packet:a1", "--control", fib], "not a socket"),
                            ([T, "run", "--fib", fib, "--rx", "af_packet:a1", "--control", os.path.join(d, "c.sock"),
                              "--device", "gpu", "--gpu-mode", "persistent"], "persistent kernel"),
                            ([T, "ctl", "--socket", os.path.join(d, "none.sock"), "version"], "is `tandem run --control"),
                            ([T, "run", "--fib", fib, "--rx", "af_packet:a1", "--tx", "af_packet:b1", "--tx-dst-mac",
                              "02:00:00:00:00"], "MAC address")):
            rc, so, se = run(ns.exec_cmd(cmd))
            c.check(rc not in (0, None) and needle in so + se, f"{' '.join(cmd[2:])}: exit {rc}: {(so + se)[-300:]}")
        eal = "--no-huge --no-pci -m 256 --no-shconf --no-telemetry --vdev net_af_packet0,iface=a1"
        dpdk_errors = (([T, "run", "--fib", fib, "--rx", "dpdk:net_nosuch0", "--dpdk", eal], "no such port; the EAL has 0 (net_af_packet0)"),
                       ([T, "run", "--fib", fib, "--rx", "dpdk:0", "--workers", "2", "--dpdk", eal], "qpairs=N"),
                       ([T, "run", "--fib", fib, "--rx", "dpdk:0", "--dpdk", "--no-such-eal-flag"], "the EAL did not start"),
                       ([T, "run", "--fib", fib, "--rx", "af_packet:a1", "--dpdk", eal], "give --rx or --tx dpdk:PORT"))
        for cmd, needle in dpdk_errors if "dpdk" in ran else ():
            rc, so, se = run(ns.exec_cmd(cmd + ["--duration", "5"]))  # ends even if the error is missed
            c.check(rc not in (0, None) and needle in se, f"{' '.join(cmd[2:])}: exit {rc}: {(so + se)[-300:]}")
            c.check("Usage" not in so, f"{' '.join(cmd[2:])}: the EAL's usage on standard output")
    c.done()


if __name__ == "__main__":
    main()
