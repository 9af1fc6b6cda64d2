// tp_baseline (delayed-tp-blog, "Background on Tensor Parallelism" and "Theoretical Exposed Wait-time"
// (baseline)): Megatron TP decode, each module's all-reduce waited for by the next module.
#include "sim/schemes/decode_stack.hpp"

namespace overlap::sim {

SchemeInfo make_tp_baseline_scheme() {
  return decode_stack_scheme(
      "tp_baseline",
      "delayed-tp-blog, 'Background on Tensor Parallelism' and 'Theoretical Exposed Wait-time' (baseline)",
      "Megatron TP decode: each module's all-reduce is waited for by the next module (Delta_B = 2 N_L tau_c)",
      [](const BuildContext&, int layers) { return tp_baseline_plan(layers); });
}

}  // namespace overlap::sim
