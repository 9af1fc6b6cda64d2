// Trace file checks (calibrate/traces/trace_limits.hpp).
#include "calibrate/traces/trace_limits.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"

namespace overlap::traces {
namespace {

void check_stat(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) throw InputError(path, 0, "", "is a directory, not a trace file");
  if (!S_ISREG(st.st_mode))
    throw InputError(path, 0, "",
                     fmt::format("is {}, not a regular file: a trace must be a file on disk (it is read twice, and a "
                                 "pipe or device may never end)",
                                 S_ISFIFO(st.st_mode)   ? "a FIFO (named pipe)"
                                 : S_ISCHR(st.st_mode)  ? "a character device"
                                 : S_ISBLK(st.st_mode)  ? "a block device"
                                 : S_ISSOCK(st.st_mode) ? "a socket"
                                                        : "not a regular file"));
  if (static_cast<std::uint64_t>(st.st_size) > kMaxTraceFileBytes)
    throw InputError(path, 0, "",
                     fmt::format("is {} bytes; a trace file may have at most {} GiB ({} bytes)",
                                 static_cast<long long>(st.st_size), kMaxTraceFileBytes >> 30, kMaxTraceFileBytes));
}

}  // namespace

void check_trace_file(const std::string& path) {
  if (path.empty()) throw InputError(path, 0, "", "an empty path names no trace file");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path, 0, "", std::string("cannot open the trace: ") + std::strerror(errno));
  check_stat(path, st);
}

std::FILE* open_trace_file(const std::string& path) {
  check_trace_file(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InputError(path, 0, "", std::string("cannot open the trace: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(path, 0, "", std::string("cannot read the trace: ") + std::strerror(err));
  }
  try {
    check_stat(path, st);
  } catch (...) {
    ::close(fd);
    throw;
  }
  // A regular file: reads never block, so the descriptor can go back to blocking mode.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::FILE* f = ::fdopen(fd, "rb");
  if (!f) {
    const int err = errno;
    ::close(fd);
    throw InputError(path, 0, "", std::string("cannot open the trace: ") + std::strerror(err));
  }
  return f;
}

std::int64_t add_ns(std::int64_t a, std::int64_t b, const std::string& file, const char* what) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw InputError(file, 0, "", fmt::format("{} overflows 64-bit nanoseconds: the trace's times are out of range", what));
  return sum;
}

}  // namespace overlap::traces
