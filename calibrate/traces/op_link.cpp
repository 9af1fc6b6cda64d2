// Kernels to CPU ops through the launching thread (calibrate/traces/op_link.hpp).
#include "calibrate/traces/op_link.hpp"

#include <algorithm>
#include <tuple>

namespace overlap::traces {

std::vector<std::pair<std::int64_t, std::int32_t>> innermost_ops(std::vector<OpRange> ranges, std::vector<LaunchAt> launches) {
  // By thread, then start; of two ranges starting together the longer (outer) first.
  std::sort(ranges.begin(), ranges.end(), [](const OpRange& a, const OpRange& b) {
    return std::tie(a.thread, a.start_ns, b.end_ns, a.op) < std::tie(b.thread, b.start_ns, a.end_ns, b.op);
  });
  std::sort(launches.begin(), launches.end(), [](const LaunchAt& a, const LaunchAt& b) {
    return std::tie(a.thread, a.start_ns, a.correlation) < std::tie(b.thread, b.start_ns, b.correlation);
  });
  std::vector<std::pair<std::int64_t, std::int32_t>> out;
  std::vector<const OpRange*> open;
  std::size_t i = 0;
  std::int64_t thread = 0;
  bool first = true;
  for (const LaunchAt& l : launches) {
    if (first || l.thread != thread) {
      // A new thread: skip the ranges of threads before it, start with nothing open.
      first = false;
      thread = l.thread;
      open.clear();
      while (i < ranges.size() && ranges[i].thread < thread) ++i;
    }
    while (i < ranges.size() && ranges[i].thread == thread && ranges[i].start_ns <= l.start_ns) {
      while (!open.empty() && open.back()->end_ns <= ranges[i].start_ns) open.pop_back();
      open.push_back(&ranges[i++]);
    }
    while (!open.empty() && open.back()->end_ns <= l.start_ns) open.pop_back();
    if (!open.empty() && open.back()->op >= 0) out.emplace_back(l.correlation, open.back()->op);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace overlap::traces
