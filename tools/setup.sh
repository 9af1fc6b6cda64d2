#!/usr/bin/env bash
# Installs what overlap-sim needs to build, test and plot, from Debian's packages and PyPI.
# Idempotent: installs only what is missing. Safe to run on every CI run.
set -euo pipefail
# libmimalloc-dev: the command line program's allocator (tools/CMakeLists.txt).
# openmpi-bin + libopenmpi-dev: `mpirun -np N overlap-sim sweep` (optional in the build; the MPI
# sweep test runs when mpirun is there).
# ninja-build: the generator tools/test.sh and tools/run.sh configure with (it keeps both cores busy
# across libraries, where make waits for each library before starting the next).
debs=(cmake ninja-build g++ make libeigen3-dev libboost-graph-dev libcli11-dev libfmt-dev catch2
      libyaml-cpp-dev nlohmann-json3-dev libbenchmark-dev openmpi-bin libopenmpi-dev zlib1g-dev libsqlite3-dev libxxhash-dev
      libmimalloc-dev)
# ccache: tools/test.sh compiles the test files once for its two builds through it.
debs+=(ccache)
# clang: tools/fuzz.sh builds the libFuzzer targets with it (Debian's clang brings libclang_rt's
# fuzzer runtime through libclang-rt-dev / libclang-common-*-dev).
debs+=(clang)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# matplotlib for the plotting scripts (optional for the simulator itself).
py=${PYTHON:-python3}
if command -v "$py" >/dev/null && ! "$py" -c "import matplotlib" 2>/dev/null; then
  echo "setup: installing matplotlib"
  "$py" -m pip install -q matplotlib || echo "setup: matplotlib not installed; --plot will be unavailable" >&2
fi
# pandas: the overlap_sim package's DataFrames (tests/python, notebooks/python_api.ipynb). Debian's
# python3-pandas when $py is Debian's own interpreter (the package installs only there, and pip may not
# write to it), else from PyPI.
if command -v "$py" >/dev/null && ! "$py" -c "import pandas" 2>/dev/null; then
  if [ "$("$py" -c 'import sys; print(sys.prefix)')" = /usr ] && apt-cache show python3-pandas >/dev/null 2>&1; then
    echo "setup: installing python3-pandas"
    $([ "$(id -u)" -eq 0 ] || echo sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3-pandas || echo "setup: python3-pandas not installed; tools/test.sh will fail its Python step" >&2
  else
    echo "setup: installing pandas"
    "$py" -m pip install -q pandas || echo "setup: pandas not installed; tools/test.sh will fail its Python step" >&2
  fi
fi
# CUTLASS headers for kernels/ (the signalling GEMM), only where nvcc can build them: the
# `nvidia-cutlass` PyPI package ships cutlass/ and cute/ under cutlass_library/source/include
# (facts.md "Getting CUTLASS"). Pinned: a kernel's speed and the headers' API depend on the version.
CUTLASS_VERSION=4.2.0.0
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  if command -v "$py" >/dev/null && \
     [ "$("$py" -c 'import importlib.metadata as m; print(m.version("nvidia-cutlass"))' 2>/dev/null)" != "$CUTLASS_VERSION" ]; then
    echo "setup: installing nvidia-cutlass==$CUTLASS_VERSION (CUTLASS headers for kernels/)"
    "$py" -m pip install -q --no-deps "nvidia-cutlass==$CUTLASS_VERSION" || echo "setup: nvidia-cutlass not installed; kernels/ will not configure" >&2
  fi
fi
# nbclient, nbformat and ipykernel: tools/test.sh executes notebooks/ headless
# (tests/notebooks/run_notebooks.py).
if command -v "$py" >/dev/null && ! "$py" -c "import nbclient, nbformat, ipykernel" 2>/dev/null; then
  echo "setup: installing nbclient nbformat ipykernel"
  "$py" -m pip install -q nbclient nbformat ipykernel || echo "setup: notebook packages not installed; tools/test.sh will fail its notebook step" >&2
fi
# MkDocs with the Material theme: tools/test.sh builds docs/ with `mkdocs build --strict`. Pinned so
# a theme release cannot change what --strict accepts: 9.8.2, the newest release on PyPI when the
# site was set up (it brings a compatible mkdocs 1.6).
MKDOCS_MATERIAL_VERSION=9.8.2
if command -v "$py" >/dev/null && \
   [ "$("$py" -c 'import importlib.metadata as m; print(m.version("mkdocs-material"))' 2>/dev/null)" != "$MKDOCS_MATERIAL_VERSION" ]; then
  echo "setup: installing mkdocs-material==$MKDOCS_MATERIAL_VERSION"
  "$py" -m pip install -q "mkdocs-material==$MKDOCS_MATERIAL_VERSION" || echo "setup: mkdocs-material not installed; tools/test.sh will fail its docs step" >&2
fi
# The Python package (python/, tests/python/): nanobind and scikit-build-core build the module
# (tools/test.sh's release build with OVERLAP_BUILD_PYTHON=ON, or `pip install .`), pytest runs its
# tests. Pinned to the versions pyproject.toml's build requirements name, so CI compiles the module
# with what `pip install .` uses (nanobind's C++ API changes between releases); pytest so a release
# cannot change how the tests are collected.
NANOBIND_VERSION=3.1.0
SCIKIT_BUILD_CORE_VERSION=1.1.2
PYTEST_VERSION=9.2.0
if command -v "$py" >/dev/null; then
  want=()
  for pin in "nanobind==$NANOBIND_VERSION" "scikit-build-core==$SCIKIT_BUILD_CORE_VERSION" "pytest==$PYTEST_VERSION"; do
    name=${pin%%==*}
    [ "$("$py" -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null)" = "${pin##*==}" ] || want+=("$pin")
  done
  if [ ${#want[@]} -gt 0 ]; then
    echo "setup: installing ${want[*]}"
    "$py" -m pip install -q "${want[@]}" || echo "setup: ${want[*]} not installed; tools/test.sh will fail its Python step" >&2
  fi
fi
