#include "cost_model/input_error.hpp"

#include <utility>

#include "cost_model/bounded_message.hpp"

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

// Every part bounded (cost_model/bounded_message.hpp): a value quoted from the input, however long,
// gives a message of a few lines. Bounding costs a pass over each part, done twice (the base class is
// built first); a message is short unless the input made it long.
InputError::InputError(std::string file, int line, std::string key_path, std::string message)
    : std::runtime_error(format_input_error(bounded_message(file), line, bounded_message(key_path),
                                            bounded_message(message))),
      file_(bounded_message(file)),
      line_(line),
      key_path_(bounded_message(key_path)),
      message_(bounded_message(message)) {}

}  // namespace overlap
