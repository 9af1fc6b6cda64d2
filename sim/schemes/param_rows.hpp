#pragma once
// Scheme parameter rows (sim/schemes/scheme.hpp SchemeParam) made from a value written elsewhere once:
// a knob the calibration harness reads too (its default and range in sim/schemes/knob_values.hpp), and
// a communication kernel's SM count, bounded by the profile's. Defined in sim/schemes/scheme_params.cpp.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/schemes/knob_values.hpp"
#include "sim/schemes/scheme.hpp"

namespace overlap::sim {

// The row of an integer knob of knob_values.hpp: its name, default and range.
SchemeParam int_param(const knobs::IntKnob& knob, std::string help);

// The row of a choice knob of knob_values.hpp: its values, the first the default.
template <std::size_t N>
SchemeParam choice_param(const knobs::ChoiceKnob<N>& knob, std::string help) {
  return choice_param(knob.name, std::vector<std::string>(knob.values.begin(), knob.values.end()), std::move(help));
}

// An integer knob of the SMs (CTAs) a communication kernel holds: [min, sm_count - 1] on a profile, so
// the GEMM keeps at least one SM; without a profile (docs), up to the largest SM count a profile
// takes, less one.
SchemeParam comm_sms_param(std::string name, std::int64_t default_value, std::int64_t min, std::string help);

}  // namespace overlap::sim
