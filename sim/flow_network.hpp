#pragma once
// Max-min fair sharing of link bandwidth among concurrent transfers (design.md "Fabric"). Each flow
// has a route (link ids), a cap (the rate its calibrated curve gives it in isolation) and an amount of
// service left, measured in picoseconds at its cap. Rates are recomputed by progressive filling
// whenever a flow joins or leaves; a flow running at its cap has multiplier exactly 1, so an isolated
// transfer finishes exactly when its curve says.
#include <cstdint>
#include <vector>

#include "cost_model/units.hpp"
#include "sim/fabric.hpp"

namespace overlap::sim {

struct Flow {
  std::vector<int> links;
  double cap_bytes_per_ps = 0;   // rate in isolation
  double service_left_ps = 0;    // time left at full cap
  double multiplier = 0;         // current rate / cap, in (0, 1]
  Ps last_update_ps = 0;
  std::uint32_t version = 0;     // bumps when the finish time changes (older flow_end events are stale)
  bool active = false;
};

class FlowNetwork {
 public:
  explicit FlowNetwork(const Fabric& fabric);

  // Adds an active flow at `now`; returns its id. Call `reshare(now)` after a batch of changes.
  int add(Ps now_ps, std::vector<int> links, double cap_bytes_per_ps, double service_ps);
  void remove(Ps now_ps, int flow);
  // Advances every active flow to `now` and recomputes rates. Flows whose finish time changed get a
  // new version; `changed` receives their ids.
  void reshare(Ps now_ps, std::vector<int>& changed);

  const Flow& flow(int id) const { return flows_[static_cast<std::size_t>(id)]; }
  // Finish time of an active flow at its current rate (rounded up: never optimistic).
  Ps finish_ps(int id, Ps now_ps) const;

 private:
  void advance(Ps now_ps);

  const Fabric& fabric_;
  std::vector<Flow> flows_;
  std::vector<int> active_;      // ids of active flows, in the order they joined
  std::vector<int> free_ids_;
  // Scratch for progressive filling, sized to the links.
  std::vector<double> residual_;
  std::vector<int> unfixed_count_;
  std::vector<double> new_rate_;
  std::vector<char> fixed_;
};

}  // namespace overlap::sim
