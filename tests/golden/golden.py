"""The golden-output cases (tests/golden/manifest.txt): reading and writing the manifest, running a
case, and turning each output into what is compared. Used by tests/e2e/test_golden_outputs.py and
tests/golden/regenerate.py."""
import concurrent.futures
import glob
import hashlib
import json
import os
import shlex
import shutil
import struct
import subprocess
import tempfile
import time

HEADER = """\
# Golden outputs of `tandem run`, `lookup`, `classify` and `match` on the real data in data/ (issue 15:
# the app registry must not change what any command outputs; recorded with commit 1e69467's binary,
# the last before the registry, and checked identical with the registry's).
# tests/e2e/test_golden_outputs.py runs every case below with the binary under test (CPU only, one
# worker where an output's order depends on it) and compares its outputs with those recorded here.
#
# A case is a [name] section:
#   cmd     = tandem's arguments. {data} is data/, {inputs} is tests/golden/inputs/ (written by
#             make_inputs.py), {tmp} the case's temporary directory; a word with * expands to the
#             sorted matching files. A case whose file under {data} or {inputs} is absent is skipped.
#   stdin   = a file fed to the command (optional)
#   outputs = what is compared: stdout, or files the command writes under {tmp}
#   OUTPUT  = SHA256 MODE FILE: the digest of the output as compared, and what locates its first
#             difference on failure. Compared: a capture's (.pcap, .pcapng) bytes; a --json summary's
#             counters (its integers, booleans and nulls and the app name: no timings, paths, machine or
#             input windows; golden.py normalize_json); stdout's bytes. FILE (under tests/golden/)
#             holds the compared text itself (MODE full) or, for a capture or a text over 48 KiB, one
#             digest per 64 packets or lines (MODE blocks).
#
# For a deliberate change of output, re-record and review the diff of tests/golden/ in the commit:
#   python3 tests/golden/regenerate.py --tandem build/tandem [--only REGEX]
# (a new case: add its [name], cmd and outputs lines here, then run regenerate.py). Never re-record to
# silence a failure that you have not explained.
"""

BLOCK = 64
FULL_LIMIT = 48 * 1024


class Case:
    def __init__(self, name):
        self.name = name
        self.fields = {}  # key -> value, in manifest order

    @property
    def cmd(self):
        return self.fields["cmd"]

    @property
    def outputs(self):
        return self.fields["outputs"].split()

    def expected(self, out):
        """(sha256, mode, file) or None."""
        v = self.fields.get(out)
        return tuple(v.split()) if v else None


def read_manifest(path):
    cases, cur = [], None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if s.startswith("[") and s.endswith("]"):
                cur = Case(s[1:-1])
                cases.append(cur)
            elif "=" in s and cur is not None:
                k, v = s.split("=", 1)
                cur.fields[k.strip()] = v.strip()
            else:
                raise ValueError(f"{path}:{n}: not a [case] or key = value line: {s}")
    for c in cases:
        for k in ("cmd", "outputs"):
            if k not in c.fields:
                raise ValueError(f"{path}: case {c.name} has no {k}")
    return cases


def write_manifest(path, cases):
    with open(path, "w") as f:
        f.write(HEADER)
        for c in cases:
            f.write(f"\n[{c.name}]\n")
            for k in ("note", "cmd", "stdin", "outputs"):
                if k in c.fields:
                    f.write(f"{k} = {c.fields[k]}\n")
            for out in c.outputs:
                if out in c.fields:
                    f.write(f"{out} = {c.fields[out]}\n")


# ---- what is compared ----

DROPPED_JSON_KEYS = {"machine", "latency_ns", "windows"}


def normalize_json(x, key=None):
    """A --json summary's counters: integers, booleans, nulls (and the app's name), without the
    timing, machine and input-window fields; floats (rates, seconds) and strings (paths, the table and
    device descriptions, which carry timings) dropped."""
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            if k in DROPPED_JSON_KEYS:
                continue
            if k == "app" and isinstance(v, str):
                out[k] = v
                continue
            n = normalize_json(v, k)
            if n is not _DROP:
                out[k] = n
        return out
    if isinstance(x, list):
        return [n for n in (normalize_json(v) for v in x) if n is not _DROP]
    if x is None or isinstance(x, (bool, int)):
        return x
    return _DROP


_DROP = object()


def capture_lines(data):
    """One line per packet (pcap) or per block (pcapng): timestamp, lengths, a digest of the bytes;
    the file header first."""
    if len(data) >= 24 and data[:4] in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
        e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        vmaj, vmin, _, _, snap, link = struct.unpack_from(e + "HHiIII", data, 4)
        lines = [f"pcap {data[:4].hex()} v{vmaj}.{vmin} snaplen {snap} linktype {link}"]
        off, i = 24, 0
        while off + 16 <= len(data):
            ts, frac, incl, orig = struct.unpack_from(e + "IIII", data, off)
            body = data[off + 16:off + 16 + incl]
            lines.append(f"packet {i}: ts {ts}.{frac:09d} caplen {incl} len {orig} "
                         f"{hashlib.sha256(body).hexdigest()[:16]} {body[:14].hex()}")
            off += 16 + incl
            i += 1
        if off != len(data):
            lines.append(f"trailing {len(data) - off} bytes")
        return lines
    if len(data) >= 12 and data[:4] == b"\x0a\x0d\x0d\x0a":
        e = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        lines, off, i = [], 0, 0
        while off + 12 <= len(data):
            btype, blen = struct.unpack_from(e + "II", data, off)
            if blen < 12 or off + blen > len(data):
                break
            body = data[off + 8:off + blen - 4]
            lines.append(f"block {i}: type {btype:#x} len {blen} {hashlib.sha256(body).hexdigest()[:16]}")
            off += blen
            i += 1
        if off != len(data):
            lines.append(f"trailing {len(data) - off} bytes")
        return lines
    return [f"not a capture: {len(data)} bytes {hashlib.sha256(data).hexdigest()}"]


def compared_bytes(out, raw):
    """The bytes an output's digest covers."""
    if out.endswith(".json"):
        try:
            return (json.dumps(normalize_json(json.loads(raw)), indent=1, sort_keys=True) + "\n").encode()
        except ValueError as e:
            return f"not JSON: {e}\n".encode()
    return raw


def is_capture(out):
    return out.endswith(".pcap") or out.endswith(".pcapng")


def representation(out, data, mode=None):
    """(mode, lines) kept under tests/golden/ to locate a difference."""
    if is_capture(out):
        items = capture_lines(data)
        unit = "blocks" if items[0].startswith("block") else "packets"
        return "blocks", items[:1] + block_lines(items[1:], unit)
    text = data.decode("utf-8", "replace")
    lines = text.splitlines()
    if mode == "full" or (mode is None and len(data) <= FULL_LIMIT):
        return "full", lines
    return "blocks", [f"{len(lines)} lines"] + block_lines(lines, "lines")


def block_lines(items, unit):
    """One digest per BLOCK items, named by the items' numbers: 1-based for lines (as an editor
    counts them), 0-based for packets and pcapng blocks (as the listing numbers them)."""
    first = 1 if unit == "lines" else 0
    out = []
    for b in range(0, len(items), BLOCK):
        chunk = items[b:b + BLOCK]
        h = hashlib.sha256("\n".join(chunk).encode()).hexdigest()[:16]
        out.append(f"{unit} {b + first}-{b + first + len(chunk) - 1}: {h}")
    return out


# ---- running a case ----

def placeholders(source_dir, tmp):
    return {"{data}": os.path.join(source_dir, "data"),
            "{inputs}": os.path.join(source_dir, "tests", "golden", "inputs"),
            "{shared}": os.path.join(os.path.dirname(os.path.abspath(source_dir)), "shared", "data"),
            "{tmp}": tmp}


def shown_cmd(case, source_dir):
    """The case's command as one would type it from the source directory."""
    rel = {"{data}": "data", "{inputs}": "tests/golden/inputs", "{tmp}": "OUT",
           "{shared}": os.path.relpath(placeholders(source_dir, "")["{shared}"], source_dir)}
    cmd = case.cmd
    for k, v in rel.items():
        cmd = cmd.replace(k, v)
    stdin = case.fields.get("stdin")
    return f"tandem {cmd}" + (f" < {stdin.replace('{inputs}', 'tests/golden/inputs').replace('{data}', 'data')}" if stdin else "")


def expand(case_cmd, subst):
    """(argv, missing): the arguments with placeholders and * patterns expanded; the input paths that
    do not exist."""
    argv, missing = [], []
    for w in shlex.split(case_cmd):
        is_input = any(w.startswith(k) for k in ("{data}", "{inputs}", "{shared}"))
        for k, v in subst.items():
            w = w.replace(k, v)
        if is_input and "*" in w:
            m = sorted(glob.glob(w))
            if not m:
                missing.append(w)
            argv += m
            continue
        if is_input and not os.path.exists(w):
            missing.append(w)
        argv.append(w)
    return argv, missing


class Result:
    def __init__(self, case):
        self.case = case
        self.skipped = None  # reason
        self.error = None  # the command failed
        self.outputs = {}  # out -> compared bytes
        self.seconds = 0.0
        self.argv = []


def run_case(tandem, source_dir, case, timeout=300):
    r = Result(case)
    tmp = tempfile.mkdtemp(prefix="tandem_golden_")
    try:
        subst = placeholders(os.path.abspath(source_dir), tmp)
        argv, missing = expand(case.cmd, subst)
        stdin_path = None
        if "stdin" in case.fields:
            (stdin_path,), m2 = expand(case.fields["stdin"], subst)
            missing += m2
        if missing:
            r.skipped = "absent: " + ", ".join(os.path.relpath(m, source_dir) for m in missing)
            return r
        r.argv = argv
        env = {k: v for k, v in os.environ.items() if not k.startswith("TANDEM_TEST_")}
        t0 = time.monotonic()
        with open(stdin_path or os.devnull, "rb") as fin:
            p = subprocess.run([tandem] + argv, stdin=fin, capture_output=True, cwd=tmp, env=env, timeout=timeout)
        r.seconds = time.monotonic() - t0
        if p.returncode != 0 and b"has no libpcap support" in p.stderr:
            r.skipped = "this build has no libpcap support"
            return r
        if p.returncode != 0:
            r.error = f"exit code {p.returncode}: {p.stderr.decode(errors='replace').strip()[-600:]}"
            return r
        for out in case.outputs:
            if out == "stdout":
                raw = p.stdout
            else:
                path = os.path.join(tmp, out)
                if not os.path.exists(path):
                    r.outputs[out] = None
                    continue
                raw = open(path, "rb").read()
            r.outputs[out] = compared_bytes(out, raw)
        return r
    except subprocess.TimeoutExpired:
        r.error = f"timed out after {timeout} s"
        return r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_cases(tandem, source_dir, cases, jobs):
    """Runs the cases, `jobs` at a time; yields results in manifest order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = [ex.submit(run_case, tandem, source_dir, c) for c in cases]
        for f in futs:
            yield f.result()


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def expected_file_name(case, out):
    return f"expected/{case.name}.{out}.txt"


def first_difference(expected_lines, actual_lines, mode):
    """A sentence naming the first differing line, or None."""
    for i, (e, a) in enumerate(zip(expected_lines, actual_lines)):
        if e != a:
            where = f"line {i + 1}" if mode == "full" else f"listing line {i + 1}"
            return f"{where}: expected `{e[:300]}`, got `{a[:300]}`"
    if len(expected_lines) != len(actual_lines):
        n = min(len(expected_lines), len(actual_lines))
        extra = (f"expected has {len(expected_lines) - n} more, the first `{expected_lines[n][:300]}`"
                 if len(expected_lines) > n else f"got {len(actual_lines) - n} more, the first `{actual_lines[n][:300]}`")
        return f"{len(expected_lines)} lines expected, {len(actual_lines)} got: {extra}"
    return None


def compare(golden_dir, case, out, data):
    """None when the output is as recorded, else a message naming the first difference."""
    exp = case.expected(out)
    if exp is None:
        return "nothing recorded (run tests/golden/regenerate.py for a new case)"
    digest, mode, fname = exp
    if data is None:
        return "the command wrote no such file"
    if sha256(data) == digest:
        return None
    path = os.path.join(golden_dir, fname)
    want = open(path).read().splitlines() if os.path.exists(path) else []
    _, got = representation(out, data, mode)
    msg = f"digest {sha256(data)[:16]}, recorded {digest[:16]}"
    diff = first_difference(want, got, mode)
    if not diff:
        return msg + f" ({fname} agrees with the output: is it stale?)"
    msg += "; first difference: " + diff
    if mode == "blocks":
        # The output's first items of the first differing block (the listing's line 1 is a header).
        items = capture_lines(data)[1:] if is_capture(out) else data.decode("utf-8", "replace").splitlines()
        i = next((k for k, (e, a) in enumerate(zip(want, got)) if e != a), min(len(want), len(got)))
        if i >= 1:
            b = (i - 1) * BLOCK
            shown = "\n      ".join(x[:200] for x in items[b:b + 3])
            what = "the output's first items of that block" if is_capture(out) else f"the output's lines {b + 1}-{b + 3} there"
            msg += f"\n    {what}:\n      {shown}"
    return msg


def record(golden_dir, case, out, data):
    """Writes the representation file and sets the case's expectation."""
    mode, lines = representation(out, data)
    fname = expected_file_name(case, out)
    path = os.path.join(golden_dir, fname)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + ("\n" if lines else ""))
    case.fields[out] = f"{sha256(data)} {mode} {fname}"
