#pragma once
// The sanitizer build's share of a whole-corpus loop. A sanitized process runs every scenario several
// times slower than a release one, and the release build already runs every file of the corpus; under
// the sanitizers (tests/CMakeLists.txt sets OVERLAP_CORPUS_SAMPLE=N in every test's environment there)
// a loop keeps one file in N of the sorted list, always the same ones, so a failure reproduces and
// each folder keeps its share. Read at run time, not compiled in: the test files compile to the same
// objects in both builds (tests/CMakeLists.txt, "One compile for both builds").
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

namespace overlap::test {

// N from the environment; 1 (every file) when unset or not a positive integer.
inline std::size_t corpus_sample_every() {
  const char* text = std::getenv("OVERLAP_CORPUS_SAMPLE");
  if (text == nullptr) return 1;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  return (end != text && *end == '\0' && n >= 1) ? static_cast<std::size_t>(n) : 1;
}

// Files 0, N, 2N, ... of `sorted` (the caller sorts, so the choice does not depend on the directory
// order of the file system).
inline std::vector<std::string> corpus_sample(const std::vector<std::string>& sorted) {
  const std::size_t every = corpus_sample_every();
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < sorted.size(); i += every) kept.push_back(sorted[i]);
  return kept;
}

}  // namespace overlap::test
