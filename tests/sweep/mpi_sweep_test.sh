#!/usr/bin/env bash
# `mpirun -np 2 --oversubscribe overlap-sim sweep ...` writes byte for byte what one process writes
# (CI runs it on a small sweep and compares the files), as CSV
# and as JSON, with the points split unevenly (5 points over 2 ranks). Skipped (exit 77) when mpirun
# is absent. Usage: mpi_sweep_test.sh PATH/TO/overlap-sim
set -euo pipefail
bin=$1
if ! command -v mpirun > /dev/null; then
  echo "mpirun not found: MPI sweep test skipped (tools/setup.sh installs openmpi-bin)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# CI runs as root; OpenMPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under AddressSanitizer: OpenMPI's own allocations outlive MPI_Finalize by design; LeakSanitizer
# would fail the run for them (our code's leaks are checked by the in-process sweep tests).
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
cat > "$tmp/s.yaml" <<'YAML'
hardware: h100-sxm-8x-nvswitch
workload: {kind: gemm_collective, tp: 4, m: 1024, n: 2048, k: 1024, primitive: all_reduce}
schemes: [no_overlap, {name: data_slicing, params: {chunks: 2}}, flashoverlap]
sweep:
  workload.k: [256, 512, 1024, 2048, 4096]
YAML
for format in csv json; do
  "$bin" sweep "$tmp/s.yaml" --format "$format" -j 1 -o "$tmp/one.$format"
  mpirun -np 2 --oversubscribe "$bin" sweep "$tmp/s.yaml" --format "$format" -j 1 -o "$tmp/two.$format"
  cmp "$tmp/one.$format" "$tmp/two.$format"
  # Rank 0 alone wrote the file; no checkpoint is left behind.
  if ls "$tmp"/two."$format".partial* > /dev/null 2>&1; then
    echo "checkpoint files left behind"; exit 1
  fi
done
# A bad point is reported once (by rank 0) and every rank exits 2.
set +e
mpirun -np 2 --oversubscribe "$bin" sweep "$tmp/s.yaml" --sweep workload.n=0 -o "$tmp/bad.csv" 2> "$tmp/err.txt"
rc=$?
set -e
if [ "$rc" -eq 0 ]; then echo "a bad sweep point did not fail under mpirun"; exit 1; fi
[ "$(grep -c 'sweep points make an invalid scenario' "$tmp/err.txt")" -eq 1 ] || { cat "$tmp/err.txt"; exit 1; }
[ ! -e "$tmp/bad.csv" ]
echo "mpirun -np 2 output identical to one process (csv, json)"
