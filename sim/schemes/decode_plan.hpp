#pragma once
// The decode family's plans as plain data (delayed-tp-blog "Comparison with SOTA methods" and
// "Theoretical Exposed Wait-time"): which of the 2 N_L modules (attention, MLP) all-reduce, and
// which earlier all-reduces a module (or the end of the stack) must wait for. Standard library only:
// the simulator builds its task graph from a plan (decode_stack.hpp) and the reference kernels
// (kernels/schemes/decode_run.hpp) execute the same plan, in builds without the simulator's libraries.
#include <string>
#include <vector>

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

// The plans of the family (delayed-tp-blog "Comparison with SOTA methods" and "Theoretical Exposed
// Wait-time"). Throw std::invalid_argument naming the parameter when it is out of range.
DecodePlan tp_baseline_plan(int layers);
DecodePlan gptj_parallel_plan(int layers);
DecodePlan pt_transformer_plan(int layers, int t_d);
DecodePlan ladder_residual_plan(int layers);
DecodePlan dtp_plan(int layers, int delta);
DecodePlan no_comm_plan(int layers);

}  // namespace overlap::sim
