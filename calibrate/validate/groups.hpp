#pragma once
// What validate_dir (validate.cpp) is made of, one concept per file: the rows and their statistics
// (rows.cpp), the engine's predictions of the benchmarks (engine_predictions.cpp), the benchmark
// groups (gemm_groups.cpp, transfer_groups.cpp), the scheme runs (scheme_groups.cpp) and the
// verdict (judge.cpp).
#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/core/measurement.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "calibrate/validate/validate.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/statistics.hpp"

namespace overlap::calibrate {

// --- rows.cpp ---
DType dtype_of(const Measurement& m);
GemmShape shape_of(const Measurement& m);
std::string shape_text(const GemmShape& s);
bool has_gemm_profile(const HardwareProfile& p, const GemmShape& s);
ValidationRow row(std::string config, const Measurement& m, double predicted_us, bool fitted);
// An empty group of `benchmark`'s rows, predicted as `model` says.
ValidationGroup new_group(std::string benchmark, std::string model);
// Appends each of `groups` that has rows to the report, in order (a benchmark that did not run has none).
void add_groups(ValidationReport& rep, std::initializer_list<ValidationGroup*> groups);
// Appends |error| % of each scored row (one not fitted) to errs.
void append_scored_errors(const std::vector<ValidationRow>& rows, std::vector<double>& errs);
// A group's or the whole report's error figures from its scored rows' |error| %.
template <class Scored>
void set_error_figures(Scored& s, const std::vector<double>& errs) {
  const AbsErrorFigures f = abs_error_figures(errs);
  s.scored = f.count;
  if (f.count == 0) return;
  s.median_abs_error_pct = f.median;
  s.max_abs_error_pct = f.max;
}
// The group's error figures over its scored rows (and its exposed-communication figures).
void finish(ValidationGroup& g);
// A GEMM's time grows with K at fixed M, N and SMs: a row slower than the same GEMM with at least 4x
// its K is marked suspicious (rows[i] is shapes[i] on sms[i]) and listed in rep.suspicious.
void flag_slower_than_longer_k(ValidationGroup& g, const std::vector<GemmShape>& shapes, const std::vector<int>& sms,
                               ValidationReport& rep);

// --- engine_predictions.cpp ---
double simulate_gemm_us(const HardwareProfile& p, const GemmShape& s, int sms);
double simulate_gemm_beside_copies_us(const HardwareProfile& p, const GemmShape& s, Bytes copy_bytes, int warmup, int reps,
                                      bool timed_copy = false, int gemms_beside = 1);
double simulate_concurrent_gemm_us(const HardwareProfile& p, const GemmShape& s, int ranks);
double simulate_grouped_gemm_us(const HardwareProfile& p, const std::vector<GemmShape>& experts);
double simulate_gemm_sequence_us(const HardwareProfile& p, const std::vector<GemmShape>& gemms);

// --- gemm_groups.cpp, transfer_groups.cpp, scheme_groups.cpp ---
void gemm_groups(const MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep);
void transfer_groups(const MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep);
// DIR/schemes/schemes.json, when there is one: the virtual nodes' concurrent GEMMs, every scheme run
// and FlashOverlap's partitions.
void scheme_groups(const std::string& dir, ValidationReport& rep);

// --- judge.cpp ---
// Each group's accuracy target and recorded median (validation.json at `recorded`), its tolerance
// for single rows, and the verdict.
void judge(ValidationReport& rep, const std::filesystem::path& recorded);

}  // namespace overlap::calibrate
