#include "calibrate/core/output_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace overlap::calibrate {

void write_output_file(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (!target.parent_path().empty()) fs::create_directories(target.parent_path(), ec);
  const fs::path tmp =
      target.parent_path() / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + path + "'");
    out << content;
    out.flush();
    if (!out) throw std::runtime_error("cannot write '" + path + "'");
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("cannot write '" + path + "' (rename failed)");
  }
}

}  // namespace overlap::calibrate
