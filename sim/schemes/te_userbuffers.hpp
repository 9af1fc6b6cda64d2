#pragma once
// TransformerEngine userbuffers' per-GEMM-name settings (te_userbuffers.cpp): what a name's linear
// runs with, resolved from the scheme's parameters. One resolution for the builder and for
// `tune --export te-userbuffers` (tools/export_production.cpp), so the YAML says what was simulated.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace overlap::sim {

// TE's names (transformer_engine/pytorch/module/base.py initialize_ub): an all-gather feeds the GEMM
// (layers_all_gather_overlap: qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad), the GEMM feeds a
// reduce-scatter (proj_fprop, fc2_fprop), or the column-parallel backward (qkv_dgrad, fc1_dgrad; their
// wgrad pair qkv_wgrad, fc1_wgrad), bulk by default (methods["bulk"]).
enum class TeSide { all_gather, reduce_scatter, column_dgrad, column_wgrad };
TeSide te_side(const std::string& name);
// Every name te_userbuffers takes per-name settings for, forward names first (TE's order).
const std::vector<std::string>& te_all_gemm_names();

// Every field is set by te_gemm_setting, whose defaults are the scheme's table rows.
struct TeGemmSetting {
  std::string method;  // ring_exchange | pipeline | bulk; "" = no communicator (a wgrad whose dgrad is not bulk)
  int num_sm = 0;
  int cga_size = 0;
  bool set_sm_margin = false;
  int num_splits = 0;
  bool use_ce = false;
  // cuBLASLt atomic-counter GEMM (te_userbuffers.cpp's header): false where TE drops it (a bulk name,
  // and an all-gather name that took ring_exchange for the scalar pipeline) unless set by name.
  bool atomic_gemm = false;
  bool inherited_pipeline = false;  // an all-gather name that took ring_exchange for the scalar pipeline
};

// The setting of GEMM `name` under te_userbuffers parameters `params`: each "<name>.<knob>" given,
// else the scalar knob (method, num_sm, ...), else the parameter table's default. The scalar method's
// meaning per side: an all-gather name never pipelines in TE (add_ub refuses it) and takes
// ring_exchange; a column dgrad is bulk when method or column_backward is bulk; a wgrad is bulk exactly
// when its dgrad is (initialize_ub drops it otherwise). atomic_gemm: the scalar applies to every name
// that is not bulk, except an all-gather name under the scalar pipeline (TE pairs an atomic
// all-gather only with an atomic ring_exchange reduce-scatter, add_ub).
TeGemmSetting te_gemm_setting(const nlohmann::json& params, const std::string& name);

// Does `params` set any per-name knob ("<name>.<knob>")?
bool te_has_per_name(const nlohmann::json& params);

}  // namespace overlap::sim
