#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace overlap::sim {
namespace {

// Relative slack for "the link has room" and "the link is full": rates are sums of doubles.
constexpr double kSlack = 1e-9;

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> link_capacity_bytes_per_ps)
    : capacity_(std::move(link_capacity_bytes_per_ps)),
      load_(capacity_.size(), 0.0),
      on_link_(capacity_.size()),
      link_stamp_(capacity_.size(), 0),
      residual_(capacity_.size(), 0.0),
      unfixed_(capacity_.size(), 0) {}

bool FlowNetwork::fits(const Flow& f, double extra_rate) const {
  // Links may repeat in a route: each occurrence draws the rate once more. Routes are short, so the
  // repeat count is found by scanning.
  for (std::size_t i = 0; i < f.links.size(); ++i) {
    const int l = f.links[i];
    if (std::find(f.links.begin(), f.links.begin() + static_cast<std::ptrdiff_t>(i), l) != f.links.begin() + static_cast<std::ptrdiff_t>(i))
      continue;
    const double times = static_cast<double>(std::count(f.links.begin(), f.links.end(), l));
    const auto li = static_cast<std::size_t>(l);
    if (load_[li] + times * extra_rate > capacity_[li] * (1 + kSlack)) return false;
  }
  return true;
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

int FlowNetwork::add(Ps now_ps, std::vector<int> links, double cap_bytes_per_ps, double service_ps,
                     std::vector<int>& changed) {
  int id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
    flow_stamp_.push_back(0);
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
  reshare_from(now_ps, f.links, changed);
  if (std::find(changed.begin(), changed.end(), id) == changed.end()) changed.push_back(id);
  return id;
}

void FlowNetwork::remove(Ps now_ps, int id, std::vector<int>& changed) {
  Flow& f = flows_[static_cast<std::size_t>(id)];
  const bool was_limiting = touches_full_link(f);
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
  // Only if it crossed a full link could it have held another flow back.
  if (was_limiting) reshare_from(now_ps, f.links, changed);
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
  f.cap_bytes_per_ps = cap;
  reshare_from(now_ps, f.links, changed);
}

void FlowNetwork::reshare_from(Ps now_ps, const std::vector<int>& seed_links, std::vector<int>& changed) {
  ++reshares_;
  if (++stamp_ == 0) {  // wrapped: clear the stamps once
    std::fill(link_stamp_.begin(), link_stamp_.end(), 0);
    std::fill(flow_stamp_.begin(), flow_stamp_.end(), 0);
    stamp_ = 1;
  }
  // The connected component of links and flows reachable from the seed links.
  comp_flows_.clear();
  comp_links_.clear();
  stack_.clear();
  for (int l : seed_links)
    if (link_stamp_[static_cast<std::size_t>(l)] != stamp_) {
      link_stamp_[static_cast<std::size_t>(l)] = stamp_;
      stack_.push_back(l);
    }
  while (!stack_.empty()) {
    const int l = stack_.back();
    stack_.pop_back();
    comp_links_.push_back(l);
    for (int id : on_link_[static_cast<std::size_t>(l)]) {
      if (flow_stamp_[static_cast<std::size_t>(id)] == stamp_) continue;
      flow_stamp_[static_cast<std::size_t>(id)] = stamp_;
      comp_flows_.push_back(id);
      for (int m : flows_[static_cast<std::size_t>(id)].links)
        if (link_stamp_[static_cast<std::size_t>(m)] != stamp_) {
          link_stamp_[static_cast<std::size_t>(m)] = stamp_;
          stack_.push_back(m);
        }
    }
  }
  // Deterministic order whatever the search order: by flow id.
  std::sort(comp_flows_.begin(), comp_flows_.end());
  for (int l : comp_links_) {
    residual_[static_cast<std::size_t>(l)] = capacity_[static_cast<std::size_t>(l)];
    unfixed_[static_cast<std::size_t>(l)] = 0;
    load_[static_cast<std::size_t>(l)] = 0;
  }
  const std::size_t n = comp_flows_.size();
  for (int id : comp_flows_)
    for (int l : flows_[static_cast<std::size_t>(id)].links) ++unfixed_[static_cast<std::size_t>(l)];
  rate_.assign(n, 0.0);
  fixed_.assign(n, 0);
  capped_.assign(n, 0);

  // Progressive filling: raise every unfixed flow's rate together until a link saturates or a flow
  // reaches its cap; fix those flows; repeat.
  std::size_t left = n;
  while (left > 0) {
    double share = std::numeric_limits<double>::infinity();
    double min_cap = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      if (fixed_[i]) continue;
      const Flow& f = flows_[static_cast<std::size_t>(comp_flows_[i])];
      min_cap = std::min(min_cap, f.cap_bytes_per_ps);
      for (int l : f.links)
        share = std::min(share, residual_[static_cast<std::size_t>(l)] / static_cast<double>(unfixed_[static_cast<std::size_t>(l)]));
    }
    const bool by_cap = min_cap <= share;
    for (std::size_t i = 0; i < n; ++i) {
      if (fixed_[i]) continue;
      const Flow& f = flows_[static_cast<std::size_t>(comp_flows_[i])];
      bool fix = false;
      if (by_cap) {
        fix = f.cap_bytes_per_ps == min_cap;
      } else {
        for (int l : f.links)
          if (residual_[static_cast<std::size_t>(l)] / static_cast<double>(unfixed_[static_cast<std::size_t>(l)]) == share)
            fix = true;
      }
      if (!fix) continue;
      fixed_[i] = 1;
      capped_[i] = by_cap;
      rate_[i] = by_cap ? f.cap_bytes_per_ps : share;
      --left;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (fixed_[i] != 1) continue;
      fixed_[i] = 2;  // applied
      for (int l : flows_[static_cast<std::size_t>(comp_flows_[i])].links) {
        residual_[static_cast<std::size_t>(l)] = std::max(0.0, residual_[static_cast<std::size_t>(l)] - rate_[i]);
        --unfixed_[static_cast<std::size_t>(l)];
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
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
  return f.last_update_ps + static_cast<Ps>(std::max(0.0, std::ceil(left - 1e-6)));
}

}  // namespace overlap::sim
