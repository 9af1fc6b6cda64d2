// The scheme registry (sim/schemes/scheme.hpp): every scheme of design.md "Scheme library", in a
// stable order. Each scheme file defines its make_<name>_scheme(); this file only lists them.
#include <string>
#include <utility>
#include <vector>

#include "sim/schemes/scheme.hpp"

namespace overlap::sim {

SchemeInfo make_no_overlap_scheme();
SchemeInfo make_data_slicing_scheme();
SchemeInfo make_async_tp_scheme();
SchemeInfo make_commfuse_scheme();
SchemeInfo make_flashoverlap_scheme();
SchemeInfo make_tp_baseline_scheme();
SchemeInfo make_gptj_parallel_scheme();
SchemeInfo make_pt_transformer_scheme();
SchemeInfo make_ladder_residual_scheme();
SchemeInfo make_dtp_scheme();
SchemeInfo make_no_comm_scheme();
SchemeInfo make_te_userbuffers_scheme();
SchemeInfo make_flux_scheme();
SchemeInfo make_moe_pipeline_scheme();
SchemeInfo make_moe_flashoverlap_scheme();
SchemeInfo make_moe_tile_fused_scheme();

namespace {

// A scheme with no backward form does not apply to a training step (never run as no_overlap instead).
SchemeInfo forward_only_unless_backward(SchemeInfo s) {
  if (!s.backward.empty()) return s;
  std::function<bool(const Workload&)> applies = s.applies;
  s.applies = [applies](const Workload& w) { return !is_training_step(w) && (!applies || applies(w)); };
  return s;
}

// A workload with MoE layers (the moe workload, a transformer of a MoE model: sim/schemes/moe.hpp)
// runs only the schemes built for them (no_overlap builds them without overlap); every other scheme
// is refused for it rather than run on the wrong layer (a dense MLP in place of the experts).
SchemeInfo not_for_moe(SchemeInfo s) {
  if (s.name == "no_overlap" || s.name.rfind("moe_", 0) == 0) return s;
  std::function<bool(const Workload&)> applies = s.applies;
  s.applies = [applies](const Workload& w) { return !has_moe_layers(w) && (!applies || applies(w)); };
  return s;
}

std::vector<SchemeInfo> make_registry() {
  std::vector<SchemeInfo> out = {
      make_no_overlap_scheme(),    make_data_slicing_scheme(), make_async_tp_scheme(),
      make_commfuse_scheme(),      make_flashoverlap_scheme(), make_tp_baseline_scheme(),
      make_gptj_parallel_scheme(), make_pt_transformer_scheme(), make_ladder_residual_scheme(),
      make_dtp_scheme(),           make_no_comm_scheme(),
      make_te_userbuffers_scheme(), make_flux_scheme(),
      make_moe_pipeline_scheme(),  make_moe_flashoverlap_scheme(), make_moe_tile_fused_scheme(),
  };
  for (SchemeInfo& s : out) s = not_for_moe(forward_only_unless_backward(std::move(s)));
  return out;
}

}  // namespace

const std::vector<SchemeInfo>& scheme_registry() {
  static const std::vector<SchemeInfo> registry = make_registry();
  return registry;
}

const SchemeInfo* find_scheme(const std::string& name) {
  for (const SchemeInfo& s : scheme_registry()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace overlap::sim
