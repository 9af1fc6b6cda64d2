// no_overlap: the reference every scheme is measured against (design.md "Scheme library"; the
// non-overlap baseline of flashoverlap-paper Sec. 6 and commfuse-paper Sec. 5). Each collective waits
// for the GEMM that produces it (or each GEMM for the all-gather that feeds it), so latency is
// compute + communication. For decode_stack it is the TP baseline of delayed-tp-blog.
#include <variant>

#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

BuiltScheme build_workload_collectives(const BuildContext& ctx) {
  if (ctx.workload.kind == "decode_stack")
    return build_decode_stack(ctx, tp_baseline_plan(std::get<DecodeStack>(ctx.workload.shape).layers), true);
  return build_sliced_layers(ctx, SlicedLayerOptions{1, true});
}

SchemeInfo make_no_overlap_scheme() {
  SchemeInfo s;
  s.name = "no_overlap";
  s.source = "all sources' baseline (flashoverlap-paper Sec. 6, commfuse-paper Sec. 5, delayed-tp-blog TP baseline)";
  s.summary = "GEMM then collective (all-gather then GEMM), one after the other";
  s.params = {};
  s.applies = [](const Workload&) { return true; };
  s.build = [](const BuildContext& ctx) {
    if (ctx.workload.kind == "decode_stack")
      return build_decode_stack(ctx, tp_baseline_plan(std::get<DecodeStack>(ctx.workload.shape).layers));
    return build_sliced_layers(ctx, SlicedLayerOptions{1, false});
  };
  return s;
}

}  // namespace overlap::sim
