// The host bookkeeping of one-sided pulls on real nodes (kernels/comm/peer_registry.hpp): symmetric
// buffer translation and the ready-signal sequence numbers both sides count without talking.
#include <catch2/catch.hpp>

#include <cstdint>
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/comm/peer_registry.hpp"
#include "kernels/schemes/step_pairs.hpp"
#include "sim/schemes/commfuse_schedule.hpp"

using overlap::cuda::PeerRegistry;
using overlap::cuda::PullSignals;

namespace {

// Rank `self` of 3 with two shared buffers; rank j's copies are mapped at distinct bases.
PeerRegistry three_ranks(int self) {
  PeerRegistry reg(3, self);
  const std::vector<std::uintptr_t> a{0x10000, 0x20000, 0x30000}, b{0x11000, 0x21000, 0x31000};
  std::vector<std::uintptr_t> ma(a), mb(b);
  reg.add(a[static_cast<std::size_t>(self)], 0x800, {0x800, 0x800, 0x800}, ma);
  reg.add(b[static_cast<std::size_t>(self)], 0x100, {0x100, 0x100, 0x100}, mb);
  return reg;
}

}  // namespace

TEST_CASE("peer registry: an address maps to the same offset of the peer's copy", "[peer]") {
  const PeerRegistry reg = three_ranks(1);
  CHECK(reg.size() == 2);
  CHECK(reg.translate(0, 0x20000, 0x800) == 0x10000);
  CHECK(reg.translate(2, 0x20040, 0x10) == 0x30040);
  CHECK(reg.translate(1, 0x20040, 0x10) == 0x20040);  // its own copy: itself
  CHECK(reg.translate(0, 0x210ff, 1) == 0x110ff);     // the last byte of the second buffer
}

TEST_CASE("peer registry: pulls outside a shared buffer are refused", "[peer]") {
  const PeerRegistry reg = three_ranks(0);
  CHECK_THROWS_WITH(reg.translate(1, 0x10800, 1), Catch::Contains("not in a shared buffer"));  // one past the end
  CHECK_THROWS_WITH(reg.translate(1, 0xffff, 1), Catch::Contains("0xffff"));
  CHECK_THROWS_WITH(reg.translate(1, 0x107f0, 0x20), Catch::Contains("runs past the end"));
  CHECK_THROWS_AS(reg.translate(3, 0x10000, 1), std::out_of_range);
  CHECK_THROWS_AS(reg.translate(-1, 0x10000, 1), std::out_of_range);
}

TEST_CASE("peer registry: ranks sharing different buffers are named", "[peer]") {
  PeerRegistry reg(2, 0);
  CHECK_THROWS_WITH(reg.add(0x1000, 64, {64, 128}, {0x1000, 0x9000}), Catch::Contains("rank 1 shares 128 bytes"));
  CHECK_THROWS_AS(reg.add(0x1000, 64, {64}, {0x1000}), std::invalid_argument);
  CHECK_THROWS_AS(reg.add(0x1000, 64, {64, 64}, {0x2000, 0x9000}), std::invalid_argument);  // own mapping is not its buffer
  reg.add(0x1000, 64, {64, 64}, {0x1000, 0x9000});
  CHECK_THROWS_WITH(reg.add(0x1020, 64, {64, 64}, {0x1020, 0xa000}), Catch::Contains("overlaps"));
  CHECK_THROWS_WITH(reg.add(0x0fe0, 64, {64, 64}, {0x0fe0, 0xa000}), Catch::Contains("overlaps"));
  reg.add(0x1040, 64, {64, 64}, {0x1040, 0xa000});  // adjacent is fine
  CHECK(reg.translate(1, 0x1040, 64) == 0xa000);
  CHECK(reg.translate(1, 0x103f, 1) == 0x903f);
}

TEST_CASE("pull signals: sender and receiver count the same sequence numbers", "[peer]") {
  // Every rank's own PullSignals sees the transfers touching it (as the schemes list them: a sender
  // lists what it sends, a receiver what it receives). Steps alternate copy streams like the
  // schemes; patterns: ring shifts (async TP), pairwise exchanges, and two transfers between one
  // pair in one step.
  const int T = 4;
  std::vector<PullSignals> ranks;
  for (int r = 0; r < T; ++r) ranks.emplace_back(T, 2);
  struct X {
    int src, dst;
  };
  std::vector<std::vector<X>> steps;
  for (int s = 1; s < T; ++s) {
    std::vector<X> step;
    for (int r = 0; r < T; ++r) step.push_back({(r + s) % T, r});
    steps.push_back(step);
  }
  steps.push_back({{0, 1}, {1, 0}, {2, 3}, {3, 2}});
  steps.push_back({{0, 1}, {0, 1}, {2, 1}});
  std::map<std::tuple<int, int, int>, std::vector<std::uint32_t>> sent, expected;  // (src, dst, stream)
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const int idx = static_cast<int>(i & 1);
    for (int me = 0; me < T; ++me) {
      for (const X& x : steps[i]) {
        if (x.src == me) sent[{x.src, x.dst, idx}].push_back(ranks[static_cast<std::size_t>(me)].next_sent(x.dst, idx));
        if (x.dst == me) expected[{x.src, x.dst, idx}].push_back(ranks[static_cast<std::size_t>(me)].next_expected(x.src, idx));
      }
    }
  }
  CHECK(sent == expected);
  CHECK(sent.at({0, 1, 0}) == std::vector<std::uint32_t>{1, 2, 3});  // ring step 3 (stream 0), then twice in the last step
  CHECK(sent.at({1, 0, 0}) == std::vector<std::uint32_t>{1});
}

TEST_CASE("pull signals: one pad word per (sender, copy stream)", "[peer]") {
  const PullSignals sig(3, 2);
  CHECK(sig.words() == 6);
  std::vector<std::size_t> seen;
  for (int src = 0; src < 3; ++src) {
    for (int idx = 0; idx < 2; ++idx) seen.push_back(sig.word(src, idx));
  }
  CHECK(seen == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  CHECK_THROWS_AS(sig.word(3, 0), std::out_of_range);
  CHECK_THROWS_AS(sig.word(0, 2), std::out_of_range);
}

namespace {

// One process per rank, each listing a scheme's steps as the kernels do (touching(): the transfers
// whose sender or receiver is its rank) and counting ready signals with its own PullSignals, the
// step's copy stream alternating as the schemes alternate it. Every transfer must be listed by its
// sender's and its receiver's process, and both must count the same sequence number for it.
void check_real_node_protocol(int T, const std::vector<std::vector<overlap::cuda::StepPair>>& steps) {
  std::vector<PullSignals> proc;
  for (int r = 0; r < T; ++r) proc.emplace_back(T, 2);
  std::map<std::tuple<int, int, int, int>, std::vector<std::uint32_t>> seen;  // (step, src, dst, end) -> values
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const int idx = static_cast<int>(i & 1);
    for (int me = 0; me < T; ++me) {
      for (const auto& p : overlap::cuda::touching(steps[i], [me](int q) { return q == me; })) {
        if (p.src == me) seen[{static_cast<int>(i), p.src, p.dst, 0}].push_back(proc[static_cast<std::size_t>(me)].next_sent(p.dst, idx));
        if (p.dst == me) seen[{static_cast<int>(i), p.src, p.dst, 1}].push_back(proc[static_cast<std::size_t>(me)].next_expected(p.src, idx));
      }
    }
    for (const auto& p : steps[i]) {
      INFO("step " << i << ": " << p.src << " -> " << p.dst);
      const auto& sent = seen[{static_cast<int>(i), p.src, p.dst, 0}];
      const auto& expected = seen[{static_cast<int>(i), p.src, p.dst, 1}];
      REQUIRE(!sent.empty());
      CHECK(sent == expected);
    }
  }
}

}  // namespace

TEST_CASE("async TP steps: a permutation per step, every rank pulls every other shard once", "[peer]") {
  using overlap::cuda::async_tp_pairs;
  for (int T : {2, 3, 4, 8}) {
    for (bool ag : {true, false}) {
      INFO("T " << T << (ag ? " all-gather" : " reduce-scatter"));
      std::vector<std::vector<overlap::cuda::StepPair>> steps;
      std::vector<std::vector<int>> pulled(static_cast<std::size_t>(T));
      for (int s = 1; s < T; ++s) {
        const auto pairs = async_tp_pairs(ag, T, s);
        REQUIRE(pairs.size() == static_cast<std::size_t>(T));
        std::vector<int> in(static_cast<std::size_t>(T), 0), out(static_cast<std::size_t>(T), 0);
        for (const auto& p : pairs) {
          CHECK(p.src != p.dst);
          ++in[static_cast<std::size_t>(p.dst)];
          ++out[static_cast<std::size_t>(p.src)];
          pulled[static_cast<std::size_t>(p.dst)].push_back(p.src);
        }
        CHECK(in == std::vector<int>(static_cast<std::size_t>(T), 1));
        CHECK(out == std::vector<int>(static_cast<std::size_t>(T), 1));
        steps.push_back(pairs);
      }
      if (ag) {  // all-gather: every shard but its own, once
        for (int r = 0; r < T; ++r) {
          auto v = pulled[static_cast<std::size_t>(r)];
          std::sort(v.begin(), v.end());
          std::vector<int> others;
          for (int j = 0; j < T; ++j) {
            if (j != r) others.push_back(j);
          }
          CHECK(v == others);
        }
      }
      CHECK(async_tp_pairs(ag, T, 0).empty());
      CHECK(async_tp_pairs(ag, T, T).empty());
      check_real_node_protocol(T, steps);
    }
  }
}

TEST_CASE("CommFuse rounds: each send meets its receiver's step, and both ends count alike", "[peer]") {
  using overlap::sim::CommFuseSchedule;
  for (int T : {2, 3, 4, 5, 8}) {
    for (auto sched : {CommFuseSchedule::ring, CommFuseSchedule::pairwise, CommFuseSchedule::circular}) {
      for (bool rs : {true, false}) {
        INFO("T " << T << " " << overlap::sim::commfuse_schedule_name(sched) << (rs ? " FuseRS" : " FuseAG"));
        std::vector<std::vector<overlap::sim::FuseStep>> orders;
        int rounds = 0;
        for (int r = 0; r < T; ++r) {
          orders.push_back(rs ? overlap::sim::fuse_rs_order(r, T, sched) : overlap::sim::fuse_ag_order(r, T, sched));
          for (const auto& f : orders.back()) rounds = std::max(rounds, f.round + 1);
        }
        std::vector<std::vector<overlap::cuda::StepPair>> steps;
        for (int i = 0; i < rounds; ++i) {
          const auto pairs = overlap::cuda::commfuse_pairs(orders, i);
          for (const auto& p : pairs) {
            // The receiver has a step in this round that receives from the sender.
            const auto* g = overlap::cuda::fuse_step_in_round(orders[static_cast<std::size_t>(p.dst)], i);
            REQUIRE(g != nullptr);
            CHECK(g->recv_from == p.src);
          }
          steps.push_back(pairs);
        }
        check_real_node_protocol(T, steps);
      }
    }
  }
}
