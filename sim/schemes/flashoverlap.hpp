#pragma once
// FlashOverlap's predictor inputs for a workload (flashoverlap-paper Sec. 4.2, Alg. 1): what the
// scheme's predictive search optimises, exposed so a prediction for any partition can be held against
// the engine's run of it (validate --papers: the paper's predictor error, Sec. 6.5).
#include "cost_model/flashoverlap_predictor.hpp"
#include "sim/schemes/scheme.hpp"

namespace overlap::sim {

// The GEMM's tiles and waves at the scheme's wave width (params.wave_sms, default SMs - 2), its
// duration alone on every SM rescaled to those waves (Sec. 4.1.4), the bytes per tile and the
// collective's idle-node time at a group's size.
// Throws InputError for bad params, as the scheme's build does.
WaveGroupProblem flashoverlap_problem(const BuildContext& ctx);

}  // namespace overlap::sim
