# shellcheck shell=bash
# description: the offload advisor (issue 18; DEVICES, WORKERS, CASES to pick cases by number): `tandem advise --check --verify-pick` on 10 app/traffic cases for throughput and one each for latency and energy, over a CPU group and the GPU; each pick is compared with every candidate measured as bench schedule does, and its prediction with a run of the pick; advise.json collects the cases and counts the right picks
LOG="$OUT/advise.log"
list=$(app_specs gpu) || exit 1
spec() { local s; s=$(grep "^$1:" <<< "$list" | head -1); echo "${s#*:}"; }
dev=${DEVICES:-cpu:7,gpu}
workers=${WORKERS:-8}
cores="0-$(($(nproc) - 1))"
tmp=$(mktemp -d)
n=0
run_case() {  # NAME APP_SPEC TRAFFIC [POLICY]
  n=$((n + 1))
  if [ -n "${CASES:-}" ] && [[ " $CASES " != *" $n "* ]]; then return; fi
  local name=$1 traffic=$3 policy=${4:-throughput}
  read -ra args <<< "$2"
  logged "advise $n: $name, $traffic, policy $policy" 120 "$T" advise --app "${args[@]}" --traffic "$traffic" \
    --device "$dev" --workers "$workers" --cores "$cores" --policy "$policy" --seconds 0.3 --check --verify-pick \
    --reps 3 --min-seconds 0.5 --json "$tmp/$n.json"
}
run_case "ipv4 full BGP, 64 B" "$(spec ipv4)" count=2000000,dst=fib,flows=100000,size=64,seed=3
run_case "ipv4 full BGP, 1518 B" "$(spec ipv4)" count=1000000,dst=fib,flows=100000,size=1518,seed=3
run_case "ipv4 full BGP, imix" "$(spec ipv4)" count=1000000,dst=fib,flows=100000,size=imix,seed=3
run_case "ipv6, 64 B" "$(spec ipv6)" count=1000000,dst=fib,flows=100000,size=78,seed=3
run_case "l2, 64 B" "$(spec l2)" count=1000000,flows=100000,size=64,seed=3
run_case "ndn, 128 B" "$(spec ndn)" count=1000000,flows=100000,size=128,seed=3
run_case "fw-router, 64 B" "$(spec fw-router)" count=1000000,dst=fib,flows=100000,size=64,seed=3
run_case "hashing md5, 256 B" "hashing --digest md5" count=1000000,flows=100000,size=256,seed=3
run_case "hashing md5, 1024 B" "hashing --digest md5" count=1000000,flows=100000,size=1024,seed=3
run_case "echo, 64 B" "$(spec echo)" count=1000000,flows=100000,size=64,seed=3
run_case "ipv4 full BGP, 64 B" "$(spec ipv4)" count=2000000,dst=fib,flows=100000,size=64,seed=3 latency
run_case "hashing md5, 256 B" "hashing --digest md5" count=1000000,flows=100000,size=256,seed=3 energy
python3 - "$tmp" "$OUT/advise.json" <<'PY' | tee -a "$LOG"
import glob, json, os, sys
cases = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json")), key=lambda p: int(os.path.basename(p)[:-5])):
    r = json.load(open(f))
    v = r.get("verify_pick") or {}
    chk = r.get("check") or {}
    pick = [x for x in r["candidates"] if x["name"] == r["pick"]][0]
    cases.append({"app": r["app"], "traffic": r["traffic"], "policy": r["policy"], "pick": r["pick"],
                  "measured_best": v.get("measured_best"), "right": v.get("pick_is_measured_best"),
                  "predicted": {k: pick[k] for k in ("mpps", "p99_us", "j_per_mbit")},
                  "checked": {k: chk.get(k) for k in ("mpps", "p99_us", "j_per_mbit")},
                  "candidates": r["candidates"], "verify": v, "why": r["why"], "machine": r["machine"]})
right = sum(1 for c in cases if c["right"])
json.dump({"command": "advise --verify-pick", "cases": cases, "right": right, "of": len(cases)}, open(sys.argv[2], "w"), indent=1)
def err(p, m):
    return f"{100 * (p / m - 1):+.0f}%" if p and m else "-"
for c in cases:
    p, m = c["predicted"], c["checked"]
    print(f"{c['app']:10s} {c['traffic']:52s} {c['policy']:10s} pick {c['pick']:18s} best {str(c['measured_best']):18s} "
          f"prediction vs check: Mpps {err(p['mpps'], m['mpps'])}, p99 {err(p['p99_us'], m['p99_us'])}, "
          f"J/Mbit {err(p['j_per_mbit'], m['j_per_mbit'])} {'right' if c['right'] else 'WRONG'}")
print(f"advisor: {right} of {len(cases)} picks are the measured best")
PY
rm -rf "$tmp"
grep -E "^==|^exit|^pick|^predicted|^why|^verify-pick|^advisor|right$|WRONG$" "$LOG" | tail -80
exit 0
