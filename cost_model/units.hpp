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

namespace overlap {

using Ps = std::int64_t;     // picoseconds
using Bytes = std::int64_t;  // bytes

inline constexpr Ps kPsPerUs = 1'000'000;

// Rounds to the nearest picosecond; callers pass finite, non-negative values (validated upstream).
inline Ps ps_from_us(double us) { return static_cast<Ps>(std::llround(us * 1e6)); }
inline double us_from_ps(Ps ps) { return static_cast<double>(ps) / 1e6; }  // division: exact decimals print cleanly

// GB/s (1e9 B/s) <-> bytes per picosecond.
inline constexpr double bytes_per_ps_from_gbps(double gbps) { return gbps * 1e-3; }
inline constexpr double gbps_from_bytes_per_ps(double bpp) { return bpp * 1e3; }

// Time to move `bytes` at `gbps` GB/s, rounded up to a whole picosecond (never optimistic).
inline Ps transfer_ps(Bytes bytes, double gbps) {
  return static_cast<Ps>(std::ceil(static_cast<double>(bytes) / bytes_per_ps_from_gbps(gbps)));
}

// TFLOP/s -> FLOP per picosecond (1 TFLOP/s = 1 FLOP/ps).
inline constexpr double flop_per_ps_from_tflops(double tflops) { return tflops; }

}  // namespace overlap
