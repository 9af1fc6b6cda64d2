#pragma once
// The batch-1 decode family of delayed-tp-blog ("Theoretical Exposed Wait-time"): 2 N_L modules
// (attention, MLP) whose time is streaming their weight shard from HBM, and all-reduces of tau_c whose
// results are consumed some modules later. Each scheme of the family is a DecodePlan: which modules
// all-reduce, and which earlier all-reduces a module (or the end of the stack) must wait for.
#include <functional>
#include <string>
#include <vector>

#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"
#include "sim/schemes/decode_plan.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

// Streaming and communication times of one rank: tau_att, tau_mlp (streaming_kernel_ps: the profile's
// hbm_latency_us plus weight bytes over HBM bandwidth x efficiency, rounded up to a picosecond) and tau_c (DecodeStack::allreduce_us when given, else the
// collective model's all-reduce of one token's hidden state).
struct DecodeTimes {
  Ps tau_att_ps = 0;
  Ps tau_mlp_ps = 0;
  Ps tau_c_ps = 0;
};
DecodeTimes decode_times(const DecodeStack& dec, int tp, const HardwareProfile& hw);

// The plan as a task graph: per rank one compute stream of memory kernels and `comm_streams` streams of
// all-reduces. collectives_only keeps only the all-reduces (one stream, one after another).
BuiltScheme build_decode_stack(const BuildContext& ctx, const DecodePlan& plan, bool collectives_only = false);

// A scheme of the family: applies to decode_stack workloads and builds `plan(ctx, layers)`.
SchemeInfo decode_stack_scheme(std::string name, std::string source, std::string summary,
                               std::function<DecodePlan(const BuildContext&, int layers)> plan,
                               std::vector<SchemeParam> params = {});

}  // namespace overlap::sim
