"""Every example command in README.md's ```sh blocks (and docs/FW_ROUTER.md's) runs as written on a
fresh clone and exits 0.

Each block gets a fresh directory that looks like a fresh clone with a build: the source tree's
top-level entries (data/, tools/, scripts/, ...) as symbolic links, `build/tandem` pointing at the
binary under test, nothing beside it (so `../shared` is not there), and `python3` on PATH being the
interpreter this test runs under. Its commands run there in order, each under
`bash -e -o pipefail` after the block's variable assignments so far (FIB=...), so files one command
writes are there for the next, and every failing command is reported with its file and line, not
only the first.

What is not run as written, always said in the output:
- SETUP: the set-up commands at the top of the README (they install, build and run this suite);
- GPU_ONLY: commands that need a GPU, where `tandem` finds no usable one;
- NEEDS: commands whose Python tool needs a module that is missing (a failure when CI=true, where
  scripts/install-deps.sh has installed it);
- SHRINK: the README's sizes are for a measurement machine; the substitutions below make each
  command a short run of the same code paths, and each must still match a command.
A command may run at most LIMIT_S seconds (more under sanitizers). Where the README says what a
command prints, EXPECT checks it."""
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from e2e_util import Checker, args, sanitized, tmpdir

DOCS = ["README.md", "docs/FW_ROUTER.md"]

# Commands starting with these are not run: this test is part of what they run.
SETUP = ["./scripts/demo.sh", "./scripts/test.sh"]

# Commands that need a GPU: `--device gpu` (or a device list naming one, or --gpus) fails without
# one, and these benches measure only the GPU.
GPU_ONLY = [r"--device gpu\b", r"--device \S*\bgpu\d*\b", r"--gpus\b", r"\bbench gpu-(offload|stream|router|frames)\b"]

# Commands matching the pattern need the Python module.
NEEDS = [(r"\bscripts/plots\.sh\b", "matplotlib"), (r"\btools/gopt/gopt\.py\b", "pycparser")]

# (README text, what runs instead, why): plain text replacements, applied in order to every command.
SHRINK = [
    ("count=10000000", "count=200000", "10 M packets measure a peak rate"),
    ("count=4000000", "count=300000", "4 M packets measure a rate"),
    ("count=1000000", "count=100000", "1 M packets measure a rate (and make a 358 MB capture)"),
    ("--n 10000000 --reps 9", "--n 500000 --reps 1", "10 M lookups, 9 repetitions"),
    ("bench gpu-offload --fib $FIB", "bench gpu-offload --reps 20 --sizes 1,64,4096,262144 --fib $FIB",
     "300 round trips for each of 11 sizes"),
    ("bench gpu-stream --fib $FIB", "bench gpu-stream --items 4194304 --reps 1 --batches 262144,1048576 --fib $FIB",
     "134 M addresses per repetition"),
    ("bench gpu-router --fib $FIB", "bench gpu-router --repeat 1 --reps 1 --fib $FIB",
     "4 passes over 1 M packets, 3 repetitions per iteration"),
    ("bench gpu-path --app ipv4 --fib $FIB --cores 1-15",
     "bench gpu-path --app ipv4 --fib $FIB --gen count=100000,dst=fib,size=64 --cpu-workers 1 --reps 1 "
     "--min-seconds 0.05 --rx-threads 1 --no-ceilings",
     "2 M frames, 1 and 15 workers pinned to CPUs 1-15 (this machine may have fewer), 3 repetitions of 0.5 s"),
    ("bench gpu-frames --app ipv6 --fib $FIB", "bench gpu-frames --app ipv6 --reps 1 --min-seconds 0.05 "
     "--gen count=100000,dst=fib,size=64 --fib $FIB", "1 M frames, 3 repetitions of at least 0.5 s per row"),
    ("bench gpu-load --fib $FIB", "bench gpu-load --fractions 0.5 --max-wait-us 50 --point-ms 50 --peak-ms 50 "
     "--gen count=200000,dst=fib,flows=10000,zipf=1.1,size=64 --fib $FIB", "5 loads of 400 ms per configuration"),
    ("bench crypto --json", "bench crypto --sizes 64,imix --frames 2048 --reps 1 --min-seconds 0.05 --json",
     "4 suites x 7 sizes x 3 repetitions of at least 0.5 s per row"),
    ("bench gopt --core", "bench gopt --chase-mib 16 --cuckoo-mib 16 --ipv6-prefixes 10000 --lookups 65536 "
     "--reps 1 --core", "1 GiB tables, 200,000 IPv6 prefixes, 5 repetitions (73 s on a 2-core VM)"),
    ("bench memory --json", "bench memory --mib 64 --accesses 200000 --reps 1 --json",
     "a 1 GiB table, 5 repetitions (29 s on a 2-core VM)"),
    ("bench anchors --fib $FIB", "bench anchors --fib fib-slice.txt --n 200000 --hash-keys 200000 "
     "--ipv6-random 10000 --reps 1 --dpdk-mem-mib 1024",
     "rte_lpm inserts each route into a sorted array: the whole table takes 90 s to build on a 2-core "
     "VM; fib-slice.txt (written here) has its first 100,000 IPv4 and all its IPv6 routes"),
    ("bench cores --app ipv4", "bench cores --packets 200000 --reps 1 --app ipv4",
     "20 M packets per point, 3 repetitions (49 s on a 2-core VM)"),
    ("bench cores --app fw-router", "bench cores --packets 200000 --reps 1 --app fw-router",
     "20 M packets per point, 3 repetitions"),
    ("bench lookup --app l2 --l2-random 16000000", "bench lookup --reps 1 --app l2 --l2-random 1000000",
     "a 16 M MAC table"),
    ("bench lookup --app fw-router", "bench lookup --reps 1 --app fw-router", "5 repetitions"),
    ("bench classify --rules", "bench classify --n 100000 --reps 1 --rules", "1 M headers, 5 repetitions"),
    ("bench --min-seconds 1 ipv4 --fib $FIB --core 1", "bench ipv4 --n 500000 --reps 1 --fib $FIB --core 1",
     "7 repetitions of at least 1 s for each of a dozen rows"),
    ("bench fw-router --fib", "bench fw-router --n 200000 --reps 1 --gpu-reps 2 --fib", "2 M headers, 5 repetitions"),
    ("--threads 1,16", "--threads 1,2 --reps 1 --gen count=20000,size=512,proto=tcp,flows=1000,seed=9",
     "16 threads, 200,000 packets, 3 repetitions (2 minutes on a 2-core VM)"),
]
# Last: after the entries above have matched the commands as the README writes them.
SHRINK.append(("./build/tandem bench ", "./build/tandem bench --min-seconds 0.05 ",
               "every timed repetition lasts at least 0.5 s"))
SLICE = "fib-slice.txt"
SLICE_V4 = 100000

LIMIT_S = 60

# (text of a command, its whole standard output as the README describes it).
EXPECT = [("classify --rules data/classbench/filters/acl1_10k.gz --keys trace.txt", "1\n9774\n")]


def examples(path):
    """(first line, command) for each command of each ```sh block of a Markdown file, as blocks:
    comment and blank lines dropped, continued lines (ending in a backslash) kept together."""
    blocks, cmds, cont, in_block = [], None, None, False
    for n, line in enumerate(open(path), 1):
        text = line.rstrip("\n")
        if not in_block:
            if text.strip() == "```sh":
                in_block, cmds = True, []
            continue
        if cont is None and text.strip() == "```":
            blocks.append(cmds)
            in_block = False
            continue
        if cont is not None:
            cont[1] += "\n" + text
        elif text.strip() and not text.lstrip().startswith("#"):
            cont = [n, text]
        else:
            continue
        if not text.endswith("\\"):
            cmds.append(tuple(cont))
            cont = None
    return blocks


def shrink(cmd, used):
    """The command as it runs here, and why it differs."""
    why = []
    for i, (old, new, reason) in enumerate(SHRINK):
        if old in cmd:
            cmd = cmd.replace(old, new)
            why.append(reason)
            used.add(i)
    return cmd, why


def top_level(source):
    """The source tree's top-level entries that a clone has: those git tracks (a file the examples
    write, left in the tree, must neither be overwritten through a link nor stand in for one a
    command should have made), or without git every entry but build outputs."""
    r = subprocess.run(["git", "-C", source, "ls-files"], capture_output=True, text=True)
    if r.returncode == 0 and r.stdout:
        return sorted({f.split("/")[0] for f in r.stdout.splitlines() if not f.startswith(".")})
    return sorted(n for n in os.listdir(source) if not n.startswith((".", "build", "out")))


def make_clone(d, source, names, tandem):
    """A directory that looks like the source tree with `build/tandem` built."""
    os.makedirs(os.path.join(d, "build"))
    for name in names:
        os.symlink(os.path.join(source, name), os.path.join(d, name))
    os.symlink(tandem, os.path.join(d, "build", "tandem"))


def write_slice(d, source):
    v4, v6 = [], []
    with gzip.open(os.path.join(source, "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"), "rt") as f:
        for line in f:
            if ":" in line:
                v6.append(line)
            elif len(v4) < SLICE_V4:
                v4.append(line)
    with open(os.path.join(d, SLICE), "w") as f:
        f.writelines(v4 + v6)


def tail(path, n=1200):
    with open(path, errors="replace") as f:
        return f.read()[-n:].strip()


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    source = os.path.abspath(a.source_dir)
    tandem = os.path.abspath(a.tandem)
    ci = os.environ.get("CI") == "true"
    limit = LIMIT_S * (10 if sanitized() else 1)
    start = time.monotonic()

    r = subprocess.run([tandem, "run", "--app", "echo", "--gen", "count=10", "--device", "gpu"],
                       capture_output=True, text=True, timeout=120)
    gpu = r.returncode == 0
    c.check(gpu or "no usable GPU" in r.stderr, f"GPU probe: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    print("GPU: " + ("usable" if gpu else "none: commands that need one are skipped"))
    missing = {}
    for _, mod in NEEDS:
        if subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True).returncode != 0:
            missing[mod] = True

    # `python3` in the examples is this interpreter, the one the suite was configured with; run by
    # its own path, as a link elsewhere would lose a virtual environment's packages.
    shim = os.path.join(d, "bin")
    os.makedirs(shim)
    with open(os.path.join(shim, "python3"), "w") as f:
        f.write(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    os.chmod(os.path.join(shim, "python3"), 0o755)
    env = dict(os.environ, PATH=shim + os.pathsep + os.environ.get("PATH", ""))

    names = top_level(source)
    used, expected, setup_seen, ran, skipped = set(), set(), set(), 0, 0
    for doc in DOCS:
        blocks = examples(os.path.join(source, doc))
        c.check(any(blocks), f"{doc}: no ```sh block with a command")
        for b, cmds in enumerate(blocks):
            bd = os.path.join(d, f"{os.path.basename(doc)}.{b + 1}", "clone")
            make_clone(bd, source, names, tandem)
            assigns = []
            for line, cmd in cmds:
                where = f"{doc}:{line}"
                first = cmd.split()[0]
                if first in SETUP:
                    setup_seen.add(first)
                    print(f"{where}: skipped (set-up): {cmd.strip()}")
                    skipped += 1
                    continue
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", cmd.strip()):
                    assigns.append(cmd.strip())
                    continue
                run_cmd, shrunk = shrink(cmd, used)
                if not gpu and any(re.search(p, cmd) for p in GPU_ONLY):
                    print(f"{where}: skipped (needs a GPU): {cmd.strip()}")
                    skipped += 1
                    continue
                need = [m for p, m in NEEDS if re.search(p, cmd) and m in missing]
                if need:
                    c.check(not ci, f"{where}: Python module {need[0]} missing under CI=true: {cmd.strip()}")
                    print(f"{where}: skipped (no Python module {need[0]}): {cmd.strip()}")
                    skipped += 1
                    continue
                if SLICE in run_cmd and not os.path.exists(os.path.join(bd, SLICE)):
                    write_slice(bd, source)
                script = "\n".join(assigns + [run_cmd]) + "\n"
                out, err = os.path.join(bd, "..", "stdout"), os.path.join(bd, "..", "stderr")
                t0 = time.monotonic()
                with open(out, "w") as fo, open(err, "w") as fe:
                    # A session of its own, so that a command over its time is ended with its children.
                    p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=bd, env=env,
                                         stdout=fo, stderr=fe, start_new_session=True)
                    try:
                        rc = p.wait(timeout=limit)
                    except subprocess.TimeoutExpired:
                        os.killpg(p.pid, signal.SIGKILL)
                        p.wait()
                        rc = None
                took = time.monotonic() - t0
                ran += 1
                shown = cmd.strip()
                if shrunk:
                    shown += f"\n    ran as: {run_cmd.strip()}\n    (README's sizes: {'; '.join(shrunk)})"
                why = f"still running after {limit} s" if rc is None else f"exit code {rc}"
                c.check(rc == 0, f"{where}: {why}: {shown}\n  stderr: {tail(err)}\n  stdout: {tail(out, 400)}")
                for i, (text, want) in enumerate(EXPECT):
                    if text in cmd:
                        expected.add(i)
                        got = open(out).read()
                        c.check(rc != 0 or got == want, f"{where}: printed {got[:200]!r}, the README says {want!r}")
                if rc == 0:
                    print(f"{where}: ok in {took:.1f} s: {shown}", flush=True)
    for s in SETUP:
        c.check(s in setup_seen, f"set-up command {s} not found in README.md")
    for i, (old, _, _) in enumerate(SHRINK):
        c.check(i in used, f"substitution {old!r} matches no command: update SHRINK")
    for i, (text, _) in enumerate(EXPECT):
        c.check(i in expected, f"EXPECT {text!r} matches no command that ran: update EXPECT")
    print(f"{ran} commands run, {skipped} skipped, in {time.monotonic() - start:.0f} s")
    if not c.failures:
        shutil.rmtree(d, ignore_errors=True)
    else:
        print(f"the examples' directories are kept in {d}")
    c.done()


if __name__ == "__main__":
    main()
