// Pipeline-parallel schedules (pipeline_schedule.hpp): each stage's order of passes, and the timeline
// that order gives with fixed pass times and stage-to-stage delays.
#include "sim/pipeline_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace overlap::sim {

std::string_view pipeline_schedule_name(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::gpipe: return "gpipe";
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::interleaved: return "interleaved";
    case PipelineSchedule::zero_bubble_h1: return "zb_h1";
  }
  return "?";
}

PipelineSchedule pipeline_schedule_from_name(std::string_view name) {
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
                             PipelineSchedule::zero_bubble_h1})
    if (pipeline_schedule_name(s) == name) return s;
  throw std::invalid_argument(
      fmt::format("unknown pipeline schedule '{}' (gpipe, 1f1b, interleaved, zb_h1)", name.substr(0, 64)));
}

void check_pipeline_shape(const PipelineShape& shape) {
  if (shape.stages < 1) throw std::invalid_argument(fmt::format("pp must be at least 1 (got {})", shape.stages));
  if (shape.chunks < 1) throw std::invalid_argument(fmt::format("vpp must be at least 1 (got {})", shape.chunks));
  if (shape.micro_batches < 1)
    throw std::invalid_argument(fmt::format("micro_batches must be at least 1 (got {})", shape.micro_batches));
  if (shape.chunks > 1 && shape.schedule != PipelineSchedule::interleaved)
    throw std::invalid_argument(fmt::format("vpp {} needs the interleaved schedule (the schedule is {})", shape.chunks,
                                            pipeline_schedule_name(shape.schedule)));
  // Megatron-LM's interleaved schedule walks micro-batches in groups of pp per model chunk (SC'21
  // Sec. 2.2.2), so it needs whole groups.
  if (shape.schedule == PipelineSchedule::interleaved && shape.micro_batches % shape.stages != 0)
    throw std::invalid_argument(fmt::format("the interleaved schedule needs micro_batches ({}) a multiple of pp ({})",
                                            shape.micro_batches, shape.stages));
  const long long work = 3LL * shape.stages * shape.chunks * shape.micro_batches;
  if (work > 50'000'000)
    throw std::invalid_argument(fmt::format(
        "pp {} x vpp {} x micro_batches {} is more passes than the schedule walks (50,000,000)", shape.stages,
        shape.chunks, shape.micro_batches));
}

namespace {

std::vector<PipelineWork> gpipe_order(const PipelineShape& sh) {
  std::vector<PipelineWork> order;
  for (int mb = 0; mb < sh.micro_batches; ++mb) order.push_back({PipelinePass::forward, mb, 0});
  for (int mb = 0; mb < sh.micro_batches; ++mb) order.push_back({PipelinePass::backward, mb, 0});
  return order;
}

// SC'21 Sec. 2.2.1: pp - s - 1 forwards to fill the pipeline below stage s, then one forward and one
// backward in turn, then the backwards left.
std::vector<PipelineWork> one_f_one_b_order(const PipelineShape& sh, int stage) {
  const int m = sh.micro_batches;
  const int warmup = std::min(sh.stages - stage - 1, m);
  std::vector<PipelineWork> order;
  for (int mb = 0; mb < warmup; ++mb) order.push_back({PipelinePass::forward, mb, 0});
  for (int i = 0; i < m - warmup; ++i) {
    order.push_back({PipelinePass::forward, warmup + i, 0});
    order.push_back({PipelinePass::backward, i, 0});
  }
  for (int mb = m - warmup; mb < m; ++mb) order.push_back({PipelinePass::backward, mb, 0});
  return order;
}

// SC'21 Sec. 2.2.2, as Megatron-LM runs it: the k-th forward of a stage is micro-batch
// (k / (pp vpp)) pp + k % pp on chunk (k / pp) % vpp; backwards walk the chunks the other way. The
// warm-up is 2 (pp - s - 1) + (vpp - 1) pp forwards (all of them when m = pp).
std::vector<PipelineWork> interleaved_order(const PipelineShape& sh, int stage) {
  const int p = sh.stages, v = sh.chunks, m = sh.micro_batches;
  const int total = m * v;
  auto nth = [&](int k, bool forward) {
    const int group = k / p;
    const int chunk = forward ? group % v : v - 1 - group % v;
    const int mb = (k / (p * v)) * p + k % p;
    return PipelineWork{forward ? PipelinePass::forward : PipelinePass::backward, mb, chunk};
  };
  const int warmup = m == p ? total : std::min(2 * (p - stage - 1) + (v - 1) * p, total);
  std::vector<PipelineWork> order;
  for (int k = 0; k < warmup; ++k) order.push_back(nth(k, true));
  for (int i = 0; i < total - warmup; ++i) {
    order.push_back(nth(warmup + i, true));
    order.push_back(nth(i, false));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(nth(k, false));
  return order;
}

constexpr Ps kUnknown = -1;

class PipelineRun {
 public:
  PipelineRun(const PipelineShape& sh, const PipelineCosts& c) : sh_(sh), c_(c) {
    const int vs = sh.stages * sh.chunks;
    const std::size_t n = static_cast<std::size_t>(vs) * static_cast<std::size_t>(sh.micro_batches);
    for (auto& e : end_) e.assign(n, kUnknown);
    greedy_ = sh.schedule == PipelineSchedule::zero_bubble_h1;
    if (!greedy_) order_ = pipeline_order(sh);
    st_.resize(static_cast<std::size_t>(sh.stages));
    for (int s = 0; s < sh.stages; ++s) {
      Stage& st = st_[static_cast<std::size_t>(s)];
      st.total = greedy_ ? 3 * sh.micro_batches : static_cast<int>(order_[static_cast<std::size_t>(s)].size());
    }
    tl_.stages.resize(st_.size());
    tl_.busy_ps.assign(st_.size(), 0);
    tl_.peak_in_flight.assign(st_.size(), 0);
  }

  PipelineTimeline run() {
    for (;;) {
      int s = -1;
      bool unfinished = false;
      for (int i = 0; i < sh_.stages; ++i) {
        const Stage& st = st_[static_cast<std::size_t>(i)];
        if (st.done == st.total) continue;
        unfinished = true;
        if (st.blocked) continue;
        if (s < 0 || st.free_ps < st_[static_cast<std::size_t>(s)].free_ps) s = i;
      }
      if (!unfinished) break;
      if (s < 0) throw std::logic_error("pipeline schedule: every stage waits for another (the order deadlocks)");
      step(s);
    }
    for (const auto& slots : tl_.stages)
      for (const PipelineSlot& slot : slots) tl_.step_ps = std::max(tl_.step_ps, slot.end_ps);
    return std::move(tl_);
  }

 private:
  struct Stage {
    Ps free_ps = 0;
    int done = 0, total = 0;
    std::size_t next = 0;      // fixed order: the next entry
    bool waiting = false;      // free_ps is a wait, not the end of a pass
    bool blocked = false;      // waiting on passes not yet placed
    Ps wait_since = 0;         // when it last found nothing to start
    int in_flight = 0;         // forwards whose backward has not run
    int next_forward = 0;      // zero_bubble_h1
    std::vector<int> pending_weight;  // zero_bubble_h1: micro-batches whose W has not run
  };

  int virtual_stage(int stage, const PipelineWork& w) const { return w.chunk * sh_.stages + stage; }
  std::size_t index(int vs, int mb) const {
    return static_cast<std::size_t>(vs) * static_cast<std::size_t>(sh_.micro_batches) + static_cast<std::size_t>(mb);
  }
  Ps duration(int vs, PipelinePass pass) const {
    const auto& v = pass == PipelinePass::forward ? c_.forward_ps : pass == PipelinePass::backward ? c_.backward_ps
                                                                                                   : c_.weight_ps;
    return v[static_cast<std::size_t>(vs)];
  }
  Ps end_of(PipelinePass pass, int vs, int mb) const { return end_[static_cast<int>(pass)][index(vs, mb)]; }
  // A pass's input arriving from another virtual stage: paid the transfer unless both are on one stage.
  Ps arrival(Ps end, int from_vs, int to_vs) const {
    return from_vs % sh_.stages == to_vs % sh_.stages ? end : end + c_.p2p_ps;
  }

  // When a pass may start as far as its inputs go; nullopt while an input is not placed yet.
  std::optional<Ps> ready(int stage, const PipelineWork& w) const {
    const int vs = virtual_stage(stage, w);
    const int last = sh_.stages * sh_.chunks - 1;
    Ps t = kUnknown;
    switch (w.pass) {
      case PipelinePass::forward:
        if (vs == 0) return Ps{0};
        t = end_of(PipelinePass::forward, vs - 1, w.micro_batch);
        return t == kUnknown ? std::nullopt : std::optional<Ps>(arrival(t, vs - 1, vs));
      case PipelinePass::backward:
        if (vs == last) {
          t = end_of(PipelinePass::forward, vs, w.micro_batch);
          return t == kUnknown ? std::nullopt : std::optional<Ps>(t);
        }
        t = end_of(PipelinePass::backward, vs + 1, w.micro_batch);
        if (t == kUnknown || end_of(PipelinePass::forward, vs, w.micro_batch) == kUnknown) return std::nullopt;
        return arrival(t, vs + 1, vs);
      case PipelinePass::weight:
        t = end_of(PipelinePass::backward, vs, w.micro_batch);
        return t == kUnknown ? std::nullopt : std::optional<Ps>(t);
    }
    return std::nullopt;
  }

  // The passes a stage could run next, most urgent first.
  std::vector<PipelineWork> candidates(int stage) const {
    const Stage& st = st_[static_cast<std::size_t>(stage)];
    if (!greedy_) return {order_[static_cast<std::size_t>(stage)][st.next]};
    // ZB-H1: an input gradient first (it is on the critical path), then a forward while the stage holds
    // fewer than 1F1B's pp - s micro-batches, then a weight gradient to fill the wait.
    std::vector<PipelineWork> c;
    for (int mb = 0; mb < st.next_forward; ++mb)
      if (end_of(PipelinePass::backward, stage, mb) == kUnknown) {
        c.push_back({PipelinePass::backward, mb, 0});
        break;  // backwards run in micro-batch order, as they arrive
      }
    if (st.next_forward < sh_.micro_batches && st.in_flight < sh_.stages - stage)
      c.push_back({PipelinePass::forward, st.next_forward, 0});
    if (!st.pending_weight.empty()) c.push_back({PipelinePass::weight, st.pending_weight.front(), 0});
    return c;
  }

  void step(int stage) {
    Stage& st = st_[static_cast<std::size_t>(stage)];
    const Ps t = st.free_ps;
    std::optional<Ps> earliest;
    // zero_bubble_h1: when the stage's next forward or input gradient can start, once its input is known.
    std::optional<Ps> critical;
    for (const PipelineWork& w : candidates(stage))
      if (w.pass != PipelinePass::weight)
        if (const std::optional<Ps> r = ready(stage, w)) critical = critical ? std::min(*critical, *r) : *r;
    for (const PipelineWork& w : candidates(stage)) {
      const std::optional<Ps> r = ready(stage, w);
      if (!r) continue;
      // A weight gradient fills a wait only where it ends before a forward or input gradient could start:
      // started in a shorter gap (a stage-to-stage transfer's), it would hold the critical path back by
      // the rest of W, which ZB-H1's schedule never does (Qi et al. Sec. 3.1: W is deferred into the
      // bubbles).
      if (w.pass == PipelinePass::weight && critical && *critical > t &&
          t + duration(virtual_stage(stage, w), w.pass) > *critical)
        continue;
      if (*r <= t) {
        place(stage, w, t);
        return;
      }
      earliest = earliest ? std::min(*earliest, *r) : *r;
    }
    // Nothing can start now: wait for the earliest known input, or until another stage places one.
    st.waiting = true;
    st.wait_since = t;
    st.blocked = !earliest;
    if (earliest) st.free_ps = *earliest;
  }

  void place(int stage, const PipelineWork& w, Ps start) {
    Stage& st = st_[static_cast<std::size_t>(stage)];
    const int vs = virtual_stage(stage, w);
    const Ps end = start + duration(vs, w.pass);
    end_[static_cast<int>(w.pass)][index(vs, w.micro_batch)] = end;
    tl_.stages[static_cast<std::size_t>(stage)].push_back({w, start, end});
    tl_.busy_ps[static_cast<std::size_t>(stage)] += end - start;
    st.free_ps = end;
    st.waiting = st.blocked = false;
    ++st.done;
    if (w.pass == PipelinePass::forward) {
      ++st.in_flight;
      tl_.peak_in_flight[static_cast<std::size_t>(stage)] =
          std::max(tl_.peak_in_flight[static_cast<std::size_t>(stage)], st.in_flight);
    } else if (w.pass == PipelinePass::backward) {
      --st.in_flight;
    }
    if (greedy_) {
      if (w.pass == PipelinePass::forward) ++st.next_forward;
      if (w.pass == PipelinePass::backward) st.pending_weight.push_back(w.micro_batch);
      if (w.pass == PipelinePass::weight) st.pending_weight.erase(st.pending_weight.begin());
    } else {
      ++st.next;
    }
    // A placed pass may be the input another stage waits for: look again from where each one waits.
    for (int i = 0; i < sh_.stages; ++i) {
      Stage& other = st_[static_cast<std::size_t>(i)];
      if (i == stage || !other.waiting || other.done == other.total) continue;
      rewait(i);
    }
  }

  // A waiting stage's earliest start given what is placed now (never earlier than it began waiting:
  // decisions are made in time order).
  void rewait(int stage) {
    Stage& st = st_[static_cast<std::size_t>(stage)];
    std::optional<Ps> earliest;
    for (const PipelineWork& w : candidates(stage))
      if (const std::optional<Ps> r = ready(stage, w)) earliest = earliest ? std::min(*earliest, *r) : *r;
    if (!earliest) return;
    const Ps start = std::max(st.wait_since, *earliest);
    st.free_ps = st.blocked ? start : std::min(st.free_ps, start);
    st.blocked = false;
  }

  const PipelineShape& sh_;
  const PipelineCosts& c_;
  bool greedy_ = false;
  std::vector<std::vector<PipelineWork>> order_;
  std::vector<Stage> st_;
  std::vector<Ps> end_[3];  // per pass: end of (virtual stage, micro-batch), kUnknown until placed
  PipelineTimeline tl_;
};

}  // namespace

std::vector<std::vector<PipelineWork>> pipeline_order(const PipelineShape& shape) {
  check_pipeline_shape(shape);
  if (shape.schedule == PipelineSchedule::zero_bubble_h1)
    throw std::invalid_argument("the zb_h1 schedule decides its order as it runs (run_pipeline lists it)");
  std::vector<std::vector<PipelineWork>> orders;
  for (int s = 0; s < shape.stages; ++s) {
    switch (shape.schedule) {
      case PipelineSchedule::gpipe: orders.push_back(gpipe_order(shape)); break;
      case PipelineSchedule::one_f_one_b: orders.push_back(one_f_one_b_order(shape, s)); break;
      case PipelineSchedule::interleaved: orders.push_back(interleaved_order(shape, s)); break;
      case PipelineSchedule::zero_bubble_h1: break;
    }
  }
  return orders;
}

PipelineTimeline run_pipeline(const PipelineShape& shape, const PipelineCosts& costs) {
  check_pipeline_shape(shape);
  const std::size_t vs = static_cast<std::size_t>(shape.stages) * static_cast<std::size_t>(shape.chunks);
  const bool split = shape.schedule == PipelineSchedule::zero_bubble_h1;
  auto check = [&](const std::vector<Ps>& v, const char* what, bool needed) {
    if (!needed) {
      if (!v.empty()) throw std::invalid_argument(fmt::format("{} is for the zb_h1 schedule only", what));
      return;
    }
    if (v.size() != vs)
      throw std::invalid_argument(fmt::format("{} has {} entries; pp x vpp is {}", what, v.size(), vs));
    for (Ps p : v)
      if (p < 0) throw std::invalid_argument(fmt::format("{} has a negative time", what));
  };
  check(costs.forward_ps, "forward_ps", true);
  check(costs.backward_ps, "backward_ps", true);
  check(costs.weight_ps, "weight_ps", split);
  if (costs.p2p_ps < 0) throw std::invalid_argument("p2p_ps is negative");
  return PipelineRun(shape, costs).run();
}

}  // namespace overlap::sim
