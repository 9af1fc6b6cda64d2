// Bounded trace bytes for the JSON reader (calibrate/traces/trace_stream.hpp).
#include "calibrate/traces/trace_stream.hpp"

#include <cstring>

#include <fmt/format.h>

#include "calibrate/traces/trace_limits.hpp"

namespace overlap::traces {
namespace {

constexpr std::size_t kChunkBytes = 256 * 1024;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_structural(char c) { return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':'; }

}  // namespace

TraceStreamBuf::TraceStreamBuf(const std::string& path) : path_(path), raw_(kChunkBytes), chunk_(kChunkBytes) {
  file_ = open_trace_file(path);
  raw_.clear();
  // The gzip magic (RFC 1952 section 2.3.1: ID1 31, ID2 139) decides; anything else is plain text.
  if (!fill_raw()) return;
  gzip_ = raw_.size() >= 2 && static_cast<unsigned char>(raw_[0]) == 0x1f && static_cast<unsigned char>(raw_[1]) == 0x8b;
  if (gzip_) {
    // 16 + MAX_WBITS: a gzip wrapper, not zlib's (zlib.h, inflateInit2).
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) {
      fail("cannot start zlib");
      return;
    }
    z_init_ = true;
    z_.next_in = reinterpret_cast<Bytef*>(raw_.data());
    z_.avail_in = static_cast<uInt>(raw_.size());
  }
}

TraceStreamBuf::~TraceStreamBuf() {
  if (z_init_) inflateEnd(&z_);
  if (file_) std::fclose(file_);
}

void TraceStreamBuf::fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  done_ = true;
}

bool TraceStreamBuf::fill_raw() {
  if (eof_) return false;
  raw_.resize(kChunkBytes);
  const std::size_t n = std::fread(raw_.data(), 1, raw_.size(), file_);
  raw_.resize(n);
  if (n == 0) {
    eof_ = true;
    if (std::ferror(file_)) fail("read error");
    return false;
  }
  in_total_ += n;
  return true;
}

bool TraceStreamBuf::next_chunk(std::vector<char>& to) {
  to.clear();
  if (!gzip_) {
    if (raw_.empty() && !fill_raw()) return false;
    to.swap(raw_);
    raw_.clear();
    return true;
  }
  to.resize(kChunkBytes);
  while (true) {
    if (z_member_done_) {
      // Another member may follow (RFC 1952 section 2.2: a file is a series of members); anything
      // else after the stream would be ignored by gzread and is refused here.
      if (z_.avail_in == 0) {
        if (!fill_raw()) {
          to.clear();
          return false;
        }
        z_.next_in = reinterpret_cast<Bytef*>(raw_.data());
        z_.avail_in = static_cast<uInt>(raw_.size());
      }
      if (z_.avail_in >= 1 && z_.next_in[0] != 0x1f) {
        const std::uint64_t at = in_total_ - z_.avail_in;
        fail(fmt::format("bytes after the end of the gzip stream (from byte {} of the file): the file is not one "
                         "gzip stream; refused rather than read in part",
                         at));
        to.clear();
        return false;
      }
      inflateReset(&z_);
      z_member_done_ = false;
    }
    if (z_.avail_in == 0) {
      if (!fill_raw()) {
        fail(fmt::format("truncated or corrupt gzip stream after {} bytes of JSON (unexpected end of file)", out_total_));
        to.clear();
        return false;
      }
      z_.next_in = reinterpret_cast<Bytef*>(raw_.data());
      z_.avail_in = static_cast<uInt>(raw_.size());
    }
    z_.next_out = reinterpret_cast<Bytef*>(to.data());
    z_.avail_out = static_cast<uInt>(to.size());
    const int rc = inflate(&z_, Z_NO_FLUSH);
    const std::size_t made = to.size() - z_.avail_out;
    if (rc == Z_STREAM_END) {
      z_member_done_ = true;
    } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && made > 0)) {
      fail(fmt::format("truncated or corrupt gzip stream after {} bytes of JSON ({})", out_total_,
                       z_.msg ? std::string(z_.msg) : fmt::format("zlib error {}", rc)));
      to.clear();
      return false;
    }
    if (made > 0) {
      to.resize(made);
      return true;
    }
  }
}

void TraceStreamBuf::filter(const char* data, std::size_t n) {
  out_.resize(n);
  char* out = out_.data();
  std::size_t o = 0, i = 0;
  while (i < n) {
    if (in_string_) {
      // The run up to the next quote or backslash, copied whole (most of a trace's bytes are names).
      std::size_t j = i;
      if (escape_) {
        escape_ = false;
        ++j;
      }
      while (j < n && data[j] != '"' && data[j] != '\\') ++j;
      if (j < n) {
        if (data[j] == '"') in_string_ = false;
        else escape_ = true;
        ++j;
      }
      token_ += j - i;
      if (token_ > kMaxJsonTokenBytes) {
        fail(fmt::format("a JSON string longer than {} MiB: refused (the reader would hold it whole)", kMaxJsonTokenBytes >> 20));
        break;
      }
      std::memcpy(out + o, data + i, j - i);
      o += j - i;
      i = j;
      continue;
    }
    const char c = data[i++];
    if (is_space(c)) {
      token_ = 0;
      if (++whitespace_ <= kMaxJsonWhitespaceRun) out[o++] = c;
      continue;
    }
    whitespace_ = 0;
    if (c == '"') {
      in_string_ = true;
      token_ = 1;
    } else if (is_structural(c)) {
      token_ = 0;
    } else if (++token_ > kMaxJsonTokenBytes) {
      fail(fmt::format("a JSON number or literal longer than {} MiB: refused", kMaxJsonTokenBytes >> 20));
      break;
    }
    out[o++] = c;
  }
  out_.resize(o);
}

TraceStreamBuf::int_type TraceStreamBuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  while (!done_) {
    if (!next_chunk(chunk_)) {
      done_ = true;
      break;
    }
    out_total_ += chunk_.size();
    if (out_total_ > kMaxTraceJsonBytes) {
      fail(fmt::format("more than {} GiB of JSON{}: refused (docs/reference/limits.md)", kMaxTraceJsonBytes >> 30,
                       gzip_ ? " once decompressed" : ""));
      break;
    }
    if (gzip_ && out_total_ > kGzipRatioFreeBytes && out_total_ > kMaxGzipRatio * in_total_) {
      fail(fmt::format("decompresses to more than {} times its compressed size ({} bytes from {}): a gzip bomb, or "
                       "not a trace; refused (docs/reference/limits.md)",
                       kMaxGzipRatio, out_total_, in_total_));
      break;
    }
    filter(chunk_.data(), chunk_.size());
    if (!out_.empty()) {
      setg(out_.data(), out_.data(), out_.data() + out_.size());
      return traits_type::to_int_type(*gptr());
    }
  }
  return traits_type::eof();
}

}  // namespace overlap::traces
