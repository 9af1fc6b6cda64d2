#pragma once
// The layers of each pipeline stage: an even split (layers / pp), or fewer (or more) layers on the first
// and last stages, which also run the token embedding and the output layer and loss (Megatron-Core's
// --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers: the layers left over are
// split evenly over the stages between them; with a virtual pipeline every stage's count must divide
// by vpp, each of its chunks running count / vpp layers).
#include <optional>
#include <string>
#include <vector>

namespace overlap::sim {

struct StageLayersRule {
  int layers = 0;              // the model's
  int pp = 1;
  int vpp = 1;
  int first_stage_layers = 0;  // 0: the even split's
  int last_stage_layers = 0;
};

// What is wrong with a layout, and the workload.parallel key to blame: "first_stage_layers",
// "last_stage_layers", "pp" or "vpp".
struct StageLayersProblem {
  std::string key;
  std::string message;
};
std::optional<StageLayersProblem> stage_layers_problem(const StageLayersRule& rule);

// Layers per stage (pp entries, summing to the model's layers). Throws std::invalid_argument with the
// problem's message for a layout stage_layers_problem refuses.
std::vector<int> pipeline_stage_layers(const StageLayersRule& rule);

}  // namespace overlap::sim
