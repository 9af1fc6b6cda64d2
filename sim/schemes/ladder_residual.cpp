// ladder_residual (delayed-tp-blog, "Comparison with SOTA methods" (Ladder-Residual) and "Theoretical Exposed Wait-time" (Delta_LR)): Ladder Residual: module n+1 reads module n-1's all-reduced residual, hiding it behind module n's streaming
#include <variant>

#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

SchemeInfo make_ladder_residual_scheme() {
  SchemeInfo s;
  s.name = "ladder_residual";
  s.source = "delayed-tp-blog, 'Comparison with SOTA methods' (Ladder-Residual) and 'Theoretical Exposed Wait-time' (Delta_LR)";
  s.summary = "Ladder Residual: module n+1 reads module n-1's all-reduced residual, hiding it behind module n's streaming";
  s.params = {};
  s.applies = [](const Workload& w) { return w.kind == "decode_stack"; };
  s.build = [](const BuildContext& ctx) {
    const int layers = std::get<DecodeStack>(ctx.workload.shape).layers;
    return build_decode_stack(ctx, ladder_residual_plan(layers));
  };
  return s;
}

}  // namespace overlap::sim
