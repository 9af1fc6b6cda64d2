// The host bookkeeping of one-sided pulls on real nodes (kernels/comm/peer_registry.hpp): symmetric
// buffer translation and the ready-signal sequence numbers both sides count without talking.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/comm/peer_registry.hpp"

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
