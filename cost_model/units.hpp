#pragma once
// Units used everywhere in overlap-sim. A units bug in a simulator is silent, so quantities carry
// their unit in their name (`_ps`, `_us`, `_bytes`, `_gbps`) and conversions live only here.
//
//   time       integer picoseconds (Ps). Exact, so runs are byte-identical.
//   size       integer bytes (Bytes).
//   bandwidth  `_gbps` means gigaBYTES per second (1e9 B/s), the unit of NVLink/HBM datasheets and of
//              nccl-tests' algbw/busbw. Network links quoted in gigabits (400 Gb/s InfiniBand) must be
//              divided by 8 before they are written as `_gbps` (400 Gb/s = 50 GB/s).
//   rates      inside the engine: bytes per picosecond (double). 1 GB/s = 1e-3 B/ps.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace overlap {

using Ps = std::int64_t;     // picoseconds
using Bytes = std::int64_t;  // bytes

inline constexpr Ps kPsPerUs = 1'000'000;

// A time or size the simulator will not count: one value at most 1e18 ps (about 11.6 days) keeps
// sums of several far inside int64. Raised instead of a wrapped or saturated number (the CLI reports
// it as an input error, exit 2).
class RangeError : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

inline constexpr double kMaxPs = 1.0e18;

// A time in picoseconds from a double computed from user figures; throws RangeError when it is not
// finite or leaves [-kMaxPs, kMaxPs].
inline Ps checked_ps(double ps) {
  if (!(ps >= -kMaxPs && ps <= kMaxPs))
    throw RangeError("a simulated time of " + std::to_string(ps / 1e12) +
                     " s is beyond what the simulator counts (1e18 ps, about 11.6 days): check the sizes and rates");
  return static_cast<Ps>(ps);
}

// a + b in picoseconds or bytes, throwing RangeError instead of overflowing.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    throw RangeError("a simulated time or size leaves 64 bits: check the sizes and rates");
  return out;
}
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    throw RangeError("a simulated size leaves 64 bits: check the workload's dimensions");
  return out;
}

// ceil(a / b) for a >= 0, b > 0: tiles, waves, chunks and pieces of a size.
inline constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
// a mod n in [0, n) for any a (C++'s % keeps the sign of a): ring positions rank - step.
inline constexpr int wrap_mod(int a, int n) { return ((a % n) + n) % n; }

// Rounds to the nearest picosecond.
inline Ps ps_from_us(double us) { return checked_ps(std::round(us * 1e6)); }
inline double us_from_ps(Ps ps) { return static_cast<double>(ps) / 1e6; }  // division: exact decimals print cleanly

// GB/s (1e9 B/s) <-> bytes per picosecond.
inline constexpr double bytes_per_ps_from_gbps(double gbps) { return gbps * 1e-3; }
inline constexpr double gbps_from_bytes_per_ps(double bpp) { return bpp * 1e3; }

// Time to move `bytes` at `gbps` GB/s, rounded up to a whole picosecond (never optimistic).
inline Ps transfer_ps(Bytes bytes, double gbps) {
  return checked_ps(std::ceil(static_cast<double>(bytes) / bytes_per_ps_from_gbps(gbps)));
}

// TFLOP/s -> FLOP per picosecond (1 TFLOP/s = 1 FLOP/ps).
inline constexpr double flop_per_ps_from_tflops(double tflops) { return tflops; }

}  // namespace overlap
