// Rank-adaptive CommFuse step orders (commfuse-paper Alg. 1, Alg. 2, Appendix A).
#include "sim/schemes/commfuse_schedule.hpp"

#include <array>
#include <bit>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "cost_model/enum_names.hpp"

namespace overlap::sim {

namespace {


void check_ranks(int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw std::invalid_argument("commfuse schedule: rank " + std::to_string(rank) + " of " +
                                std::to_string(ranks));
}

constexpr std::array kScheduleNames{std::pair{CommFuseSchedule::ring, "ring"},
                                    std::pair{CommFuseSchedule::pairwise, "pairwise"},
                                    std::pair{CommFuseSchedule::circular, "circular"}};
static_assert(rows_in_enum_order(kScheduleNames));

// FuseRS moves partials of slice s to its owner, rank s; FuseAG moves rank s's shard from it to the
// others. So a direct r -> p transfer carries p's slice (RS) or r's (AG), and a ring hop r -> r+1
// carries every slice but the one that does not cross it: the sender's own (RS: its partial is
// added there) or the receiver's (AG: rank r+1 holds its shard already).
enum class Direction { to_owner, from_owner };

std::vector<std::vector<Bytes>> required_bytes(const std::vector<Bytes>& slice_bytes, CommFuseSchedule schedule,
                                               Direction direction) {
  const int T = static_cast<int>(slice_bytes.size());
  std::vector<std::vector<Bytes>> req(slice_bytes.size(), std::vector<Bytes>(slice_bytes.size(), 0));
  if (T <= 1) return req;
  const bool rs = direction == Direction::to_owner;
  const Bytes total = std::accumulate(slice_bytes.begin(), slice_bytes.end(), Bytes{0});
  for (int r = 0; r < T; ++r) {
    if (schedule == CommFuseSchedule::ring) {
      const int next = wrap_mod(r + 1, T);
      req[r][next] = total - slice_bytes[rs ? r : next];
    } else {
      for (int p = 0; p < T; ++p)
        if (p != r) req[r][p] = slice_bytes[rs ? p : r];
    }
  }
  return req;
}

}  // namespace

const char* commfuse_schedule_name(CommFuseSchedule s) { return name_of(kScheduleNames, s); }
std::optional<CommFuseSchedule> parse_commfuse_schedule(const std::string& s) { return parse_name(kScheduleNames, s); }

int round_robin_rounds(int ranks) { return ranks <= 1 ? 0 : (ranks % 2 == 0 ? ranks - 1 : ranks); }

int round_robin_partner(int rank, int round, int ranks) {
  check_ranks(rank, ranks);
  if (round < 0 || round >= round_robin_rounds(ranks))
    throw std::invalid_argument("commfuse schedule: round " + std::to_string(round));
  // Power-of-two groups: rank XOR (round + 1) reproduces App. A.3's example exactly
  // (A<->B, C<->D; A<->C, B<->D; A<->D, B<->C).
  if (std::has_single_bit(static_cast<unsigned>(ranks))) return rank ^ (round + 1);
  // Circle method: with an even count n, rank n-1 stays fixed and meets rank `round`; the others
  // pair as i + j == 2 * round (mod n-1). An odd count adds a phantom rank; meeting it is a bye.
  const int n = ranks % 2 == 0 ? ranks : ranks + 1;
  int partner;
  if (rank == n - 1) {
    partner = round;
  } else {
    const int j = wrap_mod(2 * round - rank, n - 1);
    partner = j == rank ? n - 1 : j;
  }
  return partner >= ranks ? -1 : partner;
}

std::vector<FuseStep> fuse_rs_order(int rank, int ranks, CommFuseSchedule schedule) {
  check_ranks(rank, ranks);
  const int T = ranks;
  std::vector<FuseStep> steps;
  switch (schedule) {
    case CommFuseSchedule::ring:  // Alg. 2 lines 11-13, 18-21
      for (int i = 0; i + 1 < T; ++i) steps.push_back({wrap_mod(rank - i - 1, T), wrap_mod(rank + 1, T), wrap_mod(rank - 1, T), i});
      break;
    case CommFuseSchedule::circular:  // App. A.4: slice owner gets the partial directly
      for (int i = 0; i + 1 < T; ++i)
        steps.push_back({wrap_mod(rank - i - 1, T), wrap_mod(rank - i - 1, T), wrap_mod(rank + i + 1, T), i});
      break;
    case CommFuseSchedule::pairwise:  // App. A.3: exchange with this round's partner
      for (int round = 0; round < round_robin_rounds(T); ++round) {
        const int p = round_robin_partner(rank, round, T);
        if (p >= 0) steps.push_back({p, p, p, round});
      }
      break;
  }
  steps.push_back({rank, -1, -1, -1});  // rank-adaptive: the slice that stays here comes last
  return steps;
}

std::vector<FuseStep> fuse_ag_order(int rank, int ranks, CommFuseSchedule schedule) {
  check_ranks(rank, ranks);
  const int T = ranks;
  std::vector<FuseStep> steps;
  steps.push_back({rank, -1, -1, -1});  // rank-adaptive: the local shard needs no communication
  switch (schedule) {
    case CommFuseSchedule::ring:  // Alg. 1 lines 12-21: forward what arrived from rank-1
      for (int i = 1; i < T; ++i) steps.push_back({wrap_mod(rank - i, T), wrap_mod(rank + 1, T), wrap_mod(rank - 1, T), i - 1});
      break;
    case CommFuseSchedule::circular:
      for (int i = 1; i < T; ++i) steps.push_back({wrap_mod(rank - i, T), wrap_mod(rank + i, T), wrap_mod(rank - i, T), i - 1});
      break;
    case CommFuseSchedule::pairwise:
      for (int round = 0; round < round_robin_rounds(T); ++round) {
        const int p = round_robin_partner(rank, round, T);
        if (p >= 0) steps.push_back({p, p, p, round});
      }
      break;
  }
  return steps;
}

std::vector<std::vector<Bytes>> fuse_rs_required_bytes(const std::vector<Bytes>& slice_bytes,
                                                       CommFuseSchedule schedule) {
  return required_bytes(slice_bytes, schedule, Direction::to_owner);
}

std::vector<std::vector<Bytes>> fuse_ag_required_bytes(const std::vector<Bytes>& slice_bytes,
                                                       CommFuseSchedule schedule) {
  return required_bytes(slice_bytes, schedule, Direction::from_owner);
}

std::vector<std::vector<Bytes>> fuse_a2a_required_bytes(const std::vector<Bytes>& slice_bytes) {
  const std::size_t T = slice_bytes.size();
  std::vector<std::vector<Bytes>> req(T, std::vector<Bytes>(T, 0));
  for (std::size_t r = 0; r < T; ++r)
    for (std::size_t p = 0; p < T; ++p)
      if (p != r) req[r][p] = slice_bytes[p];
  return req;
}

}  // namespace overlap::sim
