// A transformer step under pipeline parallelism (pipeline_step.hpp): stage passes from the engine,
// transfers from the cost model, composed by the schedule.
#include "sim/pipeline_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <variant>

namespace overlap::sim {

namespace {

const Transformer& transformer_of(const Workload& w) {
  const Transformer* t = std::get_if<Transformer>(&w.shape);
  if (t == nullptr) throw std::invalid_argument("pipeline parallelism needs a transformer workload (its layers are the stages')");
  return *t;
}

// The workload one model chunk runs for one micro-batch: layers / (pp x vpp), no data parallelism.
Workload chunk_workload(const Workload& w, const PipelineParallel& pp, Pass pass) {
  Workload c = w;
  std::get<Transformer>(c.shape).layers /= pp.pp * pp.vpp;
  c.training.pass = pass;
  c.training.parallel = DataParallel{};
  return c;
}

std::map<std::string, const SchemeResult*> by_scheme(const std::vector<SchemeResult>& results) {
  std::map<std::string, const SchemeResult*> m;
  for (const SchemeResult& r : results)
    if (!r.failed()) m[r.scheme] = &r;
  return m;
}

}  // namespace

void check_pipeline_parallel(const Workload& workload, const PipelineParallel& pp) {
  check_pipeline_shape({pp.pp, pp.vpp, pp.micro_batches, pp.schedule});
  const Transformer& t = transformer_of(workload);
  if (t.layers % (pp.pp * pp.vpp) != 0)
    throw std::invalid_argument(fmt::format("pp {} x vpp {} does not divide the model's {} layers", pp.pp, pp.vpp, t.layers));
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
  const std::int64_t tokens = t.batch * t.seq;
  // Sequence parallelism: each TP rank holds tokens / tp of the activations at the stage boundary.
  const double bytes = static_cast<double>(tokens) / std::max(1, workload.tp) * static_cast<double>(t.d_model) *
                       dtype_bytes(t.dtype);
  if (bytes > 4.0e18) throw RangeError("pipeline activations of more bytes than the simulator counts");
  return static_cast<Bytes>(bytes);
}

Ps pipeline_p2p_ps(const HardwareProfile& hw, const Workload& workload, Bytes bytes) {
  const FabricSpec& f = hw.fabric;
  const TransportSpec& p2p = hw.transports.nccl_p2p;
  const int group = workload.tp * std::max(1, workload.training.parallel.dp);
  const bool across_nodes = f.topology == "multi_node" && f.gpus_per_node > 0 && group >= f.gpus_per_node;
  const char* cls = across_nodes ? "network" : f.links.count("nvlink") ? "nvlink" : "pcie";
  const auto link = f.links.find(cls);
  if (link == f.links.end() || !(link->second.bandwidth_gbps > 0))
    throw std::invalid_argument(fmt::format("the profile has no '{}' link for the pipeline's stage-to-stage transfers", cls));
  double gbps = link->second.bandwidth_gbps;
  if (across_nodes) {
    // Every TP rank of the stage sends at once, each through its PCIe switch's NIC.
    const int nics = f.nics_per_node > 0 ? f.nics_per_node : f.gpus_per_node;
    const int sharing = std::max(1, std::min(workload.tp, f.gpus_per_node) / nics);
    gbps = gbps * f.nic_efficiency / sharing;
  } else {
    gbps *= p2p.efficiency;
  }
  return checked_ps((p2p.latency_us + link->second.latency_us) * 1e6 + static_cast<double>(bytes) / gbps * 1e3);
}

std::vector<PipelineStepResult> evaluate_pipeline(const std::vector<SchemeRequest>& schemes, const Workload& workload,
                                                  const HardwareProfile& hardware, Fidelity fidelity,
                                                  const PipelineParallel& pp) {
  check_pipeline_parallel(workload, pp);
  const std::vector<SchemeResult> forward =
      evaluate_all(schemes, chunk_workload(workload, pp, Pass::forward), hardware, fidelity);
  const std::vector<SchemeResult> backward =
      evaluate_all(schemes, chunk_workload(workload, pp, Pass::backward), hardware, fidelity);
  const auto backward_of = by_scheme(backward);
  // The gradient reduction once a stage's last backward is done: one micro-batch's step of the
  // stage's layers, data parallel as the workload says.
  std::map<std::string, const SchemeResult*> dp_of;
  std::vector<SchemeResult> dp_runs;
  if (workload.training.parallel.dp > 1) {
    Workload stage = workload;
    std::get<Transformer>(stage.shape).layers /= pp.pp;
    stage.training.pass = Pass::step;
    dp_runs = evaluate_all(schemes, stage, hardware, fidelity);
    dp_of = by_scheme(dp_runs);
  }
  const Bytes p2p_bytes = pp.pp > 1 ? pipeline_p2p_bytes(workload) : 0;
  const Ps p2p_ps = pp.pp > 1 ? pipeline_p2p_ps(hardware, workload, p2p_bytes) : 0;
  const Transformer& t = transformer_of(workload);
  const double step_tokens = static_cast<double>(t.batch * t.seq) * pp.micro_batches *
                             std::max(1, workload.training.parallel.dp);

  std::vector<PipelineStepResult> out;
  for (const SchemeResult& f : forward) {
    if (f.failed()) continue;
    const auto b = backward_of.find(f.scheme);
    if (b == backward_of.end()) continue;  // no backward form: not a training scheme
    PipelineStepResult r;
    r.scheme = f.scheme;
    r.chunk_forward_ps = f.latency_ps;
    r.chunk_backward_ps = b->second->latency_ps;
    r.p2p_bytes = p2p_bytes;
    r.p2p_ps = p2p_ps;
    const std::size_t chunks = static_cast<std::size_t>(pp.pp * pp.vpp);
    PipelineCosts costs;
    costs.forward_ps.assign(chunks, r.chunk_forward_ps);
    costs.p2p_ps = p2p_ps;
    if (pp.schedule == PipelineSchedule::zero_bubble_h1) {
      // ZB-H1 needs the weight gradient apart: a backward's GEMMs are half input gradient (dX = dY W^T)
      // and half weight gradient (dW = X^T dY), the same FLOPs; the engine does not time them apart yet,
      // so half the backward goes to W.
      costs.weight_ps.assign(chunks, r.chunk_backward_ps / 2);
      costs.backward_ps.assign(chunks, r.chunk_backward_ps - r.chunk_backward_ps / 2);
    } else {
      costs.backward_ps.assign(chunks, r.chunk_backward_ps);
    }
    r.timeline = run_pipeline({pp.pp, pp.vpp, pp.micro_batches, pp.schedule}, costs);
    r.pipeline_ps = r.timeline.step_ps;
    r.bubble_ps = r.pipeline_ps - *std::max_element(r.timeline.busy_ps.begin(), r.timeline.busy_ps.end());
    r.bubble_fraction = r.pipeline_ps > 0 ? static_cast<double>(r.bubble_ps) / static_cast<double>(r.pipeline_ps) : 0;
    r.peak_micro_batches = r.timeline.peak_in_flight;
    if (const auto d = dp_of.find(f.scheme); d != dp_of.end()) r.exposed_dp_ps = std::max<Ps>(0, d->second->step.exposed_dp_ps);
    r.step_ps = r.pipeline_ps + r.exposed_dp_ps;
    r.tokens_per_s = r.step_ps > 0 ? step_tokens / (static_cast<double>(r.step_ps) / 1e12) : 0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace overlap::sim
