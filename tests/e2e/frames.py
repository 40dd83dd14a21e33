"""Ethernet frames and classic pcap files built byte by byte (no scapy), for the end-to-end tests
and the adversarial corpus (tests/adversarial/make_corpus.py): valid headers by default, each
field open to being made wrong."""
import struct


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


MACS = b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02"


def ipv4(payload, proto, src=(10, 0, 0, 1), dst=(20, 1, 2, 3), frag=0, options=b"", ttl=64):
    ihl = 5 + len(options) // 4
    total = ihl * 4 + len(payload)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total, 1, frag, ttl, proto, 0, bytes(src), bytes(dst)) + options
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return MACS + b"\x08\x00" + h + payload


def tcp(sport, dport, doff=5, data=b""):
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, doff << 4, 0x02, 1024, 0, 0) + b"\0" * max(0, doff * 4 - 20) + data


def udp(sport, dport, data=b"", length=None):
    return struct.pack("!HHHH", sport, dport, 8 + len(data) if length is None else length, 0) + data


def ipv6(payload, nh, src=b"\x20\x01\x0d\xb8" + b"\0" * 11 + b"\x01", dst=b"\x24\x04\x68\x00" + b"\0" * 11 + b"\x02"):
    h = struct.pack("!IHBB", 0x60000000, len(payload), nh, 64) + src + dst
    return MACS + b"\x86\xdd" + h + payload


def pcap(frames, snaplen=262144):
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 1)]
    for i, f in enumerate(frames):
        out.append(struct.pack("<IIII", 1, i, len(f), len(f)) + f)
    return b"".join(out)


def udp_frame(n, dst=(20, 1, 2, 3)):
    """A valid Ethernet/IPv4/UDP frame of n bytes; past the 65,535 bytes IPv4 can describe, the rest
    is Ethernet trailer."""
    ip_len = min(n - 14, 65535)
    frame = ipv4(udp(1000, 2000, bytes(ip_len - 28)), 17, dst=dst)
    return frame + bytes(n - len(frame))
