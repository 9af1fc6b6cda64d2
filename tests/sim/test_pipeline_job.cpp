// A pipeline / context-parallel job's memory per stage (sim/step_memory.hpp stage_memories) and context
// parallelism in the step (sim/pipeline_step.hpp context_parallel_layer): closed forms where the model
// is exact, invariants where it composes the engine's figures.
#include <catch2/catch.hpp>

#include <string>

#include "cost_model/memory_model.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/pipeline_step.hpp"
#include "sim/step_memory.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kJobProfiles = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

Workload job_workload(int layers, std::int64_t seq, JobParallel job, std::int64_t vocab = 0) {
  Transformer t = test::custom_transformer(layers, 1, seq, 4096, 14336, 32, 8);
  t.vocab = vocab;
  Workload w = test::with_pass(test::transformer_on(t, 8), Pass::step);
  w.training.job = job;
  return w;
}

}  // namespace

TEST_CASE("memory per stage: 1F1B stage s holds pp - s micro-batches' activations", "[pipeline][memory]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  JobParallel job;
  job.pp = 4;
  job.micro_batches = 8;
  const Workload w = job_workload(16, 4096, job);
  const std::vector<StepMemory> stages = stage_memories(w, hw);
  REQUIRE(stages.size() == 4);
  // One micro-batch's activations of a stage's 4 layers, from the one-stage model at layers / pp.
  Workload one = w;
  one.training.job = JobParallel{};
  std::get<Transformer>(one.shape).layers = 4;
  const Bytes per_micro_batch = step_memory(one, hw)->bytes.activations_bytes;
  for (int s = 0; s < 4; ++s) {
    INFO("stage " << s);
    // Narayanan et al. SC'21 Sec. 2.2.1: stage s of 1F1B has at most pp - s micro-batches in flight.
    CHECK(stages[static_cast<std::size_t>(s)].bytes.activations_bytes == (4 - s) * per_micro_batch);
    CHECK(stages[static_cast<std::size_t>(s)].stage == s);
    // Every stage holds the same 4 layers' states (no vocabulary given).
    CHECK(stages[static_cast<std::size_t>(s)].bytes.params_bytes == stages.front().bytes.params_bytes);
  }
  // The job's memory is its fullest stage's: the first.
  CHECK(step_memory(w, hw)->bytes.peak_bytes == stages.front().bytes.peak_bytes);
}

TEST_CASE("memory per stage: interleaving holds more, GPipe holds every micro-batch", "[pipeline][memory]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  JobParallel one_f_one_b;
  one_f_one_b.pp = 4;
  one_f_one_b.micro_batches = 8;
  JobParallel interleaved = one_f_one_b;
  interleaved.vpp = 2;
  interleaved.schedule = PipelineSchedule::interleaved;
  JobParallel gpipe = one_f_one_b;
  gpipe.schedule = PipelineSchedule::gpipe;
  const Bytes base = stage_memories(job_workload(16, 4096, one_f_one_b), hw).front().bytes.activations_bytes;
  // Interleaving's first stage warms up with more chunks (Narayanan et al. Sec. 2.2.2), each half a stage.
  CHECK(stage_memories(job_workload(16, 4096, interleaved), hw).front().bytes.activations_bytes > base);
  // GPipe: all 8 micro-batches' forwards before any backward, twice 1F1B's 4 on stage 0.
  CHECK(stage_memories(job_workload(16, 4096, gpipe), hw).front().bytes.activations_bytes == 2 * base);
}

TEST_CASE("memory per stage: the embedding on the first stage, the output layer and logits on the last",
          "[pipeline][memory]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  JobParallel job;
  job.pp = 4;
  job.micro_batches = 4;
  const std::int64_t vocab = 128256;
  const std::vector<StepMemory> stages = stage_memories(job_workload(16, 4096, job, vocab), hw);
  // A vocabulary-parallel matrix over tp 8: vocab / 8 x d_model parameters; the last adds the final norm.
  const std::int64_t matrix = vocab / 8 * 4096;
  CHECK(stages[0].bytes.params_per_gpu - stages[1].bytes.params_per_gpu == matrix);
  CHECK(stages[3].bytes.params_per_gpu - stages[1].bytes.params_per_gpu == matrix + 4096);
  CHECK(stages[1].bytes.params_per_gpu == stages[2].bytes.params_per_gpu);
  // Only the last stage's peak has the fp32 logits of its micro-batch (4096 / 8 tokens x vocab / 8).
  CHECK(stages[3].bytes.transient_bytes >= Bytes{4096 / 8} * (vocab / 8) * 4);
  CHECK(stages[0].bytes.transient_bytes < Bytes{4096 / 8} * (vocab / 8) * 4);
}

TEST_CASE("memory per stage: context parallelism divides a rank's activations by cp", "[pipeline][memory][cp]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  JobParallel cp;
  cp.cp = 2;
  // Selective recomputation makes activations linear in the tokens (no s^2 term): exactly half.
  Workload w = job_workload(4, 8192, cp);
  w.training.recompute = Recompute::selective;
  Workload plain = w;
  plain.training.job = JobParallel{};
  CHECK(stage_memories(w, hw).front().bytes.activations_bytes * 2 == step_memory(plain, hw)->bytes.activations_bytes);
}

TEST_CASE("context parallelism in the step: the ring's per-step transfer and causal work per block", "[pipeline][cp]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  PipelineParallel pp;
  pp.cp = 4;
  const Workload w = job_workload(4, 16384, JobParallel{1, 1, 1, PipelineSchedule::one_f_one_b, 4, ContextParallel::ring});
  const ContextParallelLayer c = context_parallel_layer(w, hw, pp);
  // K and V of a rank's 16384 / 4 tokens, one kv head per TP rank (8 kv heads / tp 8), 128 wide, bf16.
  CHECK(c.kv_bytes == 2 * (16384 / 4) * 1 * 128 * 2);
  // TP 8 x CP 4 = 32 ranks span 4 nodes: the ring's neighbour is across the NIC.
  CHECK(c.kv_ps > 0);
  CHECK(c.block_forward_ps > 0);
  CHECK(c.block_backward_ps > c.block_forward_ps);
  // Load-balanced causal: each of the cp - 1 later steps computes 2 blocks; where a step's attention
  // is longer than its transfer, the transfer is hidden and the extra is exactly that work.
  const ContextShape shape{4, true, true};
  const std::vector<double> per_step = ring_blocks_per_step(shape);
  for (std::size_t i = 1; i < per_step.size(); ++i) CHECK(per_step[i] == 2.0);
  const Ps hidden_forward = 3 * 2 * c.block_forward_ps;
  if (2 * c.block_forward_ps >= c.kv_ps) {
    CHECK(c.forward_exposed_ps == 0);
    CHECK(c.forward_extra_ps == hidden_forward);
  } else {
    // Otherwise each of the cp - 1 sending steps waits for its transfer: (cp - 1) x (kv - 2 blocks).
    CHECK(c.forward_exposed_ps == 3 * (c.kv_ps - 2 * c.block_forward_ps));
    CHECK(c.forward_extra_ps == hidden_forward + c.forward_exposed_ps);
  }
  // The all-gather variant: the same attention, the whole gather exposed before it.
  PipelineParallel ag = pp;
  ag.cp_algorithm = ContextParallel::all_gather;
  const ContextParallelLayer g = context_parallel_layer(w, hw, ag);
  CHECK(g.forward_exposed_ps == 3 * g.kv_ps);
  CHECK(g.forward_extra_ps == 3 * 2 * g.block_forward_ps + g.forward_exposed_ps);
}

TEST_CASE("context parallelism in the step: the ring hides its transfers on a long sequence, shows them on a short one",
          "[pipeline][cp]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  PipelineParallel pp;
  pp.cp = 2;
  // Attention grows with S^2 per block pair, the transfer with S: a long sequence hides the transfer.
  const Workload long_seq = job_workload(4, 131072, JobParallel{1, 1, 1, PipelineSchedule::one_f_one_b, 2, ContextParallel::ring});
  CHECK(context_parallel_layer(long_seq, hw, pp).forward_exposed_ps == 0);
  const Workload short_seq = job_workload(4, 512, JobParallel{1, 1, 1, PipelineSchedule::one_f_one_b, 2, ContextParallel::ring});
  CHECK(context_parallel_layer(short_seq, hw, pp).forward_exposed_ps > 0);
}

TEST_CASE("a context-parallel job's step: the ring's other steps lengthen every chunk's passes", "[pipeline][cp]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  const std::vector<SchemeRequest> schemes{{"no_overlap", nlohmann::json::object()}};
  const Workload w = job_workload(2, 8192, JobParallel{});
  PipelineParallel cp;
  cp.cp = 2;
  const PipelineStepResult r = evaluate_pipeline(schemes, w, hw, Fidelity::curve, cp).front();
  // The chunk is the engine's run at seq / cp plus the ring's extra per layer.
  Workload half = w;
  std::get<Transformer>(half.shape).seq = 4096;
  const Ps f = evaluate_all(schemes, test::with_pass(half, Pass::forward), hw, Fidelity::curve).front().latency_ps;
  CHECK(r.chunk_forward_ps == f + 2 * r.cp.forward_extra_ps);
  CHECK(r.exposed_cp_ps == 2 * (r.cp.forward_exposed_ps + r.cp.backward_exposed_ps));
  CHECK(r.step_ps == r.chunk_forward_ps + r.chunk_backward_ps);  // one stage, one micro-batch
}

TEST_CASE("memory per stage: ZB-H1 holds a micro-batch's weight-gradient inputs until its W, within 1F1B's peak",
          "[pipeline][memory][zb]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  JobParallel one_f_one_b;
  one_f_one_b.pp = 4;
  one_f_one_b.micro_batches = 8;
  JobParallel zb = one_f_one_b;
  zb.schedule = PipelineSchedule::zero_bubble_h1;
  const Workload w1 = job_workload(16, 4096, one_f_one_b), wz = job_workload(16, 4096, zb);
  const std::vector<StepMemory> a = stage_memories(w1, hw), z = stage_memories(wz, hw);
  REQUIRE(z.size() == 4);
  // What W needs per layer and TP rank (d 4096, d_ffn 14336 gated, 32 heads of 128, 8 kv heads, tp 8,
  // 4096 tokens, bf16): the linears' inputs 512 + 512 + 512 + 1792 and their output gradients
  // 512 + 2 x 128 + 512 + 2 x 1792 + 512 values per token, 2 bytes each.
  memory::LayerShape l;
  l.seq = 4096;
  l.micro_batch = 1;
  l.d_model = 4096;
  l.heads = 32;
  l.kv_heads = 8;
  l.d_ffn = 14336;
  l.gated = true;
  CHECK(weight_gradient_bytes_per_layer(l, 8) == 4096 * (3328 + 5376) * 2);
  // The unit-time ZB-H1 timeline: at each stage's peak the chunks held whole and those waiting for W.
  PipelineCosts unit;
  unit.forward_ps = unit.backward_ps = unit.weight_ps = {1, 1, 1, 1};
  const PipelineTimeline tl = run_pipeline({4, 1, 8, PipelineSchedule::zero_bubble_h1}, unit);
  Workload one = w1;
  one.training.job = JobParallel{};
  std::get<Transformer>(one.shape).layers = 1;
  const Bytes full = step_memory(one, hw)->bytes.activations_bytes;  // one layer of one micro-batch
  const Bytes weight = weight_gradient_bytes_per_layer(l, 8);
  REQUIRE(weight < full);
  for (std::size_t s = 0; s < 4; ++s) {
    INFO("stage " << s);
    const StageActivationPeak peak =
        stage_activation_peak(tl.stages[s], true, static_cast<double>(full), static_cast<double>(weight));
    CHECK(z[s].bytes.activations_bytes == 4 * (peak.full_chunks * full + peak.weight_chunks * weight));
    // Qi et al. Sec. 2.1: no stage above 1F1B's fullest, the first, which ZB-H1 matches exactly (its pp
    // forwards before the first B, no W pending then).
    CHECK(z[s].bytes.activations_bytes <= a[0].bytes.activations_bytes);
    CHECK(z[s].bytes.peak_bytes - a[s].bytes.peak_bytes == z[s].bytes.activations_bytes - a[s].bytes.activations_bytes);
  }
  CHECK(z[0].bytes.activations_bytes == a[0].bytes.activations_bytes);
  // The later stages defer W into their bubbles: they hold more than 1F1B's stage of the same place.
  CHECK(z[3].bytes.activations_bytes > a[3].bytes.activations_bytes);
}

TEST_CASE("memory per stage: DualPipe holds two model stages' parameters and both ends' embedding and output layer",
          "[pipeline][memory][dualpipe]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kJobProfiles);
  JobParallel one_f_one_b;
  one_f_one_b.pp = 4;
  one_f_one_b.micro_batches = 8;
  JobParallel dual = one_f_one_b;
  dual.schedule = PipelineSchedule::dualpipe;
  const std::vector<StepMemory> a = stage_memories(job_workload(16, 4096, one_f_one_b), hw);
  const std::vector<StepMemory> d = stage_memories(job_workload(16, 4096, dual), hw);
  REQUIRE(d.size() == 4);
  // No vocabulary: a middle stage's parameters are exactly twice 1F1B's (DeepSeek-V3 Table 2: 2x).
  CHECK(d[1].bytes.params_bytes == 2 * a[1].bytes.params_bytes);
  CHECK(d[1].bytes.optimizer_bytes == 2 * a[1].bytes.optimizer_bytes);
  // Both outer stages hold model stages 0 and pp - 1: the embedding and the output layer.
  const std::vector<StepMemory> dv = stage_memories(job_workload(16, 4096, dual, 128256), hw);
  CHECK(dv[0].bytes.params_bytes == dv[3].bytes.params_bytes);
  CHECK(dv[0].bytes.params_bytes > dv[1].bytes.params_bytes);
}
