// gptj_parallel (delayed-tp-blog, "Comparison with SOTA methods" (GPT-J) and "Theoretical Exposed
// Wait-time"): GPT-J parallel blocks, attention and MLP on the same input, one all-reduce per layer.
#include "sim/schemes/decode_stack.hpp"

namespace overlap::sim {

SchemeInfo make_gptj_parallel_scheme() {
  return decode_stack_scheme(
      "gptj_parallel", "delayed-tp-blog, 'Comparison with SOTA methods' (GPT-J) and 'Theoretical Exposed Wait-time'",
      "GPT-J parallel blocks: attention and MLP on the same input, one all-reduce per layer (Delta_J = N_L tau_c)",
      [](const BuildContext&, int layers) { return gptj_parallel_plan(layers); });
}

}  // namespace overlap::sim
