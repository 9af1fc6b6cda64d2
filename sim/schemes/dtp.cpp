// dtp (delayed-tp-blog, "Delayed Tensor Parallelism (DTP)" and "Theoretical Exposed Wait-time" (Delta_DTP)): Delayed TP: each all-reduce is consumed delta modules later, hidden behind their weight streaming
#include <variant>

#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

SchemeInfo make_dtp_scheme() {
  SchemeInfo s;
  s.name = "dtp";
  s.source = "delayed-tp-blog, 'Delayed Tensor Parallelism (DTP)' and 'Theoretical Exposed Wait-time' (Delta_DTP)";
  s.summary = "Delayed TP: each all-reduce is consumed delta modules later, hidden behind their weight streaming";
  s.params = {SchemeParam{"delta", "int", "2", "modules between an all-reduce and its use (the blog derives 1 and even values)",
                          {1, 2, 4}}};
  s.applies = [](const Workload& w) { return w.kind == "decode_stack"; };
  s.build = [](const BuildContext& ctx) {
    const int layers = std::get<DecodeStack>(ctx.workload.shape).layers;
    return build_decode_stack(ctx, dtp_plan(layers, param_small_int(ctx, "delta", 2)));
  };
  return s;
}

}  // namespace overlap::sim
