#pragma once
// The bandwidth both sides of the engine draw from: every fabric link and each GPU's HBM, shared max-min
// fairly (flow_network.hpp) among whatever loads them at once. The network side loads it with its
// transfers (a route's links, the HBM read at the source and written at the destination); the GPU side
// with its kernels' HBM traffic (a running GEMM's operand stream: gpu_side.hpp). One pool, because a
// copy and a GEMM on one GPU contend for the same HBM (design.md "Fabric"); each side owns its flows and
// is told, in the order the solver reports them, when one's rate changed.
#include <span>
#include <utility>
#include <vector>

#include "cost_model/units.hpp"
#include "sim/flow_network.hpp"

namespace overlap::sim {

// Whoever added a flow: told when its rate (FlowNetwork::multiplier) changed.
class FlowOwner {
 public:
  virtual ~FlowOwner() = default;
  virtual void rate_changed(int flow) = 0;
};

class SharedBandwidth {
 public:
  // Per resource id (a fabric link, HBM included), its capacity; per GPU, its HBM's id (-1: no memory
  // model).
  SharedBandwidth(std::vector<double> capacity_bytes_per_ps, std::vector<int> hbm_of_gpu)
      : flows_(std::move(capacity_bytes_per_ps)), hbm_(std::move(hbm_of_gpu)) {}

  // A flow over `links` at most `cap_bytes_per_ps`, for `service_ps` at that cap (< 0: endless, a
  // demand whose cap its owner moves). Every flow whose rate this sets or changes, the new one
  // included, is reported to its owner.
  int add(FlowOwner& owner, Ps now_ps, std::span<const int> links, double cap_bytes_per_ps, double service_ps) {
    const int flow = flows_.add(now_ps, links, cap_bytes_per_ps, service_ps, changed_);
    if (static_cast<int>(owner_.size()) <= flow) owner_.resize(static_cast<std::size_t>(flow) + 1, nullptr);
    owner_[static_cast<std::size_t>(flow)] = &owner;
    report();
    return flow;
  }
  void remove(Ps now_ps, int flow) {
    flows_.remove(now_ps, flow, changed_);
    report();
  }
  void set_cap(Ps now_ps, int flow, double cap_bytes_per_ps) {
    flows_.set_cap(now_ps, flow, cap_bytes_per_ps, changed_);
    report();
  }

  const FlowNetwork& flows() const { return flows_; }
  double multiplier(int flow) const { return flows_.multiplier(flow); }
  // The HBM of `gpu` (virtual ranks of one GPU share one), -1 when memory is not modelled or the GPU
  // is unknown.
  int hbm(int gpu) const {
    return gpu >= 0 && gpu < static_cast<int>(hbm_.size()) ? hbm_[static_cast<std::size_t>(gpu)] : -1;
  }

 private:
  // The changed flows' owners, in the solver's order (which orders the events they schedule).
  void report() {
    if (changed_.empty()) return;
    scratch_.clear();
    scratch_.swap(changed_);
    for (int f : scratch_) {
      if (!flows_.flow(f).active) continue;
      owner_[static_cast<std::size_t>(f)]->rate_changed(f);
    }
  }

  FlowNetwork flows_;
  std::vector<int> hbm_;
  std::vector<FlowOwner*> owner_;  // per flow id (ids are reused once a flow is removed)
  std::vector<int> changed_, scratch_;
};

}  // namespace overlap::sim
