#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and pass the tests; then the same tests once
# more under AddressSanitizer + UndefinedBehaviorSanitizer. `--quick` skips the sanitizer pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
bash "$root/tools/setup.sh"
# Each phase header carries the seconds since the start, so a CI log shows where its time went.
phase() { echo "== $* [${SECONDS} s]"; }

# Ninja for a new build directory: it compiles every library's files as soon as their headers exist,
# where make finishes one library before it starts the next. A directory configured before keeps its
# generator (CMake refuses to change it).
generator() { [ -f "$1/CMakeCache.txt" ] || echo "-GNinja"; }

# A compiler cache of this run's own (build-ccache/), when ccache is there (tools/setup.sh installs
# it): the sanitizer build's test files compile exactly as the release build's (tests/CMakeLists.txt,
# "One compile for both builds"), so they come from the cache instead of being compiled twice.
# BASEDIR: paths under the checkout are hashed relative to the build directory, the same in build/
# and build-asan/. pch_defines, time_macros: the precompiled header of the test files (ccache's
# manual, "Precompiled headers").
launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_DIR="$root/build-ccache" CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1 \
         CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime CCACHE_MAXSIZE=5G
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

phase "release build"
# Tests on explicitly: build/ may have been configured by tools/run.sh without them.
# OVERLAP_BUILD_PYTHON: the same build makes the overlap_sim module (build/python/overlap_sim/), for
# the interpreter the tests below run under; the C++ core is compiled once for both.
py=${PYTHON:-python3}
cmake -S "$root" -B "$root/build" $(generator "$root/build") -DCMAKE_BUILD_TYPE=Release -DOVERLAP_BUILD_TESTS=ON -DOVERLAP_BUILD_BENCH=ON \
      -DOVERLAP_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$py")" "${launcher[@]}" > /dev/null
cmake --build "$root/build" -j"$jobs"
phase "release tests"
ctest --test-dir "$root/build" --output-on-failure --no-tests=error -j"$jobs"

phase "Python package (tests/python: the module against the CLI, errors, threads)"
if ! ls "$root"/build/python/overlap_sim/_core*.so > /dev/null 2>&1; then
  echo "test.sh: the overlap_sim module was not built (nanobind missing? see the cmake warning; tools/setup.sh installs it)" >&2
  exit 1
fi
PYTHONPATH="$root/build/python" OVERLAP_SIM_CLI="$root/build/tools/overlap-sim" \
  "$py" -m pytest -q -p no:cacheprovider "$root/tests/python"

phase "documentation site (mkdocs build --strict: a broken link or an unlisted page fails)"
NO_MKDOCS_2_WARNING=1 "${PYTHON:-python3}" -m mkdocs build --strict --quiet --config-file "$root/mkdocs.yml" --site-dir "$root/build/site"

phase "notebooks (executed headless; any error output fails)"
# One kernel runs a notebook's cells one after another: $jobs notebooks at a time keep every core busy.
"${PYTHON:-python3}" "$root/tests/notebooks/run_notebooks.py" --binary "$root/build/tools/overlap-sim" --jobs "$jobs"

if [ "${1:-}" != "--quick" ]; then
  phase "AddressSanitizer + UndefinedBehaviorSanitizer build"
  # The instrumented targets compile at -Og -g1 (the root CMakeLists.txt, OVERLAP_SANITIZE_OPTIONS):
  # sanitizers need frames and line numbers, not full optimisation or debug info; -Og rather than
  # -O1: with UBSan's checks GCC 12 compiles a translation unit about a quarter faster, every check
  # kept. Release as the build type and the Python option as above: the test files, which are not
  # instrumented, then compile with the release build's very command line and come from the cache.
  # CUDA off: the sanitizer flags are host-compiler flags, and the CUDA programs are not tests (the
  # release build above compiled them).
  cmake -S "$root" -B "$root/build-asan" $(generator "$root/build-asan") -DCMAKE_BUILD_TYPE=Release -DOVERLAP_SANITIZE=ON \
        -DOVERLAP_BUILD_TESTS=ON -DOVERLAP_BUILD_BENCH=OFF -DOVERLAP_WITH_CUDA=OFF \
        -DOVERLAP_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$py")" "${launcher[@]}" > /dev/null
  cmake --build "$root/build-asan" -j"$jobs" --target overlap_tests overlap-sim overlap-docgen
  phase "sanitizer tests"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure --no-tests=error -j"$jobs"
fi
phase "all passed"
