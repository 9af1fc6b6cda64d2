// TransformerEngine userbuffers comm-GEMM overlap (what Megatron-LM's --tp-comm-overlap runs; TE
// transformer_engine/pytorch/module/base.py initialize_ub, get_default_config and add_ub;
// transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp CommOverlapCore, CommOverlap,
// CommOverlapP2P). TE gives each TP+SP linear's GEMM a communicator by name (qkv_fprop, proj_fprop,
// fc1_fprop, fc2_fprop and the dgrad / wgrad entries) with one of three methods:
//   ring_exchange (CommOverlapP2P): the tp_size chunks of the gathered (or scattered) dimension are
//     exchanged peer to peer, each chunk's GEMM overlapping the next chunk's exchange; copy-engine
//     copies by default (use_ce = True), else userbuffers kernels of num_sm CTAs. This is async TP's
//     Looped CollectiveEinsum (async_tp.cpp), run here through the same builder with TE's knobs;
//   pipeline (CommOverlap split_overlap_rs): the GEMM split into num_splits chunks along M, each
//     chunk's reduce-scatter (a userbuffers kernel of num_sm CTAs) overlapping the next chunk's GEMM.
//     This is data slicing (data_slicing.cpp) with TE's CTA count and SM margin. TE refuses pipeline
//     for an all-gather (add_ub: "`pipeline` overlap method is not supported for AllGather"); the
//     sliced builder chunks a layer's all-gather too, so under method pipeline a layer's all-gather
//     is chunked where TE would run it as ring_exchange (docs/schemes.md says so);
//   bulk (CommOverlap bulk_overlap): a collective overlapped with an independent GEMM: in the training
//     backward, the input's all-gather beside dgrad and dgrad's reduce-scatter beside wgrad (TE's
//     default for qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad), training_step.cpp's bulk form. A
//     forward has no independent GEMM to hide its collectives behind, so method bulk runs the forward
//     unoverlapped.
// set_sm_margin: the GEMM runs on sm_count - num_sm SMs (CommOverlapCore: _math_sms = sm_count -
// num_comm_sm when set_sm_margin), so the communication kernels never wait for SMs.
// cga_size is the communication kernels' thread-block-cluster size: carried and exported, not timed
// (the model has no cluster-level cost). atomic_gemm (cuBLASLt atomic-counter GEMM) is FP8-only in TE
// (add_ub asserts use_fp8) and a beta cuBLAS API: refused here rather than silently run as a split GEMM.
#include <string>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/reusable_builders.hpp"
#include "sim/schemes/training_step.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

const SchemeParam kMethod =
    choice_param("method", {"ring_exchange", "pipeline", "bulk"},
                 "ring_exchange (P2P chunk exchange, each chunk's GEMM beside the next exchange) | pipeline (GEMM "
                 "split into num_splits, a reduce-scatter per split) | bulk (only the training backward's "
                 "collectives beside independent GEMMs; the forward unoverlapped)")
        .tune({"ring_exchange", "pipeline", "bulk"})
        .production("TransformerEngine ub_cfgs <gemm>.method (Megatron-LM --tp-comm-overlap-cfg YAML)");
// TE's default num_sm is 16 for pipeline and bulk, 1 for ring_exchange (get_default_config); one
// default serves all three here: 16.
const SchemeParam kNumSm = [] {
  SchemeParam p = int_param("num_sm", 16, 1, 4095,
                            "SMs (CTAs) the communication kernels take: pipeline's and bulk's reduce-scatter, "
                            "ring_exchange's copies when use_ce is false");
  p.hardware_max = [](const HardwareProfile& hw) { return hw.gpu.sm_count - 1.0; };
  p.max_formula = "sm_count - 1";
  return p.tune({4, 16, 24}, "method=pipeline").production("TransformerEngine ub_cfgs <gemm>.num_sm");
}();
const SchemeParam kCgaSize = int_param("cga_size", 2, 1, 8,
                                       "communication kernels' thread-block-cluster size (exported; not timed)")
                                 .production("TransformerEngine ub_cfgs <gemm>.cga_size");
const SchemeParam kSetSmMargin =
    bool_param("set_sm_margin", false, "the overlapped GEMMs run on sm_count - num_sm SMs")
        .tune({false, true})
        .production("TransformerEngine ub_cfgs <gemm>.set_sm_margin");
const SchemeParam kAtomicGemm =
    bool_param("atomic_gemm", false,
               "cuBLASLt atomic-counter GEMM: TE allows it for FP8 only (not modelled: true is refused)")
        .production("TransformerEngine ub_cfgs <gemm>.atomic_gemm");
const SchemeParam kNumSplits = int_param("num_splits", 4, 1, 4096, "pipeline: chunks the GEMM is split into along M")
                                   .tune({2, 4, 8}, "method=pipeline")
                                   .production("TransformerEngine ub_cfgs <gemm>.num_splits (pipeline)");
const SchemeParam kUseCe = bool_param("use_ce", true,
                                      "ring_exchange: copy-engine copies (no SMs); false: userbuffers copy "
                                      "kernels of num_sm CTAs")
                               .tune({true, false}, "method=ring_exchange")
                               .production("TransformerEngine ub_cfgs <gemm>.use_ce");

BuiltScheme build_te_userbuffers(const BuildContext& ctx) {
  const std::string method = ctx.text(kMethod);
  const int num_sm = ctx.integer(kNumSm);
  (void)ctx.integer(kCgaSize);  // checked; exported by `tune --export te-userbuffers`, not timed
  if (ctx.boolean(kAtomicGemm))
    throw InputError("", 0, "params.atomic_gemm",
                     "atomic GEMM overlap is not modelled (TransformerEngine allows it only for FP8 GEMMs, through a "
                     "beta cuBLASLt API); leave it false");
  const bool margin = ctx.boolean(kSetSmMargin);
  const int budget = margin ? ctx.hardware.gpu.sm_count - num_sm : 0;
  ColumnBackward column = column_backward(ctx);
  if (method == "bulk") column = ColumnBackward::bulk;
  const std::string margin_text = margin ? fmt::format(", set_sm_margin (GEMM on {} SMs)", budget) : "";

  if (method == "ring_exchange") {
    LoopedEinsumOptions o;
    o.sm_transport = !ctx.boolean(kUseCe);
    o.streams = 2;  // TE alternates the chunk GEMMs over its _stream_compute streams
    o.copy_sms = num_sm;
    o.gemm_sm_budget = budget;
    o.column = column;
    o.label = "TE userbuffers ring_exchange";
    return build_looped_einsum(ctx, o);
  }
  SlicedLayerOptions o;
  o.chunks = method == "pipeline" ? ctx.integer(kNumSplits) : 1;
  o.column = column;
  SliceResources res;
  res.gemm_sm_budget = budget;
  res.comm_channels = num_sm;
  BuiltScheme built = build_sliced_layers(ctx, o, res);
  built.reason = method == "pipeline"
                     ? fmt::format("TE userbuffers pipeline, {} splits, reduce-scatter on {} SMs{}; {}", o.chunks,
                                   num_sm,
                                   margin_text, built.reason)
                     : fmt::format("TE userbuffers bulk (forward unoverlapped){}; {}", margin_text, built.reason);
  return built;
}

bool te_applies(const Workload& w) {
  if (w.tp < 2) return false;
  if (w.kind == "gemm_collective") {
    const auto* g = std::get_if<GemmCollective>(&w.shape);
    return g && (g->primitive == Primitive::all_gather || g->primitive == Primitive::reduce_scatter);
  }
  return w.kind == "mlp_tpsp" || w.kind == "attention_tpsp" || w.kind == "transformer";
}

}  // namespace

SchemeInfo make_te_userbuffers_scheme() {
  return {.name = "te_userbuffers",
          .source = "TransformerEngine userbuffers (transformer_engine/pytorch/module/base.py initialize_ub; "
                    "common/comm_gemm_overlap/comm_gemm_overlap.cpp)",
          .summary = "TE's comm-GEMM overlap of TP+SP linears: ring_exchange (P2P chunks), pipeline (num_splits "
                     "chunks, reduce-scatter on num_sm SMs) or bulk, with TE's knobs",
          .params = {kMethod, kNumSm, kCgaSize, kSetSmMargin, kAtomicGemm, kNumSplits, kUseCe, column_backward_param()},
          .backward = "ring_exchange: dY all-gather -> dgrad and dgrad -> reduce-scatter as P2P chunk exchanges; "
                      "pipeline: both cut into num_splits; bulk (or column_backward bulk): the input's all-gather "
                      "beside dgrad and dgrad's reduce-scatter beside wgrad (TE's qkv/fc1 dgrad/wgrad default)",
          .applies = te_applies,
          .build = build_te_userbuffers};
}

}  // namespace overlap::sim
