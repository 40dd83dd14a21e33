# shellcheck shell=bash disable=SC2034  # the variables are for the suites, which source this
# Sourced by scripts/device-run.sh from the repository root: the paths and helpers every suite
# uses, and device_setup (environment, machine description, build). Suites run in subshells of
# the sourcing shell, so they see all of this without exports.

ROOT=$PWD/.deps/root
# Shared data the device cannot fetch, carried in .deps (scripts/fetch-device-deps.sh); the build's
# TANDEM_SHARED_DATA_DIR points here too, so tests and benches read the same files.
SHARED=.deps/shared
FIB=data/fib/iprbench_tier1_fulltable_prefixes.txt.gz
URLS=$SHARED/names/iscx_url2016_benign_list_big_final.csv.gz
CB=$SHARED/classbench/filters
ET_RULES=("$SHARED"/ids/et_open_2019-04-15/*.rules.gz)
T=./build-device/tandem
SUITE_DIR=scripts/device/suites
# The device tool returns at most this many files from OUT.
OUT_FILES_MAX=8
# The offload runners', the engine's and whole-frame forwarding's tests (each in its own process).
GPU_ENGINE_TESTS="GpuOffload|GpuMode|OffloadEngine|GpuFault|Frame|Ipv4Gpu|Workers|test_gpu_engine"

# device_setup: the libraries and wheels from .deps, a description of the machine, and the build in
# build-device (only $TARGETS when set, to save device time). Fails when the build does.
device_setup() {
  export LD_LIBRARY_PATH="$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  export PATH="$PATH:/usr/local/cuda/bin"
  if [ -d .deps/whl ] && ! python3 -c "import scapy, pycparser" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .deps/whl/*.whl && export PYTHONPATH=/tmp/site
  fi
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    lscpu | grep -E "Model name|^CPU\(s\)|L2|L3|NUMA node\(s\)"
    cat /sys/kernel/mm/transparent_hugepage/enabled
  } 2>&1
  cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_DEPS_ROOT="$ROOT" \
    -DTANDEM_NATIVE=ON -DTANDEM_SHARED_DATA_DIR="$PWD/$SHARED" > /tmp/configure.log 2>&1 || { tail -30 /tmp/configure.log; return 1; }
  local targets=()
  read -ra targets <<< "${TARGETS:-}"
  ninja -C build-device -j16 "${targets[@]}" > /tmp/build.log 2>&1 || { grep -E "error|FAILED" -A3 /tmp/build.log | head -40; return 1; }
}

# suite_names: every suite, one name a line.
suite_names() {
  local f
  for f in "$SUITE_DIR"/*.sh; do
    f=${f##*/}
    echo "${f%.sh}"
  done
}

# suite_list: every suite with its description (the suite file's "# description:" line).
suite_list() {
  local s
  for s in $(suite_names); do
    printf '%-14s %s\n' "$s" "$(sed -n 's/^# description: //p' "$SUITE_DIR/$s.sh" | head -n 1)"
  done
}

# run_suite NAME: runs a suite in a subshell (its variables and exits stay its own). A suite exits
# non-zero only when it could not run; failing tests and benches show in its output and logs.
run_suite() {
  # shellcheck source=/dev/null
  (. "$SUITE_DIR/$1.sh")
}

# note LINE: prints LINE, and appends it to $LOG when the suite keeps one.
note() {
  if [ -n "${LOG:-}" ]; then echo "$*" | tee -a "$LOG"; else echo "$*"; fi
}

# logged TITLE SECONDS CMD...: CMD under a time limit, its output appended to $LOG, announced by
# "== TITLE ==" and followed by its exit status (both also printed).
logged() {
  local title=$1 limit=$2
  shift 2
  note "== $title =="
  timeout "$limit" "$@" >> "$LOG" 2>&1
  note "exit $?"
}

# ctest_log FILE LINES PATTERN CTEST_ARGS...: ctest in build-device (under `timeout $CTEST_LIMIT`
# when set), its output in $OUT/FILE; prints its exit status and the last LINES lines matching
# PATTERN (the summary and the failures).
ctest_log() {
  local file=$1 lines=$2 pattern=$3 limit=()
  shift 3
  [ -n "${CTEST_LIMIT:-}" ] && limit=(timeout "$CTEST_LIMIT")
  (cd build-device && "${limit[@]}" ctest "$@") > "$OUT/$file" 2>&1
  note "ctest exit: $?"
  grep -E "$pattern" "$OUT/$file" | tail -n "$lines"
}

# run_with_updates TAG BINARY UPDATE_DIR|- RUN_ARGS...: one `BINARY run RUN_ARGS` (its report in
# /tmp/TAG.log, its JSON in /tmp/TAG.json); with UPDATE_DIR, a control socket too, and each *.txt
# there sent by one `tandem ctl` from 1 s after the socket opens. The report's summary lines go
# into $LOG; a failed run sets failed=1.
run_with_updates() {
  local tag=$1 bin=$2 dir=$3
  shift 3
  local sock=/tmp/$tag.sock ctl=()
  [ "$dir" != - ] && ctl=(--control "$sock")
  rm -f "$sock"
  timeout 120 "$bin" run "$@" "${ctl[@]}" --json "/tmp/$tag.json" > "/tmp/$tag.log" 2>&1 &
  local pid=$!
  if [ "$dir" != - ]; then
    for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.1; done
    sleep 1
    local t0 n=0 f
    t0=$(date +%s%N)
    for f in "$dir"/*.txt; do
      kill -0 "$pid" 2> /dev/null || break
      "$T" ctl --socket "$sock" --file "$f" > /dev/null 2>> "$LOG" && n=$((n + 1))
    done
    note "ctl: $n files sent in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  fi
  wait "$pid"
  local rc=$?
  note "== $tag: exit $rc =="
  grep -E "^(device|packets|throughput|control|dropped|forwarded|resident|input|app)" "/tmp/$tag.log" | cut -c1-400 |
    tee -a "$LOG"
  if [ "$rc" != 0 ]; then
    tail -5 "/tmp/$tag.log" | tee -a "$LOG"
    failed=1
  fi
  rm -f "$sock"
}

# gpu_engine_tests LINES: the GPU engine's tests into ctest_gpu.log, LINES summary lines printed.
gpu_engine_tests() {
  ctest_log ctest_gpu.log "$1" "tests passed|Failed|\*\*\*|Timeout" \
    --output-on-failure -j4 --timeout 120 -R "$GPU_ENGINE_TESTS"
}

# app_registry: this build's apps as JSON (`tandem apps --json`: one object per app with name,
# description, gpu, lookup and bench_flags, the flags that load its standard benchmark table).
app_registry() {
  "$T" apps --json || { echo "$T apps --json failed: the suites take the apps from it" >&2; return 1; }
}

# app_specs FIELD [EXTRAS]: one "name:app flags" line per registry app whose FIELD is true (every
# app when FIELD is empty), with the flags of its standard table; after each app, the entries of
# EXTRAS ('|'-separated "name:app flags") for that app, in their order. An extra equal to the
# app's standard entry names it rather than running twice (results keep their file names when the
# standard table is the one they were named after); extras of apps not listed are left out, and
# said so. {shared} in registry paths (the shared data beside a developer's checkout) is the copy
# carried in $SHARED.
app_specs() {
  local json
  json=$(app_registry) || return 1
  python3 - "$1" "${2:-}" "$SHARED" "$json" <<'PY'
import json, shlex, sys
field, extras, shared = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    apps = json.loads(sys.argv[4])
except ValueError as e:
    sys.exit(f"tandem apps --json printed no JSON: {e}")

def local(tok):
    # "{shared}" in a registry path is the shared data directory (tandem apps --help).
    return tok.replace("{shared}", shared)

parsed = []
for e in filter(None, (s.strip() for s in extras.split("|"))):
    name, _, words = e.partition(":")
    words = shlex.split(words)
    if not words:
        sys.exit(f"extra {name}: no app")
    parsed.append((name, words[0], [local(w) for w in words[1:]]))
listed = set()
for a in apps:
    if field and not a.get(field):
        continue
    app = a["name"]
    listed.add(app)
    flags = [local(w) for w in shlex.split(a.get("bench_flags") or "")]
    mine = [(n, f) for n, x, f in parsed if x == app]
    name = next((n for n, f in mine if f == flags), app)
    print(f"{name}:{' '.join([app] + flags)}")
    for n, f in mine:
        if f != flags:
            print(f"{n}:{' '.join([app] + f)}")
for n, x, _ in parsed:
    if x not in listed:
        print(f"extra {n} left out: the registry lists no app {x}" + (f" with {field}" if field else ""), file=sys.stderr)
PY
}

# app_names FIELD: the names of the registry's apps whose FIELD is true, one a line.
app_names() {
  local json
  json=$(app_registry) || return 1
  python3 -c 'import json, sys; [print(a["name"]) for a in json.loads(sys.argv[2]) if a.get(sys.argv[1])]' "$1" "$json"
}

# user_specs: $SPECS ('|'-separated "name:app flags") one a line, $URLS and $FIB in it replaced.
user_specs() {
  local s=${SPECS//\$URLS/$URLS}
  s=${s//\$FIB/$FIB}
  tr '|' '\n' <<< "$s" | sed '/^$/d'
}

# out_room: how many more files OUT can take before the device stops returning them.
out_room() {
  echo $((OUT_FILES_MAX - $(find "$OUT" -type f | wc -l)))
}

# fitting_specs LIST: the spec lines of LIST that fit in OUT beside $LOG, for a suite writing one
# file per spec; the rest are named, with the SPECS that runs them in another call, rather than
# lost in the return.
fitting_specs() {
  local room n=0 spec
  room=$(out_room)
  [ -e "$LOG" ] || room=$((room - 1))
  while IFS= read -r spec; do
    [ -n "$spec" ] || continue
    n=$((n + 1))
    if [ "$n" -le "$room" ]; then
      echo "$spec"
    else
      echo "not run, OUT would exceed $OUT_FILES_MAX files: ${spec%%:*} (SPECS='$spec' runs it)" >&2
    fi
  done <<< "$1"
}

# ab_build_baseline: the baseline tree in .baseline/ (a git archive of an earlier commit, carried),
# CPU only, into build-baseline.
ab_build_baseline() {
  (cmake -S .baseline -B build-baseline -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_DEPS_ROOT="$ROOT" -DTANDEM_NATIVE=ON \
     -DTANDEM_WITH_CUDA=OFF && ninja -C build-baseline -j16 tandem) > /tmp/build-baseline.log 2>&1 ||
    { tail -20 /tmp/build-baseline.log; return 1; }
}

# ab_interleave REPS CMD SPEC...: this tree's tandem (build-device, "device") against the
# baseline's (build-baseline, "baseline"): each SPEC ("name:flags") runs as `CMD TANDEM FLAGS...`
# with both, REPS times, the side that goes first alternating so that neither always runs on a
# cold or a warm machine (odd repetitions run the baseline first). Output goes to $LOG, each run
# under a line "== rep R SIDE NAME" that ab_summary reads.
ab_interleave() {
  local reps=$1 cmd=$2 rep order which spec flags=()
  shift 2
  for rep in $(seq 1 "$reps"); do
    order="baseline device"
    [ $((rep % 2)) -eq 0 ] && order="device baseline"
    for which in $order; do
      for spec in "$@"; do
        echo "== rep $rep $which ${spec%%:*}" >> "$LOG"
        read -ra flags <<< "${spec#*:}"
        "$cmd" "./build-$which/tandem" "${flags[@]}" >> "$LOG"
      done
    done
  done
}

# ab_summary LOG: per name, the medians of the "throughput: X Mpps" lines of each side, and their
# ratio.
ab_summary() {
  python3 - "$1" <<'PY'
import re, sys, statistics
runs, names, key = {}, [], None
for line in open(sys.argv[1]):
    m = re.match(r"== rep \d+ (\S+) (\S+)", line)
    if m:
        key = (m.group(2), m.group(1))
        if key[0] not in names:
            names.append(key[0])
    m = re.match(r"throughput: ([\d.]+) Mpps", line)
    if m and key:
        runs.setdefault(key, []).append(float(m.group(1)))
print("app        baseline Mpps   now Mpps   now/baseline (medians; NAME-15: 15 workers, else one)")
for app in names:
    b, n = runs.get((app, "baseline"), []), runs.get((app, "device"), [])
    if b and n:
        print(f"{app:10} {statistics.median(b):10.2f} {statistics.median(n):10.2f} {statistics.median(n) / statistics.median(b):10.3f}")
PY
}
