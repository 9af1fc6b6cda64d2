// MatchedCollective kernels split into waiting for peers and the transfer (calibrate/traces/collective_wait.hpp).
#include "calibrate/traces/collective_wait.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "calibrate/traces/trace_limits.hpp"

namespace overlap::traces {

namespace {

struct CollectiveMember {
  std::size_t rank;
  const CommKernel* kernel;
};
using MatchedCollective = std::vector<CollectiveMember>;

// The collectives the ranks ran together: kernels of one kind (library, collective, bytes, process
// group) matched by their order on each rank. A kind whose ranks ran different counts of it (traces of
// different windows) is not matched, and a note says so.
std::vector<MatchedCollective> match_collectives(const std::vector<RankReport>& ranks, std::vector<std::string>& notes) {
  bool every_group_named = true;
  for (const RankReport& r : ranks)
    for (const CommKernel& k : r.comm_sequence)
      every_group_named = every_group_named && !r.comms[static_cast<std::size_t>(k.group)].process_group.empty();
  // (library, collective, bytes, process group) -> the ranks that ran that kind, ascending, each with
  // its kernels of that kind in order. Only the ranks present are listed: kinds x ranks would be
  // quadratic in an export of many processes that each ran kinds of their own.
  using Kind = std::tuple<std::string, std::string, std::int64_t, std::string>;
  using PerRank = std::vector<std::pair<std::size_t, std::vector<const CommKernel*>>>;
  std::map<Kind, PerRank> kinds;
  for (std::size_t ri = 0; ri < ranks.size(); ++ri) {
    for (const CommKernel& k : ranks[ri].comm_sequence) {
      const CommGroup& g = ranks[ri].comms[static_cast<std::size_t>(k.group)];
      PerRank& per_rank = kinds[Kind{g.library, g.collective, g.bytes.value_or(-1), every_group_named ? g.process_group : ""}];
      if (per_rank.empty() || per_rank.back().first != ri) per_rank.emplace_back(ri, std::vector<const CommKernel*>{});
      per_rank.back().second.push_back(&k);
    }
  }
  std::vector<MatchedCollective> collectives;
  for (const auto& [kind, per_rank] : kinds) {
    if (per_rank.size() < 2) continue;  // on one rank only: nothing to wait for that the traces show
    const std::size_t n = per_rank.front().second.size();
    const bool same = std::all_of(per_rank.begin(), per_rank.end(), [&](const auto& r) { return r.second.size() == n; });
    if (!same) {
      std::string counts;
      for (const auto& [ri, kernels] : per_rank)
        counts += fmt::format("{}{}{} on rank {}", counts.empty() ? "" : ", ", kernels.size(),
                              counts.empty() ? " kernels" : "", ranks[ri].rank);
      const auto& [library, collective, bytes, group] = kind;
      notes.push_back(fmt::format("{}{}{}: {}: not matched (the traces cover different windows), their times include "
                                  "waiting",
                                  collective, bytes >= 0 ? fmt::format(" {} B", bytes) : std::string(),
                                  group.empty() ? "" : " in process group " + group, counts));
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      MatchedCollective c;
      for (const auto& [ri, kernels] : per_rank) c.push_back({ri, kernels[i]});
      collectives.push_back(std::move(c));
    }
  }
  return collectives;
}

// Clock offsets from the lowest rank (ranks[0]): the lower median of end differences over the
// collectives both ran, set on each rank that shares one (a note for a rank that shares none). The
// processes of one export (an Nsight Systems report of the whole job) share its clock.
std::vector<std::int64_t> align_clocks(std::vector<RankReport>& ranks, const std::vector<MatchedCollective>& collectives,
                                       std::vector<std::string>& notes) {
  const bool one_file = std::all_of(ranks.begin(), ranks.end(), [&](const RankReport& r) { return r.file == ranks[0].file; });
  std::vector<std::int64_t> offset(ranks.size(), 0);
  std::vector<bool> aligned(ranks.size(), one_file);
  aligned[0] = true;
  for (std::size_t ri = 1; ri < ranks.size() && !one_file; ++ri) {
    std::vector<std::int64_t> diffs;
    for (const auto& c : collectives) {
      const CollectiveMember* ref = nullptr;
      const CollectiveMember* mine = nullptr;
      for (const CollectiveMember& m : c) {
        if (m.rank == 0) ref = &m;
        if (m.rank == ri) mine = &m;
      }
      if (ref && mine) diffs.push_back(mine->kernel->end_ns - ref->kernel->end_ns);
    }
    if (diffs.empty()) continue;
    std::sort(diffs.begin(), diffs.end());
    offset[ri] = diffs[(diffs.size() - 1) / 2];
    aligned[ri] = true;
  }
  for (std::size_t ri = 0; ri < ranks.size(); ++ri) {
    if (aligned[ri]) {
      ranks[ri].clock_offset_ns = offset[ri];
    } else if (!ranks[ri].comm_sequence.empty()) {
      notes.push_back(fmt::format("rank {} shares no matched collective with rank {}: its clock is taken as recorded",
                                  ranks[ri].rank, ranks[0].rank));
    }
  }
  return offset;
}

}  // namespace

CollectiveSplit split_collective_waits(std::vector<RankReport>& ranks) {
  CollectiveSplit out;
  if (ranks.size() < 2) return out;
  const std::vector<MatchedCollective> collectives = match_collectives(ranks, out.notes);
  if (collectives.empty()) return out;
  const std::vector<std::int64_t> offset = align_clocks(ranks, collectives, out.notes);
  for (const auto& c : collectives) {
    std::vector<std::pair<std::size_t, std::int32_t>>& members = out.members.emplace_back();
    for (const CollectiveMember& m : c) members.emplace_back(m.rank, m.kernel->activity);
    // Times and offsets are below 2^62 in magnitude (calibrate/traces/trace_limits.hpp); their
    // differences are taken in 128 bits, and the sums checked.
    __int128 last = INT64_MIN;
    for (const CollectiveMember& m : c) last = std::max(last, static_cast<__int128>(m.kernel->start_ns) - offset[m.rank]);
    for (const CollectiveMember& m : c) {
      const __int128 start = static_cast<__int128>(m.kernel->start_ns) - offset[m.rank];
      const std::int64_t dur = m.kernel->end_ns - m.kernel->start_ns;
      const auto wait = static_cast<std::int64_t>(std::clamp(last - start, __int128{0}, static_cast<__int128>(dur)));
      RankReport& r = ranks[m.rank];
      CommGroup& g = r.comms[static_cast<std::size_t>(m.kernel->group)];
      ++g.matched;
      g.wait_ns = add_ns(g.wait_ns, wait, r.file, "a collective group's total wait");
      g.transfer_ns = add_ns(g.transfer_ns, dur - wait, r.file, "a collective group's total transfer");
      g.transfer_durations_ns.push_back(dur - wait);
    }
  }
  out.matched = static_cast<std::int64_t>(collectives.size());
  return out;
}

}  // namespace overlap::traces
