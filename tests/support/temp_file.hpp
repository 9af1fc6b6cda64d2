#pragma once
// A file path or a directory under the temporary directory, unique to the test process and removed
// when it goes out of scope, and whole files written and read as text (the CLI tests that give a
// command its inputs and check what it wrote).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace overlap::test {

// The build directory the test binary belongs to (<build>/tests/overlap_tests), for files a test
// leaves for a person to look at. Found from the running executable rather than compiled in, so the
// test files compile to the same objects in every build directory (tests/CMakeLists.txt).
inline std::filesystem::path binary_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return std::filesystem::temp_directory_path();
  return exe.parent_path().parent_path();
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A fresh directory per object (the process id and a counter), removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag = "test") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("overlap-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Writes `text` to the file `name` inside and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    write_text(file(name), text);
    return file(name);
  }
  // The names directly inside, sorted (what a command left behind).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("overlap-export-" + std::to_string(::getpid()) + "-" + name))
                 .string()) {}
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

}  // namespace overlap::test
