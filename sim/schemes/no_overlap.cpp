// no_overlap: the reference every scheme is measured against (design.md "Scheme library"; the
// non-overlap baseline of flashoverlap-paper Sec. 6 and commfuse-paper Sec. 5). Each collective waits
// for the GEMM that produces it (or each GEMM for the all-gather that feeds it), so latency is
// compute + communication. For decode_stack it is the TP baseline of delayed-tp-blog.
#include <variant>

#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/schemes/training_step.hpp"

namespace overlap::sim {

namespace {

// The workload's layers with no overlap: every op (collectives_only false) or only the collectives.
BuiltScheme build_workload_collectives_or_plain(const BuildContext& ctx, bool collectives_only) {
  if (has_moe_layers(ctx.workload)) {
    MoeLayerOptions o{1, collectives_only};
    // A MoE transformer's attention and dense MLPs have column-parallel linears (a moe layer has none).
    if (!collectives_only && ctx.workload.kind == WorkloadKind::transformer) o.column = column_backward(ctx);
    return build_moe_layer(ctx, o);
  }
  if (ctx.workload.kind == WorkloadKind::decode_stack)
    return build_decode_stack(ctx, tp_baseline_plan(std::get<DecodeStack>(ctx.workload.shape).layers), collectives_only);
  SlicedLayerOptions o;
  o.collectives_only = collectives_only;
  if (!collectives_only && ctx.workload.kind != WorkloadKind::decode_stack) o.column = column_backward(ctx);
  return build_sliced_layers(ctx, o);
}

}  // namespace

BuiltScheme build_workload_collectives(const BuildContext& ctx) { return build_workload_collectives_or_plain(ctx, true); }

SchemeInfo make_no_overlap_scheme() {
  return {.name = "no_overlap",
          .source = "all sources' baseline (flashoverlap-paper Sec. 6, commfuse-paper Sec. 5, delayed-tp-blog TP baseline)",
          .summary = "GEMM then collective (all-gather then GEMM), one after the other",
          .params = {column_backward_param()},
          .backward = "every collective after the GEMM that produces it, every all-gather before the GEMM it feeds (column_backward bulk: Megatron-LM's asynchronous backward)",
          .applies = [](const Workload&) { return true; },
          .build = [](const BuildContext& ctx) { return build_workload_collectives_or_plain(ctx, false); }};
}

}  // namespace overlap::sim
