// Context parallelism's work and traffic per ring step (context_parallel.hpp).
#include "sim/context_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace overlap::sim {

namespace {

void check_cp(const ContextShape& shape) {
  if (shape.cp < 1) throw std::invalid_argument(fmt::format("cp must be at least 1 (got {})", shape.cp));
  if (shape.cp > 1'000'000) throw std::invalid_argument(fmt::format("cp {} is more ranks than modelled (1,000,000)", shape.cp));
}

// The two chunks (of 2 cp) a rank's queries, keys and values cover.
std::array<int, 2> chunks_of(const ContextShape& shape, int rank) {
  if (shape.causal && shape.load_balanced) return {rank, 2 * shape.cp - 1 - rank};
  return {2 * rank, 2 * rank + 1};
}

// One chunk of queries against one chunk of keys: causal masking keeps keys at or before the query.
double block_work(bool causal, int query_chunk, int key_chunk) {
  if (!causal || key_chunk < query_chunk) return 1.0;
  return key_chunk == query_chunk ? 0.5 : 0.0;
}

}  // namespace

const char* context_parallel_name(ContextParallel a) { return a == ContextParallel::ring ? "ring" : "allgather_kv"; }

std::optional<ContextParallel> parse_context_parallel(const std::string& s) {
  if (s == "ring") return ContextParallel::ring;
  if (s == "allgather_kv") return ContextParallel::all_gather;
  return std::nullopt;
}

double ring_blocks(const ContextShape& shape, int rank, int step) {
  check_cp(shape);
  if (rank < 0 || rank >= shape.cp || step < 0 || step >= shape.cp)
    throw std::invalid_argument(fmt::format("ring step {} of rank {} is outside cp {}", step, rank, shape.cp));
  const int holder = ((rank - step) % shape.cp + shape.cp) % shape.cp;
  double blocks = 0;
  for (int q : chunks_of(shape, rank))
    for (int k : chunks_of(shape, holder)) blocks += block_work(shape.causal, q, k);
  return blocks;
}

std::vector<double> ring_blocks_per_step(const ContextShape& shape) {
  check_cp(shape);
  std::vector<double> steps(static_cast<std::size_t>(shape.cp), 0.0);
  for (int step = 0; step < shape.cp; ++step)
    for (int rank = 0; rank < shape.cp; ++rank)
      steps[static_cast<std::size_t>(step)] = std::max(steps[static_cast<std::size_t>(step)], ring_blocks(shape, rank, step));
  return steps;
}

double balanced_blocks_per_rank(const ContextShape& shape) {
  check_cp(shape);
  return shape.causal ? 2.0 * shape.cp : 4.0 * shape.cp;
}

ContextTimes context_parallel_times(ContextParallel algorithm, const ContextShape& shape, Ps block_ps, Ps kv_ps) {
  check_cp(shape);
  if (block_ps < 0 || kv_ps < 0) throw std::invalid_argument("context parallelism: a negative time");
  ContextTimes t;
  if (algorithm == ContextParallel::all_gather) {
    // Llama 3 Sec. 3.3.2: the all-gather first, then the balanced queries against every key.
    t.compute_ps = checked_ps(balanced_blocks_per_rank(shape) * static_cast<double>(block_ps));
    t.transfer_ps = shape.cp > 1 ? kv_ps : 0;
    t.total_ps = t.compute_ps + t.transfer_ps;
    return t;
  }
  const std::vector<double> steps = ring_blocks_per_step(shape);
  double total = 0, compute = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const double c = steps[i] * static_cast<double>(block_ps);
    compute += c;
    // A step ends when its attention is done and the next step's block has arrived; the last sends none.
    total += i + 1 < steps.size() ? std::max(c, static_cast<double>(kv_ps)) : c;
  }
  t.compute_ps = checked_ps(compute);
  t.total_ps = checked_ps(total);
  t.transfer_ps = t.total_ps - t.compute_ps;
  return t;
}

Bytes ring_step_kv_bytes(std::int64_t seq_tokens, std::int64_t batch, int cp, std::int64_t kv_heads,
                         std::int64_t head_dim, int element_bytes) {
  if (cp < 1 || seq_tokens < 1 || batch < 1 || kv_heads < 1 || head_dim < 1 || element_bytes < 1)
    throw std::invalid_argument("ring_step_kv_bytes: every size must be at least 1");
  if (seq_tokens % cp != 0)
    throw std::invalid_argument(fmt::format("cp {} does not divide the sequence ({} tokens)", cp, seq_tokens));
  // K and V of the rank's S / cp tokens.
  const double bytes = 2.0 * static_cast<double>(seq_tokens / cp) * static_cast<double>(batch) *
                       static_cast<double>(kv_heads) * static_cast<double>(head_dim) * element_bytes;
  if (bytes > 4.0e18) throw std::invalid_argument("ring_step_kv_bytes: more bytes than the simulator counts");
  return static_cast<Bytes>(bytes);
}

}  // namespace overlap::sim
