#pragma once
// Mixture-of-Experts token routing over an expert-parallel (EP) group: how many token-slots each
// source rank sends to each expert, and from that the dispatch all-to-all's per-pair counts and each
// rank's grouped-GEMM rows. Counts, not tokens: nothing here is per token, so a 256-expert, EP 64
// layer costs O(EP x E).
//
// Each of the EP ranks holds `tokens_per_rank` tokens (T) and routes each to top_k distinct experts
// (GShard / Switch Transformer top-k gating), so a rank routes T x top_k token-slots and no expert
// receives more than T of one rank's slots. Experts are laid out contiguously: rank r owns experts
// [r x E/EP, (r+1) x E/EP).
//
// routing (the spec's text: `uniform`, `zipf: S`, `histogram: FILE`):
//   uniform   rank s gives every expert floor(T k / E) slots; the R = T k mod E left over go one each
//             to experts (s R + j) mod E, j = 0 .. R-1: each rank starts where the previous one
//             stopped, so over all ranks no expert gets more than one slot above any other.
//   zipf: S   expert popularity p_e proportional to 1 / rank_e^S (rank_e = 1 for the most popular),
//             the same for every source rank (popularity is the expert's); which expert is rank 1, 2,
//             ... is a permutation drawn from `seed` (Fisher-Yates over std::mt19937_64, whose output
//             the C++ standard fixes, so the permutation is the same on every platform). No sampling:
//             counts are T k p_e rounded by largest remainder (ties: uniform's order above, so S = 0
//             is exactly uniform); an expert over T keeps T and its excess goes to the others by the
//             same rule (top-k experts are distinct).
//   histogram: FILE  the counts themselves: rows = source ranks (EP rows), columns = experts (E),
//             each row summing to T x top_k, every count an integer in [0, T]. CSV (commas, `#`
//             comment lines and blank lines skipped) or, for a .yaml / .yml file, a list of EP lists.
//
// capacity_factor (optional; unset = dropless, as Megatron-core's default): each source rank keeps at
// most ceil(T k / E x C) slots per expert, the rest are dropped. That is GShard's expert capacity
// per group (Lepikhin et al. 2020, Sec. 2.2: capacity per group of tokens, a group being one device's
// tokens), as Megatron-core computes it on each rank's local routing (moe_utils.get_capacity over
// num_tokens x topk before dispatch). An expert thus receives at most EP x ceil(T k C / E), the
// Switch Transformer's tokens-per-batch / experts x C (Fedus et al. 2021, Sec. 2.2) up to rounding.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace overlap {

struct MoeRoutingSpec {
  enum class Kind { uniform, zipf, histogram };
  Kind kind = Kind::uniform;
  double zipf_s = 0;           // zipf: the exponent S >= 0
  std::uint64_t seed = 0;      // zipf: which experts are popular
  std::string histogram_file;  // histogram: the file
};

// Parses `uniform`, `zipf: S` or `histogram: FILE` (spaces around ':' optional). Errors name file,
// line and key (the scenario key the text came from, e.g. "moe.routing").
MoeRoutingSpec parse_moe_routing(const std::string& text, const std::string& file = "", int line = 0,
                                 const std::string& key = "moe.routing");

struct MoeShape {
  int experts = 0;  // E
  int top_k = 0;
  int ep_ranks = 0;                       // EP; divides E
  std::int64_t tokens_per_rank = 0;       // T: tokens each rank routes (batch x sequence on that rank)
  std::optional<double> capacity_factor;  // unset: dropless
};

// Throws InputError (file, line, key: moe.experts, moe.top_k, moe.ep, moe.tokens_per_rank,
// moe.capacity_factor) for: experts, top_k, ep or tokens < 1; top_k > experts; EP not dividing
// experts; capacity_factor <= 0 or not finite.
void validate_moe_shape(const MoeShape& shape, const std::string& file = "", int line = 0);

using CountMatrix = std::vector<std::vector<std::int64_t>>;

struct MoeRouting {
  int experts = 0;
  int ep_ranks = 0;
  int experts_per_rank = 0;
  std::int64_t expert_capacity = 0;  // per source rank and expert; 0 = dropless
  CountMatrix routed;                // routed[src][expert]: slots the router chose (before capacity)
  CountMatrix tokens;                // tokens[src][expert]: slots dispatched (after capacity)
  CountMatrix pairs;                 // pairs[src][dst]: slots src sends to rank dst (src == dst: its own experts)
  CountMatrix local_expert_tokens;   // [rank][local expert]: rows of each expert's GEMM on that rank

  int owner_rank(int expert) const { return expert / experts_per_rank; }
  std::int64_t dropped() const;                // slots over capacity, all ranks
  std::int64_t received(int rank) const;       // rows of the rank's grouped GEMM: sum of local_expert_tokens
  std::int64_t expert_load(int expert) const;  // slots every source sends to one expert
};

// The routing of one MoE layer's dispatch (the combine all-to-all is its transpose). Validates the
// shape (validate_moe_shape) and the histogram (InputError naming the file, line and key
// routing.histogram.<row>.<expert>). `file`, `line`: where the shape and spec came from.
MoeRouting route_tokens(const MoeShape& shape, const MoeRoutingSpec& spec, const std::string& file = "", int line = 0);

// The dispatch all-to-all's bytes: pairs[src][dst] x bytes_per_token (hidden x the activation's
// bytes per element). The combine all-to-all sends the same blocks back: its matrix is the transpose.
CountMatrix dispatch_bytes(const MoeRouting& routing, std::int64_t bytes_per_token);
CountMatrix combine_bytes(const MoeRouting& routing, std::int64_t bytes_per_token);

// Expert popularity order for zipf: order[i] = the expert of popularity rank i+1. A permutation of
// 0 .. experts-1 fixed by the seed.
std::vector<int> zipf_popularity_order(int experts, std::uint64_t seed);

}  // namespace overlap
