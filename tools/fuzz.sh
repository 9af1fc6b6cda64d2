#!/usr/bin/env bash
# Fuzz the input loaders with libFuzzer: the scenario loader, the hardware-profile loader,
# the nccl-tests importer, a calibration results directory (validate and the profile writer) and the
# whole command line (outputs against a pipe, links and a directory; number options; --set, --param,
# --sweep; the work budgets) and the trace readers (Kineto JSON, plain and gzip; Nsight Systems
# SQLite) (tests/fuzz/), each for MINUTES minutes (default 10), built with clang +
# ASan + UBSan in build-fuzz/.
#   tools/fuzz.sh [MINUTES] [TARGET...]
#   TARGET: scenario_loader profile_loader nccl_tests_import results_dir cli trace_json trace_sqlite model_config
#   (model_config: the config.json reader (--model), seeded from scenarios/models/ and tests/scenario/model_configs/)
# Working corpora: build-fuzz/corpus/<target>/ (seeded from scenarios/, scenarios/hardware/,
# tests/data/bad_inputs/, tests/data/ nccl-tests samples and calibration results); not committed.
# Findings (crashes, leaks, sanitizer reports, timeouts over 5 s, slow units): saved to
# tests/fuzz/findings/<target>/ for triage; a fixed finding becomes a bad-input corpus entry
# (tools/make_bad_inputs.py) or a unit test. Exit status 1 when a run found something.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
minutes=${1:-10}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario_loader profile_loader nccl_tests_import results_dir cli trace_json trace_sqlite model_config)
case "$minutes" in (*[!0-9.]*|'') echo "fuzz.sh: MINUTES must be a number (got '$minutes')" >&2; exit 2;; esac

bash "$root/tools/setup.sh"
cxx=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
[ -n "$cxx" ] || { echo "fuzz.sh: clang++ not found (tools/setup.sh installs clang)" >&2; exit 2; }
build="$root/build-fuzz"
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
      -DOVERLAP_BUILD_FUZZ=ON -DOVERLAP_BUILD_TESTS=OFF -DOVERLAP_BUILD_BENCH=OFF -DOVERLAP_WITH_CUDA=OFF \
      -DOVERLAP_WITH_MPI=OFF > /dev/null
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}")

seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
found=0
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  findings="$root/tests/fuzz/findings/$t"
  mkdir -p "$corpus" "$findings"
  case "$t" in
    scenario_loader) seeds=("$root"/scenarios/*.yaml "$root"/scenarios/papers/*.yaml "$root"/tests/data/bad_inputs/scenarios/*.yaml) ;;
    profile_loader) seeds=("$root"/scenarios/hardware/*.yaml "$root"/tests/data/bad_inputs/profiles/*.yaml) ;;
    nccl_tests_import) seeds=($(find "$root/tests/data" -maxdepth 2 -name '*nccl*' -type f)) ;;
    model_config) seeds=("$root"/scenarios/models/*.json "$root"/tests/scenario/model_configs/*.json) ;;
    results_dir)
      # The fixture's and the committed H100's measurements, compacted and split by benchmark (a
      # seed must stay under -max_len), and the fixture's scheme runs behind "#--schemes".
      mkdir -p "$build/seeds/results_dir"
      python3 "$root/tests/fuzz/make_results_seeds.py" "$root" "$build/seeds/results_dir"
      seeds=("$build"/seeds/results_dir/*) ;;
    cli)
      # The bad-input corpus's command lines (and a few that succeed), one argument a line.
      mkdir -p "$build/seeds/cli"
      python3 "$root/tests/fuzz/make_cli_seeds.py" "$root" "$build/seeds/cli"
      seeds=("$build"/seeds/cli/*) ;;
    trace_json) seeds=("$root"/tests/data/trace/*.json "$root"/tests/data/trace/*.json.gz) ;;
    trace_sqlite)
      # The SQL fixtures as small databases, and hostile variants (text or NULL times, rows ending
      # before they start, a view named like a table, many processes).
      mkdir -p "$build/seeds/trace_sqlite"
      python3 "$root/tests/fuzz/make_trace_sqlite_seeds.py" "$root" "$build/seeds/trace_sqlite"
      seeds=("$build"/seeds/trace_sqlite/*) ;;
    *) echo "fuzz.sh: unknown target '$t'" >&2; exit 2 ;;
  esac
  for s in "${seeds[@]}"; do
    [ "$(stat -c %s "$s")" -le 65536 ] && cp -n "$s" "$corpus/" 2>/dev/null || true
  done
  echo "== fuzz_$t for $minutes min (corpus $corpus, findings $findings)"
  log="$build/fuzz_$t.log"
  # -timeout 5: the bad-input test's hang guard; -rss_limit_mb: a loader must not need 2 GB.
  set +e
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/fuzz_$t" "$corpus" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
      -max_len=65536 -artifact_prefix="$findings/" -print_final_stats=1 -fork=1 -ignore_crashes=1 \
      -ignore_timeouts=1 -ignore_ooms=1 > "$log" 2>&1
  rc=$?
  set -e
  grep -E "stat::number_of_executed_units|stat::new_units_added|Done [0-9]+ runs|crash-|timeout-|slow-unit-|leak-|oom-" "$log" | tail -8 || true
  if ls "$findings" | grep -qE '^(crash|timeout|leak|oom|slow-unit)-'; then found=1; fi
  [ $rc -eq 0 ] || echo "fuzz_$t: libFuzzer exit status $rc (log: $log)"
done
exit $found
