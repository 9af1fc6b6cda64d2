// libFuzzer target: the nccl-tests importer (cost_model/nccl_tests_import.hpp) on arbitrary text,
// as load_nccl_tests_file reads it (JSON when the first non-blank character is '{', else the text
// table), then the curve and busbw factor a profile would take from it. A refused JSON report also
// runs json_line_of (cost_model/json_lines.hpp) over the fuzzed text.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "cost_model/nccl_tests_import.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  overlap::fuzz::expect_refusal_or_success([&] {
    overlap::NcclTestsResult result;
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') {
      const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) return;  // load_nccl_tests_file reports a JSON syntax error
      result = overlap::parse_nccl_tests_json(j, "fuzz.json", &text);  // errors find their line in the text
    } else {
      std::istringstream lines(text);
      result = overlap::parse_nccl_tests_text(lines, "fuzz.txt");
    }
    for (bool in_place : {false, true}) {
      (void)result.curve(in_place);
      (void)result.observed_busbw_factor(in_place);
    }
  });
  return 0;
}
