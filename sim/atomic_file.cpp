#include "sim/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace overlap {

void write_file_atomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  // The temporary lives in the target's directory so the rename stays on one filesystem.
  const fs::path tmp = target.parent_path() / fmt::format(".{}.tmp.{}", target.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(fmt::format("cannot write '{}'", path));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error(fmt::format("cannot write '{}': {}", path, ec.message()));
  }
}

}  // namespace overlap

namespace overlap {
namespace {

std::string temporary_for(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  // ".tmp.<pid>.<name>": beside the target (one filesystem, so rename is atomic), hidden, and
  // ending in the target's own name and extension.
  return (target.parent_path() / fmt::format(".tmp.{}.{}", ::getpid(), target.filename().string())).string();
}

}  // namespace

StagedOutputs::~StagedOutputs() {
  if (committed_) return;
  for (const Entry& e : entries_) {
    std::error_code ec;
    std::filesystem::remove(e.temporary, ec);
  }
}

std::string StagedOutputs::reserve(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw std::runtime_error("an empty output path");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw std::runtime_error(fmt::format("cannot write '{}': it is a directory", path));
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec))
    throw std::runtime_error(fmt::format("cannot write '{}': directory '{}' does not exist", path, dir.string()));
  const std::string tmp = temporary_for(path);
  {
    // Created (empty) now so an unwritable directory is found before anything runs.
    std::ofstream probe(tmp, std::ios::binary | std::ios::trunc);
    if (!probe) throw std::runtime_error(fmt::format("cannot write '{}'", path));
  }
  entries_.push_back({path, tmp});
  return tmp;
}

void StagedOutputs::stage(const std::string& path, const std::string& content) {
  const std::string tmp = reserve(path);
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path));
}

void StagedOutputs::commit() {
  namespace fs = std::filesystem;
  for (const Entry& e : entries_) {
    std::error_code ec;
    fs::rename(e.temporary, e.target, ec);
    if (ec) throw std::runtime_error(fmt::format("cannot write '{}': {}", e.target, ec.message()));
  }
  committed_ = true;
}

}  // namespace overlap
