// DualPipe (DeepSeek-V3 technical report Sec. 3.2.1; sim/pipeline_schedule.hpp): the schedule against the
// report's Table 2 (bubble (pp / 2 - 1)(F&B + B - 3W), B the whole backward; 2x parameters; PP + 1
// micro-batches' activations) and against 1F1B and ZB-H1 on the same passes. Integer picoseconds with
// free transfers, so the closed forms are exact.
#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>

#include "cost_model/profile_loader.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/pipeline_step.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

PipelineCosts costs_of(const PipelineShape& sh, Ps f, Ps b, Ps w, bool split) {
  const auto n = static_cast<std::size_t>(sh.stages);
  PipelineCosts c;
  c.forward_ps.assign(n, f);
  c.backward_ps.assign(n, split ? b : b + w);
  if (split) c.weight_ps.assign(n, w);
  return c;
}

Ps idlest_bubble(const PipelineTimeline& tl) {
  return tl.step_ps - *std::max_element(tl.busy_ps.begin(), tl.busy_ps.end());
}

}  // namespace

TEST_CASE("dualpipe: every stage runs each micro-batch's F, B and W of both directions once, in dependency order",
          "[pipeline][dualpipe]") {
  for (int pp : {2, 4, 8})
    for (int m : {2 * pp, 2 * pp + 2, 4 * pp}) {
      const PipelineShape sh{pp, 1, m, PipelineSchedule::dualpipe};
      const auto order = pipeline_order(sh);
      const PipelineTimeline tl = run_pipeline(sh, costs_of(sh, 3'000'000, 3'000'000, 2'000'000, true));
      INFO("pp " << pp << " m " << m);
      for (int s = 0; s < pp; ++s) {
        const auto& slots = tl.stages[static_cast<std::size_t>(s)];
        REQUIRE(slots.size() == static_cast<std::size_t>(3 * m));
        for (int dir = 0; dir < 2; ++dir)
          for (int mb = 0; mb < m / 2; ++mb)
            for (PipelinePass pass : {PipelinePass::forward, PipelinePass::backward, PipelinePass::weight}) {
              const auto n = std::count_if(slots.begin(), slots.end(), [&](const PipelineSlot& x) {
                return x.work.pass == pass && x.work.micro_batch == mb && x.work.chunk == dir;
              });
              CHECK(n == 1);
            }
        // Passes run one at a time, an F&B chunk's three sharing one span.
        for (std::size_t i = 1; i < slots.size(); ++i)
          CHECK((slots[i].start_ps >= slots[i - 1].end_ps ||
                 (slots[i].start_ps == slots[i - 1].start_ps && slots[i].end_ps == slots[i - 1].end_ps)));
      }
      CHECK(order.size() == static_cast<std::size_t>(pp));
    }
}

TEST_CASE("dualpipe: with free communication the bubble is the report's (pp / 2 - 1)(F&B + B - 3W)",
          "[pipeline][dualpipe]") {
  // DeepSeek-V3 Table 2 states the bubble with F, B (the whole backward), W (its weight-gradient part)
  // and F&B (a forward and a backward overlapped; with no communication to hide, F + B), for the
  // schedule its Fig. 5 draws: forward, input gradient and weight gradient of one length each (the
  // equal-pass case in which Qi et al. state ZB-H1's bubble too). There it is exact.
  for (const Ps unit : {Ps{1'000'000}, Ps{2'000'000}, Ps{7'000'000}})
    for (int pp : {2, 4, 6, 8})
      for (int m : {2 * pp, 2 * pp + 2, 3 * pp + (pp % 2), 6 * pp}) {
        const PipelineShape sh{pp, 1, m, PipelineSchedule::dualpipe};
        const Ps f = unit, b_input = unit, w = unit;
        const PipelineTimeline tl = run_pipeline(sh, costs_of(sh, f, b_input, w, true));
        const Ps whole_b = b_input + w, fb = f + whole_b;
        INFO("pp " << pp << " m " << m << " unit " << unit);
        for (int s = 0; s < pp; ++s) CHECK(tl.busy_ps[static_cast<std::size_t>(s)] == m * (f + whole_b));
        CHECK(idlest_bubble(tl) == (pp / 2 - 1) * (fb + whole_b - 3 * w));
      }
  // Passes of other lengths shift the order's waits by parts of a pass; the bubble stays below 1F1B's
  // (pp - 1)(F + B) on the same passes.
  for (const auto& [f, b_input, w] : {std::tuple<Ps, Ps, Ps>{3'000'000, 2'000'000, 1'000'000},
                                      {1'000'000, 1'500'000, 1'500'000}, {2'000'000, 1'000'000, 3'000'000}})
    for (int pp : {4, 8}) {
      const PipelineShape sh{pp, 1, 4 * pp, PipelineSchedule::dualpipe};
      INFO("pp " << pp << " F " << f << " B " << b_input << " W " << w);
      CHECK(idlest_bubble(run_pipeline(sh, costs_of(sh, f, b_input, w, true))) < (pp - 1) * (f + b_input + w));
    }
}

TEST_CASE("dualpipe: a smaller bubble than 1F1B's and ZB-H1's on the same passes; PP + 1 micro-batches' activations",
          "[pipeline][dualpipe]") {
  const Ps f = 2'000'000, b = 2'000'000, w = 2'000'000;
  for (int pp : {4, 8})
    for (int m : {2 * pp, 4 * pp}) {
      const PipelineShape dual{pp, 1, m, PipelineSchedule::dualpipe};
      const PipelineShape one{pp, 1, m, PipelineSchedule::one_f_one_b};
      const PipelineShape zb{pp, 1, m, PipelineSchedule::zero_bubble_h1};
      const PipelineTimeline d = run_pipeline(dual, costs_of(dual, f, b, w, true));
      const PipelineTimeline o = run_pipeline(one, costs_of(one, f, b, w, false));
      const PipelineTimeline z = run_pipeline(zb, costs_of(zb, f, b, w, true));
      INFO("pp " << pp << " m " << m);
      // The report's Table 2: 1F1B (pp - 1)(F + B), ZB1P (pp - 1)(F + B - 2W), B the whole backward.
      CHECK(idlest_bubble(o) == (pp - 1) * (f + b + w));
      CHECK(idlest_bubble(z) == (pp - 1) * (f + b + w - 2 * w));
      CHECK(idlest_bubble(d) < idlest_bubble(o));
      CHECK(idlest_bubble(d) < idlest_bubble(z));
      CHECK(d.step_ps < z.step_ps);
      // Activations: PP + 1 chunks of one model stage at the fullest stage (Table 2), counted until B.
      CHECK(*std::max_element(d.peak_in_flight.begin(), d.peak_in_flight.end()) <= pp + 1);
    }
}

TEST_CASE("dualpipe: an F&B chunk hides each pass's communication behind the other's compute", "[pipeline][dualpipe]") {
  // Forward 10 with 4 of it exposed communication, backward 20 with 6: each hides behind the other's
  // compute (16 and 6 ps), F&B = 30 - 4 - 6 = 20.
  CHECK(paired_pass_ps(10, 20, 4, 6) == 20);
  // Communication longer than the other pass's compute stays partly exposed: 8 of F's behind B's 4 of
  // compute, B's 16 behind F's 2: F&B = 30 - 4 - 2 = 24.
  CHECK(paired_pass_ps(10, 20, 8, 16) == 24);
  CHECK(paired_pass_ps(10, 20, 0, 0) == 30);
  // In the schedule: hidden communication shortens every F&B chunk and so the step.
  const PipelineShape sh{4, 1, 16, PipelineSchedule::dualpipe};
  PipelineCosts plain = costs_of(sh, 3'000'000, 2'000'000, 2'000'000, true);
  PipelineCosts hidden = plain;
  hidden.forward_comm_ps.assign(4, 1'000'000);
  hidden.backward_comm_ps.assign(4, 1'000'000);
  CHECK(run_pipeline(sh, hidden).step_ps < run_pipeline(sh, plain).step_ps);
}

TEST_CASE("dualpipe: the compute a transfer hides behind runs on the SMs the transfer leaves, so it saves less",
          "[pipeline][dualpipe]") {
  // Forward 100 with 40 exposed, backward 200 with 50: 40 + 50 = 90 hidden. At full speed the chunk is
  // 300 - 90; with the compute at 3/4 speed beside the transfers, 300 - 67 (67.5 rounded down).
  CHECK(paired_pass_ps(100, 200, 40, 50) == 210);
  CHECK(paired_pass_ps(100, 200, 40, 50, 0.75) == 233);
  CHECK(paired_pass_ps(100, 200, 0, 0, 0.75) == 300);  // nothing to hide: nothing shared
  // The rate from the profile: k = comm.channels SMs of S taken, the rest slowed by the interference.
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  const double sms = hw.gpu.sm_count, k = hw.comm.channels;
  REQUIRE(k > 0);
  CHECK(paired_compute_rate(hw) == Approx((sms - k) / sms / (1 + hw.gpu.gemm_comm_interference * k / sms)));
  CHECK(paired_compute_rate(hw) < 1);
  // In the schedule: sharing lengthens every F&B chunk and so the step, but never past no hiding at all.
  const PipelineShape sh{4, 1, 16, PipelineSchedule::dualpipe};
  PipelineCosts plain = costs_of(sh, 3'000'000, 2'000'000, 2'000'000, true);
  PipelineCosts full = plain;
  full.forward_comm_ps.assign(4, 1'000'000);
  full.backward_comm_ps.assign(4, 1'000'000);
  PipelineCosts shared = full;
  shared.paired_compute_rate = paired_compute_rate(hw);
  const Ps with_full = run_pipeline(sh, full).step_ps, with_shared = run_pipeline(sh, shared).step_ps;
  CHECK(with_full < with_shared);
  CHECK(with_shared < run_pipeline(sh, plain).step_ps);
  shared.paired_compute_rate = 0;
  CHECK_THROWS_WITH(run_pipeline(sh, shared), Catch::Contains("paired_compute_rate"));
}

TEST_CASE("dualpipe: the two copies of a stage's parameters all-reduce their gradients once a step",
          "[pipeline][dualpipe]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  // 16 layers, no vocabulary, TP 8 over 8-GPU nodes: stage s and stage 3 - s both hold 4 + 4 layers.
  Workload w = test::with_pass(test::transformer_on(test::custom_transformer(16, 1, 4096, 4096, 14336, 32, 8), 8), Pass::step);
  PipelineParallel pp;
  pp.pp = 4;
  pp.micro_batches = 8;
  CHECK(pipeline_mirror_grad_ps(hw, w, pp) == 0);  // 1F1B: one copy
  pp.schedule = PipelineSchedule::dualpipe;
  // A ring of two ranks: half the gradients each way, twice (reduce-scatter, all-gather), each step one
  // stage-to-stage transfer (the same link and senders as the activations': pipeline_p2p_ps).
  const std::int64_t layer_params = block_parameters(w, Block::attention) + block_parameters(w, Block::mlp) + 2 * 4096;
  // The outer pair also holds the final norm (no vocabulary: no embedding or output layer).
  const Bytes grads = (8 * layer_params + 4096) * dtype_bytes(w.training.parallel.grad_dtype);
  CHECK(pipeline_mirror_grad_ps(hw, w, pp) == 2 * pipeline_p2p_ps(hw, w, grads / 2));
  // The step waits for it after the last backward, beside the DP reduction and before the optimizer.
  const std::vector<PipelineStepResult> r =
      evaluate_pipeline({SchemeRequest{"no_overlap", nlohmann::json::object()}}, w, hw, Fidelity::curve, pp);
  REQUIRE(r.size() == 1);
  CHECK(r[0].mirror_grad_ps == pipeline_mirror_grad_ps(hw, w, pp));
  CHECK(r[0].step_ps == r[0].pipeline_ps + r[0].exposed_dp_ps + r[0].mirror_grad_ps + r[0].optimizer_ps);
}

TEST_CASE("dualpipe: pp odd, micro-batches odd or fewer than 2 pp, and vpp are refused", "[pipeline][dualpipe]") {
  CHECK_THROWS_WITH(check_pipeline_shape({3, 1, 12, PipelineSchedule::dualpipe}), Catch::Contains("pp even"));
  CHECK_THROWS_WITH(check_pipeline_shape({4, 1, 9, PipelineSchedule::dualpipe}), Catch::Contains("at least 2 pp = 8"));
  CHECK_THROWS_WITH(check_pipeline_shape({4, 1, 6, PipelineSchedule::dualpipe}), Catch::Contains("at least 2 pp = 8"));
  CHECK_THROWS(check_pipeline_shape({4, 2, 8, PipelineSchedule::dualpipe}));
  CHECK_NOTHROW(check_pipeline_shape({4, 1, 8, PipelineSchedule::dualpipe}));
  CHECK(pipeline_schedule_from_name("dualpipe") == PipelineSchedule::dualpipe);
}
