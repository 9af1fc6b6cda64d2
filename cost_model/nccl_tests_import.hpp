#pragma once
// Import of nccl-tests results (all_reduce_perf, reduce_scatter_perf, all_gather_perf, alltoall_perf,
// broadcast_perf, reduce_perf) into a BandwidthCurve: time vs the full array size S, the `curve`
// fidelity's input (design.md "Collectives"). Two inputs are read:
//  - the text table printed on stdout: '#' header lines, then one row per size with the columns
//    size count type redop root, then (time algbw busbw #wrong) out-of-place and again in-place;
//  - the JSON report (nccl-tests -J / --output_file x.json): {"config": ..., "devices": [...],
//    "results": [{"size", "count", "type", "redop", "root",
//                 "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"}, "in_place": {...}}]}.
// A run forced to one protocol or algorithm says so in its output when NCCL_DEBUG=INFO printed it
// ("NCCL INFO NCCL_PROTO set by environment to LL128") or a comment line records the setting
// ("# NCCL_PROTO=LL128"); a JSON report may carry "NCCL_PROTO" / "NCCL_ALGO" at its top level, in
// "config" or in "config.env". Lists and exclusions ("LL,LL128", "^LL") force no single one.
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/bandwidth_curve.hpp"
#include "cost_model/collective_primitive.hpp"
#include "cost_model/nccl_constants.hpp"

namespace overlap {

struct NcclTestsMeasurement {
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

struct NcclTestsRow {
  Bytes size_bytes = 0;  // S: the full array size (nccl-tests' "size" column)
  std::int64_t count = 0;
  std::string type, redop;
  int root = -1;
  std::optional<NcclTestsMeasurement> out_of_place;  // absent when nccl-tests skipped it
  std::optional<NcclTestsMeasurement> in_place;
};

struct NcclTestsResult {
  std::optional<CollectivePrimitive> primitive;  // from "# Collective test starting: X_perf", if any
  int n_ranks = 0;  // number of "#  Rank" device lines (JSON: devices); 0 when not reported
  std::optional<NcclProtocol> protocol;   // NCCL_PROTO the run was forced to (one protocol), if recorded
  std::optional<NcclAlgorithm> algorithm; // NCCL_ALGO likewise
  std::vector<NcclTestsRow> rows;
  std::string source;  // the file (or name) it was read from, for errors

  // Time vs size from the out-of-place (default) or in-place columns; rows of size 0 are skipped.
  BandwidthCurve curve(bool in_place = false) const;
  // busbw / algbw observed in the rows (nccl-tests' factor; checks the primitive and rank count).
  double observed_busbw_factor(bool in_place = false) const;
};

// Throws InputError (with the file and line) on rows it cannot read.
NcclTestsResult parse_nccl_tests_text(std::istream& in, const std::string& source_name);
// `text`: the report's text, for the line numbers of errors (null: line 0).
NcclTestsResult parse_nccl_tests_json(const nlohmann::json& report, const std::string& source_name,
                                      const std::string* text = nullptr);
// Reads a file, choosing the format by its first non-blank character ('{' = JSON).
NcclTestsResult load_nccl_tests_file(const std::string& path);

// "all_reduce_perf" -> all_reduce, "alltoall_perf" -> all_to_all, ...
std::optional<CollectivePrimitive> primitive_from_nccl_tests_program(const std::string& program);

}  // namespace overlap
