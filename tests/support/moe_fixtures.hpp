#pragma once
// Helpers the moe tests share (test_moe*.cpp, test_mla_attention.cpp): a
// moe workload over an EP group (with expert TP), a Zipf routing, a moe scheme built or run on a profile,
// the per-rank-pair byte check, the all-to-allvs' sends per pair, and a pass's GEMM tile time.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/moe_routing.hpp"
#include "sim/engine.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/timeline.hpp"
#include "sim/workload.hpp"

namespace overlap::sim::test {

// One MoE layer of `experts` gated experts (d_ffn wide), top_k of them per token, over `ep` ranks
// that route `tokens` tokens each.
inline Workload moe_workload(int ep, int experts, int top_k, std::int64_t tokens, std::int64_t d_model,
                             std::int64_t d_ffn, MoeRoutingSpec routing = {}) {
  Moe m;
  m.experts = experts;
  m.top_k = top_k;
  m.ep = ep;
  m.d_model = d_model;
  m.d_ffn_expert = d_ffn;
  m.tokens = tokens;
  m.routing = routing;
  Workload w;
  w.kind = WorkloadKind::moe;
  w.tp = ep;
  w.shape = m;
  return w;
}

// `w` with each expert's FFN split over `expert_tp` GPUs: ep x expert_tp graph ranks, ETP innermost.
inline Workload with_expert_tp(Workload w, int expert_tp) {
  Moe& m = std::get<Moe>(w.shape);
  m.expert_tp = expert_tp;
  w.tp = m.ep * expert_tp;
  return w;
}

inline MoeRoutingSpec zipf_routing(double s, std::uint64_t seed = 1) {
  MoeRoutingSpec r;
  r.kind = MoeRoutingSpec::Kind::zipf;
  r.zipf_s = s;
  r.seed = seed;
  return r;
}

// The scheme's graph for `w` (the scheme must apply to it).
inline BuiltScheme build_moe_scheme(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                                    const nlohmann::json& params = nlohmann::json::object(),
                                    Fidelity f = Fidelity::curve) {
  const SchemeInfo* s = find_scheme(scheme);
  REQUIRE(s != nullptr);
  REQUIRE(s->applies(w));
  return s->build(BuildContext{w, hw, params, f});
}

// The engine's makespan of that graph on a node of w.tp GPUs.
inline Ps moe_scheme_latency(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                             const nlohmann::json& params = nlohmann::json::object(), Fidelity f = Fidelity::curve) {
  const BuiltScheme b = build_moe_scheme(scheme, w, hw, params, f);
  return run(b.graph, make_node(hw, w.tp)).makespan_ps;
}

// The scheme's bytes per rank pair [src][dst] are `expected`: those its graph requires, and at steps
// fidelity those the engine moves.
inline void check_pair_bytes(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                             const nlohmann::json& params, const std::vector<std::vector<Bytes>>& expected) {
  const BuiltScheme b = build_moe_scheme(scheme, w, hw, params);
  CHECK(b.required_bytes == expected);
  const BuiltScheme st = build_moe_scheme(scheme, w, hw, params, Fidelity::steps);
  const Timeline tl = run(st.graph, make_node(hw, w.tp));
  const auto n = static_cast<std::size_t>(w.tp);
  std::vector<std::vector<Bytes>> moved(n, std::vector<Bytes>(n, 0));
  for (const auto& p : bytes_by_pair(tl)) moved[p.src][p.dst] += p.bytes;
  CHECK(moved == expected);
}

// Per (sender rank, peer) the curve bytes of the ops whose names start with `prefix` (the all-to-allvs'
// per-pair sends).
inline std::map<std::pair<int, int>, Bytes> sends_of(const BuiltScheme& b, const std::string& prefix) {
  std::map<std::pair<int, int>, Bytes> out;
  const TaskGraph& g = b.graph;
  for (const Op& op : g.ops()) {
    if (op.name.rfind(prefix, 0) != 0) continue;
    const int r = g.streams()[static_cast<std::size_t>(op.stream)].rank;
    for (const PeerBytes& s : op.curve_sends) out[{r, s.peer}] += s.bytes;
  }
  return out;
}

// Tile time of the graph's GEMMs of one pass (tiles x tile time; core attention's FLOP kernels left out).
// On the ideal node a 128 x 128 tile takes K / 1024 us, so with every dimension a multiple of 128 this is
// the GEMMs' FLOPs / (2 x 128 x 128 x 1024) us exactly.
inline Ps gemm_tile_ps(const BuiltScheme& b, StepPass pass) {
  Ps out = 0;
  for (const Op& op : b.graph.ops())
    if (op.pass == pass && op.kind == OpKind::tiled && op.name.find("attn.core") == std::string::npos)
      out += op.ctas * op.cta_ps;
  return out;
}

}  // namespace overlap::sim::test
