"""Every command over Tandem's adversarial corpus (tests/adversarial/make_corpus.py writes it; the
committed copy in tests/adversarial/corpus/ must be what the script writes): each hostile input
ends with the exit code and message it calls for (an error naming the file and line, or a warning,
or a counted drop), never a crash, a hang or a silent acceptance."""
import filecmp
import json
import os
import shutil
import subprocess
import sys

from e2e_util import Checker, args, tmpdir

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
    # Packets: every drop counted with its reason, and nothing past the rule by malformation.
    def counters(what, argv, want_drops, forwarded):
        js = os.path.join(d, "c.json")
        if os.path.exists(js):
            os.remove(js)
        r = case(what, [*argv, "--device", "cpu", "--json", js], 0, out="accounting OK")
        got = json.load(open(js)) if r and r.returncode == 0 else {}
        drops = {k: v for k, v in got.get("drops", {}).items() if v}
        c.check(drops == want_drops and got.get("forwarded") == forwarded,
                f"{what}: drops {drops} forwarded {got.get('forwarded')}, want {want_drops} and {forwarded}")

    ev = ["--app", "fw-router", "--fib", fib, "--rules", C("fw_ssh.rules"), "--pcap", C("evasion.pcap")]
    for path in ("scalar", "batched"):
        counters(f"fw-router evasion ({path})", ["run", *ev, "--cpu-path", path, "--verify"],
                 {"acl_denied": 1, "tiny_fragment": 1, "bad_l4_header": 3, "fragment_overlap": 1}, 2)
    counters("ipv4: bad IPv4 option lengths", ["run", "--fib", fib, "--pcap", C("bad_ip_options.pcap")], {"bad_ip_options": 3}, 1)
    counters("ipv6: type 0 routing header", ["run", "--app", "ipv6", "--fib", C("fib6_rh0.txt"), "--pcap", C("ipv6_rh0.pcap")],
             {"ipv6_rh0": 1}, 1)
    counters("oversize frame", ["run", "--fib", fib, "--pcap", C("oversize_frame.pcap")], {"oversize": 1}, 1)
    case("match: payloads it cannot see are counted", ["match", "--rules", ids_ok, "--pcap", C("evasion.pcap"), "--device", "cpu"],
         0, "not inspected (later fragments, malformed or rejected headers): 6")
    # Flags out of range, and outputs that would destroy an input.
    gen10 = ["run", "--fib", fib, "--gen", "count=10"]
    for bad in (["--rate-mpps", "nan"], ["--rate-mpps", "inf"], ["--cores", "9999"], ["--device", "cpu", "--batch", "64"],
                ["--out", os.path.join(d, "x.pcap.gz")]):
        r = subprocess.run([T, *gen10, *bad], capture_output=True, text=True, timeout=120)
        c.check(r.returncode != 0 and r.returncode > 0 and bad[0] in r.stderr + r.stdout,
                f"{bad}: rc {r.returncode}, must fail naming the flag: {r.stderr[-200:]!r}")
    for spec in ("count=10,flows=1000000000", "count=1e15"):
        r = subprocess.run([T, "gen", "--spec", spec, "--out", os.path.join(d, "g2.pcap")], capture_output=True, text=True, timeout=120)
        c.check(r.returncode > 0 and "--spec" in r.stderr and not os.path.exists(os.path.join(d, "g2.pcap")),
                f"gen {spec}: rc {r.returncode} {r.stderr[-200:]!r}")
    victim = os.path.join(d, "victim.pcap")
    shutil.copy(C("evasion.pcap"), victim)
    before = open(victim, "rb").read()
    for flags in (["--pcap", victim, "--out", victim], ["--pcap", victim, "--out", fib], ["--pcap", victim, "--out", os.path.join(d, "o.pcap"),
                  "--json", os.path.join(d, "o.pcap")]):
        r = subprocess.run([T, "run", "--fib", fib, "--device", "cpu", *flags], capture_output=True, text=True, timeout=120)
        c.check(r.returncode == ERR and ("refusing" in r.stderr or "its own file" in r.stderr),
                f"{flags}: rc {r.returncode} {r.stderr[-200:]!r}")
    c.check(open(victim, "rb").read() == before and open(fib).read().startswith("20.0.0.0/8"), "the inputs are untouched")
    c.done()


if __name__ == "__main__":
    main()
