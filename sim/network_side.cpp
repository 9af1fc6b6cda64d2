// The flow-level network side of the engine (network_api.hpp): fabric routes, max-min shared flows
// and the collectives that run on them.
//
// Every transfer crosses its route's links and the HBM it reads at the source and writes at the
// destination, as flows on the bandwidth the GPU side's GEMM operand traffic also loads
// (shared_bandwidth.hpp), so copies, collectives, memory kernels and GEMMs all contend for the same
// resources.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/network_api.hpp"
#include "sim/shared_bandwidth.hpp"

namespace overlap::sim {

class NetworkSide final : public NetworkApi, public FlowOwner {
 public:
  explicit NetworkSide(const NetworkEnv& env);

  void transfer(const TransferRequest& request, NetToken done) override;
  void stream_memory(const MemoryStreamRequest& request, NetToken done) override;
  void after(Ps delay_ps, NetToken done) override;
  Ps now() const override { return now_; }

  // Collectives wait for all their members (curve fidelity) or match their phases' sends and
  // receives (steps fidelity).
  void collective(const CollectiveRequest& request, NetToken done) override;

  void on_event(const Event& e) override;
  // A transfer's share of its links changed: its end moves.
  void rate_changed(int flow) override;

  // Diagnostics for a stalled run.
  bool waiting_in_rendezvous(NetToken member) const override;

 private:
  enum class Kind : std::uint8_t { copy, phase, switch_leg, memory, curve };
  struct Transfer {
    Kind kind;
    NetToken op;        // the caller's token: copy / memory; switch leg and curve: the member; phase: the sender
    NetToken receiver;  // phase: the receiving member
    int src, dst;   // GPUs (kSwitchPeer for a switch leg's far end)
    Bytes bytes;
    LinkList links;
    double cap;     // bytes/ps
    double service; // ps at cap
    Ps start_ps;
    std::int32_t collective;  // curve: index into curves_
  };
  struct CurveRun {
    std::vector<NetToken> members;
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
  // A collective member: its request and, at steps fidelity, where it is.
  struct Member {
    CollectiveRequest request;
    std::int32_t phase = 0;
    std::int32_t outstanding = 0;
  };
  enum TimerKind : std::int64_t { kClientTimer = 0, kPhaseEnd = 1, kCurveDone = 2 };

  LinkList endpoint_links(int src, int dst, int reduce_extra) const;
  LinkList outside_links(int src, int dst, int reduce_extra, bool src_simulated) const;
  double wire_rate(int src, int dst, Bytes bytes, double service, std::optional<Transport> t, int ctas) const;
  void start_transfer(Transfer t, Ps latency_ps);
  void join(std::int32_t idx);
  void transfer_done(std::int32_t idx);
  void start_curve(std::int64_t collective);
  void enter_phase(NetToken member);
  void start_phase_transfer(NetToken sender, NetToken receiver, int src, int dst, Bytes bytes, bool reduce);
  void start_switch_leg(NetToken member, bool up, Bytes bytes);
  void phase_leg_done(NetToken member);
  void check_bytes(NetToken sender, NetToken receiver, Bytes sent, Bytes expected) const;
  Member& member(NetToken t) { return members_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(t)])]; }
  const Member& member(NetToken t) const { return members_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(t)])]; }

  EventQueue& queue_;
  const Ps& now_;
  NetworkClient& client_;
  const Fabric& fabric_;
  SharedBandwidth& bandwidth_;
  std::vector<Member> members_;
  std::vector<std::int32_t> slot_;  // token -> index into members_ (-1: not a collective member)
  std::vector<Transfer> transfers_;
  std::vector<std::int32_t> free_transfers_;
  std::vector<std::int32_t> flow_transfer_;  // flow id -> transfer index, for the flows this side added
  std::unordered_map<std::int64_t, std::vector<NetToken>> rendezvous_;
  std::vector<CurveRun> curves_;
  // Posted and not yet matched, oldest first: one entry almost always (a deque allocated two blocks
  // for it), more only when a rank runs ahead by a whole phase.
  using Posted = boost::container::small_vector<std::pair<NetToken, Bytes>, 2>;
  std::unordered_map<MatchKey, Posted, MatchKeyHash> posted_sends_, posted_recvs_;
  // start_curve's scratch: per link, the collective's load and whether a leg has touched it yet.
  std::vector<double> curve_load_;
  std::vector<char> curve_touched_;
  std::vector<int> curve_links_;
};

namespace {

// NCCL reduces what arrives inside its copy loop: besides the write of the received bytes into its
// FIFO, the receiver reads them back and reads its own contribution (Phase::reduce); the sum goes on
// to the next hop, which counts as that hop's send.
constexpr int kReduceExtraHbm = 2;

}  // namespace

NetworkSide::NetworkSide(const NetworkEnv& env)
    : queue_(env.queue), now_(env.now), client_(env.client), fabric_(env.node.fabric), bandwidth_(env.bandwidth) {}

LinkList NetworkSide::endpoint_links(int src, int dst, int reduce_extra) const {
  LinkList links;
  if (src != dst) {
    const std::vector<int>& route = fabric_.route(src, dst);
    links.assign(route.begin(), route.end());
  }
  const int hs = fabric_.hbm_link(src), hd = fabric_.hbm_link(dst);
  if (hs >= 0) links.push_back(hs);  // read at the source
  if (hd >= 0)
    for (int i = 0; i <= reduce_extra; ++i) links.push_back(hd);  // written (and reduced) at the destination
  return links;
}

// A leg between a simulated GPU and one outside the graph loads the route and only the simulated
// GPU's HBM: the outside GPU's memory is its own members' business, which the symmetric legs of
// the simulated GPUs already stand for.
LinkList NetworkSide::outside_links(int src, int dst, int reduce_extra, bool src_simulated) const {
  if (src >= fabric_.num_gpus() || dst >= fabric_.num_gpus())
    throw ResourceError(fmt::format("a collective member is GPU {}, but the fabric has {} GPUs",
                                            std::max(src, dst), fabric_.num_gpus()));
  const std::vector<int>& route = fabric_.route(src, dst);
  LinkList links(route.begin(), route.end());
  const int h = fabric_.hbm_link(src_simulated ? src : dst);
  if (h >= 0)
    for (int i = 0; i <= (src_simulated ? 0 : reduce_extra); ++i) links.push_back(h);
  return links;
}

// ---- transfers, memory streams and delays ----

void NetworkSide::after(Ps delay_ps, NetToken done) {
  queue_.push(checked_add(now_, delay_ps), EventType::net_timer, done, kClientTimer);
}

void NetworkSide::stream_memory(const MemoryStreamRequest& r, NetToken done) {
  const int hbm = fabric_.hbm_link(r.gpu);
  if (hbm < 0) {  // a node without a memory model
    after(0, done);
    return;
  }
  double capacity = fabric_.links()[static_cast<std::size_t>(hbm)].capacity_bytes_per_ps;
  if (r.max_bytes_per_ps > 0) capacity = std::min(capacity, r.max_bytes_per_ps);
  const double service = std::ceil(static_cast<double>(r.bytes) / capacity);
  // The kernel's ramp and drain pass as latency: they take no HBM share.
  start_transfer(Transfer{Kind::memory, done, -1, r.gpu, r.gpu, r.bytes, LinkList{hbm},
                          static_cast<double>(r.bytes) / service, service, now_, -1},
                 r.latency_ps);
}

void NetworkSide::transfer(const TransferRequest& r, NetToken done) {
  const Ps total = fabric_.isolated_ps(r.src_gpu, r.dst_gpu, r.bytes, r.transport, r.ctas);
  const Ps latency = fabric_.latency_part_ps(r.src_gpu, r.dst_gpu, r.bytes, r.transport, r.ctas);
  const double service = static_cast<double>(std::max<Ps>(1, total - latency));
  start_transfer(Transfer{Kind::copy, done, -1, r.src_gpu, r.dst_gpu, r.bytes, endpoint_links(r.src_gpu, r.dst_gpu, 0),
                          wire_rate(r.src_gpu, r.dst_gpu, r.bytes, service, r.transport, r.ctas), service, now_, -1},
                 latency);
}

// ---- collectives ----

void NetworkSide::collective(const CollectiveRequest& r, NetToken done) {
  if (static_cast<int>(slot_.size()) <= done) slot_.resize(static_cast<std::size_t>(done) + 1, -1);
  slot_[static_cast<std::size_t>(done)] = static_cast<std::int32_t>(members_.size());
  members_.push_back(Member{r, 0, 0});
  if (!r.phases.empty()) {
    enter_phase(done);
    return;
  }
  // Curve fidelity: a collective runs once every member's kernel is resident (a collective of one
  // simulated member, whose others are outside the graph, at once).
  auto& arrived = rendezvous_[r.group];
  arrived.push_back(done);
  if (static_cast<int>(arrived.size()) == r.members) start_curve(r.group);
}

// The rate a transfer occupies its links at. A mechanism that reaches only a fraction of the line rate
// (a protocol's efficiency) loses the rest to its own overhead on the wire, so it occupies the link
// at the line rate while its payload moves more slowly: two such transfers through one port share
// the line rate, and together move what one would (the port's busbw), not twice it. A calibrated
// curve's rate and an SM copy held back by its CTAs (not by the wire) occupy only what they move.
double NetworkSide::wire_rate(int src, int dst, Bytes bytes, double service, std::optional<Transport> t,
                              int ctas) const {
  const double payload = static_cast<double>(bytes) / service;
  if (t && fabric_.has_curve(src, dst, *t)) return payload;
  if (t && *t == Transport::sm_copy && fabric_.cta_limited(src, dst, *t, ctas)) return payload;
  return std::max(payload, fabric_.narrowest_bytes_per_ps(src, dst));
}

// ---- curve-fidelity collectives: the collective's bytes as flows on the links they use ----

void NetworkSide::start_curve(std::int64_t collective) {
  CurveRun run;
  run.members = std::move(rendezvous_[collective]);
  rendezvous_.erase(collective);
  const CollectiveRequest& first = member(run.members.front()).request;
  // At least a picosecond of moving bytes, so a collective timed by a fixed figure (a measured tau_c
  // no longer than its latency) still shows its bytes on the links and in the byte accounting.
  const Ps bandwidth_ps = std::max<Ps>(1, first.duration_ps - first.curve_latency_ps);
  run.latency_ps = std::max<Ps>(0, first.duration_ps - bandwidth_ps);
  std::vector<Transfer> legs;
  {
    for (NetToken m : run.members) {
      const CollectiveRequest& o = member(m).request;
      const int r = o.gpu;
      for (const PeerBytes& pb : o.sends) {
        LinkList links;
        if (pb.peer == kSwitchPeer) {
          links = {fabric_.switch_links(r).first};
          if (fabric_.hbm_link(r) >= 0) links.push_back(fabric_.hbm_link(r));
        } else {
          links = endpoint_links(r, pb.peer, o.reduces ? kReduceExtraHbm : 0);
        }
        legs.push_back(Transfer{Kind::curve, m, -1, r, pb.peer, pb.bytes, std::move(links), 0, 0, now_, 0});
      }
      // Members outside the graph: the sends load the route to them and this GPU's HBM (read); the
      // mirrored receives the route from them and this GPU's HBM (written, and reduced).
      const int extra = o.reduces ? kReduceExtraHbm : 0;
      for (const PeerBytes& pb : o.outside_sends)
        legs.push_back(Transfer{Kind::curve, m, -1, r, pb.peer, pb.bytes, outside_links(r, pb.peer, extra, true), 0, 0,
                                now_, 0});
      for (const PeerBytes& pb : o.outside_recvs)
        legs.push_back(Transfer{Kind::curve, m, -1, pb.peer, r, pb.bytes, outside_links(pb.peer, r, extra, false), 0,
                                0, now_, 0});
      if (o.from_switch > 0) {
        LinkList links = {fabric_.switch_links(r).second};
        if (fabric_.hbm_link(r) >= 0) links.push_back(fabric_.hbm_link(r));
        legs.push_back(Transfer{Kind::curve, m, -1, kSwitchPeer, r, o.from_switch, std::move(links), 0, 0, now_, 0});
      }
    }
  }
  if (legs.empty()) {
    const Ps end = checked_add(now_, first.duration_ps);
    curves_.push_back(std::move(run));
    queue_.push(end, EventType::net_timer, static_cast<std::int32_t>(curves_.size() - 1), kCurveDone);
    return;
  }
  // Each leg moves its bytes in the collective's bandwidth time. On the wire the collective fills its
  // busiest network link, as NCCL's protocol overhead does (wire_rate): the legs' rates are scaled
  // alike so the busiest link is exactly full, which also keeps any link from being overfilled by
  // the collective alone, so it takes exactly its curve time on an idle fabric.
  // Per link, the legs' rates summed in leg order; the maxima below do not depend on the links' order.
  if (curve_load_.empty()) {
    curve_load_.assign(fabric_.links().size(), 0.0);
    curve_touched_.assign(fabric_.links().size(), 0);
  }
  curve_links_.clear();
  for (Transfer& t : legs) {
    t.service = static_cast<double>(bandwidth_ps);
    t.cap = static_cast<double>(t.bytes) / t.service;
    for (int l : t.links) {
      const auto i = static_cast<std::size_t>(l);
      if (!curve_touched_[i]) {
        curve_touched_[i] = 1;
        curve_links_.push_back(l);
      }
      curve_load_[i] += t.cap;
    }
  }
  double over = 0.0, over_all = 0.0;
  for (int l : curve_links_) {
    const auto i = static_cast<std::size_t>(l);
    const Link& link = fabric_.links()[i];
    const double ratio = curve_load_[i] / link.capacity_bytes_per_ps;
    over_all = std::max(over_all, ratio);
    if (link.from != link.to) over = std::max(over, ratio);  // HBM is not the wire
    curve_load_[i] = 0.0;
    curve_touched_[i] = 0;
  }
  if (over <= 0 || over_all / over > 1) over = over_all;  // never overfill an HBM either
  run.outstanding = static_cast<int>(legs.size());
  curves_.push_back(std::move(run));
  const auto index = static_cast<std::int32_t>(curves_.size() - 1);
  for (Transfer& t : legs) {
    if (over > 0) t.cap /= over;
    t.collective = index;
    start_transfer(std::move(t), 0);
  }
}

// ---- steps fidelity and point-to-point phases ----

void NetworkSide::enter_phase(NetToken id) {
  Member& s = member(id);
  const CollectiveRequest& o = s.request;
  if (s.phase == static_cast<std::int32_t>(o.phases.size())) {
    after(o.duration_ps, id);
    return;
  }
  const Phase& ph = o.phases[static_cast<std::size_t>(s.phase)];
  const int me = o.gpu;
  s.outstanding = static_cast<std::int32_t>(ph.sends.size() + ph.recvs.size());
  if (s.outstanding == 0) {
    queue_.push(checked_add(now_, checked_add(ph.compute_ps, ph.latency_ps)), EventType::net_timer, id, kPhaseEnd);
    return;
  }
  // Sends and receives rendezvous by (collective, phase, src, dst); the transfer starts when both
  // sides have entered the phase (per-step synchronisation, design.md "Collectives"). Legs to and
  // from the switch need no partner.
  for (const PeerBytes& pb : ph.sends) {
    if (pb.peer == kSwitchPeer) {
      start_switch_leg(id, true, pb.bytes);
      continue;
    }
    MatchKey key{o.group, s.phase, me, pb.peer};
    auto it = posted_recvs_.find(key);
    if (it != posted_recvs_.end() && !it->second.empty()) {
      auto [receiver, bytes] = it->second.front();
      it->second.erase(it->second.begin());
      if (it->second.empty()) posted_recvs_.erase(it);
      check_bytes(id, receiver, pb.bytes, bytes);
      const Member& rs = member(receiver);
      start_phase_transfer(id, receiver, me, pb.peer, pb.bytes, rs.request.phases[static_cast<std::size_t>(rs.phase)].reduce);
    } else {
      posted_sends_[key].push_back({id, pb.bytes});
    }
  }
  for (const PeerBytes& pb : ph.recvs) {
    if (pb.peer == kSwitchPeer) {
      start_switch_leg(id, false, pb.bytes);
      continue;
    }
    MatchKey key{o.group, s.phase, pb.peer, me};
    auto it = posted_sends_.find(key);
    if (it != posted_sends_.end() && !it->second.empty()) {
      auto [sender, bytes] = it->second.front();
      it->second.erase(it->second.begin());
      if (it->second.empty()) posted_sends_.erase(it);
      check_bytes(sender, id, bytes, pb.bytes);
      start_phase_transfer(sender, id, pb.peer, me, bytes, ph.reduce);
    } else {
      posted_recvs_[key].push_back({id, pb.bytes});
    }
  }
}

void NetworkSide::check_bytes(NetToken sender, NetToken receiver, Bytes sent, Bytes expected) const {
  if (sent != expected)
    throw SimError(fmt::format("'{}' sends {} bytes but '{}' expects {}", member(sender).request.name, sent,
                               member(receiver).request.name, expected));
}

void NetworkSide::start_phase_transfer(NetToken sender, NetToken receiver, int src, int dst, Bytes bytes, bool reduce) {
  const CollectiveRequest& o = member(sender).request;
  Ps latency = 0;
  double service = 0;
  if (o.transport) {
    // A point-to-point transport (CommFuse's NCCL send/recv, an SM copy kernel, a one-sided put):
    // the fabric's one answer for these bytes on this path.
    const int ctas = *o.transport == Transport::sm_copy ? o.ctas : 0;
    const Ps total = fabric_.isolated_ps(src, dst, bytes, *o.transport, ctas);
    latency = fabric_.latency_part_ps(src, dst, bytes, *o.transport, ctas);
    service = static_cast<double>(std::max<Ps>(1, total - latency));
    start_transfer(Transfer{Kind::phase, sender, receiver, src, dst, bytes,
                            endpoint_links(src, dst, reduce ? kReduceExtraHbm : 0),
                            wire_rate(src, dst, bytes, service, o.transport, ctas), service, now_, -1},
                   latency);
    return;
  } else {
    // An NCCL collective step: the library's busbw falls short of the links' (link_efficiency), and
    // its per-step latency (the phase's) covers the wire's.
    service = static_cast<double>(std::max<Ps>(1, fabric_.wire_ps(src, dst, bytes, o.link_efficiency)));
    latency = o.latency_covers_wire ? 0 : fabric_.route_latency_ps(src, dst);
  }
  start_transfer(Transfer{Kind::phase, sender, receiver, src, dst, bytes,
                          endpoint_links(src, dst, reduce ? kReduceExtraHbm : 0),
                          wire_rate(src, dst, bytes, service, std::nullopt, 0), service, now_, -1},
                 latency);
}

void NetworkSide::start_switch_leg(NetToken id, bool up, Bytes bytes) {
  const CollectiveRequest& o = member(id).request;
  const int r = o.gpu;
  const auto [up_link, down_link] = fabric_.switch_links(r);
  const int link = up ? up_link : down_link;
  const double line = fabric_.links()[static_cast<std::size_t>(link)].capacity_bytes_per_ps;
  const double service = std::max(1.0, std::ceil(static_cast<double>(bytes) / (line * o.link_efficiency)));
  LinkList links = {link};
  if (fabric_.hbm_link(r) >= 0) links.push_back(fabric_.hbm_link(r));
  // On the wire at the line rate, its payload at the protocol's (wire_rate).
  start_transfer(Transfer{Kind::switch_leg, id, -1, up ? r : kSwitchPeer, up ? kSwitchPeer : r, bytes,
                          std::move(links), std::max(line, static_cast<double>(bytes) / service), service, now_, -1},
                 0);
}

void NetworkSide::phase_leg_done(NetToken id) {
  Member& s = member(id);
  if (--s.outstanding > 0) return;
  const Phase& ph = s.request.phases[static_cast<std::size_t>(s.phase)];
  queue_.push(checked_add(now_, checked_add(ph.compute_ps, ph.latency_ps)), EventType::net_timer, id, kPhaseEnd);
}

// ---- flows ----

void NetworkSide::start_transfer(Transfer t, Ps latency_ps) {
  std::int32_t idx;
  if (!free_transfers_.empty()) {
    idx = free_transfers_.back();
    free_transfers_.pop_back();
    transfers_[static_cast<std::size_t>(idx)] = std::move(t);
  } else {
    transfers_.push_back(std::move(t));
    idx = static_cast<std::int32_t>(transfers_.size() - 1);
  }
  if (latency_ps > 0) queue_.push(checked_add(now_, latency_ps), EventType::flow_latency_end, idx, 0);
  else join(idx);
}

void NetworkSide::join(std::int32_t idx) {
  Transfer& t = transfers_[static_cast<std::size_t>(idx)];
  t.start_ps = std::min(t.start_ps, now_);
  const int flow = bandwidth_.add(*this, now_, std::span<const int>(t.links.data(), t.links.size()), t.cap, t.service);
  if (static_cast<int>(flow_transfer_.size()) <= flow) flow_transfer_.resize(static_cast<std::size_t>(flow) + 1, -1);
  flow_transfer_[static_cast<std::size_t>(flow)] = idx;
}

void NetworkSide::rate_changed(int f) {
  const FlowNetwork& flows = bandwidth_.flows();
  queue_.push(flows.finish_ps(f), EventType::flow_end, f, static_cast<std::int64_t>(flows.flow(f).version));
}

void NetworkSide::transfer_done(std::int32_t idx) {
  // Copy out what the completion needs: the client may start transfers that reuse the slot.
  Transfer t = std::move(transfers_[static_cast<std::size_t>(idx)]);
  free_transfers_.push_back(idx);
  client_.moved(TransferReport{t.op, t.kind == Kind::phase ? t.receiver : -1, t.src, t.dst, t.bytes, t.start_ps,
                               t.kind == Kind::memory, std::move(t.links)});
  switch (t.kind) {
    case Kind::memory:
    case Kind::copy: client_.network_done(t.op); break;
    case Kind::phase:
      phase_leg_done(t.op);
      phase_leg_done(t.receiver);
      break;
    case Kind::switch_leg: phase_leg_done(t.op); break;
    case Kind::curve: {
      CurveRun& run = curves_[static_cast<std::size_t>(t.collective)];
      if (--run.outstanding == 0)
        queue_.push(checked_add(now_, run.latency_ps), EventType::net_timer, t.collective, kCurveDone);
      break;
    }
  }
}

// ---- events ----

void NetworkSide::on_event(const Event& e) {
  switch (e.type) {
    case EventType::flow_latency_end: join(e.a); break;
    case EventType::flow_end: {
      const Flow& f = bandwidth_.flows().flow(e.a);
      if (!f.active || f.version != static_cast<std::uint32_t>(e.b)) return;  // stale
      const std::int32_t idx = flow_transfer_[static_cast<std::size_t>(e.a)];
      bandwidth_.remove(now_, e.a);
      transfer_done(idx);
      break;
    }
    case EventType::net_timer:
      switch (e.b) {
        case kClientTimer: client_.network_done(e.a); break;
        case kPhaseEnd:
          ++member(e.a).phase;
          enter_phase(e.a);
          break;
        case kCurveDone:
          for (NetToken m : curves_[static_cast<std::size_t>(e.a)].members) client_.network_done(m);
          break;
        default: break;
      }
      break;
    default: break;
  }
}

bool NetworkSide::waiting_in_rendezvous(NetToken op) const {
  if (op < 0 || op >= static_cast<NetToken>(slot_.size()) || slot_[static_cast<std::size_t>(op)] < 0) return false;
  const auto it = rendezvous_.find(member(op).request.group);
  return it != rendezvous_.end() && std::find(it->second.begin(), it->second.end(), op) != it->second.end();
}

std::unique_ptr<NetworkApi> make_flow_network_side(const NetworkEnv& env) { return std::make_unique<NetworkSide>(env); }

}  // namespace overlap::sim
