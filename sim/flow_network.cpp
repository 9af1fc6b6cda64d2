#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace overlap::sim {
namespace {

// Relative slack for "the link has room" and "the link is full": rates are sums of doubles.
constexpr double kSlack = 1e-9;

// Calls fn(link, occurrences) once per distinct link of `f`: a route may cross a link more than once
// (an HBM read and written), each occurrence drawing the flow's rate again. Routes are short, so
// the repeats are found by scanning.
template <class Fn>
void for_each_link(const Flow& f, Fn fn) {
  for (std::size_t i = 0; i < f.links.size(); ++i) {
    const int l = f.links[i];
    const auto first = f.links.begin();
    if (std::find(first, first + static_cast<std::ptrdiff_t>(i), l) != first + static_cast<std::ptrdiff_t>(i)) continue;
    fn(static_cast<std::size_t>(l), static_cast<double>(std::count(first, f.links.end(), l)));
  }
}

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> link_capacity_bytes_per_ps)
    : capacity_(std::move(link_capacity_bytes_per_ps)),
      load_(capacity_.size(), 0.0),
      on_link_(capacity_.size()),
      link_stamp_(capacity_.size(), 0),
      residual_(capacity_.size(), 0.0),
      outside_(capacity_.size(), 0.0),
      unfixed_(capacity_.size(), 0),
      moved_(capacity_.size(), 0) {}

bool FlowNetwork::fits(const Flow& f, double extra_rate) const {
  bool ok = true;
  for_each_link(f, [&](std::size_t l, double times) {
    if (load_[l] + times * extra_rate > capacity_[l] * (1 + kSlack)) ok = false;
  });
  return ok;
}

bool FlowNetwork::touches_full_link(const Flow& f) const {
  for (int l : f.links) {
    const auto li = static_cast<std::size_t>(l);
    if (load_[li] >= capacity_[li] * (1 - kSlack)) return true;
  }
  return false;
}

void FlowNetwork::add_load(const Flow& f, double rate) {
  for (int l : f.links) load_[static_cast<std::size_t>(l)] += rate;
}

void FlowNetwork::set_multiplier(Ps now_ps, int id, double m, std::vector<int>& changed) {
  Flow& f = flows_[static_cast<std::size_t>(id)];
  if (m == f.multiplier) return;
  if (f.service_left_ps >= 0 && now_ps > f.last_update_ps)
    f.service_left_ps = std::max(0.0, f.service_left_ps - static_cast<double>(now_ps - f.last_update_ps) * f.multiplier);
  f.last_update_ps = now_ps;
  f.multiplier = m;
  ++f.version;
  changed.push_back(id);
}

int FlowNetwork::add(Ps now_ps, std::span<const int> links, double cap_bytes_per_ps, double service_ps,
                     std::vector<int>& changed) {
  int id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
    flow_stamp_.push_back(0);
    slot_.push_back(0);
  }
  Flow& f = flows_[static_cast<std::size_t>(id)];
  const std::uint32_t version = f.version + 1;
  std::vector<int> reuse = std::move(f.links);
  reuse.assign(links.begin(), links.end());
  f = Flow{std::move(reuse), cap_bytes_per_ps, service_ps, 0.0, now_ps, version, true};
  for (int l : f.links) on_link_[static_cast<std::size_t>(l)].push_back(id);
  if (fits(f, cap_bytes_per_ps)) {
    // Room on every link at its cap: the others' max-min rates stand (their bottlenecks are links
    // this flow does not fill).
    f.multiplier = 1.0;
    add_load(f, cap_bytes_per_ps);
    changed.push_back(id);
    return id;
  }
  contested(f, cap_bytes_per_ps, seeds_);
  reshare_from(now_ps, id, seeds_, changed);
  if (std::find(changed.begin(), changed.end(), id) == changed.end()) changed.push_back(id);
  return id;
}

// The links of `f` with no room for `extra` more (each occurrence counted): where a change of f's rate
// reaches the other flows. Written to `out` (a scratch buffer: no allocation per flow).
void FlowNetwork::contested(const Flow& f, double extra, std::vector<int>& out) const {
  out.clear();
  for_each_link(f, [&](std::size_t l, double times) {
    if (load_[l] + times * extra >= capacity_[l] * (1 - kSlack)) out.push_back(static_cast<int>(l));
  });
}

void FlowNetwork::remove(Ps now_ps, int id, std::vector<int>& changed) {
  Flow& f = flows_[static_cast<std::size_t>(id)];
  // Only the full links it crossed can have held another flow back.
  std::vector<int>& full = full_;
  contested(f, 0.0, full);
  add_load(f, -f.multiplier * f.cap_bytes_per_ps);
  for (int l : f.links) {
    auto& v = on_link_[static_cast<std::size_t>(l)];
    v.erase(std::find(v.begin(), v.end(), id));
    if (v.empty()) load_[static_cast<std::size_t>(l)] = 0;  // no drift on an idle link
  }
  f.active = false;
  f.multiplier = 0;
  ++f.version;
  free_ids_.push_back(id);
  if (!full.empty()) reshare_from(now_ps, -1, full, changed);
}

void FlowNetwork::set_cap(Ps now_ps, int id, double cap, std::vector<int>& changed) {
  Flow& f = flows_[static_cast<std::size_t>(id)];
  if (cap == f.cap_bytes_per_ps) return;
  if (f.multiplier == 1.0) {
    const double delta = cap - f.cap_bytes_per_ps;
    if ((delta > 0 && fits(f, delta)) || (delta < 0 && !touches_full_link(f))) {
      add_load(f, delta);
      f.cap_bytes_per_ps = cap;
      return;  // still at its cap; nobody else moves
    }
  }
  // Refill as if it joined anew at its new cap (a demand flow has no progress to keep).
  std::vector<int>& full = full_;
  contested(f, 0.0, full);
  add_load(f, -f.multiplier * f.cap_bytes_per_ps);
  f.multiplier = 0;
  f.cap_bytes_per_ps = cap;
  std::vector<int>& seeds = seeds_;
  contested(f, cap, seeds);
  for (int l : full)
    if (std::find(seeds.begin(), seeds.end(), l) == seeds.end()) seeds.push_back(l);
  reshare_from(now_ps, id, seeds, changed);
}

void FlowNetwork::reshare_from(Ps now_ps, int origin, const std::vector<int>& seed_links, std::vector<int>& changed) {
  ++reshares_;
  // Progressive filling over the flows a change can reach, found by growing a set: start with the
  // flow that changed and the flows on the seed links (the full links where the change happened);
  // fill them with every other flow's rate held fixed; then, on each link the set touches but does
  // not hold all of, if one of the set's flows changed rate there and the link is full (so others
  // may be held back or freed), take that link's flows into the set too, and fill again. A change
  // that stays local (a transfer joining an HBM a memory-bound GEMM fills) costs only its
  // neighbourhood; the result is the max-min allocation.
  if (++stamp_ == 0) {  // wrapped: clear the stamps once
    std::fill(link_stamp_.begin(), link_stamp_.end(), 0);
    std::fill(flow_stamp_.begin(), flow_stamp_.end(), 0);
    stamp_ = 1;
  }
  const std::uint32_t held = stamp_;  // link_stamp_ == held: the set holds all the link's flows
  comp_flows_.clear();
  if (origin >= 0) {  // the flow that changed, even where it finds room
    flow_stamp_[static_cast<std::size_t>(origin)] = held;
    comp_flows_.push_back(origin);
  }
  stack_.assign(seed_links.begin(), seed_links.end());
  do {
    take_stacked_links(held);
    bound_set_links(held);
    fill_set(held);
  } while (grow_set(held));
  apply_set(now_ps, changed);
}

void FlowNetwork::take_stacked_links(std::uint32_t held) {
  for (int l : stack_) {
    const auto li = static_cast<std::size_t>(l);
    if (link_stamp_[li] == held) continue;
    link_stamp_[li] = held;
    for (int id : on_link_[li]) {
      if (flow_stamp_[static_cast<std::size_t>(id)] == held) continue;
      flow_stamp_[static_cast<std::size_t>(id)] = held;
      comp_flows_.push_back(id);
    }
  }
  stack_.clear();
}

void FlowNetwork::bound_set_links(std::uint32_t held) {
  bound_links_.clear();
  for (int id : comp_flows_)
    for (int l : flows_[static_cast<std::size_t>(id)].links) {
      const auto li = static_cast<std::size_t>(l);
      if (unfixed_[li] == 0) {
        bound_links_.push_back(l);
        residual_[li] = load_[li];
      }
      ++unfixed_[li];
    }
  for (int id : comp_flows_) {
    const Flow& f = flows_[static_cast<std::size_t>(id)];
    for (int l : f.links) residual_[static_cast<std::size_t>(l)] -= f.multiplier * f.cap_bytes_per_ps;
  }
  for (int l : bound_links_) {
    const auto li = static_cast<std::size_t>(l);
    // A link the set holds entirely has no outside load (only rounding dust).
    outside_[li] = link_stamp_[li] == held ? 0.0 : std::max(0.0, residual_[li]);
    residual_[li] = std::max(0.0, capacity_[li] - outside_[li]);
  }
}

void FlowNetwork::fill_set(std::uint32_t held) {
  // Raise every unfixed flow's rate together until a link saturates or a flow reaches its cap; fix
  // those flows; repeat. Each round scans the links (not flows x links) and takes the next caps
  // from the flows sorted by cap, so a set of n flows on L links costs about (rounds x L) + the
  // flows' links, not n^2 x links.
  const std::size_t n = comp_flows_.size();
  rate_.assign(n, 0.0);
  fixed_.assign(n, 0);
  capped_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) slot_[static_cast<std::size_t>(comp_flows_[i])] = static_cast<int>(i);
  by_cap_.resize(n);
  for (std::size_t i = 0; i < n; ++i) by_cap_[i] = static_cast<int>(i);
  std::stable_sort(by_cap_.begin(), by_cap_.end(), [this](int a, int b) {
    return flows_[static_cast<std::size_t>(comp_flows_[static_cast<std::size_t>(a)])].cap_bytes_per_ps <
           flows_[static_cast<std::size_t>(comp_flows_[static_cast<std::size_t>(b)])].cap_bytes_per_ps;
  });
  std::size_t next_cap = 0;
  std::size_t left = n;
  auto fix = [&](std::size_t i, double rate, bool by_cap) {
    fixed_[i] = 1;
    capped_[i] = by_cap;
    rate_[i] = rate;
    --left;
    fixing_.push_back(static_cast<int>(i));
  };
  while (left > 0) {
    while (next_cap < n && fixed_[static_cast<std::size_t>(by_cap_[next_cap])]) ++next_cap;
    const double min_cap = flows_[static_cast<std::size_t>(comp_flows_[static_cast<std::size_t>(by_cap_[next_cap])])].cap_bytes_per_ps;
    double share = std::numeric_limits<double>::infinity();
    for (int l : bound_links_) {
      const auto li = static_cast<std::size_t>(l);
      if (unfixed_[li] > 0) share = std::min(share, residual_[li] / static_cast<double>(unfixed_[li]));
    }
    fixing_.clear();
    if (min_cap <= share) {
      for (std::size_t k = next_cap; k < n; ++k) {
        const auto i = static_cast<std::size_t>(by_cap_[k]);
        const double cap = flows_[static_cast<std::size_t>(comp_flows_[i])].cap_bytes_per_ps;
        if (cap != min_cap) break;
        if (!fixed_[i]) fix(i, cap, true);
      }
    } else {
      for (int l : bound_links_) {
        const auto li = static_cast<std::size_t>(l);
        if (unfixed_[li] == 0 || residual_[li] / static_cast<double>(unfixed_[li]) != share) continue;
        for (int id : on_link_[li]) {
          if (flow_stamp_[static_cast<std::size_t>(id)] != held) continue;
          const auto i = static_cast<std::size_t>(slot_[static_cast<std::size_t>(id)]);
          if (!fixed_[i]) fix(i, share, false);
        }
      }
    }
    for (int i : fixing_)
      for (int l : flows_[static_cast<std::size_t>(comp_flows_[static_cast<std::size_t>(i)])].links) {
        residual_[static_cast<std::size_t>(l)] = std::max(0.0, residual_[static_cast<std::size_t>(l)] - rate_[static_cast<std::size_t>(i)]);
        --unfixed_[static_cast<std::size_t>(l)];
      }
  }
}

bool FlowNetwork::grow_set(std::uint32_t held) {
  // Links where a flow of the set changed rate: if such a link is (or was) full and holds flows
  // outside the set, they may have to give way or may now get more.
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const Flow& f = flows_[static_cast<std::size_t>(comp_flows_[i])];
    const double old_rate = f.multiplier * f.cap_bytes_per_ps;
    if (std::fabs(rate_[i] - old_rate) <= kSlack * f.cap_bytes_per_ps) continue;
    for (int l : f.links) moved_[static_cast<std::size_t>(l)] = 1;
  }
  for (int l : bound_links_) {
    const auto li = static_cast<std::size_t>(l);
    if (link_stamp_[li] == held || !moved_[li]) continue;  // held entirely, or no rate moved here
    const bool full_now = residual_[li] <= capacity_[li] * kSlack;
    const bool was_full = load_[li] >= capacity_[li] * (1 - kSlack);
    if (full_now || was_full) stack_.push_back(l);
  }
  for (int l : bound_links_) {
    unfixed_[static_cast<std::size_t>(l)] = 0;
    moved_[static_cast<std::size_t>(l)] = 0;
  }
  return !stack_.empty();
}

void FlowNetwork::apply_set(Ps now_ps, std::vector<int>& changed) {
  for (int l : bound_links_) load_[static_cast<std::size_t>(l)] = outside_[static_cast<std::size_t>(l)];
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const int id = comp_flows_[i];
    const Flow& f = flows_[static_cast<std::size_t>(id)];
    // A flow at its own cap runs at exactly its isolated speed; keep the rate strictly positive.
    double m = capped_[i] ? 1.0 : std::min(1.0, rate_[i] / f.cap_bytes_per_ps);
    m = std::max(m, 1e-12);
    for (int l : f.links) load_[static_cast<std::size_t>(l)] += m * f.cap_bytes_per_ps;
    set_multiplier(now_ps, id, m, changed);
  }
}

Ps FlowNetwork::finish_ps(int id) const {
  const Flow& f = flows_[static_cast<std::size_t>(id)];
  const double left = f.service_left_ps / f.multiplier;
  // Round up, forgiving floating-point dust below a millionth of a picosecond.
  return checked_add(f.last_update_ps, checked_ps(std::max(0.0, std::ceil(left - 1e-6))));
}

}  // namespace overlap::sim
