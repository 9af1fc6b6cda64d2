#!/usr/bin/env bash
# The sweep benchmark: the default scenario (Llama-3-70B MLP, TP=8, 8x H100, every scheme
# that applies) over a SIDE x SIDE grid of its two swept keys: NVLink bandwidth from 200 to 900 GB/s
# and tokens from 2048 to 16384 (multiples of 64, so every scheme's slicing divides). SIDE = 100 is
# the 10,000-point sweep. Prints overlap-sim's own summary line (points, seconds, points/s).
# Usage: tools/bench/sweep_bench.sh [SIDE] [extra sweep options, e.g. -j 1]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${OVERLAP_SIM:-$root/build/tools/overlap-sim}
side=${1:-100}
shift || true
bw=$(python3 -c "print(','.join(str(round(200 + 700 * i / ($side - 1))) if $side > 1 else '450' for i in range($side)))")
tokens=$(python3 -c "print(','.join(str(2048 + 64 * round((16384 - 2048) / 64 * i / ($side - 1))) if $side > 1 else '8192' for i in range($side)))")
out=$(mktemp --suffix=.csv)
log=$(mktemp)
trap 'rm -f "$out" "$out".partial* "$log"' EXIT
start=$(date +%s.%N)
"$bin" sweep "$root/scenarios/llama3-70b-tp8-mlp.yaml" \
  --sweep "hardware.fabric.links.nvlink.bandwidth_gbps=$bw" --sweep "workload.tokens=$tokens" \
  -o "$out" --progress "$@" 2> "$log"
end=$(date +%s.%N)
tr '\r' '\n' < "$log" | grep "points in" | sed 's/\x1b\[K//'
echo "rows: $(($(wc -l < "$out") - 1)), wall $(python3 -c "print(round($end - $start, 1))") s, load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
