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
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/core/statistics.hpp"

namespace overlap::calibrate {

inline constexpr const char* kMeasurementsSchema = "overlap-calibrate/1";

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
}  // namespace bench

struct Measurement {
  std::string benchmark;
  nlohmann::json config = nlohmann::json::object();
  SampleStats time_us;
  nlohmann::json derived = nlohmann::json::object();

  // Typed reads of config / derived; throw std::runtime_error naming the benchmark and key.
  double config_number(const std::string& key) const;
  std::string config_string(const std::string& key) const;
  double derived_number(const std::string& key) const;
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

// Parses one measurement; `where` names it in errors ("measurements.json: measurements[3]").
// Throws overlap::InputError (file, key path) for a missing or ill-typed field.
Measurement measurement_from_json(const nlohmann::json& j, const std::string& file, const std::string& where);

// Reads DIR/measurements.json and DIR/environment.json (the latter optional). Throws
// overlap::InputError naming the file and key for malformed input, and when the file is missing.
MeasurementSet load_measurement_dir(const std::string& dir);

// Writes DIR/measurements.json and DIR/environment.json atomically.
void write_measurement_dir(const std::string& dir, const MeasurementSet& set);

}  // namespace overlap::calibrate
