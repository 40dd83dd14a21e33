# shellcheck shell=bash
# description: every registry app with a GPU path on whole frames (bench gpu-frames: CPU scalar and batched on one core, the GPU's whole-frame runner async/mapped, 1 and 4 slots); SPECS
LOG="$OUT/gpu-frames.log"
if [ -n "${SPECS:-}" ]; then
  list=$(user_specs)
else
  list=$(app_specs gpu) || exit 1
fi
mapfile -t specs < <(fitting_specs "$list")
for spec in "${specs[@]}"; do
  [ -n "$spec" ] || continue
  name=${spec%%:*}; app=${spec#*:}
  read -ra app_args <<< "$app"
  logged "bench gpu-frames: $app" 300 "$T" bench gpu-frames --app "${app_args[@]}" --json "$OUT/bench_gpu_frames_$name.json"
done
grep -E "^==|^exit|^CPU|^GPU|^path|on whole frames" "$LOG"
exit 0
