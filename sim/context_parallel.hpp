#pragma once
// Context parallelism for one attention layer: the sequence split over `cp` ranks, how much attention
// work each rank does at each step, and what moves between them.
//
//   ring          Megatron-Core's p2p context parallelism (ring attention, Liu et al., "Ring
//                 Attention with Blockwise Transformers", Sec. 3): cp steps; at each step a rank runs
//                 its queries against the key/value block it holds while passing that block to the
//                 next rank, so transfers hide behind attention. With causal masking the sequence is
//                 cut into 2 cp chunks and rank r holds chunks r and 2 cp - 1 - r (Megatron-Core's load
//                 balancing): every rank then does the same work at every step.
//   all_gather    Llama 3's context parallelism (Llama 3 report, Sec. 3.3.2): keys and values
//                 all-gathered over the cp ranks first, then each rank's (load-balanced) queries
//                 against all of them; the all-gather is not hidden.
//   (Ulysses, the all-to-all of heads, is a scheme of its own: sim/schemes/ and CommFuse Sec. 4.)
//
// Work is counted in "blocks": one chunk of S / (2 cp) queries against one chunk of S / (2 cp) keys,
// unmasked. A causal block on the diagonal is half a block.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/units.hpp"

namespace overlap::sim {

enum class ContextParallel : std::uint8_t { ring, all_gather };
// As a scenario names them (workload.parallel.cp_algorithm): "ring", "allgather_kv".
const char* context_parallel_name(ContextParallel a);
std::optional<ContextParallel> parse_context_parallel(const std::string& s);

struct ContextShape {
  int cp = 1;
  bool causal = true;
  bool load_balanced = true;  // the 2 cp chunks of Megatron-Core (causal only); else contiguous cp chunks
};

// Blocks rank `rank` computes at ring step `step` (0 = its own keys and values; at step i it holds those
// of rank (rank - i) mod cp).
double ring_blocks(const ContextShape& shape, int rank, int step);

// Per ring step (cp entries), the most blocks any rank computes at that step (ranks wait for each other
// through the ring: the step ends when its slowest rank does). Throws std::invalid_argument for cp < 1.
std::vector<double> ring_blocks_per_step(const ContextShape& shape);

// Blocks one rank computes over the whole layer when the work is balanced: (2 cp)^2 / 2 / cp = 2 cp
// with causal masking, 4 cp without (a rank's 2 chunks of queries against all 2 cp chunks of keys).
double balanced_blocks_per_rank(const ContextShape& shape);

struct ContextTimes {
  Ps compute_ps = 0;   // attention on the critical path
  Ps transfer_ps = 0;  // communication on the critical path (not hidden)
  Ps total_ps = 0;
};

// One layer's forward attention under context parallelism.
//   block_ps      one block's attention time on one rank
//   step_kv_ps    ring: one step's key/value block to the next rank; all_gather: the whole all-gather
// ring: each step ends when both its attention and its transfer are done (the block for the next
// step must have arrived); the last step sends nothing.
ContextTimes context_parallel_times(ContextParallel algorithm, const ContextShape& shape, Ps block_ps, Ps kv_ps);

// Bytes of the key/value block a rank passes at each ring step: K and V of its S / cp tokens.
Bytes ring_step_kv_bytes(std::int64_t seq_tokens, std::int64_t batch, int cp, std::int64_t kv_heads,
                         std::int64_t head_dim, int element_bytes);

}  // namespace overlap::sim
