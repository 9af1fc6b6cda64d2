#pragma once
// InputError: a user-input mistake (scenario, profile, --set) reported the way design.md "Scenario
// files" asks: the file, the 1-based line and the key path, e.g.
//   scenarios/x.yaml:12: hardware.gpu.sm_count: must be a positive integer (got -3)
// Loaders throw it; the CLI prints what() and exits with status 2.
#include <stdexcept>
#include <string>

namespace overlap {

class InputError : public std::runtime_error {
 public:
  // line <= 0 means "unknown" (e.g. a value that came from --set); file "" means inline input.
  InputError(std::string file, int line, std::string key_path, std::string message);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& key_path() const { return key_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_ = 0;
  std::string key_path_;
  std::string message_;
};

}  // namespace overlap
