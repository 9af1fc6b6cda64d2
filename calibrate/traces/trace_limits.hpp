#pragma once
// The caps on what `overlap-sim trace` and `profile fit` read from a trace file, each checked before
// the work it bounds (docs/reference/limits.md, "Traces and profile fit"). A file past a cap is
// refused (InputError naming the file and the cap), never read in part.
#include <cstdint>
#include <cstdio>
#include <string>

namespace overlap::traces {

// A trace on disk, plain JSON or SQLite (a gzip file: its compressed size). A 1 GB trace holds a few
// million events; 16 GiB is far past any trace the profilers write for one rank.
inline constexpr std::uint64_t kMaxTraceFileBytes = std::uint64_t{16} << 30;
// A gzip trace's decompressed JSON: the same cap as a plain file, counted as it inflates.
inline constexpr std::uint64_t kMaxTraceJsonBytes = std::uint64_t{16} << 30;
// Decompressed bytes per compressed byte, past the first kGzipRatioFreeBytes: deflate tops out near
// 1032:1 (zlib's technical details page, "Maximum compression factor") and profiler JSON compresses
// about 10:1 to 30:1, so 200:1 lets every real trace through and stops a gzip bomb early.
inline constexpr std::uint64_t kMaxGzipRatio = 200;
inline constexpr std::uint64_t kGzipRatioFreeBytes = std::uint64_t{64} << 20;
// One JSON token (a string, a number, a literal) and one run of whitespace between tokens: the
// JSON reader buffers a token whole. Kernel names of deep C++ templates run to tens of KiB.
inline constexpr std::uint64_t kMaxJsonTokenBytes = std::uint64_t{16} << 20;
inline constexpr std::uint64_t kMaxJsonWhitespaceRun = std::uint64_t{1} << 20;
// Rows read from each table of an Nsight Systems export, and GPU activities kept per file (64
// bytes each: 2^27 of them are 8 GiB).
inline constexpr std::int64_t kMaxTraceRows = std::int64_t{1} << 28;
inline constexpr std::int64_t kMaxTraceActivities = std::int64_t{1} << 27;
// SQLite virtual-machine steps per query, counted by sqlite3_progress_handler every kSqliteStepGrain
// instructions: a table scan and sort take tens to a few hundred steps per row, so 2^36 (69 billion)
// covers an export of several hundred million rows, while a query that loops (a view over a
// recursive CTE, if one got through the table check) stops within minutes (about 10^9 steps/s).
inline constexpr std::int64_t kMaxSqliteSteps = std::int64_t{1} << 36;
inline constexpr int kSqliteStepGrain = 1 << 16;
// Timestamps and durations, nanoseconds: an event's start in [0, 2^62) and its end (start + dur)
// too. 2^62 ns is 146 years, so epoch timestamps fit; sums of durations are checked as they add.
inline constexpr std::int64_t kMaxTraceTimeNs = std::int64_t{1} << 62;
// distributedInfo's rank and world_size: the largest world the simulator models.
inline constexpr std::int64_t kMaxTraceWorldSize = std::int64_t{1} << 24;

// Throws InputError naming `path` unless it is a regular file (after links) of at most
// kMaxTraceFileBytes: a FIFO, a device or a directory would block or never end.
void check_trace_file(const std::string& path);
// check_trace_file, then the file opened for reading without blocking and checked again through
// its descriptor (the path may have changed in between). Never null: throws InputError instead.
std::FILE* open_trace_file(const std::string& path);

// a + b for nanosecond sums; throws InputError naming `file` and `what` when the sum leaves int64.
std::int64_t add_ns(std::int64_t a, std::int64_t b, const std::string& file, const char* what);

}  // namespace overlap::traces
