#pragma once
// Scheme runs: the configuration list the scheme runner (overlap-bench-schemes) executes, and the
// results it writes. A configuration names a scheme with its parameters exactly as the simulator
// takes them (`overlap-sim schemes`) and a workload written as a scenario's `workload:` map, so
// `overlap-sim validate` can simulate the very same thing it measured.
//
// Configuration list (calibrate/configs/*.json):
//   {"schema": "overlap-scheme-configs/1", "description": "...", "warmup": 5, "repetitions": 20,
//    "runs": [{"id": "...", "scheme": "flashoverlap", "params": {"groups": [1, 2, 3]},
//              "link": "d2d", "workload": {"kind": "gemm_collective", "tp": 4, "m": 4096, ...}}]}
// Results (DIR/schemes/schemes.json):
//   {"schema": "overlap-scheme-runs/1", "fixture": false, "host": "virtual" | "nodes",
//    "profile": "profile_virtual.yaml", "environment": {...},
//    "runs": [{<the configuration>, "check": {"rel_error", "tolerance", "passed"},
//              "latency_us": {stats}, "compute_only_us": {stats}}],
//    "virtual_nodes": [{"profile": "profile_virtual_t4_d2d.yaml", "ranks": 4, "link": "d2d",
//                       "rank_sms": 32, "environment": {...}, "measurements": [...]}]}
// latency is the slowest rank's (virtual ranks: the whole run's); compute-only is the same run with
// every transfer skipped, so exposed communication = latency - compute-only, the simulator's one
// definition (design.md "Metrics").
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/core/measurement.hpp"
#include "calibrate/core/statistics.hpp"
#include "sim/schemes/knob_values.hpp"
#include "sim/workload_kind.hpp"

namespace overlap::calibrate {

inline constexpr const char* kSchemeConfigsSchema = "overlap-scheme-configs/1";
inline constexpr const char* kSchemeRunsSchema = "overlap-scheme-runs/1";

struct SchemeRunConfig {
  std::string id;
  std::string scheme;
  nlohmann::json params = nlohmann::json::object();
  nlohmann::json workload = nlohmann::json::object();  // scenario form, kept verbatim
  std::string link = "d2d";  // virtual ranks: d2d (copy engine inside the GPU) | host (staged, PCIe-like)

  // The parsed workload the runner executes.
  sim::WorkloadKind kind = sim::WorkloadKind::gemm_collective;  // gemm_collective | decode_stack
  int ranks = 0;             // workload.tp
  std::string dtype = "bf16";
  std::int64_t m = 0, n = 0, k = 0;   // gemm_collective: the per-rank GEMM (scenario convention)
  std::string primitive;              // all_reduce | reduce_scatter | all_gather
  int layers = 0;                     // decode_stack
  std::int64_t d_model = 0, d_ffn = 0, heads = 0, kv_heads = 0;
};

struct SchemeConfigList {
  std::string description;
  int warmup = 5;
  int repetitions = 20;
  std::vector<SchemeRunConfig> runs;
};

// A run's scheme knob: the value in its params, else the scheme table's default
// (sim/schemes/knob_values.hpp), which the simulator takes too.
std::int64_t run_param(const SchemeRunConfig& c, const sim::knobs::IntKnob& knob);
template <std::size_t N>
std::string run_param(const SchemeRunConfig& c, const sim::knobs::ChoiceKnob<N>& knob) {
  return c.params.is_object() ? c.params.value(knob.name, std::string(knob.default_value())) : knob.default_value();
}

// FlashOverlap runs: the signalling GEMM's CTAs per SM when params does not give ctas_per_sm (one per
// SM). A kernel configuration of the runner, not a scheme knob: the simulator reads it from the virtual
// node's profile (gpu.gemm_ctas_per_sm).
inline constexpr int kRunCtasPerSm = 1;
int run_ctas_per_sm(const nlohmann::json& params);

// Schemes the reference kernels implement, with the workloads each runs.
const std::vector<std::string>& runnable_schemes();

// Parses and checks a list: unknown keys, a scheme the runner does not implement or that does not
// apply to the workload, shapes the kernels cannot run (dimensions not multiples of 128, rows not
// divisible by ranks x chunks), parameters out of range, duplicate ids. Throws overlap::InputError
// naming the file and key path.
// `text`: the file's text, for the line numbers of errors (null: line 0).
SchemeConfigList parse_scheme_config_list(const nlohmann::json& doc, const std::string& file,
                                          std::shared_ptr<const std::string> text = nullptr);
SchemeConfigList load_scheme_config_list(const std::string& file);

struct SchemeRunResult {
  SchemeRunConfig config;
  std::string profile;    // this run's profile file (relative to the results file); "" = the set's
  double rel_error = 0;   // ||out - ref|| / ||ref|| against cuBLAS + a reference collective
  double tolerance = 0;
  bool passed = false;
  SampleStats latency_us;
  SampleStats compute_only_us;
  // The host's time to enqueue one repetition of the whole run (median; 0 = not recorded): where it approaches latency_us, the run is bound by its one host thread.
  double host_enqueue_us = 0;
};

// One virtual node the runner measured (virtual ranks on one GPU): the profile written for it, and
// the node's own calibration that profile was written from, so `overlap-calibrate-profile --schemes`
// can write it again and validate can score the node's concurrent GEMMs.
struct VirtualNodeRecord {
  std::string profile;  // its profile: a file name beside schemes.json (no directory part), *.yaml
  int ranks = 0;        // T, at least 2
  std::string link;     // d2d | host
  int rank_sms = 0;     // SMs of each rank's green context
  nlohmann::json environment = nlohmann::json::object();
  std::vector<Measurement> measurements;
};

nlohmann::json to_json(const VirtualNodeRecord& v);

struct SchemeRunSet {
  bool fixture = false;
  std::string host = "virtual";  // virtual | nodes
  std::string profile;           // profile file, relative to the results file
  nlohmann::json environment = nlohmann::json::object();
  std::vector<SchemeRunResult> runs;
  // The virtual nodes' own measurements, from which their profiles were written
  // (overlap-calibrate-profile --schemes regenerates them).
  std::vector<VirtualNodeRecord> virtual_nodes;
};

nlohmann::json to_json(const SchemeRunConfig& c);
nlohmann::json scheme_runs_document(const SchemeRunSet& set);
SchemeRunSet parse_scheme_runs(const nlohmann::json& doc, const std::string& file,
                               std::shared_ptr<const std::string> text = nullptr);
SchemeRunSet load_scheme_runs(const std::string& file);

}  // namespace overlap::calibrate
