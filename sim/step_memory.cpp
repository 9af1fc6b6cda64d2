#include "sim/step_memory.hpp"

#include <algorithm>
#include <variant>

#include <fmt/format.h>

#include "sim/pipeline_layers.hpp"
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

// kStepMemoryScope with the layer's own core attention and dropout where they are not its defaults.
std::string step_memory_scope(const memory::StepMemoryInput& in) {
  std::string scope = kStepMemoryScope;
  const bool unfused = in.layer.attention == memory::CoreAttention::unfused;
  if (!unfused && !in.layer.dropout) return scope;
  const std::string flash = "FlashAttention, no dropout";
  const std::string own = fmt::format("{} attention{}", unfused ? "unfused (Korthikanti et al.'s 5 a s^2 b)" : "FlashAttention",
                                      in.layer.dropout ? ", dropout masks" : ", no dropout");
  const std::size_t at = scope.find(flash);
  if (at != std::string::npos) scope.replace(at, flash.size(), own);
  return scope;
}

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
  // Dropout masks where the step runs dropout kernels (workload.dropout > 0; Llama-family configs have
  // none). Core attention as the step runs it (workload.attention): FlashAttention keeps the log-sum-exp
  // alone; unfused keeps the probabilities and, with dropout, its mask and output (Korthikanti et al.
  // Sec. 4.1's 5 a s^2 b).
  l.dropout = t->step_kernels && t->dropout > 0;
  l.attention = t->attention == AttentionImplementation::unfused ? memory::CoreAttention::unfused : memory::CoreAttention::flash;
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

bool splits_weight_gradient(PipelineSchedule s) {
  return s == PipelineSchedule::zero_bubble_h1 || s == PipelineSchedule::dualpipe;
}

// Each stage's passes in order: the schedule run with unit pass times (what a stage holds depends on the
// order of its passes, not on their lengths: Narayanan et al. SC'21 Sec. 2.2).
PipelineTimeline unit_timeline(const JobParallel& j) {
  const PipelineShape shape{j.pp, j.vpp, j.micro_batches, j.schedule};
  const auto n = static_cast<std::size_t>(j.pp * j.vpp);
  PipelineCosts unit;
  unit.forward_ps.assign(n, 1);
  unit.backward_ps.assign(n, splits_weight_gradient(j.schedule) ? 1 : 2);
  if (splits_weight_gradient(j.schedule)) unit.weight_ps.assign(n, 1);
  return run_pipeline(shape, unit);
}

}  // namespace

Bytes weight_gradient_bytes_per_layer(const memory::LayerShape& l, int tp) {
  const std::int64_t t = std::max(1, tp);
  const std::int64_t tokens = l.seq * l.micro_batch;
  const std::int64_t head_dim = l.head_dim > 0 ? l.head_dim : l.d_model / std::max<std::int64_t>(1, l.heads);
  const std::int64_t kv_heads = l.kv_heads > 0 ? l.kv_heads : l.heads;
  // Per rank: query heads / t, key/value heads / t (one each where there are fewer than t).
  const std::int64_t q = l.heads * head_dim / t, kv = std::max<std::int64_t>(1, kv_heads / t) * head_dim;
  const std::int64_t ffn_out = (l.gated ? 2 : 1) * l.d_ffn / t;
  // Inputs (sequence-parallel shards where the linear's input is; Korthikanti et al. Sec. 4.2.2): QKV's,
  // the output projection's, the MLP's first and second linears'.
  const std::int64_t inputs = tokens * (l.d_model / t + q + l.d_model / t + l.d_ffn / t);
  // Output gradients: QKV's, the output projection's (its sequence-parallel shard), the first linear's
  // (gate and up), the second's (its shard).
  const std::int64_t output_grads = tokens * (q + 2 * kv + l.d_model / t + ffn_out + l.d_model / t);
  return inputs * l.linear_input_bytes + output_grads * l.activation_bytes;
}

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
    m.scope = step_memory_scope(*base);
    out.push_back(m);
    return out;
  }
  // A job: the stage's layers, a CP rank's share of the sequence, the vocabulary at the two ends.
  memory::StepMemoryInput in = *base;
  in.layer.seq = t.seq / j.cp;
  in.vocab = t.vocab;
  in.communicators += (j.pp > 1 ? 1 : 0) + (j.cp > 1 ? 1 : 0);
  const PipelineTimeline timeline = unit_timeline(j);
  const std::vector<int> layers = pipeline_stage_layers(StageLayersRule{t.layers, j.pp, j.vpp, j.first_stage_layers,
                                                                        j.last_stage_layers});
  const bool dual = j.schedule == PipelineSchedule::dualpipe;
  const bool split = splits_weight_gradient(j.schedule);
  // One layer's activations held from its forward to its backward, and what its weight gradient still
  // holds after the input gradient (split schedules).
  const auto full = static_cast<double>(
      memory::stored_activation_bytes_per_layer(in.layer, in.parallel, in.recompute));
  const auto weight = static_cast<double>(weight_gradient_bytes_per_layer(in.layer, w.tp));
  for (int s = 0; s < j.pp; ++s) {
    const auto su = static_cast<std::size_t>(s), mirror = static_cast<std::size_t>(j.pp - 1 - s);
    // DualPipe: stage s holds model stages s and pp - 1 - s, both ends' embedding and output layer on
    // the two outer stages (DeepSeek-V3 Sec. 3.2.1: two copies of the parameters).
    in.layers = dual ? layers[su] + layers[mirror] : layers[su];
    in.first_stage = s == 0 || (dual && s == j.pp - 1);
    in.last_stage = s == j.pp - 1 || (dual && s == 0);
    // A chunk is the stage's layers / vpp (DualPipe: either model stage's; the larger counted).
    const std::int64_t chunk_layers = (dual ? std::max(layers[su], layers[mirror]) : layers[su]) / j.vpp;
    const StageActivationPeak peak = stage_activation_peak(timeline.stages[su], split, full, weight);
    // Gradient accumulation without stages (pp = 1) holds one micro-batch at a time.
    in.in_flight_layers = j.pp > 1 ? peak.full_chunks * chunk_layers : 0;
    StepMemory m;
    m.bytes = memory::step_memory(in);
    if (j.pp > 1 && peak.weight_chunks > 0) {
      // Chunks whose input gradient ran and whose weight gradient has not yet: W's inputs and output gradients.
      const auto pending = static_cast<Bytes>(peak.weight_chunks * chunk_layers * weight_gradient_bytes_per_layer(in.layer, w.tp));
      m.bytes.activations_bytes += pending;
      m.bytes.peak_bytes += pending;
    }
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
  // Uneven first and last stages (sim/pipeline_layers.hpp) set each stage's layers; 0 = layers / pp.
  if (j.active() && j.first_stage_layers > 0)
    keys += fmt::format(", workload.parallel.first_stage_layers = {}", j.first_stage_layers);
  if (j.active() && j.last_stage_layers > 0)
    keys += fmt::format(", workload.parallel.last_stage_layers = {}", j.last_stage_layers);
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
  j["scope"] = m.scope;
  return j;
}

}  // namespace overlap::sim
