#pragma once
// Outputs are written atomically: to a temporary file beside the target, then renamed over it, so a
// reader never sees a half-written result and a failed run leaves the old file in place.
//
// What the rename may replace is checked first (resolve_output), because a rename replaces
// whatever the name points at:
//   - a regular file, or a name that does not exist yet: written atomically;
//   - a symbolic link: followed (every link of a chain); the file it points at is written atomically
//     in that file's own directory, and the link stays a link;
//   - `-`: the process's standard output, written in place;
//   - a named pipe (FIFO) or a character device (/dev/null, /dev/stdout's terminal): written in place
//     (there is nothing to rename over; a pipe with no reader is refused instead of blocking);
//   - a directory, a block device or a socket: refused.
// Every refusal and every failed system call is an OutputError naming the path and the OS error;
// the CLI reports it with exit status 2.
//
// No output replaces an input. While an InputFileLog is open (the CLI opens one for each command),
// every file the command reads is noted: read_input_file (cost_model/input_file.hpp) notes each file
// it reads, a reader that opens its files itself (the trace readers: gzip, SQLite) calls
// note_input_file. Every writer here then refuses a target that is one of them, and the commands call
// check_outputs_not_inputs with their flags' names as soon as their inputs are read, before the work.
// "The same file" is the same device and inode (hard links, symbolic links) or, for an output that
// does not exist yet, the same directory (symlinks resolved) and name.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace overlap {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  OutputError(const std::string& what, std::vector<std::string> written)
      : std::runtime_error(what), written_(std::move(written)) {}
  // The outputs already in place when the error came (a StagedOutputs::commit that failed part way);
  // empty when nothing was written.
  const std::vector<std::string>& written() const { return written_; }

 private:
  std::vector<std::string> written_;
};

// What a command adds to the message of an error that stopped its outputs: "(nothing was written)",
// or, after a commit that failed part way, which outputs are in place and which are not.
std::string written_note(const std::exception& e);

struct OutputTarget {
  std::string given;   // as the user wrote it
  std::string target;  // the file the bytes go to: symlinks followed; "-" for standard output
  bool in_place = false;  // written in place (stdout, FIFO, character device), not by rename
};

// Throws OutputError for an empty path, a directory, a block device, a socket, a symlink loop, or
// a directory that does not exist.
OutputTarget resolve_output(const std::string& path);

// Refuses (OutputError, before anything is written) two outputs of one command that name the same
// file: compared after resolving (symlinks followed, realpath of the parent directory + the file
// name, and the same device and inode when the file exists). `outputs` holds (flag, path) pairs;
// empty paths (an output not asked for) are skipped. The message names both flags and the path.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// Throws OutputError naming the path (and the OS error) on failure, or when the path is an input
// the command read (InputFileLog).
void write_file_atomically(const std::string& path, const std::string& content);

// The input files of one command, noted while it is open. One log at a time per process (the
// constructor throws std::logic_error for a second); noting is safe from several threads (a sweep
// loads its points in parallel). Without an open log nothing is noted and nothing is refused (the
// Python module, the calibration programs).
class InputFileLog {
 public:
  InputFileLog();
  ~InputFileLog();
  InputFileLog(const InputFileLog&) = delete;
  InputFileLog& operator=(const InputFileLog&) = delete;
};

// Notes `path` (which exists and was read) as an input of kind `what` ("scenario", "hardware
// profile", "trace"); nothing without an open log.
void note_input_file(const std::string& path, const std::string& what);
// Drops the inputs of kind `what`: files a command reads back because they are its own outputs
// (`sweep --resume` reads -o FILE and its checkpoints, `validate --record` its previous record).
void forget_input_files(const std::string& what);
// Refuses (OutputError, before anything is written) an output that is an input of this command:
// "-o s.yaml would replace the scenario s.yaml this command reads ... (nothing was written)".
// `outputs` holds (flag, path) pairs; "" and "-" are skipped, as are paths the writer refuses for
// another reason (resolve_output reports those).
void check_outputs_not_inputs(const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace overlap

namespace overlap {

// Several outputs of one command that appear together or not at all (`run -o r.json --trace t.json
// --plot p.png`): each is first written to a temporary file beside its target, and only when every
// one has been produced are they renamed into place. A failure before commit() (a directory that
// does not exist, a plotting script that fails) leaves every target untouched; the destructor
// removes the temporaries of an uncommitted set. An in-place target (stdout, a FIFO, a character
// device) is held until commit() and written then.
class StagedOutputs {
 public:
  StagedOutputs() = default;
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;
  ~StagedOutputs();

  // Writes `content` to the temporary of `path`; throws OutputError naming `path`.
  void stage(const std::string& path, const std::string& content);
  // The temporary path of `path` for another program to write (it keeps the file name's
  // extension, so a plotting library picks the format from it). Checks the directory is writable.
  std::string reserve(const std::string& path);
  // Renames every temporary over its target (or writes it in place), in the order staged.
  void commit();

 private:
  struct Entry {
    OutputTarget out;
    std::string temporary;
  };
  std::vector<Entry> entries_;
  bool committed_ = false;
};

}  // namespace overlap
