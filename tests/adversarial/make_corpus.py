#!/usr/bin/env python3
"""Writes Tandem's adversarial corpus: small files that a hostile or careless user would hand to
each command (tables, rules, key lists, traces, URL lists, captures), each made to break one
thing. tests/e2e/test_adversarial.py runs every command over them and checks exit codes,
messages and counters. Deterministic: the same bytes every run (the committed corpus in
tests/adversarial/corpus/ is this script's output; the test checks that they agree).

Usage: make_corpus.py OUT_DIR
"""
import gzip
import io
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from frames import MACS, ipv4, ipv6, pcap, tcp, udp  # noqa: E402


def frames_evasion():
    """Frames aimed at a firewall rule `drop proto tcp dport 22` (RFC 1858, RFC 3128)."""
    f = []
    # 1. a plain SSH SYN: the rule drops it
    f.append(ipv4(tcp(40000, 22), 6))
    # 2. tiny first fragment (MF set): 8 bytes of TCP, no room for the whole header
    f.append(ipv4(tcp(40000, 22)[:8], 6, frag=0x2000))
    # 3. TCP data offset 4 (below 5): the ports are there, the header is malformed
    f.append(ipv4(tcp(40000, 22, doff=4)[:20], 6))
    # 4. TCP data offset 0
    f.append(ipv4(tcp(40000, 22, doff=0)[:20], 6))
    # 5. a fragment at offset 8 bytes (offset field 1): would overwrite the ports/flags on reassembly
    f.append(ipv4(b"\0" * 16, 6, frag=1))
    # 6. a later fragment (offset 185 * 8): no transport header; rules with ports cannot match it
    f.append(ipv4(b"A" * 64, 6, frag=185))
    # 7. an unrelated allowed TCP packet (HTTPS)
    f.append(ipv4(tcp(40000, 443), 6))
    # 8. a UDP header with a length below 8
    f.append(ipv4(udp(5000, 22, length=4), 17))
    return f


def frames_bad_options():
    f = []
    f.append(ipv4(udp(1000, 2000, b"x" * 8), 17, options=b"\x07\x00\x00\x00"))  # option length 0
    f.append(ipv4(udp(1000, 2000, b"x" * 8), 17, options=b"\x07\x01\x00\x00"))  # option length 1
    f.append(ipv4(udp(1000, 2000, b"x" * 8), 17, options=b"\x07\x09\x04\x00"))  # runs past the header
    f.append(ipv4(udp(1000, 2000, b"x" * 8), 17, options=b"\x01\x01\x01\x00"))  # NOPs and EOL: valid
    return f


def frames_rh0():
    rh0 = struct.pack("!BBBB", 17, 2, 0, 1) + b"\0" * 4 + b"\x20\x01\x0d\xb8" + b"\0" * 12  # type 0, segments left 1
    rh0_done = struct.pack("!BBBB", 17, 2, 0, 0) + b"\0" * 4 + b"\x20\x01\x0d\xb8" + b"\0" * 12  # segments left 0
    return [ipv6(rh0 + udp(1000, 2000, b"x" * 8), 43), ipv6(rh0_done + udp(1000, 2000, b"x" * 8), 43)]


def gz(data):
    b = io.BytesIO()
    with gzip.GzipFile(fileobj=b, mode="wb", mtime=0) as g:
        g.write(data)
    return b.getvalue()


def corpus():
    c = {}
    fib = "".join(f"{1 + i % 200}.{i // 200}.0.0/16 {i % 5}\n" for i in range(4000)).encode()
    c["fib_ok.txt"] = b"20.0.0.0/8 1\n10.0.0.0/8 2\n0.0.0.0/0 3\n"
    c["keys_ok.txt"] = b"20.1.1.1\n10.9.9.9\n"
    c["trace_ok.txt"] = b"1 2 3 443 6\n1 2 3 80 6\n1 2 3 80 17\n"
    c["fib_nul.txt"] = b"1.0.0.0/8 1\n2.0.0.0/8 2\x00 3.0.0.0/8 3\n"
    c["fib_long_line.txt"] = b"1.0.0.0/8 1\n" + b"2.0.0.0/8 " + b"1" * 5000 + b"\n"
    c["fib_flood_next_hop.txt"] = b"1.0.0.0/8 16777215\n"
    c["fib_next_hop_huge.txt"] = b"1.0.0.0/8 99999999999999999999999\n"
    c["fib_duplicates.txt"] = b"20.0.0.0/8 1\n20.0.0.0/8 1\n20.0.0.0/8 2\n"
    c["fib_truncated.txt.gz"] = gz(fib)[: len(gz(fib)) // 2]
    c["fib_not_text.bin"] = bytes(range(256)) * 4
    c["fib6_rh0.txt"] = b"2404:6800::/32 1\n"
    c["fib6_nul.txt"] = b"2001:db8::/32 1\x00\n"
    c["fw_nul.rules"] = b"drop proto tcp\x00 dport 22\naccept\n"
    c["fw_ssh.rules"] = b"drop proto tcp dport 22\ndefault accept\n"
    c["fw_unknown_proto.rules"] = b"drop proto tcpp dport 22\n"
    c["fw_skip_bad.rules"] = b"accept proto tcp dport 443\nbogus line\ndrop proto tcp\n"
    c["fw_port_huge.rules"] = b"drop proto tcp dport 70000\n"
    c["ids_nul.rules"] = b'alert tcp any any -> any 22 (content:"ssh\x00"; sid:1;)\n'
    c["ids_unknown_proto.rules"] = b'alert tcpp any any -> any 22 (content:"ssh"; sid:1;)\n'
    c["ids_offset_huge.rules"] = b'alert tcp any any -> any any (content:"GET"; offset:2147483648; sid:2;)\n'
    c["ids_duplicate_sid.rules"] = (b'alert tcp any any -> any any (content:"GET"; sid:3;)\n'
                                    b'alert tcp any any -> any any (content:"POST"; sid:3;)\n')
    c["ids_long_line.rules"] = b'alert tcp any any -> any any (content:"' + b"a" * 70000 + b'"; sid:4;)\n'
    c["keys_nul.txt"] = b"8.8.8.8\n10.0.\x000.1\n"
    c["keys_long.txt"] = b"8.8.8.8\n" + b"9" * 10000 + b"\n"
    c["keys_bad.txt"] = b"8.8.8.8\n8.8.8.256\n"
    c["trace_nul.txt"] = b"1 2 3 4 6\n1 2 3\x00 4 6\n"
    c["trace_out_of_range.txt"] = b"1 2 3 70000 6\n"
    c["urls_nul.txt"] = b"http://example.com/a\nhttp://exa\x00mple.com/b\n"
    c["evasion.pcap"] = pcap(frames_evasion())
    c["bad_ip_options.pcap"] = pcap(frames_bad_options())
    c["ipv6_rh0.pcap"] = pcap(frames_rh0())
    c["oversize_frame.pcap"] = pcap([ipv4(udp(1000, 2000, b"x" * 100), 17), MACS + b"\x08\x00" + b"\0" * 70000])
    whole = pcap([ipv4(udp(1000, 2000, b"x" * 100), 17)] * 3)
    c["truncated.pcap"] = whole[:-40]
    c["not_a_pcap.pcap"] = b"this is not a capture\n" * 10
    return c


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(corpus().items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
