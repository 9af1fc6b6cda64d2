// Compute kernels sharing SMs with communication kernels (calibrate/traces/sm_share.hpp).
#include "calibrate/traces/sm_share.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace overlap::traces {

namespace {

struct CommSpan {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int32_t grid_x = -1;  // -1: not recorded
};

// Per rank and device, its communication kernels by start, and the longest one's length (so the
// ones that can overlap an interval are found from a lower bound).
struct DeviceComms {
  std::vector<CommSpan> spans;
  std::int64_t longest_ns = 0;
};

}  // namespace

std::vector<std::int64_t> sm_share_durations(const ReplayGraph& g, const std::vector<const RankTrace*>& ranks,
                                             const std::vector<std::int64_t>& base, const std::vector<bool>& priced,
                                             int sm_count, int comm_sms, SmShareCounts* counts) {
  std::map<std::pair<std::size_t, std::int32_t>, DeviceComms> comms;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (const GpuActivity& a : ranks[r]->activities)
      if (a.cls == ActivityClass::communication && a.end_ns > a.start_ns) {
        DeviceComms& d = comms[{r, a.device}];
        d.spans.push_back({a.start_ns, a.end_ns, a.grid_x});
        d.longest_ns = std::max(d.longest_ns, a.end_ns - a.start_ns);
      }
  for (auto& [key, d] : comms)
    std::sort(d.spans.begin(), d.spans.end(), [](const CommSpan& x, const CommSpan& y) { return x.start_ns < y.start_ns; });

  const double s = sm_count;
  std::vector<std::int64_t> out = base;
  std::vector<std::int64_t> cuts;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ReplayNode& n = g.nodes[i];
    const GpuActivity& a = ranks[static_cast<std::size_t>(n.rank)]->activities[static_cast<std::size_t>(n.activity)];
    if (a.cls != ActivityClass::compute || a.end_ns <= a.start_ns) continue;
    const auto it = comms.find({static_cast<std::size_t>(n.rank), a.device});
    if (it == comms.end()) continue;
    const DeviceComms& d = it->second;
    // The communication kernels that can overlap [start, end): those starting in [start - longest, end).
    const auto first = std::lower_bound(d.spans.begin(), d.spans.end(), a.start_ns - d.longest_ns,
                                        [](const CommSpan& c, std::int64_t t) { return c.start_ns < t; });
    cuts.assign({a.start_ns, a.end_ns});
    std::vector<const CommSpan*> beside;
    for (auto c = first; c != d.spans.end() && c->start_ns < a.end_ns; ++c) {
      if (c->end_ns <= a.start_ns) continue;
      beside.push_back(&*c);
      cuts.push_back(std::max(c->start_ns, a.start_ns));
      cuts.push_back(std::min(c->end_ns, a.end_ns));
    }
    if (beside.empty()) continue;
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    // Sum over the pieces of (piece / length) x (S - h_base) / (S - h_new).
    double factor = 0;
    bool unknown = false, capped = false, changes = false;
    const double length = static_cast<double>(a.end_ns - a.start_ns);
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
      const std::int64_t from = cuts[k], to = cuts[k + 1];
      std::int64_t held = 0, running = 0;
      bool grid_unknown = false;
      for (const CommSpan* c : beside) {
        if (c->start_ns >= to || c->end_ns <= from) continue;
        ++running;
        if (c->grid_x < 0) grid_unknown = true;
        else held += c->grid_x;
      }
      double ratio = 1.0;
      if (running > 0 && (grid_unknown || held >= sm_count)) {
        unknown = true;
      } else if (running > 0) {
        const double h_base = priced[i] ? 0.0 : static_cast<double>(held);
        double h_new = comm_sms > 0 ? static_cast<double>(comm_sms) * static_cast<double>(running) : static_cast<double>(held);
        if (h_new > s - 1) {
          h_new = s - 1;
          capped = true;
        }
        ratio = (s - h_base) / (s - h_new);
        changes = changes || h_base != h_new;
      }
      factor += static_cast<double>(to - from) / length * ratio;
    }
    // Unchanged unless some piece's SMs differ (no rounding of a sum of ones).
    const std::int64_t changed = changes ? std::llround(static_cast<double>(base[i]) * factor) : base[i];
    if (counts) {
      counts->unknown_grid += unknown ? 1 : 0;
      counts->capped += capped ? 1 : 0;
      counts->rescaled += changed != base[i] ? 1 : 0;
    }
    out[i] = changed;
  }
  return out;
}

}  // namespace overlap::traces
