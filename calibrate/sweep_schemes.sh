#!/usr/bin/env bash
# The scheme sweep as ONE command, meant for the lent GPU machine:
#   bash calibrate/sweep_schemes.sh [OUTDIR] [CONFIG] [extra overlap-bench-schemes options...]
# CONFIG defaults to calibrate/configs/schemes_virtual.json (virtual ranks on one GPU). Builds like
# calibrate/run.sh (same build directory: after run.sh nothing is rebuilt), then runs
# overlap-bench-schemes: every run checked against its reference, then timed, and each virtual
# node's profile written first. OUTDIR (default $OUT, else calibrate/results/<gpu>-<host>/schemes)
# gets schemes.json, profile_virtual_t<T>_<link>.yaml and schemes.log, flat.
# On a real node: mpirun -np 8 build-device/calibrate/cuda/overlap-bench-schemes --config
#   calibrate/configs/schemes_nodes.json --out calibrate/results/<gpu>-<host>/schemes
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${OUT:-}}
config=${2:-$root/calibrate/configs/schemes_virtual.json}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
build="$root/build-device"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DOVERLAP_DEVICE_ONLY=ON \
      -DOVERLAP_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a" > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target overlap-bench-schemes
args=(--config "$config")
logdir=$root
if [ -n "$out" ]; then
  mkdir -p "$out"
  args+=(--out "$out")
  logdir=$out
fi
echo "== overlap-bench-schemes ${args[*]} $*"
set +e
"$build/calibrate/cuda/overlap-bench-schemes" "${args[@]}" "$@" 2>&1 | tee "$logdir/schemes.log"
rc=${PIPESTATUS[0]}
set -e
exit "$rc"
