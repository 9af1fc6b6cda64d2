// A second network backend behind NetworkApi (network_api.hpp): a table of measured transfer times,
// bytes -> ps with linear interpolation between the points, no link sharing. It is the proof that a
// backend plugs in through the verbs alone (transfer, after, now, and the completion handed back to
// NetworkClient) without a change to the GPU side or to any scheme (style.md, ASTRA-sim's
// AstraNetworkAPI).
#include <catch2/catch.hpp>

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
  void start_collective(OpId) override { throw SimError("the table backend runs no collectives"); }

  // No HBM model: kernels' operand traffic runs at full speed (-1: no demand flow).
  int add_demand(int, double) override { return -1; }
  void set_demand(int, double) override {}
  void remove_demand(int) override {}
  double demand_multiplier(int) const override { return 1.0; }

  void on_event(const Event& e) override {
    if (e.b == kMoved) {
      const auto it = pending_.find(e.a);
      TransferReport r = std::move(it->second);
      pending_.erase(it);
      client_.moved(std::move(r));
    }
    client_.network_done(e.a);
  }
  bool waiting_in_rendezvous(OpId) const override { return false; }

 private:
  enum : std::int64_t { kTimer = 0, kMoved = 1 };
  EventQueue& queue_;
  const Ps& now_;
  NetworkClient& client_;
  std::vector<std::pair<Bytes, Ps>> points_;
  std::unordered_map<NetToken, TransferReport> pending_;
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

TEST_CASE("a backend's refusal reaches the caller as a SimError", "[engine][network_backend]") {
  // A collective needs a backend that runs collectives: the table backend says so.
  TaskGraph g(2);
  Op a = comm_kernel("ar0", g.add_stream(0, "comm0"), 1, kUs);
  Op b = comm_kernel("ar1", g.add_stream(1, "comm1"), 1, kUs);
  a.collective = b.collective = 7;
  a.members = b.members = 2;
  g.add(std::move(a));
  g.add(std::move(b));
  CHECK_THROWS_AS(run_with_network(g, switch_node(2, 8, 2), {}, table_backend()), SimError);
}

}  // namespace overlap::sim::test
