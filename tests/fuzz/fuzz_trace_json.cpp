// libFuzzer target: the Kineto JSON trace reader (calibrate/traces/kineto_reader.hpp) on arbitrary
// bytes, written to a scratch file as they are and again gzip-compressed (the reader takes both,
// told apart by the gzip magic), each read plain and with --strict (fuzz_trace_common.hpp). The
// bytes themselves may be a gzip stream too: the corpus seeds include rank1.json.gz.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "fuzz_trace_common.hpp"

namespace {

void write(const std::string& path, const char* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

// The bytes as one gzip member (zlib.h deflateInit2: windowBits 15 + 16 writes a gzip wrapper).
std::string gzip(const char* data, std::size_t size) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&z, static_cast<uLong>(size)) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  static const std::string dir = "/tmp/overlap-fuzz-trace-json-" + std::to_string(::getpid());
  static const bool made = (::mkdir(dir.c_str(), 0700), true);
  (void)made;
  const std::string plain = dir + "/trace.json", packed = dir + "/trace.json.gz";
  const char* bytes = reinterpret_cast<const char*>(data);
  write(plain, bytes, size);
  overlap::fuzz::read_and_check(plain);
  const std::string z = gzip(bytes, size);
  write(packed, z.data(), z.size());
  overlap::fuzz::read_and_check(packed);
  return 0;
}
