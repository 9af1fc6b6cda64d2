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
#include "sim/schemes/scheme.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

enum class DecodeModuleKind { attention, mlp, parallel_block };  // parallel_block: GPT-J attn || MLP

struct DecodeModule {
  DecodeModuleKind kind = DecodeModuleKind::attention;
  bool all_reduce = false;      // its local output is all-reduced when it ends
  std::vector<int> waits_for;   // modules whose all-reduce must have landed before this one starts
};

struct DecodePlan {
  std::vector<DecodeModule> modules;
  std::vector<int> final_waits;  // all-reduces the end of the stack (LM head) needs
  // Communication streams, used round-robin by the all-reduces. Enough streams that an all-reduce
  // never queues behind an earlier one: each launches when its module ends, as the blog assumes
  // ("at the end of a module we launch the communication").
  int comm_streams = 1;
  std::string reason;
};

// Streaming and communication times of one rank: tau_att, tau_mlp (streaming_kernel_ps: the profile's
// hbm_latency_us plus weight bytes over HBM bandwidth x efficiency, rounded up to a picosecond) and tau_c (DecodeStack::allreduce_us when given, else the
// collective model's all-reduce of one token's hidden state).
struct DecodeTimes {
  Ps tau_att_ps = 0;
  Ps tau_mlp_ps = 0;
  Ps tau_c_ps = 0;
};
DecodeTimes decode_times(const DecodeStack& dec, int tp, const HardwareProfile& hw);

// The plans of the family (delayed-tp-blog "Comparison with SOTA methods" and "Theoretical Exposed
// Wait-time"). Throw std::invalid_argument naming the parameter when it is out of range.
DecodePlan tp_baseline_plan(int layers);
DecodePlan gptj_parallel_plan(int layers);
DecodePlan pt_transformer_plan(int layers, int t_d);
DecodePlan ladder_residual_plan(int layers);
DecodePlan dtp_plan(int layers, int delta);
DecodePlan no_comm_plan(int layers);

// The plan as a task graph: per rank one compute stream of memory kernels and `comm_streams` streams of
// all-reduces. collectives_only keeps only the all-reduces (one stream, one after another).
BuiltScheme build_decode_stack(const BuildContext& ctx, const DecodePlan& plan, bool collectives_only = false);

// A scheme of the family: applies to decode_stack workloads and builds `plan(ctx, layers)`.
SchemeInfo decode_stack_scheme(std::string name, std::string source, std::string summary,
                               std::function<DecodePlan(const BuildContext&, int layers)> plan,
                               std::vector<SchemeParam> params = {});

}  // namespace overlap::sim
