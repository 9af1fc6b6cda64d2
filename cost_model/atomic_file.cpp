#include "cost_model/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>

namespace overlap {
namespace {

namespace fs = std::filesystem;

// Linux's own limit on symbolic links followed in one lookup (path_resolution(7)).
constexpr int kMaxSymlinks = 40;

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw OutputError("cannot write '" + path + "': " + why);
}

[[noreturn]] void fail_errno(const std::string& path, const std::string& doing, int err) {
  fail(path, doing + ": " + std::strerror(err));
}

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Every byte of `content` to `fd`; false (errno set) on a failed write.
bool write_all(int fd, const std::string& content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

// Writes into a FIFO, a character device or standard output as it is (no rename can replace it).
void write_in_place(const OutputTarget& t, const std::string& content) {
  if (t.target == "-") {
    std::fflush(stdout);
    if (!write_all(STDOUT_FILENO, content)) fail_errno(t.given, "writing to standard output", errno);
    return;
  }
  // O_NONBLOCK: a FIFO nobody reads fails at once (ENXIO) instead of blocking forever.
  const int fd = ::open(t.target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENXIO) fail(t.given, "it is a named pipe with no reader");
    fail_errno(t.given, "opening it", err);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
    ::close(fd);
    fail(t.given, "it changed while being opened");
  }
  // Back to blocking writes: a reader that is slower than us is not an error.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const bool ok = write_all(fd, content);
  const int err = errno;
  ::close(fd);
  if (!ok) fail_errno(t.given, "writing", err);
}

// The temporary beside `target`: ".tmp.<pid>.<n>.<name>", hidden, one filesystem with the target
// (so the rename is atomic), ending in the target's own name and extension.
std::string temporary_for(const std::string& target) {
  static int counter = 0;
  const fs::path p(target);
  const std::string name = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter) + "." + p.filename().string();
  return (p.parent_path() / name).string();
}

// Creates the temporary (exclusively) with `content`; the mode of the file it will replace, else
// 0666 less the umask.
std::string write_temporary(const OutputTarget& t, const std::string& content) {
  const std::string tmp = temporary_for(t.target);
  mode_t mode = 0666;
  struct stat st {};
  const bool replacing = ::stat(t.target.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) fail_errno(t.given, "creating a temporary file beside it", errno);
  if (replacing) (void)::fchmod(fd, st.st_mode & 07777);
  bool ok = write_all(fd, content);
  int err = errno;
  if (ok && ::close(fd) != 0) {
    ok = false;
    err = errno;
  } else if (!ok) {
    ::close(fd);
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    fail_errno(t.given, "writing", err);
  }
  return tmp;
}

void rename_into_place(const OutputTarget& t, const std::string& tmp) {
  if (::rename(tmp.c_str(), t.target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail_errno(t.given, "moving the finished file into place", err);
  }
}

// The realpath of `path`'s directory plus its name (the name may not exist yet), symlinks followed.
std::string comparable_path(const OutputTarget& t) {
  if (t.target == "-") return "-";
  const fs::path p(t.target);
  const std::string dir = p.parent_path().empty() ? std::string(".") : p.parent_path().string();
  char buf[PATH_MAX];
  if (::realpath(dir.c_str(), buf) == nullptr) return t.target;
  return (fs::path(buf) / p.filename()).string();
}

// The inputs of the command running now (InputFileLog): each file's path as given, its kind, its
// realpath, device and inode. `log_open` is read without the lock on every write and note.
struct NotedInput {
  std::string path, what, canonical;
  dev_t dev = 0;
  ino_t ino = 0;
};
std::mutex inputs_mutex;
std::atomic<bool> log_open{false};
std::vector<NotedInput> inputs;

// The noted input that `path` (an output) would replace, if any.
std::optional<NotedInput> input_replaced_by(const std::string& path) {
  if (!log_open.load() || path.empty() || path == "-") return std::nullopt;
  OutputTarget t;
  try {
    t = resolve_output(path);
  } catch (const OutputError&) {
    return std::nullopt;  // the writer refuses it for its own reason, named there
  }
  if (t.in_place) return std::nullopt;  // an input is a regular file; this is a pipe or a device
  const std::string key = comparable_path(t);
  struct stat st {};
  const bool exists = ::stat(t.target.c_str(), &st) == 0;
  std::lock_guard<std::mutex> lock(inputs_mutex);
  for (const NotedInput& in : inputs) {
    if ((exists && in.dev == st.st_dev && in.ino == st.st_ino) || (!in.canonical.empty() && in.canonical == key)) return in;
  }
  return std::nullopt;
}

std::string replaces_input_message(const std::string& flag, const std::string& path, const NotedInput& in) {
  const std::string output = flag.empty() ? "the output '" + path + "'" : flag + " " + path;
  return output + " would replace " + in.path + ", the " + in.what +
         " file this command reads: an output never replaces an input; give the output another name (nothing "
         "was written)";
}

void refuse_if_input(const std::string& path) {
  if (const auto in = input_replaced_by(path)) throw OutputError(replaces_input_message("", path, *in));
}

}  // namespace

std::string written_note(const std::exception& e) {
  const auto* out = dynamic_cast<const OutputError*>(&e);
  if (!out || out->written().empty()) return "(nothing was written)";
  std::string list;
  for (const std::string& w : out->written()) list += (list.empty() ? "" : ", ") + w;
  return "(" + list + (out->written().size() == 1 ? " was" : " were") +
         " written before this failure; the other outputs were not)";
}

InputFileLog::InputFileLog() {
  std::lock_guard<std::mutex> lock(inputs_mutex);
  if (log_open.load()) throw std::logic_error("InputFileLog: a log is already open in this process");
  inputs.clear();
  log_open = true;
}

InputFileLog::~InputFileLog() {
  std::lock_guard<std::mutex> lock(inputs_mutex);
  log_open = false;
  inputs.clear();
}

void note_input_file(const std::string& path, const std::string& what) {
  if (!log_open.load()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // not there: nothing an output could replace
  NotedInput in{path, what.empty() ? std::string("input") : what, "", st.st_dev, st.st_ino};
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) in.canonical = buf;
  std::lock_guard<std::mutex> lock(inputs_mutex);
  if (log_open.load()) inputs.push_back(std::move(in));
}

void forget_input_files(const std::string& what) {
  std::lock_guard<std::mutex> lock(inputs_mutex);
  std::erase_if(inputs, [&](const NotedInput& in) { return in.what == what; });
}

void check_outputs_not_inputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (const auto& [flag, path] : outputs)
    if (const auto in = input_replaced_by(path)) throw OutputError(replaces_input_message(flag, path, *in));
}

OutputTarget resolve_output(const std::string& path) {
  if (path.empty()) throw OutputError("an empty output path names no file (give a file name, or - for standard output)");
  OutputTarget t;
  t.given = path;
  if (path == "-") {
    t.target = "-";
    t.in_place = true;
    return t;
  }
  // A trailing slash names a directory, never a file to create.
  if (path.back() == '/') fail(path, "the path ends in '/' (a directory)");
  std::string current = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0) {
      const int err = errno;
      if (err != ENOENT) fail_errno(path, "looking it up", err);
      break;  // a new file: its directory must exist
    }
    if (S_ISLNK(st.st_mode)) {
      if (hops >= kMaxSymlinks) fail(path, "more than " + std::to_string(kMaxSymlinks) + " symbolic links (a loop?)");
      std::error_code ec;
      const fs::path link = fs::read_symlink(current, ec);
      if (ec) fail(path, "reading the symbolic link: " + ec.message());
      // A relative link is relative to the link's own directory.
      current = link.is_absolute() ? link.string() : (fs::path(current).parent_path() / link).string();
      continue;
    }
    if (S_ISREG(st.st_mode)) break;
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
      t.target = current;
      t.in_place = true;
      return t;
    }
    fail(path, "it is " + kind_of(st.st_mode) + (current == path ? "" : " (a symbolic link points at it)"));
  }
  t.target = current;
  const fs::path dir = fs::path(current).parent_path();
  const std::string d = dir.empty() ? std::string(".") : dir.string();
  struct stat ds {};
  if (::stat(d.c_str(), &ds) != 0) fail_errno(path, "directory '" + d + "'", errno);
  if (!S_ISDIR(ds.st_mode)) fail(path, "'" + d + "' is not a directory");
  return t;
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  struct Seen {
    std::string flag, given, key;
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  std::vector<Seen> seen;
  for (const auto& [flag, path] : outputs) {
    if (path.empty()) continue;
    Seen s{flag, path, "", false, 0, 0};
    try {
      const OutputTarget t = resolve_output(path);
      s.key = comparable_path(t);
      struct stat st {};
      if (t.target != "-" && ::stat(t.target.c_str(), &st) == 0) {
        s.exists = true;
        s.dev = st.st_dev;
        s.ino = st.st_ino;
      }
    } catch (const OutputError& e) {
      throw OutputError(flag + " " + path + ": " + e.what());
    }
    for (const Seen& o : seen) {
      if (o.key == s.key || (o.exists && s.exists && o.dev == s.dev && o.ino == s.ino))
        throw OutputError(o.flag + " " + o.given + " and " + s.flag + " " + s.given +
                          " name the same file; give each output its own file (nothing was written)");
    }
    seen.push_back(std::move(s));
  }
}

void write_file_atomically(const std::string& path, const std::string& content) {
  const OutputTarget t = resolve_output(path);
  refuse_if_input(path);
  if (t.in_place) {
    write_in_place(t, content);
    return;
  }
  rename_into_place(t, write_temporary(t, content));
}

StagedOutputs::~StagedOutputs() {
  if (committed_) return;
  for (const Entry& e : entries_) {
    if (!e.temporary.empty()) ::unlink(e.temporary.c_str());
  }
}

std::string StagedOutputs::reserve(const std::string& path) {
  const OutputTarget t = resolve_output(path);
  refuse_if_input(path);
  std::string tmp;
  if (t.in_place) {
    // Another program writes a regular temporary file; its bytes go to the target at commit().
    std::error_code ec;
    const fs::path dir = fs::temp_directory_path(ec);
    if (ec) fail(path, "no temporary directory: " + ec.message());
    tmp = temporary_for((dir / fs::path(t.target == "-" ? "stdout" : t.target).filename()).string());
  } else {
    tmp = temporary_for(t.target);
  }
  // Created (empty) now so an unwritable directory is found before anything runs.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail_errno(path, "creating a temporary file", errno);
  ::close(fd);
  entries_.push_back({t, tmp});
  return tmp;
}

void StagedOutputs::stage(const std::string& path, const std::string& content) {
  const std::string tmp = reserve(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) fail_errno(path, "opening its temporary file", errno);
  const bool ok = write_all(fd, content);
  int err = errno;
  const bool closed = ::close(fd) == 0;
  if (ok && !closed) err = errno;
  if (!ok || !closed) fail_errno(path, "writing", err);
}

void StagedOutputs::commit() {
  // A failure part way (a rename the OS refuses, a pipe whose reader left) leaves the outputs before
  // it in place: the error lists them, so no message claims that nothing was written.
  std::vector<std::string> written;
  for (Entry& e : entries_) {
    try {
      if (e.out.in_place) {
        std::ifstream in(e.temporary, std::ios::binary);
        const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in.good() && !in.eof()) fail(e.out.given, "reading back its temporary file");
        ::unlink(e.temporary.c_str());
        e.temporary.clear();
        write_in_place(e.out, content);
      } else {
        rename_into_place(e.out, e.temporary);
        e.temporary.clear();
      }
    } catch (const OutputError& err) {
      if (written.empty()) throw;
      throw OutputError(err.what(), written);
    }
    written.push_back(e.out.given);
  }
  committed_ = true;
}

}  // namespace overlap
