#pragma once
// The decode family's module plans (delayed-tp-blog "Comparison with SOTA methods", "Theoretical
// Exposed Wait-time"), as plain data the reference kernels execute: which modules all-reduce and
// which earlier all-reduces a module (or the end of the stack) waits for. The same plans as the
// simulator's sim/schemes/decode_stack.cpp (tests/calibrate check they agree); kept here because the
// device build of the kernels cannot link the simulator. When sim's plan functions move to a
// dependency-free file, the kernels should compile that one instead.
#include <string>
#include <vector>

namespace overlap::calibrate {

enum class DecodeModuleKind { attention, mlp, parallel_block };

struct DecodeModulePlan {
  DecodeModuleKind kind = DecodeModuleKind::attention;
  bool all_reduce = false;
  std::vector<int> waits_for;
};

struct DecodePlanData {
  std::vector<DecodeModulePlan> modules;
  std::vector<int> final_waits;
  int comm_streams = 1;
};

// scheme: tp_baseline | gptj_parallel | pt_transformer (param t_d) | ladder_residual | dtp (param
// delta) | no_comm | no_overlap (= tp_baseline). Throws std::invalid_argument for a bad parameter.
DecodePlanData decode_plan(const std::string& scheme, int layers, int param);

}  // namespace overlap::calibrate
