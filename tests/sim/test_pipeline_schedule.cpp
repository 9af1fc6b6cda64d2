// Pipeline schedules (sim/pipeline_schedule.hpp) against their closed forms: with every pass on every
// stage taking the same time and free transfers, a step is exactly (m + pp - 1)(F + B) under GPipe and
// 1F1B (Narayanan et al. SC'21 Sec. 2.2.1: bubble fraction (pp - 1) / (m + pp - 1)), the interleaved
// schedule divides the bubble by vpp (Sec. 2.2.2), and ZB-H1 leaves (pp - 1)(F + B - W)
// (Qi et al. ICLR'24 Sec. 2.1). Integer picoseconds, so every comparison is exact.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "sim/pipeline_schedule.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

PipelineCosts uniform_costs(const PipelineShape& sh, Ps forward_ps, Ps backward_ps, Ps weight_ps = -1, Ps p2p_ps = 0) {
  const std::size_t n = static_cast<std::size_t>(sh.stages * sh.chunks);
  PipelineCosts c;
  c.forward_ps.assign(n, forward_ps);
  c.backward_ps.assign(n, backward_ps);
  if (weight_ps >= 0) c.weight_ps.assign(n, weight_ps);
  c.p2p_ps = p2p_ps;
  return c;
}

// Each stage runs every pass of its chunks once: nothing lost, nothing run twice.
void check_every_pass_once(const PipelineShape& sh, const PipelineTimeline& tl, bool split) {
  for (int s = 0; s < sh.stages; ++s) {
    const auto& slots = tl.stages[static_cast<std::size_t>(s)];
    CHECK(slots.size() == static_cast<std::size_t>((split ? 3 : 2) * sh.micro_batches * sh.chunks));
    for (std::size_t i = 1; i < slots.size(); ++i) CHECK(slots[i].start_ps >= slots[i - 1].end_ps);
    for (int chunk = 0; chunk < sh.chunks; ++chunk)
      for (int mb = 0; mb < sh.micro_batches; ++mb)
        for (PipelinePass pass : {PipelinePass::forward, PipelinePass::backward, PipelinePass::weight}) {
          if (pass == PipelinePass::weight && !split) continue;
          const auto n = std::count_if(slots.begin(), slots.end(), [&](const PipelineSlot& x) {
            return x.work == PipelineWork{pass, mb, chunk};
          });
          CHECK(n == 1);
        }
  }
}

// Per stage: the most micro-batches whose forward ran and whose weight gradient (W) did not, walking
// its passes in order (what a split schedule's stage keeps some activations of).
std::vector<int> peak_awaiting_weight(const PipelineTimeline& tl) {
  std::vector<int> out;
  for (const auto& slots : tl.stages) {
    int held = 0, peak = 0;
    for (const PipelineSlot& slot : slots) {
      if (slot.work.pass == PipelinePass::forward) peak = std::max(peak, ++held);
      if (slot.work.pass == PipelinePass::weight) --held;
    }
    out.push_back(peak);
  }
  return out;
}

}  // namespace

TEST_CASE("1F1B and GPipe: a step is (m + pp - 1)(F + B) and every stage idles (pp - 1)(F + B)", "[pipeline]") {
  const Ps f = 3'000'000, b = 5'000'000;
  for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    for (int pp : {1, 2, 4, 8})
      for (int m : {1, 3, 8, 16}) {
        const PipelineShape sh{pp, 1, m, schedule};
        const PipelineTimeline tl = run_pipeline(sh, uniform_costs(sh, f, b));
        INFO(pipeline_schedule_name(schedule) << " pp " << pp << " m " << m);
        CHECK(tl.step_ps == (m + pp - 1) * (f + b));
        for (int s = 0; s < pp; ++s) {
          CHECK(tl.busy_ps[static_cast<std::size_t>(s)] == m * (f + b));
          // The bubble fraction SC'21 Sec. 2.2.1 states: (pp - 1) / (m + pp - 1).
          CHECK((tl.step_ps - tl.busy_ps[static_cast<std::size_t>(s)]) * (m + pp - 1) == (pp - 1) * tl.step_ps);
        }
        check_every_pass_once(sh, tl, false);
      }
}

TEST_CASE("1F1B holds at most pp - s micro-batches' activations on stage s, GPipe all m", "[pipeline]") {
  for (int pp : {2, 4, 8})
    for (int m : {2, 8, 32}) {
      const PipelineShape one{pp, 1, m, PipelineSchedule::one_f_one_b};
      const PipelineShape all{pp, 1, m, PipelineSchedule::gpipe};
      const PipelineTimeline a = run_pipeline(one, uniform_costs(one, 1'000'000, 2'000'000));
      const PipelineTimeline g = run_pipeline(all, uniform_costs(all, 1'000'000, 2'000'000));
      for (int s = 0; s < pp; ++s) {
        CHECK(a.peak_in_flight[static_cast<std::size_t>(s)] == std::min(pp - s, m));
        CHECK(g.peak_in_flight[static_cast<std::size_t>(s)] == m);
      }
    }
}

TEST_CASE("interleaved 1F1B divides the bubble by vpp", "[pipeline]") {
  // The stage's layers split into vpp chunks: a chunk's pass takes 1/vpp of the stage's. SC'21 Sec.
  // 2.2.2: the bubble becomes (pp - 1)(F + B) / vpp with free transfers.
  const Ps f = 12'000'000, b = 24'000'000;  // divisible by every vpp below
  for (int pp : {2, 4, 8})
    for (int vpp : {2, 3, 4})
      for (int groups : {2, 4}) {
        const int m = groups * pp;
        const PipelineShape sh{pp, vpp, m, PipelineSchedule::interleaved};
        const PipelineTimeline tl = run_pipeline(sh, uniform_costs(sh, f / vpp, b / vpp));
        INFO("pp " << pp << " vpp " << vpp << " m " << m);
        CHECK(tl.step_ps == m * (f + b) + (pp - 1) * (f + b) / vpp);
        check_every_pass_once(sh, tl, false);
        // Megatron-LM's warm-up: 2 (pp - s - 1) + (vpp - 1) pp chunk forwards before the first
        // backward, so stage s holds one more than that at its peak.
        for (int s = 0; s < pp; ++s)
          CHECK(tl.peak_in_flight[static_cast<std::size_t>(s)] == 2 * (pp - s - 1) + (vpp - 1) * pp + 1);
      }
}

TEST_CASE("ZB-H1 leaves (pp - 1)(F + B - W) of bubble where 1F1B leaves (pp - 1)(F + B + W)", "[pipeline]") {
  const Ps f = 2'000'000, b = 2'000'000, w = 2'000'000;
  for (int pp : {2, 4, 8})
    for (int m : {pp, 2 * pp, 4 * pp}) {
      const PipelineShape zb{pp, 1, m, PipelineSchedule::zero_bubble_h1};
      const PipelineShape one{pp, 1, m, PipelineSchedule::one_f_one_b};
      const PipelineTimeline z = run_pipeline(zb, uniform_costs(zb, f, b, w));
      const PipelineTimeline o = run_pipeline(one, uniform_costs(one, f, b + w));
      INFO("pp " << pp << " m " << m);
      CHECK(o.step_ps == m * (f + b + w) + (pp - 1) * (f + b + w));
      CHECK(z.step_ps == m * (f + b + w) + (pp - 1) * (f + b - w));
      check_every_pass_once(zb, z, true);
      // The same activation memory as 1F1B.
      for (int s = 0; s < pp; ++s)
        CHECK(z.peak_in_flight[static_cast<std::size_t>(s)] == o.peak_in_flight[static_cast<std::size_t>(s)]);
    }
}

TEST_CASE("ZB-H1 holds no more micro-batches than 1F1B's first stage: a W runs before a forward beyond pp",
          "[pipeline][zb]") {
  // Qi et al. Sec. 2.1: ZB-H1 keeps 1F1B's peak activation memory. A stage holds a micro-batch's
  // activations whole until its input gradient (B) and the weight gradient's inputs until its W; 1F1B's
  // first stage holds pp whole micro-batches, its most. So stage s keeps 1F1B's pp - s ahead of B, and
  // at most pp ahead of W, on every stage: the bubble stays (pp - 1)(F + B - W) (the test above).
  for (int pp : {2, 4, 8})
    for (int m : {pp, 2 * pp, 4 * pp, 4 * pp + 3})
      for (const Ps w : {Ps{1'000'000}, Ps{2'000'000}, Ps{3'000'000}}) {
        const PipelineShape zb{pp, 1, m, PipelineSchedule::zero_bubble_h1};
        const PipelineShape one{pp, 1, m, PipelineSchedule::one_f_one_b};
        const PipelineTimeline z = run_pipeline(zb, uniform_costs(zb, 2'000'000, 2'000'000, w, 100'000));
        const PipelineTimeline o = run_pipeline(one, uniform_costs(one, 2'000'000, 2'000'000 + w, -1, 100'000));
        INFO("pp " << pp << " m " << m << " w " << w);
        check_every_pass_once(zb, z, true);
        const std::vector<int> awaiting = peak_awaiting_weight(z);
        for (int s = 0; s < pp; ++s) {
          CHECK(z.peak_in_flight[static_cast<std::size_t>(s)] == o.peak_in_flight[static_cast<std::size_t>(s)]);
          CHECK(awaiting[static_cast<std::size_t>(s)] <= std::min(m, pp));
        }
        // The first stage: exactly 1F1B's pp (or all m) micro-batches, never more.
        CHECK(awaiting.front() == std::min(m, pp));
      }
}

TEST_CASE("ZB-H1: transfers shorter than a pass cost it no more than they cost 1F1B", "[pipeline]") {
  // ZB-H1's input gradients reach the stage above after B alone, 1F1B's after B + W; each W sits at a
  // fixed place in the order, never in a gap a transfer leaves, where it would hold the next forward or
  // input gradient back by the rest of itself.
  const Ps f = 2'000'000, b = 2'000'000, w = 2'000'000;
  for (int pp : {2, 4, 8})
    for (int m : {pp, 2 * pp, 4 * pp})
      for (const Ps p2p : {Ps{1}, Ps{10'000}, Ps{300'000}, Ps{1'000'000}, Ps{1'900'000}}) {
        const PipelineShape zb{pp, 1, m, PipelineSchedule::zero_bubble_h1};
        const PipelineShape one{pp, 1, m, PipelineSchedule::one_f_one_b};
        const Ps z = run_pipeline(zb, uniform_costs(zb, f, b, w, p2p)).step_ps -
                     run_pipeline(zb, uniform_costs(zb, f, b, w)).step_ps;
        const Ps o = run_pipeline(one, uniform_costs(one, f, b + w, -1, p2p)).step_ps -
                     run_pipeline(one, uniform_costs(one, f, b + w)).step_ps;
        INFO("pp " << pp << " m " << m << " p2p " << p2p);
        CHECK(z >= 2 * (pp - 1) * p2p);  // one micro-batch's round trip at least
        CHECK(z <= o);
      }
}

TEST_CASE("stage-to-stage transfers: one micro-batch pays 2 (pp - 1) of them, a full step at least that",
          "[pipeline]") {
  // One micro-batch crosses the pipeline down and back: pp forwards, pp backwards and 2 (pp - 1)
  // transfers in a row, exactly. With more, the fill and drain pay the same, and 1F1B's fixed order
  // (each stage waits for the gradient of the micro-batch it sent, as Megatron-LM's paired
  // send-forward / receive-backward does) exposes transfers in the steady state too: at most one a
  // pass beyond the fill and drain.
  const Ps f = 4'000'000, b = 8'000'000;
  for (int pp : {2, 4, 8})
    for (Ps d : {Ps{0}, Ps{500'000}, Ps{4'000'000}, Ps{12'000'000}}) {
      Ps previous = 0;
      for (int m : {1, 2, 4, 16, 33}) {
        const PipelineShape sh{pp, 1, m, PipelineSchedule::one_f_one_b};
        const PipelineTimeline tl = run_pipeline(sh, uniform_costs(sh, f, b, -1, d));
        INFO("pp " << pp << " m " << m << " d " << d);
        if (m == 1) CHECK(tl.step_ps == pp * (f + b) + 2 * (pp - 1) * d);
        CHECK(tl.step_ps >= (m + pp - 1) * (f + b) + 2 * (pp - 1) * d);
        CHECK(tl.step_ps <= (m + pp - 1) * (f + b) + 2 * (m + pp - 2) * d);
        CHECK(tl.step_ps > previous);
        previous = tl.step_ps;
        // A slower transfer never shortens the step.
        const PipelineTimeline slower = run_pipeline(sh, uniform_costs(sh, f, b, -1, d + 1'000'000));
        CHECK(slower.step_ps > tl.step_ps);
      }
    }
}

TEST_CASE("uneven stages: the slowest stage sets the steady state, a heavy last stage lengthens the step",
          "[pipeline]") {
  // pp 2, one micro-batch: F0, F1, B1, B0 in a row, exactly.
  PipelineShape sh{2, 1, 1, PipelineSchedule::one_f_one_b};
  PipelineCosts c;
  c.forward_ps = {3, 7};   // the last stage runs the output layer and loss
  c.backward_ps = {5, 11};
  c.p2p_ps = 2;
  CHECK(run_pipeline(sh, c).step_ps == 3 + 2 + 7 + 11 + 2 + 5);
  // Many micro-batches: the step tends to m times the slowest stage's F + B.
  sh.micro_batches = 64;
  const PipelineTimeline tl = run_pipeline(sh, c);
  CHECK(tl.step_ps >= 64 * (7 + 11));
  CHECK(tl.step_ps <= 64 * (7 + 11) + 3 + 5 + 2 * 2);
}

TEST_CASE("pipeline shapes a schedule cannot run are refused, naming the rule", "[pipeline]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(check_pipeline_shape({0, 1, 4, PipelineSchedule::one_f_one_b}), Contains("pp"));
  CHECK_THROWS_WITH(check_pipeline_shape({4, 2, 8, PipelineSchedule::one_f_one_b}), Contains("interleaved"));
  CHECK_THROWS_WITH(check_pipeline_shape({4, 2, 6, PipelineSchedule::interleaved}), Contains("multiple of pp"));
  CHECK_THROWS_WITH(check_pipeline_shape({4, 1, 0, PipelineSchedule::gpipe}), Contains("micro_batches"));
  CHECK_THROWS_WITH(pipeline_schedule_from_name("1f2b"), Contains("gpipe, 1f1b, interleaved, zb_h1"));
  const PipelineShape sh{2, 1, 2, PipelineSchedule::one_f_one_b};
  PipelineCosts c = uniform_costs(sh, 1, 1);
  c.forward_ps.pop_back();
  CHECK_THROWS_WITH(run_pipeline(sh, c), Contains("forward_ps has 1 entries"));
  // Weight-gradient times are for the schedules that split the backward (zb_h1, dualpipe) only.
  CHECK_THROWS_WITH(run_pipeline(sh, uniform_costs(sh, 1, 1, 1)), Contains("weight_ps is not used by the 1f1b schedule"));
  // F&B communication is DualPipe's only.
  PipelineCosts comm = uniform_costs(sh, 1, 1);
  comm.forward_comm_ps.assign(2, 0);
  CHECK_THROWS_WITH(run_pipeline(sh, comm), Contains("forward_comm_ps is not used by the 1f1b schedule"));
}

TEST_CASE("pipeline timelines are deterministic", "[pipeline]") {
  const PipelineShape sh{4, 2, 8, PipelineSchedule::interleaved};
  const PipelineCosts c = uniform_costs(sh, 3, 7, -1, 1);
  const PipelineTimeline a = run_pipeline(sh, c), b = run_pipeline(sh, c);
  CHECK(a.step_ps == b.step_ps);
  for (std::size_t s = 0; s < a.stages.size(); ++s)
    for (std::size_t i = 0; i < a.stages[s].size(); ++i) {
      CHECK(a.stages[s][i].work == b.stages[s][i].work);
      CHECK(a.stages[s][i].start_ps == b.stages[s][i].start_ps);
    }
}
