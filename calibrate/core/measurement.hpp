#pragma once
// One measured configuration of one benchmark, and the set a calibration run writes
// (`measurements.json`) next to the environment it ran in (`environment.json`). These two files are
// the raw data of a results directory `calibrate/results/<gpu>-<host>/`; `profile.yaml` is derived
// from them (profile_writer.hpp) and `overlap-sim validate` reads them back.
//
// measurements.json:
//   {"schema": "overlap-calibrate/1", "fixture": false,
//    "measurements": [{"benchmark": "gemm", "config": {...}, "time_us": {count, median, min, max,
//                      mean, spread}, "derived": {...}}, ...]}
// `config` says what was run (shape, dtype, SM count, bytes, CTAs...), `time_us` the statistics of
// the repeated CUDA-event timings, `derived` figures computed from them or reported by the library
// (TFLOP/s, GB/s, the cuBLASLt algorithm's tile). A file marked `"fixture": true` holds made-up
// numbers for tests and must never be placed under calibrate/results/.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/core/statistics.hpp"

namespace overlap::calibrate {

inline constexpr const char* kMeasurementsSchema = "overlap-calibrate/1";
// The most samples one measurement may hold (time_us.count).
inline constexpr int kMaxSampleCount = 100000;
// Bounds of Measurement::config_count: 2^53 (every whole number below it is exact in a JSON
// double), and 2^20 for counts of SMs, CTAs and ranks (a GPU has at most a few hundred SMs).
inline constexpr std::int64_t kMaxConfigCount = 9007199254740992LL;
inline constexpr std::int64_t kMaxUnitCount = 1LL << 20;

// Benchmark names (the `benchmark` field), one per file under calibrate/cuda/.
namespace bench {
inline constexpr const char* gemm = "gemm";                      // cuBLASLt, whole GPU
inline constexpr const char* gemm_sm = "gemm_sm";                // cuBLASLt confined to k SMs (green context)
inline constexpr const char* gemm_waves = "gemm_waves";          // duration vs tile count (wave profile)
inline constexpr const char* gemm_tile = "gemm_tile";            // full-wave GEMM -> gemm_tile_us
inline constexpr const char* gemm_concurrent = "gemm_concurrent";  // virtual node: one GEMM per partition at once
inline constexpr const char* interference_sm_copy = "interference_sm_copy";
inline constexpr const char* interference_copy_engine = "interference_copy_engine";
inline constexpr const char* interference_nccl = "interference_nccl";
inline constexpr const char* transfer = "transfer";              // copy engine and SM copies
inline constexpr const char* nccl = "nccl";                      // collectives, multi-GPU hosts
inline constexpr const char* collective = "collective";          // the virtual node's own collectives
inline constexpr const char* launch = "launch";                  // host cost, dependent gaps, graphs
inline constexpr const char* hbm_stream = "hbm_stream";          // GEMV-like weight streaming
inline constexpr const char* signal_gemm = "signal_gemm";        // the runner's signalling GEMM vs itself unsignalled
inline constexpr const char* gemm_backward = "gemm_backward";    // a training step's GEMMs in their layouts
inline constexpr const char* grouped_gemm = "grouped_gemm";      // one rank's MoE expert GEMMs, grouped and per expert
// Every name above: a measurements.json entry naming another benchmark is refused (a typo there
// would otherwise drop the measurement from the profile and from validate without a word).
const std::vector<std::string>& all();
}  // namespace bench

struct Measurement {
  std::string benchmark;
  nlohmann::json config = nlohmann::json::object();
  SampleStats time_us;
  nlohmann::json derived = nlohmann::json::object();

  // Where it was read from (measurement_from_json): the file, its key path ("measurements[3]") and
  // the file's text for line numbers. Empty for a measurement made in memory.
  std::string source_file;
  std::string source_path;
  std::shared_ptr<const std::string> source_text;

  // Typed reads of config / derived: a missing or ill-typed key throws overlap::InputError naming
  // the file, line and key path when the measurement was read from a file, std::runtime_error
  // naming the benchmark and key when it was made in memory (a bug, not bad input).
  double config_number(const std::string& key) const;
  std::string config_string(const std::string& key) const;
  double derived_number(const std::string& key) const;
  // Optional keys: `fallback` when absent; present with the wrong type is refused as above. The
  // _int reads want a whole number (20 or 20.0).
  double config_number(const std::string& key, double fallback) const;
  std::int64_t config_int(const std::string& key, std::int64_t fallback) const;
  std::string config_string(const std::string& key, const std::string& fallback) const;
  double derived_number(const std::string& key, double fallback) const;
  std::int64_t derived_int(const std::string& key, std::int64_t fallback) const;
  bool derived_bool(const std::string& key, bool fallback) const;
  // A size or count (m, bytes, sms): a whole number from 1 to `max`, else refused as above.
  std::int64_t config_count(const std::string& key, std::int64_t max = kMaxConfigCount) const;
  // A non-empty list of counts that may be 0 (rows per expert): whole numbers from 0 to `max`, at
  // most `max_items` of them, else refused as above (the key path names the element).
  std::vector<std::int64_t> config_counts(const std::string& key, std::size_t max_items,
                                          std::int64_t max = kMaxConfigCount) const;
  // Reports bad input at `key` ("config.m") of this measurement, the way the typed reads do.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
};

struct MeasurementSet {
  bool fixture = false;
  nlohmann::json environment = nlohmann::json::object();
  std::vector<Measurement> measurements;

  // Every measurement of a benchmark, in file order.
  std::vector<const Measurement*> of(const std::string& benchmark) const;
};

nlohmann::json to_json(const SampleStats& s);
nlohmann::json to_json(const Measurement& m);
// The measurements.json document (without the environment, which is its own file).
nlohmann::json measurements_document(const MeasurementSet& set);

// Parses one measurement; `where` names it in errors ("measurements[3]"), `text` (the file's text,
// may be null) gives their lines. Throws overlap::InputError (file, line, key path) for a missing or
// ill-typed field, an unknown key or an unknown benchmark.
Measurement measurement_from_json(const nlohmann::json& j, const std::string& file, const std::string& where,
                                  std::shared_ptr<const std::string> text = nullptr);

// Reads DIR/measurements.json and DIR/environment.json (the latter optional). Throws
// overlap::InputError naming the file and key for malformed input, and when the file is missing.
MeasurementSet load_measurement_dir(const std::string& dir);

// Writes DIR/measurements.json and DIR/environment.json atomically.
void write_measurement_dir(const std::string& dir, const MeasurementSet& set);

}  // namespace overlap::calibrate
