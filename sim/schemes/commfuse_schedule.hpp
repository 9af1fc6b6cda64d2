#pragma once
// Rank-adaptive step orders of CommFuse (commfuse-paper Sec. 3.2, Alg. 1-2, Alg. 5, Appendix A):
// which slice a rank computes at each step and with which peers it exchanges data afterwards, for
// the three decompositions of a collective into P2P transfers:
//   ring      Alg. 1/2 as written: every step sends to rank+1 and receives from rank-1; FuseRS
//             relays accumulators (a received partial sum is added before it is forwarded), FuseAG
//             forwards the shard it just received.
//   pairwise  App. A.3: round-robin tournament rounds of bidirectional exchanges; every partial (or
//             shard) goes straight to its owner, T-1 rounds for even T (T rounds with a bye for odd T).
//   circular  App. A.4: every device keeps the buffer of its own slice; in round i each rank sends
//             straight to rank-i (FuseRS) / rank+i (FuseAG): a circular shift of the peers.
// In every order the rank's own slice is computed last (FuseRS) or first (FuseAG), so the last step
// needs no communication (the tail CommFuse removes).
#include <optional>
#include <string>
#include <vector>

#include "cost_model/units.hpp"

namespace overlap::sim {

enum class CommFuseSchedule { ring, pairwise, circular };
const char* commfuse_schedule_name(CommFuseSchedule s);
std::optional<CommFuseSchedule> parse_commfuse_schedule(const std::string& s);

// One step of one rank (m = 1). FuseRS: compute the partial output of slice `slice`, then (unless
// last) send it to `send_to` and receive from `recv_from`. FuseAG: exchange first (send_to /
// recv_from, unless the step is the local one), then compute on the shard of rank `slice`.
struct FuseStep {
  int slice = -1;
  int send_to = -1;    // -1: no communication at this step
  int recv_from = -1;
  int round = -1;      // pairwise: tournament round (orders the exchanges consistently across ranks)
};

// Partner of `rank` in round `round` (0-based) of the round-robin tournament over `ranks` ranks
// (circle method); -1 = a bye (odd rank counts). Rounds: ranks - 1 (even) or ranks (odd).
int round_robin_partner(int rank, int round, int ranks);
int round_robin_rounds(int ranks);

// FuseRS (Alg. 2): T steps; the last computes the rank's own slice and has no communication.
// ring: slice (r - i - 1) mod T, send to r+1, receive from r-1 (the accumulator of the next slice).
std::vector<FuseStep> fuse_rs_order(int rank, int ranks, CommFuseSchedule schedule);
// FuseAG (Alg. 1): T steps; step 0 computes the local shard and has no communication before it; step
// i >= 1 computes on the shard that arrived in its exchange (ring: forwarded by rank-1).
std::vector<FuseStep> fuse_ag_order(int rank, int ranks, CommFuseSchedule schedule);

// Bytes each rank sends to each other rank ([src][dst]) when slice s of the collective holds
// `slice_bytes[s]` bytes (FuseRS: slice s is rank s's output; FuseAG: slice s is rank s's shard).
// Closed forms of the schedules, independent of the graph the builder emits (byte accounting):
//   RS ring: r -> r+1 all slices but its own: sum - slice[r];  RS direct: r -> p slice[p].
//   AG ring: r -> r+1 all shards but rank r+1's;               AG direct: r -> p slice[r].
std::vector<std::vector<Bytes>> fuse_rs_required_bytes(const std::vector<Bytes>& slice_bytes,
                                                       CommFuseSchedule schedule);
std::vector<std::vector<Bytes>> fuse_ag_required_bytes(const std::vector<Bytes>& slice_bytes,
                                                       CommFuseSchedule schedule);
// Fuse All-to-All (Alg. 5): rank r sends slice j of its heads' output to rank j for every j != r
// (slice_bytes[j] = bytes of sequence slice j for one rank's heads).
std::vector<std::vector<Bytes>> fuse_a2a_required_bytes(const std::vector<Bytes>& slice_bytes);

}  // namespace overlap::sim
