#include "cost_model/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "cost_model/atomic_file.hpp"
#include "cost_model/input_error.hpp"

namespace overlap {
namespace {

// Closes the descriptor on every path out (exceptions included).
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string file_kind_text(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string label(const std::string& what) { return what.empty() ? std::string("input") : what; }

[[noreturn]] void refuse(const std::string& path, const std::string& message) {
  throw InputError(path, 0, "", message);
}

std::string mib(std::int64_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + " MiB (" + std::to_string(bytes) + " bytes)";
}

std::optional<std::string> read_impl(const std::string& path, const std::string& what, bool missing_ok,
                                     std::int64_t max_bytes) {
  if (path.empty()) refuse(path, "an empty path names no " + label(what) + " file");
  // stat() first so a FIFO or device is refused before open() could block on it; then open with
  // O_NONBLOCK and check the descriptor again (the path may have changed in between).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT && missing_ok) return std::nullopt;
    refuse(path, "cannot open " + label(what) + " file: " + std::strerror(err));
  }
  const auto check = [&](const struct stat& s) {
    if (!S_ISREG(s.st_mode))
      refuse(path, "is " + file_kind_text(s.st_mode) + "; a " + label(what) + " must be a regular file");
    if (s.st_size > max_bytes)
      refuse(path, "is " + std::to_string(static_cast<long long>(s.st_size)) + " bytes; a " + label(what) +
                       " file may have at most " + mib(max_bytes));
  };
  check(st);
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (f.fd < 0) refuse(path, "cannot open " + label(what) + " file: " + std::strerror(errno));
  if (::fstat(f.fd, &st) != 0) refuse(path, "cannot read " + label(what) + " file: " + std::strerror(errno));
  check(st);
  std::string out;
  out.reserve(static_cast<std::size_t>(st.st_size));  // at most max_bytes: checked above
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kInputReadSeconds);
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        if (std::chrono::steady_clock::now() > deadline)
          refuse(path, "reading took longer than " + std::to_string(kInputReadSeconds) + " s; refused");
        continue;
      }
      refuse(path, "cannot read " + label(what) + " file: " + std::strerror(errno));
    }
    out.append(buf, static_cast<std::size_t>(n));
    // The file may grow while it is read: the cap holds for what is read, not only for stat.
    if (static_cast<std::int64_t>(out.size()) > max_bytes)
      refuse(path, "grew past " + mib(max_bytes) + " while being read; a " + label(what) + " file may have at most " +
                       mib(max_bytes));
    if (std::chrono::steady_clock::now() > deadline)
      refuse(path, "reading took longer than " + std::to_string(kInputReadSeconds) + " s; refused");
  }
  // An input of the command: no output of it may replace this file (cost_model/atomic_file.hpp).
  note_input_file(path, label(what));
  return out;
}

}  // namespace

std::string read_input_file(const std::string& path, const std::string& what, std::int64_t max_bytes) {
  return *read_impl(path, what, false, max_bytes);
}

std::optional<std::string> read_input_file_if_exists(const std::string& path, const std::string& what,
                                                     std::int64_t max_bytes) {
  return read_impl(path, what, true, max_bytes);
}

}  // namespace overlap
