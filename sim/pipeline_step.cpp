// A transformer step under pipeline parallelism (pipeline_step.hpp): stage passes from the engine,
// transfers from the cost model, composed by the schedule.
#include "sim/pipeline_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <variant>

#include "sim/backward_shapes.hpp"
#include "sim/engine.hpp"
#include "sim/node_builder.hpp"
#include "sim/pipeline_layers.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/training_step.hpp"

namespace overlap::sim {

namespace {

const Transformer& transformer_of(const Workload& w) {
  const Transformer* t = std::get_if<Transformer>(&w.shape);
  if (t == nullptr) throw std::invalid_argument("pipeline parallelism needs a transformer workload (its layers are the stages')");
  return *t;
}

// The workload one model chunk of `layers` layers runs for one micro-batch: seq / cp, no data parallelism.
Workload chunk_workload(const Workload& w, const PipelineParallel& pp, Pass pass, int layers) {
  Workload c = stage_workload(w, pp);
  std::get<Transformer>(c.shape).layers = layers;
  c.training.pass = pass;
  c.training.parallel = DataParallel{};
  return c;
}

// FlashAttention-2's backward does 2.5 times its forward's FLOPs (five matrix products to two; Dao,
// "FlashAttention-2", Sec. 3.1.2), the factor sim/backward_shapes.cpp prices core attention's backward with.
constexpr double kRingBackwardFlopsFactor = 2.5;
// A FlashAttention-style kernel's query block: one CTA per (batch, head, 128 queries), as the layer's own.
constexpr std::int64_t kRingQueryBlock = 128;

// One transfer of `bytes` from every sending rank of a group at once: over the NIC when it leaves the
// node (the ranks of a node sharing its NICs), else over NVLink (PCIe without it) at NCCL send/recv's
// efficiency.
Ps send_recv_ps(const HardwareProfile& hw, bool across_nodes, int senders_per_node, Bytes bytes) {
  const FabricSpec& f = hw.fabric;
  const TransportSpec& p2p = hw.transports.nccl_p2p;
  const char* cls = across_nodes ? "network" : f.links.count("nvlink") ? "nvlink" : "pcie";
  const auto link = f.links.find(cls);
  if (link == f.links.end() || !(link->second.bandwidth_gbps > 0))
    throw std::invalid_argument(fmt::format("the profile has no '{}' link for the job's send/recv transfers", cls));
  double gbps = link->second.bandwidth_gbps;
  if (across_nodes) {
    // Every sending rank goes through its PCIe switch's NIC.
    const int nics = f.nics_per_node > 0 ? f.nics_per_node : f.gpus_per_node;
    const int sharing = std::max(1, std::min(senders_per_node, f.gpus_per_node) / std::max(1, nics));
    gbps = gbps * f.nic_efficiency / sharing;
  } else {
    gbps *= p2p.efficiency;
  }
  return checked_ps((p2p.latency_us + link->second.latency_us) * 1e6 + static_cast<double>(bytes) / gbps * 1e3);
}

bool multi_node(const HardwareProfile& hw) { return hw.fabric.topology == "multi_node" && hw.fabric.gpus_per_node > 0; }

// One attention kernel of `flops` in `tiles` CTAs, alone on one GPU, as the engine runs it.
Ps attention_kernel_ps(const Workload& w, const HardwareProfile& hw, double flops, std::int64_t tiles, DType dtype) {
  const nlohmann::json no_params = nlohmann::json::object();
  const BuildContext ctx{w, hw, no_params, Fidelity::curve};
  GraphBuilder b(ctx, 1);
  const StreamId s = b.add_stream(0, "cp");
  b.add_flop_kernel(0, s, "cp.block", flops, tiles, dtype);
  return run(b.graph(), make_node(hw, 1)).makespan_ps;
}

// The step's own ops on the driver's streams only (training_step.hpp PassEmitter): the kernel chains
// below have no scheme blocks.
class ChainEmitter final : public PassEmitter {
 public:
  using PassEmitter::PassEmitter;
  PerRank forward(Block, const PerRank&, const std::string&) override {
    throw std::logic_error("a stage's kernel chain has no scheme blocks");
  }
};

// The chain `emit` builds on the TP group's ranks, run alone by the engine.
template <typename Emit>
Ps chain_ps(const Workload& w, const HardwareProfile& hw, Fidelity fidelity, Emit emit) {
  const nlohmann::json no_params = nlohmann::json::object();
  const BuildContext ctx{w, hw, no_params, fidelity};
  const int ranks = std::max(1, w.tp);
  GraphBuilder b(ctx, ranks);
  ChainEmitter e(b);
  if (!emit(e)) return 0;
  return run(b.graph(), make_node(hw, ranks)).makespan_ps;
}

// The chains around a virtual stage's layers (stage_kernel_times below), one method per chain; `s` is
// the step's kernel shape of the stage's workload `w`.
class StageChains {
 public:
  StageChains(const Workload& w, const HardwareProfile& hw, Fidelity fidelity, const step::StepShape& s)
      : w_(w), hw_(hw), fidelity_(fidelity), s_(s), blocks_(layer_blocks(w)),
        hidden_(s.tokens * s.d_model * s.activation_bytes),
        output_{s.tokens, (s.vocab + s.tp - 1) / s.tp, s.d_model, s.activation_bytes == 4 ? DType::fp32 : DType::bf16} {}

  // One micro-batch's forward of `chunk_layers` layers: the embedding first, the loss last.
  Ps forward_ps(int chunk_layers, bool first, bool last) const {
    return chain_ps(w_, hw_, fidelity_, [&](PassEmitter& e) {
      PerRank at;
      if (first && s_.vocab > 0) {
        at = kernels(e, at, step::embedding_forward(s_), "");
        at = e.collective(Primitive::reduce_scatter, hidden_, at, "embedding.reduce_scatter");
      }
      if (first) at = kernels(e, at, step::first_layer_norm(s_), "L0.");
      at = layer_forward(e, at, chunk_layers, "");
      if (last) at = loss_forward(e, at);
      return !at.empty();
    });
  }

  // Its backward, recomputation's kernels included, in the reverse order.
  Ps backward_ps(int chunk_layers, bool first, bool last) const {
    return chain_ps(w_, hw_, fidelity_, [&](PassEmitter& e) {
      PerRank at;
      if (last) at = loss_backward(e, at);
      // Full recomputation runs each layer's forward again, its kernels with it.
      if (w_.training.recompute == Recompute::full) at = layer_forward(e, at, chunk_layers, "recompute.");
      for (int l = 0; l < chunk_layers; ++l)
        for (auto block = blocks_.rbegin(); block != blocks_.rend(); ++block) {
          at = kernels(e, at, step::layer_backward(s_, site_after(*block)), "bwd.");
          at = kernels(e, at, step::layer_backward(s_, site_before(*block)), "bwd.");
        }
      if (first && s_.vocab > 0) {
        at = e.collective(Primitive::all_gather, hidden_, at, "bwd.embedding.all_gather");
        at = kernels(e, at, step::embedding_backward(s_), "bwd.");
      }
      return !at.empty();
    });
  }

  // A physical stage's FP8 weight casts and optimizer over `stage_layers` layers' shard, the embedding's
  // on the first stage and the output layer's and final norm's on the last.
  Ps once_per_step_ps(int stage_layers, bool first, bool last) const {
    const std::int64_t layer_params =
        block_parameters(w_, Block::attention) + block_parameters(w_, Block::mlp) + 2 * s_.d_model;
    const DataParallel& dp = w_.training.parallel;
    const int g = dtype_bytes(dp.grad_dtype);
    const auto local = [&](std::int64_t params) {
      return dp.dp > 1 && dp.fsdp != Sharding::none ? (params + dp.dp - 1) / dp.dp : params;
    };
    const std::int64_t rows = s_.vocab > 0 ? (s_.vocab + s_.tp - 1) / s_.tp * s_.d_model : 0;
    const std::int64_t outer = local((first ? rows : 0) + (last ? rows + s_.d_model : 0));
    return chain_ps(w_, hw_, fidelity_, [&](PassEmitter& e) {
      PerRank at;
      for (int l = 0; l < stage_layers; ++l) at = kernels(e, at, step::layer_fp8_weights(s_, layer_params), "");
      const auto per_layer = [&](auto kernels_of) {
        for (int l = 0; l < stage_layers; ++l) at = kernels(e, at, kernels_of(local(layer_params)), "");
        if (outer > 0) at = kernels(e, at, kernels_of(outer), "embedding_output.");
      };
      per_layer([&](std::int64_t p) { return step::grad_norm(p, g); });
      at = e.collective(Primitive::all_reduce, 4, at, "optimizer.grad_norm.all_reduce");
      per_layer([&](std::int64_t p) { return step::clip_grads(p, g); });
      per_layer([&](std::int64_t p) { return step::adam(p, g, s_.fusion); });
      return true;
    });
  }

 private:
  static step::Site site_before(Block b) { return b == Block::mlp ? step::Site::before_mlp : step::Site::before_attention; }
  static step::Site site_after(Block b) { return b == Block::mlp ? step::Site::after_mlp : step::Site::after_attention; }
  static PerRank kernels(PassEmitter& e, PerRank at, const step::Kernels& list, const std::string& name) {
    for (const step::MemoryBoundKernel& k : list) at = e.memory(k.bytes, at, name + k.name);
    return at;
  }
  PerRank layer_forward(PassEmitter& e, PerRank at, int chunk_layers, const std::string& tag) const {
    for (int l = 0; l < chunk_layers; ++l)
      for (const Block block : blocks_) {
        at = kernels(e, at, step::layer_forward(s_, site_before(block)), tag);
        at = kernels(e, at, step::layer_forward(s_, site_after(block)), tag);
      }
    return at;
  }
  // The final norm, the output layer (its input all-gathered first) and the vocabulary-parallel cross-entropy.
  PerRank loss_forward(PassEmitter& e, PerRank at) const {
    at = kernels(e, at, step::final_norm_forward(s_), "");
    if (s_.vocab <= 0) return at;
    at = e.collective(Primitive::all_gather, hidden_, at, "output.all_gather");
    at = e.gemm(output_, at, "output");
    const step::CrossEntropyKernels ce = step::cross_entropy(s_);
    const Bytes ar = step::cross_entropy_all_reduce_bytes(s_);
    at = kernels(e, at, ce.before_max, "");
    at = e.collective(Primitive::all_reduce, ar, at, "loss.max.all_reduce");
    at = kernels(e, at, ce.after_max, "");
    for (int i = 0; i < ce.sum_all_reduces; ++i) at = e.collective(Primitive::all_reduce, ar, at, "loss.sums.all_reduce");
    return kernels(e, at, ce.after_sums, "");
  }
  PerRank loss_backward(PassEmitter& e, PerRank at) const {
    if (s_.vocab > 0) {
      at = kernels(e, at, step::cross_entropy(s_).backward, "bwd.");
      LinearBackward o;
      o.name = "output";
      o.dgrad = dgrad_of(output_);
      o.wgrad = wgrad_of(output_);
      o.scatter = Primitive::reduce_scatter;
      o.scatter_bytes = hidden_;
      o.regather_bytes = hidden_;
      at = emit_linear_backward(e, o, ColumnBackward::bulk, "bwd.output", at);
    }
    return kernels(e, at, step::final_norm_backward(s_), "bwd.");
  }

  const Workload& w_;
  const HardwareProfile& hw_;
  Fidelity fidelity_;
  const step::StepShape& s_;
  std::vector<Block> blocks_;
  Bytes hidden_;
  RankGemm output_;
};

// What the step's graph (training_step.cpp StepDriver) runs on a virtual stage besides its layers'
// blocks, in the same order: the token embedding before the first virtual stage's layers, the final
// norm, output layer and vocabulary-parallel cross-entropy after the last one's, each layer's norms,
// rotary and residual adds between its blocks; once per step on a stage, the FP8 weight casts (TE
// casts weights on a step's first micro-batch only: is_first_microbatch) and the optimizer over its
// layers' shard (and the embedding's or output layer's).
// `chunk_layers` > 0: a virtual stage's passes (first and last: of the whole model); `stage_layers` > 0:
// a physical stage's once-per-step work (first and last: the stage holding the embedding, the output layer).
StageKernelTimes stage_kernel_times(const Workload& stage, const HardwareProfile& hw, Fidelity fidelity,
                                    int chunk_layers, int stage_layers, bool first, bool last) {
  StageKernelTimes out;
  Workload w = stage;
  w.training.pass = Pass::step;
  const std::optional<step::StepShape> shape = step_kernel_shape(w);
  if (!shape) return out;
  const StageChains chains(w, hw, fidelity, *shape);
  if (chunk_layers > 0) {
    out.forward_ps = chains.forward_ps(chunk_layers, first, last);
    out.backward_ps = chains.backward_ps(chunk_layers, first, last);
  }
  if (stage_layers > 0) out.once_per_step_ps = chains.once_per_step_ps(stage_layers, first, last);
  return out;
}

std::map<std::string, const SchemeResult*> by_scheme(const std::vector<SchemeResult>& results) {
  std::map<std::string, const SchemeResult*> m;
  for (const SchemeResult& r : results)
    if (!r.failed()) m[r.scheme] = &r;
  return m;
}

}  // namespace

PipelineParallel pipeline_parallel_of(const Workload& w) {
  const JobParallel& j = w.training.job;
  return PipelineParallel{j.pp, j.vpp, j.micro_batches, j.schedule, j.cp, j.cp_algorithm, j.first_stage_layers,
                          j.last_stage_layers};
}

std::vector<int> pipeline_stage_layers(const Workload& w, const PipelineParallel& pp) {
  return pipeline_stage_layers(StageLayersRule{transformer_of(w).layers, std::max(1, pp.pp), std::max(1, pp.vpp),
                                               pp.first_stage_layers, pp.last_stage_layers});
}

std::vector<int> pipeline_chunk_layers(const Workload& w, const PipelineParallel& pp) {
  const std::vector<int> stages = pipeline_stage_layers(w, pp);
  const int chunks = std::max(1, pp.vpp);
  std::vector<int> out;
  for (int c = 0; c < chunks; ++c)
    for (const int layers : stages) out.push_back(layers / chunks);
  return out;
}

Workload stage_workload(const Workload& w, const PipelineParallel& pp) {
  Workload s = w;
  Transformer& t = std::get<Transformer>(s.shape);
  // The largest stage's layers where they differ (its gradient reduction is the longest).
  const std::vector<int> layers = pipeline_stage_layers(w, pp);
  t.layers = *std::max_element(layers.begin(), layers.end());
  t.seq /= std::max(1, pp.cp);
  s.training.pass = Pass::step;
  s.training.job = JobParallel{};
  return s;
}

std::vector<StageKernelTimes> pipeline_stage_kernels(const Workload& workload, const HardwareProfile& hw, Fidelity fidelity,
                                                     const PipelineParallel& pp, bool distinct_once) {
  const int stages = std::max(1, pp.pp), chunks = std::max(1, pp.vpp);
  const int virtual_stages = stages * chunks;
  const Workload stage = stage_workload(workload, pp);
  const std::vector<int> stage_layers = pipeline_stage_layers(workload, pp);
  const std::vector<int> chunk_layers = pipeline_chunk_layers(workload, pp);
  // Virtual stages alike in what surrounds their layers (first, last, both or neither) and in their
  // layers are alike in every kernel and collective: simulated once each unless asked to simulate every one.
  using Key = std::tuple<bool, bool, int>;
  std::map<Key, StageKernelTimes> passes, once;
  const auto times = [&](std::map<Key, StageKernelTimes>& cache, bool first, bool last, int layers, bool per_step) {
    const Key key{first, last, layers};
    if (distinct_once)
      if (const auto hit = cache.find(key); hit != cache.end()) return hit->second;
    const StageKernelTimes k = per_step ? stage_kernel_times(stage, hw, fidelity, 0, layers, first, last)
                                        : stage_kernel_times(stage, hw, fidelity, layers, 0, first, last);
    cache[key] = k;
    return k;
  };
  std::vector<StageKernelTimes> out(static_cast<std::size_t>(virtual_stages));
  for (int vs = 0; vs < virtual_stages; ++vs) {
    StageKernelTimes& k = out[static_cast<std::size_t>(vs)];
    k = times(passes, vs == 0, vs == virtual_stages - 1, chunk_layers[static_cast<std::size_t>(vs)], false);
    // A physical stage's once-per-step work sits on its chunk 0 (virtual stage = the stage).
    if (vs < stages)
      k.once_per_step_ps =
          times(once, vs == 0, vs == stages - 1, stage_layers[static_cast<std::size_t>(vs)], true).once_per_step_ps;
  }
  return out;
}

ContextParallelLayer context_parallel_layer(const Workload& w, const HardwareProfile& hw, const PipelineParallel& pp) {
  ContextParallelLayer c;
  if (pp.cp <= 1) return c;
  const Transformer& t = transformer_of(w);
  if (t.seq % (2 * pp.cp) != 0)
    throw std::invalid_argument(fmt::format("2 cp = {} does not divide the sequence ({} tokens): causal load "
                                            "balancing cuts it into 2 cp chunks", 2 * pp.cp, t.seq));
  const std::int64_t tp = std::max(1, w.tp);
  const std::int64_t head_dim = t.head_dim > 0 ? t.head_dim : t.d_model / t.heads;
  const std::int64_t heads_rank = std::max<std::int64_t>(1, t.heads / tp);
  const std::int64_t kv = t.kv_heads > 0 ? t.kv_heads : t.heads;
  const std::int64_t kv_rank = std::max<std::int64_t>(1, kv / tp);  // fewer kv heads than ranks: one each
  // One block: S / 2cp queries against S / 2cp keys, every score kept (QK^T and PV, 2 FLOPs a product).
  const std::int64_t chunk = t.seq / (2 * pp.cp);
  const double block_flops = 4.0 * static_cast<double>(t.batch) * static_cast<double>(chunk) * static_cast<double>(chunk) *
                             static_cast<double>(heads_rank) * static_cast<double>(head_dim);
  const std::int64_t tiles = t.batch * heads_rank * ((chunk + kRingQueryBlock - 1) / kRingQueryBlock);
  c.block_forward_ps = attention_kernel_ps(w, hw, block_flops, tiles, t.dtype);
  c.block_backward_ps = attention_kernel_ps(w, hw, kRingBackwardFlopsFactor * block_flops, tiles, t.dtype);
  c.kv_bytes = ring_step_kv_bytes(t.seq, t.batch, pp.cp, kv_rank, head_dim, dtype_bytes(t.dtype));
  // The CP group's ranks are tp apart (Megatron-LM's order: TP, then CP); it leaves the node when tp x cp
  // does not fit one. Every TP rank of the group sends at once.
  const bool across = multi_node(hw) && tp * pp.cp > hw.fabric.gpus_per_node;
  c.kv_ps = send_recv_ps(hw, across, static_cast<int>(tp), c.kv_bytes);
  const ContextShape shape{pp.cp, true, true};
  // The engine's chunk already ran the rank's own two causal chunks: step 0's work (2 blocks).
  const double own_blocks = ring_blocks_per_step(shape).front();
  const auto extra = [&](Ps block_ps, Ps kv_ps, Ps& added, Ps& exposed) {
    const ContextTimes times = context_parallel_times(pp.cp_algorithm, shape, block_ps, kv_ps);
    added = times.total_ps - checked_ps(own_blocks * static_cast<double>(block_ps));
    exposed = times.transfer_ps;
  };
  if (pp.cp_algorithm == ContextParallel::ring) {
    // The backward passes the key/value block and its gradient round the ring (Megatron-Core's p2p CP).
    extra(c.block_forward_ps, c.kv_ps, c.forward_extra_ps, c.forward_exposed_ps);
    extra(c.block_backward_ps, send_recv_ps(hw, across, static_cast<int>(tp), 2 * c.kv_bytes), c.backward_extra_ps,
          c.backward_exposed_ps);
  } else {
    // Llama 3 Sec. 3.3.2: keys and values all-gathered before attention, their gradients reduce-scattered
    // after it; either as NCCL's ring, cp - 1 blocks through each link in turn.
    const Ps collective_ps = (pp.cp - 1) * c.kv_ps;
    extra(c.block_forward_ps, collective_ps, c.forward_extra_ps, c.forward_exposed_ps);
    extra(c.block_backward_ps, collective_ps, c.backward_extra_ps, c.backward_exposed_ps);
  }
  return c;
}

void check_pipeline_parallel(const Workload& workload, const PipelineParallel& pp) {
  check_pipeline_shape({pp.pp, pp.vpp, pp.micro_batches, pp.schedule});
  const Transformer& t = transformer_of(workload);
  if (pp.cp < 1) throw std::invalid_argument(fmt::format("cp must be at least 1 (got {})", pp.cp));
  if (pp.cp > 1 && t.seq % (2 * pp.cp) != 0)
    throw std::invalid_argument(fmt::format("2 cp = {} does not divide the sequence ({} tokens)", 2 * pp.cp, t.seq));
  if (pp.cp > 1 && (t.batch * (t.seq / pp.cp)) % std::max(1, workload.tp) != 0)
    throw std::invalid_argument(fmt::format("tp {} does not divide a CP rank's batch x seq / cp tokens", workload.tp));
  if (const std::optional<StageLayersProblem> p = stage_layers_problem(
          StageLayersRule{t.layers, pp.pp, pp.vpp, pp.first_stage_layers, pp.last_stage_layers}))
    throw std::invalid_argument(p->message);
  if (t.moe && t.dense_layers > 0 && pp.pp > 1)
    throw std::invalid_argument(fmt::format(
        "a model whose first {} layers are dense and the rest MoE has stages that differ; pipeline parallelism is "
        "priced for identical stages only",
        t.dense_layers));
  if (pp.pp > 1 && workload.training.parallel.dp > 1 && workload.training.parallel.fsdp == Sharding::zero3)
    throw std::invalid_argument(
        "ZeRO-3 (FSDP) with pipeline parallelism gathers parameters for every micro-batch; use zero1 or zero2");
}

Bytes pipeline_p2p_bytes(const Workload& workload) {
  const Transformer& t = transformer_of(workload);
  const std::int64_t tokens = t.batch * t.seq / std::max(1, workload.training.job.cp);
  // Sequence parallelism: each TP rank holds tokens / tp of the activations at the stage boundary.
  const double bytes = static_cast<double>(tokens) / std::max(1, workload.tp) * static_cast<double>(t.d_model) *
                       dtype_bytes(t.dtype);
  if (bytes > 4.0e18) throw RangeError("pipeline activations of more bytes than the simulator counts");
  return static_cast<Bytes>(bytes);
}

Ps pipeline_p2p_ps(const HardwareProfile& hw, const Workload& workload, Bytes bytes) {
  // Megatron-LM's rank order puts PP outermost: a stage spans tp x cp x dp ranks, and the boundary leaves
  // the node once a stage fills it.
  const int group = workload.tp * std::max(1, workload.training.job.cp) * std::max(1, workload.training.parallel.dp);
  return send_recv_ps(hw, multi_node(hw) && group >= hw.fabric.gpus_per_node, workload.tp, bytes);
}

double paired_compute_rate(const HardwareProfile& hw) {
  const double sms = std::max(1, hw.gpu.sm_count);
  const double comm = std::clamp<double>(hw.comm.channels, 0, sms - 1);
  return (sms - comm) / sms / (1 + std::max(0.0, hw.gpu.gemm_comm_interference) * comm / sms);
}

Ps pipeline_mirror_grad_ps(const HardwareProfile& hw, const Workload& workload, const PipelineParallel& pp) {
  if (pp.schedule != PipelineSchedule::dualpipe || pp.pp < 2) return 0;
  const Transformer& t = transformer_of(workload);
  const std::vector<int> layers = pipeline_stage_layers(workload, pp);
  const std::int64_t layer_params =
      block_parameters(workload, Block::attention) + block_parameters(workload, Block::mlp) + 2 * t.d_model;
  const std::int64_t tp = std::max(1, workload.tp);
  const std::int64_t vocab_rows = t.vocab > 0 ? (t.vocab + tp - 1) / tp * t.d_model : 0;
  const int g = dtype_bytes(workload.training.parallel.grad_dtype);
  // The stage and its mirror are pp - 1 - 2s stages apart: across nodes when a stage boundary is.
  const int group = workload.tp * std::max(1, pp.cp) * std::max(1, workload.training.parallel.dp);
  const bool across = multi_node(hw) && group >= hw.fabric.gpus_per_node;
  Ps slowest = 0;
  for (int s = 0; s < pp.pp / 2; ++s) {
    std::int64_t params = (layers[static_cast<std::size_t>(s)] + layers[static_cast<std::size_t>(pp.pp - 1 - s)]) *
                          layer_params;
    if (s == 0) params += 2 * vocab_rows + t.d_model;  // the embedding, the output layer and final norm
    const double bytes = static_cast<double>(params) * g;
    if (bytes > 4.0e18) throw RangeError("DualPipe's gradients of more bytes than the simulator counts");
    // Two ranks: a reduce-scatter and an all-gather step, each half the gradients both ways (a ring of 2).
    slowest = std::max(slowest, 2 * send_recv_ps(hw, across, workload.tp, static_cast<Bytes>(bytes / 2)));
  }
  return slowest;
}

namespace {

// One scheme's chunk passes from the engine, per virtual stage (chunk layers may differ by stage).
struct ChunkPasses {
  std::vector<const SchemeResult*> forward, backward;
};

// The schedule's costs for one scheme: each virtual stage's chunk passes with context parallelism's
// added attention and the kernels around its layers.
PipelineCosts pipeline_costs(const PipelineParallel& pp, const ChunkPasses& passes, const std::vector<int>& chunk_layers,
                             const std::vector<StageKernelTimes>& around, const ContextParallelLayer& cp, Ps p2p_ps,
                             double compute_rate) {
  PipelineCosts costs;
  costs.p2p_ps = p2p_ps;
  if (pp.schedule == PipelineSchedule::dualpipe) costs.paired_compute_rate = compute_rate;
  const bool split = pp.schedule == PipelineSchedule::zero_bubble_h1 || pp.schedule == PipelineSchedule::dualpipe;
  for (std::size_t vs = 0; vs < around.size(); ++vs) {
    const StageKernelTimes& k = around[vs];
    const Ps forward_ps = passes.forward[vs]->latency_ps + chunk_layers[vs] * cp.forward_extra_ps;
    const Ps backward_ps = passes.backward[vs]->latency_ps + chunk_layers[vs] * cp.backward_extra_ps;
    costs.forward_ps.push_back(forward_ps + k.forward_ps);
    if (split) {
      // ZB-H1 and DualPipe need the weight gradient apart: a backward's GEMMs are half input gradient
      // (dX = dY W^T) and half weight gradient (dW = X^T dY), the same FLOPs; the engine does not time
      // them apart yet, so half the layers' backward goes to W. The memory-bound kernels around them
      // produce the input gradient (norms', rotary's and the loss's backward): B.
      costs.weight_ps.push_back(backward_ps / 2);
      costs.backward_ps.push_back(backward_ps - backward_ps / 2 + k.backward_ps);
    } else {
      costs.backward_ps.push_back(backward_ps + k.backward_ps);
    }
    if (pp.schedule == PipelineSchedule::dualpipe) {
      // What an F&B chunk can hide: the communication the engine found exposed in each pass alone.
      costs.forward_comm_ps.push_back(std::max<Ps>(0, passes.forward[vs]->exposed_comm_ps));
      costs.backward_comm_ps.push_back(std::max<Ps>(0, passes.backward[vs]->exposed_comm_ps));
    }
  }
  return costs;
}

// The slowest stage's once-per-step work; a DualPipe stage holds model stages s and pp - 1 - s.
Ps slowest_optimizer_ps(const PipelineParallel& pp, const std::vector<StageKernelTimes>& around) {
  Ps out = 0;
  const int stages = std::max(1, pp.pp);
  for (int s = 0; s < stages; ++s) {
    Ps once = around[static_cast<std::size_t>(s)].once_per_step_ps;
    if (pp.schedule == PipelineSchedule::dualpipe) once += around[static_cast<std::size_t>(stages - 1 - s)].once_per_step_ps;
    out = std::max(out, once);
  }
  return out;
}

// The schedule run on `costs`, and the figures of the step it gives.
void compose_step(PipelineStepResult& r, const PipelineParallel& pp, const PipelineCosts& costs) {
  const PipelineShape shape{pp.pp, pp.vpp, pp.micro_batches, pp.schedule};
  r.timeline = run_pipeline(shape, costs);
  r.pipeline_ps = r.timeline.step_ps;
  const Ps busiest = *std::max_element(r.timeline.busy_ps.begin(), r.timeline.busy_ps.end());
  r.bubble_ps = r.pipeline_ps - busiest;
  r.bubble_fraction = r.pipeline_ps > 0 ? static_cast<double>(r.bubble_ps) / static_cast<double>(r.pipeline_ps) : 0;
  PipelineCosts free_transfers = costs;
  free_transfers.p2p_ps = 0;
  const Ps without_p2p_ps = costs.p2p_ps > 0 ? run_pipeline(shape, free_transfers).step_ps : r.pipeline_ps;
  r.exposed_p2p_ps = std::max<Ps>(0, r.pipeline_ps - without_p2p_ps);
  r.exposed_bubble_ps = r.bubble_ps - r.exposed_p2p_ps;
  r.peak_micro_batches = r.timeline.peak_in_flight;
}

}  // namespace

std::vector<PipelineStepResult> evaluate_pipeline(const std::vector<SchemeRequest>& schemes, const Workload& workload_in,
                                                  const HardwareProfile& hardware, Fidelity fidelity,
                                                  const PipelineParallel& pp, const std::vector<SchemeResult>* stage_steps) {
  Workload workload = workload_in;
  workload.training.job = JobParallel{pp.pp, pp.vpp, pp.micro_batches, pp.schedule, pp.cp, pp.cp_algorithm,
                                      pp.first_stage_layers, pp.last_stage_layers};
  check_pipeline_parallel(workload, pp);
  const std::vector<int> chunk_layers = pipeline_chunk_layers(workload, pp);
  // The engine runs each distinct chunk once, forward and backward.
  std::map<int, std::pair<std::vector<SchemeResult>, std::vector<SchemeResult>>> runs;
  for (const int layers : chunk_layers)
    if (runs.find(layers) == runs.end())
      runs[layers] = {evaluate_all(schemes, chunk_workload(workload, pp, Pass::forward, layers), hardware, fidelity),
                      evaluate_all(schemes, chunk_workload(workload, pp, Pass::backward, layers), hardware, fidelity)};
  // The gradient reduction once a stage's last backward is done: one micro-batch's step of the
  // stage's layers, data parallel as the workload says.
  std::map<std::string, const SchemeResult*> dp_of;
  std::vector<SchemeResult> dp_runs;
  if (stage_steps != nullptr) {
    dp_of = by_scheme(*stage_steps);
  } else if (workload.training.parallel.dp > 1) {
    dp_runs = evaluate_all(schemes, stage_workload(workload, pp), hardware, fidelity);
    dp_of = by_scheme(dp_runs);
  }
  const Bytes p2p_bytes = pp.pp > 1 ? pipeline_p2p_bytes(workload) : 0;
  const Ps p2p_ps = pp.pp > 1 ? pipeline_p2p_ps(hardware, workload, p2p_bytes) : 0;
  const ContextParallelLayer cp = context_parallel_layer(workload, hardware, pp);
  const Ps mirror_grad_ps = pipeline_mirror_grad_ps(hardware, workload, pp);
  const std::vector<StageKernelTimes> around = pipeline_stage_kernels(workload, hardware, fidelity, pp);
  const Transformer& t = transformer_of(workload);
  const double step_tokens = static_cast<double>(t.batch * t.seq) * pp.micro_batches *
                             std::max(1, workload.training.parallel.dp);
  // The report's chunk is the largest one; the busiest stage holds the most layers.
  const int largest = *std::max_element(chunk_layers.begin(), chunk_layers.end());
  const std::vector<int> stage_layers = pipeline_stage_layers(workload, pp);
  const int most_layers = *std::max_element(stage_layers.begin(), stage_layers.end());

  std::vector<PipelineStepResult> out;
  for (const SchemeResult& f : runs[largest].first) {
    if (f.failed()) continue;
    ChunkPasses passes;
    for (const int layers : chunk_layers) {
      const auto fo = by_scheme(runs[layers].first), ba = by_scheme(runs[layers].second);
      const auto fi = fo.find(f.scheme), bi = ba.find(f.scheme);
      if (fi == fo.end() || bi == ba.end()) break;  // no backward form: not a training scheme
      passes.forward.push_back(fi->second);
      passes.backward.push_back(bi->second);
    }
    if (passes.backward.size() != chunk_layers.size()) continue;
    PipelineStepResult r;
    r.scheme = f.scheme;
    r.cp = cp;
    r.chunk_forward_ps = f.latency_ps + largest * cp.forward_extra_ps;
    r.chunk_backward_ps = by_scheme(runs[largest].second).at(f.scheme)->latency_ps + largest * cp.backward_extra_ps;
    r.p2p_bytes = p2p_bytes;
    r.p2p_ps = p2p_ps;
    r.stage_kernels = around;
    r.optimizer_ps = slowest_optimizer_ps(pp, around);
    compose_step(r, pp, pipeline_costs(pp, passes, chunk_layers, around, cp, p2p_ps, paired_compute_rate(hardware)));
    r.mirror_grad_ps = mirror_grad_ps;
    // Every stage runs each of its chunks forward and backward once per micro-batch.
    r.exposed_cp_ps = static_cast<Ps>(pp.micro_batches) * most_layers * (cp.forward_exposed_ps + cp.backward_exposed_ps);
    if (const auto d = dp_of.find(f.scheme); d != dp_of.end()) r.exposed_dp_ps = std::max<Ps>(0, d->second->step.exposed_dp_ps);
    // The gradient norm is all-reduced over every stage before any clips (clip_grad_norm_ over the
    // model-parallel group), so the step waits for the slowest stage's optimizer.
    r.step_ps = r.pipeline_ps + r.exposed_dp_ps + r.mirror_grad_ps + r.optimizer_ps;
    r.tokens_per_s = r.step_ps > 0 ? step_tokens / (static_cast<double>(r.step_ps) / 1e12) : 0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace overlap::sim
