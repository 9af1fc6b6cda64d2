#pragma once
// Helpers the scheme tests share: a TP+SP MLP workload, a scheme built or evaluated on a profile, the
// key a refused build names, and the bytes a byte-accounting matrix holds.
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/scheme.hpp"

namespace overlap::sim::test {

inline Workload mlp_tpsp_workload(int tp, std::int64_t tokens, std::int64_t d_model, std::int64_t d_ffn) {
  Workload w;
  w.kind = WorkloadKind::mlp_tpsp;
  w.tp = tp;
  w.shape = MlpTpSp{tokens, d_model, d_ffn, true, DType::bf16};
  return w;
}

inline BuiltScheme build_scheme(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                                const nlohmann::json& params, Fidelity fidelity = Fidelity::steps) {
  const SchemeInfo* s = find_scheme(scheme);
  REQUIRE(s);
  BuildContext ctx{w, hw, params, fidelity};
  return s->build(ctx);
}

// The key path the InputError names when `scheme` is built with `params` ("params.m"), or "none"
// when it builds.
inline std::string refused_key(const SchemeInfo& scheme, const Workload& w, const HardwareProfile& hw,
                               const nlohmann::json& params) {
  BuildContext ctx{w, hw, params, Fidelity::curve};
  try {
    scheme.build(ctx);
  } catch (const InputError& e) {
    return e.key_path();
  }
  return "none";
}

// The engine's makespan of the scheme's graph.
inline Ps scheme_latency(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                         const nlohmann::json& params) {
  const BuiltScheme b = build_scheme(scheme, w, hw, params);
  return run(b.graph, make_node(hw, w.tp)).makespan_ps;
}

// evaluate(): full metrics, the byte accounting checked inside.
inline SchemeResult evaluate_scheme(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                                    const nlohmann::json& params, Fidelity fidelity = Fidelity::steps) {
  const SchemeInfo* s = find_scheme(scheme);
  REQUIRE(s);
  BuildContext ctx{w, hw, params, fidelity};
  return evaluate(*s, ctx);
}

inline Bytes total_bytes(const std::vector<std::vector<Bytes>>& m) {
  Bytes t = 0;
  for (const auto& row : m)
    for (Bytes b : row) t += b;
  return t;
}

}  // namespace overlap::sim::test
