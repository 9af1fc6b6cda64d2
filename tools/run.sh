#!/usr/bin/env bash
# Set-up command 1: install what is missing, build, and run `overlap-sim` on the default scenario.
# Extra arguments go to `overlap-sim run` (e.g. --format json, --set k=v).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tools/setup.sh"
gen=$([ -f "$root/build/CMakeCache.txt" ] || echo "-GNinja")  # as tools/test.sh
cmake -S "$root" -B "$root/build" $gen -DCMAKE_BUILD_TYPE=Release -DOVERLAP_BUILD_TESTS=OFF > /dev/null
cmake --build "$root/build" -j"$(nproc)" --target overlap-sim
"$root/build/tools/overlap-sim" run "$@"
