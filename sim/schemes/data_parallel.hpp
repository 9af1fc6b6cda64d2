#pragma once
// The data-parallel traffic of a training step (workload.training.parallel; docs/guide/training.md):
// gradient all-reduce or reduce-scatter per bucket as weight gradients complete, and the parameter
// all-gathers of ZeRO / FSDP. Only one TP group is simulated: every TP group of a data-parallel job
// runs the same schedule at the same time, so rank r's data-parallel collective (its counterparts in
// the other dp - 1 groups) is one op on rank r, costed by the collective model for dp members over the
// link class the group spans (the network when dp x tp GPUs span nodes). It holds NCCL's channels as
// SMs for its whole time, so it competes with the TP group's GEMMs and collectives for SMs, and its
// bytes run as flows to and from its peers (GPUs r + j x tp, outside the graph) on the links and the
// rank's HBM, where they meet the TP group's traffic (sim/task_graph.hpp Op::outside_sends).
#include <cstdint>
#include <string>
#include <vector>

#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/training_step.hpp"

namespace overlap::sim {

class DataParallelTraffic {
 public:
  // Adds the data-parallel streams (a gather stream and a reduce stream per rank) when dp > 1.
  DataParallelTraffic(GraphBuilder& b, const Workload& w);

  bool active() const { return dp_ > 1; }
  const std::vector<StreamId>& streams() const { return streams_; }

  // Layer `layer` of the forward (or backward) is about to start after `start`: issues the parameter
  // gathers due now (ZeRO-3: this layer's, `prefetch` layers ahead; ZeRO-1/2: every bucket at the
  // forward's first layer) and returns the per-rank ops the layer must wait for (empty: none).
  PerRank forward_layer(int layer, const PerRank& start);
  PerRank backward_layer(int layer, const PerRank& start);
  // A weight gradient of `elements` (per rank) is complete after `ops`: it joins the open bucket, which
  // is reduced once it holds bucket_mb (DDP, ZeRO-1/2).
  void gradient_ready(std::int64_t elements, const PerRank& ops);
  // Layer `layer`'s backward ended at `end`: ZeRO-3 reduce-scatters its gradients.
  void backward_layer_done(int layer, const PerRank& end);
  // The backward is over: the last, partly filled bucket is reduced.
  void flush();

 private:
  PerRank issue(StreamId (DataParallelTraffic::*stream)(int) const, Primitive p, Bytes bytes,
                const std::vector<PerRank>& deps, const std::string& name);
  StreamId gather_stream(int rank) const { return streams_[static_cast<std::size_t>(2 * rank)]; }
  StreamId reduce_stream(int rank) const { return streams_[static_cast<std::size_t>(2 * rank + 1)]; }
  PerRank layer_gather(std::vector<PerRank>& issued, int position, const PerRank& start, bool backward);
  void reduce_open_bucket();

  GraphBuilder& b_;
  const Workload& w_;
  int dp_ = 1;
  std::vector<StreamId> streams_;  // per rank: gather, reduce
  std::vector<std::int64_t> layer_params_;  // elements per rank per layer
  std::int64_t bucket_elements_ = 0;
  std::int64_t open_elements_ = 0;
  std::vector<PerRank> open_deps_;
  int buckets_ = 0;
  // ZeRO-3: per position in the pass's layer order (the backward's runs from the last layer); empty: not
  // issued yet.
  std::vector<PerRank> forward_gathers_, backward_gathers_;
  std::vector<PerRank> layer_ready_;  // ZeRO-1/2: per layer, the parameter bucket gather holding its last weights
};

}  // namespace overlap::sim
