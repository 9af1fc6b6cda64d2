// Layers per pipeline stage (pipeline_layers.hpp).
#include "sim/pipeline_layers.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace overlap::sim {

std::optional<StageLayersProblem> stage_layers_problem(const StageLayersRule& r) {
  const int first = r.first_stage_layers, last = r.last_stage_layers;
  if (r.pp < 1 || r.vpp < 1 || r.layers < 1)
    return StageLayersProblem{"pp", fmt::format("pp {}, vpp {} and layers {} must be at least 1", r.pp, r.vpp, r.layers)};
  if (first == 0 && last == 0) {
    if (r.layers % r.pp != 0)
      return StageLayersProblem{"pp", fmt::format("pp = {} does not divide the model's {} layers", r.pp, r.layers)};
    if ((r.layers / r.pp) % r.vpp != 0)
      return StageLayersProblem{"vpp", fmt::format("vpp = {} does not divide layers / pp = {}", r.vpp, r.layers / r.pp)};
    return std::nullopt;
  }
  const char* key = first > 0 ? "first_stage_layers" : "last_stage_layers";
  if (r.pp < 2)
    return StageLayersProblem{key, "sets the first or last pipeline stage's layers: give pp >= 2"};
  if (first < 0 || last < 0) return StageLayersProblem{key, "must be at least 1 (0 or absent: the even split)"};
  // Megatron-Core builds vpp chunks of a stage's layers / vpp each, on the first and last stages too.
  if (first > 0 && first % r.vpp != 0)
    return StageLayersProblem{"first_stage_layers",
                              fmt::format("vpp = {} does not divide the first stage's {} layers (each of its chunks runs "
                                          "layers / vpp)", r.vpp, first)};
  if (last > 0 && last % r.vpp != 0)
    return StageLayersProblem{"last_stage_layers",
                              fmt::format("vpp = {} does not divide the last stage's {} layers (each of its chunks runs "
                                          "layers / vpp)", r.vpp, last)};
  const int middle = r.pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const long long rest = static_cast<long long>(r.layers) - first - last;
  if (middle == 0) {
    if (rest != 0)
      return StageLayersProblem{key, fmt::format("first_stage_layers + last_stage_layers = {} on pp = 2 stages, but the "
                                                 "model has {} layers", first + last, r.layers)};
    return std::nullopt;
  }
  if (rest < middle)
    return StageLayersProblem{key, fmt::format("leaves {} of the model's {} layers for {} other stage(s): each needs at "
                                               "least one", rest, r.layers, middle)};
  if (rest % middle != 0)
    return StageLayersProblem{key, fmt::format("leaves {} layers, which the {} other stage(s) cannot split evenly", rest,
                                               middle)};
  if ((rest / middle) % r.vpp != 0)
    return StageLayersProblem{"vpp", fmt::format("vpp = {} does not divide the other stages' {} layers each", r.vpp,
                                                 rest / middle)};
  return std::nullopt;
}

std::vector<int> pipeline_stage_layers(const StageLayersRule& r) {
  if (const std::optional<StageLayersProblem> p = stage_layers_problem(r)) throw std::invalid_argument(p->message);
  const int first = r.first_stage_layers, last = r.last_stage_layers;
  const int middle = r.pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const int each = middle > 0 ? (r.layers - first - last) / middle : 0;
  std::vector<int> out(static_cast<std::size_t>(r.pp), each);
  if (first > 0) out.front() = first;
  if (last > 0) out.back() = last;
  return out;
}

}  // namespace overlap::sim
