#include "sim/schemes/data_parallel.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"

namespace overlap::sim {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

DataParallelTraffic::DataParallelTraffic(GraphBuilder& b, const Workload& w)
    : b_(b), w_(w), dp_(std::max(1, w.training.parallel.dp)) {
  if (dp_ <= 1) return;
  for (int r = 0; r < b.ranks(); ++r) {
    // Priority 1, as the TP group's communication: NCCL's kernels run on high-priority streams.
    // Gathers and reductions have a stream each, as FSDP2's all-gather and reduce-scatter streams.
    streams_.push_back(b.add_stream(r, "dp_gather", 1));
    streams_.push_back(b.add_stream(r, "dp_reduce", 1));
  }
  std::int64_t per_layer = 0;
  for (const Block block : layer_blocks(w)) per_layer += block_parameters(w, block);
  layer_params_.assign(static_cast<std::size_t>(layer_count(w)), per_layer);
  const DataParallel& p = w.training.parallel;
  bucket_elements_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(p.bucket_mb * kMiB / dtype_bytes(p.grad_dtype)));
  forward_gathers_.resize(layer_params_.size());
  backward_gathers_.resize(layer_params_.size());
}

PerRank DataParallelTraffic::issue(StreamId (DataParallelTraffic::*stream)(int) const, Primitive p, Bytes bytes,
                                   const std::vector<PerRank>& deps, const std::string& name) {
  const HardwareProfile& hw = b_.hardware();
  const CollectivePrimitive prim = to_collective_primitive(p);
  // Rank r's group is r and its counterparts in the other TP groups: the link class is the one the
  // dp x tp GPUs of the job span (the network once they cover more than a node).
  const std::string link = collective_link_class(hw, b_.ranks() * dp_);
  // Its members are tp GPUs apart, so the nodes it spans and its ranks on each (and so the NICs it
  // leaves them through) follow that stride.
  const CollectivePlan plan = plan_collective(hw, prim, bytes, dp_, link, CollectiveOverrides{default_algorithm(hw, p), {}},
                                              strided_group_placement(hw, b_.ranks()));
  // Every member runs member 0's part of the algorithm (the members are symmetric): its sends to
  // and receives from the others load the links between the GPUs and its own HBM, where they meet
  // the TP group's traffic (the NIC when TP spans nodes, NVLink ports when DP stays in the node)
  // and the GEMMs' operand reads. Megatron's rank order puts TP innermost: rank r's data-parallel
  // peers are GPUs r + j x tp.
  const CollectiveSchedule schedule = b_.schedule_of(plan, bytes, dp_, link);
  const int tp = b_.ranks();
  // Member 0's bytes to and from each peer (member index; -1 the switch) over the whole algorithm: one
  // flow per peer and direction, as set_curve_traffic loads a simulated collective's, however many
  // steps the algorithm takes.
  std::map<int, Bytes> to_peer, from_peer;
  for (const CollectiveStep& st : schedule.ranks.front()) {
    for (const CollectiveTransfer& t : st.sends)
      if (t.bytes > 0) to_peer[t.peer] += t.bytes;
    for (const CollectiveTransfer& t : st.recvs)
      if (t.bytes > 0) from_peer[t.peer] += t.bytes;
  }
  const bool reduces = prim == CollectivePrimitive::all_reduce || prim == CollectivePrimitive::reduce_scatter;
  PerRank out;
  for (int r = 0; r < b_.ranks(); ++r) {
    Op op;
    op.name = name;
    op.kind = OpKind::comm_kernel;
    op.stream = (this->*stream)(r);
    op.comm = true;
    op.communicator = Communicator::dp;
    for (const PerRank& d : deps)
      if (!d.empty() && d[static_cast<std::size_t>(r)] != kNoOp) op.deps.push_back(d[static_cast<std::size_t>(r)]);
    op.channels = plan.channels;
    op.collective = b_.new_collective_id();
    op.members = 1;  // its other members are the symmetric ranks of the TP groups not simulated
    op.host_ps = hw.launch.collective_host_ps(prim);
    op.duration_ps = plan.time_ps;
    op.curve_latency_ps = std::clamp<Ps>(plan.latency_ps, 0, plan.time_ps);
    op.curve_reduces = reduces;
    for (const auto& [peer, b] : to_peer) {
      if (peer < 0) op.curve_sends.push_back({kSwitchPeer, b});
      else op.outside_sends.push_back({r + peer * tp, b});
    }
    for (const auto& [peer, b] : from_peer) {
      if (peer < 0) op.curve_from_switch += b;
      else op.outside_recvs.push_back({r + peer * tp, b});
    }
    if (r == 0)
      b_.record_call(CollectiveCall{op.collective, name, p, bytes, dp_, nccl_algorithm_name(plan.algorithm),
                                    nccl_protocol_name(plan.protocol), plan.channels, Communicator::dp});
    out.push_back(b_.graph().add(std::move(op)));
  }
  return out;
}

PerRank DataParallelTraffic::layer_gather(std::vector<PerRank>& issued, int position, const PerRank& start,
                                          bool backward) {
  // FSDP's prefetch (FSDP2's forward and backward prefetch): when the layer at `position` of this pass
  // starts, the gathers of the next `prefetch` layers are issued behind it and run while it computes;
  // the gathers of the first layers go out at once. prefetch 0: each layer gathers when it starts.
  const int layers = static_cast<int>(issued.size());
  const int last = std::min(layers - 1, position + std::max(0, w_.training.parallel.prefetch));
  const Bytes bytes = layer_params_[0] * dtype_bytes(workload_dtype(w_));
  for (int p = position; p <= last; ++p) {
    if (!issued[static_cast<std::size_t>(p)].empty()) continue;
    const int layer = backward ? layers - 1 - p : p;
    issued[static_cast<std::size_t>(p)] = issue(&DataParallelTraffic::gather_stream, Primitive::all_gather, bytes,
                                                {start}, fmt::format("dp.L{}.{}param_all_gather", layer, backward ? "bwd." : ""));
  }
  return issued[static_cast<std::size_t>(position)];
}

PerRank DataParallelTraffic::forward_layer(int layer, const PerRank& start) {
  if (!active()) return {};
  const Sharding s = w_.training.parallel.fsdp;
  if (s == Sharding::zero3) return layer_gather(forward_gathers_, layer, start, false);
  if (s == Sharding::none) return {};
  // ZeRO-1/2 (Megatron-LM's distributed optimizer with --overlap-param-gather): the parameters updated
  // by the previous step are all-gathered in buckets, in layer order, at the forward's start; each
  // layer waits for the bucket that holds its last weights.
  if (layer == 0) {
    const Bytes elem = dtype_bytes(workload_dtype(w_));
    std::int64_t open = 0;
    std::vector<int> waiting;
    int bucket = 0;
    layer_ready_.assign(layer_params_.size(), {});
    for (std::size_t l = 0; l < layer_params_.size(); ++l) {
      open += layer_params_[l];
      waiting.push_back(static_cast<int>(l));
      if (open < bucket_elements_ && l + 1 < layer_params_.size()) continue;
      const PerRank g = issue(&DataParallelTraffic::gather_stream, Primitive::all_gather, open * elem, {start},
                              fmt::format("dp.param_all_gather[{}]", bucket++));
      for (const int w : waiting) layer_ready_[static_cast<std::size_t>(w)] = g;
      waiting.clear();
      open = 0;
    }
  }
  return layer_ready_.empty() ? PerRank{} : layer_ready_[static_cast<std::size_t>(layer)];
}

PerRank DataParallelTraffic::backward_layer(int layer, const PerRank& start) {
  if (!active() || w_.training.parallel.fsdp != Sharding::zero3) return {};
  const int layers = static_cast<int>(layer_params_.size());
  return layer_gather(backward_gathers_, layers - 1 - layer, start, true);
}

void DataParallelTraffic::reduce_open_bucket() {
  if (open_elements_ <= 0) return;
  // DDP all-reduces a bucket; the distributed optimizer (ZeRO-1/2) reduce-scatters it, each rank
  // keeping the gradients of the parameters it updates (ZeRO Sec. 7: the same 2 x parameters bytes).
  const Primitive p = w_.training.parallel.fsdp == Sharding::none ? Primitive::all_reduce : Primitive::reduce_scatter;
  issue(&DataParallelTraffic::reduce_stream, p, open_elements_ * dtype_bytes(w_.training.parallel.grad_dtype), open_deps_,
        fmt::format("dp.grad_{}[{}]", primitive_name(p), buckets_++));
  open_elements_ = 0;
  open_deps_.clear();
}

void DataParallelTraffic::gradient_ready(std::int64_t elements, const PerRank& ops) {
  if (!active() || w_.training.parallel.fsdp == Sharding::zero3 || elements <= 0) return;
  // PyTorch DDP's buckets (bucket_cap_mb) and Megatron's: a bucket is reduced once the gradients in it
  // reach its size; a parameter's gradient is never split across buckets.
  open_elements_ += elements;
  open_deps_.push_back(ops);
  if (open_elements_ >= bucket_elements_) reduce_open_bucket();
}

void DataParallelTraffic::backward_layer_done(int layer, const PerRank& end) {
  if (!active() || w_.training.parallel.fsdp != Sharding::zero3) return;
  // FSDP reduce-scatters a layer's gradients once its backward is done (its post-backward hook).
  issue(&DataParallelTraffic::reduce_stream, Primitive::reduce_scatter,
        layer_params_[static_cast<std::size_t>(layer)] * dtype_bytes(w_.training.parallel.grad_dtype), {end},
        fmt::format("dp.L{}.grad_reduce_scatter", layer));
}

void DataParallelTraffic::flush() {
  if (active()) reduce_open_bucket();
}

}  // namespace overlap::sim
