#pragma once
// The interface between schemes and the rest: a scheme is a builder
// (Workload, HardwareProfile, params) -> TaskGraph, with its source cited (design.md "Scheme library").
// Schemes know algorithms; the engine knows resources; neither reaches into the other.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/hardware_profile.hpp"
#include "sim/task_graph.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

enum class Fidelity : std::uint8_t { curve, steps };

struct NodeConfig;  // sim/engine.hpp

struct SchemeParam {
  std::string name;
  std::string type;         // "int", "string", "list", "bool", "number"
  std::string default_value;
  std::string help;
  // The values `overlap-sim tune SCENARIO` tries for this knob (empty: the knob is not tuned).
  std::vector<nlohmann::json> tune_values = {};
  // "other=value": tune this knob only in configurations where knob `other` has that value (an SM
  // copy kernel's size means nothing for copy-engine pulls). "" = always.
  std::string tune_when = {};
  // What production systems call this knob (Megatron-LM, TransformerEngine, NCCL, PyTorch), for
  // `overlap-sim schemes`; "" = no production equivalent.
  std::string equivalent = {};
};

struct BuildContext {
  const Workload& workload;
  const HardwareProfile& hardware;
  const nlohmann::json& params;  // validated against SchemeInfo::params by the caller
  Fidelity fidelity = Fidelity::curve;
  // The engine's node for `hardware` (make_node), shared by every build and run of a scenario so
  // routes are found once; nullptr: built where needed.
  const NodeConfig* node = nullptr;
};

// One collective call a scheme issued through GraphBuilder::add_collective (nccl-tests' view of it):
// the member ops in the graph share `id` as their Op::collective. What the per-collective breakdown
// of a result (sim/metrics.hpp CollectiveFigure) is computed from, with the ops' start and end.
struct CollectiveCall {
  std::int64_t id = -1;
  std::string name;
  Primitive primitive = Primitive::all_reduce;
  Bytes bytes = 0;        // nccl-tests S
  int ranks = 0;
  std::string algorithm;  // what NCCL's model chose for this size (nccl_algorithm_name)
  std::string protocol;   // nccl_protocol_name
  int channels = 0;       // SMs held
};

struct BuiltScheme {
  TaskGraph graph;
  // Bytes each rank must send to each other rank for the workload's collectives (the byte
  // accounting the simulator checks against the timeline), [src][dst].
  std::vector<std::vector<Bytes>> required_bytes;
  // Latency perfect overlap would give (FlashOverlap Sec. 6.4), when the scheme can state it; < 0 =
  // the caller uses the generic bound.
  Ps bound_ps = -1;
  // Why this scheme is where it is, in one line (e.g. "tail: last chunk's RS exposed").
  std::string reason;
  // Every data-moving collective call, in the order issued (marker collectives of 0 bytes or one
  // member are left out).
  std::vector<CollectiveCall> collectives;
};

struct SchemeInfo {
  std::string name;
  std::string source;  // document and section
  std::string summary;
  std::vector<SchemeParam> params;
  std::function<bool(const Workload&)> applies;  // can this scheme run this workload?
  std::function<BuiltScheme(const BuildContext&)> build;
};

// Every scheme, in a stable order. Defined in sim/schemes/registry.cpp.
const std::vector<SchemeInfo>& scheme_registry();
const SchemeInfo* find_scheme(const std::string& name);

}  // namespace overlap::sim
