#!/usr/bin/env bash
# The whole single-GPU calibration as ONE command, meant for the lent GPU machine:
#   bash calibrate/run.sh [OUTDIR] [extra overlap-calibrate options...]
# Builds the CUDA programs from the carried tree (device-only build: CUDA toolkit + the headers
# calibrate/prepare_device.sh put in .devdeps/), records the clocks as read (nvidia-smi, never
# changed), runs overlap-calibrate and writes into OUTDIR (default $OUT on the device machine, else
# calibrate/results/<gpu>-<host>/): measurements.json, environment.json, profile.yaml,
# calibrate.log, clocks.csv (and nvidia_smi_topo.txt) - flat, so the device tool brings them back.
# Under 10 minutes of device time on one H100 (build about 2 minutes on 16 cores, runs about 2-4).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${OUT:-}}
[ $# -gt 0 ] && shift
build="$root/build-device"
jobs=$(nproc)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
echo "== build (device-only) in $build"
cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DOVERLAP_DEVICE_ONLY=ON \
      -DOVERLAP_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a" > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$jobs" --target overlap-calibrate overlap-bench-schemes
bin="$build/calibrate/cuda/overlap-calibrate"
if [ -z "$out" ]; then
  args=()
else
  mkdir -p "$out"
  args=(--out "$out")
fi
logdir=${out:-$root}
clocks="${logdir}/clocks.csv"
q=timestamp,name,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,power.limit,temperature.gpu,pstate
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=$q --format=csv > "$clocks" || true
  [ "$(nvidia-smi -L | wc -l)" -gt 1 ] && nvidia-smi topo -m > "${logdir}/nvidia_smi_topo.txt" || true
fi
echo "== overlap-calibrate ${args[*]} $*"
# The clocks as read every 100 ms while the benchmarks run (each measurement carries end_unix_ms to
# line up with these rows): whether the SM clock differs between a GEMM on 8 SMs and on all of them.
sampler=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=$q --format=csv,noheader -lms 100 >> "$clocks" 2>/dev/null &
  sampler=$!
fi
set +e
"$bin" "${args[@]}" "$@" 2>&1 | tee "${logdir}/calibrate.log"
rc=${PIPESTATUS[0]}
set -e
[ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null || true
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=$q --format=csv,noheader >> "$clocks" || true
exit "$rc"
