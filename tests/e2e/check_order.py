#!/usr/bin/env python3
"""An independent check that no flow of a capture was reordered or duplicated, from the sequence
trailers of traffic generated with seq=1 (io/traffic_gen.h): the last 8 bytes of a frame, after its
IP datagram, are the big-endian u32 flow index and the big-endian u32 sequence number of the packet
in its flow (0, 1, 2, ... as generated).

    python3 tests/e2e/check_order.py CAPTURE [--all-trailers]

prints

    flows N, packets M, reordered R, duplicated D, gaps G, no trailer X

and exits 1 when R or D > 0 (or, with --all-trailers, when X > 0 or no frame has a trailer), 0
otherwise, 2 when the capture cannot be read. Gaps are allowed: an app may drop packets.

  packets     every frame of the capture, with a trailer or not
  no trailer  frames without 8 bytes after the IP datagram (not Ethernet + IPv4/IPv6, up to two
              VLAN tags; truncated; or a datagram that fills the frame): their last bytes are not
              a trailer, so they are not checked
  flows       distinct flow indices among the trailers
  reordered   packets that came after a later packet of their flow (sequence number below the
              highest seen so far, and not seen before)
  duplicated  packets whose (flow, sequence number) was seen before
  gaps        sequence numbers never seen below the highest seen of their flow: packets lost
              (dropped) inside a flow, counted once the whole capture is read; losses after a
              flow's last packet seen cannot be told from a flow that ended

Sequence numbers are compared as plain integers: a flow of more than 2^32 packets wraps and is
not supported. Reads classic pcap (either byte order, us or ns timestamps) and pcapng (enhanced
and simple packet blocks) with Ethernet frames, with nothing but the standard library; as a
module, check_order(path) returns the counts (OrderCounts) and check_frames(frames) does the same
for an iterable of frames (bytes).
"""
import argparse
import bisect
import dataclasses
import struct
import sys

TRAILER_LEN = 8
ETH_IPV4, ETH_IPV6 = 0x0800, 0x86DD
ETH_VLAN = (0x8100, 0x88A8)
LINKTYPE_ETHERNET = 1


class CaptureError(Exception):
    pass


@dataclasses.dataclass
class OrderCounts:
    flows: int = 0
    packets: int = 0
    reordered: int = 0
    duplicated: int = 0
    gaps: int = 0
    no_trailer: int = 0

    def ok(self):
        """No flow reordered or duplicated (gaps allowed)."""
        return self.reordered == 0 and self.duplicated == 0

    def line(self):
        return (f"flows {self.flows}, packets {self.packets}, reordered {self.reordered}, "
                f"duplicated {self.duplicated}, gaps {self.gaps}, no trailer {self.no_trailer}")


def trailer(frame):
    """(flow, seq) of a frame's trailer, or None when the frame has fewer than 8 bytes after its IP
    datagram (or is not Ethernet + IPv4/IPv6)."""
    off = 12
    for _ in range(2):
        if len(frame) >= off + 2 and struct.unpack_from(">H", frame, off)[0] in ETH_VLAN:
            off += 4
    if len(frame) < off + 2:
        return None
    etype = struct.unpack_from(">H", frame, off)[0]
    l3 = off + 2
    if etype == ETH_IPV4 and len(frame) >= l3 + 20 and frame[l3] >> 4 == 4:
        l3_len = struct.unpack_from(">H", frame, l3 + 2)[0]
    elif etype == ETH_IPV6 and len(frame) >= l3 + 40 and frame[l3] >> 4 == 6:
        l3_len = 40 + struct.unpack_from(">H", frame, l3 + 4)[0]
    else:
        return None
    if len(frame) < l3 + l3_len + TRAILER_LEN:
        return None
    return struct.unpack_from(">II", frame, len(frame) - TRAILER_LEN)


class _Missing:
    """A flow's sequence numbers not seen below its highest: sorted, disjoint [lo, hi) ranges, so
    that memory grows with the number of gaps, not their length."""

    def __init__(self):
        self.lo = []
        self.hi = []

    def add(self, lo, hi):  # above every range held
        if hi > lo:
            self.lo.append(lo)
            self.hi.append(hi)

    def take(self, seq):
        """Removes seq if it is missing; whether it was."""
        i = bisect.bisect_right(self.lo, seq) - 1
        if i < 0 or seq >= self.hi[i]:
            return False
        lo, hi = self.lo[i], self.hi[i]
        del self.lo[i], self.hi[i]
        for a, b in ((seq + 1, hi), (lo, seq)):  # the right part, then the left in front of it
            if b > a:
                self.lo.insert(i, a)
                self.hi.insert(i, b)
        return True

    def count(self):
        return sum(h - l for l, h in zip(self.lo, self.hi))


def check_frames(frames):
    """The counts of an iterable of frames (bytes), in capture order."""
    c = OrderCounts()
    highest = {}  # flow -> the highest sequence number seen
    missing = {}  # flow -> _Missing
    for frame in frames:
        c.packets += 1
        t = trailer(frame)
        if t is None:
            c.no_trailer += 1
            continue
        flow, seq = t
        top = highest.get(flow)
        if top is None:
            highest[flow] = seq
            if seq:
                missing.setdefault(flow, _Missing()).add(0, seq)
        elif seq > top:
            if seq > top + 1:
                missing.setdefault(flow, _Missing()).add(top + 1, seq)
            highest[flow] = seq
        elif flow in missing and missing[flow].take(seq):
            c.reordered += 1
        else:
            c.duplicated += 1
    c.flows = len(highest)
    c.gaps = sum(m.count() for m in missing.values())
    return c


def _pcap_frames(f, head):
    magic = struct.unpack("<I", head[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        endian = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        endian = ">"
    else:
        raise CaptureError("not a pcap or pcapng file")
    rest = f.read(20)
    if len(rest) < 20:
        raise CaptureError("truncated pcap header")
    linktype = struct.unpack(endian + "I", rest[16:20])[0] & 0x0FFFFFFF
    if linktype != LINKTYPE_ETHERNET:
        raise CaptureError(f"link type {linktype}, not Ethernet")
    while True:
        rec = f.read(16)
        if not rec:
            return
        if len(rec) < 16:
            raise CaptureError("truncated record header")
        caplen = struct.unpack(endian + "I", rec[8:12])[0]
        data = f.read(caplen)
        if len(data) < caplen:
            raise CaptureError("truncated record")
        yield data


def _pcapng_frames(f, head):
    linktypes = []
    endian = "<"
    block = head
    while True:
        if len(block) < 8:
            if block:
                raise CaptureError("truncated pcapng block")
            return
        btype = struct.unpack(endian + "I", block[:4])[0]
        if btype == 0x0A0D0D0A:  # section header: its byte-order magic decides the endianness
            bom = block[8:12] if len(block) >= 12 else f.read(4)
            block = block[:8] + bom
            if bom == b"\x4d\x3c\x2b\x1a":
                endian = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                endian = ">"
            else:
                raise CaptureError("bad pcapng byte-order magic")
            linktypes = []
        blen = struct.unpack(endian + "I", block[4:8])[0]
        if blen < 12 or blen % 4:
            raise CaptureError(f"bad pcapng block length {blen}")
        body = block[8:] + f.read(blen - len(block))
        if len(body) < blen - 8:
            raise CaptureError("truncated pcapng block")
        body = body[:-4]  # the trailing block length
        if btype == 0x00000001:  # interface description
            linktypes.append(struct.unpack(endian + "H", body[:2])[0])
        elif btype == 0x00000006:  # enhanced packet
            iface, _, _, caplen = struct.unpack(endian + "IIII", body[:16])
            if iface >= len(linktypes) or linktypes[iface] != LINKTYPE_ETHERNET:
                raise CaptureError("a packet not on an Ethernet interface")
            yield body[20:20 + caplen]
        elif btype == 0x00000003:  # simple packet: the first interface, whole snapshot
            if not linktypes or linktypes[0] != LINKTYPE_ETHERNET:
                raise CaptureError("a packet not on an Ethernet interface")
            wire = struct.unpack(endian + "I", body[:4])[0]
            yield body[4:4 + wire]
        block = f.read(8)


def frames(path):
    """The frames of a pcap or pcapng capture of Ethernet frames, in order."""
    with open(path, "rb") as f:
        head = f.read(4)
        if len(head) < 4:
            raise CaptureError("empty or truncated file")
        if head == b"\x0a\x0d\x0d\x0a":
            yield from _pcapng_frames(f, head + f.read(4))
        else:
            yield from _pcap_frames(f, head)


def check_order(path):
    """The counts of the capture at `path` (OrderCounts). Raises CaptureError for a file that is not
    a whole pcap or pcapng capture of Ethernet frames, OSError when it cannot be read."""
    return check_frames(frames(path))


def main(argv=None):
    p = argparse.ArgumentParser(description="check a capture's sequence trailers (seq=1): no flow reordered or duplicated")
    p.add_argument("capture")
    p.add_argument("--all-trailers", action="store_true", help="also fail when a frame has no trailer, or none has one")
    a = p.parse_args(argv)
    try:
        c = check_order(a.capture)
    except (CaptureError, OSError) as e:
        print(f"check_order: {a.capture}: {e}", file=sys.stderr)
        return 2
    print(c.line())
    if not c.ok():
        return 1
    if a.all_trailers and (c.no_trailer or c.packets == 0):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
