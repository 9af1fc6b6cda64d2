#pragma once
// A configuration of the list (scheme_config.hpp) as the run the reference kernels execute
// (kernels/schemes/run_spec.hpp): the parsed workload, the scheme's parameters with the simulator's
// defaults, and for the decode family the simulator's own plan (sim/schemes/decode_plan.hpp), so the
// kernels run exactly the schedule `overlap-sim validate` simulates.
#include "calibrate/core/scheme_config.hpp"
#include "kernels/schemes/run_spec.hpp"

namespace overlap::calibrate {

// Throws std::invalid_argument for a decode-family parameter out of range (the configuration
// parser refuses those first, naming the file).
cuda::RunSpec run_spec_of(const SchemeRunConfig& c);

// The decode family's plan of `scheme` (no_overlap runs tp_baseline's); `param` is t_d
// (pt_transformer) or delta (dtp), ignored by the others.
sim::DecodePlan decode_plan_of(const std::string& scheme, int layers, int param);

}  // namespace overlap::calibrate
