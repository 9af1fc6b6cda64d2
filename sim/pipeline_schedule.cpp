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
    case PipelineSchedule::dualpipe: return "dualpipe";
  }
  return "?";
}

PipelineSchedule pipeline_schedule_from_name(std::string_view name) {
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
                             PipelineSchedule::zero_bubble_h1, PipelineSchedule::dualpipe})
    if (pipeline_schedule_name(s) == name) return s;
  throw std::invalid_argument(
      fmt::format("unknown pipeline schedule '{}' (gpipe, 1f1b, interleaved, zb_h1, dualpipe)", name.substr(0, 64)));
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
  // DeepSeek-V3 Sec. 3.2.1: DualPipe needs the stages and the micro-batches divisible by 2 (half the
  // micro-batches enter at each end); its reference implementation (deepseek-ai/DualPipe, DualPipe.step)
  // also needs at least 2 pp of them, one steady-state F&B round per stage at least.
  if (shape.schedule == PipelineSchedule::dualpipe) {
    if (shape.stages % 2 != 0)
      throw std::invalid_argument(fmt::format("the dualpipe schedule needs pp even (got {}): stage s pairs with stage "
                                              "pp - 1 - s", shape.stages));
    if (shape.micro_batches % 2 != 0 || shape.micro_batches < 2 * shape.stages)
      throw std::invalid_argument(fmt::format("the dualpipe schedule needs micro_batches even and at least 2 pp = {} "
                                              "(got {}): half of them enter at each end of the pipeline",
                                              2 * shape.stages, shape.micro_batches));
  }
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

// ZB-H1 (Qi et al. Sec. 2.1, Fig. 3 top): 1F1B's forwards and backwards, the backward now the input
// gradient B alone, and the weight gradient W of micro-batch k run right after B of micro-batch k + s on
// stage s, the last s + 1 Ws after the last B. The W of the first stage follows its B; each stage further
// down delays its Ws by one more, so that with equal passes every stage ends together: the last B
// reaches stage 0 s passes after stage s, which fills those s passes with its s deferred Ws. A stage
// holds 1F1B's pp - s micro-batches awaiting B and at most s more awaiting W: pp at most, 1F1B's first
// stage's count, so no stage holds more activations than 1F1B's fullest.
std::vector<PipelineWork> zero_bubble_h1_order(const PipelineShape& sh, int stage) {
  std::vector<PipelineWork> order;
  int next_weight = 0;
  for (const PipelineWork& w : one_f_one_b_order(sh, stage)) {
    order.push_back(w);
    if (w.pass == PipelinePass::backward && w.micro_batch >= stage) order.push_back({PipelinePass::weight, next_weight++, 0});
  }
  while (next_weight < sh.micro_batches) order.push_back({PipelinePass::weight, next_weight++, 0});
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

// DualPipe's order on stage s (DeepSeek-V3 Sec. 3.2.1, Fig. 5; the phases of deepseek-ai/DualPipe's
// DualPipe.step). With H = pp / 2, h = min(s, pp - 1 - s) and n = m / 2 micro-batches per direction, the
// "near" direction being the one entering at the stage's own end of the pipeline:
//   1. 2 (H - h - 1) forwards of the near direction;
//   2. h + 1 times a near forward and a far forward;
//   3. H - h - 1 times a far input gradient, its weight gradient, a far forward (zero bubble);
//   4. n - pp + h + 1 times two F&B chunks: near forward with far backward, far forward with near
//      backward (on the two middle stages the first near forward and far backward run apart);
//   5. H - h - 1 times a far backward, then far forward with near backward;
//   6. h + 1 times a far and a near backward, the second half of them split into B and W;
//   7. H - h - 1 times a deferred W and a near input gradient;
//   8. the h + 1 deferred Ws.
class DualPipeOrder {
 public:
  DualPipeOrder(const PipelineShape& sh, int stage)
      : near_(stage < sh.stages / 2 ? 0 : 1), far_(1 - near_) {
    const int half = sh.stages / 2, h = std::min(stage, sh.stages - 1 - stage), n = sh.micro_batches / 2;
    const bool middle = h == half - 1;
    for (int i = 0; i < 2 * (half - h - 1); ++i) forward(near_);
    for (int i = 0; i <= h; ++i) {
      forward(near_);
      forward(far_);
    }
    for (int i = 0; i < half - h - 1; ++i) {
      backward(far_, true);
      weight();
      forward(far_);
    }
    for (int i = 0; i < n - sh.stages + h + 1; ++i) {
      if (i == 0 && middle) {
        forward(near_);
        backward(far_, false);
      } else {
        pair(near_, far_);
      }
      pair(far_, near_);
    }
    for (int i = 0; i < half - h - 1; ++i) {
      backward(far_, false);
      pair(far_, near_);
    }
    bool split = false;
    for (int i = 0; i <= h; ++i) {
      if (i == (h + 1) / 2 && h % 2 == 1) split = true;
      backward(far_, split);
      if (i == (h + 1) / 2 && h % 2 == 0) split = true;
      backward(near_, split);
    }
    for (int i = 0; i < half - h - 1; ++i) {
      weight();
      backward(near_, true);
    }
    for (int i = 0; i <= h; ++i) weight();
  }
  std::vector<PipelineWork> take() { return std::move(order_); }

 private:
  void forward(int dir, bool paired = false) {
    order_.push_back({PipelinePass::forward, next_forward_[dir]++, dir, paired});
  }
  // An input gradient; `split`: its weight gradient deferred (run by a later weight()), else right after it.
  void backward(int dir, bool split) {
    const int mb = next_backward_[dir]++;
    order_.push_back({PipelinePass::backward, mb, dir});
    if (split) deferred_.push_back({PipelinePass::weight, mb, dir});
    else order_.push_back({PipelinePass::weight, mb, dir});
  }
  void weight() {
    order_.push_back(deferred_.front());
    deferred_.erase(deferred_.begin());
  }
  void pair(int forward_dir, int backward_dir) {
    forward(forward_dir, true);
    backward(backward_dir, false);
  }

  int near_, far_;
  int next_forward_[2] = {0, 0}, next_backward_[2] = {0, 0};
  std::vector<PipelineWork> deferred_;
  std::vector<PipelineWork> order_;
};

constexpr Ps kUnknown = -1;

class PipelineRun {
 public:
  PipelineRun(const PipelineShape& sh, const PipelineCosts& c) : sh_(sh), c_(c) {
    dual_ = sh.schedule == PipelineSchedule::dualpipe;
    // dualpipe: virtual stage dir * pp + position along the direction (two chains of pp).
    const int vs = dual_ ? 2 * sh.stages : sh.stages * sh.chunks;
    const std::size_t n = static_cast<std::size_t>(vs) * static_cast<std::size_t>(sh.micro_batches);
    for (auto& e : end_) e.assign(n, kUnknown);
    order_ = pipeline_order(sh);
    st_.resize(static_cast<std::size_t>(sh.stages));
    for (int s = 0; s < sh.stages; ++s)
      st_[static_cast<std::size_t>(s)].total = static_cast<int>(order_[static_cast<std::size_t>(s)].size());
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
    std::size_t next = 0;      // the next entry of the stage's order
    bool waiting = false;      // free_ps is a wait, not the end of a pass
    bool blocked = false;      // waiting on passes not yet placed
    Ps wait_since = 0;         // when it last found nothing to start
    int in_flight = 0;         // forwards whose backward has not run
  };

  int virtual_stage(int stage, const PipelineWork& w) const {
    if (dual_) return w.chunk * sh_.stages + (w.chunk == 0 ? stage : sh_.stages - 1 - stage);
    return w.chunk * sh_.stages + stage;
  }
  int stage_of(int vs) const {
    const int pos = vs % sh_.stages;
    return dual_ && vs >= sh_.stages ? sh_.stages - 1 - pos : pos;
  }
  // The first and last virtual stage of the chain `vs` is on (dualpipe: of its direction).
  bool first_vs(int vs) const { return dual_ ? vs % sh_.stages == 0 : vs == 0; }
  bool last_vs(int vs) const { return dual_ ? vs % sh_.stages == sh_.stages - 1 : vs == sh_.stages * sh_.chunks - 1; }
  std::size_t index(int vs, int mb) const {
    return static_cast<std::size_t>(vs) * static_cast<std::size_t>(sh_.micro_batches) + static_cast<std::size_t>(mb);
  }
  Ps duration(int vs, PipelinePass pass) const {
    const auto& v = pass == PipelinePass::forward ? c_.forward_ps : pass == PipelinePass::backward ? c_.backward_ps
                                                                                                   : c_.weight_ps;
    return v[static_cast<std::size_t>(dual_ ? vs % sh_.stages : vs)];
  }
  Ps comm(const std::vector<Ps>& v, int vs) const { return v.empty() ? 0 : v[static_cast<std::size_t>(vs % sh_.stages)]; }
  // A dualpipe F&B chunk: forward on `f_vs`, whole backward (B + W) on `b_vs`.
  Ps pair_duration(int f_vs, int b_vs) const {
    return paired_pass_ps(duration(f_vs, PipelinePass::forward),
                          duration(b_vs, PipelinePass::backward) + duration(b_vs, PipelinePass::weight),
                          comm(c_.forward_comm_ps, f_vs), comm(c_.backward_comm_ps, b_vs), c_.paired_compute_rate);
  }
  Ps end_of(PipelinePass pass, int vs, int mb) const { return end_[static_cast<int>(pass)][index(vs, mb)]; }
  // A pass's input arriving from another virtual stage: paid the transfer unless both are on one stage.
  Ps arrival(Ps end, int from_vs, int to_vs) const {
    return stage_of(from_vs) == stage_of(to_vs) ? end : end + c_.p2p_ps;
  }

  // When a pass may start as far as its inputs go; nullopt while an input is not placed yet.
  // A dualpipe F&B chunk: when both its forward's and its backward's inputs are in.
  std::optional<Ps> ready(int stage, const PipelineWork& w) const {
    if (!w.paired) return ready_one(stage, w);
    const Stage& st = st_[static_cast<std::size_t>(stage)];
    const std::optional<Ps> f = ready_one(stage, w);
    const std::optional<Ps> b = ready_one(stage, order_[static_cast<std::size_t>(stage)][st.next + 1]);
    if (!f || !b) return std::nullopt;
    return std::max(*f, *b);
  }
  std::optional<Ps> ready_one(int stage, const PipelineWork& w) const {
    const int vs = virtual_stage(stage, w);
    Ps t = kUnknown;
    switch (w.pass) {
      case PipelinePass::forward:
        if (first_vs(vs)) return Ps{0};
        t = end_of(PipelinePass::forward, vs - 1, w.micro_batch);
        return t == kUnknown ? std::nullopt : std::optional<Ps>(arrival(t, vs - 1, vs));
      case PipelinePass::backward:
        if (last_vs(vs)) {
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

  // The pass a stage runs next: its order's next entry.
  const PipelineWork& next_work(int stage) const {
    return order_[static_cast<std::size_t>(stage)][st_[static_cast<std::size_t>(stage)].next];
  }

  void step(int stage) {
    Stage& st = st_[static_cast<std::size_t>(stage)];
    const Ps t = st.free_ps;
    const std::optional<Ps> r = ready(stage, next_work(stage));
    if (r && *r <= t) {
      place(stage, next_work(stage), t);
      return;
    }
    // Its input is not in yet: wait for it, or until another stage places it.
    st.waiting = true;
    st.wait_since = t;
    st.blocked = !r;
    if (r) st.free_ps = *r;
  }

  void place(int stage, const PipelineWork& w, Ps start) {
    Stage& st = st_[static_cast<std::size_t>(stage)];
    if (w.paired) {
      // The F&B chunk: the forward, the backward and its weight gradient after it share one span.
      const auto& order = order_[static_cast<std::size_t>(stage)];
      const std::size_t at = st.next;  // record() moves st.next on
      const Ps end = start + pair_duration(virtual_stage(stage, w), virtual_stage(stage, order[at + 1]));
      for (std::size_t i = 0; i < 3; ++i) record(stage, order[at + i], start, end, i == 0 ? end - start : 0);
      return;
    }
    const int vs = virtual_stage(stage, w);
    record(stage, w, start, start + duration(vs, w.pass), duration(vs, w.pass));
  }

  // One pass placed from `start` to `end`, `busy` of it added to the stage's busy time.
  void record(int stage, const PipelineWork& w, Ps start, Ps end, Ps busy) {
    Stage& st = st_[static_cast<std::size_t>(stage)];
    const int vs = virtual_stage(stage, w);
    end_[static_cast<int>(w.pass)][index(vs, w.micro_batch)] = end;
    tl_.stages[static_cast<std::size_t>(stage)].push_back({w, start, end});
    tl_.busy_ps[static_cast<std::size_t>(stage)] += busy;
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
    ++st.next;
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
    const std::optional<Ps> earliest = ready(stage, next_work(stage));
    if (!earliest) return;
    const Ps start = std::max(st.wait_since, *earliest);
    st.free_ps = st.blocked ? start : std::min(st.free_ps, start);
    st.blocked = false;
  }

  const PipelineShape& sh_;
  const PipelineCosts& c_;
  bool dual_ = false;
  std::vector<std::vector<PipelineWork>> order_;
  std::vector<Stage> st_;
  std::vector<Ps> end_[3];  // per pass: end of (virtual stage, micro-batch), kUnknown until placed
  PipelineTimeline tl_;
};

}  // namespace

std::vector<std::vector<PipelineWork>> pipeline_order(const PipelineShape& shape) {
  check_pipeline_shape(shape);
  std::vector<std::vector<PipelineWork>> orders;
  for (int s = 0; s < shape.stages; ++s) {
    switch (shape.schedule) {
      case PipelineSchedule::gpipe: orders.push_back(gpipe_order(shape)); break;
      case PipelineSchedule::one_f_one_b: orders.push_back(one_f_one_b_order(shape, s)); break;
      case PipelineSchedule::interleaved: orders.push_back(interleaved_order(shape, s)); break;
      case PipelineSchedule::dualpipe: orders.push_back(DualPipeOrder(shape, s).take()); break;
      case PipelineSchedule::zero_bubble_h1: orders.push_back(zero_bubble_h1_order(shape, s)); break;
    }
  }
  return orders;
}

PipelineTimeline run_pipeline(const PipelineShape& shape, const PipelineCosts& costs) {
  check_pipeline_shape(shape);
  const std::size_t vs = static_cast<std::size_t>(shape.stages) * static_cast<std::size_t>(shape.chunks);
  const bool dual = shape.schedule == PipelineSchedule::dualpipe;
  const bool split = shape.schedule == PipelineSchedule::zero_bubble_h1 || dual;
  auto check = [&](const std::vector<Ps>& v, const char* what, bool needed) {
    if (!needed) {
      if (!v.empty()) throw std::invalid_argument(fmt::format("{} is not used by the {} schedule", what,
                                                              pipeline_schedule_name(shape.schedule)));
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
  if (!costs.forward_comm_ps.empty() || dual) check(costs.forward_comm_ps, "forward_comm_ps", dual && !costs.forward_comm_ps.empty());
  if (!costs.backward_comm_ps.empty() || dual)
    check(costs.backward_comm_ps, "backward_comm_ps", dual && !costs.backward_comm_ps.empty());
  if (costs.p2p_ps < 0) throw std::invalid_argument("p2p_ps is negative");
  if (!(costs.paired_compute_rate > 0 && costs.paired_compute_rate <= 1))
    throw std::invalid_argument(fmt::format("paired_compute_rate is {}; it is a speed in (0, 1]", costs.paired_compute_rate));
  return PipelineRun(shape, costs).run();
}

}  // namespace overlap::sim

namespace overlap::sim {

Ps paired_pass_ps(Ps f, Ps b, Ps f_comm, Ps b_comm, double compute_rate) {
  const Ps fc = std::clamp<Ps>(f_comm, 0, f), bc = std::clamp<Ps>(b_comm, 0, b);
  const Ps hidden = std::min(fc, b - bc) + std::min(bc, f - fc);
  // While a hidden transfer runs, the compute beside it advances at compute_rate: the chunk is shorter by
  // that share of the hidden time only (rounded down: exact integers at rate 1).
  return f + b - static_cast<Ps>(static_cast<double>(hidden) * std::clamp(compute_rate, 0.0, 1.0));
}

StageActivationPeak stage_activation_peak(const std::vector<PipelineSlot>& slots, bool split, double full, double weight) {
  StageActivationPeak peak;
  int held = 0, waiting = 0;  // chunks whose backward, and whose weight gradient, have not run
  std::vector<std::pair<int, int>> pending;  // (chunk, micro-batch) whose B ran and W did not
  for (const PipelineSlot& slot : slots) {
    const std::pair<int, int> key{slot.work.chunk, slot.work.micro_batch};
    switch (slot.work.pass) {
      case PipelinePass::forward: {
        ++held;
        const double bytes = held * full + waiting * weight;
        if (bytes > peak.peak) peak = {bytes, held, waiting};
        break;
      }
      case PipelinePass::backward:
        --held;
        if (split) {
          ++waiting;
          pending.push_back(key);
        }
        break;
      case PipelinePass::weight:
        if (const auto it = std::find(pending.begin(), pending.end(), key); it != pending.end()) {
          pending.erase(it);
          --waiting;
        }
        break;
    }
  }
  return peak;
}

}  // namespace overlap::sim
