// tp_baseline (delayed-tp-blog, "Background on Tensor Parallelism" and "Theoretical Exposed Wait-time" (baseline)): Megatron TP decode: each module's all-reduce is waited for by the next module (Delta_B = 2 N_L tau_c)
#include <variant>

#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

SchemeInfo make_tp_baseline_scheme() {
  SchemeInfo s;
  s.name = "tp_baseline";
  s.source = "delayed-tp-blog, 'Background on Tensor Parallelism' and 'Theoretical Exposed Wait-time' (baseline)";
  s.summary = "Megatron TP decode: each module's all-reduce is waited for by the next module (Delta_B = 2 N_L tau_c)";
  s.params = {};
  s.applies = [](const Workload& w) { return w.kind == "decode_stack"; };
  s.build = [](const BuildContext& ctx) {
    const int layers = std::get<DecodeStack>(ctx.workload.shape).layers;
    return build_decode_stack(ctx, tp_baseline_plan(layers));
  };
  return s;
}

}  // namespace overlap::sim
