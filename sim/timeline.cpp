#include "sim/timeline.hpp"

#include <map>

namespace overlap::sim {

std::vector<PairBytes> bytes_by_pair(const Timeline& tl) {
  std::map<std::pair<int, int>, Bytes> sum;
  for (const TransferRecord& t : tl.transfers)
    // Legs to or from a switch (NVLS) are not traffic between two ranks.
    if (t.src_gpu != t.dst_gpu && t.src_gpu >= 0 && t.dst_gpu >= 0) sum[{t.src_gpu, t.dst_gpu}] += t.bytes;
  std::vector<PairBytes> out;
  for (const auto& [k, v] : sum) out.push_back(PairBytes{k.first, k.second, v});
  return out;
}

}  // namespace overlap::sim
