#pragma once
// The one way a user-named input file is read (scenarios, hardware profiles, nccl-tests output,
// sweep files, `validate DIR` files, the papers' scenarios). A path the user types may name a
// directory, a device (/dev/zero never ends), a FIFO (blocks forever) or a huge file; each is
// refused at once with an InputError naming the path (exit 2) instead of hanging or exhausting
// memory. Regular files only, at most kMaxInputFileBytes, read within kInputReadSeconds.
#include <cstdint>
#include <optional>
#include <string>

namespace overlap {

// 16 MiB: the largest input in the tree (a sweep or calibration JSON) is a few hundred KiB; a
// scenario or profile is a few KiB. Anything near this is not a hand-written input.
inline constexpr std::int64_t kMaxInputFileBytes = 16LL * 1024 * 1024;
// A regular file of at most 16 MiB reads in milliseconds from any local disk; a read that takes
// longer is a stalled network filesystem or a file being rewritten under us.
inline constexpr int kInputReadSeconds = 10;

// The whole file as bytes. Throws InputError(path, 0, "", why) when the path does not exist, is not
// a regular file (directory, device, FIFO, socket), is larger than kMaxInputFileBytes, cannot be
// read, or does not finish reading within kInputReadSeconds. `what` names the kind of input in the
// message ("scenario", "hardware profile"); may be empty.
// `max_bytes` raises the cap only for the program's own outputs read back (a --resume sweep).
std::string read_input_file(const std::string& path, const std::string& what = "",
                            std::int64_t max_bytes = kMaxInputFileBytes);

// As read_input_file, but a path that does not exist gives nullopt (e.g. a sweep output that a
// --resume run has not written yet); every other refusal still throws.
std::optional<std::string> read_input_file_if_exists(const std::string& path, const std::string& what = "",
                                                     std::int64_t max_bytes = kMaxInputFileBytes);

}  // namespace overlap
