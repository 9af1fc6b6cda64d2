#pragma once
// Outputs are written atomically: to a temporary file beside the target, then renamed over it, so a
// reader never sees a half-written result and a failed run leaves the old file in place.
#include <string>
#include <vector>

namespace overlap {

// Throws std::runtime_error naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace overlap

namespace overlap {

// Several outputs of one command that appear together or not at all (`run -o r.json --trace t.json
// --plot p.png`): each is first written to a temporary file beside its target, and only when every
// one has been produced are they renamed into place. A failure before commit() (a directory that
// does not exist, a plotting script that fails) leaves every target untouched; the destructor
// removes the temporaries of an uncommitted set.
class StagedOutputs {
 public:
  StagedOutputs() = default;
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;
  ~StagedOutputs();

  // Writes `content` to the temporary of `path`; throws std::runtime_error naming `path`.
  void stage(const std::string& path, const std::string& content);
  // The temporary path of `path` for another program to write (it keeps the file name's
  // extension, so a plotting library picks the format from it). Checks the directory is writable.
  std::string reserve(const std::string& path);
  // Renames every temporary over its target, in the order staged.
  void commit();

 private:
  struct Entry {
    std::string target, temporary;
  };
  std::vector<Entry> entries_;
  bool committed_ = false;
};

}  // namespace overlap
