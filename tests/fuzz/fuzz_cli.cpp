// libFuzzer target: the whole command line (tools/cli.hpp run_cli, in process) on arbitrary
// arguments, one a line: the commands' number options, --set/--param/--sweep values, and output
// paths against a scratch directory that holds a named pipe, symbolic links (one to the pipe, one to
// a file, one to itself), a directory and a file with known text. After every run:
//   - an internal error (exit 1, stderr starting "overlap-sim: internal error: ") aborts;
//   - so does a fixture that changed: the pipe no longer a pipe, a link no longer a link, the
//     directory gone, the file's text overwritten by a refused command (outputs must never damage
//     what they replace, cost_model/atomic_file.hpp);
//   - everything else the run wrote is removed.
// Arguments may not contain '/' (nothing outside the scratch directory is ever named as an output;
// scenarios are named as the source tree's bare names), nor be "-" (standard output) or --plot
// (a Python subprocess); validate and collective are not run (their inputs have their own targets).
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli.hpp"

namespace {

namespace fs = std::filesystem;

const std::set<std::string> kFixtures = {"fifo", "fifolink", "link.json", "target.json", "loop", "dir", "keep.txt"};

std::string scratch() {
  static const std::string dir = [] {
    const fs::path d = fs::temp_directory_path() / ("overlap-fuzz-cli-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d / "dir");
    if (::mkfifo((d / "fifo").c_str(), 0600) != 0) std::abort();
    fs::create_symlink("fifo", d / "fifolink");
    fs::create_symlink("target.json", d / "link.json");
    fs::create_symlink("loop", d / "loop");
    std::ofstream(d / "keep.txt") << "old";
    std::ofstream(d / "target.json") << "old";
    fs::current_path(d);
    return d.string();
  }();
  return dir;
}

mode_t kind(const char* name) {
  struct stat st {};
  if (::lstat(name, &st) != 0) return 0;
  return st.st_mode & S_IFMT;
}

std::string text_of(const char* name) {
  std::ifstream in(name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

[[noreturn]] void damaged(const char* what) {
  std::fprintf(stderr, "fuzz_cli: an output damaged a fixture: %s\n", what);
  std::abort();
}

// The fixtures are as made; what the run added is removed (target.json may be rewritten by a
// successful run through link.json: its text is restored).
void check_and_reset() {
  if (kind("fifo") != S_IFIFO) damaged("fifo is no longer a named pipe");
  if (kind("fifolink") != S_IFLNK) damaged("fifolink is no longer a symbolic link");
  if (kind("link.json") != S_IFLNK) damaged("link.json is no longer a symbolic link");
  if (kind("loop") != S_IFLNK) damaged("loop is no longer a symbolic link");
  if (kind("dir") != S_IFDIR) damaged("dir is no longer a directory");
  if (kind("keep.txt") != S_IFREG) damaged("keep.txt is no longer a regular file");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(".", ec)) {
    const std::string name = e.path().filename().string();
    if (!kFixtures.count(name)) fs::remove_all(e.path(), ec);
  }
  for (const auto& e : fs::directory_iterator("dir", ec)) fs::remove_all(e.path(), ec);
  std::ofstream(std::string("keep.txt"), std::ios::trunc) << "old";
  std::ofstream(std::string("target.json"), std::ios::trunc) << "old";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  (void)scratch();
  std::vector<std::string> args;
  std::string cur;
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  if (args.empty() || args.size() > 32) return 0;
  static const std::set<std::string> commands = {"run", "tune", "sweep", "profile", "schemes"};
  if (!commands.count(args[0])) return 0;
  for (const std::string& a : args) {
    if (a.find('/') != std::string::npos || a == "-" || a.rfind("--plot", 0) == 0 || a.find('\0') != std::string::npos)
      return 0;
  }
  const bool keep_before = text_of("keep.txt") == "old";
  if (!keep_before) std::abort();
  std::vector<const char*> argv = {"overlap-sim"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int rc = overlap::tools::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  // (The prefix as run_cli prints it: an argument echoed in a message may contain the words.)
  if (rc == overlap::tools::kExitInternal && err.str().rfind("overlap-sim: internal error: ", 0) == 0) {
    std::fprintf(stderr, "fuzz_cli: internal error (exit %d): %s\n", rc, err.str().c_str());
    std::abort();
  }
  // A command that was refused wrote nothing: keep.txt (a possible -o target) still says "old".
  if (rc == 2 && text_of("keep.txt") != "old") damaged("a refused command overwrote keep.txt");
  check_and_reset();
  return 0;
}
