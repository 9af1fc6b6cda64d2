// libFuzzer target: the hardware-profile loader (cost_model/profile_loader.hpp load_profile_file) on
// arbitrary YAML text plus optional --set lines (fuzz_input.hpp), read from a scratch file as
// `overlap-sim profile show FILE` reads it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "cost_model/profile_json.hpp"
#include "cost_model/profile_loader.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  static const std::string path = "/tmp/overlap-fuzz-profile-" + std::to_string(::getpid()) + ".yaml";
  const overlap::fuzz::SplitInput in = overlap::fuzz::split_input(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << in.text;
  }
  // A loaded profile goes to JSON (`profile show --format json`): its text must be valid UTF-8.
  overlap::fuzz::expect_refusal_or_success(
      [&] { (void)overlap::profile_to_json(overlap::load_profile_file(path, in.sets)).dump(); });
  return 0;
}
