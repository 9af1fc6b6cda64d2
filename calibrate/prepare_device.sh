#!/usr/bin/env bash
# Run HERE (the development machine) before a device call: the lent GPU machine has the CUDA
# toolkit, CMake and ninja but no network and none of our Debian/PyPI packages, so the two
# header-only dependencies of the device build travel with the working tree in .devdeps/
# (git-ignored by the .gitignore the script puts inside it, so it never gets committed):
#   .devdeps/include/nlohmann/   nlohmann/json (Debian nlohmann-json3-dev; ~1 MB)
#   .devdeps/cutlass/include/    CUTLASS cutlass/ + cute/ from the pinned nvidia-cutlass wheel (~27 MB)
# Then name ".devdeps" in the device run's `carry` (README.md "Calibration").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash tools/setup.sh >/dev/null
mkdir -p .devdeps/include .devdeps/cutlass
echo '*' > .devdeps/.gitignore
rm -rf .devdeps/include/nlohmann && cp -r /usr/include/nlohmann .devdeps/include/
cutlass=$(python3 -c "import importlib.util, os; s = importlib.util.find_spec('cutlass_library'); print(os.path.join(os.path.dirname(s.origin), 'source', 'include'))")
rm -rf .devdeps/cutlass/include && mkdir -p .devdeps/cutlass/include
cp -r "$cutlass/cutlass" "$cutlass/cute" .devdeps/cutlass/include/
du -sh .devdeps
echo "prepare_device: carry [\".devdeps\"] with the device run"
