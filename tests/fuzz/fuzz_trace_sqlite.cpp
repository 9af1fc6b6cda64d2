// libFuzzer target: the Nsight Systems SQLite reader (calibrate/traces/nsys_reader.hpp). The input
// is a database file's bytes, written to a scratch directory of its own and read plain and with
// --strict (fuzz_trace_common.hpp). Seeds: the SQL fixtures of tests/data/trace loaded into small
// databases (tools/fuzz.sh, tests/fuzz/make_trace_sqlite_seeds.py), hostile schemas among them.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "fuzz_trace_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  static const std::string dir = "/tmp/overlap-fuzz-trace-sqlite-" + std::to_string(::getpid());
  static const bool made = (::mkdir(dir.c_str(), 0700), true);
  (void)made;
  const std::string path = dir + "/export.sqlite";
  // SQLite may leave a journal beside a database it found hot: none must leak into the next input.
  ::unlink((path + "-journal").c_str());
  ::unlink((path + "-wal").c_str());
  ::unlink((path + "-shm").c_str());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  overlap::fuzz::read_and_check(path);
  return 0;
}
