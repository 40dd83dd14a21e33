"""A private network namespace with veth pairs, for tests that run Tandem on live ports against the
real Linux network stack. Everything the tests send stays inside the namespace they made; the
namespace (and with it every interface in it) is deleted on any exit, a signal included.

Also a sender and a capture that run inside the namespace (`python3 netns.py send|capture ...`):
plain AF_PACKET sockets, so that what is sent and seen is what the kernel's own drivers pass."""
import atexit
import shutil
import os
import signal
import socket
import struct
import subprocess
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6


def can_make_namespaces():
    """(True, "") where this process may create network namespaces and veth pairs; else (False, why)."""
    if os.geteuid() != 0:
        return False, "not root: network namespaces need CAP_SYS_ADMIN"
    if shutil.which("ip") is None:
        return False, "the ip command (iproute2) is missing"
    name = f"tndprobe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode != 0:
        return False, "ip netns add failed: " + r.stderr.strip()
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return True, ""


class Netns:
    """`with Netns(pairs=[("a0", "a1"), ("b0", "b1")]) as ns:` makes the namespace, the pairs (up,
    IPv6 off, so the kernel sends nothing of its own on them) and deletes it all on exit."""

    def __init__(self, pairs, mtu=1500):
        self.name = f"tnd{os.getpid()}"
        self.pairs = pairs
        self.mtu = mtu
        self._old = {}

    def __enter__(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        self._sh(["ip", "netns", "add", self.name], host=True)
        atexit.register(self.close)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old[sig] = signal.signal(sig, self._on_signal)
        for conf in ("all", "default"):
            self.sh("sh", "-c", f"echo 1 > /proc/sys/net/ipv6/conf/{conf}/disable_ipv6")
        self.sh("ip", "link", "set", "lo", "up")
        for a, b in self.pairs:
            self.sh("ip", "link", "add", a, "mtu", str(self.mtu), "type", "veth", "peer", "name", b, "mtu", str(self.mtu))
            for i in (a, b):
                self.sh("ip", "link", "set", i, "up")
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _on_signal(self, sig, frame):
        self.close()
        sys.exit(128 + sig)

    def close(self):
        if self.name:
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
            self.name = None
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}

    def _sh(self, cmd, host=False):
        r = subprocess.run(cmd if host else ["ip", "netns", "exec", self.name] + cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
        return r.stdout

    def sh(self, *cmd):
        return self._sh(list(cmd))

    def exec_cmd(self, cmd):
        """The command line that runs `cmd` inside the namespace."""
        return ["ip", "netns", "exec", self.name] + list(cmd)

    def mac(self, iface):
        return self.sh("cat", f"/sys/class/net/{iface}/address").strip()

    def wait_up(self, iface, timeout=5):
        end = time.time() + timeout
        while time.time() < end:
            if "LOWER_UP" in self.sh("ip", "link", "show", iface):
                return
            time.sleep(0.02)
        raise RuntimeError(f"{iface}: no carrier after {timeout} s")


def write_frames(path, frames):
    """Frames as length-prefixed records (what `send` reads)."""
    with open(path, "wb") as f:
        for fr in frames:
            f.write(struct.pack("<I", len(fr)) + fr)


def read_frames(path):
    out = []
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i + 4 <= len(data):
        (n,) = struct.unpack_from("<I", data, i)
        out.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return out


def _send(iface, path, gap_us):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((iface, 0))
    n = 0
    for fr in read_frames(path):
        while True:
            try:
                s.send(fr)
                break
            except OSError as e:  # ENOBUFS: the device queue is full for a moment
                if e.errno != 105:
                    raise
                time.sleep(0.001)
        n += 1
        if gap_us:
            time.sleep(gap_us / 1e6)
    print(n, flush=True)


def _capture(iface, path):
    """Records every frame arriving on `iface` until SIGTERM, then writes them and the socket's drop
    count (the last line of stdout)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE (root): hold a burst
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    s.bind((iface, ETH_P_ALL))
    s.settimeout(0.05)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)
    frames = []
    while True:
        try:
            data, addr = s.recvfrom(65536)
            if addr[2] != socket.PACKET_OUTGOING:
                frames.append(data)
            continue
        except socket.timeout:
            pass
        except InterruptedError:
            pass
        if stop:
            break
    # Drain what is queued still.
    s.setblocking(False)
    try:
        while True:
            data, addr = s.recvfrom(65536)
            if addr[2] != socket.PACKET_OUTGOING:
                frames.append(data)
    except (BlockingIOError, OSError):
        pass
    st = s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
    packets, drops = struct.unpack("<II", st)
    write_frames(path, frames)
    print(f"drops {drops}", flush=True)


class Capture:
    """A capture on an interface inside the namespace, ready when constructed; stop() returns the
    frames seen and the kernel's drop count for the capture socket."""

    def __init__(self, ns, iface, path):
        self.path = path
        self.p = subprocess.Popen(ns.exec_cmd([sys.executable, os.path.abspath(__file__), "capture", iface, path]),
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"capture on {iface} did not start: {line!r}")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        out, _ = self.p.communicate(timeout=60)
        drops = int(out.strip().split()[-1])
        return read_frames(self.path), drops


def send(ns, iface, frames, path, gap_us=0):
    """Sends the frames out of `iface` (inside the namespace), in order; returns how many were sent."""
    write_frames(path, frames)
    r = subprocess.run(ns.exec_cmd([sys.executable, os.path.abspath(__file__), "send", iface, path, str(gap_us)]),
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"send on {iface}: {r.stderr.strip()}")
    return int(r.stdout.strip())


if __name__ == "__main__":
    if sys.argv[1] == "send":
        _send(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "capture":
        _capture(sys.argv[2], sys.argv[3])
