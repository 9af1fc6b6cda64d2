#pragma once
// The sanitizer build's share of a whole-corpus loop. A sanitized process runs every scenario several
// times slower than a release one, and the release build already runs every file of the corpus; under
// the sanitizers (tests/CMakeLists.txt defines OVERLAP_CORPUS_SAMPLE there) a loop keeps one file in
// N of the sorted list, always the same ones, so a failure reproduces and each folder keeps its share.
#include <cstddef>
#include <string>
#include <vector>

#ifndef OVERLAP_CORPUS_SAMPLE
#define OVERLAP_CORPUS_SAMPLE 1
#endif

namespace overlap::test {

inline constexpr std::size_t kCorpusSample = OVERLAP_CORPUS_SAMPLE;
static_assert(kCorpusSample >= 1, "OVERLAP_CORPUS_SAMPLE must be at least 1");

// Files 0, N, 2N, ... of `sorted` (the caller sorts, so the choice does not depend on the directory
// order of the file system).
inline std::vector<std::string> corpus_sample(const std::vector<std::string>& sorted) {
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < sorted.size(); i += kCorpusSample) kept.push_back(sorted[i]);
  return kept;
}

}  // namespace overlap::test
