// pt_transformer (delayed-tp-blog, "Comparison with SOTA methods" (PT-Transformer) and "Theoretical
// Exposed Wait-time"): no attention all-reduce, one MLP all-reduce kept every t_d layers.
#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/param_rows.hpp"

namespace overlap::sim {

namespace {

// The upper limit t_d <= layers depends on the workload: pt_transformer_plan checks it.
const SchemeParam kTd = int_param(knobs::kPtTransformerTd, "track depth: layers between kept MLP all-reduces");

}  // namespace

SchemeInfo make_pt_transformer_scheme() {
  return decode_stack_scheme(
      "pt_transformer",
      "delayed-tp-blog, 'Comparison with SOTA methods' (PT-Transformer) and 'Theoretical Exposed Wait-time'",
      "PT-Transformer: no attention all-reduce, one MLP all-reduce kept every t_d layers",
      [](const BuildContext& ctx, int layers) { return pt_transformer_plan(layers, ctx.integer(kTd)); }, {kTd});
}

}  // namespace overlap::sim
