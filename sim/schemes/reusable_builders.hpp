#pragma once
// Builders of one scheme that another scheme runs with its own knobs: TransformerEngine's userbuffers
// (te_userbuffers.cpp) runs its ring-exchange through async TP's Looped CollectiveEinsum and its
// pipeline through data slicing's sliced layers, with TE's SM budget and communication CTA counts.
// Defaults reproduce async_tp and data_slicing exactly.
#include <string>

#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

// async_tp.cpp's decomposition (all-gather-matmul and matmul-reduce-scatter as per-step P2P pulls).
struct LoopedEinsumOptions {
  bool sm_transport = false;  // SM copy kernels of copy_sms CTAs instead of copy-engine pulls
  int streams = 2;
  int copy_sms = 16;
  // SMs each sub-matmul may use (TransformerEngine set_sm_margin: sm_count - num_sm); 0 = all.
  int gemm_sm_budget = 0;
  ColumnBackward column = ColumnBackward::scheme;
  std::string label;  // the reason line's scheme part; "" = async TP's
};
BuiltScheme build_looped_einsum(const BuildContext& ctx, const LoopedEinsumOptions& options);

// data_slicing.cpp's sliced layers with the GEMMs' SM budget and the per-slice collectives' CTAs.
struct SliceResources {
  int gemm_sm_budget = 0;  // 0 = every SM
  int comm_channels = -1;  // < 0 = NCCL's channel count for the size
};
BuiltScheme build_sliced_layers(const BuildContext& ctx, const SlicedLayerOptions& options,
                                const SliceResources& resources);

}  // namespace overlap::sim
