// ladder_residual (delayed-tp-blog, "Comparison with SOTA methods" (Ladder-Residual) and "Theoretical
// Exposed Wait-time" (Delta_LR)): module n+1 reads module n-1's all-reduced residual.
#include "sim/schemes/decode_stack.hpp"

namespace overlap::sim {

SchemeInfo make_ladder_residual_scheme() {
  return decode_stack_scheme("ladder_residual",
                             "delayed-tp-blog, 'Comparison with SOTA methods' (Ladder-Residual) and 'Theoretical "
                             "Exposed Wait-time' (Delta_LR)",
                             "Ladder Residual: module n+1 reads module n-1's all-reduced residual, hiding it behind "
                             "module n's streaming",
                             [](const BuildContext&, int layers) { return ladder_residual_plan(layers); });
}

}  // namespace overlap::sim
