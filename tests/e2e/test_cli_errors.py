"""Broken inputs and wrong flags end with a clear message naming the problem and a non-zero exit;
`tandem lookup` answers in input order. Needs no GPU and no scapy."""
import os
import shutil

from e2e_util import Checker, args, run, tmpdir
from frames import pcap, udp_frame


def jumbo_pcap(path, sizes):
    """A classic pcap of valid Ethernet/IPv4/UDP frames of the given sizes, to 20.1.2.3."""
    open(path, "wb").write(pcap([udp_frame(n) for n in sizes], snaplen=65535))


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    cap = os.path.join(a.source_dir, "data/pcap/example.pcap")

    def fib_file(name, text):
        p = os.path.join(d, name)
        open(p, "w").write(text)
        return p

    good = fib_file("good.txt", "10.0.0.0/8 1\n10.1.0.0/16 2\n0.0.0.0/0 9\n192.0.2.0/24\n")

    def expect_error(cmd, *needles, what):
        rc, so, se = run(cmd)
        msg = so + se
        c.check(rc != 0, f"{what}: exit code 0")
        for n in needles:
            c.check(n in msg, f"{what}: message lacks {n!r}: {msg.strip()[:300]}")
        c.check("Segmentation" not in msg and rc > 0, f"{what}: crashed (rc {rc})")

    bad33 = fib_file("bad33.txt", "10.0.0.0/8 1\n10.0.0.0/33 1\n")
    expect_error([T, "run", "--fib", bad33, "--pcap", cap, "--device", "cpu"], "bad33.txt:2", "over 32",
                 what="FIB /33")
    garbage = fib_file("garbage.txt", "# comment\n10.0.0.0/8\nhello world\n")
    expect_error([T, "run", "--fib", garbage, "--pcap", cap], "garbage.txt:3", what="FIB garbage line")
    expect_error([T, "lookup", "--fib", garbage, "--keys", "-"], "garbage.txt:3", what="lookup, FIB garbage")

    # A capture cut in the middle of a record.
    trunc = os.path.join(d, "truncated.pcap")
    data = open(cap, "rb").read()
    open(trunc, "wb").write(data[: len(data) // 2 + 7])
    expect_error([T, "run", "--fib", good, "--pcap", trunc, "--device", "cpu"], "truncated.pcap", "packet",
                 what="truncated pcap")
    notpcap = fib_file("notpcap.pcap", "this is not a capture\n")
    expect_error([T, "run", "--fib", good, "--pcap", notpcap], "notpcap.pcap", what="non-pcap file")

    expect_error([T, "run", "--fib", good, "--pcap", cap, "--frobnicate"], "--frobnicate", what="unknown flag")
    expect_error([T, "run", "--fib", good, "--pcap", cap, "--device", "tpu"], "--device", what="bad device")
    expect_error([T, "run", "--fib", good, "--pcap", cap, "--gen", "count=10"], "excludes", what="pcap and gen")
    expect_error([T, "run", "--fib", good], "--pcap", what="no input")
    expect_error([T, "run", "--fib", good, "--gen", "count=10,colour=red"], "colour", what="bad gen key")
    expect_error([T, "run", "--fib", os.path.join(d, "missing.txt"), "--pcap", cap], "missing.txt",
                 what="missing FIB")
    expect_error([T, "bench", "ipv4"], "--fib", what="bench without table")
    expect_error([T], "subcommand is required", what="no subcommand")
    out_dir_missing = os.path.join(d, "no", "such", "dir", "out.pcap")
    expect_error([T, "run", "--fib", good, "--pcap", cap, "--out", out_dir_missing, "--device", "cpu"],
                 "out.pcap", what="unwritable output")

    expect_error([T, "run", "--fib", good, "--pcap", cap, "--workers", "2", "--out", os.path.join(d, "o.pcap"),
                  "--device", "cpu"], "--workers 1", what="output capture with several workers")
    expect_error([T, "run", "--fib", good, "--pcap", cap, "--workers", "0"], "--workers", what="zero workers")
    expect_error([T, "run", "--fib", good, "--pcap", cap, "--burst", "300"], "--burst", what="burst over 256")
    expect_error([T, "run", "--fib", good, "--pcap", cap, "--burst", "32", "--batch", "16"], "--batch",
                 what="burst larger than a GPU batch")
    expect_error([T, "bench", "gpu-load", "--fib", good, "--fractions", "0.5,2"], "--fractions",
                 what="load fraction over 1")
    expect_error([T, "bench", "gpu-load", "--fib", good, "--configs", "cpu,warp"], "--configs",
                 what="unknown load config")

    keys = fib_file("keys.txt", "10.2.3.4\n10.1.9.9\n  8.8.8.8\n# comment\n\n192.0.2.77\n")
    rc, so, se = run([T, "lookup", "--app", "ipv4", "--fib", good, "--keys", keys, "--device", "cpu"])
    c.check(rc == 0, f"lookup: exit {rc}: {se}")
    lines = so.strip().split("\n")
    c.check(lines[:3] == ["10.2.3.4 1", "10.1.9.9 2", "8.8.8.8 9"], f"lookup output: {lines}")
    c.check(len(lines) == 4 and lines[3].startswith("192.0.2.77 "), f"lookup derived next hop: {lines}")
    # --table chooses the algorithm, as for `tandem run`: the same answers from Poptrie.
    rc, so2, se = run([T, "lookup", "--app", "ipv4", "--table", "poptrie", "--fib", good, "--keys", keys])
    c.check(rc == 0 and so2 == so, f"lookup --table poptrie: exit {rc}, {so2!r} vs {so!r}: {se}")
    # Poptrie has no GPU path: --device auto takes the CPU, with or without a GPU.
    rc, so3, se = run([T, "lookup", "--app", "ipv4", "--table", "poptrie", "--device", "auto", "--fib", good, "--keys", keys])
    c.check(rc == 0 and so3 == so, f"lookup --table poptrie --device auto: exit {rc}: {se}")
    expect_error([T, "lookup", "--app", "ipv4", "--table", "trie", "--fib", good, "--keys", keys],
                 "unknown IPv4 table 'trie'", what="lookup, unknown table")
    expect_error([T, "lookup", "--app", "l2", "--table", "poptrie", "--fib", good, "--keys", keys],
                 "--table is for --app ipv4", what="lookup --table for l2")
    badkeys = fib_file("badkeys.txt", "10.2.3.4\n10.2.3.400\n")
    expect_error([T, "lookup", "--fib", good, "--keys", badkeys], "badkeys.txt:2", what="bad key line")

    # tandem gen: write a capture, forward it, pcapng output too.
    genout = os.path.join(d, "gen.pcapng")
    genfib = fib_file("genfib.txt", "10.0.0.0/8 1\n20.0.0.0/16 2\n")  # no /0: it would cover martians
    rc, so, se = run([T, "gen", "--spec", "count=5000,dst=fib,flows=50,zipf=1.1,size=imix", "--fib", genfib,
                      "--out", genout])
    c.check(rc == 0 and "5000 packets" in so, f"gen: exit {rc}: {so} {se}")
    fwd = os.path.join(d, "fwd.pcapng")
    rc, so, se = run([T, "run", "--fib", good, "--pcap", genout, "--device", "cpu", "--verify", "--out", fwd])
    c.check(rc == 0 and "received 5000, forwarded 5000" in so, f"run on generated pcapng: {so} {se}")
    c.check("output: " + fwd + ": 5000 packets" in so, f"pcapng output: {so}")
    expect_error([T, "gen", "--spec", "count=10,dst=fib", "--out", genout], "--fib", what="gen dst=fib without a FIB")
    expect_error([T, "gen", "--spec", "count=0", "--out", genout], "count", what="gen count=0")
    expect_error([T, "gen", "--spec", "size=63", "--out", genout], "size", what="gen size=63")

    # Jumbo and GRO-sized frames are forwarded whole, not cut and dropped as truncated.
    jumbo = os.path.join(d, "jumbo.pcap")
    jumbo_pcap(jumbo, [60, 1514, 1946, 9014, 65000])
    rc, so, se = run([T, "run", "--fib", good, "--pcap", jumbo, "--device", "cpu", "--out", os.path.join(d, "j.pcap")])
    c.check(rc == 0 and "received 5, forwarded 5" in so, f"jumbo frames: {so} {se}")

    nodefault = fib_file("nodefault.txt", "10.0.0.0/8 1\n")
    rc, so, se = run([T, "lookup", "--fib", nodefault, "--keys", "-"], input="11.0.0.1\n10.0.0.1\n")
    c.check(so == "11.0.0.1 -\n10.0.0.1 1\n", f"lookup no-route marker: {so!r}")

    rc, so, se = run([T, "run", "--fib", good, "--pcap", cap, "--device", "auto"])
    c.check(rc == 0, f"--device auto: exit {rc}: {se}")
    if "no usable GPU" in se:
        expect_error([T, "run", "--fib", good, "--pcap", cap, "--device", "gpu"], "no usable GPU",
                     what="--device gpu without a GPU")
    shutil.rmtree(d, ignore_errors=True)
    c.done()


main()
