#include "cost_model/input_error.hpp"

#include <utility>

namespace overlap {
namespace {

std::string format_input_error(const std::string& file, int line, const std::string& key_path,
                               const std::string& message) {
  // Built with append() only: GCC 12 at -O3 reports a false -Wrestrict on `":" + std::to_string()`.
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    out.append(":");
    out.append(std::to_string(line));
  }
  out.append(": ");
  if (!key_path.empty()) {
    out.append(key_path);
    out.append(": ");
  }
  out.append(message);
  return out;
}

}  // namespace

InputError::InputError(std::string file, int line, std::string key_path, std::string message)
    : std::runtime_error(format_input_error(file, line, key_path, message)),
      file_(std::move(file)),
      line_(line),
      key_path_(std::move(key_path)),
      message_(std::move(message)) {}

}  // namespace overlap
