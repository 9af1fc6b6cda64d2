#include "sim/step_memory.hpp"

#include <algorithm>
#include <variant>

#include <fmt/format.h>

#include "sim/report.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

memory::RecomputePolicy recompute_policy(Recompute r) {
  switch (r) {
    case Recompute::none: return memory::RecomputePolicy::none;
    case Recompute::selective: return memory::RecomputePolicy::selective;
    case Recompute::full: return memory::RecomputePolicy::full;
  }
  return memory::RecomputePolicy::none;
}

memory::ZeroStage zero_stage(Sharding s) {
  switch (s) {
    case Sharding::none: return memory::ZeroStage::none;
    case Sharding::zero1: return memory::ZeroStage::optimizer;
    case Sharding::zero2: return memory::ZeroStage::gradients;
    case Sharding::zero3: return memory::ZeroStage::parameters;
  }
  return memory::ZeroStage::none;
}

std::string gib(Bytes b) { return fmt::format("{:.2f}", static_cast<double>(b) / static_cast<double>(Bytes{1} << 30)); }

}  // namespace

const char* const kStepMemoryScope =
    "counted: bf16/fp16 weights, gradients in parallel.grad_dtype, Adam's fp32 master weights and two moments (12 "
    "bytes per parameter) sharded by parallel.fsdp over dp; every layer's stored activations of the micro-batch "
    "(Korthikanti et al. Sec. 4-5, with GQA, SwiGLU, FlashAttention, no dropout, sequence parallelism); FP8 weight "
    "copies and amax histories; NCCL and cuBLAS buffers; at the peak, ZeRO-3's gathered layers and the first "
    "layer's recomputation. The embedding and output layer (untied, vocabulary-parallel) and the fp32 logits when the step runs them "
    "(a dense transformer's pass: step with a vocabulary). Not counted: the CUDA context, allocator fragmentation";

namespace {

std::optional<memory::StepMemoryInput> memory_input(const Workload& w, const HardwareProfile& hw) {
  const auto* t = std::get_if<Transformer>(&w.shape);
  if (w.kind != WorkloadKind::transformer || t == nullptr || t->moe || t->mla || !has_backward(w)) return std::nullopt;
  memory::StepMemoryInput in;
  memory::LayerShape& l = in.layer;
  l.seq = t->seq;
  l.micro_batch = t->batch;
  l.d_model = t->d_model;
  l.heads = t->heads;
  l.kv_heads = t->kv_heads;
  l.head_dim = t->head_dim;
  l.d_ffn = t->d_ffn;
  l.gated = transformer_mlp(*t).gated;
  // FP8 GEMMs keep their other activations in bf16 (Transformer Engine), and their saved inputs in fp8.
  l.activation_bytes = t->dtype == DType::fp32 ? 4 : 2;
  l.linear_input_bytes = dtype_bytes(t->dtype);
  // The simulated layer has no dropout kernels (Llama-family configs: attention_dropout 0) and runs core
  // attention as a FlashAttention-style tiled kernel (sim/workload_shapes.cpp attention_shapes).
  l.dropout = false;
  l.attention = memory::CoreAttention::flash;
  // The transformer workload is Megatron-LM's TP with sequence parallelism (sim/workload.hpp).
  in.parallel = memory::LayerParallel{w.tp, true};
  in.layers = t->layers;
  // The embedding and output layer (untied, as Llama's) where the step runs them (training_step.cpp).
  in.vocab = t->step_kernels ? t->vocab : 0;
  in.recompute = recompute_policy(w.training.recompute);
  const DataParallel& dp = w.training.parallel;
  in.dp = dp.dp;
  in.zero = zero_stage(dp.fsdp);
  in.zero3_prefetch = dp.prefetch;
  // fp32 weights need no separate master copy: Adam's two moments only.
  in.state.param_bytes = t->dtype == DType::fp32 ? 4 : 2;
  in.state.grad_bytes = dtype_bytes(dp.grad_dtype);
  in.state.optimizer_bytes = t->dtype == DType::fp32 ? 8 : 12;
  in.fp8 = t->dtype == DType::fp8;
  in.nccl_channels = hw.comm.channels;
  in.communicators = dp.dp > 1 ? 2 : 1;
  return in;
}

// Each stage's micro-batch chunks in flight at its peak: the schedule run with unit pass times (what
// a stage holds depends on the order of its passes, not on their lengths: Narayanan et al. SC'21 Sec. 2.2).
std::vector<int> chunks_in_flight(const JobParallel& j) {
  const PipelineShape shape{j.pp, j.vpp, j.micro_batches, j.schedule};
  const auto n = static_cast<std::size_t>(j.pp * j.vpp);
  PipelineCosts unit;
  unit.forward_ps.assign(n, 1);
  unit.backward_ps.assign(n, j.schedule == PipelineSchedule::zero_bubble_h1 ? 1 : 2);
  if (j.schedule == PipelineSchedule::zero_bubble_h1) unit.weight_ps.assign(n, 1);
  return run_pipeline(shape, unit).peak_in_flight;
}

}  // namespace

std::vector<StepMemory> stage_memories(const Workload& w, const HardwareProfile& hw) {
  std::optional<memory::StepMemoryInput> base = memory_input(w, hw);
  if (!base) return {};
  const JobParallel& j = w.training.job;
  const auto& t = std::get<Transformer>(w.shape);
  std::vector<StepMemory> out;
  if (!j.active()) {
    StepMemory m;
    m.bytes = memory::step_memory(*base);
    m.hbm_bytes = hw.gpu.hbm_bytes;
    out.push_back(m);
    return out;
  }
  // A job: the stage's layers, a CP rank's share of the sequence, the vocabulary at the two ends.
  memory::StepMemoryInput in = *base;
  in.layers = t.layers / j.pp;
  in.layer.seq = t.seq / j.cp;
  in.vocab = t.vocab;
  in.communicators += (j.pp > 1 ? 1 : 0) + (j.cp > 1 ? 1 : 0);
  const std::vector<int> chunks = chunks_in_flight(j);
  const std::int64_t chunk_layers = t.layers / (j.pp * j.vpp);
  for (int s = 0; s < j.pp; ++s) {
    in.first_stage = s == 0;
    in.last_stage = s == j.pp - 1;
    // Gradient accumulation without stages (pp = 1) holds one micro-batch at a time.
    in.in_flight_layers = j.pp > 1 ? chunks[static_cast<std::size_t>(s)] * chunk_layers : 0;
    StepMemory m;
    m.bytes = memory::step_memory(in);
    m.hbm_bytes = hw.gpu.hbm_bytes;
    m.stage = j.pp > 1 ? s : -1;
    out.push_back(m);
  }
  return out;
}

std::optional<StepMemory> step_memory(const Workload& w, const HardwareProfile& hw) {
  const std::vector<StepMemory> stages = stage_memories(w, hw);
  if (stages.empty()) return std::nullopt;
  // A job fits when its fullest stage does.
  return *std::max_element(stages.begin(), stages.end(), [](const StepMemory& a, const StepMemory& b) {
    return a.bytes.peak_bytes < b.bytes.peak_bytes;
  });
}

std::string step_memory_keys(const Workload& w) {
  const auto* t = std::get_if<Transformer>(&w.shape);
  if (t == nullptr) return {};
  const DataParallel& dp = w.training.parallel;
  std::string keys = fmt::format(
      "workload.model = {} ({} layers, d_model {}, d_ffn {}), workload.tp = {}, workload.batch = {}, workload.seq = {}, "
      "workload.dtype = {}, workload.recompute = {}, workload.parallel.dp = {}, workload.parallel.fsdp = {}, "
      "workload.parallel.grad_dtype = {}",
      t->model.empty() ? "custom" : t->model, t->layers, t->d_model, t->d_ffn, w.tp, t->batch, t->seq,
      dtype_name(t->dtype), recompute_name(w.training.recompute), dp.dp, sharding_name(dp.fsdp), dtype_name(dp.grad_dtype));
  const JobParallel& j = w.training.job;
  if (j.active())
    keys += fmt::format(", workload.parallel.pp = {}, workload.parallel.vpp = {}, workload.parallel.micro_batches = {}, "
                        "workload.parallel.schedule = {}, workload.parallel.cp = {}",
                        j.pp, j.vpp, j.micro_batches, pipeline_schedule_name(j.schedule), j.cp);
  return keys;
}

std::string format_step_memory(const StepMemory& m) {
  const memory::StepMemoryBytes& b = m.bytes;
  const std::vector<std::string> headers = {"params", "grads", "optimizer", "activations", "buffers",
                                            "transient", "peak", "HBM"};
  const std::vector<std::vector<std::string>> rows = {
      {gib(b.params_bytes), gib(b.grads_bytes), gib(b.optimizer_bytes), gib(b.activations_bytes), gib(b.buffers_bytes()),
       gib(b.transient_bytes), gib(b.peak_bytes), m.hbm_bytes > 0 ? gib(m.hbm_bytes) : std::string("not given")}};
  const std::vector<std::size_t> width = column_widths(headers, rows);
  const std::string align(headers.size(), '>');
  const std::string where = m.stage >= 0 ? fmt::format(" on pipeline stage {} (the fullest)", m.stage) : std::string();
  std::string out = "\n" + wrap_text(fmt::format("memory per GPU{}, GiB ({:.2f} B parameters per GPU before sharding; "
                                                 "peak = the states, activations and buffers, plus what is live at the "
                                                 "backward's start; HBM = hardware.gpu.hbm_bytes; docs/guide/training.md "
                                                 "\"Memory per GPU\")",
                                                 where, static_cast<double>(b.params_per_gpu) / 1e9),
                                     kTableWidth, "  ");
  out += table_line(headers, width, align);
  for (const auto& row : rows) out += table_line(row, width, align);
  if (!m.fits())
    out += wrap_text(fmt::format("WARNING: the peak ({} GiB) exceeds the profile's HBM ({} GiB) by {} GiB: this step "
                                 "does not fit one GPU (`run --fit-only` refuses it)",
                                 gib(b.peak_bytes), gib(m.hbm_bytes), gib(b.peak_bytes - m.hbm_bytes)),
                     kTableWidth, "  ");
  return out;
}

nlohmann::json step_memory_json(const StepMemory& m) {
  const memory::StepMemoryBytes& b = m.bytes;
  nlohmann::json j;
  j["params_per_gpu"] = b.params_per_gpu;
  j["params_bytes"] = b.params_bytes;
  j["grads_bytes"] = b.grads_bytes;
  j["optimizer_bytes"] = b.optimizer_bytes;
  j["activations_bytes"] = b.activations_bytes;
  j["buffers_bytes"] = b.buffers_bytes();
  j["fp8_bytes"] = b.fp8_bytes;
  j["nccl_bytes"] = b.nccl_bytes;
  j["workspace_bytes"] = b.workspace_bytes;
  j["transient_bytes"] = b.transient_bytes;
  j["peak_bytes"] = b.peak_bytes;
  j["hbm_bytes"] = m.hbm_bytes > 0 ? nlohmann::json(m.hbm_bytes) : nlohmann::json();
  j["fits"] = m.fits();
  if (m.stage >= 0) j["stage"] = m.stage;
  j["scope"] = kStepMemoryScope;
  return j;
}

}  // namespace overlap::sim
