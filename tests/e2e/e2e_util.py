"""Shared helpers for the end-to-end tests of the `tandem` command."""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile

SKIP = 77  # ctest SKIP_RETURN_CODE


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--tandem", required=True)
    p.add_argument("--source-dir", required=True)
    return p.parse_args()


def sanitized():
    """Whether the tests run a sanitized build (scripts/test-sanitized.sh sets ASAN_OPTIONS): its
    memory figures include the sanitizers' shadow and quarantine."""
    return "ASAN_OPTIONS" in os.environ


def run(cmd, **kw):
    """Runs a command, returns (exit code, stdout, stderr)."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    return r.returncode, r.stdout, r.stderr


class Checker:
    """Collects failures so one run reports all of them; exits non-zero at the end if any."""

    def __init__(self):
        self.failures = 0
        self.checks = 0

    def check(self, cond, what):
        self.checks += 1
        if not cond:
            self.failures += 1
            print(f"FAIL: {what}", flush=True)

    def done(self):
        print(f"{self.checks - self.failures} passed, {self.failures} failed")
        sys.exit(1 if self.failures else 0)


def mix64(x):
    """core/flow_hash.h mix64, for the documented derived-next-hop rule."""
    m = (1 << 64) - 1
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & m
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & m
    x ^= x >> 33
    return x


def load_fib_python(path, ports=16):
    """An independent loader + longest-prefix match: {len: {masked prefix: next hop}}."""
    by_len = {}
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if not line or ":" in line.split()[0]:
                continue
            cols = line.split()
            pfx, ln = cols[0].split("/")
            ln = int(ln)
            a = 0
            for o in pfx.split("."):
                a = (a << 8) | int(o)
            mask = 0 if ln == 0 else ((0xFFFFFFFF << (32 - ln)) & 0xFFFFFFFF)
            a &= mask
            nh = int(cols[1]) if len(cols) > 1 else mix64(a * 64 + ln) % ports
            by_len.setdefault(ln, {})[a] = nh
    lens = sorted(by_len, reverse=True)

    def lookup(addr):
        for ln in lens:
            mask = 0 if ln == 0 else ((0xFFFFFFFF << (32 - ln)) & 0xFFFFFFFF)
            nh = by_len[ln].get(addr & mask)
            if nh is not None:
                return nh
        return None

    return lookup


def tmpdir():
    return tempfile.mkdtemp(prefix="tandem_e2e_")
