#include "calibrate/core/decode_plans.hpp"

#include <stdexcept>

namespace overlap::calibrate {
namespace {

std::vector<DecodeModulePlan> alternating(int layers) {
  std::vector<DecodeModulePlan> m;
  for (int l = 0; l < layers; ++l) {
    m.push_back({DecodeModuleKind::attention, false, {}});
    m.push_back({DecodeModuleKind::mlp, false, {}});
  }
  return m;
}

}  // namespace

DecodePlanData decode_plan(const std::string& scheme, int layers, int param) {
  if (layers < 1) throw std::invalid_argument("decode plan: layers must be >= 1");
  DecodePlanData p;
  const int n = 2 * layers;
  if (scheme == "tp_baseline" || scheme == "no_overlap") {
    p.modules = alternating(layers);
    for (int i = 0; i < n; ++i) {
      p.modules[i].all_reduce = true;
      if (i > 0) p.modules[i].waits_for = {i - 1};
    }
    p.final_waits = {n - 1};
  } else if (scheme == "gptj_parallel") {
    for (int l = 0; l < layers; ++l) {
      DecodeModulePlan m{DecodeModuleKind::parallel_block, true, {}};
      if (l > 0) m.waits_for = {l - 1};
      p.modules.push_back(m);
    }
    p.final_waits = {layers - 1};
  } else if (scheme == "pt_transformer") {
    if (param < 1 || param > layers) throw std::invalid_argument("decode plan: t_d must be in [1, layers]");
    p.modules = alternating(layers);
    for (int l = 0; l < layers; ++l) p.modules[2 * l + 1].all_reduce = (l + 1) % param == 0;
    for (int i = 1; i < n; ++i) {
      if (p.modules[i - 1].all_reduce) p.modules[i].waits_for = {i - 1};
    }
    if (p.modules.back().all_reduce) p.final_waits = {n - 1};
  } else if (scheme == "ladder_residual") {
    p.modules = alternating(layers);
    for (int i = 0; i < n; ++i) {
      p.modules[i].all_reduce = true;
      if (i >= 2) p.modules[i].waits_for = {i - 2};
    }
    p.final_waits = {n - 1};
    p.comm_streams = 2;
  } else if (scheme == "dtp") {
    if (param < 1 || param > n) throw std::invalid_argument("decode plan: delta must be in [1, 2 layers]");
    p.modules = alternating(layers);
    for (int i = 0; i < n; ++i) {
      p.modules[i].all_reduce = i < n - param;
      if (i >= param + 1) p.modules[i].waits_for = {i - 1 - param};
    }
    if (n - 1 - param >= 0) p.final_waits = {n - 1 - param};
    p.comm_streams = param + 1;
  } else if (scheme == "no_comm") {
    p.modules = alternating(layers);
  } else {
    throw std::invalid_argument("decode plan: unknown scheme '" + scheme + "'");
  }
  return p;
}

}  // namespace overlap::calibrate
