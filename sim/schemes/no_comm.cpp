// no_comm (delayed-tp-blog, "Preliminary Experiments" (no-comm)): TP with every all-reduce removed (lower bound on time; the blog shows the quality loss)
#include <variant>

#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

SchemeInfo make_no_comm_scheme() {
  SchemeInfo s;
  s.name = "no_comm";
  s.source = "delayed-tp-blog, 'Preliminary Experiments' (no-comm)";
  s.summary = "TP with every all-reduce removed (lower bound on time; the blog shows the quality loss)";
  s.params = {};
  s.applies = [](const Workload& w) { return w.kind == "decode_stack"; };
  s.build = [](const BuildContext& ctx) {
    const int layers = std::get<DecodeStack>(ctx.workload.shape).layers;
    return build_decode_stack(ctx, no_comm_plan(layers));
  };
  return s;
}

}  // namespace overlap::sim
