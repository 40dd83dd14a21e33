"""Every command over Tandem's adversarial corpus (tests/adversarial/make_corpus.py writes it; the
committed copy in tests/adversarial/corpus/ must be what the script writes): each hostile input
ends with the exit code and message it calls for (an error naming the file and line, or a warning,
or a counted drop), never a crash, a hang or a silent acceptance."""
import filecmp
import json
import os
import subprocess
import sys

from e2e_util import Checker, args, run, tmpdir

ERR = 1  # tandem's exit code for a user-facing error


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    T = a.tandem
    src = a.source_dir
    committed = os.path.join(src, "tests/adversarial/corpus")
    fresh = os.path.join(d, "corpus")
    rc = subprocess.run([sys.executable, os.path.join(src, "tests/adversarial/make_corpus.py"), fresh]).returncode
    c.check(rc == 0, "make_corpus.py runs")
    names = sorted(os.listdir(fresh))
    same = filecmp.cmpfiles(committed, fresh, names, shallow=False)[0] if os.path.isdir(committed) else []
    c.check(sorted(same) == names and sorted(os.listdir(committed)) == names,
            f"the committed corpus is the script's output (differ or missing: {sorted(set(names) ^ set(same))})")
    C = lambda name: os.path.join(committed, name)  # noqa: E731
    fib = C("fib_ok.txt")
    keys = C("keys_ok.txt")
    trace = C("trace_ok.txt")
    cap = os.path.join(src, "data/pcap/example.pcap")
    ids_ok = C("ids_duplicate_sid.rules")

    def case(what, argv, want_rc, err=None, out=None, stdin=None, timeout=120):
        try:
            r = subprocess.run([T, *argv], capture_output=True, text=True, errors="replace", timeout=timeout,
                               stdin=stdin if stdin is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            c.check(False, f"{what}: hung (over {timeout} s)")
            return None
        crashed = r.returncode < 0 or "Sanitizer" in r.stderr or "terminate called" in r.stderr
        c.check(not crashed, f"{what}: crashed: rc {r.returncode} {r.stderr[-300:]!r}")
        c.check(r.returncode == want_rc, f"{what}: rc {r.returncode}, want {want_rc}: {r.stderr[-300:]!r}")
        for part in [err] if isinstance(err, str) else err or []:
            c.check(part in r.stderr, f"{what}: stderr lacks {part!r}: {r.stderr[-300:]!r}")
        for part in [out] if isinstance(out, str) else out or []:
            c.check(part in r.stdout, f"{what}: stdout lacks {part!r}: {r.stdout[-300:]!r}")
        return r

    # Tables: every reader refuses NUL bytes, over-long lines, endless and truncated input, and
    # next hops out of range, naming the file and line; duplicates are warned about.
    for cmd in (["lookup", "--keys", keys], ["run", "--gen", "count=100", "--device", "cpu"], ["gen", "--spec", "count=10,dst=fib", "--out", os.path.join(d, "g.pcap")]):
        case(f"{cmd[0]} --fib fib_nul.txt", [cmd[0], "--fib", C("fib_nul.txt"), *cmd[1:]], ERR, "fib_nul.txt:2: NUL byte at column 12")
    case("lookup --fib fib_long_line.txt", ["lookup", "--fib", C("fib_long_line.txt"), "--keys", keys], ERR,
         "fib_long_line.txt:2: line too long (over 4095 bytes)")
    case("lookup --fib fib_flood_next_hop.txt", ["lookup", "--fib", C("fib_flood_next_hop.txt"), "--keys", keys], ERR,
         ["fib_flood_next_hop.txt:1:", "0..16777214"])
    case("lookup --fib fib_next_hop_huge.txt", ["lookup", "--fib", C("fib_next_hop_huge.txt"), "--keys", keys], ERR,
         "fib_next_hop_huge.txt:1: next hop must be an integer")
    case("lookup --fib fib_duplicates.txt", ["lookup", "--fib", C("fib_duplicates.txt"), "--keys", keys], 0,
         "warning: " + C("fib_duplicates.txt") + ": 2 duplicate routes (1 with another value; the last line wins), the first at",
         "20.1.1.1 2")
    case("lookup --fib fib_truncated.txt.gz", ["lookup", "--fib", C("fib_truncated.txt.gz"), "--keys", keys], ERR,
         "truncated input")
    case("lookup --fib fib_not_text.bin", ["lookup", "--fib", C("fib_not_text.bin"), "--keys", keys], ERR, "NUL byte")
    case("lookup --app ipv6 --fib fib6_nul.txt", ["lookup", "--app", "ipv6", "--fib", C("fib6_nul.txt"), "--keys", keys], ERR,
         "fib6_nul.txt:1: NUL byte")
    case("lookup --fib /dev/zero", ["lookup", "--fib", "/dev/zero", "--keys", keys], ERR, "/dev/zero:1: NUL byte", timeout=60)
    # Key files and standard input.
    case("lookup --keys keys_nul.txt", ["lookup", "--fib", fib, "--keys", C("keys_nul.txt")], ERR, "keys_nul.txt:2: NUL byte")
    case("lookup --keys keys_long.txt", ["lookup", "--fib", fib, "--keys", C("keys_long.txt")], ERR,
         "keys_long.txt:2: line too long")
    case("lookup --keys keys_bad.txt", ["lookup", "--fib", fib, "--keys", C("keys_bad.txt")], ERR,
         "keys_bad.txt:2: not an IPv4 address: `8.8.8.256`")
    case("lookup --keys /dev/zero", ["lookup", "--fib", fib, "--keys", "/dev/zero"], ERR, "NUL byte", timeout=60)
    with open(C("keys_nul.txt"), "rb") as f:
        case("lookup --keys - (NUL on stdin)", ["lookup", "--fib", fib, "--keys", "-"], ERR, "<stdin>:2: NUL byte", stdin=f)
    # Firewall rules and traces.
    case("classify --rules fw_nul.rules", ["classify", "--rules", C("fw_nul.rules"), "--keys", trace], ERR, "fw_nul.rules:1: NUL byte")
    case("classify --rules fw_unknown_proto.rules", ["classify", "--rules", C("fw_unknown_proto.rules"), "--keys", trace], ERR,
         "fw_unknown_proto.rules:1:")
    case("classify --rules fw_port_huge.rules", ["classify", "--rules", C("fw_port_huge.rules"), "--keys", trace], ERR,
         "fw_port_huge.rules:1:")
    case("classify --skip-bad keeps rule numbers", ["classify", "--rules", C("fw_skip_bad.rules"), "--keys", trace, "--skip-bad"],
         0, "fw_skip_bad.rules:2:", "1\n3\n0\n")
    case("classify --keys trace_nul.txt", ["classify", "--rules", C("fw_ssh.rules"), "--keys", C("trace_nul.txt")], ERR,
         "trace_nul.txt:2: NUL byte")
    case("classify --keys trace_out_of_range.txt", ["classify", "--rules", C("fw_ssh.rules"), "--keys", C("trace_out_of_range.txt")],
         ERR, "trace_out_of_range.txt:1: column 4 is not an integer 0..65535")
    case("classify --rules /dev/zero", ["classify", "--rules", "/dev/zero", "--keys", trace], ERR, "NUL byte", timeout=60)
    case("run --app fw-router --rules fw_nul.rules", ["run", "--app", "fw-router", "--fib", fib, "--rules", C("fw_nul.rules"),
                                                      "--gen", "count=10", "--device", "cpu"], ERR, "fw_nul.rules:1: NUL byte")
    # IDS rules.
    case("match --rules ids_nul.rules", ["match", "--rules", C("ids_nul.rules"), "--pcap", cap, "--device", "cpu"], ERR,
         "ids_nul.rules:1: NUL byte")
    case("match --rules ids_unknown_proto.rules", ["match", "--rules", C("ids_unknown_proto.rules"), "--pcap", cap, "--device", "cpu"],
         ERR, "ids_unknown_proto.rules:1: unknown protocol `tcpp`")
    case("match --rules ids_offset_huge.rules", ["match", "--rules", C("ids_offset_huge.rules"), "--pcap", cap, "--device", "cpu"],
         ERR, ["ids_offset_huge.rules:1:", "offset:2147483648` is out of range"])
    case("match --rules ids_duplicate_sid.rules", ["match", "--rules", ids_ok, "--pcap", cap, "--device", "cpu"], 0,
         "ids_duplicate_sid.rules:2: sid 3 already at")
    case("match --rules ids_long_line.rules", ["match", "--rules", C("ids_long_line.rules"), "--pcap", cap, "--device", "cpu"], ERR,
         "ids_long_line.rules:1: line too long")
    case("match --rules ids_long_line.rules --skip-bad", ["match", "--rules", C("ids_long_line.rules"), "--pcap", cap,
                                                          "--device", "cpu", "--skip-bad"], 0, "skipped: ")
    case("match --rules /dev/zero", ["match", "--rules", "/dev/zero", "--pcap", cap, "--device", "cpu"], ERR, "NUL byte", timeout=60)
    # URL lists (NDN names).
    case("run --app ndn --urls urls_nul.txt", ["run", "--app", "ndn", "--urls", C("urls_nul.txt"), "--gen", "count=10",
                                               "--device", "cpu"], ERR, "urls_nul.txt:2: NUL byte")
    # Captures.
    for cmd in (["run", "--fib", fib, "--device", "cpu"], ["match", "--rules", ids_ok, "--device", "cpu"]):
        case(f"{cmd[0]} --pcap truncated.pcap", [*cmd, "--pcap", C("truncated.pcap")], ERR, "truncated.pcap")
        case(f"{cmd[0]} --pcap not_a_pcap.pcap", [*cmd, "--pcap", C("not_a_pcap.pcap")], ERR, "not_a_pcap.pcap")
    c.done()


if __name__ == "__main__":
    main()
