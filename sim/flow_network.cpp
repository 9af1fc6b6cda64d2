#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace overlap::sim {

FlowNetwork::FlowNetwork(const Fabric& fabric)
    : fabric_(fabric),
      residual_(fabric.links().size(), 0.0),
      unfixed_count_(fabric.links().size(), 0) {}

int FlowNetwork::add(Ps now_ps, std::vector<int> links, double cap_bytes_per_ps, double service_ps) {
  int id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[static_cast<std::size_t>(id)];
  const std::uint32_t version = f.version + 1;
  f = Flow{std::move(links), cap_bytes_per_ps, service_ps, 0.0, now_ps, version, true};
  active_.push_back(id);
  return id;
}

void FlowNetwork::remove(Ps now_ps, int id) {
  advance(now_ps);
  Flow& f = flows_[static_cast<std::size_t>(id)];
  f.active = false;
  ++f.version;
  active_.erase(std::find(active_.begin(), active_.end(), id));
  free_ids_.push_back(id);
}

void FlowNetwork::advance(Ps now_ps) {
  for (int id : active_) {
    Flow& f = flows_[static_cast<std::size_t>(id)];
    if (now_ps > f.last_update_ps) {
      f.service_left_ps = std::max(0.0, f.service_left_ps - static_cast<double>(now_ps - f.last_update_ps) * f.multiplier);
      f.last_update_ps = now_ps;
    }
  }
}

void FlowNetwork::reshare(Ps now_ps, std::vector<int>& changed) {
  advance(now_ps);
  const auto& links = fabric_.links();
  const std::size_t n = active_.size();
  new_rate_.assign(n, 0.0);
  fixed_.assign(n, 0);
  for (int id : active_)
    for (int l : flows_[static_cast<std::size_t>(id)].links) {
      residual_[static_cast<std::size_t>(l)] = links[static_cast<std::size_t>(l)].capacity_bytes_per_ps;
      unfixed_count_[static_cast<std::size_t>(l)] = 0;
    }
  for (int id : active_)
    for (int l : flows_[static_cast<std::size_t>(id)].links) ++unfixed_count_[static_cast<std::size_t>(l)];

  // Progressive filling: raise every unfixed flow's rate together until a link saturates or a flow
  // reaches its cap; fix those flows; repeat.
  std::size_t left = n;
  std::vector<char> capped(n, 0);
  while (left > 0) {
    double share = std::numeric_limits<double>::infinity();
    double min_cap = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      if (fixed_[i]) continue;
      const Flow& f = flows_[static_cast<std::size_t>(active_[i])];
      min_cap = std::min(min_cap, f.cap_bytes_per_ps);
      for (int l : f.links)
        share = std::min(share, residual_[static_cast<std::size_t>(l)] /
                                    static_cast<double>(unfixed_count_[static_cast<std::size_t>(l)]));
    }
    const bool by_cap = min_cap <= share;
    for (std::size_t i = 0; i < n; ++i) {
      if (fixed_[i]) continue;
      const Flow& f = flows_[static_cast<std::size_t>(active_[i])];
      bool fix = false;
      if (by_cap) {
        fix = f.cap_bytes_per_ps == min_cap;
      } else {
        for (int l : f.links)
          if (residual_[static_cast<std::size_t>(l)] / static_cast<double>(unfixed_count_[static_cast<std::size_t>(l)]) == share)
            fix = true;
      }
      if (!fix) continue;
      fixed_[i] = 1;
      capped[i] = by_cap;
      new_rate_[i] = by_cap ? f.cap_bytes_per_ps : share;
      --left;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (fixed_[i] != 1) continue;
      fixed_[i] = 2;  // applied
      for (int l : flows_[static_cast<std::size_t>(active_[i])].links) {
        residual_[static_cast<std::size_t>(l)] = std::max(0.0, residual_[static_cast<std::size_t>(l)] - new_rate_[i]);
        --unfixed_count_[static_cast<std::size_t>(l)];
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    Flow& f = flows_[static_cast<std::size_t>(active_[i])];
    // A flow at its own cap runs at exactly its isolated speed; keep the rate strictly positive.
    double m = capped[i] ? 1.0 : std::min(1.0, new_rate_[i] / f.cap_bytes_per_ps);
    m = std::max(m, 1e-12);
    if (m != f.multiplier) {
      f.multiplier = m;
      ++f.version;
      changed.push_back(active_[i]);
    }
  }
}

Ps FlowNetwork::finish_ps(int id, Ps now_ps) const {
  const Flow& f = flows_[static_cast<std::size_t>(id)];
  const double left = f.service_left_ps / f.multiplier;
  // Round up, forgiving floating-point dust below a millionth of a picosecond.
  return now_ps + static_cast<Ps>(std::max(0.0, std::ceil(left - 1e-6)));
}

}  // namespace overlap::sim
