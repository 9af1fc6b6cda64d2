#pragma once
// Builders of one scheme that another scheme runs with its own knobs: TransformerEngine's userbuffers
// (te_userbuffers.cpp) runs its ring-exchange through async TP's Looped CollectiveEinsum and its
// pipeline through data slicing's sliced layers, with TE's SM budget and communication CTA counts.
// Defaults reproduce async_tp and data_slicing exactly.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

// One transfer of a decomposed collective, issued by `rank` on `stream` (async TP's pulls, FLUX's
// per-tile sends): with ctas == 0 a copy-engine copy (no SMs) that pulls recv_bytes from recv_from, or
// pushes send_bytes to send_to (push); with ctas > 0 an SM copy kernel of that many CTAs that sends
// send_bytes to send_to and receives recv_bytes from recv_from, matched across ranks by `collective`.
// The bytes are not added to required_bytes: the caller states what its collective must move.
struct PeerCopy {
  std::string name;
  int ctas = 0;
  std::int64_t collective = -1;
  int members = 2;
  int send_to = -1;
  Bytes send_bytes = 0;
  int recv_from = -1;
  Bytes recv_bytes = 0;
  bool push = false;
  std::vector<OpId> deps;
};
inline OpId add_peer_copy(GraphBuilder& b, int rank, StreamId stream, const PeerCopy& c) {
  if (c.ctas == 0) {
    if (c.push) return b.add_copy(rank, stream, rank, c.send_to, c.send_bytes, c.name, c.deps, false);
    return b.add_copy(rank, stream, c.recv_from, rank, c.recv_bytes, c.name, c.deps, false);
  }
  P2pSpec x;
  x.name = c.name;
  x.transport = Transport::sm_copy;
  x.channels = c.ctas;
  x.collective = c.collective;
  x.members = c.members;
  x.sends.push_back({c.send_to, c.send_bytes});
  x.recvs.push_back({c.recv_from, c.recv_bytes});
  x.deps = c.deps;
  return b.add_p2p(rank, stream, x);
}

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

// The decomposition itself, one collective-matmul pair at a time, on streams of its own (three per
// rank: the main stream, the second stream, the accumulators'), for a builder that composes linears
// with different options (te_userbuffers' per-GEMM-name settings). Defined in async_tp.cpp.
class LoopedEinsum {
 public:
  LoopedEinsum(GraphBuilder& b, const LoopedEinsumOptions& p);
  const std::vector<StreamId>& main_streams() const { return main_; }
  // A sub-matmul of `g`: every SM, or the SM budget the options give (gemm_sm_budget).
  UnitCompute unit(const GemmShape& g, bool split_k = false) const;
  // One step's transfers: rank r receives recv_bytes[r] from src(r) (a copy-engine pull, or an SM
  // copy kernel that also sends send_bytes[r] to dst(r)).
  std::vector<OpId> transfer(const std::function<int(int)>& src, const std::function<int(int)>& dst,
                             const std::vector<StreamId>& streams, const std::vector<Bytes>& send_bytes,
                             const std::vector<Bytes>& recv_bytes, const std::vector<std::vector<OpId>>& deps,
                             const std::string& name);
  StreamId compute_stream(int r, int step) const;
  StreamId copy_stream(int r, int step) const;
  // All-gather-matmul over `rows` gathered rows (accumulate: the rows are the sub-matmuls' K, a
  // wgrad); matmul-reduce-scatter over `rows` output rows; the matmul alone. Per-rank end ops.
  std::vector<OpId> all_gather_matmul(std::int64_t rows, Bytes row_bytes, const UnitCompute& compute,
                                      const std::vector<OpId>& start, const std::string& tag,
                                      bool accumulate = false);
  std::vector<OpId> plain_matmul(const UnitCompute& compute, std::int64_t rows, const std::vector<OpId>& start,
                                 const std::string& tag);
  std::vector<OpId> matmul_reduce_scatter(std::int64_t rows, Bytes row_bytes, const UnitCompute& compute,
                                          const std::vector<OpId>& start, const std::string& tag);

 private:
  GraphBuilder& b_;
  LoopedEinsumOptions p_;
  int T_;
  std::vector<StreamId> main_, second_, acc_;
};

// The per-tile cost of a fused kernel's tile signal (a producer tile's flag write) or flag check (a
// consumer tile's wait), as a fraction of a tile's time: FlashOverlap measured its per-tile signalling
// plus reorder under 1 % of the GEMM (flashoverlap-paper Sec. 6.6, Table 5), so 1 % is the default;
// FLUX's and Comet's flag writes and checks are the same kind of epilogue / prologue work. One row,
// the help and production lines naming what each scheme's tiles signal (flux.cpp, moe_tile_fused.cpp).
inline SchemeParam tile_signal_overhead_param(std::string help, std::string production) {
  return number_param("tile_signal_overhead", 0.01, 0, 1, std::move(help)).production(std::move(production));
}

// The workloads of a scheme that decomposes a TP+SP linear's all-gather before its GEMM or its
// reduce-scatter after it (async TP, FLUX, TransformerEngine userbuffers): a GEMM with either
// collective, and the layers made of such linears; two ranks at least.
inline bool applies_to_tp_sp_linears(const Workload& w) {
  if (w.tp < 2) return false;
  if (w.kind == WorkloadKind::gemm_collective) {
    const auto* g = std::get_if<GemmCollective>(&w.shape);
    return g && (g->primitive == Primitive::all_gather || g->primitive == Primitive::reduce_scatter);
  }
  return is_tpsp_block(w.kind);
}

// data_slicing.cpp's sliced layers with the GEMMs' SM budget and the per-slice collectives' CTAs.
struct SliceResources {
  int gemm_sm_budget = 0;  // 0 = every SM
  int comm_channels = -1;  // < 0 = NCCL's channel count for the size
  // >= 0: the CTAs of each reduce-scatter's last slice instead (TransformerEngine's split_overlap_rs
  // raises the last chunk's to UB_MAX_SM: nothing is left for it to overlap with).
  int last_reduce_scatter_channels = -1;
};
BuiltScheme build_sliced_layers(const BuildContext& ctx, const SlicedLayerOptions& options,
                                const SliceResources& resources);

}  // namespace overlap::sim
