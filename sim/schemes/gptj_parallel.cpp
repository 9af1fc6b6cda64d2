// gptj_parallel (delayed-tp-blog, "Comparison with SOTA methods" (GPT-J) and "Theoretical Exposed Wait-time"): GPT-J parallel blocks: attention and MLP on the same input, one all-reduce per layer (Delta_J = N_L tau_c)
#include <variant>

#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

SchemeInfo make_gptj_parallel_scheme() {
  SchemeInfo s;
  s.name = "gptj_parallel";
  s.source = "delayed-tp-blog, 'Comparison with SOTA methods' (GPT-J) and 'Theoretical Exposed Wait-time'";
  s.summary = "GPT-J parallel blocks: attention and MLP on the same input, one all-reduce per layer (Delta_J = N_L tau_c)";
  s.params = {};
  s.applies = [](const Workload& w) { return w.kind == "decode_stack"; };
  s.build = [](const BuildContext& ctx) {
    const int layers = std::get<DecodeStack>(ctx.workload.shape).layers;
    return build_decode_stack(ctx, gptj_parallel_plan(layers));
  };
  return s;
}

}  // namespace overlap::sim
