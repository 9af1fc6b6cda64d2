#pragma once
// Validation: the simulator's predictions held against a calibration results directory (design.md
// "Calibration and validation"). DIR holds measurements.json + environment.json + profile.yaml
// (overlap-calibrate) and optionally schemes/schemes.json with the profiles it names
// (overlap-bench-schemes). Every measured configuration that the model covers is simulated with
// DIR's own profile: measured vs predicted with the error, grouped by benchmark, with the median and
// max absolute % error per group and overall. Rows whose measurement the profile was built from
// (full-GPU GEMM durations, transfer sizes on the curve's sample grid) are kept but marked `fitted`
// and left out of the error figures: they agree by construction. recorded_figures() is what
// DIR/validation.json holds, which the CI test (tests/calibrate) holds later runs to.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace overlap::calibrate {

struct ValidationRow {
  std::string config;        // what was run, in words ("8192x8192x4096 bf16 on 64 SMs")
  double measured_us = 0;
  double predicted_us = 0;
  double error_pct = 0;      // 100 * (predicted - measured) / measured
  double spread = 0;         // the measurement's max / min
  bool fitted = false;       // the profile was built from this measurement
  bool off = false;          // scored and |error| beyond its group's tolerance
  std::string suspicious;    // why the measurement itself looks wrong ("" = nothing seen)
  std::string note;          // e.g. the run's reference check and host enqueue time
  // Scheme runs: exposed communication (latency - compute-only, design.md "Metrics"), measured
  // and predicted; none for the benchmarks.
  std::optional<double> exposed_measured_us, exposed_predicted_us;
};

struct ValidationGroup {
  std::string benchmark;     // gemm, gemm_sm, gemm_waves, transfer, ..., schemes
  std::string model;         // how the prediction was made
  std::vector<ValidationRow> rows;
  int scored = 0;            // rows not fitted
  double median_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  // Over the rows with exposed communication (scheme runs): the median |predicted - measured| in us
  // and as % of each run's measured latency (exposed time can be near zero, so a % of itself says
  // little). 0 rows: none.
  int exposed_rows = 0;
  double exposed_median_abs_error_us = 0;
  double exposed_median_abs_error_pct_of_latency = 0;
  // The accuracy the project promises for this group (accuracy_target_pct); absent where none is stated.
  std::optional<double> target_median_pct = std::nullopt;
  // The median |error| recorded in DIR/validation.json (what CI holds later runs to, plus
  // kValidationMarginPct); absent when nothing was recorded for it.
  std::optional<double> recorded_median_pct = std::nullopt;
  // "ok", "MISS" (median above its target), "REGRESSED" (above its recorded median + margin), or "-"
  // (neither a target nor a record).
  std::string result = {};
  // Rows with |error| above this are flagged: kOffFactor x the target (else the recorded median, else
  // the group's own median), at least kOffFloorPct.
  double tolerance_pct = 0;
  int off_rows = 0;
};

// The margin by which a median may exceed its recorded figure (the CI test's, tests/calibrate).
inline constexpr double kValidationMarginPct = 0.5;
inline constexpr double kOffFactor = 3.0;
inline constexpr double kOffFloorPct = 5.0;

// The median |error| the calibration promises per group, as the calibration and scheme-runner work
// stated it: GEMM durations over the shape grid and SM counts <= 5 %, transfer curves <= 5 %,
// predicted scheme latency <= 5 % (FlashOverlap reports 3.4 % for its own predictor, Sec. 6.5).
// Groups without a stated target (interference, HBM streaming) are held to their record only.
std::optional<double> accuracy_target_pct(const std::string& benchmark);

// FlashOverlap: for one workload, the partition measured fastest vs the one the simulator ranks
// first among the same measured candidates.
struct PartitionCheck {
  std::string workload;
  std::string profile;  // the node's profile (runs over another link are another check)
  std::string measured_best;
  std::string simulated_best;
  double measured_best_us = 0;
  double simulated_pick_measured_us = 0;  // measured latency of the simulator's pick
  double regret_pct = 0;                  // 100 * (that / measured best - 1)
  // FlashOverlap's own predictor (its Alg. 1, cost_model/flashoverlap_predictor.hpp) ranking the same
  // candidates with the profile's GEMM time and collective curve; empty when the profile has no curve.
  std::string predictor_best;
  double predictor_pick_measured_us = 0;
  // `overlap-sim tune`'s partition over every composition (sim::tune_wave_groups, its default
  // search), in tiles per group; its measured latency when a run had exactly that partition, else 0.
  std::vector<std::int64_t> tune_best_tiles;
  double tune_simulated_us = 0;
  double tune_pick_measured_us = 0;
};

struct ValidationReport {
  std::string dir;
  std::string profile_file;
  bool fixture = false;
  std::vector<ValidationGroup> groups;
  std::vector<PartitionCheck> partitions;
  std::vector<std::string> skipped;  // what could not be simulated, and why
  int scored = 0;
  double median_abs_error_pct = 0;   // over every scored row
  double max_abs_error_pct = 0;
  std::optional<double> recorded_median_pct;  // validation.json's "all"
  // Measurements that contradict each other (a GEMM slower than the same GEMM with 4x its K), fitted
  // or not: "gemm 8192x8192x1024 bf16: ...".
  std::vector<std::string> suspicious;
  // "PASS" when every group meets its accuracy target and its record; "MISS" when a group's median is
  // above its accuracy target; "REGRESSED" when a median exceeds its record + margin (both: "MISS,
  // REGRESSED"); "NO TARGET" when no group has either. verdict_detail names the groups.
  std::string verdict;
  std::string verdict_detail;
};

// Throws overlap::InputError for a missing or malformed file in DIR.
ValidationReport validate_dir(const std::string& dir);

nlohmann::json to_json(const ValidationReport& report);
// {"median_abs_error_pct": {"all": x, "<benchmark>": y, ...}, "rows_scored": {...}}
nlohmann::json recorded_figures(const ValidationReport& report);

}  // namespace overlap::calibrate
