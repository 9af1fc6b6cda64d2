#include "sim/schemes/decode_plan.hpp"

#include <stdexcept>

namespace overlap::sim {

namespace {

void require_layers(int layers) {
  if (layers < 1) throw std::invalid_argument("workload.layers: must be >= 1 (got " + std::to_string(layers) + ")");
}

// Attention then MLP per layer: module 2l is layer l's attention, 2l+1 its MLP.
std::vector<DecodeModule> alternating(int layers) {
  std::vector<DecodeModule> m;
  for (int l = 0; l < layers; ++l) {
    m.push_back({DecodeModuleKind::attention, false, {}});
    m.push_back({DecodeModuleKind::mlp, false, {}});
  }
  return m;
}

// A plan of `layers` alternating modules that send nothing yet.
DecodePlan alternating_plan(int layers) {
  require_layers(layers);
  DecodePlan p;
  p.modules = alternating(layers);
  return p;
}

// A plan parameter must lie in [1, hi]; the message names it and what bounds it.
void require_param(const char* name, int value, const char* hi_name, int hi) {
  if (value < 1 || value > hi)
    throw std::invalid_argument(std::string("params.") + name + ": must be in [1, " + hi_name + " = " + std::to_string(hi) +
                                "] (got " + std::to_string(value) + ")");
}

}  // namespace

DecodePlan tp_baseline_plan(int layers) {
  // Every module all-reduces and the next module needs the sum: Delta_B = 2 N_L tau_c.
  DecodePlan p = alternating_plan(layers);
  for (std::size_t i = 0; i < p.modules.size(); ++i) {
    p.modules[i].all_reduce = true;
    if (i > 0) p.modules[i].waits_for = {static_cast<int>(i) - 1};
  }
  p.final_waits = {static_cast<int>(p.modules.size()) - 1};
  p.reason = "every all-reduce is waited for by the next module";
  return p;
}

DecodePlan gptj_parallel_plan(int layers) {
  // Attention and MLP of a layer in parallel on the same input: one module, one all-reduce per layer
  // (Delta_J = N_L tau_c).
  require_layers(layers);
  DecodePlan p;
  for (int l = 0; l < layers; ++l) {
    DecodeModule m{DecodeModuleKind::parallel_block, true, {}};
    if (l > 0) m.waits_for = {l - 1};
    p.modules.push_back(m);
  }
  p.final_waits = {layers - 1};
  p.reason = "one all-reduce per layer, each waited for by the next layer";
  return p;
}

DecodePlan pt_transformer_plan(int layers, int t_d) {
  // No attention all-reduce; one MLP all-reduce kept every t_d layers (after layers t_d, 2 t_d, ...),
  // waited for by the next module: N_L / t_d exposed all-reduces.
  DecodePlan p = alternating_plan(layers);
  require_param("t_d", t_d, "layers", layers);
  for (int l = 0; l < layers; ++l) p.modules[static_cast<std::size_t>(2 * l + 1)].all_reduce = (l + 1) % t_d == 0;
  for (std::size_t i = 1; i < p.modules.size(); ++i)
    if (p.modules[i - 1].all_reduce) p.modules[i].waits_for = {static_cast<int>(i) - 1};
  if (p.modules.back().all_reduce) p.final_waits = {static_cast<int>(p.modules.size()) - 1};
  p.reason = "one MLP all-reduce every " + std::to_string(t_d) + " layers, each exposed";
  return p;
}

DecodePlan ladder_residual_plan(int layers) {
  // Module n+1 starts from the residual of module n-1's all-reduce: streaming module n hides it.
  // The last module's all-reduce feeds the LM head and is fully exposed.
  DecodePlan p = alternating_plan(layers);
  for (std::size_t i = 0; i < p.modules.size(); ++i) {
    p.modules[i].all_reduce = true;
    if (i >= 2) p.modules[i].waits_for = {static_cast<int>(i) - 2};
  }
  p.final_waits = {static_cast<int>(p.modules.size()) - 1};
  p.comm_streams = 2;
  p.reason = "each all-reduce hidden behind one module's streaming; the last one exposed";
  return p;
}

DecodePlan dtp_plan(int layers, int delta) {
  // Module n's all-reduce is consumed after module n + delta (before module n + delta + 1 starts);
  // the last delta modules send nothing. The first delta + 1 modules wait for nothing.
  DecodePlan p = alternating_plan(layers);
  const int n = 2 * layers;
  require_param("delta", delta, "2 * layers", n);
  for (int i = 0; i < n; ++i) {
    p.modules[static_cast<std::size_t>(i)].all_reduce = i < n - delta;
    if (i >= delta + 1) p.modules[static_cast<std::size_t>(i)].waits_for = {i - 1 - delta};
  }
  if (n - 1 - delta >= 0) p.final_waits = {n - 1 - delta};
  // delta + 1 all-reduces can be in flight at once.
  p.comm_streams = delta + 1;
  p.reason = "each all-reduce hidden behind " + std::to_string(delta) + " modules' streaming";
  return p;
}

DecodePlan no_comm_plan(int layers) {
  DecodePlan p = alternating_plan(layers);
  p.reason = "no communication (the blog's no-comm variant: quality loss, no wait)";
  return p;
}

}  // namespace overlap::sim
