#pragma once
// Max-min fair sharing of link bandwidth among concurrent flows (design.md "Fabric"). Each flow has a
// route (link ids; a link may appear more than once, e.g. an HBM a copy reads and writes), a cap (the
// rate its cost model gives it in isolation) and an amount of service left, measured in picoseconds
// at its cap; a demand flow (a running GEMM's operand traffic) never ends by itself. A flow running
// at its cap has multiplier exactly 1, so an isolated transfer finishes exactly when its curve says.
//
// Rates change only where a change can reach (design.md "Scale": TP up to 256 must stay fast): a flow that joins links with room
// for it at its cap, or leaves links none of whose flows it held back (no link it crosses is full),
// changes no other flow; otherwise progressive filling reruns over the flows the change can reach
// (through full links: a link with room holds nobody back), not over the whole network. Flows
// advance lazily: a flow's progress is brought up to date only when its multiplier changes.
#include <cstdint>
#include <span>
#include <vector>

#include "cost_model/units.hpp"

namespace overlap::sim {

struct Flow {
  std::vector<int> links;
  double cap_bytes_per_ps = 0;   // rate in isolation
  double service_left_ps = 0;    // time left at full cap (as of last_update_ps); < 0: endless demand
  double multiplier = 0;         // current rate / cap, in (0, 1]
  Ps last_update_ps = 0;
  std::uint32_t version = 0;     // bumps when the finish time changes (older flow_end events are stale)
  bool active = false;
};

class FlowNetwork {
 public:
  explicit FlowNetwork(std::vector<double> link_capacity_bytes_per_ps);

  // Adds an active flow at `now`. service_ps < 0: an endless demand flow (no finish time).
  // `changed` receives every flow whose multiplier changed, the new one included.
  int add(Ps now_ps, std::span<const int> links, double cap_bytes_per_ps, double service_ps, std::vector<int>& changed);
  void remove(Ps now_ps, int flow, std::vector<int>& changed);
  // A demand flow's cap changes (a GEMM's running CTAs changed).
  void set_cap(Ps now_ps, int flow, double cap_bytes_per_ps, std::vector<int>& changed);

  const Flow& flow(int id) const { return flows_[static_cast<std::size_t>(id)]; }
  double multiplier(int id) const { return flows_[static_cast<std::size_t>(id)].multiplier; }
  // Finish time of an active, finite flow at its current rate (rounded up: never optimistic).
  Ps finish_ps(int id) const;
  // Component reshares run so far (a benchmark counter: how often the fast paths missed).
  std::uint64_t reshares() const { return reshares_; }

 private:
  bool fits(const Flow& f, double extra_rate) const;  // every link has room for extra_rate more
  bool touches_full_link(const Flow& f) const;
  void add_load(const Flow& f, double rate);
  void reshare_from(Ps now_ps, int origin, const std::vector<int>& seed_links, std::vector<int>& changed);
  // The steps of reshare_from, on the set being filled (comp_flows_, held = its stamp):
  void take_stacked_links(std::uint32_t held);  // the flows of the links on stack_ join the set
  void bound_set_links(std::uint32_t held);     // the set's links, their outside load and room
  void fill_set(std::uint32_t held);            // progressive filling: rate_ / capped_ per flow
  bool grow_set(std::uint32_t held);            // stacks the full links whose outside flows move
  void apply_set(Ps now_ps, std::vector<int>& changed);  // the filled rates become the flows'
  void contested(const Flow& f, double extra, std::vector<int>& out) const;
  void set_multiplier(Ps now_ps, int id, double m, std::vector<int>& changed);

  std::vector<double> capacity_;
  std::vector<double> load_;                 // per link: sum of flow rates (x occurrences)
  std::vector<std::vector<int>> on_link_;    // per link: flow ids (one entry per occurrence)
  std::vector<Flow> flows_;
  std::vector<int> free_ids_;
  std::uint64_t reshares_ = 0;
  // Scratch for component search and progressive filling.
  std::vector<std::uint32_t> link_stamp_, flow_stamp_;
  std::uint32_t stamp_ = 0;
  std::vector<int> comp_flows_, bound_links_, stack_;
  std::vector<int> seeds_, full_;  // contested links (add, remove, set_cap)
  std::vector<double> residual_, outside_, rate_;
  std::vector<int> unfixed_;
  std::vector<char> moved_;
  std::vector<int> slot_;     // per flow: its index in the set being filled
  std::vector<int> by_cap_, fixing_;
  std::vector<char> fixed_, capped_;
};

}  // namespace overlap::sim
