#pragma once
// Shared by the libFuzzer targets (tests/fuzz/README.md): how a fuzz input is split, and which
// exceptions are the refusals the CLI turns into exit 2 (tools/cli.cpp). Anything else escaping a
// loader would be an internal error (exit 1): the target aborts so libFuzzer saves the input.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "cost_model/input_error.hpp"
#include "cost_model/units.hpp"

namespace overlap::fuzz {

// Input: YAML text, optionally followed by a line "#--set" and then one `--set` assignment per line.
struct SplitInput {
  std::string text;
  std::vector<std::string> sets;
};

inline SplitInput split_input(const char* data, std::size_t size) {
  const std::string all(data, size);
  SplitInput in;
  const std::string marker = "\n#--set\n";
  const std::size_t at = all.find(marker);
  in.text = all.substr(0, at);
  if (at == std::string::npos) return in;
  std::size_t pos = at + marker.size();
  while (pos < all.size() && in.sets.size() < 16) {
    const std::size_t nl = all.find('\n', pos);
    const std::string line = all.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (!line.empty()) in.sets.push_back(line);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return in;
}

[[noreturn]] inline void internal_error(const char* what) {
  std::fprintf(stderr, "fuzz: an exception the CLI would report as an internal error: %s\n", what);
  std::abort();
}

// Runs `load`; the refusals the CLI maps to exit 2 are fine, anything else aborts.
template <class F>
void expect_refusal_or_success(F&& load) {
  try {
    load();
  } catch (const InputError&) {
  } catch (const RangeError&) {
  } catch (const std::exception& e) {
    internal_error(e.what());
  }
}

}  // namespace overlap::fuzz
