#pragma once
// The defaults, ranges and choices of the scheme knobs that code without the simulator reads too: the
// calibration harness (calibrate/core: a run's parameters checked and filled in), which the CUDA-only
// device build compiles with the standard library alone, so it cannot reach the schemes' tables
// (sim/schemes/scheme.hpp SchemeParam). Each value is written here once; the scheme's table row is
// made from it (int_param / choice_param), and the harness reads the same constant.
#include <array>
#include <cstddef>
#include <cstdint>

namespace overlap::sim::knobs {

// An integer knob: its name, default and closed range [min, max].
struct IntKnob {
  const char* name;
  std::int64_t default_value;
  std::int64_t min;
  std::int64_t max;
};

// A knob that takes one of `values`; the first is its default.
template <std::size_t N>
struct ChoiceKnob {
  const char* name;
  std::array<const char*, N> values;
  constexpr const char* default_value() const { return values[0]; }
};

// data_slicing (sim/schemes/data_slicing.cpp).
inline constexpr IntKnob kDataSlicingChunks{"chunks", 4, 1, 4096};

// async_tp (sim/schemes/async_tp.cpp): 1 or 2 streams, copy-engine or SM copies.
inline constexpr IntKnob kAsyncTpStreams{"streams", 2, 1, 2};
inline constexpr ChoiceKnob<2> kAsyncTpTransport{"transport", {"copy_engine", "sm"}};

// commfuse (sim/schemes/commfuse.cpp, commfuse-paper Sec. 3.2, Alg. 1-2, App. A.3-A.4).
inline constexpr IntKnob kCommFuseM{"m", 1, 1, 4096};
inline constexpr ChoiceKnob<3> kCommFuseSchedule{"schedule", {"ring", "pairwise", "circular"}};
inline constexpr ChoiceKnob<2> kCommFuseTransport{"transport", {"nccl", "copy_engine"}};

// The decode family (delayed-tp-blog): pt_transformer's track depth, dtp's delay. Their upper limits
// in a workload (t_d <= layers, delta <= 2 * layers) are the plans' (sim/schemes/decode_plan.cpp).
inline constexpr IntKnob kPtTransformerTd{"t_d", 2, 1, 1024};
inline constexpr IntKnob kDtpDelta{"delta", 2, 1, 2048};

// Is `value` one of knob `k`'s values?
template <std::size_t N, typename S>
constexpr bool is_choice(const ChoiceKnob<N>& k, const S& value) {
  for (const char* v : k.values)
    if (value == v) return true;
  return false;
}

}  // namespace overlap::sim::knobs
