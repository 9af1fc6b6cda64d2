#!/usr/bin/env bash
# `mpirun -np N overlap-sim plan ...` writes byte for byte what one process writes, the same ranking
# and the same report, whatever the rank count (2 and 3 ranks: the candidates split unevenly), as a
# table and as JSON; a search where nothing fits fails once, from rank 0, with every rank exiting 2.
# Skipped (exit 77) when mpirun is absent. Usage: mpi_plan_test.sh PATH/TO/overlap-sim
set -euo pipefail
bin=$1
if ! command -v mpirun > /dev/null; then
  echo "mpirun not found: MPI plan test skipped (tools/setup.sh installs openmpi-bin)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
# Llama 3 8B cut to 8 layers on 8 GPUs, tp 2 or 4, pp 1, 2 or 4 (1F1B, ZB-H1, interleaved), two schemes:
# 22 candidates, a few seconds.
plan=(plan --model llama3-8b --hardware h100-sxm-8x-nvswitch --gpus 8 --global-batch 16 --seq 2048 --tp 2,4 --cp 1
      --mbs 1 --fsdp zero1 --recompute selective --schedule 1f1b,zb_h1,interleaved --top 50 -j 1
      --set workload.layers=8)
for format in table json; do
  "$bin" "${plan[@]}" --format "$format" -o "$tmp/one.$format"
  for np in 2 3; do
    mpirun -np "$np" --oversubscribe "$bin" "${plan[@]}" --format "$format" -o "$tmp/$np.$format"
    cmp "$tmp/one.$format" "$tmp/$np.$format"
  done
done
# Nothing fits: one error, from rank 0, exit 2 on every rank.
set +e
mpirun -np 2 --oversubscribe "$bin" "${plan[@]}" --set hardware.gpu.hbm_bytes=1000000 -o "$tmp/none.txt" 2> "$tmp/err.txt"
rc=$?
set -e
[ "$rc" -ne 0 ] || { echo "a search with nothing that fits did not fail under mpirun"; exit 1; }
[ "$(grep -c 'no configuration fits' "$tmp/err.txt")" -eq 1 ] || { cat "$tmp/err.txt"; exit 1; }
[ ! -e "$tmp/none.txt" ]
echo "mpirun -np 2 and 3 plan output identical to one process (table, json)"
