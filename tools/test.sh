#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and pass the tests; then the same tests once
# more under AddressSanitizer + UndefinedBehaviorSanitizer. `--quick` skips the sanitizer pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
quick=0
[ "${1:-}" = "--quick" ] && quick=1
bash "$root/tools/setup.sh"
# Each phase header carries the seconds since the start, so a CI log shows where its time went.
phase() { echo "== $* [${SECONDS} s]"; }

# Ninja for a new build directory: it compiles every library's files as soon as their headers exist,
# where make finishes one library before it starts the next. A directory configured before keeps its
# generator (CMake refuses to change it).
generator() { [ -f "$1/CMakeCache.txt" ] || echo "-GNinja"; }

# A compiler cache of this run's own (build-ccache/), when ccache is there (tools/setup.sh installs
# it), for the test files alone (OVERLAP_TEST_COMPILER_LAUNCHER, tests/CMakeLists.txt): they compile
# exactly as in the release build in the sanitizer build (tests/CMakeLists.txt, "One compile for both
# builds"), so they come from the cache instead of being compiled twice. The libraries' objects differ
# between the two builds (-O3 against the sanitizers' -Og), so a cache could only cost them its
# preprocessor run and its writes. BASEDIR: paths under the checkout are hashed relative to the build
# directory, the same in build/ and build-asan/. pch_defines, time_macros: the precompiled header of
# the test files (ccache's manual, "Precompiled headers").
launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_DIR="$root/build-ccache" CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1 \
         CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime CCACHE_MAXSIZE=5G
  launcher=(-DOVERLAP_TEST_COMPILER_LAUNCHER=ccache)
fi
py=${PYTHON:-python3}

# Steps in the background: each writes a log of its own under build-logs/ and its exit status next to
# it; `join NAME` waits for one, prints its log whole and its times, and fails the run if it failed.
# Two of them overlap the rest: the sanitizer pass (build, then tests) runs beside the release tests,
# the Python package and the notebooks, and the site beside the builds. Each of those alone leaves a
# core idle part of the time (one long test or notebook at the end, a single-threaded step, CMake's
# configure); together the two cores stay busy (docs/development.md, "Where CI's time goes").
logs="$root/build-logs"
rm -rf "$logs"
mkdir -p "$logs"
declare -A pids=()
start_step() {  # start_step NAME COMMAND...: runs COMMAND in the background, output to build-logs/NAME.log
  local name=$1
  shift
  echo "== $name: started in the background [${SECONDS} s] (log: build-logs/$name.log)"
  ( set +e
    begin=$SECONDS
    "$@" > "$logs/$name.log" 2>&1
    rc=$?
    echo "$rc $begin $SECONDS" > "$logs/$name.status"
    exit $rc ) &
  pids[$name]=$!
}
join() {  # join NAME: waits for the step, prints its log, fails the run if it failed
  local name=$1 rc=0
  wait "${pids[$name]}" || rc=$?
  read -r _ begin end < "$logs/$name.status" || true
  echo "== $name (background, from $begin s to $end s): its log follows"
  cat "$logs/$name.log"
  if [ "$rc" -ne 0 ]; then
    echo "test.sh: $name failed (exit $rc; its log above, and in build-logs/$name.log)" >&2
    exit "$rc"
  fi
  echo "== $name passed [${SECONDS} s]"
}
# If the run fails, the background steps stop with it, each with the processes it started (stopped
# first, so that ctest or ninja starts nothing new while its children are ended).
kill_tree() {
  kill -STOP "$1" 2> /dev/null || return 0
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill -TERM "$1" 2> /dev/null
  kill -CONT "$1" 2> /dev/null || true
}
trap 'rc=$?; if [ $rc -ne 0 ]; then for p in "${pids[@]}"; do kill_tree "$p"; done; fi; exit $rc' EXIT

# The site needs no build: `mkdocs build --strict` (a broken link or an unlisted page fails).
start_step site env NO_MKDOCS_2_WARNING=1 "$py" -m mkdocs build --strict --quiet \
  --config-file "$root/mkdocs.yml" --site-dir "$root/build/site"

# The sanitizer build's configure runs beside the release build's (each is one process, mostly waiting
# on the compiler checks it starts). Release as the build type and the Python option as in the release
# build: the test files, which are not instrumented, then compile with the release build's very command
# line and come from the cache. The instrumented targets compile at -Og -g1 (the root CMakeLists.txt,
# OVERLAP_SANITIZE_OPTIONS): sanitizers need frames and line numbers, not full optimisation or debug
# info; -Og rather than -O1: with UBSan's checks GCC 12 compiles a translation unit about a quarter
# faster, every check kept. CUDA off: the sanitizer flags are host-compiler flags, and the CUDA
# programs are not tests (the release build compiles them).
configure_asan() {
  cmake -S "$root" -B "$root/build-asan" $(generator "$root/build-asan") -DCMAKE_BUILD_TYPE=Release -DOVERLAP_SANITIZE=ON \
        -DOVERLAP_BUILD_TESTS=ON -DOVERLAP_BUILD_BENCH=OFF -DOVERLAP_WITH_CUDA=OFF \
        -DOVERLAP_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$py")" "${launcher[@]}"
}
if [ "$quick" -eq 0 ]; then
  start_step sanitizer-configure configure_asan
fi

phase "release build"
# Tests on explicitly: build/ may have been configured by tools/run.sh without them.
# OVERLAP_BUILD_PYTHON: the same build makes the overlap_sim module (build/python/overlap_sim/), for
# the interpreter the tests below run under; the C++ core is compiled once for both.
cmake -S "$root" -B "$root/build" $(generator "$root/build") -DCMAKE_BUILD_TYPE=Release -DOVERLAP_BUILD_TESTS=ON -DOVERLAP_BUILD_BENCH=ON \
      -DOVERLAP_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$py")" "${launcher[@]}" > /dev/null
cmake --build "$root/build" -j"$jobs"

if [ "$quick" -eq 0 ]; then
  join sanitizer-configure
  # The sanitizer pass, from here on beside the release tests: the build needs the release build's
  # test objects in the cache, nothing else of it. Every test, less the three tagged [corpus], with
  # the sampling of tests/CMakeLists.txt (docs/development.md).
  sanitizer_pass() {
    echo "== AddressSanitizer + UndefinedBehaviorSanitizer build [${SECONDS} s]"
    cmake --build "$root/build-asan" -j"$jobs" --target overlap_tests overlap-sim overlap-docgen || return
    echo "== sanitizer tests [${SECONDS} s]"
    # A temporary directory of its own (short: OpenMPI puts its sockets there): a test file that
    # writes a fixed name under the temporary directory (tests/schemes/test_mla_attention.cpp,
    # tests/scenario/scheme_params_cli_test.cpp) may run in both passes at once.
    local tmp rc=0
    tmp=$(mktemp -d /tmp/overlap-asan.XXXXXX) || return
    TMPDIR=$tmp ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir "$root/build-asan" --output-on-failure --no-tests=error -j"$jobs" || rc=$?
    rm -rf "$tmp"
    return $rc
  }
  start_step sanitizer sanitizer_pass
fi

phase "release tests"
ctest --test-dir "$root/build" --output-on-failure --no-tests=error -j"$jobs"

phase "Python package (tests/python: the module against the CLI, errors, threads)"
if ! ls "$root"/build/python/overlap_sim/_core*.so > /dev/null 2>&1; then
  echo "test.sh: the overlap_sim module was not built (nanobind missing? see the cmake warning; tools/setup.sh installs it)" >&2
  exit 1
fi
PYTHONPATH="$root/build/python" OVERLAP_SIM_CLI="$root/build/tools/overlap-sim" \
  "$py" -m pytest -q -p no:cacheprovider "$root/tests/python"

phase "notebooks (executed headless; any error output fails)"
# One kernel runs a notebook's cells one after another: $jobs notebooks at a time keep every core busy.
"$py" "$root/tests/notebooks/run_notebooks.py" --binary "$root/build/tools/overlap-sim" --jobs "$jobs"

join site
if [ "$quick" -eq 0 ]; then
  join sanitizer
fi
phase "all passed"
