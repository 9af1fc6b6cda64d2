// A second network backend behind NetworkApi (network_api.hpp): a table of measured transfer times,
// bytes -> ps with linear interpolation between the points, no link sharing. It is the proof that a
// backend plugs in through the verbs alone (transfer, collective, after, now, and the completion
// handed back to NetworkClient) without a change to the GPU side or to any scheme (style.md,
// ASTRA-sim's AstraNetworkAPI).
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "node_fixtures.hpp"
#include "sim/network_api.hpp"

namespace overlap::sim::test {
namespace {

constexpr Ps kUs = 1'000'000;
constexpr Bytes kMB = 1'000'000;

class TableNetwork final : public NetworkApi {
 public:
  // (bytes, ps) points in increasing bytes; sizes past the last point extend its last segment.
  TableNetwork(const NetworkEnv& env, std::vector<std::pair<Bytes, Ps>> points)
      : queue_(env.queue), now_(env.now), client_(env.client), points_(std::move(points)) {}

  Ps time_ps(Bytes bytes) const {
    std::size_t hi = 1;
    while (hi + 1 < points_.size() && points_[hi].first < bytes) ++hi;
    const auto [b0, t0] = points_[hi - 1];
    const auto [b1, t1] = points_[hi];
    return t0 + (t1 - t0) * (bytes - b0) / (b1 - b0);
  }

  void transfer(const TransferRequest& r, NetToken done) override {
    pending_[done] = TransferReport{done, -1, r.src_gpu, r.dst_gpu, r.bytes, now_, false, {}};
    queue_.push(now_ + time_ps(r.bytes), EventType::net_timer, done, kMoved);
  }
  void stream_memory(const MemoryStreamRequest&, NetToken) override {
    throw SimError("the table backend models no HBM");
  }
  void after(Ps delay_ps, NetToken done) override { queue_.push(now_ + delay_ps, EventType::net_timer, done, kTimer); }
  Ps now() const override { return now_; }
  // A collective starts once all its members have asked; then each member runs its phases one after
  // another, a phase taking the table's time for the largest of its sends and receives, plus its
  // compute and latency; then its duration_ps. At curve fidelity (no phases) only duration_ps.
  void collective(const CollectiveRequest& r, NetToken done) override {
    std::vector<Member>& group = groups_[r.group];
    group.push_back(Member{r, done, 0, now_});
    if (static_cast<int>(group.size()) < r.members) return;
    for (const Member& m : group) {
      members_[m.token] = m;
      next_phase(m.token);
    }
    groups_.erase(r.group);
  }

  void on_event(const Event& e) override {
    if (e.b == kPhase) {
      Member& m = members_.at(e.a);
      for (const PeerBytes& send : m.request.phases[static_cast<std::size_t>(m.phase)].sends)
        client_.moved(TransferReport{m.token, -1, m.request.gpu, send.peer, send.bytes, m.phase_start_ps, false, {}});
      ++m.phase;
      next_phase(m.token);
      return;
    }
    if (e.b == kMoved) {
      const auto it = pending_.find(e.a);
      TransferReport r = std::move(it->second);
      pending_.erase(it);
      client_.moved(std::move(r));
    }
    client_.network_done(e.a);
  }
  bool waiting_in_rendezvous(NetToken member) const override {
    for (const auto& [group, members] : groups_)
      for (const Member& m : members)
        if (m.token == member) return true;
    return false;
  }

 private:
  enum : std::int64_t { kTimer = 0, kMoved = 1, kPhase = 2 };
  struct Member {
    CollectiveRequest request;
    NetToken token = -1;
    std::size_t phase = 0;
    Ps phase_start_ps = 0;
  };

  void next_phase(NetToken token) {
    Member& m = members_.at(token);
    m.phase_start_ps = now_;
    if (m.phase == m.request.phases.size()) {
      after(m.request.duration_ps, token);
      return;
    }
    const Phase& ph = m.request.phases[m.phase];
    Bytes largest = 0;
    for (const auto* legs : {&ph.sends, &ph.recvs})
      for (const PeerBytes& leg : *legs) largest = std::max(largest, leg.bytes);
    queue_.push(now_ + (largest > 0 ? time_ps(largest) : 0) + ph.compute_ps + ph.latency_ps, EventType::net_timer, token,
                kPhase);
  }

  EventQueue& queue_;
  const Ps& now_;
  NetworkClient& client_;
  std::vector<std::pair<Bytes, Ps>> points_;
  std::unordered_map<NetToken, TransferReport> pending_;
  std::unordered_map<std::int64_t, std::vector<Member>> groups_;  // collectives still gathering members
  std::unordered_map<NetToken, Member> members_;                  // members running
};

// Measured-looking points: 2 us of latency, then 1 MB in 10 us, then 3 MB more in 18 us.
const std::vector<std::pair<Bytes, Ps>> kTable = {{0, 2 * kUs}, {kMB, 12 * kUs}, {4 * kMB, 30 * kUs}};

NetworkFactory table_backend() {
  return [](const NetworkEnv& env) { return std::make_unique<TableNetwork>(env, kTable); };
}

}  // namespace

TEST_CASE("a table backend times a two-rank graph's copies by interpolation, through the verbs alone",
          "[engine][network_backend]") {
  // Rank 0 computes (4 tiles on 8 SMs: one wave, 1 us), copies 2.5 MB to rank 1, which then computes
  // (2 tiles: 1 us). 2.5 MB lies halfway between the table's 1 MB (12 us) and 4 MB (30 us) points:
  // 12 + 18 / 2 = 21 us, exact in integer ps. No launch gaps on this node, so rank 1 ends at
  // 1 + 21 + 1 = 23 us exactly. A second copy of 1 MB on its own stream, started at 0, takes the
  // table's 12 us with no share taken from the first: the table backend has no links to share.
  TaskGraph g(2);
  const StreamId c0 = g.add_stream(0, "compute0");
  const StreamId x0 = g.add_stream(0, "copy0");
  const StreamId y0 = g.add_stream(0, "copy1");
  const StreamId c1 = g.add_stream(1, "compute1");
  const OpId gemm0 = g.add(tiled("gemm0", c0, 4));
  Op send = copy("send", x0, 0, 1, 5 * kMB / 2);
  send.deps = {gemm0};
  const OpId sent = g.add(std::move(send));
  const OpId side = g.add(copy("side", y0, 0, 1, kMB));
  Op after_copy = tiled("gemm1", c1, 2);
  after_copy.deps = {sent};
  const OpId gemm1 = g.add(std::move(after_copy));

  const Timeline tl = run_with_network(g, switch_node(2, 8, 2), {}, table_backend());
  CHECK(tl.ops[gemm0].end_ps == kUs);
  CHECK(tl.ops[sent].start_ps == kUs);
  CHECK(tl.ops[sent].end_ps == 22 * kUs);
  CHECK(tl.ops[side].end_ps == 12 * kUs);
  CHECK(tl.ops[gemm1].end_ps == 23 * kUs);
  CHECK(tl.makespan_ps == 23 * kUs);
  // The engine core records what the backend reports: both copies, in the order they arrived, with
  // no links (a table has none), so no fabric link carries a byte.
  REQUIRE(tl.transfers.size() == 2);
  CHECK(tl.transfers[0].op == side);
  CHECK(tl.transfers[0].end_ps == 12 * kUs);
  CHECK(tl.transfers[1].op == sent);
  CHECK(tl.transfers[1].start_ps == kUs);
  CHECK(tl.transfers[1].bytes == 5 * kMB / 2);
  for (double b : tl.link_bytes) CHECK(b == 0.0);

}

TEST_CASE("the same copy takes the table's time on the table backend and the fabric's on the flow backend",
          "[engine][network_backend]") {
  // The backend, not the GPU side, decides how long bytes take: 2.5 MB is 21 us by the table
  // (halfway from 12 to 30 us) and 25 us over the flow backend's 100 GB/s ports (no latency; HBM
  // at 1000 GB/s is not the narrowest), both exact in integer ps.
  TaskGraph g(2);
  const OpId c = g.add(copy("c", g.add_stream(0, "copy"), 0, 1, 5 * kMB / 2));
  CHECK(run_with_network(g, switch_node(2, 8, 2), {}, table_backend()).ops[c].end_ps == 21 * kUs);
  CHECK(run(g, switch_node(2, 8, 2)).ops[c].end_ps == 25 * kUs);
}

namespace {

// A two-rank ring all-reduce of 5 MB at steps fidelity, built by hand: each member holds one SM and
// runs two phases, reduce-scatter (2.5 MB to its peer and from it, reduced) then all-gather (2.5 MB
// each way). Rank 1 computes for 1 us first (2 tiles on 8 SMs), so rank 0's member waits for it.
struct AllReduce {
  TaskGraph g{2};
  OpId ar0 = kNoOp, ar1 = kNoOp, gemm1 = kNoOp;
  AllReduce() {
    const Bytes half = 5 * kMB / 2;
    Op a = comm_kernel("ar0", g.add_stream(0, "comm0"), 1, 0);
    Op b = comm_kernel("ar1", g.add_stream(1, "comm1"), 1, 0);
    a.collective = b.collective = 7;
    a.members = b.members = 2;
    a.phases = {Phase{{{1, half}}, {{1, half}}, 0, 0, true}, Phase{{{1, half}}, {{1, half}}, 0, 0, false}};
    b.phases = {Phase{{{0, half}}, {{0, half}}, 0, 0, true}, Phase{{{0, half}}, {{0, half}}, 0, 0, false}};
    gemm1 = g.add(tiled("gemm1", g.add_stream(1, "compute1"), 2));
    b.deps = {gemm1};
    ar0 = g.add(std::move(a));
    ar1 = g.add(std::move(b));
  }
};

}  // namespace

TEST_CASE("a table backend serves a collective from its request alone: a two-rank all-reduce",
          "[engine][network_backend]") {
  // The members meet at 1 us (rank 1's GEMM), then each phase moves 2.5 MB each way: the table's
  // 21 us (halfway from 12 to 30 us), so both members end at 1 + 21 + 21 = 43 us exactly. Rank 0's
  // member took its SM at 0 and waited: the backend, which saw only the request (group, members,
  // GPU, phases), held it for its peer.
  AllReduce ar;
  const Timeline tl = run_with_network(ar.g, switch_node(2, 8, 2), {}, table_backend());
  CHECK(tl.ops[ar.gemm1].end_ps == kUs);
  CHECK(tl.ops[ar.ar0].start_ps == 0);
  CHECK(tl.ops[ar.ar0].end_ps == 43 * kUs);
  CHECK(tl.ops[ar.ar1].start_ps == kUs);
  CHECK(tl.ops[ar.ar1].end_ps == 43 * kUs);
  // Each member's two sends, as the backend reported them: 2.5 MB to the peer, the second phase
  // starting where the first ended.
  REQUIRE(tl.transfers.size() == 4);
  for (const TransferRecord& t : tl.transfers) {
    CHECK(t.bytes == 5 * kMB / 2);
    CHECK(t.dst_gpu == 1 - t.src_gpu);
    CHECK(t.end_ps - t.start_ps == 21 * kUs);
  }
  CHECK(tl.transfers[3].end_ps == 43 * kUs);
}

TEST_CASE("the same all-reduce takes the fabric's time on the flow backend", "[engine][network_backend]") {
  // Over 100 GB/s ports a phase's 2.5 MB each way take 25 us (each direction has its own port; the
  // HBM at 1000 GB/s carries at most 400 GB/s: a read for the send, a write and two reads for the
  // reduced receive), with no latency on this node: 1 + 25 + 25 = 51 us.
  AllReduce ar;
  const Timeline tl = run(ar.g, switch_node(2, 8, 2));
  CHECK(tl.ops[ar.ar0].end_ps == 51 * kUs);
  CHECK(tl.ops[ar.ar1].end_ps == 51 * kUs);
}

TEST_CASE("a stalled collective on the table backend is named by what the backend holds",
          "[engine][network_backend]") {
  // One member of two: the backend keeps it waiting for its peer, and the engine's stall message
  // says so from waiting_in_rendezvous.
  TaskGraph g(2);
  Op a = comm_kernel("lonely", g.add_stream(0, "comm0"), 1, kUs);
  a.collective = 7;
  a.members = 2;
  g.add(std::move(a));
  CHECK_THROWS_WITH(run_with_network(g, switch_node(2, 8, 2), {}, table_backend()),
                    Catch::Contains("collective 7 has only some of its 2 members"));
}

TEST_CASE("a backend's refusal reaches the caller as a SimError", "[engine][network_backend]") {
  // A memory kernel streams through HBM, which the table backend does not model: it says so.
  TaskGraph g(1);
  Op m;
  m.name = "stream";
  m.kind = OpKind::memory;
  m.stream = g.add_stream(0, "mem");
  m.bytes = kMB;
  g.add(std::move(m));
  CHECK_THROWS_AS(run_with_network(g, switch_node(1, 8, 2), {}, table_backend()), SimError);
}

}  // namespace overlap::sim::test
