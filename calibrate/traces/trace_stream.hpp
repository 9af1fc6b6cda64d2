#pragma once
// A trace file's JSON text as the streaming reader (kineto_reader.cpp) pulls it, bounded: the file
// is checked (check_trace_file) and opened without blocking, a gzip file is inflated here (every
// member of a multi-member file; bytes after the last member refuse the file, as a cut or appended
// file would otherwise read as whole), and the caps of trace_limits.hpp hold as the bytes pass:
// the decompressed size and ratio, the length of one JSON token, and a run of whitespace between
// tokens, of which only the first kMaxJsonWhitespaceRun bytes are passed on (whitespace between
// tokens means nothing in JSON, RFC 8259 section 2; the JSON parser would buffer the run whole).
// A cap hit or a read error ends the stream early with error() set: the caller reports error()
// before the parser's own complaint about the early end.
#include <cstdint>
#include <cstdio>
#include <streambuf>
#include <string>
#include <vector>

#include <zlib.h>

namespace overlap::traces {

class TraceStreamBuf : public std::streambuf {
 public:
  // Throws InputError (check_trace_file) when the path is not a regular file within the caps.
  explicit TraceStreamBuf(const std::string& path);
  ~TraceStreamBuf() override;
  TraceStreamBuf(const TraceStreamBuf&) = delete;
  TraceStreamBuf& operator=(const TraceStreamBuf&) = delete;

  // Why the stream ended early ("" when it ended at the end of the document).
  const std::string& error() const { return error_; }
  bool gzip() const { return gzip_; }
  std::uint64_t bytes_out() const { return out_total_; }

 protected:
  int_type underflow() override;

 private:
  bool fill_raw();                        // reads the next chunk of the file; false at its end
  bool next_chunk(std::vector<char>& to);  // the next decompressed (or plain) bytes; false at the end
  void filter(const char* data, std::size_t n);
  void fail(std::string why);

  std::string path_;
  std::FILE* file_ = nullptr;
  bool gzip_ = false, z_init_ = false, z_member_done_ = false, eof_ = false, done_ = false;
  z_stream z_{};
  std::vector<char> raw_, chunk_, out_;
  std::uint64_t in_total_ = 0, out_total_ = 0;
  std::string error_;
  // The JSON token guard: inside a string (and after a backslash), the current token's and
  // whitespace run's lengths.
  bool in_string_ = false, escape_ = false;
  std::uint64_t token_ = 0, whitespace_ = 0;
};

}  // namespace overlap::traces
