// Context parallelism's work per ring step and its times (sim/context_parallel.hpp), against closed
// forms: causal attention over S tokens is (2 cp)^2 / 2 blocks of (S / 2 cp)^2 in all; Megatron-Core's
// load balancing (rank r holds chunks r and 2 cp - 1 - r) gives every rank 2 blocks at every step; a
// contiguous split leaves the last rank the most and the ring waits for it.
#include <catch2/catch.hpp>

#include <numeric>

#include "sim/context_parallel.hpp"

using namespace overlap;
using namespace overlap::sim;

TEST_CASE("ring attention: every block of causal attention is computed once, by some rank", "[context_parallel]") {
  for (int cp : {1, 2, 3, 4, 8, 16})
    for (bool balanced : {true, false}) {
      const ContextShape shape{cp, true, balanced};
      double all = 0;
      for (int r = 0; r < cp; ++r)
        for (int s = 0; s < cp; ++s) all += ring_blocks(shape, r, s);
      CHECK(all == Approx(2.0 * cp * cp).epsilon(1e-12));  // (2 cp)^2 / 2
      const ContextShape full{cp, false, balanced};
      double unmasked = 0;
      for (int r = 0; r < cp; ++r)
        for (int s = 0; s < cp; ++s) unmasked += ring_blocks(full, r, s);
      CHECK(unmasked == Approx(4.0 * cp * cp).epsilon(1e-12));
    }
}

TEST_CASE("load-balanced causal ring: 2 blocks per rank per step; a contiguous split waits for 4", "[context_parallel]") {
  for (int cp : {2, 4, 8}) {
    const ContextShape balanced{cp, true, true};
    for (int r = 0; r < cp; ++r)
      for (int s = 0; s < cp; ++s) CHECK(ring_blocks(balanced, r, s) == 2.0);
    const std::vector<double> b = ring_blocks_per_step(balanced);
    CHECK(std::accumulate(b.begin(), b.end(), 0.0) == balanced_blocks_per_rank(balanced));
    // Contiguous chunks: the diagonal step is 2 blocks, every later step some rank has a whole earlier
    // block pair (4) while another has none.
    const std::vector<double> c = ring_blocks_per_step({cp, true, false});
    CHECK(c[0] == 2.0);
    for (int s = 1; s < cp; ++s) CHECK(c[static_cast<std::size_t>(s)] == 4.0);
    CHECK(ring_blocks({cp, true, false}, 0, 1) == 0.0);  // rank 0's queries see no later keys
  }
}

TEST_CASE("ring attention hides the transfers when a step's attention outlasts them", "[context_parallel]") {
  const Ps block = 1'000'000;
  for (int cp : {1, 2, 4, 8}) {
    const ContextShape shape{cp, true, true};
    // Each step is 2 blocks of attention; a transfer shorter than that is hidden.
    const ContextTimes hidden = context_parallel_times(ContextParallel::ring, shape, block, 2 * block - 1);
    CHECK(hidden.total_ps == 2 * cp * block);
    CHECK(hidden.transfer_ps == 0);
    // Longer: every step but the last waits for its block.
    const Ps kv = 5 * block;
    const ContextTimes exposed = context_parallel_times(ContextParallel::ring, shape, block, kv);
    CHECK(exposed.total_ps == 2 * block + (cp - 1) * kv);
    CHECK(exposed.compute_ps == 2 * cp * block);
    // Llama 3's all-gather: the gather, then the same balanced attention.
    const ContextTimes gathered = context_parallel_times(ContextParallel::all_gather, shape, block, kv);
    CHECK(gathered.total_ps == 2 * cp * block + (cp > 1 ? kv : 0));
  }
}

TEST_CASE("a ring step passes K and V of S / cp tokens", "[context_parallel]") {
  // Llama 3 70B's 8 KV heads of 128, bf16, 131,072 tokens over cp 16: 2 x 8192 x 8 x 128 x 2 bytes.
  CHECK(ring_step_kv_bytes(131072, 1, 16, 8, 128, 2) == 2LL * 8192 * 8 * 128 * 2);
  CHECK_THROWS_WITH(ring_step_kv_bytes(1000, 1, 16, 8, 128, 2), Catch::Matchers::Contains("does not divide"));
  CHECK_THROWS(ring_blocks_per_step({0, true, true}));
}
