#pragma once
// The network side of the engine (engine.hpp): fabric routes, max-min shared flows, HBM, and the
// collectives that run on them. The rest of the engine sees only this interface (the shape of
// ASTRA-sim's AstraNetworkAPI, style.md): start the work of a kernel that holds its SMs, start a
// copy, keep a running GEMM's HBM demand, and hear back through NetworkListener.
//
// Every transfer crosses its route's links and the HBM it reads at the source and writes at the
// destination, so copies, collectives, memory kernels and GEMM operand traffic all contend for the
// same resources (issue 9, items 3 and 4).
#include <cstdint>
#include <deque>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/sim_context.hpp"

namespace overlap::sim {

class NetworkSide {
 public:
  NetworkSide(SimContext& ctx, NetworkListener& listener);

  // A gang kernel (comm_kernel or memory) holds its SMs: run its work. Collectives wait for all their
  // members (curve fidelity) or match their phases' sends and receives (steps fidelity).
  void start_gang_work(OpId op);
  // A copy op got a copy engine: move its bytes.
  void start_copy(OpId op);

  // A running kernel's HBM traffic at full speed (bytes/ps): an endless flow on its GPU's HBM whose
  // multiplier tells how much of that it gets.
  int add_demand(int rank, double bytes_per_ps);
  void set_demand(int demand, double bytes_per_ps);
  void remove_demand(int demand);
  double demand_multiplier(int demand) const { return flows_.multiplier(demand_flow_[static_cast<std::size_t>(demand)]); }

  void on_event(const Event& e);
  std::uint64_t reshares() const { return flows_.reshares(); }

  // Diagnostics for a stalled run.
  bool waiting_in_rendezvous(OpId op) const;

 private:
  enum class Kind : std::uint8_t { copy, phase, switch_leg, memory, curve };
  struct Transfer {
    Kind kind;
    OpId op;        // copy / memory / switch leg: the op; phase: the sender; curve: a member
    OpId receiver;  // phase: the receiving op
    int src, dst;   // GPUs (kSwitchPeer for a switch leg's far end)
    Bytes bytes;
    std::vector<int> links;
    double cap;     // bytes/ps
    double service; // ps at cap
    Ps start_ps;
    std::int32_t collective;  // curve: index into curves_
  };
  struct CurveRun {
    std::vector<OpId> members;
    int outstanding = 0;
    Ps latency_ps = 0;
  };
  using MatchKey = std::tuple<std::int64_t, std::int32_t, std::int32_t, std::int32_t>;  // collective, phase, src, dst
  struct MatchKeyHash {
    std::size_t operator()(const MatchKey& k) const {
      std::size_t h = std::hash<std::int64_t>()(std::get<0>(k));
      for (std::int32_t v : {std::get<1>(k), std::get<2>(k), std::get<3>(k)})
        h = h * 1000003u ^ std::hash<std::int32_t>()(v);
      return h;
    }
  };
  struct OpNetState {
    std::int32_t phase = 0;
    std::int32_t outstanding = 0;
  };
  enum TimerKind : std::int64_t { kGangDone = 0, kPhaseEnd = 1, kCurveDone = 2 };

  std::vector<int> endpoint_links(int src, int dst, int reduce_extra) const;
  double wire_rate(int src, int dst, Bytes bytes, double service, std::optional<Transport> t, int ctas) const;
  void start_transfer(Transfer t, Ps latency_ps);
  void join(std::int32_t idx);
  void apply_changes();
  void transfer_done(std::int32_t idx);
  void start_curve(std::int64_t collective);
  void enter_phase(OpId op);
  void start_phase_transfer(OpId sender, OpId receiver, int src, int dst, Bytes bytes, bool reduce);
  void start_switch_leg(OpId op, bool up, Bytes bytes);
  void phase_leg_done(OpId op);
  void check_bytes(OpId sender, OpId receiver, Bytes sent, Bytes expected) const;

  SimContext& ctx_;
  NetworkListener& listener_;
  const Fabric& fabric_;
  FlowNetwork flows_;
  std::vector<OpNetState> st_;
  std::vector<Transfer> transfers_;
  std::vector<std::int32_t> free_transfers_;
  std::vector<std::int32_t> flow_transfer_;  // flow id -> transfer index (-1: a demand flow)
  std::vector<int> demand_flow_;             // demand id -> flow id
  std::vector<int> demand_of_flow_;          // flow id -> demand id (-1: none)
  std::vector<int> changed_;
  std::unordered_map<std::int64_t, std::vector<OpId>> rendezvous_;
  std::vector<CurveRun> curves_;
  std::unordered_map<MatchKey, std::deque<std::pair<OpId, Bytes>>, MatchKeyHash> posted_sends_, posted_recvs_;
};

}  // namespace overlap::sim
