// pt_transformer (delayed-tp-blog, "Comparison with SOTA methods" (PT-Transformer) and "Theoretical Exposed Wait-time"): PT-Transformer: no attention all-reduce, one MLP all-reduce kept every t_d layers
#include <variant>

#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

SchemeInfo make_pt_transformer_scheme() {
  SchemeInfo s;
  s.name = "pt_transformer";
  s.source = "delayed-tp-blog, 'Comparison with SOTA methods' (PT-Transformer) and 'Theoretical Exposed Wait-time'";
  s.summary = "PT-Transformer: no attention all-reduce, one MLP all-reduce kept every t_d layers";
  s.params = {SchemeParam{"t_d", "int", "2", "track depth: layers between kept MLP all-reduces"}};
  s.applies = [](const Workload& w) { return w.kind == "decode_stack"; };
  s.build = [](const BuildContext& ctx) {
    const int layers = std::get<DecodeStack>(ctx.workload.shape).layers;
    return build_decode_stack(ctx, pt_transformer_plan(layers, param_small_int(ctx, "t_d", 2)));
  };
  return s;
}

}  // namespace overlap::sim
